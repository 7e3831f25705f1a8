/**
 * Money display: exact strings in, readable dollars out, small charges never
 * shown as $0.00.
 */
import { assert, describe, it } from "vitest"
import { usd } from "../src/lib/format.ts"
import { dictionaries } from "../src/lib/i18n.tsx"

describe("usd", () => {
  it("formats exact decimal strings", () => {
    assert.strictEqual(usd("10"), "$10.00")
    assert.strictEqual(usd("12.5"), "$12.50")
    assert.strictEqual(usd("1234567.891"), "$1,234,567.89")
    assert.strictEqual(usd("0.0045"), "$0.0045")
    assert.strictEqual(usd("0.000125"), "$0.000125")
    assert.strictEqual(usd("0.000000001"), "$0.000000001")
    assert.strictEqual(usd("-5.25"), "-$5.25")
  })
})

describe("dictionaries", () => {
  it("have the same keys and no empty text in both languages", () => {
    assert.deepStrictEqual(Object.keys(dictionaries.zh).sort(), Object.keys(dictionaries.en).sort())
    for (const [key, text] of Object.entries(dictionaries.zh)) assert.isTrue(text.length > 0, key)
  })
})
