/**
 * The rate-limiting algorithm shared by the in-memory and the Redis limiter:
 * an exact sliding window (a "sliding log") for requests, tokens counted in
 * small time buckets over the same sliding window, and a concurrency counter,
 * over all the subjects of a call.
 *
 * **Why a sliding log for requests.** A limit of `rpm: 10` is read by people
 * as "at most 10 calls in any 60 seconds". A sliding log keeps the admission
 * time of every call still inside the window, so that promise holds exactly at
 * every edge, and the wait before a retry can succeed is known to the
 * millisecond. GCRA keeps O(1) state but replenishes continuously: after a
 * burst of 10 at t=0 it admits the 11th at t=6 s, so any 60 s holds up to 19
 * calls; the approximate sliding-window counter is off at window edges. The
 * log is kept only for subjects with a request limit, and a refused call is
 * not logged, so it never holds more than `rpm` entries; both backends read
 * only its ends (Redis: `ZCARD` and `ZRANGE` by rank), never all of it.
 *
 * **Why buckets for tokens.** A token limit bounds tokens, not calls: a
 * subject with only `tpm` may make any number of small calls, so a log of
 * every call would grow without bound. Tokens are therefore summed per bucket
 * of {@link bucketMs} (a sixtieth of the window: 1 s for a minute), at most
 * 61 buckets per subject, whatever the traffic. A bucket counts for one window
 * from its start, so a call's tokens leave the window up to one bucket (1 s of
 * 60) before a minute has passed since the call: a `tpm` limit holds over any
 * window to within what one bucket admits, and retry times are exact for
 * calls made at a bucket's start.
 *
 * **Rules** (both backends implement exactly these; one test suite checks it):
 *
 * - Requests: a call admitted at `at` counts during `[at, at + windowMs)`. It is
 *   admitted when `requests + 1 <= rpm`. If not, the wait is until the
 *   `(requests - rpm + 1)`-th oldest entry leaves the window.
 * - Tokens: a call admitted at `at` counts in the bucket starting at
 *   `at - at % bucketMs`, during `[bucket, bucket + windowMs)`. It is admitted
 *   when `tokens + estimate <= tpm`. If not, the wait is until enough of the
 *   oldest buckets have left to free `tokens + estimate - tpm`. An estimate
 *   above `tpm` can never be admitted ({@link never}).
 * - Concurrency: admitted when `inflight + 1 <= concurrency`; a slot is held
 *   until the permit is released, or at most `leaseMs` (a crash backstop). The
 *   wait is unknown, so {@link concurrencyRetryMs} is answered.
 * - All or nothing: a call is admitted only if every dimension of every subject
 *   admits it; a refusal changes nothing. The refusal names the limit with the
 *   longest wait, and `retryAfterSeconds` is that wait, exactly.
 * - Correction: on release the call's tokens become the actual count, in the
 *   bucket it was admitted in (if that bucket has already left the window,
 *   nothing changes). Tokens above the estimate are added; unused ones given
 *   back (a bucket never goes below zero).
 *
 * Time comes only from the caller (`now`), which reads Effect's `Clock` (memory)
 * or Redis `TIME` (Redis), so tests drive it with `TestClock`.
 *
 * @since 0.1.0
 */
import type * as Domain from "../domain/Domain.ts"
import * as GatewayError from "../errors/GatewayError.ts"
import type * as RateLimiter from "./RateLimiter.ts"

/** The default window: one minute, as in "requests per minute". @category constants */
export const defaultWindowMs = 60_000

/** How long a concurrency slot is held at most when its permit is never released (10 minutes). @category constants */
export const defaultLeaseMs = 600_000

/** The retry delay answered when a concurrency limit is hit (the moment a slot frees is unknowable). @category constants */
export const concurrencyRetryMs = 1_000

/** Marks a dimension that does not refuse the call. @category constants */
export const notExceeded = -1

