/**
 * The request log's benchmark: how long one page of usage records takes to
 * read (the store's `Reports.usagePage`, what `GET /api/usage` and
 * `GET /api/admin/usage` run, 50 records as the console asks) over a table of
 * 1,000,000 records, on SQLite and, when MODELGATE_TEST_POSTGRES names a
 * server, on PostgreSQL, for every filter the console offers: none, a page
 * half a million records deep, a user (first and deep page), a key, a model,
 * a channel, failed calls, 5xx, an error code, a request id, the last day,
 * and combinations.
 *
 *   pnpm bench:requests [--records N] [--runs N] [--write]
 *   MODELGATE_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test pnpm bench:requests --write
 *
 * The table is filled by the database itself (a generated series: 1,000
 * users, 2,000 keys, 8 models, 6 channels, 30 days; 95 % served, 3 % refused
 * by a rate limit before any upstream, 1 % 502, 1 % 504), after the schema's
 * migrations, so its indexes are the ones a server has. SQLite runs on a
 * fresh file without ANALYZE (as a server's database is); PostgreSQL in a
 * fresh schema, analysed once after the load (what autovacuum does after a
 * bulk of inserts). Each query runs once to warm the cache, then `--runs`
 * times (default 15); the table shows the median, the 95th percentile and
 * the slowest run. With `--write` the result goes to
 * docs/benchmarks/request-log.md. A benchmark, not a test: it asserts no speed.
 *
 * @since 0.1.0
 */
import * as Database from "@modelgate/store/Database"
import { migrate } from "@modelgate/store/Migrations"
import { decodeCursor, Reports, type UsageFilter } from "@modelgate/store/Reports"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs"
import { cpus, tmpdir, totalmem } from "node:os"
import { dirname, join } from "node:path"
import { performance } from "node:perf_hooks"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"

const DAY_MS = 86_400_000
/** The newest record's time; the rest go back 30 days from it. */
const NEWEST = Date.UTC(2026, 10, 1)
const PAGE = 50

/** One measured query. @category models */
export interface Measurement {
  readonly database: string
  readonly query: string
  readonly rows: number
  readonly medianMs: number
  readonly p95Ms: number
  readonly maxMs: number
}

const percentile = (sorted: ReadonlyArray<number>, p: number): number =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * p) - 1)]!

/**
 * The statement that fills `usage_records` with records `from` to `to - 1`
 * (one per 30 days / `total`), in each dialect's way of counting rows.
 */
const fill = (dialect: "sqlite" | "pg", from: number, to: number, total: number): string => {
  const step = (30 * DAY_MS) / total
  const series = dialect === "pg"
    ? `SELECT n FROM generate_series(${from}::bigint, ${to - 1}::bigint) AS n`
    : `WITH RECURSIVE seq(n) AS (SELECT ${from} UNION ALL SELECT n + 1 FROM seq WHERE n < ${to - 1}) SELECT n FROM seq`
  const pad = (expr: string, width: number) =>
    dialect === "pg" ? `lpad((${expr})::text, ${width}, '0')` : `printf('%0${width}d', ${expr})`
  // Mixed so that a user (records n with one n % 1000) and a run of consecutive calls both see every outcome and model.
  const mix = "((n / 1000) + n)"
  const status =
    `CASE WHEN ${mix} % 100 < 95 THEN 200 WHEN ${mix} % 100 < 98 THEN 429 WHEN ${mix} % 100 = 98 THEN 502 ELSE 504 END`
  return `INSERT INTO usage_records (id, created_at, request_id, user_id, key_id, model, upstream_model, channel, dialect_in, dialect_out,
      stream, prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens, usage_reported, cost_nanos, latency_ms, ttfb_ms,
      status, error_code, error_message, attempts, attempt_log)
    SELECT 'use_' || ${pad("n", 9)}, ${NEWEST} - CAST((${total} - 1 - n) * ${step} AS BIGINT), 'req_' || ${
    pad("n", 24)
  },
      'usr_' || ${pad("(n * 7919) % 1000", 4)}, 'key_' || ${
    pad("(n * 104729) % 2000", 4)
  }, 'model-' || (${mix} % 8), 'model-' || (${mix} % 8),
      CASE WHEN ${mix} % 100 BETWEEN 95 AND 97 THEN '' ELSE 'channel-' || (n % 6) END, 'openai', 'openai',
      ${dialect === "pg" ? "n % 2 = 0" : "n % 2"}, 900, 150, 0, 0, ${dialect === "pg" ? "TRUE" : "1"},
      CASE WHEN ${mix} % 100 < 95 THEN 120000 ELSE 0 END, 400 + n % 900, CASE WHEN ${mix} % 100 < 95 THEN 200 ELSE NULL END,
      ${status},
      CASE WHEN ${mix} % 100 < 95 THEN NULL WHEN ${mix} % 100 < 98 THEN 'RateLimited' WHEN ${mix} % 100 = 98 THEN 'UpstreamUnavailable' ELSE 'UpstreamTimeout' END,
      CASE WHEN ${mix} % 100 < 95 THEN NULL ELSE 'The call failed as a benchmark record says it did.' END,
      CASE WHEN ${mix} % 100 BETWEEN 95 AND 97 THEN 0 ELSE 1 END,
      CASE WHEN ${mix} % 100 BETWEEN 95 AND 97 THEN NULL ELSE
        '[{"channel":"channel-' || (n % 6) || '","keyHint":"…abcd","status":' || (${status}) || ',"errorCode":null,"errorMessage":null,"durationMs":120}]' END
    FROM (${series}) AS s`
}

