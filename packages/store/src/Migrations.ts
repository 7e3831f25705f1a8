/**
 * The schema, as ordered migrations, and `migrate` which applies the missing
 * ones at start.
 *
 * effect/sql's `Migrator` is not used: on PostgreSQL it fails with "Migrations
 * already running" when several nodes start together, where we want the later
 * nodes to wait and then find nothing to do. Here the whole run is one
 * transaction that first takes `pg_advisory_xact_lock` (PostgreSQL) or the
 * write lock via `BEGIN IMMEDIATE` (SQLite), then reads `schema_migrations`,
 * so each migration runs exactly once however many processes start at once.
 *
 * Conventions: snake_case; all money is BIGINT nano-dollars; timestamps are
 * BIGINT epoch milliseconds; ids are TEXT (`usr_...`, `key_...`); booleans are
 * BOOLEAN (0/1 in SQLite); JSON values are TEXT.
 *
 * @since 0.1.0
 */
import { Clock, Effect } from "effect"
import { SqlClient, SqlError } from "effect/sql"
import * as Database from "./Database.ts"

/**
 * One migration: an id (strictly increasing) and its statements, per dialect.
 *
 * @category models
 */
export interface Migration {
  readonly id: number
  readonly name: string
  readonly statements: (dialect: "sqlite" | "pg") => ReadonlyArray<string>
  /**
   * On SQLite it rebuilds tables that others reference (SQLite cannot drop a
   * constraint): the run turns foreign keys off around its transaction and
   * checks them all before it commits, as SQLite's documented procedure for
   * such changes says.
   */
  readonly rebuildsTables?: boolean | undefined
}

