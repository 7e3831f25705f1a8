/**
 * Turns a run's results into the target verdicts of issue 14 (with, for a
 * missed target, by how much), a JSON file (bench-results/<time>.json), PNG
 * charts and docs/benchmarks.md: the machine, the verdicts, the billing
 * check, the missed targets with the gateway's CPU profile, per-scenario
 * latency (added p50/p90/p99/max), TTFB, CPU per call side by side with the
 * floor, RSS per scenario, the soak, and how it was all measured.
 *
 * @since 0.1.0
 */
import { mkdir, writeFile } from "node:fs/promises"
import { cpus, loadavg, release, totalmem } from "node:os"
import { join, relative } from "node:path"
import type { BillingCheck } from "./Billing.ts"
import { formatDuration } from "./Plan.ts"
import { barChart, lineChart } from "./plot/Chart.ts"
import { profileMarkdown, type ProfileSummary } from "./ProfileSummary.ts"
import type { AddedPoint, LatencyResult, MemoryResult, Point, SoakResult, TargetName, Timing } from "./Runner.ts"
import type { Dialect } from "./Scenarios.ts"
import { TRACING_TARGET, tracingHeadline, tracingMarkdown, type TracingResult } from "./TracingCost.ts"

/** The machine a run was measured on. @category models */
export interface Machine {
  readonly cpuModel: string
  readonly cores: number
  readonly memoryBytes: number
  readonly node: string
  readonly kernel: string
  /** 1, 5 and 15 minute load averages when the run started and when it ended (other work on the machine shows here). */
  readonly loadAverage: { readonly start: ReadonlyArray<number>; readonly end: ReadonlyArray<number> }
}

const round2 = (n: number): number => Math.round(n * 100) / 100

/** Describes this machine; `loadAtStart` is `os.loadavg()` taken when the run started. @category machine */
export const machine = (loadAtStart: ReadonlyArray<number> = loadavg()): Machine => ({
  cpuModel: cpus()[0]?.model ?? "unknown",
  cores: cpus().length,
  memoryBytes: totalmem(),
  node: process.version,
  kernel: release(),
  loadAverage: { start: loadAtStart.map(round2), end: loadavg().map(round2) }
})

/** A target's availability in a run. @category models */
export interface TargetInfo {
  readonly name: TargetName
  readonly available: boolean
  readonly note: string
}

/** Everything a run measured. @category models */
export interface Results {
  readonly version: 2
  readonly quick: boolean
  /** The client dialect spoken to the gateway. */
  readonly dialect: Dialect
  /** The gateway ran with --cpu-prof (its CPU figures include the profiler's cost). */
  readonly profiled: boolean
  readonly startedAt: string
  readonly finishedAt: string
  readonly elapsedMs: number
  /** What the plan printed before the run expected. */
  readonly plannedMs: number
  readonly machine: Machine
  readonly timing: Timing
  readonly targets: ReadonlyArray<TargetInfo>
  readonly latency: ReadonlyArray<LatencyResult>
  readonly memory: ReadonlyArray<MemoryResult>
  readonly soak: SoakResult | null
  /** Tracing's cost (the `tracing` step); absent or null: not measured. */
  readonly tracing?: TracingResult | null | undefined
  readonly billing: BillingCheck
  readonly profile: ProfileSummary | null
  /** Where the profiles and heap snapshots are, relative to the output directory. */
  readonly profileDir: string | null
  readonly heapSnapshots: ReadonlyArray<string>
  readonly verdicts: ReadonlyArray<Verdict>
  readonly notes: ReadonlyArray<string>
}

/** One target of issue 14, judged. @category models */
export interface Verdict {
  readonly target: string
  readonly status: "met" | "missed" | "not measured"
  readonly measured: string
  /** For a missed target: by how much, in words. */
  readonly shortfall: string | null
}

const fmtUs = (n: number): string => (Math.abs(n) >= 1000 ? `${(n / 1000).toFixed(2)} ms` : `${n} µs`)
const fmtMb = (bytes: number): string => `${(bytes / 1048576).toFixed(1)} MB`
const fmtCpu = (ms: number | null): string => (ms === null ? "" : `${Math.round(ms * 1000)} µs`)
const MB = 1048576

const openPoint = (l: LatencyResult | undefined, target: TargetName, rate: number): Point | undefined =>
  l?.points.find((p) => p.mode === "open" && p.target === target && p.rate === rate)
const closedPoint = (l: LatencyResult | undefined, target: TargetName): Point | undefined =>
  l?.points.find((p) => p.mode === "closed" && p.target === target)
const highestRate = (l: LatencyResult): number | undefined => {
  const rates = l.points.filter((p) => p.mode === "open" && p.rate !== null).map((p) => p.rate as number)
  return rates.length === 0 ? undefined : Math.max(...rates)
}
const band = (a: AddedPoint): string => `${fmtUs(a.latencyP99Band.lowUs)} to ${fmtUs(a.latencyP99Band.highUs)}`

