/**
 * Failover for upstream calls, and what a failed attempt means (docs/routing.md).
 *
 * The classification is shared by every call that reaches an upstream: which
 * errors move the call to another key or channel (`retryable`), whether a
 * failure is the key's own or the server's (`failureKind`), what it means for
 * the key's circuit breaker (`breakerOutcome`), and whether the upstream
 * clearly refused the key itself (`isCredentialRefusal`: the key is kept out
 * of calls and a health probe with it decides whether it is disabled; a 403
 * about what the request asked for is the caller's, and only has a probe
 * check the key, so no request can take a channel's keys down).
 *
 * `run` is the one attempt loop every call kind goes through (chat, streamed
 * or not, embeddings, token counts): candidates in the order `Selection`
 * plans them, each attempt admitted by its key's breaker (`Health`) and its
 * outcome fed back to it, at most `routing.max_attempts` attempts, failing
 * over on retryable errors and, to other channels only, on a 403 about what
 * was asked (a model the channel's organisation may not use), and every
 * attempt recorded for the usage record. An attempt whose answer outlives it (a stream, relayed after the
 * loop returned) keeps its breaker ticket and ends it when the stream ends.
 * `exchange` sends one request and reads its answer within the channel's
 * timeouts, having a refused key checked (`Health.suspect`). Every failure is
 * redacted of the channel's secrets before it is logged, recorded or passed
 * on (`Redaction`).
 *
 * @since 0.1.0
 */
import { type Dialect, Domain, GatewayError, Issues, type UsageLog } from "@modelgate/core"
import { Clock, Effect, Tracer } from "effect"
import { Settings } from "../config/Settings.ts"
import type { Outcome } from "../routing/Breakers.ts"
import * as Health from "../routing/Health.ts"
import * as Selection from "../routing/Selection.ts"
import * as CallSpans from "../telemetry/CallSpans.ts"
import * as Redaction from "../telemetry/Redaction.ts"
import type * as Telemetry from "../telemetry/Telemetry.ts"
import * as Upstream from "../wire/Upstream.ts"

/**
 * Whether a classified upstream error clearly refuses the key itself (HTTP
 * 401, Google's `API_KEY_INVALID`, Anthropic's `authentication_error`, ...:
 * the dialect says so with `credentialsRefused`).
 *
 * @category classification
 */
export const isCredentialRefusal = (error: GatewayError.GatewayError): boolean =>
  error._tag === "UpstreamUnavailable" && error.credentialsRefused === true

/**
 * Whether a classified upstream error is a 403 the caller gets (a permission
 * about what the request asked for, such as a link to another project's
 * file): it may still be the key's (a revoked or leaked key is refused with
 * 403 too), so a probe checks the key, without taking it out of calls.
 *
 * @category classification
 */
export const isPermissionRefusal = (error: GatewayError.GatewayError): boolean =>
  error._tag === "UpstreamRejected" && error.status === 403

/** Whether an attempt's failure moves the call to another key or channel. @category classification */
export const retryable = (error: GatewayError.GatewayError): boolean =>
  error._tag === "UpstreamUnavailable" || error._tag === "UpstreamTimeout" || error._tag === "UpstreamRateLimited"

/** A failure that is the key's own (another key of the channel may work) or the server's. @category classification */
export const failureKind = (error: GatewayError.GatewayError): Selection.Failure =>
  isCredentialRefusal(error) || error._tag === "UpstreamRateLimited" ||
    (error._tag === "UpstreamUnavailable" && error.status === 429)
    ? "key"
    : "server"

/** What a failed attempt means for its key's breaker. @category classification */
export const breakerOutcome = (error: GatewayError.GatewayError): Outcome =>
  retryable(error) ? "failure" : error._tag === "UpstreamRejected" ? "success" : "neutral"

/**
 * One attempt as the usage record lists it, filled in as the attempt goes.
 * While the attempt runs, `errorMessage` holds what the upstream itself said
 * when it answered with an error (`refused`, the channel's secrets redacted);
 * `run` then puts the gateway's words in front of it (`quoting`).
 *
 * @category models
 */
export type AttemptRecord = { -readonly [K in keyof UsageLog.Attempt]: UsageLog.Attempt[K] }

/**
 * An attempt's message for the request log's attempts (which only admins
 * see): the gateway's words, then the upstream's own (`said`) unless they
 * already quote it, as a failed channel Test words it. A 5xx is "The upstream
 * failed (HTTP 500). Retry later." to its caller; the operator also reads why.
 *
 * @category attempts
 */
export const quoting = (message: string, said: string | null | undefined): string =>
  said === null || said === undefined || message.includes(said) ? message : `${message} The upstream said: ${said}`

/** The error of a call none of whose candidate keys may be tried: all are disabled. @category errors */
export const allKeysDisabled = (model: string): GatewayError.UpstreamUnavailable =>
  new GatewayError.UpstreamUnavailable({
    message:
      `Every upstream key serving '${model}' for your group is disabled after the upstream refused its credentials. ` +
      "This is a gateway configuration problem: an administrator must check the channels' keys."
  })

