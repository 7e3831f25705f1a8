/**
 * The load generator on its own, for measuring any OpenAI- or
 * Gemini-compatible endpoint (modelgate, another gateway, an upstream) the
 * way the benchmark measures modelgate:
 *
 *   node packages/bench/src/loadgen.ts --url URL [--header "Name: value"]...
 *     [--body JSON | --body-file FILE | --scenario NAME [--dialect openai|gemini]]
 *     (--rate N --duration-ms D | --concurrency C [--requests N] [--duration-ms D])
 *     [--stream] [--pid PID] [--json] [--allow-remote] ...
 *
 * It prints the latency and time-to-first-byte histograms' summary (p50, p90,
 * p99, p99.9, max), the throughput and the errors by kind (and, with
 * `--pid`, the CPU time per call and the RSS of the process serving them,
 * from its own `/proc` accounting), or all of it as JSON with `--json`. Loopback URLs only, unless `--allow-remote` is given.
 * Exit code 0 when at least one call succeeded, 1 when none did, 2 on a
 * usage error.
 *
 * @since 0.1.0
 */
import { existsSync, readFileSync } from "node:fs"
import { parseArgs } from "node:util"
import { closedLoop, type LoadResult, openLoop, type RequestSpec } from "./LoadGenerator.ts"
import { checkTargetUrl } from "./Loopback.ts"
import { cpuTimeMs, memory, resetPeak } from "./Proc.ts"
import { type Dialect, DIALECTS, SCENARIO_NAMES, scenarios } from "./Scenarios.ts"
import type { HistogramJson, Summary } from "./Stats.ts"

/** The usage text. @category cli */
export const LOADGEN_USAGE = `usage: node packages/bench/src/loadgen.ts --url URL [options]

What to send:
  --url URL               the full endpoint URL; with --scenario, the base URL (e.g. http://127.0.0.1:8080)
  --header "Name: value"  a request header (repeat for more), e.g. "authorization: Bearer sk-..."
                          or "x-goog-api-key: ..."
  --method M              HTTP method (default POST with a body, GET without)
  --body JSON             the request body (JSON text); content-type is application/json
  --body-file FILE        the request body, read from FILE
  --scenario NAME         path and body of a benchmark scenario (${SCENARIO_NAMES.join(", ")}),
                          as sent to the gateway; the gateway must serve its model names
  --dialect D             with --scenario: openai (default) or gemini
  --stream                label the calls as streams (TTFB is always recorded)

How to send (pick one):
  --rate N --duration-ms D           open loop: N calls/s for D ms, latency from each call's intended
                                     send time (no coordinated omission)
  --concurrency C [--requests N] [--duration-ms D]
                                     closed loop: C calls in flight until N calls or D ms

Tuning:
  --warmup-ms W           closed loop (C, default 8) for W ms first, not counted
  --connections N         keep-alive connections (open loop default 512; closed loop: C)
  --timeout-ms T          headers and body-chunk timeout (default 60000)
  --max-in-flight N       open loop: calls beyond N in flight are dropped and counted (default 20000)
  --drain-ms N            open loop: wait N ms after the last send, then abort what is left (default: timeout)
  --ramp-ms N             closed loop: spread the first calls over N ms

Measuring the server (same machine only):
  --pid PID               also report that process's CPU time per successful call (user + system, from
                          /proc/PID/stat) and its RSS before, after and at peak (VmHWM, reset at the start)

Output and safety:
  --json                  print the result as JSON (summaries in microseconds, histograms included)
  --allow-remote          accept a URL that is not on this machine (http or https); without it only
                          127.0.0.0/8, localhost and [::1] are accepted
  -h, --help              this text

Exit code: 0 when at least one call succeeded, 1 when none did, 2 for a usage error.`

