/**
 * What a call's spans say (`CallSpans`), on spans of the engine's own
 * tracer: the answer's id, model and finish reasons read in each dialect's
 * shape, a relayed stream's head from its first event, the request's
 * sampling settings, the attempt's span and its end, the settlement's
 * figures, and content only when the operator asked for it, cut to size.
 * Nothing is recorded for an unsampled call, and nothing runs for an
 * untraced one.
 */
import { assert, describe, it } from "@effect/vitest"
import type { Canonical, Domain, GatewayError, UsageLog } from "@modelgate/core"
import { Clock, Context, Effect, Option } from "effect"
import * as Dialects from "../src/call/Dialects.ts"
import * as CallSpans from "../src/telemetry/CallSpans.ts"
import * as Telemetry from "../src/telemetry/Telemetry.ts"

const clock = Context.get(Context.empty(), Clock.Clock)

const callTrace = (options: { sampled?: boolean; captureContent?: boolean } = {}) => {
  const ended: Array<Telemetry.TraceSpan> = []
  const tracer = Telemetry.makeTracer({ name: "parentbased_always_on", ratio: 1 }, (span) => ended.push(span))
  const span = new Telemetry.TraceSpan({
    name: "POST /v1/chat/completions",
    traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
    parent: Option.none(),
    annotations: Context.empty(),
    links: [],
    startTime: clock.currentTimeNanosUnsafe(),
    kind: "server",
    sampled: options.sampled ?? true,
    traceState: undefined,
    remoteParent: false
  }, (s) => ended.push(s))
  return { trace: new Telemetry.CallTrace(span, tracer, clock, options.captureContent ?? false), ended }
}

const channel = {
  name: "main",
  type: "anthropic",
  baseUrl: "https://api.anthropic.com/v1",
  apiKeys: ["sk-ant-secret-0123456789"],
  headers: {}
} as unknown as Domain.Channel

const sse = (event: unknown) => new TextEncoder().encode(`event: x\ndata: ${JSON.stringify(event)}\n\n`)

