/**
 * How deeply a request body nests JSON, checked on its text before anything
 * parses, walks or re-serialises it: translating a request (and re-encoding
 * one for a channel's parameters or `stream_options`) recurses once per
 * level, so a body nested thousands of levels deep (a tool's parameter schema
 * of 5,000 levels, say) would overflow the stack and fail as a 500. The
 * gateway refuses it first, with a 400 naming the problem.
 *
 * The scan is one pass over the text or its UTF-8 bytes, a few times cheaper
 * than `JSON.parse`: strings are skipped with `indexOf`, only brackets are
 * counted, and it stops at the first level too deep. It does not validate the
 * JSON (the parser that follows does). A chat body's inspection
 * (`JsonScan.topLevel`) counts the same levels in the scan it makes anyway,
 * so a chat call pays for one pass, not two.
 *
 * @since 0.1.0
 */
import { InvalidRequest } from "../errors/GatewayError.ts"

/**
 * The deepest nesting of objects and arrays a request body may have: far
 * more than any real request needs (a tool's JSON Schema nests two levels per
 * property level), far less than what could exhaust the stack.
 *
 * @category constants
 */
export const MAX_DEPTH = 128

/**
 * The refusal of a body nested more than `MAX_DEPTH` levels: a 400 naming the
 * problem, in every dialect.
 *
 * @category errors
 */
export const tooDeep = (): InvalidRequest =>
  new InvalidRequest({
    message: `The request body nests objects and arrays more than ${MAX_DEPTH} levels deep. ` +
      "Send a flatter request (a tool's parameter schema, or a function's arguments or results, nested less deeply)."
  })

/**
 * Whether `body` (JSON text, or its UTF-8 bytes) nests objects and arrays
 * more than `max` levels deep (brackets inside strings do not count).
 *
 * @example
 * ```ts
 * import { JsonDepth } from "@modelgate/core"
 *
 * JsonDepth.exceeds('{"a":[{"b":"[[[["}]}', 3) // false: three levels, the brackets in the string do not count
 * JsonDepth.exceeds("[".repeat(5000) + "]".repeat(5000), 128) // true
 * ```
 *
 * @category checking
 */
export const exceeds = (body: string | Uint8Array, max: number = MAX_DEPTH): boolean =>
  typeof body === "string" ? textExceeds(body, max) : bytesExceeds(body, max)

const textExceeds = (text: string, max: number): boolean => {
  let depth = 0
  const length = text.length
  for (let i = 0; i < length; i++) {
    const code = text.charCodeAt(i)
    if (code === 34 /* " */) {
      // A string: its end is the next quote not escaped by an odd number of backslashes.
      let end = text.indexOf("\"", i + 1)
      while (end !== -1) {
        let slashes = 0
        while (text.charCodeAt(end - 1 - slashes) === 92 /* \ */) slashes++
        if ((slashes & 1) === 0) break
        end = text.indexOf("\"", end + 1)
      }
      if (end === -1) return false
      i = end
    } else if (code === 91 /* [ */ || code === 123 /* { */) {
      if (++depth > max) return true
    } else if (code === 93 /* ] */ || code === 125 /* } */) depth--
  }
  return false
}

const bytesExceeds = (bytes: Uint8Array, max: number): boolean => {
  let depth = 0
  const length = bytes.length
  for (let i = 0; i < length; i++) {
    const code = bytes[i]!
    if (code === 34 /* " */) {
      let end = bytes.indexOf(34, i + 1)
      while (end !== -1) {
        let slashes = 0
        while (bytes[end - 1 - slashes] === 92 /* \ */) slashes++
        if ((slashes & 1) === 0) break
        end = bytes.indexOf(34, end + 1)
      }
      if (end === -1) return false
      i = end
    } else if (code === 91 /* [ */ || code === 123 /* { */) {
      if (++depth > max) return true
    } else if (code === 93 /* ] */ || code === 125 /* } */) depth--
  }
  return false
}