/** Marks a token limit the call can never fit in (its estimate alone is above the limit). @category constants */
export const never = -2

/** Marks "no reset time": nothing counted in the window. @category constants */
export const noReset = -1

/** Buckets per window in which tokens are counted. @category constants */
export const bucketsPerWindow = 60

/**
 * The length of a token bucket for a window: a sixtieth of it, rounded up to
 * whole milliseconds (1 000 ms for the default minute).
 *
 * @category constants
 */
export const bucketMs = (windowMs: number): number => Math.ceil(windowMs / bucketsPerWindow)

/** The start of the token bucket `now` falls in. @category algorithm */
export const bucketOf = (now: number, windowMs: number): number => {
  const size = bucketMs(windowMs)
  return now - (((now % size) + size) % size)
}

/** Options shared by both limiters. @category models */
export interface WindowOptions {
  /** Length of the sliding window in milliseconds; `rpm`/`tpm` count per window. Default 60 000. */
  readonly windowMs?: number | undefined
  /** Longest a concurrency slot is held without a release. Default 600 000. */
  readonly leaseMs?: number | undefined
}

/** {@link WindowOptions} with defaults applied and checked. @category models */
export interface ResolvedOptions {
  readonly windowMs: number
  readonly leaseMs: number
}

/**
 * One subject's state at a decision, as both backends report it. After an
 * admission the counts include the admitted call; after a refusal they are the
 * state that refused it. Plain numbers, so the Redis script can return them as
 * a flat integer array.
 *
 * @category models
 */
export interface Observation {
  /** Calls counted in the window. */
  readonly requests: number
  /** Tokens counted in the window. */
  readonly tokens: number
  /** Calls holding a concurrency slot. */
  readonly inflight: number
  /** Milliseconds until the oldest counted call leaves the window, or {@link noReset}. */
  readonly requestsResetMs: number
  /** Milliseconds until the oldest counted call with tokens leaves the window, or {@link noReset}. */
  readonly tokensResetMs: number
  /** Wait before the request limit admits the call, or {@link notExceeded}. */
  readonly requestsWaitMs: number
  /** Wait before the token limit admits the call, {@link notExceeded} or {@link never}. */
  readonly tokensWaitMs: number
  /** Wait before the concurrency limit admits the call, or {@link notExceeded}. */
  readonly concurrencyWaitMs: number
}

/** Number of integers per subject in the Redis script's reply ({@link Observation}'s fields in order). @category constants */
export const observationWidth = 8

// ---------------------------------------------------------------------------
// Input checks
// ---------------------------------------------------------------------------

const isLimit = (value: unknown): boolean =>
  value === null || (typeof value === "number" && Number.isSafeInteger(value) && value > 0)

const describe = (value: unknown): string => typeof value === "string" ? JSON.stringify(value) : String(value)

/**
 * Checks options and fills defaults; returns a message naming the bad field
 * instead when one is wrong.
 *
 * @category validation
 */
export const resolveOptions = (options: WindowOptions | undefined): ResolvedOptions | string => {
  const windowMs = options?.windowMs ?? defaultWindowMs
  const leaseMs = options?.leaseMs ?? defaultLeaseMs
  if (!Number.isSafeInteger(windowMs) || windowMs <= 0) {
    return `windowMs must be a positive integer number of milliseconds, got ${describe(windowMs)}`
  }
  if (!Number.isSafeInteger(leaseMs) || leaseMs <= 0) {
    return `leaseMs must be a positive integer number of milliseconds, got ${describe(leaseMs)}`
  }
  return { windowMs, leaseMs }
}

/**
 * Checks the arguments of `acquire`: subject ids non-empty and distinct, every
 * limit `null` or a positive integer, the estimate a finite number `>= 0`.
 * Returns `undefined` when all is well, else a message naming the field path
 * (`subjects[1].limits.rpm must be ...`). These are programming errors of the
 * caller (configuration is checked when it is loaded), so limiters die with
 * this message rather than refuse the call.
 *
 * @category validation
 */
