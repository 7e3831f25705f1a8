/**
 * The Gemini (Generative Language API v1beta) dialect, whole, as core's
 * `Dialect` interfaces: `client` serves Gemini callers (the key from
 * `x-goog-api-key`, `?key=` or `Authorization: Bearer`; the model and stream
 * flag from the path; streams as SSE with `alt=sse` or as a streamed JSON
 * array without it; Google's error envelope; paged model lists;
 * `:embedContent`, `:batchEmbedContents` and `:countTokens`), and `upstream`
 * speaks to a `gemini` channel (always asked for SSE).
 *
 * @since 0.1.0
 */
import {
  type Canonical,
  Dialect as Core,
  type Domain,
  GatewayError,
  Params,
  Sse,
  SseChunks,
  Tokens,
  Utf8
} from "@modelgate/core"
import { Effect, Predicate, Result, Schema } from "effect"
import * as CountTokens from "./CountTokens.ts"
import * as ErrorEnvelope from "./ErrorEnvelope.ts"
import * as Framing from "./Framing.ts"
import * as GenerateContent from "./GenerateContent.ts"
import * as Models from "./Models.ts"
import * as Passthrough from "./Passthrough.ts"
import * as Request from "./Request.ts"
import * as Response from "./Response.ts"
import * as GeminiStream from "./Stream.ts"
import * as UpstreamModels from "./UpstreamModels.ts"

// ---------------------------------------------------------------------------
// Keys
// ---------------------------------------------------------------------------

const first = (value: string | ReadonlyArray<string> | undefined): string | undefined =>
  typeof value === "string" ? value : value?.[0]

const nonEmpty = (value: string | undefined): string | undefined =>
  value === undefined || value.trim().length === 0 ? undefined : value.trim()

const bearer = (headers: Core.HeaderBag): string | undefined => {
  const value = first(headers["authorization"])
  if (value === undefined) return undefined
  const match = /^\s*bearer\s+(.+?)\s*$/i.exec(value)
  return match === null ? undefined : match[1]
}

const decodeComponent = (text: string): string => {
  try {
    return decodeURIComponent(text.replaceAll("+", " "))
  } catch {
    return text
  }
}

/** The first value of a query parameter (`search`: the raw query string, with or without `?`). */
const queryParam = (search: string, name: string): string | undefined => {
  for (const pair of (search.startsWith("?") ? search.slice(1) : search).split("&")) {
    const at = pair.indexOf("=")
    const key = decodeComponent(at === -1 ? pair : pair.slice(0, at))
    if (key === name) return at === -1 ? "" : decodeComponent(pair.slice(at + 1))
  }
  return undefined
}

/**
 * Where Gemini callers put their key: `x-goog-api-key` (the SDKs), `?key=`
 * (curl examples and third-party clients), or `Authorization: Bearer`
 * (gemini-cli with `GEMINI_API_KEY_AUTH_MECHANISM=bearer`).
 *
 * @category keys
 */
export const presentedKey = (headers: Core.HeaderBag, search: string): string | undefined =>
  nonEmpty(first(headers["x-goog-api-key"])) ??
    nonEmpty(search.includes("key=") ? queryParam(search, "key") : undefined) ??
    nonEmpty(bearer(headers))

// ---------------------------------------------------------------------------
// Client side
// ---------------------------------------------------------------------------

/** What a relayed answer consumed: the upstream's usage, else estimates (saying why when its figures were refused). */
const metered = (
  usage: Canonical.Usage | string | undefined,
  promptEstimate: number,
  generatedTokens: number
): Core.Metered =>
  usage !== undefined && typeof usage !== "string"
    ? {
      promptTokens: usage.promptTokens,
      completionTokens: usage.completionTokens,
      cachedTokens: usage.cachedTokens ?? 0,
      ...(usage.reasoningTokens === undefined ? {} : { reasoningTokens: usage.reasoningTokens }),
      reported: true
    }
    : {
      promptTokens: promptEstimate,
      completionTokens: generatedTokens,
      cachedTokens: 0,
      reported: false,
      ...(usage === undefined ? {} : { usageRejected: usage })
    }

