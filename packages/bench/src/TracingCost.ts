/**
 * What tracing costs a call, measured on the gateway process alone: the
 * `tracing` step of `pnpm bench` (`--only tracing` runs it alone) and
 * `pnpm bench:tracing`.
 *
 * For each mode a fresh gateway (same binary, same generated configuration,
 * its own SQLite file) serves the same closed loop of small chat calls
 * against the fake upstream; the gateway's CPU time (`/proc`) and JavaScript
 * heap allocated (V8's GC trace) over the measured calls are divided by their
 * number. The modes:
 *
 * - `off`: no OTLP endpoint, so no tracer and no span (the default);
 * - `unsampled`: tracing on, sampler `always_off`;
 * - `sampled`: tracing on, every call sampled and exported in protobuf to a
 *   collector in the benchmark's process that accepts and discards.
 *
 * The modes are measured in rounds, the order reversed every other round
 * (off, sampled, sampled, off, ...) so a drift in the machine's load weighs on
 * both alike; each mode's figure is the median of its rounds, and the spread
 * (lowest and highest round) is kept, since CPU time on a shared machine
 * moves with other load.
 *
 * @since 0.1.0
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { BENCH_KEY, gatewayConfigText } from "./GatewayConfig.ts"
import { closedLoop } from "./LoadGenerator.ts"
import { cpuTimeMs } from "./Proc.ts"
import { freePort, startService } from "./Services.ts"

/** A way of running the gateway. @category models */
export type TracingMode = "off" | "unsampled" | "sampled"

/** The modes, as they can be asked for. @category constants */
export const TRACING_MODES: ReadonlyArray<TracingMode> = ["off", "unsampled", "sampled"]

/** One mode's round. @category models */
export interface TracingRound {
  readonly mode: TracingMode
  readonly cpuUsPerCall: number
  readonly allocKbPerCall: number
  /** OTLP requests the collector received over the measured calls, and their bytes. */
  readonly exports: number
  readonly exportedBytes: number
}

/** One mode over its rounds. @category models */
export interface TracingModeResult {
  readonly mode: TracingMode
  /** Median of the rounds. */
  readonly cpuUsPerCall: number
  readonly cpuUsLow: number
  readonly cpuUsHigh: number
  readonly allocKbPerCall: number
  readonly exports: number
  readonly exportedBytes: number
}

/** What the tracing step measured. @category models */
export interface TracingResult {
  readonly calls: number
  readonly warmup: number
  readonly concurrency: number
  readonly rounds: ReadonlyArray<TracingRound>
  readonly modes: ReadonlyArray<TracingModeResult>
  /** CPU per call with every call sampled against off, in percent more (null when either was not measured). */
  readonly sampledPercent: number | null
  /** The same from each pair of rounds (sampled round i against off round i): the spread of the ratio. */
  readonly sampledPercentLow: number | null
  readonly sampledPercentHigh: number | null
}

/** Sizes of the tracing step. @category models */
export interface TracingTiming {
  readonly calls: number
  readonly warmup: number
  readonly concurrency: number
  readonly rounds: number
}

/** The full run's sizes: 2 rounds of 2,000 calls per mode (about 24 s on 2 cores). @category constants */
export const FULL_TRACING: TracingTiming = { calls: 2000, warmup: 500, concurrency: 4, rounds: 2 }

/** A quick run's: one round of 1,000 calls per mode. @category constants */
export const QUICK_TRACING: TracingTiming = { calls: 1000, warmup: 300, concurrency: 4, rounds: 1 }

/** The plan's allowance per mode and round: start, warm-up, measured calls, stop. @category constants */
export const TRACING_ROUND_MS = 6000

/** A collector that accepts and discards everything (an empty ExportTraceServiceResponse). @category collector */
export const discardingCollector = async () => {
  let requests = 0
  let bytes = 0
  const server = createServer((req, res) => {
    req.on("data", (chunk: Buffer) => bytes += chunk.length)
    req.on("end", () => {
      requests++
      res.writeHead(200, { "content-type": "application/x-protobuf" }).end()
    })
  })
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done))
  const address = server.address()
  if (address === null || typeof address === "string") throw new Error("no address")
  return {
    url: `http://127.0.0.1:${address.port}`,
    stats: () => ({ requests, bytes }),
    close: () => new Promise<void>((done) => server.close(() => done()))
  }
}

