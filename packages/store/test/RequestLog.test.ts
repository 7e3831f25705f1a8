/**
 * The request log's store side, on SQLite always and on PostgreSQL when
 * MODELGATE_TEST_POSTGRES is set: what a usage record keeps for it (reasoning
 * tokens, the error message, every attempt's message), its filters (channel,
 * status class, error code, request id) and keyset pages that neither skip
 * nor repeat a record when many share a time, the indexes its pages use, a
 * database written before migration 12, and retention pruning that leaves the
 * ledger alone.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import type { UsageLog } from "@modelgate/core"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { Accounts } from "../src/Accounts.ts"
import { migrate, migrations } from "../src/Migrations.ts"
import { Reports, type UsageFilter } from "../src/Reports.ts"
import * as UsageRetention from "../src/UsageRetention.ts"
import { UsageWriter } from "../src/UsageWriter.ts"
import { Users } from "../src/Users.ts"
import { databaseLayer, makePostgres, makeSqlite, postgresUrl, storeLayer, type TestDatabase } from "./harness.ts"

const DAY = 86_400_000
const T0 = Date.UTC(2026, 5, 1, 12)

const base = (userId: string, i: number): UsageLog.UsageRecord => ({
  createdAt: T0 + Math.floor(i / 3) * 1_000,
  requestId: `req_log_${userId}_${i}`,
  userId,
  keyId: "key_log",
  model: "gpt-log",
  upstreamModel: "gpt-log-2026",
  channel: i % 2 === 0 ? "alpha" : "beta",
  dialectIn: "openai",
  dialectOut: i % 2 === 0 ? "openai" : "gemini",
  stream: i % 4 === 0,
  promptTokens: 10,
  completionTokens: 6,
  cachedTokens: 2,
  reasoningTokens: 4,
  usageReported: true,
  costNanos: 1_000n,
  latencyMs: 120,
  ttfbMs: 40,
  status: 200,
  errorCode: null,
  errorMessage: null,
  attempts: 1,
  attemptLog: [{
    channel: i % 2 === 0 ? "alpha" : "beta",
    keyHint: "…abcd",
    status: 200,
    errorCode: null,
    errorMessage: null,
    durationMs: 100
  }]
})

/** 30 records, three per second: a 502 failover, a 429 refusal without attempts, the rest served. */
const records = (userId: string): ReadonlyArray<UsageLog.UsageRecord> =>
  Array.from({ length: 30 }, (_, i) => {
    const record = base(userId, i)
    if (i % 10 === 3) {
      return {
        ...record,
        status: 502,
        errorCode: "UpstreamUnavailable",
        errorMessage: "The upstream 'beta' could not be reached (ECONNREFUSED).",
        costNanos: 0n,
        promptTokens: 0,
        completionTokens: 0,
        cachedTokens: 0,
        reasoningTokens: 0,
        ttfbMs: null,
        attempts: 2,
        attemptLog: [
          {
            channel: "alpha",
            keyHint: "…abcd",
            status: 503,
            errorCode: "UpstreamUnavailable",
            errorMessage: "The upstream 'alpha' answered 503.",
            durationMs: 5
          },
          {
            channel: "beta",
            keyHint: "…wxyz",
            status: null,
            errorCode: "UpstreamUnavailable",
            errorMessage: "The upstream 'beta' could not be reached (ECONNREFUSED).",
            durationMs: 2
          }
        ]
      }
    }
    if (i % 10 === 7) {
      return {
        ...record,
        channel: "",
        status: 429,
        errorCode: "InsufficientBalance",
        errorMessage: "Your balance of $0.01 cannot cover this call: it needs up to $0.25 held.",
        costNanos: 0n,
        promptTokens: 0,
        completionTokens: 0,
        cachedTokens: 0,
        reasoningTokens: 0,
        ttfbMs: null,
        attempts: 0,
        attemptLog: []
      }
    }
    return record
  })

/** Every page of a filter, following the cursors. */
const allPages = (filter: UsageFilter, limit: number) =>
  Effect.gen(function*() {
    const reports = yield* Reports
    const seen: Array<string> = []
    let cursor: string | undefined
    for (let pages = 0; pages < 100; pages++) {
      const page = yield* reports.usagePage(filter, limit, cursor)
      seen.push(...page.data.map((row) => row.requestId))
      if (page.nextCursor === null) return seen
      cursor = page.nextCursor
    }
    throw new Error("more than 100 pages")
  })

