/**
 * The OpenAI dialects, whole, as core's `Dialect` interfaces:
 *
 * - chat completions: `client` is how OpenAI-style callers are served (the key
 *   in `Authorization: Bearer`, the body inspected for the passthrough or
 *   decoded for translation, answers, SSE streams, the error envelope with the
 *   `x-ratelimit-*` headers, models, embeddings), and `upstream` is how an
 *   OpenAI-compatible channel (`openai`, and Azure OpenAI's deployments as
 *   `azure`) is spoken to;
 * - the Responses API: `responsesClient` serves `POST /v1/responses` callers
 *   (Codex CLI, the SDKs' `responses.create`), and `responsesUpstream` speaks
 *   to an OpenAI channel marked `responses`, which gets a Responses client's
 *   body as it is.
 *
 * @example
 * ```ts
 * import { Dialect } from "@modelgate/openai-adapter"
 *
 * Dialect.upstream.chatUrl(channel, "gpt-4o", true) // "https://api.openai.com/v1/chat/completions"
 * Dialect.client.presentedKey({ authorization: "Bearer sk-..." }, "") // "sk-..."
 * ```
 *
 * @since 0.1.0
 */
import {
  type Canonical,
  Dialect as Core,
  Domain,
  GatewayError,
  Issues,
  Params,
  PassthroughCall,
  Sse,
  Tokens
} from "@modelgate/core"
import { Effect, Predicate, Result, Schema } from "effect"
import * as Passthrough from "./chat/Passthrough.ts"
import * as Request from "./chat/Request.ts"
import * as Response from "./chat/Response.ts"
import * as OpenAIStream from "./chat/Stream.ts"
import * as ErrorEnvelope from "./ErrorEnvelope.ts"
import { base64 } from "./internal/base64.ts"
import * as Models from "./Models.ts"
import * as RateLimitHeaders from "./RateLimitHeaders.ts"
import * as Responses from "./responses/Responses.ts"
import * as ResponsesAnswer from "./responses/ResponsesAnswer.ts"
import * as ResponsesPassthrough from "./responses/ResponsesPassthrough.ts"
import * as ResponsesRequest from "./responses/ResponsesRequest.ts"
import * as UpstreamModels from "./UpstreamModels.ts"

// ---------------------------------------------------------------------------
// Keys
// ---------------------------------------------------------------------------

const first = (value: string | ReadonlyArray<string> | undefined): string | undefined =>
  typeof value === "string" ? value : value?.[0]

/**
 * The token of an `Authorization: Bearer <token>` header, trimmed; undefined
 * when there is none or it is empty.
 *
 * @category keys
 */
export const bearer = (headers: Core.HeaderBag): string | undefined => {
  const value = first(headers["authorization"])
  if (value === undefined) return undefined
  const match = /^\s*bearer\s+(.+?)\s*$/i.exec(value)
  return match === null ? undefined : match[1]
}

// ---------------------------------------------------------------------------
// Client side
// ---------------------------------------------------------------------------

/** A body with a channel's parameter edit applied: decoded, edited and written again (channels without an edit never pay this). */
const editedBody = (inspected: Passthrough.InspectedBody, upstreamModel: string, edit: Params.BodyEdit): string => {
  const out: Record<string, unknown> = { ...Params.edit(inspected.json, edit), model: upstreamModel }
  // An upstream that rejects stream_options gets none (its stream usage is then counted locally).
  if (edit.streamOptions && inspected.stream) {
    const options = out.stream_options
    out.stream_options = Predicate.isObject(options) ? { ...options, include_usage: true } : { include_usage: true }
  }
  return JSON.stringify(out)
}

/**
 * One chat completions call (`client.open`): what its inspection learnt of
 * the body, and everything the call needs of the dialect, from that.
 */
