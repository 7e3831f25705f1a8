/**
 * Money display: exact strings in, readable dollars out. Amounts of a dollar
 * or more round half up to cents (never truncate), smaller ones keep at least
 * four decimals and three significant digits, and prices and exact amounts
 * show every significant digit down to the nano-dollar.
 */
import { assert, describe, it } from "vitest"
import { exactUsd, price, tokens, usd } from "../src/lib/format.ts"
import { dictionaries, interpolate } from "../src/lib/i18n.tsx"

describe("usd", () => {
  it("formats exact decimal strings", () => {
    assert.strictEqual(usd("10"), "$10.00")
    assert.strictEqual(usd("12.5"), "$12.50")
    assert.strictEqual(usd("0"), "$0.00")
    assert.strictEqual(usd("-5.25"), "-$5.25")
  })

  it("rounds amounts of a dollar or more half up to cents instead of cutting digits off", () => {
    assert.strictEqual(usd("4.995"), "$5.00")
    assert.strictEqual(usd("4.994999999"), "$4.99")
    assert.strictEqual(usd("1234567.891"), "$1,234,567.89")
    assert.strictEqual(usd("999999.995"), "$1,000,000.00")
    assert.strictEqual(usd("-2.675"), "-$2.68")
  })

  it("shows amounts under a dollar with at least four decimals, and three significant digits below that", () => {
    assert.strictEqual(usd("0.5"), "$0.5000")
    assert.strictEqual(usd("0.075"), "$0.0750")
    assert.strictEqual(usd("0.9999099"), "$0.9999", "a small balance moves with every $0.0001")
    assert.strictEqual(usd("0.0045"), "$0.0045")
    assert.strictEqual(usd("0.000125"), "$0.000125")
    assert.strictEqual(usd("0.000123456"), "$0.000123")
    assert.strictEqual(usd("0.00012355"), "$0.000124")
    assert.strictEqual(usd("0.000000001"), "$0.000000001")
    assert.strictEqual(usd("0.0099996"), "$0.0100")
    assert.strictEqual(usd("-0.0003"), "-$0.0003")
  })

  it("leaves text that is not an amount as it is", () => {
    assert.strictEqual(usd("n/a"), "n/a")
  })
})

describe("exactUsd", () => {
  it("shows every digit of an amount (on hover, where usd rounds)", () => {
    assert.strictEqual(exactUsd("9.9998"), "$9.9998")
    assert.strictEqual(exactUsd("9.99"), "$9.99")
    assert.strictEqual(exactUsd("0.000123456"), "$0.000123456")
  })
})

describe("price", () => {
  it("shows every significant digit of a price", () => {
    assert.strictEqual(price("0.075"), "$0.075")
    assert.strictEqual(price("0.15"), "$0.15")
    assert.strictEqual(price("2.5"), "$2.50")
    assert.strictEqual(price("10"), "$10.00")
    assert.strictEqual(price("0.0375"), "$0.0375")
    assert.strictEqual(price("1.234567"), "$1.234567")
    assert.strictEqual(price("0.000000001"), "$0.000000001")
    assert.strictEqual(price("1250.5"), "$1,250.50")
  })

  it("rounds digits past the nano-dollar", () => {
    assert.strictEqual(price("0.0000000015"), "$0.000000002")
    assert.strictEqual(price("0.0000000014"), "$0.000000001")
  })
})

describe("tokens", () => {
  it("is compact for large counts", () => {
    assert.strictEqual(tokens(1234), "1,234")
    assert.strictEqual(tokens(12_345), "12.3K")
    assert.strictEqual(tokens(4_500_000), "4.5M")
  })
})

describe("dictionaries", () => {
  it("have the same keys and no empty text in both languages", () => {
    assert.deepStrictEqual(Object.keys(dictionaries.zh).sort(), Object.keys(dictionaries.en).sort())
    for (const [key, text] of Object.entries(dictionaries.zh)) assert.isTrue(text.length > 0, key)
  })
})

describe("interpolate", () => {
  it("says one model, not 1 models", () => {
    const added = dictionaries.en["admin.channels.fetchAdded"]
    assert.strictEqual(interpolate(added, { count: 1 }), "1 model added: save the channel to keep them.")
    assert.strictEqual(interpolate(added, { count: 3 }), "3 models added: save the channel to keep them.")
    assert.strictEqual(interpolate(dictionaries.en["dashboard.activeKeys"], { count: 1 }), "1 active key")
    assert.strictEqual(interpolate(dictionaries.en["admin.channels.fetchAdd"], { count: 2 }), "Add 2 models")
    // No dictionary entry says "1 models" for any count.
    for (const text of Object.values(dictionaries.en)) {
      assert.notMatch(interpolate(text, { count: 1 }), /\b1 (models|keys|codes)\b/, text)
    }
  })
})
