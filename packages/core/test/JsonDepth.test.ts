/**
 * How deeply a request body nests, counted on its text: brackets in strings
 * (escaped quotes included) do not count, and the scan stops at the first
 * level too deep.
 */
import { assert, describe, it } from "@effect/vitest"
import * as JsonDepth from "../src/wire/JsonDepth.ts"

describe("JsonDepth", () => {
  it("counts objects and arrays, not brackets inside strings", () => {
    assert.isFalse(JsonDepth.exceeds("{\"a\":[{\"b\":\"[[[[{{{{\"}]}", 3))
    assert.isTrue(JsonDepth.exceeds("{\"a\":[{\"b\":[1]}]}", 3))
    assert.isFalse(
      JsonDepth.exceeds("{\"a\":\"x\\\"[[[[\\\\\"}", 1),
      "an escaped quote does not end the string; an escaped backslash before a quote does"
    )
    assert.isFalse(JsonDepth.exceeds("\"unterminated [[[[", 1))
    const nested = (depth: number) => "{\"a\":".repeat(depth) + "1" + "}".repeat(depth)
    assert.isFalse(JsonDepth.exceeds(nested(JsonDepth.MAX_DEPTH)))
    assert.isTrue(JsonDepth.exceeds(nested(JsonDepth.MAX_DEPTH + 1)))
    assert.isTrue(JsonDepth.exceeds("[".repeat(1_000_000)))
  })

  it("counts the same on UTF-8 bytes as on text", () => {
    const bytes = (text: string) => new TextEncoder().encode(text)
    assert.isFalse(JsonDepth.exceeds(bytes("{\"a\":[{\"b\":\"[[[[{{{{\"}]}"), 3))
    assert.isTrue(JsonDepth.exceeds(bytes("{\"a\":[{\"b\":[1]}]}"), 3))
    assert.isFalse(JsonDepth.exceeds(bytes("{\"a\":\"x\\\"[[[[\\\\\"}"), 1))
    assert.isFalse(
      JsonDepth.exceeds(bytes("{\"é\":\"ü[[[[\"}"), 1),
      "multi-byte characters are skipped with their string"
    )
    const nested = (depth: number) => bytes("{\"a\":".repeat(depth) + "1" + "}".repeat(depth))
    assert.isFalse(JsonDepth.exceeds(nested(JsonDepth.MAX_DEPTH)))
    assert.isTrue(JsonDepth.exceeds(nested(JsonDepth.MAX_DEPTH + 1)))
  })
})
