/**
 * Migrations that change data: a database written by an earlier version is
 * brought forward without losing a row or unbalancing a ledger. On SQLite
 * always, on PostgreSQL when MODELGATE_TEST_POSTGRES is set.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { migrate, migrations } from "../src/Migrations.ts"
import { databaseLayer, makePostgres, makeSqlite, postgresUrl, type TestDatabase } from "./harness.ts"

/** Applies the migrations before `id` as an earlier version did, and records them. */
const migrateBefore = (id: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const dialect = sql.onDialectOrElse({ pg: () => "pg" as const, orElse: () => "sqlite" as const })
    yield* sql.unsafe(
      "CREATE TABLE schema_migrations (id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)"
    )
    for (const migration of migrations.filter((m) => m.id < id)) {
      for (const statement of migration.statements(dialect)) yield* sql.unsafe(statement)
      yield* sql`INSERT INTO schema_migrations (id, name, applied_at) VALUES (${migration.id}, ${migration.name}, 0)`
    }
  })

const usageRow = (id: string, requestId: string, createdAt: number) => ({
  id,
  created_at: createdAt,
  request_id: requestId,
  user_id: "usr_1",
  key_id: "key_1",
  model: "m",
  upstream_model: "m",
  channel: "c",
  dialect_in: "openai",
  dialect_out: "openai",
  stream: false,
  prompt_tokens: 1,
  completion_tokens: 1,
  cached_tokens: 0,
  usage_reported: true,
  cost_nanos: 100n,
  latency_ms: 1,
  ttfb_ms: null,
  status: 200,
  error_code: null,
  attempts: 1
})

const ledgerRow = (id: string, kind: string, amount: bigint, requestId: string | null, createdAt: number) => ({
  id,
  user_id: "usr_1",
  kind,
  amount_nanos: amount,
  hold_id: null,
  request_id: requestId,
  reason: null,
  actor: null,
  created_at: createdAt
})

const suite = (make: () => Promise<TestDatabase>) => {
  it.effect("8 idempotent_usage: earlier duplicates keep their rows under a marked request id, and the request id becomes unique", () =>
    Effect.gen(function*() {
      const db = yield* Effect.acquireRelease(Effect.promise(make), (db) => Effect.promise(db.cleanup))
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* migrateBefore(8)
        yield* sql`INSERT INTO users ${
          sql.insert({
            id: "usr_1",
            name: "alice",
            role: "user",
            balance_nanos: 700n,
            source: "console",
            created_at: 0,
            updated_at: 0
          })
        }`
        // What the lost COMMIT answer left: the batch of req_a and req_b written twice, charges included.
        yield* sql`INSERT INTO usage_records ${
          sql.insert([
            usageRow("use_1", "req_a", 1),
            usageRow("use_2", "req_b", 1),
            usageRow("use_3", "req_a", 2),
            usageRow("use_4", "req_b", 2)
          ])
        }`
        yield* sql`INSERT INTO ledger ${
          sql.insert([
            ledgerRow("led_0", "topup", 1_000n, null, 0),
            ledgerRow("led_1", "charge", -100n, "req_a", 1),
            ledgerRow("led_2", "charge", -50n, "req_b", 1),
            ledgerRow("led_3", "charge", -100n, "req_a", 2),
            ledgerRow("led_4", "charge", -50n, "req_b", 2),
            ledgerRow("led_5", "release", 0n, null, 2)
          ])
        }`
        assert.deepStrictEqual(yield* migrate, migrations.filter((m) => m.id >= 8).map((m) => `${m.id}_${m.name}`))

        const records = yield* sql`SELECT id, request_id FROM usage_records ORDER BY id`
        assert.deepStrictEqual(records.map((r) => [r.id, r.request_id]), [
          ["use_1", "req_a"],
          ["use_2", "req_b"],
          ["use_3", "req_a#duplicate-use_3"],
          ["use_4", "req_b#duplicate-use_4"]
        ])
        const ledger = yield* sql`SELECT id, request_id FROM ledger ORDER BY id`
        assert.deepStrictEqual(ledger.map((r) => [r.id, r.request_id]), [
          ["led_0", null],
          ["led_1", "req_a"],
          ["led_2", "req_b"],
          ["led_3", "req_a#duplicate-led_3"],
          ["led_4", "req_b#duplicate-led_4"],
          ["led_5", null]
        ])
        const sum = yield* sql`SELECT SUM(amount_nanos) AS total FROM ledger`
        assert.strictEqual(BigInt(sum[0]!.total as bigint), 700n, "every row kept: the ledger still equals the balance")

        // From now on a request id has one usage record and one charge.
        const again = yield* Effect.flip(sql`INSERT INTO usage_records ${sql.insert(usageRow("use_5", "req_a", 3))}`)
        assert.strictEqual(again.reason._tag, "UniqueViolation")
        const charged = yield* Effect.flip(
          sql`INSERT INTO ledger ${sql.insert(ledgerRow("led_6", "charge", -1n, "req_a", 3))}`
        )
        assert.strictEqual(charged.reason._tag, "UniqueViolation")
        // Other kinds of entries may share a request id with its charge (a database hold's 'hold' and 'release').
        yield* sql`INSERT INTO ledger ${
          sql.insert([ledgerRow("led_7", "hold", -5n, "req_a", 3), ledgerRow("led_8", "release", 5n, "req_a", 3)])
        }`
      }).pipe(Effect.provide(databaseLayer(db)))
    }))
}

describe("sqlite", () => {
  suite(makeSqlite)
})

describe.skipIf(postgresUrl === undefined)("postgres (set MODELGATE_TEST_POSTGRES to run)", () => {
  suite(() => makePostgres(postgresUrl!))
})
