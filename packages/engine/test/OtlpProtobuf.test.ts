/**
 * The hand-written OTLP protobuf writer against the official definitions:
 * what it writes decodes, with the OpenTelemetry project's generated code, to
 * the spans it was given, whatever the values (non-ASCII text, messages
 * longer than one length byte can say, negative and 64-bit integers, doubles,
 * arrays, events, links, statuses, trace states).
 */
import { assert, describe, it } from "@effect/vitest"
import * as OtlpProtobuf from "../src/telemetry/OtlpProtobuf.ts"
import { decodeTraces } from "./support/OtlpReceiver.ts"

const base: OtlpProtobuf.SpanFields = {
  traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
  spanId: "00f067aa0ba902b7",
  traceState: undefined,
  parentSpanId: undefined,
  name: "chat gpt-4o-mini",
  kind: 2,
  startTimeUnixNano: 1_767_225_600_123_456_789n,
  endTimeUnixNano: 1_767_225_601_987_654_321n,
  attributes: [],
  events: [],
  links: [],
  status: { code: 0 },
  flags: 0x101
}

const encode = (spans: ReadonlyArray<OtlpProtobuf.SpanFields>, resource: Record<string, unknown> = {}) =>
  OtlpProtobuf.tracesEncoder<OtlpProtobuf.SpanFields>(
    { resource: { "service.name": "modelgate", ...resource }, scope: { name: "modelgate", version: "0.1.0" } },
    (s) => s
  )(spans)

