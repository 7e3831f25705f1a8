/**
 * An Effect `SqlClient` on Node 24's built-in `node:sqlite` (`DatabaseSync`).
 *
 * Why this module exists: there is no maintained `@effect/sql-sqlite-node` for
 * effect 4.1 (its 4.x line is stuck at old betas that import the removed
 * `effect/unstable/*` paths), so modelgate carries this small driver. It is
 * deliberately minimal:
 *
 * - one connection shared through a semaphore (SQLite allows one writer; the
 *   single connection also makes every transaction serial, which is what the
 *   money code relies on in the embedded mode);
 * - `PRAGMA journal_mode=WAL`, `synchronous=NORMAL`, `busy_timeout` and
 *   `foreign_keys=ON` on open;
 * - integers are read as `bigint` by default (`readBigInts`), so BIGINT money
 *   columns in nano-dollars always come back exact; callers convert small
 *   integer columns to `number` themselves;
 * - a bounded least-recently-used cache of prepared statements;
 * - `layer({ filename })` creates the file (mode 0600) and its parent
 *   directory (0700) when they do not exist;
 * - `executeStream` reads the whole result first (node:sqlite's iterator would
 *   hold the single connection across fiber yields); fine for our result sizes;
 * - the write-ahead log is checkpointed by a worker thread with a connection of
 *   its own (`checkpointer`), not by the connection that commits: SQLite runs
 *   an automatic checkpoint inside the COMMIT that crosses 1,000 pages, which
 *   blocked the event loop for 8 to 15 ms every couple of seconds under load,
 *   every call in flight waiting on it. The thread starts once the log holds
 *   `checkpointStartBytes` (1 MiB): until then nothing needs copying back, and
 *   an idle gateway does not carry the thread's 11 MB.
 *
 * `node:sqlite` is synchronous: every statement blocks the event loop for its
 * duration. Keep it off the per-request path (cache in memory, batch writes).
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Semaphore, Stream } from "effect"
import { Reactivity } from "effect/reactivity"
import { SqlClient, SqlError, Statement } from "effect/sql"
import type { SqlConnection } from "effect/sql"
import { closeSync, mkdirSync, openSync, statSync } from "node:fs"
import { dirname, resolve } from "node:path"
import { DatabaseSync, type StatementSync } from "node:sqlite"
import { Worker } from "node:worker_threads"

/**
 * Options of the SQLite client.
 *
 * @category models
 */
export interface SqliteClientConfig {
  /** Path of the database file, or `:memory:`. Parent directories are created. */
  readonly filename: string
  /** Milliseconds a statement waits for a lock held by another process (default 5000). */
  readonly busyTimeoutMs?: number | undefined
  /** Read INTEGER columns as `bigint` (default `true`; required for exact money columns). */
  readonly readBigInts?: boolean | undefined
  /** How many prepared statements to keep (default 256). */
  readonly statementCacheSize?: number | undefined
  /** Extra span attributes for every query. */
  readonly spanAttributes?: Record<string, unknown> | undefined
  /** How often the worker thread checkpoints the write-ahead log, in milliseconds (default 500). */
  readonly checkpointIntervalMs?: number | undefined
  /**
   * How large the write-ahead log grows before the checkpointing thread starts, in bytes (default 1 MiB).
   * The thread costs about 11 MB of memory; a gateway that has written little does not need it yet.
   */
  readonly checkpointStartBytes?: number | undefined
}

/**
 * The SQLite client: an effect/sql `SqlClient` plus the open database's file name.
 *
 * @category models
 */
export interface SqliteClient extends SqlClient.SqlClient {
  readonly filename: string
}

/**
 * The SQLite client service (also provided as `SqlClient.SqlClient` by `layer`).
 *
 * @category services
 */
export const SqliteClient = Context.Service<SqliteClient>("modelgate/store/SqliteClient")

const classify = (cause: unknown, message: string, operation: string): SqlError.SqlError => {
  // node:sqlite reports the extended result code as `errcode`; effect's classifier reads `errno`.
  if (typeof cause === "object" && cause !== null && "errcode" in cause && !("errno" in cause)) {
    const errcode = (cause as { readonly errcode: unknown }).errcode
    if (typeof errcode === "number") Object.assign(cause, { errno: errcode })
  }
  return new SqlError.SqlError({ reason: SqlError.classifySqliteError(cause, { message, operation }) })
}

