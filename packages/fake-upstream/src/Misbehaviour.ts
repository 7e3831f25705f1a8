/**
 * Upstreams that misbehave in ways real ones do, for tests of a gateway that
 * must not believe them:
 *
 * - a 200 that is not an answer (`x-fake-body`): a proxy's HTML error page,
 *   the dialect's error (as the JSON body, or as the first stream event),
 *   broken JSON, or nothing at all;
 * - an error whose message quotes the request's headers
 *   (`x-fake-echo-headers`), credentials included, as some proxies and
 *   self-hosted servers do.
 */
import type { IncomingHttpHeaders, OutgoingHttpHeaders, ServerResponse } from "node:http"
import {
  anthropicErrorBody,
  anthropicType,
  type Dialect,
  type ErrorResponse,
  failure,
  geminiErrorBody,
  openaiErrorBody
} from "./Errors.ts"
import type { NotAnAnswer } from "./Scenario.ts"

/** What a reverse proxy in front of a model server sends when the server behind it fails. */
export const HTML_PAGE = "<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head>\n" +
  "<body><h1>Bad Gateway</h1><p>The upstream server returned an invalid response.</p></body></html>\n"

/** One stream event in the dialect's framing. */
const event = (dialect: Dialect, data: string, name?: string): string =>
  dialect === "gemini"
    ? `data: ${data}\r\n\r\n`
    : dialect === "anthropic"
    ? `event: ${name ?? "message"}\ndata: ${data}\n\n`
    : `data: ${data}\n\n`

/** The beginning of an answer, cut off in the middle of its JSON. */
const brokenJson = (dialect: Dialect): string =>
  dialect === "gemini"
    ? `{"candidates":[{"content":{"parts":[{"text":"Hel`
    : dialect === "anthropic"
    ? `{"type":"message_start","message":{"id":"msg_fake","content":[`
    : `{"id":"chatcmpl-fake","object":"chat.completion","choices":[{"index":0,"message":{"content":"Hel`

/**
 * Answers 200 with something that is not an answer of the dialect. `streaming`:
 * the request asked for a stream (the headers then say `text/event-stream`,
 * except for an HTML page).
 */
export const sendNotAnAnswer = (
  res: ServerResponse,
  dialect: Dialect,
  kind: NotAnAnswer,
  streaming: boolean,
  model: string,
  requestId: string,
  headers: OutgoingHttpHeaders
): void => {
  if (kind === "html") {
    res.writeHead(200, { ...headers, "content-type": "text/html; charset=utf-8" })
    res.end(HTML_PAGE)
    return
  }
  if (!streaming) {
    const body = kind === "error"
      ? failure(dialect, 500, model, requestId).body
      : kind === "broken"
      ? brokenJson(dialect)
      : "{}"
    res.writeHead(200, { ...headers, "content-type": "application/json" })
    res.end(body)
    return
  }
  const text = kind === "error"
    ? event(dialect, failure(dialect, 500, model, requestId).body, "error")
    : kind === "broken"
    ? event(dialect, brokenJson(dialect), "message_start")
    : dialect === "openai" || dialect === "azure"
    ? "data: [DONE]\n\n"
    : ""
  res.writeHead(200, { ...headers, "content-type": "text/event-stream", "cache-control": "no-cache" })
  res.end(text)
}

/**
 * A refusal with `status` in the dialect's envelope whose message quotes
 * every request header, `authorization`, `x-api-key`, `x-goog-api-key` and
 * custom ones included.
 */
export const echoHeaders = (
  dialect: Dialect,
  status: number,
  headers: IncomingHttpHeaders,
  requestId: string
): ErrorResponse => {
  const quoted = Object.entries(headers)
    .map(([name, value]) => `${name}: ${Array.isArray(value) ? value.join(", ") : value ?? ""}`)
    .join("; ")
  const message = `The request could not be processed. Request headers were: ${quoted}`
  switch (dialect) {
    case "openai":
    case "azure":
      return {
        status,
        body: openaiErrorBody(message, status >= 500 ? "server_error" : "invalid_request_error", null, null)
      }
    case "gemini":
      return { status, body: geminiErrorBody(status, message) }
    case "anthropic":
      return { status, body: anthropicErrorBody(anthropicType(status), message, requestId) }
  }
}
