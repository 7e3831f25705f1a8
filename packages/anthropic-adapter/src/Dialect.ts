/**
 * The Anthropic Messages dialect, as core's `Dialect` interfaces. Today the
 * upstream side: how a channel of type `anthropic` (`POST
 * ${base_url}/v1/messages` with `x-api-key` and `anthropic-version`) is
 * spoken to. OpenAI and Gemini clients reach Anthropic models through the
 * canonical model: the request is encoded with `Request.encodeRequest`,
 * non-stream answers decoded with `Response.decodeResponse`, and streams with
 * `Stream.StreamDecoder`, whose usage events (input and cache counts at
 * `message_start`, cumulative output at each `message_delta`) are what the
 * call is billed for: prompt tokens include cache reads and cache creation,
 * cached tokens are the cache reads.
 *
 * @since 0.1.0
 */
import { type Canonical, Dialect as Core, Sse } from "@modelgate/core"
import { Effect, Predicate, Result } from "effect"
import * as ErrorEnvelope from "./ErrorEnvelope.ts"
import * as Request from "./Request.ts"
import * as Response from "./Response.ts"
import * as AnthropicStream from "./Stream.ts"
import * as UpstreamModels from "./UpstreamModels.ts"

/** The Messages API version sent when the channel's headers name none. @category constants */
export const DEFAULT_VERSION = "2023-06-01"

const trimSlash = (url: string) => url.endsWith("/") ? url.slice(0, -1) : url

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
    if (event.event === "error" || json.type === "error") return Core.answeredError(channel, ErrorEnvelope.upstreamErrorOf(json)?.message)
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
    const headers: Record<string, string> = { "content-type": "application/json", ...channel.headers, "x-api-key": apiKey }
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
  listModels: UpstreamModels.list
}
