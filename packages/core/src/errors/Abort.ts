/**
 * Early exit for synchronous translators: code deep inside a translation
 * throws an `Abort` holding the error to answer with (`abort(error)`), and the
 * exported entry point turns it into a failed `Result` (`run`). This keeps the
 * hot path free of a `Result` per message and part, while every entry point
 * still returns a `Result` and never throws for bad input.
 *
 * @example
 * ```ts
 * import { Abort, Issues } from "@modelgate/core"
 *
 * const roleOf = (turn: { readonly role?: string }, at: string): string =>
 *   turn.role ?? Abort.abort(Issues.invalid(`${at}.role`, `'${at}.role' is required`))
 *
 * Abort.run(() => roleOf({}, "contents[0]"))
 * // Result.fail(InvalidRequest { message: "'contents[0].role' is required", param: "contents[0].role" })
 * ```
 *
 * @since 0.1.0
 */
import { Result } from "effect"

/**
 * What `abort` throws: the error a translation stops with. Anything else
 * thrown inside `run` is a defect and passes through.
 *
 * @category models
 */
export class Abort<E> {
  readonly error: E
  constructor(error: E) {
    this.error = error
  }
}

/**
 * Runs `f`; an `Abort` it throws becomes a failure with its error, anything
 * else thrown is rethrown (a defect). `E` is the union of the errors `f` may
 * abort with: the caller names it, since a throw carries no type.
 *
 * @category running
 */
export const run = <A, E>(f: () => A): Result.Result<A, E> => {
  try {
    return Result.succeed(f())
  } catch (u) {
    if (u instanceof Abort) return Result.fail(u.error as E)
    throw u
  }
}

/**
 * Stops the translation that `run` is running with `error`.
 *
 * @category running
 */
export const abort = (error: unknown): never => {
  throw new Abort(error)
}
