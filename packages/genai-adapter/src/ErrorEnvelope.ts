/**
 * The Gemini dialect of errors, in one place:
 *
 * - `toResponse` maps every `GatewayError` to the status, headers and
 *   `{"error":{"code","message","status","details"?}}` body a Google client
 *   expects, following Google's own choices (wire-formats §7.2, §7.4);
 * - `streamError` is the in-band error event for an SSE stream that already
 *   started, `arrayStreamError` the element for the JSON array stream;
 * - `classifyUpstream` turns a Gemini-format upstream error response into the
 *   right `GatewayError`, without leaking anything about the channel's key.
 *
 * Header names are lower case (`retry-after`, `allow`).
 *
 * @since 0.1.0
 */
import { type GatewayError, UpstreamErrors } from "@modelgate/core"
import { Predicate } from "effect"
import { sseEvent } from "./Framing.ts"
import type * as GenerateContent from "./GenerateContent.ts"

/** A complete error answer. @category models */
export interface ErrorResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: GenerateContent.ErrorEnvelope
}

/** The `@type` prefix of `google.rpc` error details. @category details */
export const TYPE_PREFIX = "type.googleapis.com/google.rpc."

/**
 * The `google.rpc.Code` name Google uses for an HTTP status: 400
 * INVALID_ARGUMENT, 401 UNAUTHENTICATED, 403 PERMISSION_DENIED, 404 NOT_FOUND,
 * 405 UNIMPLEMENTED (rpc has no method-not-allowed code; Google answers a
 * wrong method on a path with this one), 409 ABORTED, 412 FAILED_PRECONDITION, 413 INVALID_ARGUMENT,
 * 429 RESOURCE_EXHAUSTED, 499 CANCELLED, 500 INTERNAL, 501 UNIMPLEMENTED, 502
 * and 503 UNAVAILABLE, 504 DEADLINE_EXCEEDED; other 4xx FAILED_PRECONDITION,
 * other 5xx INTERNAL.
 *
 * @category mapping
 */
export const statusName = (status: number): string => {
  switch (status) {
    case 400:
    case 413:
      return "INVALID_ARGUMENT"
    case 401:
      return "UNAUTHENTICATED"
    case 403:
      return "PERMISSION_DENIED"
    case 404:
      return "NOT_FOUND"
    case 405:
    case 501:
      return "UNIMPLEMENTED"
    case 409:
      return "ABORTED"
    case 412:
      return "FAILED_PRECONDITION"
    case 429:
      return "RESOURCE_EXHAUSTED"
    case 499:
      return "CANCELLED"
    case 502:
    case 503:
      return "UNAVAILABLE"
    case 504:
      return "DEADLINE_EXCEEDED"
    default:
      return status >= 500 ? "INTERNAL" : "FAILED_PRECONDITION"
  }
}

/** The `domain` of ErrorInfo details about the gateway's own rules. @category details */
export const DOMAIN = "modelgate"

type Detail = GenerateContent.JsonObject

/** A `google.rpc.ErrorInfo` detail. @category details */
export const errorInfo = (
  reason: string,
  domain: string = DOMAIN,
  metadata?: Readonly<Record<string, string>>
): Detail =>
  metadata === undefined
    ? { "@type": `${TYPE_PREFIX}ErrorInfo`, reason, domain }
    : { "@type": `${TYPE_PREFIX}ErrorInfo`, reason, domain, metadata: { ...metadata } }

/**
 * A `google.rpc.RetryInfo` detail: `retryDelay` is a protobuf Duration string
 * (`"12s"`, `"0.5s"`), what gemini-cli reads to schedule its retry.
 *
 * @category details
 */
export const retryInfo = (seconds: number): Detail => ({
  "@type": `${TYPE_PREFIX}RetryInfo`,
  retryDelay: formatDuration(seconds)
})

/** A protobuf Duration string for a number of seconds (`12s`, `1.5s`). @category details */
export const formatDuration = (seconds: number): string => {
  const value = Math.max(0, seconds)
  return Number.isInteger(value) ? `${value}s` : `${Number(value.toFixed(3))}s`
}

/** A `google.rpc.QuotaFailure` detail with one violation. @category details */
export const quotaFailure = (quotaMetric: string, quotaId: string, description: string): Detail => ({
  "@type": `${TYPE_PREFIX}QuotaFailure`,
  violations: [{ quotaMetric, quotaId, description }]
})

/** A `google.rpc.BadRequest` detail naming one field. @category details */
export const badRequest = (field: string, description: string): Detail => ({
  "@type": `${TYPE_PREFIX}BadRequest`,
  fieldViolations: [{ field, description }]
})

