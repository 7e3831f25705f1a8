/**
 * Users: the people keys and balances belong to, and console logins.
 *
 * @since 0.1.0
 */
import { Domain, GatewayError } from "@modelgate/core"
import { Array as Arr, Clock, Context, Effect, Layer, Redacted } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { newId } from "./internal/random.ts"
import * as Retired from "./internal/Retired.ts"
import * as Row from "./internal/row.ts"
import * as Unique from "./internal/unique.ts"
import { hashPassword, type SecretError, verifyPasswordOrDecoy } from "./Secrets.ts"
import { type Conflict, InvalidInput } from "./StoreError.ts"

/**
 * Where a record came from: the config file (re-applied at every start) or the console.
 *
 * @category models
 */
export type Source = "config" | "console"

/**
 * A user as stored (never the password hash).
 *
 * @category models
 */
export interface User {
  readonly id: string
  readonly name: string
  readonly role: Domain.Role
  readonly enabled: boolean
  readonly hasPassword: boolean
  readonly balanceNanos: bigint
  /** Rate limits shared by all the user's keys (`null` where unset). */
  readonly limits: Domain.Limits
  readonly source: Source
  readonly createdAt: number
  readonly updatedAt: number
  /** When the user was deleted (the row stays, anonymised, for the ledger and usage), or null. */
  readonly deletedAt: number | null
}

/**
 * Input of `Users.create`.
 *
 * @category models
 */
export interface CreateUser {
  readonly name: string
  readonly role?: Domain.Role | undefined
  readonly enabled?: boolean | undefined
  readonly password?: Redacted.Redacted<string> | undefined
  readonly source?: Source | undefined
}

/** Shared with the other repositories of this package, not a stable API. @internal @category internal */
export const decodeUser = (row: Record<string, unknown>): User => ({
  id: Row.str(row.id, "users.id"),
  name: Row.str(row.name, "users.name"),
  role: Row.str(row.role, "users.role") === "admin" ? "admin" : "user",
  enabled: Row.bool(row.enabled, "users.enabled"),
  hasPassword: row.password_hash !== null && row.password_hash !== undefined,
  balanceNanos: row.spendable_nanos === undefined
    ? Row.big(row.balance_nanos, "users.balance_nanos")
    : Row.big(row.spendable_nanos, "users.spendable_nanos"),
  limits: {
    rpm: Row.intOrNull(row.rpm, "users.rpm"),
    tpm: Row.intOrNull(row.tpm, "users.tpm"),
    concurrency: Row.intOrNull(row.concurrency, "users.concurrency")
  },
  source: Row.str(row.source, "users.source") === "config" ? "config" : "console",
  createdAt: Row.int(row.created_at, "users.created_at"),
  updatedAt: Row.int(row.updated_at, "users.updated_at"),
  deletedAt: Row.intOrNull(row.deleted_at, "users.deleted_at")
})

/**
 * A user row with its balance as the user sees it: the balance column plus
 * what balance leases still reserve (see `Purses.ts`), so a lease taken for
 * calls in progress does not show as spent.
 */
const USER_COLUMNS =
  "users.*, users.balance_nanos + COALESCE((SELECT SUM(l.amount_nanos) FROM leases l WHERE l.user_id = users.id), 0) AS spendable_nanos"

const namePattern = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/

/**
 * Checks a user name: 1 to 64 characters of letters, digits, `.`, `_`, `@`, `-`.
 *
 * @category validation
 */
export const validateName = (name: string, path: string): Effect.Effect<void, InvalidInput> =>
  namePattern.test(name) ? Effect.void : Effect.fail(
    new InvalidInput({
      path,
      message:
        `${path}: '${name}' is not a valid user name (1-64 letters, digits, '.', '_', '@' or '-', starting with a letter or digit)`
    })
  )

/** The shortest and longest console password accepted anywhere (the console, the API, the config file). @category validation */
export const PASSWORD_LENGTH = Domain.PASSWORD_LENGTH

/** The rule for console passwords, in words, for messages. @category validation */
export const PASSWORD_RULE = `a console password needs ${PASSWORD_LENGTH.min} to ${PASSWORD_LENGTH.max} characters`

/**
 * Checks a console password's length (never echoing the password).
 *
 * @category validation
 */
export const validatePassword = (
  password: Redacted.Redacted<string>,
  path: string
): Effect.Effect<void, InvalidInput> => {
  const length = [...Redacted.value(password)].length
  return length >= PASSWORD_LENGTH.min && length <= PASSWORD_LENGTH.max
    ? Effect.void
    : Effect.fail(new InvalidInput({ path, message: `${path}: ${PASSWORD_RULE} (this one has ${length})` }))
}

