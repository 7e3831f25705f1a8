/**
 * The Anthropic dialect of errors, in one place:
 *
 * - `toResponse` maps every `GatewayError` to the status, headers and
 *   `{"type":"error","error":{"type","message"}}` body an Anthropic client
 *   expects (wire-formats §7.3, §7.4);
 * - `streamError` is the `event: error` frame for a stream that already
 *   started;
 * - `classifyUpstream` turns an Anthropic upstream's error response (and
 *   `classifyErrorObject` an in-stream `error` event) into the right
 *   `GatewayError`, never passing on anything about the channel's key.
 *
 * Header names are lower case (`retry-after`, `x-should-retry`, `allow`).
 *
 * @since 0.1.0
 */
import { GatewayError, UpstreamErrors } from "@modelgate/core"
import { Predicate } from "effect"
import type * as Messages from "./Messages.ts"

/** Anthropic's error types. @category models */
export type ErrorType =
  | "invalid_request_error"
  | "authentication_error"
  | "permission_error"
  | "not_found_error"
  | "request_too_large"
  | "rate_limit_error"
  | "billing_error"
  | "api_error"
  | "timeout_error"
  | "overloaded_error"

/** A complete error answer. @category models */
export interface ErrorResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: {
    readonly type: "error"
    readonly error: { readonly type: ErrorType; readonly message: string }
  }
}

/**
 * The error type Anthropic uses for an HTTP status: 400 (and 405, 409, 422 and
 * other 4xx) invalid_request_error, 401 authentication_error, 402
 * billing_error, 403 permission_error, 404 not_found_error, 413
 * request_too_large, 429 rate_limit_error, 504 timeout_error, 529 (and 503)
 * overloaded_error, other 5xx api_error.
 *
 * @category mapping
 */
export const errorTypeOf = (status: number): ErrorType => {
  switch (status) {
    case 401:
      return "authentication_error"
    case 402:
      return "billing_error"
    case 403:
      return "permission_error"
    case 404:
      return "not_found_error"
    case 413:
      return "request_too_large"
    case 429:
      return "rate_limit_error"
    case 504:
      return "timeout_error"
    case 503:
    case 529:
      return "overloaded_error"
    default:
      return status >= 500 ? "api_error" : "invalid_request_error"
  }
}

const JSON_HEADERS: Readonly<Record<string, string>> = { "content-type": "application/json" }

const make = (
  status: number,
  message: string,
  headers?: Readonly<Record<string, string>>,
  type: ErrorType = errorTypeOf(status)
): ErrorResponse => ({
  status,
  headers: headers === undefined ? JSON_HEADERS : { ...JSON_HEADERS, ...headers },
  body: { type: "error", error: { type, message } }
})

const retryAfter = (seconds: number): Readonly<Record<string, string>> => ({
  "retry-after": String(Math.max(0, Math.ceil(seconds)))
})

/**
 * Retrying will not help: the Anthropic SDKs (and Claude Code) stop at once
 * and show the message, instead of retrying silently for minutes. Sent on
 * refusals of the key, of the model, of the balance, and on upstream failures
 * the gateway already failed over from (every channel it could try was tried).
 */
const TERMINAL = { "x-should-retry": "false" }

/**
 * Anthropic's rate-limit headers for a refused call's limiter snapshot:
 * `retry-after`, and the limits and what is left (`limitHeaders`).
 *
 * @category mapping
 */
export const rateLimitHeaders = (
  retryAfterSeconds: number,
  snapshot: GatewayError.RateLimited["snapshot"]
): Readonly<Record<string, string>> =>
  snapshot === undefined
    ? retryAfter(retryAfterSeconds)
    : { ...retryAfter(retryAfterSeconds), ...limitHeaders(snapshot) }

/**
 * Anthropic's headers for a limiter snapshot: the limits and what is left
 * (`anthropic-ratelimit-requests-limit`/`-remaining`,
 * `-tokens-limit`/`-remaining`) and, given `nowMs` (when the call was
 * admitted or refused, epoch milliseconds), when each frees up again
 * (`-requests-reset`, `-tokens-reset`: RFC 3339 dates, as Anthropic writes
 * them; without it they are left out).
 *
 * @category mapping
 */