const JSON_HEADERS: Readonly<Record<string, string>> = { "content-type": "application/json" }

const make = (
  status: number,
  message: string,
  options?: {
    readonly status?: string
    readonly details?: ReadonlyArray<Detail>
    readonly headers?: Readonly<Record<string, string>>
  }
): ErrorResponse => {
  const error: {
    code: number
    message: string
    status: string
    details?: ReadonlyArray<Detail>
  } = { code: status, message, status: options?.status ?? statusName(status) }
  if (options?.details !== undefined && options.details.length > 0) error.details = options.details
  return {
    status,
    headers: options?.headers === undefined ? JSON_HEADERS : { ...JSON_HEADERS, ...options.headers },
    body: { error }
  }
}

const retryAfterHeader = (seconds: number): string => String(Math.max(0, Math.ceil(seconds)))

const withRetryHint = (message: string, seconds: number): string =>
  /retry in/i.test(message) ? message : `${message} Please retry in ${formatDuration(seconds)}.`

const API_KEY_METADATA = { service: "generativelanguage.googleapis.com" }

/**
 * The `quotaId` of each spending cap: it names the cap, and never contains
 * `PerDay` or `Daily`, which gemini-cli replaces with its own words ("You have
 * exhausted your daily quota on this model"), so the gateway's message (the
 * balance, the amount needed, which key) would never show.
 */
const spendingCapQuotaId: Readonly<Record<GatewayError.SpendingCapReached["cap"], string>> = {
  daily: "SpendingCapDayBudget",
  monthly: "SpendingCapMonthBudget",
  quota: "SpendingCapLifetime"
}

/**
 * The ErrorInfo reason that makes gemini-cli stop at once and show the
 * message as it is (a terminal quota error: no retries, no words of its
 * own). The gateway's own reason goes in its metadata (`reason`).
 */
const TERMINAL_REASON = "INSUFFICIENT_G1_CREDITS_BALANCE"

const spendingCapDescription: Readonly<Record<GatewayError.SpendingCapReached["cap"], string>> = {
  daily: "The daily budget of this API key is spent; retrying will not help until it is raised or the UTC day ends.",
  monthly:
    "The monthly budget of this API key is spent; retrying will not help until it is raised or the UTC month ends.",
  quota: "The lifetime spending cap of this API key is reached; retrying will not help until it is raised."
}

