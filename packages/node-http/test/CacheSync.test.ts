/**
 * Cache invalidation across nodes, with several nodes' caches in one process
 * over one SQLite database: a change made on one node reaches the others
 * through the change log at their next read (driven by TestClock), or through
 * Redis pub/sub at once, also after a Redis outage (the subscriber reconnects
 * and catches up); a node that fell behind the pruned log reloads everything.
 * And the key cache never lets an older load overwrite a newer change.
 */
import { assert, describe, it } from "@effect/vitest"
import { type Domain, Invalidation } from "@modelgate/core"
import * as CacheChanges from "@modelgate/store/CacheChanges"
import { Baseline, CatalogCache, KeyCache } from "@modelgate/store/Caches"
import * as Keys from "@modelgate/store/Keys"
import * as Secrets from "@modelgate/store/Secrets"
import * as Store from "@modelgate/store/Store"
import * as Users from "@modelgate/store/Users"
import { Context, Deferred, Effect, Fiber, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as CacheSync from "../src/CacheSync.ts"
import { hasRedisServer, needsRedisServer, privateRedis } from "./support/Redis.ts"

const storeLayer = Layer.unwrap(Effect.map(
  Effect.acquireRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), "modelgate-cachesync-"))),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  ),
  (dir) =>
    CacheChanges.CacheChanges.layer.pipe(
      Layer.provideMerge(Store.layer({
        url: `sqlite:${join(dir, "gateway.db")}`,
        masterKey: { secret: Redacted.make("cache sync test secret 0123456789") },
        nodeId: "test"
      })),
      Layer.orDie
    )
))

/** One node's caches and invalidation, built fresh (its own caches) over the shared store. */
const node = (options: Partial<CacheSync.Options> = {}) =>
  Layer.build(Layer.fresh(
    CacheSync.layer({ redis: null, channel: "test:invalidation", ...options }).pipe(
      Layer.provideMerge(Layer.mergeAll(KeyCache.layer, CatalogCache.layer).pipe(Layer.provideMerge(Baseline.layer)))
    )
  )).pipe(Effect.orDie)

type Node = Effect.Success<ReturnType<typeof node>>

const lookup = (n: Node, secret: string) => Effect.orDie(Context.get(n, KeyCache).lookup(secret))
const invalidate = (n: Node, topic: Invalidation.Topic, ids: ReadonlyArray<string>) =>
  Context.get(n, Invalidation.Invalidation).invalidate(topic, ids)
const watermark = (n: Node) => Context.get(n, CacheSync.Status).watermark

const keyFor = Effect.fnUntraced(function*(name: string) {
  const user = yield* (yield* Users.Users).create({ name: `${name}${Math.random().toString(36).slice(2, 8)}` })
  const created = yield* (yield* Keys.Keys).create({ userId: user.id, name, group: "default" })
  return { user, key: created.key, secret: created.secret }
})

/** Lets forked fibers (the log reader after TestClock moved) run to completion. */
const settle = Effect.gen(function*() {
  for (let i = 0; i < 50; i++) yield* Effect.yieldNow
})

/** Polls `condition` every 20 ms of real time, up to `timeoutMs`. */
const waitUntil = (condition: Effect.Effect<boolean>, timeoutMs: number) =>
  Effect.gen(function*() {
    const deadline = Date.now() + timeoutMs
    while (!(yield* condition)) {
      if (Date.now() > deadline) return yield* Effect.die(new Error(`condition not met within ${timeoutMs} ms`))
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 20)))
    }
  })

