/**
 * The Anthropic Messages dialect, whole, as core's `Dialect` interfaces:
 *
 * - `client` serves Anthropic callers (Claude Code, the Anthropic SDKs) at
 *   `POST /v1/messages` (`?beta=true` too) and `/v1/messages/count_tokens`:
 *   the key from `x-api-key` or `Authorization: Bearer`, the body inspected
 *   for the relay to an Anthropic channel (which also gets the client's
 *   `anthropic-beta` header) or decoded for translation, answers and the full
 *   event sequence of Anthropic streams, Anthropic's error envelope, and its
 *   model list.
 * - `upstream` speaks to a channel of type `anthropic` (`POST
 *   ${base_url}/v1/messages` with `x-api-key` and `anthropic-version`): the
 *   request is encoded with `Request.encodeRequest`, non-stream answers
 *   decoded with `Response.decodeResponse`, and streams with
 *   `Stream.StreamDecoder`, whose usage events (input and cache counts at
 *   `message_start`, cumulative output at each `message_delta`) are what the
 *   call is billed for: prompt tokens include cache reads and cache writes,
 *   each also counted on its own (a model's `cache_write` price bills the
 *   writes).
 *
 * @since 0.1.0
 */
import { type Canonical, Dialect as Core, GatewayError, PassthroughCall, Sse, Utf8 } from "@modelgate/core"
import { Effect, Predicate, Result, Schema } from "effect"
import * as CountTokens from "./CountTokens.ts"
import * as ErrorEnvelope from "./ErrorEnvelope.ts"
import * as Models from "./Models.ts"
import * as Passthrough from "./Passthrough.ts"
import * as Request from "./Request.ts"
import * as Response from "./Response.ts"
import * as AnthropicStream from "./Stream.ts"
import * as UpstreamModels from "./UpstreamModels.ts"

/** The Messages API version sent when the channel's headers name none. @category constants */
export const DEFAULT_VERSION = "2023-06-01"

const trimSlash = (url: string) => url.endsWith("/") ? url.slice(0, -1) : url

// ---------------------------------------------------------------------------
// Client side
// ---------------------------------------------------------------------------

const first = (value: string | ReadonlyArray<string> | undefined): string | undefined =>
  typeof value === "string" ? value : value?.[0]

const nonEmpty = (value: string | undefined): string | undefined =>
  value === undefined || value.trim().length === 0 ? undefined : value.trim()

/**
 * Where Anthropic callers put their key: `x-api-key` (`ANTHROPIC_API_KEY`),
 * or `Authorization: Bearer` (`ANTHROPIC_AUTH_TOKEN`).
 *
 * @category keys
 */
export const presentedKey = (headers: Core.HeaderBag): string | undefined => {
  const header = nonEmpty(first(headers["x-api-key"]))
  if (header !== undefined) return header
  const match = /^\s*bearer\s+(.+?)\s*$/i.exec(first(headers["authorization"]) ?? "")
  return match === null ? undefined : nonEmpty(match[1])
}

/**
 * The client headers an Anthropic channel gets with a relayed body:
 * `anthropic-beta`, which turns on the beta features the body may use (Claude
 * Code's `context_management`, interleaved thinking, ...).
 *
 * @category keys
 */
export const forwardHeaders = (headers: Core.HeaderBag): Readonly<Record<string, string>> => {
  const beta = headers["anthropic-beta"]
  const value = typeof beta === "string" ? beta : beta?.join(",")
  return value === undefined || value.length === 0 ? {} : { "anthropic-beta": value }
}

/**
 * One Messages call (`client.open`): what its inspection learnt of the body,
 * and everything the call needs of the dialect, from that.
 */