/** A least-recently-used map of prepared statements, keyed by SQL text. */
const makeStatementCache = (db: DatabaseSync, capacity: number) => {
  const cache = new Map<string, StatementSync>()
  return (sql: string): StatementSync => {
    const hit = cache.get(sql)
    if (hit !== undefined) {
      // Re-insert to mark as most recently used.
      cache.delete(sql)
      cache.set(sql, hit)
      return hit
    }
    const statement = db.prepare(sql)
    cache.set(sql, statement)
    if (cache.size > capacity) {
      const oldest = cache.keys().next().value
      if (oldest !== undefined) cache.delete(oldest)
    }
    return statement
  }
}

/** The checkpointing thread's program: its own connection, a passive checkpoint every `interval` ms. */
const CHECKPOINTER = `
const { workerData } = process.getBuiltinModule("node:worker_threads")
const { DatabaseSync } = process.getBuiltinModule("node:sqlite")
const db = new DatabaseSync(workerData.filename, { timeout: 0 })
setInterval(() => {
  try {
    db.exec("PRAGMA wal_checkpoint(PASSIVE)")
  } catch {
    // Busy or locked: the next tick tries again.
  }
}, workerData.interval)
`

/**
 * The size of the write-ahead log file, in bytes; `Infinity` when it cannot be
 * read (so the checkpointing thread starts rather than the log going unwatched).
 */
const logBytes = (filename: string): number => {
  try {
    return statSync(`${filename}-wal`, { throwIfNoEntry: false })?.size ?? 0
  } catch {
    return Number.POSITIVE_INFINITY
  }
}

/**
 * Moves write-ahead-log checkpoints off the event loop: the connection that
 * commits stops checkpointing (`wal_autocheckpoint = 0`) and a worker thread
 * runs a passive checkpoint (it never waits for, or blocks, a writer) every
 * `interval` ms. The thread starts once the log file holds `startBytes`
 * (looked at every `interval` ms until then): a gateway that has written
 * little (one at idle, or after a few calls) does not carry it, and the log
 * stays below `startBytes` plus what one interval writes. Should the thread
 * fail, the connection checkpoints itself again, so the log never grows
 * without bound. The thread ends with the scope.
 */
const checkpointer = (db: DatabaseSync, filename: string, interval: number, startBytes: number) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      db.exec("PRAGMA wal_autocheckpoint = 0")
      const state: { worker: Worker | undefined; watch: ReturnType<typeof setInterval> | undefined } = {
        worker: undefined,
        watch: undefined
      }
      const fallBack = () => {
        if (db.isOpen) db.exec("PRAGMA wal_autocheckpoint = 1000")
      }
      const start = () => {
        clearInterval(state.watch)
        state.watch = undefined
        const worker = new Worker(CHECKPOINTER, {
          eval: true,
          workerData: { filename, interval },
          stdout: false,
          stderr: false,
          // The thread allocates next to nothing after its start: a small heap keeps 2 MB off its footprint. Should
          // it ever run out, it exits with an error and the connection checkpoints itself (`fallBack`).
          resourceLimits: { maxYoungGenerationSizeMb: 1, maxOldGenerationSizeMb: 16 }
        })
        worker.unref()
        worker.once("error", fallBack)
        worker.once("exit", (code) => code !== 0 && fallBack())
        state.worker = worker
      }
      if (logBytes(filename) >= startBytes) start()
      else {
        // A thread that cannot start leaves the connection to checkpoint itself, as one that fails does.
        const startOrFallBack = () => {
          try {
            start()
          } catch {
            fallBack()
          }
        }
        state.watch = setInterval(() => logBytes(filename) >= startBytes && startOrFallBack(), interval)
        state.watch.unref()
      }
      return state
    }),
    (state) =>
      Effect.promise(async () => {
        clearInterval(state.watch)
        const worker = state.worker
        if (worker === undefined) return
        worker.removeAllListeners("exit")
        worker.removeAllListeners("error")
        await worker.terminate()
      })
  )

/**
 * Creates the database file (and missing parent directories) readable by this
 * user only: the file 0600, new directories 0700. SQLite gives the `-wal` and
 * `-shm` files it creates beside the database the database file's mode. An
 * existing file is left as it is.
 */
const createPrivately = (path: string): void => {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
  try {
    closeSync(openSync(path, "wx", 0o600))
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error
  }
}

/**
 * Opens the database and builds the client. The database is closed when the
 * scope closes.
 *
 * @category constructors
 */
