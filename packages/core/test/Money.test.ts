import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import * as fc from "fast-check"
import { formatUsd, parseScaled, usdToNanos, UsdAmount, divCeil } from "../src/Money.ts"

describe("Money", () => {
  it("parses decimal USD exactly into nano-dollars", () => {
    const table: Array<[string | number, bigint | undefined]> = [
      ["10", 10_000_000_000n],
      ["0.15", 150_000_000n],
      [0.15, 150_000_000n],
      [0.1 + 0.2, 300_000_000n], // numbers are read to 11 decimals, so float noise below a nano-dollar is dropped
      ["0.000000001", 1n],
      ["0.0000000001", undefined],
      ["-2.5", -2_500_000_000n],
      [1e-7, 100n],
      ["1e3", undefined],
      ["abc", undefined],
      ["", undefined],
      [Number.NaN, undefined]
    ]
    for (const [input, expected] of table) assert.strictEqual(usdToNanos(input), expected, String(input))
  })

  it("formats with at least two decimals and no float", () => {
    assert.strictEqual(formatUsd(10_000_000_000n), "10.00")
    assert.strictEqual(formatUsd(9_999_850_000n), "9.99985")
    assert.strictEqual(formatUsd(1n), "0.000000001")
    assert.strictEqual(formatUsd(-1n), "-0.000000001")
    assert.strictEqual(formatUsd(0n), "0.00")
  })

  it("format and parse are inverse for every amount", () => {
    fc.assert(fc.property(fc.bigInt({ min: -(10n ** 18n), max: 10n ** 18n }), (nanos) => {
      assert.strictEqual(usdToNanos(formatUsd(nanos)), nanos)
    }), { numRuns: 500 })
  })

  it("parseScaled handles any scale", () => {
    assert.strictEqual(parseScaled("0.8", 6), 800_000n)
    assert.strictEqual(parseScaled(1.25, 6), 1_250_000n)
    assert.strictEqual(parseScaled("1.2345678", 6), undefined)
  })

  it("divCeil rounds toward positive infinity", () => {
    assert.strictEqual(divCeil(10n, 3n), 4n)
    assert.strictEqual(divCeil(9n, 3n), 3n)
    assert.strictEqual(divCeil(0n, 3n), 0n)
  })

  it("UsdAmount decodes numbers and strings and rejects bad ones with a clear message", () => {
    const decode = Schema.decodeUnknownSync(UsdAmount)
    assert.strictEqual(decode(12.5), 12_500_000_000n)
    assert.strictEqual(decode("0.15"), 150_000_000n)
    assert.throws(() => decode("ten"), /USD amount/)
    assert.strictEqual(Schema.encodeSync(UsdAmount)(1_500_000_000n), "1.50")
  })
})