/** Fills the database: users, keys and `total` usage records, in batches of 100,000 (reported on stderr). */
const seed = (total: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const dialect = sql.onDialectOrElse({ pg: () => "pg" as const, orElse: () => "sqlite" as const })
    const bool = dialect === "pg" ? "TRUE" : "1"
    const series = (count: number) =>
      dialect === "pg"
        ? `SELECT n FROM generate_series(0, ${count - 1}) AS n`
        : `WITH RECURSIVE seq(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM seq WHERE n < ${count - 1}) SELECT n FROM seq`
    const pad = (expr: string, width: number) =>
      dialect === "pg" ? `lpad((${expr})::text, ${width}, '0')` : `printf('%0${width}d', ${expr})`
    yield* sql.unsafe(`INSERT INTO users (id, name, role, enabled, balance_nanos, source, created_at, updated_at)
      SELECT 'usr_' || ${pad("n", 4)}, 'user-' || n, 'user', ${bool}, 0, 'console', 0, 0 FROM (${series(1000)}) AS s`)
    yield* sql.unsafe(`INSERT INTO api_keys (id, user_id, name, prefix, hash, group_name, created_at, source)
      SELECT 'key_' || ${pad("n", 4)}, 'usr_' || ${
      pad("n % 1000", 4)
    }, 'key-' || n, 'sk-bench', 'hash-' || n, 'default', 0, 'console'
      FROM (${series(2000)}) AS s`)
    for (let from = 0; from < total; from += 100_000) {
      const to = Math.min(total, from + 100_000)
      const started = performance.now()
      yield* sql.withTransaction(sql.unsafe(fill(dialect, from, to, total)))
      process.stderr.write(`  ${to.toLocaleString("en-US")} records (${Math.round(performance.now() - started)} ms)\n`)
    }
    if (dialect === "pg") yield* sql.unsafe("ANALYZE usage_records")
  })

/** The queries, as the console's filters make them (a user's own page adds the user). */
const queries = (
  total: number
): ReadonlyArray<{ readonly name: string; readonly filter: UsageFilter; readonly deep?: number }> => [
  { name: "every call (an admin's first page)", filter: {} },
  { name: "every call, a page half the table deep", filter: {}, deep: Math.floor(total / 2) },
  { name: "one user (a user's own first page)", filter: { userId: "usr_0042" } },
  { name: "one user, a page half their records deep", filter: { userId: "usr_0042" }, deep: Math.floor(total / 2_000) },
  { name: "one user, failed calls", filter: { userId: "usr_0042", status: "error" } },
  {
    name: "one user, one model, last 30 days",
    filter: { userId: "usr_0042", model: "model-3", from: NEWEST - 30 * DAY_MS }
  },
  { name: "one key", filter: { keyId: "key_0777" } },
  { name: "one model", filter: { model: "model-5" } },
  { name: "one channel", filter: { channel: "channel-2" } },
  { name: "failed calls (4xx and 5xx)", filter: { status: "error" } },
  { name: "5xx", filter: { status: "5xx" } },
  { name: "succeeded calls", filter: { status: "ok" } },
  { name: "error code UpstreamTimeout", filter: { errorCode: "UpstreamTimeout" } },
  { name: "one channel, 5xx", filter: { channel: "channel-2", status: "5xx" } },
  { name: "the last day", filter: { from: NEWEST - DAY_MS } },
  { name: "a request id", filter: { requestId: `req_${String(Math.floor(total / 3)).padStart(24, "0")}` } }
]