/**
 * Judges the targets of issue 14 for the gateway ("modelgate"). A target
 * whose inputs were not measured in this run says so instead of guessing; a
 * missed one says by how much.
 *
 * @category verdicts
 */
export const verdicts = (
  latency: ReadonlyArray<LatencyResult>,
  memory: ReadonlyArray<MemoryResult>,
  soak: SoakResult | null,
  tracing: TracingResult | null = null
): Array<Verdict> => {
  const out: Array<Verdict> = []
  const scenario = (name: string) => latency.find((l) => l.scenario === name)
  const small = scenario("chat-small")
  const unmeasured = (target: string, why: string): Verdict => ({
    target,
    status: "not measured",
    measured: why,
    shortfall: null
  })
  const judged = (target: string, met: boolean, measured: string, shortfall: () => string): Verdict => ({
    target,
    status: met ? "met" : "missed",
    measured,
    shortfall: met ? null : shortfall()
  })
  /** The gateway's CPU per call against the floor's on one point of a scenario. */
  const cpuRatio = (l: LatencyResult | undefined, pick: (l: LatencyResult, t: TargetName) => Point | undefined) => {
    const mg = l === undefined ? undefined : pick(l, "modelgate")
    const floor = l === undefined ? undefined : pick(l, "floor")
    if (mg?.cpuMsPerCall == null || floor?.cpuMsPerCall == null) return undefined
    return { m: mg.cpuMsPerCall, f: floor.cpuMsPerCall, ratio: mg.cpuMsPerCall / floor.cpuMsPerCall, mg }
  }
  const closed = (l: LatencyResult, t: TargetName) => closedPoint(l, t)
  const cpuTarget = (name: string, scenarioName: string, limit: number) => {
    const r = cpuRatio(scenario(scenarioName), closed)
    if (r === undefined) return out.push(unmeasured(name, `needs modelgate and floor CPU figures for ${scenarioName}`))
    out.push(judged(
      name,
      r.ratio <= limit,
      `${fmtCpu(r.m)} vs floor ${fmtCpu(r.f)} per call at ${r.mg.concurrency ?? "?"} in flight (${
        r.ratio.toFixed(2)
      }x)`,
      () =>
        `${r.ratio.toFixed(2)}x against ${limit}x: ${fmtCpu(r.m - limit * r.f)} per call more than allowed (${
          ((r.ratio / limit - 1) * 100).toFixed(0)
        } % over)`
    ))
  }

  {
    const name = "non-stream CPU per call <= 2.0x the floor (closed loop and 1,000 calls/s)"
    const c = cpuRatio(small, closed)
    const o = cpuRatio(small, (l, t) => openPoint(l, t, 1000))
    if (c === undefined || o === undefined) {
      out.push(unmeasured(name, "needs modelgate and floor CPU figures for chat-small, closed loop and at 1,000/s"))
    } else {
      const worst = Math.max(c.ratio, o.ratio)
      out.push(judged(
        name,
        worst <= 2,
        `closed loop ${fmtCpu(c.m)} vs floor ${fmtCpu(c.f)} (${c.ratio.toFixed(2)}x); at 1,000/s ${fmtCpu(o.m)} vs ${
          fmtCpu(o.f)
        } (${o.ratio.toFixed(2)}x)`,
        () => `${worst.toFixed(2)}x against 2x at worst (${((worst / 2 - 1) * 100).toFixed(0)} % over)`
      ))
    }
  }
  cpuTarget("200-chunk stream CPU per call <= 2.0x the floor (same dialect)", "stream-200", 2)
  cpuTarget("translated 200-chunk stream CPU per call <= 3x the floor", "translate-gemini-stream", 3)
  cpuTarget("200 KB prompt CPU per call <= 2.0x the floor", "chat-200k", 2)
  {
    const name = "throughput at 32 in flight >= 3x Portkey"
    const mg = small === undefined ? undefined : closedPoint(small, "modelgate")
    const pk = small === undefined ? undefined : closedPoint(small, "portkey")
    if (small === undefined) out.push(unmeasured(name, "chat-small not in this run"))
    else if (mg === undefined) out.push(unmeasured(name, "chat-small throughput through modelgate not in this run"))
    else if (pk === undefined) {
      out.push(unmeasured(name, "Portkey was not measured in this run (see 'What was measured' and the notes)"))
    } else if (pk.throughput === 0) {
      out.push(unmeasured(name, `Portkey had no successful call in chat-small (errors: ${errorsText(pk)})`))
    } else {
      const ratio = mg.throughput / pk.throughput
      out.push(judged(
        name,
        ratio >= 3,
        `${mg.throughput.toFixed(0)} vs ${pk.throughput.toFixed(0)} calls/s at ${mg.concurrency ?? "?"} in flight (${
          ratio.toFixed(2)
        }x)`,
        () =>
          `${ratio.toFixed(2)}x against 3x: modelgate needs ${
            (3 * pk.throughput - mg.throughput).toFixed(0)
          } calls/s more (+${((3 / ratio - 1) * 100).toFixed(0)} %)`
      ))
    }
  }
  {
    const name = "added latency p99 < 2 ms at 1,000 calls/s (non-stream)"
    const a = small?.added.find((x) => x.target === "modelgate" && x.rate === 1000)
    const mg = openPoint(small, "modelgate", 1000)
    if (a === undefined || mg === undefined) {
      out.push(unmeasured(name, "chat-small at 1,000/s through modelgate not in this run"))
    } else {
      const errors = Object.entries(mg.errors).map(([k, v]) => `${k}: ${v}`)
      if (mg.dropped > 0) errors.push(`dropped: ${mg.dropped}`)
      const p99 = a.latency.p99Us
      out.push(judged(
        name,
        p99 < 2000 && errors.length === 0,
        `added p99 ${fmtUs(p99)} (95 % sampling interval ${band(a)}; p50 ${fmtUs(a.latency.p50Us)}, p90 ${
          fmtUs(a.latency.p90Us)
        }, max ${fmtUs(a.latency.maxUs)})${errors.length === 0 ? "" : `, with errors (${errors.join(", ")})`}`,
        () =>
          p99 < 2000
            ? `the latency is within the limit, but ${errors.join(", ")} of ${mg.sent} calls failed`
            : `${fmtUs(p99 - 2000)} over the 2 ms limit (${(p99 / 2000).toFixed(2)}x it)${
              errors.length === 0 ? "" : `, and ${errors.join(", ")} failed`
            }`
      ))
    }
  }
  {
    const name = "added TTFB p50 < 0.5 ms for streams"
    const stream = scenario("stream-200")
    const a = stream?.added.filter((x) => x.target === "modelgate") ?? []
    if (a.length === 0) out.push(unmeasured(name, "stream-200 through modelgate not in this run"))
    else {
      const worst = a.reduce((w, x) => (x.ttfb.p50Us > w.ttfb.p50Us ? x : w))
      const v = worst.ttfb.p50Us
      out.push(judged(
        name,
        v < 500,
        `added TTFB p50 ${fmtUs(v)} (95 % sampling interval ${fmtUs(worst.ttfbP50Band.lowUs)} to ${
          fmtUs(worst.ttfbP50Band.highUs)
        }), p99 ${fmtUs(worst.ttfb.p99Us)} at ${worst.rate}/s`,
        () => `${fmtUs(v - 500)} over the 0.5 ms limit (${(v / 500).toFixed(2)}x it)`
      ))
    }
  }
  {
    const name = "<= 30 KB allocated per non-stream call"
    const mg = small === undefined ? undefined : closedPoint(small, "modelgate")
    const floor = small === undefined ? undefined : closedPoint(small, "floor")
    if (mg?.allocKbPerCall == null) {
      out.push(unmeasured(name, "chat-small's closed loop through modelgate, with its GC trace, not in this run"))
    } else {
      const kb = mg.allocKbPerCall
      out.push(judged(
        name,
        kb <= 30,
        `${kb.toFixed(1)} KB per call at ${mg.concurrency ?? "?"} in flight${
          floor?.allocKbPerCall == null ? "" : ` (the floor: ${floor.allocKbPerCall.toFixed(1)} KB)`
        }`,
        () => `${(kb - 30).toFixed(1)} KB per call over the 30 KB limit (${(kb / 30).toFixed(2)}x it)`
      ))
    }
  }
  {
    const name = "idle RSS <= 100 MB"
    const mg = memory.flatMap((m) => m.points).find((p) => p.target === "modelgate")
    if (mg === undefined) out.push(unmeasured(name, "streams-1000 through modelgate not in this run"))
    else {
      out.push(judged(
        name,
        mg.idleRssBytes <= 100 * MB,
        `${fmtMb(mg.idleRssBytes)} before the 1,000 streams opened (after the warm-up)`,
        () => `${fmtMb(mg.idleRssBytes - 100 * MB)} over 100 MB (${(mg.idleRssBytes / (100 * MB)).toFixed(2)}x)`
      ))
    }
  }
  {
    const name = "1,000 open streams at <= 1.3x the floor's RSS"
    const points = memory.flatMap((m) => m.points)
    const mg = points.find((p) => p.target === "modelgate")
    const floor = points.find((p) => p.target === "floor")
    if (mg === undefined || floor === undefined) {
      out.push(unmeasured(name, "streams-1000 through modelgate and the floor not in this run"))
    } else {
      const complete = mg.ok === mg.streams
      const ratio = mg.peakRssBytes / floor.peakRssBytes
      out.push(judged(
        name,
        ratio <= 1.3 && complete,
        `peak ${fmtMb(mg.peakRssBytes)} vs the floor's ${fmtMb(floor.peakRssBytes)} (${ratio.toFixed(2)}x); steady ${
          fmtMb(mg.steadyRssBytes)
        } (${mg.ok}/${mg.streams} streams completed)`,
        () =>
          [
            ratio > 1.3
              ? `${ratio.toFixed(2)}x against 1.3x: ${fmtMb(mg.peakRssBytes - 1.3 * floor.peakRssBytes)} over`
              : "",
            complete ? "" : `${mg.streams - mg.ok} of ${mg.streams} streams did not complete`
          ].filter((x) => x !== "").join("; ")
      ))
    }
  }
  {
    const name = "< 5% RSS growth over the soak"
    if (soak === null || soak.target !== "modelgate") out.push(unmeasured(name, "no soak of modelgate in this run"))
    else {
      const pct = soak.rss.percent
      out.push(judged(
        name,
        pct < 5,
        `${fmtMb(soak.rss.start)} -> ${fmtMb(soak.rss.end)} (${pct.toFixed(1)}%) over ${
          soak.durationMs / 1000
        } s at ${soak.rate}/s`,
        () =>
          `${pct.toFixed(1)} % against 5 %: ${(pct - 5).toFixed(1)} points over, a trend of ${
            (soak.rss.perMinute / MB).toFixed(2)
          } MB/min`
      ))
    }
  }
  {
    const percent = tracing?.sampledPercent ?? null
    if (tracing === null || percent === null) {
      out.push(unmeasured(TRACING_TARGET, "the tracing step was not in this run"))
    } else {
      out.push(judged(
        TRACING_TARGET,
        percent <= TRACING_BUDGET_PERCENT,
        tracingHeadline(tracing) ?? "",
        () =>
          `${percent.toFixed(1)} % against ${TRACING_BUDGET_PERCENT} %: ${
            (percent - TRACING_BUDGET_PERCENT).toFixed(1)
          } points over`
      ))
    }
  }
  return out
}

