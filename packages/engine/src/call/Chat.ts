/**
 * One chat call, end to end: inspect the body, authorise the model, admit it
 * under the rate limits (`RateLimits`), hold the worst-case cost (once per
 * call, whatever the attempts), try channels and keys in the order
 * `Selection` plans until one answers, relay the answer (bytes as they are
 * when client and channel speak the same dialect, translated through the
 * canonical model otherwise), meter it and settle (which also releases the
 * rate-limit permit with the metered tokens).
 *
 * Failover (docs/routing.md): an attempt that fails with a connection error, a
 * timeout, an upstream 5xx or 429, or refused credentials before the first
 * byte reached the client moves the call to another key of the same channel
 * (the key's own failures) or the next channel (the server's), up to
 * `routing.max_attempts`; caller errors (other upstream 4xx) are never
 * retried. A 200 that is not an answer (an error, another shape, HTML, broken
 * JSON, an empty stream) is an upstream failure like a 5xx. A stream's opening
 * (its first event) is read and judged before the client gets anything, so a
 * stream that breaks, stalls or opens with something else still fails over.
 * After the first byte nothing is retried: a failure (an event larger than
 * `max_event_bytes` included) is reported in-band, in the client's dialect,
 * and the call is charged for what was delivered. No upstream error reaches
 * the client, the log or the usage record with the channel's secrets in it
 * (`Redaction`).
 *
 * Every attempt's outcome feeds its key's circuit breaker (`Health`), and each
 * attempt is listed on the usage record.
 *
 * @since 0.1.0
 */
import { type Dialect, Domain, Pricing, Tokens } from "@modelgate/core"
import { Clock, Effect } from "effect"
import { Settings } from "../config/Settings.ts"
import * as Health from "../routing/Health.ts"
import * as CallSpans from "../telemetry/CallSpans.ts"
import type * as Telemetry from "../telemetry/Telemetry.ts"
import type * as Exchange from "../wire/Exchange.ts"
import * as Calls from "./Calls.ts"
import { ChatCall } from "./ChatCall.ts"
import * as ClientGone from "./ClientGone.ts"
import * as Dialects from "./Dialects.ts"
import * as Failover from "./Failover.ts"
import * as RateLimits from "./RateLimits.ts"
import * as Refusals from "./Refusals.ts"
import * as Relayed from "./Relayed.ts"
import * as Translated from "./Translated.ts"

/** One call's inputs. @category models */
export interface ChatInput {
  readonly requestId: string
  readonly startedAt: number
  readonly key: Domain.ApiKey
  readonly client: Dialect.ClientDialect
  /** The request body's UTF-8 bytes, as received. */
  readonly body: Uint8Array
  readonly hints: Dialect.RouteHints
  /** The request's headers (the sticky routing header is read from them). */
  readonly headers?: Dialect.HeaderBag | undefined
  /** The call's trace, when tracing is on (`GatewayRequest.trace`). */
  readonly trace?: Telemetry.CallTrace | undefined
}

/** Every successful attempt ends its ticket itself: a non-stream one before it settles, a stream when it ends. */
const keepsTicket = (): boolean => true

/** A stream's attempt span ends with the stream. (Made once: a call, traced or not, allocates no closure for it.) */
const keepsSpan = (answer: Exchange.Answer): boolean => answer._tag === "Stream"

const firstValue = (value: string | ReadonlyArray<string> | undefined): string | undefined =>
  typeof value === "string" ? value : value?.[0]

/**
 * Runs a chat call and returns the answer to write (a stream keeps running,
 * and is settled, after this returns). A call refused before its hold is
 * logged too (`Refusals`).
 *
 * @category calls
 */
export const handle = (input: ChatInput) => {
  const admitting = new Refusals.Admitting(input.hints.model, input.hints.stream)
  return Refusals.logged(input, admitting, run(input, admitting))
}

/**
 * Opens the call in the client's dialect, admits it (`Calls.billed`: the
 * rate limits, then the hold of its worst case), and tries channels and keys
 * in the order `Selection` plans until one answers: relayed to a channel of
 * the client's own dialect (`Relayed`), translated for another (`Translated`).
 */
const run = Effect.fnUntraced(function*(input: ChatInput, admitting: Refusals.Admitting) {
  const { client, trace } = input
  const dialect = yield* client.open(input.body, input.hints)
  const bodyBytes = input.body.length
  const operation = CallSpans.operationName("chat", client.dialect)
  CallSpans.request(trace, dialect)
  const settings = yield* Settings
  const health = yield* Health.Health
  return yield* Calls.billed(
    {
      requestId: input.requestId,
      startedAt: input.startedAt,
      key: input.key,
      client,
      model: dialect.model,
      use: "generate",
      stream: dialect.stream,
      choices: dialect.choices,
      tokens: (model) => RateLimits.estimateTokens(bodyBytes, dialect.maxOutputTokens, model, dialect),
      trace,
      operation
    },
    admitting,
    (model) => ({
      promptTokens: Tokens.promptBound(model, bodyBytes, dialect.media ?? { image: dialect.mediaParts }),
      outputTokens: Pricing.maxOutputFor(model, dialect.maxOutputTokens),
      choices: dialect.choices
    }),
    (admitted) => {
      const call = new ChatCall({
        requestId: input.requestId,
        startedAt: input.startedAt,
        headers: input.headers,
        client,
        dialect,
        admitted,
        promptEstimate: Math.ceil(bodyBytes / 4),
        settings,
        health,
        trace
      })
      return Failover.run({
        requestId: input.requestId,
        startedAt: input.startedAt,
        model: admitted.model.id,
        channels: admitted.route.channels,
        tried: admitted.log.tried,
        sticky: settings.stickyHeader === null ? undefined : firstValue(input.headers?.[settings.stickyHeader]),
        trace,
        operation,
        attempt: (target, at, record, ticket, span) =>
          Effect.flatMap(Clock.currentTimeMillis, (startedAt) => {
            const upstreamModel = Domain.upstreamModel(target.channel, admitted.model.id)
            const upstream = Dialects.forChat(client, target.channel, upstreamModel)
            admitted.log.to(target.channel.name, upstreamModel, upstream.dialect)
            const strategy = upstream.dialect === client.dialect ? Relayed : Translated
            return ClientGone.attempt(
              call,
              record,
              strategy.attempt(call, { target, at, record, ticket, startedAt, upstream, upstreamModel, span })
            )
          }),
        keepsTicket,
        keepsSpan
      })
    }
  )
})