/**
 * One Gemini chat call (`client.open`): what its inspection learnt of the
 * body and the route (the model and the stream flag are in the path), and
 * everything the call needs of the dialect, from that. A stream written as a
 * JSON array keeps its array framer, so that an error after the stream
 * started is written as its last element and closes the array.
 */
class ChatCall implements Core.ChatCall {
  readonly model: string
  readonly stream: boolean
  readonly maxOutputTokens: number | undefined
  readonly choices: number
  readonly mediaParts: number
  readonly media: Tokens.MediaCounts
  /** Server-sent events (`alt=sse`) rather than a streamed JSON array. */
  readonly sse: boolean
  readonly streamContentType: string
  /** The array framer of this call's JSON-array stream, once it started. */
  private framer: Framing.ArrayFramer | undefined
  /** The body as received. */
  readonly bytes: Uint8Array
  readonly inspection: Passthrough.Inspection
  constructor(bytes: Uint8Array, inspection: Passthrough.Inspection, hints: Core.RouteHints) {
    this.bytes = bytes
    this.inspection = inspection
    this.model = hints.model ?? ""
    this.stream = hints.stream ?? false
    this.maxOutputTokens = inspection.maxOutputTokens
    this.choices = inspection.candidateCount
    this.mediaParts = inspection.mediaParts
    this.media = inspection.media
    this.sse = hints.sse ?? true
    this.streamContentType = this.sse ? Framing.SSE_CONTENT_TYPE : Framing.ARRAY_CONTENT_TYPE
  }
  sampling(): Core.SamplingSettings {
    const config = this.inspection.config
    const number = (value: unknown) => typeof value === "number" && Number.isFinite(value) ? value : undefined
    return {
      temperature: number(config?.["temperature"]),
      topP: number(config?.["topP"] ?? config?.["top_p"])
    }
  }
  check() {
    return Passthrough.checkStructure(this.inspection)
  }
  canonical() {
    return Request.decodeRequest(this.inspection.body, this.model, { stream: this.stream })
  }
  forward(_upstreamModel: string, edit?: Params.BodyEdit) {
    // The model is in the path: the client's bytes go as they came, unless the channel edits parameters.
    return edit?.params === undefined
      ? this.bytes
      : JSON.stringify(Params.apply(this.inspection.body as Record<string, unknown>, edit.params))
  }
  relayedUsage(json: unknown, promptEstimate: number) {
    return metered(Passthrough.usageOfResponse(json), promptEstimate, 0)
  }
  renameInBody(body: string, publicModel: string) {
    // Gemini answers name the model in `modelVersion`: the public name replaces whatever the upstream reported.
    return Passthrough.renameModelVersion(body, publicModel)
  }
  meter(): Core.PassthroughMeter {
    const meter = new Passthrough.PassthroughMeter()
    const usage = (promptEstimate: number) => metered(meter.usage(), promptEstimate, meter.estimatedCompletionTokens())
    if (!this.sse) {
      // A streamed JSON array for the client: the upstream's events reframed as its elements.
      const reframe = this.arrayReframer()
      const text = new Utf8.StreamDecoder()
      return {
        push: (chunk) => reframe.push(meter.feed(text.push(chunk))),
        end: () => {
          const rest = meter.feed(text.end())
          meter.end()
          return reframe.push(rest) + reframe.end()
        },
        metered: usage
      }
    }
    // Server-sent events are relayed as they came, whole events at a time (so a renamer sees whole events).
    const events = new SseChunks.WholeEvents()
    const observe = (whole: SseChunks.Events | undefined) => {
      if (whole !== undefined) meter.feed(whole.text)
      return whole
    }
    return {
      push: (chunk) => observe(events.push(chunk)),
      end: () => {
        const rest = observe(events.end())
        meter.end()
        return rest
      },
      metered: usage
    }
  }
  streamRenamer(_upstreamModel: string, publicModel: string) {
    return (text: string) => Passthrough.renameModelVersionPerLine(text, publicModel)
  }
  encodeResponse(response: Canonical.ChatResponse, model: string) {
    return Response.encodeResponse(response, model)
  }
  frameEncoder(model: string): Core.FrameEncoder {
    const encoder = new GeminiStream.StreamEncoder(model)
    const framer = this.sse ? undefined : (this.framer = new Framing.ArrayFramer())
    const frame = (chunks: ReadonlyArray<unknown>) => {
      let text = ""
      for (const chunk of chunks) text += framer === undefined ? Framing.sseEvent(chunk) : framer.element(chunk)
      return text
    }
    return {
      push: (events) => frame(encoder.pushAll(events)),
      end: () => frame(encoder.end()) + (framer === undefined ? "" : framer.end())
    }
  }
  // SSE: one `data: {"error":...}` event. JSON array: the error as the last element, then `]`.
  errorFrame(error: GatewayError.GatewayError) {
    return this.sse
      ? ErrorEnvelope.streamError(error)
      : (this.framer ?? new Framing.ArrayFramer()).endWith(ErrorEnvelope.arrayStreamError(error))
  }
  /** Re-frames Gemini SSE text as a streamed JSON array, element by element. */
  private arrayReframer() {
    const parser = new Sse.Parser()
    const framer = this.framer = new Framing.ArrayFramer()
    const frame = (events: ReadonlyArray<Sse.Event>) => {
      let out = ""
      for (const event of events) out += framer.element(JSON.parse(event.data))
      return out
    }
    return { push: (text: string) => frame(parser.push(text)), end: () => frame(parser.end()) + framer.end() }
  }
}

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

