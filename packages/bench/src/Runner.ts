/**
 * Runs the scenarios against every target in one run and collects the
 * figures: for each rate the targets are measured one after the other
 * (direct, floor, gateway, Portkey) so they see the same machine state;
 * CPU per call comes from the target process's own `/proc` accounting.
 *
 * @since 0.1.0
 */
import { performance } from "node:perf_hooks"
import { closedLoop, type LoadResult, openLoop, type RequestSpec } from "./LoadGenerator.ts"
import { cpuTimeMs, memory, sampleRss } from "./Proc.ts"
import type { Scenario } from "./Scenarios.ts"
import { added, type Added, growth, type Growth, type HistogramJson, median, type Sample, type Summary } from "./Stats.ts"

/** Who is measured. @category models */
export type TargetName = "direct" | "floor" | "modelgate" | "portkey"

/** A target: where to send a scenario's request, and which process to account. @category models */
export interface Target {
  readonly name: TargetName
  readonly url: string
  /** The proxy process (null for "direct", or an external gateway given without --gateway-pid). */
  readonly pid: number | null
  /** The request for a scenario, or null when this target cannot run it. */
  readonly request: (scenario: Scenario) => RequestSpec | null
}

/** Durations of one run, ms. @category models */
export interface Timing {
  readonly warmupMs: number
  readonly pointMs: number
  readonly throughputMs: number
  readonly soakMs: number
  readonly soakRate: number
  readonly sampleMs: number
}

/** One measured point. @category models */
export interface Point {
  readonly target: TargetName
  readonly mode: "open" | "closed"
  readonly rate: number | null
  readonly concurrency: number | null
  readonly elapsedMs: number
  readonly sent: number
  readonly ok: number
  readonly dropped: number
  readonly errors: Readonly<Record<string, number>>
  readonly throughput: number
  readonly latency: Summary
  readonly ttfb: Summary
  /** Target process CPU ms per successful call; null without a process. */
  readonly cpuMsPerCall: number | null
  readonly rssBytes: number | null
  readonly latencyHistogram: HistogramJson
}

/** A point's latency and TTFB beyond the direct baseline at the same rate. @category models */
export interface AddedPoint {
  readonly target: TargetName
  readonly rate: number
  readonly latency: Added
  readonly ttfb: Added
}

/** Results of one latency scenario. @category models */
export interface LatencyResult {
  readonly scenario: string
  readonly title: string
  readonly description: string
  readonly stream: boolean
  readonly points: ReadonlyArray<Point>
  readonly added: ReadonlyArray<AddedPoint>
}

/** Memory of one proxy holding many streams. @category models */
export interface MemoryPoint {
  readonly target: TargetName
  readonly streams: number
  readonly ok: number
  readonly errors: Readonly<Record<string, number>>
  readonly idleRssBytes: number
  /** Highest sampled RSS while the streams ran. */
  readonly peakRssBytes: number
  /** Median RSS while at least 95 % of the streams were open. */
  readonly steadyRssBytes: number
  readonly ttfb: Summary
  readonly samples: ReadonlyArray<Sample>
}

/** Results of the memory scenario. @category models */
export interface MemoryResult {
  readonly scenario: string
  readonly title: string
  readonly description: string
  readonly points: ReadonlyArray<MemoryPoint>
}

/** Results of the soak. @category models */
export interface SoakResult {
  readonly target: TargetName
  readonly scenario: string
  readonly rate: number
  readonly durationMs: number
  readonly ok: number
  readonly errors: Readonly<Record<string, number>>
  readonly latency: Summary
  readonly rss: Growth
  readonly samples: ReadonlyArray<Sample>
}

/** Progress lines go here (stderr in the CLI). @category models */
export type Log = (line: string) => void

const cpuOf = (pid: number | null): number | null => {
  if (pid === null) return null
  try {
    return cpuTimeMs(pid)
  } catch {
    return null
  }
}

