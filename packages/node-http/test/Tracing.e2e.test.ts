/**
 * Tracing end to end: the real server, configured through its file's
 * `telemetry:` section, exports each call's spans to a test OTLP/HTTP
 * receiver that decodes protobuf (and JSON) with the official OpenTelemetry
 * definitions: the server span with the GenAI conventions' attributes, its
 * children for admission, each upstream attempt (whose `traceparent` the
 * fake upstream receives, through Undici) and the settlement. A caller's
 * `traceparent` is continued and its sampled flag honoured; a failed
 * attempt is a span with its error; a refusal carries its code; no request
 * or answer content, no key, is exported unless `capture_content` is on; a
 * collector that refuses, hangs or is absent leaves every call as it was,
 * and the spans lost are counted at `/metrics`.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { randomBytes } from "node:crypto"
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "../../engine/test/support/OtlpReceiver.ts"
import type { ConfigFile } from "../src/ConfigFile.ts"
import { baseConfig, KEY, NARROW_KEY, startGateway, type TestGateway } from "./support/Gateway.ts"

const TOKEN = "metrics-token-0123456789abcdef"

const withTelemetry = (telemetry: NonNullable<ConfigFile["telemetry"]>) => (upstream: string): ConfigFile => ({
  ...baseConfig(upstream),
  metrics: { token: TOKEN },
  telemetry
})

const chat = (gateway: TestGateway, headers: Record<string, string>, body: Record<string, unknown>, key = KEY) =>
  fetch(`${gateway.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
    body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Hello" }], ...body })
  })

const traceparent = (sampled: boolean) => {
  const traceId = randomBytes(16).toString("hex")
  const spanId = randomBytes(8).toString("hex")
  return { traceId, spanId, header: `00-${traceId}-${spanId}-${sampled ? "01" : "00"}` }
}

/** Every span of a trace, once its server span is in (the children end first, or with it). */
const traceOf = async (receiver: OtlpReceiver, traceId: string): Promise<ReadonlyArray<ReceivedSpan>> => {
  await serverSpanOf(receiver, traceId)
  return receiver.spans().filter((s) => s.traceId === traceId)
}

/** The one span of that name; of the kind given (a client span can bear its call's name). */
const named = (spans: ReadonlyArray<ReceivedSpan>, name: string, kind?: number): ReceivedSpan => {
  const found = spans.filter((span) => span.name === name && (kind === undefined || span.kind === kind))
  assert.strictEqual(found.length, 1, `one span named ${name} among ${spans.map((s) => s.name).join(", ")}`)
  return found[0]!
}

const serverSpanOf = async (receiver: OtlpReceiver, traceId: string): Promise<ReceivedSpan> => {
  const spans = await receiver.waitFor((all) => all.some((s) => s.traceId === traceId && s.kind === 2))
  return spans.find((s) => s.traceId === traceId && s.kind === 2)!
}