/** The embedding requests of an `:embedContent` (one) or `:batchEmbedContents` (several) body, decoded. */
const embedRequests = (
  operation: string | undefined,
  body: unknown
): Effect.Effect<ReadonlyArray<GenerateContent.EmbedContentRequest>, GatewayError.InvalidRequest> => {
  if (operation !== "batchEmbedContents") {
    return Effect.map(Effect.fromResult(GenerateContent.decodeEmbedContentBody(body)), (request) => [request])
  }
  return Effect.flatMap(
    Effect.fromResult(GenerateContent.decodeBatchEmbedContentsBody(body)),
    (batch) =>
      batch.requests.length === 0
        ? Effect.fail(
          new GatewayError.InvalidRequest({ message: "'requests' must hold at least one request.", param: "requests" })
        )
        : Effect.succeed(batch.requests)
  )
}

/** The requests of a batch body as the client wrote them (the body decoded, so they are objects). */
const rawRequests = (body: unknown): ReadonlyArray<Readonly<Record<string, unknown>>> =>
  Predicate.isObject(body) && Array.isArray(body.requests) ? body.requests.filter(Predicate.isObject) : []

/** Where a request's fields sit in the client's body. */
const requestPath = (operation: string | undefined, i: number): string =>
  operation === "batchEmbedContents" ? `requests[${i}].` : ""

/** The text a request embeds: its text parts, joined. */
const textOf = (request: GenerateContent.EmbedContentRequest): string => {
  let text = ""
  for (const part of request.content.parts) if (part.text !== undefined) text += part.text
  return text
}

/**
 * The canonical request of a batch of Gemini embedding requests: the texts,
 * and `dimensions` from `outputDimensionality`. Parts that are not text
 * (images, files) cannot be embedded by another dialect's channel, and one
 * canonical request has one size, so both are refused by name rather than
 * embedded wrongly. `taskType` goes as the canonical `task` when every
 * request of the batch says the same (else none); `title` has no field
 * elsewhere and is left out.
 */