/** The most CPU per call tracing may add with every call sampled (issue 24: "at most about a tenth"). @category verdicts */
export const TRACING_BUDGET_PERCENT = 10

const floorPeak = (m: MemoryResult): number | undefined => m.points.find((p) => p.target === "floor")?.peakRssBytes

const errorsText = (p: { readonly errors: Readonly<Record<string, number>>; readonly dropped?: number }): string => {
  const parts = Object.entries(p.errors).map(([k, v]) => `${k}: ${v}`)
  if (p.dropped !== undefined && p.dropped > 0) parts.push(`dropped: ${p.dropped}`)
  return parts.length === 0 ? "0" : parts.join(", ")
}

const loadText = (
  p: Point
): string => (p.mode === "open" ? `${p.rate}/s open` : `c=${p.concurrency} closed, ${p.throughput.toFixed(0)}/s`)

/** The latency table of a scenario: absolute and added percentiles per target and load. @category report */
export const latencyTable = (l: LatencyResult): string => {
  const rows = [
    "| target | load | calls ok | p50 | p90 | p99 | max | added p50 | added p90 | added p99 (95 % interval) | added max | errors |",
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
  ]
  for (const p of l.points) {
    const a = p.mode === "open" ? l.added.find((x) => x.target === p.target && x.rate === p.rate) : undefined
    const add = (f: (a: AddedPoint) => string): string => (a === undefined ? "" : f(a))
    if (p.latency.count === 0) {
      rows.push(`| ${p.target} | ${loadText(p)} | 0 | – | – | – | – |  |  |  |  | ${errorsText(p)} |`)
      continue
    }
    rows.push(
      `| ${p.target} | ${loadText(p)} | ${p.ok} | ${fmtUs(p.latency.p50Us)} | ${fmtUs(p.latency.p90Us)} | ${
        fmtUs(p.latency.p99Us)
      } | ${fmtUs(p.latency.maxUs)} | ${add((x) => fmtUs(x.latency.p50Us))} | ${add((x) => fmtUs(x.latency.p90Us))} | ${
        add((x) => `${fmtUs(x.latency.p99Us)} (${band(x)})`)
      } | ${add((x) => fmtUs(x.latency.maxUs))} | ${errorsText(p)} |`
    )
  }
  return rows.join("\n")
}