export const make = Effect.fnUntraced(function*(options: SqliteClientConfig) {
  const filename = options.filename
  const readBigInts = options.readBigInts ?? true
  const db = yield* Effect.try({
    try: () => {
      if (filename !== ":memory:" && filename !== "") createPrivately(resolve(filename))
      const db = new DatabaseSync(filename, {
        readBigInts,
        timeout: options.busyTimeoutMs ?? 5000,
        enableForeignKeyConstraints: true
      })
      db.exec("PRAGMA journal_mode = WAL")
      db.exec("PRAGMA synchronous = NORMAL")
      db.exec(`PRAGMA busy_timeout = ${Math.max(0, Math.trunc(options.busyTimeoutMs ?? 5000))}`)
      db.exec("PRAGMA foreign_keys = ON")
      return db
    },
    catch: (cause) => classify(cause, `Failed to open the SQLite database '${filename}'`, "open")
  })
  yield* Effect.addFinalizer(() => Effect.sync(() => db.isOpen && db.close()))
  if (filename !== ":memory:" && filename !== "") {
    yield* checkpointer(
      db,
      resolve(filename),
      options.checkpointIntervalMs ?? 500,
      options.checkpointStartBytes ?? 1024 * 1024
    )
  }

  const prepare = makeStatementCache(db, options.statementCacheSize ?? 256)

  const run = (statement: StatementSync, params: ReadonlyArray<unknown>, raw: boolean, arrays: boolean) =>
    Effect.try({
      try: (): any => {
        if (statement.columns().length > 0) {
          statement.setReturnArrays(arrays)
          try {
            return statement.all(...(params as Array<any>))
          } finally {
            if (arrays) statement.setReturnArrays(false)
          }
        }
        const result = statement.run(...(params as Array<any>))
        return raw ? { changes: result.changes, lastInsertRowid: result.lastInsertRowid } : []
      },
      catch: (cause) => classify(cause, "Failed to execute statement", "execute")
    })

  const prepared = (sql: string) =>
    Effect.try({
      try: () => prepare(sql),
      catch: (cause) => classify(cause, "Failed to prepare statement", "prepare")
    })
  const unprepared = (sql: string) =>
    Effect.try({
      try: () => db.prepare(sql),
      catch: (cause) => classify(cause, "Failed to prepare statement", "prepare")
    })

  const connection: SqlConnection.Connection = {
    execute: (sql, params, transformRows) => {
      const rows = Effect.flatMap(prepared(sql), (s) => run(s, params, false, false))
      return transformRows ? Effect.map(rows, transformRows) : rows
    },
    executeRaw: (sql, params) => Effect.flatMap(prepared(sql), (s) => run(s, params, true, false)),
    executeValues: (sql, params) => Effect.flatMap(prepared(sql), (s) => run(s, params, false, true)),
    executeValuesUnprepared: (sql, params) => Effect.flatMap(unprepared(sql), (s) => run(s, params, false, true)),
    executeUnprepared: (sql, params, transformRows) => {
      const rows = Effect.flatMap(unprepared(sql), (s) => run(s, params, false, false))
      return transformRows ? Effect.map(rows, transformRows) : rows
    },
    executeStream: (sql, params, transformRows) =>
      Stream.fromIterableEffect(
        Effect.map(
          Effect.flatMap(prepared(sql), (s) => run(s, params, false, false)),
          (rows: ReadonlyArray<any>) => transformRows ? transformRows(rows) : rows
        )
      )
  }

  const semaphore = yield* Semaphore.make(1)
  const acquirers = SqlClient.makeSqliteAcquirers({
    connection: Effect.succeed(connection),
    semaphore,
    isTransaction: () => db.isTransaction
  })

  const client = yield* SqlClient.make({
    acquirer: acquirers.acquirer,
    borrower: acquirers.borrower,
    transactionAcquirer: acquirers.transactionAcquirer,
    onCommitFailure: acquirers.onCommitFailure,
    isTransaction: acquirers.isTransaction,
    compiler: Statement.makeCompilerSqlite(),
    driver: "modelgate-sqlite-node",
    prepareTransactionControls: true,
    spanAttributes: [
      ...(options.spanAttributes ? Object.entries(options.spanAttributes) : []),
      ["db.system.name", "sqlite"]
    ]
  })
  return Object.assign(client, { filename }) as SqliteClient
})

/**
 * A layer providing both `SqliteClient` and the generic `SqlClient.SqlClient`.
 *
 * @category layers
 */
export const layer = (config: SqliteClientConfig): Layer.Layer<SqliteClient | SqlClient.SqlClient, SqlError.SqlError> =>
  Layer.effectContext(
    Effect.map(
      make(config),
      (client) => Context.make(SqliteClient, client).pipe(Context.add(SqlClient.SqlClient, client))
    )
  ).pipe(Layer.provide(Reactivity.layer))
