/**
 * Runs the scenarios against every target in one run and collects the
 * figures: for each rate the targets are measured one after the other
 * (direct, floor, gateway, Portkey) so they see the same machine state;
 * CPU per call comes from the target process's own `/proc` accounting, and
 * every proxy's RSS is sampled during every scenario (its exact peak from
 * VmHWM, reset at the scenario's start). Every call sent to each target is
 * counted, so billing can be checked against the gateway's usage records.
 *
 * @since 0.1.0
 */
import { performance } from "node:perf_hooks"
import { closedLoop, type LoadResult, openLoop, type RequestSpec } from "./LoadGenerator.ts"
import { alive, cpuTimeMs, memory, resetPeak, sampleRss } from "./Proc.ts"
import type { Scenario } from "./Scenarios.ts"
import {
  type Added,
  added,
  addedBand,
  type Band,
  type Growth,
  growth,
  type HistogramJson,
  median,
  type Sample,
  type Summary
} from "./Stats.ts"

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
  /** The bytes the proxy's heap allocated so far (from its GC trace), when it was started to report them. */
  readonly allocatedBytes?: (() => number | null) | undefined
}

/** Durations of one run, ms. @category models */
export interface Timing {
  /** Closed-loop warm-up (8 in flight) per target and scenario, not counted. */
  readonly warmupMs: number
  /** Sending time of each open-loop rate. */
  readonly pointMs: number
  /** Closed-loop throughput run per target and scenario. */
  readonly throughputMs: number
  /** Open loop: how long to wait for calls still in flight after the last send; the rest count as "aborted". */
  readonly drainMs: number
  readonly soakMs: number
  readonly soakRate: number
  /** RSS sampling interval of the soak. */
  readonly sampleMs: number
  /** RSS sampling interval during the other scenarios. */
  readonly rssSampleMs: number
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
  /** KB the target's JavaScript heap allocated per successful call (from its GC trace); null when not traced. */
  readonly allocKbPerCall: number | null
  readonly rssBytes: number | null
  readonly latencyHistogram: HistogramJson
}

/** A point's latency and TTFB beyond the direct baseline at the same rate. @category models */
export interface AddedPoint {
  readonly target: TargetName
  readonly rate: number
  readonly latency: Added
  readonly ttfb: Added
  /** 95 % sampling interval of the added p99 latency (see `Stats.addedBand`). */
  readonly latencyP99Band: Band
  /** 95 % sampling interval of the added p50 TTFB. */
  readonly ttfbP50Band: Band
}

/** A proxy's memory during one scenario. @category models */
export interface ScenarioRss {
  readonly target: TargetName
  /** The highest RSS during the scenario: VmHWM since a reset at its start when `peakFrom` is "hwm", else the highest sample. */
  readonly peakBytes: number
  readonly peakFrom: "hwm" | "samples"
  /** Median of the samples taken while this target was under load. */
  readonly steadyBytes: number
  /** RSS when the scenario started. */
  readonly startBytes: number
  readonly samples: number
}

/** Results of one latency scenario. @category models */
export interface LatencyResult {
  readonly scenario: string
  readonly title: string
  readonly description: string
  readonly stream: boolean
  readonly points: ReadonlyArray<Point>
  readonly added: ReadonlyArray<AddedPoint>
  /** Each proxy's RSS during this scenario. */
  readonly rss: ReadonlyArray<ScenarioRss>
}

/** Memory of one proxy holding many streams. @category models */
export interface MemoryPoint {
  readonly target: TargetName
  readonly streams: number
  readonly ok: number
  readonly errors: Readonly<Record<string, number>>
  readonly idleRssBytes: number
  /** Highest RSS while the streams ran (VmHWM since a reset before them when `peakFrom` is "hwm"). */
  readonly peakRssBytes: number
  readonly peakFrom: "hwm" | "samples"
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

/** Calls sent to one target over a whole run, warm-ups included. @category models */
export interface CallCount {
  readonly sent: number
  /** 2xx answers read to the end. */
  readonly ok: number
  /** Answered with a non-2xx status. */
  readonly refused: number
  /** Ended without a whole answer (aborted while in flight at the end of a point, timeouts, resets): the target may or may not have completed them. */
  readonly unsure: number
}

/**
 * Counts every call sent to each target (warm-ups, points, streams, soak),
 * so the gateway's usage records can be checked against them afterwards.
 *
 * @category run
 */
export class CallLog {
  private readonly counts = new Map<TargetName, { sent: number; ok: number; refused: number; unsure: number }>()

