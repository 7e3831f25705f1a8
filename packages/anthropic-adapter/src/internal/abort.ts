/**
 * Early exit for the synchronous translators: a translator deep in a request
 * throws an `Abort` holding the gateway error, and the exported entry point
 * turns it into a failed `Result`. Keeps the hot path free of per-part
 * `Result` allocations.
 *
 * @since 0.1.0
 */
import { Result } from "effect"

/** Carries a typed error out of nested translation code. */
export class Abort<E> {
  readonly error: E
  constructor(error: E) {
    this.error = error
  }
}

/** Runs `f`; an `Abort` it throws becomes a failure, anything else is rethrown (a defect). */
export const run = <A, E>(f: () => A): Result.Result<A, E> => {
  try {
    return Result.succeed(f())
  } catch (u) {
    if (u instanceof Abort) return Result.fail(u.error as E)
    throw u
  }
}

/** Throws an `Abort` with `error`. */
export const abort = (error: unknown): never => {
  throw new Abort(error)
}
