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

  /**
   * The text that adds `value` as the last element and closes the array: how a
   * stream that fails after it started ends (`,\r\n{"error":{...}}]`, or
   * `[{"error":{...}}]` when nothing was sent yet, as Google does).
   */
  endWith(value: unknown): string {
    return this.element(value) + "]"
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
 * The result never depends on how the input was split: a `\r` ends its line at
 * once, and a `\n` at the start of the next piece is then taken as part of
 * that `\r\n`. Partial lines are kept as text until their line end arrives.
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
  private afterCR = false
  private data: Array<string> | undefined = undefined

  /** Feeds the next piece of text; returns the data of every event it completes. */
  push(text: string): Array<string> {
    const out: Array<string> = []
    let i = 0
    const length = text.length
    if (this.afterCR && length > 0) {
      // The previous piece ended with `\r`: a `\n` here belongs to that line end.
      if (text.charCodeAt(0) === 10) i = 1
      this.afterCR = false
    }
    let start = i
    for (; i < length; i++) {
      const code = text.charCodeAt(i)
      if (code !== 10 && code !== 13) continue
      const line = this.buffer.length === 0 ? text.slice(start, i) : this.buffer + text.slice(start, i)
      this.buffer = ""
      this.line(line, out)
      if (code === 13) {
        if (i + 1 === length) this.afterCR = true
        else if (text.charCodeAt(i + 1) === 10) i++
      }
      start = i + 1
    }
    if (start < length) this.buffer += text.slice(start)
    return out
  }

  /** Ends the stream: returns the pending event's data if it was not terminated by a blank line. */
  end(): Array<string> {
    const out: Array<string> = []
    if (this.buffer.length > 0) {
      const rest = this.buffer
      this.buffer = ""
      this.line(rest, out)
    }
    this.afterCR = false
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
