/**
 * The OpenAI dialect's codecs, from `@modelgate/openai-adapter`.
 *
 * @since 0.1.0
 */
import { type Canonical, GatewayError } from "@modelgate/core"
import { ErrorEnvelope, Models, Passthrough, Request, Response, Sse, Stream as OpenAIStream } from "@modelgate/openai-adapter"
import { Effect, Result } from "effect"
import type { ClientCodec, EventDecoder, Inspected, UpstreamCodec } from "./Codecs.ts"
import * as Params from "./Params.ts"

const inspect = (body: string) =>
  Effect.map(Passthrough.inspectChatBody(body), (inspected): Inspected => ({
    model: inspected.model,
    stream: inspected.stream,
    includeUsage: inspected.includeUsage,
    maxOutputTokens: inspected.maxTokens,
    json: inspected.json,
    forward: (upstreamModel, edit) =>
      edit === undefined
        ? Passthrough.upstreamBody(inspected, upstreamModel)
        : edit.streamOptions
        ? Passthrough.upstreamBody({ ...inspected, json: Params.edit(inspected.json, edit) }, upstreamModel)
        // An upstream that rejects stream_options gets none (its stream usage is then counted locally).
        : JSON.stringify({ ...Params.edit(inspected.json, edit), model: upstreamModel })
  }))

/** The OpenAI client side. @category codecs */
export const client: ClientCodec = {
  dialect: "openai",
  inspect,
  decodeRequest: (inspected) => Request.decodeRequest(inspected.json),
  passthroughMeter: (inspected) => {
    const meter = new Passthrough.PassthroughMeter({ includeUsage: inspected.includeUsage })
    return {
      push: (text) => meter.push(text),
      end: () => meter.end(),
      metered: (promptEstimate) => {
        const usage = meter.usage()
        return usage.reported ? usage : { ...usage, promptTokens: promptEstimate }
      }
    }
  },
  usageOfResponse: (json, promptEstimate) => Passthrough.usageOfResponse(json, promptEstimate),
  encodeResponse: (response, model) => Response.encodeResponse(response, model),
  frameEncoder: (inspected, model) => {
    const encoder = new OpenAIStream.StreamEncoder({ model, includeUsage: inspected.includeUsage })
    return {
      push: (events) => {
        let text = ""
        for (const event of events) {
          for (const chunk of encoder.push(event)) text += Sse.frame(JSON.stringify(chunk))
        }
        return text
      },
      end: () => encoder.finish()
    }
  },
  renderError: (error) => ErrorEnvelope.toResponse(error),
  streamErrorFrame: (error) => ErrorEnvelope.streamError(error)
}

/** Incremental decoding of an OpenAI upstream's SSE text; throws the upstream's error when an event is one. */
const eventDecoder = (): EventDecoder => {
  const parser = new Sse.SseParser()
  const decoder = new OpenAIStream.StreamDecoder()
  let done = false
  // An error event after good events in the same read: the good events are delivered first, the error on the next read.
  let pending: GatewayError.GatewayError | undefined
  const feed = (events: ReadonlyArray<Sse.SseEvent>): Array<Canonical.StreamEvent> => {
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

/** The OpenAI upstream side (also Azure, which speaks the same wire format). @category codecs */
export const upstream: UpstreamCodec = {
  dialect: "openai",
  encodeRequest: (request, upstreamModel) =>
    Effect.map(Request.ensureEncodable(request), (encodable) => JSON.stringify(Request.encodeRequest(encodable, upstreamModel))),
  decodeResponse: (json) => Response.decodeResponse(json),
  eventDecoder,
  classify: (status, body, headers) => ErrorEnvelope.classifyUpstream(status, body, headers)
}

/** `GET /v1/models`. @category models */
export const modelsList = Models.modelsList

/** `GET /v1/models/{id}`. @category models */
export const modelObject = Models.modelObject

/** An error thrown by a decoder, or an unexpected throw, as a gateway error. @category errors */
export const asGatewayError = (error: unknown): GatewayError.GatewayError =>
  GatewayError.isGatewayError(error)
    ? error
    : new GatewayError.UpstreamUnavailable({ message: "The upstream's answer could not be read." })