  /** Adds one load run's calls to `target`'s count. */
  add(target: TargetName, r: LoadResult): void {
    const c = this.counts.get(target) ?? { sent: 0, ok: 0, refused: 0, unsure: 0 }
    c.sent += r.sent
    c.ok += r.ok
    for (const [kind, n] of Object.entries(r.errors)) {
      if (kind.startsWith("http_")) c.refused += n
      else c.unsure += n
    }
    this.counts.set(target, c)
  }

  /** The count so far (zeros for a target never measured). */
  get(target: TargetName): CallCount {
    const c = this.counts.get(target)
    return c === undefined ? { sent: 0, ok: 0, refused: 0, unsure: 0 } : { ...c }
  }
}

/** What the scenario runners share. @category models */
export interface RunContext {
  readonly timing: Timing
  readonly log: Log
  readonly calls: CallLog
  /** Things the report should say (a process that died, a target skipped). */
  readonly notes: Array<string>
  /** Called after each proxy's streams of the memory scenario ended (e.g. to take a heap snapshot). */
  readonly afterMemoryPoint?: (target: Target) => Promise<void>
}

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

const hwmOf = (pid: number): number | null => {
  try {
    return memory(pid).hwmBytes
  } catch {
    return null
  }
}

/**
 * A process that served this many calls without one clock tick (10 ms) of
 * CPU is not the one serving them (e.g. a shell or npm wrapper's pid was
 * given): below 10 µs a call no HTTP proxy exists.
 */
const IMPLAUSIBLY_IDLE_CALLS = 1000

/**
 * A measurement of the target process taken at the start of a point, read
 * again at its end.
 */
export interface Before {
  readonly cpuMs: number | null
  readonly allocatedBytes: number | null
}

/** The target process's CPU time and heap allocation now. @category measuring */
export const before = (target: Target): Before => ({
  cpuMs: cpuOf(target.pid),
  allocatedBytes: target.allocatedBytes?.() ?? null
})

const toPoint = (target: Target, r: LoadResult, start: Before, ctx: RunContext): Point => {
  const cpuBefore = start.cpuMs
  const allocatedAfter = target.allocatedBytes?.() ?? null
  let cpuAfter = cpuOf(target.pid)
  if (cpuBefore !== null && cpuAfter === cpuBefore && r.ok >= IMPLAUSIBLY_IDLE_CALLS) {
    const said = `${target.name}'s process (pid ${target.pid}) used no CPU time`
    const note =
      `${said} while it served ${r.ok} calls: it is not the process serving them (a wrapper's pid?), so its CPU per call is left out, and its RSS figures are that process's, not the proxy's.`
    if (!ctx.notes.some((n) => n.startsWith(said))) {
      ctx.notes.push(note)
      ctx.log(`  ! ${note}`)
    }
    cpuAfter = null
  }
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
    allocKbPerCall: start.allocatedBytes === null || allocatedAfter === null || r.ok === 0
      ? null
      : (allocatedAfter - start.allocatedBytes) / 1024 / r.ok,
    rssBytes: rssOf(target.pid),
    latencyHistogram: r.latency.toJSON()
  }
}

const allocText = (p: Point): string => p.allocKbPerCall === null ? "" : ` alloc ${p.allocKbPerCall.toFixed(1)}KB/call`

const describeErrors = (
  r: { readonly errors: Readonly<Record<string, number>>; readonly dropped?: number }
): string => {
  const parts = Object.entries(r.errors).map(([k, v]) => `${k}=${v}`)
  if (r.dropped !== undefined && r.dropped > 0) parts.push(`dropped=${r.dropped}`)
  return parts.length === 0 ? "" : ` errors: ${parts.join(", ")}`
}

const us = (n: number): string => (n >= 10_000 ? `${(n / 1000).toFixed(1)}ms` : `${n}us`)

/**
 * Samples the RSS of several processes during one scenario and tells the
 * samples taken while a process was under load (`busy`) from the others.
 * Each process's VmHWM is reset at the start, so the peak is exact where
 * the kernel allows it.
 *
 * @category run
 */
export class RssTracker {
  /** The target under load now (its samples count towards "steady"). */
  busy: TargetName | null = null
  private readonly tracks: Array<
    { target: TargetName; pid: number; start: number; hwm: boolean; all: Array<number>; loaded: Array<number> }
  >
  private readonly timer: NodeJS.Timeout

  constructor(targets: ReadonlyArray<{ readonly name: TargetName; readonly pid: number }>, intervalMs: number) {
    this.tracks = targets.map((t) => ({
      target: t.name,
      pid: t.pid,
      start: rssOf(t.pid) ?? 0,
      hwm: resetPeak(t.pid),
      all: [],
      loaded: []
    }))
    this.timer = setInterval(() => this.sample(), intervalMs)
  }

