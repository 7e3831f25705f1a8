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
 * Splits byte chunks into whole events (see the module's comment).
 *
 * @category splitting
 */
export class WholeEvents {
  /** Chunks (or their tails) of the event being received. */
  private held: Array<Uint8Array> = []
  private heldLength = 0
  /** Bytes of the line being received (0: at the start of a line). */
  private line = 0
  /** The last byte seen was a CR: a LF first in the next chunk completes that line end. */
  private afterCR = false

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
    this.line = 0
    this.afterCR = false
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
    const length = chunk.length
    if (endsWithBlankLine(chunk)) {
      this.line = 0
      this.afterCR = chunk[length - 1] === CR
      return length
    }
    let last = -1
    let at = 0
    if (this.afterCR && length > 0 && chunk[0] === LF) at = 1
    this.afterCR = false
    let nextLf = chunk.indexOf(LF, at)
    let nextCr = chunk.indexOf(CR, at)
    for (;;) {
      if (nextLf !== -1 && nextLf < at) nextLf = chunk.indexOf(LF, at)
      if (nextCr !== -1 && nextCr < at) nextCr = chunk.indexOf(CR, at)
      const end = nextLf === -1 ? nextCr : nextCr === -1 ? nextLf : Math.min(nextLf, nextCr)
      if (end === -1) {
        this.line += length - at
        return last
      }
      const crlf = chunk[end] === CR && end + 1 < length && chunk[end + 1] === LF
      if (chunk[end] === CR && end + 1 === length) this.afterCR = true
      const after = end + (crlf ? 2 : 1)
      // A line end with nothing before it on its line: a blank line, the end of an event.
      if (this.line === 0 && end === at) last = after
      this.line = 0
      at = after
    }
  }
}
