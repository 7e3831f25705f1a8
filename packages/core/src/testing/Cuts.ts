/**
 * Cutting a text, or the text of a stream's events, at given points: how the
 * adapters' re-chunking laws make the many ways a network or an upstream may
 * deliver the same thing. The points come from a property test (for example
 * `fc.array(fc.nat())`) and are taken modulo the length, so any list of
 * numbers is a valid cut. Free of fast-check, like everything in core.
 *
 * @example
 * ```ts
 * import * as Cuts from "@modelgate/core/testing/Cuts"
 *
 * Cuts.splitAt("data: 1\n\n", [3, 29])  // ["dat", "a: 1\n\n", ""]
 * Cuts.splitNonEmpty("Hello", [0, 2, 11]) // ["He", "llo"]
 * ```
 *
 * @since 0.1.0
 */
import type { StreamEvent } from "../dialect/Canonical.ts"

const points = (length: number, cuts: ReadonlyArray<number>): Array<number> =>
  [...new Set(cuts.map((cut) => cut % (length + 1)))].sort((a, b) => a - b)

/**
 * `text` cut at each point (modulo `text.length + 1`): the pieces, in order,
 * join to `text`. A cut at either end gives an empty piece, as a network read
 * may.
 *
 * @category texts
 */
export const splitAt = (text: string, cuts: ReadonlyArray<number>): Array<string> => {
  const pieces: Array<string> = []
  let from = 0
  for (const point of points(text.length, cuts)) {
    pieces.push(text.slice(from, point))
    from = point
  }
  pieces.push(text.slice(from))
  return pieces
}

/**
 * `bytes` cut at `cuts` (taken modulo its length + 1), as `splitAt` cuts text:
 * the network reads an upstream's stream may arrive in, a UTF-8 sequence
 * split between two included.
 *
 * @category bytes
 */
export const splitBytesAt = (bytes: Uint8Array, cuts: ReadonlyArray<number>): Array<Uint8Array> => {
  const pieces: Array<Uint8Array> = []
  let from = 0
  for (const point of points(bytes.length, cuts)) {
    pieces.push(bytes.subarray(from, point))
    from = point
  }
  pieces.push(bytes.subarray(from))
  return pieces
}

/**
 * Pieces of bytes joined into one array.
 *
 * @category bytes
 */
export const joinBytes = (pieces: ReadonlyArray<Uint8Array>): Uint8Array => {
  const out = new Uint8Array(pieces.reduce((n, piece) => n + piece.length, 0))
  let at = 0
  for (const piece of pieces) {
    out.set(piece, at)
    at += piece.length
  }
  return out
}

/**
 * `text` cut at the points that fall inside it, so that no piece is empty
 * (unless `text` is): the deltas an upstream may stream a text in.
 *
 * @category texts
 */
export const splitNonEmpty = (text: string, cuts: ReadonlyArray<number>): Array<string> => {
  const pieces: Array<string> = []
  let from = 0
  for (const point of points(text.length, cuts)) {
    if (point > from && point < text.length) {
      pieces.push(text.slice(from, point))
      from = point
    }
  }
  pieces.push(text.slice(from))
  return pieces
}

/**
 * The same events with every text event of two or more characters cut in
 * two at `cut` (modulo its length, never at an end): a stream that carries
 * the same answer in more deltas.
 *
 * @category events
 */
export const splitTextEvents = (events: Iterable<StreamEvent>, cut: number): Array<StreamEvent> => {
  const out: Array<StreamEvent> = []
  for (const event of events) {
    if (event.type === "text" && event.text.length > 1) {
      const at = 1 + (cut % (event.text.length - 1))
      out.push({ ...event, text: event.text.slice(0, at) }, { ...event, text: event.text.slice(at) })
    } else out.push(event)
  }
  return out
}
