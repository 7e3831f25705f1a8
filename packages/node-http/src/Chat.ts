/**
 * One chat call, end to end: inspect the body, authorise the model, admit it
 * under the rate limits (`RateLimits`), hold the worst-case cost, try the
 * candidate channels in order until one answers, relay the answer (bytes as they are when client and channel speak the same
 * dialect, translated through the canonical model otherwise), meter it and
 * settle (which also releases the rate-limit permit with the metered tokens).
 *
 * Failover: a call moves to the next candidate on transport errors, timeouts,
 * upstream 5xx and 429 before the first byte reached the client; caller errors
 * (other upstream 4xx) are never retried, and nothing is retried once the
 * client has received a byte (a failure then is reported in-band).
 *
 * @since 0.1.0
 */
import { Admission, type Canonical, Domain, GatewayError, Pricing, StreamAssembly, Tokens } from "@modelgate/core"
import { Clock, Duration, Effect, Exit, Stream } from "effect"
import { HttpServerResponse } from "effect/http"
import type { ClientCodec, RouteHints, UpstreamCodec } from "./Codecs.ts"
import * as RateLimits from "./RateLimits.ts"
import * as Selection from "./Selection.ts"
import * as Settlement from "./Settlement.ts"
import * as Upstream from "./Upstream.ts"

/** The most channels one call tries. @category constants */
export const MAX_ATTEMPTS = 3

/** One call's inputs. @category models */
export interface ChatInput {
  readonly requestId: string
  readonly startedAt: number
  readonly key: Domain.ApiKey
  readonly client: ClientCodec
  readonly upstreams: (dialect: Domain.Dialect) => UpstreamCodec
  readonly body: string
  readonly hints: RouteHints
}