class ChatCall extends PassthroughCall.PassthroughCall<Passthrough.InspectedBody> {
  readonly streamContentType = "text/event-stream"
  constructor(body: Passthrough.InspectedBody) {
    super(body, Passthrough, body.maxTokens, body.choices)
  }
  canonical() {
    return Request.decodeRequest(this.body.json)
  }
  // A channel's edit may also add or remove `stream_options`, not only parameters.
  override forward(upstreamModel: string, edit?: Params.BodyEdit) {
    return edit === undefined
      ? Passthrough.upstreamBody(this.body, upstreamModel)
      : editedBody(this.body, upstreamModel, edit)
  }
  renameInBody(body: string, publicModel: string) {
    return renameInBody(body, publicModel)
  }
  meter(): Core.PassthroughMeter {
    const meter = new Passthrough.PassthroughMeter({ includeUsage: this.body.includeUsage })
    return {
      push: (chunk) => meter.pushBytes(chunk),
      end: () => meter.endBytes(),
      metered: (promptEstimate) => {
        const usage = meter.usage()
        return usage.reported ? usage : { ...usage, promptTokens: promptEstimate }
      }
    }
  }
  streamRenamer(upstreamModel: string, publicModel: string) {
    return streamRenamer(upstreamModel, publicModel)
  }
  encodeResponse(response: Canonical.ChatResponse, model: string) {
    return Response.encodeResponse(response, model)
  }
  frameEncoder(model: string): Core.FrameEncoder {
    const encoder = new OpenAIStream.StreamEncoder({ model, includeUsage: this.body.includeUsage })
    return {
      push: (events) => {
        let text = ""
        for (const event of events) text += encoder.encode(event)
        return text
      },
      end: () => encoder.finish()
    }
  }
  errorFrame(error: GatewayError.GatewayError) {
    return ErrorEnvelope.streamError(error)
  }
}

/** The top-level "model" of a chat completion (upstreams may pretty-print it); strings inside escape their quotes. */
const renameInBody = (body: string, publicModel: string): string =>
  body.replace(/"model"\s*:\s*"(?:[^"\\]|\\.)*"/, `"model":${JSON.stringify(publicModel)}`)

/** The model named in relayed stream events, renamed. */
const streamRenamer = (upstreamModel: string, publicModel: string) => {
  const from = `"model":${JSON.stringify(upstreamModel)}`
  const to = `"model":${JSON.stringify(publicModel)}`
  return (text: string) => text.includes(from) ? text.replaceAll(from, to) : text
}

/** The error envelope, with the `x-ratelimit-*` headers of the limit that refused a call. */
const withRateLimitHeaders =
  (toResponse: (error: GatewayError.GatewayError) => ErrorEnvelope.ErrorResponse) =>
  (error: GatewayError.GatewayError): Core.ErrorResponse => {
    const rendered = toResponse(error)
    if (error._tag !== "RateLimited" || error.snapshot === undefined) return rendered
    return { ...rendered, headers: { ...RateLimitHeaders.toHeaders(error.snapshot), ...rendered.headers } }
  }

const renderError = withRateLimitHeaders(ErrorEnvelope.toResponse)

/** The Responses API's errors: as chat completions', but what Codex shows (`ErrorEnvelope.toResponsesResponse`). */
const renderResponsesError = withRateLimitHeaders(ErrorEnvelope.toResponsesResponse)

/** What the OpenAI side remembers of an embeddings request: its body, and whether it wants base64 vectors. */
interface EmbedState {
  readonly body: Readonly<Record<string, unknown>>
  readonly base64: boolean
}

const isTokenArray = (value: unknown): value is ReadonlyArray<number> =>
  Array.isArray(value) && value.length > 0 && value.every((n) => typeof n === "number" && Number.isInteger(n) && n >= 0)

/**
 * Reads `POST /v1/embeddings`: `input` is a string, an array of strings, an
 * array of token ids, or an array of such arrays. Token ids go only to
 * OpenAI-compatible channels (another dialect's channel embeds text), so the
 * canonical request names why it cannot be made.
 */