const rssOf = (pid: number | null): number | null => {
  if (pid === null) return null
  try {
    return memory(pid).rssBytes
  } catch {
    return null
  }
}

const toPoint = (target: Target, r: LoadResult, cpuBefore: number | null): Point => {
  const cpuAfter = cpuOf(target.pid)
  return {
    target: target.name,
    mode: r.mode,
    rate: r.rate,
    concurrency: r.concurrency,
    elapsedMs: Math.round(r.elapsedMs),
    sent: r.sent,
    ok: r.ok,
    dropped: r.dropped,
    errors: r.errors,
    throughput: Math.round(r.throughput * 10) / 10,
    latency: r.latency.summary(),
    ttfb: r.ttfb.summary(),
    cpuMsPerCall: cpuBefore === null || cpuAfter === null || r.ok === 0 ? null : (cpuAfter - cpuBefore) / r.ok,
    rssBytes: rssOf(target.pid),
    latencyHistogram: r.latency.toJSON()
  }
}

const describeErrors = (r: { readonly errors: Readonly<Record<string, number>>; readonly dropped?: number }): string => {
  const parts = Object.entries(r.errors).map(([k, v]) => `${k}=${v}`)
  if (r.dropped !== undefined && r.dropped > 0) parts.push(`dropped=${r.dropped}`)
  return parts.length === 0 ? "" : ` errors: ${parts.join(", ")}`
}

const us = (n: number): string => (n >= 10_000 ? `${(n / 1000).toFixed(1)}ms` : `${n}us`)

/**
 * Measures one latency scenario: warm-up, then each open-loop rate on every
 * target in turn, then closed-loop throughput on every target.
 *
 * @category run
 */
export const runLatency = async (scenario: Scenario, targets: ReadonlyArray<Target>, timing: Timing, log: Log): Promise<LatencyResult> => {
  const runnable = targets.flatMap((t) => {
    const request = t.request(scenario)
    return request === null ? [] : [{ target: t, request }]
  })
  const points: Array<Point> = []
  for (const { target, request } of runnable) {
    const warm = await closedLoop({ ...request, concurrency: 8, durationMs: timing.warmupMs })
    if (warm.ok === 0) log(`  ! ${target.name}: no successful call during warm-up${describeErrors(warm)}`)
  }
  for (const rate of scenario.rates) {
    for (const { target, request } of runnable) {
      const cpu = cpuOf(target.pid)
      const r = await openLoop({ ...request, rate, durationMs: timing.pointMs, timeoutMs: 30_000 })
      const p = toPoint(target, r, cpu)
      points.push(p)
      log(
        `  ${scenario.name} ${target.name.padEnd(9)} open ${String(rate).padStart(5)}/s: p50 ${us(p.latency.p50Us)} p99 ${us(p.latency.p99Us)} max ${
          us(p.latency.maxUs)
        } ttfb50 ${us(p.ttfb.p50Us)}${p.cpuMsPerCall === null ? "" : ` cpu ${p.cpuMsPerCall.toFixed(3)}ms/call`}${describeErrors(r)}`
      )
    }
  }
  for (const { target, request } of runnable) {
    const cpu = cpuOf(target.pid)
    const r = await closedLoop({ ...request, concurrency: scenario.concurrency, durationMs: timing.throughputMs, timeoutMs: 30_000 })
    const p = toPoint(target, r, cpu)
    points.push(p)
    log(
      `  ${scenario.name} ${target.name.padEnd(9)} closed c=${scenario.concurrency}: ${p.throughput.toFixed(0)} calls/s p50 ${us(p.latency.p50Us)}${
        p.cpuMsPerCall === null ? "" : ` cpu ${p.cpuMsPerCall.toFixed(3)}ms/call`
      }${describeErrors(r)}`
    )
  }
  const addedPoints: Array<AddedPoint> = []
  for (const p of points) {
    if (p.mode !== "open" || p.target === "direct" || p.rate === null) continue
    const base = points.find((b) => b.mode === "open" && b.target === "direct" && b.rate === p.rate)
    if (base === undefined) continue
    addedPoints.push({ target: p.target, rate: p.rate, latency: added(p.latency, base.latency), ttfb: added(p.ttfb, base.ttfb) })
  }
  return { scenario: scenario.name, title: scenario.title, description: scenario.description, stream: scenario.stream, points, added: addedPoints }
}

