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
 * retried. A stream's first chunk is read before the client gets anything, so
 * a stream that breaks or stalls before it still fails over. After the first
 * byte nothing is retried: a failure is reported in-band, in the client's
 * dialect, and the call is charged for what was delivered.
 *
 * Every attempt's outcome feeds its key's circuit breaker (`Health`), and each
 * attempt is listed on the usage record.
 *
 * @since 0.1.0
 */
import { Admission, type Canonical, Domain, GatewayError, Pricing, StreamAssembly, Tokens } from "@modelgate/core"
import { Clock, Effect, Exit } from "effect"
import { HttpServerResponse } from "effect/http"
import type { ClientCodec, RouteHints, UpstreamCodec } from "./Codecs.ts"
import { allKeysDisabled, type AttemptRecord, breakerOutcome, failureKind, isCredentialRefusal, retryable } from "./Failover.ts"
import * as Health from "./Health.ts"
import * as Params from "./Params.ts"
import { Draining } from "./Draining.ts"
import * as RateLimits from "./RateLimits.ts"
import * as Relay from "./Relay.ts"
import * as Selection from "./Selection.ts"
import { ServerSettings } from "./Settings.ts"
import * as Settlement from "./Settlement.ts"
import * as Upstream from "./Upstream.ts"

/** One call's inputs. @category models */
export interface ChatInput {
  readonly requestId: string
  readonly startedAt: number
  readonly key: Domain.ApiKey
  readonly client: ClientCodec
  readonly upstreams: (dialect: Domain.Dialect) => UpstreamCodec
  readonly body: string
  readonly hints: RouteHints
  /** The request's headers (the sticky routing header is read from them). */
  readonly headers?: Readonly<Record<string, string | undefined>> | undefined
}

const statusOf = (client: ClientCodec, error: GatewayError.GatewayError) => client.renderError(error).status

const codeOf = (error: GatewayError.GatewayError): string => error._tag

/**
 * Runs a chat call and returns the response to write (a stream keeps running,
 * and is settled, after this returns).
 *
 * @category calls
 */