const decodeEmbeddings = (text: string): Effect.Effect<Core.EmbedCall, GatewayError.InvalidRequest> => {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    return Effect.fail(Issues.invalid("", `The request body is not valid JSON: ${(error as Error).message}`))
  }
  if (!Predicate.isObject(json) || Array.isArray(json)) {
    return Effect.fail(Issues.invalid("", "The request body must be a JSON object."))
  }
  const body = json as Record<string, unknown>
  const model = body.model
  if (typeof model !== "string" || model.length === 0) {
    return Effect.fail(Issues.invalid("model", "'model' is required (a model name)."))
  }
  const input = body.input
  const inputs: Array<string> = []
  let tokens = 0
  let tokenIds = false
  const bad = () =>
    Effect.fail(
      Issues.invalid(
        "input",
        "'input' is required: a string, a non-empty array of strings, or token ids (an array of integers, or of such arrays)."
      )
    )
  if (typeof input === "string") {
    inputs.push(input)
  } else if (Array.isArray(input) && input.length > 0) {
    if (input.every((item) => typeof item === "string")) inputs.push(...(input as ReadonlyArray<string>))
    else if (isTokenArray(input)) {
      tokenIds = true
      tokens = input.length
    } else if ((input as ReadonlyArray<unknown>).every(isTokenArray)) {
      tokenIds = true
      for (const ids of input as ReadonlyArray<ReadonlyArray<number>>) tokens += ids.length
    } else return bad()
  } else return bad()
  for (const item of inputs) tokens += Tokens.embedTextTokens(item)
  const dimensions = body.dimensions
  if (
    dimensions !== undefined && dimensions !== null &&
    !(typeof dimensions === "number" && Number.isInteger(dimensions) && dimensions > 0)
  ) {
    return Effect.fail(Issues.invalid("dimensions", "'dimensions' must be a positive integer."))
  }
  const format = body.encoding_format
  if (format !== undefined && format !== null && format !== "float" && format !== "base64") {
    return Effect.fail(Issues.invalid("encoding_format", "'encoding_format' must be 'float' or 'base64'."))
  }
  const canonical: Canonical.EmbedRequest | GatewayError.UnsupportedFeature = tokenIds
    ? new GatewayError.UnsupportedFeature({
      param: "input",
      message:
        "'input' holds token ids, which only an OpenAI-compatible channel can embed, and none serves this model for your group. Send the text instead."
    })
    : typeof dimensions === "number"
    ? { model, inputs, dimensions }
    : { model, inputs }
  const state: EmbedState = { body, base64: format === "base64" }
  return Effect.succeed({
    model,
    tokens,
    canonical,
    count: tokenIds ? (isTokenArray(input) ? 1 : (input as ReadonlyArray<unknown>).length) : inputs.length,
    request: state,
    forward: (upstreamModel) => upstreamModel === model ? text : JSON.stringify({ ...body, model: upstreamModel })
  })
}

/** A vector as OpenAI's `encoding_format: "base64"` sends it: little-endian float32s, base64. */
const base64Vector = (vector: ReadonlyArray<number>): string => {
  const floats = new Float32Array(vector)
  return base64(new Uint8Array(floats.buffer))
}

/** An OpenAI-style `/embeddings` answer, as far as it is read (`usage` is checked apart: `embeddingsUsage`). */
const EmbeddingsAnswer = Schema.Struct({
  data: Schema.Array(Schema.Struct({ index: Schema.Int, embedding: Schema.Array(Schema.Finite) })),
  usage: Schema.optionalKey(Schema.Unknown)
})

/**
 * The prompt tokens an embeddings answer reports: a count, the reason its
 * figure was refused (`usageRejected`), or neither when it reports none.
 */
const embeddingsUsage = (usage: unknown): { readonly promptTokens?: number; readonly usageRejected?: string } => {
  if (usage === undefined || usage === null) return {}
  if (!Predicate.isObject(usage) || Array.isArray(usage)) return { usageRejected: "usage: not an object" }
  const bad = Tokens.badCount({ prompt_tokens: usage.prompt_tokens ?? "missing", total_tokens: usage.total_tokens })
  return bad === undefined ? { promptTokens: usage.prompt_tokens as number } : { usageRejected: bad }
}

const decodeEmbeddingsAnswer = Schema.decodeUnknownResult(Schema.fromJsonString(EmbeddingsAnswer))

const notJson = (channel: string) =>
  new GatewayError.UpstreamUnavailable({ message: `The upstream '${channel}' answered with invalid JSON.` })

/** A 200 embeddings answer that is an error or not a list of embeddings; the upstream's own message is quoted when it gave one. */
const notEmbeddings = (channel: string, body: unknown) => {
  const error = ErrorEnvelope.upstreamErrorOf(body)
  return new GatewayError.UpstreamUnavailable({
    message: error === undefined
      ? `The upstream '${channel}' answered with something that is not a list of embeddings.`
      : `The upstream '${channel}' answered with an error instead of embeddings: ${GatewayError.echo(error.message)}`
  })
}

