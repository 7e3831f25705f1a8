/**
 * Re-applying the configuration file (every start) never undoes a later
 * action: a revoked key stays revoked, a key or user disabled in the console
 * stays disabled, a password the user changed is kept, a lowered limit stays
 * lowered; the file still applies what its entry changes, and every
 * disagreement is reported. On SQLite always, on PostgreSQL when
 * MODELGATE_TEST_POSTGRES is set.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { Keys } from "../src/Keys.ts"
import { Provisioning, type ProvisionInput, type ProvisionResult } from "../src/Provisioning.ts"
import { KeyHasher } from "../src/Secrets.ts"
import { Users } from "../src/Users.ts"
import { makePostgres, makeSqlite, postgresUrl, storeLayer, type TestDatabase } from "./harness.ts"

const SECRET = "sk-later-actions-secret-0001"

/** A file with one user (a password, a limit) and one fixed key (a quota, a limit); names made unique per test. */
const fileFor = (name: string, overrides: {
  readonly password?: string
  readonly userEnabled?: boolean
  readonly keyEnabled?: boolean
  readonly rpm?: number
  readonly secret?: string
} = {}): ProvisionInput => ({
  users: [{
    name,
    role: "admin",
    password: Redacted.make(overrides.password ?? "the file's password"),
    enabled: overrides.userEnabled ?? true,
    limits: { rpm: 100 }
  }],
  keys: [{
    user: name,
    name: "laptop",
    group: "default",
    secret: Redacted.make(overrides.secret ?? `${SECRET}-${name}`),
    enabled: overrides.keyEnabled ?? true,
    quotaNanos: 5_000_000_000n,
    limits: { rpm: overrides.rpm ?? 60 }
  }]
})

const unique = () => `u${Math.random().toString(36).slice(2, 10)}`

const fields = (result: ProvisionResult) => result.disagreements.map((d) => `${d.entry} ${d.field}`)

const keyOf = Effect.fnUntraced(function*(user: string) {
  const users = yield* Users
  const keys = yield* Keys
  const owner = (yield* users.findByName(user))!
  return (yield* keys.list(owner.id)).find((key) => key.name === "laptop")!
})

