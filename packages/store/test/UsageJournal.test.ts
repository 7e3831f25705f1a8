/**
 * The usage journal: what the database cannot take is kept on disk and
 * written once when it answers, by this writer or the next one started on the
 * same directory; nothing is lost at a shutdown during an outage, and nothing
 * is written twice. On SQLite always; the outage cases on PostgreSQL, through
 * a proxy that cuts the database off (MODELGATE_TEST_POSTGRES).
 */
import { assert, describe, it, layer } from "@effect/vitest"
import type { UsageLog } from "@modelgate/core"
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { SqlClient } from "effect/sql"
import { spawn, spawnSync } from "node:child_process"
import { appendFileSync, copyFileSync, existsSync, mkdtempSync, readdirSync, renameSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { basename, join } from "node:path"
import { Accounts } from "../src/Accounts.ts"
import * as Database from "../src/Database.ts"
import { migrate } from "../src/Migrations.ts"
import * as Secrets from "../src/Secrets.ts"
import * as UsageJournal from "../src/UsageJournal.ts"
import { UsageWriter } from "../src/UsageWriter.ts"
import { Users } from "../src/Users.ts"
import { databaseLayer, makePostgres, makeSqlite, postgresUrl } from "./harness.ts"
import { type PgProxy, startPgProxy, targetOf } from "./support/PgProxy.ts"

const record = (userId: string, requestId: string, costNanos: bigint): UsageLog.UsageRecord => ({
  createdAt: 1_700_000_000_000,
  requestId,
  userId,
  keyId: "key-1",
  model: "m",
  upstreamModel: "m",
  channel: "c",
  dialectIn: "openai",
  dialectOut: "gemini",
  stream: true,
  promptTokens: 10,
  completionTokens: 20,
  cachedTokens: 3,
  usageReported: false,
  costNanos,
  latencyMs: 5,
  ttfbMs: 2,
  status: 200,
  errorCode: null,
  attempts: 2,
  attemptLog: [
    { channel: "a", keyHint: "sk-…1234", status: 502, errorCode: "UpstreamUnavailable", durationMs: 3 },
    { channel: "c", keyHint: "sk-…5678", status: 200, errorCode: null, durationMs: 2 }
  ]
})

/** `n` calls of `userId`: a usage record and a charge (taken from the balance: no lease) each. */
const calls = (userId: string, prefix: string, n: number, costNanos: bigint): Array<UsageJournal.Entry> =>
  Array.from({ length: n }, (_, i) => [
    { _tag: "Usage" as const, record: record(userId, `${prefix}-${i}`, costNanos) },
    {
      _tag: "Charge" as const,
      charge: {
        leaseId: null,
        userId,
        keyId: "key-1",
        requestId: `${prefix}-${i}`,
        chargedNanos: costNanos,
        shortfallNanos: 0n,
        at: 1_700_000_000_000
      }
    }
  ]).flat()

/** Queues an entry as the gateway would. */
const enqueue = (writer: UsageWriter["Service"], entry: UsageJournal.Entry): Effect.Effect<void> => {
  switch (entry._tag) {
    case "Usage":
      return writer.record(entry.record)
    case "Charge":
      return writer.charge(entry.charge)
    case "Release":
      return writer.releaseLease(entry.leaseId)
  }
}

const userWith = Effect.fnUntraced(function*(balance: bigint) {
  const user = yield* (yield* Users).create({ name: `u${Math.random().toString(36).slice(2, 12)}` })
  yield* (yield* Accounts).topUp(user.id, balance, "test", "tester")
  return user.id
})

const tempDir = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "modelgate-journal-"))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

/** A writer with a journal in `dir`, in its own scope (closed by `close`, which runs the last flush). */
const writerIn = Effect.fnUntraced(
  function*(
    dir: string,
    name: string,
    options: {
      readonly shutdownRetryMs?: number
      readonly flushIntervalMs?: number
      readonly maxMemoryEntries?: number
    } = {}
  ) {
    const scope = yield* Scope.make()
    const writer = yield* Layer.buildWithScope(
      UsageWriter.layerWith({
        flushIntervalMs: options.flushIntervalMs ?? 3_600_000,
        journal: { dir, name },
        shutdownRetryMs: options.shutdownRetryMs,
        maxMemoryEntries: options.maxMemoryEntries
      }),
      scope
    ).pipe(Effect.map((context) => Context.get(context, UsageWriter)))
    return { writer, close: Scope.close(scope, Exit.void) }
  }
)

