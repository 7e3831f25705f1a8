/**
 * Unique-key violations as the store's `Conflict`. PostgreSQL reports every
 * one as `UniqueViolation`; SQLite does for a UNIQUE constraint, but reports a
 * duplicate PRIMARY KEY as a plain constraint error.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { SqlError } from "effect/sql"
import { Conflict } from "../StoreError.ts"

/** Whether an error is a duplicate of a unique or primary key. */
export const isUniqueViolation = (error: unknown): error is SqlError.SqlError =>
  SqlError.isSqlError(error) &&
  (error.reason._tag === "UniqueViolation" ||
    (error.reason._tag === "ConstraintError" &&
      /UNIQUE|PRIMARY KEY/i.test(String((error.reason as { readonly cause?: unknown }).cause))))

/** Turns a duplicate key into a `Conflict` with this message. */
export const uniqueAsConflict =
  (message: string) => <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E | Conflict, R> =>
    Effect.catchIf(self, isUniqueViolation, () => Effect.fail(new Conflict({ message })))