/** The time-to-first-byte table of a stream scenario. @category report */
export const ttfbTable = (l: LatencyResult): string => {
  const rows = [
    "| target | load | TTFB p50 | TTFB p90 | TTFB p99 | added TTFB p50 (95 % interval) | added TTFB p90 | added TTFB p99 |",
    "|---|---|---:|---:|---:|---:|---:|---:|"
  ]
  for (const p of l.points.filter((x) => x.mode === "open")) {
    if (p.ttfb.count === 0) {
      rows.push(`| ${p.target} | ${loadText(p)} | – | – | – |  |  |  |`)
      continue
    }
    const a = l.added.find((x) => x.target === p.target && x.rate === p.rate)
    rows.push(
      `| ${p.target} | ${loadText(p)} | ${fmtUs(p.ttfb.p50Us)} | ${fmtUs(p.ttfb.p90Us)} | ${fmtUs(p.ttfb.p99Us)} | ${
        a === undefined
          ? ""
          : `${fmtUs(a.ttfb.p50Us)} (${fmtUs(a.ttfbP50Band.lowUs)} to ${fmtUs(a.ttfbP50Band.highUs)})`
      } | ${a === undefined ? "" : fmtUs(a.ttfb.p90Us)} | ${a === undefined ? "" : fmtUs(a.ttfb.p99Us)} |`
    )
  }
  return rows.join("\n")
}

