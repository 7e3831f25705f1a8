/**
 * Tool-call ids for providers that accept only `^[a-zA-Z0-9_-]+$` (Anthropic
 * and Bedrock's Converse), while OpenAI-compatible servers emit ids such as
 * `functions.WebSearch:3`. `encode` maps any id to a safe one and `decode`
 * inverts it, without per-request state: an id that already matches the
 * pattern (and does not start with the marker `mgid_`) is kept as it is; any
 * other becomes `mgid_` + the unpadded base64url of its UTF-8 bytes
 * (base64url's alphabet is the safe one). Every encoded id that starts with
 * the marker is base64, so decoding is unambiguous and the map a bijection:
 * one id is written alike in every request's history and for both providers,
 * and a decoder restores the original from the id alone.
 *
 * @since 0.1.0
 */
import { Result } from "effect"
import { Base64Url } from "effect/encoding"
import * as Utf8 from "../wire/Utf8.ts"

/** The marker of an encoded tool-call id. @category ids */
export const ID_MARKER = "mgid_"

const SAFE_ID = /^[A-Za-z0-9_-]+$/

/**
 * Whether `id` is safe as it is.
 *
 * @category ids
 */
export const isSafe = (id: string): boolean => SAFE_ID.test(id)

/**
 * A safe id for `id`; the identity on safe ids that do not start with `mgid_`.
 *
 * @example
 * ```ts
 * import { ToolIds } from "@modelgate/core"
 *
 * ToolIds.encode("toolu_01A")             // "toolu_01A"
 * ToolIds.encode("functions.WebSearch:3") // "mgid_ZnVuY3Rpb25zLldlYlNlYXJjaDoz"
 * ```
 *
 * @category ids
 */
export const encode = (id: string): string =>
  SAFE_ID.test(id) && !id.startsWith(ID_MARKER) ? id : ID_MARKER + Base64Url.encode(id)

/**
 * The original id of an id written by `encode`. Ids without the marker, and
 * marked ids that are not valid base64url of UTF-8 text, are returned
 * unchanged.
 *
 * @category ids
 */
export const decode = (id: string): string => {
  if (!id.startsWith(ID_MARKER)) return id
  const decoded = Base64Url.decode(id.slice(ID_MARKER.length))
  if (Result.isFailure(decoded)) return id
  // A leading U+FEFF is part of the id, not a byte-order mark to drop.
  const text = Utf8.decodeExact(decoded.success)
  return encode(text) === id ? text : id
}