/** A parsed command line. @category cli */
export interface LoadgenConfig {
  readonly request: RequestSpec
  /** The server's process, for CPU and memory figures. */
  readonly pid: number | null
  readonly allowRemote: boolean
  readonly json: boolean
  readonly warmupMs: number
  readonly load:
    | {
      readonly mode: "open"
      readonly rate: number
      readonly durationMs: number
      readonly maxInFlight?: number
      readonly drainMs?: number
      readonly connections?: number
    }
    | {
      readonly mode: "closed"
      readonly concurrency: number
      readonly requests?: number
      readonly durationMs?: number
      readonly rampMs?: number
      readonly connections?: number
    }
  readonly timeoutMs?: number
}

/** A command-line mistake: the message names the option. @category cli */
export class UsageError extends Error {
  override readonly name = "UsageError"
}

const number = (
  name: string,
  value: string | undefined,
  rule: "positive" | "positive-int" | "non-negative-int"
): number | undefined => {
  if (value === undefined) return undefined
  const n = Number(value)
  const ok = rule === "positive"
    ? Number.isFinite(n) && n > 0
    : rule === "positive-int"
    ? Number.isInteger(n) && n > 0
    : Number.isInteger(n) && n >= 0
  if (value.trim() === "" || !ok) {
    const what = rule === "positive"
      ? "a positive number"
      : rule === "positive-int"
      ? "a positive integer"
      : "an integer >= 0"
    throw new UsageError(`--${name} must be ${what}, got "${value}"`)
  }
  return n
}

/**
 * Parses `"Name: value"` header options into a lower-cased header record.
 *
 * @category cli
 */
export const parseHeaders = (values: ReadonlyArray<string>, option = "--header"): Record<string, string> => {
  const headers: Record<string, string> = {}
  for (const h of values) {
    const colon = h.indexOf(":")
    if (colon <= 0 || h.slice(0, colon).trim() === "") {
      throw new UsageError(`${option} must look like "Name: value", got "${h}"`)
    }
    headers[h.slice(0, colon).trim().toLowerCase()] = h.slice(colon + 1).trim()
  }
  return headers
}

/**
 * Parses the command line (see `LOADGEN_USAGE`); `readFile` reads
 * `--body-file` (injectable for tests). Throws `UsageError` naming the bad
 * option.
 *
 * @category cli
 */
