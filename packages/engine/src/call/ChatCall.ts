/**
 * One admitted chat call, across its attempts (`ChatCall`), and the steps
 * both ways of serving it share: sending the body, reading a non-stream
 * answer and settling it, and relaying a stream (`Relay`) and settling it
 * when it ends. The two ways themselves are `Relayed` (a channel of the
 * client's own dialect) and `Translated` (through the canonical model).
 *
 * @since 0.1.0
 */
import { type Canonical, type Dialect, type Domain, GatewayError } from "@modelgate/core"
import { Clock, Effect, Option, type Tracer } from "effect"
import type { EngineSettings } from "../config/Settings.ts"
import * as Settlement from "../money/Settlement.ts"
import { Draining } from "../routing/Draining.ts"
import type * as Health from "../routing/Health.ts"
import * as CallSpans from "../telemetry/CallSpans.ts"
import * as Redaction from "../telemetry/Redaction.ts"
import type * as Telemetry from "../telemetry/Telemetry.ts"
import * as Exchange from "../wire/Exchange.ts"
import * as Relay from "../wire/Relay.ts"
import * as Upstream from "../wire/Upstream.ts"
import type { Admitted, AttemptLog } from "./Calls.ts"
import * as ClientGone from "./ClientGone.ts"
import * as Failover from "./Failover.ts"
import * as RateLimits from "./RateLimits.ts"

/**
 * One chat call, admitted: what every attempt reads (the request, the
 * client's dialect call, the model, the call's estimate of its prompt, the
 * headers of its answer) and what the attempts fill in (the attempt log, the
 * canonical request once decoded).
 *
 * @category models
 */
export class ChatCall {
  readonly requestId: string
  readonly startedAt: number
  /** The client's request headers. */
  readonly headers: Dialect.HeaderBag
  readonly client: Dialect.ClientDialect
  /** The client's dialect's side of this call. */
  readonly dialect: Dialect.ChatCall
  readonly model: Domain.Model
  readonly settlement: Settlement.Settlement
  readonly log: AttemptLog
  /** The prompt's tokens, estimated from the body's bytes (the bill when the upstream reports none). */
  readonly promptEstimate: number
  /** The headers of a successful answer: the caller's rate limits and the request id. */
  readonly answerHeaders: Readonly<Record<string, string>>
  readonly settings: EngineSettings
  readonly health: Health.Health["Service"]
  /** The call's trace, when tracing is on. */
  readonly trace: Telemetry.CallTrace | undefined
  private request: Canonical.ChatRequest | undefined

  constructor(options: {
    readonly requestId: string
    readonly startedAt: number
    readonly headers: Dialect.HeaderBag | undefined
    readonly client: Dialect.ClientDialect
    readonly dialect: Dialect.ChatCall
    readonly admitted: Admitted
    readonly promptEstimate: number
    readonly settings: EngineSettings
    readonly health: Health.Health["Service"]
    readonly trace?: Telemetry.CallTrace | undefined
  }) {
    this.requestId = options.requestId
    this.startedAt = options.startedAt
    this.headers = options.headers ?? {}
    this.client = options.client
    this.dialect = options.dialect
    this.model = options.admitted.model
    this.settlement = options.admitted.settlement
    this.log = options.admitted.log
    this.promptEstimate = options.promptEstimate
    this.answerHeaders = {
      ...RateLimits.successHeaders(options.client, options.admitted.permit, options.startedAt),
      "x-request-id": options.requestId
    }
    this.settings = options.settings
    this.health = options.health
    this.trace = options.trace
  }

  /**
   * Tracing with `capture_content` on: the prompt (decoded for it when the
   * call is relayed as it is) and the answer (`answer`, run only then), as
   * the conventions' event. Nothing, not even a look at the body, otherwise.
   */
  captured(
    channel: Domain.Channel,
    answer: () => Effect.Effect<Canonical.ChatResponse | undefined>
  ): Effect.Effect<void> {
    if (!CallSpans.capturing(this.trace)) return Effect.void
    const trace = this.trace
    return Effect.flatMap(
      Effect.option(this.canonical()),
      (prompt) =>
        Effect.map(answer(), (response) => CallSpans.content(trace, channel, Option.getOrUndefined(prompt), response))
    )
  }

  /**
   * `read()`, which may parse the body a large inspection only scanned (the
   * translation, a channel's parameter edit): a body JSON refuses deep inside
   * (a misspelt literal, which the scan lets through) is the client's error,
   * named by the dialect's deferred check, not a defect.
   */
  parsing<A>(read: () => A): Effect.Effect<A, GatewayError.InvalidRequest> {
    return Effect.suspend(() => {
      try {
        return Effect.succeed(read())
      } catch (error) {
        const refused = error instanceof SyntaxError ? this.dialect.check() : undefined
        return refused === undefined ? Effect.die(error) : Effect.fail(refused)
      }
    })
  }