const suite = (make: () => Promise<TestDatabase>) => {
  layer(storeLayer(make), { excludeTestServices: true, timeout: "120 seconds" })((it) => {
    const seeded = Effect.gen(function*() {
      const users = yield* Users
      const writer = yield* UsageWriter
      const user = yield* users.create({ name: `log${Math.random().toString(36).slice(2, 10)}` })
      for (const record of records(user.id)) yield* writer.record(record)
      yield* writer.flush
      return user.id
    })

    it.effect("keeps reasoning tokens, the error message and each attempt's message", () =>
      Effect.gen(function*() {
        const userId = yield* seeded
        const reports = yield* Reports
        const [served] = (yield* reports.usagePage({ userId, requestId: `req_log_${userId}_0` }, 10, undefined)).data
        assert.deepStrictEqual(
          [
            served!.reasoningTokens,
            served!.cachedTokens,
            served!.upstreamModel,
            served!.dialectIn,
            served!.dialectOut,
            served!.usageReported,
            served!.errorMessage
          ],
          [4, 2, "gpt-log-2026", "openai", "openai", true, null]
        )
        const [failed] = (yield* reports.usagePage({ userId, requestId: `req_log_${userId}_3` }, 10, undefined)).data
        assert.strictEqual(failed!.errorMessage, "The upstream 'beta' could not be reached (ECONNREFUSED).")
        assert.deepStrictEqual(failed!.attemptLog.map((a) => [a.channel, a.status, a.errorMessage]), [
          ["alpha", 503, "The upstream 'alpha' answered 503."],
          ["beta", null, "The upstream 'beta' could not be reached (ECONNREFUSED)."]
        ])
        const [refused] = (yield* reports.usagePage({ userId, requestId: `req_log_${userId}_7` }, 10, undefined)).data
        assert.deepStrictEqual([refused!.channel, refused!.attempts, refused!.status, refused!.errorCode], [
          "",
          0,
          429,
          "InsufficientBalance"
        ])
        assert.include(refused!.errorMessage, "needs up to $0.25")
      }))

    it.effect("filters by channel, status class, error code and request id", () =>
      Effect.gen(function*() {
        const userId = yield* seeded
        const expected = (keep: (record: UsageLog.UsageRecord) => boolean) =>
          records(userId).filter(keep).map((r) => r.requestId).reverse()
        const ids = (filter: Omit<UsageFilter, "userId">) => allPages({ ...filter, userId }, 1000)
        assert.sameMembers(yield* ids({ channel: "beta" }), expected((r) => r.channel === "beta"))
        assert.sameMembers(yield* ids({ status: "ok" }), expected((r) => r.status < 400))
        assert.sameMembers(yield* ids({ status: "error" }), expected((r) => r.status >= 400))
        assert.sameMembers(yield* ids({ status: "4xx" }), expected((r) => r.status >= 400 && r.status < 500))
        assert.sameMembers(yield* ids({ status: "5xx" }), expected((r) => r.status >= 500))
        assert.sameMembers(
          yield* ids({ errorCode: "InsufficientBalance" }),
          expected((r) => r.errorCode === "InsufficientBalance")
        )
        assert.sameMembers(
          yield* ids({ status: "5xx", channel: "beta" }),
          expected((r) => r.status >= 500 && r.channel === "beta")
        )
        assert.deepStrictEqual(yield* ids({ requestId: `req_log_${userId}_12` }), [`req_log_${userId}_12`])
        assert.deepStrictEqual(yield* ids({ requestId: "req_nobody" }), [])
        // The sums of the dashboards take the same filters.
        const totals = yield* (yield* Reports).totals({ userId, status: "error" })
        assert.strictEqual(totals.requests, 6)
      }))

    it.effect("pages newest first by (time, id): pages of 4 over records sharing their times skip and repeat none", () =>
      Effect.gen(function*() {
        const userId = yield* seeded
        const paged = yield* allPages({ userId }, 4)
        const whole = yield* allPages({ userId }, 1000)
        assert.strictEqual(paged.length, 30)
        assert.deepStrictEqual(paged, whole)
        assert.strictEqual(new Set(paged).size, 30)
        const reports = yield* Reports
        const rows = (yield* reports.usagePage({ userId }, 1000, undefined)).data
        for (let i = 1; i < rows.length; i++) {
          const [a, b] = [rows[i - 1]!, rows[i]!]
          assert.isTrue(
            a.createdAt > b.createdAt || (a.createdAt === b.createdAt && a.id > b.id),
            "newest first, then by id"
          )
        }
        // A filtered walk pages the same way.
        assert.deepStrictEqual(
          yield* allPages({ userId, channel: "alpha" }, 3),
          yield* allPages({ userId, channel: "alpha" }, 1000)
        )
      }))

    it.effect("prunes only usage records older than the cut-off, never the ledger", () =>
      Effect.gen(function*() {
        const users = yield* Users
        const accounts = yield* Accounts
        const writer = yield* UsageWriter
        const sql = yield* SqlClient.SqlClient
        const user = yield* users.create({ name: `old${Math.random().toString(36).slice(2, 10)}` })
        yield* accounts.topUp(user.id, 5_000n, "test", "tester")
        const at = (daysAgo: number, i: number): UsageLog.UsageRecord => ({
          ...base(user.id, i),
          requestId: `req_prune_${user.id}_${i}`,
          createdAt: T0 - daysAgo * DAY
        })
        for (let i = 0; i < 7; i++) yield* writer.record(at(40, i))
        for (let i = 7; i < 10; i++) yield* writer.record(at(5, i))
        yield* writer.flush
        const ledgerBefore = yield* sql`SELECT COUNT(*) AS n FROM ledger WHERE user_id = ${user.id}`
        // Batches of 3: 7 old records take three statements.
        const deleted = yield* UsageRetention.prune(T0 - 30 * DAY, { batch: 3, pause: 0 })
        assert.isAtLeast(deleted, 7)
        const left = yield* allPages({ userId: user.id }, 100)
        assert.sameMembers(left, [7, 8, 9].map((i) => `req_prune_${user.id}_${i}`))
        const ledgerAfter = yield* sql`SELECT COUNT(*) AS n FROM ledger WHERE user_id = ${user.id}`
        assert.strictEqual(Number(ledgerAfter[0]!.n), Number(ledgerBefore[0]!.n))
        assert.strictEqual(yield* accounts.balance(user.id), 5_000n)
        assert.strictEqual(yield* UsageRetention.prune(T0 - 30 * DAY), 0, "nothing older is left")
      }))
  })

  it.effect("12 request_log: records written before it read back with no reasoning tokens and no message", () =>
    Effect.gen(function*() {
      const db = yield* Effect.acquireRelease(Effect.promise(make), (db) => Effect.promise(db.cleanup))
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const dialect = sql.onDialectOrElse({ pg: () => "pg" as const, orElse: () => "sqlite" as const })
        yield* sql.unsafe(
          "CREATE TABLE schema_migrations (id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)"
        )
        for (const migration of migrations.filter((m) => m.id < 12)) {
          for (const statement of migration.statements(dialect)) yield* sql.unsafe(statement)
          yield* sql`INSERT INTO schema_migrations (id, name, applied_at) VALUES (${migration.id}, ${migration.name}, 0)`
        }
        yield* sql`INSERT INTO usage_records ${
          sql.insert({
            id: "use_old",
            created_at: T0,
            request_id: "req_old",
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
            status: 500,
            error_code: "InternalError",
            attempts: 1,
            attempt_log: JSON.stringify([{
              channel: "c",
              keyHint: "…abcd",
              status: 500,
              errorCode: "UpstreamUnavailable",
              durationMs: 3
            }])
          })
        }`
        assert.deepStrictEqual(yield* migrate, migrations.filter((m) => m.id >= 12).map((m) => `${m.id}_${m.name}`))
        const page = yield* Effect.flatMap(Reports, (reports) => reports.usagePage({ status: "5xx" }, 10, undefined))
          .pipe(
            Effect.provide(Reports.layer)
          )
        assert.deepStrictEqual(page.data.map((r) => [r.requestId, r.reasoningTokens, r.errorMessage]), [[
          "req_old",
          0,
          null
        ]])
        assert.deepStrictEqual(page.data[0]!.attemptLog.map((a) => a.errorMessage), [null])
      }).pipe(Effect.provide(databaseLayer(db)))
    }))
}

