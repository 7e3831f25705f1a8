import { describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import * as Laws from "../src/testing/Laws.ts"

const runs = { numRuns: 200 }

describe("laws", () => {
  it("request round trip: canonical -> OpenAI -> canonical", () => {
    fc.assert(Laws.requestRoundTrip(), runs)
  })
  it("response round trip: canonical -> OpenAI -> canonical", () => {
    fc.assert(Laws.responseRoundTrip(), runs)
  })
  it("stream re-chunking never changes the assembled response", () => {
    fc.assert(Laws.streamRechunking(), runs)
  })
  it("the SSE parser yields the same events however the text is split", () => {
    fc.assert(Laws.sseSplitInvariance(), runs)
  })
  it("malformed bodies give InvalidRequest or UnsupportedFeature, never a throw", () => {
    fc.assert(Laws.malformedBodies(), runs)
  })
  it("the passthrough meter forwards text unchanged however it is split", () => {
    fc.assert(Laws.meterSplit(), runs)
  })
})
