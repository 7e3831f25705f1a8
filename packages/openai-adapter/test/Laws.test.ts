import { describe, it } from "@effect/vitest"
import * as Laws from "../src/testing/Laws.ts"

const params = { numRuns: 200 }

describe("laws", () => {
  it("request round trip: canonical -> OpenAI -> canonical", () => Laws.requestRoundTrip(params))
  it("response round trip: canonical -> OpenAI -> canonical", () => Laws.responseRoundTrip(params))
  it("stream re-chunking never changes the assembled response", () => Laws.streamRechunking(params))
  it("the SSE parser yields the same events however the text is split", () => Laws.sseSplit(params))
  it("decodeRequest never throws on arbitrary values", () => Laws.decodeRequestTotal(params))
  it("the passthrough meter forwards text unchanged however it is split", () => Laws.meterSplit(params))
})