describe("CallSpans", () => {
  it("names providers as the conventions do, and operations by call kind and dialect", () => {
    assert.strictEqual(CallSpans.providerName("gemini"), "gcp.gemini")
    assert.strictEqual(CallSpans.providerName("azure"), "azure.ai.openai")
    assert.strictEqual(CallSpans.providerName("bedrock"), "aws.bedrock")
    assert.strictEqual(CallSpans.providerName("vertex"), "gcp.vertex_ai")
    assert.strictEqual(CallSpans.providerName("somewhere"), "somewhere")
    assert.strictEqual(CallSpans.operationName("chat", "gemini"), "generate_content")
    assert.strictEqual(CallSpans.operationName("chat", "responses"), "chat")
    assert.strictEqual(CallSpans.operationName("embeddings", "openai"), "embeddings")
  })

  it("reads an answer's id, model and finish reasons in each dialect's shape", () => {
    const cases: ReadonlyArray<[Domain.Dialect, unknown, string, string, ReadonlyArray<string>]> = [
      [
        "openai",
        {
          id: "chatcmpl-1",
          model: "gpt-4o-mini-2024",
          choices: [{ finish_reason: "stop" }, { finish_reason: "length" }]
        },
        "chatcmpl-1",
        "gpt-4o-mini-2024",
        ["stop", "length"]
      ],
      ["responses", { id: "resp_1", model: "gpt-5", status: "completed" }, "resp_1", "gpt-5", ["completed"]],
      [
        "responses",
        {
          id: "resp_2",
          model: "gpt-5",
          status: "incomplete",
          incomplete_details: { reason: "max_output_tokens" }
        },
        "resp_2",
        "gpt-5",
        ["max_output_tokens"]
      ],
      ["anthropic", { id: "msg_1", model: "claude-x", stop_reason: "end_turn" }, "msg_1", "claude-x", ["end_turn"]],
      [
        "gemini",
        {
          responseId: "r-1",
          modelVersion: "gemini-2.5-flash",
          candidates: [{ finishReason: "STOP" }]
        },
        "r-1",
        "gemini-2.5-flash",
        ["STOP"]
      ]
    ]
    for (const [dialect, json, id, model, reasons] of cases) {
      const { trace } = callTrace()
      CallSpans.responseJson(trace, dialect, json)
      assert.strictEqual(trace.span.attributes.get("gen_ai.response.id"), id, dialect)
      assert.strictEqual(trace.span.attributes.get("gen_ai.response.model"), model, dialect)
      assert.deepStrictEqual(trace.span.attributes.get("gen_ai.response.finish_reasons"), reasons, dialect)
    }
    // Not an answer: nothing recorded, nothing thrown.
    const { trace } = callTrace()
    CallSpans.responseJson(trace, "openai", ["not", "an", "answer"])
    assert.isFalse(trace.span.attributes.has("gen_ai.response.id"))
  })

  it("reads a relayed stream's id and model from its first event", () => {
    const cases: ReadonlyArray<[Domain.Dialect, unknown]> = [
      ["openai", { id: "chatcmpl-9", model: "m-1", choices: [] }],
      ["anthropic", { type: "message_start", message: { id: "chatcmpl-9", model: "m-1" } }],
      ["responses", { type: "response.created", response: { id: "chatcmpl-9", model: "m-1" } }],
      ["gemini", { responseId: "chatcmpl-9", modelVersion: "m-1", candidates: [] }]
    ]
    for (const [dialect, event] of cases) {
      const { trace } = callTrace()
      CallSpans.streamOpening(trace, dialect, sse(event))
      assert.strictEqual(trace.span.attributes.get("gen_ai.response.id"), "chatcmpl-9", dialect)
      assert.strictEqual(trace.span.attributes.get("gen_ai.response.model"), "m-1", dialect)
    }
  })

  it("reads a relayed stream's finish reasons from its events as they go out", () => {
    const data = (event: unknown) => `data: ${JSON.stringify(event)}\n\n`
    const cases: ReadonlyArray<[Domain.Dialect, ReadonlyArray<string>, ReadonlyArray<string>]> = [
      ["openai", [
        data({
          choices: [{ index: 0, delta: { content: "He said \"finish_reason\": \"fake\"" }, finish_reason: null }]
        }),
        data({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }] }) +
        data({ choices: [{ index: 1, delta: {}, finish_reason: "length" }] }),
        "data: [DONE]\n\n"
      ], ["stop", "length"]],
      ["anthropic", [
        `event: message_start\n${data({ type: "message_start", message: { id: "m", stop_reason: null } })}`,
        `event: message_delta\n${data({ type: "message_delta", delta: { stop_reason: "tool_use" } })}`
      ], ["tool_use"]],
      ["gemini", [
        data({ candidates: [{ content: { parts: [{ text: "Hi" }] } }] }),
        data({ candidates: [{ content: { parts: [] }, finishReason: "MAX_TOKENS" }] })
      ], ["MAX_TOKENS"]],
      ["responses", [
        `event: response.created\n${data({ type: "response.created", response: { status: "in_progress" } })}`,
        `event: response.incomplete\n${
          data({ type: "response.incomplete", response: { incomplete_details: { reason: "max_output_tokens" } } })
        }`
      ], ["max_output_tokens"]],
      ["responses", [data({ type: "response.completed", response: { status: "completed" } })], ["completed"]]
    ]
    for (const [dialect, events, reasons] of cases) {
      const { trace } = callTrace()
      const scanner = CallSpans.streamReasons(trace, dialect)!
      for (const text of events) scanner.scan(text)
      scanner.end()
      assert.deepStrictEqual(trace.span.attributes.get("gen_ai.response.finish_reasons"), reasons, dialect)
    }
    // A stream cut before any reason: nothing recorded. Not sampled, or not traced: no scanner at all.
    const cut = callTrace().trace
    const scanner = CallSpans.streamReasons(cut, "openai")!
    scanner.scan(data({ choices: [{ index: 0, delta: { content: "Hi" }, finish_reason: null }] }))
    scanner.end()
    assert.isFalse(cut.span.attributes.has("gen_ai.response.finish_reasons"))
    assert.isUndefined(CallSpans.streamReasons(callTrace({ sampled: false }).trace, "openai"))
    assert.isUndefined(CallSpans.streamReasons(undefined, "openai"))
  })

  it.effect("records the request's settings from each dialect's scan, for a 200 KB body too, without parsing it", () =>
    Effect.gen(function*() {
      const history = "x".repeat(200 * 1024)
      const cases: ReadonlyArray<[Domain.Dialect, Record<string, unknown>]> = [
        ["openai", {
          model: "gpt-4o-mini",
          messages: [{ role: "user", content: history }],
          temperature: 0.7,
          top_p: 0.9,
          max_tokens: 100,
          n: 2,
          stream: true
        }],
        ["responses", { model: "gpt-5", input: history, temperature: 0.7, top_p: 0.9, stream: true }],
        ["anthropic", {
          model: "claude-x",
          max_tokens: 100,
          messages: [{ role: "user", content: history }],
          temperature: 0.7,
          top_p: 0.9,
          stream: true
        }],
        ["gemini", {
          contents: [{ role: "user", parts: [{ text: history }] }],
          generationConfig: { temperature: 0.7, topP: 0.9, maxOutputTokens: 100, candidateCount: 2 }
        }]
      ]
      for (const [dialect, body] of cases) {
        const bytes = new TextEncoder().encode(JSON.stringify(body))
        assert.isAbove(bytes.length, 200 * 1024)
        const call = yield* Dialects.client(dialect).open(bytes, { model: "gemini-2.5-flash", stream: true })
        const { trace } = callTrace()
        const parse = JSON.parse
        let parsed = 0
        JSON.parse = (text: string, reviver?: (this: unknown, key: string, value: unknown) => unknown) => {
          if (text.length > 1024) parsed++
          return parse(text, reviver)
        }
        try {
          CallSpans.request(trace, call)
        } finally {
          JSON.parse = parse
        }
        assert.strictEqual(parsed, 0, `${dialect}: the body is not parsed for the trace`)
        const attributes = trace.span.attributes
        assert.strictEqual(attributes.get("modelgate.stream"), true, dialect)
        assert.strictEqual(attributes.get("gen_ai.request.temperature"), 0.7, dialect)
        assert.strictEqual(attributes.get("gen_ai.request.top_p"), 0.9, dialect)
        if (dialect !== "responses") assert.strictEqual(attributes.get("gen_ai.request.max_tokens"), 100, dialect)
        if (dialect === "openai" || dialect === "gemini") {
          assert.strictEqual(attributes.get("gen_ai.request.choice.count"), 2, dialect)
        }
      }
    }))

  it.effect("records no setting a request did not set as a number", () =>
    Effect.gen(function*() {
      // Large enough for its structure check to wait for a refusal: a string passes the inspection.
      const bytes = new TextEncoder().encode(JSON.stringify({
        model: "gpt-4o-mini",
        messages: [{ role: "user", content: "x".repeat(20_000) }],
        temperature: "hot"
      }))
      const { trace } = callTrace()
      CallSpans.request(trace, yield* Dialects.client("openai").open(bytes, {}))
      assert.isFalse(trace.span.attributes.has("gen_ai.request.temperature"))
      assert.isFalse(trace.span.attributes.has("gen_ai.request.top_p"))
      assert.isFalse(trace.span.attributes.has("gen_ai.request.max_tokens"))
      assert.isFalse(trace.span.attributes.has("gen_ai.request.choice.count"))
    }))

  it("makes an attempt's client span under the call's, and ends it with its status and error", () => {
    const { trace, ended } = callTrace()
    const span = CallSpans.attempt(trace, "chat", channel, "claude-x", 2)!
    assert.strictEqual(span.kind, "client")
    assert.strictEqual(span.name, "chat claude-x")
    assert.strictEqual(Option.getOrUndefined(span.parent)?.spanId, trace.span.spanId)
    assert.strictEqual(span.attributes.get("gen_ai.provider.name"), "anthropic")
    assert.strictEqual(span.attributes.get("server.address"), "api.anthropic.com")
    assert.strictEqual(span.attributes.get("server.port"), 443)
    assert.strictEqual(span.attributes.get("modelgate.attempt"), 2)
    const error = { _tag: "UpstreamTimeout", message: "late" } as unknown as GatewayError.GatewayError
    CallSpans.attemptEnded(trace, span, null, error)
    assert.strictEqual(ended.length, 1)
    assert.strictEqual(span.attributes.get("error.type"), "UpstreamTimeout")
    assert.isFalse(span.attributes.has("http.response.status_code"))
    assert.strictEqual(span.status._tag, "Ended")
  })

  it("puts the settlement's figures on the call's span", () => {
    const { trace } = callTrace()
    CallSpans.settled(trace, {
      promptTokens: 12,
      completionTokens: 30,
      cachedTokens: 4,
      cacheWriteTokens: 0,
      reasoningTokens: 0,
      usageReported: true,
      costNanos: 1_500_000n,
      attempts: 2,
      channel: "main",
      model: "claude",
      upstreamModel: "claude-x",
      ttfbMs: 80,
      errorCode: "BalanceOverdrawn"
    } as unknown as UsageLog.UsageRecord)
    const attributes = trace.span.attributes
    assert.strictEqual(attributes.get("gen_ai.usage.input_tokens"), 12)
    assert.strictEqual(attributes.get("gen_ai.usage.output_tokens"), 30)
    assert.strictEqual(attributes.get("gen_ai.usage.cache_read.input_tokens"), 4)
    assert.isFalse(attributes.has("gen_ai.usage.cache_creation.input_tokens"))
    assert.strictEqual(attributes.get("modelgate.cost_usd"), 0.0015)
    assert.strictEqual(attributes.get("modelgate.attempts"), 2)
    assert.strictEqual(attributes.get("modelgate.upstream_model"), "claude-x")
    assert.strictEqual(attributes.get("modelgate.error_code"), "BalanceOverdrawn")
  })

  const prompt = {
    model: "claude",
    system: ["Be brief."],
    messages: [
      { role: "user", content: [{ type: "text", text: "y".repeat(5_000) }] },
      { role: "user", content: [{ type: "image", data: "AAAA", mediaType: "image/png" }] }
    ]
  } as unknown as Canonical.ChatRequest
  const answer = {
    id: "msg_1",
    model: "claude-x",
    created: 0,
    choices: [{ index: 0, content: [{ type: "text", text: "it is sk-ant-secret-0123456789" }], finishReason: "stop" }]
  } as unknown as Canonical.ChatResponse

  it("exports content only when asked, cut to size, media by kind, the channel's secrets redacted", () => {
    const off = callTrace()
    CallSpans.content(off.trace, channel, prompt, answer)
    assert.deepStrictEqual(off.trace.span.events, [])
    assert.isFalse(CallSpans.capturing(off.trace))

    const { trace } = callTrace({ captureContent: true })
    CallSpans.content(trace, channel, prompt, answer)
    const [name, , attributes] = trace.span.events[0]!
    assert.strictEqual(name, "gen_ai.client.inference.operation.details")
    const input = JSON.parse(String(attributes!["gen_ai.input.messages"]))
    assert.strictEqual(input[0].parts[0].content, `${"y".repeat(CallSpans.MAX_PART_CHARS)}… [904 more]`)
    assert.deepStrictEqual(input[1].parts[0], { type: "blob", modality: "image" })
    assert.notInclude(String(attributes!["gen_ai.input.messages"]), "AAAA")
    const output = JSON.parse(String(attributes!["gen_ai.output.messages"]))
    assert.deepStrictEqual(output, [{
      role: "assistant",
      parts: [{ type: "text", content: "it is [redacted]" }],
      finish_reason: "stop"
    }])
  })

  it("records nothing for an unsampled call, and does nothing for an untraced one", () => {
    const { trace, ended } = callTrace({ sampled: false, captureContent: true })
    CallSpans.responseJson(trace, "anthropic", { id: "msg_1", model: "m", stop_reason: "end_turn" })
    CallSpans.admitted(trace, "chat", "claude", "default")
    CallSpans.content(trace, channel, prompt, answer)
    assert.strictEqual(trace.span.attributes.size, 0)
    assert.deepStrictEqual(trace.span.events, [])
    assert.strictEqual(trace.span.name, "POST /v1/chat/completions")
    // The attempt's span is made (its ids go upstream, unsampled), and never exported.
    const span = CallSpans.attempt(trace, "chat", channel, "claude-x", 1)!
    assert.isFalse(span.sampled)
    CallSpans.attemptEnded(trace, span, 200, undefined)
    assert.deepStrictEqual(ended, [])

    assert.isUndefined(CallSpans.attempt(undefined, "chat", channel, "claude-x", 1))
    CallSpans.attemptEnded(undefined, undefined, 200, undefined)
    CallSpans.settled(undefined, {} as UsageLog.UsageRecord)
  })
})
