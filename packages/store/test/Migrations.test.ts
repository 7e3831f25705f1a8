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

const books = (make: () => Promise<TestDatabase>) => {
  it.effect("13 books: balances and leases may go below zero, and nothing that points at a user is lost", () =>
    Effect.gen(function*() {
      const db = yield* Effect.acquireRelease(Effect.promise(make), (db) => Effect.promise(db.cleanup))
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* migrateBefore(13)
        yield* sql`INSERT INTO users ${
          sql.insert({
            id: "usr_1",
            name: "alice",
            role: "user",
            balance_nanos: 700n,
            source: "config",
            created_at: 0,
            updated_at: 0,
            rpm: 5,
            config_declared: "{}"
          })
        }`
        yield* sql`INSERT INTO groups ${sql.insert({ name: "default", ratio_micros: 1_000_000n, source: "config" })}`
        yield* sql`INSERT INTO user_groups ${sql.insert({ user_id: "usr_1", group_name: "default" })}`
        yield* sql`INSERT INTO api_keys ${
          sql.insert({
            id: "key_1",
            user_id: "usr_1",
            name: "laptop",
            prefix: "sk-a",
            hash: "h1",
            group_name: "default",
            created_at: 0,
            source: "config"
          })
        }`
        yield* sql`INSERT INTO sessions ${
          sql.insert({ id_hash: "s1", user_id: "usr_1", csrf_token: "t", created_at: 0, expires_at: 1 })
        }`
        yield* sql`INSERT INTO leases ${
          sql.insert({ id: "lea_1", user_id: "usr_1", node_id: "n", amount_nanos: 300n, created_at: 0, updated_at: 0 })
        }`
        yield* sql`INSERT INTO ledger ${
          sql.insert([ledgerRow("led_0", "topup", 1_000n, null, 0), ledgerRow("led_1", "hold", -300n, null, 0)])
        }`
        const refused = yield* Effect.flip(sql`UPDATE users SET balance_nanos = -1 WHERE id = 'usr_1'`)
        assert.strictEqual(refused.reason._tag, "ConstraintError", "before: a balance is never below zero")

        assert.deepStrictEqual(yield* migrate, ["13_books", "14_clouds"])

        // Every row that points at the user is still there (a rebuild that cascaded would have deleted them).
        const count = (table: string) =>
          Effect.map(
            sql.unsafe<{ readonly n: unknown }>(`SELECT COUNT(*) AS n FROM ${table}`),
            (rows) => Number(rows[0]!.n)
          )
        for (const table of ["users", "user_groups", "api_keys", "sessions", "leases", "ledger"]) {
          assert.strictEqual(yield* count(table), 1 + (table === "ledger" ? 1 : 0), table)
        }
        const user = (yield* sql`SELECT * FROM users WHERE id = 'usr_1'`)[0]!
        assert.deepStrictEqual([
          user.name,
          Number(user.rpm),
          user.config_declared,
          BigInt(user.balance_nanos as bigint)
        ], [
          "alice",
          5,
          "{}",
          700n
        ])
        // Now both may go below zero.
        yield* sql`UPDATE users SET balance_nanos = -5 WHERE id = 'usr_1'`
        yield* sql`UPDATE leases SET amount_nanos = -7 WHERE id = 'lea_1'`
        // Other constraints stay, and references are enforced again.
        const role = yield* Effect.flip(sql`UPDATE users SET role = 'root' WHERE id = 'usr_1'`)
        assert.strictEqual(role.reason._tag, "ConstraintError")
        const orphan = yield* Effect.flip(
          sql`INSERT INTO leases ${
            sql.insert({ id: "lea_2", user_id: "usr_x", node_id: "n", amount_nanos: 1n, created_at: 0, updated_at: 0 })
          }`
        )
        assert.strictEqual(orphan.reason._tag, "ConstraintError", "foreign keys are enforced after the migration")
        yield* sql`INSERT INTO retired_entries ${sql.insert({ entry: "users:bob", retired_at: 1 })}`
        yield* sql`INSERT INTO retired_secrets ${sql.insert({ hash: "h0", retired_at: 1 })}`
        yield* sql`UPDATE models SET media_part_tokens = '{}'`
      }).pipe(Effect.provide(databaseLayer(db)))
    }))
}

const channelRow = (id: string, name: string, type: string) => ({
  id,
  name,
  type,
  base_url: "https://api.test/v1",
  api_keys_enc: "[]",
  timeouts: "{}",
  source: "config",
  created_at: 0,
  updated_at: 0
})

const clouds = (make: () => Promise<TestDatabase>) => {
  it.effect("clouds: vertex and bedrock channels are allowed, with where they are served; every channel and key state stays", () =>
    Effect.gen(function*() {
      const db = yield* Effect.promise(make)
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* migrateBefore(14)
        yield* sql`INSERT INTO channels ${sql.insert(channelRow("chn_1", "openai", "openai"))}`
        yield* sql`UPDATE channels SET responses = TRUE, stream_options = FALSE, breaker = '{"x":1}' WHERE id = 'chn_1'`
        yield* sql`INSERT INTO channel_key_states ${
          sql.insert({
            channel_id: "chn_1",
            key_fingerprint: "f1",
            status: 401,
            reason: "refused",
            disabled_at: 1,
            node_id: "n"
          })
        }`
        const before = yield* Effect.flip(sql`INSERT INTO channels ${sql.insert(channelRow("chn_2", "v", "vertex"))}`)
        assert.strictEqual(before.reason._tag, "ConstraintError", "before: no vertex channel")

        assert.deepStrictEqual(yield* migrate, ["14_clouds"])

        const kept = (yield* sql`SELECT * FROM channels WHERE id = 'chn_1'`)[0]!
        assert.deepStrictEqual(
          [kept.name, kept.type, Boolean(kept.responses), Boolean(kept.stream_options), kept.breaker, kept.cloud],
          ["openai", "openai", true, false, "{\"x\":1}", null]
        )
        yield* sql`INSERT INTO channels ${
          sql.insert({ ...channelRow("chn_2", "v", "vertex"), cloud: "{\"project\":\"p\",\"location\":\"us-east5\"}" })
        }`
        yield* sql`INSERT INTO channels ${
          sql.insert({ ...channelRow("chn_3", "b", "bedrock"), cloud: "{\"region\":\"us-east-1\"}" })
        }`
        const other = yield* Effect.flip(sql`INSERT INTO channels ${sql.insert(channelRow("chn_4", "c", "carrier"))}`)
        assert.strictEqual(other.reason._tag, "ConstraintError", "other types are still refused")
        // The key state still belongs to its channel: deleting the channel deletes it.
        const states = () => Effect.map(sql`SELECT COUNT(*) AS n FROM channel_key_states`, (rows) => Number(rows[0]!.n))
        assert.strictEqual(yield* states(), 1)
        yield* sql`DELETE FROM channels WHERE id = 'chn_1'`
        assert.strictEqual(yield* states(), 0)
      }).pipe(Effect.provide(databaseLayer(db)))
    }))
}

describe("sqlite", () => {
  suite(makeSqlite)
  books(makeSqlite)
  clouds(makeSqlite)
})

describe.skipIf(postgresUrl === undefined)("postgres (set MODELGATE_TEST_POSTGRES to run)", () => {
  suite(() => makePostgres(postgresUrl!))
  books(() => makePostgres(postgresUrl!))
  clouds(() => makePostgres(postgresUrl!))
})