export const parseLoadgenArgs = (
  argv: ReadonlyArray<string>,
  readFile: (path: string) => string = (path) => readFileSync(path, "utf8")
): LoadgenConfig | "help" => {
  let values
  try {
    values = parseArgs({
      args: [...argv],
      options: {
        url: { type: "string" },
        header: { type: "string", multiple: true },
        method: { type: "string" },
        body: { type: "string" },
        "body-file": { type: "string" },
        scenario: { type: "string" },
        dialect: { type: "string" },
        stream: { type: "boolean", default: false },
        rate: { type: "string" },
        "duration-ms": { type: "string" },
        concurrency: { type: "string" },
        requests: { type: "string" },
        "warmup-ms": { type: "string" },
        connections: { type: "string" },
        "timeout-ms": { type: "string" },
        "max-in-flight": { type: "string" },
        "drain-ms": { type: "string" },
        "ramp-ms": { type: "string" },
        json: { type: "boolean", default: false },
        pid: { type: "string" },
        "allow-remote": { type: "boolean", default: false },
        help: { type: "boolean", short: "h", default: false }
      },
      strict: true,
      allowPositionals: false
    }).values
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error))
  }
  if (values.help) return "help"
  if (values.url === undefined) throw new UsageError("--url is required")
  const allowRemote = values["allow-remote"]
  const sources =
    [values.body !== undefined, values["body-file"] !== undefined, values.scenario !== undefined].filter(Boolean).length
  if (sources > 1) throw new UsageError("give at most one of --body, --body-file and --scenario")
  if (values.dialect !== undefined && values.scenario === undefined) throw new UsageError("--dialect needs --scenario")

  let url = values.url
  let body: string | undefined
  let stream = values.stream
  if (values.scenario !== undefined) {
    const dialect = values.dialect ?? "openai"
    if (!DIALECTS.includes(dialect as Dialect)) {
      throw new UsageError(`--dialect must be one of ${DIALECTS.join(", ")}, got "${dialect}"`)
    }
    const scenario = scenarios(false, dialect as Dialect).find((s) => s.name === values.scenario)
    if (scenario === undefined) {
      throw new UsageError(`--scenario: unknown scenario "${values.scenario}" (known: ${SCENARIO_NAMES.join(", ")})`)
    }
    const base = checkOrUsage(url, allowRemote)
    url = base.origin + base.pathname.replace(/\/$/, "") + scenario.gateway.path
    body = scenario.gateway.body
    stream = stream || scenario.stream
  } else if (values["body-file"] !== undefined) {
    const file = values["body-file"]
    try {
      body = readFile(file)
    } catch (error) {
      throw new UsageError(
        `--body-file: cannot read "${file}": ${error instanceof Error ? error.message : String(error)}`
      )
    }
    jsonOrUsage(body, `--body-file "${file}"`)
  } else if (values.body !== undefined) {
    body = values.body
    jsonOrUsage(body, "--body")
  }
  checkOrUsage(url, allowRemote)

  const rate = number("rate", values.rate, "positive")
  const concurrency = number("concurrency", values.concurrency, "positive-int")
  const durationMs = number("duration-ms", values["duration-ms"], "positive")
  const requests = number("requests", values.requests, "positive-int")
  const connections = number("connections", values.connections, "positive-int")
  const timeoutMs = number("timeout-ms", values["timeout-ms"], "positive")
  const maxInFlight = number("max-in-flight", values["max-in-flight"], "positive-int")
  const drainMs = number("drain-ms", values["drain-ms"], "non-negative-int")
  const rampMs = number("ramp-ms", values["ramp-ms"], "non-negative-int")
  const warmupMs = number("warmup-ms", values["warmup-ms"], "non-negative-int") ?? 0
  const pid = number("pid", values.pid, "positive-int") ?? null
  if (pid !== null && !existsSync(`/proc/${pid}/stat`)) {
    throw new UsageError(`--pid: no process ${pid} on this machine (/proc/${pid}/stat does not exist)`)
  }
  if (rate !== undefined && concurrency !== undefined) {
    throw new UsageError("give either --rate (open loop) or --concurrency (closed loop), not both")
  }
  if (rate === undefined && concurrency === undefined) {
    throw new UsageError("give --rate N --duration-ms D (open loop) or --concurrency C (closed loop)")
  }

  let load: LoadgenConfig["load"]
  if (rate !== undefined) {
    if (durationMs === undefined) throw new UsageError("--rate needs --duration-ms")
    if (requests !== undefined) {
      throw new UsageError(
        "--requests is for the closed loop (--concurrency); the open loop sends rate x duration calls"
      )
    }
    if (rampMs !== undefined) throw new UsageError("--ramp-ms is for the closed loop (--concurrency)")
    load = {
      mode: "open",
      rate,
      durationMs,
      ...(maxInFlight !== undefined ? { maxInFlight } : {}),
      ...(drainMs !== undefined ? { drainMs } : {}),
      ...(connections !== undefined ? { connections } : {})
    }
  } else {
    if (requests === undefined && durationMs === undefined) {
      throw new UsageError("--concurrency needs --requests N, --duration-ms D, or both")
    }
    if (maxInFlight !== undefined || drainMs !== undefined) {
      throw new UsageError("--max-in-flight and --drain-ms are for the open loop (--rate)")
    }
    load = {
      mode: "closed",
      concurrency: concurrency as number,
      ...(requests !== undefined ? { requests } : {}),
      ...(durationMs !== undefined ? { durationMs } : {}),
      ...(rampMs !== undefined ? { rampMs } : {}),
      ...(connections !== undefined ? { connections } : {})
    }
  }
  const headers = parseHeaders(values.header ?? [])
  return {
    request: {
      url,
      ...(values.method !== undefined ? { method: values.method.toUpperCase() } : {}),
      headers,
      ...(body !== undefined ? { body } : {}),
      stream
    },
    pid,
    allowRemote,
    json: values.json,
    warmupMs,
    load,
    ...(timeoutMs !== undefined ? { timeoutMs } : {})
  }
}

