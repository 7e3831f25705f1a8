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
import {
  Admission,
  type Canonical,
  type Dialect,
  Domain,
  GatewayError,
  Params,
  Pricing,
  StreamAssembly,
  Tokens,
  Utf8
} from "@modelgate/core"
import { Clock, Effect, Exit } from "effect"
import * as Dialects from "./Dialects.ts"
import { Draining } from "./Draining.ts"
import * as Exchange from "./Exchange.ts"
import * as Failover from "./Failover.ts"
import * as Health from "./Health.ts"
import * as Ids from "./Ids.ts"
import * as RateLimits from "./RateLimits.ts"
import * as Redaction from "./Redaction.ts"
import * as Refusals from "./Refusals.ts"
import * as Relay from "./Relay.ts"
import { Settings } from "./Settings.ts"
import * as Settlement from "./Settlement.ts"
import * as Upstream from "./Upstream.ts"

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
}

const statusOf = (client: Dialect.ClientDialect, error: GatewayError.GatewayError) => client.renderError(error).status

const codeOf = (error: GatewayError.GatewayError): string => error._tag

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

const run = Effect.fnUntraced(function*(input: ChatInput, admitting: Refusals.Admitting) {
  const { client, key } = input
  const inspected = yield* client.inspect(input.body, input.hints)
  admitting.asked(inspected.model, inspected.stream)
  const route = yield* Admission.authorize(key, inspected.model, "generate")
  const model = route.model
  admitting.resolved(model.id)
  const maxOutput = Pricing.maxOutputFor(model, inspected.maxOutputTokens)
  const bodyBytes = input.body.length
  const held = yield* Pricing.holdFor(model, route.group.ratioMicros, {
    promptTokens: Tokens.promptBound(model, bodyBytes, { image: inspected.mediaParts }),
    outputTokens: maxOutput,
    choices: inspected.choices
  })
  const promptEstimate = Math.ceil(bodyBytes / 4)
  // Limits before money: a call refused here holds nothing.
  const permit = yield* RateLimits.admit(
    key,
    route.group,
    model.id,
    RateLimits.estimateTokens(bodyBytes, inspected.maxOutputTokens, model, inspected)
  )
  const limitHeaders = RateLimits.successHeaders(client, permit)
  const settlement = yield* RateLimits.settleUnder(
    permit,
    Settlement.open({
      requestId: input.requestId,
      startedAt: input.startedAt,
      key,
      model,
      ratioMicros: route.group.ratioMicros,
      dialectIn: client.dialect,
      stream: inspected.stream,
      choices: inspected.choices
    }, held)
  )
  admitting.opened = true

  const settings = yield* Settings
  const health = yield* Health.Health
  const tried: Array<Failover.AttemptRecord> = []
  let lastLeg: Omit<Settlement.Leg, "attempts" | "attemptLog"> | undefined
  const legOf = (): Settlement.Leg | undefined =>
    lastLeg === undefined ? undefined : { ...lastLeg, attempts: tried.length, attemptLog: tried }
  let ttfbMs: number | null = null

  /**
   * `read()`, which may parse the body a large inspection only scanned (the
   * translation, a channel's parameter edit): a body JSON refuses deep inside
   * (a misspelt literal, which the scan lets through) is the client's error,
   * named by the dialect's deferred check, not a defect.
   */
  const parsing = <A>(read: () => A): Effect.Effect<A, GatewayError.InvalidRequest> =>
    Effect.suspend(() => {
      try {
        return Effect.succeed(read())
      } catch (error) {
        const refused = error instanceof SyntaxError ? client.check?.(inspected) : undefined
        return refused === undefined ? Effect.die(error) : Effect.fail(refused)
      }
    })

  let canonicalRequest: Canonical.ChatRequest | undefined
  const canonical = () =>
    canonicalRequest !== undefined
      ? Effect.succeed(canonicalRequest)
      : Effect.flatMap(parsing(() => client.decodeRequest(inspected)), (decoding) =>
        Effect.tap(decoding, (request) => Effect.sync(() => canonicalRequest = request)))

  const attempt = (
    target: Failover.Target,
    at: Upstream.Deadlines,
    record: Failover.AttemptRecord,
    ticket: Health.Ticket
  ) =>
    Effect.gen(function*() {
      const { channel } = target
      const attemptStart = yield* Clock.currentTimeMillis
      const upstreamModel = Domain.upstreamModel(channel, model.id)
      const upstream = Dialects.forChat(client, channel, upstreamModel)
      const same = upstream.dialect === client.dialect
      lastLeg = { channel: channel.name, upstreamModel, dialectOut: upstream.dialect }
      const edit = Params.editOf(channel)
      const relayed = same ? yield* parsing(() => inspected.forward(upstreamModel, edit)) : undefined
      const body = relayed !== undefined
        ? upstream.relayBody === undefined ? relayed : yield* upstream.relayBody(relayed)
        : yield* Effect.flatMap(canonical(), (request) => upstream.encodeRequest(request, upstreamModel, model)).pipe(
          Effect.map((encoded) => edit === undefined ? encoded : Params.editText(encoded, edit))
        )
      // What the translation left out by decision goes on the usage record.
      if (!same && canonicalRequest?.notes !== undefined) lastLeg = { ...lastLeg, notes: canonicalRequest.notes }
      const headers = upstream.headers(channel, target.key)
      const forwarded = same ? client.forwardHeaders?.(input.headers ?? {}) : undefined
      const response = yield* Upstream.send(
        channel,
        upstream.chatUrl(channel, upstreamModel, inspected.stream),
        forwarded === undefined ? headers : { ...forwarded, ...headers },
        body,
        at,
        "POST",
        target.key
      )
      record.status = response.status
      if (response.status >= 400) {
        // A large body was forwarded without its structure checked: refused, it is checked now, and a malformed
        // one gets the error naming the field (the upstream's own refusal stands for a well-formed one).
        return yield* Failover.refused(response, target, upstream).pipe(
          Effect.catchTag("UpstreamRejected", (refusal) =>
            Effect.fail(same ? client.check?.(inspected) ?? refusal : refusal))
        )
      }
      const answerHeaders = { ...limitHeaders, "x-request-id": input.requestId }
      if (!inspected.stream) {
        const text = yield* Upstream.readText(response, settings.maxAnswerBytes)
        const json = yield* Effect.try({
          try: () =>
            JSON.parse(text) as unknown,
          catch: () =>
            new GatewayError.UpstreamUnavailable({
              message: `The upstream '${channel.name}' answered with invalid JSON.`
            })
        })
        // A 200 whose body is an error, or not the dialect's answer, is the upstream failing (it fails over, and costs nothing).
        const notAnAnswer = upstream.notAnAnswer(json, channel.name)
        if (notAnAnswer !== undefined) return yield* notAnAnswer
        let out: unknown
        let metered: Settlement.Metered
        if (same) {
          metered = client.usageOfResponse(json, promptEstimate)
          // Relayed as the upstream wrote it, but never with the channel's secrets in it.
          out = Redaction.text(channel, upstreamModel === model.id ? text : client.renameInBody(text, model.id))
        } else {
          const decoded = yield* upstream.decodeResponse(json, yield* Ids.answerStart)
          metered = meteredOf(decoded, promptEstimate)
          out = client.encodeResponse(decoded, model.id, inspected)
        }
        const now = yield* Clock.currentTimeMillis
        ttfbMs = now - input.startedAt
        record.durationMs = now - attemptStart
        yield* health.end(ticket, "success")
        yield* settlement.finish(metered, { status: 200, errorCode: null, ttfbMs }, legOf())
        return typeof out === "string"
          ? Exchange.jsonText(out, 200, answerHeaders)
          : Exchange.json(out, 200, answerHeaders)
      }

      // Streams: the opening (up to the first event) is read and judged before the client gets anything (until
      // then the call can still fail over); after it, every upstream chunk is relayed as soon as it is complete
      // and nothing accumulates but the meter and at most one event (`max_event_bytes`).
      const opened = yield* Upstream.opening(response, upstream, settings.maxEventBytes)
      let push: (chunk: Uint8Array) => Relay.Frames
      let end: () => Relay.Frames
      let metered: () => Settlement.Metered
      if (same) {
        const meter = client.passthroughMeter(inspected)
        const rename = upstreamModel === model.id ? undefined : client.streamRenamer(upstreamModel, model.id)
        // Relayed event by event as the upstream wrote it (an in-band error event included), its secrets redacted:
        // whole events the meter left as they were go out as the upstream's own bytes.
        const frames = (out: Dialect.Forward): Relay.Frames => {
          if (out === undefined) return ""
          if (typeof out !== "string") {
            if (rename === undefined && !Redaction.quotes(channel, out.text)) return out.bytes
            out = out.text
          }
          return Redaction.text(channel, rename === undefined ? out : rename(out))
        }
        push = (chunk) => frames(meter.push(chunk))
        end = () => frames(meter.end())
        metered = () => meter.metered(promptEstimate)
      } else {
        const start = yield* Ids.answerStart
        const assembler = new StreamAssembly.Assembler()
        const encoder = client.frameEncoder(inspected, model.id, promptEstimate)
        const feed = (batch: ReadonlyArray<Canonical.StreamEvent>) => {
          for (const event of batch) assembler.add(event)
          return encoder.push(batch)
        }
        if (upstream.binaryStream !== undefined) {
          // Binary frames (Bedrock's event stream) decode on their bytes.
          const frames = upstream.binaryStream.decoder(start)
          push = (chunk) => feed(frames.push(chunk))
          end = () => feed(frames.end()) + encoder.end()
        } else {
          const events = upstream.eventDecoder(start)
          const text = new Utf8.StreamDecoder()
          push = (chunk) => feed(events.push(text.push(chunk)))
          end = () => feed(events.push(text.end())) + feed(events.end()) + encoder.end()
        }
        metered = () => meteredOf(assembler.response(), promptEstimate, true)
      }
      // The relay turns each upstream chunk into the client's frames (Relay.ts): per chunk a decode and the
      // transform, nothing else. However it ends, the call is settled once, from its end report.
      const settle = (ended: Relay.RelayEnd) =>
        Effect.gen(function*() {
          const closed = ended._tag === "Closed"
          const error = ended._tag === "Failed" ? Redaction.error(channel, ended.error) : undefined
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
            : { status: statusOf(client, error), errorCode: codeOf(error), errorMessage, ttfbMs }
          record.durationMs = (yield* Clock.currentTimeMillis) - attemptStart
          record.errorCode = closed ? cut.errorCode : error === undefined ? null : codeOf(error)
          record.errorMessage = errorMessage
          yield* health.end(
            ticket,
            closed ? "neutral" : error === undefined ? "success" : Failover.breakerOutcome(error),
            error?.message
          )
          yield* settlement.finish(metered(), outcome, legOf())
        }).pipe(Effect.uninterruptible)
      // The settlement runs after this request's fiber, tracked so a shutdown waits for it.
      const settlements = yield* Settlement.Settlements
      const context = yield* Effect.context<never>()
      const relay = new Relay.Relay({
        first: opened.bytes,
        ended: opened.ended,
        body: response.body,
        push,
        end,
        bodyError: (error) => Upstream.transportError(channel, error),
        errorFrame: (error) =>
          client.streamErrorFrame(GatewayError.bounded(Redaction.error(channel, error)), inspected),
        // Server-sent events are bounded as they arrive; binary frames by their decoder (their prelude gives their length).
        maxEventBytes: upstream.binaryStream === undefined ? settings.maxEventBytes : Infinity,
        eventTooLarge: () =>
          new GatewayError.UpstreamUnavailable({
            message:
              `The upstream '${channel.name}' sent a stream event larger than ${settings.maxEventBytes} bytes (max_event_bytes).`
          }),
        onEnd: (ended) => settlements.run(Effect.provideContext(settle(ended), context))
      })
      // The opening goes through the transform now: an event the upstream's decoder cannot read still fails over.
      const primed = relay.prime()
      if (primed !== undefined) {
        response.body.discard()
        return yield* Effect.fail(primed)
      }
      ttfbMs = (yield* Clock.currentTimeMillis) - input.startedAt
      const answer: Exchange.Answer = {
        _tag: "Stream",
        status: 200,
        headers: {
          ...answerHeaders,
          "content-type": client.streamContentType(inspected),
          "cache-control": "no-cache",
          "x-accel-buffering": "no"
        },
        relay
      }
      return answer
    })

  const sticky = settings.stickyHeader === null ? undefined : firstValue(input.headers?.[settings.stickyHeader])
  return yield* Failover.run({
    requestId: input.requestId,
    startedAt: input.startedAt,
    model: model.id,
    channels: route.channels,
    tried,
    sticky,
    attempt,
    // Every successful attempt ends its ticket itself: a non-stream one before it settles, a stream when it ends.
    keepsTicket: () => true
  }).pipe(
    // Admission above ran uninterruptibly (see `Settlement.interruptible`); the attempts can be cut.
    Settlement.interruptible,
    Effect.onExit((exit) => {
      if (Exit.isSuccess(exit)) return Effect.void
      const failed = exit.cause.reasons.find((reason) => reason._tag === "Fail")
      // The status the client got: its dialect's rendering of the error; when interrupted, 499 if it went
      // away, 503 if the shutdown's grace period ended.
      const interrupted = failed === undefined ? Settlement.interruption(exit.cause) : undefined
      const ended = interrupted !== undefined
        ? { ...interrupted, errorMessage: Settlement.interruptionMessages[interrupted.errorCode] }
        : {
          status: statusOf(client, failed!.error),
          errorCode: codeOf(failed!.error),
          errorMessage: Settlement.messageOf(failed!.error)
        }
      const last = tried.at(-1)
      if (interrupted !== undefined && last !== undefined && last.errorCode === null) {
        last.errorCode = ended.errorCode
        last.errorMessage = ended.errorMessage
      }
      return settlement.finish(Settlement.nothing, { ...ended, ttfbMs: null }, legOf())
    })
  )
})

