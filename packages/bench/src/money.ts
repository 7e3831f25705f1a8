/**
 * The money-path micro-benchmark: what one balance hold plus its settlement
 * costs, on SQLite and, when MODELGATE_TEST_POSTGRES names a server, on
 * PostgreSQL, along both paths the gateway has:
 *
 * - **leases** (the default): core's `Accounts` port as the store provides it
 *   (`Purses`: holds from a balance lease in memory, charges written by the
 *   batch writer), the calls the gateway makes for every chat call;
 * - **per-call database holds** (keys with spending caps, or
 *   `billing.leases: false`): the store's `Accounts.hold` and `settle`, one
 *   transaction each.
 *
 *   pnpm bench:money [--calls N] [--warmup N] [--concurrency N] [--repeat N]
 *   MODELGATE_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test pnpm bench:money
 *
 * For each database it runs three workloads, each after a warm-up:
 *
 * - one call at a time on one balance (the cost of the two transactions);
 * - `--concurrency` calls at a time on ONE balance (every hold and settlement
 *   of one user serialises on that user's row);
 * - `--concurrency` calls at a time, each on its own balance (no contention
 *   but the database's own).
 *
 * It prints a Markdown table (time per call = wall time / calls, calls per
 * second, and the latency of one hold-plus-settle at the median and the
 * 99th percentile; with `--repeat N` each workload is measured N times and
 * the run with the median time per call is shown, with the range over the
 * runs, for machines shared with other work) and checks the books afterwards: every balance equals its
 * ledger's sum and the initial balance less exactly what was charged. SQLite
 * runs on a fresh file in a temporary directory; PostgreSQL in a fresh schema
 * dropped at the end. A benchmark, not a test: it asserts no speed.
 *
 * @since 0.1.0
 */
