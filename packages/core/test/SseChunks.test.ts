/**
 * Whole events out of byte chunks: however a stream is cut, the pieces given
 * out are the stream's bytes in order, each piece holds whole events (parsed
 * alone, the pieces give the events the whole stream gives), and a chunk of
 * whole events is given out as it came.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import * as Sse from "../src/Sse.ts"
import * as SseChunks from "../src/SseChunks.ts"

const encoder = new TextEncoder()
const decoder = new TextDecoder()

/** Events with `data:` lines of text (multi-byte characters included), each line ended by `end`. */
const streamArb = fc.array(
  fc.record({
    lines: fc.array(
      fc.string({ unit: fc.constantFrom("a", "b", " ", "{", "\"", ":", "é", "漢", "😀"), maxLength: 12 }),
      { minLength: 1, maxLength: 3 }
    ),
    end: fc.constantFrom("\n", "\r\n", "\r")
  }),
  { minLength: 1, maxLength: 8 }
).map((events) => events.map(({ lines, end }) => lines.map((line) => `data: ${line}${end}`).join("") + end).join(""))

/** Cuts the bytes at the given points. */
const cut = (bytes: Uint8Array, points: ReadonlyArray<number>): Array<Uint8Array> => {
  const at = [...new Set(points.map((p) => p % (bytes.length + 1)))].sort((a, b) => a - b)
  const out: Array<Uint8Array> = []
  let from = 0
  for (const point of at) {
    out.push(bytes.subarray(from, point))
    from = point
  }
  out.push(bytes.subarray(from))
  return out
}

const eventsOf = (text: string): Array<Sse.Event> => {
  const parser = new Sse.Parser()
  return [...parser.push(text), ...parser.end()]
}

describe("SseChunks.WholeEvents", () => {
  it("gives out the stream's bytes in order, in pieces of whole events, however it is cut", () => {
    fc.assert(fc.property(streamArb, fc.array(fc.nat(), { maxLength: 10 }), (stream, points) => {
      const bytes = encoder.encode(stream)
      const events = new SseChunks.WholeEvents()
      const pieces: Array<SseChunks.Events> = []
      for (const chunk of cut(bytes, points)) {
        const out = events.push(chunk)
        if (out !== undefined) pieces.push(out)
      }
      const rest = events.end()
      if (rest !== undefined) pieces.push(rest)
      const joined = new Uint8Array(pieces.reduce((n, p) => n + p.bytes.length, 0))
      let at = 0
      for (const piece of pieces) {
        assert.strictEqual(piece.text, decoder.decode(piece.bytes))
        joined.set(piece.bytes, at)
        at += piece.bytes.length
      }
      assert.deepStrictEqual(joined, bytes)
      // Each piece alone holds whole events: parsed piece by piece, the same events as the whole stream.
      assert.deepStrictEqual(pieces.flatMap((piece) => eventsOf(piece.text)), eventsOf(stream))
    }))
  })

  it("gives out a chunk of whole events as it came, and holds an unfinished one", () => {
    const events = new SseChunks.WholeEvents()
    const chunk = encoder.encode("data: {\"a\":1}\n\ndata: {\"b\":2}\n\n")
    const out = events.push(chunk)
    assert.strictEqual(out?.bytes.buffer, chunk.buffer, "no copy")
    assert.strictEqual(out?.bytes.length, chunk.length)
    assert.isUndefined(events.push(encoder.encode("data: {\"c\"")))
    assert.isUndefined(events.push(encoder.encode(":3}\r\n")))
    assert.strictEqual(events.push(encoder.encode("\r\ndata: {\"d\"")!)?.text, "data: {\"c\":3}\r\n\r\n")
    assert.strictEqual(events.end()?.text, "data: {\"d\"")
    assert.isUndefined(events.end())
  })

  it("a CR ending a chunk and the LF beginning the next are one line end", () => {
    const events = new SseChunks.WholeEvents()
    assert.isUndefined(events.push(encoder.encode("data: x\r")))
    // "\n" completes the CRLF: not yet a blank line.
    assert.isUndefined(events.push(encoder.encode("\n")))
    assert.strictEqual(events.push(encoder.encode("\r\n"))?.text, "data: x\r\n\r\n")
  })
})
