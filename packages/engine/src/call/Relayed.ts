/**
 * A chat call relayed: the channel speaks the client's own dialect, so the
 * client's bytes go up as they came (the model renamed to the channel's, the
 * channel's parameter edit applied, with the client headers its dialect
 * forwards) and the upstream's bytes come back as they are (the public model
 * named for a channel with a `model_map`, the channel's secrets redacted),
 * metered on the way by the client's dialect (`Dialect.ChatCall.meter`).
 *
 * @since 0.1.0
 */
import { type Dialect, Params } from "@modelgate/core"
import { Effect, Option } from "effect"
import * as CallSpans from "../telemetry/CallSpans.ts"
import * as Redaction from "../telemetry/Redaction.ts"
import type * as Relay from "../wire/Relay.ts"
import * as Upstream from "../wire/Upstream.ts"
import { answered, type Attempt, type ChatCall, readAnswer, send, streamed } from "./ChatCall.ts"
import * as Ids from "./Ids.ts"

/**
 * One attempt of a relayed call, stream or not.
 *
 * @category attempts
 */
export const attempt = (call: ChatCall, attempt: Attempt) =>
  Effect.gen(function*() {
    const { channel } = attempt.target
    const { dialect, model } = call
    const forwarded = yield* call.parsing(() => dialect.forward(attempt.upstreamModel, Params.editOf(channel)))
    // An upstream that takes the dialect's body in its own way (Claude on Vertex AI) has it its way.
    const relayBody = attempt.upstream.relayBody
    const body = relayBody === undefined ? forwarded : yield* relayBody(forwarded)
    // A large body was forwarded without its structure checked: refused, it is checked now, and a malformed
    // one gets the error naming the field (the upstream's own refusal stands for a well-formed one).
    const response = yield* send(
      call,
      attempt,
      body,
      call.client.forwardHeaders?.(call.headers),
      (refusal) => dialect.check() ?? refusal
    )
    const renamed = attempt.upstreamModel !== model.id

    if (!dialect.stream) {
      const { json, text } = yield* readAnswer(call, attempt, response)
      // Relayed as the upstream wrote it, but never with the channel's secrets in it.
      const out = Redaction.text(channel, renamed ? dialect.renameInBody(text, model.id) : text)
      CallSpans.responseJson(call.trace, call.client.dialect, json)
      // Only a trace that captures content has the answer decoded (`captured`); no closure for it otherwise.
      if (CallSpans.capturing(call.trace)) {
        yield* call.captured(channel, () =>
          Effect.map(
            Effect.option(Effect.flatMap(Ids.answerStart, (start) => attempt.upstream.decodeResponse(json, start))),
            Option.getOrUndefined
          ))
      }
      return yield* answered(call, attempt, out, dialect.relayedUsage(json, call.promptEstimate))
    }

    const opened = yield* Upstream.opening(response, attempt.upstream, call.settings.maxEventBytes)
    CallSpans.streamOpening(call.trace, call.client.dialect, opened.bytes)
    const meter = dialect.meter()
    const rename = renamed ? dialect.streamRenamer(attempt.upstreamModel, model.id) : undefined
    // A sampled call's finish reasons are read from the events as they go out.
    const reasons = CallSpans.streamReasons(call.trace, call.client.dialect)
    // Relayed event by event as the upstream wrote it (an in-band error event included), its secrets redacted:
    // whole events the meter left as they were go out as the upstream's own bytes.
    const frames = (out: Dialect.Forward): Relay.Frames => {
      if (out === undefined) return ""
      if (reasons !== undefined) reasons.scan(typeof out === "string" ? out : out.text)
      if (typeof out !== "string") {
        if (rename === undefined && !Redaction.quotes(channel, out.text)) return out.bytes
        out = out.text
      }
      return Redaction.text(channel, rename === undefined ? out : rename(out))
    }
    return yield* streamed(call, attempt, response, opened, {
      push: (chunk) => frames(meter.push(chunk)),
      end: () => frames(meter.end()),
      metered: () => meter.metered(call.promptEstimate),
      traced: reasons === undefined ? undefined : () => reasons.end()
    })
  })
