/**
 * The decoders against real bytes: the fake upstream's Anthropic dialect
 * (packages/fake-upstream/src/Anthropic.ts), spoken to over HTTP with the body
 * `encodeRequest` writes and the headers node-http sends.
 */
import { assert, describe, it } from "@effect/vitest"
import { ErrorEnvelope, Messages, Request, Response, Stream as AnthropicStream } from "@modelgate/anthropic-adapter"
import { type Canonical, StreamAssembly } from "@modelgate/core"
import { FakeUpstream } from "@modelgate/fake-upstream"
import { Effect, Result } from "effect"

const request = (stream: boolean): Canonical.ChatRequest => ({
  model: "gpt-4o",
  system: ["Be brief"],
  messages: [{ role: "user", content: [{ type: "text", text: "weather in Oslo?" }] }],
  tools: [{ name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } }],
  stream
})

const call = (url: string, body: unknown) =>
  Effect.promise(() =>
    fetch(`${url}/v1/messages`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-api-key": "k",
        "anthropic-version": Messages.ANTHROPIC_VERSION
      },
      body: JSON.stringify(body)
    }).then(async (res) => ({ status: res.status, text: await res.text() }))
  )

describe("against the fake upstream", () => {
  it.effect("a streamed tool call decodes to the same answer as the non-stream one", () =>
    Effect.scoped(Effect.gen(function*() {
      const upstream = yield* FakeUpstream.scoped({ apiKey: "k" })
      const streamed = yield* call(upstream.url, yield* Request.encodeRequest(request(true), "claude-fake-tools"))
      assert.strictEqual(streamed.status, 200)
      const decoder = new AnthropicStream.SseDecoder()
      const pieces = streamed.text.match(/[\s\S]{1,17}/g) ?? []
      const events: Array<Canonical.StreamEvent> = []
      for (const piece of pieces) events.push(...Result.getOrThrow(decoder.push(piece)))
      events.push(...Result.getOrThrow(decoder.end()))
      const assembled = StreamAssembly.assemble(events)
      const part = assembled.choices[0]!.content[0]!
      assert.strictEqual(part.type, "tool_call")
      if (part.type === "tool_call") {
        assert.strictEqual(part.name, "get_weather")
        assert.isObject(JSON.parse(part.arguments))
      }
      assert.strictEqual(assembled.choices[0]!.finishReason, "tool_calls")
      assert.isDefined(assembled.usage)

      const whole = yield* call(upstream.url, yield* Request.encodeRequest(request(false), "claude-fake-tools"))
      const decoded = yield* Response.decodeResponse(JSON.parse(whole.text))
      assert.strictEqual(decoded.choices[0]!.finishReason, "tool_calls")
      assert.strictEqual(decoded.choices[0]!.content[0]!.type, "tool_call")
    })))

  it.effect("an upstream error is classified", () =>
    Effect.scoped(Effect.gen(function*() {
      const upstream = yield* FakeUpstream.scoped({ apiKey: "k" })
      const failed = yield* call(upstream.url, yield* Request.encodeRequest(request(false), "claude-fake-fail-529"))
      assert.strictEqual(failed.status, 529)
      assert.strictEqual(ErrorEnvelope.classifyUpstream(failed.status, failed.text)._tag, "UpstreamUnavailable")
    })))
})