const canonicalEmbed = (
  model: string,
  operation: string | undefined,
  requests: ReadonlyArray<GenerateContent.EmbedContentRequest>
): Canonical.EmbedRequest | GatewayError.UnsupportedFeature => {
  let dimensions: number | undefined
  for (let i = 0; i < requests.length; i++) {
    const request = requests[i]!
    const at = requestPath(operation, i)
    const parts = request.content.parts
    for (let j = 0; j < parts.length; j++) {
      if (parts[j]!.text === undefined) {
        return new GatewayError.UnsupportedFeature({
          param: `${at}content.parts[${j}]`,
          message:
            `'${at}content.parts[${j}]' is not text: this model embeds text only. Send the text to embed in 'text' parts.`
        })
      }
    }
    const asked = request.outputDimensionality
    if (asked !== undefined) {
      if (dimensions !== undefined && asked !== dimensions) {
        return new GatewayError.UnsupportedFeature({
          param: `${at}outputDimensionality`,
          message:
            `'${at}outputDimensionality' (${asked}) differs from an earlier request's (${dimensions}); for this model every request of a batch must ask for the same size.`
        })
      }
      dimensions = asked
    }
  }
  const inputs = requests.map(textOf)
  const tasks = new Set(requests.map((request) => request.taskType))
  const taskType = tasks.size === 1 ? requests[0]?.taskType : undefined
  return {
    model,
    inputs,
    ...(dimensions === undefined ? {} : { dimensions }),
    ...(taskType === undefined || taskType === "TASK_TYPE_UNSPECIFIED"
      ? {}
      : { task: taskType.toLowerCase() as Canonical.EmbedTask })
  }
}

const parseJson = (body: string) =>
  Effect.try({
    try: () => JSON.parse(body) as unknown,
    catch: (error) =>
      new GatewayError.InvalidRequest({ message: `The request body is not valid JSON: ${(error as Error).message}` })
  })

const embeddingsClient: Core.ClientEmbeddings = {
  decode: (text, hints) =>
    Effect.gen(function*() {
      const body = yield* parseJson(text)
      const operation = hints.operation
      const requests = yield* embedRequests(operation, body)
      const model = hints.model ?? ""
      let tokens = 0
      for (const request of requests) tokens += Tokens.embedTextTokens(textOf(request))
      return {
        model,
        tokens,
        canonical: canonicalEmbed(model, operation, requests),
        count: requests.length,
        request: operation === "batchEmbedContents" ? "batch" : "single",
        operation,
        // Relayed as the client wrote them (fields this gateway does not model included), each naming the upstream model.
        forward: (upstreamModel) =>
          operation === "batchEmbedContents"
            ? JSON.stringify({ requests: rawRequests(body).map((r) => ({ ...r, model: `models/${upstreamModel}` })) })
            : text
      }
    }),
  encode: (response, call) =>
    call.request === "batch"
      ? { embeddings: response.vectors.map((values) => ({ values })) }
      : { embedding: { values: response.vectors[0] ?? [] } },
  passthrough: (text, _publicModel, channel) => {
    let parsed: unknown
    try {
      parsed = JSON.parse(text)
    } catch {
      return Effect.fail(
        new GatewayError.UpstreamUnavailable({ message: `The upstream '${channel}' answered with invalid JSON.` })
      )
    }
    // A 200 whose body is an error, or neither `embedding` nor `embeddings`, is the upstream failing.
    if (
      !Predicate.isObject(parsed) || Array.isArray(parsed) || parsed.error !== undefined ||
      (parsed.embedding === undefined && parsed.embeddings === undefined)
    ) {
      const error = ErrorEnvelope.upstreamErrorOf(parsed)?.message
      return Effect.fail(
        new GatewayError.UpstreamUnavailable({
          message: error === undefined
            ? `The upstream '${channel}' answered with something that is not an embedding.`
            : `The upstream '${channel}' answered with an error instead of embeddings: ${GatewayError.echo(error)}`
        })
      )
    }
    // Gemini's embedding answers name no model and report no usage.
    return Effect.succeed({ body: text })
  }
}

