/**
 * The circuit breaker of one upstream key, as a small state machine driven by
 * the outcome of each call and the current time (passed in, so it is a pure
 * object that tests drive with any clock; `Health.ts` feeds it from Effect's
 * `Clock`).
 *
 * - **closed**: calls go through. Every outcome is counted in a sliding window
 *   of `windowMs` (ten buckets). It opens after `consecutiveFailures` failures
 *   in a row, or when at least `minimumCalls` calls ended in the window and the
 *   share that failed reached `failureRate`.
 * - **open**: calls avoid the key for `cooldownMs`.
 * - **half-open** (the cool-down is over): at most `halfOpenCalls` trial calls
 *   (or health probes) at a time. A trial that succeeds closes the breaker; one
 *   that fails opens it again for another cool-down.
 *
 * Outcomes: `success` (the upstream answered, including a refusal that is the
 * caller's fault such as a 400), `failure` (connection error, timeout, 5xx,
 * 429, a stream cut or stalled), `neutral` (the client went away, or the call
 * never reached the upstream): neutral outcomes change nothing but free a
 * trial slot.
 *
 * @since 0.1.0
 */
import type { Domain } from "@modelgate/core"

/** What a finished call means for the breaker. @category models */
export type Outcome = "success" | "failure" | "neutral"

/** What a call gets from the breaker: a normal call, a trial of a half-open breaker, or nothing. @category models */
export type Permit = "closed" | "trial"

/** The breaker's state. @category models */
export type State = "closed" | "open" | "half_open"

const BUCKETS = 10

/**
 * One key's breaker. Mutable on purpose: it is updated on every call and must
 * not allocate on the hot path.
 *
 * @category models
 */
export class Breaker {
  /** The state as last changed; `open` whose cool-down is over reads as half-open (see `stateAt`). */
  state: State = "closed"
  /** When the state began (null: closed since the process started). */
  since: number | null = null
  /** Open: when trial calls may start. */
  retryAt = 0
  /** Trial calls in flight. */
  trials = 0
  consecutiveFailures = 0
  /** Why the breaker opened last. */
  reason: string | null = null
  lastFailureAt: number | null = null
  lastError: string | null = null
  private bucketMs = 0
  private readonly bucketIndex: Array<number> = new Array(BUCKETS).fill(Number.NEGATIVE_INFINITY)
  private readonly bucketCalls: Array<number> = new Array(BUCKETS).fill(0)
  private readonly bucketFailures: Array<number> = new Array(BUCKETS).fill(0)

  /** The state at `now`: an open breaker whose cool-down is over is half-open. */
  stateAt(now: number): State {
    return this.state === "open" && now >= this.retryAt ? "half_open" : this.state
  }

  /** What a call would get at `now`, without changing anything. */
  peek(now: number, settings: Domain.BreakerSettings): Permit | undefined {
    const state = this.stateAt(now)
    if (state === "closed") return "closed"
    if (state === "half_open" && this.trials < settings.halfOpenCalls) return "trial"
    return undefined
  }

  /**
   * Admits a call at `now`, or refuses it (undefined). With `force` a refused
   * call is admitted anyway as a trial: the gateway does that when every
   * candidate is open, rather than fail without trying.
   */
  acquire(now: number, settings: Domain.BreakerSettings, force = false): Permit | undefined {
    if (this.state === "closed") return "closed"
    if (this.state === "open" && now >= this.retryAt) {
      this.state = "half_open"
      this.since = this.retryAt
    }
    if ((this.state === "half_open" && this.trials < settings.halfOpenCalls) || force) {
      this.trials++
      return "trial"
    }
    return undefined
  }

