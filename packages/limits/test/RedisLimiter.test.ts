/**
 * The Redis limiter: the shared behaviour suite and Redis-time tests on the
 * Redis named by MODELGATE_TEST_REDIS (under a key prefix unique to this run,
 * deleted afterwards), and the outage tests on a private redis-server started
 * here, stopped mid-test and started again on the same port.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import type { RateLimiter } from "@modelgate/core"
import { Effect, Exit, Layer, Logger } from "effect"
import { createClient } from "redis"
import * as RedisLimiter from "../src/RedisLimiter.ts"
import { behaviour, uniqueId } from "./behaviour.ts"
import { freePort, hasRedisServer, needsRedisServer, privateRedis, waitUntil, withClient } from "./redisServer.ts"

const sharedUrl = process.env.MODELGATE_TEST_REDIS
const runPrefix = `modelgate-test:limits:${process.pid}-${Date.now().toString(36)}:`

const deleteKeys = async (url: string, prefix: string): Promise<void> => {
  const client = createClient({ url })
  client.on("error", () => {})
  await client.connect()
  try {
    for await (const keys of client.scanIterator({ MATCH: `${prefix}*`, COUNT: 1000 })) {
      if (keys.length > 0) await client.del(keys)
    }
  } finally {
    client.destroy()
  }
}

const limits = (partial: Partial<RateLimiter.Subject["limits"]>): RateLimiter.Subject["limits"] => ({
  rpm: null,
  tpm: null,
  concurrency: null,
  ...partial
})

const subject = (partial: Partial<RateLimiter.Subject["limits"]>): RateLimiter.Subject => ({
  id: uniqueId("subject"),
  label: "your API key 'test'",
  limits: limits(partial)
})

/** Tries `count` acquisitions at once; the number admitted. */
const admitCount = (
  limiter: RateLimiter.RateLimiter["Service"],
  subjects: ReadonlyArray<RateLimiter.Subject>,
  count: number
) =>
  Effect.map(
    Effect.all(Array.from({ length: count }, () => Effect.exit(limiter.acquire(subjects, 0))), {
      concurrency: "unbounded"
    }),
    (exits) => exits.filter(Exit.isSuccess).length
  )

