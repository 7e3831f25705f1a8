import { assert, describe, it } from "@effect/vitest"
import type { ChatResponse } from "../src/dialect/Canonical.ts"
import * as Equality from "../src/testing/Equality.ts"

const answer = (...texts: Array<string>): ChatResponse => ({
  id: "r",
  model: "m",
  created: 0,
  choices: [{ index: 0, content: texts.map((text) => ({ type: "text", text })), finishReason: "stop" }]
})

describe("Equality", () => {
  it("compares JSON-like values structurally, ignoring the order of keys", () => {
    assert.isTrue(
      Equality.deepEqual({ a: [1, { b: "x", c: null }], d: true }, { d: true, a: [1, { c: null, b: "x" }] })
    )
    assert.isFalse(Equality.deepEqual({ a: [1, 2] }, { a: [2, 1] }))
    assert.isFalse(Equality.deepEqual({ a: 1 }, { a: 1, b: 2 }))
    assert.isFalse(Equality.deepEqual([], {}))
    assert.isFalse(Equality.deepEqual({}, []))
    assert.isFalse(Equality.deepEqual(null, {}))
    assert.isFalse(Equality.deepEqual("1", 1))
  })

  it("counts a member whose value is undefined as absent, as JSON does", () => {
    assert.isTrue(Equality.deepEqual({ a: 1, b: undefined }, { a: 1 }))
    assert.isTrue(Equality.deepEqual({ a: 1 }, { a: 1, b: undefined }))
    assert.isFalse(Equality.deepEqual({ a: undefined }, { b: 1 }))
    assert.isFalse(Equality.deepEqual({ a: null }, {}))
  })

  it("takes NaN as equal to itself, and 0 as equal to -0", () => {
    assert.isTrue(Equality.deepEqual([Number.NaN], [Number.NaN]))
    assert.isTrue(Equality.deepEqual({ n: 0 }, { n: -0 }))
  })

  it("assertEqual names what differs and writes out both values", () => {
    Equality.assertEqual({ a: [1] }, { a: [1] }, "same")
    assert.throws(
      () => Equality.assertEqual({ a: 1 }, { a: 2, big: 3n }, "round trip"),
      "round trip: the values differ\n  actual:   {\"a\":1}\n  expected: {\"a\":2,\"big\":\"3n\"}"
    )
  })

  it("assertRechunked holds for two equal assemblies of an answer whose parts assembly merges, and fails otherwise", () => {
    Equality.assertRechunked(answer("ab"), answer("ab"), answer("a", "b"))
    assert.throws(() => Equality.assertRechunked(answer("ab"), answer("a"), answer("ab")), /assembled streams/)
    assert.throws(() => Equality.assertRechunked(answer("ab"), answer("ab"), answer("a")), /non-stream answer/)
  })
})
