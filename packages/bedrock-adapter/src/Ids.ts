/**
 * Tool-call ids and reasoning signatures across the Bedrock boundary.
 *
 * **Tool-call ids.** Converse refuses a `toolUse.toolUseId` outside
 * `^[a-zA-Z0-9_-]+$`, while OpenAI-compatible servers emit ids such as
 * `functions.WebSearch:3`. `encodeToolId` maps any id to a safe one and
 * `decodeToolId` inverts it, without per-request state: an id that already
 * matches the pattern (and does not start with the marker `mgid_`) is kept;
 * any other becomes `mgid_` + the unpadded base64url of its UTF-8 bytes (the
 * scheme of core's `ToolIds`, which the Anthropic adapter uses too, so one id is
 * written alike for both).
 *
 * **Reasoning signatures.** A canonical `ThinkingPart.signature` is only valid
 * for the provider that produced it. Signatures Bedrock returned
 * (`reasoningText.signature`) are kept with the prefix `bedrock:`, the bytes
 * of `redactedContent` (base64 in JSON) with `bedrock-redacted:`; only those
 * go back to Bedrock. Any other signature (Anthropic's own API, Gemini) is
 * foreign: the reasoning it belongs to is left out of a Bedrock request.
 *
 * @since 0.1.0
 */
import { ToolIds } from "@modelgate/core"

/** The marker of an encoded tool-call id (core's `ToolIds.ID_MARKER`). @category ids */
export const ID_MARKER = ToolIds.ID_MARKER

/**
 * A Converse-safe id for `id` (core's `ToolIds.encode`, the scheme the
 * Anthropic adapter uses too); the identity on safe ids that do not start
 * with `mgid_`.
 *
 * @example
 * ```ts
 * encodeToolId("tooluse_01A")           // "tooluse_01A"
 * encodeToolId("functions.WebSearch:3") // "mgid_ZnVuY3Rpb25zLldlYlNlYXJjaDoz"
 * ```
 *
 * @category ids
 */
export const encodeToolId: (id: string) => string = ToolIds.encode

/**
 * The original id of an id written by `encodeToolId`; any other id as it is.
 *
 * @category ids
 */
export const decodeToolId: (id: string) => string = ToolIds.decode

/** The canonical prefix of a reasoning signature Bedrock produced. @category signatures */
export const SIGNATURE_PREFIX = "bedrock:"

/** The canonical prefix of Bedrock's redacted reasoning (base64 bytes). @category signatures */
export const REDACTED_PREFIX = "bedrock-redacted:"

/**
 * What a canonical signature is for Bedrock: a reasoning signature, redacted
 * reasoning's bytes (base64), or foreign (none, or another provider's).
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
