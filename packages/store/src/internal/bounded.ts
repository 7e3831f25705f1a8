/**
 * A bounded wait on the database: the work runs in a fiber of its own, and
 * the caller waits for it at most so long. A database that stops answering
 * without an error (a frozen server, a network that swallows bytes) would
 * otherwise hold the caller until the connection is cut; interrupting the
 * query instead would make the caller wait for the connection to drain.
 *
 * @internal
 */
import { Clock, Effect, Fiber, type Scope } from "effect"
import { SqlError } from "effect/sql"

/** How long a call waits for the database before it is answered without it (a 503, or what memory knows). */
export const CALL_WAIT_MS = 1_000

/** The failure of a wait that outlasted its bound: a retryable SQL timeout, handled as the database being unreachable. */
export const timedOut = (what: string, ms: number): SqlError.SqlError =>
  new SqlError.SqlError({
    reason: new SqlError.StatementTimeoutError({
      cause: undefined,
      message: `the database did not answer within ${ms} ms (${what})`,
      operation: what
    })
  })

/**
 * Waits at most `ms` for `work`, run in `scope` (detached without one). Past
 * the bound `abandoned` is called at once (synchronously, so the work can
 * tell it was given up before it acts) and the wait fails with `timedOut`;
 * the work goes on in the background, and `late` gets its result if it
 * succeeds after all (to undo what nobody will use). With `answeredAt` (when
 * the database last answered anything, on the effect clock), the wait goes
 * on while the database answered within the last `ms`: a call queued behind
 * others on a database that works is slow, not cut off.
 */
export const within = <A, E>(
  work: Effect.Effect<A, E>,
  options: {
    readonly ms: number
    readonly what: string
    readonly scope?: Scope.Scope | undefined
    readonly abandoned?: (() => void) | undefined
    readonly late?: ((value: A) => Effect.Effect<unknown, unknown>) | undefined
    readonly answeredAt?: (() => number) | undefined
  }
): Effect.Effect<A, E | SqlError.SqlError> =>
  Effect.suspend(() => {
    let givenUp = false
    const watched = work.pipe(
      Effect.tap((value) => givenUp && options.late !== undefined ? Effect.ignore(options.late(value)) : Effect.void)
    )
    const fork = options.scope === undefined ? Effect.forkDetach(watched) : Effect.forkIn(watched, options.scope)
    return Effect.flatMap(fork, (fiber) => {
      const wait: Effect.Effect<A, E | SqlError.SqlError> = Effect.interruptible(Fiber.join(fiber)).pipe(
        Effect.timeoutOrElse({
          duration: options.ms,
          orElse: (): Effect.Effect<A, E | SqlError.SqlError> =>
            Effect.flatMap(Clock.currentTimeMillis, (now): Effect.Effect<A, E | SqlError.SqlError> => {
              // Finished just as the bound passed: its answer counts.
              if (fiber.pollUnsafe() !== undefined) return Fiber.join(fiber)
              if (options.answeredAt !== undefined && now - options.answeredAt() < options.ms) return wait
              givenUp = true
              options.abandoned?.()
              return Effect.fail(timedOut(options.what, options.ms))
            })
        })
      )
      return wait
    })
  })