  /** Records how a call admitted with `permit` ended. `error` describes a failure. */
  release(permit: Permit, outcome: Outcome, now: number, settings: Domain.BreakerSettings, error?: string): void {
    if (permit === "trial") this.trials = Math.max(0, this.trials - 1)
    if (outcome === "neutral") return
    this.count(now, settings.windowMs, outcome === "failure")
    if (outcome === "failure") {
      this.consecutiveFailures++
      this.lastFailureAt = now
      this.lastError = error ?? null
    } else {
      this.consecutiveFailures = 0
    }
    if (permit === "trial") {
      if (outcome === "success") this.close(now)
      else this.open(now, settings, `a trial call failed${error === undefined ? "" : `: ${error}`}`)
      return
    }
    // A call admitted while closed cannot close a breaker that other calls opened meanwhile.
    if (this.state !== "closed" || outcome === "success") return
    if (this.consecutiveFailures >= settings.consecutiveFailures) {
      this.open(
        now,
        settings,
        `${this.consecutiveFailures} failures in a row${error === undefined ? "" : ` (last: ${error})`}`
      )
      return
    }
    const { calls, failures } = this.recent(now, settings.windowMs)
    if (calls >= settings.minimumCalls && failures >= settings.failureRate * calls) {
      this.open(
        now,
        settings,
        `${failures} of ${calls} calls failed in the last ${Math.round(settings.windowMs / 1000)} s`
      )
    }
  }

  /**
   * An operator's test of the key failed (it could not be reached, timed out,
   * answered 5xx or 429, or with something that is not an answer): the
   * failure is counted and the breaker opens for a cool-down, so the key shows
   * as failing and calls avoid it until a trial or probe finds it working.
   */
  testFailed(now: number, settings: Domain.BreakerSettings, error: string): void {
    this.count(now, settings.windowMs, true)
    this.consecutiveFailures++
    this.lastFailureAt = now
    this.lastError = error
    this.open(now, settings, `a Test failed: ${error}`)
  }

  /** Closes the breaker and forgets the window (a trial or probe succeeded, or an operator reset it). */
  close(now: number): void {
    this.state = "closed"
    this.since = now
    this.retryAt = 0
    this.consecutiveFailures = 0
    this.reason = null
    this.bucketIndex.fill(Number.NEGATIVE_INFINITY)
  }

  /**
   * Keeps calls away until `until` (at least): the upstream said when to come
   * back (a 429's `retry-after`). Afterwards the breaker is half-open, like
   * after a cool-down.
   */
  holdUntil(now: number, until: number, reason: string): void {
    if (until <= now || (this.state === "open" && this.retryAt >= until)) return
    if (this.state !== "open") this.since = now
    this.state = "open"
    this.retryAt = until
    this.reason = reason
  }

  /** Opens the breaker at `now` for one cool-down. */
  open(now: number, settings: Domain.BreakerSettings, reason: string): void {
    if (this.state !== "open") this.since = now
    this.state = "open"
    this.retryAt = now + settings.cooldownMs
    this.reason = reason
  }

  /** Calls that ended within the window before `now`, and how many failed. */
  recent(now: number, windowMs: number): { readonly calls: number; readonly failures: number } {
    if (this.bucketMs === 0) return { calls: 0, failures: 0 }
    if (this.bucketMs !== Math.max(1, Math.ceil(windowMs / BUCKETS))) return { calls: 0, failures: 0 }
    const current = Math.floor(now / this.bucketMs)
    let calls = 0
    let failures = 0
    for (let i = 0; i < BUCKETS; i++) {
      const index = this.bucketIndex[i]!
      if (index > current - BUCKETS && index <= current) {
        calls += this.bucketCalls[i]!
        failures += this.bucketFailures[i]!
      }
    }
    return { calls, failures }
  }

  private count(now: number, windowMs: number, failed: boolean): void {
    const bucketMs = Math.max(1, Math.ceil(windowMs / BUCKETS))
    if (bucketMs !== this.bucketMs) {
      // The window changed (the channel was edited): start counting afresh.
      this.bucketMs = bucketMs
      this.bucketIndex.fill(Number.NEGATIVE_INFINITY)
    }
    const index = Math.floor(now / bucketMs)
    const slot = index % BUCKETS
    if (this.bucketIndex[slot] !== index) {
      this.bucketIndex[slot] = index
      this.bucketCalls[slot] = 0
      this.bucketFailures[slot] = 0
    }
    this.bucketCalls[slot]!++
    if (failed) this.bucketFailures[slot]!++
  }
}
