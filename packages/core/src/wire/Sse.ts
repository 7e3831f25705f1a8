/**
 * Server-sent events: the one incremental parser every dialect reads its
 * upstream's streams with. Framing (writing events) stays with each dialect,
 * since each frames differently (OpenAI's `data: [DONE]`, Gemini's `\r\n\r\n`,
 * Anthropic's `event:` lines).
 *
 * The parser follows the WHATWG event-stream rules
 * (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation):
 *
 * - lines end in `\n`, `\r\n` or `\r`; a leading BOM (U+FEFF) is skipped;
 * - `field: value` lines, where one space after the colon is dropped and a
 *   line without a colon is a field with an empty value; lines starting with
 *   `:` are comments;
 * - `data:` lines of one event are joined with `\n`; `event:` names the event
 *   (`message` when it names none); `id:` sets the last event ID (ignored when
 *   it holds a NUL), which stays until the next `id:`; `retry:` with only ASCII
 *   digits sets the reconnection time; other fields are ignored;
 * - an empty line dispatches the event; an event without a `data:` line is not
 *   dispatched.
 *
 * The input may be split anywhere, including between the `\r` and `\n` of one
 * line end: the events are the same however it is split. One deliberate
 * deviation: `end()` dispatches an event left without its closing blank line
 * when the upstream hangs up (the specification drops it), so a final
 * `data: [DONE]`, Gemini's last chunk or Anthropic's `message_stop` is not lost
 * when a server omits the last blank line.
 *
 * The parser runs per chunk on every translated stream, so it is written for
 * that: it finds line ends with `indexOf` (not a loop over characters), slices
 * a line's value straight from the chunk, keeps an event's data as one string
 * (no array per event), allocates one object per dispatched event, and returns
 * a shared empty array from a push that completes no event.
 *
 * @example
 * ```ts
 * import { Sse } from "@modelgate/core"
 *
 * const parser = new Sse.Parser()
 * parser.push("event: ping\ndata: {\"a\"")   // []
 * parser.push(":1}\r\n\r\nda")               // [{ event: "ping", data: "{\"a\":1}", id: "" }]
 * parser.push("ta: [DONE]")                  // []
 * parser.end()                               // [{ event: "message", data: "[DONE]", id: "" }]
 * ```
 *
 * @since 0.1.0
 */
import { Stream } from "effect"

/**
 * One dispatched event: its type (`message` unless a non-empty `event:` line
 * named another), its `data:` lines joined with `\n`, and the last event ID
 * seen so far (`""` before any `id:` line).
 *
 * @category models
 */
export interface Event {
  readonly event: string
  readonly data: string
  readonly id: string
}

/** The type of an event that names none. @category models */
export const DEFAULT_EVENT = "message"

const LF = 10
const COLON = 58
const SPACE = 32
const BOM = 0xfeff

const NONE: ReadonlyArray<Event> = Object.freeze([])

/**
 * An incremental SSE parser for one stream. Feed the stream's text in order
 * with `push`, then call `end` once when the stream ends; each returns the
 * events it completed (never to be modified: a push that completes none
 * returns a shared empty array).
 *
 * @category parsing
 */
export class Parser {
  /** Text of a line not yet ended. */
  private partial = ""
  /** The last piece ended in `\r`: a `\n` at the start of the next belongs to that line end. */
  private afterCR = false
  private started = false
  /** The event being read: its data lines so far (valid when `hasData`) and its `event:` name. */
  private data = ""
  private hasData = false
  private type = ""
  private lastId = ""
  private reconnect: number | undefined = undefined

  /** The last event ID the stream set (`""` if none): what a client would send as `Last-Event-ID`. */
  get lastEventId(): string {
    return this.lastId
  }

  /** The reconnection time in milliseconds the stream last set with `retry:`, if any. */
  get retry(): number | undefined {
    return this.reconnect
  }

