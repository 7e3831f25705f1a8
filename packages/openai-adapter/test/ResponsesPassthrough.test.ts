/**
 * The Responses relay (a Responses client to an OpenAI channel marked
 * `responses`): a body read by scanning, not parsing, whatever its size; the
 * client's bytes forwarded with only the model replaced; usage figures that
 * are not token counts refused; and what a Responses upstream's 200 must be
 * to count as an answer.
 */
import { assert, describe, it } from "@effect/vitest"
import { Dialect, ResponsesAnswer, ResponsesPassthrough } from "@modelgate/openai-adapter"
import { Effect } from "effect"

const { EAGER_CHECK_BYTES, checkStructure, inspectBody, parsed, upstreamBody } = ResponsesPassthrough

/** A body past EAGER_CHECK_BYTES: the history Codex sends every turn, plus `last` items and `fields`. */
const large = (last: ReadonlyArray<unknown> = [], fields: Record<string, unknown> = {}) =>
  JSON.stringify({
    model: "m",
    instructions: "You are a coding agent.",
    input: [
      ...Array.from(
        { length: 40 },
        (_, i) => ({
          type: "message",
          role: i % 2 ? "assistant" : "user",
          content: [{ type: i % 2 ? "output_text" : "input_text", text: `turn ${i} ${"x".repeat(600)}` }]
        })
      ),
      ...last
    ],
    store: false,
    ...fields
  })

describe("ResponsesPassthrough.inspectBody: large bodies", () => {
  it.effect("reads what the call needs by scanning, counts media, and forwards the bytes with only the model replaced", () =>
    Effect.gen(function*() {
      const text = large([
        {
          role: "user",
          content: [{ type: "input_text", text: "the words \"type\": \"input_image\" in a text are not an image" }, {
            type: "input_image",
            image_url: "https://x/a.png"
          }]
        },
        { type: "function_call_output", call_id: "c", output: [{ type: "input_file", file_url: "https://x/a.pdf" }] }
      ], { stream: true, max_output_tokens: 900 })
      assert.isAbove(text.length, EAGER_CHECK_BYTES)
      const inspected = yield* inspectBody(new TextEncoder().encode(text))
      assert.deepStrictEqual(
        [inspected.model, inspected.stream, inspected.maxOutputTokens, inspected.mediaParts, inspected.checked],
        ["m", true, 900, 2, false]
      )
      assert.isUndefined(checkStructure(inspected), "a well-formed body passes the deferred check")
      assert.strictEqual(upstreamBody(inspected, "m"), inspected.bytes)
      assert.strictEqual(
        new TextDecoder().decode(upstreamBody(inspected, "gpt-5")),
        text.replace("\"model\":\"m\"", "\"model\":\"gpt-5\"")
      )
    }))

  it.effect("JSON the scan let through deep inside is named by the parser: in the deferred check, and for the translation", () =>
    Effect.gen(function*() {
      // A misspelt literal inside a value passes the scan (it checks brackets and strings, not every token).
      const misspelt = yield* inspectBody(
        large([{ role: "user", content: "x", flag: "t" }]).replace("\"flag\":\"t\"", "\"flag\":tru")
      )
      assert.include(checkStructure(misspelt)?.message, "The request body is not valid JSON")
      assert.include((yield* Effect.flip(parsed(misspelt))).message, "The request body is not valid JSON")
      const error = yield* Effect.flip(
        (yield* Dialect.responsesClient.open(misspelt.bytes, {})).canonical()
      )
      assert.include(error.message, "The request body is not valid JSON")
    }))

  it.effect("the top-level fields, response state, JSON syntax and nesting are refused at once, whatever the size", () =>
    Effect.gen(function*() {
      const nested = "[".repeat(200) + "]".repeat(200)
      const cases: Array<[string, string, string | undefined]> = [
        [large([], { stream: "yes" }), "'stream' must be a boolean", "stream"],
        [large([], { max_output_tokens: 0 }), "'max_output_tokens' must be a positive integer", "max_output_tokens"],
        [large([], { model: "" }), "'model' is required", "model"],
        [large([], { input: { a: "x".repeat(EAGER_CHECK_BYTES) } }), "'input' must be a string or an array", "input"],
        [large([], { previous_response_id: "resp_1" }), "keeps no response state", "previous_response_id"],
        [large([], { store: true }), "keeps no response state", "store"],
        [large([], { store: true }).slice(0, -1) + ",\"store\":false}", "sets 'store' more than once", "store"],
        [
          large([], { model: "o1-pro" }).slice(0, -1) + ",\"model\":\"vip-model\"}",
          "sets 'model' more than once",
          "model"
        ],
        [large().slice(0, -1), "The request body is not valid JSON", undefined],
        [large([], { tools: "NESTED" }).replace("\"NESTED\"", nested), "nests", undefined]
      ]
      for (const [text, message, param] of cases) {
        const error = yield* Effect.flip(inspectBody(text))
        assert.include(error.message, message)
        assert.strictEqual(error.param, param)
      }
    }))
})

