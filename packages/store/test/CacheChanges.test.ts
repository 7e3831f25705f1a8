/**
 * The change log behind cross-node cache invalidation, and the key loads the
 * caches use to apply one change: on SQLite always, on PostgreSQL when
 * MODELGATE_TEST_POSTGRES is set.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { CacheChanges } from "../src/CacheChanges.ts"
import { Keys } from "../src/Keys.ts"
import * as Store from "../src/Store.ts"
import { Users } from "../src/Users.ts"
import { makePostgres, makeSqlite, postgresUrl, type TestDatabase } from "./harness.ts"

const storeLayer = (make: () => Promise<TestDatabase>) =>
  Layer.unwrap(Effect.map(
    Effect.acquireRelease(Effect.promise(make), (db) => Effect.promise(db.cleanup)),
    (db) =>
      CacheChanges.layer.pipe(
        Layer.provideMerge(
          Store.layer({
            url: db.url,
            masterKey: { secret: Redacted.make("test secret of sufficient length") },
            nodeId: "node-test",
            maxConnections: 10
          })
        ),
        Layer.orDie
      )
  ))

const suite = (make: () => Promise<TestDatabase>) =>
  layer(storeLayer(make), { excludeTestServices: true, timeout: "120 seconds" })((it) => {
    it.effect("changes get consecutive sequence numbers and are read back in order, after a given one", () =>
      Effect.gen(function*() {
        const log = yield* CacheChanges
        const start = yield* log.latest
        const first = yield* log.record([{ topic: "keys", ids: ["key_1", "key_2"] }])
        const more = yield* log.record([{ topic: "catalog", ids: null }, { topic: "users", ids: ["usr_1"] }])
        assert.deepStrictEqual([...first, ...more], [start + 1, start + 2, start + 3])
        assert.strictEqual(yield* log.latest, start + 3)
        assert.deepStrictEqual(yield* log.since(start, 10), [
          { seq: start + 1, topic: "keys", ids: ["key_1", "key_2"] },
          { seq: start + 2, topic: "catalog", ids: null },
          { seq: start + 3, topic: "users", ids: ["usr_1"] }
        ])
        assert.deepStrictEqual((yield* log.since(start + 1, 1)).map((c) => c.seq), [start + 2])
        assert.deepStrictEqual(yield* log.since(start + 3, 10), [])
      }))

    it.effect("writers at once still give every change its own number, without gaps", () =>
      Effect.gen(function*() {
        const log = yield* CacheChanges
        const start = yield* log.latest
        const seqs = yield* Effect.all(
          Array.from({ length: 40 }, (_, i) => log.record([{ topic: "keys", ids: [`key_${i}`] }])),
          { concurrency: 8 }
        )
        const sorted = seqs.flat().sort((a, b) => a - b)
        assert.deepStrictEqual(sorted, Array.from({ length: 40 }, (_, i) => start + 1 + i))
        const read = yield* log.since(start, 100)
        assert.deepStrictEqual(read.map((c) => c.seq), sorted)
      }))

    it.effect("old changes are pruned; the sequence goes on", () =>
      Effect.gen(function*() {
        const log = yield* CacheChanges
        yield* log.record([{ topic: "catalog", ids: null }])
        const last = yield* log.latest
        const pruned = yield* log.prune(Number.MAX_SAFE_INTEGER)
        assert.isAtLeast(pruned, 1)
        assert.deepStrictEqual(yield* log.since(0, 10), [])
        assert.strictEqual(yield* log.latest, last)
        assert.deepStrictEqual(yield* log.record([{ topic: "keys", ids: null }]), [last + 1])
      }))

    it.effect("keys load by id and by user, leaving out revoked and deleted ones", () =>
      Effect.gen(function*() {
        const keys = yield* Keys
        const users = yield* Users
        const alice = yield* users.create({ name: `alice${Math.random().toString(36).slice(2, 8)}` })
        const bob = yield* users.create({ name: `bob${Math.random().toString(36).slice(2, 8)}` })
        const a1 = yield* keys.create({ userId: alice.id, name: "one", group: "default" })
        const a2 = yield* keys.create({ userId: alice.id, name: "two", group: "default" })
        const b1 = yield* keys.create({ userId: bob.id, name: "one", group: "default" })
        const ids = (loaded: ReadonlyArray<{ readonly key: { readonly id: string } }>) =>
          loaded.map((k) => k.key.id).sort()
        assert.deepStrictEqual(ids(yield* keys.loadByIds([a1.key.id, b1.key.id])), [a1.key.id, b1.key.id].sort())
        assert.deepStrictEqual(ids(yield* keys.loadByUsers([alice.id])), [a1.key.id, a2.key.id].sort())
        yield* keys.revoke(a1.key.id)
        yield* keys.remove(b1.key.id)
        assert.deepStrictEqual(ids(yield* keys.loadByIds([a1.key.id, a2.key.id, b1.key.id])), [a2.key.id])
        assert.deepStrictEqual(ids(yield* keys.loadByUsers([alice.id, bob.id])), [a2.key.id])
        assert.deepStrictEqual(yield* keys.loadByIds([]), [])
        const loaded = (yield* keys.loadByIds([a2.key.id]))[0]!
        assert.strictEqual(loaded.key.userName, alice.name)
      }))
  })

describe("sqlite", () => {
  suite(makeSqlite)
})

describe.skipIf(postgresUrl === undefined)("postgres (set MODELGATE_TEST_POSTGRES to run)", () => {
  suite(() => makePostgres(postgresUrl!))
})
