/**
 * `POST /v1/embeddings` for OpenAI clients: admitted (rate limits, then the
 * hold) and billed like a chat call (the prompt is the input; no output
 * tokens, so the `tpm` estimate is the body's bytes / 4), relayed to an OpenAI-style
 * channel with only the model changed.
 *
 * @since 0.1.0
 */
import { Admission, Domain, GatewayError, Pricing, Tokens } from "@modelgate/core"
import { Clock, Effect, Predicate } from "effect"
import { HttpServerResponse } from "effect/http"
import * as OpenAI from "./OpenAIDialect.ts"
import * as RateLimits from "./RateLimits.ts"
import * as Selection from "./Selection.ts"
import * as Settlement from "./Settlement.ts"
import * as Upstream from "./Upstream.ts"

/** One embeddings call's inputs. @category models */
export interface EmbeddingsInput {
  readonly requestId: string
  readonly key: Domain.ApiKey
  readonly body: string
}

const invalid = (message: string, param?: string) =>
  new GatewayError.InvalidRequest(param === undefined ? { message } : { message, param })

/**
 * Runs an embeddings call.
 *
 * @category calls
 */
export const openAIEmbeddings = Effect.fnUntraced(function*(input: EmbeddingsInput) {
  const json = yield* Effect.try({
    try: () => JSON.parse(input.body) as unknown,
    catch: (error) => invalid(`The request body is not valid JSON: ${(error as Error).message}`)
  })
  if (!Predicate.isObject(json) || Array.isArray(json)) return yield* invalid("The request body must be a JSON object.")
  const body = json as Record<string, unknown>
  if (typeof body.model !== "string" || body.model.length === 0) return yield* invalid("'model' is required (a model name).", "model")
  const okInput = typeof body.input === "string" || (Array.isArray(body.input) && body.input.length > 0)
  if (!okInput) return yield* invalid("'input' is required: a string or a non-empty array of strings or token arrays.", "input")
  const route = yield* Admission.authorize(input.key, body.model)
  const startedAt = yield* Clock.currentTimeMillis
  const bodyBytes = Tokens.utf8Length(input.body)
  const bound = Tokens.bodyTokenBound(bodyBytes)
  const permit = yield* RateLimits.admit(input.key, route.group, route.model.id, RateLimits.estimateTokens(bodyBytes, undefined, route.model))
  const settlement = yield* RateLimits.settleUnder(permit, Settlement.open({
    requestId: input.requestId,
    startedAt,
    key: input.key,
    model: route.model,
    ratioMicros: route.group.ratioMicros,
    dialectIn: "openai",
    stream: false
  }, yield* Pricing.holdFor(route.model, route.group.ratioMicros, { promptTokens: bound, outputTokens: 0 })))
  const candidates = (yield* Selection.order(route.channels)).filter((c) => c.type === "openai" || c.type === "azure")
  const channel = candidates[0]
  let leg: Settlement.Leg | undefined
  return yield* Effect.gen(function*() {
    if (channel === undefined) {
      return yield* new GatewayError.UnsupportedFeature({
        message: `The model '${route.model.id}' is served by no OpenAI-compatible channel in your group, and embeddings are relayed only to those.`
      })
    }
    const upstreamModel = Domain.upstreamModel(channel, route.model.id)
    leg = { channel: channel.name, upstreamModel, dialectOut: "openai", attempts: 1 }
    const url = channel.type === "azure"
      ? Upstream.chatUrl(channel, upstreamModel, false).replace("/chat/completions", "/embeddings")
      : `${channel.baseUrl.replace(/\/+$/, "")}/embeddings`
    const response = yield* Upstream.send(
      channel,
      url,
      Upstream.channelHeaders(channel, yield* Selection.pickKey(channel)),
      JSON.stringify({ ...body, model: upstreamModel })
    )
    const ttfbMs = (yield* Clock.currentTimeMillis) - startedAt
    if (response.status >= 400) {
      const text = yield* Upstream.errorBody(response)
      return yield* Effect.fail(OpenAI.upstream.classify(response.status, text, Upstream.headerRecord(response)))
    }
    const text = yield* Effect.mapError(response.text, () => new GatewayError.UpstreamUnavailable({ message: `The upstream '${channel.name}' broke off the answer.` }))
    const parsed = yield* Effect.try({
      try: () => JSON.parse(text) as { usage?: { prompt_tokens?: number } },
      catch: () => new GatewayError.UpstreamUnavailable({ message: `The upstream '${channel.name}' answered with invalid JSON.` })
    })
    const prompt = parsed.usage?.prompt_tokens
    yield* settlement.finish(
      typeof prompt === "number"
        ? { promptTokens: prompt, completionTokens: 0, cachedTokens: 0, reported: true }
        : { promptTokens: Math.ceil(Tokens.utf8Length(JSON.stringify(body.input)) / 4), completionTokens: 0, cachedTokens: 0, reported: false },
      { status: 200, errorCode: null, ttfbMs },
      leg
    )
    const out = upstreamModel === route.model.id ? text : JSON.stringify({ ...parsed, model: route.model.id })
    return HttpServerResponse.text(out, {
      contentType: "application/json",
      headers: { ...RateLimits.successHeaders("openai", permit), "x-request-id": input.requestId }
    })
  }).pipe(
    Effect.onExit((exit) =>
      exit._tag === "Success" ? Effect.void : settlement.finish(Settlement.nothing, { status: 502, errorCode: "Failed", ttfbMs: null }, leg)
    )
  )
})