describe("sqlite", () => {
  suite(makeSqlite)

  /** SQLite's plan for a page of a filter: the index it searches or scans. */
  const planOf = (filter: string) =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql.unsafe(
        `EXPLAIN QUERY PLAN SELECT r.* FROM usage_records r WHERE ${filter} ORDER BY r.created_at DESC, r.id DESC LIMIT 51`
      )
      return rows.map((row) => String((row as { readonly detail?: unknown }).detail)).join(" | ")
    })

  layer(
    Layer.unwrap(Effect.map(
      Effect.acquireRelease(Effect.promise(makeSqlite), (db) => Effect.promise(db.cleanup)),
      (db) => Layer.effectDiscard(migrate).pipe(Layer.provideMerge(databaseLayer(db)))
    )),
    { excludeTestServices: true }
  )((it) => {
    it.effect("every filter's page walks an index in order, with no sort (deep pages included)", () =>
      Effect.gen(function*() {
        const cases: ReadonlyArray<readonly [string, string]> = [
          ["1 = 1", "usage_created"],
          ["(r.created_at, r.id) < (5, 'x')", "usage_created"],
          ["r.user_id = 'u'", "usage_user_created"],
          ["r.user_id = 'u' AND (r.created_at, r.id) < (5, 'x')", "usage_user_created"],
          ["r.key_id = 'k'", "usage_key_created"],
          ["r.model = 'm'", "usage_model_created"],
          ["r.channel = 'c'", "usage_channel_created"],
          ["r.error_code = 'RateLimited'", "usage_error_created"],
          ["r.status >= 400", "usage_failed_created"],
          ["r.status >= 400 AND r.status < 500", "usage_failed_created"],
          ["r.status >= 400 AND r.status >= 500 AND (r.created_at, r.id) < (5, 'x')", "usage_failed_created"],
          ["r.request_id = 'req_1'", "usage_records_request"]
        ]
        for (const [filter, index] of cases) {
          const plan = yield* planOf(filter)
          assert.include(plan, index, `${filter}: ${plan}`)
          assert.notInclude(plan, "TEMP B-TREE", `${filter} sorts: ${plan}`)
        }
      }))
  })
})

describe.skipIf(postgresUrl === undefined)("postgres (set MODELGATE_TEST_POSTGRES to run)", () => {
  suite(() => makePostgres(postgresUrl!))
})