/** The cursor of the record `depth` records down the filter's pages (found once, not timed). */
const cursorAt = (filter: UsageFilter, depth: number) =>
  Effect.gen(function*() {
    const reports = yield* Reports
    let cursor: string | undefined
    let skipped = 0
    while (skipped < depth) {
      const page = yield* reports.usagePage(filter, Math.min(5_000, depth - skipped), cursor)
      if (page.nextCursor === null) break
      skipped += page.data.length
      cursor = page.nextCursor
    }
    return cursor
  })

const measure = (database: string, total: number, runs: number) =>
  Effect.gen(function*() {
    const reports = yield* Reports
    const results: Array<Measurement> = []
    for (const query of queries(total)) {
      const cursor = query.deep === undefined ? undefined : yield* cursorAt(query.filter, query.deep)
      if (query.deep !== undefined && cursor === undefined) {
        throw new Error(`no cursor ${query.deep} records deep for ${query.name}`)
      }
      let rows = 0
      const times: Array<number> = []
      for (let run = 0; run <= runs; run++) {
        const started = performance.now()
        const page = yield* reports.usagePage(query.filter, PAGE, cursor)
        const ms = performance.now() - started
        rows = page.data.length
        // The first run warms the cache; the page of a deep cursor starts where it says.
        if (run > 0) times.push(ms)
        if (cursor !== undefined && rows > 0 && decodeCursor(cursor)!.createdAt < page.data[0]!.createdAt) {
          throw new Error(`${query.name}: the page starts before its cursor`)
        }
      }
      times.sort((a, b) => a - b)
      results.push({
        database,
        query: query.name,
        rows,
        medianMs: percentile(times, 0.5),
        p95Ms: percentile(times, 0.95),
        maxMs: times.at(-1)!
      })
      process.stderr.write(`  ${query.name}: ${percentile(times, 0.5).toFixed(2)} ms\n`)
    }
    return results
  })

const ms = (n: number) => n < 10 ? n.toFixed(2) : n.toFixed(1)

/** The results as a Markdown table. @category report */
export const markdown = (results: ReadonlyArray<Measurement>): string =>
  [
    "| database | page of | records | median | p95 | slowest |",
    "|---|---|---|---|---|---|",
    ...results.map((r) =>
      `| ${r.database} | ${r.query} | ${r.rows} | ${ms(r.medianMs)} ms | ${ms(r.p95Ms)} ms | ${ms(r.maxMs)} ms |`
    )
  ].join("\n")

const postgresSchema = (base: string) => {
  const schema = `bench_requests_${Math.random().toString(36).slice(2, 10)}`
  const run = (statement: string) =>
    Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(statement)).pipe(
      Effect.provide(Database.layer(base, { maxConnections: 1 }).pipe(Layer.orDie)),
      Effect.asVoid
    )
  const url = new URL(base)
  url.searchParams.set("options", `-c search_path=${schema}`)
  return { url: url.toString(), create: run(`CREATE SCHEMA ${schema}`), drop: run(`DROP SCHEMA ${schema} CASCADE`) }
}

/** Loads a database and measures it. */
const bench = (database: string, url: string, total: number, runs: number) =>
  Effect.gen(function*() {
    process.stderr.write(`${database}: loading ${total.toLocaleString("en-US")} usage records\n`)
    const started = performance.now()
    yield* migrate
    yield* seed(total)
    const loadSeconds = (performance.now() - started) / 1000
    process.stderr.write(`${database}: measuring\n`)
    const results = yield* measure(database, total, runs).pipe(Effect.provide(Reports.layer))
    return { results, loadSeconds }
  }).pipe(Effect.provide(Database.layer(url, { maxConnections: 4 }).pipe(Layer.orDie)))

