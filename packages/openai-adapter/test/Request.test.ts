import { assert, describe, it } from "@effect/vitest"
import { Effect, Result } from "effect"
import * as fc from "fast-check"
import { inspectChatBody } from "../src/chat/Passthrough.ts"
import { decodeRequest, decodeRequestResult, encodeRequest, ensureEncodable } from "../src/chat/Request.ts"

const base = { model: "gpt-4o", messages: [{ role: "user", content: "Hi" }] }

const failure = (body: unknown) => {
  const result = decodeRequestResult(body)
  if (Result.isSuccess(result)) throw new Error("expected a failure")
  return { tag: result.failure._tag, message: result.failure.message, param: result.failure.param }
}

describe("decodeRequest errors name the field", () => {
  it.effect("missing model", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(decodeRequest({ messages: base.messages }))
      assert.deepStrictEqual({ tag: error._tag, message: error.message, param: error.param }, {
        tag: "InvalidRequest",
        message: "'model' is required",
        param: "model"
      })
    }))
  it("deep paths", () => {
    assert.deepStrictEqual(
      failure({
        model: "m",
        messages: [{ role: "system", content: "s" }, { role: "user", content: "a" }, {
          role: "user",
          content: [{ type: "image_url", image_url: "https://x" }]
        }]
      }),
      {
        tag: "InvalidRequest",
        message: "Invalid 'messages[2].content[0].image_url': Expected object",
        param: "messages[2].content[0].image_url"
      }
    )
    assert.deepStrictEqual(failure({ model: "m", messages: [{ role: "bot", content: "a" }] }).param, "messages[0]")
    assert.include(
      failure({ model: "m", messages: [{ role: "bot", content: "a" }] }).message,
      "role 'system', 'developer', 'user', 'assistant' or 'tool'"
    )
    assert.deepStrictEqual(failure({ ...base, temperature: 3 }).param, "temperature")
    assert.deepStrictEqual(failure({ ...base, messages: [] }).param, "messages")
    assert.deepStrictEqual(failure({ ...base, messages: [{ role: "tool", content: "x" }] }), {
      tag: "InvalidRequest",
      message: "'messages[0].tool_call_id' is required",
      param: "messages[0].tool_call_id"
    })
    assert.deepStrictEqual(failure([]), {
      tag: "InvalidRequest",
      message: "The request body must be a JSON object",
      param: undefined
    })
  })
  it("legacy functions, custom tools and stored files are UnsupportedFeature", () => {
    assert.deepStrictEqual(failure({ ...base, functions: [{ name: "f" }] }).tag, "UnsupportedFeature")
    assert.deepStrictEqual(failure({ ...base, function_call: "auto" }).param, "function_call")
    assert.deepStrictEqual(
      failure({ ...base, messages: [{ role: "function", name: "f", content: "1" }] }).param,
      "messages[0].role"
    )
    assert.deepStrictEqual(
      failure({ ...base, tools: [{ type: "custom", custom: { name: "x" } }] }).param,
      "tools[0].type"
    )
    assert.deepStrictEqual(
      failure({ ...base, messages: [{ role: "user", content: [{ type: "file", file: { file_id: "file-1" } }] }] }),
      {
        tag: "UnsupportedFeature",
        message:
          "Files stored at OpenAI ('file_id', messages[0].content[0]) cannot be forwarded by the gateway. Send the file inline as 'file_data' (a data: URL).",
        param: "messages[0].content[0].file.file_id"
      }
    )
  })
  it("unknown fields and nulls are tolerated", () => {
    const result = decodeRequestResult({
      ...base,
      logit_bias: {},
      top_p: null,
      stream_options: null,
      whatever: [1],
      store: true,
      metadata: { a: "b" }
    })
    assert.isTrue(Result.isSuccess(result))
  })
  it("refuses what another dialect's answer cannot carry, naming the field", () => {
    const cases: ReadonlyArray<readonly [Record<string, unknown>, string]> = [
      [{ logprobs: true }, "logprobs"],
      [{ logprobs: false, top_logprobs: 2 }, "top_logprobs"],
      [{ logit_bias: { "50256": -100 } }, "logit_bias"],
      [{ modalities: ["text", "audio"] }, "modalities"],
      [{ audio: { voice: "alloy", format: "wav" } }, "audio"],
      [{ prediction: { type: "content", content: "x" } }, "prediction"],
      [{ web_search_options: {} }, "web_search_options"]
    ]
    for (const [extra, param] of cases) {
      const result = decodeRequestResult({ ...base, ...extra })
      assert.isTrue(Result.isFailure(result), param)
      if (Result.isFailure(result)) {
        assert.strictEqual(result.failure._tag, "UnsupportedFeature")
        assert.strictEqual(result.failure.param, param)
        assert.include(result.failure.message, param)
      }
    }
    assert.isTrue(
      Result.isSuccess(decodeRequestResult({ ...base, logprobs: false, modalities: ["text"], audio: null }))
    )
  })
  it("arbitrary JSON bodies never throw and fail with InvalidRequest", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (body) => {
        const result = decodeRequestResult(body)
        assert.isTrue(Result.isFailure(result) && result.failure._tag === "InvalidRequest")
      }),
      { numRuns: 200 }
    )
  })
  it.effect("arbitrary body texts fail inspectChatBody with InvalidRequest", () =>
    Effect.gen(function*() {
      const texts = [...fc.sample(fc.string(), 100), ...fc.sample(fc.json(), 100)]
      for (const text of texts) {
        const error = yield* Effect.flip(inspectChatBody(text))
        assert.strictEqual(error._tag, "InvalidRequest")
      }
    }))
})

