/**
 * The Gemini dialect's codecs, from `@modelgate/genai-adapter`, and the Gemini
 * model methods that are not chat (`countTokens`, `embedContent`,
 * `batchEmbedContents`).
 *
 * A Gemini stream is server-sent events with `alt=sse` and a streamed JSON
 * array without it. Upstream Gemini channels are always asked for SSE; when
 * the client wants the array, each upstream event's JSON is re-framed as an
 * array element, byte for byte.
 *
 * @since 0.1.0
 */
import { Admission, type Canonical, Domain, GatewayError, Pricing, Tokens } from "@modelgate/core"
import * as CountTokens from "@modelgate/genai-adapter/CountTokens"
import * as ErrorEnvelope from "@modelgate/genai-adapter/ErrorEnvelope"
import * as Framing from "@modelgate/genai-adapter/Framing"
import * as Models from "@modelgate/genai-adapter/Models"
import * as Passthrough from "@modelgate/genai-adapter/Passthrough"
import * as Request from "@modelgate/genai-adapter/Request"
import * as Response from "@modelgate/genai-adapter/Response"
import * as GeminiStream from "@modelgate/genai-adapter/Stream"
import { Clock, Effect, Predicate, Result } from "effect"
import { HttpServerResponse } from "effect/http"
import type { ClientCodec, EventDecoder, Inspected, RouteHints, UpstreamCodec } from "./Codecs.ts"
import * as OpenAI from "./OpenAIDialect.ts"
import * as Params from "./Params.ts"
import * as RateLimits from "./RateLimits.ts"
import * as Selection from "./Selection.ts"
import * as Settlement from "./Settlement.ts"
import * as Upstream from "./Upstream.ts"

const inspect = (body: string, hints: RouteHints) =>
  Effect.map(Passthrough.inspectBody(body), (inspection): Inspected => ({
    model: hints.model ?? "",
    stream: hints.stream ?? false,
    includeUsage: true,
    maxOutputTokens: inspection.maxOutputTokens,
    json: inspection.body,
    sse: hints.sse ?? true,
    forward: (_, edit) => edit?.params === undefined ? body : JSON.stringify(Params.apply(inspection.body as Record<string, unknown>, edit.params))
  }))

const metered = (usage: Canonical.Usage | undefined, promptEstimate: number, generatedTokens: number): Settlement.Metered =>
  usage !== undefined
    ? { promptTokens: usage.promptTokens, completionTokens: usage.completionTokens, cachedTokens: usage.cachedTokens ?? 0, reported: true }
    : { promptTokens: promptEstimate, completionTokens: generatedTokens, cachedTokens: 0, reported: false }

/** Re-frames Gemini SSE text as a streamed JSON array, element by element. */
const arrayReframer = () => {
  const parser = new Framing.SseParser()
  const framer = new Framing.ArrayFramer()
  const frame = (events: ReadonlyArray<string>) => {
    let out = ""
    for (const data of events) out += framer.element(JSON.parse(data))
    return out
  }
  return { push: (text: string) => frame(parser.push(text)), end: () => frame(parser.end()) + framer.end() }
}

/** The Gemini client side. @category codecs */
export const client: ClientCodec = {
  dialect: "gemini",
  inspect,
  decodeRequest: (inspected) => Request.decodeRequest(inspected.json, inspected.model, { stream: inspected.stream }),
  passthroughMeter: (inspected) => {
    const meter = new Passthrough.PassthroughMeter()
    const reframe = inspected.sse === false ? arrayReframer() : undefined
    return {
      push: (text) => {
        meter.feed(text)
        return reframe === undefined ? text : reframe.push(text)
      },
      end: () => {
        meter.end()
        return reframe === undefined ? "" : reframe.end()
      },
      metered: (promptEstimate) => metered(meter.usage(), promptEstimate, meter.estimatedCompletionTokens())
    }
  },
  usageOfResponse: (json, promptEstimate) => metered(Passthrough.usageOfResponse(json), promptEstimate, 0),
  encodeResponse: (response, model) => Response.encodeResponse(response, model),
  frameEncoder: (inspected, model) => {
    const encoder = new GeminiStream.StreamEncoder(model)
    const framer = inspected.sse === false ? new Framing.ArrayFramer() : undefined
    const frame = (chunks: ReadonlyArray<unknown>) => {
      let text = ""
      for (const chunk of chunks) text += framer === undefined ? Framing.sseEvent(chunk) : framer.element(chunk)
      return text
    }
    return {
      push: (events) => frame(encoder.pushAll(events)),
      end: () => frame(encoder.end()) + (framer === undefined ? "" : framer.end())
    }
  },
  renderError: (error) => ErrorEnvelope.toResponse(error),
  streamErrorFrame: (error) => ErrorEnvelope.streamError(error)
}

