/**
 * `POST /v1/embeddings` for OpenAI clients: admitted (rate limits, then the
 * hold) and billed like a chat call (the prompt is the input; no output
 * tokens, so the `tpm` estimate is the body's bytes / 4), relayed to an
 * OpenAI-style channel (`openai`, `azure`) with only the model changed.
 *
 * Routed like a chat call (`Failover.run`): the group's OpenAI-style channels
 * for the model in routing order, failing over on connection errors,
 * timeouts, 5xx and 429 up to `routing.max_attempts`, every attempt feeding
 * its key's breaker (401/403 disable the key) and listed on the usage record,
 * the answer read within the channel's timeouts.
 *
 * @since 0.1.0
 */
import { Admission, Domain, GatewayError, Pricing, Tokens } from "@modelgate/core"
import { Clock, Effect, Exit, Predicate } from "effect"
import { HttpServerResponse } from "effect/http"
import * as Failover from "./Failover.ts"
import * as OpenAI from "./OpenAIDialect.ts"
import * as RateLimits from "./RateLimits.ts"
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

/** The `/embeddings` endpoint of an OpenAI-style channel (an Azure deployment's for `azure`). @category targets */
export const embeddingsUrl = (channel: Domain.Channel, upstreamModel: string): string =>
  channel.type === "azure"
    ? Upstream.chatUrl(channel, upstreamModel, false).replace("/chat/completions", "/embeddings")
    : `${channel.baseUrl.replace(/\/+$/, "")}/embeddings`

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
  const model = route.model
  const startedAt = yield* Clock.currentTimeMillis
  const bodyBytes = Tokens.utf8Length(input.body)
  const bound = Tokens.bodyTokenBound(bodyBytes)
  const permit = yield* RateLimits.admit(input.key, route.group, model.id, RateLimits.estimateTokens(bodyBytes, undefined, model))
  const settlement = yield* RateLimits.settleUnder(permit, Settlement.open({
    requestId: input.requestId,
    startedAt,
    key: input.key,
    model,
    ratioMicros: route.group.ratioMicros,
    dialectIn: "openai",
    stream: false
  }, yield* Pricing.holdFor(model, route.group.ratioMicros, { promptTokens: bound, outputTokens: 0 })))
  const channels = route.channels.filter((c) => c.type === "openai" || c.type === "azure")
  const tried: Array<Failover.AttemptRecord> = []
  let lastLeg: Omit<Settlement.Leg, "attempts" | "attemptLog"> | undefined
  const legOf = (): Settlement.Leg | undefined =>
    lastLeg === undefined ? undefined : { ...lastLeg, attempts: tried.length, attemptLog: tried }
  return yield* Effect.gen(function*() {
    if (channels.length === 0) {
      return yield* new GatewayError.UnsupportedFeature({
        message: `The model '${model.id}' is served by no OpenAI-compatible channel in your group, and embeddings are relayed only to those.`
      })
    }
    const answer = yield* Failover.run({
      requestId: input.requestId,
      startedAt,
      model: model.id,
      channels,
      tried,
      attempt: (target, at, record) =>
        Effect.gen(function*() {
          const { channel } = target
          const upstreamModel = Domain.upstreamModel(channel, model.id)
          lastLeg = { channel: channel.name, upstreamModel, dialectOut: "openai" }
          const forwarded = JSON.stringify({ ...body, model: upstreamModel })
          const text = yield* Failover.exchange(target, embeddingsUrl(channel, upstreamModel), forwarded, at, record, OpenAI.upstream.classify)
          const parsed = yield* Effect.try({
            try: () => JSON.parse(text) as { usage?: { prompt_tokens?: number } },
            catch: () => new GatewayError.UpstreamUnavailable({ message: `The upstream '${channel.name}' answered with invalid JSON.` })
          })
          return { text, parsed, upstreamModel }
        })
    })
    const ttfbMs = (yield* Clock.currentTimeMillis) - startedAt
    const prompt = answer.parsed.usage?.prompt_tokens
    yield* settlement.finish(
      typeof prompt === "number"
        ? { promptTokens: prompt, completionTokens: 0, cachedTokens: 0, reported: true }
        : { promptTokens: Math.ceil(Tokens.utf8Length(JSON.stringify(body.input)) / 4), completionTokens: 0, cachedTokens: 0, reported: false },
      { status: 200, errorCode: null, ttfbMs },
      legOf()
    )
    const out = answer.upstreamModel === model.id ? answer.text : JSON.stringify({ ...answer.parsed, model: model.id })
    return HttpServerResponse.text(out, {
      contentType: "application/json",
      headers: { ...RateLimits.successHeaders("openai", permit), "x-request-id": input.requestId }
    })
  }).pipe(
    Settlement.interruptible,
    Effect.onExit((exit) =>
      Exit.isSuccess(exit) ? Effect.void : settlement.finish(Settlement.nothing, Settlement.failed(exit, OpenAI.client.renderError), legOf())
    )
  )
})
