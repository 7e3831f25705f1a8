/**
 * Failover for upstream calls, and what a failed attempt means (docs/routing.md).
 *
 * The classification is shared by every call that reaches an upstream: which
 * errors move the call to another key or channel (`retryable`), whether a
 * failure is the key's own or the server's (`failureKind`), what it means for
 * the key's circuit breaker (`breakerOutcome`), and whether the upstream
 * refused the key's credentials (`isCredentialRefusal`: the key is disabled).
 *
 * `run` is the attempt loop of calls whose answer is complete when an attempt
 * returns (embeddings, token counts; a chat call's stream outlives its attempt,
 * so `Chat.ts` keeps its own loop with the same rules): candidates in the order
 * `Selection` plans them, each attempt admitted by its key's breaker (`Health`)
 * and its outcome fed back to it, at most `routing.max_attempts` attempts,
 * failing over on retryable errors only, and every attempt recorded for the
 * usage record. `exchange` sends one request and reads its answer within the
 * channel's timeouts (`Upstream.send`, `errorBody`, `readText`), disabling a
 * key whose credentials the upstream refused.
 *
 * @since 0.1.0
 */
import { type Domain, GatewayError, type UsageLog } from "@modelgate/core"
import { Clock, Effect } from "effect"
import type { Outcome } from "./Breakers.ts"
import * as Health from "./Health.ts"
import * as Selection from "./Selection.ts"
import { ServerSettings } from "./Settings.ts"
import * as Upstream from "./Upstream.ts"

/** Whether a classified upstream error is a refusal of the key's credentials. @category classification */
export const isCredentialRefusal = (error: GatewayError.GatewayError): boolean =>
  error._tag === "UpstreamUnavailable" && error.status !== undefined && error.status >= 400 && error.status < 500 && error.status !== 429

/** Whether an attempt's failure moves the call to another key or channel. @category classification */
export const retryable = (error: GatewayError.GatewayError): boolean =>
  error._tag === "UpstreamUnavailable" || error._tag === "UpstreamTimeout" || error._tag === "UpstreamRateLimited"

/** A failure that is the key's own (another key of the channel may work) or the server's. @category classification */
export const failureKind = (error: GatewayError.GatewayError): Selection.Failure =>
  isCredentialRefusal(error) || error._tag === "UpstreamRateLimited" || (error._tag === "UpstreamUnavailable" && error.status === 429)
    ? "key"
    : "server"

/** What a failed attempt means for its key's breaker. @category classification */
export const breakerOutcome = (error: GatewayError.GatewayError): Outcome =>
  retryable(error) ? "failure" : error._tag === "UpstreamRejected" ? "success" : "neutral"

/** One attempt as the usage record lists it, filled in as the attempt goes. @category models */
export type AttemptRecord = { -readonly [K in keyof UsageLog.Attempt]: UsageLog.Attempt[K] }

/** The error of a call none of whose candidate keys may be tried: all are disabled. @category errors */
export const allKeysDisabled = (model: string): GatewayError.UpstreamUnavailable =>
  new GatewayError.UpstreamUnavailable({
    message: `Every upstream key serving '${model}' for your group is disabled after the upstream refused its credentials. ` +
      "This is a gateway configuration problem: an administrator must check the channels' keys."
  })

/** Classifies an upstream's error answer (the channel's dialect's `UpstreamCodec.classify`). @category models */
export type Classify = (status: number, body: string, headers: Readonly<Record<string, string>>) => GatewayError.GatewayError

/**
 * Sends `body` to `url` with the target's key and reads the whole answer as
 * text, within the deadlines `at` and the channel's idle timeout. An error
 * answer (status 400 and above; its body read up to 64 KiB) fails with its
 * classification, and a refusal of the key's credentials disables the key.
 * `record.status` gets the upstream's status.
 *
 * @category attempts
 */
export const exchange = Effect.fnUntraced(function*(
  target: Selection.Target,
  url: string,
  body: string,
  at: Upstream.Deadlines,
  record: AttemptRecord,
  classify: Classify
) {
  const { channel } = target
  const response = yield* Upstream.send(channel, url, Upstream.channelHeaders(channel, target.key), body, at)
  record.status = response.status
  if (response.status >= 400) {
    const text = yield* Upstream.errorBody(response)
    const error = classify(response.status, text, response.headers)
    if (isCredentialRefusal(error)) {
      const health = yield* Health.Health
      yield* health.disable(channel, target.key, response.status, Health.refusal(response.status, Upstream.upstreamMessage(text)))
    }
    return yield* Effect.fail(error)
  }
  return yield* Upstream.readText(response)
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
  /** One attempt on `target` within `at`; sets `record.status` when the upstream answered (see `exchange`). */
  readonly attempt: (target: Selection.Target, at: Upstream.Deadlines, record: AttemptRecord) => Effect.Effect<A, GatewayError.GatewayError, R>
}

/**
 * Tries the candidates in routing order until an attempt succeeds, a failure
 * is not retryable, or `routing.max_attempts` attempts were made; fails with
 * the last attempt's error (or `allKeysDisabled` when no key could be tried).
 *
 * @category attempts
 */
export const run = Effect.fnUntraced(function*<A, R>(call: Attempts<A, R>) {
  const settings = yield* ServerSettings
  const health = yield* Health.Health
  const now = yield* Clock.currentTimeMillis
  const planned = yield* Selection.plan(call.channels, {
    availability: (channel, apiKey) => health.availability(channel, apiKey, now),
    retryAt: health.retryAt
  })
  let lastError: GatewayError.GatewayError | undefined
  let previous: Selection.Failure | undefined
  while (call.tried.length < settings.maxAttempts) {
    const target = planned.next(previous)
    if (target === undefined) break
    const ticket = yield* health.begin(target.channel, target.key, target.force)
    // Another call took the last trial slot of a half-open key since the plan was made: the next target.
    if (ticket === undefined) continue
    const record: AttemptRecord = { channel: target.channel.name, keyHint: Health.hintOf(target.key), status: null, errorCode: null, durationMs: 0 }
    call.tried.push(record)
    const started = yield* Clock.currentTimeMillis
    const at = Upstream.deadlines(target.channel, started, call.startedAt)
    const result = yield* Effect.result(
      call.attempt(target, at, record).pipe(Effect.onInterrupt(() => health.end(ticket, "neutral")))
    )
    record.durationMs = (yield* Clock.currentTimeMillis) - started
    if (result._tag === "Success") {
      yield* health.end(ticket, "success")
      return result.success
    }
    const error = result.failure
    lastError = error
    record.errorCode = error._tag
    yield* health.end(
      ticket,
      isCredentialRefusal(error) ? "neutral" : breakerOutcome(error),
      error.message,
      error._tag === "UpstreamRateLimited" && error.retryAfterSeconds !== undefined ? error.retryAfterSeconds * 1000 : undefined
    )
    yield* Effect.logWarning("upstream attempt failed").pipe(
      Effect.annotateLogs({
        requestId: call.requestId,
        attempt: call.tried.length,
        channel: target.channel.name,
        key: record.keyHint,
        error: error.message
      })
    )
    if (!retryable(error)) break
    previous = failureKind(error)
  }
  return yield* Effect.fail(lastError ?? allKeysDisabled(call.model))
})