/**
 * Sends `body` to `url` with the target's key and reads the whole answer as
 * text (at most `settings.maxAnswerBytes`), within the deadlines `at` and the
 * channel's idle timeout. An error answer (status 400 and above; its body read
 * up to 64 KiB, the channel's secrets redacted) fails with its classification
 * by the channel's dialect (see `refused`). `record.status` gets the
 * upstream's status. `forwarded`: headers of the client's request that go
 * with it (`ClientDialect.forwardHeaders`); the channel's own headers win.
 *
 * @category attempts
 */
export const exchange = (
  target: Selection.Target,
  upstream: Dialect.UpstreamDialect,
  url: string,
  body: string | Uint8Array,
  at: Upstream.Deadlines,
  record: AttemptRecord,
  forwarded?: Readonly<Record<string, string>>
) => Effect.map(exchangeAnswer(target, upstream, url, body, at, record, forwarded), (answer) => answer.text)

/**
 * `exchange`, with the answer's headers beside its text (names in lower case),
 * for an upstream that says something there (Bedrock's `InvokeModel` its
 * input tokens).
 *
 * @category attempts
 */
export const exchangeAnswer = Effect.fnUntraced(function*(
  target: Selection.Target,
  upstream: Dialect.UpstreamDialect,
  url: string,
  body: string | Uint8Array,
  at: Upstream.Deadlines,
  record: AttemptRecord,
  forwarded?: Readonly<Record<string, string>>
) {
  const { channel } = target
  const headers = upstream.headers(channel, target.key)
  const response = yield* Upstream.send(
    channel,
    url,
    forwarded === undefined ? headers : { ...forwarded, ...headers },
    body,
    at,
    "POST",
    target.key
  )
  record.status = response.status
  if (response.status >= 400) return yield* refused(response, target, upstream, record)
  const text = yield* Upstream.readText(response, (yield* Settings).maxAnswerBytes)
  return { text, headers: response.headers }
})

/**
 * Reads an upstream's error answer (the channel's secrets redacted) and
 * fails with its classification; `record` (the attempt's) keeps what the
 * upstream said in its own words (see `AttemptRecord`). A clear refusal of the key has the key kept
 * out of calls until a probe with it decides (`Health.suspect`); a 403 the
 * caller gets has a probe check the key, which stays in use. Only a probe's
 * refusal disables a key: a request cannot.
 *
 * @category attempts
 */
export const refused = Effect.fnUntraced(function*(
  response: Upstream.UpstreamResponse,
  target: Selection.Target,
  upstream: Dialect.UpstreamDialect,
  record?: AttemptRecord
) {
  const text = yield* Upstream.errorBody(response)
  const error = Redaction.error(target.channel, upstream.classify(response.status, text, response.headers))
  if (record !== undefined) record.errorMessage = Upstream.upstreamMessage(Redaction.text(target.channel, text))
  const clear = isCredentialRefusal(error)
  if (clear || isPermissionRefusal(error)) {
    const health = yield* Health.Health
    yield* health.suspect(target.channel, target.key, {
      status: response.status,
      reason: Health.refusal(response.status, Upstream.upstreamMessage(text)),
      clear
    })
  }
  return yield* Effect.fail(error)
})

/** One call's attempts, for `run`. @category models */
export interface Attempts<A, R> {
  readonly requestId: string
  /** When the call started (its total deadline counts from here). */
  readonly startedAt: number
  /** The public model (named in the error when every key is disabled). */
  readonly model: string
  /** The candidates, best priority first (as the catalog gives them). */
  readonly channels: ReadonlyArray<Domain.Channel>
  /** Where the attempts are recorded, in order (the usage record's `attemptLog`). */
  readonly tried: Array<AttemptRecord>
  /** The value of the call's sticky routing header, when it sent one (see `Selection.plan`). */
  readonly sticky?: string | undefined
  /** The call's trace, when tracing is on: each attempt is a client span of it (`CallSpans.attempt`). */
  readonly trace?: Telemetry.CallTrace | undefined
  /** `gen_ai.operation.name` of the call (`CallSpans.operationName`), naming its attempts' spans. */
  readonly operation?: string | undefined
  /**
   * One attempt on `target` within `at`; sets `record.status` when the
   * upstream answered (see `exchange`). `ticket` is the attempt's admission by
   * the key's breaker. `span`: the attempt's span when the call is traced
   * (the current span while the attempt runs, so `Upstream.send` propagates
   * it); an attempt whose answer outlives it (`keepsSpan`) ends it.
   */
  readonly attempt: (
    target: Selection.Target,
    at: Upstream.Deadlines,
    record: AttemptRecord,
    ticket: Health.Ticket,
    span: Tracer.Span | undefined
  ) => Effect.Effect<A, GatewayError.GatewayError, R>
  /**
   * Whether a successful attempt's answer outlives the attempt and ends its
   * breaker ticket itself (a stream, when it ends); otherwise the loop records
   * the success.
   */
  readonly keepsTicket?: ((answer: A) => boolean) | undefined
  /**
   * Whether a successful attempt's answer outlives the attempt and ends its
   * span itself (a stream, when it ends: `CallSpans.attemptEnded`); otherwise
   * the loop ends it.
   */
  readonly keepsSpan?: ((answer: A) => boolean) | undefined
}