  /** The request in the canonical model, decoded once for all the attempts that need it. */
  canonical(): Effect.Effect<Canonical.ChatRequest, GatewayError.InvalidRequest | GatewayError.UnsupportedFeature> {
    if (this.request !== undefined) return Effect.succeed(this.request)
    return Effect.flatMap(
      this.parsing(() => this.dialect.canonical()),
      (decoding) => Effect.tap(decoding, (request) => Effect.sync(() => this.request = request))
    )
  }

  /** The status the client gets for `error`: its dialect's rendering of it. */
  statusOf(error: GatewayError.GatewayError): number {
    return this.client.renderError(error).status
  }
}

/** One attempt of a call: where it goes, within which deadlines, and what it records. @category models */
export interface Attempt {
  readonly target: Failover.Target
  readonly at: Upstream.Deadlines
  readonly record: Failover.AttemptRecord
  readonly ticket: Health.Ticket
  /** When the attempt started. */
  readonly startedAt: number
  readonly upstream: Dialect.UpstreamDialect
  readonly upstreamModel: string
  /** The attempt's span when the call is traced (a stream's ends with the stream). */
  readonly span?: Tracer.Span | undefined
}

/**
 * Sends `body` for an attempt and returns the upstream's answer once its
 * headers arrive; an error status fails with its classification
 * (`Failover.refused`; `refused` may put the caller's own error in its place).
 *
 * @category attempts
 */
export const send = (
  call: ChatCall,
  attempt: Attempt,
  body: string | Uint8Array,
  forwarded?: Readonly<Record<string, string>>,
  refused?: (refusal: GatewayError.UpstreamRejected) => GatewayError.GatewayError
) =>
  Effect.suspend(() => {
    const { target, upstream } = attempt
    const { channel } = target
    const headers = upstream.headers(channel, target.key)
    return Effect.flatMap(
      Upstream.send(
        channel,
        upstream.chatUrl(channel, attempt.upstreamModel, call.dialect.stream),
        forwarded === undefined ? headers : { ...forwarded, ...headers },
        body,
        attempt.at,
        "POST",
        target.key
      ),
      (response) => {
        attempt.record.status = response.status
        if (response.status < 400) return Effect.succeed(response)
        const failing = Failover.refused(response, target, upstream, attempt.record)
        return refused === undefined
          ? failing
          : failing.pipe(Effect.catchTag("UpstreamRejected", (refusal) => Effect.fail(refused(refusal))))
      }
    )
  })

/**
 * Reads a non-stream answer: its text and its JSON. A 200 whose body is not
 * JSON, is an error, or is not the dialect's answer, is the upstream failing
 * (it fails over, and costs nothing).
 *
 * @category non-stream
 */
export const readAnswer = (
  call: ChatCall,
  attempt: Attempt,
  response: Upstream.UpstreamResponse
): Effect.Effect<
  { readonly text: string; readonly json: unknown },
  GatewayError.UpstreamUnavailable | GatewayError.UpstreamTimeout
> =>
  Effect.flatMap(Upstream.readText(response, call.settings.maxAnswerBytes), (text) => {
    const channel = attempt.target.channel.name
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      return Effect.fail(
        new GatewayError.UpstreamUnavailable({ message: `The upstream '${channel}' answered with invalid JSON.` })
      )
    }
    const notAnAnswer = attempt.upstream.notAnAnswer(json, channel)
    return notAnAnswer === undefined ? Effect.succeed({ text, json }) : Effect.fail(notAnAnswer)
  })

/**
 * A non-stream answer delivered: the attempt and the call succeed, the call
 * is settled for `metered`, and `out` (text as it is, or a value to write as
 * JSON) is the answer.
 *
 * @category non-stream
 */
export const answered = (
  call: ChatCall,
  attempt: Attempt,
  out: unknown,
  metered: Settlement.Metered
): Effect.Effect<Exchange.Answer> =>
  Effect.clockWith((clock) => {
    const now = clock.currentTimeMillisUnsafe()
    call.log.ttfbMs = now - call.startedAt
    attempt.record.durationMs = now - attempt.startedAt
    return Effect.andThen(
      call.health.end(attempt.ticket, "success"),
      Effect.suspend(() =>
        Effect.map(
          call.settlement.finish(
            metered,
            ClientGone.answeredOutcome(call, attempt.record, call.log.ttfbMs),
            call.log.leg()
          ),
          (): Exchange.Answer =>
            typeof out === "string"
              ? Exchange.jsonText(out, 200, call.answerHeaders)
              : Exchange.json(out, 200, call.answerHeaders)
        )
      )
    )
  })