export const checkInput = (
  subjects: ReadonlyArray<RateLimiter.Subject>,
  estimatedTokens: number
): string | undefined => {
  if (!Number.isFinite(estimatedTokens) || estimatedTokens < 0) {
    return `estimatedTokens must be a finite number >= 0, got ${describe(estimatedTokens)}`
  }
  for (let i = 0; i < subjects.length; i++) {
    const subject = subjects[i]
    if (typeof subject.id !== "string" || subject.id.length === 0) {
      return `subjects[${i}].id must be a non-empty string, got ${describe(subject.id)}`
    }
    for (let j = 0; j < i; j++) {
      if (subjects[j].id === subject.id) {
        return `subjects[${i}].id duplicates subjects[${j}].id (${JSON.stringify(subject.id)})`
      }
    }
    const limits = subject.limits
    if (!isLimit(limits.rpm)) {
      return `subjects[${i}].limits.rpm must be a positive integer or null, got ${describe(limits.rpm)}`
    }
    if (!isLimit(limits.tpm)) {
      return `subjects[${i}].limits.tpm must be a positive integer or null, got ${describe(limits.tpm)}`
    }
    if (!isLimit(limits.concurrency)) {
      return `subjects[${i}].limits.concurrency must be a positive integer or null, got ${describe(limits.concurrency)}`
    }
  }
  return undefined
}

/**
 * Token counts are whole tokens: a fractional estimate is rounded up.
 *
 * @category validation
 */
export const wholeTokens = (tokens: number): number => Math.ceil(tokens)

/**
 * The actual token count a release records: rounded up; a negative count is
 * taken as 0; a count that is not a finite number leaves the estimate in place.
 *
 * @category validation
 */
export const correctedTokens = (actual: number, estimate: number): number =>
  Number.isFinite(actual) ? Math.max(0, Math.ceil(actual)) : estimate

/** Whether a subject is limited in any dimension (unlimited subjects are skipped entirely). @category validation */
export const isLimited = (limits: Domain.Limits): boolean =>
  limits.rpm !== null || limits.tpm !== null || limits.concurrency !== null

// ---------------------------------------------------------------------------
// In-memory state of one subject
// ---------------------------------------------------------------------------

/**
 * The tokens of the calls admitted in one bucket. `tokens` is mutable: a
 * release corrects it in place while the bucket is still in the window.
 *
 * @category state
 */
export interface Bucket {
  readonly start: number
  tokens: number
}

/**
 * The in-memory state of one subject: the admission times of the calls in
 * the window (subjects with a request limit; oldest first, `head` is the index
 * of the oldest live one so pruning does not shift the array), the token
 * buckets in the window (subjects with a token limit; oldest first) and their
 * sum, and the concurrency slots in use (call id to lease expiry).
 *
 * @category state
 */
export class SubjectState {
  log: Array<number> = []
  head = 0
  buckets: Array<Bucket> = []
  tokenSum = 0
  readonly inflight = new Map<number, number>()

  /** Drops entries, buckets and leases that have expired at `now`. */
  prune(now: number, windowMs: number): void {
    const log = this.log
    let head = this.head
    while (head < log.length && log[head] + windowMs <= now) head++
    if (head === log.length) {
      if (head > 0) this.log = []
      this.head = 0
    } else if (head > 64 && head * 2 > log.length) {
      this.log = log.slice(head)
      this.head = 0
    } else {
      this.head = head
    }
    const buckets = this.buckets
    let dead = 0
    while (dead < buckets.length && buckets[dead].start + windowMs <= now) {
      this.tokenSum -= buckets[dead].tokens
      dead++
    }
    if (dead > 0) this.buckets = buckets.slice(dead)
    if (this.inflight.size > 0) {
      for (const [id, expiry] of this.inflight) {
        if (expiry <= now) this.inflight.delete(id)
      }
    }
  }

