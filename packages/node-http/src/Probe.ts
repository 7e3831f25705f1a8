/**
 * `ChannelProbe`: one real, one-token request through a channel, with the
 * same codecs and HTTP client as calls use, for the console's Test button.
 *
 * @since 0.1.0
 */
import { ChannelProbe, Domain, type GatewayError } from "@modelgate/core"
import { Clock, Effect, Layer } from "effect"
import type { HttpClient } from "effect/http"
import * as Dialects from "./Dialects.ts"
import * as Upstream from "./Upstream.ts"

const probe = (channel: Domain.Channel, model: string | undefined) =>
  Effect.gen(function*() {
    const started = yield* Clock.currentTimeMillis
    const publicModel = model ?? channel.models[0] ?? ""
    const upstreamModel = channel.modelMap[publicModel] ?? publicModel
    const codec = Dialects.upstream(Domain.dialectOf(channel.type))
    const body = yield* codec.encodeRequest({
      model: publicModel,
      messages: [{ role: "user", content: [{ type: "text", text: "ping" }] }],
      maxOutputTokens: 1,
      stream: false
    }, upstreamModel)
    const response = yield* Upstream.send(
      channel,
      Upstream.chatUrl(channel, upstreamModel, false),
      Upstream.channelHeaders(channel, channel.apiKeys[0] ?? ""),
      body
    )
    const text = yield* Effect.orElseSucceed(response.text, () => "")
    const latencyMs = (yield* Clock.currentTimeMillis) - started
    if (response.status >= 400) {
      const error = codec.classify(response.status, text, Upstream.headerRecord(response))
      return { ok: false, latencyMs, status: response.status, message: error.message }
    }
    return { ok: true, latencyMs, status: response.status, message: `${upstreamModel} answered` }
  }).pipe(
    Effect.catch((error: GatewayError.GatewayError) =>
      Effect.map(Clock.currentTimeMillis, () => ({ ok: false, latencyMs: 0, status: null, message: error.message }))
    )
  )

/** @category layers */
export const layer: Layer.Layer<ChannelProbe.ChannelProbe, never, HttpClient.HttpClient> = Layer.effect(
  ChannelProbe.ChannelProbe,
  Effect.gen(function*() {
    const context = yield* Effect.context<HttpClient.HttpClient>()
    return ChannelProbe.ChannelProbe.of({
      probe: (channel, model) => Effect.provideContext(probe(channel, model), context)
    })
  })
)


