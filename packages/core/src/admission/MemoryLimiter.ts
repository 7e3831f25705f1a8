/**
 * The in-memory `RateLimiter`: exact sliding windows and concurrency slots
 * (see `Window`) kept in one process. The default when no Redis is configured,
 * and the fallback of `RedisLimiter` while Redis is unreachable.
 *
 * Memory stays bounded: a subject's state holds only the admission times of
 * the last window (at most `rpm` of them), at most 61 token buckets and the
 * slots in use, and subjects with nothing left to count are
 * forgotten (at once when touched, and by a sweep at most once per window over
 * all subjects, run lazily on `acquire`).
 *
 * @since 0.1.0
 */
import { Clock, Effect, Layer } from "effect"
import type * as GatewayError from "../errors/GatewayError.ts"
import * as Port from "./RateLimiter.ts"
import * as Window from "./RateWindow.ts"

/**
 * The in-memory limiter: the `RateLimiter` service plus a count of the
 * subjects it currently tracks (for tests and metrics).
 *
 * @category models
 */
export interface MemoryLimiter extends Service {
  /** Number of subjects with state in memory after pruning those with nothing left to count. */
  readonly trackedSubjects: Effect.Effect<number>
  /**
   * Counts a call another limiter admitted (without checking it against the
   * limits): the Redis limiter records here every call it admits, so that
   * while Redis cannot be asked, this process limits on everything it admitted
   * itself, before the outage too.
   */
  readonly record: (subjects: ReadonlyArray<Port.Subject>, estimatedTokens: number) => Effect.Effect<Port.Permit>
}

type Service = Port.RateLimiter["Service"]

/** Options of the in-memory limiter. @category models */
export interface Options extends Window.WindowOptions {}

/**
 * Builds an in-memory limiter. Dies with a message naming the option when
 * `options` is invalid.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { MemoryLimiter } from "@modelgate/core"
 *
 * const program = Effect.gen(function*() {
 *   const limiter = yield* MemoryLimiter.make()
 *   const permit = yield* limiter.acquire(
 *     [{ id: "key:k1", label: "your API key 'laptop'", limits: { rpm: 10, tpm: null, concurrency: 2 } }],
 *     1200
 *   )
 *   yield* permit.release(900)
 * })
 * ```
 *
 * @category constructors
 */
export const make = (options?: Options): Effect.Effect<MemoryLimiter> =>
  Effect.suspend(() => {
    const resolved = Window.resolveOptions(options)
    if (typeof resolved === "string") return Effect.die(new Error(`MemoryLimiter: ${resolved}`))
    return Effect.succeed(makeUnsafe(resolved))
  })

const makeUnsafe = ({ leaseMs, windowMs }: Window.ResolvedOptions): MemoryLimiter => {
  const states = new Map<string, Window.SubjectState>()
  let lastSweep = Number.NEGATIVE_INFINITY
  let nextCallId = 0

  const sweep = (now: number): void => {
    lastSweep = now
    for (const [id, state] of states) {
      state.prune(now, windowMs)
      if (state.isIdle()) states.delete(id)
    }
  }

  /**
   * Admits a call if every limit of every subject allows it (`check`), or in any case (`!check`). Memory work
   * only: one step, the clock read directly.
   */
  const admit = (
    subjects: ReadonlyArray<Port.Subject>,
    estimatedTokens: number,
    check: boolean
  ): Effect.Effect<Port.Permit, GatewayError.RateLimited> =>
    Effect.clockWith((clock) => {
      const invalid = Window.checkInput(subjects, estimatedTokens)
      if (invalid !== undefined) return Effect.die(new Error(`RateLimiter.acquire: ${invalid}`))
      const estimate = Window.wholeTokens(estimatedTokens)
      const now = clock.currentTimeMillisUnsafe()
      if (now - lastSweep >= windowMs) sweep(now)

      const limited: Array<Port.Subject> = []
      const touched: Array<Window.SubjectState> = []
      const observations: Array<Window.Observation> = []
      let refused = false
      for (const subject of subjects) {
        if (!Window.isLimited(subject.limits)) continue
        let state = states.get(subject.id)
        if (state === undefined) {
          state = new Window.SubjectState()
          states.set(subject.id, state)
        } else {
          state.prune(now, windowMs)
        }
        const observation = state.observe(subject.limits, now, estimate, windowMs)
        if (check && Window.refuses(observation)) refused = true
        limited.push(subject)
        touched.push(state)
        observations.push(observation)
      }

      if (refused) {
        for (let i = 0; i < touched.length; i++) {
          if (touched[i].isIdle()) states.delete(limited[i].id)
        }
        return Effect.fail(Window.refusal(limited, observations, estimate, windowMs))
      }

      const callId = nextCallId++
      const buckets: Array<Window.Bucket | undefined> = new Array(touched.length)
      for (let i = 0; i < touched.length; i++) {
        const limits = limited[i].limits
        buckets[i] = touched[i].admit(limits, callId, now, estimate, windowMs, leaseMs)
        observations[i] = Window.afterAdmission(observations[i], limits, estimate, now, windowMs)
      }

      let released = false
      const release = (actualTokens: number): Effect.Effect<void> =>
        Effect.clockWith((releasing) => {
          if (released) return Effect.void
          released = true
          const at = releasing.currentTimeMillisUnsafe()
          const actual = Window.correctedTokens(actualTokens, estimate)
          for (let i = 0; i < touched.length; i++) {
            touched[i].release(buckets[i], callId, at, estimate, actual, windowMs)
          }
          return Effect.void
        })

      return Effect.succeed({ snapshot: Window.snapshot(limited, observations), release } satisfies Port.Permit)
    })

  return {
    acquire: (subjects, estimatedTokens) => admit(subjects, estimatedTokens, true),
    // Nothing is checked, so nothing is refused.
    record: (subjects, estimatedTokens) => Effect.orDie(admit(subjects, estimatedTokens, false)),
    trackedSubjects: Effect.flatMap(Clock.currentTimeMillis, (now) =>
      Effect.sync(() => {
        sweep(now)
        return states.size
      }))
  }
}

/**
 * The in-memory `RateLimiter` for one process, with one-minute windows and
 * 10-minute concurrency leases.
 *
 * @category layers
 */
export const layer: Layer.Layer<Port.RateLimiter> = Layer.effect(Port.RateLimiter, make())

/**
 * The in-memory `RateLimiter` with a chosen window or lease length (tests use
 * short windows).
 *
 * @category layers
 */
export const layerWith = (options: Options): Layer.Layer<Port.RateLimiter> =>
  Layer.effect(Port.RateLimiter, make(options))
