/**
 * Whole server-sent events out of an upstream's byte chunks, for relaying a
 * stream as it came: each chunk yields the bytes of the events it completed
 * (with what was held back from the chunks before), and the text of those
 * bytes for whoever meters them; the start of an unfinished event is held
 * until its blank line arrives. A same-dialect stream is then forwarded as the
 * very bytes the upstream sent (no decode-and-re-encode on the way out) while
 * its meter reads the text.
 *
 * An event ends at a blank line: a line end (`\n`, `\r\n` or `\r`) right after
 * another, the two possibly in different chunks (a `\r\n` split between chunks
 * included). Upstreams write whole events, so a chunk usually ends with a blank
 * line; such a chunk costs nothing to split. Any other chunk costs one native
 * `indexOf` per line end. Since a blank line's bytes are ASCII, the bytes of
 * whole events never end inside a UTF-8 sequence, and their text decodes on
 * its own.
 *
 * @example
 * ```ts
 * import { SseChunks } from "@modelgate/core"
 *
 * const events = new SseChunks.WholeEvents()
 * const bytes = (text: string) => new TextEncoder().encode(text)
 * events.push(bytes("data: 1\n\ndata: 2")) // { bytes: "data: 1\n\n" as bytes, text: "data: 1\n\n" }
 * events.push(bytes("\n\n"))               // { text: "data: 2\n\n", ... }
 * events.end()                             // undefined: nothing held back
 * ```
 *
 * @since 0.1.0
 */
import * as Utf8 from "./Utf8.ts"

/** Whole events: their bytes as received, and the same as text. @category models */
export interface Events {
  readonly bytes: Uint8Array
  readonly text: string
}

const LF = 10
const CR = 13

/**
 * Whether a chunk ends with a blank line: `\n\n`, `\r\n\r\n` or `\r\r` (so it
 * holds only whole events, given that the chunk before it ended one).
 *
 * @category splitting
 */
export const endsWithBlankLine = (chunk: Uint8Array): boolean => {
  const length = chunk.length
  if (length < 2) return false
  const last = chunk[length - 1]
  const before = chunk[length - 2]
  return (last === LF && before === LF) || (last === CR && before === CR) ||
    (last === LF && before === CR && length >= 4 && chunk[length - 3] === LF && chunk[length - 4] === CR)
}

/**
 * The line ends of a byte stream, followed across its chunks: LF, CRLF or CR,
 * a CRLF split between chunks counting once. `start` takes a chunk, then each
 * `next` gives the index just after its next line end (and says whether that
 * line was blank: the end of an event), until -1 at the end of the chunk. One
 * native `indexOf` per line end; a chunk known to end with a blank line can be
 * `skip`ped without scanning. Both the relay's event bound and `WholeEvents`
 * read events' ends with it.
 *
 * @category splitting
 */
export class LineEnds {
  /** The line `next` found last was blank (nothing before its line end): an event ended there. */
  blank = false
  /** Bytes of the line being received (0: at the start of a line). */
  private line = 0
  /** The last chunk ended with a CR: a LF first in the next one completes that line end. */
  private afterCR = false
  private chunk: Uint8Array = empty
  private at = 0
  private nextLf = -1
  private nextCr = -1

  /** Passes over a chunk that ends with a blank line (`endsWithBlankLine`): the next starts afresh. */
  skip(chunk: Uint8Array): void {
    this.line = 0
    this.afterCR = chunk[chunk.length - 1] === CR
  }

  /** Starts on `chunk`; returns where its first line starts (1 when its LF completes a CRLF the last chunk began). */
  start(chunk: Uint8Array): number {
    const at = this.afterCR && chunk.length > 0 && chunk[0] === LF ? 1 : 0
    this.afterCR = false
    this.chunk = chunk
    this.at = at
    this.nextLf = chunk.indexOf(LF, at)
    this.nextCr = chunk.indexOf(CR, at)
    return at
  }

