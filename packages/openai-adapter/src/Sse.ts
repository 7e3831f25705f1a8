/**
 * Server-sent events: a fast incremental parser for upstream text and the
 * framing helpers for writing OpenAI streams.
 *
 * The parser follows the WHATWG event-stream rules: lines end in `\n`, `\r\n`
 * or `\r`; `data:` lines of one event are joined with `\n`; one space after the
 * colon is dropped; lines starting with `:` are comments; a leading BOM is
 * skipped; an empty line dispatches the event (events with no `data:` line are
 * not dispatched). `id:` and `retry:` are read and ignored. The input may be
 * split anywhere, including between `\r` and `\n`: the events are the same.
 * One lenient deviation: `end()` dispatches an event left without its closing
 * blank line when the upstream hangs up (the spec drops it), so a final
 * `data: [DONE]` without a trailing newline is not lost.
 *
 * @since 0.1.0
 */
import { Stream } from "effect"

/** One event: its `event:` name (when given) and its data lines joined with `\n`. @category models */
export interface SseEvent {
  readonly event?: string
  readonly data: string
}

/** The OpenAI end-of-stream event. @category framing */
export const DONE = "data: [DONE]\n\n"

/**
 * Frames one JSON text as an SSE event: `data: ${json}\n\n`. The JSON must be on
 * one line (`JSON.stringify` output is).
 *
 * @category framing
 */
export const frame = (json: string): string => `data: ${json}\n\n`

const LF = 10
const CR = 13

/**
 * An incremental SSE parser. Feed text chunks in order with `push`; call `end`
 * when the input ends.
 *
 * @example
 * ```ts
 * import { Sse } from "@modelgate/openai-adapter"
 *
 * const parser = new Sse.SseParser()
 * parser.push("data: {\"a\"")  // []
 * parser.push(":1}\r\n\r\nda") // [{ data: "{\"a\":1}" }]
 * parser.push("ta: [DONE]\n\n") // [{ data: "[DONE]" }]
 * ```
 *
 * @category parsing
 */
export class SseParser {
  /** Text of a line not yet terminated. */
  private partial = ""
  /** The previous chunk ended in `\r`: a `\n` at the start of the next one belongs to it. */
  private skipLf = false
  private started = false
  private data: Array<string> = []
  private event: string | undefined = undefined

  /** Parses the next chunk of text; returns the events it completed. */
  push(chunk: string): Array<SseEvent> {
    const out: Array<SseEvent> = []
    let text = chunk
    if (!this.started && text.length > 0) {
      this.started = true
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1)
    }
    let pos = 0
    if (this.skipLf && text.length > 0) {
      this.skipLf = false
      if (text.charCodeAt(0) === LF) pos = 1
    }
    const length = text.length
    let nextCr = text.indexOf("\r", pos)
    let nextLf = text.indexOf("\n", pos)
    while (pos < length) {
      if (nextCr !== -1 && nextCr < pos) nextCr = text.indexOf("\r", pos)
      if (nextLf !== -1 && nextLf < pos) nextLf = text.indexOf("\n", pos)
      const end = nextCr === -1 ? nextLf : nextLf === -1 ? nextCr : Math.min(nextCr, nextLf)
      if (end === -1) break
      let line = text.slice(pos, end)
      if (this.partial.length > 0) {
        line = this.partial + line
        this.partial = ""
      }
      this.line(line, out)
      if (text.charCodeAt(end) === CR) {
        if (end + 1 < length) pos = text.charCodeAt(end + 1) === LF ? end + 2 : end + 1
        else {
          this.skipLf = true
          pos = end + 1
        }
      } else pos = end + 1
    }
    if (pos < length) this.partial += pos === 0 ? text : text.slice(pos)
    return out
  }

  /** Ends the input: dispatches an event left open by a missing final blank line. */
  end(): Array<SseEvent> {
    const out: Array<SseEvent> = []
    if (this.partial.length > 0) {
      const line = this.partial
      this.partial = ""
      this.line(line, out)
    }
    this.line("", out)
    return out
  }

  private line(line: string, out: Array<SseEvent>): void {
    if (line.length === 0) {
      if (this.data.length > 0) {
        const data = this.data.length === 1 ? this.data[0]! : this.data.join("\n")
        out.push(this.event === undefined ? { data } : { event: this.event, data })
      }
      this.data = []
      this.event = undefined
      return
    }
    if (line.charCodeAt(0) === 58 /* : */) return
    const colon = line.indexOf(":")
    let field: string
    let value: string
    if (colon === -1) {
      field = line
      value = ""
    } else {
      field = line.slice(0, colon)
      value = line.charCodeAt(colon + 1) === 32 ? line.slice(colon + 2) : line.slice(colon + 1)
    }
    if (field === "data") this.data.push(value)
    else if (field === "event") this.event = value
  }
}

/**
 * Parses a whole SSE text at once.
 *
 * @category parsing
 */
export const parse = (text: string): Array<SseEvent> => {
  const parser = new SseParser()
  const events = parser.push(text)
  for (const event of parser.end()) events.push(event)
  return events
}

/**
 * A Stream transform from SSE text chunks to events, one parser per run; the
 * input may be split anywhere. Use `Stream.decodeText()` first for bytes.
 *
 * @example
 * ```ts
 * import { Sse } from "@modelgate/openai-adapter"
 * import { Stream } from "effect"
 *
 * const events = Stream.make("data: 1\n", "\ndata: 2\n\n").pipe(Sse.decode)
 * // emits { data: "1" }, { data: "2" }
 * ```
 *
 * @category streams
 */
export const decode = <E, R>(self: Stream.Stream<string, E, R>): Stream.Stream<SseEvent, E, R> =>
  self.pipe(
    Stream.mapAccumArray(() => new SseParser(), (parser, chunks) => {
      const events: Array<SseEvent> = []
      for (const chunk of chunks) {
        for (const event of parser.push(chunk)) events.push(event)
      }
      return [parser, events] as const
    }, { onHalt: (parser) => parser.end() })
  )
