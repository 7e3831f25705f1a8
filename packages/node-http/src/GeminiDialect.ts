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
import * as GenerateContent from "@modelgate/genai-adapter/GenerateContent"
import * as Models from "@modelgate/genai-adapter/Models"
import * as Passthrough from "@modelgate/genai-adapter/Passthrough"
import * as Request from "@modelgate/genai-adapter/Request"
import * as Response from "@modelgate/genai-adapter/Response"
import * as GeminiStream from "@modelgate/genai-adapter/Stream"
import { Clock, Effect, Exit, Predicate, Result, Schema } from "effect"
import { HttpServerResponse } from "effect/http"
import { randomBytes } from "node:crypto"
import type { ClientCodec, EventDecoder, Inspected, RouteHints, UpstreamCodec } from "./Codecs.ts"
import * as Embeddings from "./Embeddings.ts"
import * as Failover from "./Failover.ts"
import * as OpenAI from "./OpenAIDialect.ts"
import * as Params from "./Params.ts"
import * as RateLimits from "./RateLimits.ts"
import * as Settlement from "./Settlement.ts"
import * as Upstream from "./Upstream.ts"

const inspect = (body: string, hints: RouteHints) =>
  Effect.map(Passthrough.inspectBody(body), (inspection): Inspected => ({
    model: hints.model ?? "",
    stream: hints.stream ?? false,
    includeUsage: true,
    maxOutputTokens: inspection.maxOutputTokens,
    choices: inspection.candidateCount,
    mediaParts: inspection.mediaParts,
    json: inspection.body,
    sse: hints.sse ?? true,
    forward: (_, edit) => edit?.params === undefined ? body : JSON.stringify(Params.apply(inspection.body as Record<string, unknown>, edit.params))
  }))

const metered = (usage: Canonical.Usage | undefined, promptEstimate: number, generatedTokens: number): Settlement.Metered =>
  usage !== undefined
    ? { promptTokens: usage.promptTokens, completionTokens: usage.completionTokens, cachedTokens: usage.cachedTokens ?? 0, reported: true }
    : { promptTokens: promptEstimate, completionTokens: generatedTokens, cachedTokens: 0, reported: false }

/**
 * The array framer of each JSON-array stream being written, so that an error
 * after the stream started is written as its last element and closes the
 * array (`streamErrorFrame`).
 */
const arrayFramers = new WeakMap<Inspected, Framing.ArrayFramer>()

const arrayFramerFor = (inspected: Inspected): Framing.ArrayFramer => {
  const framer = new Framing.ArrayFramer()
  arrayFramers.set(inspected, framer)
  return framer
}

/** Re-frames Gemini SSE text as a streamed JSON array, element by element. */
const arrayReframer = (inspected: Inspected) => {
  const parser = new Framing.SseParser()
  const framer = arrayFramerFor(inspected)
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
    const reframe = inspected.sse === false ? arrayReframer(inspected) : undefined
    // SSE is relayed as it came, whole lines at a time (each event is one `data:` line), so a renamer sees whole events.
    let partial = ""
    return {
      push: (text) => {
        meter.feed(text)
        if (reframe !== undefined) return reframe.push(text)
        const all = partial.length === 0 ? text : partial + text
        const cut = all.lastIndexOf("\n") + 1
        partial = all.slice(cut)
        return cut === all.length ? all : all.slice(0, cut)
      },
      end: () => {
        meter.end()
        if (reframe !== undefined) return reframe.end()
        const rest = partial
        partial = ""
        return rest
      },
      metered: (promptEstimate) => metered(meter.usage(), promptEstimate, meter.estimatedCompletionTokens())
    }
  },
  usageOfResponse: (json, promptEstimate) => metered(Passthrough.usageOfResponse(json), promptEstimate, 0),
  encodeResponse: (response, model) => Response.encodeResponse(response, model),
  frameEncoder: (inspected, model) => {
    const encoder = new GeminiStream.StreamEncoder(model)
    const framer = inspected.sse === false ? arrayFramerFor(inspected) : undefined
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
  // SSE: one `data: {"error":...}` event. JSON array: the error as the last element, then `]`.
  streamErrorFrame: (error, inspected) =>
    inspected?.sse === false
      ? (arrayFramers.get(inspected) ?? new Framing.ArrayFramer()).endWith(ErrorEnvelope.arrayStreamError(error))
      : ErrorEnvelope.streamError(error),
  // Gemini answers name the model in `modelVersion`: the public name replaces whatever the upstream reported.
  renameInBody: (body, publicModel) => Passthrough.renameModelVersion(body, publicModel),
  streamRenamer: (_upstreamModel, publicModel) => (text) => Passthrough.renameModelVersionPerLine(text, publicModel),
  streamContentType: (inspected) => inspected.sse === false ? Framing.ARRAY_CONTENT_TYPE : Framing.SSE_CONTENT_TYPE
}

