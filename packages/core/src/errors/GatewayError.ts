/**
 * The one error vocabulary of modelgate. Every refusal and failure a client can
 * see is one of these tagged errors; each dialect maps them to its own status,
 * envelope and headers in exactly one place (`openai-adapter/ErrorEnvelope`,
 * `genai-adapter/ErrorEnvelope`).
 *
 * Every error carries a public `message` that says what is wrong and what to
 * do. Internal causes (stack traces, SQL errors, upstream bodies that are not
 * meant for the caller) are never part of these errors: they are logged with the
 * request id where they happen.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

/** No API key was presented. @category errors */
export class MissingApiKey extends Schema.TaggedError<MissingApiKey>()("MissingApiKey", {
  message: Schema.String
}) {}

/** A key was presented but is not known. @category errors */
export class InvalidApiKey extends Schema.TaggedError<InvalidApiKey>()("InvalidApiKey", {
  message: Schema.String
}) {}

/** The key (or its user) was disabled or revoked. @category errors */
export class KeyDisabled extends Schema.TaggedError<KeyDisabled>()("KeyDisabled", {
  message: Schema.String
}) {}

/** The key's expiry has passed. @category errors */
export class KeyExpired extends Schema.TaggedError<KeyExpired>()("KeyExpired", {
  message: Schema.String
}) {}

/** The request body is malformed; `param` names the offending field when known (`messages[0].role`). @category errors */
export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()("InvalidRequest", {
  message: Schema.String,
  param: Schema.optionalKey(Schema.String)
}) {}

/** The request asks for something the target dialect cannot carry (a 400, never a silent drop). @category errors */
export class UnsupportedFeature extends Schema.TaggedError<UnsupportedFeature>()("UnsupportedFeature", {
  message: Schema.String,
  param: Schema.optionalKey(Schema.String)
}) {}

/** No model of that name (after aliases) exists on this gateway. @category errors */
export class ModelNotFound extends Schema.TaggedError<ModelNotFound>()("ModelNotFound", {
  message: Schema.String,
  model: Schema.String
}) {}

/** The model exists but the key's permissions do not include it. @category errors */
export class ModelNotAllowed extends Schema.TaggedError<ModelNotAllowed>()("ModelNotAllowed", {
  message: Schema.String,
  model: Schema.String
}) {}

/** The model exists but no channel of the key's group serves it. @category errors */
export class ModelNotInGroup extends Schema.TaggedError<ModelNotInGroup>()("ModelNotInGroup", {
  message: Schema.String,
  model: Schema.String,
  group: Schema.String
}) {}

/** The model has no price and is not marked free. @category errors */
export class ModelUnpriced extends Schema.TaggedError<ModelUnpriced>()("ModelUnpriced", {
  message: Schema.String,
  model: Schema.String
}) {}

/** The body exceeds the configured limit. @category errors */
export class RequestTooLarge extends Schema.TaggedError<RequestTooLarge>()("RequestTooLarge", {
  message: Schema.String,
  limitBytes: Schema.Number
}) {}

/** The balance cannot cover the worst-case cost of the call. @category errors */
export class InsufficientBalance extends Schema.TaggedError<InsufficientBalance>()("InsufficientBalance", {
  message: Schema.String
}) {}

/** A spending cap of the key (lifetime quota, daily or monthly budget) would be exceeded. @category errors */
export class SpendingCapReached extends Schema.TaggedError<SpendingCapReached>()("SpendingCapReached", {
  message: Schema.String,
  cap: Schema.Literals(["quota", "daily", "monthly"])
}) {}

/**
 * The state of the rate limits at a refusal, for OpenAI's `x-ratelimit-*`
 * headers (the same shape as `RateLimiter.Snapshot`; `null` where no limit
 * applies).
 *
 * @category errors
 */
export const RateLimitSnapshot = Schema.Struct({
  limitRequests: Schema.NullOr(Schema.Number),
  remainingRequests: Schema.NullOr(Schema.Number),
  resetRequestsMs: Schema.NullOr(Schema.Number),
  limitTokens: Schema.NullOr(Schema.Number),
  remainingTokens: Schema.NullOr(Schema.Number),
  resetTokensMs: Schema.NullOr(Schema.Number)
})

/**
 * A rate limit was hit; `retryAfterSeconds` says when a retry may succeed.
 * `subject` is the id of the subject whose limit refused the call
 * (`key:key_1`) and `snapshot` the limits' state at the refusal, when the
 * limiter knows them (not when the limit store is unreachable).
 *
 * @category errors
 */
export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", {
  message: Schema.String,
  retryAfterSeconds: Schema.Number,
  limit: Schema.String,
  subject: Schema.optionalKey(Schema.String),
  snapshot: Schema.optionalKey(RateLimitSnapshot)
}) {}