/** How a relayed stream turns the upstream's bytes into the client's frames, and what it consumed. @category streams */
export interface StreamTransform {
  readonly push: (chunk: Uint8Array) => Relay.Frames
  readonly end: () => Relay.Frames
  readonly metered: () => Settlement.Metered
  /** The answer in the canonical model, when the transform assembles it (a translated stream), for the trace. */
  readonly answer?: (() => Canonical.ChatResponse) | undefined
  /** A relayed stream, sampled: what it read on the way goes on the trace (its finish reasons). */
  readonly traced?: (() => void) | undefined
}

/**
 * Streams the answer: the opening was read and judged (`Upstream.opening`:
 * until then the call can still fail over); the relay turns each upstream
 * chunk into the client's frames with `transform` as soon as it is complete,
 * and nothing accumulates but the meter and at most one event
 * (`max_event_bytes`). However it ends, the call is settled once, from its
 * end report, after this request's fiber (tracked so a shutdown waits for it).
 *
 * @category streams
 */
export const streamed = (
  call: ChatCall,
  attempt: Attempt,
  response: Upstream.UpstreamResponse,
  opened: Upstream.StreamOpening,
  transform: StreamTransform
) =>
  Effect.gen(function*() {
    const channel = attempt.target.channel
    const maxEventBytes = call.settings.maxEventBytes
    const settlements = yield* Settlement.Settlements
    const context = yield* Effect.context<never>()
    const relay = new Relay.Relay({
      first: opened.bytes,
      ended: opened.ended,
      body: response.body,
      push: transform.push,
      end: transform.end,
      bodyError: (error) => Upstream.transportError(channel, error),
      errorFrame: (error) => call.dialect.errorFrame(GatewayError.forCaller(Redaction.error(channel, error))),
      // Server-sent events are bounded as they arrive; binary frames by their decoder (their prelude gives their length).
      maxEventBytes: attempt.upstream.binaryStream === undefined ? maxEventBytes : Infinity,
      eventTooLarge: () =>
        new GatewayError.UpstreamUnavailable({
          message:
            `The upstream '${channel.name}' sent a stream event larger than ${maxEventBytes} bytes (max_event_bytes).`
        }),
      onEnd: (ended) => settlements.runWith(context, settleStream(call, attempt, transform, ended))
    })
    // The opening goes through the transform now: an event the upstream's decoder cannot read still fails over.
    const primed = relay.prime()
    if (primed !== undefined) {
      response.body.discard()
      return yield* Effect.fail(primed)
    }
    call.log.ttfbMs = (yield* Clock.currentTimeMillis) - call.startedAt
    const answer: Exchange.Answer = {
      _tag: "Stream",
      status: 200,
      headers: {
        ...call.answerHeaders,
        "content-type": call.dialect.streamContentType,
        "cache-control": "no-cache",
        "x-accel-buffering": "no"
      },
      relay
    }
    return answer
  })

/** Settles a stream from how its relay ended: delivered, failed in-band, or cut (499 by the client, 503 by a shutdown). */
const settleStream = (call: ChatCall, attempt: Attempt, transform: StreamTransform, ended: Relay.RelayEnd) =>
  Effect.gen(function*() {
    const { record } = attempt
    const ttfbMs = call.log.ttfbMs
    const closed = ended._tag === "Closed"
    const error = ended._tag === "Failed" ? Redaction.error(attempt.target.channel, ended.error) : undefined
    // Cut by the client (499), or by the end of the shutdown's grace period (503).
    const cut = closed && (yield* (yield* Draining).draining)
      ? { status: 503, errorCode: "ShuttingDown" }
      : { status: 499, errorCode: "ClientClosed" }
    const errorMessage = closed
      ? Settlement.interruptionMessages[cut.errorCode as keyof typeof Settlement.interruptionMessages]
      : error === undefined
      ? null
      : Settlement.messageOf(error)
    const outcome: Settlement.Outcome = closed
      ? { ...cut, errorMessage, ttfbMs }
      : error === undefined
      ? { status: 200, errorCode: null, ttfbMs }
      : { status: call.statusOf(error), errorCode: error._tag, errorMessage, ttfbMs }
    record.durationMs = (yield* Clock.currentTimeMillis) - attempt.startedAt
    record.errorCode = closed ? cut.errorCode : error === undefined ? null : error._tag
    record.errorMessage = errorMessage
    yield* call.health.end(
      attempt.ticket,
      closed ? "neutral" : error === undefined ? "success" : Failover.breakerOutcome(error),
      error?.message
    )
    const trace = call.trace
    if (trace !== undefined) {
      if (closed) CallSpans.attemptInterrupted(trace, attempt.span)
      else CallSpans.attemptEnded(trace, attempt.span, record.status, error)
      if (transform.answer !== undefined) {
        const assembled = transform.answer()
        CallSpans.response(trace, assembled, attempt.upstreamModel)
        yield* call.captured(attempt.target.channel, () => Effect.succeed(assembled))
      }
      transform.traced?.()
    }
    yield* call.settlement.finish(transform.metered(), outcome, call.log.leg())
  }).pipe(Effect.uninterruptible)
