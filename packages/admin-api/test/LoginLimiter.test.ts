/**
 * The sign-in limiter's memory: failures of subjects that never come back are
 * dropped once they leave the window, and a subject keeps only the failures
 * that can still decide its wait.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { LoginLimiter } from "../src/LoginLimiter.ts"

const WINDOW = 60_000

describe("LoginLimiter", () => {
  it.effect("drops subjects whose failures have all left the window", () =>
    Effect.gen(function*() {
      const limiter = yield* LoginLimiter
      for (let i = 0; i < 200; i++) yield* limiter.fail([`address:10.0.${i >> 8}.${i & 255}`, `account:guess${i}`])
      assert.strictEqual(yield* limiter.tracked, 400)
      yield* TestClock.adjust(WINDOW + 1)
      yield* limiter.fail(["address:10.9.9.9"])
      assert.strictEqual(yield* limiter.tracked, 1, "only the new failure is remembered")
    }).pipe(Effect.provide(LoginLimiter.layer({ maxFailures: 5, windowMs: WINDOW }))))

  it.effect("keeps a recent subject through a sweep, and still blocks it", () =>
    Effect.gen(function*() {
      const limiter = yield* LoginLimiter
      yield* limiter.fail(["address:stale"])
      yield* TestClock.adjust(WINDOW - 1000)
      for (let i = 0; i < 5; i++) yield* limiter.fail(["account:alice"])
      yield* TestClock.adjust(2000)
      yield* limiter.fail(["address:other"])
      assert.strictEqual(yield* limiter.tracked, 2, "the stale address went, alice and the new address stay")
      assert.isAbove(yield* limiter.retryAfter(["account:alice"]), 0)
    }).pipe(Effect.provide(LoginLimiter.layer({ maxFailures: 5, windowMs: WINDOW }))))

  it.effect("blocks until the oldest of the last maxFailures failures leaves the window, however many there were", () =>
    Effect.gen(function*() {
      const limiter = yield* LoginLimiter
      for (let i = 0; i < 50; i++) {
        yield* limiter.fail(["account:bob"])
        yield* TestClock.adjust(100)
      }
      // The 46th failure (at 4.5 s) is the oldest of the last five: free at 64.5 s, 59.5 s from now (5 s).
      assert.strictEqual(yield* limiter.retryAfter(["account:bob"]), 60)
      yield* TestClock.adjust(59_500)
      assert.strictEqual(yield* limiter.retryAfter(["account:bob"]), 0)
      yield* limiter.clear("account:bob")
      assert.strictEqual(yield* limiter.tracked, 0)
    }).pipe(Effect.provide(LoginLimiter.layer({ maxFailures: 5, windowMs: WINDOW }))))
})
