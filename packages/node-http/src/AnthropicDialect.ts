/**
 * The Anthropic dialect's upstream codec, from `@modelgate/anthropic-adapter`:
 * how a channel of type `anthropic` (Anthropic Messages, `POST
 * ${base_url}/v1/messages`, see `Upstream.ts` for the URL and the `x-api-key`
 * and `anthropic-version` headers) is spoken to.
 *
 * OpenAI and Gemini clients reach Anthropic models through the canonical
 * model: the request is encoded with `Request.encodeRequest`, non-stream
 * answers decoded with `Response.decodeResponse`, and streams with
 * `Stream.SseDecoder`, whose usage events (input and cache counts at
 * `message_start`, cumulative output at each `message_delta`) are what the
 * call is billed for: prompt tokens include cache reads and cache creation,
 * cached tokens are the cache reads.
 *
 * Anthropic clients (`POST /v1/messages` on this gateway) are not served yet;
 * only the upstream side lives here.
 *
 * @since 0.1.0
 */
import { ErrorEnvelope, Request, Response, Stream as AnthropicStream } from "@modelgate/anthropic-adapter"
import type { Canonical } from "@modelgate/core"
import { Clock, Effect, Result } from "effect"
import type { EventDecoder, UpstreamCodec } from "./Codecs.ts"

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
 *
 * `created` (epoch seconds) is reported in the `start` event, since Anthropic
 * streams carry no creation time of their own.
 */
const eventDecoder = (created: number): EventDecoder => {
  const parser = new AnthropicStream.SseParser()
  const decoder = new AnthropicStream.StreamDecoder({ created })
  let failure: AnthropicStream.StreamError | undefined
  const feed = (events: ReadonlyArray<AnthropicStream.SseEvent>): ReadonlyArray<Canonical.StreamEvent> => {
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

/**
 * The Anthropic upstream side: canonical requests as Messages bodies, Messages
 * answers and streams as canonical responses and events, and Anthropic error
 * responses classified into gateway errors (`ErrorEnvelope.classifyUpstream`:
 * 429 -> `UpstreamRateLimited`, 529 and 5xx -> `UpstreamUnavailable`, 408/504
 * -> `UpstreamTimeout`, other 4xx -> `UpstreamRejected`, credential problems
 * -> `UpstreamUnavailable` about the channel without the upstream's text).
 *
 * @example
 * ```ts
 * import * as Anthropic from "./AnthropicDialect.ts"
 *
 * const body = yield* Anthropic.upstream.encodeRequest(request, "claude-sonnet-4-5")
 * // '{"model":"claude-sonnet-4-5","max_tokens":4096,"messages":[...]}'
 * ```
 *
 * @category codecs
 */
export const upstream: UpstreamCodec = {
  dialect: "anthropic",
  encodeRequest: (request, upstreamModel) =>
    Effect.map(Request.encodeRequest(request, upstreamModel), (body) => JSON.stringify(body)),
  decodeResponse: (json) =>
    Effect.flatMap(
      Clock.currentTimeMillis,
      (now) => Response.decodeResponse(json, { created: Math.floor(now / 1000) })
    ),
  eventDecoder: () => eventDecoder(Math.floor(Date.now() / 1000)),
  classify: (status, body, headers) => ErrorEnvelope.classifyUpstream(status, body, headers)
}
