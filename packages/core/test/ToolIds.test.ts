import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import * as ToolIds from "../src/dialect/ToolIds.ts"

describe("ToolIds", () => {
  it("writes any id as a safe one, and reads it back", () => {
    fc.assert(fc.property(fc.string({ unit: "grapheme" }), (id) => {
      const encoded = ToolIds.encode(id)
      assert.isTrue(ToolIds.isSafe(encoded) || encoded === ToolIds.ID_MARKER, encoded)
      assert.strictEqual(ToolIds.decode(encoded), id)
    }))
  })

  it("keeps a safe id as it is, and marks one that looks encoded", () => {
    assert.strictEqual(ToolIds.encode("toolu_01A"), "toolu_01A")
    assert.strictEqual(ToolIds.encode("functions.WebSearch:3"), "mgid_ZnVuY3Rpb25zLldlYlNlYXJjaDoz")
    assert.notStrictEqual(ToolIds.encode("mgid_abc"), "mgid_abc")
    assert.strictEqual(ToolIds.decode("mgid_!!"), "mgid_!!")
  })

  it("keeps a leading U+FEFF, which a UTF-8 decoder would drop as a byte-order mark", () => {
    for (const id of ["\uFEFF", "\uFEFFcall:1", "a\uFEFF"]) {
      assert.strictEqual(ToolIds.decode(ToolIds.encode(id)), id)
    }
  })
})