/** The gateway's environment for a mode. @category modes */
export const envOf = (mode: TracingMode, collector: string): Record<string, string> => {
  switch (mode) {
    case "off":
      return { OTEL_EXPORTER_OTLP_ENDPOINT: "", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "", OTEL_SDK_DISABLED: "" }
    case "unsampled":
      return { OTEL_EXPORTER_OTLP_ENDPOINT: collector, OTEL_TRACES_SAMPLER: "always_off", OTEL_SDK_DISABLED: "" }
    case "sampled":
      return { OTEL_EXPORTER_OTLP_ENDPOINT: collector, OTEL_TRACES_SAMPLER: "always_on", OTEL_SDK_DISABLED: "" }
  }
}

/** The order of the modes in each round: as given, then reversed, and so on. @category modes */
export const roundOrder = (modes: ReadonlyArray<TracingMode>, rounds: number): Array<TracingMode> => {
  const out: Array<TracingMode> = []
  for (let round = 0; round < rounds; round++) out.push(...(round % 2 === 0 ? modes : [...modes].reverse()))
  return out
}

const median = (values: ReadonlyArray<number>): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

/** The figures of the rounds, by mode, and what sampling everything costs against off. @category results */
export const summarise = (
  timing: Omit<TracingTiming, "rounds">,
  rounds: ReadonlyArray<TracingRound>
): TracingResult => {
  const modes: Array<TracingModeResult> = []
  for (const mode of TRACING_MODES) {
    const of = rounds.filter((r) => r.mode === mode)
    if (of.length === 0) continue
    const cpu = of.map((r) => r.cpuUsPerCall)
    modes.push({
      mode,
      cpuUsPerCall: median(cpu),
      cpuUsLow: Math.min(...cpu),
      cpuUsHigh: Math.max(...cpu),
      allocKbPerCall: median(of.map((r) => r.allocKbPerCall)),
      exports: median(of.map((r) => r.exports)),
      exportedBytes: median(of.map((r) => r.exportedBytes))
    })
  }
  const off = modes.find((m) => m.mode === "off")
  const sampled = modes.find((m) => m.mode === "sampled")
  const percent = (a: number, b: number) => (a / b - 1) * 100
  const offRounds = rounds.filter((r) => r.mode === "off")
  const sampledRounds = rounds.filter((r) => r.mode === "sampled")
  const pairs = offRounds.slice(0, sampledRounds.length).map((o, i) =>
    percent(sampledRounds[i]!.cpuUsPerCall, o.cpuUsPerCall)
  )
  return {
    ...timing,
    rounds,
    modes,
    sampledPercent: off === undefined || sampled === undefined || off.cpuUsPerCall === 0
      ? null
      : percent(sampled.cpuUsPerCall, off.cpuUsPerCall),
    sampledPercentLow: pairs.length === 0 ? null : Math.min(...pairs),
    sampledPercentHigh: pairs.length === 0 ? null : Math.max(...pairs)
  }
}

/** What `measureTracing` needs. @category models */
export interface TracingRun {
  /** The Node binary, and the gateway's entry (the bundle, or `bin.ts`). */
  readonly node: string
  readonly bin: string
  readonly upstreamUrl: string
  readonly modes: ReadonlyArray<TracingMode>
  readonly timing: TracingTiming
  readonly log?: (line: string) => void
  /** Extra flags for the gateways' Node (`--cpu-prof`, to see where a mode's time goes). */
  readonly nodeFlags?: ReadonlyArray<string>
}

/**
 * Measures the modes: a fresh gateway per mode and round, the same closed
 * loop of small chat calls (after a warm-up), CPU time and heap allocated
 * per call, and what the collector received. Throws when a call fails.
 *
 * @category run
 */
