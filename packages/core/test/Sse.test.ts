import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import * as fc from "fast-check"
import * as Cuts from "../src/testing/Cuts.ts"
import * as Sse from "../src/wire/Sse.ts"

const message = (data: string, id = ""): Sse.Event => ({ event: "message", data, id })

describe("Sse.Parser", () => {
  it("joins the data lines of an event with \\n and drops one space after the colon", () => {
    assert.deepStrictEqual(Sse.parse("data: a\ndata:b\ndata:  c\n\n"), [message("a\nb\n c")])
  })

  it("reads a line without a colon as a field with an empty value", () => {
    assert.deepStrictEqual(Sse.parse("data\n\ndata\ndata\n\n"), [message(""), message("\n")])
  })

  it("skips comments and fields it does not know", () => {
    assert.deepStrictEqual(Sse.parse(": keep-alive\nfoo: bar\ndata: x\n:\nDATA: y\n\n"), [message("x")])
  })

  it("names events by their event: line, and message when there is none or it is empty", () => {
    assert.deepStrictEqual(Sse.parse("event: ping\ndata: 1\n\nevent:\ndata: 2\n\ndata: 3\n\n"), [
      { event: "ping", data: "1", id: "" },
      message("2"),
      message("3")
    ])
  })

  it("does not dispatch an event without data, and its name does not carry over", () => {
    assert.deepStrictEqual(Sse.parse("event: a\n\nid: 7\n\ndata: x\n\n"), [message("x", "7")])
  })

  it("keeps the last event id until the next id: line, ignoring one with a NUL", () => {
    const parser = new Sse.Parser()
    const events = parser.push("id: 1\ndata: a\n\ndata: b\n\nid: 2\u0000\ndata: c\n\nid\ndata: d\n\n")
    assert.deepStrictEqual(events, [message("a", "1"), message("b", "1"), message("c", "1"), message("d", "")])
    assert.strictEqual(parser.lastEventId, "")
  })

  it("takes a retry: made of ASCII digits only", () => {
    const parser = new Sse.Parser()
    assert.strictEqual(parser.retry, undefined)
    parser.push("retry: 1500\n\n")
    assert.strictEqual(parser.retry, 1500)
    parser.push("retry: 20s\nretry:\nretry: -1\nretry: 1e3\n\n")
    assert.strictEqual(parser.retry, 1500)
  })

  it("ends lines at \\n, \\r\\n and \\r, also when \\r and \\n arrive in different pushes", () => {
    assert.deepStrictEqual(Sse.parse("data: a\r\n\r\ndata: b\r\rdata: c\n\n"), [
      message("a"),
      message("b"),
      message("c")
    ])
    assert.deepStrictEqual(Sse.parse(["data: a\r", "\ndata: b\r", "\n\r", "\n"]), [message("a\nb")])
    assert.deepStrictEqual(Sse.parse(["data: a\r", "\r", "\ndata: b\r", "\r"]), [message("a"), message("b")])
  })

  it("joins a line split across pushes", () => {
    const parser = new Sse.Parser()
    assert.deepStrictEqual(parser.push("da"), [])
    assert.deepStrictEqual(parser.push("ta: {\"a\""), [])
    assert.deepStrictEqual(parser.push(":1}\n"), [])
    assert.deepStrictEqual(parser.push("\n"), [message("{\"a\":1}")])
  })

  it("skips a BOM at the start of the stream only", () => {
    assert.deepStrictEqual(Sse.parse(["", "\uFEFFdata: a\n\n", "\uFEFFdata: b\n\n"]), [message("a")])
  })

  it("end() dispatches an event left without its blank line, and its last line without a line end", () => {
    assert.deepStrictEqual(Sse.parse(["data: a\n\ndata: [DONE]"]), [message("a"), message("[DONE]")])
    assert.deepStrictEqual(Sse.parse(["event: message_stop\ndata: {}\n"]), [{
      event: "message_stop",
      data: "{}",
      id: ""
    }])
    assert.deepStrictEqual(Sse.parse(["data: a\n\n: bye"]), [message("a")])
    assert.deepStrictEqual(new Sse.Parser().end(), [])
  })

  it.effect("decode parses a Stream of text pieces and ends the parser with the stream", () =>
    Effect.gen(function*() {
      const events = yield* Stream.make("data: 1\r", "\ndata: 2\r\n", "\r\n", "event: last\ndata: 3").pipe(
        Sse.decode,
        Stream.runCollect
      )
      assert.deepStrictEqual(events, [message("1\n2"), { event: "last", data: "3", id: "" }])
    }))
})