const initial: Migration = {
  id: 1,
  name: "initial",
  statements: () => [
    `CREATE TABLE users (
      id TEXT PRIMARY KEY,
      name TEXT NOT NULL UNIQUE,
      role TEXT NOT NULL CHECK (role IN ('user', 'admin')),
      password_hash TEXT NULL,
      enabled BOOLEAN NOT NULL DEFAULT TRUE,
      balance_nanos BIGINT NOT NULL DEFAULT 0 CHECK (balance_nanos >= 0),
      source TEXT NOT NULL CHECK (source IN ('config', 'console')),
      created_at BIGINT NOT NULL,
      updated_at BIGINT NOT NULL
    )`,
    `CREATE TABLE groups (
      name TEXT PRIMARY KEY,
      ratio_micros BIGINT NOT NULL,
      rpm INTEGER NULL,
      tpm INTEGER NULL,
      concurrency INTEGER NULL,
      selectable BOOLEAN NOT NULL DEFAULT FALSE,
      source TEXT NOT NULL CHECK (source IN ('config', 'console'))
    )`,
    `CREATE TABLE user_groups (
      user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      group_name TEXT NOT NULL,
      PRIMARY KEY (user_id, group_name)
    )`,
    `CREATE TABLE api_keys (
      id TEXT PRIMARY KEY,
      user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      name TEXT NOT NULL,
      prefix TEXT NOT NULL,
      hash TEXT NOT NULL UNIQUE,
      group_name TEXT NOT NULL,
      models TEXT NOT NULL DEFAULT '[]',
      expires_at BIGINT NULL,
      enabled BOOLEAN NOT NULL DEFAULT TRUE,
      quota_nanos BIGINT NULL,
      daily_budget_nanos BIGINT NULL,
      monthly_budget_nanos BIGINT NULL,
      spent_nanos BIGINT NOT NULL DEFAULT 0,
      rpm INTEGER NULL,
      tpm INTEGER NULL,
      concurrency INTEGER NULL,
      last_used_at BIGINT NULL,
      created_at BIGINT NOT NULL,
      source TEXT NOT NULL CHECK (source IN ('config', 'console')),
      UNIQUE (user_id, name)
    )`,
    `CREATE TABLE models (
      id TEXT PRIMARY KEY,
      display_name TEXT NOT NULL,
      input_nanos_per_million BIGINT NULL,
      output_nanos_per_million BIGINT NULL,
      cached_input_nanos_per_million BIGINT NULL,
      per_request_nanos BIGINT NULL,
      free BOOLEAN NOT NULL DEFAULT FALSE,
      input_token_limit INTEGER NOT NULL,
      output_token_limit INTEGER NOT NULL,
      source TEXT NOT NULL CHECK (source IN ('config', 'console'))
    )`,
    `CREATE TABLE aliases (
      pattern TEXT PRIMARY KEY,
      target TEXT NOT NULL,
      position INTEGER NOT NULL
    )`,
    `CREATE TABLE channels (
      id TEXT PRIMARY KEY,
      name TEXT NOT NULL UNIQUE,
      type TEXT NOT NULL CHECK (type IN ('openai', 'gemini', 'anthropic', 'azure')),
      base_url TEXT NOT NULL,
      api_keys_enc TEXT NOT NULL DEFAULT '[]',
      models TEXT NOT NULL DEFAULT '[]',
      model_map TEXT NOT NULL DEFAULT '{}',
      groups TEXT NOT NULL DEFAULT '[]',
      priority INTEGER NOT NULL DEFAULT 0,
      weight INTEGER NOT NULL DEFAULT 1,
      enabled BOOLEAN NOT NULL DEFAULT TRUE,
      headers TEXT NOT NULL DEFAULT '{}',
      timeouts TEXT NOT NULL,
      api_version TEXT NULL,
      source TEXT NOT NULL CHECK (source IN ('config', 'console')),
      created_at BIGINT NOT NULL,
      updated_at BIGINT NOT NULL
    )`,
    `CREATE TABLE ledger (
      id TEXT PRIMARY KEY,
      user_id TEXT NOT NULL REFERENCES users (id),
      kind TEXT NOT NULL CHECK (kind IN ('topup', 'redemption', 'adjustment', 'hold', 'charge', 'release')),
      amount_nanos BIGINT NOT NULL,
      hold_id TEXT NULL,
      request_id TEXT NULL,
      reason TEXT NULL,
      actor TEXT NULL,
      created_at BIGINT NOT NULL
    )`,
    `CREATE INDEX ledger_user_created ON ledger (user_id, created_at)`,
    `CREATE TABLE holds (
      id TEXT PRIMARY KEY,
      user_id TEXT NOT NULL REFERENCES users (id),
      key_id TEXT NOT NULL,
      amount_nanos BIGINT NOT NULL CHECK (amount_nanos >= 0),
      request_id TEXT NOT NULL,
      created_at BIGINT NOT NULL,
      node_id TEXT NOT NULL
    )`,
    `CREATE INDEX holds_node ON holds (node_id)`,
    `CREATE INDEX holds_created ON holds (created_at)`,
    `CREATE TABLE usage_records (
      id TEXT PRIMARY KEY,
      created_at BIGINT NOT NULL,
      request_id TEXT NOT NULL,
      user_id TEXT NOT NULL,
      key_id TEXT NOT NULL,
      model TEXT NOT NULL,
      upstream_model TEXT NOT NULL,
      channel TEXT NOT NULL,
      dialect_in TEXT NOT NULL,
      dialect_out TEXT NOT NULL,
      stream BOOLEAN NOT NULL,
      prompt_tokens INTEGER NOT NULL,
      completion_tokens INTEGER NOT NULL,
      cached_tokens INTEGER NOT NULL,
      usage_reported BOOLEAN NOT NULL DEFAULT TRUE,
      cost_nanos BIGINT NOT NULL,
      latency_ms INTEGER NOT NULL,
      ttfb_ms INTEGER NULL,
      status INTEGER NOT NULL,
      error_code TEXT NULL,
      attempts INTEGER NOT NULL
    )`,
    `CREATE INDEX usage_user_created ON usage_records (user_id, created_at)`,
    `CREATE INDEX usage_key_created ON usage_records (key_id, created_at)`,
    `CREATE TABLE redemption_codes (
      code_hash TEXT PRIMARY KEY,
      code_prefix TEXT NOT NULL,
      amount_nanos BIGINT NOT NULL CHECK (amount_nanos > 0),
      created_by TEXT NOT NULL,
      created_at BIGINT NOT NULL,
      redeemed_by TEXT NULL,
      redeemed_at BIGINT NULL,
      batch TEXT NOT NULL
    )`,
    `CREATE INDEX redemption_batch ON redemption_codes (batch)`,
    `CREATE TABLE sessions (
      id_hash TEXT PRIMARY KEY,
      user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      csrf_token TEXT NOT NULL,
      created_at BIGINT NOT NULL,
      expires_at BIGINT NOT NULL
    )`
  ]
}

