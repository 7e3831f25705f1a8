import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import type { Model } from "../src/Domain.ts"
import { cost, isPriced, maxOutputFor, worstCase } from "../src/Pricing.ts"

const model = (over: Partial<Model> = {}): Model => ({
  id: "m",
  displayName: "m",
  inputNanosPerMillion: 150_000_000n, // $0.15 / 1M
  outputNanosPerMillion: 600_000_000n, // $0.60 / 1M
  cachedInputNanosPerMillion: null,
  perRequestNanos: null,
  free: false,
  inputTokenLimit: 128_000,
  outputTokenLimit: 16_384,
  ...over
})

describe("Pricing", () => {
  it("rounding table: exact rational, rounded up once to a nano-dollar", () => {
    const rows: Array<[Partial<Model>, bigint, number, number, number, bigint]> = [
      // price overrides, ratio micros, prompt, completion, cached, expected nanos
      [{}, 1_000_000n, 1_000_000, 0, 0, 150_000_000n],
      [{}, 1_000_000n, 1, 0, 0, 150n], // 0.15e-6 USD = 150 nanos exactly
      [{}, 1_000_000n, 0, 1, 0, 600n],
      [{}, 800_000n, 1, 1, 0, 600n], // (150 + 600) * 0.8 = 600
      [{}, 333_333n, 1, 0, 0, 50n], // 150 * 0.333333 = 49.99995 -> 50
      [{ inputNanosPerMillion: 1n }, 1_000_000n, 1, 0, 0, 1n], // 1e-6 nanos -> rounds up to 1
      [{ cachedInputNanosPerMillion: 75_000_000n }, 1_000_000n, 1000, 0, 1000, 75_000n],
      [{ cachedInputNanosPerMillion: 75_000_000n }, 1_000_000n, 1000, 0, 400, 120_000n],
      [{ perRequestNanos: 10_000_000n, inputNanosPerMillion: null, outputNanosPerMillion: null }, 1_000_000n, 500, 500, 0, 10_000_000n],
      [{ perRequestNanos: 10_000_000n, inputNanosPerMillion: null, outputNanosPerMillion: null }, 1_500_000n, 0, 0, 0, 15_000_000n],
      [{ free: true }, 1_000_000n, 1000, 1000, 0, 0n]
    ]
    for (const [over, ratio, prompt, completion, cached, expected] of rows) {
      assert.strictEqual(cost(model(over), ratio, { promptTokens: prompt, completionTokens: completion, cachedTokens: cached }), expected)
    }
  })

  it("never charges below the exact price nor more than one nano-dollar above it", () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: 100_000_000_000n }),
        fc.bigInt({ min: 0n, max: 100_000_000_000n }),
        fc.bigInt({ min: 1n, max: 10_000_000n }),
        fc.nat({ max: 2_000_000 }),
        fc.nat({ max: 2_000_000 }),
        (input, output, ratio, prompt, completion) => {
          const charged = cost(model({ inputNanosPerMillion: input, outputNanosPerMillion: output }), ratio, {
            promptTokens: prompt,
            completionTokens: completion
          })
          const exactTimes = (BigInt(prompt) * input + BigInt(completion) * output) * ratio // / 10^12
          const scale = 10n ** 12n
          assert.isTrue(charged * scale >= exactTimes)
          assert.isTrue((charged - 1n) * scale < exactTimes || charged === 0n)
        }
      ),
      { numRuns: 500 }
    )
  })

  it("the worst case bounds every actual cost within its token bounds", () => {
    fc.assert(
      fc.property(fc.nat({ max: 100_000 }), fc.nat({ max: 16_384 }), fc.nat({ max: 100_000 }), (bound, maxOut, cached) => {
        const m = model({ cachedInputNanosPerMillion: 10_000_000n })
        const hold = worstCase(m, 1_000_000n, bound, maxOut)
        const actual = cost(m, 1_000_000n, { promptTokens: bound, completionTokens: maxOut, cachedTokens: Math.min(cached, bound) })
        assert.isTrue(actual <= hold)
      })
    )
  })

  it("knows which models can be billed", () => {
    assert.isTrue(isPriced(model()))
    assert.isFalse(isPriced(model({ inputNanosPerMillion: null, outputNanosPerMillion: null })))
    assert.isTrue(isPriced(model({ inputNanosPerMillion: null, outputNanosPerMillion: null, free: true })))
  })

  it("caps the held output at the model's limit", () => {
    assert.strictEqual(maxOutputFor(model(), undefined), 16_384)
    assert.strictEqual(maxOutputFor(model(), 100), 100)
    assert.strictEqual(maxOutputFor(model(), 1_000_000), 16_384)
  })
})