/** Incremental decoding of a Gemini upstream's SSE text; throws the upstream's error when an event is one. */
const eventDecoder = (): EventDecoder => {
  const parser = new Framing.SseParser()
  const decoder = new GeminiStream.StreamDecoder()
  const feed = (events: ReadonlyArray<string>): Array<Canonical.StreamEvent> => {
    const decoded = decoder.pushAll(events, true)
    if (Result.isFailure(decoded)) throw decoded.failure
    return decoded.success
  }
  return {
    push: (text) => feed(parser.push(text)),
    end: () => [...feed(parser.end()), ...decoder.end()]
  }
}

/** The Gemini upstream side. @category codecs */
export const upstream: UpstreamCodec = {
  dialect: "gemini",
  encodeRequest: (request, upstreamModel) =>
    Effect.map(
      Request.encodeRequest(request, { thinkingStyle: Request.thinkingStyleOf(upstreamModel) }),
      (body) => JSON.stringify(body)
    ),
  decodeResponse: (json) => Response.decodeResponse(json),
  eventDecoder,
  classify: (status, body, headers) => ErrorEnvelope.classifyUpstream(status, body, headers)
}

const searchParam = (search: string, name: string): string | undefined =>
  search.length === 0 ? undefined : new URLSearchParams(search).get(name) ?? undefined

/** `GET /v1beta/models` with `pageSize` and `pageToken`. @category models */
export const modelsList = (models: ReadonlyArray<Domain.Model>, search: string) =>
  Models.modelsPage(models, searchParam(search, "pageSize"), searchParam(search, "pageToken"))

/** `GET /v1beta/models/{model}`. @category models */
export const modelObject = (model: Domain.Model): unknown => Models.modelResource(model)

/** One non-chat Gemini method call's inputs. @category models */
export interface MethodInput {
  readonly requestId: string
  readonly key: Domain.ApiKey
  readonly body: string
  readonly model: string
  readonly search: string
}

const parseBody = (body: string) =>
  Effect.try({
    try: () => JSON.parse(body) as unknown,
    catch: (error) => new GatewayError.InvalidRequest({ message: `The request body is not valid JSON: ${(error as Error).message}` })
  })

const json = (requestId: string, value: unknown) => HttpServerResponse.jsonUnsafe(value, { headers: { "x-request-id": requestId } })

/**
 * `:countTokens` (never billed: a Gemini channel counts it, else it is counted
 * locally), `:embedContent` and `:batchEmbedContents` (billed as input tokens;
 * relayed to a Gemini channel, or translated to an OpenAI-style channel's
 * `/embeddings`).
 *
 * Rate limits: every method counts as a request (`rpm`) and holds a
 * concurrency slot while it runs, since each may reach an upstream.
 * `countTokens` generates nothing and is never billed, so it counts no tokens
 * (`tpm`); embeddings count their input text (bytes / 4), corrected to the
 * tokens billed. A refusal is Gemini's 429 `RESOURCE_EXHAUSTED` with a
 * `RetryInfo` detail and `retry-after`.
 *
 * @category methods
 */
export const geminiMethod = Effect.fnUntraced(function*(
  action: "countTokens" | "embedContent" | "batchEmbedContents",
  input: MethodInput
) {
  const route = yield* Admission.authorize(input.key, input.model)
  const body = yield* parseBody(input.body)
  const ordered = yield* Selection.order(route.channels)
  if (action === "countTokens") {
    const local = yield* CountTokens.countTokens(body)
    const permit = yield* RateLimits.admit(input.key, route.group, route.model.id, 0)
    return yield* countTokens(input, route, ordered, local).pipe(Effect.ensuring(permit.release(0)))
  }
  return yield* embed(action, input, route, ordered, body)
})

/** Relays `:countTokens` to a Gemini channel, falling back to the local count. */
const countTokens = Effect.fnUntraced(function*(
  input: MethodInput,
  route: Admission.Route,
  ordered: ReadonlyArray<Domain.Channel>,
  local: unknown
) {
  const channel = ordered.find((c) => c.type === "gemini")
  if (channel === undefined) return json(input.requestId, local)
  const upstreamModel = Domain.upstreamModel(channel, route.model.id)
  const counted = yield* Upstream.send(
    channel,
    Upstream.geminiMethodUrl(channel, upstreamModel, "countTokens"),
    Upstream.channelHeaders(channel, yield* Selection.pickKey(channel)),
    input.body
  ).pipe(
    Effect.flatMap((response) => response.status === 200 ? Effect.orElseSucceed(response.text, () => "") : Effect.succeed("")),
    Effect.map((text): unknown => {
      try {
        const value: unknown = JSON.parse(text)
        return Predicate.isObject(value) && typeof (value as { totalTokens?: unknown }).totalTokens === "number" ? value : local
      } catch {
        return local
      }
    }),
    Effect.orElseSucceed((): unknown => local)
  )
  return json(input.requestId, counted)
})

const texts = (content: unknown): string =>
  Predicate.isObject(content) && Array.isArray((content as { parts?: unknown }).parts)
    ? ((content as { parts: Array<unknown> }).parts)
      .map((part) => Predicate.isObject(part) && typeof (part as { text?: unknown }).text === "string" ? (part as { text: string }).text : "")
      .join("")
    : ""