/**
 * Spending per key per UTC day (`d:2026-11-22`) and month (`m:2026-11`), for
 * the keys' daily and monthly budgets. Written by settlement, read by holds.
 */
const keySpend: Migration = {
  id: 2,
  name: "key_spend",
  statements: () => [
    `CREATE TABLE key_spend (
      key_id TEXT NOT NULL,
      period TEXT NOT NULL,
      spent_nanos BIGINT NOT NULL DEFAULT 0,
      PRIMARY KEY (key_id, period)
    )`,
    "CREATE INDEX holds_key ON holds (key_id)"
  ]
}

/**
 * Rate limits on users (requests and tokens per minute, concurrent calls),
 * shared by all of a user's keys; NULL means no limit.
 */
const userLimits: Migration = {
  id: 3,
  name: "user_limits",
  statements: () => [
    "ALTER TABLE users ADD COLUMN rpm INTEGER NULL",
    "ALTER TABLE users ADD COLUMN tpm INTEGER NULL",
    "ALTER TABLE users ADD COLUMN concurrency INTEGER NULL"
  ]
}

/**
 * Routing and resilience: per-channel breaker settings, request parameter
 * defaults and overrides and the `stream_options` switch (JSON text and a
 * boolean; `{}` means the defaults); upstream keys disabled after the upstream
 * refused their credentials, by channel and key fingerprint (a keyed hash,
 * never the key), so a restart or another node does not send calls to them
 * again; and each call's upstream attempts on its usage record (JSON text).
 */
const routing: Migration = {
  id: 4,
  name: "routing",
  statements: () => [
    "ALTER TABLE channels ADD COLUMN breaker TEXT NOT NULL DEFAULT '{}'",
    "ALTER TABLE channels ADD COLUMN params TEXT NOT NULL DEFAULT '{}'",
    "ALTER TABLE channels ADD COLUMN stream_options BOOLEAN NOT NULL DEFAULT TRUE",
    "ALTER TABLE usage_records ADD COLUMN attempt_log TEXT NULL",
    `CREATE TABLE channel_key_states (
      channel_id TEXT NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
      key_fingerprint TEXT NOT NULL,
      status INTEGER NULL,
      reason TEXT NOT NULL,
      disabled_at BIGINT NOT NULL,
      node_id TEXT NOT NULL,
      PRIMARY KEY (channel_id, key_fingerprint)
    )`
  ]
}

/**
 * What a model is, beyond its price: a description for model lists, whether it
 * is an embedding model, whether it is a reasoning model (takes a reasoning
 * effort), and whether its upstream accepts `reasoning_content` in history.
 */
const modelMetadata: Migration = {
  id: 5,
  name: "model_metadata",
  statements: () => [
    "ALTER TABLE models ADD COLUMN description TEXT NULL",
    "ALTER TABLE models ADD COLUMN embedding BOOLEAN NOT NULL DEFAULT FALSE",
    "ALTER TABLE models ADD COLUMN reasoning BOOLEAN NOT NULL DEFAULT FALSE",
    "ALTER TABLE models ADD COLUMN reasoning_content BOOLEAN NOT NULL DEFAULT FALSE"
  ]
}

/**
 * Balance leases and node liveness (see `Purses.ts` and docs/billing.md).
 *
 * A lease is a part of a user's balance reserved by one gateway process, from
 * which it takes the holds of many calls in memory; its 'hold' ledger entry
 * took the amount from `users.balance_nanos`, and charges drawn from it are
 * written in batches. `nodes` records each process's heartbeat, so the holds
 * and leases of a process that died are released by the others (and a live
 * process's long calls never are).
 */
const leases: Migration = {
  id: 6,
  name: "leases",
  statements: () => [
    `CREATE TABLE leases (
      id TEXT PRIMARY KEY,
      user_id TEXT NOT NULL REFERENCES users (id),
      node_id TEXT NOT NULL,
      amount_nanos BIGINT NOT NULL CHECK (amount_nanos >= 0),
      created_at BIGINT NOT NULL,
      updated_at BIGINT NOT NULL
    )`,
    "CREATE INDEX leases_user ON leases (user_id)",
    "CREATE INDEX leases_node ON leases (node_id)",
    `CREATE TABLE nodes (
      id TEXT PRIMARY KEY,
      started_at BIGINT NOT NULL,
      seen_at BIGINT NOT NULL
    )`
  ]
}