export const handle = Effect.fnUntraced(function*(input: ChatInput) {
  const { client, key } = input
  const inspected = yield* client.inspect(input.body, input.hints)
  const route = yield* Admission.authorize(key, inspected.model)
  const model = route.model
  const maxOutput = Pricing.maxOutputFor(model, inspected.maxOutputTokens)
  const bodyBytes = Tokens.utf8Length(input.body)
  const held = yield* Pricing.holdFor(model, route.group.ratioMicros, { promptTokens: Tokens.bodyTokenBound(bodyBytes, inspected.mediaParts), outputTokens: maxOutput, choices: inspected.choices })
  const promptEstimate = Math.ceil(bodyBytes / 4)
  // Limits before money: a call refused here holds nothing.
  const permit = yield* RateLimits.admit(
    key,
    route.group,
    model.id,
    RateLimits.estimateTokens(bodyBytes, inspected.maxOutputTokens, model, inspected)
  )
  const limitHeaders = RateLimits.successHeaders(client.dialect, permit)
  const settlement = yield* RateLimits.settleUnder(permit, Settlement.open({
    requestId: input.requestId,
    startedAt: input.startedAt,
    key,
    model,
    ratioMicros: route.group.ratioMicros,
    dialectIn: client.dialect,
    stream: inspected.stream,
    choices: inspected.choices
  }, held))

  const settings = yield* ServerSettings
  const health = yield* Health.Health
  const tried: Array<AttemptRecord> = []
  let lastLeg: Omit<Settlement.Leg, "attempts" | "attemptLog"> | undefined
  const legOf = (): Settlement.Leg | undefined =>
    lastLeg === undefined ? undefined : { ...lastLeg, attempts: tried.length, attemptLog: tried }
  let ttfbMs: number | null = null
  const attempt = (
    target: Selection.Target,
    ticket: Health.Ticket,
    record: AttemptRecord,
    canonical: () => Effect.Effect<Canonical.ChatRequest, GatewayError.GatewayError>
  ) =>
    Effect.gen(function*() {
      const { channel } = target
      const attemptStart = yield* Clock.currentTimeMillis
      const at = Upstream.deadlines(channel, attemptStart, input.startedAt)
      const upstreamModel = Domain.upstreamModel(channel, model.id)
      const dialectOut = Domain.dialectOf(channel.type)
      const upstream = input.upstreams(dialectOut)
      const same = dialectOut === client.dialect
      lastLeg = { channel: channel.name, upstreamModel, dialectOut }
      const edit = Params.editOf(channel)
      const body = same
        ? inspected.forward(upstreamModel, edit)
        : yield* Effect.flatMap(canonical(), (request) => upstream.encodeRequest(request, upstreamModel, model)).pipe(
          Effect.map((encoded) => edit === undefined ? encoded : Params.editText(encoded, edit))
        )
      const response = yield* Upstream.send(
        channel,
        Upstream.chatUrl(channel, upstreamModel, inspected.stream),
        Upstream.channelHeaders(channel, target.key),
        body,
        at
      )
      record.status = response.status
      if (response.status >= 400) {
        const text = yield* Upstream.errorBody(response)
        const error = upstream.classify(response.status, text, response.headers)
        if (isCredentialRefusal(error)) {
          yield* health.disable(channel, target.key, response.status, Health.refusal(response.status, Upstream.upstreamMessage(text)))
        }
        return yield* Effect.fail(error)
      }
      const headers = { ...limitHeaders, "x-request-id": input.requestId }
      if (!inspected.stream) {
        const text = yield* Upstream.readText(response)
        const json = yield* Effect.try({
          try: () => JSON.parse(text) as unknown,
          catch: () => new GatewayError.UpstreamUnavailable({ message: `The upstream '${channel.name}' answered with invalid JSON.` })
        })
        let out: unknown
        let metered: Settlement.Metered
        if (same) {
          metered = client.usageOfResponse(json, promptEstimate)
          out = upstreamModel === model.id ? undefined : client.renameInBody(text, model.id)
        } else {
          const decoded = yield* upstream.decodeResponse(json)
          metered = meteredOf(decoded, promptEstimate)
          out = client.encodeResponse(decoded, model.id)
        }
        const now = yield* Clock.currentTimeMillis
        ttfbMs = now - input.startedAt
        record.durationMs = now - attemptStart
        yield* health.end(ticket, "success")
        yield* settlement.finish(metered, { status: 200, errorCode: null, ttfbMs }, legOf())
        return out === undefined || typeof out === "string"
          ? HttpServerResponse.text(out ?? text, { contentType: "application/json", headers })
          : HttpServerResponse.jsonUnsafe(out, { headers })
      }

      // Streams: the first chunk is read before the client gets anything (until then the call can still fail
      // over); after it, every upstream chunk is relayed as soon as it is complete and nothing accumulates but the meter.
      const opened = yield* Upstream.firstChunk(response)
      const committedAt = yield* Clock.currentTimeMillis
      ttfbMs = committedAt - input.startedAt
      let push: (text: string) => string
      let end: () => string
      let metered: () => Settlement.Metered
      if (same) {
        const meter = client.passthroughMeter(inspected)
        const rename = upstreamModel === model.id ? undefined : client.streamRenamer(upstreamModel, model.id)
        push = rename === undefined ? meter.push : (text) => rename(meter.push(text))
        end = rename === undefined ? meter.end : () => rename(meter.end())
        metered = () => meter.metered(promptEstimate)
      } else {
        const events = upstream.eventDecoder()
        const assembler = new StreamAssembly.Assembler()
        const encoder = client.frameEncoder(inspected, model.id)
        const feed = (batch: ReadonlyArray<Canonical.StreamEvent>) => {
          for (const event of batch) assembler.add(event)
          return encoder.push(batch)
        }
        push = (text) => feed(events.push(text))
        end = () => feed(events.end()) + encoder.end()
        metered = () => meteredOf(assembler.response(), promptEstimate)
      }
      // The relay is a plain Node stream piped to the socket (Relay.ts): per chunk a decode and the
      // transform, nothing else. However it ends, the call is settled once, from its end report.
      const settle = (ended: Relay.RelayEnd) =>
        Effect.gen(function*() {
          const closed = ended._tag === "Closed"
          const error = ended._tag === "Failed" ? ended.error : undefined
          // Cut by the client (499), or by the end of the shutdown's grace period (503).
          const cut = closed && (yield* (yield* Draining).draining)
            ? { status: 503, errorCode: "ShuttingDown" }
            : { status: 499, errorCode: "ClientClosed" }
          const outcome: Settlement.Outcome = closed
            ? { ...cut, ttfbMs }
            : error === undefined
            ? { status: 200, errorCode: null, ttfbMs }
            : { status: statusOf(client, error), errorCode: codeOf(error), ttfbMs }
          record.durationMs = (yield* Clock.currentTimeMillis) - attemptStart
          record.errorCode = closed ? cut.errorCode : error === undefined ? null : codeOf(error)
          yield* health.end(ticket, closed ? "neutral" : error === undefined ? "success" : breakerOutcome(error), error?.message)
          yield* settlement.finish(metered(), outcome, legOf())
        }).pipe(Effect.uninterruptible)
      // The settlement runs after this request's fiber, tracked so a shutdown waits for it.
      const settlements = yield* Settlement.Settlements
      const context = yield* Effect.context<never>()
      const relay = new Relay.Relay({
        first: opened.first,
        body: opened.body,
        push,
        end,
        bodyError: (error) => Upstream.transportError(channel, at, error, "body"),
        errorFrame: (error) => client.streamErrorFrame(error, inspected),
        onEnd: (ended) => settlements.run(Effect.provideContext(settle(ended), context))
      })
      return HttpServerResponse.raw(relay, {
        contentType: client.streamContentType?.(inspected) ?? "text/event-stream",
        headers: { ...headers, "cache-control": "no-cache", "x-accel-buffering": "no" }
      })
    })

  let canonicalRequest: Canonical.ChatRequest | undefined
  const canonical = () =>
    canonicalRequest !== undefined
      ? Effect.succeed(canonicalRequest)
      : Effect.tap(client.decodeRequest(inspected), (request) => Effect.sync(() => canonicalRequest = request))

  const sticky = settings.stickyHeader === null ? undefined : input.headers?.[settings.stickyHeader]
  const planned = yield* Effect.flatMap(Clock.currentTimeMillis, (now) =>
    Selection.plan(route.channels, {
      availability: (channel, apiKey) => health.availability(channel, apiKey, now),
      retryAt: health.retryAt
    }, sticky === undefined || sticky === "" ? undefined : sticky))
  const run = Effect.gen(function*() {
    let lastError: GatewayError.GatewayError | undefined
    let previous: Selection.Failure | undefined
    while (tried.length < settings.maxAttempts) {
      const target = planned.next(previous)
      if (target === undefined) break
      const ticket = yield* health.begin(target.channel, target.key, target.force)
      // Another call took the last trial slot of a half-open key since the plan was made: the next target.
      if (ticket === undefined) continue
      const record: AttemptRecord = { channel: target.channel.name, keyHint: Health.hintOf(target.key), status: null, errorCode: null, durationMs: 0 }
      tried.push(record)
      const started = yield* Clock.currentTimeMillis
      const result = yield* Effect.result(
        attempt(target, ticket, record, canonical).pipe(Effect.onInterrupt(() => health.end(ticket, "neutral")))
      )
      if (result._tag === "Success") return result.success
      const error: GatewayError.GatewayError = result.failure
      lastError = error
      record.errorCode = codeOf(error)
      record.durationMs = (yield* Clock.currentTimeMillis) - started
      yield* health.end(
        ticket,
        isCredentialRefusal(error) ? "neutral" : breakerOutcome(error),
        error.message,
        error._tag === "UpstreamRateLimited" && error.retryAfterSeconds !== undefined ? error.retryAfterSeconds * 1000 : undefined
      )
      yield* Effect.logWarning("upstream attempt failed before the first byte").pipe(
        Effect.annotateLogs({
          requestId: input.requestId,
          attempt: tried.length,
          channel: target.channel.name,
          key: record.keyHint,
          error: error.message
        })
      )
      if (!retryable(error)) break
      previous = failureKind(error)
    }
    return yield* Effect.fail(lastError ?? allKeysDisabled(model.id))
  })
  return yield* run.pipe(
    // Admission above ran uninterruptibly (see `Settlement.interruptible`); the attempts can be cut.
    Settlement.interruptible,
    Effect.onExit((exit) => {
      if (Exit.isSuccess(exit)) return Effect.void
      const failed = exit.cause.reasons.find((reason) => reason._tag === "Fail")
      // The status the client got: its dialect's rendering of the error; when interrupted, 499 if it went
      // away, 503 if the shutdown's grace period ended.
      const ended = failed === undefined
        ? Settlement.interruption(exit.cause)
        : { status: statusOf(client, failed.error), errorCode: codeOf(failed.error) }
      const last = tried.at(-1)
      if (failed === undefined && last !== undefined && last.errorCode === null) last.errorCode = ended.errorCode
      return settlement.finish(Settlement.nothing, { ...ended, ttfbMs: null }, legOf())
    })
  )
})


/** Metering of a canonical response: the upstream's usage, or local estimates when it gave none. */
const meteredOf = (response: Canonical.ChatResponse, promptEstimate: number): Settlement.Metered =>
  response.usage !== undefined
    ? {
      promptTokens: response.usage.promptTokens,
      completionTokens: response.usage.completionTokens,
      cachedTokens: response.usage.cachedTokens ?? 0,
      reported: true
    }
    : {
      promptTokens: promptEstimate,
      completionTokens: Tokens.estimateGeneratedTokens(StreamAssembly.generatedText(response)),
      cachedTokens: 0,
      reported: false
    }