/**
 * The Gemini answer for a gateway error. The full table (HTTP / status /
 * details):
 *
 * | error | HTTP | status | details |
 * |---|---|---|---|
 * | MissingApiKey | 403 | PERMISSION_DENIED | ErrorInfo `API_KEY_MISSING` (Google answers a missing key with 403) |
 * | InvalidApiKey | 400 | INVALID_ARGUMENT | ErrorInfo `API_KEY_INVALID`, domain `googleapis.com` (Google's exact detail) |
 * | KeyExpired | 400 | INVALID_ARGUMENT | ErrorInfo `API_KEY_EXPIRED`, domain `googleapis.com` |
 * | KeyDisabled | 403 | PERMISSION_DENIED | ErrorInfo `API_KEY_DISABLED` |
 * | InvalidRequest | 400 | INVALID_ARGUMENT | BadRequest naming `param` when known |
 * | UnsupportedFeature | 400 | INVALID_ARGUMENT | BadRequest naming `param` when known |
 * | ModelNotFound | 404 | NOT_FOUND | |
 * | ModelNotAllowed, ModelNotInGroup, ModelUnpriced, Forbidden | 403 | PERMISSION_DENIED | ErrorInfo `MODEL_NOT_ALLOWED`, `MODEL_NOT_IN_GROUP`, `MODEL_UNPRICED`, `FORBIDDEN` |
 * | RequestTooLarge | 400 | INVALID_ARGUMENT | (Google answers an oversized payload with 400, not 413) |
 * | InsufficientBalance, SpendingCapReached | 429 | RESOURCE_EXHAUSTED | ErrorInfo `INSUFFICIENT_G1_CREDITS_BALANCE` (metadata `reason`: `INSUFFICIENT_BALANCE` / `SPENDING_CAP_REACHED`) + QuotaFailure; no RetryInfo |
 * | RateLimited | 429 | RESOURCE_EXHAUSTED | RetryInfo + `retry-after` header + "Please retry in Ns." |
 * | UpstreamUnavailable | 503 if the upstream said 503, else 502 | UNAVAILABLE | |
 * | UpstreamTimeout | 504 | DEADLINE_EXCEEDED | |
 * | UpstreamRejected | the upstream's status | its `code` if it is an rpc status name, else `statusName` | |
 * | UpstreamRateLimited | 429 | RESOURCE_EXHAUSTED | RetryInfo + `retry-after` when the delay is known |
 * | RouteNotFound, ResourceNotFound | 404 | NOT_FOUND | |
 * | MethodNotAllowed | 405 | UNIMPLEMENTED | `allow` header |
 * | InternalError | 500 | INTERNAL | |
 * | ServiceUnavailable | 503 | UNAVAILABLE | |
 * | DatabaseUnavailable | 503 | UNAVAILABLE | RetryInfo + `retry-after` header + "Please retry in Ns." |
 *
 * Balance and spending-cap refusals are terminal: retrying will not help, so
 * they carry no RetryInfo, and their ErrorInfo reason is
 * `INSUFFICIENT_G1_CREDITS_BALANCE` (the gateway's own, `INSUFFICIENT_BALANCE`
 * or `SPENDING_CAP_REACHED`, in its metadata), which gemini-cli treats as
 * terminal while showing the message as it is. Their QuotaFailure `quotaId`
 * never contains `PerDay` or `Daily` (gemini-cli replaces those with "You
 * have exhausted your daily quota"): `BalanceExhausted`, and for a spending
 * cap `SpendingCapDayBudget`, `SpendingCapMonthBudget`, `SpendingCapLifetime`.
 *
 * @example
 * ```ts
 * import { GatewayError, UpstreamErrors } from "@modelgate/core"
import { Predicate } from "effect"
 * import { ErrorEnvelope } from "@modelgate/genai-adapter"
 *
 * ErrorEnvelope.toResponse(new GatewayError.RateLimited({ message: "Too many requests.", retryAfterSeconds: 12, limit: "rpm" }))
 * // { status: 429, headers: { "content-type": "application/json", "retry-after": "12" },
 * //   body: { error: { code: 429, message: "Too many requests. Please retry in 12s.", status: "RESOURCE_EXHAUSTED",
 * //     details: [{ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "12s" }] } } }
 * ```
 *
 * @category mapping
 */
export const toResponse = (error: GatewayError.GatewayError): ErrorResponse => {
  switch (error._tag) {
    case "MissingApiKey":
      return make(403, error.message, { details: [errorInfo("API_KEY_MISSING")] })
    case "InvalidApiKey":
      return make(400, error.message, { details: [errorInfo("API_KEY_INVALID", "googleapis.com", API_KEY_METADATA)] })
    case "KeyExpired":
      return make(400, error.message, { details: [errorInfo("API_KEY_EXPIRED", "googleapis.com", API_KEY_METADATA)] })
    case "KeyDisabled":
      return make(403, error.message, { details: [errorInfo("API_KEY_DISABLED")] })
    case "InvalidRequest":
    case "UnsupportedFeature":
      return make(400, error.message, {
        details: error.param === undefined ? [] : [badRequest(error.param, error.message)]
      })
    case "ModelNotFound":
      return make(404, error.message)
    case "ModelNotAllowed":
      return make(403, error.message, { details: [errorInfo("MODEL_NOT_ALLOWED", DOMAIN, { model: error.model })] })
    case "ModelNotInGroup":
      return make(403, error.message, {
        details: [errorInfo("MODEL_NOT_IN_GROUP", DOMAIN, { model: error.model, group: error.group })]
      })
    case "ModelUnpriced":
      return make(403, error.message, { details: [errorInfo("MODEL_UNPRICED", DOMAIN, { model: error.model })] })
    case "Forbidden":
      return make(403, error.message, { details: [errorInfo("FORBIDDEN")] })
    case "RequestTooLarge":
      return make(400, error.message, {
        details: [errorInfo("REQUEST_TOO_LARGE", DOMAIN, { limitBytes: String(error.limitBytes) })]
      })
    case "InsufficientBalance":
      return make(429, error.message, {
        details: [
          errorInfo(TERMINAL_REASON, DOMAIN, { reason: "INSUFFICIENT_BALANCE" }),
          quotaFailure(
            "modelgate/balance",
            "BalanceExhausted",
            "The balance is exhausted; retrying will not help until it is topped up."
          )
        ]
      })
    case "SpendingCapReached":
      return make(429, error.message, {
        details: [
          errorInfo(TERMINAL_REASON, DOMAIN, { reason: "SPENDING_CAP_REACHED", cap: error.cap }),
          quotaFailure(
            `modelgate/spending_cap_${error.cap}`,
            spendingCapQuotaId[error.cap],
            spendingCapDescription[error.cap]
          )
        ]
      })
    case "RateLimited":
      return make(429, withRetryHint(error.message, error.retryAfterSeconds), {
        details: [retryInfo(error.retryAfterSeconds)],
        headers: { "retry-after": retryAfterHeader(error.retryAfterSeconds) }
      })
    case "UpstreamUnavailable":
      return make(error.status === 503 ? 503 : 502, error.message, { status: "UNAVAILABLE" })
    case "UpstreamTimeout":
      return make(504, error.message)
    case "UpstreamRejected": {
      const status = error.status >= 400 && error.status < 600 ? error.status : 400
      const code = error.code !== undefined && /^[A-Z_]+$/.test(error.code) ? error.code : statusName(status)
      return make(status, error.message, {
        status: code,
        details: error.param === undefined ? [] : [badRequest(error.param, error.message)]
      })
    }
    case "UpstreamRateLimited":
      return error.retryAfterSeconds === undefined
        ? make(429, error.message)
        : make(429, withRetryHint(error.message, error.retryAfterSeconds), {
          details: [retryInfo(error.retryAfterSeconds)],
          headers: { "retry-after": retryAfterHeader(error.retryAfterSeconds) }
        })
    case "RouteNotFound":
    case "ResourceNotFound":
      return make(404, error.message)
    case "MethodNotAllowed":
      return make(405, error.message, { headers: { allow: error.allow.join(", ") } })
    case "InternalError":
      return make(500, error.message)
    case "ServiceUnavailable":
      return make(503, error.message)
    case "DatabaseUnavailable":
      return make(503, withRetryHint(error.message, error.retryAfterSeconds), {
        details: [retryInfo(error.retryAfterSeconds)],
        headers: { "retry-after": retryAfterHeader(error.retryAfterSeconds) }
      })
  }
}