/**
 * Gemini answers carry no creation time and may carry no `responseId`; a
 * translated answer (an OpenAI client's `created` and `id`) gets the time it
 * was received and a generated `chatcmpl-...` id instead.
 */
const generatedId = (): string => `chatcmpl-${randomBytes(12).toString("hex")}`

/** Incremental decoding of a Gemini upstream's SSE text; throws the upstream's error when an event is one. */
const eventDecoder = (): EventDecoder => {
  const parser = new Framing.SseParser()
  const decoder = new GeminiStream.StreamDecoder({ created: Math.floor(Date.now() / 1000), id: generatedId() })
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
  decodeResponse: (json) =>
    Effect.flatMap(
      Clock.currentTimeMillis,
      (now) => Response.decodeResponse(json, { created: Math.floor(now / 1000), id: generatedId() })
    ),
  eventDecoder,
  classify: (status, body, headers) => ErrorEnvelope.classifyUpstream(status, body, headers)
}

const searchParam = (search: string, name: string): string | undefined =>
  search.length === 0 ? undefined : new URLSearchParams(search).get(name) ?? undefined

/**
 * How a catalog model is described to Gemini clients: embedding models
 * (`embedding: true` in the configuration) advertise `embedContent` and
 * `batchEmbedContents`, every other model the generation methods; reasoning
 * models (`reasoning: true`) report `thinking`.
 */
const pageOptions: Models.PageOptions = {
  isEmbedding: (model) => model.embedding === true,
  isThinking: (model) => model.reasoning === true ? true : undefined
}

/** `GET /v1beta/models` with `pageSize` and `pageToken`. @category models */
export const modelsList = (models: ReadonlyArray<Domain.Model>, search: string) =>
  Models.modelsPage(models, searchParam(search, "pageSize"), searchParam(search, "pageToken"), pageOptions)

/** `GET /v1beta/models/{model}`. @category models */
export const modelObject = (model: Domain.Model): unknown => Models.modelResource(model, { embedding: model.embedding === true })

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
 * `/embeddings`: `outputDimensionality` becomes `dimensions`; parts that are
 * not text, which such a channel cannot embed, are refused with a 400 naming
 * them when no Gemini channel serves the model).
 *
 * Routing: as for chat calls (`Failover.run`), the channels that can answer
 * are tried in routing order (priority, then weight; breakers and disabled
 * keys skipped), failing over on connection errors, timeouts, 5xx and 429 up
 * to `routing.max_attempts`; each attempt feeds its key's breaker, a 401/403
 * disables the key, answers are read within the channel's timeouts, and the
 * attempts are listed on the embeddings' usage record. `countTokens` writes
 * no usage record and falls back to the local count when every attempt
 * failed.
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
  if (action === "countTokens") {
    const local = yield* CountTokens.countTokens(body)
    const permit = yield* RateLimits.admit(input.key, route.group, route.model.id, 0)
    return yield* countTokens(input, route, local).pipe(Settlement.interruptible, Effect.ensuring(permit.release(0)))
  }
  return yield* embed(action, input, route, body)
})

/** A Gemini `countTokens` answer, as far as it is read. */
const CountTokensAnswer = Schema.Struct({ totalTokens: Schema.Int })

const decodeCountTokens = Schema.decodeUnknownEffect(Schema.fromJsonString(CountTokensAnswer))

/**
 * Relays `:countTokens` to the group's Gemini channels (routed, with failover,
 * like any upstream call; see `geminiMethod`), falling back to the local count
 * when none serves the model or every attempt failed. Never billed: no usage
 * record is written, failed attempts are logged.
 */
const countTokens = Effect.fnUntraced(function*(
  input: MethodInput,
  route: Admission.Route,
  local: unknown
) {
  const channels = route.channels.filter((c) => c.type === "gemini")
  if (channels.length === 0) return json(input.requestId, local)
  const counted = yield* Failover.run({
    requestId: input.requestId,
    startedAt: yield* Clock.currentTimeMillis,
    model: route.model.id,
    channels,
    tried: [],
    attempt: (target, at, record) =>
      Effect.gen(function*() {
        const { channel } = target
        const url = Upstream.geminiMethodUrl(channel, Domain.upstreamModel(channel, route.model.id), "countTokens")
        const text = yield* Failover.exchange(target, url, input.body, at, record, upstream.classify)
        // Relayed as the upstream wrote it (fields beyond `totalTokens` included), once it is a token count.
        yield* Effect.mapError(
          decodeCountTokens(text),
          () => new GatewayError.UpstreamUnavailable({ message: `The upstream '${channel.name}' answered with something that is not a token count.` })
        )
        return JSON.parse(text) as unknown
      })
  }).pipe(
    Effect.catch((error: GatewayError.GatewayError) =>
      Effect.as(
        Effect.logInfo("countTokens answered with the local count: no upstream count").pipe(
          Effect.annotateLogs({ requestId: input.requestId, error: error.message })
        ),
        local
      )
    )
  )
  return json(input.requestId, counted)
})

