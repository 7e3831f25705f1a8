/**
 * Bedrock's errors, read: an error answer names its type in the
 * `x-amzn-ErrorType` header (`ThrottlingException`, possibly followed by
 * `:` and a namespace) and, for some front-door errors, in the body's
 * `__type` (`com.amazon.coral.service#UnrecognizedClientException`); its
 * words are the body's `message` (`Message` for some). A ConverseStream that
 * already started reports failures as `exception` messages whose
 * `:exception-type` is the camel-case member name (`throttlingException`).
 *
 * `classifyUpstream` and `classifyException` turn both into the gateway's
 * errors (see `classifyType`).
 *
 * @since 0.1.0
 */
import { GatewayError, UpstreamErrors } from "@modelgate/core"
import { Predicate } from "effect"

/** The errors this module produces. @category models */
export type UpstreamError = UpstreamErrors.UpstreamError

/**
 * AWS's refusals of the request's credentials (signature, key, token,
 * permissions): the channel's configuration, never the caller's request.
 *
 * @category types
 */
export const CREDENTIAL_ERRORS: ReadonlySet<string> = new Set([
  "accessdeniedexception",
  "unrecognizedclientexception",
  "invalidsignatureexception",
  "expiredtokenexception",
  "missingauthenticationtokenexception",
  "incompletesignatureexception",
  "invalidclienttokenid",
  "signaturedoesnotmatch",
  "notauthorized"
])

/** The error type of an answer: the header's, else the body's `__type` or `code`, without namespace. @category reading */
export const errorTypeOf = (headers: UpstreamErrors.Headers, body: unknown): string | undefined => {
  const header = UpstreamErrors.header(headers, "x-amzn-errortype")
  let type = header
  if ((type === undefined || type.length === 0) && Predicate.isObject(body)) {
    const candidate = body.__type ?? body.code ?? body.Code
    if (typeof candidate === "string") type = candidate
  }
  if (type === undefined || type.length === 0) return undefined
  // `ValidationException:http://internal.amazon.com/coral/...` and `com.amazon.coral.service#UnrecognizedClientException`.
  const colon = type.indexOf(":")
  if (colon >= 0) type = type.slice(0, colon)
  const hash = type.lastIndexOf("#")
  if (hash >= 0) type = type.slice(hash + 1)
  return type.trim()
}

/** The error's own words (`message`, or `Message`). @category reading */
export const messageOf = (body: unknown): string | undefined => {
  if (!Predicate.isObject(body)) return undefined
  const message = body.message ?? body.Message
  return typeof message === "string" && message.length > 0 ? message : undefined
}

const failure = (status: number, message: string): GatewayError.UpstreamUnavailable =>
  new GatewayError.UpstreamUnavailable({ status, message })

/**
 * An error of type `type` (any case, without namespace) and HTTP `status`
 * as a gateway error:
 *
 * - credentials refused (`CREDENTIAL_ERRORS`; a 401 or 403 of no known
 *   type) -> `UpstreamUnavailable` with `credentialsRefused`, nothing of
 *   AWS's words passed on (they may quote the key id);
 * - `ThrottlingException` and `ServiceQuotaExceededException` (and any 429
 *   but `ModelNotReadyException`) -> `UpstreamRateLimited`;
 * - `ModelTimeoutException`, 408 and 504 -> `UpstreamTimeout`;
 * - `ModelNotReadyException`, `ModelErrorException`,
 *   `ModelStreamErrorException`, `InternalServerException`,
 *   `ServiceUnavailableException` and 5xx -> `UpstreamUnavailable` (the
 *   call may fail over);
 * - `ValidationException`, `ResourceNotFoundException` and other 4xx ->
 *   `UpstreamRejected` with AWS's message and the type as `code`.
 *
 * @category classify
 */
export const classifyType = (
  status: number,
  type: string | undefined,
  message: string | undefined,
  headers: UpstreamErrors.Headers = {}
): UpstreamError => {
  const name = type?.toLowerCase()
  if (name !== undefined && CREDENTIAL_ERRORS.has(name)) {
    return UpstreamErrors.credentialsRefused(
      status >= 400 && status < 500 ? status : 403,
      "AWS credentials",
      "the channel's access key, secret and session token (or its Bedrock API key), its region, and the model access granted to them"
    )
  }
  switch (name) {
    case "throttlingexception":
    case "servicequotaexceededexception":
      return UpstreamErrors.rateLimited(UpstreamErrors.retryAfterSeconds(headers))
    case "modeltimeoutexception":
      return UpstreamErrors.timedOut(status === 0 ? 408 : status)
    case "modelnotreadyexception":
      return failure(
        503,
        "The upstream model is not ready to serve yet (Bedrock ModelNotReadyException). Retry later."
      )
    case "modelerrorexception":
    case "modelstreamerrorexception":
      return failure(status >= 400 ? status : 424, `The upstream model failed (Bedrock ${type}). Retry later.`)
    case "internalserverexception":
    case "serviceunavailableexception":
      return failure(status >= 500 ? status : 503, `The upstream failed (Bedrock ${type}). Retry later.`)
    case "validationexception":
    case "resourcenotfoundexception":
      return UpstreamErrors.rejected(status >= 400 && status < 500 ? status : 400, { message, code: type })
  }
  if (status === 401 || status === 403) {
    return UpstreamErrors.credentialsRefused(
      status,
      "AWS credentials",
      "the channel's access key, secret and session token (or its Bedrock API key), its region, and the model access granted to them"
    )
  }
  if (status === 408 || status === 504) return UpstreamErrors.timedOut(status)
  if (status === 429) return UpstreamErrors.rateLimited(UpstreamErrors.retryAfterSeconds(headers))
  if (status >= 400 && status < 500) {
    return UpstreamErrors.rejected(status, type === undefined ? { message } : { message, code: type })
  }
  return UpstreamErrors.failed(status)
}

/**
 * A Bedrock error answer (status, body text, headers) as a gateway error
 * (see `classifyType`).
 *
 * @example
 * ```ts
 * import { ErrorEnvelope } from "@modelgate/bedrock-adapter"
 *
 * ErrorEnvelope.classifyUpstream(400, '{"message":"maxTokens must be positive"}', { "x-amzn-errortype": "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/" })
 * // UpstreamRejected { status: 400, message: "maxTokens must be positive", code: "ValidationException" }
 * ErrorEnvelope.classifyUpstream(403, '{"message":"The security token included in the request is invalid."}', { "x-amzn-errortype": "UnrecognizedClientException" })
 * // UpstreamUnavailable { credentialsRefused: true, status: 403, ... }
 * ```
 *
 * @category classify
 */
export const classifyUpstream = (
  status: number,
  bodyText: string,
  headers: UpstreamErrors.Headers = {}
): UpstreamError => {
  const body = UpstreamErrors.parseBody(bodyText)
  return classifyType(status, errorTypeOf(headers, body), messageOf(body), headers)
}

/** The HTTP status of each in-stream exception, as the ConverseStream reference gives them. @category classify */
export const EXCEPTION_STATUS: Readonly<Record<string, number>> = {
  internalserverexception: 500,
  modelstreamerrorexception: 424,
  validationexception: 400,
  throttlingexception: 429,
  serviceunavailableexception: 503
}

/**
 * An in-stream `exception` message (its `:exception-type` and parsed
 * payload) as a gateway error.
 *
 * @category classify
 */
export const classifyException = (exceptionType: string, payload: unknown): UpstreamError => {
  const status = EXCEPTION_STATUS[exceptionType.toLowerCase()] ?? 500
  return classifyType(status, exceptionType, messageOf(payload))
}