/** CPU per call of each proxy at each load, side by side with the floor's and the ratio. @category report */
export const cpuTable = (l: LatencyResult): string => {
  const loads = l.points.filter((p) => p.target === "floor")
  const rows = [
    "| load | modelgate CPU/call | floor CPU/call | modelgate / floor | Portkey CPU/call | Portkey / floor |",
    "|---|---:|---:|---:|---:|---:|"
  ]
  const ratio = (
    a: number | null | undefined,
    b: number | null | undefined
  ): string => (a == null || b == null || b === 0 ? "" : `${(a / b).toFixed(2)}x`)
  for (const f of loads) {
    const same = (t: TargetName) =>
      l.points.find((p) => p.target === t && p.mode === f.mode && p.rate === f.rate && p.concurrency === f.concurrency)
    const mg = same("modelgate")?.cpuMsPerCall ?? null
    const pk = same("portkey")?.cpuMsPerCall ?? null
    rows.push(
      `| ${f.mode === "open" ? `${f.rate}/s open` : `c=${f.concurrency} closed`} | ${fmtCpu(mg)} | ${
        fmtCpu(f.cpuMsPerCall)
      } | ${ratio(mg, f.cpuMsPerCall)} | ${fmtCpu(pk)} | ${ratio(pk, f.cpuMsPerCall)} |`
    )
  }
  return rows.join("\n")
}

const rssLine = (l: LatencyResult): string =>
  l.rss.length === 0
    ? "No proxy process was measured for memory."
    : `RSS during this scenario: ${
      l.rss.map((r) =>
        `${r.target} peak ${fmtMb(r.peakBytes)}${r.peakFrom === "samples" ? " (sampled)" : ""}, steady ${
          fmtMb(r.steadyBytes)
        }`
      ).join("; ")
    }.`

/** Paths written by `writeReport`. @category models */
export interface Written {
  readonly json: string
  readonly markdown: string
  readonly plots: ReadonlyArray<string>
}

const methodText = (r: Results): Array<string> => {
  const t = r.timing
  return [
    "## How it was measured",
    "",
    `- **Order.** The memory scenario runs first, on fresh processes. Then, per latency scenario: a ${t.warmupMs} ms closed-loop warm-up (8 in flight) of every target, then each open-loop rate on every target in turn (${t.pointMs} ms each, direct first), then ${t.throughputMs} ms of closed-loop throughput per target. The soak runs last. Targets are measured one after the other, never at the same time, so they do not compete for the 2 cores; the load generator shares the machine with whichever target is measured.`,
    "- **Open loop.** Calls are sent at a fixed rate whatever the target does, and each latency is measured from the call's *intended* send time, so a stalled target shows up as latency instead of slowing the sender down (no coordinated omission). Latency is to the last body byte, TTFB to the first. Calls still in flight " +
    `${t.drainMs} ms after the last send are aborted and counted as errors ("aborted").`,
    `- **Added latency** is the target's percentile minus the direct call's percentile at the same rate, from two runs a few seconds apart (the sequential order above). It is a difference of two separately measured distributions, not of the same calls: it carries the drift of the machine between the two runs (other processes, CPU frequency, the load generator's own garbage collection) as well as sampling noise. For the sampling part, every added p99 (and added TTFB p50) comes with a 95 % interval from the order statistics of both histograms (ranks n·q ∓ 1.96·sqrt(n·q·(1−q))); drift is not in that interval. p99 over a ${
      t.pointMs / 1000
    }-second point at 250/s rests on the slowest ${
      Math.max(1, Math.round((250 * t.pointMs) / 100_000))
    } calls, so tail figures at low rates are coarse; max is one call and is shown for completeness. A negative added value means the difference is within the noise.`,
    `- **CPU per call** is the proxy process's own user + system time (\`/proc/<pid>/stat\`, all threads, 10 ms clock ticks) over the point, divided by its successful calls; it includes the process's background work during the point (the gateway's batch writer and heartbeat). One tick is 10 ms: over ${
      t.pointMs / 1000
    } s at 1,000/s, a call costing 250 µs is measured to within about ±${
      (1000 / ((t.pointMs / 1000) * 1000 * 0.25)).toFixed(1)
    } %, and lower rates are coarser in proportion.`,
    `- **Memory.** Every proxy's RSS is sampled every ${t.rssSampleMs} ms during every scenario; *peak* is the kernel's VmHWM after resetting it (\`/proc/<pid>/clear_refs\`) at the scenario's start, so spikes between samples count (marked "sampled" where the reset was not allowed), *steady* the median of the samples taken while that proxy was under load. The soak compares the median RSS of its first and last tenth after a 10 % warm-up.`,
    "- **Billing.** After the run the gateway is stopped (SIGTERM flushes its usage records and returns its balance leases) and its SQLite file is read: the successful usage records must equal the successful calls the load generator counted through modelgate (warm-ups, points, streams and soak), give or take the calls cut off in flight, and the user's balance must have gone down by exactly the records' charges. Against an external gateway the same is read from `/api/usage/daily` and `/api/me` with the benchmark key.",
    "- **Same run.** Every target is measured in this one run with the same load generator, upstream and machine state; figures from different runs (or machines) are not comparable.",
    ""
  ]
}

