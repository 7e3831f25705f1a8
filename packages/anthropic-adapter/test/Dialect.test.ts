/**
 * The Anthropic upstream side of the dialect: in-band errors after the events
 * before them, the same events however the stream text is split, what
 * Anthropic cannot carry refused by name, unreadable answers, and error
 * classification without the upstream's echo of the key.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Dialect from "../src/Dialect.ts"

/** What the engine gives a decoder: an id and the answer's start (epoch seconds). */
const start0 = { id: "0123456789abcdef01234567", created: 1_700_000_000 }

describe("the anthropic upstream dialect", () => {
  const frames = (...events: ReadonlyArray<unknown>) =>
    events.map((e) => `event: ${(e as { type: string }).type}\ndata: ${JSON.stringify(e)}\n\n`).join("")
  const start = {
    type: "message_start",
    message: {
      id: "msg_1",
      type: "message",
      role: "assistant",
      model: "claude",
      content: [],
      usage: { input_tokens: 7, output_tokens: 1 }
    }
  }
  const block = { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }
  const delta = (text: string) => ({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text } })
  const overloaded = { type: "error", error: { type: "overloaded_error", message: "Overloaded" } }

  it("returns the events before an in-band error, then throws the classified error", () => {
    const decoder = Dialect.upstream.eventDecoder(start0)
    const events = decoder.push(frames(start, block, delta("Hi"), overloaded))
    assert.deepStrictEqual(events.filter((e) => e.type === "text"), [{ type: "text", index: 0, text: "Hi" }])
    assert.strictEqual((events.find((e) => e.type === "start") as { created: number }).created, start0.created)
    assert.throws(() => decoder.end(), /overloaded/)
    const alone = Dialect.upstream.eventDecoder(start0)
    alone.push(frames(start))
    assert.throws(() => alone.push(frames(overloaded)), /overloaded/)
  })

  it("gives the same events however the text is split", () => {
    const text = frames(start, block, delta("Hel"), delta("lo"), { type: "content_block_stop", index: 0 }, {
      type: "message_delta",
      delta: { stop_reason: "end_turn", stop_sequence: null },
      usage: { output_tokens: 2 }
    })
    const whole = Dialect.upstream.eventDecoder(start0)
    const expected = [...whole.push(text), ...whole.end()]
    for (let cut = 1; cut < text.length; cut += 7) {
      const split = Dialect.upstream.eventDecoder(start0)
      const got = [...split.push(text.slice(0, cut)), ...split.push(text.slice(cut)), ...split.end()]
      assert.deepStrictEqual(
        got.map((e) => e.type === "start" ? { ...e, created: 0 } : e),
        expected.map((e) => e.type === "start" ? { ...e, created: 0 } : e)
      )
    }
    assert.deepStrictEqual(expected.at(-1), {
      type: "usage",
      usage: { promptTokens: 7, completionTokens: 2, totalTokens: 9 }
    })
  })

  it.effect("refuses what Anthropic cannot carry, naming it", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Dialect.upstream.encodeRequest({
        model: "claude",
        messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
        stream: false,
        candidateCount: 2
      }, "claude-sonnet-4"))
      assert.strictEqual(error._tag, "UnsupportedFeature")
      assert.match(error.message, /one answer per request; 2 answers \('n' \/ 'candidateCount'\)/)
    }))

  it.effect("reads an unreadable answer as an upstream failure", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Dialect.upstream.decodeResponse({ type: "message", content: "nope" }, start0))
      assert.strictEqual(error._tag, "UpstreamUnavailable")
      assert.match(error.message, /Anthropic message/)
    }))

  it("classifies Anthropic error responses", () => {
    const limited = Dialect.upstream.classify(
      429,
      JSON.stringify({ type: "error", error: { type: "rate_limit_error", message: "slow" } }),
      { "retry-after": "3" }
    )
    assert.strictEqual(limited._tag, "UpstreamRateLimited")
    const rejected = Dialect.upstream.classify(
      400,
      JSON.stringify({ type: "error", error: { type: "invalid_request_error", message: "max_tokens: too big" } }),
      {}
    )
    assert.strictEqual(rejected._tag, "UpstreamRejected")
    assert.strictEqual(rejected.message, "max_tokens: too big")
    const auth = Dialect.upstream.classify(
      401,
      JSON.stringify({
        type: "error",
        error: { type: "authentication_error", message: "invalid x-api-key sk-ant-secret" }
      }),
      {}
    )
    assert.strictEqual(auth._tag, "UpstreamUnavailable")
    assert.notInclude(auth.message, "sk-ant-secret")
  })
})
