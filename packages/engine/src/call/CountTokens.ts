/**
 * Token counts (Gemini `:countTokens`, Anthropic `/v1/messages/count_tokens`):
 * never billed, and answered by a channel of the client's own dialect that
 * counts, or by one whose counter takes a translated request (Bedrock's
 * `CountTokens`; routed with failover, like any upstream call), else counted
 * locally (also when every such channel failed or refused to count). A count is a request for the
 * rate limits (`rpm`, a concurrency slot while it runs) but generates nothing,
 * so it counts no tokens (`tpm`). It writes no usage record; failed attempts
 * are logged.
 *
 * @since 0.1.0
 */
import { type Dialect, Domain, GatewayError } from "@modelgate/core"
import { Clock, Effect } from "effect"
import type * as Telemetry from "../telemetry/Telemetry.ts"
import * as Exchange from "../wire/Exchange.ts"
import * as Calls from "./Calls.ts"
import * as Dialects from "./Dialects.ts"
import * as Failover from "./Failover.ts"

/** One count's inputs. @category models */
export interface CountInput {
  readonly requestId: string
  readonly key: Domain.ApiKey
  readonly client: Dialect.ClientDialect
  readonly counter: Dialect.ClientCountTokens
  readonly body: string
  readonly hints: Dialect.RouteHints
  /** The request's headers (a same-dialect channel gets those the client dialect forwards). */
  readonly headers?: Dialect.HeaderBag | undefined
  /** The call's trace, when tracing is on (`GatewayRequest.trace`). */
  readonly trace?: Telemetry.CallTrace | undefined
}

/**
 * Runs a token count.
 *
 * @category calls
 */
export const handle = Effect.fnUntraced(function*(input: CountInput) {
  const call = yield* input.counter.decode(input.body, input.hints)
  const local = call.local
  const headers = { "x-request-id": input.requestId }
  return yield* Calls.unbilled({
    requestId: input.requestId,
    key: input.key,
    client: input.client,
    model: call.model,
    use: "generate",
    stream: false,
    tokens: () => 0,
    trace: input.trace,
    operation: "count_tokens"
  }, (route, log) => {
    // A channel of the client's dialect that counts gets the client's body; one whose counter takes a
    // translated request (Bedrock's CountTokens) gets the request translated.
    const relays = (upstream: Dialect.UpstreamDialect) => upstream.dialect === input.client.dialect
    const channels = route.channels.filter((c) => {
      const upstream = Dialects.ofChannel(c, Domain.upstreamModel(c, route.model.id))
      if (upstream.countTokens === undefined) return false
      return relays(upstream) ||
        (upstream.countTokens.translated !== undefined && call.canonical !== undefined && call.answer !== undefined)
    })
    if (channels.length === 0) return Effect.succeed(Exchange.json(local, 200, headers))
    const forwarded = input.client.forwardHeaders?.(input.headers ?? {})
    return Effect.flatMap(Clock.currentTimeMillis, (startedAt) =>
      Failover.run({
        requestId: input.requestId,
        startedAt,
        model: route.model.id,
        channels,
        tried: log.tried,
        trace: input.trace,
        operation: "count_tokens",
        attempt: (target, at, record) =>
          Effect.gen(function*() {
            const { channel } = target
            const upstreamModel = Domain.upstreamModel(channel, route.model.id)
            const upstream = Dialects.ofChannel(channel, upstreamModel)
            const counter = upstream.countTokens!
            const url = counter.url(channel, upstreamModel)
            const translated = relays(upstream) ? undefined : counter.translated
            if (translated !== undefined) {
              const request = yield* call.canonical!()
              const body = yield* translated.encode(request, upstreamModel)
              const text = yield* Failover.exchange(target, upstream, url, body, at, record)
              const tokens = translated.read(text)
              if (tokens === undefined) {
                return yield* new GatewayError.UpstreamUnavailable({
                  message: `The upstream '${channel.name}' answered with something that is not a token count.`
                })
              }
              return Exchange.json(call.answer!(tokens), 200, headers)
            }
            const body = call.forward(upstreamModel)
            const text = yield* Failover.exchange(
              target,
              upstream,
              url,
              counter.relayBody === undefined ? body : counter.relayBody(body),
              at,
              record,
              forwarded
            )
            // Relayed as the upstream wrote it (fields beyond the count included), once it is a token count.
            if (!upstream.countTokens!.isCount(text)) {
              return yield* new GatewayError.UpstreamUnavailable({
                message: `The upstream '${channel.name}' answered with something that is not a token count.`
              })
            }
            return Exchange.jsonText(text, 200, headers)
          })
      }).pipe(
        Effect.catch((error: GatewayError.GatewayError) =>
          Effect.as(
            Effect.logInfo("the token count was made locally: no upstream counted it").pipe(
              Effect.annotateLogs({ requestId: input.requestId, error: error.message })
            ),
            Exchange.json(local, 200, headers)
          )
        )
      ))
  })
})