const checkOrUsage = (url: string, allowRemote: boolean): URL => {
  try {
    return checkTargetUrl(url, "--url", { allowRemote })
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error)
    throw new UsageError(allowRemote ? message : `${message} (pass --allow-remote to measure another machine)`)
  }
}

const jsonOrUsage = (text: string, what: string): void => {
  try {
    JSON.parse(text)
  } catch (error) {
    throw new UsageError(`${what} is not valid JSON: ${error instanceof Error ? error.message : String(error)}`)
  }
}

/** The server process's own accounting over the measured run (`--pid`). @category models */
export interface ProcessFigures {
  readonly pid: number
  /** User + system CPU time over the run, ms (10 ms clock ticks). */
  readonly cpuMs: number
  /** `cpuMs` per successful call; null when none succeeded. */
  readonly cpuMsPerCall: number | null
  readonly rssStartBytes: number
  readonly rssEndBytes: number
  /** VmHWM since a reset at the start ("hwm"), or the larger of start and end when the reset was refused. */
  readonly peakRssBytes: number
  readonly peakFrom: "hwm" | "start-end"
}

/** What `--json` prints: the run's figures, with µs summaries in place of the histograms and the histograms as JSON. @category models */
export interface LoadgenJson extends Omit<LoadResult, "latency" | "ttfb"> {
  readonly stream: boolean
  readonly latency: Summary
  readonly ttfb: Summary
  readonly latencyHistogram: HistogramJson
  readonly ttfbHistogram: HistogramJson
  readonly process: ProcessFigures | null
}

/** A result as JSON (µs summaries plus mergeable histograms). @category output */
export const resultJson = (r: LoadResult, stream: boolean, proc: ProcessFigures | null = null): LoadgenJson => ({
  mode: r.mode,
  url: r.url,
  stream,
  rate: r.rate,
  concurrency: r.concurrency,
  elapsedMs: Math.round(r.elapsedMs * 10) / 10,
  sent: r.sent,
  completed: r.completed,
  ok: r.ok,
  dropped: r.dropped,
  errors: r.errors,
  bytes: r.bytes,
  throughput: Math.round(r.throughput * 10) / 10,
  latency: r.latency.summary(),
  ttfb: r.ttfb.summary(),
  latencyHistogram: r.latency.toJSON(),
  ttfbHistogram: r.ttfb.toJSON(),
  process: proc
})

const fmt = (us: number): string => (us >= 1000 ? `${(us / 1000).toFixed(2)} ms` : `${us} µs`)

const line = (label: string, s: Summary): string =>
  s.count === 0 ?
    `${label.padEnd(11)} no successful call` :
    `${label.padEnd(11)} p50 ${fmt(s.p50Us)}   p90 ${fmt(s.p90Us)}   p99 ${fmt(s.p99Us)}   p99.9 ${
      fmt(s.p999Us)
    }   max ${fmt(s.maxUs)}   mean ${fmt(s.meanUs)}   (${s.count} calls)`

/**
 * The human summary of a result (what the CLI prints without `--json`).
 *
 * @category output
 */