/**
 * The upstream could not be reached, reset the connection, answered 5xx or
 * with something that is not an answer, or refused the channel's key.
 * `credentialsRefused`: the refusal was clearly about the key itself (HTTP
 * 401, Google's `API_KEY_INVALID`, Anthropic's `authentication_error`, ...):
 * the call moves to another key, and a health probe with the key decides
 * whether it is disabled.
 *
 * @category errors
 */
export class UpstreamUnavailable extends Schema.TaggedError<UpstreamUnavailable>()("UpstreamUnavailable", {
  message: Schema.String,
  status: Schema.optionalKey(Schema.Number),
  credentialsRefused: Schema.optionalKey(Schema.Boolean)
}) {}

/** The upstream did not answer in time (connect, first byte, idle gap or total). @category errors */
export class UpstreamTimeout extends Schema.TaggedError<UpstreamTimeout>()("UpstreamTimeout", {
  message: Schema.String
}) {}

/**
 * The upstream refused the request as the caller's fault (4xx other than auth
 * and rate limits): its status and message are passed on in the caller's dialect.
 *
 * @category errors
 */
export class UpstreamRejected extends Schema.TaggedError<UpstreamRejected>()("UpstreamRejected", {
  message: Schema.String,
  status: Schema.Number,
  code: Schema.optionalKey(Schema.String),
  param: Schema.optionalKey(Schema.String)
}) {}

/** The upstream rate-limited us; the call may be retried later. @category errors */
export class UpstreamRateLimited extends Schema.TaggedError<UpstreamRateLimited>()("UpstreamRateLimited", {
  message: Schema.String,
  retryAfterSeconds: Schema.optionalKey(Schema.Number)
}) {}

/** No such route; the message names the likely fix (a doubled or missing `/v1`, a wrong API version). @category errors */
export class RouteNotFound extends Schema.TaggedError<RouteNotFound>()("RouteNotFound", {
  message: Schema.String
}) {}

/** The route exists but not for this method. @category errors */
export class MethodNotAllowed extends Schema.TaggedError<MethodNotAllowed>()("MethodNotAllowed", {
  message: Schema.String,
  allow: Schema.Array(Schema.String)
}) {}

/** The caller may not use this endpoint (for example an admin endpoint with a user's key). @category errors */
export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", {
  message: Schema.String
}) {}

/** A resource of the management API does not exist (or belongs to someone else). @category errors */
export class ResourceNotFound extends Schema.TaggedError<ResourceNotFound>()("ResourceNotFound", {
  message: Schema.String
}) {}

/** The gateway itself failed; the message is generic and the cause is in the log under the request id. @category errors */
export class InternalError extends Schema.TaggedError<InternalError>()("InternalError", {
  message: Schema.String
}) {}

/** The gateway is shutting down or not ready. @category errors */
export class ServiceUnavailable extends Schema.TaggedError<ServiceUnavailable>()("ServiceUnavailable", {
  message: Schema.String
}) {}

/**
 * The gateway's database cannot be reached right now, and this call needs it
 * (a balance hold beyond what this node has reserved, an API key not yet in
 * memory). Nothing was charged and the upstream was not called; a retry after
 * `retryAfterSeconds` may succeed. Each dialect answers 503 (Anthropic: 529
 * `overloaded_error`) with `retry-after`.
 *
 * @category errors
 */
export class DatabaseUnavailable extends Schema.TaggedError<DatabaseUnavailable>()("DatabaseUnavailable", {
  message: Schema.String,
  retryAfterSeconds: Schema.Number
}) {}

/**
 * Every error a client can be shown.
 *
 * @category models
 */
export type GatewayError =
  | MissingApiKey
  | InvalidApiKey
  | KeyDisabled
  | KeyExpired
  | InvalidRequest
  | UnsupportedFeature
  | ModelNotFound
  | ModelNotAllowed
  | ModelNotInGroup
  | ModelUnpriced
  | RequestTooLarge
  | InsufficientBalance
  | SpendingCapReached
  | RateLimited
  | UpstreamUnavailable
  | UpstreamTimeout
  | UpstreamRejected
  | UpstreamRateLimited
  | RouteNotFound
  | MethodNotAllowed
  | Forbidden
  | ResourceNotFound
  | InternalError
  | ServiceUnavailable
  | DatabaseUnavailable

