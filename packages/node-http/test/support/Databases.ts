/**
 * Databases for end-to-end tests: always SQLite; PostgreSQL too when
 * MODELGATE_TEST_POSTGRES names a server (a fresh schema per use, reached
 * through `search_path` in the URL, dropped afterwards).
 */
import * as Database from "@modelgate/store/Database"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"

export const postgresUrl: string | undefined = process.env["MODELGATE_TEST_POSTGRES"]

/** Runs statements against a database URL. */
export const runSql = <A>(url: string, f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
  Effect.runPromise(
    Effect.scoped(
      Effect.provide(
        Effect.flatMap(Effect.service(SqlClient.SqlClient), f),
        Database.layer(url, { maxConnections: 2 }).pipe(Layer.orDie)
      )
    )
  )

/** A fresh PostgreSQL schema and the URL that reaches it. */
export const freshPostgres = async (
  base: string
): Promise<{ readonly url: string; readonly drop: () => Promise<void> }> => {
  const schema = `gw_${Math.random().toString(36).slice(2, 10)}`
  await runSql(base, (sql) => sql.unsafe(`CREATE SCHEMA ${schema}`))
  const url = new URL(base)
  url.searchParams.set("options", `-c search_path=${schema}`)
  return {
    url: url.toString(),
    drop: () => runSql(base, (sql) => sql.unsafe(`DROP SCHEMA ${schema} CASCADE`)).then(() => undefined)
  }
}

/**
 * The balance and the ledger sum of a user, what the user's balance leases
 * reserve, and the open holds and leases (of every user), read straight from
 * the database.
 */
export const books = (url: string, user: string) =>
  runSql(url, (sql) =>
    Effect.gen(function*() {
      // One statement, so one snapshot: the batch writer may commit between two separate reads.
      const rows = yield* sql`SELECT u.balance_nanos AS balance,
          (SELECT COALESCE(SUM(l.amount_nanos), 0) FROM ledger l WHERE l.user_id = u.id) AS ledger,
          (SELECT COALESCE(SUM(r.amount_nanos), 0) FROM leases r WHERE r.user_id = u.id) AS reserved,
          (SELECT COUNT(*) FROM holds) + (SELECT COUNT(*) FROM leases) AS open_holds
        FROM users u WHERE u.name = ${user}`
      const row = rows[0]!
      return {
        balance: BigInt(row.balance as bigint),
        ledger: BigInt(row.ledger as bigint),
        reserved: BigInt(row.reserved as bigint),
        openHolds: Number(row.open_holds)
      }
    }))

/**
 * `books` once every hold and balance lease is closed (calls settled, charges
 * written, idle leases released), so the balance is final; fails after `timeoutMs`.
 */
export const settledBooks = async (url: string, user: string, timeoutMs = 10_000) => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const b = await books(url, user)
    if (b.openHolds === 0) return b
    if (Date.now() > deadline) throw new Error(`holds or leases still open after ${timeoutMs} ms: ${b.openHolds}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

/** Every user's balance and ledger sum, read straight from the database. */
export const allBooks = (url: string) =>
  runSql(url, (sql) =>
    Effect.map(
      sql`SELECT u.name AS name, u.balance_nanos AS balance, COALESCE(SUM(l.amount_nanos), 0) AS ledger
        FROM users u LEFT JOIN ledger l ON l.user_id = u.id GROUP BY u.id, u.name, u.balance_nanos ORDER BY u.name`,
      (rows) =>
        rows.map((row) => ({
          name: row.name as string,
          balance: BigInt(row.balance as bigint),
          ledger: BigInt(row.ledger as bigint)
        }))
    ))

/** Runs a statement against a database URL (tests that stage a crash use it to age rows). */
export const execSql = (url: string, statement: string) =>
  runSql(url, (sql) => sql.unsafe(statement)).then(() => undefined)