  /** The index just after the chunk's next line end, or -1 when it has no more (its rest is the start of a line). */
  next(): number {
    const chunk = this.chunk
    const at = this.at
    const length = chunk.length
    if (this.nextLf !== -1 && this.nextLf < at) this.nextLf = chunk.indexOf(LF, at)
    if (this.nextCr !== -1 && this.nextCr < at) this.nextCr = chunk.indexOf(CR, at)
    const end = this.nextLf === -1 ? this.nextCr : this.nextCr === -1 ? this.nextLf : Math.min(this.nextLf, this.nextCr)
    if (end === -1) {
      this.line += length - at
      this.chunk = empty
      return -1
    }
    const crlf = chunk[end] === CR && end + 1 < length && chunk[end + 1] === LF
    if (chunk[end] === CR && end + 1 === length) this.afterCR = true
    const after = end + (crlf ? 2 : 1)
    // A line end with nothing before it on its line: a blank line, the end of an event.
    this.blank = this.line === 0 && end === at
    this.line = 0
    this.at = after
    return after
  }

  /** Forgets the stream: the next chunk starts a line. */
  reset(): void {
    this.line = 0
    this.afterCR = false
    this.chunk = empty
  }
}

const empty = new Uint8Array(0)

/**
 * Splits byte chunks into whole events (see the module's comment).
 *
 * @category splitting
 */
export class WholeEvents {
  /** Chunks (or their tails) of the event being received. */
  private held: Array<Uint8Array> = []
  private heldLength = 0
  private readonly lines = new LineEnds()

  /** The events `chunk` completed, or undefined when it completed none. */
  push(chunk: Uint8Array): Events | undefined {
    const cut = this.lastEventEnd(chunk)
    if (cut === -1) {
      if (chunk.length > 0) this.hold(chunk)
      return undefined
    }
    const whole = this.heldLength === 0 ? chunk.subarray(0, cut) : this.release(chunk.subarray(0, cut))
    // A copy: the start of the next event is short, and the chunk it came in may be large.
    if (cut < chunk.length) this.hold(chunk.slice(cut))
    return { bytes: whole, text: Utf8.decode(whole) }
  }

  /** What was held back when the stream ended (an event without its blank line), or undefined. */
  end(): Events | undefined {
    if (this.heldLength === 0) return undefined
    const rest = this.release(undefined)
    this.lines.reset()
    return { bytes: rest, text: Utf8.decode(rest) }
  }

  private hold(bytes: Uint8Array): void {
    this.held.push(bytes)
    this.heldLength += bytes.length
  }

  /** The held bytes, followed by `tail`, as one array; nothing is held after. */
  private release(tail: Uint8Array | undefined): Uint8Array {
    let out: Uint8Array
    if (tail === undefined && this.held.length === 1) out = this.held[0]!
    else {
      out = new Uint8Array(this.heldLength + (tail?.length ?? 0))
      let at = 0
      for (const part of this.held) {
        out.set(part, at)
        at += part.length
      }
      if (tail !== undefined) out.set(tail, at)
    }
    this.held = []
    this.heldLength = 0
    return out
  }

  /**
   * The index in `chunk` just after the last blank line it completes, or -1;
   * updates the line state to the chunk's end.
   */
  private lastEventEnd(chunk: Uint8Array): number {
    if (endsWithBlankLine(chunk)) {
      this.lines.skip(chunk)
      return chunk.length
    }
    let last = -1
    this.lines.start(chunk)
    for (let after = this.lines.next(); after !== -1; after = this.lines.next()) {
      if (this.lines.blank) last = after
    }
    return last
  }
}

/**
 * Where the event that starts at `from` in `text` ends (just after its blank
 * line: LF, CRLF or CR line ends), or -1 when it is not complete yet (a CR
 * at the very end may be half of a CRLF).
 *
 * @category text
 */
export const eventEnd = (text: string, from: number): number => {
  let lineStart = true
  for (let i = from; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code !== 10 && code !== 13) {
      lineStart = false
      continue
    }
    if (code === 13) {
      if (i + 1 === text.length) return -1
      if (text.charCodeAt(i + 1) === 10) i++
    }
    if (lineStart) return i + 1
    lineStart = true
  }
  return -1
}

/**
 * The `data:` lines of one raw event, joined with line feeds (one space after
 * the colon dropped, as the SSE specification says); "" when it has none.
 *
 * @category text
 */
export const dataOf = (raw: string): string => {
  let data: string | undefined
  for (const line of raw.split(/\r\n|\r|\n/)) {
    if (!line.startsWith("data:")) continue
    const value = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5)
    data = data === undefined ? value : `${data}\n${value}`
  }
  return data ?? ""
}
