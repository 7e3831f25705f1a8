import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { Framing } from "@modelgate/genai-adapter"

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

  it("parses SSE with \\r\\n and \\n, comments, event lines and multi-line data", () => {
    const parser = new Framing.SseParser()
    assert.deepStrictEqual(parser.push(": ping\r\nevent: x\r\ndata: {\"a\":1}\r\n\r\n"), ["{\"a\":1}"])
    assert.deepStrictEqual(parser.push("data:one\ndata: two\n\n"), ["one\ntwo"])
    assert.deepStrictEqual(parser.push("data: tail"), [])
    assert.deepStrictEqual(parser.end(), ["tail"])
  })

  it("holds a trailing \\r until it knows whether \\n follows", () => {
    const parser = new Framing.SseParser()
    assert.deepStrictEqual(parser.push("data: 1\r"), [])
    assert.deepStrictEqual(parser.push("\n\r"), ["1"])
    assert.deepStrictEqual(parser.push("\ndata: 2\r\n\r\n"), ["2"])
  })

  it("gives the same events for every split of a stream", () => {
    const text = "data: {\"x\":\"é😀\"}\r\n\r\n: c\r\ndata: 2\n\ndata: 3\r\n\r\n"
    const whole = new Framing.SseParser().push(text)
    for (let i = 0; i <= text.length; i++) {
      for (let j = i; j <= text.length; j += 3) {
        const parser = new Framing.SseParser()
        const events = [...parser.push(text.slice(0, i)), ...parser.push(text.slice(i, j)), ...parser.push(text.slice(j)), ...parser.end()]
        assert.deepStrictEqual(events, whole)
      }
    }
  })

  it.effect("parseSse works on a text stream and flushes the last event", () =>
    Effect.gen(function*() {
      const events = yield* Stream.make("data: a\r\n", "\r\ndata: b").pipe(Framing.parseSse, Stream.runCollect)
      assert.deepStrictEqual(events, ["a", "b"])
    }))
})
