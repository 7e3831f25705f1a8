import { assert, describe, it } from "@effect/vitest"
import { Ids, Request } from "@modelgate/anthropic-adapter"
import type { Canonical } from "@modelgate/core"
import { Effect, Result } from "effect"

const base = (over: Partial<Canonical.ChatRequest>): Canonical.ChatRequest => ({
  model: "gpt-4o",
  messages: [{ role: "user", content: [{ type: "text", text: "Hi" }] }],
  stream: false,
  ...over
})

const encode = (request: Canonical.ChatRequest) => Result.getOrThrow(Request.encodeRequestResult(request, "claude-x"))
const encodeError = (request: Canonical.ChatRequest) => {
  const result = Request.encodeRequestResult(request, "claude-x")
  assert.isTrue(Result.isFailure(result))
  return Result.isFailure(result) ? result.failure : assert.fail("expected a failure")
}

describe("encodeRequest", () => {
  it("supplies max_tokens and clamps temperature into 0..1", () => {
    const body = encode(base({ temperature: 1.7, topP: 0.5 }))
    assert.strictEqual(body.max_tokens, Request.DEFAULT_MAX_TOKENS)
    assert.strictEqual(body.temperature, 1)
    assert.isUndefined(body.top_p)
    assert.strictEqual(encode(base({ maxOutputTokens: 100, temperature: -1 })).max_tokens, 100)
    assert.strictEqual(encode(base({ topP: 0.5 })).top_p, 0.5)
  })

  it("merges tool messages and same-role turns, tool results first", () => {
    const body = encode(base({
      messages: [
        { role: "user", content: [{ type: "text", text: "weather?" }] },
        {
          role: "assistant",
          content: [
            { type: "text", text: "checking" },
            { type: "tool_call", id: "functions.get:0", name: "get", arguments: "{\"city\":\"Oslo\"}" },
            { type: "tool_call", id: "call_2", name: "get", arguments: "" }
          ]
        },
        { role: "user", content: [{ type: "text", text: "also this" }] },
        { role: "tool", content: [{ type: "tool_result", callId: "functions.get:0", content: "rain" }] },
        { role: "tool", content: [{ type: "tool_result", callId: "call_2", content: "", isError: true }] }
      ]
    }))
    assert.deepStrictEqual(body.messages, [
      { role: "user", content: [{ type: "text", text: "weather?" }] },
      {
        role: "assistant",
        content: [
          { type: "text", text: "checking" },
          { type: "tool_use", id: Ids.encodeToolId("functions.get:0"), name: "get", input: { city: "Oslo" } },
          { type: "tool_use", id: "call_2", name: "get", input: {} }
        ]
      },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: Ids.encodeToolId("functions.get:0"), content: "rain" },
          { type: "tool_result", tool_use_id: "call_2", is_error: true },
          { type: "text", text: "also this" }
        ]
      }
    ])
    assert.match(Ids.encodeToolId("functions.get:0"), /^[a-zA-Z0-9_-]+$/)
  })

  it("maps images: data and data URLs to base64, https to url; refuses other types", () => {
    const body = encode(base({
      messages: [{
        role: "user",
        content: [
          { type: "image", mediaType: "image/png", data: "AAAA" },
          { type: "image", url: "data:image/jpeg;base64,BBBB" },
          { type: "image", url: "https://example.com/cat.webp", detail: "high" }
        ]
      }]
    }))
    assert.deepStrictEqual(body.messages[0]!.content, [
      { type: "image", source: { type: "base64", media_type: "image/png", data: "AAAA" } },
      { type: "image", source: { type: "base64", media_type: "image/jpeg", data: "BBBB" } },
      { type: "image", source: { type: "url", url: "https://example.com/cat.webp" } }
    ])
    const error = encodeError(
      base({ messages: [{ role: "user", content: [{ type: "image", mediaType: "image/tiff", data: "AA" }] }] })
    )
    assert.strictEqual(error._tag, "UnsupportedFeature")
    assert.strictEqual(error.param, "messages[0].content[0].mediaType")
    assert.include(error.message, "image/tiff")
  })

  it("maps PDFs and plain text to documents", () => {
    const body = encode(base({
      messages: [{
        role: "user",
        content: [
          { type: "file", mediaType: "application/pdf", data: "JVBER" },
          { type: "file", mediaType: "text/plain", data: "aGVsbG8=" },
          { type: "file", mediaType: "application/pdf", uri: "https://example.com/a.pdf" }
        ]
      }]
    }))
    assert.deepStrictEqual(body.messages[0]!.content, [
      { type: "document", source: { type: "base64", media_type: "application/pdf", data: "JVBER" } },
      { type: "document", source: { type: "text", media_type: "text/plain", data: "hello" } },
      { type: "document", source: { type: "url", url: "https://example.com/a.pdf" } }
    ])
    assert.strictEqual(
      encodeError(
        base({ messages: [{ role: "user", content: [{ type: "file", mediaType: "audio/wav", data: "AA" }] }] })
      )._tag,
      "UnsupportedFeature"
    )
  })

  it("system entries, JSON mode as a system instruction, tools and tool choice", () => {
    const body = encode(base({
      system: ["Be brief", ""],
      responseFormat: { type: "json_schema", name: "answer", schema: { type: "object" } },
      tools: [{
        name: "get",
        description: "Get it",
        parameters: { type: "object", properties: { a: { type: "string" } } }
      }, { name: "noargs" }],
      toolChoice: "required",
      parallelToolCalls: false,
      stop: ["END"],
      user: "u1",
      stream: true
    }))
    assert.deepStrictEqual(body.system, [
      { type: "text", text: "Be brief" },
      { type: "text", text: Request.jsonSchemaInstruction({ type: "object" }, "answer") }
    ])
    assert.deepStrictEqual(body.tools, [
      { name: "get", description: "Get it", input_schema: { type: "object", properties: { a: { type: "string" } } } },
      { name: "noargs", input_schema: { type: "object", properties: {} } }
    ])
    assert.deepStrictEqual(body.tool_choice, { type: "any", disable_parallel_tool_use: true })
    assert.deepStrictEqual(body.stop_sequences, ["END"])
    assert.deepStrictEqual(body.metadata, { user_id: "u1" })
    assert.strictEqual(body.stream, true)
    assert.deepStrictEqual(encode(base({ responseFormat: { type: "json" } })).system, [{
      type: "text",
      text: Request.JSON_INSTRUCTION
    }])
    assert.deepStrictEqual(encode(base({ tools: [{ name: "a" }], parallelToolCalls: false })).tool_choice, {
      type: "auto",
      disable_parallel_tool_use: true
    })
    assert.isUndefined(encode(base({ toolChoice: "auto" })).tool_choice)
  })

  it("reasoning becomes a thinking budget below max_tokens, and drops conflicting sampling", () => {
    const medium = encode(base({ reasoning: { effort: "medium" }, temperature: 0.2, topK: 5, topP: 0.99 }))
    assert.deepStrictEqual(medium.thinking, { type: "enabled", budget_tokens: 8192 })
    assert.strictEqual(medium.max_tokens, 8192 + Request.DEFAULT_MAX_TOKENS)
    assert.isUndefined(medium.temperature)
    assert.isUndefined(medium.top_k)
    assert.strictEqual(medium.top_p, 0.99)
    const capped = encode(base({ reasoning: { budgetTokens: 50_000 }, maxOutputTokens: 4000 }))
    assert.deepStrictEqual(capped.thinking, { type: "enabled", budget_tokens: 3999 })
    assert.strictEqual(capped.max_tokens, 4000)
    assert.deepStrictEqual(encode(base({ reasoning: { budgetTokens: 10 } })).thinking, {
      type: "enabled",
      budget_tokens: 1024
    })
    assert.isUndefined(encode(base({ reasoning: { effort: "high" }, maxOutputTokens: 1000 })).thinking)
    assert.isUndefined(encode(base({ reasoning: { effort: "none" } })).thinking)
    assert.isUndefined(
      encode(base({ reasoning: { effort: "high" }, tools: [{ name: "a" }], toolChoice: { type: "tool", name: "a" } }))
        .thinking
    )
  })

  it("sends only Anthropic-signed thinking back", () => {
    const body = encode(base({
      messages: [
        { role: "user", content: [{ type: "text", text: "q" }] },
        {
          role: "assistant",
          content: [
            { type: "thinking", text: "mine", signature: Ids.signatureFromWire("SIG") },
            { type: "thinking", text: "", signature: Ids.redactedFromWire("DATA") },
            { type: "thinking", text: "gemini's", signature: "CiQBgeminiSig" },
            { type: "thinking", text: "unsigned" },
            { type: "tool_call", id: "c1", name: "f", arguments: "{}", signature: "CiQBgeminiSig" }
          ]
        }
      ]
    }))
    assert.deepStrictEqual(body.messages[1]!.content, [
      { type: "thinking", thinking: "mine", signature: "SIG" },
      { type: "redacted_thinking", data: "DATA" },
      { type: "tool_use", id: "c1", name: "f", input: {} }
    ])
  })

  it("refuses n > 1, bad tool arguments and empty conversations with the field named", () => {
    const n = encodeError(base({ candidateCount: 2 }))
    assert.strictEqual(n._tag, "UnsupportedFeature")
    assert.strictEqual(n.param, "candidateCount")
    const args = encodeError(
      base({
        messages: [{ role: "assistant", content: [{ type: "tool_call", id: "c", name: "f", arguments: "[1]" }] }]
      })
    )
    assert.strictEqual(args._tag, "InvalidRequest")
    assert.strictEqual(args.param, "messages[0].content[0].arguments")
    assert.strictEqual(
      encodeError(base({ messages: [{ role: "user", content: [{ type: "text", text: "" }] }] })).param,
      "messages"
    )
  })
})