// ---------------------------------------------------------------------------
// Laws: any event stream, written with any mix of line ends, comments and
// other fields and split anywhere, parses back to its events.
// ---------------------------------------------------------------------------

/** Text without line ends (a field's value). */
const value = fc.string({ maxLength: 12 }).map((s) => s.replace(/[\r\n]/g, ""))

interface Written {
  readonly event: string | undefined
  readonly data: ReadonlyArray<string>
  readonly id: string | undefined
  readonly retry: number | undefined
}

const written: fc.Arbitrary<Written> = fc.record({
  event: fc.option(value, { nil: undefined }),
  data: fc.array(value, { minLength: 1, maxLength: 3 }),
  id: fc.option(value.map((s) => s.replace(/\0/g, "")), { nil: undefined }),
  retry: fc.option(fc.nat({ max: 100_000 }), { nil: undefined })
})

const EOLS = ["\n", "\r\n", "\r"]

/** Writes events as SSE text; `choices` pick each line's end, comments, unknown fields and the form of `data:`. */
const write = (
  events: ReadonlyArray<Written>,
  choices: ReadonlyArray<number>,
  bom: boolean,
  closed: boolean
): string => {
  let c = 0
  const pick = () => choices[c++ % choices.length]!
  let text = bom ? "\uFEFF" : ""
  const line = (content: string) => {
    text += content + EOLS[pick() % 3]!
    if (pick() % 5 === 0) text += `: comment ${c}` + EOLS[pick() % 3]!
    if (pick() % 7 === 0) text += `unknown: ${c}` + EOLS[pick() % 3]!
  }
  events.forEach((event, i) => {
    if (event.id !== undefined) line(`id: ${event.id}`)
    if (event.retry !== undefined) line(`retry: ${event.retry}`)
    if (event.event !== undefined) line(`event: ${event.event}`)
    for (const data of event.data) line(data.startsWith(" ") || pick() % 2 === 0 ? `data: ${data}` : `data:${data}`)
    // A blank line "\n" right after a "\r" would read as one "\r\n" line end, so it is written otherwise.
    if (i < events.length - 1 || closed) text += text.endsWith("\r") ? EOLS[1 + (pick() % 2)]! : EOLS[pick() % 3]!
  })
  return text
}

const expected = (events: ReadonlyArray<Written>): Array<Sse.Event> => {
  let id = ""
  return events.map((event) => {
    if (event.id !== undefined) id = event.id
    return {
      event: event.event === undefined || event.event.length === 0 ? "message" : event.event,
      data: event.data.join("\n"),
      id
    }
  })
}

describe("Sse.Parser laws", () => {
  it("any events, written any way and split anywhere, parse back to themselves", () => {
    fc.assert(
      fc.property(
        fc.array(written, { maxLength: 6 }),
        fc.array(fc.nat(), { minLength: 1, maxLength: 24 }),
        fc.boolean(),
        fc.boolean(),
        fc.array(fc.nat(), { maxLength: 12 }),
        (events, choices, bom, closed, cuts) => {
          const text = write(events, choices, bom, closed)
          const parser = new Sse.Parser()
          const got: Array<Sse.Event> = []
          for (const piece of Cuts.splitAt(text, cuts)) got.push(...parser.push(piece))
          got.push(...parser.end())
          assert.deepStrictEqual(got, expected(events), JSON.stringify(text))
          const lastId = events.findLast((event) => event.id !== undefined)?.id ?? ""
          const lastRetry = events.findLast((event) => event.retry !== undefined)?.retry
          assert.strictEqual(parser.lastEventId, lastId)
          assert.strictEqual(parser.retry, lastRetry)
        }
      ),
      { numRuns: 500 }
    )
  })
})