/**
 * The log of changes the nodes' in-memory caches depend on (keys, users, the
 * catalog), for the periodic catch-up that backs Redis pub/sub invalidation:
 * `cache_change_seq` holds the last sequence number in one row whose lock
 * serialises writers, so sequence numbers become visible in order and a reader
 * that has seen `n` misses nothing by asking for `seq > n`.
 */
const cacheChanges: Migration = {
  id: 7,
  name: "cache_changes",
  statements: () => [
    "CREATE TABLE cache_change_seq (id INTEGER PRIMARY KEY CHECK (id = 1), seq BIGINT NOT NULL)",
    "INSERT INTO cache_change_seq (id, seq) VALUES (1, 0)",
    `CREATE TABLE cache_changes (
      seq BIGINT PRIMARY KEY,
      topic TEXT NOT NULL CHECK (topic IN ('keys', 'users', 'catalog')),
      ids TEXT NULL,
      created_at BIGINT NOT NULL
    )`,
    "CREATE INDEX cache_changes_created ON cache_changes (created_at)"
  ]
}

/**
 * Writing a batch of usage records and charges is idempotent: a batch whose
 * COMMIT reached the server but whose answer was lost is written again, and
 * must not record or charge its calls twice. Each call's usage record and its
 * charge are keyed by its request id (unique; the batch writer inserts them
 * "or nothing" and applies a charge only for an entry it inserted).
 *
 * Databases written before this migration may hold such duplicates already:
 * every copy after the first keeps its row (so each balance still equals its
 * ledger) under the request id `<id>#duplicate-<row id>`, where an operator
 * can find them.
 */
const idempotentUsage: Migration = {
  id: 8,
  name: "idempotent_usage",
  statements: () => [
    `UPDATE usage_records SET request_id = request_id || '#duplicate-' || id WHERE id IN (
      SELECT id FROM (
        SELECT id, ROW_NUMBER() OVER (PARTITION BY request_id ORDER BY created_at, id) AS n FROM usage_records
      ) ranked WHERE n > 1
    )`,
    "CREATE UNIQUE INDEX usage_records_request ON usage_records (request_id)",
    `UPDATE ledger SET request_id = request_id || '#duplicate-' || id WHERE id IN (
      SELECT id FROM (
        SELECT id, ROW_NUMBER() OVER (PARTITION BY request_id ORDER BY created_at, id) AS n
        FROM ledger WHERE kind = 'charge' AND request_id IS NOT NULL
      ) ranked WHERE n > 1
    )`,
    "CREATE UNIQUE INDEX ledger_charge_request ON ledger (request_id) WHERE kind = 'charge'"
  ]
}

/**
 * What the configuration file declared for each user and key it provisions,
 * as it was last applied (JSON; NULL for rows made in the console, and for
 * rows provisioned before this migration). A restart applies only what the
 * file changed since, so it never undoes a later action taken in the console
 * or with the CLI (see `Provisioning`).
 */
const configDeclared: Migration = {
  id: 9,
  name: "config_declared",
  statements: () => [
    "ALTER TABLE users ADD COLUMN config_declared TEXT NULL",
    "ALTER TABLE api_keys ADD COLUMN config_declared TEXT NULL"
  ]
}

/**
 * Deleted users: a user is never removed from the table (the ledger and the
 * usage records point at it), but deleting one anonymises the row (its name
 * becomes `deleted-<id>`), revokes its keys and marks the time here.
 */
const deletedUsers: Migration = {
  id: 10,
  name: "deleted_users",
  statements: () => ["ALTER TABLE users ADD COLUMN deleted_at BIGINT NULL"]
}

/**
 * Coding agents through the gateway: a model's price for prompt tokens written
 * to the upstream's prompt cache (Anthropic's `cache_creation_input_tokens`;
 * NULL: the input price), an OpenAI channel's switch for relaying Responses
 * API calls to it as they are, and on each usage record the cache writes it
 * was charged for and what the translation left out of the request (a
 * Responses client's hosted tools on another dialect's model).
 */
const agents: Migration = {
  id: 11,
  name: "agents",
  statements: () => [
    "ALTER TABLE models ADD COLUMN cache_write_nanos_per_million BIGINT NULL",
    "ALTER TABLE channels ADD COLUMN responses BOOLEAN NOT NULL DEFAULT FALSE",
    "ALTER TABLE usage_records ADD COLUMN cache_write_tokens BIGINT NOT NULL DEFAULT 0",
    "ALTER TABLE usage_records ADD COLUMN note TEXT NULL"
  ]
}