const retryable = (error: GatewayError.GatewayError): boolean =>
  error._tag === "UpstreamUnavailable" || error._tag === "UpstreamTimeout" || error._tag === "UpstreamRateLimited"

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
    RateLimits.estimateTokens(bodyBytes, inspected.maxOutputTokens, model)
  )
  const limitHeaders = RateLimits.successHeaders(client.dialect, permit)
  const settlement = yield* RateLimits.settleUnder(permit, Settlement.open({
    requestId: input.requestId,
    startedAt: input.startedAt,
    key,
    model,
    ratioMicros: route.group.ratioMicros,
    dialectIn: client.dialect,
    stream: inspected.stream
  }, held))

  let lastLeg: Settlement.Leg | undefined
  let ttfbMs: number | null = null
  const attempt = (channel: Domain.Channel, attempts: number, canonical: () => Effect.Effect<Canonical.ChatRequest, GatewayError.GatewayError>) =>
    Effect.gen(function*() {
      const upstreamModel = Domain.upstreamModel(channel, model.id)
      const dialectOut = Domain.dialectOf(channel.type)
      const upstream = input.upstreams(dialectOut)
      const same = dialectOut === client.dialect
      lastLeg = { channel: channel.name, upstreamModel, dialectOut, attempts }
      const leg = lastLeg
      const body = same ? inspected.forward(upstreamModel) : yield* Effect.flatMap(canonical(), (request) => upstream.encodeRequest(request, upstreamModel, model))
      const apiKey = yield* Selection.pickKey(channel)
      const response = yield* Upstream.send(
        channel,
        Upstream.chatUrl(channel, upstreamModel, inspected.stream),
        Upstream.channelHeaders(channel, apiKey),
        body
      )
      ttfbMs = (yield* Clock.currentTimeMillis) - input.startedAt
      if (response.status >= 400) {
        const text = yield* Upstream.errorBody(response)
        return yield* Effect.fail(upstream.classify(response.status, text, Upstream.headerRecord(response)))
      }
      const headers = { ...limitHeaders, "x-request-id": input.requestId }
      const cutError = new GatewayError.UpstreamUnavailable({
        message: `The upstream '${channel.name}' broke off the answer.`
      })
      if (!inspected.stream) {
        const text = yield* Effect.mapError(response.text, () => cutError)
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
        yield* settlement.finish(metered, { status: 200, errorCode: null, ttfbMs }, leg)
        return out === undefined || typeof out === "string"
          ? HttpServerResponse.text(out ?? text, { contentType: "application/json", headers })
          : HttpServerResponse.jsonUnsafe(out, { headers })
      }

      // Streams: every upstream chunk is relayed as soon as it is complete; nothing accumulates but the meter.
      let outcome: Settlement.Outcome = { status: 200, errorCode: null, ttfbMs }
      const decoder = new TextDecoder()
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
      const idle = Duration.millis(channel.timeouts.idleMs)
      const frames = response.stream.pipe(
        Stream.mapError(() => cutError),
        Stream.timeoutOrElse({
          duration: idle,
          orElse: () =>
            Stream.fail(
              new GatewayError.UpstreamTimeout({
                message: `The upstream '${channel.name}' sent nothing for ${channel.timeouts.idleMs} ms in the middle of the answer.`
              })
            )
        }),
        // Translation can meet an upstream event it cannot read (or an in-band upstream error): those throw.
        Stream.mapEffect((bytes) => guard(() => push(decoder.decode(bytes, { stream: true })))),
        Stream.concat(Stream.fromEffect(guard(() => push(decoder.decode()) + end()))),
        Stream.catch((error: GatewayError.GatewayError) => {
          outcome = { status: statusOf(client, error), errorCode: codeOf(error), ttfbMs }
          return Stream.succeed(client.streamErrorFrame(error, inspected))
        }),
        Stream.filter((text) => text.length > 0),
        Stream.encodeText,
        Stream.onExit((exit) =>
          settlement.finish(
            metered(),
            Exit.isSuccess(exit) ? outcome : { status: 499, errorCode: "ClientClosed", ttfbMs },
            leg
          )
        )
      )
      return HttpServerResponse.stream(frames, {
        contentType: client.streamContentType?.(inspected) ?? "text/event-stream",
        headers: { ...headers, "cache-control": "no-cache", "x-accel-buffering": "no" }
      })
    })

  let canonicalRequest: Canonical.ChatRequest | undefined
  const canonical = () =>
    canonicalRequest !== undefined
      ? Effect.succeed(canonicalRequest)
      : Effect.tap(client.decodeRequest(inspected), (request) => Effect.sync(() => canonicalRequest = request))

  const candidates = (yield* Selection.order(route.channels)).slice(0, MAX_ATTEMPTS)
  const run = Effect.gen(function*() {
    let lastError: GatewayError.GatewayError | undefined
    for (let i = 0; i < candidates.length; i++) {
      const result = yield* Effect.result(attempt(candidates[i]!, i + 1, canonical))
      if (result._tag === "Success") return result.success
      const error: GatewayError.GatewayError = result.failure
      lastError = error
      if (!retryable(error) || i === candidates.length - 1) break
      yield* Effect.logWarning("upstream failed before the first byte; trying the next channel").pipe(
        Effect.annotateLogs({ requestId: input.requestId, channel: candidates[i]!.name, error: error.message })
      )
    }
    return yield* Effect.fail(lastError!)
  })
  return yield* run.pipe(
    Effect.onExit((exit) =>
      Exit.isSuccess(exit)
        ? Effect.void
        : settlement.finish(Settlement.nothing, {
          status: exit.cause.reasons.some((r) => r._tag === "Fail") ? 502 : 499,
          errorCode: exitCode(exit),
          ttfbMs
        }, lastLeg)
    )
  )
})

const exitCode = (exit: Exit.Exit<unknown, GatewayError.GatewayError>): string => {
  if (Exit.isSuccess(exit)) return ""
  for (const reason of exit.cause.reasons) {
    if (reason._tag === "Fail") return reason.error._tag
  }
  return "ClientClosed"
}

/** Runs a synchronous transform, turning a throw into the gateway error it carries. */
const guard = (f: () => string): Effect.Effect<string, GatewayError.GatewayError> =>
  Effect.try({
    try: f,
    catch: (error) =>
      GatewayError.isGatewayError(error)
        ? error
        : new GatewayError.UpstreamUnavailable({ message: "The upstream's answer could not be read." })
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
