import { assert, describe, it } from "@effect/vitest"
import { MemoryLimiter } from "@modelgate/core"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { behaviour } from "./behaviour.ts"

behaviour("MemoryLimiter", (options) => MemoryLimiter.layerWith(options))

describe("MemoryLimiter memory", () => {
  it.effect("forgets subjects with nothing left to count, keeps those holding slots", () =>
    Effect.gen(function*() {
      const limiter = yield* MemoryLimiter.make()
      for (let i = 0; i < 1000; i++) {
        yield* limiter.acquire([{
          id: `key:${i}`,
          label: `key ${i}`,
          limits: { rpm: 5, tpm: 1000, concurrency: null }
        }], 10)
      }
      const held = yield* limiter.acquire([{
        id: "key:held",
        label: "key held",
        limits: { rpm: null, tpm: null, concurrency: 1 }
      }], 0)
      assert.strictEqual(yield* limiter.trackedSubjects, 1001)
      yield* TestClock.adjust(59_999)
      assert.strictEqual(yield* limiter.trackedSubjects, 1001)
      yield* TestClock.adjust(1)
      assert.strictEqual(yield* limiter.trackedSubjects, 1)
      yield* held.release(0)
      assert.strictEqual(yield* limiter.trackedSubjects, 0)
    }))

  it.effect("invalid options die with a message naming the option", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(MemoryLimiter.make({ windowMs: 0 }))
      assert.isTrue(exit._tag === "Failure" && String(exit.cause).includes("windowMs must be a positive integer"))
    }))
})