/** What the database holds of a user: records, charges, and whether the balance equals the ledger. */
const written = Effect.fnUntraced(function*(userId: string) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`SELECT u.balance_nanos AS balance,
      (SELECT COALESCE(SUM(amount_nanos), 0) FROM ledger WHERE user_id = u.id) AS ledger,
      (SELECT COUNT(*) FROM usage_records WHERE user_id = u.id) AS records,
      (SELECT COUNT(*) FROM ledger WHERE user_id = u.id AND kind = 'charge') AS charges
    FROM users u WHERE u.id = ${userId}`
  const row = rows[0]!
  return {
    balance: BigInt(row.balance as bigint),
    ledger: BigInt(row.ledger as bigint),
    records: Number(row.records),
    charges: Number(row.charges)
  }
})

const base = (db: Layer.Layer<SqlClient.SqlClient | Database.Dialect>) =>
  Layer.mergeAll(Users.layer, Accounts.layer).pipe(
    Layer.provideMerge(Secrets.layer({ secret: Redacted.make("test secret of sufficient length") }).pipe(Layer.orDie)),
    Layer.provideMerge(Layer.effectDiscard(migrate).pipe(Layer.provideMerge(db)))
  )

describe("UsageJournal", () => {
  it.effect("round-trips every kind of entry, exactly (bigints, attempts, nulls, cache writes and notes), and skips a line a crash cut short", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const journal = UsageJournal.make(dir, "node a/1", 42)
      assert.match(journal.path, new RegExp(`usage-node_a_1-42-${process.pid}\\.jsonl$`))
      const entries: Array<UsageJournal.Entry> = [
        ...calls("usr_1", "req", 1, 123_456_789_012_345n),
        { _tag: "Release", leaseId: "lea_1" },
        // A coding agent's call: the Responses dialect, cache writes and a note of what a translation left out.
        {
          _tag: "Usage",
          record: {
            ...record("usr_1", "req-agent", 7n),
            dialectIn: "responses",
            dialectOut: "anthropic",
            cacheWriteTokens: 4,
            note: "tools: web_search left out"
          }
        },
        {
          _tag: "Charge",
          charge: {
            leaseId: "lea_2",
            userId: "usr_1",
            keyId: "k",
            requestId: "r",
            chargedNanos: 0n,
            shortfallNanos: 9n,
            at: 5
          }
        }
      ]
      yield* journal.append(entries.slice(0, 2))
      yield* journal.append(entries.slice(2))
      appendFileSync(journal.path, "{\"_tag\":\"Usage\",\"record\":{\"createdAt\":")
      const read = yield* journal.read
      assert.deepStrictEqual(read, { entries, unreadable: 1 })
      yield* journal.remove
      assert.isFalse(existsSync(journal.path))
    }))
})

describe("the writer's journal on SQLite", () => {
  layer(
    Layer.unwrap(Effect.map(
      Effect.acquireRelease(Effect.promise(makeSqlite), (db) => Effect.promise(db.cleanup)),
      (db) => base(databaseLayer(db))
    )),
    { excludeTestServices: true }
  )((it) => {
    it.effect("entries an earlier run left are written by the next writer on the directory, once, even from two copies", () =>
      Effect.gen(function*() {
        const dir = yield* tempDir
        const user = yield* userWith(1_000_000n)
        const left = UsageJournal.make(dir, "node-gone", 1)
        yield* left.append(calls(user, "gone", 5, 1_000n))
        // A copy, as a crash between taking over a file and removing it would leave.
        copyFileSync(left.path, join(dir, `usage-node-gone-2-${spawnSync(process.execPath, ["-e", ""]).pid}.jsonl`))
        // Another process that runs on this directory keeps its own journal.
        const alive = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"])
        yield* Effect.addFinalizer(() => Effect.sync(() => alive.kill()))
        const live = UsageJournal.make(dir, "node-running", 3)
        yield* live.append(calls(user, "live", 1, 1_000n))
        const livePath = live.path.replace(`-${process.pid}.jsonl`, `-${alive.pid}.jsonl`)
        renameSync(live.path, livePath)
        const { writer, close } = yield* writerIn(dir, "node-new")
        assert.strictEqual(yield* writer.pending, 0, "written as the writer starts")
        assert.deepStrictEqual(yield* written(user), {
          balance: 1_000_000n - 5_000n,
          ledger: 1_000_000n - 5_000n,
          records: 5,
          charges: 5
        })
        assert.deepStrictEqual(
          readdirSync(dir),
          [basename(livePath)],
          "the files left behind are gone; the running process's is not touched"
        )
        yield* close
      }))
  })
})

class Proxy extends Context.Service<Proxy, PgProxy>()("test/UsageJournal/Proxy") {}