const embed = Effect.fnUntraced(function*(
  action: "embedContent" | "batchEmbedContents",
  input: MethodInput,
  route: Admission.Route,
  ordered: ReadonlyArray<Domain.Channel>,
  body: unknown
) {
  const requests: ReadonlyArray<unknown> = action === "embedContent"
    ? [body]
    : Predicate.isObject(body) && Array.isArray((body as { requests?: unknown }).requests)
    ? (body as { requests: Array<unknown> }).requests
    : []
  if (requests.length === 0 || requests.some((r) => !Predicate.isObject(r) || !Predicate.isObject((r as { content?: unknown }).content))) {
    return yield* new GatewayError.InvalidRequest({
      message: action === "embedContent"
        ? "'content' is required: an object with 'parts' holding the text to embed."
        : "'requests' is required: a non-empty array of { content: { parts: [...] } }.",
      param: action === "embedContent" ? "content" : "requests"
    })
  }
  const inputTexts = requests.map((r) => texts((r as { content: unknown }).content))
  const promptTokens = inputTexts.reduce((sum, text) => sum + Math.ceil(Tokens.utf8Length(text) / 4), 0)
  const permit = yield* RateLimits.admit(input.key, route.group, route.model.id, promptTokens)
  const startedAt = yield* Clock.currentTimeMillis
  const settlement = yield* RateLimits.settleUnder(permit, Settlement.open({
    requestId: input.requestId,
    startedAt,
    key: input.key,
    model: route.model,
    ratioMicros: route.group.ratioMicros,
    dialectIn: "gemini",
    stream: false
  }, Pricing.worstCase(route.model, route.group.ratioMicros, Tokens.bodyTokenBound(Tokens.utf8Length(input.body)), 0)))
  const channel = ordered.find((c) => c.type === "gemini") ?? ordered.find((c) => c.type === "openai" || c.type === "azure")
  let leg: Settlement.Leg | undefined
  return yield* Effect.gen(function*() {
    if (channel === undefined) {
      return yield* new GatewayError.UnsupportedFeature({ message: `No channel serving '${route.model.id}' in your group can make embeddings.` })
    }
    const upstreamModel = Domain.upstreamModel(channel, route.model.id)
    leg = { channel: channel.name, upstreamModel, dialectOut: Domain.dialectOf(channel.type), attempts: 1 }
    const apiKey = yield* Selection.pickKey(channel)
    let out: unknown
    if (channel.type === "gemini") {
      const forwarded = action === "batchEmbedContents"
        ? JSON.stringify({ requests: requests.map((r) => ({ ...(r as object), model: `models/${upstreamModel}` })) })
        : input.body
      const response = yield* Upstream.send(channel, Upstream.geminiMethodUrl(channel, upstreamModel, action), Upstream.channelHeaders(channel, apiKey), forwarded)
      const text = yield* Effect.orElseSucceed(response.text, () => "")
      if (response.status >= 400) return yield* Effect.fail(upstream.classify(response.status, text, Upstream.headerRecord(response)))
      out = yield* Effect.try({ try: () => JSON.parse(text) as unknown, catch: () => new GatewayError.UpstreamUnavailable({ message: "The upstream answered with invalid JSON." }) })
    } else {
      const url = channel.type === "azure"
        ? Upstream.chatUrl(channel, upstreamModel, false).replace("/chat/completions", "/embeddings")
        : `${channel.baseUrl.replace(/\/+$/, "")}/embeddings`
      const response = yield* Upstream.send(channel, url, Upstream.channelHeaders(channel, apiKey), JSON.stringify({ model: upstreamModel, input: inputTexts }))
      const text = yield* Effect.orElseSucceed(response.text, () => "")
      if (response.status >= 400) return yield* Effect.fail(OpenAI.upstream.classify(response.status, text, Upstream.headerRecord(response)))
      const parsed = yield* Effect.try({
        try: () => JSON.parse(text) as { data: Array<{ index: number; embedding: Array<number> }> },
        catch: () => new GatewayError.UpstreamUnavailable({ message: "The upstream answered with invalid JSON." })
      })
      const values = [...(parsed.data ?? [])].sort((a, b) => a.index - b.index).map((d) => ({ values: d.embedding }))
      out = action === "embedContent" ? { embedding: values[0] ?? { values: [] } } : { embeddings: values }
    }
    yield* settlement.finish(
      { promptTokens, completionTokens: 0, cachedTokens: 0, reported: false },
      { status: 200, errorCode: null, ttfbMs: null },
      leg
    )
    return json(input.requestId, out)
  }).pipe(
    Effect.onExit((exit) =>
      exit._tag === "Success" ? Effect.void : settlement.finish(Settlement.nothing, { status: 502, errorCode: "Failed", ttfbMs: null }, leg)
    )
  )
})
