/**
 * The OpenAI dialect's codecs, from `@modelgate/openai-adapter`.
 *
 * @since 0.1.0
 */
import { type Canonical, type Domain, GatewayError } from "@modelgate/core"
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
    choices: inspected.choices,
    mediaParts: inspected.mediaParts,
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
  streamErrorFrame: (error) => ErrorEnvelope.streamError(error),
  // The top-level "model" of a chat completion (upstreams may pretty-print it); strings inside escape their quotes.
  renameInBody: (body, publicModel) => body.replace(/"model"\s*:\s*"(?:[^"\\]|\\.)*"/, `"model":${JSON.stringify(publicModel)}`),
  streamRenamer: (upstreamModel, publicModel) => {
    const from = `"model":${JSON.stringify(upstreamModel)}`
    const to = `"model":${JSON.stringify(publicModel)}`
    return (text) => text.includes(from) ? text.replaceAll(from, to) : text
  }
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

/**
 * The body for an OpenAI-style upstream. What the catalog says of the model
 * decides two things OpenAI is strict about: `reasoning_effort` is sent only to
 * reasoning models (`reasoning: true`; for others a Gemini client's thinking
 * settings are a hint, left out with a debug log line), and earlier reasoning
 * only to upstreams that take `reasoning_content` (`reasoning_content: true`).
 */
const encodeUpstreamRequest = (request: Canonical.ChatRequest, upstreamModel: string, model: Domain.Model | undefined) => {
  const options: Request.EncodeRequestOptions = {
    reasoningEffort: model?.reasoning === true,
    reasoningContent: model?.reasoningContent === true
  }
  const hinted = request.reasoning !== undefined && (request.reasoning.effort !== undefined || request.reasoning.budgetTokens !== undefined)
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

/** The OpenAI upstream side (also Azure, which speaks the same wire format). @category codecs */
export const upstream: UpstreamCodec = {
  dialect: "openai",
  encodeRequest: encodeUpstreamRequest,
  decodeResponse: (json) => Response.decodeResponse(json),
  eventDecoder,
  classify: (status, body, headers) => ErrorEnvelope.classifyUpstream(status, body, headers)
}

/** `GET /v1/models`. @category models */
export const modelsList = Models.modelsList

/** `GET /v1/models/{id}`. @category models */
export const modelObject = Models.modelObject