describe.skipIf(postgresUrl === undefined)(
  "the writer's journal in a PostgreSQL outage (set MODELGATE_TEST_POSTGRES to run)",
  () => {
    layer(
      Layer.unwrap(Effect.gen(function*() {
        const db = yield* Effect.acquireRelease(
          Effect.promise(() => makePostgres(postgresUrl!)),
          (db) => Effect.promise(db.cleanup)
        )
        const proxy = yield* Effect.acquireRelease(
          Effect.promise(() => startPgProxy(targetOf(db.url))),
          (proxy) => Effect.promise(proxy.close)
        )
        return base(Database.layer(proxy.urlFor(db.url), { maxConnections: 4 }).pipe(Layer.orDie)).pipe(
          Layer.provideMerge(Layer.succeed(Proxy, proxy))
        )
      })),
      { excludeTestServices: true, timeout: "120 seconds" }
    )((it) => {
      it.effect("a shutdown during an outage retries for shutdownRetryMs, keeps the rest in the journal, and the next start writes it once", () =>
        Effect.gen(function*() {
          const proxy = yield* Proxy
          const dir = yield* tempDir
          const user = yield* userWith(1_000_000n)
          const { writer, close } = yield* writerIn(dir, "node-a", { shutdownRetryMs: 600 })
          for (const entry of calls(user, "down", 7, 1_000n)) yield* enqueue(writer, entry)
          proxy.setDown(true)
          const started = Date.now()
          yield* close
          assert.isAtLeast(Date.now() - started, 500, "the last flush kept trying for the grace period")
          const files = readdirSync(dir)
          assert.strictEqual(files.length, 1)
          assert.strictEqual((yield* UsageJournal.read(join(dir, files[0]!))).entries.length, 14)
          proxy.setDown(false)
          assert.deepStrictEqual((yield* written(user)).records, 0)
          const next = yield* writerIn(dir, "node-a")
          assert.deepStrictEqual(yield* written(user), {
            balance: 1_000_000n - 7_000n,
            ledger: 1_000_000n - 7_000n,
            records: 7,
            charges: 7
          })
          yield* next.close
        }))

      it.effect("memory reaching the admission bound moves what is queued to the journal at once, not at the next tick", () =>
        Effect.gen(function*() {
          const proxy = yield* Proxy
          const dir = yield* tempDir
          const user = yield* userWith(1_000_000n)
          // An hour between ticks: only the bound itself can start the move.
          const { writer, close } = yield* writerIn(dir, "node-c", { maxMemoryEntries: 20 })
          proxy.setDown(true)
          // 9 calls, 18 entries: 90% of 20, where priced calls stop being admitted.
          for (const entry of calls(user, "bound", 9, 1_000n)) yield* enqueue(writer, entry)
          for (let i = 0; i < 250 && !writer.admitting(); i++) yield* Effect.sleep(20)
          const state = yield* writer.state
          assert.isTrue(state.admitting, "admitting again: the queue went to the journal, which works")
          assert.strictEqual(state.memoryEntries, 0)
          assert.isFalse(state.journalFailing)
          assert.strictEqual(yield* writer.pending, 18, "every entry is on disk, waiting for the database")
          proxy.setDown(false)
          yield* writer.flush
          assert.deepStrictEqual(yield* written(user), {
            balance: 1_000_000n - 9_000n,
            ledger: 1_000_000n - 9_000n,
            records: 9,
            charges: 9
          })
          yield* close
        }))

      it.effect("during an outage what is queued moves to the journal (a crash loses none of it), and is written once when the database is back", () =>
        Effect.gen(function*() {
          const proxy = yield* Proxy
          const dir = yield* tempDir
          const user = yield* userWith(1_000_000n)
          const { writer, close } = yield* writerIn(dir, "node-b", { flushIntervalMs: 20 })
          proxy.setDown(true)
          for (const entry of calls(user, "spill", 4, 1_000n)) yield* enqueue(writer, entry)
          // A tick fails, and the queue goes to disk.
          for (let i = 0; i < 100 && readdirSync(dir).length === 0; i++) yield* Effect.sleep(20)
          const path = join(dir, readdirSync(dir)[0]!)
          for (let i = 0; i < 100 && (yield* UsageJournal.read(path)).entries.length < 8; i++) yield* Effect.sleep(20)
          assert.strictEqual((yield* UsageJournal.read(path)).entries.length, 8, "every queued entry is on disk")
          assert.strictEqual(yield* writer.pending, 8)
          proxy.setDown(false)
          for (let i = 0; i < 200 && (yield* writer.pending) > 0; i++) yield* Effect.sleep(20)
          assert.deepStrictEqual(yield* written(user), {
            balance: 1_000_000n - 4_000n,
            ledger: 1_000_000n - 4_000n,
            records: 4,
            charges: 4
          })
          assert.isFalse(existsSync(path), "the journal is removed once written")
          yield* close
        }))
    })
  }
)