describe.skipIf(sharedUrl === undefined)(
  "RedisLimiter on a shared Redis (set MODELGATE_TEST_REDIS to a redis:// URL to run)",
  () => {
    const url = sharedUrl!
    afterAll(() => deleteKeys(url, runPrefix))

    behaviour(
      "the behaviour suite",
      (options) => RedisLimiter.layer({ url, onFailure: "refuse", keyPrefix: runPrefix, time: "clock", ...options })
    )

    describe("with Redis time", () => {
      it.live("two limiter instances on one Redis share a limit exactly", () =>
        Effect.gen(function*() {
          const a = yield* RedisLimiter.make({ url, onFailure: "refuse", keyPrefix: runPrefix })
          const b = yield* RedisLimiter.make({ url, onFailure: "refuse", keyPrefix: runPrefix })
          yield* waitUntil(a.status.available, 5_000)
          yield* waitUntil(b.status.available, 5_000)
          const key = [subject({ rpm: 10 })]
          const [fromA, fromB] = yield* Effect.all([admitCount(a.limiter, key, 8), admitCount(b.limiter, key, 8)], {
            concurrency: "unbounded"
          })
          assert.strictEqual(fromA + fromB, 10)
        }))

      it.live("a real window of Redis time: refused until the exact retry time, admitted after", () =>
        Effect.gen(function*() {
          const { limiter, status } = yield* RedisLimiter.make({
            url,
            onFailure: "refuse",
            keyPrefix: runPrefix,
            windowMs: 1_000
          })
          yield* waitUntil(status.available, 5_000)
          const key = [subject({ rpm: 2, tpm: 100 })]
          const first = yield* limiter.acquire(key, 10)
          assert.strictEqual(first.snapshot.remainingRequests, 1)
          assert.strictEqual(first.snapshot.resetRequestsMs, 1_000)
          yield* limiter.acquire(key, 10)
          const error = yield* Effect.flip(limiter.acquire(key, 10))
          assert.strictEqual(error.limit, "rpm")
          assert.isTrue(error.retryAfterSeconds > 0 && error.retryAfterSeconds <= 1, String(error.retryAfterSeconds))
          yield* Effect.sleep(Math.ceil(error.retryAfterSeconds * 1000) + 20)
          yield* limiter.acquire(key, 10)
        }))

      it.live("a subject's keys stay small whatever its traffic: no request log without rpm, at most 61 token buckets", () =>
        Effect.gen(function*() {
          const prefix = `${runPrefix}bounded:`
          const { limiter, status } = yield* RedisLimiter.make({
            url,
            onFailure: "refuse",
            keyPrefix: prefix,
            windowMs: 600
          })
          yield* waitUntil(status.available, 5_000)
          const tokensOnly = subject({ tpm: 1_000_000 })
          const requests = subject({ rpm: 20 })
          // 1.2 s of calls (two windows): many more than 61 buckets' worth of time and 20 requests.
          const deadline = Date.now() + 1_200
          let calls = 0
          while (Date.now() < deadline) {
            yield* limiter.acquire([tokensOnly], 1)
            yield* Effect.exit(limiter.acquire([requests], 0))
            calls++
          }
          assert.isAbove(calls, 100)
          const sizes = yield* Effect.promise(() =>
            withClient(url, async (client) => ({
              buckets: await client.hLen(`${prefix}t:${tokensOnly.id}`),
              log: await client.exists(`${prefix}l:${tokensOnly.id}`),
              requests: await client.zCard(`${prefix}l:${requests.id}`)
            }))
          )
          assert.isAtMost(sizes.buckets, 61)
          assert.strictEqual(sizes.log, 0)
          assert.isAtMost(sizes.requests, 20)
        }))

      it.live("keys carry TTLs, so idle subjects leave nothing behind", () =>
        Effect.gen(function*() {
          const prefix = `${runPrefix}ttl:`
          const { limiter, status } = yield* RedisLimiter.make({
            url,
            onFailure: "refuse",
            keyPrefix: prefix,
            windowMs: 200,
            leaseMs: 200
          })
          yield* waitUntil(status.available, 5_000)
          yield* limiter.acquire([subject({ rpm: 5, tpm: 100, concurrency: 2 })], 10)
          // The subject's three keys, and the marker that tells whether Redis kept its data (one per prefix, kept).
          assert.strictEqual(
            yield* Effect.promise(() => countKeys(url, prefix)),
            4
          )
          yield* Effect.sleep(1_500)
          assert.strictEqual(yield* Effect.promise(() => countKeys(url, prefix)), 1)
          assert.strictEqual(yield* Effect.promise(() => countKeys(url, `${prefix}epoch`)), 1)
        }))
    })
  }
)

const countKeys = async (url: string, prefix: string): Promise<number> => {
  const client = createClient({ url })
  client.on("error", () => {})
  await client.connect()
  try {
    let count = 0
    for await (const keys of client.scanIterator({ MATCH: `${prefix}*`, COUNT: 1000 })) count += keys.length
    return count
  } finally {
    client.destroy()
  }
}

const outageOptions = { commandTimeoutMs: 300, retryDownMs: 100 } as const

