/**
 * The token estimate a call is admitted on (`tpm`): what it counts (prompt
 * bytes / 4, each media part, the requested output once per answer asked
 * for), and that it counts what the balance hold counts without ever
 * exceeding the hold's bound.
 */
import { assert, describe, it } from "@effect/vitest"
import { type Domain, Pricing, Tokens } from "@modelgate/core"
import fc from "fast-check"
import * as RateLimits from "../src/call/RateLimits.ts"

const model: Domain.Model = {
  id: "m",
  displayName: "m",
  inputNanosPerMillion: 1_000_000_000n,
  outputNanosPerMillion: 2_000_000_000n,
  cachedInputNanosPerMillion: null,
  perRequestNanos: null,
  free: false,
  inputTokenLimit: 128_000,
  outputTokenLimit: 1_000
}

describe("estimateTokens", () => {
  it("counts the prompt at 4 bytes a token and the requested output capped at the model's limit", () => {
    assert.strictEqual(RateLimits.estimateTokens(401, undefined, model), 101)
    assert.strictEqual(RateLimits.estimateTokens(400, 200, model), 300)
    assert.strictEqual(RateLimits.estimateTokens(400, 5_000, model), 1_100)
  })

  it("counts the requested output once per answer asked for (n, candidateCount)", () => {
    assert.strictEqual(RateLimits.estimateTokens(400, 200, model, { choices: 3 }), 100 + 3 * 200)
    assert.strictEqual(RateLimits.estimateTokens(400, 5_000, model, { choices: 2 }), 100 + 2 * 1_000)
    // No output asked for: nothing per answer either.
    assert.strictEqual(RateLimits.estimateTokens(400, undefined, model, { choices: 4 }), 100)
  })

  it("counts each media part at the hold's media figure", () => {
    assert.strictEqual(
      RateLimits.estimateTokens(400, 200, model, { mediaParts: 2 }),
      100 + 2 * Tokens.MEDIA_TOKENS + 200
    )
  })

  it("never exceeds the hold's bound for the same call", () => {
    fc.assert(fc.property(
      fc.integer({ min: 0, max: 10_000_000 }),
      fc.option(fc.integer({ min: 0, max: 100_000 }), { nil: undefined }),
      fc.integer({ min: 0, max: 50 }),
      fc.integer({ min: 1, max: 16 }),
      (bytes, requested, mediaParts, choices) => {
        const estimate = RateLimits.estimateTokens(bytes, requested, model, { mediaParts, choices })
        const bound = Tokens.bodyTokenBound(bytes, mediaParts) + choices * Pricing.maxOutputFor(model, requested)
        return estimate <= bound
      }
    ))
  })
})