export const measureTracing = async (run: TracingRun): Promise<TracingResult> => {
  const { calls, warmup, concurrency } = run.timing
  const collector = await discardingCollector()
  const rounds: Array<TracingRound> = []
  try {
    for (const mode of roundOrder(run.modes, run.timing.rounds)) {
      const work = mkdtempSync(join(tmpdir(), "modelgate-bench-tracing-"))
      try {
        const port = await freePort()
        const config = join(work, "gateway.json")
        writeFileSync(
          config,
          gatewayConfigText({
            listen: `127.0.0.1:${port}`,
            database: `sqlite:${join(work, "modelgate.db")}`,
            upstreamUrl: run.upstreamUrl,
            openaiModels: ["gpt-4o-mini"],
            geminiModels: []
          })
        )
        const gateway = await startService({
          name: `modelgate (tracing ${mode})`,
          command: run.node,
          args: ["--trace-gc-nvp", ...(run.nodeFlags ?? []), run.bin, "serve", "--config", config],
          cwd: work,
          env: envOf(mode, collector.url),
          ready: { kind: "poll", url: `http://127.0.0.1:${port}/healthz`, baseUrl: `http://127.0.0.1:${port}` },
          gcTrace: true
        })
        try {
          const spec = {
            url: `${gateway.url}/v1/chat/completions`,
            headers: { authorization: `Bearer ${BENCH_KEY}`, "content-type": "application/json" },
            body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Say hello" }] }),
            concurrency
          }
          await closedLoop({ ...spec, requests: warmup })
          const cpu0 = cpuTimeMs(gateway.pid)
          const heap0 = gateway.allocatedBytes() ?? 0
          const exported0 = collector.stats()
          const result = await closedLoop({ ...spec, requests: calls })
          const cpu = cpuTimeMs(gateway.pid) - cpu0
          const heap = (gateway.allocatedBytes() ?? 0) - heap0
          const exported = collector.stats()
          if (result.ok !== calls) throw new Error(`tracing ${mode}: ${result.ok} of ${calls} calls succeeded`)
          const round: TracingRound = {
            mode,
            cpuUsPerCall: cpu * 1000 / calls,
            allocKbPerCall: heap / 1024 / calls,
            exports: exported.requests - exported0.requests,
            exportedBytes: exported.bytes - exported0.bytes
          }
          rounds.push(round)
          run.log?.(
            `  tracing ${mode}: ${round.cpuUsPerCall.toFixed(1)} µs CPU, ${
              round.allocKbPerCall.toFixed(1)
            } KB allocated per call`
          )
        } finally {
          await gateway.stop()
        }
      } finally {
        rmSync(work, { recursive: true, force: true })
      }
    }
  } finally {
    await collector.close()
  }
  return summarise({ calls, warmup, concurrency }, rounds)
}

/** The target the tracing step judges. @category constants */
export const TRACING_TARGET = "tracing on, all sampled: <= ~10% more CPU per call"

/** The headline: "tracing on, all sampled: X% more CPU per call". @category results */
export const tracingHeadline = (result: TracingResult): string | null => {
  if (result.sampledPercent === null) return null
  const off = result.modes.find((m) => m.mode === "off")!
  const sampled = result.modes.find((m) => m.mode === "sampled")!
  const spread = result.sampledPercentLow === null || result.rounds.length <= 2
    ? ""
    : ` (rounds: ${result.sampledPercentLow.toFixed(1)}% to ${result.sampledPercentHigh!.toFixed(1)}%)`
  return `tracing on, all sampled: ${result.sampledPercent.toFixed(1)}% more CPU per call${spread}: ${
    sampled.cpuUsPerCall.toFixed(0)
  } µs against ${off.cpuUsPerCall.toFixed(0)} µs off`
}

/** The tracing result as Markdown: the headline and a table by mode. @category results */
export const tracingMarkdown = (result: TracingResult): Array<string> => {
  const headline = tracingHeadline(result)
  const lines: Array<string> = []
  if (headline !== null) lines.push(`**${headline}.**`, "")
  lines.push(
    `A fresh gateway per mode and round serves ${result.calls} small chat calls (after ${result.warmup} of warm-up), ${result.concurrency} in flight, against the fake upstream; ${
      result.rounds.length / Math.max(1, result.modes.length)
    } round(s) per mode, the order reversed every other round. \`off\`: no OTLP endpoint; \`sampled\`: every call sampled and exported in protobuf to a local collector that discards it. Each figure is the median of the rounds; CPU time from \`/proc\`, heap allocated from V8's GC trace.`,
    "",
    "| mode | CPU per call | lowest round | highest round | heap allocated per call | OTLP requests | KB exported |",
    "|---|---:|---:|---:|---:|---:|---:|"
  )
  for (const m of result.modes) {
    lines.push(
      `| ${m.mode} | ${m.cpuUsPerCall.toFixed(0)} µs | ${m.cpuUsLow.toFixed(0)} µs | ${m.cpuUsHigh.toFixed(0)} µs | ${
        m.allocKbPerCall.toFixed(1)
      } KB | ${m.exports} | ${(m.exportedBytes / 1024).toFixed(0)} |`
    )
  }
  return lines
}