describe.skipIf(!hasRedisServer)(`RedisLimiter outages on a private redis-server (${needsRedisServer})`, () => {
  const logs: Array<unknown> = []
  const collector = Logger.make((options) => {
    logs.push(options.message)
  })

  it.live("onFailure local: per-process limits during the outage, shared limits again after, no leaked slots", () =>
    Effect.gen(function*() {
      const redis = yield* privateRedis
      const a = yield* RedisLimiter.make({ url: redis.url, onFailure: "local", ...outageOptions })
      const b = yield* RedisLimiter.make({ url: redis.url, onFailure: "local", ...outageOptions })
      yield* waitUntil(a.status.available, 5_000)
      yield* waitUntil(b.status.available, 5_000)

      // Shared while Redis is up.
      const before = [subject({ rpm: 4 })]
      assert.strictEqual((yield* admitCount(a.limiter, before, 3)) + (yield* admitCount(b.limiter, before, 3)), 4)
      const slot = [subject({ concurrency: 1 })]
      const heldInRedis = yield* a.limiter.acquire(slot, 0)

      yield* redis.stop
      // During the outage each process limits on its own.
      const during = [subject({ rpm: 3 })]
      assert.strictEqual(yield* admitCount(a.limiter, during, 5), 3)
      assert.strictEqual(yield* admitCount(b.limiter, during, 5), 3)
      assert.isFalse(yield* a.status.available)
      // A slot taken locally is released locally.
      const localSlot = [subject({ concurrency: 1 })]
      const local = yield* a.limiter.acquire(localSlot, 0)
      yield* Effect.flip(a.limiter.acquire(localSlot, 0))
      yield* local.release(0)
      const again = yield* a.limiter.acquire(localSlot, 0)
      yield* again.release(0)
      // A release that cannot reach Redis waits for it.
      yield* heldInRedis.release(0)
      assert.strictEqual(yield* a.status.pendingReleases, 1)

      yield* redis.start
      yield* waitUntil(a.status.available, 10_000)
      yield* waitUntil(b.status.available, 10_000)
      // Shared again, without a restart of the limiters (and the scripts reloaded with EVAL).
      const after = [subject({ rpm: 3 })]
      const [fromA, fromB] = yield* Effect.all([admitCount(a.limiter, after, 3), admitCount(b.limiter, after, 3)], {
        concurrency: "unbounded"
      })
      assert.strictEqual(fromA + fromB, 3)
      assert.strictEqual(yield* a.status.pendingReleases, 0)
      // One warning per limiter per outage, one notice when it ends.
      const text = logs.map((message) => String(message))
      assert.strictEqual(text.filter((line) => line.includes("Redis is unreachable")).length, 2, text.join("\n"))
      assert.strictEqual(text.filter((line) => line.includes("shared limiting resumed")).length, 2, text.join("\n"))
    }).pipe(Effect.provide(Logger.layer([collector]))))

  it.live("local: two processes, one key at rpm 30, across an outage and a Redis restarted empty, never admit more than twice the limit in a window", () =>
    Effect.gen(function*() {
      const redis = yield* privateRedis
      const options = { url: redis.url, onFailure: "local" as const, windowMs: 10_000, ...outageOptions }
      const a = yield* RedisLimiter.make(options)
      const b = yield* RedisLimiter.make(options)
      yield* waitUntil(a.status.available, 5_000)
      yield* waitUntil(b.status.available, 5_000)
      const key = [subject({ rpm: 30 })]
      const both = (count: number) =>
        Effect.map(
          Effect.all([admitCount(a.limiter, key, count), admitCount(b.limiter, key, count)], {
            concurrency: "unbounded"
          }),
          ([fromA, fromB]) => fromA + fromB
        )
      // Shared while Redis is up: 30 between the two.
      assert.strictEqual(yield* both(20), 30)
      // Redis goes away: each process counts what it admitted before the outage too.
      yield* redis.stop
      assert.strictEqual(
        yield* both(40),
        30,
        "during the outage each process admits only its own share of the window's limit"
      )
      // Redis comes back without its data (no persistence): it would admit 30 more; each process's own count says no.
      yield* redis.start
      yield* waitUntil(a.status.available, 10_000)
      yield* waitUntil(b.status.available, 10_000)
      assert.strictEqual(yield* both(40), 0, "within the same window, nothing more")
    }))

  it.live("a Redis restarted without its data between calls is noticed: for a window each process also limits on its own count, and the missing persistence is warned about", () =>
    Effect.gen(function*() {
      const redis = yield* privateRedis
      const { limiter, status } = yield* RedisLimiter.make({
        url: redis.url,
        onFailure: "refuse",
        windowMs: 10_000,
        ...outageOptions
      })
      yield* waitUntil(status.available, 5_000)
      const text = () => logs.map((message) => String(message))
      assert.isTrue(
        text().some((line) => line.includes("keeps no append-only file (appendonly no)")),
        text().join("\n")
      )
      const key = [subject({ rpm: 10 })]
      assert.strictEqual(yield* admitCount(limiter, key, 10), 10)
      // Restarted at once, with no call in between: nothing failed, but every window there is empty now.
      yield* redis.stop
      yield* redis.start
      yield* waitUntil(Effect.sync(() => text().some((line) => line.includes("Redis lost its data"))), 10_000)
      yield* waitUntil(status.available, 10_000)
      assert.strictEqual(
        yield* admitCount(limiter, key, 10),
        0,
        "the process's own count still holds the window's 10 calls"
      )
    }).pipe(Effect.provide(Logger.layer([collector]))))

  it.live("a release that never reached Redis is sent whole once the connection is back, token correction included", () =>
    Effect.gen(function*() {
      const redis = yield* privateRedis
      const { limiter, status } = yield* RedisLimiter.make({ url: redis.url, onFailure: "refuse", ...outageOptions })
      yield* waitUntil(status.available, 5_000)
      const key = [subject({ tpm: 100, concurrency: 1 })]
      const permit = yield* limiter.acquire(key, 80)
      // Redis goes away with its data saved, so the release cannot be sent; it comes back with that data.
      yield* redis.save
      yield* redis.stop
      yield* waitUntil(Effect.map(status.available, (up) => !up), 5_000)
      yield* permit.release(10)
      assert.strictEqual(yield* status.pendingReleases, 1)
      yield* redis.start
      yield* waitUntil(status.available, 10_000)
      // Still 80 tokens counted: refused; that answer from Redis sends the queued release...
      assert.strictEqual((yield* Effect.flip(limiter.acquire(key, 90))).limit, "tpm")
      // ... whose correction (80 -> 10) then makes room for 90 more.
      yield* waitUntil(Effect.map(Effect.exit(limiter.acquire(key, 90)), Exit.isSuccess), 5_000)
      assert.strictEqual(yield* status.pendingReleases, 0)
    }))

  it.live("a release whose outcome is unknown resends only its slot release, and says the correction was dropped", () =>
    Effect.gen(function*() {
      const redis = yield* privateRedis
      const { limiter, status } = yield* RedisLimiter.make({ url: redis.url, onFailure: "refuse", ...outageOptions })
      yield* waitUntil(status.available, 5_000)
      const permit = yield* limiter.acquire([subject({ tpm: 100, concurrency: 1 })], 80)
      // The server takes the release and freezes: no answer within the timeout, then the connection dies.
      yield* redis.pause
      yield* permit.release(10)
      yield* redis.stop
      yield* waitUntil(Effect.map(status.pendingReleases, (n) => n === 1), 5_000)
      const text = () => logs.map((message) => String(message))
      assert.isTrue(text().some((line) => line.includes("Redis did not confirm a token correction")), text().join("\n"))
      yield* redis.start
      yield* waitUntil(status.available, 10_000)
      yield* limiter.acquire([subject({ rpm: 5 })], 0)
      yield* waitUntil(Effect.map(status.pendingReleases, (n) => n === 0), 5_000)
    }).pipe(Effect.provide(Logger.layer([collector]))))

  it.live("onFailure refuse: calls are refused with a clear message while Redis is down, admitted when it is back", () =>
    Effect.gen(function*() {
      const redis = yield* privateRedis
      const { limiter, status } = yield* RedisLimiter.make({ url: redis.url, onFailure: "refuse", ...outageOptions })
      yield* waitUntil(status.available, 5_000)
      const key = [subject({ rpm: 100 })]
      yield* limiter.acquire(key, 0)
      yield* redis.stop
      const error = yield* Effect.flip(limiter.acquire(key, 0))
      assert.strictEqual(error._tag, "RateLimited")
      assert.strictEqual(error.limit, "unavailable")
      assert.include(error.message, "the shared limit store is unreachable")
      // Unlimited subjects need no Redis.
      yield* limiter.acquire([subject({})], 0)
      yield* redis.start
      yield* waitUntil(status.available, 10_000)
      const permit = yield* limiter.acquire(key, 0)
      assert.strictEqual(permit.snapshot.remainingRequests, 99)
    }))

  it.live("a Redis that is down at start is an outage like any other: the layer builds", () =>
    Effect.gen(function*() {
      const port = yield* Effect.promise(freePort)
      const url = `redis://127.0.0.1:${port}`
      const context = yield* Layer.build(RedisLimiter.layer({ url, onFailure: "local", ...outageOptions }))
      assert.isDefined(context)
      const local = yield* RedisLimiter.make({ url, onFailure: "local", ...outageOptions })
      assert.strictEqual(yield* admitCount(local.limiter, [subject({ rpm: 2 })], 4), 2)
      const refusing = yield* RedisLimiter.make({ url, onFailure: "refuse", ...outageOptions })
      assert.strictEqual((yield* Effect.flip(refusing.limiter.acquire([subject({ rpm: 2 })], 0))).limit, "unavailable")
    }))
})
