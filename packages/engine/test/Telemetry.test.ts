/**
 * Tracing's export, against a real OTLP/HTTP receiver that decodes protobuf
 * with the official OpenTelemetry definitions (and checks JSON against
 * them): what the tracer exports in both protocols, the caller's trace
 * continued and its sampled flag honoured, the sampler, and a collector that
 * refuses, hangs, is absent or rejects part of a batch: the work traced goes
 * on as before and the spans lost are counted.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import * as TelemetryConfig from "../src/config/TelemetryConfig.ts"
import * as Telemetry from "../src/telemetry/Telemetry.ts"
import type * as Routes from "../src/wire/Routes.ts"
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "./support/OtlpReceiver.ts"

const chatRoute: Routes.ApiRoute = { _tag: "OpenAIChat", dialect: "openai" }

/**
 * Settings from the variables an operator would set. The schedule is long, so nothing is exported before the test
 * flushes (one batch, whatever the machine's speed), unless a test sets its own.
 */
const settingsFor = (env: Record<string, string>) =>
  Effect.runPromise(TelemetryConfig.resolve(undefined, { OTEL_BSP_SCHEDULE_DELAY: "600000", ...env }, "test"))

/** Tracing running in its own scope, for one test. */
const running = async (env: Record<string, string>, options: Telemetry.ResourceOptions = {}) => {
  const settings = await settingsFor(env)
  const scope = Scope.makeUnsafe()
  const context = await Effect.runPromise(
    Layer.buildWithScope(Telemetry.layer(settings, { instanceId: "node-1", ...options }), scope)
  )
  const telemetry = Context.get(context, Telemetry.Current)
  if (telemetry === undefined) throw new Error("tracing is off")
  return { telemetry, close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}

/** A call as a host serves it: the server span, two child spans inside the program, one by hand. */
const serveOne = async (telemetry: Telemetry.Telemetry, headers: Record<string, string> = {}) => {
  const trace = telemetry.startCall({
    method: "POST",
    path: "/v1/chat/completions",
    route: chatRoute,
    headers: { "user-agent": "test-agent/1.0", ...headers },
    requestId: "req_0123",
    scheme: "http"
  })
  let sent: Record<string, string> = {}
  const program = Effect.gen(function*() {
    // A nested span is the current one for what it wraps.
    yield* Telemetry.span(trace, "admission", true)(Effect.annotateCurrentSpan("modelgate.step", "limits"))
    yield* Telemetry.useSpan(trace, "chat gpt-4o-mini", { kind: "client" }, (span) =>
      Effect.sync(() => {
        sent = span === undefined ? {} : Telemetry.propagation(span)
        span?.attribute("gen_ai.usage.input_tokens", 12)
        span?.attribute("gen_ai.request.temperature", 0.5)
        span?.attribute("gen_ai.response.finish_reasons", ["stop"])
        span?.attribute("modelgate.streamed", false)
      }))
    return "answered"
  })
  const result = await Effect.runPromise(trace.run(program))
  trace.name("chat", "gpt-4o-mini")
  const settle = Telemetry.child(trace, "settlement")
  settle?.end(trace.now(), Exit.void)
  trace.end(200)
  return { trace, result, sent }
}

const byName = (spans: ReadonlyArray<ReceivedSpan>, name: string) => {
  const found = spans.find((span) => span.name === name)
  if (found === undefined) throw new Error(`no span named ${name} among ${spans.map((s) => s.name).join(", ")}`)
  return found
}

describe("Telemetry", () => {
  let receiver: OtlpReceiver
  beforeAll(async () => {
    receiver = await startOtlpReceiver()
  })
  afterAll(() => receiver.close())

  for (const protocol of ["http/protobuf", "http/json"] as const) {
    it(`exports a call's spans in ${protocol}, decoded with the official definitions`, async () => {
      receiver.behave({ _tag: "accept" })
      const before = receiver.requests.length
      const { telemetry, close } = await running({
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
        OTEL_EXPORTER_OTLP_HEADERS: "x-vendor-key=secret%20one",
        OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=test"
      })
      const { trace, result, sent } = await serveOne(telemetry)
      assert.strictEqual(result, "answered")
      await Effect.runPromise(telemetry.flush)
      await close()
      const requests = receiver.requests.slice(before)
      assert.deepStrictEqual(receiver.malformed, [])
      assert.isAbove(requests.length, 0)
      const request = requests[0]!
      assert.strictEqual(
        request.contentType,
        protocol === "http/json" ? "application/json" : "application/x-protobuf"
      )
      assert.strictEqual(request.headers["x-vendor-key"], "secret one")
      const spans = requests.flatMap((r) => r.spans)
      assert.strictEqual(spans.length, 4)

      const server = spans.find((span) => span.kind === 2)!
      assert.strictEqual(server.name, "chat gpt-4o-mini")
      assert.strictEqual(server.traceId, trace.span.traceId)
      assert.strictEqual(server.spanId, trace.span.spanId)
      assert.isUndefined(server.parentSpanId)
      assert.strictEqual(server.attributes["http.request.method"], "POST")
      assert.strictEqual(server.attributes["http.route"], "/v1/chat/completions")
      assert.strictEqual(server.attributes["http.response.status_code"], 200)
      assert.strictEqual(server.attributes["gen_ai.operation.name"], "chat")
      assert.strictEqual(server.attributes["gen_ai.request.model"], "gpt-4o-mini")
      assert.strictEqual(server.attributes["modelgate.request_id"], "req_0123")
      assert.strictEqual(server.attributes["user_agent.original"], "test-agent/1.0")
      assert.strictEqual(server.status.code, 0)
      // Sampled, and the parent (none) is not remote.
      assert.strictEqual(server.flags, 0x101)
      assert.strictEqual(server.resource["service.name"], "modelgate")
      assert.strictEqual(server.resource["service.instance.id"], "node-1")
      assert.strictEqual(server.resource["deployment.environment"], "test")
      assert.strictEqual(server.scope, "modelgate")
      assert.isTrue(server.endTimeUnixNano >= server.startTimeUnixNano)

      const admission = byName(spans, "admission")
      assert.strictEqual(admission.parentSpanId, server.spanId)
      assert.strictEqual(admission.traceId, server.traceId)
      assert.strictEqual(admission.attributes["modelgate.step"], "limits")
      assert.strictEqual(admission.kind, 1)

      const attempt = spans.find((span) => span.kind === 3)!
      assert.strictEqual(attempt.name, "chat gpt-4o-mini")
      assert.strictEqual(attempt.parentSpanId, server.spanId)
      assert.strictEqual(attempt.attributes["gen_ai.usage.input_tokens"], 12)
      assert.strictEqual(attempt.attributes["gen_ai.request.temperature"], 0.5)
      assert.deepStrictEqual(attempt.attributes["gen_ai.response.finish_reasons"], ["stop"])
      assert.strictEqual(attempt.attributes["modelgate.streamed"], false)
      // The upstream attempt's traceparent names the attempt's own span.
      assert.strictEqual(sent["traceparent"], `00-${server.traceId}-${attempt.spanId}-01`)

      assert.strictEqual(byName(spans, "settlement").parentSpanId, server.spanId)
    })
  }

  it("continues a caller's sampled trace: its trace id, its span as the parent, its tracestate passed on", async () => {
    receiver.behave({ _tag: "accept" })
    const { telemetry, close } = await running({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url })
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736"
    const { trace, sent } = await serveOne(telemetry, {
      traceparent: `00-${traceId}-00f067aa0ba902b7-01`,
      tracestate: "congo=t61rcWkgMzE, rojo=00f067aa0ba902b7"
    })
    await Effect.runPromise(telemetry.flush)
    await close()
    const server = (await receiver.waitFor((spans) => spans.some((s) => s.spanId === trace.span.spanId)))
      .find((s) => s.spanId === trace.span.spanId)!
    assert.strictEqual(server.traceId, traceId)
    assert.strictEqual(server.parentSpanId, "00f067aa0ba902b7")
    assert.strictEqual(server.traceState, "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7")
    // Sampled, with a remote parent.
    assert.strictEqual(server.flags, 0x301)
    assert.match(sent["traceparent"]!, new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`))
    assert.strictEqual(sent["tracestate"], "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7")
  })

  it("honours a caller's unsampled flag: nothing is exported, and the attempt still propagates the trace, unsampled", async () => {
    receiver.behave({ _tag: "accept" })
    const before = receiver.spans().length
    const { telemetry, close } = await running({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url })
    const traceId = "0af7651916cd43dd8448eb211c80319c"
    const { trace, sent } = await serveOne(telemetry, { traceparent: `00-${traceId}-b7ad6b7169203331-00` })
    await Effect.runPromise(telemetry.flush)
    await close()
    assert.isFalse(trace.span.sampled)
    assert.match(sent["traceparent"]!, new RegExp(`^00-${traceId}-[0-9a-f]{16}-00$`))
    assert.strictEqual(receiver.spans().length, before)
    assert.strictEqual(telemetry.metrics.exportedTotal, 0)
  })

  it("ignores a malformed traceparent: the call starts a trace of its own", async () => {
    const { telemetry, close } = await running({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url })
    const trace = telemetry.startCall({
      method: "POST",
      path: "/v1/chat/completions",
      route: chatRoute,
      headers: { traceparent: "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01" },
      requestId: "req_1",
      scheme: "http"
    })
    assert.notStrictEqual(trace.span.traceId, "4bf92f3577b34da6a3ce929d0e0e4736")
    assert.isTrue(trace.span.sampled)
    assert.isFalse(trace.span.remoteParent)
    trace.end(200)
    await close()
  })

  it("samples roots by the configured sampler: always_off exports nothing, a parent-based one follows its caller", async () => {
    const off = await running({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_TRACES_SAMPLER: "always_off" })
    const { trace } = await serveOne(off.telemetry)
    assert.isFalse(trace.span.sampled)
    await off.close()
    assert.strictEqual(off.telemetry.metrics.exportedTotal, 0)

    const parentBased = await running({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_TRACES_SAMPLER: "parentbased_always_off"
    })
    const followed = await serveOne(parentBased.telemetry, {
      traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    })
    assert.isTrue(followed.trace.span.sampled)
    await parentBased.close()
    assert.strictEqual(parentBased.telemetry.metrics.exportedTotal, 4)
  })

  it("keeps a span's links its own: spans made without links share none, a link added goes on one span only", async () => {
    const { close, telemetry } = await running({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9" })
    try {
      const trace = telemetry.startCall({
        method: "POST",
        path: "/v1/chat/completions",
        route: chatRoute,
        headers: {},
        requestId: "req_links",
        scheme: "http"
      })
      const linked = Telemetry.child(trace, "linked")!
      const plain = Telemetry.child(trace, "plain")!
      linked.addLinks([{ span: trace.span, attributes: { why: "test" } }])
      assert.strictEqual(linked.links.length, 1)
      assert.strictEqual(plain.links.length, 0)
      assert.strictEqual(trace.span.links.length, 0)
      assert.strictEqual(Telemetry.child(trace, "later")!.links.length, 0)
    } finally {
      await close()
    }
  })

  it("keeps no value of what a span wrapped once it ends: a span waiting for export holds none of the call", async () => {
    const { close, telemetry } = await running({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9" })
    try {
      const trace = telemetry.startCall({
        method: "POST",
        path: "/v1/chat/completions",
        route: chatRoute,
        headers: {},
        requestId: "req_exit",
        scheme: "http"
      })
      const held = { hold: "a large object of the call" }
      let made: Telemetry.TraceSpan | undefined
      const value = await Effect.runPromise(
        trace.run(
          Telemetry.span(trace, "hold", true)(Effect.map(Effect.currentSpan, (span) => {
            made = span as Telemetry.TraceSpan
            return held
          }))
        )
      )
      assert.strictEqual(value, held)
      const status = made!.status
      assert.strictEqual(status._tag, "Ended")
      if (status._tag === "Ended") {
        assert.strictEqual(status.exit._tag, "Success")
        assert.notStrictEqual(Exit.isSuccess(status.exit) ? status.exit.value : undefined, held)
      }
    } finally {
      await close()
    }
  })

  it("writes a span as it ends: no span of a call waits for its batch (protobuf)", async () => {
    const { close, telemetry } = await running({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9" })
    try {
      setFlagsFromString("--expose-gc")
      const gc = runInNewContext("gc") as () => void
      const refs: Array<WeakRef<object>> = []
      await (async () => {
        for (let i = 0; i < 3; i++) {
          const { trace } = await serveOne(telemetry)
          refs.push(new WeakRef(trace.span))
        }
      })()
      await new Promise((resolve) => setTimeout(resolve, 0))
      gc()
      // The schedule is long: every span is still waiting for export, as bytes.
      assert.deepStrictEqual(refs.map((ref) => ref.deref() === undefined), [true, true, true])
    } finally {
      await close()
    }
  })

  it("decides a ratio from the trace id, alike for every process of the trace", () => {
    const sampler = { name: "traceidratio", ratio: 0.25 } as const
    // The last 56 bits as a fraction: 0x00...: 0, 0x80...: 0.5.
    assert.isTrue(Telemetry.shouldSample(sampler, undefined, "ffffffffffffffffff00000000000001"))
    assert.isFalse(Telemetry.shouldSample(sampler, undefined, "00000000000000000080000000000000"))
    assert.isTrue(Telemetry.shouldSample(sampler, undefined, "0000000000000000003ffffffff00000"))
    assert.isFalse(Telemetry.shouldSample(sampler, undefined, "00000000000000000040000000000000"))
    // traceidratio ignores an unsampled parent; the parent-based one follows it.
    const parent = { _tag: "ExternalSpan", traceId: "", spanId: "", sampled: false } as never
    assert.isTrue(Telemetry.shouldSample(sampler, parent, "00000000000000000000000000000001"))
    assert.isFalse(
      Telemetry.shouldSample({ name: "parentbased_traceidratio", ratio: 1 }, parent, "00000000000000000000000000000001")
    )
  })

  it("sends gzip bodies when asked", async () => {
    receiver.behave({ _tag: "accept" })
    const before = receiver.requests.length
    const { telemetry, close } = await running({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_COMPRESSION: "gzip"
    })
    // Enough spans for a body over gzip's 1 KB threshold.
    for (let i = 0; i < 5; i++) await serveOne(telemetry)
    await Effect.runPromise(telemetry.flush)
    await close()
    const requests = receiver.requests.slice(before)
    assert.isTrue(requests.some((r) => r.contentEncoding === "gzip"))
    assert.strictEqual(requests.flatMap((r) => r.spans).length, 20)
  })

  describe("a collector that is not there for us", () => {
    it("refuses (400): calls go on, the spans are dropped and counted", async () => {
      receiver.behave({ _tag: "refuse", status: 400 })
      const { telemetry, close } = await running({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url })
      const { result } = await serveOne(telemetry)
      assert.strictEqual(result, "answered")
      await Effect.runPromise(telemetry.flush)
      await close()
      assert.strictEqual(telemetry.metrics.exportedTotal, 0)
      assert.strictEqual(telemetry.metrics.droppedTotal, 4)
      assert.deepStrictEqual(telemetry.metrics.dropped.series.map((s) => [s.labels[0], s.value]), [[
        "export_failed",
        4
      ]])
    })

    it("is unavailable (503): retried, then dropped and counted", async () => {
      receiver.behave({ _tag: "refuse", status: 503 })
      const attempts = receiver.attempts()
      const { telemetry, close } = await running({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url }, { retryDelayMs: 1 })
      await serveOne(telemetry)
      await Effect.runPromise(telemetry.flush)
      await close()
      assert.strictEqual(receiver.attempts() - attempts, 3)
      assert.strictEqual(telemetry.metrics.droppedTotal, 4)
    })

    it("hangs: the export gives up after its timeout, calls never wait for it", async () => {
      receiver.behave({ _tag: "hang" })
      const { telemetry, close } = await running({
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_TIMEOUT: "50",
        OTEL_BSP_EXPORT_TIMEOUT: "200"
      }, { retryDelayMs: 1 })
      const results: Array<string> = []
      for (let i = 0; i < 3; i++) results.push((await serveOne(telemetry)).result)
      assert.deepStrictEqual(results, ["answered", "answered", "answered"])
      await Effect.runPromise(telemetry.flush)
      await close()
      assert.strictEqual(telemetry.metrics.exportedTotal, 0)
      assert.strictEqual(telemetry.metrics.droppedTotal, 12)
      receiver.behave({ _tag: "accept" })
    })

    it("is absent: nothing listens at the endpoint", async () => {
      const gone = await startOtlpReceiver()
      const url = gone.url
      await gone.close()
      const { telemetry, close } = await running({ OTEL_EXPORTER_OTLP_ENDPOINT: url }, { retryDelayMs: 1 })
      const { result } = await serveOne(telemetry)
      assert.strictEqual(result, "answered")
      await Effect.runPromise(telemetry.flush)
      await close()
      assert.strictEqual(telemetry.metrics.droppedTotal, 4)
    })

    it("bounds the queue: spans beyond it are dropped at once, as queue_full", async () => {
      receiver.behave({ _tag: "hang" })
      const { telemetry, close } = await running({
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_TIMEOUT: "50",
        OTEL_BSP_EXPORT_TIMEOUT: "100",
        OTEL_BSP_MAX_QUEUE_SIZE: "6",
        OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "6"
      })
      // 20 calls end at once (no export can run in between): 6 spans fit the queue, 14 are dropped.
      for (let i = 0; i < 20; i++) {
        telemetry.startCall({
          method: "POST",
          path: "/v1/chat/completions",
          route: chatRoute,
          headers: {},
          requestId: `req_${i}`,
          scheme: "http"
        }).end(200)
      }
      assert.deepStrictEqual(telemetry.metrics.dropped.series.map((s) => [s.labels[0], s.value]), [["queue_full", 14]])
      // The 6 queued go to a collector that hangs: dropped when the export gives up.
      await Effect.runPromise(telemetry.flush)
      await close()
      assert.deepStrictEqual(telemetry.metrics.dropped.series.map((s) => [s.labels[0], s.value]), [
        ["queue_full", 14],
        ["export_failed", 6]
      ])
      receiver.behave({ _tag: "accept" })
    })

    it("rejects part of a batch (partial success): those spans are counted as rejected", async () => {
      receiver.behave({ _tag: "partial", rejected: 3 })
      const { telemetry, close } = await running({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url })
      await serveOne(telemetry)
      await Effect.runPromise(telemetry.flush)
      await close()
      assert.strictEqual(telemetry.metrics.exportedTotal, 1)
      assert.deepStrictEqual(telemetry.metrics.dropped.series.map((s) => [s.labels[0], s.value]), [["rejected", 3]])
      receiver.behave({ _tag: "accept" })
    })
  })
})
