import { describe, it } from "@effect/vitest"
import * as Laws from "@modelgate/anthropic-adapter/testing/Laws"
import * as fc from "fast-check"

const runs = { numRuns: 200 }

describe("laws", () => {
  it("canonical -> Anthropic -> canonical keeps the request", () => {
    fc.assert(Laws.requestRoundTrip(), runs)
  })
  it("tool ids survive sanitising", () => {
    fc.assert(Laws.toolIdRoundTrip(), { numRuns: 500 })
  })
  it("signed tool ids give back the id and its thought signature", () => {
    fc.assert(Laws.signedToolIdRoundTrip(), { numRuns: 500 })
  })
  it("Anthropic response -> canonical -> Anthropic is stable", () => {
    fc.assert(Laws.responseRoundTrip(), runs)
  })
  it("re-chunking an Anthropic stream never changes the assembled answer", () => {
    fc.assert(Laws.streamRechunking(), runs)
  })
  it("canonical events -> Anthropic events -> canonical events keeps the answer", () => {
    fc.assert(Laws.streamEncodeDecode(), runs)
  })
  it("the SSE parser is split-invariant", () => {
    fc.assert(Laws.sseSplitInvariance(), runs)
  })
  it("the relay's meter forwards a stream unchanged and meters it the same however it is split", () => {
    fc.assert(Laws.meterSplit(), runs)
  })
  it("malformed bodies give InvalidRequest or UnsupportedFeature, never a throw", () => {
    fc.assert(Laws.malformedBodies(), runs)
  })
})