  /** Whether nothing is counted or held: the state can be forgotten. */
  isIdle(): boolean {
    return this.head === this.log.length && this.buckets.length === 0 && this.inflight.size === 0
  }

  /** Number of calls counted in the window (after {@link prune}). */
  requests(): number {
    return this.log.length - this.head
  }

  /**
   * The state of this subject for a call of `estimate` tokens, with the wait of
   * every dimension that refuses it. Call {@link prune} first.
   */
  observe(limits: Domain.Limits, now: number, estimate: number, windowMs: number): Observation {
    const log = this.log
    const head = this.head
    const requests = log.length - head
    const tokens = this.tokenSum
    const inflight = this.inflight.size
    let requestsWaitMs = notExceeded
    let tokensWaitMs = notExceeded
    let concurrencyWaitMs = notExceeded
    if (limits.rpm !== null && requests + 1 > limits.rpm) {
      requestsWaitMs = log[head + requests - limits.rpm] + windowMs - now
    }
    if (limits.tpm !== null) {
      if (estimate > limits.tpm) {
        tokensWaitMs = never
      } else if (tokens + estimate > limits.tpm) {
        const needed = tokens + estimate - limits.tpm
        let freed = 0
        for (const bucket of this.buckets) {
          freed += bucket.tokens
          if (freed >= needed) {
            tokensWaitMs = bucket.start + windowMs - now
            break
          }
        }
      }
    }
    if (limits.concurrency !== null && inflight + 1 > limits.concurrency) {
      concurrencyWaitMs = concurrencyRetryMs
    }
    return {
      requests,
      tokens,
      inflight,
      requestsResetMs: requests === 0 ? noReset : log[head] + windowMs - now,
      tokensResetMs: this.tokensReset(now, windowMs),
      requestsWaitMs,
      tokensWaitMs,
      concurrencyWaitMs
    }
  }

  /** Milliseconds until the oldest bucket with tokens leaves the window, or {@link noReset}. */
  tokensReset(now: number, windowMs: number): number {
    for (const bucket of this.buckets) {
      if (bucket.tokens > 0) return bucket.start + windowMs - now
    }
    return noReset
  }

  /**
   * Records an admitted call: its admission time when the subject has a
   * request limit, its estimate in the current bucket when it has a token
   * limit, a slot when it has a concurrency limit. Returns the bucket (for the
   * correction on release), or `undefined` when tokens are not counted.
   */
  admit(
    limits: Domain.Limits,
    callId: number,
    now: number,
    estimate: number,
    windowMs: number,
    leaseMs: number
  ): Bucket | undefined {
    if (limits.rpm !== null) {
      const log = this.log
      // Keep the log ordered even if the clock steps back.
      log.push(log.length > this.head && log[log.length - 1] > now ? log[log.length - 1] : now)
    }
    let bucket: Bucket | undefined
    if (limits.tpm !== null) {
      const start = bucketOf(now, windowMs)
      const last = this.buckets[this.buckets.length - 1]
      if (last !== undefined && last.start >= start) {
        bucket = last
      } else {
        bucket = { start, tokens: 0 }
        this.buckets.push(bucket)
      }
      bucket.tokens += estimate
      this.tokenSum += estimate
    }
    if (limits.concurrency !== null) this.inflight.set(callId, now + leaseMs)
    return bucket
  }

  /**
   * Ends a call: frees its slot and, while its bucket is still in the window,
   * changes its tokens there from `estimate` to `actual`. Call once per call.
   */
  release(
    bucket: Bucket | undefined,
    callId: number,
    now: number,
    estimate: number,
    actual: number,
    windowMs: number
  ): void {
    this.inflight.delete(callId)
    if (bucket !== undefined && bucket.start + windowMs > now) {
      const tokens = Math.max(0, bucket.tokens + actual - estimate)
      this.tokenSum += tokens - bucket.tokens
      bucket.tokens = tokens
    }
  }
}

