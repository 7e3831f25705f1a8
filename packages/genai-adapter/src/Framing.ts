/**
 * Byte framing of Gemini streams.
 *
 * - Server-sent events (`?alt=sse`, what every Google SDK asks for): each
 *   event is exactly `data: <one-line JSON>\r\n\r\n`. Nothing else is ever
 *   written: no `event:` lines, no comments or keep-alives, no `[DONE]`; the
 *   stream simply ends. @google/genai 1.30.0 (the version gemini-cli pins)
 *   stalls on anything else (wire-formats §3.4).
 * - The JSON array stream (`:streamGenerateContent` without `alt=sse`):
 *   `[` + first object + (`,\r\n` + next object)* + `]`, one-line objects
 *   (wire-formats §5.5; Google's stream reader splits top-level objects by
 *   brace depth). An empty stream is `[]`.
 * - `SseParser`: an incremental parser for an upstream's SSE text, invariant
 *   under any split of the input into pieces, accepting `\r\n`, `\n` and `\r`
 *   line ends, multi-line `data:` (joined with `\n`), and ignoring comments,
 *   `event:`, `id:` and `retry:` lines.
 *
 * @since 0.1.0
 */
import { Stream } from "effect"

/**
 * One SSE event for a Gemini client: `data: <JSON>\r\n\r\n`. `JSON.stringify`
 * never writes a raw line break, so the event is always one line.
 *
 * @example
 * ```ts
 * sseEvent({ candidates: [] }) // 'data: {"candidates":[]}\r\n\r\n'
 * ```
 *
 * @category sse
 */
export const sseEvent = (value: unknown): string => `data: ${JSON.stringify(value)}\r\n\r\n`

/** The `Content-Type` of an SSE stream. @category sse */
export const SSE_CONTENT_TYPE = "text/event-stream"

/** The `Content-Type` of the JSON array stream. @category array */
export const ARRAY_CONTENT_TYPE = "application/json"

/**
 * Writes the JSON array stream incrementally: `element` returns the text to
 * send for the next object (`[` before the first, `,\r\n` before the others),
 * `end` the closing text (`]`, or `[]` if there was no element).
 *
 * @example
 * ```ts
 * const framer = new ArrayFramer()
 * framer.element({ a: 1 }) // '[{"a":1}'
 * framer.element({ a: 2 }) // ',\r\n{"a":2}'
 * framer.end()             // ']'
 * ```
 *
 * @category array
 */
export class ArrayFramer {
  private started = false

  /** The text for one more object of the array. */
  element(value: unknown): string {
    const json = JSON.stringify(value)
    if (this.started) return `,\r\n${json}`
    this.started = true
    return `[${json}`
  }

  /** The text that closes the array. */
  end(): string {
    if (this.started) return "]"
    this.started = true
    return "[]"
  }
}

/**
 * Frames a whole list of objects as a JSON array stream body.
 *
 * @category array
 */
export const arrayBody = (values: Iterable<unknown>): string => {
  const framer = new ArrayFramer()
  let out = ""
  for (const value of values) out += framer.element(value)
  return out + framer.end()
}

/**
 * An incremental SSE parser. Feed it text in order with `push`; it returns
 * the `data` payloads of the events completed by that text. `end` returns the
 * last event if the stream ended without a blank line after it.
 *
 * The result never depends on how the input was split: a `\r` at the end of a
 * piece is held back until the next piece shows whether a `\n` follows.
 *
 * @example
 * ```ts
 * const parser = new SseParser()
 * parser.push('data: {"a"')      // []
 * parser.push(':1}\r\n\r\ndata:') // ['{"a":1}']
 * parser.push(' 2\n\n')           // ['2']
 * ```
 *
 * @category parsing
 */
export class SseParser {
  private buffer = ""
  private data: Array<string> | undefined = undefined

  /** Feeds the next piece of text; returns the data of every event it completes. */
  push(text: string): Array<string> {
    const out: Array<string> = []
    const held = this.buffer
    const input = held.length === 0 ? text : held + text
    this.buffer = ""
    let start = 0
    const length = input.length
    // The held text has no line end except possibly a final `\r`: skip rescanning it.
    const from = held.length === 0 ? 0 : held.charCodeAt(held.length - 1) === 13 ? held.length - 1 : held.length
    for (let i = from; i < length; i++) {
      const code = input.charCodeAt(i)
      if (code !== 10 && code !== 13) continue
      if (code === 13) {
        if (i + 1 === length) {
          // A trailing `\r`: wait for the next piece to know whether `\n` follows.
          this.buffer = input.slice(start)
          return out
        }
        this.line(input.slice(start, i), out)
        if (input.charCodeAt(i + 1) === 10) i++
      } else this.line(input.slice(start, i), out)
      start = i + 1
    }
    if (start < length) this.buffer = input.slice(start)
    return out
  }

  /** Ends the stream: returns the pending event's data if it was not terminated by a blank line. */
  end(): Array<string> {
    const out: Array<string> = []
    if (this.buffer.length > 0) {
      const rest = this.buffer.endsWith("\r") ? this.buffer.slice(0, -1) : this.buffer
      this.buffer = ""
      this.line(rest, out)
    }
    if (this.data !== undefined) {
      out.push(this.data.join("\n"))
      this.data = undefined
    }
    return out
  }

  private line(line: string, out: Array<string>): void {
    if (line.length === 0) {
      if (this.data !== undefined) {
        out.push(this.data.join("\n"))
        this.data = undefined
      }
      return
    }
    if (line.charCodeAt(0) === 58) return // ":" comment
    const colon = line.indexOf(":")
    const field = colon < 0 ? line : line.slice(0, colon)
    if (field !== "data") return
    let value = colon < 0 ? "" : line.slice(colon + 1)
    if (value.charCodeAt(0) === 32) value = value.slice(1)
    if (this.data === undefined) this.data = [value]
    else this.data.push(value)
  }
}

/**
 * Parses a stream of SSE text into the data payloads of its events.
 *
 * @category parsing
 */
export const parseSse = <E, R>(text: Stream.Stream<string, E, R>): Stream.Stream<string, E, R> =>
  Stream.mapAccumArray(text, () => new SseParser(), (parser, pieces) => {
    const out: Array<string> = []
    for (const piece of pieces) {
      for (const data of parser.push(piece)) out.push(data)
    }
    return [parser, out] as const
  }, { onHalt: (parser) => parser.end() })

/**
 * Frames a stream of objects as Gemini SSE text (one event per object).
 *
 * @category sse
 */
export const encodeSse = <A, E, R>(values: Stream.Stream<A, E, R>): Stream.Stream<string, E, R> =>
  Stream.map(values, sseEvent)

/**
 * Frames a stream of objects as the JSON array stream (`[`, `,\r\n`, `]`).
 *
 * @category array
 */
export const encodeArray = <A, E, R>(values: Stream.Stream<A, E, R>): Stream.Stream<string, E, R> =>
  Stream.mapAccumArray(values, () => new ArrayFramer(), (framer, chunk) => {
    const out: Array<string> = []
    for (const value of chunk) out.push(framer.element(value))
    return [framer, out] as const
  }, { onHalt: (framer) => [framer.end()] })
