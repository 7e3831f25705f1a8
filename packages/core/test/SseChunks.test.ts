/**
 * Whole events out of byte chunks: however a stream is cut, the pieces given
 * out are the stream's bytes in order, each piece holds whole events (parsed
 * alone, the pieces give the events the whole stream gives), and a chunk of
 * whole events is given out as it came.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import * as Sse from "../src/wire/Sse.ts"
import * as SseChunks from "../src/wire/SseChunks.ts"

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

describe("SseChunks.LineEnds", () => {
  /** The ends of blank lines (events' ends) of a whole text, as byte offsets. */
  const blankEnds = (bytes: Uint8Array): Array<number> => {
    const ends: Array<number> = []
    let line = 0
    for (let i = 0; i < bytes.length; i++) {
      const byte = bytes[i]
      if (byte !== 10 && byte !== 13) {
        line++
        continue
      }
      const after = byte === 13 && bytes[i + 1] === 10 ? i + 2 : i + 1
      if (line === 0) ends.push(after)
      line = 0
      i = after - 1
    }
    return ends
  }

  it("finds the same events' ends however the stream is cut, a CRLF split between chunks counting once", () => {
    fc.assert(fc.property(streamArb, fc.array(fc.nat(), { maxLength: 10 }), (stream, points) => {
      const bytes = encoder.encode(stream)
      const lines = new SseChunks.LineEnds()
      const found: Array<number> = []
      let offset = 0
      for (const chunk of cut(bytes, points)) {
        lines.start(chunk)
        for (let after = lines.next(); after !== -1; after = lines.next()) {
          if (lines.blank) found.push(offset + after)
        }
        offset += chunk.length
      }
      // A CRLF cut in two is found at its CR (the next chunk's start skips its LF): the same line end.
      assert.deepStrictEqual(
        found.map((end) => bytes[end] === 10 && bytes[end - 1] === 13 ? end + 1 : end),
        blankEnds(bytes)
      )
    }))
  })
})

describe("SseChunks.eventEnd and dataOf", () => {
  it("cut a stream into its events, each with the data the parser reads", () => {
    fc.assert(fc.property(streamArb, (text) => {
      const data: Array<string> = []
      let from = 0
      while (from < text.length) {
        const end = SseChunks.eventEnd(text, from)
        if (end === -1) {
          // Only a CR at the very end (half of a CRLF, perhaps) leaves an event open.
          assert.strictEqual(text.charCodeAt(text.length - 1), 13)
          data.push(SseChunks.dataOf(text.slice(from)))
          break
        }
        data.push(SseChunks.dataOf(text.slice(from, end)))
        from = end
      }
      assert.deepStrictEqual(data, eventsOf(text).map((event) => event.data))
    }))
  })

  it("say an event without its blank line is not complete, and one without data has none", () => {
    assert.strictEqual(SseChunks.eventEnd("data: a\n", 0), -1)
    assert.strictEqual(SseChunks.eventEnd("data: a\r", 0), -1)
    assert.strictEqual(SseChunks.eventEnd("data: a\n\ndata: b\n\n", 9), 18)
    assert.strictEqual(SseChunks.dataOf("event: ping\n\n"), "")
    assert.strictEqual(SseChunks.dataOf("data:a\ndata:  b\n\n"), "a\n b")
  })
})
