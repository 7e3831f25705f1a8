import { assert, describe, it } from "@effect/vitest"
import { Effect, Result } from "effect"
import type { ChatRequest } from "../src/dialect/Canonical.ts"
import type { Metered } from "../src/dialect/Dialect.ts"
import * as PassthroughCall from "../src/dialect/PassthroughCall.ts"
import { InvalidRequest } from "../src/errors/GatewayError.ts"
import * as JsonScan from "../src/wire/JsonScan.ts"

interface Body extends PassthroughCall.InspectedBody {
  readonly limit: number
}

const body = (json: Record<string, unknown>, model = "m"): Body => {
  const bytes = new TextEncoder().encode(JSON.stringify(json))
  return {
    bytes,
    json,
    fields: Result.getOrThrow(JsonScan.topLevel(bytes)),
    model,
    stream: true,
    mediaParts: 2,
    media: { image: 2 },
    limit: 7
  }
}

const seen: Array<string> = []
const metered: Metered = { promptTokens: 1, completionTokens: 2, cachedTokens: 0, reported: true }
const passthrough: PassthroughCall.Passthrough<Body> = {
  checkStructure: (b) => b.json.bad === true ? new InvalidRequest({ message: "bad" }) : undefined,
  upstreamBody: (b, upstreamModel) => `bytes of ${b.model} as ${upstreamModel}`,
  usageOfResponse: (json, promptEstimate) => {
    seen.push(`${JSON.stringify(json)}:${promptEstimate}`)
    return metered
  }
}

class Call extends PassthroughCall.PassthroughCall<Body> {
  readonly streamContentType = "text/x-test"
  constructor(b: Body) {
    super(b, passthrough, b.limit)
  }
  canonical() {
    return Effect.succeed({} as ChatRequest)
  }
  renameInBody(text: string) {
    return text
  }
  meter() {
    return { push: () => undefined, end: () => undefined, metered: () => metered }
  }
  streamRenamer() {
    return (text: string) => text
  }
  encodeResponse() {
    return {}
  }
  frameEncoder() {
    return { push: () => "", end: () => "" }
  }
  errorFrame() {
    return ""
  }
}

describe("PassthroughCall", () => {
  it("takes the inspection's facts, with one choice unless told", () => {
    const call = new Call(body({ model: "m" }))
    assert.deepStrictEqual(
      [call.model, call.stream, call.maxOutputTokens, call.choices, call.mediaParts, call.media],
      ["m", true, 7, 1, 2, { image: 2 }]
    )
  })

  it("reads the sampling settings for the trace from the scan, numbers only", () => {
    assert.deepStrictEqual(new Call(body({ temperature: 0.2, top_p: 1, messages: [] })).sampling(), {
      temperature: 0.2,
      topP: 1
    })
    assert.deepStrictEqual(new Call(body({ temperature: "warm" })).sampling(), {
      temperature: undefined,
      topP: undefined
    })
  })

  it("checks, forwards and meters through the adapter's passthrough module", () => {
    assert.strictEqual(new Call(body({ bad: true })).check()?.message, "bad")
    assert.isUndefined(new Call(body({})).check())
    assert.strictEqual(new Call(body({})).forward("up"), "bytes of m as up")
    assert.strictEqual(new Call(body({})).forward("up", { params: undefined, streamOptions: true }), "bytes of m as up")
    assert.strictEqual(new Call(body({ n: 1 })).relayedUsage({ usage: 3 }, 9), metered)
    assert.deepStrictEqual(seen, [`{"usage":3}:9`])
  })

  it("forwards the body with the channel's parameters applied and the upstream's model", () => {
    const forwarded = new Call(body({ model: "m", temperature: 1 })).forward("up", {
      params: { defaults: { top_p: 0.5, temperature: 0 }, overrides: { temperature: 0.2 } },
      streamOptions: true
    })
    assert.deepStrictEqual(JSON.parse(forwarded as string), { model: "up", temperature: 0.2, top_p: 0.5 })
  })
})
