/**
 * The OpenAI dialect of errors, in one place:
 *
 * - `toResponse` maps every `GatewayError` to the status, headers and
 *   `{"error":{"message","type","param","code"}}` body an OpenAI client expects;
 * - `streamError` is the in-band error event for a stream that already started;
 * - `classifyUpstream` turns an OpenAI-format upstream error response into the
 *   right `GatewayError`, without leaking anything about the channel's key.
 *
 * Header names are lower case (`retry-after`, `x-should-retry`, `allow`); HTTP
 * header names are case-insensitive.
 *
 * @since 0.1.0
 */
import { GatewayError, UpstreamErrors } from "@modelgate/core"
import { Predicate, Result, Schema } from "effect"
import * as ChatCompletions from "./chat/ChatCompletions.ts"
import { frame } from "./Framing.ts"

/** A complete error answer. @category models */
export interface ErrorResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: ChatCompletions.ErrorEnvelope
}

/**
 * OpenAI's error `type` for an HTTP status: `invalid_request_error` (400, 404,
 * 405, 413 and other 4xx), `authentication_error` (401), `permission_error`
 * (403), `rate_limit_error` (429), `api_error` (5xx).
 *
 * @category mapping
 */
export const typeOfStatus = (status: number): string => {
  if (status === 401) return "authentication_error"
  if (status === 403) return "permission_error"
  if (status === 429) return "rate_limit_error"
  if (status >= 500) return "api_error"
  return "invalid_request_error"
}

const JSON_HEADERS: Readonly<Record<string, string>> = { "content-type": "application/json" }

const retryAfter = (seconds: number): string => String(Math.max(0, Math.ceil(seconds)))

const make = (
  status: number,
  code: string,
  message: string,
  options?: {
    readonly type?: string
    readonly param?: string | undefined
    readonly headers?: Readonly<Record<string, string>>
  }
): ErrorResponse => ({
  status,
  headers: options?.headers === undefined ? JSON_HEADERS : { ...JSON_HEADERS, ...options.headers },
  body: {
    error: {
      message,
      type: options?.type ?? typeOfStatus(status),
      param: options?.param ?? null,
      code
    }
  }
})

/**
 * The OpenAI answer for a gateway error. The full table (status / code):
 * MissingApiKey 401 `missing_api_key`; InvalidApiKey 401 `invalid_api_key`;
 * KeyDisabled 401 `key_disabled`; KeyExpired 401 `key_expired`; InvalidRequest
 * 400 `invalid_request` (with `param`); UnsupportedFeature 400
 * `unsupported_feature`; ModelNotFound 404 `model_not_found`; ModelNotAllowed 403
 * `model_not_allowed`; ModelNotInGroup 403 `model_not_in_group`; ModelUnpriced
 * 403 `model_unpriced`; RequestTooLarge 413 `request_too_large`;
 * InsufficientBalance and SpendingCapReached 429 `insufficient_quota` (type
 * `insufficient_quota`, `x-should-retry: false`); RateLimited 429
 * `rate_limit_exceeded` (`retry-after`, `x-should-retry: true`); UpstreamUnavailable
 * 502 `upstream_error`; UpstreamTimeout 504 `upstream_timeout`; UpstreamRejected the
 * upstream's status and code (else `upstream_rejected`) and param;
 * UpstreamRateLimited 429 `upstream_rate_limited` (`retry-after` when known);
 * RouteNotFound 404 `not_found`; MethodNotAllowed 405 `method_not_allowed`
 * (`allow`); Forbidden 403 `forbidden`; ResourceNotFound 404 `not_found`;
 * InternalError 500 `internal_error`; ServiceUnavailable 503 `service_unavailable`;
 * DatabaseUnavailable 503 `database_unavailable` (`retry-after`, `x-should-retry: true`).
 *
 * @example
 * ```ts
 * import { ErrorEnvelope } from "@modelgate/openai-adapter"
 * import { GatewayError } from "@modelgate/core"
 *
 * ErrorEnvelope.toResponse(new GatewayError.RateLimited({ message: "Slow down", retryAfterSeconds: 1.2, limit: "rpm" }))
 * // { status: 429, headers: { "content-type": "application/json", "retry-after": "2", "x-should-retry": "true" },
 * //   body: { error: { message: "Slow down", type: "rate_limit_error", param: null, code: "rate_limit_exceeded" } } }
 * ```
 *
 * @category mapping
 */
