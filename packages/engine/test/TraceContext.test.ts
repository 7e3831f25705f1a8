/**
 * W3C Trace Context: the headers a caller may send, valid and not, as the
 * specification's examples and rules have them.
 */
import { assert, describe, it } from "@effect/vitest"
import * as TraceContext from "../src/telemetry/TraceContext.ts"

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
const SPAN = "00f067aa0ba902b7"

describe("TraceContext", () => {
  describe("traceparent", () => {
    it("reads a valid header, sampled or not", () => {
      assert.deepStrictEqual(TraceContext.parseTraceparent(`00-${TRACE}-${SPAN}-01`), {
        traceId: TRACE,
        spanId: SPAN,
        sampled: true
      })
      assert.deepStrictEqual(TraceContext.parseTraceparent(`00-${TRACE}-${SPAN}-00`)?.sampled, false)
      // Other flag bits do not change the sampled bit.
      assert.deepStrictEqual(TraceContext.parseTraceparent(`00-${TRACE}-${SPAN}-03`)?.sampled, true)
      assert.deepStrictEqual(TraceContext.parseTraceparent(`00-${TRACE}-${SPAN}-02`)?.sampled, false)
    })

    it("reads a later version for its first four fields", () => {
      assert.deepStrictEqual(TraceContext.parseTraceparent(`01-${TRACE}-${SPAN}-01`)?.traceId, TRACE)
      assert.deepStrictEqual(TraceContext.parseTraceparent(`cc-${TRACE}-${SPAN}-01-what-comes-next`)?.spanId, SPAN)
      assert.isUndefined(TraceContext.parseTraceparent(`cc-${TRACE}-${SPAN}-01x`))
    })

    it("ignores what the specification calls invalid", () => {
      const invalid = [
        undefined,
        "",
        "garbage",
        `ff-${TRACE}-${SPAN}-01`, // version ff is forbidden
        `00-${TRACE}-${SPAN}-01-extra`, // version 00 is exactly 55 characters
        `00-${TRACE.toUpperCase()}-${SPAN}-01`, // lower-case hex only
        `00-${TRACE}-${SPAN.toUpperCase()}-01`,
        `00-00000000000000000000000000000000-${SPAN}-01`, // all-zero trace id
        `00-${TRACE}-0000000000000000-01`, // all-zero parent id
        `00-${TRACE.slice(1)}-${SPAN}0-01`, // fields of the wrong length
        `00-${TRACE}-${SPAN}-0g`,
        `00_${TRACE}_${SPAN}_01`,
        `0-${TRACE}-${SPAN}-01x`,
        // Two headers, joined by Node.
        `00-${TRACE}-${SPAN}-01, 00-${TRACE}-${SPAN}-01`
      ]
      for (const header of invalid) assert.isUndefined(TraceContext.parseTraceparent(header), String(header))
    })
  })

  describe("tracestate", () => {
    it("keeps a valid list, normalised", () => {
      assert.strictEqual(
        TraceContext.parseTracestate("congo=t61rcWkgMzE, rojo=00f067aa0ba902b7"),
        "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"
      )
      assert.strictEqual(
        TraceContext.parseTracestate("fw529a3039@dt=ZmFy, a*b/c_d-e=  x y"),
        "fw529a3039@dt=ZmFy,a*b/c_d-e=  x y"
      )
      // Empty members are allowed and skipped.
      assert.strictEqual(TraceContext.parseTracestate(" , a=1,, "), "a=1")
    })

    it("drops an invalid list whole", () => {
      const invalid = [
        "",
        "a",
        "=1",
        "A=1", // keys are lower case
        "a=1,a=2", // a key twice
        "a=1=2", // '=' in a value
        "a= ", // an empty value
        "1a=1", // a simple key starts with a letter
        `${"k".repeat(257)}=1`,
        Array.from({ length: 33 }, (_, i) => `k${i}=v`).join(",")
      ]
      for (const header of invalid) assert.isUndefined(TraceContext.parseTracestate(header), header)
      // Whitespace around a member is optional whitespace, not part of its value.
      assert.strictEqual(TraceContext.parseTracestate("a=x "), "a=x")
      assert.strictEqual(
        TraceContext.parseTracestate(Array.from({ length: 32 }, (_, i) => `k${i}=v`).join(","))?.split(",").length,
        32
      )
    })
  })

  it("reads both headers of a request; an invalid traceparent takes its tracestate with it", () => {
    assert.deepStrictEqual(
      TraceContext.fromHeaders({ traceparent: `00-${TRACE}-${SPAN}-01`, tracestate: ["a=1", "b=2"] }),
      { traceId: TRACE, spanId: SPAN, sampled: true, traceState: "a=1,b=2" }
    )
    assert.deepStrictEqual(
      TraceContext.fromHeaders({ traceparent: `00-${TRACE}-${SPAN}-01`, tracestate: "A=1" })?.traceState,
      undefined
    )
    assert.isUndefined(TraceContext.fromHeaders({ traceparent: "nope", tracestate: "a=1" }))
    assert.isUndefined(TraceContext.fromHeaders({ tracestate: "a=1" }))
    assert.isUndefined(TraceContext.fromHeaders({ traceparent: [`00-${TRACE}-${SPAN}-01`, `00-${TRACE}-${SPAN}-01`] }))
  })

  it("writes a version-00 traceparent", () => {
    assert.strictEqual(TraceContext.formatTraceparent(TRACE, SPAN, true), `00-${TRACE}-${SPAN}-01`)
    assert.strictEqual(TraceContext.formatTraceparent(TRACE, SPAN, false), `00-${TRACE}-${SPAN}-00`)
    assert.deepStrictEqual(
      TraceContext.parseTraceparent(TraceContext.formatTraceparent(TRACE, SPAN, false)),
      { traceId: TRACE, spanId: SPAN, sampled: false }
    )
  })
})