import { Accounts as AccountsPort } from "@modelgate/core"
import { Accounts } from "@modelgate/store/Accounts"
import * as Database from "@modelgate/store/Database"
import { Keys } from "@modelgate/store/Keys"
import * as Store from "@modelgate/store/Store"
import { UsageWriter } from "@modelgate/store/UsageWriter"
import { Users } from "@modelgate/store/Users"
import { Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { mkdtempSync, rmSync } from "node:fs"
import { cpus, tmpdir } from "node:os"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import { parseArgs } from "node:util"

/** What one call holds and is then charged, in nano-dollars. @category constants */
export const HELD_NANOS = 50_000n
/** @category constants */
export const CHARGED_NANOS = 30_000n
const INITIAL_NANOS = 1_000_000n * 1_000_000_000n // 1,000,000 USD: never the limit

/** One measured workload. @category models */
export interface Measurement {
  readonly database: string
  /** "leases" or "per-call database holds". */
  readonly path: string
  readonly workload: string
  readonly calls: number
  readonly concurrency: number
  readonly usPerCall: number
  readonly callsPerSecond: number
  readonly p50Us: number
  readonly p99Us: number
  /** The fastest and slowest time per call over the repeated runs. */
  readonly rangeUs: readonly [number, number]
}

const percentile = (sorted: ReadonlyArray<number>, p: number): number =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!

/** The two money paths. */
type MoneyPath = "leases" | "database"

const pathLabel = (path: MoneyPath) => path === "leases" ? "leases" : "per-call database holds"

/** One hold and its settlement, as the gateway does for a call; returns its latency in µs. */
const oneCall = (path: MoneyPath, userId: string, keyId: string, i: number) =>
  Effect.gen(function*() {
    const started = performance.now()
    if (path === "leases") {
      const port = yield* AccountsPort.Accounts
      const holdId = yield* port.hold({ userId, keyId, amountNanos: HELD_NANOS, requestId: `bench-${i}` })
      yield* port.settle(holdId, CHARGED_NANOS)
    } else {
      const accounts = yield* Accounts
      const holdId = yield* accounts.hold({
        userId,
        keyId,
        amountNanos: HELD_NANOS,
        requestId: `bench-${i}`,
        nodeId: "bench"
      })
      yield* accounts.settle(holdId, CHARGED_NANOS)
    }
    return (performance.now() - started) * 1000
  })

interface Payer {
  readonly userId: string
  readonly keyId: string
}

const payer = Effect.fnUntraced(function*(name: string) {
  const user = yield* (yield* Users).create({ name })
  const { key } = yield* (yield* Keys).create({ userId: user.id, name: "bench", group: "default" })
  yield* (yield* Accounts).topUp(user.id, INITIAL_NANOS, "benchmark balance", "bench")
  return { userId: user.id, keyId: key.id } satisfies Payer
})

/** Runs `calls` calls, `concurrency` at a time, spread over `payers` (call i pays with payer i mod n). */
const workload = Effect.fnUntraced(
  function*(path: MoneyPath, payers: ReadonlyArray<Payer>, calls: number, concurrency: number, offset: number) {
    const latencies: Array<number> = []
    const started = performance.now()
    yield* Effect.forEach(
      Array.from({ length: calls }, (_, i) => i),
      (i) => {
        const p = payers[i % payers.length]!
        return Effect.map(oneCall(path, p.userId, p.keyId, offset + i), (us) => void latencies.push(us))
      },
      { concurrency, discard: true }
    )
    // The lease path's charges are written by the batch writer: its writes are part of the cost.
    if (path === "leases") yield* Effect.orDie((yield* UsageWriter).flush)
    const elapsedMs = performance.now() - started
    latencies.sort((a, b) => a - b)
    return { elapsedMs, latencies }
  }
)

/** The books after the run: each balance equals its ledger and the initial balance less exactly what was charged. */
const checkBooks = Effect.fnUntraced(
  function*(payers: ReadonlyArray<Payer>, callsPerPayer: ReadonlyMap<string, number>) {
    const accounts = yield* Accounts
    // Idle leases go back to the balance after a second; then the writer has everything written.
    yield* Effect.sleep("1500 millis")
    yield* Effect.orDie((yield* UsageWriter).flush)
    for (const p of payers) {
      const balance = yield* accounts.balance(p.userId)
      const ledger = yield* accounts.ledgerSum(p.userId)
      const expected = INITIAL_NANOS - BigInt(callsPerPayer.get(p.userId) ?? 0) * CHARGED_NANOS
      if (balance !== ledger || balance !== expected) {
        return yield* Effect.die(
          new Error(`books do not balance for ${p.userId}: balance ${balance}, ledger ${ledger}, expected ${expected}`)
        )
      }
    }
  }
)

interface Options {
  readonly calls: number
  readonly warmup: number
  readonly concurrency: number
  readonly repeat: number
}

const benchDatabase = (label: string, url: string, maxConnections: number, options: Options) =>
  Effect.gen(function*() {
    const results: Array<Measurement> = []
    const one = yield* payer("bench-one")
    const many = yield* Effect.forEach(Array.from({ length: options.concurrency }, (_, i) => i), (i) =>
      payer(`bench-many-${i}`))
    const counts = new Map<string, number>()
    const count = (payers: ReadonlyArray<Payer>, calls: number) => {
      for (let i = 0; i < calls; i++) {
        const id = payers[i % payers.length]!.userId
        counts.set(id, (counts.get(id) ?? 0) + 1)
      }
    }
    let offset = 0
    const measure = Effect.fnUntraced(
      function*(path: MoneyPath, workloadName: string, payers: ReadonlyArray<Payer>, concurrency: number) {
        yield* workload(path, payers, options.warmup, concurrency, offset)
        count(payers, options.warmup)
        offset += options.warmup
        const runs: Array<Omit<Measurement, "rangeUs">> = []
        for (let r = 0; r < options.repeat; r++) {
          const { elapsedMs, latencies } = yield* workload(path, payers, options.calls, concurrency, offset)
          count(payers, options.calls)
          offset += options.calls
          runs.push({
            database: label,
            path: pathLabel(path),
            workload: workloadName,
            calls: options.calls,
            concurrency,
            usPerCall: (elapsedMs * 1000) / options.calls,
            callsPerSecond: options.calls / (elapsedMs / 1000),
            p50Us: percentile(latencies, 0.5),
            p99Us: percentile(latencies, 0.99)
          })
          process.stderr.write(
            `${label}, ${pathLabel(path)}, ${workloadName}, run ${r + 1}: ${
              runs[r]!.usPerCall.toFixed(0)
            } µs per call\n`
          )
        }
        runs.sort((a, b) => a.usPerCall - b.usPerCall)
        results.push({
          ...runs[Math.floor((runs.length - 1) / 2)]!,
          rangeUs: [runs[0]!.usPerCall, runs[runs.length - 1]!.usPerCall]
        })
      }
    )
    for (const path of ["leases", "database"] as const) {
      yield* measure(path, "one call at a time, one balance", [one], 1)
      yield* measure(path, `${options.concurrency} at a time, one balance`, [one], options.concurrency)
      yield* measure(
        path,
        `${options.concurrency} at a time, ${options.concurrency} balances`,
        many,
        options.concurrency
      )
    }
    yield* checkBooks([one, ...many], counts)
    return results
  }).pipe(
    Effect.provide(
      Store.layer({
        url,
        masterKey: { secret: Redacted.make("money benchmark master key, not a secret") },
        nodeId: "bench",
        maxConnections
      }).pipe(Layer.orDie)
    )
  )

/** A fresh schema on the PostgreSQL server at `base`, the URL that reaches it, and its removal. */
const postgresSchema = (base: string) => {
  const schema = `bench_money_${Math.random().toString(36).slice(2, 10)}`
  const run = (statement: string) =>
    Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(statement)).pipe(
      Effect.provide(Database.layer(base, { maxConnections: 1 }).pipe(Layer.orDie)),
      Effect.asVoid
    )
  const url = new URL(base)
  url.searchParams.set("options", `-c search_path=${schema}`)
  return { url: url.toString(), create: run(`CREATE SCHEMA ${schema}`), drop: run(`DROP SCHEMA ${schema} CASCADE`) }
}