describe("decodeRequest", () => {
  it.effect("reads an Anthropic client body", () =>
    Effect.gen(function*() {
      const request = yield* Request.decodeRequest({
        model: "claude-sonnet-4-5",
        max_tokens: 2048,
        system: [{ type: "text", text: "Be brief", cache_control: { type: "ephemeral" } }],
        messages: [
          { role: "user", content: "weather?" },
          {
            role: "assistant",
            content: [
              { type: "thinking", thinking: "hmm", signature: "S1" },
              { type: "redacted_thinking", data: "R1" },
              { type: "tool_use", id: "toolu_1", name: "get", input: { city: "Oslo" } }
            ]
          },
          {
            role: "user",
            content: [
              {
                type: "tool_result",
                tool_use_id: "toolu_1",
                content: [{ type: "text", text: "rain" }, { type: "text", text: "cold" }],
                is_error: true
              },
              { type: "text", text: "thanks" },
              { type: "image", source: { type: "url", url: "https://x/y.png" } }
            ]
          }
        ],
        tools: [{ name: "get", input_schema: { type: "object" } }],
        tool_choice: { type: "tool", name: "get", disable_parallel_tool_use: true },
        thinking: { type: "enabled", budget_tokens: 1024 },
        metadata: { user_id: "u" },
        stop_sequences: ["X"],
        stream: true
      })
      assert.deepStrictEqual(request, {
        model: "claude-sonnet-4-5",
        messages: [
          { role: "user", content: [{ type: "text", text: "weather?" }] },
          {
            role: "assistant",
            content: [
              { type: "thinking", text: "hmm", signature: "anthropic:S1" },
              { type: "thinking", text: "", signature: "anthropic-redacted:R1" },
              { type: "tool_call", id: "toolu_1", name: "get", arguments: "{\"city\":\"Oslo\"}" }
            ]
          },
          {
            role: "tool",
            content: [{ type: "tool_result", callId: "toolu_1", content: "rain\ncold", name: "get", isError: true }]
          },
          { role: "user", content: [{ type: "text", text: "thanks" }, { type: "image", url: "https://x/y.png" }] }
        ],
        maxOutputTokens: 2048,
        stream: true,
        system: ["Be brief"],
        tools: [{ name: "get", parameters: { type: "object" } }],
        toolChoice: { type: "tool", name: "get" },
        parallelToolCalls: false,
        stop: ["X"],
        user: "u",
        includeUsage: true,
        reasoning: { budgetTokens: 1024, includeThoughts: true }
      })
    }))

  it("names the offending field and refuses server tools", () => {
    const missing = Request.decodeRequestResult({ model: "m", messages: [{ role: "user", content: "x" }] })
    assert.isTrue(Result.isFailure(missing))
    if (Result.isFailure(missing)) assert.strictEqual(missing.failure.param, "max_tokens")
    const server = Request.decodeRequestResult({
      model: "m",
      max_tokens: 5,
      messages: [{ role: "user", content: "x" }],
      tools: [{ type: "web_search_20250305", name: "web_search" }]
    })
    assert.isTrue(Result.isFailure(server))
    if (Result.isFailure(server)) {
      assert.strictEqual(server.failure._tag, "UnsupportedFeature")
      assert.strictEqual(server.failure.param, "tools[0]")
    }
    const block = Request.decodeRequestResult({
      model: "m",
      max_tokens: 5,
      messages: [{ role: "assistant", content: [{ type: "server_tool_use", id: "s", name: "web_search", input: {} }] }]
    })
    assert.isTrue(Result.isFailure(block))
    if (Result.isFailure(block)) assert.strictEqual(block.failure.param, "messages[0].content[0]")
  })

  it("restores sanitised tool ids", () => {
    const id = "functions.WebSearch:3"
    const request = Result.getOrThrow(Request.decodeRequestResult({
      model: "m",
      max_tokens: 5,
      messages: [{ role: "assistant", content: [{ type: "tool_use", id: Ids.encodeToolId(id), name: "f", input: {} }] }]
    }))
    const part = request.messages[0]!.content[0]!
    assert.strictEqual(part.type === "tool_call" ? part.id : "", id)
  })
})
