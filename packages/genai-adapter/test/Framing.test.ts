import { assert, describe, it } from "@effect/vitest"
import { Framing } from "@modelgate/genai-adapter"
import { Effect, Stream } from "effect"

describe("Framing", () => {
  it("writes Google's SSE event bytes exactly", () => {
    assert.strictEqual(Framing.sseEvent({ a: "x\ny" }), "data: {\"a\":\"x\\ny\"}\r\n\r\n")
  })

  it("writes the JSON array stream exactly", () => {
    assert.strictEqual(Framing.arrayBody([{ a: 1 }, { b: 2 }, { c: 3 }]), "[{\"a\":1},\r\n{\"b\":2},\r\n{\"c\":3}]")
    assert.strictEqual(Framing.arrayBody([{ a: 1 }]), "[{\"a\":1}]")
    assert.strictEqual(Framing.arrayBody([]), "[]")
  })

  it("ends an array stream with an error element, whether or not elements were sent", () => {
    const framer = new Framing.ArrayFramer()
    const text = framer.element({ a: 1 }) + framer.endWith({ error: { code: 502 } })
    assert.strictEqual(text, "[{\"a\":1},\r\n{\"error\":{\"code\":502}}]")
    assert.deepStrictEqual(JSON.parse(text), [{ a: 1 }, { error: { code: 502 } }])
    assert.strictEqual(new Framing.ArrayFramer().endWith({ error: {} }), "[{\"error\":{}}]")
  })

  it.effect("frames streams (SSE and array, including an empty array)", () =>
    Effect.gen(function*() {
      const sse = yield* Stream.make({ a: 1 }, { b: 2 }).pipe(Framing.encodeSse, Stream.runCollect)
      assert.deepStrictEqual(sse, ["data: {\"a\":1}\r\n\r\n", "data: {\"b\":2}\r\n\r\n"])
      const array = yield* Stream.make({ a: 1 }, { b: 2 }).pipe(Framing.encodeArray, Stream.runCollect)
      assert.strictEqual(array.join(""), "[{\"a\":1},\r\n{\"b\":2}]")
      const empty = yield* Stream.empty.pipe(Framing.encodeArray, Stream.runCollect)
      assert.strictEqual(empty.join(""), "[]")
    }))
})