/** The embedding requests of an `:embedContent` (one) or `:batchEmbedContents` (several) body, decoded. */
const embedRequests = (
  action: "embedContent" | "batchEmbedContents",
  body: unknown
): Effect.Effect<ReadonlyArray<GenerateContent.EmbedContentRequest>, GatewayError.InvalidRequest> => {
  if (action === "embedContent") {
    return Effect.map(Effect.fromResult(GenerateContent.decodeEmbedContentBody(body)), (request) => [request])
  }
  return Effect.flatMap(Effect.fromResult(GenerateContent.decodeBatchEmbedContentsBody(body)), (batch) =>
    batch.requests.length === 0
      ? Effect.fail(new GatewayError.InvalidRequest({ message: "'requests' must hold at least one request.", param: "requests" }))
      : Effect.succeed(batch.requests))
}

/** The requests of a batch body as the client wrote them (the body decoded, so they are objects). */
const rawRequests = (body: unknown): ReadonlyArray<Readonly<Record<string, unknown>>> =>
  Predicate.isObject(body) && Array.isArray(body.requests) ? body.requests.filter(Predicate.isObject) : []

/** Where a request's fields sit in the client's body. */
const requestPath = (action: "embedContent" | "batchEmbedContents", i: number): string =>
  action === "embedContent" ? "" : `requests[${i}].`

/** The text a request embeds: its text parts, joined. */
const textOf = (request: GenerateContent.EmbedContentRequest): string => {
  let text = ""
  for (const part of request.content.parts) if (part.text !== undefined) text += part.text
  return text
}

/**
 * What an OpenAI-style `/embeddings` call is asked for a batch of Gemini
 * embedding requests: the texts, and `dimensions` from `outputDimensionality`.
 * Parts that are not text (images, files) cannot be embedded by such an
 * upstream, and one call has one `dimensions`, so both are refused by name
 * rather than embedded wrongly. `taskType` and `title` are retrieval hints
 * OpenAI has no field for, and are left out.
 */
const openAIEmbeddingInput = (
  action: "embedContent" | "batchEmbedContents",
  requests: ReadonlyArray<GenerateContent.EmbedContentRequest>
): Effect.Effect<{ readonly input: ReadonlyArray<string>; readonly dimensions?: number }, GatewayError.UnsupportedFeature> => {
  let dimensions: number | undefined
  for (let i = 0; i < requests.length; i++) {
    const request = requests[i]!
    const at = requestPath(action, i)
    const parts = request.content.parts
    for (let j = 0; j < parts.length; j++) {
      if (parts[j]!.text === undefined) {
        return Effect.fail(new GatewayError.UnsupportedFeature({
          param: `${at}content.parts[${j}]`,
          message: `'${at}content.parts[${j}]' is not text: this model embeds text only. Send the text to embed in 'text' parts.`
        }))
      }
    }
    const asked = request.outputDimensionality
    if (asked !== undefined) {
      if (dimensions !== undefined && asked !== dimensions) {
        return Effect.fail(new GatewayError.UnsupportedFeature({
          param: `${at}outputDimensionality`,
          message: `'${at}outputDimensionality' (${asked}) differs from an earlier request's (${dimensions}); for this model every request of a batch must ask for the same size.`
        }))
      }
      dimensions = asked
    }
  }
  const input = requests.map(textOf)
  return Effect.succeed(dimensions === undefined ? { input } : { input, dimensions })
}

/** An OpenAI-style `/embeddings` answer, as far as it is read. */
const OpenAIEmbeddings = Schema.Struct({
  data: Schema.Array(Schema.Struct({ index: Schema.Int, embedding: Schema.Array(Schema.Finite) })),
  usage: Schema.optionalKey(Schema.NullOr(Schema.Struct({ prompt_tokens: Schema.Int })))
})

const decodeOpenAIEmbeddings = Schema.decodeUnknownEffect(Schema.fromJsonString(OpenAIEmbeddings))

/**
 * `:embedContent` and `:batchEmbedContents`: routed over the group's channels
 * that make embeddings (`gemini`; `openai` and `azure` when the requests
 * translate: text parts only, one `outputDimensionality`) in routing order,
 * with failover (`Failover.run`), and billed as input tokens.
 */
