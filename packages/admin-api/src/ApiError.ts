/**
 * The one error of the management API and its JSON envelope. Every refusal
 * or failure (bad input, store conflicts, missing records, refusals) is an
 * `ApiError` with its HTTP status, written as
 * `{"error":{"message","type","param","code"}}`, the envelope the gateway's
 * OpenAI surface uses, so scripts handle one shape.
 *
 * The contract declares one response schema per status (`responses`), each
 * encoding that envelope, so the server writes an `ApiError` with the status
 * it carries, the OpenAPI document lists every error response, and the typed
 * client decodes any of them back into an `ApiError` (a 429 with its
 * `retry-after`).
 *
 * Browser-safe: depends on `effect` only.
 *
 * @since 0.1.0
 */
import { Effect, Schema, SchemaIssue, SchemaTransformation } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiSchema } from "effect/http-api"

/**
 * A refusal or failure with its status. `param` names the offending field
 * (`models[2]`, `amount`) when there is one; `code` is a stable machine code.
 *
 * @category errors
 */
export class ApiError extends Schema.TaggedError<ApiError>()("ApiError", {
  status: Schema.Int,
  type: Schema.String,
  message: Schema.String,
  param: Schema.NullOr(Schema.String),
  code: Schema.NullOr(Schema.String),
  retryAfterSeconds: Schema.optionalKey(Schema.Int)
}) {}

/** The longest message an error carries; quoted input is cut well before (see core's `Text.clip`). */
const MAX_MESSAGE = 1_000

const capped = (message: string): string =>
  message.length <= MAX_MESSAGE
    ? message
    : `${message.slice(0, MAX_MESSAGE)}… (message cut at ${MAX_MESSAGE} characters)`

const make = (status: number, type: string, code: string, message: string, param: string | null = null) =>
  new ApiError({ status, type, code, message: capped(message), param })

/** 400: the request is malformed; `param` names the field. @category constructors */
export const invalid = (message: string, param: string | null = null, code = "invalid_request") =>
  make(400, "invalid_request_error", code, message, param)

/** 401: not signed in (or the session ended). @category constructors */
export const unauthenticated = (
  message = "Sign in first: send the mg_session cookie from POST /api/auth/login, or 'Authorization: Bearer <API key>'."
) => make(401, "authentication_error", "unauthenticated", message)

/** 401: the API key is unknown, disabled or expired. @category constructors */
export const invalidApiKey = (message: string) => make(401, "authentication_error", "invalid_api_key", message)

/** 403: signed in but not allowed. @category constructors */
export const forbidden = (message: string, code = "forbidden") => make(403, "permission_error", code, message)

/** 404: no such record (or not yours, which reads the same). @category constructors */
export const notFound = (message: string) => make(404, "not_found_error", "not_found", message)

/** 404 for a path the API does not have. @category constructors */
export const noRoute = (method: string, path: string) =>
  make(
    404,
    "not_found_error",
    "unknown_endpoint",
    `No endpoint ${method} ${path}. See the management API reference (docs/api.md) or GET /api/openapi.json.`
  )

/** 405 for a known path with another method. @category constructors */
export const methodNotAllowed = (method: string, path: string, allow: ReadonlyArray<string>) =>
  make(
    405,
    "invalid_request_error",
    "method_not_allowed",
    `${method} is not allowed on ${path}; use ${allow.join(" or ")}.`
  )

/** 409: it would collide with an existing record. @category constructors */
export const conflict = (message: string) => make(409, "conflict_error", "conflict", message)

/** 413: the body is larger than the API reads. @category constructors */
export const tooLarge = (limitBytes: number) =>
  make(
    413,
    "invalid_request_error",
    "request_too_large",
    `The request body is larger than this API accepts (${limitBytes} bytes).`
  )

/** 415: a body that is not JSON. @category constructors */
export const unsupportedMediaType = (contentType: string) =>
  make(
    415,
    "invalid_request_error",
    "unsupported_media_type",
    `Send the request body as JSON with 'content-type: application/json' (got '${contentType.slice(0, 80)}').`
  )

/** 429 with a retry delay. @category constructors */
export const tooManyRequests = (message: string, retryAfterSeconds: number) =>
  new ApiError({ status: 429, type: "rate_limit_error", code: "rate_limited", message, param: null, retryAfterSeconds })

/** 502: an upstream the request needed failed (its words, secrets redacted, in the message). @category constructors */
export const badGateway = (message: string, code = "upstream_error") => make(502, "upstream_error", code, message)

/** 500: our fault; the cause is logged, never shown. @category constructors */
export const internal = (message = "The server failed to complete the request; the cause is in its log.") =>
  make(500, "server_error", "internal_error", message)

// ---------------------------------------------------------------------------
// The envelope and the response schemas
// ---------------------------------------------------------------------------

/**
 * The error body (same shape as the OpenAI envelope the gateway uses).
 * `type` is one of `invalid_request_error`, `authentication_error`,
 * `permission_error`, `not_found_error`, `conflict_error`, `rate_limit_error`,
 * `server_error`.
 *
 * @category envelopes
 */
export const ErrorBody = Schema.Struct({
  error: Schema.Struct({
    message: Schema.String,
    type: Schema.String,
    param: Schema.NullOr(Schema.String),
    code: Schema.NullOr(Schema.String)
  })
})
export type ErrorBody = typeof ErrorBody.Type

/**
 * The JSON envelope of an error.
 *
 * @category encoding
 */
export const toBody = (error: ApiError): ErrorBody => ({
  error: { message: error.message, type: error.type, param: error.param, code: error.code }
})

