import { assert, describe, it } from "@effect/vitest"
import type { Canonical } from "@modelgate/core"
import { Response, Stream as GeminiStream } from "@modelgate/genai-adapter"
import { Effect, Result, Stream } from "effect"

describe("StreamEncoder", () => {
  it("buffers tool-call fragments and never sends an empty parts array before the end", () => {
    const encoder = new GeminiStream.StreamEncoder("g")
    const events: Array<Canonical.StreamEvent> = [
      { type: "start", id: "r", model: "x", created: 0 },
      { type: "tool_call_start", index: 0, call: 0, id: "c0", name: "f" },
      { type: "tool_call_delta", index: 0, call: 0, arguments: "{\"a\"" },
      { type: "tool_call_delta", index: 0, call: 0, arguments: ":1}" },
      { type: "text", index: 0, text: "" },
      { type: "text", index: 0, text: "after" }
    ]
    const chunks = encoder.pushAll(events)
    assert.deepStrictEqual(chunks, [{
      candidates: [{
        content: {
          role: "model",
          parts: [{ functionCall: { id: "c0", name: "f", args: { a: 1 } } }, { text: "after" }]
        },
        index: 0
      }],
      modelVersion: "g",
      responseId: "r"
    }])
  })

  it("a cut stream gets no finishReason; buffered calls are still sent", () => {
    const encoder = new GeminiStream.StreamEncoder("g")
    encoder.pushAll([
      { type: "start", id: "r", model: "x", created: 0 },
      { type: "tool_call_start", index: 0, call: 0, id: "c0", name: "f" },
      { type: "tool_call_delta", index: 0, call: 0, arguments: "{\"a\":" }
    ])
    const [last] = encoder.end()
    assert.deepStrictEqual(last!.candidates, [{
      content: { role: "model", parts: [{ functionCall: { id: "c0", name: "f", args: { _raw: "{\"a\":" } } }] },
      index: 0
    }])
  })

  it("the final chunk carries finishReason and usage", () => {
    const encoder = new GeminiStream.StreamEncoder("g")
    encoder.pushAll([
      { type: "start", id: "r", model: "x", created: 0 },
      { type: "text", index: 0, text: "hi" },
      { type: "finish", index: 0, reason: "length" },
      { type: "usage", usage: { promptTokens: 1, completionTokens: 2, totalTokens: 3 } }
    ])
    assert.deepStrictEqual(encoder.end(), [{
      candidates: [{ content: { role: "model", parts: [] }, finishReason: "MAX_TOKENS", index: 0 }],
      modelVersion: "g",
      responseId: "r",
      usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 2, totalTokenCount: 3 }
    }])
  })
})

describe("StreamDecoder", () => {
  it("fails with the classified error on an in-band error chunk", () => {
    const decoder = new GeminiStream.StreamDecoder()
    const result = decoder.push({ error: { code: 503, message: "overloaded", status: "UNAVAILABLE" } })
    assert.isTrue(Result.isFailure(result))
    if (Result.isFailure(result)) assert.strictEqual(result.failure._tag, "UpstreamUnavailable")
    const garbage = decoder.pushText("{not json")
    assert.isTrue(Result.isFailure(garbage))
  })

  it("turns a blocked prompt into a content_filter finish", () => {
    const decoder = new GeminiStream.StreamDecoder()
    const result = decoder.push({ promptFeedback: { blockReason: "SAFETY" }, responseId: "r" })
    assert.deepStrictEqual(Result.getOrThrow(result), [
      { type: "start", id: "r", model: "", created: 0 },
      { type: "finish", index: 0, reason: "content_filter" }
    ])
  })

  it.effect("decodeSseText fails the stream on an in-band error", () =>
    Effect.gen(function*() {
      const error = yield* Stream.make(
        "data: {\"candidates\":[]}\r\n\r\n",
        "data: {\"error\":{\"code\":429,\"message\":\"slow\",\"status\":\"RESOURCE_EXHAUSTED\"}}\r\n\r\n"
      ).pipe(
        GeminiStream.decodeSseText(),
        Stream.runCollect,
        Effect.flip
      )
      assert.strictEqual(error._tag, "UpstreamRateLimited")
    }))
})

describe("media in answers", () => {
  const image = { inlineData: { mimeType: "image/png", data: "iVBORw0KGgo=" } }
  const audio = { inlineData: { mimeType: "audio/wav", data: "UklGRg==" } }
  const answer = (parts: Array<unknown>) => ({
    candidates: [{ content: { role: "model", parts }, finishReason: "STOP" }],
    responseId: "r"
  })

  it("a generated image is an image part of a whole answer, and Markdown text with its data URL in a stream", () => {
    const decoded = Response.decodeResponseResult(answer([{ text: "Here:" }, image]))
    assert.isTrue(Result.isSuccess(decoded))
    if (Result.isSuccess(decoded)) {
      assert.deepStrictEqual(decoded.success.choices[0]!.content, [
        { type: "text", text: "Here:" },
        { type: "image", mediaType: "image/png", data: "iVBORw0KGgo=" }
      ])
    }
    const events = new GeminiStream.StreamDecoder().push(answer([image]))
    assert.isTrue(Result.isSuccess(events))
    if (Result.isSuccess(events)) {
      assert.deepStrictEqual(events.success.find((e) => e.type === "text"), {
        type: "text",
        index: 0,
        text: "![image](data:image/png;base64,iVBORw0KGgo=)"
      })
    }
  })

  it("audio or a document in an answer is a clear error, never skipped", () => {
    const whole = Response.decodeResponseResult(answer([{ text: "Listen:" }, audio]))
    assert.isTrue(Result.isFailure(whole))
    if (Result.isFailure(whole)) {
      assert.strictEqual(whole.failure._tag, "UpstreamUnavailable")
      assert.include(whole.failure.message, "'audio/wav'")
    }
    const streamed = new GeminiStream.StreamDecoder().push(answer([audio]))
    assert.isTrue(Result.isFailure(streamed))
    if (Result.isFailure(streamed)) assert.include(streamed.failure.message, "'audio/wav'")
  })
})
