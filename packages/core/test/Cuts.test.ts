import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import type { StreamEvent } from "../src/dialect/Canonical.ts"
import * as Cuts from "../src/testing/Cuts.ts"

describe("Cuts", () => {
  it("splitAt cuts at every point modulo the length, keeping empty pieces at the ends", () => {
    assert.deepStrictEqual(Cuts.splitAt("abcdef", [2, 4, 2]), ["ab", "cd", "ef"])
    assert.deepStrictEqual(Cuts.splitAt("abc", [0, 3, 7]), ["", "abc", ""])
    assert.deepStrictEqual(Cuts.splitAt("abc", []), ["abc"])
  })

  it("splitNonEmpty cuts only inside the text", () => {
    assert.deepStrictEqual(Cuts.splitNonEmpty("Hello", [0, 2, 11]), ["He", "llo"])
    assert.deepStrictEqual(Cuts.splitNonEmpty("", [1, 2]), [""])
  })

  it("the pieces always join to the text", () => {
    fc.assert(fc.property(fc.string(), fc.array(fc.nat()), (text, cuts) => {
      assert.strictEqual(Cuts.splitAt(text, cuts).join(""), text)
      const pieces = Cuts.splitNonEmpty(text, cuts)
      assert.strictEqual(pieces.join(""), text)
      if (text.length > 0) assert.isTrue(pieces.every((piece) => piece.length > 0))
    }))
  })

  it("splitTextEvents cuts each text of two or more characters in two, leaving other events alone", () => {
    const events: Array<StreamEvent> = [
      { type: "start", id: "c", model: "m", created: 1 },
      { type: "text", index: 0, text: "Hello" },
      { type: "text", index: 0, text: "!" },
      { type: "finish", index: 0, reason: "stop" }
    ]
    assert.deepStrictEqual(Cuts.splitTextEvents(events, 1), [
      events[0]!,
      { type: "text", index: 0, text: "He" },
      { type: "text", index: 0, text: "llo" },
      events[2]!,
      events[3]!
    ])
  })
})
