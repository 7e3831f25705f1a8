/**
 * Tracing in the web handler: in this Node process (the configuration's
 * `telemetry:` section), and served by Bun and by Deno (the standard
 * `OTEL_*` variables from the runtime's environment), each call's spans
 * reach a test OTLP/HTTP receiver, continuing the caller's `traceparent`:
 * the server span with the GenAI conventions' attributes, its children for
 * admission, the upstream attempt (whose `traceparent` the upstream
 * receives, through `fetch`) and the settlement; a stream's spans end when
 * the stream does. No content unless `capture_content` is on.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { FakeUpstream } from "@modelgate/fake-upstream"
import { Effect, Tracer } from "effect"
import { randomBytes } from "node:crypto"
import { toWebHandler } from "../src/host/WebHandler.ts"
import type { Telemetry } from "../src/telemetry/Telemetry.ts"
import { cloudChannels, cloudModels } from "./support/CloudChannels.ts"
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "./support/OtlpReceiver.ts"
import { type Served, serveOn } from "./support/Runtimes.ts"

const KEY = "sk-embedded-alice-0000000000000000"

const config = (upstream: string, telemetry?: Record<string, unknown>) => ({
  routing: { probe_interval_ms: 600_000 },
  channels: [{
    name: "openai",
    type: "openai",
    base_url: `${upstream}/v1`,
    api_key: "k",
    models: ["gpt-4o-mini", "text-embedding-3-small"]
  }],
  models: { "gpt-4o-mini": { input: 1, output: 2 }, "text-embedding-3-small": { input: 0.02, output: 0 } },
  users: [{ name: "alice", balance: 10, keys: [{ name: "laptop", secret: KEY }] }],
  ...(telemetry !== undefined ? { telemetry } : {})
})

const caller = () => {
  const traceId = randomBytes(16).toString("hex")
  const spanId = randomBytes(8).toString("hex")
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` }
}

const chatInit = (traceparent: string, stream = false): RequestInit => ({
  method: "POST",
  headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json", traceparent },
  body: JSON.stringify({ model: "gpt-4o-mini", stream, messages: [{ role: "user", content: "Hello" }] })
})

const named = (spans: ReadonlyArray<ReceivedSpan>, name: string): ReceivedSpan => {
  const found = spans.filter((span) => span.name === name)
  assert.strictEqual(found.length, 1, `one span named ${name} among ${spans.map((s) => s.name).join(", ")}`)
  return found[0]!
}

/** Flushes the export until the server spans of `traceIds` are in. */
const flushUntil = async (telemetry: Telemetry, receiver: OtlpReceiver, traceIds: ReadonlyArray<string>) => {
  const until = Date.now() + 10_000
  for (;;) {
    await Effect.runPromise(telemetry.flush)
    const spans = receiver.spans()
    if (traceIds.every((id) => spans.some((s) => s.traceId === id && s.kind === 2))) return
    if (Date.now() > until) assert.fail(`no server span for some of ${traceIds.join(", ")}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

describe("tracing in the web handler", () => {
  let upstream: FakeUpstream.FakeUpstream
  let receiver: OtlpReceiver
  beforeAll(async () => {
    upstream = await Effect.runPromise(FakeUpstream.start({ port: 0 }))
    receiver = await startOtlpReceiver()
  })
  afterAll(async () => {
    await receiver?.close()
    await upstream?.close()
  })

  it("exports each call's server span, from the configuration's telemetry section, in this Node process", async () => {
    const local = await toWebHandler(config(upstream.url, { endpoint: receiver.url }))
    try {
      assert.isDefined(local.telemetry)
      const plain = caller()
      const response = await local.handler(
        new Request("http://gateway.test/v1/chat/completions", chatInit(plain.traceparent))
      )
      assert.strictEqual(response.status, 200)
      await response.json()
      const streamed = caller()
      const stream = await local.handler(
        new Request("http://gateway.test/v1/chat/completions", chatInit(streamed.traceparent, true))
      )
      assert.include(await stream.text(), "[DONE]")
      // A stream's server span goes out once its settlement, which runs after the last byte, is done.
      await flushUntil(local.telemetry!, receiver, [plain.traceId, streamed.traceId])
      for (const [{ traceId, spanId }, stream] of [[plain, false], [streamed, true]] as const) {
        const spans = receiver.spans().filter((s) => s.traceId === traceId)
        const server = spans.find((s) => s.kind === 2)
        assert.isDefined(server, `the server span of trace ${traceId}`)
        assert.strictEqual(server!.parentSpanId, spanId)
        assert.strictEqual(server!.name, "chat gpt-4o-mini")
        assert.strictEqual(server!.attributes["http.response.status_code"], 200)
        assert.strictEqual(server!.resource["service.instance.id"], "embedded")
        assert.strictEqual(server!.attributes["gen_ai.operation.name"], "chat")
        assert.strictEqual(server!.attributes["gen_ai.request.model"], "gpt-4o-mini")
        assert.strictEqual(server!.attributes["gen_ai.response.model"], "gpt-4o-mini")
        assert.match(String(server!.attributes["gen_ai.response.id"]), /^chatcmpl-/)
        // A stream relayed as it came is read for its finish reasons on the way.
        assert.deepStrictEqual(server!.attributes["gen_ai.response.finish_reasons"], ["stop"])
        assert.isAbove(Number(server!.attributes["gen_ai.usage.input_tokens"]), 0)
        assert.isAbove(Number(server!.attributes["gen_ai.usage.output_tokens"]), 0)
        assert.isAbove(Number(server!.attributes["modelgate.cost_usd"]), 0)
        assert.strictEqual(server!.attributes["modelgate.attempts"], 1)
        assert.strictEqual(server!.attributes["modelgate.channel"], "openai")
        assert.strictEqual(server!.attributes["modelgate.group"], "default")
        assert.strictEqual(server!.attributes["modelgate.stream"], stream)
        assert.isString(server!.attributes["modelgate.user_id"])
        assert.isString(server!.attributes["modelgate.key_id"])
        assert.isUndefined(server!.attributes["modelgate.error_code"])
        // No content by default.
        assert.deepStrictEqual(server!.events, [])
        // The call's children: admission, the upstream attempt, the settlement.
        for (const name of ["authenticate", "authorize", "limits", "hold", "settle"]) {
          const child = named(spans, name)
          assert.strictEqual(child.parentSpanId, server!.spanId, name)
          assert.strictEqual(child.kind, 1, name)
        }
        const attempt = spans.find((s) => s.kind === 3)!
        assert.strictEqual(attempt.name, "chat gpt-4o-mini")
        assert.strictEqual(attempt.parentSpanId, server!.spanId)
        assert.strictEqual(attempt.attributes["gen_ai.provider.name"], "openai")
        assert.strictEqual(attempt.attributes["server.address"], "127.0.0.1")
        assert.strictEqual(attempt.attributes["server.port"], Number(new URL(upstream.url).port))
        assert.strictEqual(attempt.attributes["http.response.status_code"], 200)
        assert.strictEqual(attempt.attributes["modelgate.channel"], "openai")
        assert.strictEqual(attempt.attributes["modelgate.attempt"], 1)
        assert.strictEqual(spans.length, 7)
        // A stream's attempt ends with the stream, after its settlement has what it needs.
        assert.isTrue(attempt.endTimeUnixNano >= named(spans, "hold").endTimeUnixNano)
        // The upstream got the attempt's own span as its parent, through fetch.
        const received = upstream.requests.filter((r) => String(r.headers["traceparent"]).includes(traceId))
        assert.strictEqual(received.length, 1)
        assert.strictEqual(received[0]!.headers["traceparent"], `00-${traceId}-${attempt.spanId}-01`)
      }
    } finally {
      await local.dispose()
    }
  })

  it(
    "records the answer's id, model, finish reasons and usage on every path: relayed and translated, streams or not, from every front door",
    async () => {
      const local = await toWebHandler({
        routing: { probe_interval_ms: 600_000 },
        channels: [
          { name: "openai", type: "openai", base_url: `${upstream.url}/v1`, api_key: "k", models: ["gpt-4o-mini"] },
          {
            name: "responses",
            type: "openai",
            responses: true,
            base_url: `${upstream.url}/v1`,
            api_key: "k",
            models: ["gpt-4.1"]
          },
          { name: "gemini", type: "gemini", base_url: upstream.url, api_key: "g", models: ["gemini-2.5-flash"] },
          {
            name: "anthropic",
            type: "anthropic",
            base_url: upstream.url,
            api_key: "a",
            models: ["claude-sonnet-4-5"]
          },
          ...cloudChannels(upstream.url, upstream.vertexKeyFile()).filter((c) => c.name === "bedrock")
        ],
        models: {
          "gpt-4o-mini": { input: 1, output: 2 },
          "gpt-4.1": { input: 1, output: 2 },
          "gemini-2.5-flash": { input: 1, output: 2 },
          "claude-sonnet-4-5": { input: 3, output: 15 },
          ...cloudModels
        },
        users: [{ name: "alice", balance: 100, keys: [{ name: "laptop", secret: KEY }] }],
        telemetry: { endpoint: receiver.url }
      })
      const doors = {
        openai: (model: string, stream: boolean) => ({
          path: "/v1/chat/completions",
          headers: { authorization: `Bearer ${KEY}` },
          body: { model, stream, messages: [{ role: "user", content: "Hello" }] }
        }),
        responses: (model: string, stream: boolean) => ({
          path: "/v1/responses",
          headers: { authorization: `Bearer ${KEY}` },
          body: { model, stream, input: "Hello" }
        }),
        anthropic: (model: string, stream: boolean) => ({
          path: "/v1/messages",
          headers: { "x-api-key": KEY, "anthropic-version": "2023-06-01" },
          body: { model, stream, max_tokens: 64, messages: [{ role: "user", content: "Hello" }] }
        }),
        gemini: (model: string, stream: boolean) => ({
          path: `/v1beta/models/${model}:${stream ? "streamGenerateContent?alt=sse" : "generateContent"}`,
          headers: { "x-goog-api-key": KEY },
          body: { contents: [{ role: "user", parts: [{ text: "Hello" }] }] }
        })
      }
      const models = ["gpt-4o-mini", "gpt-4.1", "gemini-2.5-flash", "claude-sonnet-4-5", "claude-bedrock"]
      try {
        const calls: Array<{ readonly what: string; readonly traceId: string }> = []
        for (const [door, make] of Object.entries(doors)) {
          for (const model of models) {
            for (const stream of [false, true]) {
              const what = `${door} -> ${model}${stream ? ", streamed" : ""}`
              const { traceId, traceparent } = caller()
              const call = make(model, stream)
              const response = await local.handler(
                new Request(`http://gateway.test${call.path}`, {
                  method: "POST",
                  headers: { "content-type": "application/json", traceparent, ...call.headers },
                  body: JSON.stringify(call.body)
                })
              )
              const text = await response.text()
              assert.strictEqual(response.status, 200, `${what}: ${text.slice(0, 300)}`)
              calls.push({ what, traceId })
            }
          }
        }
        await flushUntil(local.telemetry!, receiver, calls.map((c) => c.traceId))
        const missing: Array<string> = []
        for (const { what, traceId } of calls) {
          const server = receiver.spans().find((s) => s.traceId === traceId && s.kind === 2)!
          const a = server.attributes
          const reasons = a["gen_ai.response.finish_reasons"]
          if (!Array.isArray(reasons) || reasons.length === 0) missing.push(`${what}: finish_reasons`)
          if (typeof a["gen_ai.response.id"] !== "string" || a["gen_ai.response.id"] === "") {
            missing.push(`${what}: response.id`)
          }
          if (typeof a["gen_ai.response.model"] !== "string" || a["gen_ai.response.model"] === "") {
            missing.push(`${what}: response.model`)
          }
          if (!(Number(a["gen_ai.usage.input_tokens"]) > 0)) missing.push(`${what}: usage.input_tokens`)
          if (!(Number(a["gen_ai.usage.output_tokens"]) > 0)) missing.push(`${what}: usage.output_tokens`)
        }
        assert.deepStrictEqual(missing, [])
      } finally {
        await local.dispose()
      }
    },
    60_000
  )

  it("traces embeddings and token counts too, each named by its operation", async () => {
    const local = await toWebHandler(config(upstream.url, { endpoint: receiver.url }))
    try {
      const embedded = caller()
      const response = await local.handler(
        new Request("http://gateway.test/v1/embeddings", {
          method: "POST",
          headers: {
            authorization: `Bearer ${KEY}`,
            "content-type": "application/json",
            traceparent: embedded.traceparent
          },
          body: JSON.stringify({ model: "text-embedding-3-small", input: "Hello" })
        })
      )
      assert.strictEqual(response.status, 200)
      await response.json()
      const counted = caller()
      const count = await local.handler(
        new Request("http://gateway.test/v1/messages/count_tokens", {
          method: "POST",
          headers: { "x-api-key": KEY, "content-type": "application/json", traceparent: counted.traceparent },
          body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Hello" }] })
        })
      )
      assert.strictEqual(count.status, 200)
      await count.json()
      await flushUntil(local.telemetry!, receiver, [embedded.traceId, counted.traceId])

      const embedSpans = receiver.spans().filter((s) => s.traceId === embedded.traceId)
      const server = embedSpans.find((s) => s.kind === 2)!
      assert.strictEqual(server.name, "embeddings text-embedding-3-small")
      assert.strictEqual(server.attributes["gen_ai.operation.name"], "embeddings")
      assert.isAbove(Number(server.attributes["gen_ai.usage.input_tokens"]), 0)
      assert.strictEqual(server.attributes["gen_ai.usage.output_tokens"], 0)
      const attempt = embedSpans.find((s) => s.kind === 3)!
      assert.strictEqual(attempt.name, "embeddings text-embedding-3-small")
      assert.strictEqual(attempt.attributes["gen_ai.provider.name"], "openai")
      for (const name of ["authorize", "limits", "hold", "settle"]) named(embedSpans, name)
      const received = upstream.requests.find((r) => String(r.headers["traceparent"]).includes(embedded.traceId))
      assert.strictEqual(received?.path, "/v1/embeddings")
      assert.strictEqual(received?.headers["traceparent"], `00-${embedded.traceId}-${attempt.spanId}-01`)

      // No channel of the Anthropic dialect counts: the count is made here, and no upstream is tried.
      const countSpans = receiver.spans().filter((s) => s.traceId === counted.traceId)
      const countServer = countSpans.find((s) => s.kind === 2)!
      assert.strictEqual(countServer.name, "count_tokens gpt-4o-mini")
      assert.deepStrictEqual(countSpans.map((s) => s.name).sort(), [
        "authenticate",
        "authorize",
        "count_tokens gpt-4o-mini",
        "limits"
      ])
    } finally {
      await local.dispose()
    }
  })

  it("makes no span at all on a call's path when nothing turns tracing on", async () => {
    const local = await toWebHandler(config(upstream.url))
    upstream.clearRequests()
    // Every span made without a tracer of ours goes through Effect's native tracer: count them.
    const native = Tracer.nativeTracer as { span: Tracer.Tracer["span"] }
    const original = native.span
    let made = 0
    native.span = function(options) {
      made++
      return original.call(this, options)
    }
    try {
      assert.isUndefined(local.telemetry)
      const calls: Array<[string, RequestInit]> = [
        ["/v1/chat/completions", chatInit(caller().traceparent)],
        ["/v1/chat/completions", chatInit(caller().traceparent, true)],
        ["/v1beta/models/gpt-4o-mini:generateContent", {
          method: "POST",
          headers: { "x-goog-api-key": KEY, "content-type": "application/json" },
          body: JSON.stringify({ contents: [{ parts: [{ text: "Hello" }] }] })
        }],
        ["/v1/models", { headers: { authorization: `Bearer ${KEY}` } }],
        ["/v1/embeddings", {
          method: "POST",
          headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
          body: JSON.stringify({ model: "text-embedding-3-small", input: "Hello" })
        }],
        ["/v1/messages/count_tokens", {
          method: "POST",
          headers: { "x-api-key": KEY, "content-type": "application/json" },
          body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Hello" }] })
        }],
        ["/v1/chat/completions", { ...chatInit(caller().traceparent), headers: { authorization: "Bearer sk-nobody" } }]
      ]
      const statuses: Array<number> = []
      for (const [path, init] of calls) {
        const response = await local.handler(new Request(`http://gateway.test${path}`, init))
        statuses.push(response.status)
        await response.text()
      }
      assert.deepStrictEqual(statuses, [200, 200, 200, 200, 200, 200, 401])
      assert.strictEqual(made, 0)
      // And no trace context goes upstream: the caller's is not passed on either.
      assert.isFalse(upstream.requests.some((r) => r.headers["traceparent"] !== undefined))
    } finally {
      native.span = original
      await local.dispose()
    }
  })

  for (const runtime of ["bun", "deno"] as const) {
    describe(`served by ${runtime}, with the OTEL_* variables`, () => {
      let served: Served | undefined
      let base = ""
      beforeAll(async () => {
        served = await serveOn(runtime, {
          MODELGATE_EMBED_CONFIG: JSON.stringify(config(upstream.url)),
          OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
          OTEL_EXPORTER_OTLP_PROTOCOL: runtime === "bun" ? "http/protobuf" : "http/json",
          OTEL_BSP_SCHEDULE_DELAY: "20",
          OTEL_SERVICE_NAME: `modelgate-${runtime}`
        })
        base = served.base
      }, 60_000)
      afterAll(() => served?.stop())

      it("exports the call's server span, continuing the caller's trace", async () => {
        const trace = caller()
        const response = await fetch(`${base}/v1/chat/completions`, chatInit(trace.traceparent))
        assert.strictEqual(response.status, 200)
        await response.json()
        const spans = await receiver.waitFor((all) => all.some((s) => s.traceId === trace.traceId && s.kind === 2))
        const span = spans.find((s) => s.traceId === trace.traceId && s.kind === 2)!
        assert.strictEqual(span.kind, 2)
        assert.strictEqual(span.parentSpanId, trace.spanId)
        assert.strictEqual(span.attributes["http.response.status_code"], 200)
        assert.strictEqual(span.resource["service.name"], `modelgate-${runtime}`)
        assert.strictEqual(span.name, "chat gpt-4o-mini")
        // The attempt's span, ended before the server span, and the traceparent the upstream got through the runtime's fetch.
        const attempt = spans.find((s) => s.traceId === trace.traceId && s.kind === 3)!
        assert.strictEqual(attempt.parentSpanId, span.spanId)
        const received = upstream.requests.find((r) => String(r.headers["traceparent"]).includes(trace.traceId))
        assert.strictEqual(received?.headers["traceparent"], `00-${trace.traceId}-${attempt.spanId}-01`)
        assert.deepStrictEqual(receiver.malformed, [])
      })
    })
  }
})