describe("OtlpProtobuf", () => {
  it("writes a span the official definitions read back, field by field", () => {
    const [span] = decodeTraces(encode([{
      ...base,
      traceState: "congo=t61rcWkgMzE",
      parentSpanId: "b7ad6b7169203331",
      attributes: [
        ["text", "plain"],
        ["unicode", "héllo wörld — 你好 🚀"],
        ["int", 42],
        ["negative", -7],
        ["large", 2 ** 53 + 2],
        ["bigint", -(2n ** 63n)],
        ["double", 0.25],
        ["bool", false],
        ["list", ["stop", "length"]],
        ["numbers", [1, 2.5]],
        ["skipped", undefined]
      ],
      events: [{ name: "gen_ai.choice", timeUnixNano: 1_767_225_601_000_000_000n, attributes: [["index", 0]] }],
      links: [{ traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b9c7c989f97918e1", attributes: [] }],
      status: { code: 2, message: "The upstream refused the call." },
      flags: 0x301
    }], { "deployment.environment": "test" }))
    assert.strictEqual(span!.traceId, base.traceId)
    assert.strictEqual(span!.spanId, base.spanId)
    assert.strictEqual(span!.parentSpanId, "b7ad6b7169203331")
    assert.strictEqual(span!.traceState, "congo=t61rcWkgMzE")
    assert.strictEqual(span!.name, "chat gpt-4o-mini")
    assert.strictEqual(span!.kind, 2)
    assert.strictEqual(span!.startTimeUnixNano, base.startTimeUnixNano)
    assert.strictEqual(span!.endTimeUnixNano, base.endTimeUnixNano)
    assert.deepStrictEqual(span!.attributes, {
      text: "plain",
      unicode: "héllo wörld — 你好 🚀",
      int: 42,
      negative: -7,
      large: 2 ** 53 + 2,
      bigint: Number(-(2n ** 63n)),
      double: 0.25,
      bool: false,
      list: ["stop", "length"],
      numbers: [1, 2.5]
    })
    assert.deepStrictEqual(span!.events, [{ name: "gen_ai.choice", attributes: { index: 0 } }])
    assert.deepStrictEqual(span!.status, { code: 2, message: "The upstream refused the call." })
    assert.strictEqual(span!.flags, 0x301)
    assert.deepStrictEqual(span!.resource, { "service.name": "modelgate", "deployment.environment": "test" })
    assert.strictEqual(span!.scope, "modelgate")
  })

  it("keeps a span's attributes as one flat list: a key set again keeps its place with its last value", () => {
    const attributes = new OtlpProtobuf.Attributes()
    attributes.set("gen_ai.response.model", "gpt-4o-mini")
    attributes.set("modelgate.stream", true)
    attributes.set("gen_ai.response.model", "gpt-4o-mini-2024-07-18")
    attributes.set("gen_ai.response.finish_reasons", ["stop"])
    assert.strictEqual(attributes.size, 3)
    assert.strictEqual(attributes.get("gen_ai.response.model"), "gpt-4o-mini-2024-07-18")
    assert.isTrue(attributes.has("modelgate.stream"))
    assert.isFalse(attributes.has("absent"))
    assert.deepStrictEqual([...attributes.keys()], [
      "gen_ai.response.model",
      "modelgate.stream",
      "gen_ai.response.finish_reasons"
    ])
    const [span] = decodeTraces(encode([{ ...base, attributes }]))
    assert.deepStrictEqual(span!.attributes, {
      "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
      "modelgate.stream": true,
      "gen_ai.response.finish_reasons": ["stop"]
    })
  })

  it("writes lengths of more than one byte: long values, and a batch of many spans", () => {
    const long = "x".repeat(200_000) + "é"
    const spans = Array.from({ length: 600 }, (_, i) => ({
      ...base,
      spanId: i.toString(16).padStart(16, "0").replace(/^0/, "1"),
      name: `span ${i}`,
      attributes: i === 7 ? [["long", long] as const] : [["i", i] as const]
    }))
    const decoded = decodeTraces(encode(spans))
    assert.strictEqual(decoded.length, 600)
    assert.deepStrictEqual(decoded.map((s) => s.name), spans.map((s) => s.name))
    assert.strictEqual(decoded[7]!.attributes["long"], long)
    assert.strictEqual(decoded[599]!.attributes["i"], 599)
  })

  it("writes each batch into a body of its own: a body stays as it was when the next batch is written", () => {
    const encoder = OtlpProtobuf.tracesEncoder<OtlpProtobuf.SpanFields>(
      { resource: { "service.name": "modelgate" }, scope: { name: "modelgate" } },
      (s) => s
    )
    const many = Array.from(
      { length: 300 },
      (_, i) => ({ ...base, name: `first ${i}`, attributes: [["i", i] as const] })
    )
    const first = encoder(many)
    const copy = first.slice()
    const second = encoder([{ ...base, name: "second", spanId: "b7ad6b7169203331" }])
    // The buffer is reused: the earlier body is not a view of it.
    assert.deepStrictEqual(first, copy)
    assert.strictEqual(first.buffer.byteLength, first.length)
    assert.deepStrictEqual(decodeTraces(first).map((s) => s.name), many.map((s) => s.name))
    assert.deepStrictEqual(decodeTraces(second).map((s) => [s.name, s.spanId]), [["second", "b7ad6b7169203331"]])
  })

  it("sends spans written as they ended: each batch the spans since the last, a retry the same body", () => {
    const encoded = new OtlpProtobuf.EncodedSpans(
      OtlpProtobuf.tracesBody({ resource: { "service.name": "modelgate" }, scope: { name: "modelgate" } })
    )
    const long = "x".repeat(300)
    const ends = Array.from(
      { length: 5 },
      (_, i) => encoded.append({ ...base, name: `span ${i}`, attributes: [["i", i], ["long", long]] })
    )
    const first = [ends[0]!, ends[1]!]
    const body = encoded.take(first)
    assert.strictEqual(encoded.take(first), body)
    // A span that ends meanwhile waits behind the ones queued.
    const late = encoded.append({ ...base, name: "late" })
    const second = encoded.take([ends[2]!, ends[3]!, ends[4]!])
    const third = encoded.take([late])
    assert.deepStrictEqual(decodeTraces(body).map((s) => s.name), ["span 0", "span 1"])
    assert.deepStrictEqual(decodeTraces(second).map((s) => [s.name, s.attributes["i"]]), [
      ["span 2", 2],
      ["span 3", 3],
      ["span 4", 4]
    ])
    assert.strictEqual(decodeTraces(second)[0]!.attributes["long"], long)
    assert.deepStrictEqual(decodeTraces(third).map((s) => s.name), ["late"])
    assert.strictEqual(encoded.waiting, 0)
    // A span that cannot be written leaves nothing behind.
    const bad = {
      ...base,
      get name(): string {
        throw new Error("no name")
      }
    }
    assert.throws(() => encoded.append(bad))
    assert.strictEqual(encoded.waiting, 0)
    assert.deepStrictEqual(decodeTraces(encoded.take([encoded.append(base)])).map((s) => s.name), [base.name])
  })

  it("reads trace and span ids in either case", () => {
    const [span] = decodeTraces(encode([{ ...base, traceId: base.traceId.toUpperCase(), spanId: "00F067AA0BA902B7" }]))
    assert.strictEqual(span!.traceId, base.traceId)
    assert.strictEqual(span!.spanId, "00f067aa0ba902b7")
  })
})
