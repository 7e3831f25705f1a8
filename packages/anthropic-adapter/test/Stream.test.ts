import { assert, describe, it } from "@effect/vitest"
import { Ids, Stream as AnthropicStream } from "@modelgate/anthropic-adapter"
import { type Canonical, StreamAssembly } from "@modelgate/core"
import { Effect, Result, Stream } from "effect"

const names = (frames: ReadonlyArray<{ readonly event: string }>) => frames.map((frame) => frame.event)

describe("StreamDecoder", () => {
  it("numbers tool calls by tool_use blocks, not block indices, and skips the empty first fragment", () => {
    const decoder = new AnthropicStream.StreamDecoder({ created: 7 })
    const events = Result.getOrThrow(decoder.pushAll([
      {
        type: "message_start",
        message: {
          id: "msg_1",
          model: "claude",
          content: [],
          usage: { input_tokens: 10, output_tokens: 1, cache_read_input_tokens: 90, cache_creation_input_tokens: 5 }
        }
      },
      { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
      { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Let me" } },
      { type: "content_block_stop", index: 0 },
      { type: "ping" },
      {
        type: "content_block_start",
        index: 1,
        content_block: { type: "tool_use", id: Ids.encodeToolId("f.x:1"), name: "f", input: {} }
      },
      { type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: "" } },
      { type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: "{\"a\":" } },
      { type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: "1}" } },
      { type: "content_block_stop", index: 1 },
      {
        type: "content_block_start",
        index: 2,
        content_block: { type: "tool_use", id: "toolu_2", name: "g", input: {} }
      },
      { type: "content_block_stop", index: 2 },
      { type: "message_delta", delta: { stop_reason: "tool_use", stop_sequence: null }, usage: { output_tokens: 42 } },
      { type: "message_stop" }
    ]))
    assert.deepStrictEqual(events, [
      { type: "start", id: "msg_1", model: "claude", created: 7 },
      {
        type: "usage",
        usage: { promptTokens: 105, completionTokens: 1, totalTokens: 106, cachedTokens: 90, cacheWriteTokens: 5 }
      },
      { type: "text", index: 0, text: "Let me" },
      { type: "tool_call_start", index: 0, call: 0, id: "f.x:1", name: "f" },
      { type: "tool_call_delta", index: 0, call: 0, arguments: "{\"a\":" },
      { type: "tool_call_delta", index: 0, call: 0, arguments: "1}" },
      { type: "tool_call_start", index: 0, call: 1, id: "toolu_2", name: "g" },
      { type: "tool_call_delta", index: 0, call: 1, arguments: "{}" },
      { type: "finish", index: 0, reason: "tool_calls" },
      {
        type: "usage",
        usage: { promptTokens: 105, completionTokens: 42, totalTokens: 147, cachedTokens: 90, cacheWriteTokens: 5 }
      }
    ])
    assert.deepStrictEqual(decoder.usage(), {
      promptTokens: 105,
      completionTokens: 42,
      totalTokens: 147,
      cachedTokens: 90,
      cacheWriteTokens: 5
    })
  })

  it("fails with the classified error on an error event, and with UpstreamUnavailable on garbage", () => {
    const decoder = new AnthropicStream.StreamDecoder()
    const overloaded = decoder.push({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } })
    assert.isTrue(Result.isFailure(overloaded))
    if (Result.isFailure(overloaded)) {
      assert.strictEqual(overloaded.failure._tag, "UpstreamUnavailable")
      assert.strictEqual((overloaded.failure as { status?: number }).status, 529)
    }
    const limited = new AnthropicStream.StreamDecoder().push({
      type: "error",
      error: { type: "rate_limit_error", message: "slow" }
    })
    assert.isTrue(Result.isFailure(limited) && limited.failure._tag === "UpstreamRateLimited")
    assert.isTrue(Result.isFailure(decoder.pushText("{not json")))
    assert.isTrue(
      Result.isFailure(
        new AnthropicStream.StreamDecoder().push({
          type: "content_block_delta",
          index: 0,
          delta: { type: "text_delta" }
        })
      )
    )
    assert.deepStrictEqual(
      Result.getOrThrow(new AnthropicStream.StreamDecoder().push({ type: "some_future_event" })),
      []
    )
  })

  it.effect("decodeSseText works over any split and fails the stream on an error event", () =>
    Effect.gen(function*() {
      const text =
        "event: message_start\r\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"c\",\"content\":[]}}\r\n\r\n" +
        "event: content_block_delta\r\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\r\n\r\n"
      const pieces = text.split("")
      const events = yield* Stream.fromIterable(pieces).pipe(AnthropicStream.decodeSseText(), Stream.runCollect)
      assert.deepStrictEqual(events, [{ type: "start", id: "m", model: "c", created: 0 }, {
        type: "text",
        index: 0,
        text: "Hi"
      }])
      const error = yield* Stream.make(
        text,
        "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"boom\"}}\n\n"
      ).pipe(
        AnthropicStream.decodeSseText(),
        Stream.runCollect,
        Effect.flip
      )
      assert.strictEqual(error._tag, "UpstreamUnavailable")
    }))
})