const serverVersion = (url: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SHOW server_version`).pipe(
    Effect.map((rows) => String(rows[0]?.server_version ?? "?")),
    Effect.provide(Database.layer(url, { maxConnections: 1 }).pipe(Layer.orDie))
  )

const fmt = (n: number) => Math.round(n).toLocaleString("en-US")

/** The results as a Markdown table. @category report */
export const markdown = (results: ReadonlyArray<Measurement>): string =>
  [
    "| database | path | workload | time per call | (range over runs) | calls/s | latency p50 | latency p99 |",
    "|---|---|---|---|---|---|---|---|",
    ...results.map((r) =>
      `| ${r.database} | ${r.path} | ${r.workload} | ${fmt(r.usPerCall)} µs | ${fmt(r.rangeUs[0])}-${
        fmt(r.rangeUs[1])
      } µs | ` +
      `${fmt(r.callsPerSecond)} | ${fmt(r.p50Us)} µs | ${fmt(r.p99Us)} µs |`
    )
  ].join("\n")

const positive = (name: string, value: string | undefined, fallback: number): number => {
  if (value === undefined) return fallback
  const n = Number(value)
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name}: expected a positive integer, got '${value}'`)
  return n
}

const main = async () => {
  const { values } = parseArgs({
    options: {
      calls: { type: "string" },
      warmup: { type: "string" },
      concurrency: { type: "string" },
      repeat: { type: "string" }
    },
    strict: true
  })
  const options: Options = {
    calls: positive("calls", values.calls, 3000),
    warmup: positive("warmup", values.warmup, 300),
    concurrency: positive("concurrency", values.concurrency, 32),
    repeat: positive("repeat", values.repeat, 1)
  }
  const postgres = process.env["MODELGATE_TEST_POSTGRES"]
  const results: Array<Measurement> = []
  const dir = mkdtempSync(join(tmpdir(), "modelgate-bench-money-"))
  try {
    results.push(
      ...await Effect.runPromise(
        benchDatabase("SQLite (WAL, synchronous=NORMAL)", `sqlite:${join(dir, "money.db")}`, 1, options)
      )
    )
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  let postgresVersion: string | undefined
  if (postgres !== undefined && postgres.length > 0) {
    const schema = postgresSchema(postgres)
    await Effect.runPromise(schema.create)
    try {
      postgresVersion = await Effect.runPromise(serverVersion(postgres))
      results.push(...await Effect.runPromise(benchDatabase("PostgreSQL (pool of 10)", schema.url, 10, options)))
    } finally {
      await Effect.runPromise(schema.drop)
    }
  } else {
    process.stderr.write("MODELGATE_TEST_POSTGRES is not set: PostgreSQL skipped\n")
  }
  const cpu = cpus()
  process.stdout.write(
    [
      `Money path: one hold plus one settlement per call: through balance leases (core's Accounts port as the store provides it, charges group-committed), and through per-call database holds (@modelgate/store's Accounts).`,
      `Node ${process.version}, ${cpu.length} x ${cpu[0]?.model ?? "unknown CPU"}` +
      `${postgresVersion !== undefined ? `, PostgreSQL ${postgresVersion}` : ""}; ` +
      `${options.calls} measured calls per workload after ${options.warmup} warm-up calls` +
      `${
        options.repeat > 1 ? `, median of ${options.repeat} runs` : ""
      }. Books checked: balance = ledger = initial - charges.`,
      "",
      markdown(results),
      ""
    ].join("\n")
  )
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack ?? error.message : String(error)}\n`)
  process.exitCode = 1
})
