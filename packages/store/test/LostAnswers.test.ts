/**
 * A lost COMMIT answer (a TCP reset, a failover, a pooler restart between the
 * server's commit and the client): the client cannot know whether its
 * transaction committed, and tries again. Through a proxy that forwards the
 * COMMIT, drops the answer and cuts the connection, on PostgreSQL
 * (MODELGATE_TEST_POSTGRES).
 */
import { assert, describe, layer } from "@effect/vitest"
import { Accounts as AccountsPort, type UsageLog } from "@modelgate/core"
import { Context, Duration, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { SqlClient } from "effect/sql"
import { Accounts } from "../src/Accounts.ts"
import * as Database from "../src/Database.ts"
import { migrate } from "../src/Migrations.ts"
import * as Purses from "../src/Purses.ts"
import * as Secrets from "../src/Secrets.ts"
import { UsageWriter } from "../src/UsageWriter.ts"
import { Users } from "../src/Users.ts"
import { makePostgres, postgresUrl } from "./harness.ts"
import { type PgProxy, startPgProxy, targetOf } from "./support/PgProxy.ts"

class Proxy extends Context.Service<Proxy, PgProxy>()("test/LostAnswers/Proxy") {}

/** The store's money pieces on a fresh schema, reached through the proxy (itself provided as `Proxy`). */
const proxied = Layer.unwrap(Effect.gen(function*() {
  const db = yield* Effect.acquireRelease(
    Effect.promise(() => makePostgres(postgresUrl!)),
    (db) => Effect.promise(db.cleanup)
  )
  const proxy = yield* Effect.acquireRelease(
    Effect.promise(() => startPgProxy(targetOf(db.url))),
    (proxy) => Effect.promise(proxy.close)
  )
  const database = Layer.effectDiscard(migrate).pipe(
    Layer.provideMerge(Database.layer(proxy.urlFor(db.url), { maxConnections: 4 }).pipe(Layer.orDie))
  )
  return Layer.mergeAll(Users.layer, Accounts.layer, Layer.succeed(Proxy, proxy)).pipe(
    Layer.provideMerge(Secrets.layer({ secret: Redacted.make("test secret of sufficient length") }).pipe(Layer.orDie)),
    Layer.provideMerge(database)
  )
}))

const userWith = Effect.fnUntraced(function*(balance: bigint) {
  const user = yield* (yield* Users).create({ name: `u${Math.random().toString(36).slice(2, 12)}` })
  yield* (yield* Accounts).topUp(user.id, balance, "test", "tester")
  return user.id
})

/** One node's purses over a writer that flushes only when told, in their own scope. */
const node = Effect.fnUntraced(function*(nodeId: string) {
  const scope = yield* Scope.make()
  const writer = yield* Layer.buildWithScope(
    UsageWriter.layerWith({ flushIntervalMs: 3_600_000, maxBatch: 100_000 }),
    scope
  ).pipe(
    Effect.map((context) => Context.get(context, UsageWriter))
  )
  const purses = yield* Layer.buildWithScope(Purses.layer({ nodeId, leaseIdleMs: 3_600_000 }), scope).pipe(
    Effect.provideService(UsageWriter, writer),
    Effect.map((context) => Context.get(context, AccountsPort.Accounts))
  )
  return { purses, writer, close: Scope.close(scope, Exit.void) }
})

const record = (userId: string, requestId: string, costNanos: bigint): UsageLog.UsageRecord => ({
  createdAt: Date.now(),
  requestId,
  userId,
  keyId: "key-1",
  model: "m",
  upstreamModel: "m",
  channel: "c",
  dialectIn: "openai",
  dialectOut: "openai",
  stream: false,
  promptTokens: 10,
  completionTokens: 20,
  cachedTokens: 0,
  usageReported: true,
  costNanos,
  latencyMs: 5,
  ttfbMs: null,
  status: 200,
  errorCode: null,
  attempts: 1,
  attemptLog: []
})

/** The user's balance, ledger sum, charges, usage records and open leases, as the database has them. */
const books = Effect.fnUntraced(function*(userId: string) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`SELECT u.balance_nanos AS balance,
      (SELECT COALESCE(SUM(amount_nanos), 0) FROM ledger WHERE user_id = u.id) AS ledger,
      (SELECT COUNT(*) FROM ledger WHERE user_id = u.id AND kind = 'charge') AS charges,
      (SELECT COALESCE(SUM(amount_nanos), 0) FROM ledger WHERE user_id = u.id AND kind = 'charge') AS charged,
      (SELECT COUNT(*) FROM usage_records WHERE user_id = u.id) AS records,
      (SELECT COUNT(*) FROM leases WHERE user_id = u.id) AS leases
    FROM users u WHERE u.id = ${userId}`
  const row = rows[0]!
  return {
    balance: BigInt(row.balance as bigint),
    ledger: BigInt(row.ledger as bigint),
    charges: Number(row.charges),
    charged: -BigInt(row.charged as bigint),
    records: Number(row.records),
    leases: Number(row.leases)
  }
})