/**
 * The Gemini client side.
 *
 * @category dialect
 */
export const client: Core.ClientDialect = {
  dialect: "gemini",
  presentedKey,
  open: (body, hints) =>
    Effect.map(Passthrough.inspectBody(body), (inspection) => new ChatCall(body, inspection, hints)),
  renderError: (error) => ErrorEnvelope.toResponse(error),
  rateLimitHeaders: () => ({}),
  modelsList: (models, search) =>
    Models.modelsPage(models, queryParam(search, "pageSize"), queryParam(search, "pageToken"), pageOptions),
  modelObject: (model) => Models.modelResource(model, { embedding: model.embedding === true }),
  modelsListPath: "GET /v1beta/models",
  embeddings: embeddingsClient,
  countTokens: {
    // The model is in the path, so the body goes to a Gemini channel as it came.
    decode: (body, hints) =>
      Effect.flatMap(parseJson(body), (json) =>
        Effect.map(CountTokens.countTokens(json), (local) => ({
          model: hints.model ?? "",
          local,
          forward: () => body,
          // `{contents, ...}` or `{generateContentRequest: {model, contents, ...}}`: read as a generateContent call.
          canonical: () => {
            const request = Predicate.isObject(json) && Predicate.isObject(json.generateContentRequest)
              ? json.generateContentRequest
              : json
            const { model: _, ...fields } = Predicate.isObject(request) ? request : {}
            return Effect.flatMap(
              client.open(Utf8.encode(JSON.stringify(fields)), { model: hints.model, stream: false }),
              (call) => call.canonical()
            )
          },
          answer: (tokens) => ({ totalTokens: tokens })
        })))
  }
}

// ---------------------------------------------------------------------------
// Upstream side
// ---------------------------------------------------------------------------

const trimSlash = (url: string) => url.endsWith("/") ? url.slice(0, -1) : url

/** A model method's URL on a Gemini channel (`generateContent`, `countTokens`, `embedContent`, ...). */
const methodUrl = (channel: Domain.Channel, upstreamModel: string, method: string): string =>
  `${trimSlash(channel.baseUrl)}/v1beta/models/${encodeURIComponent(upstreamModel)}:${method}`

/** Incremental decoding of a Gemini upstream's SSE text; throws the upstream's error when an event is one. */
const eventDecoder = (start: Core.AnswerStart): Core.EventDecoder => {
  const parser = new Sse.Parser()
  // Gemini answers carry no creation time and may carry no `responseId`: the call's start and id stand in.
  const decoder = new GeminiStream.StreamDecoder({ created: start.created, id: `chatcmpl-${start.id}` })
  const feed = (events: ReadonlyArray<Sse.Event>): Array<Canonical.StreamEvent> => {
    if (events.length === 0) return []
    const data: Array<string> = []
    for (const event of events) data.push(event.data)
    const decoded = decoder.pushAll(data, true)
    if (Result.isFailure(decoded)) throw decoded.failure
    return decoded.success
  }
  return {
    push: (text) => feed(parser.push(text)),
    end: () => [...feed(parser.end()), ...decoder.end()]
  }
}

/** The upstream's own words in an `{"error": ...}` body or event. */
const errorMessageOf = (json: unknown): string | undefined => ErrorEnvelope.upstreamErrorOf(json)?.message

/** A 200 non-stream answer that is an error, or has neither `candidates` nor `promptFeedback` (a blocked prompt): the upstream failing. */
const notAnAnswer = (json: unknown, channel: string): GatewayError.UpstreamUnavailable | undefined => {
  if (!Predicate.isObject(json) || Array.isArray(json)) return Core.answeredOther(channel, "a Gemini answer")
  if (json.error !== undefined && json.error !== null) return Core.answeredError(channel, errorMessageOf(json))
  return Array.isArray(json.candidates) || Predicate.isObject(json.promptFeedback)
    ? undefined
    : Core.answeredOther(channel, "a Gemini answer")
}

