/**
 * What deleting a user or revoking a key leaves behind so it is final (issue
 * 20): the configuration file's entries whose user or key was deleted
 * (`users:alice`, `keys:alice/laptop`), which provisioning never applies
 * again (so a restart brings back no user, no key and no second opening
 * balance), and the hashes of revoked or deleted keys' secrets, which never
 * authenticate again, whatever entry or API call declares them.
 *
 * Each function runs in the caller's transaction.
 *
 * @since 0.1.0
 */
import { Clock, Effect } from "effect"
import type { SqlClient, SqlError } from "effect/sql"
import * as Row from "./row.ts"

/** Where a revoked key's hash starts (the secret's hash is replaced). */
const REVOKED = "revoked:"

/** Marks a configuration entry (`users:NAME`, `keys:USER/KEY`) as deleted, for good. */
export const retireEntry = (sql: SqlClient.SqlClient, entry: string): Effect.Effect<void, SqlError.SqlError> =>
  Effect.flatMap(
    Clock.currentTimeMillis,
    (now) =>
      Effect.asVoid(sql`INSERT INTO retired_entries (entry, retired_at) VALUES (${entry}, ${now})
      ON CONFLICT (entry) DO NOTHING`)
  )

/** Keeps a key's secret hash (unless it is already a revoked marker) so the secret never authenticates again. */
export const retireSecret = (sql: SqlClient.SqlClient, hash: string): Effect.Effect<void, SqlError.SqlError> =>
  hash.startsWith(REVOKED) ?
    Effect.void :
    Effect.flatMap(
      Clock.currentTimeMillis,
      (now) =>
        Effect.asVoid(sql`INSERT INTO retired_secrets (hash, retired_at) VALUES (${hash}, ${now})
      ON CONFLICT (hash) DO NOTHING`)
    )

/**
 * Before a key is revoked or deleted: its secret is retired, and a key the
 * configuration file declared is retired as an entry too.
 */
export const retireKey = (sql: SqlClient.SqlClient, keyId: string): Effect.Effect<void, SqlError.SqlError> =>
  Effect.gen(function*() {
    const rows = yield* sql`SELECT k.hash, k.name, k.source, u.name AS user_name FROM api_keys k
      JOIN users u ON u.id = k.user_id WHERE k.id = ${keyId}`
    const row = rows[0]
    if (row === undefined) return
    yield* retireSecret(sql, Row.str(row.hash, "api_keys.hash"))
    if (row.source === "config") {
      yield* retireEntry(sql, `keys:${Row.str(row.user_name, "users.name")}/${Row.str(row.name, "api_keys.name")}`)
    }
  })

/** Whether a configuration entry was deleted. */
export const isRetiredEntry = (sql: SqlClient.SqlClient, entry: string): Effect.Effect<boolean, SqlError.SqlError> =>
  Effect.map(sql`SELECT 1 AS found FROM retired_entries WHERE entry = ${entry}`, (rows) => rows.length > 0)

/** Whether a secret's hash belongs to a key that was revoked or deleted. */
export const isRetiredSecret = (sql: SqlClient.SqlClient, hash: string): Effect.Effect<boolean, SqlError.SqlError> =>
  Effect.map(sql`SELECT 1 AS found FROM retired_secrets WHERE hash = ${hash}`, (rows) => rows.length > 0)
