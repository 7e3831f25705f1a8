/**
 * Tool-call ids and thinking signatures across the Anthropic boundary.
 *
 * **Tool-call ids.** Anthropic rejects a `tool_use.id` (and so a
 * `tool_result.tool_use_id`) outside `^[a-zA-Z0-9_-]+$`, while
 * OpenAI-compatible servers emit ids such as `functions.WebSearch:3`.
 * `encodeToolId` maps any id to an Anthropic-safe one and `decodeToolId`
 * inverts it, without any per-request state: an id that already matches the
 * pattern (every `toolu_…` and `call_…` id) is kept as it is; any other id, and
 * any id that happens to start with the marker `mgid_`, becomes `mgid_` + the
 * unpadded base64url of its UTF-8 bytes (base64url's alphabet is exactly
 * Anthropic's). Because every encoded id that starts with the marker is base64,
 * decoding is unambiguous, so the map is a bijection: the same id gets the same
 * encoding in the history of every request, and a decoder (response, stream,
 * Anthropic client request) restores the original from the id alone.
 *
 * **Signed tool-call ids.** Gemini 3 requires a function call's
 * `thoughtSignature` back on the next turn, and an Anthropic client has no
 * field for it but the call's id, which every client sends back unchanged
 * (on the `tool_use` and its `tool_result`). `signToolId` writes a call with a
 * signature as `mgsg_` + base64url of `[id, signature]` (Anthropic-safe), and
 * `unsignToolId` gives both back; a call without one gets `encodeToolId`.
 * Stateless, like the unsigned ids, and never sent to an Anthropic upstream
 * (requests for one carry the plain id).
 *
 * **Thinking signatures.** A canonical `ThinkingPart.signature` is opaque and
 * only valid for the provider that produced it. Signatures that came from
 * Anthropic are kept in canonical form with the prefix `anthropic:`
 * (`redacted_thinking` data with `anthropic-redacted:`); only those are sent
 * back to Anthropic. A signature without the prefix (a Gemini
 * `thoughtSignature`) is never forwarded as an Anthropic signature: the thinking
 * block it belongs to is left out of an Anthropic request instead.
 *
 * @since 0.1.0
 */
import { ToolIds } from "@modelgate/core"
import { Result } from "effect"
import { Base64Url } from "effect/encoding"

/** The marker of an encoded tool-call id (core's `ToolIds.ID_MARKER`). @category ids */
export const ID_MARKER = ToolIds.ID_MARKER

/**
 * Whether Anthropic accepts `id` as a `tool_use.id` as it is.
 *
 * @category ids
 */
export const isSafeToolId: (id: string) => boolean = ToolIds.isSafe

/**
 * An Anthropic-safe id for `id` (see the module doc; core's `ToolIds.encode`,
 * the scheme the Bedrock adapter uses too); the identity on safe ids that do
 * not start with `mgid_`.
 *
 * @example
 * ```ts
 * encodeToolId("toolu_01A")             // "toolu_01A"
 * encodeToolId("functions.WebSearch:3") // "mgid_ZnVuY3Rpb25zLldlYlNlYXJjaDoz"
 * decodeToolId("mgid_ZnVuY3Rpb25zLldlYlNlYXJjaDoz") // "functions.WebSearch:3"
 * ```
 *
 * @category ids
 */
export const encodeToolId: (id: string) => string = ToolIds.encode

/**
 * The original id of an id written by `encodeToolId`. Ids without the marker,
 * and marked ids that are not valid base64url of UTF-8 text, are returned
 * unchanged.
 *
 * @category ids
 */
export const decodeToolId: (id: string) => string = ToolIds.decode

/** The marker of a tool-call id that carries a thought signature. @category ids */
export const SIGNED_ID_MARKER = "mgsg_"

/**
 * The id an Anthropic client is given for a tool call with an (optional)
 * thought signature (see the module doc).
 *
 * @example
 * ```ts
 * signToolId("call_1")             // "call_1"
 * signToolId("call_1", "CiQB0e2K") // "mgsg_WyJjYWxsXzEiLCJDaVFCMGUySyJd"
 * unsignToolId(signToolId("call_1", "CiQB0e2K")) // { id: "call_1", signature: "CiQB0e2K" }
 * ```
 *
 * @category ids
 */
export const signToolId = (id: string, signature?: string): string =>
  signature === undefined || signature.length === 0
    ? (id.startsWith(SIGNED_ID_MARKER) ? ID_MARKER + Base64Url.encode(id) : encodeToolId(id))
    : SIGNED_ID_MARKER + Base64Url.encode(JSON.stringify([id, signature]))

/**
 * The original id, and the signature, of an id written by `signToolId` (or
 * `encodeToolId`). Any other id is returned as it is.
 *
 * @category ids
 */
export const unsignToolId = (wire: string): { readonly id: string; readonly signature?: string } => {
  if (!wire.startsWith(SIGNED_ID_MARKER)) return { id: decodeToolId(wire) }
  const text = Base64Url.decodeString(wire.slice(SIGNED_ID_MARKER.length))
  if (Result.isFailure(text)) return { id: wire }
  let parsed: unknown
  try {
    parsed = JSON.parse(text.success)
  } catch {
    return { id: wire }
  }
  if (!Array.isArray(parsed) || parsed.length !== 2 || !parsed.every((x) => typeof x === "string")) return { id: wire }
  const [id, signature] = parsed as [string, string]
  return signToolId(id, signature) === wire ? { id, signature } : { id: wire }
}

/** The canonical prefix of a signature produced by Anthropic. @category signatures */
export const SIGNATURE_PREFIX = "anthropic:"

/** The canonical prefix of the data of a `redacted_thinking` block. @category signatures */
export const REDACTED_PREFIX = "anthropic-redacted:"

/** An Anthropic `thinking.signature` in canonical form. @category signatures */
export const signatureFromWire = (signature: string): string => SIGNATURE_PREFIX + signature

/** `redacted_thinking.data` in canonical form (a thinking part with empty text carries it as its signature). @category signatures */
export const redactedFromWire = (data: string): string => REDACTED_PREFIX + data

/**
 * What a canonical signature is for Anthropic: a `thinking` signature, the
 * data of a `redacted_thinking` block, or `foreign` (no signature, or one
 * another provider produced, which must not be sent to Anthropic).
 *
 * @category signatures
 */
export type WireSignature =
  | { readonly _tag: "signature"; readonly signature: string }
  | { readonly _tag: "redacted"; readonly data: string }
  | { readonly _tag: "foreign" }

const FOREIGN: WireSignature = { _tag: "foreign" }

/** Classifies a canonical signature (see `WireSignature`). @category signatures */
export const signatureToWire = (signature: string | undefined): WireSignature => {
  if (signature === undefined) return FOREIGN
  if (signature.startsWith(REDACTED_PREFIX)) return { _tag: "redacted", data: signature.slice(REDACTED_PREFIX.length) }
  if (signature.startsWith(SIGNATURE_PREFIX)) {
    return { _tag: "signature", signature: signature.slice(SIGNATURE_PREFIX.length) }
  }
  return FOREIGN
}