class ChatCall extends PassthroughCall.PassthroughCall<Passthrough.InspectedBody> {
  readonly streamContentType = AnthropicStream.SSE_CONTENT_TYPE
  constructor(body: Passthrough.InspectedBody) {
    super(body, Passthrough, body.maxTokens)
  }
  canonical() {
    // A large body JSON refuses fails with the parser's words.
    return Effect.flatMap(Passthrough.parsed(this.body), Request.decodeRequest)
  }
  renameInBody(body: string, publicModel: string) {
    return Passthrough.renameModel(body, publicModel)
  }
  meter(): Core.PassthroughMeter {
    const meter = new Passthrough.PassthroughMeter()
    return {
      push: (chunk) => meter.pushBytes(chunk),
      end: () => meter.endBytes(),
      metered: (promptEstimate) => meter.metered(promptEstimate)
    }
  }
  // The model is named once, in `message_start`, which the meter forwards whole.
  streamRenamer(upstreamModel: string, publicModel: string) {
    const from = `"model":${JSON.stringify(upstreamModel)}`
    return (text: string) => text.includes(from) ? Passthrough.renameModel(text, publicModel) : text
  }
  encodeResponse(response: Canonical.ChatResponse, model: string) {
    return Response.encodeResponse(response, model)
  }
  frameEncoder(model: string, promptTokens: number): Core.FrameEncoder {
    // message_start states the prompt's tokens before any upstream reported them: the call's estimate stands in.
    const encoder = new AnthropicStream.StreamEncoder(model, { inputTokens: promptTokens })
    const frame = (events: ReadonlyArray<{ readonly event: string; readonly data: unknown }>) => {
      let text = ""
      for (const event of events) text += AnthropicStream.sseEvent(event)
      return text
    }
    return { push: (events) => frame(encoder.pushAll(events)), end: () => frame(encoder.end()) }
  }
  errorFrame(error: GatewayError.GatewayError) {
    return ErrorEnvelope.streamError(error)
  }
}

const parseJson = (body: string) =>
  Effect.try({
    try: () => JSON.parse(body) as unknown,
    catch: (error) =>
      new GatewayError.InvalidRequest({ message: `The request body is not valid JSON: ${(error as Error).message}` })
  })

/**
 * The Anthropic client side.
 *
 * @category dialect
 */
export const client: Core.ClientDialect = {
  dialect: "anthropic",
  presentedKey,
  open: (body) => Effect.map(Passthrough.inspectBody(body), (inspected) => new ChatCall(inspected)),
  renderError: (error, nowMs) => {
    const rendered = ErrorEnvelope.toResponse(error)
    // A limit's refusal says when each limit resets too, as a date, when the time of the refusal is known.
    if (error._tag !== "RateLimited" || error.snapshot === undefined || nowMs === undefined) return rendered
    return { ...rendered, headers: { ...rendered.headers, ...ErrorEnvelope.limitHeaders(error.snapshot, nowMs) } }
  },
  rateLimitHeaders: (snapshot, nowMs) => ErrorEnvelope.limitHeaders(snapshot, nowMs),
  modelsList: (models) => Effect.succeed(Models.modelsList(models)),
  modelObject: Models.modelInfo,
  modelsListPath: "GET /v1/models",
  forwardHeaders,
  countTokens: {
    decode: (body) =>
      Effect.gen(function*() {
        const json = yield* parseJson(body)
        const local = yield* CountTokens.countTokens(json)
        const model = (json as { readonly model: string }).model
        return {
          model,
          local,
          forward: (upstreamModel) =>
            upstreamModel === model ? body : JSON.stringify({ ...(json as object), model: upstreamModel }),
          // A count body is a Messages body without `max_tokens`: read as one that asks for a single token.
          canonical: () =>
            Effect.flatMap(
              client.open(
                Utf8.encode(
                  JSON.stringify({ max_tokens: 1, ...(json as object), stream: false })
                ),
                {}
              ),
              (call) => call.canonical()
            ),
          answer: (tokens) => ({ input_tokens: tokens })
        }
      })
  }
}

// ---------------------------------------------------------------------------
// Upstream side
// ---------------------------------------------------------------------------

/**
 * Incremental decoding of an Anthropic upstream's SSE text into canonical
 * events. An in-band `error` event (or an event that cannot be read) is thrown
 * as the classified gateway error, as the other dialects' decoders do; the
 * call flow turns the throw into the client's in-band error frame.
 *
 * The events decoded before the failing one are returned first, and the error
 * is thrown by the next `push` or by `end`: a network read often carries the
 * last text deltas and the `error` event together, and that text was
 * generated, so it reaches the client and is metered.
 */
