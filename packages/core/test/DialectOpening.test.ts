import { assert, describe, it } from "@effect/vitest"
import * as Dialect from "../src/dialect/Dialect.ts"
import { UpstreamUnavailable } from "../src/errors/GatewayError.ts"

const message = (opening: Dialect.OpeningEvent | Dialect.Opening): string =>
  opening instanceof UpstreamUnavailable ? opening.message : String(opening)

describe("Dialect.firstEvent", () => {
  it("gives the first whole event with its JSON object, whatever follows it", () => {
    const first = Dialect.firstEvent("event: a\ndata: {\"x\":1}\n\ndata: {\"y\"", false, "c", "a chunk")
    assert.isTrue(Dialect.isOpeningEvent(first))
    if (Dialect.isOpeningEvent(first)) {
      assert.strictEqual(first.event.event, "a")
      assert.deepStrictEqual(first.json, { x: 1 })
    }
  })

  it("finds the first event of a long burst read at once, however the slices it is parsed in cut it", () => {
    const burst = (end: string) =>
      Array.from({ length: 400 }, (_, i) => `data: {"i":${i},"pad":"${"x".repeat(i % 50)}"}${end}${end}`).join("")
    for (const end of ["\n", "\r\n", "\r"]) {
      // Padded so the first event's line end falls on each side of a slice boundary.
      for (const lead of [2030, 2040, 2045, 2046, 2047, 2048, 5000]) {
        const first = Dialect.firstEvent(`: ${"c".repeat(lead)}${end}${burst(end)}`, false, "c", "a chunk")
        assert.isTrue(Dialect.isOpeningEvent(first))
        if (Dialect.isOpeningEvent(first)) assert.deepStrictEqual(first.json, { i: 0, pad: "" })
      }
    }
    // A first event longer than a slice, complete only at the end of the text or with the stream's end.
    const long = `data: {"x":"${"y".repeat(10_000)}"}`
    assert.strictEqual(Dialect.firstEvent(long, false, "c", "a chunk"), "incomplete")
    assert.isTrue(Dialect.isOpeningEvent(Dialect.firstEvent(long, true, "c", "a chunk")))
    assert.isTrue(Dialect.isOpeningEvent(Dialect.firstEvent(`${long}\n\n`, false, "c", "a chunk")))
  })

  it("is incomplete before a whole event, and the upstream failing once the stream ended without one", () => {
    assert.strictEqual(Dialect.firstEvent("data: {\"x\"", false, "c", "a chunk"), "incomplete")
    assert.strictEqual(message(Dialect.firstEvent("", true, "c", "a chunk")), Dialect.emptyStream("c").message)
    // The last event needs no blank line once the stream has ended.
    assert.isTrue(Dialect.isOpeningEvent(Dialect.firstEvent("data: {}", true, "c", "a chunk")))
  })

  it("refuses data that is not JSON, JSON that is not an object, and the end marker first", () => {
    assert.strictEqual(
      message(Dialect.firstEvent("data: <html>\n\n", false, "c", "a chunk")),
      Dialect.brokenEvent("c").message
    )
    assert.strictEqual(
      message(Dialect.firstEvent("data: [1]\n\n", false, "c", "a chunk")),
      Dialect.answeredOther("c", "a chunk").message
    )
    assert.strictEqual(
      message(Dialect.firstEvent("data: [DONE]\n\n", false, "c", "a chunk", "[DONE]")),
      Dialect.emptyStream("c").message
    )
    // Without an end marker, [DONE] is just data that is not JSON.
    assert.strictEqual(
      message(Dialect.firstEvent("data: [DONE]\n\n", false, "c", "a chunk")),
      Dialect.brokenEvent("c").message
    )
  })
})