/**
 * Metering of a canonical response: the upstream's usage, or local estimates
 * when it gave none (or gave figures that were refused, which it says). A
 * stream (`streamed`) that ended before any choice finished was cut: the
 * usage it reported so far (Anthropic reports its input and one output token
 * at the start) may fall short of what it delivered, so its output is at
 * least the estimate of the generated text.
 */
const meteredOf = (response: Canonical.ChatResponse, promptEstimate: number, streamed = false): Settlement.Metered => {
  const usage = response.usage
  if (usage !== undefined) {
    const cut = streamed && response.choices.every((choice) => choice.finishReason === null)
    return {
      promptTokens: usage.promptTokens,
      completionTokens: cut
        ? Math.max(usage.completionTokens, Tokens.estimateGeneratedTokens(StreamAssembly.generatedText(response)))
        : usage.completionTokens,
      cachedTokens: usage.cachedTokens ?? 0,
      cacheWriteTokens: usage.cacheWriteTokens ?? 0,
      ...(usage.reasoningTokens === undefined ? {} : { reasoningTokens: usage.reasoningTokens }),
      reported: true
    }
  }
  const estimate = {
    promptTokens: promptEstimate,
    completionTokens: Tokens.estimateGeneratedTokens(StreamAssembly.generatedText(response)),
    cachedTokens: 0,
    reported: false
  }
  return response.usageRejected === undefined ? estimate : { ...estimate, usageRejected: response.usageRejected }
}
