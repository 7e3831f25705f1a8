/**
 * The catalog repository's management side, on SQLite always and on
 * PostgreSQL when MODELGATE_TEST_POSTGRES is set: channel headers encrypted at
 * rest (and old plain rows encrypted when the repository starts), provisioning
 * written through the same statements, groups and their members, and the
 * user deletion, balance bound and reports the management API relies on.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Domain, Money } from "@modelgate/core"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { Accounts } from "../src/Accounts.ts"
import { CatalogRepo, type ChannelInput } from "../src/CatalogRepo.ts"
import { Keys } from "../src/Keys.ts"
import { Provisioning } from "../src/Provisioning.ts"
import { Reports } from "../src/Reports.ts"
import { Secrets } from "../src/Secrets.ts"
import { Sessions } from "../src/Sessions.ts"
import { Users } from "../src/Users.ts"
import { makePostgres, makeSqlite, postgresUrl, storeLayer, type TestDatabase } from "./harness.ts"

const USD = 1_000_000_000n

const channel = (name: string, over: Partial<ChannelInput> = {}): ChannelInput => ({
  name,
  type: "openai",
  baseUrl: "https://api.example.com/v1",
  apiKeys: ["sk-upstream-one"],
  models: ["m"],
  modelMap: {},
  groups: ["default"],
  priority: 0,
  weight: 1,
  enabled: true,
  ...Domain.channelDefaults,
  ...over
})

const storedHeaders = (id: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => Effect.map(sql`SELECT headers FROM channels WHERE id = ${id}`, (rows) => String(rows[0]!.headers))
  )

const suite = (make: () => Promise<TestDatabase>) =>
  layer(storeLayer(make), { excludeTestServices: true, timeout: "120 seconds" })((it) => {
    it.effect("stores channel headers encrypted and reads them back", () =>
      Effect.gen(function*() {
        const repo = yield* CatalogRepo
        const id = yield* repo.createChannel(
          channel("encrypted", { headers: { Authorization: "Bearer upstream-secret-123", "X-Title": "modelgate" } })
        )
        const raw = yield* storedHeaders(id)
        assert.notInclude(raw, "upstream-secret")
        assert.notInclude(raw, "X-Title")
        assert.match(raw, /^v1:/)
        const found = yield* repo.findChannel(id)
        assert.deepStrictEqual(found!.channel.headers, {
          Authorization: "Bearer upstream-secret-123",
          "X-Title": "modelgate"
        })
        assert.isTrue(found!.readable)
        const loaded = (yield* repo.load).channels.find((c) => c.id === id)!
        assert.strictEqual(loaded.headers.Authorization, "Bearer upstream-secret-123")
      }))

    it.effect("encrypts the plain headers of older rows when the repository starts", () =>
      Effect.gen(function*() {
        const repo = yield* CatalogRepo
        const sql = yield* SqlClient.SqlClient
        const id = yield* repo.createChannel(channel("legacy"))
        yield* sql`UPDATE channels SET headers = ${
          JSON.stringify({ "x-api-key": "legacy-secret-456" })
        } WHERE id = ${id}`
        // Still read as it is...
        assert.strictEqual((yield* repo.findChannel(id))!.channel.headers["x-api-key"], "legacy-secret-456")
        // ...and encrypted by the next repository built over the database.
        yield* Layer.build(Layer.fresh(CatalogRepo.layer)).pipe(Effect.provideService(Secrets, yield* Secrets))
        assert.notInclude(yield* storedHeaders(id), "legacy-secret")
        assert.strictEqual((yield* repo.findChannel(id))!.channel.headers["x-api-key"], "legacy-secret-456")
      }))

    it.effect("provisioning compares encrypted headers and keys decrypted, so a second run changes nothing", () =>
      Effect.gen(function*() {
        const provisioning = yield* Provisioning
        const declared = channel("from-config", { headers: { Cookie: "session=abc" }, apiKeys: ["sk-a", "sk-b"] })
        const first = yield* provisioning.provision({ channels: [declared] })
        assert.deepStrictEqual(first.created, ["channels:from-config"])
        const second = yield* provisioning.provision({ channels: [declared] })
        assert.deepStrictEqual([second.created, second.updated], [[], []])
        const third = yield* provisioning.provision({ channels: [{ ...declared, headers: { Cookie: "session=xyz" } }] })
        assert.deepStrictEqual(third.updated, ["channels:from-config"])
        const stored = (yield* (yield* CatalogRepo).load).channels.find((c) => c.name === "from-config")!
        assert.deepStrictEqual(stored.headers, { Cookie: "session=xyz" })
        // A console channel of the same name is left alone.
        const repo = yield* CatalogRepo
        yield* repo.createChannel(channel("console-made"))
        const skipped = yield* provisioning.provision({ channels: [channel("console-made", { priority: 9 })] })
        assert.deepStrictEqual(skipped.skipped, ["channels:console-made"])
      }))

    it.effect("a model's media part tokens are stored per kind, read back, and provisioned idempotently", () =>
      Effect.gen(function*() {
        const repo = yield* CatalogRepo
        const model: Domain.Model = {
          id: "media-model",
          displayName: "Media",
          inputNanosPerMillion: 1_000_000_000n,
          outputNanosPerMillion: null,
          cachedInputNanosPerMillion: null,
          perRequestNanos: null,
          free: false,
          inputTokenLimit: 1_000_000,
          outputTokenLimit: 8_192,
          mediaPartTokens: { video: 300_000, image: 1_120 }
        }
        yield* repo.upsertModel(model)
        assert.deepStrictEqual((yield* repo.findModel("media-model"))!.model.mediaPartTokens, {
          image: 1_120,
          video: 300_000
        })
        const { mediaPartTokens: _, ...plain } = model
        yield* repo.upsertModel(plain)
        assert.isUndefined((yield* repo.findModel("media-model"))!.model.mediaPartTokens)
        yield* repo.deleteModel("media-model")
        const provisioning = yield* Provisioning
        const input = { models: [{ ...model, id: "media-declared" }] }
        assert.include((yield* provisioning.provision(input)).created, "models:media-declared")
        const again = yield* provisioning.provision(input)
        assert.notInclude(again.updated, "models:media-declared", "a second run changes nothing")
        assert.deepStrictEqual((yield* repo.findModel("media-declared"))!.model.mediaPartTokens, model.mediaPartTokens)
        const bad = yield* Effect.flip(
          provisioning.provision({ models: [{ ...model, id: "media-bad", mediaPartTokens: { audio: 1.5 } }] })
        )
        assert.strictEqual(bad._tag, "InvalidInput")
        assert.include(bad.message, "models[0].mediaPartTokens.audio")
      }))

    it.effect("channel names are unique, and an edit may keep the stored keys", () =>
      Effect.gen(function*() {
        const repo = yield* CatalogRepo
        const id = yield* repo.createChannel(channel("unique", { apiKeys: ["sk-keep-me"] }))
        const taken = yield* Effect.flip(repo.createChannel(channel("unique")))
        assert.strictEqual(taken._tag, "Conflict")
        yield* repo.updateChannel(id, channel("unique", { apiKeys: [], priority: 3 }), { keys: false })
        const found = (yield* repo.findChannel(id))!
        assert.deepStrictEqual(found.channel.apiKeys, ["sk-keep-me"])
        assert.strictEqual(found.channel.priority, 3)
        const invalid = yield* Effect.flip(repo.updateChannel(id, channel("unique", { weight: -1 }), { keys: false }))
        assert.strictEqual(invalid._tag, "InvalidInput")
        yield* repo.deleteChannel(id)
        assert.isUndefined(yield* repo.findChannel(id))
        assert.strictEqual((yield* Effect.flip(repo.deleteChannel(id)))._tag, "ResourceNotFound")
      }))

    it.effect("groups: members by name, unknown members refused, a group in use cannot be deleted", () =>
      Effect.gen(function*() {
        const repo = yield* CatalogRepo
        const users = yield* Users
        const keys = yield* Keys
        const ann = yield* users.create({ name: "ann-groups" })
        const group = {
          name: "team",
          ratioMicros: 800_000n,
          limits: { rpm: 10, tpm: null, concurrency: null },
          selectable: false
        }
        yield* repo.createGroup(group)
        assert.strictEqual((yield* Effect.flip(repo.createGroup(group)))._tag, "Conflict")
        const unknown = yield* Effect.flip(repo.updateGroup(group, [ann.id, "usr_nobody"]))
        assert.strictEqual(unknown._tag, "InvalidInput")
        assert.include(unknown.message, "userIds[1]")
        assert.deepStrictEqual((yield* repo.findGroup("team"))!.users, [], "nothing written when an id is unknown")
        yield* repo.updateGroup({ ...group, selectable: true }, [ann.id])
        const found = (yield* repo.findGroup("team"))!
        assert.deepStrictEqual(found.users, ["ann-groups"])
        assert.isTrue(found.group.selectable)
        yield* keys.create({ userId: ann.id, name: "k", group: "team" })
        assert.strictEqual((yield* Effect.flip(repo.deleteGroup("team")))._tag, "Conflict")
      }))

    it.effect("deleting a user anonymises it, revokes its keys and ends its sessions, keeping ledger and usage", () =>
      Effect.gen(function*() {
        const users = yield* Users
        const keys = yield* Keys
        const accounts = yield* Accounts
        const sessions = yield* Sessions
        const reports = yield* Reports
        const sql = yield* SqlClient.SqlClient
        const bob = yield* users.create({ name: "bob-leaving" })
        yield* accounts.topUp(bob.id, 3n * USD, "test", "tester")
        const key = yield* keys.create({ userId: bob.id, name: "k1", group: "default" })
        const session = yield* sessions.create(bob.id)
        yield* sql`INSERT INTO usage_records ${
          sql.insert({
            id: "use_bob",
            created_at: 1000,
            request_id: "req_bob",
            user_id: bob.id,
            key_id: key.key.id,
            model: "m",
            upstream_model: "m",
            channel: "c",
            dialect_in: "openai",
            dialect_out: "openai",
            stream: false,
            prompt_tokens: 1,
            completion_tokens: 1,
            cached_tokens: 0,
            usage_reported: true,
            cost_nanos: 5n,
            latency_ms: 1,
            ttfb_ms: null,
            status: 200,
            error_code: null,
            attempts: 1
          })
        }`
        const revoked = yield* users.remove(bob.id)
        assert.deepStrictEqual(revoked, [key.key.id])
        const gone = (yield* users.findById(bob.id))!
        assert.strictEqual(gone.name, `deleted-${bob.id}`)
        assert.isFalse(gone.enabled)
        assert.isFalse(gone.hasPassword)
        assert.isNumber(gone.deletedAt)
        assert.isTrue((yield* keys.findById(key.key.id))!.revoked)
        assert.isUndefined(yield* sessions.find(session.token))
        assert.strictEqual(yield* accounts.ledgerSum(bob.id), 3n * USD, "the ledger stays")
        const usage = yield* reports.usagePage({ userId: bob.id }, 10, undefined)
        assert.strictEqual(usage.data[0]!.userName, `deleted-${bob.id}`)
        assert.strictEqual(
          (yield* Effect.flip(users.remove(bob.id)))._tag,
          "ResourceNotFound",
          "a user is deleted once"
        )
        // The name is free again.
        yield* users.create({ name: "bob-leaving" })
      }))

    it.effect("an adjustment that would pass the largest balance is refused, not an overflow", () =>
      Effect.gen(function*() {
        const users = yield* Users
        const accounts = yield* Accounts
        const rich = yield* users.create({ name: "rich" })
        const step = Money.MAX_NANOS - 1n
        yield* accounts.adjust(rich.id, step, "big", "tester")
        const refused = yield* Effect.flip(accounts.adjust(rich.id, step, "bigger", "tester"))
        assert.strictEqual(refused._tag, "InvalidInput")
        assert.include(refused.message, "above the largest balance")
        assert.strictEqual(yield* accounts.balance(rich.id), step)
        assert.strictEqual(yield* accounts.ledgerSum(rich.id), step)
      }))

    it.effect("reports page usage newest first and sum it per day and user", () =>
      Effect.gen(function*() {
        const users = yield* Users
        const reports = yield* Reports
        const sql = yield* SqlClient.SqlClient
        const cat = yield* users.create({ name: "cat-reports" })
        for (let i = 0; i < 5; i++) {
          yield* sql`INSERT INTO usage_records ${
            sql.insert({
              id: `use_cat_${i}`,
              created_at: 86_400_000 * 10 + i,
              request_id: `req_cat_${i}`,
              user_id: cat.id,
              key_id: "key_x",
              model: i % 2 === 0 ? "a" : "b",
              upstream_model: "a",
              channel: "c",
              dialect_in: "openai",
              dialect_out: "openai",
              stream: false,
              prompt_tokens: 10,
              completion_tokens: 5,
              cached_tokens: 0,
              usage_reported: true,
              cost_nanos: 7n,
              latency_ms: 1,
              ttfb_ms: null,
              status: 200,
              error_code: null,
              attempts: 1
            })
          }`
        }
        const first = yield* reports.usagePage({ userId: cat.id }, 2, undefined)
        assert.deepStrictEqual(first.data.map((r) => r.requestId), ["req_cat_4", "req_cat_3"])
        const second = yield* reports.usagePage({ userId: cat.id }, 2, first.nextCursor!)
        assert.deepStrictEqual(second.data.map((r) => r.requestId), ["req_cat_2", "req_cat_1"])
        const last = yield* reports.usagePage({ userId: cat.id }, 2, second.nextCursor!)
        assert.deepStrictEqual([last.data.length, last.nextCursor], [1, null])
        const days = yield* reports.daily({ userId: cat.id })
        assert.deepStrictEqual(days.map((d) => [d.day, d.model, d.requests, d.costNanos]), [
          ["1970-01-11", "a", 3, 21n],
          ["1970-01-11", "b", 2, 14n]
        ])
        assert.deepStrictEqual(yield* reports.totals({ userId: cat.id, model: "b" }), {
          requests: 2,
          tokens: 30,
          costNanos: 14n
        })
        const none = yield* reports.totals({ userId: cat.id, from: 1e15 })
        assert.deepStrictEqual(none, { requests: 0, tokens: 0, costNanos: 0n })
      }))
  })

describe("catalog management on SQLite", () => suite(makeSqlite))
describe.skipIf(postgresUrl === undefined)(
  "catalog management on PostgreSQL",
  () => suite(() => makePostgres(postgresUrl!))
)