/**
 * Results as indented JSON, but with each array of plain numbers (a
 * histogram's buckets, a series) on one line: readable in a diff, and well
 * under half the size of one number per line. Only whitespace is taken out,
 * and only from runs that hold no string (no quote), so the data is the same.
 *
 * @category report
 */
export const resultsJson = (results: Results): string =>
  `${JSON.stringify(results, null, 1).replace(/\[\n[-+\d.eE,\s[\]]*\]/g, (array) => array.replace(/\s+/g, ""))}\n`

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
  await writeFile(json, resultsJson(results))

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
          points: open.filter((p) => p.target === t && p.latency.count > 0).map((p) =>
            [p.rate ?? 0, p.latency.p99Us / 1000] as const
          )
        }))
      }).toPng()
    )
  }
  const throughputTargets = [...new Set(results.latency.flatMap((l) => l.points.map((p) => p.target)))]
  const proxies = throughputTargets.filter((t) => t !== "direct")
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
    await plot(
      "cpu-per-call.png",
      "Proxy CPU time per call (highest open-loop rate)",
      barChart({
        title: "Proxy CPU per call (us)",
        yLabel: "CPU us per call",
        categories: results.latency.map((l) => l.scenario),
        series: proxies.map((t) => ({
          name: t,
          values: results.latency.map((l) => {
            const rate = highestRate(l)
            const p = rate === undefined ? undefined : openPoint(l, t, rate)
            return p?.cpuMsPerCall == null ? null : Math.round(p.cpuMsPerCall * 1000)
          })
        }))
      }).toPng()
    )
    await plot(
      "rss-per-scenario.png",
      "Proxy peak RSS per scenario",
      barChart({
        title: "Proxy peak RSS per scenario (MB)",
        yLabel: "peak RSS (MB)",
        categories: results.latency.map((l) => l.scenario),
        series: proxies.map((t) => ({
          name: t,
          values: results.latency.map((l) => {
            const r = l.rss.find((x) => x.target === t)
            return r === undefined ? null : Math.round((r.peakBytes / MB) * 10) / 10
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
        // The target is relative (1.3x the floor's peak); the line shows it where the floor was measured.
        ...(floorPeak(m) === undefined
          ? {}
          : { threshold: { y: (1.3 * floorPeak(m)!) / MB, label: "target: 1.3x the floor's peak" } }),
        series: m.points.map((p) => ({
          name: p.target,
          points: p.samples.map((s) => [s.tMs / 1000, s.value / MB] as const)
        }))
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
        series: [{
          name: results.soak.target,
          points: results.soak.samples.map((s) => [s.tMs / 1000, s.value / MB] as const)
        }]
      }).toPng()
    )
  }

  const m = results.machine
  const missed = results.verdicts.filter((v) => v.status === "missed")
  const billing = results.billing
  const lines: Array<string> = [
    "# Benchmarks",
    "",
    "<!-- Written by packages/bench (pnpm bench); do not edit by hand. -->",
    "",
    results.quick
      ? "> **Quick smoke run** (`--quick`): short durations, numbers are indicative only. The full run is `pnpm bench` without `--quick`."
      : "> Full run (`pnpm bench`).",
    ...(results.profiled
      ? [
        "",
        `> **Profiled run**: the gateway ran under \`--cpu-prof\` (the default; \`--without-profile\` turns it off)${
          results.heapSnapshots.length > 0 ? " and a heap snapshot was taken after its 1,000 streams" : ""
        }, which costs CPU${
          results.heapSnapshots.length > 0 ? " and memory" : ""
        }: its figures here are higher than without the profiler.`
      ]
      : []),
    "",
    `Run ${results.startedAt} to ${results.finishedAt}: took ${formatDuration(results.elapsedMs)} (planned about ${
      formatDuration(results.plannedMs)
    }). Client dialect at the gateway: ${results.dialect === "openai" ? "OpenAI" : "Gemini"}.`,
    "",
    "## Machine",
    "",
    `- CPU: ${m.cpuModel}, ${m.cores} cores`,
    `- Memory: ${(m.memoryBytes / 1073741824).toFixed(1)} GiB`,
    `- Node: ${m.node}, Linux ${m.kernel}`,
    `- Load average (1, 5, 15 min): ${m.loadAverage.start.join(", ")} at the start, ${
      m.loadAverage.end.join(", ")
    } at the end`,
    "",
    `Everything runs on this one machine: the load generator, the fake upstream, the floor proxy, the gateway and Portkey are separate processes sharing its cores, so absolute numbers include that contention; the *added* figures subtract the direct baseline measured in the same run. A load average above ${m.cores} means other work was competing for the cores during the run.`,
    "",
    "## Targets",
    "",
    "| target | status | measured |",
    "|---|---|---|",
    ...results.verdicts.map((v) => `| ${v.target} | **${v.status}** | ${v.measured} |`),
    "",
    "## Billing",
    "",
    `${
      billing.status === "verified"
        ? "**Billing verified**"
        : billing.status === "failed"
        ? "**Billing check failed**"
        : "**Billing not checked**"
    }: ${billing.summary.replace(/^billing (verified|check FAILED|not checked): /, "")}.`,
    ""
  ]
  if (billing.calls !== null) {
    lines.push(
      `Calls through modelgate: ${billing.calls.sent} sent, ${billing.calls.ok} successful, ${billing.calls.refused} answered with an error status, ${billing.calls.unsure} cut off in flight. Usage records (${
        billing.source === "sqlite" ? "the gateway's SQLite file, read after it stopped" : "`/api/usage/daily`"
      }): ${billing.records}${
        billing.okRecords === null ? "" : `, ${billing.okRecords} of them successful`
      }; charged ${billing.chargedUsd} USD; the balance went from ${billing.balanceBeforeUsd} to ${billing.balanceAfterUsd} USD.`,
      ""
    )
  }
  lines.push("## Missed targets", "")
  if (missed.length === 0) {
    lines.push(
      results.verdicts.some((v) => v.status === "met")
        ? "None: every measured target was met."
        : "No target was measured in this run.",
      ""
    )
  } else {
    for (const v of missed) lines.push(`- **${v.target}**: ${v.shortfall ?? ""}. Measured: ${v.measured}.`)
    lines.push(
      "",
      "Where the time and memory go, what was done about it and what is left: [design/performance.md](design/performance.md).",
      ""
    )
    if (results.profile === null) {
      lines.push(
        "This run was not profiled (`--without-profile`, or a gateway the run did not start). Without that option the gateway runs under `--cpu-prof` and its top functions and the time by package are put here.",
        ""
      )
    }
  }
  if (results.profile !== null) {
    lines.push(
      "### What the gateway's CPU profile shows",
      "",
      `The measured scenarios and the soak, from \`node --cpu-prof\`; files in \`${results.profileDir ?? ""}\`${
        results.heapSnapshots.length > 0
          ? `, heap snapshot${results.heapSnapshots.length === 1 ? "" : "s"} after streams-1000: ${
            results.heapSnapshots.map((f) => `\`${f}\``).join(", ")
          }`
          : ""
      }. "Busy" excludes the time the gateway waited for work.`,
      "",
      ...profileMarkdown(results.profile),
      ""
    )
  }
  if (results.latency.length > 0) {
    lines.push(
      "## Proxy cost per call",
      "",
      "At each scenario's highest open-loop rate; CPU time of the proxy process per successful call.",
      "",
      "| scenario | rate | modelgate | floor | modelgate / floor | Portkey | Portkey / floor |",
      "|---|---:|---:|---:|---:|---:|---:|"
    )
    for (const l of results.latency) {
      const rate = highestRate(l)
      if (rate === undefined) continue
      const cpu = (t: TargetName) => openPoint(l, t, rate)?.cpuMsPerCall ?? null
      const ratio = (
        a: number | null,
        b: number | null
      ) => (a === null || b === null || b === 0 ? "" : `${(a / b).toFixed(2)}x`)
      lines.push(
        `| ${l.scenario} | ${rate}/s | ${fmtCpu(cpu("modelgate"))} | ${fmtCpu(cpu("floor"))} | ${
          ratio(cpu("modelgate"), cpu("floor"))
        } | ${fmtCpu(cpu("portkey"))} | ${ratio(cpu("portkey"), cpu("floor"))} |`
      )
    }
    lines.push(
      "",
      "In the closed loop (the most calls, so the finest figures): CPU time and the JavaScript heap allocated (from V8's GC trace) per successful call.",
      "",
      "| scenario | in flight | modelgate CPU | floor CPU | modelgate / floor | modelgate allocated | floor allocated |",
      "|---|---:|---:|---:|---:|---:|---:|"
    )
    const kb = (x: number | null | undefined) => (x == null ? "" : `${x.toFixed(1)} KB`)
    for (const l of results.latency) {
      const mg = closedPoint(l, "modelgate")
      const floor = closedPoint(l, "floor")
      if (mg === undefined && floor === undefined) continue
      const ratio = mg?.cpuMsPerCall == null || floor?.cpuMsPerCall == null || floor.cpuMsPerCall === 0
        ? ""
        : `${(mg.cpuMsPerCall / floor.cpuMsPerCall).toFixed(2)}x`
      lines.push(
        `| ${l.scenario} | ${mg?.concurrency ?? floor?.concurrency ?? ""} | ${fmtCpu(mg?.cpuMsPerCall ?? null)} | ${
          fmtCpu(floor?.cpuMsPerCall ?? null)
        } | ${ratio} | ${kb(mg?.allocKbPerCall)} | ${kb(floor?.allocKbPerCall)} |`
      )
    }
    lines.push(
      "",
      "## Proxy memory per scenario",
      "",
      "| scenario | modelgate peak | modelgate steady | floor peak | floor steady | Portkey peak | Portkey steady |",
      "|---|---:|---:|---:|---:|---:|---:|"
    )
    for (const l of results.latency) {
      const r = (t: TargetName) => l.rss.find((x) => x.target === t)
      const cells = (["modelgate", "floor", "portkey"] as const).map((t) => {
        const x = r(t)
        return x === undefined ? " | " : `${fmtMb(x.peakBytes)} | ${fmtMb(x.steadyBytes)}`
      })
      lines.push(`| ${l.scenario} | ${cells.join(" | ")} |`)
    }
    for (const mem of results.memory) {
      const r = (t: TargetName) => mem.points.find((x) => x.target === t)
      const cells = (["modelgate", "floor", "portkey"] as const).map((t) => {
        const x = r(t)
        return x === undefined ? " | " : `${fmtMb(x.peakRssBytes)} | ${fmtMb(x.steadyRssBytes)}`
      })
      lines.push(`| ${mem.scenario} | ${cells.join(" | ")} |`)
    }
    lines.push("")
  }
  lines.push(
    "## What was measured",
    "",
    "| target | available | note |",
    "|---|---|---|",
    ...results.targets.map((t) => `| ${t.name} | ${t.available ? "yes" : "no"} | ${t.note} |`),
    "",
    `Timing: warm-up ${results.timing.warmupMs} ms, ${results.timing.pointMs} ms per open-loop rate (then up to ${results.timing.drainMs} ms for calls in flight), ${results.timing.throughputMs} ms closed loop, soak ${
      results.timing.soakMs / 1000
    } s at ${results.timing.soakRate}/s.`,
    "",
    ...methodText(results)
  )
  for (const l of results.latency) {
    lines.push(`## ${l.title} (\`${l.scenario}\`)`, "", l.description, "", latencyTable(l), "")
    if (l.stream) lines.push("Time to first byte:", "", ttfbTable(l), "")
    lines.push("CPU per call:", "", cpuTable(l), "", rssLine(l), "")
    const p = plots.find((x) => x.file === `${l.scenario}-p99.png`)
    if (p !== undefined) lines.push(`![${p.title}](benchmarks/${p.file})`, "")
  }
  for (const mem of results.memory) {
    lines.push(`## ${mem.title} (\`${mem.scenario}\`)`, "", mem.description, "")
    lines.push(
      "| proxy | streams ok | idle RSS | peak RSS | steady RSS | TTFB p50 | TTFB p99 | errors |",
      "|---|---:|---:|---:|---:|---:|---:|---|"
    )
    for (const p of mem.points) {
      lines.push(
        `| ${p.target} | ${p.ok}/${p.streams} | ${fmtMb(p.idleRssBytes)} | ${fmtMb(p.peakRssBytes)}${
          p.peakFrom === "samples" ? " (sampled)" : ""
        } | ${fmtMb(p.steadyRssBytes)} | ${fmtUs(p.ttfb.p50Us)} | ${fmtUs(p.ttfb.p99Us)} | ${errorsText(p)} |`
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
      `${s.target}, \`${s.scenario}\` at ${s.rate}/s for ${s.durationMs / 1000} s: ${s.ok} calls ok, errors ${
        errorsText(s)
      }.`,
      `RSS (median of the first and last tenth after a 10 % warm-up): ${fmtMb(s.rss.start)} -> ${fmtMb(s.rss.end)} (${
        s.rss.percent.toFixed(1)
      } %), trend ${(s.rss.perMinute / MB).toFixed(2)} MB/min, peak ${fmtMb(s.rss.peak)}. Latency p50 ${
        fmtUs(s.latency.p50Us)
      }, p99 ${fmtUs(s.latency.p99Us)}, max ${fmtUs(s.latency.maxUs)}.`,
      "",
      "![Soak RSS](benchmarks/soak-rss.png)",
      ""
    )
  }
  for (const file of ["throughput.png", "cpu-per-call.png", "rss-per-scenario.png"]) {
    const p = plots.find((x) => x.file === file)
    if (p !== undefined) lines.push(`![${p.title}](benchmarks/${p.file})`, "")
  }
  if (results.tracing != null) {
    lines.push("## What tracing costs (`tracing`)", "", ...tracingMarkdown(results.tracing), "")
  }
  if (results.notes.length > 0) lines.push("## Notes", "", ...results.notes.map((n) => `- ${n}`), "")
  lines.push(`Raw results: \`${relative(outDir, json)}\`.`, "")
  const markdown = join(docsDir, "benchmarks.md")
  await writeFile(markdown, lines.join("\n"))
  return { json, markdown, plots: plots.map((p) => join(plotDir, p.file)) }
}
