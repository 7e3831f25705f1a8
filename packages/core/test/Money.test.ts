import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import * as fc from "fast-check"
import { divCeil, formatUsd, MAX_NANOS, numberText, parseScaled, UsdAmount, usdToNanos } from "../src/money/Money.ts"

describe("Money", () => {
  it("parses decimal USD exactly into nano-dollars", () => {
    const table: Array<[string | number, bigint | undefined]> = [
      ["10", 10_000_000_000n],
      ["0.15", 150_000_000n],
      [0.15, 150_000_000n],
      [0.1 + 0.2, undefined], // 0.30000000000000004: finer than a nano-dollar, refused rather than rounded
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

  it("reads numbers from their shortest round-trip text: nothing rounded, nothing finer than a nano-dollar", () => {
    const table: Array<[number, bigint | undefined]> = [
      [65536.01, 65_536_010_000_000n], // toFixed(11) would give 65536.00999999999 and refuse it
      [123456.789, 123_456_789_000_000n],
      [0.000000001, 1n], // 1e-9, written in exponent notation by String()
      [1e-9, 1n],
      [2.5e-8, 25n],
      [1.5e-7, 150n],
      [1e-12, undefined], // not silently 0
      [5e-324, undefined],
      [1.000000000001, undefined], // not silently 1
      [1.000000001, 1_000_000_001n],
      // oxlint-disable-next-line no-loss-of-precision -- the literal is the point
      [999999999.999999999, 1_000_000_000_000_000_000n], // the double nearest is 1e9 exactly
      [1e9, MAX_NANOS],
      [1e21, 10n ** 30n], // exponent notation above 1e21, expanded exactly
      [-0.5, -500_000_000n],
      [-1e-9, -1n],
      [-0, 0n],
      [0, 0n],
      [Number.POSITIVE_INFINITY, undefined]
    ]
    for (const [input, expected] of table) assert.strictEqual(usdToNanos(input), expected, String(input))
  })

  it("expands exponent notation digit by digit", () => {
    const table: Array<[number, string]> = [
      [1e-12, "0.000000000001"],
      [1.25e-7, "0.000000125"],
      [-2.5e-8, "-0.000000025"],
      [1e21, "1000000000000000000000"],
      [1.5e21, "1500000000000000000000"],
      [65536.01, "65536.01"],
      [42, "42"]
    ]
    for (const [input, expected] of table) assert.strictEqual(numberText(input), expected, String(input))
  })

  it("ratios: numbers read exactly to 6 decimals, finer ones refused", () => {
    const table: Array<[string | number, bigint | undefined]> = [
      [0.8, 800_000n],
      [1, 1_000_000n],
      [1.5, 1_500_000n],
      [0.333333, 333_333n],
      [1e-6, 1n],
      [1e-9, undefined], // not silently 0
      [0.3333333, undefined],
      [1.0000001, undefined],
      ["0.000001", 1n],
      ["0.0000001", undefined]
    ]
    for (const [input, expected] of table) assert.strictEqual(parseScaled(input, 6), expected, String(input))
  })

  it("every double read back from its text is the amount its text says", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(10n ** 15n), max: 10n ** 15n }), (nanos) => {
        // Amounts of up to 15 significant digits survive a trip through a double.
        const asNumber = Number(formatUsd(nanos))
        assert.strictEqual(usdToNanos(asNumber), nanos)
      }),
      { numRuns: 500 }
    )
  })

  it("formats with at least two decimals and no float", () => {
    assert.strictEqual(formatUsd(10_000_000_000n), "10.00")
    assert.strictEqual(formatUsd(9_999_850_000n), "9.99985")
    assert.strictEqual(formatUsd(1n), "0.000000001")
    assert.strictEqual(formatUsd(-1n), "-0.000000001")
    assert.strictEqual(formatUsd(0n), "0.00")
  })

  it("format and parse are inverse for every amount", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(10n ** 18n), max: 10n ** 18n }), (nanos) => {
        assert.strictEqual(usdToNanos(formatUsd(nanos)), nanos)
      }),
      { numRuns: 500 }
    )
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
