/**
 * A SQLite statement waits for another process's lock (an operator's
 * `sqlite3` shell, a backup, a `modelgate` command) at most
 * `database_busy_timeout_ms`: node:sqlite waits synchronously, so every call
 * in the process waits with it; past the bound the statement fails (SQLITE_BUSY)
 * and the call gets the database's usual failure instead of hanging.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { DatabaseSync } from "node:sqlite"
import * as Database from "../src/Database.ts"

describe("SQLite's bound on a lock held elsewhere", () => {
  it.live("fails a write after database_busy_timeout_ms while another connection holds the write lock", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "modelgate-busy-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const file = join(dir, "gateway.db")
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const [setting] = yield* sql.unsafe<{ readonly timeout: bigint }>("PRAGMA busy_timeout")
        assert.strictEqual(setting?.timeout, 300n)
        yield* sql.unsafe("CREATE TABLE t (x INTEGER)")
        // Another connection (as another process would) takes the write lock and keeps it.
        const other = new DatabaseSync(file, { timeout: 0 })
        other.exec("BEGIN IMMEDIATE")
        other.exec("INSERT INTO t VALUES (0)")
        const started = Date.now()
        const result = yield* Effect.result(sql.unsafe("INSERT INTO t VALUES (1)"))
        const waited = Date.now() - started
        other.exec("ROLLBACK")
        other.close()
        assert.strictEqual(result._tag, "Failure", "the write failed instead of waiting on")
        // SQLITE_BUSY: "database is locked", which effect/sql classifies as a lock timeout.
        assert.strictEqual(result._tag === "Failure" ? result.failure.reason._tag : undefined, "LockTimeoutError")
        assert.isAtLeast(waited, 250, `waited ${waited} ms`)
        assert.isBelow(waited, 2_000, `waited ${waited} ms`)
        // The lock gone, the same write goes through.
        yield* sql.unsafe("INSERT INTO t VALUES (1)")
      }).pipe(Effect.provide(Database.layer(`sqlite:${file}`, { busyTimeoutMs: 300 })), Effect.orDie)
    }))

  it.live("waits 5 s by default", () =>
    Effect.gen(function*() {
      const [setting] = yield* Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql.unsafe<{ readonly timeout: bigint }>("PRAGMA busy_timeout")
      ).pipe(Effect.provide(Database.layer("sqlite::memory:")), Effect.orDie)
      assert.strictEqual(setting?.timeout, BigInt(Database.DEFAULT_BUSY_TIMEOUT_MS))
      assert.strictEqual(Database.DEFAULT_BUSY_TIMEOUT_MS, 5_000)
    }))
})
