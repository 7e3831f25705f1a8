/**
 * The load generator: sends HTTP requests to one URL with undici keep-alive
 * pools and records latency and time to first byte in `Histogram`s.
 *
 * - `openLoop` sends at a fixed rate whatever the target does, and measures
 *   every latency from the request's *intended* send time (start + i / rate),
 *   so a stalled target shows up as latency instead of silently slowing the
 *   sender down (no coordinated omission).
 * - `closedLoop` keeps a fixed number of requests in flight (each worker sends
 *   its next request when the previous one ends); it measures throughput and
 *   holds long-lived streams open.
 *
 * Only loopback URLs are accepted (see `Loopback.ts`) unless a caller opts in
 * with `allowRemote` (the standalone CLI's `--allow-remote`). The per-request path is
 * kept small: one options object, two listeners, counters and a histogram
 * increment; bodies are counted, never buffered.
 *
 * @since 0.1.0
 */
import { performance } from "node:perf_hooks"
import { Pool } from "undici"
import { checkTargetUrl } from "./Loopback.ts"
import { Histogram } from "./Stats.ts"

/** One request, sent again and again. @category models */
export interface RequestSpec {
  /** Full URL, path and query included: loopback only unless `allowRemote`. */
  readonly url: string
  /** HTTP method; default "POST" when a body is given, otherwise "GET". */
  readonly method?: string
  /** Extra request headers (auth, custom headers of the product under test). */
  readonly headers?: Readonly<Record<string, string>>
  /** Request body, sent as is (JSON text for the chat APIs). */
  readonly body?: string
  /** The response is a stream: only changes the labelling of results; TTFB is always recorded. */
  readonly stream?: boolean
}

/** Options shared by both loops. @category models */
export interface CommonOptions extends RequestSpec {
  /** Keep-alive connections in the pool (open loop default 512; closed loop: `concurrency`). */
  readonly connections?: number
  /** Timeout for the response headers and between body chunks, ms (default 60,000). */
  readonly timeoutMs?: number
  /** Live counters the caller may read while the run goes on (e.g. to sample memory when all streams are open). */
  readonly live?: Live
  /** Accept any http(s) URL, not only loopback (default false; see `Loopback.ts`). */
  readonly allowRemote?: boolean
}

/** Counters updated while a run goes on. @category models */
export interface Live {
  inFlight: number
  sent: number
  completed: number
}

/** Options of `openLoop`. @category models */
export interface OpenLoopOptions extends CommonOptions {
  /** Requests per second (> 0). */
  readonly rate: number
  /** How long to send, ms (> 0); `rate x durationMs / 1000` requests are sent. */
  readonly durationMs: number
  /** Requests beyond this many in flight are not sent and count as `dropped` (default 20,000). */
  readonly maxInFlight?: number
  /** How long to wait for in-flight requests after the last send, ms (default `timeoutMs`). */
  readonly drainMs?: number
}

/** Options of `closedLoop`: give `requests`, `durationMs`, or both (whichever ends first). @category models */
export interface ClosedLoopOptions extends CommonOptions {
  /** Requests in flight at all times (positive integer). */
  readonly concurrency: number
  /** Total number of requests to send. */
  readonly requests?: number
  /** Stop starting new requests after this many ms. */
  readonly durationMs?: number
  /** Spread the workers' first requests over this many ms (default 0: all at once). */
  readonly rampMs?: number
}

/** What one run measured. Latency and TTFB are recorded for successful (2xx) calls only. @category models */
export interface LoadResult {
  readonly mode: "open" | "closed"
  readonly url: string
  /** Target rate of an open loop; null for a closed loop. */
  readonly rate: number | null
  /** Concurrency of a closed loop; null for an open loop. */
  readonly concurrency: number | null
  /** From the first intended send to the last completion, ms. */
  readonly elapsedMs: number
  readonly sent: number
  readonly completed: number
  /** 2xx responses read to the end. */
  readonly ok: number
  /** Open loop only: requests not sent because `maxInFlight` was reached. */
  readonly dropped: number
  /** Failures by kind: `http_<status>`, an undici/socket error code, or `aborted` (still in flight at the end). */
  readonly errors: Readonly<Record<string, number>>
  /** Response body bytes received (all responses). */
  readonly bytes: number
  /** Successful calls per second over `elapsedMs`. */
  readonly throughput: number
  /** Time from the intended send to the last body byte. */
  readonly latency: Histogram
  /** Time from the intended send to the first body byte. */
  readonly ttfb: Histogram
}