/** An `ApiError` of one status, as the type side of that status's response schema. */
const withStatus = (status: number) =>
  Schema.declare((u): u is ApiError => u instanceof ApiError && u.status === status, {
    expected: `an ApiError with status ${status}`
  })

/**
 * The response schema of one error status: the envelope on the wire, an
 * `ApiError` of that status in code.
 *
 * @category responses
 */
export const response = (status: number) =>
  ErrorBody.pipe(
    Schema.decodeTo(
      withStatus(status),
      SchemaTransformation.transform({
        decode: (body: ErrorBody) => new ApiError({ status, ...body.error }),
        encode: toBody
      })
    ),
    HttpApiSchema.status(status)
  )

/**
 * The 429's response schema: the envelope, and the delay in `retry-after`.
 *
 * @category responses
 */
export const rateLimitedResponse = withStatus(429).pipe(
  HttpApiSchema.encodeToWithHeaders({
    body: ErrorBody.pipe(HttpApiSchema.status(429)),
    headers: { "retry-after": Schema.optionalKey(Schema.NumberFromString) }
  }, {
    decode: ({ body, headers }) =>
      new ApiError({
        status: 429,
        ...body.error,
        ...(headers["retry-after"] === undefined ? {} : { retryAfterSeconds: Math.ceil(headers["retry-after"]) })
      }),
    encode: (error) => ({
      body: toBody(error),
      headers: error.retryAfterSeconds === undefined ? {} : { "retry-after": error.retryAfterSeconds }
    })
  })
)

/**
 * Every error response any endpoint may give (declared once, by the API's
 * request middleware).
 *
 * @category responses
 */
export const responses = [
  response(400),
  response(401),
  response(403),
  response(404),
  response(409),
  response(413),
  response(415),
  rateLimitedResponse,
  response(500),
  response(502),
  response(503)
] as const

// ---------------------------------------------------------------------------
// Schema failures
// ---------------------------------------------------------------------------

const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

/**
 * Renders a Schema path (`["models", 2]`) as `models[2]`.
 *
 * @category formatting
 */
export const formatPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.reduce<string>(
    (acc, key) => typeof key === "number" ? `${acc}[${key}]` : acc === "" ? String(key) : `${acc}.${String(key)}`,
    ""
  )

/**
 * The field-level problems of a Schema failure: one `{ path, message }` per
 * bad field (`path` is `""` for the value as a whole). Values a message quotes
 * are cut to 80 characters.
 *
 * @category formatting
 */
export const fieldIssues = (
  issue: SchemaIssue.Issue
): ReadonlyArray<{ readonly path: string; readonly message: string }> =>
  formatter(issue).issues.map((item) => ({
    path: formatPath((item.path ?? []).map((p) => (typeof p === "object" && p !== null ? p.key : p) as PropertyKey))
      .slice(0, 200),
    message: clipQuoted(item.message)
  }))

/** Cuts the quoted values inside a Schema message (`got "…"`) to 80 characters each. */
const clipQuoted = (message: string): string =>
  message.replace(/"((?:[^"\\]|\\.){80})(?:[^"\\]|\\.)+"/g, (_, head: string) => `"${head}…"`)

/**
 * Turns a Schema failure of a request part (`body`, `query`) into a 400
 * naming the first bad field, with every problem listed in the message.
 *
 * @category constructors
 */
export const fromSchemaIssue = (issue: SchemaIssue.Issue, part: string): ApiError => {
  const issues = fieldIssues(issue)
  const first = issues[0]
  const param = first === undefined || first.path === "" ? null : first.path
  const message = issues.length === 0
    ? `The request ${part} is not valid.`
    : issues.map((i) => `${i.path === "" ? part : i.path}: ${i.message}`).join("; ")
  return invalid(message, param)
}

// ---------------------------------------------------------------------------
// Responses written outside the contract
// ---------------------------------------------------------------------------

/**
 * The HTTP response of an error (with `retry-after` on a 429), for answers
 * written outside the endpoints (unknown paths, wrong methods, defects).
 *
 * @category encoding
 */
export const toResponse = (error: ApiError): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.text(JSON.stringify(toBody(error)), {
    status: error.status,
    contentType: "application/json",
    headers: {
      "cache-control": "no-store",
      ...(error.retryAfterSeconds === undefined ? {} : { "retry-after": String(error.retryAfterSeconds) })
    }
  })

/**
 * Maps the store's and core's errors to `ApiError`; anything unexpected is
 * logged and becomes a 500.
 *
 * @category mapping
 */
export const fromUnknown = (error: unknown): Effect.Effect<ApiError> => {
  if (error instanceof ApiError) return Effect.succeed(error)
  const tag = typeof error === "object" && error !== null && "_tag" in error ? String(error._tag) : ""
  const message = typeof error === "object" && error !== null && "message" in error
    ? String(error.message)
    : String(error)
  switch (tag) {
    case "InvalidInput": {
      const path = (error as { path?: string }).path ?? null
      return Effect.succeed(invalid(message, path))
    }
    case "Conflict":
      return Effect.succeed(conflict(message))
    case "ResourceNotFound":
      return Effect.succeed(notFound(message))
    case "RedemptionFailed":
      return Effect.succeed(
        invalid(
          message,
          "code",
          (error as { reason?: string }).reason === "already-redeemed" ? "code_already_redeemed" : "code_unknown"
        )
      )
    case "InsufficientBalance":
      return Effect.succeed(invalid(message, "amount", "insufficient_balance"))
    case "Forbidden":
      return Effect.succeed(forbidden(message))
    case "MissingApiKey":
    case "InvalidApiKey":
    case "KeyDisabled":
    case "KeyExpired":
      return Effect.succeed(invalidApiKey(message))
    default:
      return Effect.as(Effect.logError("admin-api request failed", error), internal())
  }
}