export const toResponse = (error: GatewayError.GatewayError): ErrorResponse => {
  switch (error._tag) {
    case "MissingApiKey":
      return make(401, "missing_api_key", error.message)
    case "InvalidApiKey":
      return make(401, "invalid_api_key", error.message)
    case "KeyDisabled":
      return make(401, "key_disabled", error.message)
    case "KeyExpired":
      return make(401, "key_expired", error.message)
    case "InvalidRequest":
      return make(400, "invalid_request", error.message, { param: error.param })
    case "UnsupportedFeature":
      return make(400, "unsupported_feature", error.message, { param: error.param })
    case "ModelNotFound":
      return make(404, "model_not_found", error.message)
    case "ModelNotAllowed":
      return make(403, "model_not_allowed", error.message)
    case "ModelNotInGroup":
      return make(403, "model_not_in_group", error.message)
    case "ModelUnpriced":
      return make(403, "model_unpriced", error.message)
    case "RequestTooLarge":
      return make(413, "request_too_large", error.message)
    case "InsufficientBalance":
    case "SpendingCapReached":
      return make(429, "insufficient_quota", error.message, {
        type: "insufficient_quota",
        headers: { "x-should-retry": "false" }
      })
    case "RateLimited":
      return make(429, "rate_limit_exceeded", error.message, {
        headers: { "retry-after": retryAfter(error.retryAfterSeconds), "x-should-retry": "true" }
      })
    // Said after failing over to every key and channel the gateway could try: a retry would do it all again.
    case "UpstreamUnavailable":
      return make(502, "upstream_error", error.message, { headers: NO_RETRY })
    case "UpstreamTimeout":
      return make(504, "upstream_timeout", error.message, { headers: NO_RETRY })
    case "UpstreamRejected": {
      const status = Number.isInteger(error.status) && error.status >= 400 && error.status <= 599 ? error.status : 400
      return make(status, error.code ?? "upstream_rejected", error.message, { param: error.param })
    }
    case "UpstreamRateLimited":
      return make(429, "upstream_rate_limited", error.message, {
        headers: error.retryAfterSeconds === undefined
          ? { "x-should-retry": "true" }
          : { "retry-after": retryAfter(error.retryAfterSeconds), "x-should-retry": "true" }
      })
    case "RouteNotFound":
      return make(404, "not_found", error.message)
    case "MethodNotAllowed":
      return make(405, "method_not_allowed", error.message, { headers: { allow: error.allow.join(", ") } })
    case "Forbidden":
      return make(403, "forbidden", error.message)
    case "ResourceNotFound":
      return make(404, "not_found", error.message)
    case "InternalError":
      return make(500, "internal_error", error.message)
    case "ServiceUnavailable":
      return make(503, "service_unavailable", error.message)
    case "DatabaseUnavailable":
      return make(503, "database_unavailable", error.message, {
        headers: { "retry-after": retryAfter(error.retryAfterSeconds), "x-should-retry": "true" }
      })
  }
}

/**
 * The Responses API's answer for a gateway error: `toResponse`, with two
 * changes so that Codex CLI (whose door this is) prints the gateway's words
 * and stops within seconds.
 *
 * - The balance and spending-cap refusals are 402 (code and type still
 *   `insufficient_quota`) instead of 429: Codex turns a 429 `insufficient_quota`
 *   into its own "Quota exceeded. Check your plan and billing details.", and any
 *   other 429 into "exceeded retry limit", never showing the message; a 402
 *   it prints as `unexpected status 402 Payment Required: <message>`.
 * - The refusals that a retry cannot change (the key's 401s, the 402s, the
 *   403s of the key, model and group) and the upstream failures the gateway
 *   already failed over from (502, 504) carry `retry-after: 0` next to
 *   `x-should-retry: false`. Codex retries every 4xx but 400 five times, and
 *   a 5xx thirty, and honours no `x-should-retry`, only `retry-after` for the
 *   delay: with 0 its retries take about a second instead of about 7 s (4xx)
 *   or 25 s (5xx) of back-off. The `openai` SDKs read `x-should-retry: false`
 *   first and retry none of them.
 *
 * @category mapping
 */
export const toResponsesResponse = (error: GatewayError.GatewayError): ErrorResponse => {
  switch (error._tag) {
    case "InsufficientBalance":
    case "SpendingCapReached":
      return make(402, "insufficient_quota", error.message, { type: "insufficient_quota", headers: FINAL })
    case "MissingApiKey":
    case "InvalidApiKey":
    case "KeyDisabled":
    case "KeyExpired":
    case "ModelNotAllowed":
    case "ModelNotInGroup":
    case "ModelUnpriced":
    case "Forbidden":
    // The gateway already failed over to every key and channel it could: a retry would do it all again.
    case "UpstreamUnavailable":
    case "UpstreamTimeout": {
      const rendered = toResponse(error)
      return { ...rendered, headers: { ...rendered.headers, ...FINAL } }
    }
    default:
      return toResponse(error)
  }
}

