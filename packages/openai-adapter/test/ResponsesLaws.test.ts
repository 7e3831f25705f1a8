import { describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import * as ResponsesLaws from "../src/testing/ResponsesLaws.ts"

const params = { numRuns: 200 }

describe("Responses API laws", () => {
  it("request round trip: canonical -> Responses -> canonical", () =>
    fc.assert(ResponsesLaws.requestRoundTrip(), params))
  it("re-chunking a Responses stream never changes the assembled answer, which is the non-stream answer", () =>
    fc.assert(ResponsesLaws.streamRechunking(), params))
  it("the relay's meter forwards the stream unchanged and meters it the same however it is split", () =>
    fc.assert(ResponsesLaws.meterSplit(), params))
  it("arbitrary bodies give a typed 400 or a request, never a throw", () =>
    fc.assert(ResponsesLaws.malformedBodies(), params))
})