const embeddingsClient: Core.ClientEmbeddings = {
  decode: (body) => decodeEmbeddings(body),
  encode: (response, call, model) => {
    const state = call.request as EmbedState
    const prompt = response.promptTokens ?? call.tokens
    return {
      object: "list",
      data: response.vectors.map((vector, index) => ({
        object: "embedding",
        index,
        embedding: state.base64 ? base64Vector(vector) : vector
      })),
      model,
      usage: { prompt_tokens: prompt, total_tokens: prompt }
    }
  },
  passthrough: (text, publicModel, channel) => {
    let parsed: unknown
    try {
      parsed = JSON.parse(text)
    } catch {
      return Effect.fail(notJson(channel))
    }
    // A 200 whose body is an error, or not a list of embeddings, is the upstream failing.
    if (
      !Predicate.isObject(parsed) || Array.isArray(parsed) || parsed.error !== undefined || !Array.isArray(parsed.data)
    ) {
      return Effect.fail(notEmbeddings(channel, parsed))
    }
    return Effect.succeed({
      body: publicModel === undefined ? text : JSON.stringify({ ...parsed, model: publicModel }),
      ...embeddingsUsage(parsed.usage)
    })
  }
}

/**
 * The OpenAI client side.
 *
 * @category dialect
 */
export const client: Core.ClientDialect = {
  dialect: "openai",
  presentedKey: (headers) => {
    const key = bearer(headers)
    return key === undefined || key.length === 0 ? undefined : key
  },
  open: (body) => Effect.map(Passthrough.inspectChatBody(body), (inspected) => new ChatCall(inspected)),
  renderError,
  rateLimitHeaders: RateLimitHeaders.toHeaders,
  modelsList: (models) => Effect.succeed(Models.modelsList(models, 0)),
  modelObject: (model) => Models.modelObject(model),
  modelsListPath: "GET /v1/models",
  embeddings: embeddingsClient
}

// ---------------------------------------------------------------------------
// Upstream side
// ---------------------------------------------------------------------------

const trimSlash = (url: string) => url.endsWith("/") ? url.slice(0, -1) : url

/** An Azure OpenAI deployment's endpoint for `operation` (`chat/completions`, `embeddings`). */
const azureUrl = (channel: Domain.Channel, deployment: string, operation: string): string =>
  `${trimSlash(channel.baseUrl)}/openai/deployments/${encodeURIComponent(deployment)}/${operation}?api-version=${
    encodeURIComponent(channel.apiVersion ?? Domain.DEFAULT_AZURE_API_VERSION)
  }`

/** Incremental decoding of an OpenAI upstream's SSE text; throws the upstream's error when an event is one. */
const eventDecoder = (): Core.EventDecoder => {
  const parser = new Sse.Parser()
  const decoder = new OpenAIStream.StreamDecoder()
  let done = false
  // An error event after good events in the same read: the good events are delivered first, the error on the next read.
  let pending: GatewayError.GatewayError | undefined
  const feed = (events: ReadonlyArray<Sse.Event>): Array<Canonical.StreamEvent> => {
    if (pending !== undefined) throw pending
    const out: Array<Canonical.StreamEvent> = []
    for (const event of events) {
      if (done) break
      if (event.data === "[DONE]") {
        done = true
        break
      }
      const chunk = OpenAIStream.parseChunk(event.data)
      if (Result.isFailure(chunk)) {
        if (out.length === 0) throw chunk.failure
        pending = chunk.failure
        break
      }
      for (const e of decoder.push(chunk.success)) out.push(e)
    }
    return out
  }
  return {
    push: (text) => feed(parser.push(text)),
    end: () => {
      const out = feed(parser.end())
      if (pending !== undefined && out.length === 0) throw pending
      return out
    }
  }
}

/** The upstream's own words in an `{"error": ...}` body or event (a string error counts too). */
const errorMessageOf = (json: Readonly<Record<string, unknown>>): string | undefined => {
  const error = json.error
  return typeof error === "string" ? error : ErrorEnvelope.upstreamErrorOf(json)?.message
}