/**
 * Tries the candidates in routing order until an attempt succeeds, a failure
 * is not retryable, or `routing.max_attempts` attempts were made; fails with
 * the last attempt's error (or `allKeysDisabled` when no key could be tried).
 *
 * @category attempts
 */
export const run = Effect.fnUntraced(function*<A, R>(call: Attempts<A, R>) {
  const settings = yield* Settings
  const health = yield* Health.Health
  // The clock is read directly (one step for the service, none per reading).
  const clock = yield* Clock.Clock
  const now = clock.currentTimeMillisUnsafe()
  // A model a channel's upstream refused with a 403 goes to its other channels while there are any.
  const open = call.channels.filter((channel) => !health.modelRefused(channel, call.model, now))
  const planned = yield* Selection.plan(open.length > 0 ? open : call.channels, {
    availability: (channel, apiKey) => health.availability(channel, apiKey, now),
    retryAt: health.retryAt
  }, call.sticky === undefined || call.sticky === "" ? undefined : call.sticky)
  let lastError: GatewayError.GatewayError | undefined
  let previous: Selection.Failure | undefined
  while (call.tried.length < settings.maxAttempts) {
    const target = planned.next(previous)
    if (target === undefined) break
    const ticket = yield* health.begin(target.channel, target.key, target.force)
    // Another call took the last trial slot of a half-open key since the plan was made: the next target.
    if (ticket === undefined) continue
    const record: AttemptRecord = {
      channel: target.channel.name,
      keyHint: Health.hintOf(target.key),
      status: null,
      errorCode: null,
      errorMessage: null,
      durationMs: 0
    }
    call.tried.push(record)
    const started = clock.currentTimeMillisUnsafe()
    const at = Upstream.deadlines(target.channel, started, call.startedAt)
    // Traced: the attempt runs under its own client span, whose trace context goes upstream with the request.
    const span = call.trace === undefined ? undefined : CallSpans.attempt(
      call.trace,
      call.operation ?? "chat",
      target.channel,
      Domain.upstreamModel(target.channel, call.model),
      call.tried.length
    )
    const attempt = call.attempt(target, at, record, ticket, span)
    const result = yield* Effect.result(
      span === undefined
        ? Effect.onInterrupt(attempt, () => health.end(ticket, "neutral"))
        : Effect.onInterrupt(
          Effect.provideService(attempt, Tracer.ParentSpan, span),
          () =>
            Effect.andThen(
              Effect.sync(() => CallSpans.attemptInterrupted(call.trace, span)),
              health.end(ticket, "neutral")
            )
        )
    )
    record.durationMs = clock.currentTimeMillisUnsafe() - started
    if (result._tag === "Success") {
      if (call.keepsTicket === undefined || !call.keepsTicket(result.success)) yield* health.end(ticket, "success")
      if (call.keepsSpan === undefined || !call.keepsSpan(result.success)) {
        CallSpans.attemptEnded(call.trace, span, record.status, undefined)
      }
      return result.success
    }
    // Whatever failed (a classified refusal, an answer that could not be read), the channel's secrets go no further.
    const error = Redaction.error(target.channel, result.failure)
    CallSpans.attemptEnded(call.trace, span, record.status, error)
    lastError = error
    record.errorCode = error._tag
    record.errorMessage = quoting(GatewayError.bounded(error).message, record.errorMessage)
    yield* health.end(
      ticket,
      isCredentialRefusal(error) ? "neutral" : breakerOutcome(error),
      error.message,
      error._tag === "UpstreamRateLimited" && error.retryAfterSeconds !== undefined
        ? error.retryAfterSeconds * 1000
        : undefined
    )
    // A request translation refused (the caller's error, found when the first channel of another dialect came up) is no upstream's failure.
    yield* (Issues.isRequestError(error) && record.status === null
      ? Effect.logDebug("the request was refused while translated for a channel")
      : Effect.logWarning("upstream attempt failed before the first byte")).pipe(
        Effect.annotateLogs({
          requestId: call.requestId,
          attempt: call.tried.length,
          channel: target.channel.name,
          key: record.keyHint,
          error: error.message
        })
      )
    // A 403 about what was asked: a one-token probe of the model checks whether the model is refused on that
    // channel (the key itself is checked by a probe of its own).
    // The call itself goes to the model's other channels, if it has any (else the caller gets the 403).
    if (isPermissionRefusal(error) && record.status === 403) {
      yield* health.suspectModel(target.channel, target.key, call.model)
      previous = "model"
      continue
    }
    if (!retryable(error)) break
    previous = failureKind(error)
  }
  return yield* Effect.fail(lastError ?? allKeysDisabled(call.model))
})

export type { Target } from "../routing/Selection.ts"