/** The export's figures at `/metrics`: spans dropped (every reason) and exported. */
const exportFigures = async (gateway: TestGateway): Promise<{ dropped: number; exported: number }> => {
  const response = await fetch(`${gateway.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })
  const text = await response.text()
  let dropped = 0
  let exported = Number.NaN
  for (const line of text.split("\n")) {
    const value = Number(line.slice(line.lastIndexOf(" ") + 1))
    if (line.startsWith("modelgate_trace_spans_dropped_total{")) dropped += value
    if (line.startsWith("modelgate_trace_spans_exported_total ")) exported = value
  }
  return { dropped, exported }
}

for (const protocol of ["http/protobuf", "http/json"] as const) {
  describe(`tracing over ${protocol}`, () => {
    let receiver: OtlpReceiver
    let gateway: TestGateway
    beforeAll(async () => {
      receiver = await startOtlpReceiver()
      gateway = await startGateway(withTelemetry({
        endpoint: receiver.url,
        protocol,
        headers: { "x-tenant": "team-a" },
        resource_attributes: { "deployment.environment": "test" },
        batch: { schedule_delay_ms: 20 }
      }))
    })
    afterAll(async () => {
      await gateway?.close()
      await receiver?.close()
    })

    it("continues a caller's sampled trace in the call's server span", async () => {
      const caller = traceparent(true)
      const response = await chat(gateway, { traceparent: caller.header, tracestate: "vendor=abc" }, {
        max_tokens: 20,
        temperature: 0.25
      })
      assert.strictEqual(response.status, 200)
      await response.json()
      const span = await serverSpanOf(receiver, caller.traceId)
      assert.strictEqual(span.parentSpanId, caller.spanId)
      assert.strictEqual(span.traceState, "vendor=abc")
      assert.strictEqual(span.name, "chat gpt-4o-mini")
      assert.strictEqual(span.flags, 0x301)
      assert.strictEqual(span.attributes["http.request.method"], "POST")
      assert.strictEqual(span.attributes["http.route"], "/v1/chat/completions")
      assert.strictEqual(span.attributes["http.response.status_code"], 200)
      assert.strictEqual(span.attributes["url.scheme"], "http")
      assert.strictEqual(span.attributes["modelgate.request_id"], response.headers.get("x-request-id"))
      assert.strictEqual(span.attributes["modelgate.client_dialect"], "openai")
      assert.strictEqual(span.status.code, 0)
      assert.strictEqual(span.resource["service.name"], "modelgate")
      assert.strictEqual(span.resource["deployment.environment"], "test")
      assert.isString(span.resource["service.instance.id"])
      const request = receiver.requests.find((r) => r.spans.includes(span))!
      assert.strictEqual(request.contentType, protocol === "http/json" ? "application/json" : "application/x-protobuf")
      assert.strictEqual(request.headers["x-tenant"], "team-a")

      // The GenAI conventions' attributes, and the gateway's own.
      assert.strictEqual(span.attributes["gen_ai.operation.name"], "chat")
      assert.strictEqual(span.attributes["gen_ai.request.model"], "gpt-4o-mini")
      assert.strictEqual(span.attributes["gen_ai.request.max_tokens"], 20)
      assert.strictEqual(span.attributes["gen_ai.request.temperature"], 0.25)
      assert.strictEqual(span.attributes["gen_ai.response.model"], "gpt-4o-mini")
      assert.match(String(span.attributes["gen_ai.response.id"]), /^chatcmpl-/)
      assert.deepStrictEqual(span.attributes["gen_ai.response.finish_reasons"], ["stop"])
      assert.isAbove(Number(span.attributes["gen_ai.usage.input_tokens"]), 0)
      assert.isAbove(Number(span.attributes["gen_ai.usage.output_tokens"]), 0)
      assert.isAbove(Number(span.attributes["modelgate.cost_usd"]), 0)
      assert.strictEqual(span.attributes["modelgate.attempts"], 1)
      assert.strictEqual(span.attributes["modelgate.channel"], "fake-openai")
      assert.strictEqual(span.attributes["modelgate.group"], "default")
      assert.isString(span.attributes["modelgate.user_id"])
      assert.isString(span.attributes["modelgate.key_id"])
      assert.isAtLeast(Number(span.attributes["modelgate.ttfb_ms"]), 0)

      // Its children: admission, the upstream attempt, the settlement (and the store's own, where it has any).
      const spans = await traceOf(receiver, caller.traceId)
      for (const name of ["authenticate", "authorize", "limits", "hold", "settle"]) {
        assert.strictEqual(named(spans, name).parentSpanId, span.spanId, name)
      }
      // Client spans: the upstream attempt's, and the database's (the store's own spans).
      const attempts = spans.filter((s) => s.kind === 3 && s.attributes["gen_ai.provider.name"] !== undefined)
      assert.strictEqual(attempts.length, 1, spans.map((s) => s.name).join(", "))
      const attempt = attempts[0]!
      assert.strictEqual(attempt.name, "chat gpt-4o-mini")
      assert.strictEqual(attempt.parentSpanId, span.spanId)
      assert.strictEqual(attempt.traceState, "vendor=abc")
      assert.strictEqual(attempt.attributes["gen_ai.provider.name"], "openai")
      assert.strictEqual(attempt.attributes["gen_ai.request.model"], "gpt-4o-mini")
      assert.strictEqual(attempt.attributes["server.address"], "127.0.0.1")
      assert.strictEqual(attempt.attributes["server.port"], gateway.upstream.port)
      assert.strictEqual(attempt.attributes["http.response.status_code"], 200)
      assert.strictEqual(attempt.attributes["modelgate.channel"], "fake-openai")
      assert.isUndefined(attempt.attributes["error.type"])
      // The upstream got the attempt's span as its parent, and the caller's tracestate, through Undici.
      const received = gateway.upstream.requests.filter((r) =>
        String(r.headers["traceparent"]).includes(caller.traceId)
      )
      assert.strictEqual(received.length, 1)
      assert.strictEqual(received[0]!.headers["traceparent"], `00-${caller.traceId}-${attempt.spanId}-01`)
      assert.strictEqual(received[0]!.headers["tracestate"], "vendor=abc")
      assert.deepStrictEqual(receiver.malformed, [])
    })

    it("honours a caller's unsampled flag: the call is served and nothing of it is exported", async () => {
      const unsampled = traceparent(false)
      const response = await chat(gateway, { traceparent: unsampled.header }, {})
      assert.strictEqual(response.status, 200)
      await response.json()
      // Spans go out in the order they end: once a later call's span is in, the earlier one would be too.
      const later = traceparent(true)
      await (await chat(gateway, { traceparent: later.header }, {})).json()
      await serverSpanOf(receiver, later.traceId)
      assert.isFalse(receiver.spans().some((s) => s.traceId === unsampled.traceId))
      // The upstream still joins the caller's trace, unsampled as the caller said.
      const received = gateway.upstream.requests.find((r) =>
        String(r.headers["traceparent"]).includes(unsampled.traceId)
      )
      assert.match(String(received?.headers["traceparent"]), new RegExp(`^00-${unsampled.traceId}-[0-9a-f]{16}-00$`))
    })

    it("starts a trace of its own for a call without a valid traceparent", async () => {
      const before = new Set(receiver.spans().map((s) => s.spanId))
      const response = await chat(gateway, { traceparent: "00-not-a-trace-01" }, {})
      await response.json()
      const requestId = response.headers.get("x-request-id")
      const spans = await receiver.waitFor((all) => all.some((s) => s.attributes["modelgate.request_id"] === requestId))
      const span = spans.find((s) => s.attributes["modelgate.request_id"] === requestId)!
      assert.isFalse(before.has(span.spanId))
      assert.isUndefined(span.parentSpanId)
      assert.match(span.traceId, /^[0-9a-f]{32}$/)
      assert.strictEqual(span.flags, 0x101)
    })

    it("ends a stream's span when its last byte is out, and a refusal's with its status", async () => {
      const streamed = traceparent(true)
      const stream = await chat(gateway, { traceparent: streamed.header }, { stream: true })
      assert.strictEqual(stream.status, 200)
      assert.include(await stream.text(), "[DONE]")
      const span = await serverSpanOf(receiver, streamed.traceId)
      assert.strictEqual(span.attributes["http.response.status_code"], 200)
      assert.strictEqual(span.status.code, 0)

      const refused = traceparent(true)
      const bad = await chat(gateway, { traceparent: refused.header }, {}, "sk-nobody-00000000000000000000")
      assert.strictEqual(bad.status, 401)
      await bad.text()
      const refusal = await serverSpanOf(receiver, refused.traceId)
      assert.strictEqual(refusal.attributes["http.response.status_code"], 401)
      assert.strictEqual(refusal.attributes["modelgate.error_code"], "InvalidApiKey")
      // A 4xx is the client's: the server span's status stays unset.
      assert.strictEqual(refusal.status.code, 0)

      const failed = traceparent(true)
      const broken = await fetch(`${gateway.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json", traceparent: failed.header },
        body: JSON.stringify({ model: "broken-model", messages: [{ role: "user", content: "Hello" }] })
      })
      assert.isAtLeast(broken.status, 500)
      await broken.text()
      const failure = await serverSpanOf(receiver, failed.traceId)
      assert.strictEqual(failure.status.code, 2)
      assert.strictEqual(failure.attributes["error.type"], String(broken.status))
      assert.strictEqual(failure.attributes["modelgate.error_code"], "UpstreamUnavailable")
      const attempt = (await traceOf(receiver, failed.traceId)).find((s) => s.name === "chat broken-model")!
      assert.strictEqual(attempt.attributes["http.response.status_code"], 500)
      assert.strictEqual(attempt.attributes["error.type"], "UpstreamUnavailable")
      assert.strictEqual(attempt.status.code, 2)
    })

    it("exports no prompt, no answer and no key by default", async () => {
      const secret = `prompt-${randomBytes(12).toString("hex")}`
      const caller = traceparent(true)
      const response = await chat(gateway, { traceparent: caller.header }, {
        messages: [{ role: "user", content: `Please repeat ${secret}` }]
      })
      const answer = await response.json() as { choices: Array<{ message: { content: string } }> }
      await serverSpanOf(receiver, caller.traceId)
      const exported = JSON.stringify(
        receiver.requests.map((r) => ({ spans: r.spans, headers: r.headers })),
        (_key, value) => typeof value === "bigint" ? String(value) : value
      )
      assert.notInclude(exported, secret)
      assert.notInclude(exported, KEY)
      assert.notInclude(exported, "sk-upstream")
      const content = answer.choices[0]!.message.content
      if (content.length > 8) assert.notInclude(exported, content)
    })
  })
}