/**
 * The request log (docs/api.md): what a usage record adds for it (the tokens
 * spent reasoning, and the message the caller got when the call failed or was
 * refused), and the indexes its pages need. A page is the newest records
 * matching a filter, after a `(created_at, id)` cursor, so each filter has an
 * index that ends in `(created_at, id)`: every record, per user, key, model,
 * channel and error code, and the failed ones (status 400 and above, a small
 * part of all records). The per-user and per-key indexes are replaced by ones
 * that end in the id too. Building them locks the table for writes while it
 * runs (once, at the upgrade; per million records about 2.5 s on SQLite and
 * 6 s on PostgreSQL on a 2-core machine).
 */
const requestLog: Migration = {
  id: 12,
  name: "request_log",
  statements: () => [
    "ALTER TABLE usage_records ADD COLUMN reasoning_tokens INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE usage_records ADD COLUMN error_message TEXT NULL",
    "DROP INDEX usage_user_created",
    "DROP INDEX usage_key_created",
    "CREATE INDEX usage_created ON usage_records (created_at, id)",
    "CREATE INDEX usage_user_created ON usage_records (user_id, created_at, id)",
    "CREATE INDEX usage_key_created ON usage_records (key_id, created_at, id)",
    "CREATE INDEX usage_model_created ON usage_records (model, created_at, id)",
    "CREATE INDEX usage_channel_created ON usage_records (channel, created_at, id)",
    "CREATE INDEX usage_error_created ON usage_records (error_code, created_at, id) WHERE error_code IS NOT NULL",
    "CREATE INDEX usage_failed_created ON usage_records (created_at, id) WHERE status >= 400"
  ]
}

/**
 * The books match the upstream's bill (docs/billing.md):
 *
 * - a call is charged what it cost even above its hold, so a balance may go
 *   below zero (then every call that may cost anything is refused until a
 *   top-up), and so may a lease whose calls cost more than it reserved while
 *   the database could not be reached to take the rest: the `CHECK (... >= 0)`
 *   of `users.balance_nanos` and `leases.amount_nanos` go (PostgreSQL drops
 *   them; SQLite, which cannot drop a constraint, rebuilds the two tables);
 * - a model's `media_part_tokens` (JSON: tokens a hold counts per media part,
 *   per kind; NULL: the defaults);
 * - deleting a user or revoking a key is final: `retired_entries` keeps the
 *   configuration file's entries (`users:alice`, `keys:alice/laptop`) whose
 *   user or key was deleted, so a restart never provisions them again (nor
 *   credits an opening balance twice), and `retired_secrets` the hashes of
 *   revoked or deleted keys' secrets, which never authenticate again.
 */
const books: Migration = {
  id: 13,
  name: "books",
  rebuildsTables: true,
  statements: (dialect) => [
    ...(dialect === "pg"
      ? [
        "ALTER TABLE users DROP CONSTRAINT IF EXISTS users_balance_nanos_check",
        "ALTER TABLE leases DROP CONSTRAINT IF EXISTS leases_amount_nanos_check"
      ]
      : [
        `CREATE TABLE users_rebuilt (
          id TEXT PRIMARY KEY,
          name TEXT NOT NULL UNIQUE,
          role TEXT NOT NULL CHECK (role IN ('user', 'admin')),
          password_hash TEXT NULL,
          enabled BOOLEAN NOT NULL DEFAULT TRUE,
          balance_nanos BIGINT NOT NULL DEFAULT 0,
          source TEXT NOT NULL CHECK (source IN ('config', 'console')),
          created_at BIGINT NOT NULL,
          updated_at BIGINT NOT NULL,
          rpm INTEGER NULL,
          tpm INTEGER NULL,
          concurrency INTEGER NULL,
          config_declared TEXT NULL,
          deleted_at BIGINT NULL
        )`,
        `INSERT INTO users_rebuilt (id, name, role, password_hash, enabled, balance_nanos, source, created_at,
          updated_at, rpm, tpm, concurrency, config_declared, deleted_at)
          SELECT id, name, role, password_hash, enabled, balance_nanos, source, created_at, updated_at, rpm, tpm,
          concurrency, config_declared, deleted_at FROM users`,
        "DROP TABLE users",
        "ALTER TABLE users_rebuilt RENAME TO users",
        `CREATE TABLE leases_rebuilt (
          id TEXT PRIMARY KEY,
          user_id TEXT NOT NULL REFERENCES users (id),
          node_id TEXT NOT NULL,
          amount_nanos BIGINT NOT NULL,
          created_at BIGINT NOT NULL,
          updated_at BIGINT NOT NULL
        )`,
        `INSERT INTO leases_rebuilt (id, user_id, node_id, amount_nanos, created_at, updated_at)
          SELECT id, user_id, node_id, amount_nanos, created_at, updated_at FROM leases`,
        "DROP TABLE leases",
        "ALTER TABLE leases_rebuilt RENAME TO leases",
        "CREATE INDEX leases_user ON leases (user_id)",
        "CREATE INDEX leases_node ON leases (node_id)"
      ]),
    "ALTER TABLE models ADD COLUMN media_part_tokens TEXT NULL",
    "CREATE TABLE retired_entries (entry TEXT PRIMARY KEY, retired_at BIGINT NOT NULL)",
    "CREATE TABLE retired_secrets (hash TEXT PRIMARY KEY, retired_at BIGINT NOT NULL)"
  ]
}