describe("CacheSync through the change log", () => {
  it.effect("a key revoked on one node is dropped by another at its next read of the log, not before", () =>
    Effect.gen(function*() {
      const a = yield* node()
      const b = yield* node()
      const { key, secret } = yield* keyFor("laptop")
      assert.strictEqual((yield* lookup(b, secret))?.id, key.id)
      yield* (yield* Keys.Keys).revoke(key.id)
      yield* invalidate(a, "keys", [key.id])
      assert.isUndefined(yield* lookup(a, secret))
      // b has not read the log yet: it still knows the key.
      assert.strictEqual((yield* lookup(b, secret))?.id, key.id)
      yield* TestClock.adjust(CacheSync.POLL_INTERVAL_MS)
      yield* settle
      assert.isUndefined(yield* lookup(b, secret))
      assert.strictEqual(yield* watermark(b), yield* watermark(a))
    }).pipe(Effect.scoped, Effect.provide(storeLayer)))

  it.effect("a user disabled on one node: the other reloads that user's keys", () =>
    Effect.gen(function*() {
      const a = yield* node()
      const b = yield* node()
      const { key, secret, user } = yield* keyFor("phone")
      assert.isTrue((yield* lookup(b, secret))?.userEnabled)
      yield* (yield* Users.Users).setEnabled(user.id, false)
      yield* invalidate(a, "users", [user.id])
      yield* TestClock.adjust(CacheSync.POLL_INTERVAL_MS)
      yield* settle
      const seen = yield* lookup(b, secret)
      assert.strictEqual(seen?.id, key.id)
      assert.isFalse(seen?.userEnabled)
    }).pipe(Effect.scoped, Effect.provide(storeLayer)))

  it.effect("a write made without a cache (the CLI's announcer) reaches the nodes too", () =>
    Effect.gen(function*() {
      const b = yield* node()
      const { key, secret } = yield* keyFor("cli")
      assert.strictEqual((yield* lookup(b, secret))?.id, key.id)
      yield* (yield* Keys.Keys).revoke(key.id)
      const announcer = yield* Layer.build(CacheSync.Announcer.layer({ redis: null, channel: "test:invalidation" }))
      yield* Context.get(announcer, CacheSync.Announcer).announce([{ topic: "keys", ids: [key.id] }])
      yield* TestClock.adjust(CacheSync.POLL_INTERVAL_MS)
      yield* settle
      assert.isUndefined(yield* lookup(b, secret))
    }).pipe(Effect.scoped, Effect.provide(storeLayer)))

  it.effect("a node behind the pruned part of the log reloads every key", () =>
    Effect.gen(function*() {
      const b = yield* node()
      const { secret } = yield* keyFor("gone")
      assert.isDefined(yield* lookup(b, secret))
      // Deleted behind every cache's back, then the log moves on and is pruned before b reads it.
      const sql = yield* SqlClient.SqlClient
      yield* sql`DELETE FROM api_keys`
      const log = yield* CacheChanges.CacheChanges
      yield* log.record([{ topic: "catalog", ids: null }, { topic: "catalog", ids: null }])
      yield* log.prune(Number.MAX_SAFE_INTEGER)
      yield* TestClock.adjust(CacheSync.POLL_INTERVAL_MS)
      yield* settle
      assert.isUndefined(yield* lookup(b, secret))
      assert.strictEqual(yield* watermark(b), yield* log.latest)
    }).pipe(Effect.scoped, Effect.provide(storeLayer)))
})

describe.skipIf(!hasRedisServer)(`CacheSync through Redis, on a private redis-server (${needsRedisServer})`, () => {
  // The log is read only once an hour here: whatever arrives came through Redis (or its catch-up).
  const viaRedis = (url: string) => ({ redis: url, pollIntervalMs: 3_600_000 })

  it.live("a change reaches the other node through pub/sub; after an outage the subscriber reconnects and catches up", () =>
    Effect.gen(function*() {
      const redis = yield* privateRedis
      const a = yield* node(viaRedis(redis.url))
      const b = yield* node(viaRedis(redis.url))
      const status = Context.get(b, CacheSync.Status)
      yield* waitUntil(status.subscribed, 5_000)
      const first = yield* keyFor("one")
      const second = yield* keyFor("two")
      assert.isDefined(yield* lookup(b, first.secret))
      assert.isDefined(yield* lookup(b, second.secret))

      yield* (yield* Keys.Keys).revoke(first.key.id)
      yield* invalidate(a, "keys", [first.key.id])
      yield* waitUntil(Effect.map(lookup(b, first.secret), (found) => found === undefined), 5_000)

      // Redis goes away: the change is published nowhere, only logged.
      yield* redis.stop
      yield* waitUntil(Effect.map(status.subscribed, (up) => !up), 5_000)
      yield* (yield* Keys.Keys).revoke(second.key.id)
      yield* invalidate(a, "keys", [second.key.id])
      assert.isDefined(yield* lookup(b, second.secret))
      // Back: b resubscribes by itself and reads what it missed from the log.
      yield* redis.start
      yield* waitUntil(status.subscribed, 10_000)
      yield* waitUntil(Effect.map(lookup(b, second.secret), (found) => found === undefined), 5_000)
    }).pipe(Effect.scoped, Effect.provide(storeLayer)))
})

// ---------------------------------------------------------------------------
// The key cache's ordering, with a store whose loads the test holds back
// ---------------------------------------------------------------------------