export const formatResult = (r: LoadResult, stream: boolean, proc: ProcessFigures | null = null): string => {
  const head = r.mode === "open"
    ? `open loop, ${r.rate} calls/s${stream ? ", streams" : ""} -> ${r.url}`
    : `closed loop, ${r.concurrency} in flight${stream ? ", streams" : ""} -> ${r.url}`
  const errors = Object.entries(r.errors)
  if (r.dropped > 0) errors.push(["dropped (max in flight)", r.dropped])
  return [
    head,
    `sent ${r.sent}, ok ${r.ok}, failed ${r.completed - r.ok}, dropped ${r.dropped}; ${
      (r.elapsedMs / 1000).toFixed(2)
    } s, ${(r.bytes / 1048576).toFixed(2)} MB received`,
    `${"throughput".padEnd(11)} ${r.throughput.toFixed(1)} calls/s (successful calls over the elapsed time)`,
    line("latency", r.latency.summary()),
    line("ttfb", r.ttfb.summary()),
    `${"errors".padEnd(11)} ${errors.length === 0 ? "none" : errors.map(([k, v]) => `${k}: ${v}`).join(", ")}`,
    ...(proc === null ? [] : [
      `${"process".padEnd(11)} pid ${proc.pid}: CPU ${
        proc.cpuMsPerCall === null ? "-" : `${Math.round(proc.cpuMsPerCall * 1000)} µs`
      } per call (${proc.cpuMs} ms in all), RSS ${mb(proc.rssStartBytes)} -> ${mb(proc.rssEndBytes)}, peak ${
        mb(proc.peakRssBytes)
      }${proc.peakFrom === "hwm" ? "" : " (of start and end only)"}`
    ])
  ].join("\n")
}

const mb = (bytes: number): string => `${(bytes / 1048576).toFixed(1)} MB`

/**
 * Runs the load a parsed command line describes (warm-up first, if asked),
 * reading the server process's accounting around the measured part when
 * `config.pid` is given.
 *
 * @category run
 */
export const runLoadgen = async (
  config: LoadgenConfig
): Promise<{ readonly result: LoadResult; readonly process: ProcessFigures | null }> => {
  const common = {
    ...config.request,
    allowRemote: config.allowRemote,
    ...(config.timeoutMs !== undefined ? { timeoutMs: config.timeoutMs } : {})
  }
  if (config.warmupMs > 0) {
    await closedLoop({
      ...common,
      concurrency: config.load.mode === "closed" ? config.load.concurrency : 8,
      durationMs: config.warmupMs
    })
  }
  const pid = config.pid
  const before = pid === null ? null : { cpu: cpuTimeMs(pid), rss: memory(pid).rssBytes, hwm: resetPeak(pid) }
  let result: LoadResult
  if (config.load.mode === "open") {
    const { mode: _, ...open } = config.load
    result = await openLoop({ ...common, ...open })
  } else {
    const { mode: _, ...closed } = config.load
    result = await closedLoop({ ...common, ...closed })
  }
  if (pid === null || before === null) return { result, process: null }
  const cpuMs = cpuTimeMs(pid) - before.cpu
  const after = memory(pid)
  return {
    result,
    process: {
      pid,
      cpuMs,
      cpuMsPerCall: result.ok === 0 ? null : cpuMs / result.ok,
      rssStartBytes: before.rss,
      rssEndBytes: after.rssBytes,
      peakRssBytes: before.hwm ? Math.max(after.hwmBytes, after.rssBytes) : Math.max(before.rss, after.rssBytes),
      peakFrom: before.hwm ? "hwm" : "start-end"
    }
  }
}

/** Command line entry; returns the exit code. @category cli */
export const main = async (
  argv: ReadonlyArray<string>,
  out: (text: string) => void,
  err: (text: string) => void
): Promise<number> => {
  let config: LoadgenConfig | "help"
  try {
    config = parseLoadgenArgs(argv)
  } catch (error) {
    if (!(error instanceof UsageError)) throw error
    err(`loadgen: ${error.message}\n\n${LOADGEN_USAGE}`)
    return 2
  }
  if (config === "help") {
    out(LOADGEN_USAGE)
    return 0
  }
  const stream = config.request.stream === true
  const { result: r, process: proc } = await runLoadgen(config)
  out(config.json ? JSON.stringify(resultJson(r, stream, proc), null, 1) : formatResult(r, stream, proc))
  if (r.ok === 0) {
    err("loadgen: no call succeeded")
    return 1
  }
  return 0
}

if (import.meta.main) {
  main(process.argv.slice(2), (text) => console.log(text), (text) => console.error(text)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      console.error(`loadgen: ${error instanceof Error ? error.message : String(error)}`)
      process.exit(1)
    }
  )
}