interface Target {
  readonly pool: Pool
  readonly path: string
  readonly method: string
  readonly headers: Record<string, string>
  readonly body: string | undefined
  readonly timeoutMs: number
}

interface Tally {
  completed: number
  ok: number
  bytes: number
  lastEnd: number
  /** Set while `drain` destroys the pool: failures from then on are "aborted". */
  aborting: boolean
  readonly errors: Record<string, number>
  readonly latency: Histogram
  readonly ttfb: Histogram
  readonly live: Live
}

const positive = (fn: string, name: string, value: number): void => {
  if (!(typeof value === "number" && Number.isFinite(value) && value > 0)) {
    throw new RangeError(`${fn}: ${name} must be a positive number, got ${String(value)}`)
  }
}

const positiveInt = (fn: string, name: string, value: number): void => {
  if (!(Number.isInteger(value) && value > 0)) {
    throw new RangeError(`${fn}: ${name} must be a positive integer, got ${String(value)}`)
  }
}

const makeTarget = (fn: string, options: CommonOptions, connections: number): Target => {
  const url = checkTargetUrl(options.url, `${fn}: url`, { allowRemote: options.allowRemote === true })
  const timeoutMs = options.timeoutMs ?? 60_000
  positive(fn, "timeoutMs", timeoutMs)
  positiveInt(fn, "connections", connections)
  const headers: Record<string, string> = {}
  if (options.body !== undefined) headers["content-type"] = "application/json"
  if (options.headers !== undefined) {
    for (const [name, value] of Object.entries(options.headers)) headers[name.toLowerCase()] = value
  }
  return {
    pool: new Pool(url.origin, {
      connections,
      pipelining: 1,
      keepAliveTimeout: 60_000,
      keepAliveMaxTimeout: 600_000,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      connect: { timeout: timeoutMs }
    }),
    path: url.pathname + url.search,
    method: options.method ?? (options.body !== undefined ? "POST" : "GET"),
    headers,
    body: options.body,
    timeoutMs
  }
}

const newTally = (live: Live | undefined): Tally => ({
  completed: 0,
  ok: 0,
  bytes: 0,
  lastEnd: 0,
  aborting: false,
  errors: {},
  latency: new Histogram(),
  ttfb: new Histogram(),
  live: live ?? { inFlight: 0, sent: 0, completed: 0 }
})

const countError = (tally: Tally, kind: string): void => {
  tally.errors[kind] = (tally.errors[kind] ?? 0) + 1
}

const errorKind = (error: unknown): string => {
  if (typeof error === "object" && error !== null) {
    const code = (error as { code?: unknown }).code
    if (typeof code === "string" && code !== "") return code
    const name = (error as { name?: unknown }).name
    if (typeof name === "string" && name !== "") return name
  }
  return "error"
}

/**
 * Sends one request whose clock starts at `intended` (a `performance.now()`
 * time) and resolves when it has ended either way; never rejects.
 */
const one = (target: Target, tally: Tally, intended: number): Promise<void> =>
  new Promise<void>((resolve) => {
    tally.live.inFlight++
    tally.live.sent++
    const settle = (kind: string | undefined): void => {
      const end = performance.now()
      tally.live.inFlight--
      tally.live.completed++
      tally.completed++
      if (end > tally.lastEnd) tally.lastEnd = end
      if (kind === undefined) {
        tally.ok++
        tally.latency.record((end - intended) * 1000)
      } else {
        countError(tally, tally.aborting ? "aborted" : kind)
      }
      resolve()
    }
    target.pool
      .request({
        path: target.path,
        method: target.method as "POST",
        headers: target.headers,
        body: target.body ?? null
      })
      .then(
        (res) => {
          const status = res.statusCode
          const good = status >= 200 && status < 300
          let first = true
          let done = false
          res.body.on("data", (chunk: Buffer) => {
            if (first) {
              first = false
              if (good) tally.ttfb.record((performance.now() - intended) * 1000)
            }
            tally.bytes += chunk.length
          })
          res.body.once("end", () => {
            if (done) return
            done = true
            if (first && good) tally.ttfb.record((performance.now() - intended) * 1000)
            settle(good ? undefined : `http_${status}`)
          })
          res.body.once("error", (error: unknown) => {
            if (done) return
            done = true
            settle(errorKind(error))
          })
        },
        (error: unknown) => settle(errorKind(error))
      )
  })

