/**
 * Sign-in rate limiting: after `maxFailures` failed attempts within `windowMs`
 * for one account, or from one client address, further attempts for it are
 * refused with 429 and a `retry-after` until the oldest failure leaves the
 * window. A successful sign-in clears the account's failures (not the
 * address's, so one known password cannot launder guesses at other accounts).
 *
 * Counters live in memory, per process: a deliberate trade-off for the
 * single-node default; behind a load balancer each node limits on its own.
 * Each subject keeps at most its last `maxFailures` failures, and subjects
 * whose failures have all left the window are dropped (swept at most once a
 * window, on a failure), so guesses from many addresses or at many names
 * cannot grow the memory without bound.
 *
 * @since 0.1.0
 */
import { Clock, Context, Effect, Layer } from "effect"

/** Limiter settings. @category models */
export interface Options {
  /** Failures allowed per window (default 5). */
  readonly maxFailures: number
  /** The window in milliseconds (default 5 minutes). */
  readonly windowMs: number
}

/** The defaults: 5 failures per 5 minutes. @category constants */
export const defaults: Options = { maxFailures: 5, windowMs: 5 * 60 * 1000 }

/** @category services */
export class LoginLimiter extends Context.Service<LoginLimiter, {
  /** Seconds to wait before another attempt for any of these subjects, or 0 when one may try now. */
  readonly retryAfter: (subjects: ReadonlyArray<string>) => Effect.Effect<number>
  /** Records a failed attempt for each subject. */
  readonly fail: (subjects: ReadonlyArray<string>) => Effect.Effect<void>
  /** Forgets a subject's failures. */
  readonly clear: (subject: string) => Effect.Effect<void>
  /** How many subjects have failures on record (for monitoring and tests). */
  readonly tracked: Effect.Effect<number>
}>()("modelgate/admin-api/LoginLimiter") {
  /** An in-memory limiter. @category layers */
  static readonly layer = (options: Partial<Options> = {}): Layer.Layer<LoginLimiter> =>
    Layer.sync(LoginLimiter, () => {
      const { maxFailures, windowMs } = { ...defaults, ...options }
      const failures = new Map<string, Array<number>>()
      let sweptAt = 0
      const recent = (subject: string, now: number): Array<number> => {
        const list = (failures.get(subject) ?? []).filter((at) => at > now - windowMs)
        if (list.length === 0) failures.delete(subject)
        else failures.set(subject, list)
        return list
      }
      const sweep = (now: number) => {
        if (now - sweptAt < windowMs) return
        sweptAt = now
        for (const [subject, list] of failures) {
          if (list[list.length - 1]! <= now - windowMs) failures.delete(subject)
        }
      }
      return LoginLimiter.of({
        retryAfter: (subjects) =>
          Effect.map(Clock.currentTimeMillis, (now) => {
            let wait = 0
            for (const subject of subjects) {
              const list = recent(subject, now)
              if (list.length >= maxFailures) {
                const freeAt = list[list.length - maxFailures]! + windowMs
                wait = Math.max(wait, Math.ceil((freeAt - now) / 1000))
              }
            }
            return wait
          }),
        fail: (subjects) =>
          Effect.map(Clock.currentTimeMillis, (now) => {
            sweep(now)
            for (const subject of subjects) {
              const list = recent(subject, now)
              list.push(now)
              // Only the last maxFailures matter: the oldest of them decides when the subject may try again.
              failures.set(subject, list.length > maxFailures ? list.slice(-maxFailures) : list)
            }
          }),
        clear: (subject) => Effect.sync(() => void failures.delete(subject)),
        tracked: Effect.sync(() => failures.size)
      })
    })
}
