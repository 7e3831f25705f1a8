/**
 * Usage an OpenAI-compatible upstream reports is believed only when its
 * figures are token counts: negative, fractional or missing figures are
 * refused wherever usage is read (the passthrough meter, non-stream answers,
 * the stream decoder, embeddings), the call is counted locally, and what was
 * refused is named. A 200 embeddings answer that is an error is a failure.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Result } from "effect"
import * as Passthrough from "../src/chat/Passthrough.ts"
import * as Response from "../src/chat/Response.ts"
import * as Stream from "../src/chat/Stream.ts"
import * as Dialect from "../src/Dialect.ts"

const answer = (usage: unknown) => ({
  id: "chatcmpl-1",
  object: "chat.completion",
  created: 1,
  model: "gpt-4o-mini",
  choices: [{ index: 0, message: { role: "assistant", content: "Hello there, friend" }, finish_reason: "stop" }],
  usage
})

const chunk = (body: Record<string, unknown>) =>
  `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "m", ...body })}\n\n`

describe("readUsage", () => {
  it("takes counts, and names the first figure that is not one", () => {
    assert.deepStrictEqual(Response.readUsage({ prompt_tokens: 5, completion_tokens: 2 }), {
      promptTokens: 5,
      completionTokens: 2,
      totalTokens: 7
    })
    assert.isUndefined(Response.readUsage(null))
    assert.strictEqual(
      Response.readUsage({ prompt_tokens: -1_000_000, completion_tokens: -5_000_000, total_tokens: -6_000_000 }),
      "prompt_tokens: -1000000"
    )
    assert.strictEqual(Response.readUsage({ prompt_tokens: 1.5, completion_tokens: 2 }), "prompt_tokens: 1.5")
    assert.strictEqual(Response.readUsage({ completion_tokens: 2 }), "prompt_tokens: \"missing\"")
    assert.strictEqual(
      Response.readUsage({ prompt_tokens: 1, completion_tokens: 2, prompt_tokens_details: { cached_tokens: -3 } }),
      "prompt_tokens_details.cached_tokens: -3"
    )
    assert.strictEqual(Response.readUsage("lots"), "usage: not an object")
  })
})

describe("the passthrough path", () => {
  it("a non-stream answer with negative or fractional usage is estimated, saying what was refused", () => {
    const negative = Passthrough.usageOfResponse(
      answer({ prompt_tokens: -1_000_000, completion_tokens: -5_000_000, total_tokens: -6_000_000 }),
      40
    )
    assert.deepStrictEqual(negative, {
      promptTokens: 40,
      completionTokens: 5,
      cachedTokens: 0,
      reported: false,
      usageRejected: "prompt_tokens: -1000000"
    })
    const fractional = Passthrough.usageOfResponse(
      answer({ prompt_tokens: 1.5, completion_tokens: 2.5, total_tokens: 4 }),
      40
    )
    assert.isFalse(fractional.reported)
    assert.strictEqual(fractional.usageRejected, "prompt_tokens: 1.5")
    assert.deepStrictEqual(
      Passthrough.usageOfResponse(answer({ prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 }), 40),
      {
        promptTokens: 3,
        completionTokens: 4,
        cachedTokens: 0,
        reported: true
      }
    )
  })

  it("the stream meter refuses a usage chunk whose figures are not counts, and counts what it relayed", () => {
    const call = Effect.runSync(Dialect.client.open(
      new TextEncoder().encode(
        JSON.stringify({ model: "m", messages: [], stream: true, stream_options: { include_usage: true } })
      ),
      {}
    ))
    const meter = call.meter()
    meter.push(new TextEncoder().encode(chunk({ choices: [{ index: 0, delta: { content: "Hello there" } }] })))
    meter.push(
      new TextEncoder().encode(
        chunk({
          choices: [],
          usage: { prompt_tokens: -1_000_000, completion_tokens: -5_000_000, total_tokens: -6_000_000 }
        })
      )
    )
    meter.end()
    assert.deepStrictEqual(meter.metered(12), {
      promptTokens: 12,
      completionTokens: 3,
      cachedTokens: 0,
      reported: false,
      usageRejected: "prompt_tokens: -1000000"
    })
  })

  it("a later good usage chunk wins over a refused one (usage chunks are cumulative)", () => {
    const meter = new Passthrough.PassthroughMeter({ includeUsage: false })
    meter.push(chunk({ choices: [], usage: { prompt_tokens: 2.5, completion_tokens: 1, total_tokens: 3.5 } }))
    meter.push(chunk({ choices: [], usage: { prompt_tokens: 2, completion_tokens: 1, total_tokens: 3 } }))
    assert.deepStrictEqual(meter.usage(), { promptTokens: 2, completionTokens: 1, cachedTokens: 0, reported: true })
  })
})

describe("the translated path", () => {
  it("a non-stream answer with fractional usage is read (it used to be unreadable), its usage refused", () => {
    const decoded = Response.decodeResponseResult(
      answer({ prompt_tokens: 1.5, completion_tokens: 2.5, total_tokens: 4 })
    )
    assert.isTrue(Result.isSuccess(decoded))
    const response = Result.getOrThrow(decoded)
    assert.isUndefined(response.usage)
    assert.strictEqual(response.usageRejected, "prompt_tokens: 1.5")
    assert.strictEqual(response.choices[0]!.content[0]!.type, "text")
  })

  it("the stream decoder emits usage_rejected in place of negative usage", () => {
    const events = Result.getOrThrow(Stream.decodeSseText([
      chunk({ choices: [{ index: 0, delta: { content: "Hi" }, finish_reason: "stop" }] }),
      chunk({ choices: [], usage: { prompt_tokens: -1, completion_tokens: 1, total_tokens: 0 } }),
      "data: [DONE]\n\n"
    ]))
    assert.deepStrictEqual(events.at(-1), { type: "usage_rejected", reason: "prompt_tokens: -1" })
    assert.isFalse(events.some((event) => event.type === "usage"))
  })
})

describe("embeddings", () => {
  const embeddings = Dialect.client.embeddings!
  const body = (usage: unknown) =>
    JSON.stringify({
      object: "list",
      data: [{ object: "embedding", index: 0, embedding: [0.1, 0.2] }],
      model: "e",
      usage
    })

  it.effect("relays the upstream's count when it is one, and refuses it (naming it) when not", () =>
    Effect.gen(function*() {
      assert.strictEqual(
        (yield* embeddings.passthrough(body({ prompt_tokens: 7, total_tokens: 7 }), undefined, "c")).promptTokens,
        7
      )
      const refused = yield* embeddings.passthrough(body({ prompt_tokens: -9, total_tokens: -9 }), undefined, "c")
      assert.isUndefined(refused.promptTokens)
      assert.strictEqual(refused.usageRejected, "prompt_tokens: -9")
      const decoded = yield* Dialect.upstream.embeddings!.decode(
        body({ prompt_tokens: 0.5, total_tokens: 0.5 }),
        1,
        "c"
      )
      assert.deepStrictEqual(decoded, { vectors: [[0.1, 0.2]], usageRejected: "prompt_tokens: 0.5" })
    }))

  it.effect("a 200 whose body is an error or not a list of embeddings fails, quoting the upstream's words", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        embeddings.passthrough(
          JSON.stringify({ error: { message: "overloaded", type: "server_error" } }),
          undefined,
          "c"
        )
      )
      assert.strictEqual(error._tag, "UpstreamUnavailable")
      assert.strictEqual(error.message, "The upstream 'c' answered with an error instead of embeddings: overloaded")
      const other = yield* Effect.flip(embeddings.passthrough("{}", undefined, "c"))
      assert.match(other.message, /not a list of embeddings/)
    }))
})