const main = Effect.gen(function*() {
  const { values } = parseArgs({
    options: {
      records: { type: "string", default: "1000000" },
      runs: { type: "string", default: "15" },
      write: { type: "boolean", default: false }
    }
  })
  const total = Number(values.records)
  const runs = Number(values.runs)
  if (!Number.isSafeInteger(total) || total < 1_000 || !Number.isSafeInteger(runs) || runs < 1) {
    return yield* Effect.die(new Error("--records takes a whole number of at least 1000, --runs one of at least 1"))
  }
  const results: Array<Measurement> = []
  const notes: Array<string> = []
  const dir = mkdtempSync(join(tmpdir(), "modelgate-bench-requests-"))
  try {
    const file = join(dir, "gateway.db")
    const sqlite = yield* bench("SQLite", `sqlite:${file}`, total, runs)
    results.push(...sqlite.results)
    notes.push(
      `SQLite: loaded in ${Math.round(sqlite.loadSeconds)} s; the file is ${
        Math.round(statSync(file).size / 1024 / 1024)
      } MB with its indexes.`
    )
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  const base = process.env["MODELGATE_TEST_POSTGRES"]
  if (base === undefined || base === "") {
    notes.push("PostgreSQL: not measured (MODELGATE_TEST_POSTGRES is not set).")
  } else {
    const schema = postgresSchema(base)
    yield* schema.create
    try {
      const pg = yield* bench("PostgreSQL", schema.url, total, runs)
      results.push(...pg.results)
      const version = yield* Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SHOW server_version`).pipe(
        Effect.map((rows) => String(rows[0]?.server_version ?? "?")),
        Effect.provide(Database.layer(schema.url, { maxConnections: 1 }).pipe(Layer.orDie))
      )
      notes.push(`PostgreSQL ${version} on this machine: loaded in ${Math.round(pg.loadSeconds)} s.`)
    } finally {
      yield* schema.drop
    }
  }
  const table = markdown(results)
  process.stdout.write(`${table}\n\n${notes.join("\n")}\n`)
  if (!values.write) return
  const out = join(dirname(fileURLToPath(import.meta.url)), "../../../docs/benchmarks/request-log.md")
  mkdirSync(dirname(out), { recursive: true })
  const slowest = results.reduce((max, r) => Math.max(max, r.maxMs), 0)
  writeFileSync(
    out,
    [
      "# The request log: one page over 1,000,000 usage records",
      "",
      "<!-- Written by packages/bench/src/requestLog.ts (pnpm bench:requests --write); do not edit by hand. -->",
      "",
      `Run ${new Date().toISOString()} on ${cpus().length} cores (${cpus()[0]?.model ?? "?"}), ${
        Math.round(totalmem() / 1024 ** 3)
      } GiB, Node ${process.version}, ` +
      `shared with other work. ${
        total.toLocaleString("en-US")
      } usage records (1,000 users, 2,000 keys, 8 models, 6 channels over 30 days; ` +
      "95 % served, 3 % refused by a rate limit, 1 % 502, 1 % 504).",
      "",
      `Each row is the store's \`Reports.usagePage\` (what \`GET /api/usage\` and \`GET /api/admin/usage\` run, with their user joins and the ` +
      `decoding of each record) for one page of ${PAGE}, measured ${runs} times after a warm-up. Pages are read newest first by \`(created_at, id)\`, ` +
      "each filter through an index that ends in them (migration 12), so a page deep in the table costs what the first does.",
      "",
      table,
      "",
      ...notes.map((note) => `- ${note}`),
      "",
      `The slowest page of any query took ${ms(slowest)} ms (the target: every page under 200 ms).`,
      ""
    ].join("\n")
  )
  process.stderr.write(`wrote ${out}\n`)
})

Effect.runPromise(main).catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack ?? error.message : String(error)}\n`)
  process.exitCode = 1
})
