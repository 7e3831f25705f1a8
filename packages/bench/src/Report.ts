/**
 * Turns a run's results into the target verdicts of issue 8, a JSON file
 * (bench-results/<time>.json), PNG charts and docs/benchmarks.md.
 *
 * @since 0.1.0
 */
import { cpus, release, totalmem } from "node:os"
import { mkdir, writeFile } from "node:fs/promises"
import { join, relative } from "node:path"
import { barChart, lineChart } from "./plot/Chart.ts"
import type { LatencyResult, MemoryResult, Point, SoakResult, TargetName, Timing } from "./Runner.ts"

/** The machine a run was measured on. @category models */
export interface Machine {
  readonly cpuModel: string
  readonly cores: number
  readonly memoryBytes: number
  readonly node: string
  readonly kernel: string
}

/** Describes this machine. @category machine */
export const machine = (): Machine => ({
  cpuModel: cpus()[0]?.model ?? "unknown",
  cores: cpus().length,
  memoryBytes: totalmem(),
  node: process.version,
  kernel: release()
})

/** A target's availability in a run. @category models */
export interface TargetInfo {
  readonly name: TargetName
  readonly available: boolean
  readonly note: string
}

/** Everything a run measured. @category models */
export interface Results {
  readonly version: 1
  readonly quick: boolean
  readonly startedAt: string
  readonly finishedAt: string
  readonly machine: Machine
  readonly timing: Timing
  readonly targets: ReadonlyArray<TargetInfo>
  readonly latency: ReadonlyArray<LatencyResult>
  readonly memory: ReadonlyArray<MemoryResult>
  readonly soak: SoakResult | null
  readonly verdicts: ReadonlyArray<Verdict>
  readonly notes: ReadonlyArray<string>
}

/** One target of issue 8, judged. @category models */
export interface Verdict {
  readonly target: string
  readonly status: "met" | "missed" | "not measured"
  readonly measured: string
}

const fmtUs = (n: number): string => (Math.abs(n) >= 1000 ? `${(n / 1000).toFixed(2)} ms` : `${n} µs`)
const fmtMb = (bytes: number): string => `${(bytes / 1048576).toFixed(1)} MB`

const openPoint = (l: LatencyResult | undefined, target: TargetName, rate: number): Point | undefined =>
  l?.points.find((p) => p.mode === "open" && p.target === target && p.rate === rate)
const closedPoint = (l: LatencyResult | undefined, target: TargetName): Point | undefined =>
  l?.points.find((p) => p.mode === "closed" && p.target === target)

/**
 * Judges the six targets of issue 8 for the gateway ("modelgate"). A target
 * whose inputs were not measured in this run says so instead of guessing.
 *
 * @category verdicts
 */