  private sample(): void {
    for (const t of this.tracks) {
      const rss = rssOf(t.pid)
      if (rss === null) continue
      t.all.push(rss)
      if (this.busy === t.target) t.loaded.push(rss)
    }
  }

  /** Stops sampling; one figure per process that was still there. */
  stop(): Array<ScenarioRss> {
    clearInterval(this.timer)
    this.sample()
    return this.tracks.flatMap((t) => {
      if (t.all.length === 0) return []
      const sampled = Math.max(...t.all)
      const hwm = t.hwm ? hwmOf(t.pid) : null
      const rss: ScenarioRss = {
        target: t.target,
        peakBytes: hwm === null ? sampled : Math.max(hwm, sampled),
        peakFrom: hwm === null ? "samples" : "hwm",
        steadyBytes: median(t.loaded.length > 0 ? t.loaded : t.all),
        startBytes: t.start,
        samples: t.all.length
      }
      return [rss]
    })
  }
}

/** True when the target's process is gone (it is then skipped, and a note says so). */
const gone = (target: Target, ctx: RunContext, scenario: string): boolean => {
  if (target.pid === null || alive(target.pid)) return false
  const note = `${target.name} (pid ${target.pid}) exited during the run; it has no figures from \`${scenario}\` on.`
  if (!ctx.notes.includes(note)) {
    ctx.notes.push(note)
    ctx.log(`  ! ${note}`)
  }
  return true
}

/**
 * Measures one latency scenario: warm-up, then each open-loop rate on every
 * target in turn, then closed-loop throughput on every target; the proxies'
 * RSS is sampled throughout.
 *
 * @category run
 */
export const runLatency = async (
  scenario: Scenario,
  targets: ReadonlyArray<Target>,
  ctx: RunContext
): Promise<LatencyResult> => {
  const { timing, log } = ctx
  const runnable = targets.flatMap((t) => {
    const request = t.request(scenario)
    return request === null ? [] : [{ target: t, request }]
  })
  const proxies = runnable.flatMap((
    { target }
  ) => (target.pid === null || !alive(target.pid) ? [] : [{ name: target.name, pid: target.pid }]))
  const tracker = new RssTracker(proxies, timing.rssSampleMs)
  const points: Array<Point> = []
  const histograms = new Map<Point, LoadResult>()
  try {
    for (const { target, request } of runnable) {
      if (gone(target, ctx, scenario.name)) continue
      tracker.busy = target.name
      const warm = await closedLoop({ ...request, concurrency: 8, durationMs: timing.warmupMs })
      ctx.calls.add(target.name, warm)
      if (warm.ok === 0) log(`  ! ${target.name}: no successful call during warm-up${describeErrors(warm)}`)
    }
    for (const rate of scenario.rates) {
      for (const { target, request } of runnable) {
        if (gone(target, ctx, scenario.name)) continue
        tracker.busy = target.name
        const start = before(target)
        const r = await openLoop({
          ...request,
          rate,
          durationMs: timing.pointMs,
          timeoutMs: 30_000,
          drainMs: timing.drainMs
        })
        ctx.calls.add(target.name, r)
        const p = toPoint(target, r, start, ctx)
        points.push(p)
        histograms.set(p, r)
        log(
          `  ${scenario.name} ${target.name.padEnd(9)} open ${String(rate).padStart(5)}/s: p50 ${
            us(p.latency.p50Us)
          } p99 ${us(p.latency.p99Us)} max ${us(p.latency.maxUs)} ttfb50 ${us(p.ttfb.p50Us)}${
            p.cpuMsPerCall === null ? "" : ` cpu ${p.cpuMsPerCall.toFixed(3)}ms/call`
          }${allocText(p)}${describeErrors(r)}`
        )
      }
    }
    for (const { target, request } of runnable) {
      if (gone(target, ctx, scenario.name)) continue
      tracker.busy = target.name
      const start = before(target)
      const r = await closedLoop({
        ...request,
        concurrency: scenario.concurrency,
        durationMs: timing.throughputMs,
        timeoutMs: 30_000
      })
      ctx.calls.add(target.name, r)
      const p = toPoint(target, r, start, ctx)
      points.push(p)
      log(
        `  ${scenario.name} ${target.name.padEnd(9)} closed c=${scenario.concurrency}: ${
          p.throughput.toFixed(0)
        } calls/s p50 ${us(p.latency.p50Us)}${
          p.cpuMsPerCall === null ? "" : ` cpu ${p.cpuMsPerCall.toFixed(3)}ms/call`
        }${allocText(p)}${describeErrors(r)}`
      )
    }
  } finally {
    tracker.busy = null
  }
  const rss = tracker.stop()
  const addedPoints: Array<AddedPoint> = []
  for (const p of points) {
    if (p.mode !== "open" || p.target === "direct" || p.rate === null) continue
    const base = points.find((b) => b.mode === "open" && b.target === "direct" && b.rate === p.rate)
    const pr = histograms.get(p)
    const br = base === undefined ? undefined : histograms.get(base)
    // No successful call on either side: nothing to subtract (an empty histogram's 0 would read as a gain).
    if (base === undefined || pr === undefined || br === undefined || pr.ok === 0 || br.ok === 0) continue
    addedPoints.push({
      target: p.target,
      rate: p.rate,
      latency: added(p.latency, base.latency),
      ttfb: added(p.ttfb, base.ttfb),
      latencyP99Band: addedBand(pr.latency, br.latency, 99),
      ttfbP50Band: addedBand(pr.ttfb, br.ttfb, 50)
    })
  }
  for (const r of rss) {
    log(
      `  ${scenario.name} ${r.target.padEnd(9)} rss: start ${mb(r.startBytes)} peak ${mb(r.peakBytes)} steady ${
        mb(r.steadyBytes)
      }`
    )
  }
  return {
    scenario: scenario.name,
    title: scenario.title,
    description: scenario.description,
    stream: scenario.stream,
    points,
    added: addedPoints,
    rss
  }
}