describe("a call's spans in detail, with capture_content on", () => {
  let receiver: OtlpReceiver
  let gateway: TestGateway
  beforeAll(async () => {
    receiver = await startOtlpReceiver()
    gateway = await startGateway((upstream) => {
      const base = baseConfig(upstream)
      return {
        ...base,
        channels: [
          // Tried first for gpt-4o, and failing: the call fails over to fake-openai.
          {
            name: "fake-flaky",
            type: "openai",
            base_url: `${upstream}/v1`,
            api_key: "sk-upstream",
            models: ["gpt-4o"],
            priority: 10,
            headers: { "x-fake-fail": "503" }
          },
          ...base.channels!
        ],
        telemetry: { endpoint: receiver.url, capture_content: true, batch: { schedule_delay_ms: 20 } }
      }
    })
  }, 60_000)
  afterAll(async () => {
    await gateway?.close()
    await receiver?.close()
  })

  it("fails over: each attempt is a client span with its error, and each sent its own traceparent", async () => {
    const caller = traceparent(true)
    const response = await chat(gateway, { traceparent: caller.header }, { model: "gpt-4o" })
    assert.strictEqual(response.status, 200)
    await response.json()
    const spans = await traceOf(receiver, caller.traceId)
    const server = spans.find((s) => s.kind === 2)!
    assert.strictEqual(server.name, "chat gpt-4o")
    assert.strictEqual(server.attributes["modelgate.attempts"], 2)
    assert.strictEqual(server.attributes["modelgate.channel"], "fake-openai")
    assert.strictEqual(server.attributes["modelgate.upstream_model"], "gpt-4o-2024-08-06")
    assert.isUndefined(server.attributes["modelgate.error_code"])
    const failed = named(spans, "chat gpt-4o", 3)
    assert.strictEqual(failed.kind, 3)
    assert.strictEqual(failed.parentSpanId, server.spanId)
    assert.strictEqual(failed.attributes["modelgate.channel"], "fake-flaky")
    assert.strictEqual(failed.attributes["modelgate.attempt"], 1)
    assert.strictEqual(failed.attributes["http.response.status_code"], 503)
    assert.strictEqual(failed.attributes["error.type"], "UpstreamUnavailable")
    assert.strictEqual(failed.status.code, 2)
    assert.strictEqual(failed.events[0]?.name, "exception")
    assert.notInclude(JSON.stringify(failed.events, (_k, v) => typeof v === "bigint" ? String(v) : v), "sk-upstream")
    const served = named(spans, "chat gpt-4o-2024-08-06")
    assert.strictEqual(served.attributes["modelgate.channel"], "fake-openai")
    assert.strictEqual(served.attributes["modelgate.attempt"], 2)
    assert.strictEqual(served.attributes["http.response.status_code"], 200)
    assert.isUndefined(served.attributes["error.type"])
    assert.isTrue(served.startTimeUnixNano >= failed.endTimeUnixNano)
    const sent = gateway.upstream.requests
      .filter((r) => String(r.headers["traceparent"]).includes(caller.traceId))
      .map((r) => r.headers["traceparent"])
    assert.deepStrictEqual(sent, [
      `00-${caller.traceId}-${failed.spanId}-01`,
      `00-${caller.traceId}-${served.spanId}-01`
    ])
  }, 30_000)

  it("exports the prompt and the answer as the conventions' event, each text cut to size", async () => {
    const secret = `prompt-${randomBytes(12).toString("hex")}`
    const long = "x".repeat(10_000)
    const caller = traceparent(true)
    const response = await chat(gateway, { traceparent: caller.header }, {
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: long },
        { role: "user", content: `Please repeat ${secret}` }
      ]
    })
    const answer = await response.json() as { choices: Array<{ message: { content: string } }> }
    const server = await serverSpanOf(receiver, caller.traceId)
    const event = server.events.find((e) => e.name === "gen_ai.client.inference.operation.details")
    assert.isDefined(event)
    const input = JSON.parse(String(event!.attributes["gen_ai.input.messages"])) as Array<
      { role: string; parts: Array<{ type: string; content: string }> }
    >
    assert.deepStrictEqual(input.map((m) => m.role), ["user", "user"])
    assert.strictEqual(input[1]!.parts[0]!.content, `Please repeat ${secret}`)
    assert.isBelow(input[0]!.parts[0]!.content.length, 4_200)
    assert.match(input[0]!.parts[0]!.content, /… \[5904 more\]$/)
    assert.deepStrictEqual(JSON.parse(String(event!.attributes["gen_ai.system_instructions"])), [
      { type: "text", content: "Be brief." }
    ])
    const output = JSON.parse(String(event!.attributes["gen_ai.output.messages"])) as Array<
      { role: string; parts: Array<{ type: string; content: string }>; finish_reason: string }
    >
    assert.strictEqual(output[0]!.role, "assistant")
    assert.strictEqual(output[0]!.finish_reason, "stop")
    assert.strictEqual(output[0]!.parts[0]!.content, answer.choices[0]!.message.content)
  }, 30_000)

  it("records a call refused at admission with its reason, who made it, and no attempt", async () => {
    const caller = traceparent(true)
    const response = await chat(gateway, { traceparent: caller.header }, { model: "gpt-4o" }, NARROW_KEY)
    assert.strictEqual(response.status, 403)
    await response.text()
    const spans = await traceOf(receiver, caller.traceId)
    const server = spans.find((s) => s.kind === 2)!
    assert.strictEqual(server.attributes["http.response.status_code"], 403)
    assert.strictEqual(server.attributes["modelgate.error_code"], "ModelNotAllowed")
    assert.isString(server.attributes["modelgate.key_id"])
    assert.strictEqual(server.attributes["gen_ai.usage.input_tokens"], 0)
    assert.strictEqual(server.attributes["modelgate.cost_usd"], 0)
    assert.strictEqual(server.status.code, 0)
    const authorize = named(spans, "authorize")
    assert.strictEqual(authorize.status.code, 2)
    assert.strictEqual(authorize.events[0]?.name, "exception")
    assert.deepStrictEqual(spans.filter((s) => s.kind === 3), [])
    assert.isFalse(spans.some((s) => s.name === "hold" || s.name === "settle"))
  }, 30_000)

  it("names a translated call's provider, and reads its answer through the canonical model", async () => {
    const caller = traceparent(true)
    const response = await chat(gateway, { traceparent: caller.header }, { model: "gemini-2.5-flash" })
    assert.strictEqual(response.status, 200)
    await response.json()
    const spans = await traceOf(receiver, caller.traceId)
    const server = spans.find((s) => s.kind === 2)!
    assert.strictEqual(server.name, "chat gemini-2.5-flash")
    assert.deepStrictEqual(server.attributes["gen_ai.response.finish_reasons"], ["stop"])
    assert.isString(server.attributes["gen_ai.response.model"])
    const attempt = named(spans, "chat gemini-2.5-flash", 3)
    assert.strictEqual(attempt.attributes["gen_ai.provider.name"], "gcp.gemini")
    const received = gateway.upstream.requests.find((r) => String(r.headers["traceparent"]).includes(caller.traceId))
    assert.strictEqual(received?.dialect, "gemini")
    assert.strictEqual(received?.headers["traceparent"], `00-${caller.traceId}-${attempt.spanId}-01`)
  }, 30_000)
})