export const verdicts = (
  latency: ReadonlyArray<LatencyResult>,
  memory: ReadonlyArray<MemoryResult>,
  soak: SoakResult | null
): Array<Verdict> => {
  const out: Array<Verdict> = []
  const small = latency.find((l) => l.scenario === "chat-small")
  const unmeasured = (target: string, why: string): Verdict => {
    const verdict: Verdict = { target, status: "not measured", measured: why }
    return verdict
  }

  {
    const name = "added latency p99 < 1 ms at 1,000 calls/s (non-stream)"
    const a = small?.added.find((x) => x.target === "modelgate" && x.rate === 1000)
    const mg = openPoint(small, "modelgate", 1000)
    if (a === undefined || mg === undefined) out.push(unmeasured(name, "chat-small at 1,000/s through modelgate not in this run"))
    else {
      const clean = Object.keys(mg.errors).length === 0 && mg.dropped === 0
      out.push({
        target: name,
        status: a.latency.p99Us < 1000 && clean ? "met" : "missed",
        measured: `added p99 ${fmtUs(a.latency.p99Us)} (p50 ${fmtUs(a.latency.p50Us)}, max ${fmtUs(a.latency.maxUs)})${clean ? "" : ", with errors"}`
      })
    }
  }
  {
    const name = "gateway CPU per non-stream call <= 1.25x the floor proxy"
    const rate = small === undefined ? undefined : Math.max(...small.points.filter((p) => p.mode === "open").map((p) => p.rate ?? 0))
    const mg = rate === undefined ? undefined : openPoint(small, "modelgate", rate)
    const floor = rate === undefined ? undefined : openPoint(small, "floor", rate)
    if (mg?.cpuMsPerCall == null || floor?.cpuMsPerCall == null) out.push(unmeasured(name, "needs modelgate and floor CPU figures for chat-small"))
    else {
      const ratio = mg.cpuMsPerCall / floor.cpuMsPerCall
      out.push({
        target: name,
        status: ratio <= 1.25 ? "met" : "missed",
        measured: `${mg.cpuMsPerCall.toFixed(3)} ms vs floor ${floor.cpuMsPerCall.toFixed(3)} ms per call at ${rate}/s (${ratio.toFixed(2)}x)`
      })
    }
  }
  {
    const name = ">= 5x Portkey throughput"
    const mg = closedPoint(small, "modelgate")
    const pk = closedPoint(small, "portkey")
    if (mg === undefined || pk === undefined || pk.throughput === 0) out.push(unmeasured(name, "needs chat-small throughput of modelgate and Portkey (--with-portkey)"))
    else {
      const ratio = mg.throughput / pk.throughput
      out.push({
        target: name,
        status: ratio >= 5 ? "met" : "missed",
        measured: `${mg.throughput.toFixed(0)} vs ${pk.throughput.toFixed(0)} calls/s (${ratio.toFixed(2)}x)`
      })
    }
  }
  {
    const name = "< 150 MB RSS with 1,000 open streams"
    const mg = memory.flatMap((m) => m.points).find((p) => p.target === "modelgate")
    if (mg === undefined) out.push(unmeasured(name, "streams-1000 through modelgate not in this run"))
    else {
      out.push({
        target: name,
        status: mg.peakRssBytes < 150 * 1048576 && mg.ok === mg.streams ? "met" : "missed",
        measured: `peak ${fmtMb(mg.peakRssBytes)}, steady ${fmtMb(mg.steadyRssBytes)} (${mg.ok}/${mg.streams} streams completed)`
      })
    }
  }
  {
    const name = "< 5% RSS growth over the soak"
    if (soak === null || soak.target !== "modelgate") out.push(unmeasured(name, "no soak of modelgate in this run"))
    else {
      out.push({
        target: name,
        status: soak.rss.percent < 5 ? "met" : "missed",
        measured: `${fmtMb(soak.rss.start)} -> ${fmtMb(soak.rss.end)} (${soak.rss.percent.toFixed(1)}%) over ${soak.durationMs / 1000} s at ${soak.rate}/s`
      })
    }
  }
  {
    const name = "added TTFB < 0.5 ms for streams (p50)"
    const stream = latency.find((l) => l.scenario === "stream-200")
    const a = stream?.added.filter((x) => x.target === "modelgate") ?? []
    if (a.length === 0) out.push(unmeasured(name, "stream-200 through modelgate not in this run"))
    else {
      const worst = a.reduce((w, x) => (x.ttfb.p50Us > w.ttfb.p50Us ? x : w))
      out.push({
        target: name,
        status: worst.ttfb.p50Us < 500 ? "met" : "missed",
        measured: `added TTFB p50 ${fmtUs(worst.ttfb.p50Us)}, p99 ${fmtUs(worst.ttfb.p99Us)} at ${worst.rate}/s`
      })
    }
  }
  return out
}

const errorsText = (p: { readonly errors: Readonly<Record<string, number>>; readonly dropped?: number }): string => {
  const parts = Object.entries(p.errors).map(([k, v]) => `${k}: ${v}`)
  if (p.dropped !== undefined && p.dropped > 0) parts.push(`dropped: ${p.dropped}`)
  return parts.length === 0 ? "0" : parts.join(", ")
}

const latencyTable = (l: LatencyResult): string => {
  const rows = [
    "| target | load | calls ok | p50 | p90 | p99 | max | added p50 | added p99 | TTFB p50 | added TTFB p50 | CPU/call | errors |",
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
  ]
  for (const p of l.points) {
    const a = p.mode === "open" ? l.added.find((x) => x.target === p.target && x.rate === p.rate) : undefined
    rows.push(
      `| ${p.target} | ${p.mode === "open" ? `${p.rate}/s open` : `c=${p.concurrency} closed, ${p.throughput.toFixed(0)}/s`} | ${p.ok} | ${fmtUs(p.latency.p50Us)} | ${
        fmtUs(p.latency.p90Us)
      } | ${fmtUs(p.latency.p99Us)} | ${fmtUs(p.latency.maxUs)} | ${a === undefined ? "" : fmtUs(a.latency.p50Us)} | ${a === undefined ? "" : fmtUs(a.latency.p99Us)} | ${
        fmtUs(p.ttfb.p50Us)
      } | ${a === undefined ? "" : fmtUs(a.ttfb.p50Us)} | ${p.cpuMsPerCall === null ? "" : `${p.cpuMsPerCall.toFixed(3)} ms`} | ${errorsText(p)} |`
    )
  }
  return rows.join("\n")
}