/** A 200 non-stream answer that is an error, or has no `choices`: the upstream failing. */
const notAnAnswer = (json: unknown, channel: string): GatewayError.UpstreamUnavailable | undefined => {
  if (!Predicate.isObject(json) || Array.isArray(json)) return Core.answeredOther(channel, "a chat completion")
  if (json.error !== undefined && json.error !== null) return Core.answeredError(channel, errorMessageOf(json))
  return Array.isArray(json.choices) ? undefined : Core.answeredOther(channel, "a chat completion")
}

/**
 * The opening of a 200 stream: its first event must be a chunk (any JSON
 * object without `error`); `[DONE]` first, an error event, data that is not
 * JSON, or no event at all before the end is the upstream failing.
 */
const opening = (text: string, ended: boolean, channel: string): Core.Opening => {
  const first = Core.firstEvent(text, ended, channel, "a chat completion chunk", "[DONE]")
  if (!Core.isOpeningEvent(first)) return first
  const json = first.json
  if (json.error !== undefined && json.error !== null) return Core.answeredError(channel, errorMessageOf(json))
  return "answer"
}

/**
 * The body for an OpenAI-style upstream. What the catalog says of the model
 * decides two things OpenAI is strict about: `reasoning_effort` is sent only to
 * reasoning models (`reasoning: true`; for others a Gemini client's thinking
 * settings are a hint, left out with a debug log line), and earlier reasoning
 * only to upstreams that take `reasoning_content` (`reasoning_content: true`).
 */
const encodeUpstreamRequest = (
  request: Canonical.ChatRequest,
  upstreamModel: string,
  model: Domain.Model | undefined
) => {
  const options: Request.EncodeRequestOptions = {
    reasoningEffort: model?.reasoning === true,
    reasoningContent: model?.reasoningContent === true
  }
  const hinted = request.reasoning !== undefined &&
    (request.reasoning.effort !== undefined || request.reasoning.budgetTokens !== undefined)
  return Request.ensureEncodable(request).pipe(
    Effect.map((encodable) => JSON.stringify(Request.encodeRequest(encodable, upstreamModel, options))),
    Effect.tap(() =>
      hinted && options.reasoningEffort !== true
        ? Effect.logDebug("thinking settings left out: the model is not marked as a reasoning model").pipe(
          Effect.annotateLogs({ model: model?.id ?? upstreamModel })
        )
        : Effect.void
    )
  )
}

const embeddingsUpstream: Core.UpstreamEmbeddings = {
  url: (channel, upstreamModel) =>
    channel.type === "azure"
      ? azureUrl(channel, upstreamModel, "embeddings")
      : `${trimSlash(channel.baseUrl)}/embeddings`,
  encode: (request, upstreamModel) =>
    Effect.succeed(JSON.stringify({
      model: upstreamModel,
      input: request.inputs,
      ...(request.dimensions === undefined ? {} : { dimensions: request.dimensions }),
      encoding_format: "float"
    })),
  decode: (text, count, channel) => {
    const parsed = decodeEmbeddingsAnswer(text)
    if (Result.isFailure(parsed)) {
      return Effect.fail(
        new GatewayError.UpstreamUnavailable({
          message: `The upstream '${channel}' answered with something that is not a list of embeddings.`
        })
      )
    }
    const vectors = [...parsed.success.data].sort((a, b) => a.index - b.index).map((d) => d.embedding)
    if (vectors.length !== count) {
      return Effect.fail(
        new GatewayError.UpstreamUnavailable({
          message: `The upstream '${channel}' answered with ${vectors.length} embeddings for ${count} inputs.`
        })
      )
    }
    return Effect.succeed({ vectors, ...embeddingsUsage(parsed.success.usage) })
  }
}

/**
 * The OpenAI upstream side (also Azure OpenAI, which speaks the same wire
 * format at its deployments' URLs with an `api-key` header).
 *
 * @category dialect
 */
export const upstream: Core.UpstreamDialect = {
  dialect: "openai",
  chatUrl: (channel, upstreamModel) =>
    channel.type === "azure"
      ? azureUrl(channel, upstreamModel, "chat/completions")
      : `${trimSlash(channel.baseUrl)}/chat/completions`,
  headers: (channel, apiKey) => {
    const headers: Record<string, string> = { "content-type": "application/json", ...channel.headers }
    if (channel.type === "azure") headers["api-key"] = apiKey
    else headers["authorization"] = `Bearer ${apiKey}`
    return headers
  },
  encodeRequest: encodeUpstreamRequest,
  decodeResponse: (json) => Response.decodeResponse(json),
  eventDecoder,
  notAnAnswer,
  opening,
  classify: (status, body, headers) => ErrorEnvelope.classifyUpstream(status, body, headers),
  embeddings: embeddingsUpstream,
  listModels: UpstreamModels.list
}