describe("a collector that is not there for us", () => {
  for (const behaviour of ["refuses", "hangs", "is absent"] as const) {
    it(`${behaviour}: calls are served as usual, and /metrics counts the spans dropped`, async () => {
      const receiver = await startOtlpReceiver()
      if (behaviour === "refuses") receiver.behave({ _tag: "refuse", status: 400 })
      if (behaviour === "hangs") receiver.behave({ _tag: "hang" })
      const url = receiver.url
      if (behaviour === "is absent") await receiver.close()
      const gateway = await startGateway(withTelemetry({
        endpoint: url,
        timeout_ms: 200,
        batch: { schedule_delay_ms: 20, export_timeout_ms: 500 }
      }))
      try {
        for (let i = 0; i < 5; i++) {
          const response = await chat(gateway, { traceparent: traceparent(true).header }, {})
          assert.strictEqual(response.status, 200)
          const body = await response.json() as { choices: Array<unknown> }
          assert.strictEqual(body.choices.length, 1)
        }
        const stream = await chat(gateway, {}, { stream: true })
        assert.strictEqual(stream.status, 200)
        assert.include(await stream.text(), "[DONE]")
        // The six calls' server spans (and their children: the database's, for a balance lease) are dropped once
        // their exports give up.
        const until = Date.now() + 20_000
        while ((await exportFigures(gateway)).dropped < 6) {
          if (Date.now() > until) assert.fail(`the drop counter stayed at ${(await exportFigures(gateway)).dropped}`)
          await new Promise((resolve) => setTimeout(resolve, 50))
        }
        assert.strictEqual((await exportFigures(gateway)).exported, 0)
      } finally {
        await gateway.close()
        if (behaviour !== "is absent") await receiver.close()
      }
    }, 60_000)
  }
})
