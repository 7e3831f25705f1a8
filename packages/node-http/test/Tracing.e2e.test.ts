/**
 * Tracing end to end: the real server, configured through its file's
 * `telemetry:` section, exports each call's server span to a test OTLP/HTTP
 * receiver that decodes protobuf (and JSON) with the official OpenTelemetry
 * definitions. A caller's `traceparent` is continued and its sampled flag
 * honoured; no request or answer content, no key, is exported; a collector
 * that refuses, hangs or is absent leaves every call as it was, and the spans
 * lost are counted at `/metrics`.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { randomBytes } from "node:crypto"
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "../../engine/test/support/OtlpReceiver.ts"
import type { ConfigFile } from "../src/ConfigFile.ts"
import { baseConfig, KEY, startGateway, type TestGateway } from "./support/Gateway.ts"

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
      const response = await chat(gateway, { traceparent: caller.header, tracestate: "vendor=abc" }, {})
      assert.strictEqual(response.status, 200)
      await response.json()
      const span = await serverSpanOf(receiver, caller.traceId)
      assert.strictEqual(span.parentSpanId, caller.spanId)
      assert.strictEqual(span.traceState, "vendor=abc")
      assert.strictEqual(span.name, "POST /v1/chat/completions")
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
