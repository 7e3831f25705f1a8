/**
 * The SQLite database holds balances, hashes and sessions: its files are
 * readable by the gateway's user only, whatever the umask. Its write-ahead
 * log is checkpointed by a thread of its own, never inside a COMMIT, and that
 * thread starts only once the log has grown (an idle gateway does not carry it).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { chmodSync, existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as SqliteClient from "../src/SqliteClient.ts"

const modeOf = (path: string): number => statSync(path).mode & 0o777

/** A database file's place in a directory of its own, removed when the test's scope closes. */
const freshFile = Effect.gen(function*() {
  const dir = mkdtempSync(join(tmpdir(), "modelgate-sqlite-"))
  yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
  return join(dir, "gateway.db")
})

/** 100 rows of 2,000 characters into `t`: about 50 pages of the write-ahead log. */
const HUNDRED_ROWS =
  `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100) INSERT INTO t SELECT hex(randomblob(1000)) FROM n`

describe("SQLite files", () => {
  it.effect("are created 0600 (the database, its -wal and -shm), in a new directory created 0700", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "modelgate-sqlite-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const file = join(dir, "data", "gateway.db")
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql.unsafe("CREATE TABLE t (x INTEGER)")
        yield* sql.unsafe("INSERT INTO t VALUES (1)")
        // Both files exist while the database is open in WAL mode.
        assert.isTrue(existsSync(`${file}-wal`) && existsSync(`${file}-shm`))
        for (const path of [file, `${file}-wal`, `${file}-shm`]) assert.strictEqual(modeOf(path), 0o600, path)
        assert.strictEqual(modeOf(join(dir, "data")), 0o700)
      }).pipe(Effect.provide(SqliteClient.layer({ filename: file })), Effect.orDie)
    }))

  it.effect("leave an existing database file's mode as the operator set it", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "modelgate-sqlite-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const file = join(dir, "existing.db")
      writeFileSync(file, "")
      chmodSync(file, 0o640)
      yield* Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe("CREATE TABLE t (x INTEGER)")).pipe(
        Effect.provide(SqliteClient.layer({ filename: file })),
        Effect.orDie
      )
      assert.strictEqual(modeOf(file), 0o640)
    }))

  it.live("checkpoints the write-ahead log in a worker thread, not in the connection that commits", () =>
    Effect.gen(function*() {
      const file = yield* freshFile
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const [setting] = yield* sql.unsafe<{ readonly wal_autocheckpoint: bigint }>("PRAGMA wal_autocheckpoint")
        assert.strictEqual(setting?.wal_autocheckpoint, 0n, "the committing connection never checkpoints")
        yield* sql.unsafe("CREATE TABLE t (x TEXT)")
        const before = statSync(file).size
        // About 2,000 pages of rows, in commits: only a checkpoint moves them from the log into the file.
        for (let i = 0; i < 40; i++) {
          yield* sql.unsafe(HUNDRED_ROWS)
        }
        for (let i = 0; i < 50 && statSync(file).size <= before; i++) yield* Effect.sleep("100 millis")
        assert.isAbove(statSync(file).size, before + 1_000_000, "the thread copied the log into the database file")
      }).pipe(Effect.provide(SqliteClient.layer({ filename: file, checkpointIntervalMs: 50 })), Effect.orDie)
    }))

  it.live("starts checkpointing only once the log holds checkpointStartBytes", () =>
    Effect.gen(function*() {
      const file = yield* freshFile
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const write = sql.unsafe(HUNDRED_ROWS)
        yield* sql.unsafe("CREATE TABLE t (x TEXT)")
        const before = statSync(file).size
        for (let i = 0; i < 5; i++) yield* write
        // About 1 MB in the log, under the 3 MB at which the thread starts: nothing is copied back.
        yield* Effect.sleep("400 millis")
        assert.isBelow(statSync(`${file}-wal`).size, 3_000_000)
        assert.strictEqual(statSync(file).size, before, "no checkpoint before the log holds 3 MB")
        for (let i = 0; i < 15; i++) yield* write
        for (let i = 0; i < 50 && statSync(file).size <= before; i++) yield* Effect.sleep("100 millis")
        assert.isAbove(statSync(file).size, before + 3_000_000, "the thread, started, copied the log")
      }).pipe(
        Effect.provide(
          SqliteClient.layer({ filename: file, checkpointIntervalMs: 50, checkpointStartBytes: 3_000_000 })
        ),
        Effect.orDie
      )
    }))
})
