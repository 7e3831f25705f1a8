import { describe, it } from "@effect/vitest"
import * as Laws from "@modelgate/genai-adapter/testing/Laws"
import * as fc from "fast-check"

const runs = { numRuns: 200 }

describe("laws", () => {
  it("Gemini request -> canonical -> Gemini keeps the canonical request", () => {
    fc.assert(Laws.requestRoundTrip(), runs)
  })
  it("snake_case bodies decode like camelCase ones", () => {
    fc.assert(Laws.snakeCaseInput(), runs)
  })
  it("Gemini response -> canonical -> Gemini is stable", () => {
    fc.assert(Laws.responseRoundTrip(), runs)
  })
  it("re-chunking a Gemini stream never changes the assembled answer", () => {
    fc.assert(Laws.streamRechunking(), runs)
  })
  it("canonical events -> Gemini chunks -> canonical events keeps the answer", () => {
    fc.assert(Laws.streamEncodeDecode(), runs)
  })
  it("the SSE parser is split-invariant", () => {
    fc.assert(Laws.sseSplitInvariance(), runs)
  })
  it("malformed bodies give InvalidRequest or UnsupportedFeature, never a throw", () => {
    fc.assert(Laws.malformedBodies(), runs)
  })
})