  /** Parses the next piece of text; returns the events it completed. */
  push(text: string): ReadonlyArray<Event> {
    const length = text.length
    if (length === 0) return NONE
    let pos = 0
    if (!this.started) {
      this.started = true
      if (text.charCodeAt(0) === BOM) pos = 1
    }
    if (this.afterCR) {
      this.afterCR = false
      if (text.charCodeAt(pos) === LF) pos++
    }
    let out: Array<Event> | undefined
    let nextLf = text.indexOf("\n", pos)
    let nextCr = text.indexOf("\r", pos)
    while (pos < length) {
      if (nextLf !== -1 && nextLf < pos) nextLf = text.indexOf("\n", pos)
      if (nextCr !== -1 && nextCr < pos) nextCr = text.indexOf("\r", pos)
      const end = nextCr === -1 ? nextLf : nextLf === -1 || nextCr < nextLf ? nextCr : nextLf
      if (end === -1) break
      let event: Event | undefined
      if (this.partial.length === 0) event = this.line(text, pos, end)
      else {
        const line = this.partial + text.slice(pos, end)
        this.partial = ""
        event = this.line(line, 0, line.length)
      }
      if (event !== undefined) {
        if (out === undefined) out = [event]
        else out.push(event)
      }
      if (end !== nextCr) pos = end + 1
      else if (end + 1 < length) pos = text.charCodeAt(end + 1) === LF ? end + 2 : end + 1
      else {
        this.afterCR = true
        pos = length
      }
    }
    if (pos < length) this.partial += pos === 0 ? text : text.slice(pos)
    return out ?? NONE
  }

  /**
   * Ends the stream: reads a last line left without its line end and
   * dispatches an event left without its closing blank line.
   */
  end(): ReadonlyArray<Event> {
    if (this.partial.length > 0) {
      const line = this.partial
      this.partial = ""
      this.line(line, 0, line.length)
    }
    this.afterCR = false
    const event = this.dispatch()
    return event === undefined ? NONE : [event]
  }

  /** Interprets the line `text[start, end)`; returns the event an empty line dispatches. */
  private line(text: string, start: number, end: number): Event | undefined {
    if (start === end) return this.dispatch()
    let colon: number
    if (text.startsWith("data:", start)) colon = start + 4
    else {
      if (text.charCodeAt(start) === COLON) return undefined // a comment
      colon = text.indexOf(":", start)
      if (colon === -1 || colon > end) colon = end
    }
    let from = colon + 1
    if (from < end && text.charCodeAt(from) === SPACE) from++
    const value = from < end ? text.slice(from, end) : ""
    switch (colon - start) {
      case 4:
        if (text.startsWith("data", start)) {
          if (this.hasData) this.data = this.data + "\n" + value
          else {
            this.data = value
            this.hasData = true
          }
        }
        return undefined
      case 5:
        if (text.startsWith("event", start)) this.type = value
        else if (text.startsWith("retry", start) && isDigits(value)) this.reconnect = Number(value)
        return undefined
      case 2:
        if (text.startsWith("id", start) && !value.includes("\0")) this.lastId = value
        return undefined
      default:
        return undefined
    }
  }

  private dispatch(): Event | undefined {
    const type = this.type
    this.type = ""
    if (!this.hasData) return undefined
    const event: Event = { event: type.length === 0 ? DEFAULT_EVENT : type, data: this.data, id: this.lastId }
    this.data = ""
    this.hasData = false
    return event
  }
}

const isDigits = (value: string): boolean => {
  if (value.length === 0) return false
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i)
    if (code < 48 || code > 57) return false
  }
  return true
}

/**
 * Parses a whole SSE text, given at once or as its pieces in order (`end`
 * included).
 *
 * @example
 * ```ts
 * import { Sse } from "@modelgate/core"
 *
 * Sse.parse("data: 1\n\ndata: 2")   // [{ event: "message", data: "1", id: "" }, { event: "message", data: "2", id: "" }]
 * Sse.parse(["da", "ta: 1\n\n"])     // [{ event: "message", data: "1", id: "" }]
 * ```
 *
 * @category parsing
 */
export const parse = (input: string | Iterable<string>): Array<Event> => {
  const parser = new Parser()
  const events: Array<Event> = []
  for (const piece of typeof input === "string" ? [input] : input) {
    for (const event of parser.push(piece)) events.push(event)
  }
  for (const event of parser.end()) events.push(event)
  return events
}

/**
 * A Stream transform from SSE text, split anywhere, to its events; one parser
 * per run, ended when the input ends. Use `Stream.decodeText()` first for bytes.
 *
 * @example
 * ```ts
 * import { Sse } from "@modelgate/core"
 * import { Stream } from "effect"
 *
 * const events = Stream.make("data: 1\n", "\ndata: 2\n\n").pipe(Sse.decode)
 * // emits { event: "message", data: "1", id: "" }, { event: "message", data: "2", id: "" }
 * ```
 *
 * @category streams
 */
export const decode = <E, R>(self: Stream.Stream<string, E, R>): Stream.Stream<Event, E, R> =>
  Stream.mapAccumArray(self, () => new Parser(), (parser, pieces) => {
    const events: Array<Event> = []
    for (const piece of pieces) {
      for (const event of parser.push(piece)) events.push(event)
    }
    return [parser, events] as const
  }, { onHalt: (parser) => parser.end() })
