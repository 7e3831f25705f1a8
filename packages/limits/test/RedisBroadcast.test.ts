/**
 * The pub/sub channel cache invalidation travels on, against a private
 * redis-server that is stopped and started again mid-test.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Logger } from "effect"
import * as RedisBroadcast from "../src/RedisBroadcast.ts"
import { hasRedisServer, needsRedisServer, privateRedis, waitUntil } from "./redisServer.ts"

/** A channel that records what it receives and how often it (re)subscribed. */
const listening = Effect.fnUntraced(function*(url: string, channel: string) {
  const received: Array<string> = []
  let subscriptions = 0
  const broadcast = yield* RedisBroadcast.make({ url, channel, commandTimeoutMs: 300 }, {
    onMessage: (message) => Effect.sync(() => void received.push(message)),
    onSubscribed: Effect.sync(() => void subscriptions++)
  })
  return { broadcast, received, subscriptions: () => subscriptions }
})

describe.skipIf(!hasRedisServer)(`RedisBroadcast on a private redis-server (${needsRedisServer})`, () => {
  const logs: Array<unknown> = []
  it.live("every subscriber gets every message, the publisher's own included", () =>
    Effect.gen(function*() {
      const redis = yield* privateRedis
      const a = yield* listening(redis.url, "test:changes")
      const b = yield* listening(redis.url, "test:changes")
      const other = yield* listening(redis.url, "test:elsewhere")
      yield* waitUntil(a.broadcast.subscribed, 5_000)
      yield* waitUntil(b.broadcast.subscribed, 5_000)
      yield* waitUntil(other.broadcast.subscribed, 5_000)
      assert.isTrue(yield* a.broadcast.publish("one"))
      assert.isTrue(yield* b.broadcast.publish("two"))
      yield* waitUntil(Effect.sync(() => a.received.length === 2 && b.received.length === 2), 5_000)
      assert.deepStrictEqual(a.received, ["one", "two"])
      assert.deepStrictEqual(b.received, ["one", "two"])
      assert.deepStrictEqual(other.received, [])
      assert.strictEqual(a.subscriptions(), 1)
    }))

  it.live("after an outage the subscriber is back by itself, says so, and messages flow again", () =>
    Effect.gen(function*() {
      const redis = yield* privateRedis
      const a = yield* listening(redis.url, "test:changes")
      const b = yield* listening(redis.url, "test:changes")
      yield* waitUntil(b.broadcast.subscribed, 5_000)
      yield* redis.stop
      yield* waitUntil(Effect.map(b.broadcast.subscribed, (up) => !up), 5_000)
      assert.isFalse(yield* a.broadcast.publish("lost"))
      yield* redis.start
      // Resubscribed: `onSubscribed` runs again so its owner can catch up on what it missed.
      yield* waitUntil(Effect.sync(() => b.subscriptions() === 2), 10_000)
      yield* waitUntil(a.broadcast.publish("after"), 10_000)
      yield* waitUntil(Effect.sync(() => b.received.includes("after")), 5_000)
      assert.notInclude(b.received, "lost")
      const text = logs.map(String)
      assert.strictEqual(
        text.filter((line) => line.includes("lost the subscription to 'test:changes'")).length,
        2,
        text.join("\n")
      )
      assert.strictEqual(
        text.filter((line) => line.includes("subscribed to 'test:changes' again")).length,
        2,
        text.join("\n")
      )
    }).pipe(Effect.provide(Logger.layer([Logger.make((options) => void logs.push(options.message))]))))

  it.live("a Redis that is down at start: nothing fails, publishing answers false, the subscription comes when Redis does", () =>
    Effect.gen(function*() {
      const redis = yield* privateRedis
      yield* redis.stop
      const a = yield* listening(redis.url, "test:changes")
      assert.isFalse(yield* a.broadcast.publish("early"))
      assert.isFalse(yield* a.broadcast.subscribed)
      yield* redis.start
      yield* waitUntil(a.broadcast.subscribed, 10_000)
      assert.strictEqual(a.subscriptions(), 1)
    }))

  it.effect("bad options die with a message naming the option", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(RedisBroadcast.make({ url: "http://localhost", channel: "x" }))
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit)) {
        assert.include(String(Cause.squash(exit.cause)), "url must be a redis:// or rediss:// URL")
      }
    }))
})
