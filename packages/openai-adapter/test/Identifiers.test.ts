import { assert, describe, it } from "@effect/vitest"
import { Identifiers } from "@modelgate/openai-adapter"
import * as fc from "fast-check"

const runs = { numRuns: 300 }

describe("Identifiers", () => {
  it("a signed tool-call id gives back the id and the signature", () => {
    fc.assert(
      fc.property(fc.string(), fc.string({ minLength: 1 }), (id, signature) => {
        const wire = Identifiers.signCallId(id, signature)
        assert.match(wire, /^mgts_[A-Za-z0-9_-]+$/)
        assert.deepStrictEqual(Identifiers.unsignCallId(wire), { id, signature })
      }),
      runs
    )
  })

  it("an id without a signature is kept, unless it looks signed, and always decodes to itself", () => {
    assert.strictEqual(Identifiers.signCallId("call_abc"), "call_abc")
    assert.strictEqual(Identifiers.signCallId("functions.search:3"), "functions.search:3")
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.string().map((s) => `mgts_${s}`)), (id) => {
        assert.deepStrictEqual(Identifiers.unsignCallId(Identifiers.signCallId(id)), { id })
      }),
      runs
    )
    // Something that merely looks signed is an ordinary id.
    assert.deepStrictEqual(Identifiers.unsignCallId("mgts_not-base64!"), { id: "mgts_not-base64!" })
  })

  it("tool names OpenAI accepts are kept; others are escaped reversibly into OpenAI's alphabet", () => {
    assert.strictEqual(Identifiers.encodeToolName("read_file"), "read_file")
    assert.strictEqual(Identifiers.encodeToolName("github.get_issue"), "mgfn_github-dget_issue")
    assert.strictEqual(Identifiers.decodeToolName("mgfn_github-dget_issue"), "github.get_issue")
    assert.strictEqual(Identifiers.decodeToolName("get_weather"), "get_weather")
    fc.assert(
      fc.property(fc.string(), (name) => {
        const wire = Identifiers.encodeToolName(name)
        assert.match(wire, /^[A-Za-z0-9_-]*$/)
        assert.strictEqual(Identifiers.decodeToolName(wire), name)
      }),
      runs
    )
    // Gemini's own names (letters, digits, _ . : -, up to 128) fit whenever their escaped form has at most 64 characters.
    fc.assert(
      fc.property(fc.stringMatching(/^[a-zA-Z_][a-zA-Z0-9_.:-]{0,40}$/), (name) => {
        const wire = Identifiers.encodeToolName(name)
        assert.strictEqual(Identifiers.isValidToolName(wire), wire.length <= 64)
      }),
      runs
    )
  })
})
