/**
 * Chooses the database from a URL and provides `SqlClient.SqlClient` plus the
 * `Dialect` service for the few queries that differ between the two engines.
 *
 * Accepted URLs:
 *
 * - `sqlite:PATH` (relative or absolute file path; `sqlite://PATH` also works)
 *   and `sqlite::memory:` for a private in-memory database: the embedded
 *   default, served by this package's `SqliteClient`;
 * - `postgres://...` and `postgresql://...`: PostgreSQL through
 *   `@effect/sql-pg`'s pooled `PgClient`.
 *
 * @since 0.1.0
 */
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Redacted, Schema } from "effect"
import { type SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql"
import * as SqliteClient from "./SqliteClient.ts"

/**
 * The SQL dialect of the connected database.
 *
 * @category services
 */
export class Dialect extends Context.Service<Dialect, "sqlite" | "pg">()("modelgate/store/Dialect") {}

/**
 * The URL did not name a supported database.
 *
 * @category errors
 */
export class InvalidDatabaseUrl extends Schema.TaggedError<InvalidDatabaseUrl>()("InvalidDatabaseUrl", {
  url: Schema.String,
  message: Schema.String
}) {}

/**
 * A parsed database location.
 *
 * @category models
 */
export type Target =
  | { readonly _tag: "sqlite"; readonly filename: string }
  | { readonly _tag: "pg"; readonly url: string }

const accepted = "Accepted forms: 'sqlite:PATH' (for example sqlite:./data/modelgate.db), 'sqlite::memory:', " +
  "'postgres://USER:PASSWORD@HOST:PORT/DATABASE' or 'postgresql://...'."

/** Hides the password of a URL for error messages. */
const redactUrl = (url: string): string => url.replace(/\/\/([^:/@]+):[^@]*@/, "//$1:***@")

/**
 * Parses a database URL.
 *
 * @category parsing
 */
export const parseUrl = (url: string): Effect.Effect<Target, InvalidDatabaseUrl> => {
  const text = url.trim()
  if (text.startsWith("sqlite:")) {
    let filename = text.slice("sqlite:".length)
    if (filename.startsWith("//")) filename = filename.slice(2)
    if (filename.length === 0) {
      return Effect.fail(
        new InvalidDatabaseUrl({
          url,
          message: `The database URL '${url}' has no file path after 'sqlite:'. ${accepted}`
        })
      )
    }
    return Effect.succeed({ _tag: "sqlite", filename })
  }
  if (text.startsWith("postgres://") || text.startsWith("postgresql://")) {
    if (!URL.canParse(text)) {
      return Effect.fail(
        new InvalidDatabaseUrl({
          url: redactUrl(url),
          message: `The database URL '${redactUrl(url)}' is not a valid URL. ${accepted}`
        })
      )
    }
    return Effect.succeed({ _tag: "pg", url: text })
  }
  return Effect.fail(
    new InvalidDatabaseUrl({
      url: redactUrl(url),
      message: `The database URL '${redactUrl(url)}' is not supported. ${accepted}`
    })
  )
}

/**
 * Options for the PostgreSQL pool.
 *
 * @category models
 */
export interface Options {
  /** Maximum PostgreSQL connections in the pool (default 10). */
  readonly maxConnections?: number | undefined
}

/**
 * The database layer for a URL: `SqlClient.SqlClient` and `Dialect`.
 *
 * @category layers
 */
export const layer = (
  url: string,
  options: Options = {}
): Layer.Layer<SqlClient.SqlClient | Dialect, InvalidDatabaseUrl | SqlError.SqlError> =>
  Layer.unwrap(Effect.map(parseUrl(url), (target) => layerFor(target, options)))

/**
 * The database layer for an already parsed target.
 *
 * @category layers
 */
export const layerFor = (
  target: Target,
  options: Options = {}
): Layer.Layer<SqlClient.SqlClient | Dialect, SqlError.SqlError> =>
  target._tag === "sqlite"
    ? Layer.merge(SqliteClient.layer({ filename: target.filename }), Layer.succeed(Dialect, "sqlite"))
    : Layer.merge(
      PgClient.layer({ url: Redacted.make(target.url), maxConnections: options.maxConnections ?? 10 }),
      Layer.succeed(Dialect, "pg")
    )
