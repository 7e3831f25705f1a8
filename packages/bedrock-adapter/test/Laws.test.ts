import { describe, it } from "@effect/vitest"
import * as Laws from "@modelgate/bedrock-adapter/testing/Laws"
import * as fc from "fast-check"

const runs = { numRuns: 200 }

describe("laws", () => {
  it("canonical -> Converse -> canonical keeps the request", () => {
    fc.assert(Laws.requestRoundTrip(), runs)
  })
  it("tool ids survive encoding, and encoded ids are Converse-safe", () => {
    fc.assert(Laws.toolIdRoundTrip(), { numRuns: 300 })
  })
  it("Converse answer -> canonical -> Converse is stable", () => {
    fc.assert(Laws.responseRoundTrip(), runs)
  })
  it("re-chunking a ConverseStream (its deltas and its bytes) never changes the assembled answer", () => {
    fc.assert(Laws.streamRechunking(), runs)
  })
  it("an event stream split in two at every byte decodes to the same events", () => {
    fc.assert(Laws.splitAtEveryByte(), { numRuns: 12 })
  })
  it("canonical events -> ConverseStream frames -> canonical events keeps the answer", () => {
    fc.assert(Laws.streamEncodeDecode(), runs)
  })
  it("a frame with any byte changed is refused, never read as another message", () => {
    fc.assert(Laws.corruptFrames(), { numRuns: 500 })
  })
  it("malformed bodies and bytes give typed errors, never a throw", () => {
    fc.assert(Laws.malformedBodies(), runs)
  })
})