/** Paths written by `writeReport`. @category models */
export interface Written {
  readonly json: string
  readonly markdown: string
  readonly plots: ReadonlyArray<string>
}

/**
 * Writes `<outDir>/bench-results/<time>.json`, the charts under
 * `<outDir>/docs/benchmarks/` and `<outDir>/docs/benchmarks.md`.
 *
 * @category report
 */
export const writeReport = async (results: Results, outDir: string): Promise<Written> => {
  const resultsDir = join(outDir, "bench-results")
  const docsDir = join(outDir, "docs")
  const plotDir = join(docsDir, "benchmarks")
  await mkdir(resultsDir, { recursive: true })
  await mkdir(plotDir, { recursive: true })
  const stamp = results.startedAt.replace(/[:.]/g, "-")
  const json = join(resultsDir, `${stamp}${results.quick ? "-quick" : ""}.json`)
  await writeFile(json, `${JSON.stringify(results, null, 1)}\n`)

  const plots: Array<{ file: string; title: string }> = []
  const plot = async (file: string, title: string, png: Buffer): Promise<void> => {
    await writeFile(join(plotDir, file), png)
    plots.push({ file, title })
  }
  for (const l of results.latency) {
    const targets = [...new Set(l.points.map((p) => p.target))]
    const open = l.points.filter((p) => p.mode === "open")
    if (open.length === 0) continue
    await plot(
      `${l.scenario}-p99.png`,
      `${l.title}: p99 latency by rate`,
      lineChart({
        title: `${l.scenario}: p99 latency vs rate`,
        xLabel: "offered rate (calls/s)",
        yLabel: "p99 latency (ms)",
        series: targets.map((t) => ({
          name: t,
          points: open.filter((p) => p.target === t).map((p) => [p.rate ?? 0, p.latency.p99Us / 1000] as const)
        }))
      }).toPng()
    )
  }
  const throughputTargets = [...new Set(results.latency.flatMap((l) => l.points.map((p) => p.target)))]
  if (results.latency.length > 0) {
    await plot(
      "throughput.png",
      "Closed-loop throughput per scenario",
      barChart({
        title: "Throughput (calls/s, closed loop)",
        yLabel: "calls/s",
        categories: results.latency.map((l) => l.scenario),
        series: throughputTargets.map((t) => ({
          name: t,
          values: results.latency.map((l) => closedPoint(l, t)?.throughput ?? null)
        }))
      }).toPng()
    )
    const cpuTargets = throughputTargets.filter((t) => t !== "direct")
    await plot(
      "cpu-per-call.png",
      "Proxy CPU time per call (highest open-loop rate)",
      barChart({
        title: "Proxy CPU per call (us)",
        yLabel: "CPU us per call",
        categories: results.latency.map((l) => l.scenario),
        series: cpuTargets.map((t) => ({
          name: t,
          values: results.latency.map((l) => {
            const open = l.points.filter((p) => p.mode === "open" && p.target === t)
            const last = open[open.length - 1]
            return last?.cpuMsPerCall == null ? null : Math.round(last.cpuMsPerCall * 1000)
          })
        }))
      }).toPng()
    )
  }
  for (const m of results.memory) {
    if (m.points.length === 0) continue
    await plot(
      `${m.scenario}-rss.png`,
      `${m.title}: RSS over time`,
      lineChart({
        title: `${m.scenario}: proxy RSS (MB)`,
        xLabel: "time (s)",
        yLabel: "RSS (MB)",
        threshold: { y: 150, label: "target 150 MB" },
        series: m.points.map((p) => ({ name: p.target, points: p.samples.map((s) => [s.tMs / 1000, s.value / 1048576] as const) }))
      }).toPng()
    )
  }
  if (results.soak !== null) {
    await plot(
      "soak-rss.png",
      "Soak: RSS over time",
      lineChart({
        title: `soak (${results.soak.target}, ${results.soak.rate}/s): RSS (MB)`,
        xLabel: "time (s)",
        yLabel: "RSS (MB)",
        series: [{ name: results.soak.target, points: results.soak.samples.map((s) => [s.tMs / 1000, s.value / 1048576] as const) }]
      }).toPng()
    )
  }

  const m = results.machine
  const lines: Array<string> = [
    "# Benchmarks",
    "",
    "<!-- Written by packages/bench (node packages/bench/src/main.ts); do not edit by hand. -->",
    "",
    results.quick
      ? "> **Quick smoke run** (`--quick`): short durations, numbers are indicative only. The full run is `pnpm bench` without `--quick`."
      : "> Full run.",
    "",
    `Run ${results.startedAt} to ${results.finishedAt}.`,
    "",
    "## Machine",
    "",
    `- CPU: ${m.cpuModel}, ${m.cores} cores`,
    `- Memory: ${(m.memoryBytes / 1073741824).toFixed(1)} GiB`,
    `- Node: ${m.node}, Linux ${m.kernel}`,
    "",
    "Everything runs on this one machine: the load generator, the fake upstream, the floor proxy and the gateway are separate processes sharing its cores, so absolute numbers include that contention; the *added* figures subtract the direct baseline measured in the same run.",
    "",
    "## Targets",
    "",
    "| target | status | measured |",
    "|---|---|---|",
    ...results.verdicts.map((v) => `| ${v.target} | **${v.status}** | ${v.measured} |`),
    "",
    "## What was measured",
    "",
    "| target | available | note |",
    "|---|---|---|",
    ...results.targets.map((t) => `| ${t.name} | ${t.available ? "yes" : "no"} | ${t.note} |`),
    "",
    `Timing: warm-up ${results.timing.warmupMs} ms, ${results.timing.pointMs} ms per open-loop rate, ${results.timing.throughputMs} ms closed loop, soak ${results.timing.soakMs / 1000} s at ${results.timing.soakRate}/s.`,
    "",
    "Method: open-loop points send at a fixed rate and measure each call from its *intended* send time (no coordinated omission); latency is to the last body byte, TTFB to the first body byte. *Added* = target percentile minus the direct percentile at the same rate (negative values are noise). CPU per call is the proxy process's utime+stime from `/proc/<pid>/stat` over the point, divided by the successful calls (10 ms clock-tick resolution). Latency percentiles come from a histogram with 0.1 % precision.",
    ""
  ]
  for (const l of results.latency) {
    lines.push(`## ${l.title} (\`${l.scenario}\`)`, "", l.description, "", latencyTable(l), "")
    const p = plots.find((x) => x.file === `${l.scenario}-p99.png`)
    if (p !== undefined) lines.push(`![${p.title}](benchmarks/${p.file})`, "")
  }
  for (const mem of results.memory) {
    lines.push(`## ${mem.title} (\`${mem.scenario}\`)`, "", mem.description, "")
    lines.push("| proxy | streams ok | idle RSS | peak RSS | steady RSS | TTFB p50 | TTFB p99 | errors |", "|---|---:|---:|---:|---:|---:|---:|---|")
    for (const p of mem.points) {
      lines.push(
        `| ${p.target} | ${p.ok}/${p.streams} | ${fmtMb(p.idleRssBytes)} | ${fmtMb(p.peakRssBytes)} | ${fmtMb(p.steadyRssBytes)} | ${fmtUs(p.ttfb.p50Us)} | ${
          fmtUs(p.ttfb.p99Us)
        } | ${errorsText(p)} |`
      )
    }
    lines.push("")
    const p = plots.find((x) => x.file === `${mem.scenario}-rss.png`)
    if (p !== undefined) lines.push(`![${p.title}](benchmarks/${p.file})`, "")
  }
  if (results.soak !== null) {
    const s = results.soak
    lines.push(
      "## Soak",
      "",
      `${s.target}, \`${s.scenario}\` at ${s.rate}/s for ${s.durationMs / 1000} s: ${s.ok} calls ok, errors ${errorsText(s)}.`,
      `RSS (median of the first and last tenth after a 10 % warm-up): ${fmtMb(s.rss.start)} -> ${fmtMb(s.rss.end)} (${s.rss.percent.toFixed(1)} %), trend ${
        (s.rss.perMinute / 1048576).toFixed(2)
      } MB/min, peak ${fmtMb(s.rss.peak)}. Latency p50 ${fmtUs(s.latency.p50Us)}, p99 ${fmtUs(s.latency.p99Us)}, max ${fmtUs(s.latency.maxUs)}.`,
      "",
      "![Soak RSS](benchmarks/soak-rss.png)",
      ""
    )
  }
  for (const file of ["throughput.png", "cpu-per-call.png"]) {
    const p = plots.find((x) => x.file === file)
    if (p !== undefined) lines.push(`![${p.title}](benchmarks/${p.file})`, "")
  }
  if (results.notes.length > 0) lines.push("## Notes", "", ...results.notes.map((n) => `- ${n}`), "")
  lines.push(`Raw results: \`${relative(outDir, json)}\`.`, "")
  const markdown = join(docsDir, "benchmarks.md")
  await writeFile(markdown, lines.join("\n"))
  return { json, markdown, plots: plots.map((p) => join(plotDir, p.file)) }
}