const apiKey = (id: string): Domain.ApiKey => ({
  id,
  name: id,
  prefix: "sk-test",
  userId: "usr_1",
  userName: "alice",
  userRole: "user",
  userEnabled: true,
  group: "default",
  models: [],
  expiresAt: null,
  enabled: true,
  quotaNanos: null,
  dailyBudgetNanos: null,
  monthlyBudgetNanos: null,
  limits: { rpm: null, tpm: null, concurrency: null },
  userLimits: { rpm: null, tpm: null, concurrency: null }
})

const unused = Effect.die(new Error("not used by the key cache"))

/** A keys repository whose answers come from the test, one call at a time. */
const scriptedKeys = (script: {
  readonly loadAll: () => Effect.Effect<ReadonlyArray<Keys.CachedKey>>
  readonly loadByIds: (ids: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<Keys.CachedKey>>
  readonly findByHash: (hash: string) => Effect.Effect<Domain.ApiKey | undefined>
}) =>
  KeyCache.layer.pipe(
    Layer.provide(Layer.mergeAll(
      Layer.succeed(
        Keys.Keys,
        Keys.Keys.of({
          create: () => unused,
          update: () => unused,
          findById: () => unused,
          list: () => unused,
          setEnabled: () => unused,
          revoke: () => unused,
          remove: () => unused,
          findByHash: script.findByHash,
          loadAll: Effect.suspend(script.loadAll),
          loadByIds: script.loadByIds,
          loadByUsers: () => unused,
          touchLastUsed: () => Effect.void
        })
      ),
      Layer.succeed(Secrets.KeyHasher, Secrets.KeyHasher.of({ hash: (secret) => `hash:${secret}` })),
      Layer.succeed(Baseline, { seq: 0 })
    ))
  )

describe("KeyCache ordering", () => {
  it.effect("a full load that started before a revocation cannot bring the key back", () =>
    Effect.gen(function*() {
      const old = [{ hash: "hash:sk-1", key: apiKey("key_1") }]
      const started = yield* Deferred.make<void>()
      const proceed = yield* Deferred.make<void>()
      let loads = 0
      const context = yield* Layer.build(scriptedKeys({
        loadAll: () =>
          loads++ === 0
            ? Effect.succeed(old)
            : Effect.andThen(Deferred.succeed(started, undefined), Effect.as(Deferred.await(proceed), old)),
        loadByIds: () => Effect.succeed([]),
        findByHash: () => Effect.succeed(undefined)
      }))
      const cache = Context.get(context, KeyCache)
      assert.strictEqual((yield* cache.lookup("sk-1"))?.id, "key_1")
      // A full reload reads the old state and is held back; the revocation comes in meanwhile.
      const full = yield* Effect.forkChild(cache.reloadAll)
      yield* Deferred.await(started)
      const revoke = yield* Effect.forkChild(cache.reloadKeys(["key_1"]))
      yield* Effect.yieldNow
      yield* Deferred.succeed(proceed, undefined)
      yield* Fiber.join(full)
      yield* Fiber.join(revoke)
      assert.isUndefined(yield* cache.lookup("sk-1"))
      assert.strictEqual(yield* cache.size, 0)
    }))

  it.effect("a key found by a lookup while a change was applied is answered but not remembered", () =>
    Effect.gen(function*() {
      const found = yield* Deferred.make<void>()
      const proceed = yield* Deferred.make<void>()
      let finds = 0
      const context = yield* Layer.build(scriptedKeys({
        loadAll: () => Effect.succeed([]),
        loadByIds: () => Effect.succeed([]),
        findByHash: () =>
          finds++ === 0
            ? Effect.andThen(Deferred.succeed(found, undefined), Effect.as(Deferred.await(proceed), apiKey("key_2")))
            : Effect.succeed(undefined)
      }))
      const cache = Context.get(context, KeyCache)
      const first = yield* Effect.forkChild(cache.lookup("sk-2"))
      yield* Deferred.await(found)
      // The key is revoked while its lookup is in flight.
      yield* cache.reloadKeys(["key_2"])
      yield* Deferred.succeed(proceed, undefined)
      assert.strictEqual((yield* Fiber.join(first))?.id, "key_2")
      // The next lookup asks the store again instead of trusting the stale answer.
      assert.isUndefined(yield* cache.lookup("sk-2"))
      assert.strictEqual(finds, 2)
    }))
})
