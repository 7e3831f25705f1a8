/**
 * A chat call translated: the channel speaks another dialect, so the
 * client's request goes through the canonical model (decoded once for all
 * the attempts that need it), is encoded for the channel, and its answer,
 * or its stream event by event, is decoded and written in the client's
 * dialect; the call is metered from the canonical answer.
 *
 * @since 0.1.0
 */
import { type Canonical, Params, StreamAssembly, Tokens, Utf8 } from "@modelgate/core"
import { Effect } from "effect"
import type * as Settlement from "../money/Settlement.ts"
import * as CallSpans from "../telemetry/CallSpans.ts"
import * as Upstream from "../wire/Upstream.ts"
import { answered, type Attempt, type ChatCall, readAnswer, send, streamed } from "./ChatCall.ts"
import * as Ids from "./Ids.ts"

/**
 * One attempt of a translated call, stream or not.
 *
 * @category attempts
 */
export const attempt = (call: ChatCall, attempt: Attempt) =>
  Effect.gen(function*() {
    const { upstream, upstreamModel } = attempt
    const { dialect, model } = call
    const request = yield* call.canonical()
    const edit = Params.editOf(attempt.target.channel)
    const encoded = yield* upstream.encodeRequest(request, upstreamModel, model)
    // What the translation left out by decision goes on the usage record.
    call.log.noted(request.notes)
    const response = yield* send(call, attempt, edit === undefined ? encoded : Params.editText(encoded, edit))

    if (!dialect.stream) {
      const { json } = yield* readAnswer(call, attempt, response)
      const decoded = yield* upstream.decodeResponse(json, yield* Ids.answerStart)
      CallSpans.response(call.trace, decoded, upstreamModel)
      yield* call.captured(attempt.target.channel, () => Effect.succeed(decoded))
      return yield* answered(
        call,
        attempt,
        dialect.encodeResponse(decoded, model.id),
        meteredOf(decoded, call.promptEstimate)
      )
    }

    const opened = yield* Upstream.opening(response, upstream, call.settings.maxEventBytes)
    const start = yield* Ids.answerStart
    const assembler = new StreamAssembly.Assembler()
    const encoder = dialect.frameEncoder(model.id, call.promptEstimate)
    const feed = (batch: ReadonlyArray<Canonical.StreamEvent>) => {
      for (const event of batch) assembler.add(event)
      return encoder.push(batch)
    }
    const metered = () => meteredOf(assembler.response(), call.promptEstimate, true)
    if (upstream.binaryStream !== undefined) {
      // Binary frames (Bedrock's event stream) decode on their bytes, each frame bounded from its prelude.
      const frames = upstream.binaryStream.decoder(start, {
        maxEventBytes: call.settings.maxEventBytes,
        channel: attempt.target.channel.name
      })
      return yield* streamed(call, attempt, response, opened, {
        push: (chunk) => feed(frames.push(chunk)),
        end: () => feed(frames.end()) + encoder.end(),
        metered,
        answer: () => assembler.response()
      })
    }
    const events = upstream.eventDecoder(start)
    const text = new Utf8.StreamDecoder()
    return yield* streamed(call, attempt, response, opened, {
      push: (chunk) => feed(events.push(text.push(chunk))),
      end: () => feed(events.push(text.end())) + feed(events.end()) + encoder.end(),
      metered,
      answer: () => assembler.response()
    })
  })

/**
 * Metering of a canonical response: the upstream's usage, or local estimates
 * when it gave none (or gave figures that were refused, which it says). A
 * stream (`streamed`) that ended before any choice finished was cut: the
 * usage it reported so far (Anthropic reports its input and one output token
 * at the start) may fall short of what it delivered, so its output is at
 * least the estimate of the generated text.
 */
const meteredOf = (response: Canonical.ChatResponse, promptEstimate: number, streamed = false): Settlement.Metered => {
  const usage = response.usage
  if (usage !== undefined) {
    const cut = streamed && response.choices.every((choice) => choice.finishReason === null)
    return {
      promptTokens: usage.promptTokens,
      completionTokens: cut
        ? Math.max(usage.completionTokens, Tokens.estimateGeneratedTokens(StreamAssembly.generatedText(response)))
        : usage.completionTokens,
      cachedTokens: usage.cachedTokens ?? 0,
      cacheWriteTokens: usage.cacheWriteTokens ?? 0,
      ...(usage.reasoningTokens === undefined ? {} : { reasoningTokens: usage.reasoningTokens }),
      reported: true
    }
  }
  const estimate = {
    promptTokens: promptEstimate,
    completionTokens: Tokens.estimateGeneratedTokens(StreamAssembly.generatedText(response)),
    cachedTokens: 0,
    reported: false
  }
  return response.usageRejected === undefined ? estimate : { ...estimate, usageRejected: response.usageRejected }
}