/**
 * The observation after admitting a call of `estimate` tokens at `now` into a
 * state observed as `before` at the same instant: what both backends report
 * for the headers of a successful call.
 *
 * @category algorithm
 */
export const afterAdmission = (
  before: Observation,
  limits: Domain.Limits,
  estimate: number,
  now: number,
  windowMs: number
): Observation => {
  const requestsCounted = limits.rpm !== null
  const tokensCounted = limits.tpm !== null
  return {
    requests: requestsCounted ? before.requests + 1 : before.requests,
    tokens: tokensCounted ? before.tokens + estimate : before.tokens,
    inflight: limits.concurrency !== null ? before.inflight + 1 : before.inflight,
    requestsResetMs: requestsCounted && before.requestsResetMs === noReset ? windowMs : before.requestsResetMs,
    tokensResetMs: tokensCounted && estimate > 0 && before.tokensResetMs === noReset
      ? bucketOf(now, windowMs) + windowMs - now
      : before.tokensResetMs,
    requestsWaitMs: notExceeded,
    tokensWaitMs: notExceeded,
    concurrencyWaitMs: notExceeded
  }
}

/** Whether any dimension of the observation refuses the call. @category algorithm */
export const refuses = (observation: Observation): boolean =>
  observation.requestsWaitMs !== notExceeded ||
  observation.tokensWaitMs !== notExceeded ||
  observation.concurrencyWaitMs !== notExceeded

// ---------------------------------------------------------------------------
// Snapshots, refusals and messages
// ---------------------------------------------------------------------------

/**
 * The snapshot for the `x-ratelimit-*` headers: for requests and for tokens
 * separately, the subject with the fewest remaining (the first one on a tie),
 * its limit, what remains after this call, and the milliseconds until the
 * oldest call counted against it leaves the window (when the remaining count
 * next grows; 0 when nothing is counted). Dimensions no subject limits are
 * `null`.
 *
 * @category algorithm
 */
export const snapshot = (
  subjects: ReadonlyArray<RateLimiter.Subject>,
  observations: ReadonlyArray<Observation>
): RateLimiter.Snapshot => {
  let requestsAt = -1
  let requestsRemaining = 0
  let tokensAt = -1
  let tokensRemaining = 0
  for (let i = 0; i < subjects.length; i++) {
    const { rpm, tpm } = subjects[i].limits
    const observation = observations[i]
    if (rpm !== null) {
      const remaining = Math.max(0, rpm - observation.requests)
      if (requestsAt === -1 || remaining < requestsRemaining) {
        requestsAt = i
        requestsRemaining = remaining
      }
    }
    if (tpm !== null) {
      const remaining = Math.max(0, tpm - observation.tokens)
      if (tokensAt === -1 || remaining < tokensRemaining) {
        tokensAt = i
        tokensRemaining = remaining
      }
    }
  }
  return {
    limitRequests: requestsAt === -1 ? null : subjects[requestsAt].limits.rpm,
    remainingRequests: requestsAt === -1 ? null : requestsRemaining,
    resetRequestsMs: requestsAt === -1 ? null : Math.max(0, observations[requestsAt].requestsResetMs),
    limitTokens: tokensAt === -1 ? null : subjects[tokensAt].limits.tpm,
    remainingTokens: tokensAt === -1 ? null : tokensRemaining,
    resetTokensMs: tokensAt === -1 ? null : Math.max(0, observations[tokensAt].tokensResetMs)
  }
}

/**
 * "minute" for the default window, else the window in seconds ("2 s"), for
 * messages such as "10 requests per minute".
 *
 * @category messages
 */
export const windowLabel = (windowMs: number): string =>
  windowMs === 60_000 ? "minute" : windowMs === 1_000 ? "second" : `${windowMs / 1000} s`

/** Whole seconds for a message, at least 1: "Retry in 12 s." @category messages */
export const retrySeconds = (waitMs: number): number => Math.max(1, Math.ceil(waitMs / 1000))