/**
 * The clouds as channel types (docs/configuration.md): `vertex` (Google
 * Vertex AI) and `bedrock` (AWS Bedrock) join the channel types the `type`
 * check allows, and `cloud` (JSON: a Vertex channel's project, location and
 * publishers, a Bedrock channel's region; NULL for other types) says where
 * one is served. Its credentials are its keys, encrypted like every
 * upstream key. PostgreSQL replaces the check; SQLite, which cannot change
 * one, rebuilds the table (no index is on it; `channel_key_states` refers to
 * it by name, and still does).
 */
const clouds: Migration = {
  id: 14,
  name: "clouds",
  rebuildsTables: true,
  statements: (dialect) =>
    dialect === "pg"
      ? [
        "ALTER TABLE channels DROP CONSTRAINT IF EXISTS channels_type_check",
        `ALTER TABLE channels ADD CONSTRAINT channels_type_check
          CHECK (type IN ('openai', 'gemini', 'anthropic', 'azure', 'vertex', 'bedrock'))`,
        "ALTER TABLE channels ADD COLUMN cloud TEXT NULL"
      ]
      : [
        `CREATE TABLE channels_rebuilt (
          id TEXT PRIMARY KEY,
          name TEXT NOT NULL UNIQUE,
          type TEXT NOT NULL CHECK (type IN ('openai', 'gemini', 'anthropic', 'azure', 'vertex', 'bedrock')),
          base_url TEXT NOT NULL,
          api_keys_enc TEXT NOT NULL DEFAULT '[]',
          models TEXT NOT NULL DEFAULT '[]',
          model_map TEXT NOT NULL DEFAULT '{}',
          groups TEXT NOT NULL DEFAULT '[]',
          priority INTEGER NOT NULL DEFAULT 0,
          weight INTEGER NOT NULL DEFAULT 1,
          enabled BOOLEAN NOT NULL DEFAULT TRUE,
          headers TEXT NOT NULL DEFAULT '{}',
          timeouts TEXT NOT NULL,
          api_version TEXT NULL,
          source TEXT NOT NULL CHECK (source IN ('config', 'console')),
          created_at BIGINT NOT NULL,
          updated_at BIGINT NOT NULL,
          breaker TEXT NOT NULL DEFAULT '{}',
          params TEXT NOT NULL DEFAULT '{}',
          stream_options BOOLEAN NOT NULL DEFAULT TRUE,
          responses BOOLEAN NOT NULL DEFAULT FALSE,
          cloud TEXT NULL
        )`,
        `INSERT INTO channels_rebuilt (id, name, type, base_url, api_keys_enc, models, model_map, groups, priority,
          weight, enabled, headers, timeouts, api_version, source, created_at, updated_at, breaker, params,
          stream_options, responses)
          SELECT id, name, type, base_url, api_keys_enc, models, model_map, groups, priority, weight, enabled,
          headers, timeouts, api_version, source, created_at, updated_at, breaker, params, stream_options,
          responses FROM channels`,
        "DROP TABLE channels",
        "ALTER TABLE channels_rebuilt RENAME TO channels"
      ]
}

