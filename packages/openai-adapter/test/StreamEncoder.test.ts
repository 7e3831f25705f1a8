import { assert, describe, it } from "@effect/vitest"
import { StreamAssembly } from "@modelgate/core"
import type { Canonical } from "@modelgate/core"
import * as Cuts from "@modelgate/core/testing/Cuts"
import * as fc from "fast-check"
import { StreamEncoder } from "../src/chat/Stream.ts"
import * as Framing from "../src/Framing.ts"
import * as Arbitraries from "../src/testing/Arbitraries.ts"

/** The reference framing: every chunk `push` returns, stringified and framed. */
const viaChunks = (encoder: StreamEncoder, event: Canonical.StreamEvent): string => {
  let text = ""
  for (const chunk of encoder.push(event)) text += Framing.frame(JSON.stringify(chunk))
  return text
}

describe("StreamEncoder.encode", () => {
  it("writes exactly the framed JSON of push's chunks, whatever the events", () => {
    fc.assert(
      fc.property(Arbitraries.canonicalResponse, fc.nat(), fc.boolean(), (response, cut, includeUsage) => {
        // More text deltas than the answer's parts, so the steady-state path runs many times per stream.
        const events = Cuts.splitTextEvents(Cuts.splitTextEvents(StreamAssembly.toEvents(response), cut), cut + 1)
        const options = { model: response.model, includeUsage }
        const fast = new StreamEncoder(options)
        const reference = new StreamEncoder(options)
        for (const event of events) assert.strictEqual(fast.encode(event), viaChunks(reference, event))
        assert.strictEqual(fast.finish(), reference.finish())
      }),
      { numRuns: 300 }
    )
  })

  it("writes a new prefix when a stream starts again with another id", () => {
    const encoder = new StreamEncoder({ model: "m\"odel", includeUsage: false })
    const reference = new StreamEncoder({ model: "m\"odel", includeUsage: false })
    const events: Array<Canonical.StreamEvent> = [
      { type: "start", id: "a", model: "x", created: 1 },
      { type: "text", index: 0, text: "one" },
      { type: "text", index: 0, text: "two\n\"three\"" },
      { type: "start", id: "b\u2028", model: "x", created: 2 },
      { type: "text", index: 0, text: "four" },
      { type: "text", index: 1, text: "five" },
      { type: "text", index: 1, text: "six" }
    ]
    const written = events.map((event) => encoder.encode(event))
    assert.deepStrictEqual(written, events.map((event) => viaChunks(reference, event)))
    assert.include(written[4]!, "\"id\":\"b\u2028\"")
    assert.include(written[4]!, "\"created\":2")
  })
})