const eventDecoder = (start: Core.AnswerStart): Core.EventDecoder => {
  const parser = new Sse.Parser()
  // Anthropic streams carry no creation time of their own: the call's start stands in.
  const decoder = new AnthropicStream.StreamDecoder({ created: start.created })
  let failure: AnthropicStream.StreamError | undefined
  const feed = (events: ReadonlyArray<Sse.Event>): ReadonlyArray<Canonical.StreamEvent> => {
    if (failure !== undefined) throw failure
    if (events.length === 0) return []
    let out: Array<Canonical.StreamEvent> | undefined
    for (const event of events) {
      const decoded = decoder.pushText(event.data)
      if (Result.isFailure(decoded)) {
        failure = decoded.failure
        break
      }
      if (decoded.success.length > 0) {
        if (out === undefined) out = decoded.success
        else for (const e of decoded.success) out.push(e)
      }
    }
    if (out === undefined) {
      if (failure !== undefined) throw failure
      return []
    }
    return out
  }
  return {
    push: (text) => feed(parser.push(text)),
    // Nothing is called after `end`, so a failure must be thrown now.
    end: () => {
      const last = feed(parser.end())
      if (failure !== undefined) throw failure
      return last
    }
  }
}

/** A 200 non-stream answer that is an error (`"type":"error"`), or has no `content`: the upstream failing. */
const notAnAnswer = (json: unknown, channel: string) => {
  if (!Predicate.isObject(json)) return Core.answeredOther(channel, "an Anthropic message")
  if (json.type === "error" || (json.error !== undefined && json.error !== null)) {
    return Core.answeredError(channel, ErrorEnvelope.upstreamErrorOf(json)?.message)
  }
  return Array.isArray(json.content) ? undefined : Core.answeredOther(channel, "an Anthropic message")
}

/**
 * The opening of a 200 stream: its first event (`ping`s before it skipped)
 * must be a JSON object that is not an `error` event; data that is not JSON,
 * or no event at all before the end, is the upstream failing.
 */
const opening = (text: string, ended: boolean, channel: string): Core.Opening => {
  const parser = new Sse.Parser()
  const events = ended ? [...parser.push(text), ...parser.end()] : parser.push(text)
  for (const event of events) {
    let json: unknown
    try {
      json = JSON.parse(event.data)
    } catch {
      return Core.brokenEvent(channel)
    }
    if (!Predicate.isObject(json)) return Core.answeredOther(channel, "an Anthropic stream event")
    if (event.event === "error" || json.type === "error") {
      return Core.answeredError(channel, ErrorEnvelope.upstreamErrorOf(json)?.message)
    }
    if (json.type !== "ping" && event.event !== "ping") return "answer"
  }
  return ended ? Core.emptyStream(channel) : "incomplete"
}

/**
 * The Anthropic upstream side: canonical requests as Messages bodies, Messages
 * answers and streams as canonical responses and events, and Anthropic error
 * responses classified into gateway errors (`ErrorEnvelope.classifyUpstream`:
 * 429 -> `UpstreamRateLimited`, 529 and 5xx -> `UpstreamUnavailable`, 408/504
 * -> `UpstreamTimeout`, other 4xx -> `UpstreamRejected`, credential problems
 * -> `UpstreamUnavailable` about the channel without the upstream's text).
 *
 * @category dialect
 */
export const upstream: Core.UpstreamDialect = {
  dialect: "anthropic",
  chatUrl: (channel) => `${trimSlash(channel.baseUrl)}/v1/messages`,
  headers: (channel, apiKey) => {
    const headers: Record<string, string> = {
      "content-type": "application/json",
      ...channel.headers,
      "x-api-key": apiKey
    }
    // Header names are case-insensitive: a channel's `Anthropic-Version` is its version.
    if (!Object.keys(channel.headers).some((name) => name.toLowerCase() === "anthropic-version")) {
      headers["anthropic-version"] = DEFAULT_VERSION
    }
    return headers
  },
  encodeRequest: (request, upstreamModel) =>
    Effect.map(Request.encodeRequest(request, upstreamModel), (body) => JSON.stringify(body)),
  decodeResponse: (json, start) => Response.decodeResponse(json, { created: start.created }),
  eventDecoder,
  notAnAnswer,
  opening,
  classify: (status, body, headers) => ErrorEnvelope.classifyUpstream(status, body, headers),
  countTokens: {
    url: (channel) => `${trimSlash(channel.baseUrl)}/v1/messages/count_tokens`,
    isCount: (text) => {
      try {
        return isCountAnswer(JSON.parse(text))
      } catch {
        return false
      }
    }
  },
  listModels: UpstreamModels.list
}

/** An Anthropic `count_tokens` answer, as far as it is read. */
const isCountAnswer = Schema.is(Schema.Struct({ input_tokens: Schema.Int }))