/**
 * All migrations, in order. Append only: never edit one that has shipped.
 *
 * @category migrations
 */
export const migrations: ReadonlyArray<Migration> = [
  initial,
  keySpend,
  userLimits,
  routing,
  modelMetadata,
  leases,
  cacheChanges,
  idempotentUsage,
  configDeclared,
  deletedUsers,
  agents,
  requestLog,
  books,
  clouds
]

/** An arbitrary constant naming modelgate's migration lock among advisory locks. */
const PG_LOCK_KEY = 727_460_131

/**
 * Applies the migrations that have not run yet, in one transaction under a
 * database-wide lock, and returns the names of those it applied (empty when
 * the schema was already current).
 *
 * @category migrations
 */
export const migrate: Effect.Effect<ReadonlyArray<string>, SqlError.SqlError, SqlClient.SqlClient> = Effect.gen(
  function*() {
    const sql = yield* SqlClient.SqlClient
    const dialect = sql.onDialectOrElse({ pg: () => "pg" as const, orElse: () => "sqlite" as const })
    const run = Effect.gen(function*() {
      // A migration (or waiting for another node's) may take longer than any statement of a call.
      if (dialect === "pg") yield* sql.unsafe("SET LOCAL statement_timeout = 0")
      if (dialect === "pg") yield* sql.unsafe(`SELECT pg_advisory_xact_lock(${PG_LOCK_KEY})`)
      yield* sql.unsafe(
        "CREATE TABLE IF NOT EXISTS schema_migrations (id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)"
      )
      const rows = yield* sql<{ readonly id: unknown }>`SELECT id FROM schema_migrations`
      const done = new Set(rows.map((row) => Number(row.id)))
      const applied: Array<string> = []
      let rebuilt = false
      for (const migration of migrations) {
        if (done.has(migration.id)) continue
        for (const statement of migration.statements(dialect)) yield* sql.unsafe(statement)
        const now = yield* Clock.currentTimeMillis
        yield* sql`INSERT INTO schema_migrations (id, name, applied_at) VALUES (${migration.id}, ${migration.name}, ${now})`
        applied.push(`${migration.id}_${migration.name}`)
        rebuilt ||= migration.rebuildsTables === true
      }
      if (dialect === "sqlite" && rebuilt) {
        // Foreign keys were off while tables were rebuilt: every reference must still hold before the commit.
        const broken = yield* sql.unsafe<Record<string, unknown>>("PRAGMA foreign_key_check")
        if (broken.length > 0) {
          return yield* new SqlError.SqlError({
            reason: new SqlError.ConstraintError({
              cause: broken,
              message: `rebuilding tables broke ${broken.length} reference(s), the first in ${String(broken[0]!.table)}`
            })
          })
        }
      }
      return applied
    })
    if (dialect === "pg") {
      const bounds = yield* Effect.serviceOption(Database.Bounds)
      const transaction = sql.withTransaction(run)
      return yield* (bounds._tag === "Some" ? bounds.value.unbounded(transaction) : transaction)
    }
    // SQLite cannot drop a constraint: a migration that must rebuilds the table, with foreign keys off around
    // its transaction (inside one the pragma does nothing) and checked before the commit. The one connection
    // is this process's, and nothing else runs while it migrates.
    const pending = yield* sql<{ readonly id: unknown }>`SELECT id FROM schema_migrations`.pipe(
      Effect.map((rows) => new Set(rows.map((row) => Number(row.id)))),
      Effect.catch(() => Effect.succeed(new Set<number>()))
    )
    const rebuilds = migrations.some((migration) => migration.rebuildsTables === true && !pending.has(migration.id))
    if (!rebuilds) {
      return yield* sql.withTransaction(run).pipe(Effect.provideService(SqlClient.BeginTransaction, "BEGIN IMMEDIATE"))
    }
    yield* sql.unsafe("PRAGMA foreign_keys = OFF")
    return yield* sql.withTransaction(run).pipe(
      Effect.provideService(SqlClient.BeginTransaction, "BEGIN IMMEDIATE"),
      Effect.ensuring(Effect.orDie(sql.unsafe("PRAGMA foreign_keys = ON")))
    )
  }
).pipe(Effect.withSpan("Migrations.migrate"))