/**
 * The in-band SSE event for an error after the stream started:
 * `data: {"error":{...}}\r\n\r\n`, the same body `toResponse` would send.
 * (gemini-cli cannot parse it and retries the request, which is the best a
 * client can do with a stream cut by an error.)
 *
 * @category streaming
 */
export const streamError = (error: GatewayError.GatewayError): string => sseEvent(toResponse(error).body)

/**
 * The error as an element of the JSON array stream (Google writes in-band
 * errors in that framing as an `{"error":{...}}` element).
 *
 * @category streaming
 */
export const arrayStreamError = (error: GatewayError.GatewayError): GenerateContent.ErrorEnvelope =>
  toResponse(error).body

// ---------------------------------------------------------------------------
// Upstream errors
// ---------------------------------------------------------------------------

/** The errors `classifyUpstream` produces. @category models */
export type UpstreamError = UpstreamErrors.UpstreamError

/** Response headers as the HTTP layer hands them over. @category models */
export type HeaderRecord = UpstreamErrors.Headers

/** What is read of a Google error body. @category upstream */
export interface UpstreamErrorBody {
  readonly message?: string
  readonly status?: string
  readonly details: ReadonlyArray<Readonly<Record<string, unknown>>>
}

/**
 * Reads Google's error object out of a parsed body: `{"error":{...}}`, or the
 * same as the only element of an array (the JSON array stream's form).
 * Returns `undefined` for anything else.
 *
 * @category upstream
 */
export const upstreamErrorOf = (body: unknown): UpstreamErrorBody | undefined => {
  const envelope = Array.isArray(body) && body.length > 0 ? body[0] : body
  if (!Predicate.isObject(envelope) || !Predicate.isObject(envelope.error)) return undefined
  const error = envelope.error
  const out: { message?: string; status?: string; details: ReadonlyArray<Readonly<Record<string, unknown>>> } = {
    details: Array.isArray(error.details) ? error.details.filter(Predicate.isObject) : []
  }
  if (typeof error.message === "string" && error.message.length > 0) out.message = error.message
  if (typeof error.status === "string" && error.status.length > 0) out.status = error.status
  return out
}

/** Seconds of a protobuf Duration string (`"37s"`, `"0.8s"`, `"800ms"`). @category upstream */
export const parseDuration = (text: string): number | undefined => {
  const match = /^\s*(\d+(?:\.\d+)?)(ms|s)\s*$/.exec(text)
  if (match === null) return undefined
  const value = Number(match[1])
  return match[2] === "ms" ? value / 1000 : value
}