const result = (
  mode: "open" | "closed",
  url: string,
  rate: number | null,
  concurrency: number | null,
  start: number,
  tally: Tally,
  dropped: number,
  sent: number
): LoadResult => {
  const elapsedMs = Math.max(0, (tally.lastEnd === 0 ? performance.now() : tally.lastEnd) - start)
  return {
    mode,
    url,
    rate,
    concurrency,
    elapsedMs,
    sent,
    completed: tally.completed,
    ok: tally.ok,
    dropped,
    errors: tally.errors,
    bytes: tally.bytes,
    throughput: elapsedMs > 0 ? (tally.ok / elapsedMs) * 1000 : 0,
    latency: tally.latency,
    ttfb: tally.ttfb
  }
}

/** Waits for `pending` up to `ms`; then destroys the pool so what is still in flight fails as "aborted". */
const drain = async (target: Target, pending: Set<Promise<void>>, tally: Tally, ms: number): Promise<void> => {
  if (pending.size > 0) {
    let timer: NodeJS.Timeout | undefined
    const timedOut = await Promise.race([
      Promise.all(pending).then(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), ms)
      })
    ])
    clearTimeout(timer)
    if (timedOut) {
      tally.aborting = true
      await target.pool.destroy().catch(() => undefined)
      await Promise.all(pending)
      return
    }
  }
  await target.pool.close().catch(() => undefined)
}

/**
 * Open loop: `rate` requests per second for `durationMs`, each latency taken
 * from its intended send time. Resolves when every request has ended (or was
 * aborted after `drainMs`).
 *
 * @category load
 */
export const openLoop = async (options: OpenLoopOptions): Promise<LoadResult> => {
  positive("openLoop", "rate", options.rate)
  positive("openLoop", "durationMs", options.durationMs)
  const maxInFlight = options.maxInFlight ?? 20_000
  positiveInt("openLoop", "maxInFlight", maxInFlight)
  const target = makeTarget("openLoop", options, options.connections ?? 512)
  const drainMs = options.drainMs ?? target.timeoutMs
  const tally = newTally(options.live)
  const total = Math.max(1, Math.floor((options.rate * options.durationMs) / 1000))
  const interval = 1000 / options.rate
  const pending = new Set<Promise<void>>()
  let dropped = 0
  let issued = 0
  const start = performance.now() + 1
  await new Promise<void>((resolve) => {
    const tick = (): void => {
      const now = performance.now()
      while (issued < total) {
        const intended = start + issued * interval
        if (intended > now) break
        issued++
        if (tally.live.inFlight >= maxInFlight) {
          dropped++
          continue
        }
        const p = one(target, tally, intended)
        pending.add(p)
        void p.then(() => pending.delete(p))
      }
      if (issued < total) setTimeout(tick, Math.max(0, start + issued * interval - performance.now()))
      else resolve()
    }
    setTimeout(tick, 1)
  })
  await drain(target, pending, tally, drainMs)
  return result("open", options.url, options.rate, null, start, tally, dropped, issued - dropped)
}

/**
 * Closed loop: `concurrency` workers, each sending its next request when the
 * previous one ends, until `requests` were sent or `durationMs` passed.
 *
 * @category load
 */
export const closedLoop = async (options: ClosedLoopOptions): Promise<LoadResult> => {
  positiveInt("closedLoop", "concurrency", options.concurrency)
  if (options.requests === undefined && options.durationMs === undefined) {
    throw new RangeError("closedLoop: give requests, durationMs, or both")
  }
  if (options.requests !== undefined) positiveInt("closedLoop", "requests", options.requests)
  if (options.durationMs !== undefined) positive("closedLoop", "durationMs", options.durationMs)
  const rampMs = options.rampMs ?? 0
  if (!(rampMs >= 0)) throw new RangeError(`closedLoop: rampMs must be >= 0, got ${String(rampMs)}`)
  const target = makeTarget("closedLoop", options, options.connections ?? options.concurrency)
  const tally = newTally(options.live)
  const start = performance.now()
  const deadline = options.durationMs === undefined ? Number.POSITIVE_INFINITY : start + options.durationMs
  const limit = options.requests ?? Number.POSITIVE_INFINITY
  let started = 0
  const worker = async (index: number): Promise<void> => {
    if (rampMs > 0) await new Promise((resolve) => setTimeout(resolve, (index * rampMs) / options.concurrency))
    while (started < limit && performance.now() < deadline) {
      started++
      await one(target, tally, performance.now())
    }
  }
  const workers: Array<Promise<void>> = []
  for (let i = 0; i < options.concurrency; i++) workers.push(worker(i))
  await Promise.all(workers)
  await target.pool.close().catch(() => undefined)
  return result("closed", options.url, null, options.concurrency, start, tally, 0, started)
}