/** A failure the gateway already retried on every key and channel it could: the `openai` SDKs retry it no more. */
const NO_RETRY: Readonly<Record<string, string>> = { "x-should-retry": "false" }

/** A refusal a retry cannot change: no retry, and no wait before the retries a client makes all the same. */
const FINAL: Readonly<Record<string, string>> = { "x-should-retry": "false", "retry-after": "0" }

/**
 * The in-band error event for a stream whose 200 headers are already sent:
 * `data: {"error":{...}}\n\n`. Both official SDKs raise it as an `APIError`.
 * Close the stream after it (no `[DONE]`).
 *
 * @category mapping
 */
export const streamError = (error: GatewayError.GatewayError): string => frame(JSON.stringify(toResponse(error).body))

/** Headers as the HTTP layer hands them over (Node's `IncomingHttpHeaders`, a plain record). @category models */
export type HeaderRecord = UpstreamErrors.Headers

const decodeUpstreamEnvelope = Schema.decodeUnknownResult(ChatCompletions.UpstreamErrorEnvelope)

/**
 * The `error` object of an upstream's error body, when it is in OpenAI's
 * format (`code` as text). `undefined` for anything else.
 *
 * @category upstream
 */
export const upstreamErrorOf = (
  json: unknown
):
  | { readonly message: string; readonly code?: string; readonly param?: string; readonly type?: string }
  | undefined =>
{
  const result = decodeUpstreamEnvelope(json)
  if (Result.isFailure(result)) return undefined
  const error = result.success.error
  const out: { message: string; code?: string; param?: string; type?: string } = { message: error.message }
  if (error.code !== undefined && error.code !== null) out.code = String(error.code)
  if (Predicate.isString(error.param)) out.param = error.param
  if (Predicate.isString(error.type)) out.type = error.type
  return out
}

/** The errors `classifyUpstream` produces. @category models */
export type UpstreamError = UpstreamErrors.UpstreamError

/**
 * Classifies an upstream's error object (from a body or an in-band stream
 * event) with the status it came with. See `classifyUpstream`.
 *
 * @category upstream
 */
export const classifyUpstreamError = (
  status: number,
  error: ReturnType<typeof upstreamErrorOf>,
  headers: HeaderRecord = {}
): UpstreamError => {
  if (status === 401) return UpstreamErrors.credentialsRefused(status)
  if (status === 403 && error?.code === "unsupported_country_region_territory") {
    return new GatewayError.UpstreamUnavailable({
      status,
      message: "The upstream does not serve the region this model's channel calls it from (HTTP 403). " +
        "This is a gateway configuration problem, not a problem with your request."
    })
  }
  if (status === 408) return UpstreamErrors.timedOut(status)
  if (status === 429) {
    if (error?.code === "insufficient_quota" || error?.type === "insufficient_quota") {
      return new GatewayError.UpstreamUnavailable({
        status,
        message:
          "The upstream account behind this model's channel has run out of quota. An administrator must top it up or use another channel."
      })
    }
    return UpstreamErrors.rateLimited(UpstreamErrors.retryAfterSeconds(headers))
  }
  if (status >= 400 && status < 500) return UpstreamErrors.rejected(status, error)
  return UpstreamErrors.failed(status)
}

/**
 * Turns an OpenAI-format upstream error response into the right gateway error:
 * 401 -> `UpstreamUnavailable` with `credentialsRefused` (the channel's key;
 * nothing of the upstream's message, which may quote the key, is passed on);
 * 403 -> `UpstreamRejected` (a permission about what the request asked for is
 * the caller's; the engine has a probe check the key), except OpenAI's
 * `unsupported_country_region_territory` (the channel's, `UpstreamUnavailable`); 408 ->
 * `UpstreamTimeout`; 429 -> `UpstreamRateLimited` with the upstream's
 * `retry-after(-ms)` (or `UpstreamUnavailable` when the upstream account is out
 * of quota); other 4xx -> `UpstreamRejected` carrying the upstream's message,
 * `param` and `code`; 5xx and anything else -> `UpstreamUnavailable`.
 *
 * @example
 * ```ts
 * import { ErrorEnvelope } from "@modelgate/openai-adapter"
 *
 * ErrorEnvelope.classifyUpstream(400, '{"error":{"message":"bad temperature","type":"invalid_request_error","param":"temperature","code":null}}', {})
 * // UpstreamRejected { status: 400, message: "bad temperature", param: "temperature" }
 * ```
 *
 * @category upstream
 */
export const classifyUpstream = (status: number, bodyText: string, headers: HeaderRecord): UpstreamError =>
  classifyUpstreamError(status, upstreamErrorOf(UpstreamErrors.parseBody(bodyText)), headers)