describe("encodeRequest", () => {
  it("maxTokensField and budget-only reasoning", () => {
    const body = encodeRequest(
      { model: "m", messages: [], stream: false, maxOutputTokens: 10, reasoning: { budgetTokens: 0 } },
      "up",
      { maxTokensField: "max_tokens" }
    )
    assert.deepStrictEqual(body, { model: "up", messages: [], max_tokens: 10, reasoning_effort: "none", stream: false })
  })
  it.effect("ensureEncodable refuses non-image files given by URI", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(ensureEncodable({
        model: "m",
        stream: false,
        messages: [{
          role: "user",
          content: [{ type: "text", text: "x" }, { type: "file", mediaType: "application/pdf", uri: "https://files/1" }]
        }]
      }))
      assert.strictEqual(error.param, "messages[0].content[1]")
    }))
  it.effect("ensureEncodable refuses media in the model's own turns and tool names too long for OpenAI", () =>
    Effect.gen(function*() {
      const media = yield* Effect.flip(ensureEncodable({
        model: "m",
        stream: false,
        messages: [
          { role: "user", content: [{ type: "text", text: "draw" }] },
          { role: "assistant", content: [{ type: "image", mediaType: "image/png", data: "AA==" }] }
        ]
      }))
      assert.strictEqual(media.param, "messages[1].content[0]")
      const long = "server.".repeat(10)
      const named = yield* Effect.flip(ensureEncodable({
        model: "m",
        stream: false,
        messages: [{ role: "user", content: [{ type: "text", text: "x" }] }],
        tools: [{ name: "ok" }, { name: long }]
      }))
      assert.strictEqual(named.param, "tools[1].name")
      assert.include(named.message, long)
      // 64 characters once escaped still pass.
      yield* ensureEncodable({
        model: "m",
        stream: false,
        messages: [],
        tools: [{ name: "a.b:c" }, { name: "x".repeat(64) }]
      })
    }))
  it("JSON mode adds a system instruction only when no message mentions JSON", () => {
    const json = { model: "m", stream: false, responseFormat: { type: "json" } } as const
    const plain = encodeRequest({
      ...json,
      messages: [{ role: "user", content: [{ type: "text", text: "List three colours" }] }]
    }, "up")
    assert.deepStrictEqual(plain.messages[0], { role: "system", content: "Respond with a JSON object." })
    const asked = encodeRequest({
      ...json,
      messages: [{ role: "user", content: [{ type: "text", text: "Answer as json" }] }]
    }, "up")
    assert.strictEqual(asked.messages.length, 1)
    const schema = encodeRequest({
      model: "m",
      stream: false,
      responseFormat: { type: "json_schema", schema: { type: "object" } },
      messages: [{ role: "user", content: [{ type: "text", text: "List three colours" }] }]
    }, "up")
    assert.strictEqual(schema.messages.length, 1)
    assert.deepStrictEqual(schema.response_format, {
      type: "json_schema",
      json_schema: { name: "response", schema: { type: "object" } }
    })
  })
  it("reasoning effort and earlier reasoning are sent only to upstreams that take them", () => {
    const request = {
      model: "m",
      stream: false,
      reasoning: { budgetTokens: 8192, includeThoughts: true },
      messages: [{
        role: "assistant" as const,
        content: [{ type: "thinking" as const, text: "hmm" }, { type: "text" as const, text: "ok" }]
      }]
    }
    const plain = encodeRequest(request, "up")
    assert.strictEqual(plain.reasoning_effort, "medium")
    assert.notProperty(plain.messages[0], "reasoning_content")
    const off = encodeRequest(request, "up", { reasoningEffort: false })
    assert.notProperty(off, "reasoning_effort")
    const vllm = encodeRequest(request, "up", { reasoningContent: true })
    assert.propertyVal(vllm.messages[0], "reasoning_content", "hmm")
  })
})