describe("StreamEncoder", () => {
  it("writes the full event sequence with sequential block indices and cumulative usage", () => {
    const encoder = new AnthropicStream.StreamEncoder("claude-sonnet-4-5")
    const frames = [
      ...encoder.pushAll([
        { type: "start", id: "chatcmpl-1", model: "gpt-4o", created: 1 },
        { type: "thinking", index: 0, text: "hm", signature: Ids.signatureFromWire("SIG") },
        { type: "text", index: 0, text: "Hel" },
        { type: "text", index: 0, text: "lo" },
        { type: "tool_call_start", index: 0, call: 0, id: "functions.f:0", name: "f" },
        { type: "tool_call_delta", index: 0, call: 0, arguments: "{\"a\"" },
        { type: "tool_call_delta", index: 0, call: 0, arguments: ":1}" },
        { type: "finish", index: 0, reason: "tool_calls" },
        { type: "usage", usage: { promptTokens: 100, completionTokens: 9, totalTokens: 109, cachedTokens: 60 } }
      ]),
      ...encoder.end()
    ]
    assert.deepStrictEqual(names(frames), [
      "message_start",
      "ping",
      "content_block_start",
      "content_block_delta",
      "content_block_delta",
      "content_block_stop",
      "content_block_start",
      "content_block_delta",
      "content_block_delta",
      "content_block_stop",
      "content_block_start",
      "content_block_delta",
      "content_block_delta",
      "content_block_stop",
      "message_delta",
      "message_stop"
    ])
    assert.deepStrictEqual(frames[10]!.data, {
      type: "content_block_start",
      index: 2,
      content_block: { type: "tool_use", id: Ids.encodeToolId("functions.f:0"), name: "f", input: {} }
    })
    assert.deepStrictEqual(frames[14]!.data, {
      type: "message_delta",
      delta: { stop_reason: "tool_use", stop_sequence: null },
      usage: { input_tokens: 40, output_tokens: 9, cache_creation_input_tokens: 0, cache_read_input_tokens: 60 }
    })
    assert.strictEqual(
      AnthropicStream.sseEvent(frames[15]!),
      "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
    )
  })

  it("message_start states the prompt estimate it is given (the final message_delta the upstream's count)", () => {
    const encoder = new AnthropicStream.StreamEncoder("c", { inputTokens: 1234 })
    const frames = [
      ...encoder.pushAll([{ type: "start", id: "x", model: "m", created: 0 }, { type: "text", index: 0, text: "Hi" }, {
        type: "finish",
        index: 0,
        reason: "stop"
      }, {
        type: "usage",
        usage: { promptTokens: 1200, completionTokens: 1, totalTokens: 1201 }
      }]),
      ...encoder.end()
    ]
    const data = (name: string) =>
      frames.find((f) => f.event === name)!.data as {
        message?: { usage: { input_tokens: number } }
        usage?: { input_tokens: number }
      }
    assert.strictEqual(data("message_start").message!.usage.input_tokens, 1234)
    assert.strictEqual(data("message_delta").usage!.input_tokens, 1200)
    const unknown = new AnthropicStream.StreamEncoder("c").pushAll([{ type: "start", id: "x", model: "m", created: 0 }])
    assert.strictEqual(
      (unknown[0]!.data as { message: { usage: { input_tokens: number } } }).message.usage.input_tokens,
      0
    )
  })

  it("a cut stream (no finish) gets no message_delta or message_stop", () => {
    const encoder = new AnthropicStream.StreamEncoder("c")
    encoder.pushAll([{ type: "start", id: "x", model: "m", created: 0 }, { type: "text", index: 0, text: "par" }])
    assert.deepStrictEqual(names(encoder.end()), ["content_block_stop"])
    assert.deepStrictEqual(encoder.end(), [])
  })

  it.effect("encodeStream + encodeSse frame a whole answer", () =>
    Effect.gen(function*() {
      const response: Canonical.ChatResponse = {
        id: "r",
        model: "m",
        created: 0,
        choices: [{ index: 0, content: [{ type: "text", text: "Hi" }], finishReason: "stop" }],
        usage: { promptTokens: 3, completionTokens: 1, totalTokens: 4 }
      }
      const text = (yield* Stream.fromIterable(StreamAssembly.toEvents(response)).pipe(
        AnthropicStream.encodeStream("claude"),
        AnthropicStream.encodeSse,
        Stream.runCollect
      )).join("")
      const decoder = new AnthropicStream.SseDecoder()
      const events = [...Result.getOrThrow(decoder.push(text)), ...Result.getOrThrow(decoder.end())]
      assert.deepStrictEqual(StreamAssembly.assemble(events), { ...response, model: "claude" })
    }))
})
