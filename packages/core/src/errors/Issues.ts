/**
 * Client-facing errors that name the offending field. A Schema decode failure
 * becomes an `InvalidRequest` whose `param` is the path of its first issue,
 * written the way every dialect's clients read it (`messages[2].content[0]`,
 * `contents[0].parts[1].inlineData`), and whose message says what is wrong in
 * words (`'model' is required`, `Invalid 'n': Expected an integer`).
 *
 * @example
 * ```ts
 * import { Issues } from "@modelgate/core"
 * import { Result, Schema } from "effect"
 *
 * const decoded = Schema.decodeUnknownResult(Schema.Struct({ model: Schema.String }))({})
 * if (Result.isFailure(decoded)) Issues.invalidRequest(decoded.failure.issue)
 * // InvalidRequest { message: "'model' is required", param: "model" }
 * ```
 *
 * @since 0.1.0
 */
import { Predicate, SchemaIssue } from "effect"
import * as Utf8 from "../wire/Utf8.ts"
import { echo, InvalidRequest, UnsupportedFeature } from "./GatewayError.ts"

const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

/**
 * A Schema issue path as a field name: `["messages", 2, "content"]` ->
 * `messages[2].content` (`""` for the body itself).
 *
 * @category formatting
 */
export const pathToParam = (path: ReadonlyArray<unknown>): string => {
  let out = ""
  for (const segment of path) {
    const key = typeof segment === "object" && segment !== null && "key" in segment ? segment.key : segment
    if (typeof key === "number") out += `[${key}]`
    else out += out.length === 0 ? String(key) : `.${String(key)}`
  }
  return out
}

/**
 * The first issue of a decode failure, as the field it is about and Schema's
 * message (`{ param: "messages[0].role", message: "Missing key" }`).
 *
 * @category formatting
 */
export const firstIssue = (issue: SchemaIssue.Issue): { readonly param: string; readonly message: string } => {
  const first = formatter(issue).issues[0]
  if (first === undefined) return { param: "", message: "Invalid value" }
  return { param: pathToParam(first.path ?? []), message: first.message }
}

/**
 * A message for a client about one issue: `'model' is required`,
 * `Invalid 'n': Expected an integer`, and for a body that is no object at all
 * `The request body must be a JSON object`.
 *
 * @category formatting
 */
export const describe = (param: string, message: string): string => {
  if (param.length === 0) {
    return message.startsWith("Expected object")
      ? "The request body must be a JSON object"
      : message
  }
  if (message === "Missing key") return `'${param}' is required`
  return `Invalid '${param}': ${message}`
}

/**
 * A client request's decode failure as an `InvalidRequest` naming its first
 * offending field (no `param` when the body itself is wrong).
 *
 * @category constructors
 */
export const invalidRequest = (issue: SchemaIssue.Issue): InvalidRequest => {
  const { message, param } = firstIssue(issue)
  return invalid(param, describe(param, message))
}

/**
 * An `InvalidRequest` about the field `param`, or about the body as a whole
 * when `param` is `""` (the error then has no `param`).
 *
 * @example
 * ```ts
 * import { Issues } from "@modelgate/core"
 *
 * Issues.invalid("messages", "'messages' must be an array") // InvalidRequest { message, param: "messages" }
 * Issues.invalid("", "The request body is not valid JSON")  // InvalidRequest { message }
 * ```
 *
 * @category constructors
 */
export const invalid = (param: string, message: string): InvalidRequest =>
  param.length === 0 ? new InvalidRequest({ message }) : new InvalidRequest({ message, param })

/**
 * The 400 for a body whose top-level object sets `key` more than once (see
 * `JsonScan.duplicateKey`), naming the key, in every dialect.
 *
 * @category constructors
 */
export const duplicateKey = (key: string): InvalidRequest =>
  invalid(
    echo(key),
    `The request body sets '${echo(key)}' more than once. Send each top-level field once: ` +
      "parsers disagree on which of the values counts."
  )

/**
 * The 400 for a request body JSON refuses, in the parser's own words
 * (`The request body is not valid JSON: Unexpected token '}', ...`), as every
 * dialect tells its clients; for a body a scan let through (see `JsonScan`)
 * and the parser later refused.
 *
 * @category constructors
 */
export const notJson = (body: Uint8Array | string): InvalidRequest => {
  let detail = "it is not one JSON object"
  try {
    JSON.parse(typeof body === "string" ? body : Utf8.decode(body))
  } catch (error) {
    detail = error instanceof Error ? error.message : String(error)
  }
  return invalid("", `The request body is not valid JSON: ${detail}`)
}

/**
 * Whether `u` is one of the errors a client's request is refused with for
 * what it says (`InvalidRequest`, `UnsupportedFeature`, a 400 in every
 * dialect), told by its `_tag`.
 *
 * @category guards
 */
export const isRequestError = (u: unknown): u is InvalidRequest | UnsupportedFeature =>
  Predicate.isTagged(u, "InvalidRequest") || Predicate.isTagged(u, "UnsupportedFeature")

/**
 * An `UnsupportedFeature` about the field `param`: something the request may
 * say but the target dialect cannot carry.
 *
 * @category constructors
 */
export const unsupported = (param: string, message: string): UnsupportedFeature =>
  new UnsupportedFeature({ message, param })
