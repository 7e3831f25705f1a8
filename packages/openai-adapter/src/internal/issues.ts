/**
 * Turning Schema decode failures into `InvalidRequest` errors whose message and
 * `param` name the offending field the way OpenAI does (`messages[2].content[0]`).
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

/** The first issue of a failure as a field path and a message. */
export const firstIssue = (issue: SchemaIssue.Issue): { readonly param: string; readonly message: string } => {
  const first = formatter(issue).issues[0]
  if (first === undefined) return { param: "", message: "Invalid value" }
  return { param: pathToParam(first.path ?? []), message: first.message }
}

/** A human message for one issue: `'model' is required`, `Invalid 'n': Expected an integer`. */
export const describe = (param: string, message: string): string => {
  if (param.length === 0) return message === "Expected object" ? "The request body must be a JSON object" : message
  if (message === "Missing key") return `'${param}' is required`
  return `Invalid '${param}': ${message}`
}

/** Converts a Schema issue of a client request into an `InvalidRequest`. */
export const invalidRequest = (issue: SchemaIssue.Issue): GatewayError.InvalidRequest => {
  const { message, param } = firstIssue(issue)
  return param.length === 0
    ? new GatewayError.InvalidRequest({ message: describe(param, message) })
    : new GatewayError.InvalidRequest({ message: describe(param, message), param })
}