describe.skipIf(postgresUrl === undefined)(
  "lost COMMIT answers on PostgreSQL (set MODELGATE_TEST_POSTGRES to run)",
  () => {
    layer(proxied, { excludeTestServices: true, timeout: "120 seconds" })((it) => {
      it.effect("a usage batch written again after its COMMIT's answer was lost records and charges each call once", () =>
        Effect.gen(function*() {
          const proxy = yield* Proxy
          const user = yield* userWith(1_000_000_000n)
          const { purses, writer, close } = yield* node("node-batch")
          for (let i = 0; i < 8; i++) {
            const hold = yield* purses.hold({
              userId: user,
              keyId: "key-1",
              amountNanos: 1_000n,
              requestId: `req-batch-${i}`
            })
            const settled = yield* purses.settle(hold, 300n)
            yield* writer.record(record(user, `req-batch-${i}`, settled.chargedNanos))
          }
          // Twice: the batch reaches the server and commits, and its answer never comes back.
          const before = proxy.commitAnswersLost()
          for (let cut = 1; cut <= 2; cut++) {
            proxy.loseCommitAnswers(1)
            const lost = yield* Effect.exit(writer.flush)
            assert.isTrue(Exit.isFailure(lost), "the writer does not know the batch committed")
            assert.strictEqual(proxy.commitAnswersLost(), before + cut)
            assert.strictEqual(yield* writer.pending, 16, "and keeps it to write again")
          }
          yield* writer.flush
          assert.strictEqual(yield* writer.pending, 0)
          const after = yield* books(user)
          assert.deepStrictEqual(
            { records: after.records, charges: after.charges, charged: after.charged },
            { records: 8, charges: 8, charged: 8n * 300n },
            "each call recorded and charged once"
          )
          assert.strictEqual(after.balance, after.ledger, "the balance equals the ledger")
          yield* close
          yield* writer.flush
          const closed = yield* books(user)
          assert.deepStrictEqual([closed.balance, closed.ledger, closed.leases], [
            1_000_000_000n - 2_400n,
            1_000_000_000n - 2_400n,
            0
          ])
        }))

      it.effect("a lease whose COMMIT's answer was lost is found by the next call and released with the node: no orphan", () =>
        Effect.gen(function*() {
          const proxy = yield* Proxy
          const user = yield* userWith(1_000_000_000n)
          const { purses, writer, close } = yield* node("node-lease")
          // The first call's lease is written and committed, and the answer lost: the call fails.
          const before = proxy.commitAnswersLost()
          proxy.loseCommitAnswers(1)
          const lost = yield* Effect.flip(
            purses.hold({ userId: user, keyId: "key-1", amountNanos: 1_000n, requestId: "req-lease-1" })
          )
          assert.strictEqual(proxy.commitAnswersLost(), before + 1)
          const reserved = yield* books(user)
          assert.deepStrictEqual(
            [reserved.leases, reserved.balance],
            [1, 1_000_000_000n - 17_000n],
            "the lease exists, unknown to the node"
          )
          assert.strictEqual(lost._tag, "DatabaseUnavailable")
          // For a moment calls that need the database are answered at once, without trying it again.
          const backoff = yield* Effect.flip(
            purses.hold({ userId: user, keyId: "key-1", amountNanos: 1_000n, requestId: "req-lease-2" })
          )
          assert.strictEqual(backoff._tag, "DatabaseUnavailable")
          yield* Effect.sleep(Duration.millis(Purses.DATABASE_BACKOFF_MS + 50))
          // The next call extends that same lease (it knows its id) rather than taking a second one.
          const hold = yield* purses.hold({
            userId: user,
            keyId: "key-1",
            amountNanos: 1_000n,
            requestId: "req-lease-3"
          })
          assert.strictEqual((yield* books(user)).leases, 1)
          yield* purses.settle(hold, 400n)
          // The node closes: its lease (both grants) goes back; only the call's charge is spent.
          yield* close
          yield* writer.flush
          const closed = yield* books(user)
          assert.deepStrictEqual(
            [closed.leases, closed.balance, closed.ledger, closed.charged],
            [0, 1_000_000_000n - 400n, 1_000_000_000n - 400n, 400n]
          )
        }))
    })
  }
)
