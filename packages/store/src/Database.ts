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
 * Every PostgreSQL statement is bounded twice: the server cancels it after
 * `statementTimeoutMs` (its `statement_timeout`, sent with each connection's
 * startup), and a connection that sent something and heard nothing back for
 * `noAnswerMs` (a frozen server, a network that swallows bytes, where no error
 * ever comes) is cut, which fails what it carried and makes the pool open a
 * new one. TCP connections also send keepalive probes after `keepAliveSeconds`
 * idle, so a peer that vanished is noticed without a query. `unbounded` lifts
 * both bounds for a long task of the process's own (migrations).
 *
 * @since 0.1.0
 */
import type * as SqlPg from "@effect/sql-pg"
import { Context, Effect, Layer, Redacted, Schema } from "effect"
import { type SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql"
import { connect } from "node:net"
import { Duplex } from "node:stream"
import * as SqliteClient from "./SqliteClient.ts"

/** `@effect/sql-pg` (and `pg`), loaded when a PostgreSQL database is configured. */
const loadPg: Effect.Effect<typeof SqlPg> = Effect.promise(() => import("@effect/sql-pg"))

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
 * Options for the PostgreSQL pool, and SQLite's busy timeout.
 *
 * @category models
 */
export interface Options {
  /** Maximum PostgreSQL connections in the pool (default 10). */
  readonly maxConnections?: number | undefined
  /** PostgreSQL's `statement_timeout` for every statement (default 15,000 ms; 0: none). */
  readonly statementTimeoutMs?: number | undefined
  /**
   * A connection waiting this long for any byte of an answer is cut (default: the
   * statement timeout plus 5,000 ms, or 20,000 ms without one).
   */
  readonly noAnswerMs?: number | undefined
  /** Idle seconds before TCP keepalive probes start (default 10). */
  readonly keepAliveSeconds?: number | undefined
  /**
   * SQLite: how long a statement waits for a lock another connection or process
   * holds before it fails with `SQLITE_BUSY` (its `busy_timeout`; default 5,000 ms).
   * node:sqlite waits synchronously, so the whole process waits with it.
   */
  readonly busyTimeoutMs?: number | undefined
}

/** Default SQLite busy timeout. @category constants */
export const DEFAULT_BUSY_TIMEOUT_MS = 5_000

/** Default PostgreSQL statement timeout. @category constants */
export const DEFAULT_STATEMENT_TIMEOUT_MS = 15_000

/** What the no-answer bound adds to the statement timeout, so the server's own cancel comes first. @category constants */
export const NO_ANSWER_MARGIN_MS = 5_000

/** Default idle time before TCP keepalive probes. @category constants */
export const DEFAULT_KEEPALIVE_SECONDS = 10

/**
 * Lifts the database's bounds around a long task of the process's own (a
 * migration): `statement_timeout` is set per transaction by the task, and
 * connections are not cut for a slow answer while any such task runs.
 *
 * @category services
 */
export class Bounds extends Context.Service<Bounds, {
  readonly unbounded: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /**
   * The process is shutting down: from now on a connection is cut after
   * `SHUTDOWN_NO_ANSWER_MS` without an answer, so the shutdown never waits on
   * a silent database longer than that for each step that queries it.
   */
  readonly closing: Effect.Effect<void>
  /** Connections cut because they did not answer in time (since the start). */
  readonly cut: () => number
}>()("modelgate/store/Database/Bounds") {}

/** The no-answer bound once a shutdown has started. @category constants */
export const SHUTDOWN_NO_ANSWER_MS = 1_000

/**
 * A TCP connection to PostgreSQL with keepalive, as a stream that counts the
 * bytes going each way (TLS, when the server offers it, runs over this stream,
 * so the count is of what crosses the network), cut when it sent something
 * and heard nothing back for `noAnswerMs`.
 */
const watchedSocket = (
  host: string,
  port: number,
  options: {
    readonly keepAliveSeconds: number
    /** The bound now, or undefined while it is lifted. */
    readonly noAnswerMs: () => number | undefined
    readonly onCut: () => void
    readonly tickMs: number
  }
): Duplex => {
  const socket = connect({
    host,
    port,
    noDelay: true,
    keepAlive: true,
    keepAliveInitialDelay: options.keepAliveSeconds * 1000
  })
  // One statement at a time per connection (no pipelining): a byte read answers everything
  // written before it, and the clock runs from the first write after the last read.
  let unansweredSince: number | undefined
  const stream = new Duplex({
    write(chunk: Buffer, _encoding, done) {
      unansweredSince ??= Date.now()
      socket.write(chunk, done)
    },
    final(done) {
      socket.end(done)
    },
    read() {
      socket.resume()
    },
    destroy(error, done) {
      clearInterval(timer)
      socket.destroy()
      done(error)
    }
  })
  socket.on("data", (chunk: Buffer) => {
    unansweredSince = undefined
    if (!stream.push(chunk)) socket.pause()
  })
  socket.on("end", () => stream.push(null))
  socket.on("error", (error) => stream.destroy(error))
  socket.on("close", () => stream.destroy())
  const timer = setInterval(() => {
    if (unansweredSince === undefined) return
    const bound = options.noAnswerMs()
    if (bound === undefined) {
      unansweredSince = Date.now()
      return
    }
    if (Date.now() - unansweredSince >= bound) {
      clearInterval(timer)
      options.onCut()
      stream.destroy(new Error(`PostgreSQL at ${host}:${port} did not answer within ${bound} ms`))
    }
  }, options.tickMs)
  timer.unref()
  return stream
}

/**
 * The database layer for a URL: `SqlClient.SqlClient` and `Dialect`.
 *
 * @category layers
 */
export const layer = (
  url: string,
  options: Options = {}
): Layer.Layer<SqlClient.SqlClient | Dialect | Bounds, InvalidDatabaseUrl | SqlError.SqlError> =>
  Layer.unwrap(Effect.map(parseUrl(url), (target) => layerFor(target, options)))

/**
 * The database layer for an already parsed target.
 *
 * @category layers
 */
export const layerFor = (
  target: Target,
  options: Options = {}
): Layer.Layer<SqlClient.SqlClient | Dialect | Bounds, SqlError.SqlError> => {
  let unboundedTasks = 0
  let cut = 0
  let closing = false
  const bounds = Layer.succeed(Bounds, {
    closing: Effect.sync(() => {
      closing = true
    }),
    unbounded: (self) =>
      Effect.acquireUseRelease(
        Effect.sync(() => unboundedTasks++),
        () => self,
        () => Effect.sync(() => unboundedTasks--)
      ),
    cut: () => cut
  })
  if (target._tag === "sqlite") {
    return Layer.mergeAll(
      SqliteClient.layer({
        filename: target.filename,
        busyTimeoutMs: Math.max(0, options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS)
      }),
      Layer.succeed(Dialect, "sqlite"),
      bounds
    )
  }
  const statementTimeoutMs = Math.max(0, options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS)
  const noAnswerMs = Math.max(
    1,
    options.noAnswerMs ?? (statementTimeoutMs > 0 ? statementTimeoutMs + NO_ANSWER_MARGIN_MS : 20_000)
  )
  const keepAliveSeconds = Math.max(1, options.keepAliveSeconds ?? DEFAULT_KEEPALIVE_SECONDS)
  const parsed = new URL(target.url)
  const socketHost = parsed.searchParams.get("host") ?? decodeURIComponent(parsed.hostname)
  // A Unix socket (a host that is a path) has no network to lose: the client's own connection is used.
  const tcp = socketHost !== "" && !socketHost.startsWith("/")
  const host = socketHost.replace(/^\[(.*)\]$/, "$1")
  const port = Number(parsed.searchParams.get("port") ?? (parsed.port || "5432"))
  return Layer.mergeAll(
    // Loaded when a PostgreSQL database is configured: a gateway on SQLite does not keep its modules in memory.
    Layer.unwrap(Effect.map(loadPg, ({ PgClient }) =>
      PgClient.layer({
        url: Redacted.make(target.url),
        maxConnections: options.maxConnections ?? 10,
        ...(statementTimeoutMs > 0 ? { startupParameters: { statement_timeout: String(statementTimeoutMs) } } : {}),
        ...(tcp
          ? {
            stream: () =>
              watchedSocket(host, port, {
                keepAliveSeconds,
                noAnswerMs: () =>
                  unboundedTasks > 0 ? undefined : closing ? Math.min(noAnswerMs, SHUTDOWN_NO_ANSWER_MS) : noAnswerMs,
                onCut: () => cut++,
                tickMs: Math.max(10, Math.min(250, Math.floor(Math.min(noAnswerMs, SHUTDOWN_NO_ANSWER_MS) / 4)))
              })
          }
          : { keepAlive: `${keepAliveSeconds} seconds` })
      }))),
    Layer.succeed(Dialect, "pg"),
    bounds
  )
}
