/**
 * Test databases: a fresh SQLite file per suite, and (when
 * MODELGATE_TEST_POSTGRES is set) a fresh PostgreSQL schema per suite, reached
 * through `search_path` in the connection URL and dropped afterwards.
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Database from "../src/Database.ts"
import * as Store from "../src/Store.ts"

export const postgresUrl: string | undefined = process.env["MODELGATE_TEST_POSTGRES"]

export interface TestDatabase {
  readonly name: "sqlite" | "postgres"
  readonly url: string
  readonly cleanup: () => Promise<void>
}

const random = () => Math.random().toString(36).slice(2, 10)

export const makeSqlite = async (): Promise<TestDatabase> => {
  const dir = mkdtempSync(join(tmpdir(), "modelgate-store-"))
  return {
    name: "sqlite",
    url: `sqlite:${join(dir, "nested", "test.db")}`,
    cleanup: async () => rmSync(dir, { recursive: true, force: true })
  }
}

const adminRun = <A>(base: string, effect: Effect.Effect<A, unknown, SqlClient.SqlClient>) =>
  Effect.runPromise(Effect.provide(effect, PgClient.layer({ url: Redacted.make(base), maxConnections: 1 })))

export const makePostgres = async (base: string): Promise<TestDatabase> => {
  const schema = `test_${random()}`
  await adminRun(base, Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(`CREATE SCHEMA ${schema}`)))
  const url = new URL(base)
  url.searchParams.set("options", `-c search_path=${schema}`)
  return {
    name: "postgres",
    url: url.toString(),
    cleanup: () =>
      adminRun(base, Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(`DROP SCHEMA ${schema} CASCADE`))).then(
        () => undefined
      )
  }
}

export const databaseLayer = (db: TestDatabase, maxConnections = 20) =>
  Database.layer(db.url, { maxConnections }).pipe(Layer.orDie)

/** The whole store on a fresh database, dropped when the layer is released. */
export const storeLayer = (make: () => Promise<TestDatabase>) =>
  Layer.unwrap(Effect.map(
    Effect.acquireRelease(Effect.promise(make), (db) => Effect.promise(db.cleanup)),
    (db) =>
      Store.layer({
        url: db.url,
        masterKey: { secret: Redacted.make("test secret of sufficient length") },
        nodeId: "node-test",
        maxConnections: 20
      }).pipe(Layer.orDie)
  ))