/**
 * Opens `scenario.concurrency` long-lived streams through each proxy target
 * and samples the proxy's RSS meanwhile. "direct" has no proxy process and
 * is skipped.
 *
 * @category run
 */
export const runMemory = async (
  scenario: Scenario,
  targets: ReadonlyArray<Target>,
  ctx: RunContext
): Promise<MemoryResult> => {
  const { timing, log } = ctx
  const points: Array<MemoryPoint> = []
  for (const target of targets) {
    const request = target.request(scenario)
    if (request === null || target.pid === null || gone(target, ctx, scenario.name)) continue
    const pid = target.pid
    const idle = rssOf(pid)
    if (idle === null) continue
    const hwm = resetPeak(pid)
    const live = { inFlight: 0, sent: 0, completed: 0 }
    const samples: Array<Sample> = []
    const steady: Array<number> = []
    const start = performance.now()
    const timer = setInterval(() => {
      const rss = rssOf(pid)
      if (rss === null) return void clearInterval(timer)
      samples.push({ tMs: performance.now() - start, value: rss })
      if (live.inFlight >= scenario.concurrency * 0.95) steady.push(rss)
    }, timing.rssSampleMs)
    const r = await closedLoop({
      ...request,
      concurrency: scenario.concurrency,
      requests: scenario.concurrency,
      rampMs: 1000,
      timeoutMs: 60_000,
      live
    })
    clearInterval(timer)
    ctx.calls.add(target.name, r)
    let peak = 0
    for (const s of samples) if (s.value > peak) peak = s.value
    const high = hwm ? hwmOf(pid) : null
    const point: MemoryPoint = {
      target: target.name,
      streams: scenario.concurrency,
      ok: r.ok,
      errors: r.errors,
      idleRssBytes: idle,
      peakRssBytes: high === null ? peak : Math.max(high, peak),
      peakFrom: high === null ? "samples" : "hwm",
      steadyRssBytes: median(steady),
      ttfb: r.ttfb.summary(),
      samples
    }
    points.push(point)
    log(
      `  ${scenario.name} ${target.name.padEnd(9)} ${r.ok}/${scenario.concurrency} streams: idle ${mb(idle)} peak ${
        mb(point.peakRssBytes)
      } steady ${mb(point.steadyRssBytes)}${describeErrors(r)}`
    )
    if (ctx.afterMemoryPoint !== undefined) await ctx.afterMemoryPoint(target)
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
export const runSoak = async (scenario: Scenario, target: Target, ctx: RunContext): Promise<SoakResult | null> => {
  const { timing, log } = ctx
  const request = target.request(scenario)
  if (request === null || target.pid === null || gone(target, ctx, "soak")) return null
  const sampler = sampleRss(target.pid, timing.sampleMs)
  const r = await openLoop({
    ...request,
    rate: timing.soakRate,
    durationMs: timing.soakMs,
    timeoutMs: 30_000,
    drainMs: timing.drainMs
  })
  const samples = sampler.stop()
  ctx.calls.add(target.name, r)
  const rss = growth(samples)
  log(
    `  soak ${target.name} ${timing.soakRate}/s for ${timing.soakMs / 1000}s: rss ${mb(rss.start)} -> ${mb(rss.end)} (${
      rss.percent.toFixed(1)
    }%), p99 ${us(r.latency.percentile(99))}${describeErrors(r)}`
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
