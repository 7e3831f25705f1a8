/**
 * Tool-call ids and tool names across the OpenAI boundary, both stateless and
 * reversible.
 *
 * **Thought signatures in tool-call ids.** Gemini 3 returns an opaque
 * `thoughtSignature` with a function call and requires it back on the next
 * turn. OpenAI's chat format has no field for it, but every client sends a
 * tool call's `id` back unchanged (on the assistant message and on the `tool`
 * message that answers it). So a signed call is given to an OpenAI client as
 * `signCallId(id, signature)`: `mgts_` followed by the unpadded base64url of
 * the JSON text `[id, signature]`. `unsignCallId` gives the original id and the
 * signature back. An id without a signature is kept as it is, unless it
 * happens to start with `mgts_`, in which case it is written as `mgts_` +
 * base64url of `[id]`; so the map is a bijection and decoding needs nothing
 * but the id.
 *
 * **Tool names.** OpenAI accepts function names matching
 * `^[a-zA-Z0-9_-]{1,64}$`; Gemini also allows `.` and `:` (up to 128
 * characters), as MCP tools often use. `encodeToolName` keeps a valid name
 * (that does not start with `mgfn_`) as it is and writes any other as `mgfn_`
 * + the name with `-` escaped as `--`, `.` as `-d`, `:` as `-c` and any other
 * character as `-u` + its four hex digits (`-` is the escape because tool
 * names rarely use it); `decodeToolName` inverts it. Without per-request state
 * no map can be reversible for every name Gemini allows (up to 128
 * characters), so a name longer than 64 characters once encoded is not sent
 * to an OpenAI upstream: `Request.ensureEncodable` refuses it with a 400
 * naming the tool.
 *
 * @since 0.1.0
 */
import { Result } from "effect"
import { Base64Url } from "effect/encoding"

// ---------------------------------------------------------------------------
// Signed tool-call ids
// ---------------------------------------------------------------------------

/** The marker of a tool-call id that carries a signature (or escapes an id). @category ids */
export const SIGNED_ID_MARKER = "mgts_"

/**
 * The id an OpenAI client is given for a tool call with an (optional) thought
 * signature; see the module doc.
 *
 * @example
 * ```ts
 * signCallId("call_1")                     // "call_1"
 * signCallId("call_1", "CiQB0e2Kb...")     // "mgts_WyJjYWxsXzEiLCJDaVFCMGUyS2IuLi4iXQ"
 * unsignCallId(signCallId("call_1", "s"))  // { id: "call_1", signature: "s" }
 * ```
 *
 * @category ids
 */
export const signCallId = (id: string, signature?: string): string => {
  if (signature === undefined || signature.length === 0) {
    return id.startsWith(SIGNED_ID_MARKER) ? SIGNED_ID_MARKER + Base64Url.encode(JSON.stringify([id])) : id
  }
  return SIGNED_ID_MARKER + Base64Url.encode(JSON.stringify([id, signature]))
}

/** A tool-call id and the signature it carried. @category ids */
export interface UnsignedCallId {
  readonly id: string
  readonly signature?: string
}

/**
 * The original id (and signature) of an id written by `signCallId`. Any other
 * id, including one that merely looks marked, is returned as it is.
 *
 * @category ids
 */
export const unsignCallId = (wire: string): UnsignedCallId => {
  if (!wire.startsWith(SIGNED_ID_MARKER)) return { id: wire }
  const text = Base64Url.decodeString(wire.slice(SIGNED_ID_MARKER.length))
  if (Result.isFailure(text)) return { id: wire }
  let parsed: unknown
  try {
    parsed = JSON.parse(text.success)
  } catch {
    return { id: wire }
  }
  if (!Array.isArray(parsed) || parsed.length < 1 || parsed.length > 2 || !parsed.every((x) => typeof x === "string")) {
    return { id: wire }
  }
  const [id, signature] = parsed as [string, string?]
  if (signCallId(id, signature) !== wire) return { id: wire }
  return signature === undefined ? { id } : { id, signature }
}

// ---------------------------------------------------------------------------
// Tool names
// ---------------------------------------------------------------------------

/** The marker of an escaped tool name. @category names */
export const NAME_MARKER = "mgfn_"

/** The longest function name OpenAI accepts. @category names */
export const MAX_NAME_LENGTH = 64

const VALID_NAME = /^[A-Za-z0-9_-]{1,64}$/

/**
 * Whether OpenAI accepts `name` as a function name as it is.
 *
 * @category names
 */
export const isValidToolName = (name: string): boolean => VALID_NAME.test(name)

/**
 * A function name OpenAI accepts for `name` (see the module doc); the result
 * may still be too long, which `isValidToolName` tells.
 *
 * @example
 * ```ts
 * encodeToolName("read_file")         // "read_file"
 * encodeToolName("github.get_issue")  // "mgfn_github-dget_issue"
 * decodeToolName("mgfn_github-dget_issue") // "github.get_issue"
 * ```
 *
 * @category names
 */
export const encodeToolName = (name: string): string => {
  if (VALID_NAME.test(name) && !name.startsWith(NAME_MARKER)) return name
  let out = NAME_MARKER
  for (let i = 0; i < name.length; i++) {
    const c = name[i]!
    if (/[A-Za-z0-9_]/.test(c)) out += c
    else if (c === "-") out += "--"
    else if (c === ".") out += "-d"
    else if (c === ":") out += "-c"
    else out += `-u${name.charCodeAt(i).toString(16).padStart(4, "0")}`
  }
  return out
}

/**
 * The original name of a name written by `encodeToolName`; any other name is
 * returned as it is.
 *
 * @category names
 */
export const decodeToolName = (wire: string): string => {
  if (!wire.startsWith(NAME_MARKER)) return wire
  let out = ""
  const body = wire.slice(NAME_MARKER.length)
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!
    if (c !== "-") {
      out += c
      continue
    }
    const next = body[i + 1]
    if (next === "-") out += "-"
    else if (next === "d") out += "."
    else if (next === "c") out += ":"
    else if (next === "u" && /^[0-9a-f]{4}$/.test(body.slice(i + 2, i + 6))) {
      out += String.fromCharCode(Number.parseInt(body.slice(i + 2, i + 6), 16))
      i += 4
    } else return wire
    i++
  }
  return encodeToolName(out) === wire ? out : wire
}