/**
 * The opening of a 200 stream (always SSE from a Gemini channel): its first
 * event must be a JSON object without `error`; an error event, data that is
 * not JSON, or no event at all before the end is the upstream failing.
 */
const opening = (text: string, ended: boolean, channel: string): Core.Opening => {
  const first = Core.firstEvent(text, ended, channel, "a Gemini answer")
  if (!Core.isOpeningEvent(first)) return first
  const json = first.json
  if (json.error !== undefined && json.error !== null) return Core.answeredError(channel, errorMessageOf(json))
  return "answer"
}

/** A Gemini `countTokens` answer, as far as it is read. */
const isCountTokensAnswer = Schema.is(Schema.Struct({ totalTokens: Schema.Int }))

/** A Gemini `batchEmbedContents` answer, as far as it is read. */
const BatchEmbedAnswer = Schema.Struct({
  embeddings: Schema.Array(Schema.Struct({ values: Schema.Array(Schema.Finite) }))
})

const decodeBatchEmbedAnswer = Schema.decodeUnknownResult(Schema.fromJsonString(BatchEmbedAnswer))

/**
 * The Gemini upstream side.
 *
 * @category dialect
 */
export const upstream: Core.UpstreamDialect = {
  dialect: "gemini",
  chatUrl: (channel, upstreamModel, stream) =>
    methodUrl(channel, upstreamModel, stream ? "streamGenerateContent?alt=sse" : "generateContent"),
  headers: (channel, apiKey) => ({ "content-type": "application/json", ...channel.headers, "x-goog-api-key": apiKey }),
  encodeRequest: (request, upstreamModel) =>
    Effect.map(
      Request.encodeRequest(request, { thinkingStyle: Request.thinkingStyleOf(upstreamModel) }),
      (body) => JSON.stringify(body)
    ),
  decodeResponse: (json, start) =>
    Response.decodeResponse(json, { created: start.created, id: `chatcmpl-${start.id}` }),
  eventDecoder,
  notAnAnswer,
  opening,
  classify: (status, body, headers) => ErrorEnvelope.classifyUpstream(status, body, headers),
  countTokens: {
    url: (channel, upstreamModel) => methodUrl(channel, upstreamModel, "countTokens"),
    isCount: (text) => {
      try {
        return isCountTokensAnswer(JSON.parse(text))
      } catch {
        return false
      }
    }
  },
  embeddings: {
    url: (channel, upstreamModel, operation) => methodUrl(channel, upstreamModel, operation ?? "batchEmbedContents"),
    encode: (request, upstreamModel) =>
      Effect.succeed(JSON.stringify({
        requests: request.inputs.map((text) => ({
          model: `models/${upstreamModel}`,
          content: { parts: [{ text }] },
          ...(request.dimensions === undefined ? {} : { outputDimensionality: request.dimensions })
        }))
      })),
    decode: (text, count, channel) => {
      const parsed = decodeBatchEmbedAnswer(text)
      if (Result.isFailure(parsed)) {
        return Effect.fail(
          new GatewayError.UpstreamUnavailable({
            message: `The upstream '${channel}' answered with something that is not a list of embeddings.`
          })
        )
      }
      const vectors = parsed.success.embeddings.map((e) => e.values)
      if (vectors.length !== count) {
        return Effect.fail(
          new GatewayError.UpstreamUnavailable({
            message: `The upstream '${channel}' answered with ${vectors.length} embeddings for ${count} inputs.`
          })
        )
      }
      return Effect.succeed({ vectors })
    }
  },
  listModels: UpstreamModels.list
}
