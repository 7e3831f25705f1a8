/**
 * The relay of an Anthropic client's call to an Anthropic channel: the body
 * checked where routing and billing rely on it (and nowhere else), media
 * counted for the hold, the stream metered (a cut stream at least for what it
 * carried), the model renamed; and the local token count.
 */
import { assert, describe, it } from "@effect/vitest"
import { CountTokens, Passthrough } from "@modelgate/anthropic-adapter"
import { Effect } from "effect"

const event = (name: string, data: unknown) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`

describe("Passthrough.inspectBody", () => {
  it.effect("names what routing and billing need, and passes what it does not model", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [unknown, string | undefined]> = [
        [{ max_tokens: 5, messages: [] }, "model"],
        [{ model: "m", messages: [] }, "max_tokens"],
        [{ model: "m", max_tokens: 0, messages: [] }, "max_tokens"],
        [{ model: "m", max_tokens: 5 }, "messages"],
        [{ model: "m", max_tokens: 5, messages: [{ role: "tool", content: "x" }] }, "messages[0].role"],
        [{ model: "m", max_tokens: 5, messages: [{ role: "user", content: 5 }] }, "messages[0].content"],
        [{ model: "m", max_tokens: 5, messages: [], stream: "yes" }, "stream"]
      ]
      for (const [body, param] of cases) {
        const error = yield* Effect.flip(Passthrough.inspectBody(JSON.stringify(body)))
        assert.strictEqual(error.param, param, JSON.stringify(body))
      }
      const inspected = yield* Passthrough.inspectBody(JSON.stringify({
        model: "m",
        max_tokens: 100,
        stream: true,
        context_management: { edits: [] },
        messages: [
          {
            role: "user",
            content: [{ type: "image", source: { type: "base64", media_type: "image/png", data: "AA" } }, {
              type: "text",
              text: "x"
            }]
          },
          { role: "system", content: "mid-conversation instructions" },
          {
            role: "user",
            content: [{
              type: "tool_result",
              tool_use_id: "t",
              content: [{ type: "document", source: { type: "url", url: "https://x/a.pdf" } }]
            }]
          }
        ]
      }))
      assert.deepStrictEqual([inspected.model, inspected.stream, inspected.maxTokens, inspected.mediaParts], [
        "m",
        true,
        100,
        2
      ])
      assert.strictEqual(Passthrough.upstreamBody(inspected, "m"), inspected.bytes, "the client's own bytes")
      const renamed = new TextDecoder().decode(Passthrough.upstreamBody(inspected, "claude-x"))
      assert.deepStrictEqual(JSON.parse(renamed), { ...inspected.json, model: "claude-x" })
    }))
})

describe("Passthrough.inspectBody: large bodies", () => {
  /** A body past EAGER_CHECK_BYTES: the history Claude Code sends every turn, plus `last` turns and `fields`. */
  const large = (last: ReadonlyArray<unknown> = [], fields: Record<string, unknown> = {}) =>
    JSON.stringify({
      model: "m",
      max_tokens: 64,
      messages: [
        ...Array.from(
          { length: 40 },
          (_, i) => ({ role: i % 2 ? "assistant" : "user", content: `turn ${i} ${"x".repeat(600)}` })
        ),
        ...last
      ],
      ...fields
    })

  it.effect("reads what the call needs by scanning, counts media, and forwards the bytes with only the model replaced", () =>
    Effect.gen(function*() {
      const text = large([
        {
          role: "user",
          content: [{ type: "text", text: "the words \"type\": \"image\" in a text are not an image" }, {
            type: "image",
            source: { type: "url", url: "https://x/a.png" }
          }]
        },
        {
          role: "user",
          content: [{
            type: "tool_result",
            tool_use_id: "t",
            content: [{ type: "document", source: { type: "url", url: "https://x/a.pdf" } }]
          }]
        }
      ], { stream: true, context_management: { edits: [] } })
      assert.isAbove(text.length, Passthrough.EAGER_CHECK_BYTES)
      const inspected = yield* Passthrough.inspectBody(new TextEncoder().encode(text))
      assert.deepStrictEqual(
        [inspected.model, inspected.stream, inspected.maxTokens, inspected.mediaParts, inspected.checked],
        ["m", true, 64, 2, false]
      )
      assert.isUndefined(Passthrough.checkStructure(inspected), "a well-formed body passes the deferred check")
      assert.strictEqual(Passthrough.upstreamBody(inspected, "m"), inspected.bytes)
      assert.strictEqual(
        new TextDecoder().decode(Passthrough.upstreamBody(inspected, "claude-x")),
        text.replace("\"model\":\"m\"", "\"model\":\"claude-x\"")
      )
    }))

  it.effect("a malformed turn deep in a large body is named by the deferred check, and JSON the scan let through by the parser", () =>
    Effect.gen(function*() {
      const wrongRole = Passthrough.checkStructure(
        yield* Passthrough.inspectBody(large([{ role: "usr", content: "x" }]))
      )
      assert.strictEqual(wrongRole?.param, "messages[40].role")
      const wrongContent = Passthrough.checkStructure(
        yield* Passthrough.inspectBody(large([{ role: "user", content: 5 }]))
      )
      assert.strictEqual(wrongContent?.param, "messages[40].content")
      // A misspelt literal inside a value passes the scan (it checks brackets and strings, not every token).
      const misspelt = yield* Passthrough.inspectBody(
        large([{ role: "user", content: [{ type: "text", text: "x", cache: "t" }] }]).replace(
          "\"cache\":\"t\"",
          "\"cache\":tru"
        )
      )
      assert.include(Passthrough.checkStructure(misspelt)?.message, "The request body is not valid JSON")
      const error = yield* Effect.flip(Passthrough.parsed(misspelt))
      assert.include(error.message, "The request body is not valid JSON")
    }))

  it.effect("the top-level fields, JSON syntax and nesting are still refused at once, whatever the size", () =>
    Effect.gen(function*() {
      const nested = "[".repeat(200) + "]".repeat(200)
      const cases: Array<[string, string, string | undefined]> = [
        [large([], { stream: "yes" }), "'stream' must be a boolean", "stream"],
        [large([], { max_tokens: 0 }), "'max_tokens' is required", "max_tokens"],
        [large([], { model: "" }), "'model' is required", "model"],
        [
          large([], { messages: { a: "x".repeat(Passthrough.EAGER_CHECK_BYTES) } }),
          "'messages' is required",
          "messages"
        ],
        [large([], { max_tokens: "100000" }), "'max_tokens' is required", "max_tokens"],
        [large([], { max_tokens: 1 }).slice(0, -1) + ",\"max_tokens\":100000}", "more than once", "max_tokens"],
        [large().slice(0, -1), "The request body is not valid JSON", undefined],
        [large([], { tools: "NESTED" }).replace("\"NESTED\"", nested), "nests", undefined]
      ]
      for (const [text, message, param] of cases) {
        const error = yield* Effect.flip(Passthrough.inspectBody(text))
        assert.include(error.message, message)
        assert.strictEqual(error.param, param)
      }
    }))
})

describe("Passthrough.PassthroughMeter", () => {
  const start = event("message_start", {
    type: "message_start",
    message: {
      id: "msg_1",
      model: "claude-x",
      usage: { input_tokens: 10, cache_read_input_tokens: 100, cache_creation_input_tokens: 20, output_tokens: 1 }
    }
  })
  const delta = (text: string) =>
    event("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text } })

  it("meters input, cache reads and writes from message_start and the output from message_delta", () => {
    const meter = new Passthrough.PassthroughMeter()
    const text = start + delta("Hello there") +
      event("message_delta", { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 3 } })
    assert.strictEqual(meter.push(text.slice(0, 50)) + meter.push(text.slice(50)) + meter.end(), text)
    assert.deepStrictEqual(meter.metered(999), {
      promptTokens: 130,
      completionTokens: 3,
      cachedTokens: 100,
      cacheWriteTokens: 20,
      reported: true
    })
  })

  it("charges a stream cut before message_delta for the text it carried, not the one token message_start reported", () => {
    const meter = new Passthrough.PassthroughMeter()
    meter.push(start + delta("a sentence of thirty-two chars.."))
    assert.strictEqual(meter.metered(999).completionTokens, 8)
    const silent = new Passthrough.PassthroughMeter()
    silent.push(delta("abcdefgh"))
    assert.deepStrictEqual(silent.metered(42), {
      promptTokens: 42,
      completionTokens: 2,
      cachedTokens: 0,
      reported: false
    })
  })

  it("refuses usage figures that are not token counts: the stream and the answer are counted locally, and say why", () => {
    const negative = event("message_start", {
      type: "message_start",
      message: { id: "msg_1", model: "claude-x", usage: { input_tokens: -1000000, output_tokens: 1 } }
    })
    const meter = new Passthrough.PassthroughMeter()
    meter.push(
      negative + delta("abcdefgh") +
        event("message_delta", {
          type: "message_delta",
          delta: { stop_reason: "end_turn" },
          usage: { output_tokens: 3 }
        })
    )
    assert.deepStrictEqual(meter.metered(42), {
      promptTokens: 42,
      completionTokens: 2,
      cachedTokens: 0,
      reported: false,
      usageRejected: "input_tokens: -1000000"
    })
    const fractional = new Passthrough.PassthroughMeter()
    fractional.push(
      start + delta("abcdefgh") +
        event("message_delta", {
          type: "message_delta",
          delta: { stop_reason: "end_turn" },
          usage: { output_tokens: 2.5 }
        })
    )
    assert.strictEqual(fractional.metered(42).usageRejected, "output_tokens: 2.5")
    assert.isFalse(fractional.metered(42).reported)
    const answer = {
      id: "msg_1",
      type: "message",
      content: [{ type: "text", text: "abcdefgh" }],
      usage: { input_tokens: 1.5, output_tokens: 2 }
    }
    assert.deepStrictEqual(Passthrough.usageOfResponse(answer, 42), {
      promptTokens: 42,
      completionTokens: 2,
      cachedTokens: 0,
      reported: false,
      usageRejected: "input_tokens: 1.5"
    })
    assert.deepStrictEqual(
      Passthrough.usageOfResponse({
        ...answer,
        usage: { input_tokens: 5, cache_read_input_tokens: 7, output_tokens: 2 }
      }, 42),
      { promptTokens: 12, completionTokens: 2, cachedTokens: 7, cacheWriteTokens: 0, reported: true }
    )
  })

  it("renames the model of an answer and of message_start, and nothing else", () => {
    assert.strictEqual(
      Passthrough.renameModel(
        "{\"id\":\"msg_1\",\"model\":\"claude-x\",\"content\":[{\"type\":\"text\",\"text\":\"\\\"model\\\":\\\"y\\\"\"}]}",
        "public"
      ),
      "{\"id\":\"msg_1\",\"model\":\"public\",\"content\":[{\"type\":\"text\",\"text\":\"\\\"model\\\":\\\"y\\\"\"}]}"
    )
  })
})

describe("CountTokens.countTokens", () => {
  it.effect("estimates system, turns, tool calls, results and tools; a bad body names the field", () =>
    Effect.gen(function*() {
      const small = yield* CountTokens.countTokens({
        model: "m",
        messages: [{ role: "user", content: "How many tokens is this?" }]
      })
      const more = yield* CountTokens.countTokens({
        model: "m",
        system: "Be brief.",
        tools: [{ name: "f", description: "d", input_schema: { type: "object" } }],
        messages: [
          { role: "user", content: "How many tokens is this?" },
          { role: "assistant", content: [{ type: "tool_use", id: "t", name: "f", input: { a: 1 } }] },
          {
            role: "user",
            content: [{ type: "tool_result", tool_use_id: "t", content: "42" }, {
              type: "image",
              source: { type: "base64", media_type: "image/png", data: "AA" }
            }]
          }
        ]
      })
      assert.isAbove(small.input_tokens, 0)
      assert.isAbove(more.input_tokens, small.input_tokens + 2000)
      const error = yield* Effect.flip(CountTokens.countTokens({ model: "m" }))
      assert.strictEqual(error.param, "messages")
    }))
})

describe("Passthrough.inspectBody: media by kind", () => {
  it.effect("image blocks are images and document blocks documents, in tool results too, small body or large", () =>
    Effect.gen(function*() {
      const content = [
        { type: "image", source: { type: "url", url: "https://x/a.png" } },
        { type: "document", source: { type: "url", url: "https://x/a.pdf" } },
        {
          type: "tool_result",
          tool_use_id: "t",
          content: [{ type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } }]
        }
      ]
      const history = Array.from({ length: 40 }, (_, i) => ({ role: "user", content: "x".repeat(600) + i }))
      for (const messages of [[{ role: "user", content }], [...history, { role: "user", content }]]) {
        const inspected = yield* Passthrough.inspectBody(JSON.stringify({ model: "m", max_tokens: 5, messages }))
        assert.strictEqual(inspected.mediaParts, 3)
        assert.deepStrictEqual(inspected.media, { image: 2, document: 1 })
      }
    }))
})
