/**
 * A database that stops answering without an error (a frozen server, a
 * network that swallows every byte): every wait of the store has a bound.
 * Through an in-test TCP proxy that swallows bytes between the store and
 * PostgreSQL (MODELGATE_TEST_POSTGRES).
 */
import { Effect, Exit, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import * as Database from "../src/Database.ts"
import { migrate } from "../src/Migrations.ts"
import { UsageWriter } from "../src/UsageWriter.ts"
import { makePostgres, postgresUrl, type TestDatabase } from "./harness.ts"
import { type PgProxy, startPgProxy, targetOf } from "./support/PgProxy.ts"
import { build, record } from "./support/Writers.ts"

const run = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>, sql: SqlClient.SqlClient) =>
  Effect.runPromise(Effect.provideService(effect, SqlClient.SqlClient, sql))

const timed = async <A>(work: () => Promise<A>): Promise<{ readonly ms: number; readonly result: A }> => {
  const started = Date.now()
  const result = await work()
  return { ms: Date.now() - started, result }
}

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms))

const until = async (what: string, check: () => Promise<boolean> | boolean, withinMs: number) => {
  const deadline = Date.now() + withinMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${withinMs} ms`)
    await sleep(25)
  }
}

const journalEntries = (dir: string): number => {
  let count = 0
  for (const name of readdirSync(dir)) {
    count += readFileSync(join(dir, name), "utf8").split("\n").filter((line) => line.length > 0).length
  }
  return count
}

describe.skipIf(postgresUrl === undefined)(
  "a PostgreSQL that swallows every byte (set MODELGATE_TEST_POSTGRES to run)",
  () => {
    let db: TestDatabase
    let proxy: PgProxy
    const dirs: Array<string> = []
    beforeAll(async () => {
      db = await makePostgres(postgresUrl!)
      proxy = await startPgProxy(targetOf(db.url))
      const direct = await build(Database.layer(db.url, { maxConnections: 1 }).pipe(Layer.orDie), SqlClient.SqlClient)
      await run(migrate, direct.service)
      await direct.close()
    })
    afterAll(async () => {
      await proxy.close()
      await db.cleanup()
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
    })
    const journalDir = () => {
      const dir = mkdtempSync(join(tmpdir(), "modelgate-silent-"))
      dirs.push(dir)
      return dir
    }

    it("the server cancels a statement that runs longer than the statement timeout", async () => {
      const client = await build(
        Database.layer(db.url, { maxConnections: 1, statementTimeoutMs: 300 }).pipe(Layer.orDie),
        SqlClient.SqlClient
      )
      try {
        const { ms, result } = await timed(() =>
          run(Effect.exit(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT pg_sleep(3)`)), client.service)
        )
        assert.isTrue(Exit.isFailure(result), "the statement is cancelled")
        assert.isBelow(ms, 2_000, `cancelled after ${ms} ms`)
      } finally {
        await client.close()
      }
    }, 20_000)

    it("a connection that hears nothing back is cut within the no-answer bound and replaced", async () => {
      const client = await build(
        Database.layer(proxy.urlFor(db.url), { maxConnections: 2, statementTimeoutMs: 500, noAnswerMs: 1_000 }).pipe(
          Layer.orDie
        ),
        SqlClient.SqlClient
      )
      const select = Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT 1 AS one`)
      try {
        await run(select, client.service)
        proxy.swallow(true)
        const { ms, result } = await timed(() => run(Effect.exit(select), client.service))
        assert.isTrue(Exit.isFailure(result), "the query fails")
        assert.isAtLeast(ms, 900)
        assert.isBelow(ms, 2_500, `failed after ${ms} ms`)
        proxy.swallow(false)
        const healed = await timed(() => run(select, client.service))
        assert.isBelow(healed.ms, 2_000, `answered again after ${healed.ms} ms`)
      } finally {
        proxy.swallow(false)
        await client.close()
      }
    }, 30_000)

    it(
      "the usage writer's watchdog journals a batch that does not finish, then writes it when the database answers",
      async () => {
        const dir = journalDir()
        // The connection itself is not cut for a minute: only the writer's own bound is at work.
        const database = Database.layer(proxy.urlFor(db.url), { maxConnections: 4, noAnswerMs: 60_000 }).pipe(
          Layer.orDie
        )
        const client = await build(database, SqlClient.SqlClient)
        const writer = await build(
          UsageWriter.layerWith({ flushIntervalMs: 50, flushTimeoutMs: 500, journal: { dir, name: "silent" } }).pipe(
            Layer.provide(Layer.succeed(SqlClient.SqlClient, client.service))
          ),
          UsageWriter
        )
        const count = Effect.flatMap(
          SqlClient.SqlClient,
          (sql) => sql<{ n: unknown }>`SELECT COUNT(*) AS n FROM usage_records WHERE request_id LIKE 'wd-%'`
        )
        try {
          proxy.swallow(true)
          const started = Date.now()
          for (let i = 0; i < 10; i++) await Effect.runPromise(writer.service.record(record(`wd-${i}`)))
          await until("the batch is journaled", () => journalEntries(dir) >= 10, 3_000)
          const journaledMs = Date.now() - started
          assert.isAtLeast(writer.service.metrics.flushFailures.series[0]?.value ?? 0, 1, "counted as failed")
          proxy.swallow(false)
          await until(
            "the journal is written to the database",
            // A connection opened during the silence lost its startup: it fails once (5 s connect timeout).
            async () => Number((await run(count, client.service).catch(() => [{ n: -1 }]))[0]!.n) === 10,
            15_000
          )
          assert.strictEqual(await Effect.runPromise(writer.service.pending), 0)
          console.log(`writer watchdog: journaled ${journaledMs} ms after a silent database took the batch`)
        } finally {
          proxy.swallow(false)
          await writer.close()
          await client.close()
        }
      },
      60_000
    )

    it(
      "a shutdown during the silence ends within its retry time plus the flush bound, everything journaled",
      async () => {
        const dir = journalDir()
        const database = Database.layer(proxy.urlFor(db.url), { maxConnections: 4, noAnswerMs: 60_000 }).pipe(
          Layer.orDie
        )
        const node = await build(
          UsageWriter.layerWith({
            flushIntervalMs: 3_600_000,
            flushTimeoutMs: 500,
            shutdownRetryMs: 1_000,
            journal: { dir, name: "shutdown" }
          }).pipe(Layer.provide(database)),
          UsageWriter
        )
        for (let i = 0; i < 7; i++) await Effect.runPromise(node.service.record(record(`sd-${i}`)))
        proxy.swallow(true)
        try {
          const { ms } = await timed(node.close)
          assert.isBelow(ms, 1_000 + 500 + 1_000, `shut down in ${ms} ms`)
          assert.strictEqual(journalEntries(dir), 7, "what the database did not take is journaled")
          console.log(`shutdown with a silent database: ${ms} ms (retry 1,000 ms, flush bound 500 ms)`)
        } finally {
          proxy.swallow(false)
        }
      },
      30_000
    )
  }
)