// ---------------------------------------------------------------------------
// The Responses API
// ---------------------------------------------------------------------------

const frames = (events: ReadonlyArray<Responses.OutputEvent>): string => {
  let text = ""
  for (const event of events) text += Responses.frame(event)
  return text
}

/** What a `response.failed` carries of a gateway error: the OpenAI envelope's code and message. */
const failure = (error: GatewayError.GatewayError) => {
  const body = ErrorEnvelope.toResponse(error).body.error
  return { code: body.code ?? body.type, message: body.message }
}

/** What a Responses stream's error frame carries: the OpenAI envelope's code and message. */
type Failure = ReturnType<typeof failure>

/**
 * One Responses API call (`responsesClient.open`): what its inspection learnt
 * of the body, and everything the call needs of the dialect, from that. An
 * error after its stream started ends it with `response.failed`, written by
 * the stream's own encoder (translation) or meter (relay), which know the
 * response's id and the next `sequence_number`.
 */
class ResponsesCall extends PassthroughCall.PassthroughCall<ResponsesPassthrough.InspectedBody> {
  readonly streamContentType = Responses.SSE_CONTENT_TYPE
  /** How this call's stream ends on an error, once it started. */
  private failed: ((error: Failure) => string) | undefined
  constructor(body: ResponsesPassthrough.InspectedBody) {
    super(body, ResponsesPassthrough, body.maxOutputTokens)
  }
  canonical() {
    // A large body JSON refuses fails with the parser's words.
    return Effect.flatMap(ResponsesPassthrough.parsed(this.body), ResponsesRequest.decodeRequest)
  }
  renameInBody(body: string, publicModel: string) {
    return renameInBody(body, publicModel)
  }
  meter(): Core.PassthroughMeter {
    const meter = new ResponsesPassthrough.PassthroughMeter()
    const model = this.model
    this.failed = (error) =>
      Responses.frame({
        type: "response.failed",
        sequence_number: meter.lastSequence + 1,
        response: { id: meter.responseId, object: "response", status: "failed", error, output: [], model }
      })
    return {
      push: (chunk) => meter.pushBytes(chunk),
      end: () => meter.endBytes(),
      metered: (promptEstimate) => meter.metered(promptEstimate)
    }
  }
  streamRenamer(upstreamModel: string, publicModel: string) {
    return streamRenamer(upstreamModel, publicModel)
  }
  encodeResponse(response: Canonical.ChatResponse, model: string) {
    return ResponsesAnswer.encodeResponse(response, model, ResponsesAnswer.echoOf(this.body.json))
  }
  frameEncoder(model: string): Core.FrameEncoder {
    const encoder = new ResponsesAnswer.StreamEncoder(model, ResponsesAnswer.echoOf(this.body.json))
    this.failed = (error) => frames(encoder.failed(error))
    return { push: (events) => frames(encoder.pushAll(events)), end: () => frames(encoder.end()) }
  }
  errorFrame(error: GatewayError.GatewayError) {
    const body = failure(error)
    if (this.failed !== undefined) return this.failed(body)
    return Responses.frame({ type: "error", sequence_number: 0, code: body.code, message: body.message, param: null })
  }
}

/**
 * The Responses API client side: the key in `Authorization: Bearer`,
 * OpenAI's error envelope and rate-limit headers; requests that need response
 * state are refused (`ResponsesPassthrough.stateRefusal`); an error after the
 * stream started ends it with `response.failed`.
 *
 * @category dialect
 */
export const responsesClient: Core.ClientDialect = {
  dialect: "responses",
  presentedKey: client.presentedKey,
  open: (body) => Effect.map(ResponsesPassthrough.inspectBody(body), (inspected) => new ResponsesCall(inspected)),
  renderError: renderResponsesError,
  rateLimitHeaders: RateLimitHeaders.toHeaders,
  modelsList: client.modelsList,
  modelObject: client.modelObject,
  modelsListPath: client.modelsListPath
}

