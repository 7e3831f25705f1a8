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
 *
 * Reading an upstream's SSE text is core's `Sse.Parser`.
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