export const limitHeaders = (
  snapshot: NonNullable<GatewayError.RateLimited["snapshot"]>,
  nowMs?: number
): Readonly<Record<string, string>> => {
  const headers: Record<string, string> = {}
  if (snapshot.limitRequests !== null) headers["anthropic-ratelimit-requests-limit"] = String(snapshot.limitRequests)
  if (snapshot.remainingRequests !== null) {
    headers["anthropic-ratelimit-requests-remaining"] = String(snapshot.remainingRequests)
  }
  if (nowMs !== undefined && snapshot.resetRequestsMs !== null) {
    headers["anthropic-ratelimit-requests-reset"] = resetDate(nowMs, snapshot.resetRequestsMs)
  }
  if (snapshot.limitTokens !== null) headers["anthropic-ratelimit-tokens-limit"] = String(snapshot.limitTokens)
  if (snapshot.remainingTokens !== null) {
    headers["anthropic-ratelimit-tokens-remaining"] = String(snapshot.remainingTokens)
  }
  if (nowMs !== undefined && snapshot.resetTokensMs !== null) {
    headers["anthropic-ratelimit-tokens-reset"] = resetDate(nowMs, snapshot.resetTokensMs)
  }
  return headers
}

/**
 * `nowMs + inMs` as Anthropic writes reset times: RFC 3339 in UTC, whole
 * seconds (rounded up).
 *
 * @category mapping
 */
export const resetDate = (nowMs: number, inMs: number): string =>
  new Date(Math.ceil((nowMs + Math.max(0, inMs)) / 1000) * 1000).toISOString().replace(".000Z", "Z")

/**
 * The Anthropic answer for a gateway error:
 *
 * | error | HTTP | type | headers |
 * |---|---|---|---|
 * | MissingApiKey, InvalidApiKey, KeyExpired | 401 | authentication_error | `x-should-retry: false` |
 * | KeyDisabled, ModelNotAllowed, ModelNotInGroup, ModelUnpriced, Forbidden | 403 | permission_error | `x-should-retry: false` |
 * | InvalidRequest, UnsupportedFeature | 400 | invalid_request_error | |
 * | ModelNotFound, RouteNotFound, ResourceNotFound | 404 | not_found_error | |
 * | RequestTooLarge | 413 | request_too_large | |
 * | InsufficientBalance, SpendingCapReached | 402 | billing_error | `x-should-retry: false` (terminal) |
 * | RateLimited | 429 | rate_limit_error | `retry-after`, `anthropic-ratelimit-*` (the limits and what is left; the dialect's `renderError` adds the reset dates when it knows the time) |
 * | UpstreamRateLimited | 429 | rate_limit_error | `retry-after` when known |
 * | UpstreamUnavailable | 529 if the upstream was overloaded (529/503), else 502 | overloaded_error / api_error | `x-should-retry: false` (failed over already) |
 * | UpstreamTimeout | 504 | timeout_error | `x-should-retry: false` (failed over already) |
 * | UpstreamRejected | the upstream's status | its `code` if it is an Anthropic type, else by status | |
 * | MethodNotAllowed | 405 | invalid_request_error | `allow` |
 * | InternalError | 500 | api_error | |
 * | ServiceUnavailable | 503 | api_error | |
 * | DatabaseUnavailable | 529 | overloaded_error | `retry-after` (the SDKs and Claude Code retry it) |
 *
 * @example
 * ```ts
 * import { GatewayError, UpstreamErrors } from "@modelgate/core"
import { Predicate } from "effect"
 * import { ErrorEnvelope } from "@modelgate/anthropic-adapter"
 *
 * ErrorEnvelope.toResponse(new GatewayError.RateLimited({ message: "Too many requests.", retryAfterSeconds: 12, limit: "rpm" }))
 * // { status: 429, headers: { "content-type": "application/json", "retry-after": "12" },
 * //   body: { type: "error", error: { type: "rate_limit_error", message: "Too many requests." } } }
 * ```
 *
 * @category mapping
 */
