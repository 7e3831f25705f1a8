/**
 * Applies the declarative part of the config file to the database, idempotently.
 *
 * Every entity declared in the file is upserted by its natural key (user name,
 * group name, model id, alias pattern, channel name, key (user, name)) with
 * `source = 'config'`. Rules:
 *
 * - Applying the same input twice changes nothing: a row is only written when a
 *   declared value differs from the stored one (channel keys are compared after
 *   decryption, passwords by verification, key secrets by hash).
 * - Users and keys: the file updates what it *changes*, and never undoes a
 *   later action. Each row keeps what the file declared when it was last
 *   applied (`config_declared`); a field is written only when the file's value
 *   changed since, so a key disabled, a limit lowered, a role taken away or a
 *   password changed in the console or with the CLI stays as it is until the
 *   file's entry for it changes. Revocation is final: a revoked key is never
 *   touched again. Every such disagreement is returned (`disagreements`) for
 *   the log. A row provisioned before these records were kept takes the file
 *   as already applied. A user the file disables, or whose password it
 *   changes, loses their console sessions.
 * - A user's `balanceNanos` is the INITIAL balance: credited once, as a 'topup'
 *   ledger entry with reason 'initial balance from config', only when the user
 *   is created. Later edits of the number do nothing (use top-ups).
 * - Rows created in the console (`source = 'console'`) are never touched; the
 *   result lists them under `skipped`.
 * - Deleting a user or revoking a key is final (`internal/Retired.ts`): an
 *   entry whose user or key was deleted is never applied again (no user, no
 *   key, no second opening balance), nor an entry whose fixed secret was
 *   revoked; each is reported as a disagreement (`deleted`, `secret`).
 * - Entities removed from the file are left in the database.
 * - A key without a fixed `secret` gets a generated one when first created; the
 *   result returns it once (`createdSecrets`) for the server to print.
 *
 * The whole run is one transaction; on PostgreSQL it first takes an advisory
 * lock, so nodes starting together apply it one after the other.
 *
 * @since 0.1.0
 */