describe("Responses usage", () => {
  const event = (type: string, data: Record<string, unknown>) =>
    `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`
  const completed = (usage: unknown) =>
    event("response.created", {
      sequence_number: 0,
      response: { id: "resp_1", status: "in_progress", output: [], usage: null }
    }) +
    event("response.output_text.delta", {
      sequence_number: 1,
      item_id: "m",
      output_index: 0,
      content_index: 0,
      delta: "abcdefgh"
    }) +
    event("response.completed", {
      sequence_number: 2,
      response: { id: "resp_1", status: "completed", output: [], usage }
    })

  it("refuses figures that are not token counts: the stream and the answer are counted locally, and say why", () => {
    const good = new ResponsesPassthrough.PassthroughMeter()
    good.push(
      completed({ input_tokens: 10, input_tokens_details: { cached_tokens: 4 }, output_tokens: 3, total_tokens: 13 })
    )
    assert.deepStrictEqual(good.metered(99), { promptTokens: 10, completionTokens: 3, cachedTokens: 4, reported: true })
    for (
      const [usage, reason] of [
        [{ input_tokens: -1000000, output_tokens: -5000000 }, "input_tokens: -1000000"],
        [{ input_tokens: 1.5, output_tokens: 2 }, "input_tokens: 1.5"],
        [
          { input_tokens: 1, output_tokens: 2, input_tokens_details: { cached_tokens: -4 } },
          "input_tokens_details.cached_tokens: -4"
        ],
        [{ input_tokens: 1 }, "output_tokens: \"missing\""]
      ] as const
    ) {
      const meter = new ResponsesPassthrough.PassthroughMeter()
      meter.push(completed(usage))
      assert.deepStrictEqual(meter.metered(99), {
        promptTokens: 99,
        completionTokens: 2,
        cachedTokens: 0,
        reported: false,
        usageRejected: reason
      })
      const answer = {
        id: "resp_1",
        object: "response",
        output: [{ type: "message", content: [{ type: "output_text", text: "abcdefgh" }] }],
        usage
      }
      assert.deepStrictEqual(ResponsesPassthrough.usageOfResponse(answer, 99), {
        promptTokens: 99,
        completionTokens: 2,
        cachedTokens: 0,
        reported: false,
        usageRejected: reason
      })
      const decoded = ResponsesAnswer.decodeResponseResult(answer)
      assert.isTrue(
        decoded._tag === "Success" && decoded.success.usage === undefined && decoded.success.usageRejected === reason
      )
    }
  })
})

describe("Dialect.responsesUpstream: a 200 that is not an answer", () => {
  const { notAnAnswer, opening } = Dialect.responsesUpstream
  const message = (judged: ReturnType<typeof opening>) => typeof judged === "string" ? judged : judged.message

  it("a response object passes; an error, a failed response or another shape is the upstream failing", () => {
    assert.isUndefined(
      notAnAnswer({ id: "resp_1", object: "response", status: "completed", error: null, output: [] }, "up")
    )
    assert.strictEqual(
      notAnAnswer({ error: { message: "overloaded", type: "server_error" } }, "up")?.message,
      "The upstream 'up' answered 200 with an error instead of an answer: overloaded"
    )
    assert.strictEqual(
      notAnAnswer({
        id: "resp_1",
        object: "response",
        status: "failed",
        error: { code: "server_error", message: "the model failed" },
        output: []
      }, "up")?.message,
      "The upstream 'up' answered 200 with an error instead of an answer: the model failed"
    )
    assert.strictEqual(
      notAnAnswer({ id: "c", object: "chat.completion", choices: [] }, "up")?.message,
      "The upstream 'up' answered 200 with something that is not a Responses API response."
    )
    assert.isDefined(notAnAnswer([1], "up"))
    assert.isDefined(notAnAnswer("text", "up"))
  })

  it("a stream opens with response.created; an error event, response.failed, broken JSON or nothing fails it", () => {
    const created =
      "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\"}}\n\n"
    assert.strictEqual(opening(created, false, "up"), "answer")
    assert.strictEqual(opening(created.trimEnd(), false, "up"), "incomplete")
    assert.strictEqual(opening(created.trimEnd(), true, "up"), "answer")
    assert.strictEqual(opening(": keep-alive\n\n", false, "up"), "incomplete")
    assert.strictEqual(
      message(
        opening(
          "event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"overloaded\",\"sequence_number\":0}\n\n",
          false,
          "up"
        )
      ),
      "The upstream 'up' answered 200 with an error instead of an answer: overloaded"
    )
    assert.strictEqual(
      message(
        opening(
          "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":{\"message\":\"no capacity\"}}}\n\n",
          false,
          "up"
        )
      ),
      "The upstream 'up' answered 200 with an error instead of an answer: no capacity"
    )
    assert.strictEqual(
      message(opening("data: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\"}}\n\n", false, "up")),
      "The upstream 'up' answered 200 with an error instead of an answer: overloaded",
      "a chat completions server's error event"
    )
    assert.strictEqual(
      message(opening("data: {\"type\":\"resp\n\n", false, "up")),
      "The upstream 'up' answered 200 with a stream event that is not JSON."
    )
    assert.strictEqual(message(opening("", true, "up")), "The upstream 'up' ended its stream without an answer.")
  })
})

describe("inspectBody: media by kind", () => {
  it.effect("input_image is an image, input_file a document, input_audio audio, in a small body and a large one alike", () =>
    Effect.gen(function*() {
      const content = [
        { type: "input_text", text: "look" },
        { type: "input_image", image_url: "https://x/a.png" },
        { type: "input_file", file_url: "https://x/a.pdf" },
        { type: "input_audio", input_audio: { data: "UklGRg==", format: "wav" } }
      ]
      const history = Array.from({ length: 40 }, (_, i) => ({ role: "user", content: "x".repeat(600) + i }))
      for (const input of [[{ role: "user", content }], [...history, { role: "user", content }]]) {
        const inspected = yield* inspectBody(JSON.stringify({ model: "m", input }))
        assert.strictEqual(inspected.mediaParts, 3)
        assert.deepStrictEqual(inspected.media, { image: 1, document: 1, audio: 1 })
      }
    }))
})