/**
 * The refusal for a call some observation refuses: the limit with the longest
 * wait (a token limit the call can never fit in first of all), named in the
 * message with its subject's label. `retryAfterSeconds` is that wait in
 * seconds, exact to the millisecond; `limit` is `"rpm"`, `"tpm"` or
 * `"concurrency"`; `subject` is the refusing subject's id; `snapshot` is the
 * state at the refusal for the `x-ratelimit-*` headers: per dimension the
 * most constrained subject (as {@link snapshot}, without the refused call),
 * except that the refused dimension shows the refusing subject, with its reset
 * being the wait.
 *
 * @category algorithm
 */
export const refusal = (
  subjects: ReadonlyArray<RateLimiter.Subject>,
  observations: ReadonlyArray<Observation>,
  estimate: number,
  windowMs: number
): GatewayError.RateLimited => {
  let at = -1
  let kind: "rpm" | "tpm" | "concurrency" = "rpm"
  let wait = -1
  for (let i = 0; i < subjects.length; i++) {
    const observation = observations[i]
    if (observation.tokensWaitMs === never) {
      const { id, label, limits } = subjects[i]
      return new GatewayError.RateLimited({
        message: `This call needs about ${estimate} tokens, more than the ${limits.tpm} tokens per ${
          windowLabel(windowMs)
        } allowed for ${label}, so it cannot be admitted: shorten the input or lower the maximum output tokens.`,
        retryAfterSeconds: windowMs / 1000,
        limit: "tpm",
        subject: id,
        snapshot: refusedSnapshot(subjects, observations, i, "tpm", Math.max(0, observation.tokensResetMs))
      })
    }
    if (observation.requestsWaitMs > wait) {
      at = i
      kind = "rpm"
      wait = observation.requestsWaitMs
    }
    if (observation.tokensWaitMs > wait) {
      at = i
      kind = "tpm"
      wait = observation.tokensWaitMs
    }
    if (observation.concurrencyWaitMs > wait) {
      at = i
      kind = "concurrency"
      wait = observation.concurrencyWaitMs
    }
  }
  if (at === -1) {
    return new GatewayError.RateLimited({ message: "Rate limit reached.", retryAfterSeconds: 1, limit: "rpm" })
  }
  const { id, label, limits } = subjects[at]
  const unit = windowLabel(windowMs)
  const what = kind === "rpm"
    ? `${limits.rpm} requests per ${unit}`
    : kind === "tpm"
    ? `${limits.tpm} tokens per ${unit} (this call needs about ${estimate})`
    : `${limits.concurrency} concurrent calls`
  return new GatewayError.RateLimited({
    message: `Rate limit reached for ${label}: ${what}. Retry in ${retrySeconds(wait)} s.`,
    retryAfterSeconds: Math.max(wait, 0) / 1000,
    limit: kind,
    subject: id,
    snapshot: refusedSnapshot(subjects, observations, at, kind, Math.max(wait, 0))
  })
}

const refusedSnapshot = (
  subjects: ReadonlyArray<RateLimiter.Subject>,
  observations: ReadonlyArray<Observation>,
  at: number,
  kind: "rpm" | "tpm" | "concurrency",
  waitMs: number
): RateLimiter.Snapshot => {
  const state = snapshot(subjects, observations)
  const { limits } = subjects[at]
  const observation = observations[at]
  if (kind === "rpm" && limits.rpm !== null) {
    return {
      ...state,
      limitRequests: limits.rpm,
      remainingRequests: Math.max(0, limits.rpm - observation.requests),
      resetRequestsMs: waitMs
    }
  }
  if (kind === "tpm" && limits.tpm !== null) {
    return {
      ...state,
      limitTokens: limits.tpm,
      remainingTokens: Math.max(0, limits.tpm - observation.tokens),
      resetTokensMs: waitMs
    }
  }
  return state
}