const notFound = (what: string) => new GatewayError.ResourceNotFound({ message: `No user ${what}.` })

/** Maps a unique violation to a `Conflict` with a readable message. @internal */
export const uniqueAsConflict = Unique.uniqueAsConflict

/**
 * The users repository.
 *
 * @category services
 */
export class Users extends Context.Service<Users, {
  readonly create: (input: CreateUser) => Effect.Effect<User, InvalidInput | Conflict | SecretError | SqlError.SqlError>
  readonly findById: (id: string) => Effect.Effect<User | undefined, SqlError.SqlError>
  readonly findByName: (name: string) => Effect.Effect<User | undefined, SqlError.SqlError>
  /** All users, by name. */
  readonly list: Effect.Effect<ReadonlyArray<User>, SqlError.SqlError>
  readonly setRole: (
    id: string,
    role: Domain.Role
  ) => Effect.Effect<void, GatewayError.ResourceNotFound | SqlError.SqlError>
  readonly setEnabled: (
    id: string,
    enabled: boolean
  ) => Effect.Effect<void, GatewayError.ResourceNotFound | SqlError.SqlError>
  /** Sets the fields of the user's rate limits that `limits` names (`null`: no limit). */
  readonly setLimits: (
    id: string,
    limits: Partial<Domain.Limits>
  ) => Effect.Effect<void, GatewayError.ResourceNotFound | InvalidInput | SqlError.SqlError>
  /** Sets (or with `undefined`, removes) the console password. */
  readonly setPassword: (
    id: string,
    password: Redacted.Redacted<string> | undefined
  ) => Effect.Effect<void, GatewayError.ResourceNotFound | SecretError | SqlError.SqlError>
  /** The enabled user with this name and password, or `undefined` (same answer for unknown name and wrong password). */
  readonly verifyLogin: (
    name: string,
    password: Redacted.Redacted<string>
  ) => Effect.Effect<User | undefined, SecretError | SqlError.SqlError>
  /**
   * Deletes a user: the row stays (the ledger and usage records point at it)
   * but is anonymised (name `deleted-<id>`, no password, disabled, no
   * groups), its keys are revoked and its sessions end. Returns the ids of
   * the keys it revoked, for the caches to drop.
   */
  readonly remove: (
    id: string
  ) => Effect.Effect<ReadonlyArray<string>, GatewayError.ResourceNotFound | SqlError.SqlError>
  /** The groups a user may choose for new keys, besides the one their keys were given. */
  readonly groups: (id: string) => Effect.Effect<ReadonlyArray<string>, SqlError.SqlError>
  readonly setGroups: (
    id: string,
    groups: ReadonlyArray<string>
  ) => Effect.Effect<void, GatewayError.ResourceNotFound | SqlError.SqlError>
}>()("modelgate/store/Users") {
  /** @category layers */
  static readonly layer = Layer.effect(
    Users,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const findById = (id: string) =>
        Effect.map(
          sql`SELECT ${sql.literal(USER_COLUMNS)} FROM users WHERE id = ${id}`,
          (rows) => rows[0] === undefined ? undefined : decodeUser(rows[0])
        )
      const findByName = (name: string) =>
        Effect.map(
          sql`SELECT ${sql.literal(USER_COLUMNS)} FROM users WHERE name = ${name}`,
          (rows) => rows[0] === undefined ? undefined : decodeUser(rows[0])
        )

      const updated = (id: string, rows: ReadonlyArray<unknown>) =>
        rows.length === 0 ? Effect.fail(notFound(`with id '${id}'`)) : Effect.void

      const create = Effect.fn("Users.create")(function*(input: CreateUser) {
        yield* validateName(input.name, "name")
        const passwordHash = input.password === undefined ? null : yield* hashPassword(input.password)
        const now = yield* Clock.currentTimeMillis
        const id = newId("usr")
        yield* sql`INSERT INTO users ${
          sql.insert({
            id,
            name: input.name,
            role: input.role ?? "user",
            password_hash: passwordHash,
            enabled: input.enabled ?? true,
            balance_nanos: 0n,
            source: input.source ?? "console",
            created_at: now,
            updated_at: now
          })
        }`.pipe(uniqueAsConflict(`A user named '${input.name}' already exists.`))
        return (yield* findById(id))!
      })

      const setPassword = Effect.fn("Users.setPassword")(
        function*(id: string, password: Redacted.Redacted<string> | undefined) {
          const hash = password === undefined ? null : yield* hashPassword(password)
          const now = yield* Clock.currentTimeMillis
          yield* updated(
            id,
            yield* sql`UPDATE users SET password_hash = ${hash}, updated_at = ${now} WHERE id = ${id} RETURNING id`
          )
        }
      )

      const verifyLogin = Effect.fn("Users.verifyLogin")(function*(name: string, password: Redacted.Redacted<string>) {
        const rows = yield* sql`SELECT ${sql.literal(USER_COLUMNS)} FROM users WHERE name = ${name}`
        const row = rows[0]
        // An unknown name (or a user without a password) is checked against a decoy hash, so it takes as long as a wrong password.
        const ok = yield* verifyPasswordOrDecoy(
          password,
          typeof row?.password_hash === "string" ? row.password_hash : null
        )
        if (row === undefined || !ok) return undefined
        const user = decodeUser(row)
        return user.enabled ? user : undefined
      })

      const remove = Effect.fn("Users.remove")(function*(id: string) {
        return yield* sql.withTransaction(Effect.gen(function*() {
          const user = yield* findById(id)
          if (user === undefined || user.deletedAt !== null) return yield* notFound(`with id '${id}'`)
          // Final: the file's entries for the user and its keys are never applied again, nor its keys' secrets.
          if (user.source === "config") yield* Retired.retireEntry(sql, `users:${user.name}`)
          for (const key of yield* sql`SELECT id FROM api_keys WHERE user_id = ${id}`) {
            yield* Retired.retireKey(sql, Row.str(key.id, "api_keys.id"))
          }
          const now = yield* Clock.currentTimeMillis
          const keys = yield* sql`UPDATE api_keys SET enabled = ${false}, hash = ${"revoked:"} || id
            WHERE user_id = ${id} AND hash NOT LIKE ${"revoked:%"} RETURNING id`
          yield* sql`DELETE FROM sessions WHERE user_id = ${id}`
          yield* sql`DELETE FROM user_groups WHERE user_id = ${id}`
          yield* sql`UPDATE users SET ${
            sql.update({ name: `deleted-${id}`, enabled: false, password_hash: null, deleted_at: now, updated_at: now })
          } WHERE id = ${id}`
          return keys.map((row) => Row.str(row.id, "api_keys.id"))
        }))
      })

      return Users.of({
        create,
        remove,
        findById,
        findByName,
        list: Effect.map(
          sql`SELECT ${sql.literal(USER_COLUMNS)} FROM users ORDER BY name`,
          (rows) => rows.map(decodeUser)
        ),
        setRole: Effect.fn("Users.setRole")(function*(id, role) {
          const now = yield* Clock.currentTimeMillis
          yield* updated(
            id,
            yield* sql`UPDATE users SET role = ${role}, updated_at = ${now} WHERE id = ${id} RETURNING id`
          )
        }),
        setEnabled: Effect.fn("Users.setEnabled")(function*(id, enabled) {
          const now = yield* Clock.currentTimeMillis
          yield* updated(
            id,
            yield* sql`UPDATE users SET enabled = ${enabled}, updated_at = ${now} WHERE id = ${id} RETURNING id`
          )
        }),
        setLimits: Effect.fn("Users.setLimits")(function*(id, limits) {
          const changes: Record<string, number | null> = {}
          for (const field of ["rpm", "tpm", "concurrency"] as const) {
            const value = limits[field]
            if (value === undefined) continue
            if (value !== null && !(Number.isSafeInteger(value) && value > 0)) {
              return yield* new InvalidInput({
                path: field,
                message: `${field}: a limit must be a whole number above 0, or null for none`
              })
            }
            changes[field] = value
          }
          const now = yield* Clock.currentTimeMillis
          yield* updated(
            id,
            yield* sql`UPDATE users SET ${sql.update({ ...changes, updated_at: now })} WHERE id = ${id} RETURNING id`
          )
        }),
        setPassword,
        verifyLogin,
        groups: (id) =>
          Effect.map(
            sql`SELECT group_name FROM user_groups WHERE user_id = ${id} ORDER BY group_name`,
            (rows) => rows.map((row) => Row.str(row.group_name, "user_groups.group_name"))
          ),
        setGroups: Effect.fn("Users.setGroups")(function*(id, groups) {
          yield* sql.withTransaction(Effect.gen(function*() {
            if ((yield* findById(id)) === undefined) return yield* notFound(`with id '${id}'`)
            yield* sql`DELETE FROM user_groups WHERE user_id = ${id}`
            const rows = [...new Set(groups)].map((group_name): Record<string, unknown> => ({
              user_id: id,
              group_name
            }))
            if (Arr.isReadonlyArrayNonEmpty(rows)) yield* sql`INSERT INTO user_groups ${sql.insert(rows)}`
          }))
        })
      })
    })
  )
}