const retryDelayOf = (error: UpstreamErrorBody | undefined, headers: HeaderRecord): number | undefined => {
  for (const detail of error?.details ?? []) {
    if (
      typeof detail["@type"] === "string" && detail["@type"].endsWith("RetryInfo") &&
      typeof detail.retryDelay === "string"
    ) {
      const seconds = parseDuration(detail.retryDelay)
      if (seconds !== undefined) return seconds
    }
  }
  const header = UpstreamErrors.retryAfterSeconds(headers)
  if (header !== undefined) return header
  const hint = error?.message === undefined ? null : /retry in (\d+(?:\.\d+)?)(ms|s)/i.exec(error.message)
  if (hint !== null && hint !== undefined) return hint[2] === "ms" ? Number(hint[1]) / 1000 : Number(hint[1])
  return undefined
}

/**
 * `ErrorInfo` reasons Google gives for a key (or the project behind it) it
 * will not serve, whatever the request asks: `API_KEY_INVALID`,
 * `API_KEY_EXPIRED` and the other `API_KEY_*` restrictions, the API not
 * enabled for the key's project, a suspended project, missing credentials.
 */
const CREDENTIAL_REASONS = new Set([
  "SERVICE_DISABLED",
  "CONSUMER_SUSPENDED",
  "CREDENTIALS_MISSING",
  "ACCESS_TOKEN_EXPIRED"
])

/**
 * Whether an error clearly refuses the key itself: HTTP 401 or
 * `UNAUTHENTICATED`, or an `ErrorInfo` reason about the key or its project
 * (`CREDENTIAL_REASONS`). A 403 `PERMISSION_DENIED` without such a reason is
 * about something the request named (another project's file, a tuned model,
 * a cached content), and a message that merely mentions an API key proves
 * nothing: neither counts against the key.
 */
const isCredentialProblem = (status: number, error: UpstreamErrorBody | undefined): boolean => {
  if (status === 401 || error?.status === "UNAUTHENTICATED") return true
  for (const detail of error?.details ?? []) {
    const reason = detail.reason
    if (typeof reason === "string" && (reason.startsWith("API_KEY_") || CREDENTIAL_REASONS.has(reason))) return true
  }
  return false
}

/**
 * Classifies a Google error object with the status it came with. See
 * `classifyUpstream`.
 *
 * @category upstream
 */
export const classifyUpstreamError = (
  status: number,
  error: UpstreamErrorBody | undefined,
  headers: HeaderRecord = {}
): UpstreamError => {
  if (status >= 400 && status < 500 && status !== 429 && isCredentialProblem(status, error)) {
    return UpstreamErrors.credentialsRefused(status)
  }
  if (status === 408 || status === 504) return UpstreamErrors.timedOut(status)
  if (status === 429) return UpstreamErrors.rateLimited(retryDelayOf(error, headers))
  if (status >= 400 && status < 500) {
    return UpstreamErrors.rejected(status, { message: error?.message, code: error?.status })
  }
  return UpstreamErrors.failed(status)
}

/**
 * Turns a Gemini-format upstream error response into the right gateway error:
 *
 * - a refusal of the key itself (401 or `UNAUTHENTICATED`, or a 4xx whose
 *   ErrorInfo reason is `API_KEY_*`, `SERVICE_DISABLED` and the like, such as
 *   Google's 400 "API key not valid" with `API_KEY_INVALID`) ->
 *   `UpstreamUnavailable` with `credentialsRefused`; nothing of the upstream's
 *   message is passed on. A 403 `PERMISSION_DENIED` without such a reason (a
 *   link to another project's file) is the caller's, below;
 * - 408 and 504 -> `UpstreamTimeout`;
 * - 429 -> `UpstreamRateLimited`, with the delay from `RetryInfo.retryDelay`,
 *   else the `retry-after-ms` or `retry-after` header, else a "retry in Ns" hint in the message;
 * - other 4xx -> `UpstreamRejected` with the upstream's message and its rpc
 *   status name as `code`;
 * - 5xx and anything else -> `UpstreamUnavailable` with the status.
 *
 * @example
 * ```ts
 * import { ErrorEnvelope } from "@modelgate/genai-adapter"
 *
 * ErrorEnvelope.classifyUpstream(429, '{"error":{"code":429,"message":"Quota","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"37s"}]}}', {})
 * // UpstreamRateLimited { retryAfterSeconds: 37 }
 * ```
 *
 * @category upstream
 */
export const classifyUpstream = (status: number, bodyText: string, headers: HeaderRecord = {}): UpstreamError =>
  classifyUpstreamError(status, upstreamErrorOf(UpstreamErrors.parseBody(bodyText)), headers)
