/**
 * Settlement always completes and never charges a negative amount, whatever
 * a dialect lets through: figures that are not token counts are priced as
 * counts and the record says they were refused (`UsageRejected`); the
 * embedded store settles a negative charge as nothing.
 */
import { assert, describe, it } from "@effect/vitest"
import { Accounts, type Domain, KeyStore } from "@modelgate/core"
import { Effect, Layer, Redacted } from "effect"
import * as MemoryStore from "../src/host/MemoryStore.ts"
import * as Settlement from "../src/money/Settlement.ts"

const model: Domain.Model = {
  id: "m",
  displayName: "m",
  inputNanosPerMillion: 1_000_000_000n,
  outputNanosPerMillion: 2_000_000_000n,
  cachedInputNanosPerMillion: null,
  perRequestNanos: null,
  free: false,
  inputTokenLimit: 1000,
  outputTokenLimit: 1000
}

const SECRET = "sk-settlement-alice-00000000"
const store = MemoryStore.layer({
  users: [{ name: "alice", balanceNanos: 1_000_000_000n }],
  models: [model],
  keys: [{ user: "alice", name: "main", group: "default", secret: Redacted.make(SECRET) }]
})

/** Runs `f` with the key, over a fresh embedded store. */
const withStore = <A, E, R>(f: (key: Domain.ApiKey) => Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const key = (yield* (yield* KeyStore.KeyStore).lookup(SECRET))!
    return yield* f(key)
  }).pipe(Effect.provide(Layer.fresh(store)))

const call = (key: Domain.ApiKey, requestId: string): Settlement.CallInfo => ({
  requestId,
  startedAt: 0,
  key,
  model,
  ratioMicros: 1_000_000n,
  dialectIn: "openai",
  stream: false
})

describe("Settlement", () => {
  it("checked leaves counts alone and prices anything else as counts, saying the figures were refused", () => {
    const good: Settlement.Metered = { promptTokens: 3, completionTokens: 4, cachedTokens: 0, reported: true }
    assert.strictEqual(Settlement.checked(good), good)
    assert.deepStrictEqual(
      Settlement.checked({ promptTokens: -1_000_000, completionTokens: 1.5, cachedTokens: Number.NaN, reported: true }),
      {
        promptTokens: 0,
        completionTokens: 2,
        cachedTokens: 0,
        reported: false,
        usageRejected: "promptTokens: -1000000"
      }
    )
  })

  it("plus adds two meterings of one call (each upstream's bill), reported only when both were", () => {
    const parts: Settlement.Metered = { promptTokens: 9, completionTokens: 0, cachedTokens: 0, reported: true }
    const served: Settlement.Metered = { promptTokens: 19, completionTokens: 0, cachedTokens: 0, reported: true }
    assert.strictEqual(Settlement.plus(Settlement.nothing, served), served)
    assert.strictEqual(Settlement.plus(parts, Settlement.nothing), parts)
    assert.deepStrictEqual(Settlement.plus(parts, served), { ...parts, promptTokens: 28 })
    const counted: Settlement.Metered = { ...parts, reported: false, usageRejected: "token_count: -1" }
    const both = Settlement.plus(counted, { ...served, cacheWriteTokens: 2, reasoningTokens: 1 })
    assert.deepStrictEqual(both, {
      promptTokens: 28,
      completionTokens: 0,
      cachedTokens: 0,
      cacheWriteTokens: 2,
      reasoningTokens: 1,
      reported: false,
      usageRejected: "token_count: -1"
    })
    // Parts answered are an answer, charged as one; nothing consumed is not.
    const leg: Settlement.Leg = {
      channel: "c",
      upstreamModel: "m",
      dialectOut: "bedrock",
      attempts: 1,
      attemptLog: [{ channel: "c", keyHint: "…abcd", status: 500, errorCode: "UpstreamUnavailable", durationMs: 1 }]
    }
    assert.strictEqual(Settlement.chargeFor({ model, ratioMicros: 1_000_000n }, 1_000_000n, parts, leg), 9_000n)
    assert.strictEqual(
      Settlement.chargeFor({ model, ratioMicros: 1_000_000n }, 1_000_000n, Settlement.nothing, leg),
      0n
    )
  })

  it.effect("a settlement given fractional and negative figures completes: charged as counts, recorded as UsageRejected, the hold released", () =>
    withStore((key) =>
      Effect.gen(function*() {
        const settlement = yield* Settlement.open(call(key, "req-frac"), 10_000n)
        yield* settlement.finish({ promptTokens: 1.5, completionTokens: -5_000_000, cachedTokens: 0, reported: true }, {
          status: 200,
          errorCode: null,
          ttfbMs: 1
        }, undefined)
        const inspect = yield* MemoryStore.MemoryInspect
        const record = inspect.usage().find((r) => r.requestId === "req-frac")!
        // 2 prompt tokens at $1 per million: 2,000 nano-dollars; the negative completion is 0.
        assert.deepStrictEqual([
          record.errorCode,
          record.usageReported,
          record.promptTokens,
          record.completionTokens,
          record.costNanos
        ], [
          "UsageRejected",
          false,
          2,
          0,
          2_000n
        ])
        assert.strictEqual(inspect.balance("alice"), 1_000_000_000n - 2_000n)
        assert.strictEqual(
          yield* (yield* Accounts.Accounts).balance(key.userId),
          1_000_000_000n - 2_000n,
          "no hold is left"
        )
      })
    ))

  it.effect("the embedded store settles a negative charge as nothing and releases the hold", () =>
    withStore((key) =>
      Effect.gen(function*() {
        const accounts = yield* Accounts.Accounts
        const hold = yield* accounts.hold({
          userId: key.userId,
          keyId: key.id,
          amountNanos: 5_000n,
          requestId: "req-neg"
        })
        assert.deepStrictEqual(yield* accounts.settle(hold, -3_150_000_000n), { chargedNanos: 0n, overdrawnNanos: 0n })
        assert.strictEqual(yield* accounts.balance(key.userId), 1_000_000_000n)
      })
    ))
})