/** The schema of every client-visible error, for (de)serialising them across processes. @category schemas */
export const GatewayError = Schema.Union([
  MissingApiKey,
  InvalidApiKey,
  KeyDisabled,
  KeyExpired,
  InvalidRequest,
  UnsupportedFeature,
  ModelNotFound,
  ModelNotAllowed,
  ModelNotInGroup,
  ModelUnpriced,
  RequestTooLarge,
  InsufficientBalance,
  SpendingCapReached,
  RateLimited,
  UpstreamUnavailable,
  UpstreamTimeout,
  UpstreamRejected,
  UpstreamRateLimited,
  RouteNotFound,
  MethodNotAllowed,
  Forbidden,
  ResourceNotFound,
  InternalError,
  ServiceUnavailable,
  DatabaseUnavailable
])

const tags = new Set<string>(GatewayError.members.map((member) => member.identifier))

/**
 * The same error with `f` applied to its message and, when it has one, to its
 * `param` (every other field kept): for redacting or shortening what an error
 * would show. An error `f` leaves unchanged is returned as it is.
 *
 * @category combinators
 */
export const mapText = <E extends GatewayError>(
  error: E,
  f: (text: string, field: "message" | "param") => string
): E => {
  const message = f(error.message, "message")
  const before = "param" in error && typeof error.param === "string" ? error.param : undefined
  const param = before === undefined ? undefined : f(before, "param")
  if (message === error.message && param === before) return error
  const { _tag, ...fields } = error as unknown as Record<string, unknown>
  const Error = error.constructor as new(fields: Record<string, unknown>) => E
  return new Error({ ...fields, message, ...(param === undefined ? {} : { param }) })
}

/** How much of a value a message quotes back to its sender. @category echo */
export const ECHO_LIMIT = 200

/**
 * A value from the request as a message quotes it back: whole when short,
 * else its first `ECHO_LIMIT` characters and an ellipsis (a 200 KB model name
 * is never echoed).
 *
 * @category echo
 */
export const echo = (value: string): string => value.length <= ECHO_LIMIT ? value : `${value.slice(0, ECHO_LIMIT)}…`

/** The longest message an error carries to a client; the rest is cut. @category echo */
export const MESSAGE_LIMIT = 2_000

/** A quoted run of text ('...', "..." with escapes, or `...`) longer than `ECHO_LIMIT`. */
const LONG_QUOTE = new RegExp(
  `'[^']{${ECHO_LIMIT + 1},}'|"(?:[^"\\\\]|\\\\.){${ECHO_LIMIT + 1},}"|\`[^\`]{${ECHO_LIMIT + 1},}\``,
  "g"
)

const boundText = (text: string): string => {
  if (text.length <= ECHO_LIMIT) return text
  const quoted = text.replace(LONG_QUOTE, (run) => `${run.slice(0, ECHO_LIMIT + 1)}…${run.at(-1)}`)
  return quoted.length <= MESSAGE_LIMIT ? quoted : `${quoted.slice(0, MESSAGE_LIMIT)}…`
}

/**
 * The error as a client may be shown it: every quoted value in its message
 * cut at `ECHO_LIMIT` characters, the whole message at `MESSAGE_LIMIT`, and
 * `param` at `ECHO_LIMIT`, so no error echoes a huge field of the request (or
 * of an upstream's answer) back. The gateway applies it to every error it
 * renders; messages that quote input also cut it themselves (`echo`).
 *
 * @category echo
 */
export const bounded = <E extends GatewayError>(error: E): E =>
  error.message.length <= ECHO_LIMIT &&
    !("param" in error && typeof error.param === "string" && error.param.length > ECHO_LIMIT)
    ? error
    : mapText(error, (text, field) => field === "param" ? echo(text) : boundText(text))

/**
 * A channel's name as the gateway's messages quote it (`The upstream 'NAME'
 * answered ...`, `the channel 'NAME'`): a name of at most 64 characters, its
 * closing quote followed by a space, punctuation or the end.
 */
const CHANNEL_NAME = /\b(the (?:upstream|channel)) '.{1,64}?'(?=[\s.,;:!?)]|$)/gi

/**
 * The error as its caller sees it: `bounded`, and without the operator's
 * channel names (`The upstream 'evil-gem' answered ...` becomes `The
 * upstream answered ...`). Callers never learn how the operator named its
 * channels; the usage record's attempts (admins') keep the names.
 *
 * @category echo
 */
export const forCaller = <E extends GatewayError>(error: E): E => {
  const bound = bounded(error)
  CHANNEL_NAME.lastIndex = 0
  if (!CHANNEL_NAME.test(bound.message)) return bound
  return mapText(bound, (text, field) => field === "message" ? text.replace(CHANNEL_NAME, "$1") : text)
}

/** Whether a value is one of the client-visible errors. @category guards */
export const isGatewayError = (u: unknown): u is GatewayError =>
  typeof u === "object" && u !== null && "_tag" in u && tags.has((u as { _tag: string })._tag)
