/**
 * Turning Schema decode failures into `InvalidRequest` errors whose message and
 * `param` name the offending field (`messages[2].content[0].source`).
 *
 * @since 0.1.0
 */
import { GatewayError } from "@modelgate/core"
import { SchemaIssue } from "effect"

const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

/** `["messages", 2, "content"]` -> `messages[2].content`. */
export const pathToParam = (path: ReadonlyArray<unknown>): string => {
  let out = ""
  for (const segment of path) {
    const key = typeof segment === "object" && segment !== null && "key" in segment ? segment.key : segment
    if (typeof key === "number") out += `[${key}]`
    else out += out.length === 0 ? String(key) : `.${String(key)}`
  }
  return out
}

/** A human message for one issue: `'messages' is required`, `Invalid 'max_tokens': Expected an integer`. */
export const describe = (param: string, message: string): string => {
  if (param.length === 0) return message.startsWith("Expected object") ? "The request body must be a JSON object" : message
  if (message === "Missing key") return `'${param}' is required`
  return `Invalid '${param}': ${message}`
}

/** Converts a Schema issue into an `InvalidRequest` naming the first offending field. */
export const invalidRequest = (issue: SchemaIssue.Issue): GatewayError.InvalidRequest => {
  const first = formatter(issue).issues[0]
  const param = first === undefined ? "" : pathToParam(first.path ?? [])
  const message = describe(param, first?.message ?? "Invalid value")
  return param.length === 0
    ? new GatewayError.InvalidRequest({ message })
    : new GatewayError.InvalidRequest({ message, param })
}

/** An `InvalidRequest` for a field. */
export const invalid = (param: string, message: string): GatewayError.InvalidRequest =>
  new GatewayError.InvalidRequest({ message, param })

/** An `UnsupportedFeature` for a field. */
export const unsupported = (param: string, message: string): GatewayError.UnsupportedFeature =>
  new GatewayError.UnsupportedFeature({ message, param })
