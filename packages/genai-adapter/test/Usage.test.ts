/**
 * Gemini `usageMetadata` is believed only when its figures are token counts:
 * negative or fractional counts are refused wherever usage is read (the
 * passthrough meter, non-stream answers, the stream decoder), the call is
 * counted locally, and what was refused is named. (They were truncated, so
 * -1000000 stayed -1000000, or failed the whole answer.) A 200 embeddings
 * answer that is an error is a failure.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Result } from "effect"
import * as Dialect from "../src/Dialect.ts"
import * as Passthrough from "../src/Passthrough.ts"
import * as Response from "../src/Response.ts"
import { StreamDecoder } from "../src/Stream.ts"

const answer = (usageMetadata: unknown) => ({
  candidates: [{
    content: { role: "model", parts: [{ text: "Hello there, friend" }] },
    finishReason: "STOP",
    index: 0
  }],
  usageMetadata,
  modelVersion: "gemini-2.5-flash"
})

describe("Gemini usage", () => {
  it("readUsage takes counts (absent ones are 0) and names the first figure that is not one", () => {
    assert.deepStrictEqual(Response.readUsage({ promptTokenCount: 4, candidatesTokenCount: 2 }), {
      promptTokens: 4,
      completionTokens: 2,
      totalTokens: 6
    })
    assert.deepStrictEqual(Response.readUsage({ promptTokenCount: 4, totalTokenCount: 4 }), {
      promptTokens: 4,
      completionTokens: 0,
      totalTokens: 4
    })
    assert.strictEqual(
      Response.readUsage({ promptTokenCount: -1_000_000, candidatesTokenCount: -5_000_000 }),
      "promptTokenCount: -1000000"
    )
    assert.strictEqual(Response.readUsage({ promptTokenCount: 3, thoughtsTokenCount: 1.5 }), "thoughtsTokenCount: 1.5")
    assert.isUndefined(Response.readUsage(undefined))
  })

  it("the passthrough path estimates a non-stream answer or a stream whose usage is refused, and says so", () => {
    const call = Effect.runSync(Dialect.client.open(
      new TextEncoder().encode(JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hi" }] }] })),
      { model: "m", stream: true, sse: true }
    ))
    assert.deepStrictEqual(call.relayedUsage(answer({ promptTokenCount: 1.5, candidatesTokenCount: 2.5 }), 30), {
      promptTokens: 30,
      completionTokens: 0,
      cachedTokens: 0,
      reported: false,
      usageRejected: "promptTokenCount: 1.5"
    })
    const meter = call.meter()
    meter.push(
      new TextEncoder().encode(
        `data: ${JSON.stringify(answer({ promptTokenCount: -1_000_000, candidatesTokenCount: -5_000_000 }))}\r\n\r\n`
      )
    )
    meter.end()
    assert.deepStrictEqual(meter.metered(30), {
      promptTokens: 30,
      completionTokens: 5,
      cachedTokens: 0,
      reported: false,
      usageRejected: "promptTokenCount: -1000000"
    })
    assert.strictEqual(Passthrough.usageOfResponse(answer({ candidatesTokenCount: -2 })), "candidatesTokenCount: -2")
  })

  it("the translated path reads an answer with fractional usage (it was unreadable) and refuses the usage", () => {
    const response = Result.getOrThrow(
      Response.decodeResponseResult(answer({ promptTokenCount: 1.5, candidatesTokenCount: 2.5 }))
    )
    assert.isUndefined(response.usage)
    assert.strictEqual(response.usageRejected, "promptTokenCount: 1.5")
    const decoder = new StreamDecoder({ id: "r", created: 1 })
    Result.getOrThrow(decoder.push(answer({ promptTokenCount: 3, candidatesTokenCount: -4 })))
    assert.deepStrictEqual(decoder.end(), [{ type: "usage_rejected", reason: "candidatesTokenCount: -4" }])
    assert.isUndefined(decoder.usage())
  })

  it.effect("a 200 embeddings answer that is an error or not an embedding fails, quoting the upstream's words", () =>
    Effect.gen(function*() {
      const embeddings = Dialect.client.embeddings!
      assert.deepStrictEqual(yield* embeddings.passthrough(`{"embedding":{"values":[0.1]}}`, undefined, "g"), {
        body: `{"embedding":{"values":[0.1]}}`
      })
      const error = yield* Effect.flip(
        embeddings.passthrough(
          JSON.stringify({ error: { code: 500, message: "internal", status: "INTERNAL" } }),
          undefined,
          "g"
        )
      )
      assert.strictEqual(error.message, "The upstream 'g' answered with an error instead of embeddings: internal")
      const other = yield* Effect.flip(embeddings.passthrough("[]", undefined, "g"))
      assert.match(other.message, /not an embedding/)
    }))
})
