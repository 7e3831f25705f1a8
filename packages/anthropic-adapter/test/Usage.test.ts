/**
 * Anthropic usage is believed only when its figures are token counts: a
 * negative or fractional figure in an answer, in `message_start` or in a
 * `message_delta` is refused (for a stream, the usage it assembles over
 * several events is then refused as a whole), and the call is counted
 * locally. A fractional figure used to make the whole answer unreadable.
 */
import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import * as Response from "../src/Response.ts"
import { StreamDecoder } from "../src/Stream.ts"

const message = (usage: unknown) => ({
  id: "msg_1",
  type: "message",
  role: "assistant",
  model: "claude",
  content: [{ type: "text", text: "Hello" }],
  stop_reason: "end_turn",
  usage
})

describe("Anthropic usage", () => {
  it("readUsage takes counts and names the first figure that is not one", () => {
    assert.deepStrictEqual(Response.readUsage({ input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 100 }), {
      promptTokens: 110,
      completionTokens: 5,
      totalTokens: 115,
      cachedTokens: 100
    })
    assert.strictEqual(
      Response.readUsage({ input_tokens: -1_000_000, output_tokens: -5_000_000 }),
      "input_tokens: -1000000"
    )
    assert.strictEqual(Response.readUsage({ input_tokens: 1 }), "output_tokens: \"missing\"")
  })

  it("an answer with fractional usage is read, its usage refused", () => {
    const response = Result.getOrThrow(
      Response.decodeResponseResult(message({ input_tokens: 1.5, output_tokens: 2.5 }))
    )
    assert.isUndefined(response.usage)
    assert.strictEqual(response.usageRejected, "input_tokens: 1.5")
  })

  it("a stream whose message_start reports a negative count refuses its usage to the end, a later good delta included", () => {
    const decoder = new StreamDecoder({ created: 1 })
    const start = Result.getOrThrow(
      decoder.push({
        type: "message_start",
        message: { id: "m", model: "c", content: [], usage: { input_tokens: -1_000_000, output_tokens: 1 } }
      })
    )
    assert.deepStrictEqual(start.at(-1), { type: "usage_rejected", reason: "input_tokens: -1000000" })
    const delta = Result.getOrThrow(
      decoder.push({ type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 7 } })
    )
    assert.deepStrictEqual(delta.at(-1), { type: "usage_rejected", reason: "input_tokens: -1000000" })
    assert.isUndefined(decoder.usage())
  })
})