/** Incremental decoding of a Responses upstream's SSE text; throws the upstream's error when an event is one. */
const responsesEventDecoder = (start: Core.AnswerStart): Core.EventDecoder => {
  const parser = new Sse.Parser()
  const decoder = new ResponsesAnswer.StreamDecoder({ created: start.created })
  let pending: GatewayError.GatewayError | undefined
  const feed = (events: ReadonlyArray<Sse.Event>): Array<Canonical.StreamEvent> => {
    if (pending !== undefined) throw pending
    const out: Array<Canonical.StreamEvent> = []
    for (const event of events) {
      let json: unknown
      try {
        json = JSON.parse(event.data)
      } catch {
        pending = new GatewayError.UpstreamUnavailable({
          message: "The upstream sent a stream event that is not JSON."
        })
        break
      }
      const decoded = decoder.push(json)
      if (Result.isFailure(decoded)) {
        pending = decoded.failure
        break
      }
      for (const e of decoded.success) out.push(e)
    }
    if (pending !== undefined && out.length === 0) throw pending
    return out
  }
  return {
    push: (text) => feed(parser.push(text)),
    end: () => {
      const out = feed(parser.end())
      if (pending !== undefined) throw pending
      return out
    }
  }
}

/** The upstream's own words in a Responses error: an `error` event's `message`, or a failed response's `error.message`. */
const responsesErrorMessage = (json: Readonly<Record<string, unknown>>): string | undefined => {
  if (Predicate.isString(json.message)) return json.message
  const response = Predicate.isObject(json.response) ? json.response : json
  const error = response.error
  if (Predicate.isString(error)) return error
  return Predicate.isObject(error) && Predicate.isString(error.message) ? error.message : undefined
}

/**
 * A 200 non-stream answer that is an error (an `error` object, a `failed`
 * response) or not a `response` object with its `output`: the upstream
 * failing.
 */
const responsesNotAnAnswer = (json: unknown, channel: string): GatewayError.UpstreamUnavailable | undefined => {
  if (!Predicate.isObject(json) || Array.isArray(json)) return Core.answeredOther(channel, "a Responses API response")
  if ((json.error !== undefined && json.error !== null) || json.status === "failed") {
    return Core.answeredError(channel, responsesErrorMessage(json))
  }
  return Array.isArray(json.output) ? undefined : Core.answeredOther(channel, "a Responses API response")
}

/**
 * The opening of a 200 Responses stream: its first event must be a JSON
 * object that is neither an error (an `error` event, an `{"error": ...}`
 * object as chat completions servers send) nor `response.failed`; data that
 * is not JSON, or no event at all before the end, is the upstream failing.
 */
const responsesOpening = (text: string, ended: boolean, channel: string): Core.Opening => {
  const opened = Core.firstEvent(text, ended, channel, "a Responses API stream event")
  if (!Core.isOpeningEvent(opened)) return opened
  const { event: first, json } = opened
  const error = json.error !== undefined && json.error !== null
  if (first.event === "error" || json.type === "error" || json.type === "response.failed" || error) {
    return Core.answeredError(channel, responsesErrorMessage(json))
  }
  return "answer"
}

/**
 * The Responses API upstream side: an OpenAI channel marked `responses`
 * (`POST {base_url}/responses`, `Authorization: Bearer`). A Responses
 * client's body is relayed to it as it is; a canonical request is encoded
 * with `ResponsesRequest.encodeRequest`.
 *
 * @category dialect
 */
export const responsesUpstream: Core.UpstreamDialect = {
  dialect: "responses",
  chatUrl: (channel) => `${trimSlash(channel.baseUrl)}/responses`,
  headers: (channel, apiKey) => ({
    "content-type": "application/json",
    ...channel.headers,
    authorization: `Bearer ${apiKey}`
  }),
  encodeRequest: (request, upstreamModel) =>
    Effect.map(ResponsesRequest.encodeRequest(request, upstreamModel), (body) => JSON.stringify(body)),
  decodeResponse: (json, start) => ResponsesAnswer.decodeResponse(json, start.created),
  eventDecoder: responsesEventDecoder,
  notAnAnswer: responsesNotAnAnswer,
  opening: responsesOpening,
  classify: (status, body, headers) => ErrorEnvelope.classifyUpstream(status, body, headers)
}