const embed = Effect.fnUntraced(function*(
  action: "embedContent" | "batchEmbedContents",
  input: MethodInput,
  route: Admission.Route,
  body: unknown
) {
  const requests = yield* embedRequests(action, body)
  const inputTexts = requests.map(textOf)
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
  }, yield* Pricing.holdFor(route.model, route.group.ratioMicros, { promptTokens: Tokens.bodyTokenBound(Tokens.utf8Length(input.body)), outputTokens: 0 })))
  // What an OpenAI-style channel would be asked; requests it cannot carry leave those channels out.
  const translated = yield* Effect.result(openAIEmbeddingInput(action, requests))
  const openAIStyle = route.channels.filter((c) => c.type === "openai" || c.type === "azure")
  const channels = route.channels.filter((c) =>
    c.type === "gemini" || (translated._tag === "Success" && (c.type === "openai" || c.type === "azure"))
  )
  const tried: Array<Failover.AttemptRecord> = []
  let lastLeg: Omit<Settlement.Leg, "attempts" | "attemptLog"> | undefined
  const legOf = (): Settlement.Leg | undefined =>
    lastLeg === undefined ? undefined : { ...lastLeg, attempts: tried.length, attemptLog: tried }
  return yield* Effect.gen(function*() {
    if (channels.length === 0) {
      // Only OpenAI-style channels serve the model, and these requests do not translate: say why.
      if (translated._tag === "Failure" && openAIStyle.length > 0) return yield* translated.failure
      return yield* new GatewayError.UnsupportedFeature({ message: `No channel serving '${route.model.id}' in your group can make embeddings.` })
    }
    const answer = yield* Failover.run({
      requestId: input.requestId,
      startedAt,
      model: route.model.id,
      channels,
      tried,
      attempt: (target, at, record) =>
        Effect.gen(function*() {
          const { channel } = target
          const upstreamModel = Domain.upstreamModel(channel, route.model.id)
          lastLeg = { channel: channel.name, upstreamModel, dialectOut: Domain.dialectOf(channel.type) }
          if (channel.type === "gemini") {
            // Relayed as the client wrote them (fields this gateway does not model included), each naming the upstream model.
            const forwarded = action === "batchEmbedContents"
              ? JSON.stringify({ requests: rawRequests(body).map((r) => ({ ...r, model: `models/${upstreamModel}` })) })
              : input.body
            const url = Upstream.geminiMethodUrl(channel, upstreamModel, action)
            const text = yield* Failover.exchange(target, url, forwarded, at, record, upstream.classify)
            const out = yield* Effect.try({
              try: () => JSON.parse(text) as unknown,
              catch: () => new GatewayError.UpstreamUnavailable({ message: `The upstream '${channel.name}' answered with invalid JSON.` })
            })
            return { out, reported: undefined }
          }
          // (OpenAI-style channels are candidates only when the requests translated.)
          const wanted = yield* Effect.fromResult(translated)
          const url = Embeddings.embeddingsUrl(channel, upstreamModel)
          const forwarded = JSON.stringify({ model: upstreamModel, ...wanted, encoding_format: "float" })
          const text = yield* Failover.exchange(target, url, forwarded, at, record, OpenAI.upstream.classify)
          const parsed = yield* Effect.mapError(
            decodeOpenAIEmbeddings(text),
            () => new GatewayError.UpstreamUnavailable({ message: `The upstream '${channel.name}' answered with something that is not a list of embeddings.` })
          )
          const values = [...parsed.data].sort((a, b) => a.index - b.index).map((d) => ({ values: d.embedding }))
          if (values.length !== requests.length) {
            return yield* new GatewayError.UpstreamUnavailable({
              message: `The upstream '${channel.name}' answered with ${values.length} embeddings for ${requests.length} inputs.`
            })
          }
          const out: unknown = action === "embedContent" ? { embedding: values[0]! } : { embeddings: values }
          return { out, reported: parsed.usage?.prompt_tokens }
        })
    })
    const ttfbMs = (yield* Clock.currentTimeMillis) - startedAt
    const metered: Settlement.Metered = answer.reported === undefined
      ? { promptTokens, completionTokens: 0, cachedTokens: 0, reported: false }
      : { promptTokens: answer.reported, completionTokens: 0, cachedTokens: 0, reported: true }
    yield* settlement.finish(metered, { status: 200, errorCode: null, ttfbMs }, legOf())
    return json(input.requestId, answer.out)
  }).pipe(
    Settlement.interruptible,
    Effect.onExit((exit) =>
      Exit.isSuccess(exit) ? Effect.void : settlement.finish(Settlement.nothing, Settlement.failed(exit, client.renderError), legOf())
    )
  )
})