import type { Declaration, Domain } from "@modelgate/core"
import { Money } from "@modelgate/core"
import { Clock, Context, Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql"
import { validateChannel } from "./CatalogRepo.ts"
import * as CatalogTables from "./internal/CatalogTables.ts"
import * as Declared from "./internal/Declared.ts"
import { newId } from "./internal/random.ts"
import * as Retired from "./internal/Retired.ts"
import * as Row from "./internal/row.ts"
import { isRevokedHash, validateSecret } from "./Keys.ts"
import {
  generateApiKey,
  hashPassword,
  KeyHasher,
  keyPrefix,
  type SecretError,
  Secrets,
  verifyPassword
} from "./Secrets.ts"
import { InvalidInput } from "./StoreError.ts"
import { validateName, validatePassword } from "./Users.ts"

/** A user declared in the config file (core's `Declaration.User`). @category models */
export type ProvisionUser = Declaration.User

/** A group declared in the config file (core's `Declaration.Group`). @category models */
export type ProvisionGroup = Declaration.Group

/** A key declared in the config file (core's `Declaration.Key`). @category models */
export type ProvisionKey = Declaration.Key

/**
 * The declarative content of a config file (core's `Declaration`): the
 * server maps its YAML to it, the web handler's memory store serves it.
 *
 * @category models
 */
export type ProvisionInput = Declaration.Declaration

/**
 * A field of a user or key that the file and the database disagree on, and
 * that provisioning left as the database has it (a later action: a key
 * revoked or disabled, a password or a limit changed in the console), with a
 * message for the log that never contains a secret.
 *
 * @category models
 */
export type Disagreement = Declared.Disagreement

/**
 * What a provisioning run did.
 *
 * @category models
 */
export interface ProvisionResult {
  /** `users:alice`, `channels:openai-main`, ...: rows inserted. */
  readonly created: ReadonlyArray<string>
  /** Rows whose declared values differed and were rewritten. */
  readonly updated: ReadonlyArray<string>
  /** Declared entries left alone because a console-made row has the same natural key. */
  readonly skipped: ReadonlyArray<string>
  /** Secrets generated for keys created in this run, shown once. */
  readonly createdSecrets: ReadonlyArray<{ readonly user: string; readonly name: string; readonly secret: string }>
  /** Fields of users and keys kept as the database has them, though the file says otherwise. */
  readonly disagreements: ReadonlyArray<Disagreement>
}

const PG_LOCK_KEY = 727_460_132

const checkUnique = <A>(items: ReadonlyArray<A>, key: (a: A) => string, path: string) => {
  const seen = new Set<string>()
  for (let i = 0; i < items.length; i++) {
    const k = key(items[i]!)
    if (seen.has(k)) {
      return Effect.fail(
        new InvalidInput({ path: `${path}[${i}]`, message: `${path}[${i}]: '${k}' is declared twice` })
      )
    }
    seen.add(k)
  }
  return Effect.void
}

const checkLimits = (limits: Partial<Domain.Limits> | undefined, path: string) => {
  for (const field of ["rpm", "tpm", "concurrency"] as const) {
    const value = limits?.[field]
    if (value !== undefined && value !== null && (!Number.isSafeInteger(value) || value <= 0)) {
      return Effect.fail(
        new InvalidInput({
          path: `${path}.${field}`,
          message: `${path}.${field}: expected a positive whole number or null, got ${value}`
        })
      )
    }
  }
  return Effect.void
}

const limitColumns = (limits: Partial<Domain.Limits> | undefined) => ({
  rpm: limits?.rpm ?? null,
  tpm: limits?.tpm ?? null,
  concurrency: limits?.concurrency ?? null
})

const checkAmount = (value: bigint | null | undefined, path: string) =>
  value !== null && value !== undefined && value < 0n
    ? Effect.fail(new InvalidInput({ path, message: `${path}: expected a non-negative amount, got ${value}` }))
    : Effect.void

/** The file's name of a user column, and a value shown for the log. */
const describeUser = (column: string, value: unknown): { readonly field: string; readonly shown: string } => {
  if (column === "enabled") return { field: "enabled", shown: Declared.norm(value) === "1" ? "enabled" : "disabled" }
  if (column === "groups") return { field: "groups", shown: typeof value === "string" ? value : "[]" }
  return { field: column, shown: value === null || value === undefined ? "none" : String(value) }
}

const KEY_FIELDS: Readonly<Record<string, string>> = {
  group_name: "group",
  quota_nanos: "quota",
  daily_budget_nanos: "daily_budget",
  monthly_budget_nanos: "monthly_budget",
  hash: "secret"
}

/** The file's name of a key column, and a value shown for the log (money in USD, times in ISO 8601, never the secret). */
const describeKey = (column: string, value: unknown): { readonly field: string; readonly shown: string } => {
  const field = KEY_FIELDS[column] ?? column
  if (value === null || value === undefined) return { field, shown: "none" }
  if (column === "hash") return { field, shown: "another secret" }
  if (column === "enabled") return { field, shown: Declared.norm(value) === "1" ? "enabled" : "disabled" }
  if (column.endsWith("_nanos")) return { field, shown: `${Money.formatUsd(BigInt(Declared.norm(value)))} USD` }
  if (column === "expires_at") return { field, shown: new Date(Number(value)).toISOString() }
  return { field, shown: String(value) }
}

/**
 * The console password's part of provisioning a user: the file sets a
 * password only when its entry for it changed since it was last applied (the
 * record keeps an scrypt hash of the file's password, never the password), so
 * a password the user changed since is kept. A row without a record takes the
 * file as already applied.
 */
const passwordPlan = Effect.fnUntraced(function*(
  entry: string,
  file: Redacted.Redacted<string> | undefined,
  stored: unknown,
  previous: Declared.Declared | null
) {
  const none = { write: undefined, declared: undefined, disagreements: [] as ReadonlyArray<Disagreement> }
  if (file === undefined) return none
  const storedHash = typeof stored === "string" ? stored : null
  const declaredHash = previous?.password
  const matches = (hash: string | null | undefined) =>
    typeof hash === "string" ? verifyPassword(file, hash) : Effect.succeed(false)
  const kept = (declared: string) => ({
    write: undefined,
    declared,
    disagreements: [{
      entry,
      field: "password",
      message: "password: the user's password was changed since the file set it " +
        (previous === null ? "(or before this version kept track of the file) " : "") +
        "and is kept; change the password in the file to set it again."
    }]
  })
  if (previous !== null && declaredHash !== undefined && declaredHash !== null && (yield* matches(declaredHash))) {
    // The file's password is the one it set last time.
    if (storedHash === declaredHash || (yield* matches(storedHash))) return { ...none, declared: declaredHash }
    return kept(declaredHash)
  }
  if (previous !== null) {
    // The file's entry changed (or now declares a password): set it.
    const hash = yield* hashPassword(file)
    return { write: hash, declared: hash, disagreements: [] }
  }
  // No record yet: the file counts as applied; a password that differs was changed since.
  if (yield* matches(storedHash)) return { ...none, declared: storedHash! }
  return kept(yield* hashPassword(file))
})

/**
 * Validates an input before anything is written; errors name the field path.
 *
 * @category validation
 */
export const validate = Effect.fnUntraced(function*(input: ProvisionInput) {
  const users = input.users ?? []
  const keys = input.keys ?? []
  yield* checkUnique(users, (u) => u.name, "users")
  yield* checkUnique(input.groups ?? [], (g) => g.name, "groups")
  yield* checkUnique(input.models ?? [], (m) => m.id, "models")
  yield* checkUnique(input.aliases ?? [], (a) => a.pattern, "aliases")
  yield* checkUnique(input.channels ?? [], (c) => c.name, "channels")
  yield* checkUnique(keys, (k) => `${k.user}/${k.name}`, "keys")
  for (const [i, user] of users.entries()) {
    yield* validateName(user.name, `users[${i}].name`)
    if (user.password !== undefined) yield* validatePassword(user.password, `users[${i}].password`)
    yield* checkAmount(user.balanceNanos, `users[${i}].balanceNanos`)
    yield* checkLimits(user.limits, `users[${i}].limits`)
  }
  for (const [i, group] of (input.groups ?? []).entries()) {
    if (group.ratioMicros < 0n) {
      return yield* new InvalidInput({
        path: `groups[${i}].ratioMicros`,
        message: `groups[${i}].ratioMicros: expected a non-negative ratio`
      })
    }
    yield* checkLimits(group.limits, `groups[${i}].limits`)
  }
  for (const [i, model] of (input.models ?? []).entries()) {
    for (
      const field of [
        "inputNanosPerMillion",
        "outputNanosPerMillion",
        "cachedInputNanosPerMillion",
        "cacheWriteNanosPerMillion",
        "perRequestNanos"
      ] as const
    ) {
      yield* checkAmount(model[field], `models[${i}].${field}`)
    }
    for (const [kind, tokens] of Object.entries(model.mediaPartTokens ?? {})) {
      if (tokens !== undefined && !(Number.isSafeInteger(tokens) && tokens >= 0)) {
        return yield* new InvalidInput({
          path: `models[${i}].mediaPartTokens.${kind}`,
          message: `models[${i}].mediaPartTokens.${kind}: expected a whole number of tokens (0 or more), got ${tokens}`
        })
      }
    }
  }
  for (const [i, channel] of (input.channels ?? []).entries()) yield* validateChannel(channel, `channels[${i}]`)
  const declaredUsers = new Set(users.map((u) => u.name))
  for (const [i, key] of keys.entries()) {
    if (key.name.trim().length === 0) {
      return yield* new InvalidInput({ path: `keys[${i}].name`, message: `keys[${i}].name: a key needs a name` })
    }
    if (key.secret !== undefined) yield* validateSecret(Redacted.value(key.secret), `keys[${i}].secret`)
    if (!declaredUsers.has(key.user)) {
      return yield* new InvalidInput({
        path: `keys[${i}].user`,
        message: `keys[${i}].user: the user '${key.user}' is not declared under users`
      })
    }
    yield* checkAmount(key.quotaNanos, `keys[${i}].quotaNanos`)
    yield* checkAmount(key.dailyBudgetNanos, `keys[${i}].dailyBudgetNanos`)
    yield* checkAmount(key.monthlyBudgetNanos, `keys[${i}].monthlyBudgetNanos`)
    yield* checkLimits(key.limits, `keys[${i}].limits`)
  }
})

/**
 * The provisioning service.
 *
 * @category services
 */
export class Provisioning extends Context.Service<Provisioning, {
  readonly provision: (
    input: ProvisionInput
  ) => Effect.Effect<ProvisionResult, InvalidInput | SecretError | SqlError.SqlError>
}>()("modelgate/store/Provisioning") {
  /** @category layers */
  static readonly layer = Layer.effect(
    Provisioning,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const secrets = yield* Secrets
      const hasher = yield* KeyHasher
      const catalog = CatalogTables.make(sql, secrets)
      const isPg = sql.onDialectOrElse({ pg: () => true, orElse: () => false })

      const provision = Effect.fn("Provisioning.provision")(function*(input: ProvisionInput) {
        yield* validate(input)
        const created: Array<string> = []
        const updated: Array<string> = []
        const skipped: Array<string> = []
        const createdSecrets: Array<{ user: string; name: string; secret: string }> = []
        const disagreements: Array<Disagreement> = []

        const run = Effect.gen(function*() {
          if (isPg) yield* sql.unsafe(`SELECT pg_advisory_xact_lock(${PG_LOCK_KEY})`)
          const now = yield* Clock.currentTimeMillis
          const userIds = new Map<string, string>()
          const retiredUsers = new Set<string>()

          for (const user of input.users ?? []) {
            const label = `users:${user.name}`
            const rows = yield* sql`SELECT * FROM users WHERE name = ${user.name}`
            const row = rows[0]
            const desired = {
              role: user.role ?? "user",
              enabled: user.enabled ?? true,
              ...limitColumns(user.limits),
              // The groups the user may pick, when the file declares them (compared as one sorted list).
              ...(user.groups === undefined ? {} : { groups: JSON.stringify([...new Set(user.groups)].sort()) })
            }
            let id: string
            if (row === undefined && (yield* Retired.isRetiredEntry(sql, label))) {
              // Deletion is final: no user again, so no keys and no second opening balance.
              disagreements.push({
                entry: label,
                field: "deleted",
                message: "the user was deleted: deletion is final, so the file's entry for it is not applied " +
                  "(no user, no keys, no opening balance again). Remove the entry, or give the user another name."
              })
              retiredUsers.add(user.name)
              continue
            }
            if (row === undefined) {
              id = newId("usr")
              const balance = user.balanceNanos ?? 0n
              const passwordHash = user.password === undefined ? null : yield* hashPassword(user.password)
              const { groups: _, ...columns } = desired
              yield* sql`INSERT INTO users ${
                sql.insert({
                  id,
                  name: user.name,
                  ...columns,
                  password_hash: passwordHash,
                  balance_nanos: balance,
                  source: "config",
                  config_declared: Declared.encode(
                    Declared.declare(desired, passwordHash === null ? {} : { password: passwordHash })
                  ),
                  created_at: now,
                  updated_at: now
                })
              }`
              if (balance > 0n) {
                yield* sql`INSERT INTO ledger ${
                  sql.insert({
                    id: newId("led"),
                    user_id: id,
                    kind: "topup",
                    amount_nanos: balance,
                    hold_id: null,
                    request_id: null,
                    reason: "initial balance from config",
                    actor: "config",
                    created_at: now
                  })
                }`
              }
              for (const group_name of new Set(user.groups ?? [])) {
                yield* sql`INSERT INTO user_groups ${sql.insert({ user_id: id, group_name })}`
              }
              created.push(label)
              userIds.set(user.name, id)
              continue
            }
            id = Row.str(row.id, "users.id")
            if (row.source !== "config") {
              skipped.push(label)
              continue
            }
            userIds.set(user.name, id)
            const previous = Declared.parse(row.config_declared)
            const storedGroups = user.groups === undefined ? undefined : JSON.stringify(
              (yield* sql`SELECT group_name FROM user_groups WHERE user_id = ${id} ORDER BY group_name`)
                .map((r) => Row.str(r.group_name, "user_groups.group_name"))
            )
            const fields = Declared.plan(label, { ...row, groups: storedGroups }, desired, previous, describeUser)
            const password = yield* passwordPlan(label, user.password, row.password_hash, previous)
            disagreements.push(...fields.disagreements, ...password.disagreements)
            const { groups, ...columns } = fields.write
            const changes: Record<string, unknown> = {
              ...columns,
              ...(password.write === undefined ? {} : { password_hash: password.write })
            }
            const declared = Declared.encode(
              Declared.declare(desired, password.declared === undefined ? {} : { password: password.declared })
            )
            if (Object.keys(changes).length > 0 || groups !== undefined) {
              yield* sql`UPDATE users SET ${
                sql.update({ ...changes, config_declared: declared, updated_at: now })
              } WHERE id = ${id}`
              updated.push(label)
            } else if (declared !== row.config_declared) {
              // Only the record of what the file declares changed (a first start of this version).
              yield* sql`UPDATE users SET config_declared = ${declared} WHERE id = ${id}`
            }
            if (groups !== undefined) {
              yield* sql`DELETE FROM user_groups WHERE user_id = ${id}`
              for (const group_name of JSON.parse(String(groups)) as Array<string>) {
                yield* sql`INSERT INTO user_groups ${sql.insert({ user_id: id, group_name })}`
              }
            }
            // As in the console: a user the file disables, or whose password it changes, is signed out everywhere.
            if (changes.enabled === false || password.write !== undefined) {
              yield* sql`DELETE FROM sessions WHERE user_id = ${id}`
            }
          }

          // The catalog: the same statements the catalog repository writes with (internal/CatalogTables.ts).
          const record = (label: string, outcome: CatalogTables.SyncOutcome) => {
            if (outcome === "created") created.push(label)
            else if (outcome === "updated") updated.push(label)
            else if (outcome === "skipped") skipped.push(label)
          }
          for (const group of input.groups ?? []) {
            record(
              `groups:${group.name}`,
              yield* catalog.syncGroup({
                name: group.name,
                ratioMicros: group.ratioMicros,
                limits: {
                  rpm: group.limits?.rpm ?? null,
                  tpm: group.limits?.tpm ?? null,
                  concurrency: group.limits?.concurrency ?? null
                },
                selectable: group.selectable ?? false
              })
            )
          }
          for (const model of input.models ?? []) record(`models:${model.id}`, yield* catalog.syncModel(model))
          for (const [position, alias] of (input.aliases ?? []).entries()) {
            record(`aliases:${alias.pattern}`, yield* catalog.syncAlias(alias, position))
          }
          for (const channel of input.channels ?? []) {
            record(`channels:${channel.name}`, yield* catalog.syncChannel(channel))
          }

          for (const key of input.keys ?? []) {
            const label = `keys:${key.user}/${key.name}`
            const userId = userIds.get(key.user)
            if (retiredUsers.has(key.user)) {
              disagreements.push({
                entry: label,
                field: "deleted",
                message:
                  "the key's user was deleted: deletion is final, so the file's entry for the key is not applied."
              })
              continue
            }
            if (userId === undefined) {
              // The owner is a console user: config must not add keys to it.
              skipped.push(label)
              continue
            }
            const fixed = key.secret === undefined ? undefined : Redacted.value(key.secret)
            const row = (yield* sql`SELECT * FROM api_keys WHERE user_id = ${userId} AND name = ${key.name}`)[0]
            if (row === undefined && (yield* Retired.isRetiredEntry(sql, label))) {
              disagreements.push({
                entry: label,
                field: "deleted",
                message: "the key was deleted: deletion is final, so the file's entry for it is not applied. " +
                  "Remove the entry, or give it another name (and another secret) to issue a new key."
              })
              continue
            }
            const revokedSecret = fixed !== undefined && (yield* Retired.isRetiredSecret(sql, hasher.hash(fixed)))
            const refuseSecret = () =>
              disagreements.push({
                entry: label,
                field: "secret",
                message: "the entry's secret was revoked (or its key deleted): revocation is final, so the entry " +
                  "is not applied. Give the key another secret."
              })
            const desired = {
              group_name: key.group,
              models: JSON.stringify(key.models ?? []),
              expires_at: key.expiresAt ?? null,
              enabled: key.enabled ?? true,
              quota_nanos: key.quotaNanos ?? null,
              daily_budget_nanos: key.dailyBudgetNanos ?? null,
              monthly_budget_nanos: key.monthlyBudgetNanos ?? null,
              ...limitColumns(key.limits),
              ...(fixed === undefined ? {} : { hash: hasher.hash(fixed) })
            }
            if (row === undefined && revokedSecret) {
              refuseSecret()
              continue
            }
            if (row === undefined) {
              const generated = fixed === undefined ? generateApiKey() : { secret: fixed, prefix: keyPrefix(fixed) }
              yield* sql`INSERT INTO api_keys ${
                sql.insert({
                  id: newId("key"),
                  user_id: userId,
                  name: key.name,
                  prefix: generated.prefix,
                  hash: hasher.hash(generated.secret),
                  ...desired,
                  spent_nanos: 0n,
                  last_used_at: null,
                  created_at: now,
                  source: "config",
                  config_declared: Declared.encode(Declared.declare(desired))
                })
              }`
              created.push(label)
              if (fixed === undefined) createdSecrets.push({ user: key.user, name: key.name, secret: generated.secret })
              continue
            }
            if (row.source !== "config") {
              skipped.push(label)
              continue
            }
            if (isRevokedHash(Row.str(row.hash, "api_keys.hash"))) {
              // Revocation is final: nothing in the file brings a revoked key back.
              disagreements.push({
                entry: label,
                field: "revoked",
                message: "the key was revoked: revocation is final, so the file's entry for it is not applied. " +
                  "Remove the entry, or give it another name to issue a new key."
              })
              continue
            }
            if (revokedSecret && Row.str(row.hash, "api_keys.hash") !== desired.hash) {
              refuseSecret()
              continue
            }
            const fields = Declared.plan(label, row, desired, Declared.parse(row.config_declared), describeKey)
            disagreements.push(...fields.disagreements)
            const changes = {
              ...fields.write,
              ...(fields.write.hash !== undefined && fixed !== undefined ? { prefix: keyPrefix(fixed) } : {})
            }
            const declared = Declared.encode(Declared.declare(desired))
            if (Object.keys(changes).length > 0) {
              yield* sql`UPDATE api_keys SET ${
                sql.update({ ...changes, config_declared: declared })
              } WHERE id = ${row.id}`
              updated.push(label)
            } else if (declared !== row.config_declared) {
              yield* sql`UPDATE api_keys SET config_declared = ${declared} WHERE id = ${row.id}`
            }
          }
        })

        yield* sql.withTransaction(run).pipe(
          isPg ? (self) => self : Effect.provideService(SqlClient.BeginTransaction, "BEGIN IMMEDIATE")
        )
        return { created, updated, skipped, createdSecrets, disagreements }
      })

      return Provisioning.of({ provision })
    })
  )
}