/**
 * Opens `scenario.concurrency` long-lived streams through each proxy target
 * and samples the proxy's RSS meanwhile. "direct" has no proxy process and
 * is skipped.
 *
 * @category run
 */
export const runMemory = async (scenario: Scenario, targets: ReadonlyArray<Target>, timing: Timing, log: Log): Promise<MemoryResult> => {
  const points: Array<MemoryPoint> = []
  for (const target of targets) {
    const request = target.request(scenario)
    if (request === null || target.pid === null) continue
    const pid = target.pid
    const idle = memory(pid).rssBytes
    const live = { inFlight: 0, sent: 0, completed: 0 }
    const samples: Array<Sample> = []
    const steady: Array<number> = []
    const start = performance.now()
    const timer = setInterval(() => {
      try {
        const rss = memory(pid).rssBytes
        samples.push({ tMs: performance.now() - start, value: rss })
        if (live.inFlight >= scenario.concurrency * 0.95) steady.push(rss)
      } catch {
        clearInterval(timer)
      }
    }, timing.sampleMs)
    const r = await closedLoop({
      ...request,
      concurrency: scenario.concurrency,
      requests: scenario.concurrency,
      rampMs: 1000,
      timeoutMs: 60_000,
      live
    })
    clearInterval(timer)
    let peak = 0
    for (const s of samples) if (s.value > peak) peak = s.value
    const point: MemoryPoint = {
      target: target.name,
      streams: scenario.concurrency,
      ok: r.ok,
      errors: r.errors,
      idleRssBytes: idle,
      peakRssBytes: peak,
      steadyRssBytes: median(steady),
      ttfb: r.ttfb.summary(),
      samples
    }
    points.push(point)
    log(
      `  ${scenario.name} ${target.name.padEnd(9)} ${r.ok}/${scenario.concurrency} streams: idle ${mb(idle)} peak ${mb(peak)} steady ${
        mb(point.steadyRssBytes)
      }${describeErrors(r)}`
    )
  }
  return { scenario: scenario.name, title: scenario.title, description: scenario.description, points }
}

const mb = (bytes: number): string => `${(bytes / 1048576).toFixed(1)}MB`

/**
 * Open-loop load at `timing.soakRate` for `timing.soakMs` while sampling the
 * target's RSS; reports the growth between the first and last tenth.
 *
 * @category run
 */
export const runSoak = async (scenario: Scenario, target: Target, timing: Timing, log: Log): Promise<SoakResult | null> => {
  const request = target.request(scenario)
  if (request === null || target.pid === null) return null
  const sampler = sampleRss(target.pid, timing.sampleMs)
  const r = await openLoop({ ...request, rate: timing.soakRate, durationMs: timing.soakMs, timeoutMs: 30_000 })
  const samples = sampler.stop()
  const rss = growth(samples)
  log(
    `  soak ${target.name} ${timing.soakRate}/s for ${timing.soakMs / 1000}s: rss ${mb(rss.start)} -> ${mb(rss.end)} (${rss.percent.toFixed(1)}%), p99 ${
      us(r.latency.percentile(99))
    }${describeErrors(r)}`
  )
  return {
    target: target.name,
    scenario: scenario.name,
    rate: timing.soakRate,
    durationMs: timing.soakMs,
    ok: r.ok,
    errors: r.errors,
    latency: r.latency.summary(),
    rss,
    samples
  }
}