export const toResponse = (error: GatewayError.GatewayError): ErrorResponse => {
  switch (error._tag) {
    case "MissingApiKey":
    case "InvalidApiKey":
    case "KeyExpired":
      return make(401, error.message, TERMINAL)
    case "KeyDisabled":
    case "ModelNotAllowed":
    case "ModelNotInGroup":
    case "ModelUnpriced":
    case "Forbidden":
      return make(403, error.message, TERMINAL)
    case "InvalidRequest":
    case "UnsupportedFeature":
      return make(
        400,
        error.param === undefined || error.message.includes(error.param)
          ? error.message
          : `${error.param}: ${error.message}`
      )
    case "ModelNotFound":
    case "RouteNotFound":
    case "ResourceNotFound":
      return make(404, error.message)
    case "RequestTooLarge":
      return make(413, error.message)
    case "InsufficientBalance":
    case "SpendingCapReached":
      return make(402, error.message, TERMINAL)
    case "RateLimited":
      return make(429, error.message, rateLimitHeaders(error.retryAfterSeconds, error.snapshot))
    case "UpstreamRateLimited":
      return make(
        429,
        error.message,
        error.retryAfterSeconds === undefined ? undefined : retryAfter(error.retryAfterSeconds)
      )
    case "UpstreamUnavailable":
      // The gateway already failed over to every key and channel it could: a client retry would do it all again.
      return error.status === 529 || error.status === 503
        ? make(529, error.message, TERMINAL)
        : make(502, error.message, TERMINAL)
    case "UpstreamTimeout":
      return make(504, error.message, TERMINAL)
    case "UpstreamRejected": {
      const status = error.status >= 400 && error.status < 600 ? error.status : 400
      const type = error.code !== undefined && isErrorType(error.code) ? error.code : errorTypeOf(status)
      return make(status, error.message, undefined, type)
    }
    case "MethodNotAllowed":
      return make(405, error.message, { allow: error.allow.join(", ") })
    case "InternalError":
      return make(500, error.message)
    case "ServiceUnavailable":
      return make(503, error.message, undefined, "api_error")
    case "DatabaseUnavailable":
      return make(529, error.message, retryAfter(error.retryAfterSeconds), "overloaded_error")
  }
}

const ERROR_TYPES = new Set<string>([
  "invalid_request_error",
  "authentication_error",
  "permission_error",
  "not_found_error",
  "request_too_large",
  "rate_limit_error",
  "billing_error",
  "api_error",
  "timeout_error",
  "overloaded_error"
])

/** Whether a string is one of Anthropic's error types. @category mapping */
export const isErrorType = (type: string): type is ErrorType => ERROR_TYPES.has(type)

/**
 * The SSE frame for an error after the stream started:
 * `event: error\ndata: {"type":"error","error":{...}}\n\n` (the Anthropic SDKs
 * throw it as an API error).
 *
 * @category streaming
 */
export const streamError = (error: GatewayError.GatewayError): string =>
  `event: error\ndata: ${JSON.stringify(toResponse(error).body)}\n\n`

// ---------------------------------------------------------------------------
// Upstream errors
// ---------------------------------------------------------------------------

/** The errors `classifyUpstream` produces. @category models */
export type UpstreamError = UpstreamErrors.UpstreamError

/** Response headers as the HTTP layer hands them over. @category models */
export type HeaderRecord = UpstreamErrors.Headers

/** What is read of an Anthropic error body: its `error.type` and `error.message`, when present. @category upstream */
export interface UpstreamErrorBody {
  readonly type?: string
  readonly message?: string
}

/**
 * Reads the `error` object of a parsed Anthropic error body
 * (`{"type":"error","error":{"type","message"}}`); `undefined` for anything
 * else.
 *
 * @category upstream
 */
export const upstreamErrorOf = (body: unknown): UpstreamErrorBody | undefined => {
  if (!Predicate.isObject(body) || !Predicate.isObject(body.error)) return undefined
  const error = body.error
  const out: { type?: string; message?: string } = {}
  if (typeof error.type === "string" && error.type.length > 0) out.type = error.type
  if (typeof error.message === "string" && error.message.length > 0) out.message = error.message
  return out
}