const suite = (make: () => Promise<TestDatabase>) =>
  layer(storeLayer(make), { excludeTestServices: true, timeout: "120 seconds" })((it) => {
    it.effect("a revoked key stays revoked, whatever the file says", () =>
      Effect.gen(function*() {
        const provisioning = yield* Provisioning
        const keys = yield* Keys
        const hasher = yield* KeyHasher
        const name = unique()
        yield* provisioning.provision(fileFor(name))
        yield* keys.revoke((yield* keyOf(name)).id)
        const again = yield* provisioning.provision(fileFor(name))
        assert.deepStrictEqual(again.updated, [])
        assert.deepStrictEqual(fields(again), [`keys:${name}/laptop revoked`])
        assert.include(again.disagreements[0]!.message, "revocation is final")
        const key = yield* keyOf(name)
        assert.isTrue(key.revoked)
        assert.isFalse(key.enabled)
        assert.isUndefined(yield* keys.findByHash(hasher.hash(`${SECRET}-${name}`)), "the secret does not authenticate")
        // Not even an entry the file changes brings it back.
        const changed = yield* provisioning.provision(fileFor(name, { rpm: 10, secret: `${SECRET}-${name}-new` }))
        assert.isTrue((yield* keyOf(name)).revoked)
        assert.isUndefined(yield* keys.findByHash(hasher.hash(`${SECRET}-${name}-new`)))
        assert.deepStrictEqual(fields(changed), [`keys:${name}/laptop revoked`])
      }))

    it.effect("a deleted user is never provisioned again: no user, no key, no second opening balance", () =>
      Effect.gen(function*() {
        const provisioning = yield* Provisioning
        const users = yield* Users
        const keys = yield* Keys
        const hasher = yield* KeyHasher
        const sql = yield* SqlClient.SqlClient
        const name = unique()
        const file: ProvisionInput = {
          ...fileFor(name),
          users: [{ ...fileFor(name).users![0]!, balanceNanos: 10_000_000_000n }]
        }
        yield* provisioning.provision(file)
        const user = (yield* users.findByName(name))!
        yield* users.remove(user.id)
        // A restart: the same file again.
        const again = yield* provisioning.provision(file)
        assert.deepStrictEqual(again.created, [])
        assert.sameMembers(fields(again), [`users:${name} deleted`, `keys:${name}/laptop deleted`])
        assert.include(again.disagreements[0]!.message, "deletion is final")
        assert.isUndefined(yield* users.findByName(name), "the user is not created again")
        assert.isUndefined(
          yield* keys.findByHash(hasher.hash(`${SECRET}-${name}`)),
          "its fixed secret does not authenticate"
        )
        const credited =
          yield* sql`SELECT COUNT(*) AS n FROM ledger WHERE kind = 'topup' AND reason = 'initial balance from config'
          AND user_id IN (SELECT id FROM users WHERE name = ${name} OR id = ${user.id})`
        assert.strictEqual(Number(credited[0]!.n), 1, "the opening balance was credited once, ever")
        // Not even under another key name: the deleted user's secret was revoked with it.
        const renamed = yield* provisioning.provision({
          ...file,
          users: [{ ...file.users![0]!, name: `${name}-again` }],
          keys: [{ ...file.keys![0]!, user: `${name}-again` }]
        })
        assert.include(renamed.created, `users:${name}-again`)
        assert.notInclude(renamed.created, `keys:${name}-again/laptop`)
        assert.deepStrictEqual(fields(renamed), [`keys:${name}-again/laptop secret`])
        assert.isUndefined(yield* keys.findByHash(hasher.hash(`${SECRET}-${name}`)))
      }))

    it.effect("a key deleted in the console is never provisioned again, and a revoked secret never authenticates again", () =>
      Effect.gen(function*() {
        const provisioning = yield* Provisioning
        const keys = yield* Keys
        const users = yield* Users
        const hasher = yield* KeyHasher
        const name = unique()
        yield* provisioning.provision(fileFor(name))
        yield* keys.remove((yield* keyOf(name)).id)
        const again = yield* provisioning.provision(fileFor(name))
        assert.deepStrictEqual(again.created, [])
        assert.deepStrictEqual(fields(again), [`keys:${name}/laptop deleted`])
        assert.isUndefined(yield* keys.findByHash(hasher.hash(`${SECRET}-${name}`)))
        // A revoked key's secret, declared again under another entry, is refused too: in the file and in the API.
        const other = unique()
        yield* provisioning.provision(fileFor(other))
        yield* keys.revoke((yield* keyOf(other)).id)
        const moved = yield* provisioning.provision({
          ...fileFor(other),
          keys: [{ ...fileFor(other).keys![0]!, name: "desktop" }]
        })
        assert.deepStrictEqual(fields(moved), [`keys:${other}/desktop secret`])
        assert.include(moved.disagreements[0]!.message, "was revoked")
        assert.isUndefined(yield* keys.findByHash(hasher.hash(`${SECRET}-${other}`)))
        const owner = (yield* users.findByName(other))!
        const refused = yield* Effect.flip(
          keys.create({ userId: owner.id, name: "api", group: "default", secret: `${SECRET}-${other}` })
        )
        assert.strictEqual(refused._tag, "InvalidInput")
        assert.include(refused.message, "was revoked")
      }))

    it.effect("a key and a user disabled in the console stay disabled; the file's own change of enabled is applied", () =>
      Effect.gen(function*() {
        const provisioning = yield* Provisioning
        const keys = yield* Keys
        const users = yield* Users
        const name = unique()
        yield* provisioning.provision(fileFor(name))
        const user = (yield* users.findByName(name))!
        yield* keys.setEnabled((yield* keyOf(name)).id, false)
        yield* users.setEnabled(user.id, false)
        const again = yield* provisioning.provision(fileFor(name))
        assert.deepStrictEqual(again.updated, [])
        assert.sameMembers(fields(again), [`users:${name} enabled`, `keys:${name}/laptop enabled`])
        assert.include(
          again.disagreements.find((d) => d.entry.startsWith("keys:"))!.message,
          "enabled: the file says enabled, the database has disabled"
        )
        assert.isFalse((yield* keyOf(name)).enabled)
        assert.isFalse((yield* users.findByName(name))!.enabled)
        // The operator changes the entries: disabled in the file, then enabled again in the file.
        yield* provisioning.provision(fileFor(name, { userEnabled: false, keyEnabled: false }))
        const reenabled = yield* provisioning.provision(fileFor(name))
        assert.sameMembers([...reenabled.updated], [`users:${name}`, `keys:${name}/laptop`])
        assert.deepStrictEqual(fields(reenabled), [])
        assert.isTrue((yield* keyOf(name)).enabled)
        assert.isTrue((yield* users.findByName(name))!.enabled)
      }))

    it.effect("a password the user changed is kept until the file's entry for it changes; then the file's is set and sessions end", () =>
      Effect.gen(function*() {
        const provisioning = yield* Provisioning
        const users = yield* Users
        const sql = yield* SqlClient.SqlClient
        const name = unique()
        yield* provisioning.provision(fileFor(name))
        const user = (yield* users.findByName(name))!
        yield* users.setPassword(user.id, Redacted.make("the user's own password"))
        const again = yield* provisioning.provision(fileFor(name))
        assert.deepStrictEqual(again.updated, [])
        assert.deepStrictEqual(fields(again), [`users:${name} password`])
        assert.notInclude(again.disagreements[0]!.message, "password\"")
        assert.notInclude(again.disagreements[0]!.message, "own password")
        assert.isDefined(yield* users.verifyLogin(name, Redacted.make("the user's own password")))
        assert.isUndefined(yield* users.verifyLogin(name, Redacted.make("the file's password")))
        // The operator sets a new password in the file: it is applied, and the user's sessions end.
        yield* sql`INSERT INTO sessions ${
          sql.insert({ id_hash: `s-${name}`, user_id: user.id, csrf_token: "t", created_at: 0, expires_at: 9e12 })
        }`
        const reset = yield* provisioning.provision(fileFor(name, { password: "a new password from the file" }))
        assert.deepStrictEqual(reset.updated, [`users:${name}`])
        assert.deepStrictEqual(fields(reset), [])
        assert.isDefined(yield* users.verifyLogin(name, Redacted.make("a new password from the file")))
        assert.strictEqual((yield* sql`SELECT id_hash FROM sessions WHERE user_id = ${user.id}`).length, 0)
        // And the same file again changes nothing.
        const same = yield* provisioning.provision(fileFor(name, { password: "a new password from the file" }))
        assert.deepStrictEqual([same.updated, fields(same)], [[], []])
      }))

    it.effect("a limit lowered in the console stays lowered; a limit the file changes is applied", () =>
      Effect.gen(function*() {
        const provisioning = yield* Provisioning
        const sql = yield* SqlClient.SqlClient
        const name = unique()
        yield* provisioning.provision(fileFor(name))
        yield* sql`UPDATE api_keys SET rpm = 5, quota_nanos = 1000000000 WHERE id = ${(yield* keyOf(name)).id}`
        const again = yield* provisioning.provision(fileFor(name))
        assert.sameMembers(fields(again), [`keys:${name}/laptop rpm`, `keys:${name}/laptop quota`])
        assert.include(
          again.disagreements.find((d) => d.field === "quota")!.message,
          "quota: the file says 5.00 USD, the database has 1.00 USD"
        )
        assert.deepStrictEqual([(yield* keyOf(name)).limits.rpm, (yield* keyOf(name)).quotaNanos], [5, 1_000_000_000n])
        // The file changes the key's rpm: that field is applied; the quota it did not change stays as the console set it.
        const changed = yield* provisioning.provision(fileFor(name, { rpm: 30 }))
        assert.deepStrictEqual(changed.updated, [`keys:${name}/laptop`])
        assert.deepStrictEqual(fields(changed), [`keys:${name}/laptop quota`])
        assert.deepStrictEqual([(yield* keyOf(name)).limits.rpm, (yield* keyOf(name)).quotaNanos], [30, 1_000_000_000n])
      }))

    it.effect("rows provisioned before the file's declarations were kept take the file as applied: later actions stay", () =>
      Effect.gen(function*() {
        const provisioning = yield* Provisioning
        const keys = yield* Keys
        const users = yield* Users
        const sql = yield* SqlClient.SqlClient
        const name = unique()
        const other = unique()
        yield* provisioning.provision(fileFor(name))
        yield* provisioning.provision(fileFor(other))
        const user = (yield* users.findByName(name))!
        yield* keys.setEnabled((yield* keyOf(name)).id, false)
        yield* users.setPassword(user.id, Redacted.make("the user's own password"))
        yield* keys.revoke((yield* keyOf(other)).id)
        // As an earlier version left them: no record of what the file declared.
        yield* sql`UPDATE users SET config_declared = NULL WHERE name IN (${name}, ${other})`
        yield* sql`UPDATE api_keys SET config_declared = NULL`
        const upgraded = yield* provisioning.provision({
          users: [...fileFor(name).users!, ...fileFor(other).users!],
          keys: [...fileFor(name).keys!, ...fileFor(other).keys!]
        })
        assert.deepStrictEqual(upgraded.updated, [])
        assert.sameMembers(fields(upgraded), [
          `keys:${name}/laptop enabled`,
          `users:${name} password`,
          `keys:${other}/laptop revoked`
        ])
        assert.isFalse((yield* keyOf(name)).enabled)
        assert.isTrue((yield* keyOf(other)).revoked)
        assert.isDefined(yield* users.verifyLogin(name, Redacted.make("the user's own password")))
        // The declarations are kept now: the next start reports the same and changes nothing.
        const next = yield* provisioning.provision({
          users: [...fileFor(name).users!, ...fileFor(other).users!],
          keys: [...fileFor(name).keys!, ...fileFor(other).keys!]
        })
        assert.deepStrictEqual(next.updated, [])
        assert.sameMembers(fields(next), fields(upgraded))
      }))
  })

describe("sqlite", () => {
  suite(makeSqlite)
})

describe.skipIf(postgresUrl === undefined)("postgres (set MODELGATE_TEST_POSTGRES to run)", () => {
  suite(() => makePostgres(postgresUrl!))
})
