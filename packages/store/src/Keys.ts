/**
 * API keys. The secret is generated here, shown once (the return value of
 * `create`), and stored only as its `KeyHasher` hash; a revoked key also loses
 * its hash, so it can never authenticate again.
 *
 * `layerKeyStore` is core's `KeyStore` port straight on the database (hash,
 * then one indexed lookup); node-http puts its in-memory cache in front,
 * filled by `loadAll`.
 *
 * @since 0.1.0
 */
import { GatewayError, KeyStore } from "@modelgate/core"
import type { Declaration, Domain } from "@modelgate/core"
import { OutageLog } from "@modelgate/core"
import { Cause, Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql"
import { newId } from "./internal/random.ts"
import * as Retired from "./internal/Retired.ts"
import * as Row from "./internal/row.ts"
import { generateApiKey, KeyHasher, keyPrefix } from "./Secrets.ts"
import { InvalidInput } from "./StoreError.ts"
import type { Conflict } from "./StoreError.ts"
import { type Source, uniqueAsConflict } from "./Users.ts"

/**
 * A key as stored, without its secret.
 *
 * @category models
 */
export interface KeyRecord {
  readonly id: string
  readonly userId: string
  readonly name: string
  readonly prefix: string
  readonly group: string
  readonly models: ReadonlyArray<string>
  readonly expiresAt: number | null
  readonly enabled: boolean
  /** True once revoked: the hash is gone and the key can never be enabled again. */
  readonly revoked: boolean
  readonly quotaNanos: bigint | null
  readonly dailyBudgetNanos: bigint | null
  readonly monthlyBudgetNanos: bigint | null
  readonly spentNanos: bigint
  readonly limits: Domain.Limits
  readonly lastUsedAt: number | null
  readonly createdAt: number
  readonly source: Source
}

/**
 * Input of `Keys.create`: a declared key (core's `Declaration.Key`) of the
 * user `userId`. Without `secret` a new one is generated.
 *
 * @category models
 */
export interface CreateKey extends Omit<Declaration.Key, "user" | "secret"> {
  readonly userId: string
  /** A fixed secret (from the config file); it must start with `sk-` and be at least 20 characters. */
  readonly secret?: string | undefined
  readonly source?: Source | undefined
}

/**
 * Changes to a key's settings: only the fields given change (`null` clears a
 * cap or limit). A key's `enabled` state changes with `setEnabled`.
 *
 * @category models
 */
export interface KeyChanges {
  readonly name?: string | undefined
  readonly models?: ReadonlyArray<string> | undefined
  readonly expiresAt?: number | null | undefined
  readonly quotaNanos?: bigint | null | undefined
  readonly dailyBudgetNanos?: bigint | null | undefined
  readonly monthlyBudgetNanos?: bigint | null | undefined
  readonly limits?: Partial<Domain.Limits> | undefined
}

/**
 * A key to be cached in memory: the admission record and its secret's hash.
 *
 * @category models
 */
export interface CachedKey {
  readonly hash: string
  readonly key: Domain.ApiKey
}

const REVOKED = "revoked:"

/** Whether a stored hash marks a revoked key (revoking replaces the hash). @internal @category internal */
export const isRevokedHash = (hash: string): boolean => hash.startsWith(REVOKED)

/** Shared with the other repositories of this package, not a stable API. @internal @category internal */
export const decodeKey = (row: Record<string, unknown>): KeyRecord => ({
  id: Row.str(row.id, "api_keys.id"),
  userId: Row.str(row.user_id, "api_keys.user_id"),
  name: Row.str(row.name, "api_keys.name"),
  prefix: Row.str(row.prefix, "api_keys.prefix"),
  group: Row.str(row.group_name, "api_keys.group_name"),
  models: Row.stringArray(row.models, "api_keys.models"),
  expiresAt: Row.intOrNull(row.expires_at, "api_keys.expires_at"),
  enabled: Row.bool(row.enabled, "api_keys.enabled"),
  revoked: Row.str(row.hash, "api_keys.hash").startsWith(REVOKED),
  quotaNanos: Row.bigOrNull(row.quota_nanos, "api_keys.quota_nanos"),
  dailyBudgetNanos: Row.bigOrNull(row.daily_budget_nanos, "api_keys.daily_budget_nanos"),
  monthlyBudgetNanos: Row.bigOrNull(row.monthly_budget_nanos, "api_keys.monthly_budget_nanos"),
  spentNanos: Row.big(row.spent_nanos, "api_keys.spent_nanos"),
  limits: {
    rpm: Row.intOrNull(row.rpm, "api_keys.rpm"),
    tpm: Row.intOrNull(row.tpm, "api_keys.tpm"),
    concurrency: Row.intOrNull(row.concurrency, "api_keys.concurrency")
  },
  lastUsedAt: Row.intOrNull(row.last_used_at, "api_keys.last_used_at"),
  createdAt: Row.int(row.created_at, "api_keys.created_at"),
  source: Row.str(row.source, "api_keys.source") === "config" ? "config" : "console"
})

const decodeApiKey = (row: Record<string, unknown>): Domain.ApiKey => {
  const key = decodeKey(row)
  return {
    id: key.id,
    name: key.name,
    prefix: key.prefix,
    userId: key.userId,
    userName: Row.str(row.user_name, "users.name"),
    userRole: Row.str(row.user_role, "users.role") === "admin" ? "admin" : "user",
    userEnabled: Row.bool(row.user_enabled, "users.enabled"),
    group: key.group,
    models: key.models,
    expiresAt: key.expiresAt,
    enabled: key.enabled,
    quotaNanos: key.quotaNanos,
    dailyBudgetNanos: key.dailyBudgetNanos,
    monthlyBudgetNanos: key.monthlyBudgetNanos,
    limits: key.limits,
    userLimits: {
      rpm: Row.intOrNull(row.user_rpm, "users.rpm"),
      tpm: Row.intOrNull(row.user_tpm, "users.tpm"),
      concurrency: Row.intOrNull(row.user_concurrency, "users.concurrency")
    }
  }
}

const decodeCached = (row: Record<string, unknown>): CachedKey => ({
  hash: Row.str(row.hash, "api_keys.hash"),
  key: decodeApiKey(row)
})

const JOINED = "SELECT k.*, u.name AS user_name, u.role AS user_role, u.enabled AS user_enabled, " +
  "u.rpm AS user_rpm, u.tpm AS user_tpm, u.concurrency AS user_concurrency " +
  "FROM api_keys k JOIN users u ON u.id = k.user_id"

/**
 * Checks a fixed secret supplied by configuration.
 *
 * @category validation
 */
export const validateSecret = (secret: string, path: string): Effect.Effect<void, InvalidInput> =>
  secret.startsWith("sk-") && secret.length >= 20 && !/\s/.test(secret)
    ? Effect.void
    : Effect.fail(
      new InvalidInput({
        path,
        message: `${path}: a key secret must start with 'sk-', have at least 20 characters and no spaces`
      })
    )

/**
 * The answer to a key that is not in memory while the database cannot be
 * reached: it may exist, so it is neither accepted nor refused as unknown.
 *
 * @category errors
 */
export const keyLookupUnavailable = new GatewayError.DatabaseUnavailable({
  message: "The gateway cannot reach its database right now to check this API key. Retry in 5 s.",
  retryAfterSeconds: 5
})

const keyNotFound = (id: string) => new GatewayError.ResourceNotFound({ message: `No API key with id '${id}'.` })

/**
 * The keys repository.
 *
 * @category services
 */
export class Keys extends Context.Service<Keys, {
  /** Creates a key and returns it with its secret, which is not stored and cannot be shown again. */
  readonly create: (input: CreateKey) => Effect.Effect<
    { readonly key: KeyRecord; readonly secret: string },
    InvalidInput | Conflict | GatewayError.ResourceNotFound | SqlError.SqlError
  >
  readonly findById: (id: string) => Effect.Effect<KeyRecord | undefined, SqlError.SqlError>
  /** The keys of a user, newest first. */
  readonly list: (userId: string) => Effect.Effect<ReadonlyArray<KeyRecord>, SqlError.SqlError>
  /** Changes the fields `changes` names; a name another key of the user has is a `Conflict`. */
  readonly update: (
    id: string,
    changes: KeyChanges
  ) => Effect.Effect<void, GatewayError.ResourceNotFound | InvalidInput | Conflict | SqlError.SqlError>
  readonly setEnabled: (
    id: string,
    enabled: boolean
  ) => Effect.Effect<void, GatewayError.ResourceNotFound | InvalidInput | SqlError.SqlError>
  /** Disables the key for good and forgets its hash. */
  readonly revoke: (id: string) => Effect.Effect<void, GatewayError.ResourceNotFound | SqlError.SqlError>
  readonly remove: (id: string) => Effect.Effect<void, GatewayError.ResourceNotFound | SqlError.SqlError>
  /** The key (joined with its user) whose secret has this hash. */
  readonly findByHash: (hash: string) => Effect.Effect<Domain.ApiKey | undefined, SqlError.SqlError>
  /** Every key that can authenticate (not revoked), for the in-memory cache. */
  readonly loadAll: Effect.Effect<ReadonlyArray<CachedKey>, SqlError.SqlError>
  /** Those of these keys that can authenticate (a key not returned was revoked or deleted), for the cache. */
  readonly loadByIds: (ids: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<CachedKey>, SqlError.SqlError>
  /** The keys of these users that can authenticate, for the cache. */
  readonly loadByUsers: (userIds: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<CachedKey>, SqlError.SqlError>
  /** Records last use for many keys in one transaction (only ever moves `last_used_at` forward). */
  readonly touchLastUsed: (
    uses: ReadonlyArray<{ readonly keyId: string; readonly at: number }>
  ) => Effect.Effect<void, SqlError.SqlError>
}>()("modelgate/store/Keys") {
  /** @category layers */
  static readonly layer = Layer.effect(
    Keys,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const hasher = yield* KeyHasher

      const findById = (id: string) =>
        Effect.map(
          sql`SELECT * FROM api_keys WHERE id = ${id}`,
          (rows) => rows[0] === undefined ? undefined : decodeKey(rows[0])
        )

      const create = Effect.fn("Keys.create")(function*(input: CreateKey) {
        if (input.name.trim().length === 0 || input.name.length > 100) {
          return yield* new InvalidInput({ path: "name", message: "name: a key name must have 1 to 100 characters" })
        }
        if (input.group.trim().length === 0) {
          return yield* new InvalidInput({ path: "group", message: "group: a key must belong to a group" })
        }
        if (input.secret !== undefined) {
          yield* validateSecret(input.secret, "secret")
          if (yield* Retired.isRetiredSecret(sql, hasher.hash(input.secret))) {
            return yield* new InvalidInput({
              path: "secret",
              message:
                "secret: this secret was revoked (or its key deleted): revocation is final, give the key another secret"
            })
          }
        }
        const generated = input.secret === undefined
          ? generateApiKey()
          : { secret: input.secret, prefix: keyPrefix(input.secret) }
        const users = yield* sql`SELECT id FROM users WHERE id = ${input.userId}`
        if (users.length === 0) {
          return yield* new GatewayError.ResourceNotFound({ message: `No user with id '${input.userId}'.` })
        }
        const id = newId("key")
        const now = yield* Clock.currentTimeMillis
        yield* sql`INSERT INTO api_keys ${
          sql.insert({
            id,
            user_id: input.userId,
            name: input.name,
            prefix: generated.prefix,
            hash: hasher.hash(generated.secret),
            group_name: input.group,
            models: JSON.stringify(input.models ?? []),
            expires_at: input.expiresAt ?? null,
            enabled: input.enabled ?? true,
            quota_nanos: input.quotaNanos ?? null,
            daily_budget_nanos: input.dailyBudgetNanos ?? null,
            monthly_budget_nanos: input.monthlyBudgetNanos ?? null,
            spent_nanos: 0n,
            rpm: input.limits?.rpm ?? null,
            tpm: input.limits?.tpm ?? null,
            concurrency: input.limits?.concurrency ?? null,
            last_used_at: null,
            created_at: now,
            source: input.source ?? "console"
          })
        }`.pipe(uniqueAsConflict(`The user already has a key named '${input.name}', or this secret is already in use.`))
        return { key: (yield* findById(id))!, secret: generated.secret }
      })

      const existing = (id: string, rows: ReadonlyArray<unknown>) =>
        rows.length === 0 ? Effect.fail(keyNotFound(id)) : Effect.void

      const update = Effect.fn("Keys.update")(function*(id: string, changes: KeyChanges) {
        const columns: Record<string, unknown> = {}
        if (changes.name !== undefined) {
          if (changes.name.trim().length === 0 || changes.name.length > 100) {
            return yield* new InvalidInput({ path: "name", message: "name: a key name must have 1 to 100 characters" })
          }
          columns.name = changes.name
        }
        if (changes.models !== undefined) columns.models = JSON.stringify(changes.models)
        if (changes.expiresAt !== undefined) columns.expires_at = changes.expiresAt
        if (changes.quotaNanos !== undefined) columns.quota_nanos = changes.quotaNanos
        if (changes.dailyBudgetNanos !== undefined) columns.daily_budget_nanos = changes.dailyBudgetNanos
        if (changes.monthlyBudgetNanos !== undefined) columns.monthly_budget_nanos = changes.monthlyBudgetNanos
        for (const field of ["rpm", "tpm", "concurrency"] as const) {
          const value = changes.limits?.[field]
          if (value === undefined) continue
          if (value !== null && !(Number.isSafeInteger(value) && value > 0)) {
            return yield* new InvalidInput({
              path: field,
              message: `${field}: a limit must be a whole number above 0, or null for none`
            })
          }
          columns[field] = value
        }
        if (Object.keys(columns).length === 0) {
          if ((yield* findById(id)) === undefined) return yield* keyNotFound(id)
          return
        }
        const rows = yield* sql`UPDATE api_keys SET ${sql.update(columns)} WHERE id = ${id} RETURNING id`.pipe(
          uniqueAsConflict(`A key named '${changes.name}' already exists for this user.`)
        )
        yield* existing(id, rows)
      })

      return Keys.of({
        create,
        update,
        findById,
        list: (userId) =>
          Effect.map(
            sql`SELECT * FROM api_keys WHERE user_id = ${userId} ORDER BY created_at DESC, id`,
            (rows) => rows.map(decodeKey)
          ),
        setEnabled: Effect.fn("Keys.setEnabled")(function*(id, enabled) {
          const key = yield* findById(id)
          if (key === undefined) return yield* keyNotFound(id)
          if (enabled && key.revoked) {
            return yield* new InvalidInput({
              path: "enabled",
              message: `enabled: the key '${key.name}' was revoked and cannot be enabled again; create a new key`
            })
          }
          yield* sql`UPDATE api_keys SET enabled = ${enabled} WHERE id = ${id}`
        }),
        // Final: the secret never authenticates again, and a declared key's entry is never provisioned again.
        revoke: Effect.fn("Keys.revoke")(function*(id) {
          yield* sql.withTransaction(Effect.gen(function*() {
            yield* Retired.retireKey(sql, id)
            yield* existing(
              id,
              yield* sql`UPDATE api_keys SET enabled = ${false}, hash = ${REVOKED + id} WHERE id = ${id} RETURNING id`
            )
          }))
        }),
        remove: Effect.fn("Keys.remove")(function*(id) {
          yield* sql.withTransaction(Effect.gen(function*() {
            yield* Retired.retireKey(sql, id)
            yield* existing(id, yield* sql`DELETE FROM api_keys WHERE id = ${id} RETURNING id`)
          }))
        }),
        findByHash: (hash) =>
          Effect.map(
            sql`${sql.literal(JOINED)} WHERE k.hash = ${hash}`,
            (rows) => rows[0] === undefined ? undefined : decodeApiKey(rows[0])
          ),
        loadAll: Effect.map(
          sql`${sql.literal(JOINED)} WHERE k.hash NOT LIKE ${REVOKED + "%"} ORDER BY k.created_at, k.id`,
          (rows) => rows.map(decodeCached)
        ),
        loadByIds: (ids) =>
          ids.length === 0 ? Effect.succeed([]) : Effect.map(
            sql`${sql.literal(JOINED)} WHERE ${sql.in("k.id", ids)} AND k.hash NOT LIKE ${REVOKED + "%"}`,
            (rows) => rows.map(decodeCached)
          ),
        loadByUsers: (userIds) =>
          userIds.length === 0 ? Effect.succeed([]) : Effect.map(
            sql`${sql.literal(JOINED)} WHERE ${sql.in("k.user_id", userIds)} AND k.hash NOT LIKE ${REVOKED + "%"}`,
            (rows) => rows.map(decodeCached)
          ),
        touchLastUsed: (uses) => {
          const latest = new Map<string, number>()
          for (const use of uses) latest.set(use.keyId, Math.max(latest.get(use.keyId) ?? 0, use.at))
          if (latest.size === 0) return Effect.void
          return sql.withTransaction(
            Effect.forEach(
              latest,
              ([keyId, at]) =>
                sql`UPDATE api_keys SET last_used_at = ${at}
                  WHERE id = ${keyId} AND (last_used_at IS NULL OR last_used_at < ${at})`,
              { discard: true }
            )
          )
        }
      })
    })
  )

  /**
   * Core's `KeyStore` port on the database: hashes the presented secret and
   * looks it up (a database that cannot be reached is `DatabaseUnavailable`;
   * failures are logged once per outage).
   *
   * @category layers
   */
  static readonly layerKeyStore: Layer.Layer<KeyStore.KeyStore, never, Keys | KeyHasher> = Layer.effect(
    KeyStore.KeyStore,
    Effect.gen(function*() {
      const keys = yield* Keys
      const hasher = yield* KeyHasher
      const outage = OutageLog.make("API key lookups (the database)")
      return KeyStore.KeyStore.of({
        lookup: (secret) =>
          keys.findByHash(hasher.hash(secret)).pipe(
            Effect.tap(() => outage.succeeded),
            Effect.catchTag("SqlError", (error) =>
              Effect.andThen(outage.failed(Cause.fail(error)), Effect.fail(keyLookupUnavailable)))
          )
      })
    })
  )
}