/** The HTTP status Anthropic pairs with an error type (for in-stream errors, which have none). @category upstream */
export const statusOfType = (type: string | undefined): number => {
  switch (type) {
    case "invalid_request_error":
      return 400
    case "authentication_error":
      return 401
    case "billing_error":
      return 402
    case "permission_error":
      return 403
    case "not_found_error":
      return 404
    case "request_too_large":
      return 413
    case "rate_limit_error":
      return 429
    case "timeout_error":
      return 504
    case "overloaded_error":
      return 529
    default:
      return 500
  }
}

/**
 * Classifies an Anthropic error object with the status it came with. See
 * `classifyUpstream`.
 *
 * @category upstream
 */
export const classifyUpstreamError = (
  status: number,
  error: UpstreamErrorBody | undefined,
  headers: HeaderRecord = {}
): UpstreamError => {
  const type = error?.type
  // The key itself, or the account it bills (a permission about a resource the request named is the caller's, below).
  if (status === 401 || status === 402 || type === "authentication_error" || type === "billing_error") {
    const refused = status === 402 || type === "billing_error" ? "account (billing)" : "credentials"
    return UpstreamErrors.credentialsRefused(status, refused, "the channel's API key and account")
  }
  if (status === 408 || status === 504 || type === "timeout_error") return UpstreamErrors.timedOut(status)
  if (status === 429 || type === "rate_limit_error") {
    return UpstreamErrors.rateLimited(UpstreamErrors.retryAfterSeconds(headers))
  }
  if (status === 529 || type === "overloaded_error") {
    return new GatewayError.UpstreamUnavailable({
      status: 529,
      message: "The upstream is overloaded (HTTP 529). Retry later."
    })
  }
  if (status >= 400 && status < 500) return UpstreamErrors.rejected(status, { message: error?.message, code: type })
  return UpstreamErrors.failed(status)
}

/**
 * Classifies an in-stream `error` event (`{"type":"error","error":{...}}`),
 * which carries no HTTP status: the status is taken from the error type
 * (`statusOfType`; `overloaded_error` is 529).
 *
 * @category upstream
 */
export const classifyErrorObject = (event: unknown): UpstreamError => {
  const error = upstreamErrorOf(event)
  return classifyUpstreamError(statusOfType(error?.type), error)
}

/**
 * Turns an Anthropic upstream's error response into the right gateway error:
 *
 * - a refusal of the key or its account (401, 402, or an
 *   `authentication_error` or `billing_error` body) -> `UpstreamUnavailable`
 *   about the channel, with `credentialsRefused`; nothing of the upstream's
 *   message is passed on (it may quote the key);
 * - 403 and `permission_error` (a permission on something the request named)
 *   -> `UpstreamRejected`, the caller's, like the other 4xx;
 * - 408, 504 and `timeout_error` -> `UpstreamTimeout`;
 * - 429 -> `UpstreamRateLimited` with the delay from `retry-after-ms` or
 *   `retry-after`;
 * - 529 and `overloaded_error` -> `UpstreamUnavailable` with status 529;
 * - other 4xx -> `UpstreamRejected` with the upstream's message and its error
 *   type as `code`;
 * - 5xx and anything else -> `UpstreamUnavailable` with the status.
 *
 * @example
 * ```ts
 * import { ErrorEnvelope } from "@modelgate/anthropic-adapter"
 *
 * ErrorEnvelope.classifyUpstream(429, '{"type":"error","error":{"type":"rate_limit_error","message":"Slow down"}}', { "retry-after": "7" })
 * // UpstreamRateLimited { retryAfterSeconds: 7 }
 * ```
 *
 * @category upstream
 */
export const classifyUpstream = (status: number, bodyText: string, headers: HeaderRecord = {}): UpstreamError =>
  classifyUpstreamError(status, upstreamErrorOf(UpstreamErrors.parseBody(bodyText)), headers)

/** The error body type of `Messages.ErrorEnvelope`, for callers that write it themselves. @category models */
export type Envelope = Messages.ErrorEnvelope
