/**
 * Streamed `streamGenerateContent` answers: Gemini chunks <-> canonical
 * stream events.
 *
 * - `StreamDecoder` reads a Gemini upstream's chunks (each a full
 *   `GenerateContentResponse` holding only the new parts). Text and thought
 *   parts become text and thinking events; each `functionCall` part (always
 *   complete in Gemini streams) becomes a `tool_call_start` and one
 *   `tool_call_delta` carrying the whole arguments JSON; `finishReason`
 *   becomes a `finish` event (`tool_calls` when the candidate called
 *   functions). `usageMetadata` is cumulative: the last one is kept and
 *   emitted once, as a `usage` event, by `end()`. Stream events carry no
 *   media: a generated image becomes a text event with the image as Markdown
 *   (`imageMarkdown`, a `data:` URL), and other media (audio, documents) fail
 *   the stream with `UpstreamUnavailable` saying so.
 * - `StreamEncoder` writes chunks for a Gemini client: each text or thinking
 *   fragment is a chunk at once; tool-call argument fragments are buffered
 *   per call until the call is complete (the next call or content of that
 *   candidate, its finish, or the end) and sent as one complete
 *   `functionCall` part with its `id`. The finish reasons and the usage are
 *   held back for one final chunk written by `end()`, so the last chunk
 *   carries `finishReason` and `usageMetadata` together. No chunk has an
 *   empty `parts` array except that final one when nothing is left to send.
 *   A stream that ends without a canonical `finish` gets no `finishReason`
 *   (a cut answer must not look complete; gemini-cli retries it).
 *
 * `decodeStream`, `decodeSseText`, `encodeStream` are the Effect `Stream`
 * versions.
 *
 * @since 0.1.0
 */
import type { Canonical } from "@modelgate/core"
import { GatewayError, Sse } from "@modelgate/core"
import { Effect, Predicate, Result, Stream } from "effect"
import * as ErrorEnvelope from "./ErrorEnvelope.ts"
import type * as GenerateContent from "./GenerateContent.ts"
import { decodeResponseBody } from "./GenerateContent.ts"
import {
  finishReasonFromWire,
  finishReasonToWire,
  imageMarkdown,
  partFromWire,
  readUsage,
  syntheticCallId,
  untranslatableMedia,
  usageToWire
} from "./Response.ts"

/** Errors a Gemini upstream stream can end with. @category models */
export type StreamError = ErrorEnvelope.UpstreamError

/** Options of `StreamDecoder`. @category models */
export interface DecoderOptions {
  /** Creation time (epoch seconds) reported in the `start` event; default 0. */
  readonly created?: number
  /** Model name to report when the chunks carry no `modelVersion`. */
  readonly model?: string
  /** Response id to report in the `start` event when the chunks carry no `responseId`; default `""`. */
  readonly id?: string
}

interface DecodedChoice {
  calls: number
  finished: boolean
}

/**
 * Gemini upstream chunks -> canonical events, one stream per instance.
 *
 * @example
 * ```ts
 * const decoder = new StreamDecoder()
 * decoder.push({ candidates: [{ content: { parts: [{ text: "Hel" }] } }], responseId: "r", modelVersion: "m" })
 * // Success([{ type: "start", id: "r", model: "m", created: 0 }, { type: "text", index: 0, text: "Hel" }])
 * decoder.push({ candidates: [{ content: { parts: [{ text: "lo" }] }, finishReason: "STOP" }], usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 2, totalTokenCount: 5 } })
 * // Success([{ type: "text", index: 0, text: "lo" }, { type: "finish", index: 0, reason: "stop" }])
 * decoder.end()
 * // [{ type: "usage", usage: { promptTokens: 3, completionTokens: 2, totalTokens: 5 } }]
 * ```
 *
 * @category decoding
 */
export class StreamDecoder {
  private readonly options: DecoderOptions | undefined
  private started = false
  private responseId: string | undefined = undefined
  /**
   * The last `usageMetadata` reported, as it came: read (to canonical usage, or
   * why its figures were refused) only when asked, as a stream repeats a
   * partial one on every chunk.
   */
  private usageWire: unknown = undefined
  private readonly choices = new Map<number, DecodedChoice>()

  constructor(options?: DecoderOptions) {
    this.options = options
  }

  /**
   * Decodes one chunk (a parsed JSON value). An in-band `{"error":{...}}`
   * fails with the classified upstream error; a chunk that is not a Gemini
   * response fails with `UpstreamUnavailable` (502).
   */
  push(chunk: unknown): Result.Result<Array<Canonical.StreamEvent>, StreamError> {
    const out: Array<Canonical.StreamEvent> = []
    const failure = this.decodeInto(chunk, out)
    return failure === undefined ? Result.succeed(out) : Result.fail(failure)
  }

  /** Decodes the JSON text of one SSE event's data. */
  pushText(data: string): Result.Result<Array<Canonical.StreamEvent>, StreamError> {
    let chunk: unknown
    try {
      chunk = JSON.parse(data)
    } catch {
      return Result.fail(
        new GatewayError.UpstreamUnavailable({
          status: 502,
          message: "The upstream sent a stream event that is not JSON."
        })
      )
    }
    return this.push(chunk)
  }

  /** Decodes several chunks in order into one list of events. */
  pushAll(chunks: Iterable<unknown>, text = false): Result.Result<Array<Canonical.StreamEvent>, StreamError> {
    const out: Array<Canonical.StreamEvent> = []
    for (const chunk of chunks) {
      let value: unknown = chunk
      if (text) {
        try {
          value = JSON.parse(chunk as string)
        } catch {
          return Result.fail(
            new GatewayError.UpstreamUnavailable({
              status: 502,
              message: "The upstream sent a stream event that is not JSON."
            })
          )
        }
      }
      const failure = this.decodeInto(value, out)
      if (failure !== undefined) return Result.fail(failure)
    }
    return Result.succeed(out)
  }

  /**
   * The events due at the end of the stream: the last usage, if any was
   * reported (`usage_rejected` when its figures were not token counts).
   */
  end(): Array<Canonical.StreamEvent> {
    const usage = readUsage(this.usageWire)
    return usage === undefined
      ? []
      : typeof usage === "string"
      ? [{ type: "usage_rejected", reason: usage }]
      : [{ type: "usage", usage }]
  }

  /** The last usage reported so far, when its figures are token counts (for billing a cut stream). */
  usage(): Canonical.Usage | undefined {
    const usage = readUsage(this.usageWire)
    return typeof usage === "string" ? undefined : usage
  }

  private decodeInto(chunk: unknown, out: Array<Canonical.StreamEvent>): StreamError | undefined {
    if (Predicate.isObject(chunk) && Predicate.isObject(chunk.error)) {
      const error = ErrorEnvelope.upstreamErrorOf(chunk)
      const code = chunk.error.code
      return ErrorEnvelope.classifyUpstreamError(typeof code === "number" ? code : 500, error)
    }
    const decoded = decodeResponseBody(chunk)
    if (Result.isFailure(decoded)) {
      return new GatewayError.UpstreamUnavailable({
        status: 502,
        message: `The upstream sent a stream chunk the gateway cannot read (${decoded.failure.message}).`
      })
    }
    const wire = decoded.success
    if (!this.started) {
      this.started = true
      this.responseId = wire.responseId
      out.push({
        type: "start",
        id: wire.responseId ?? this.options?.id ?? "",
        model: wire.modelVersion ?? this.options?.model ?? "",
        created: this.options?.created ?? 0
      })
    }
    const candidates = wire.candidates ?? []
    for (let position = 0; position < candidates.length; position++) {
      const candidate = candidates[position]!
      const index = candidate.index ?? position
      let state = this.choices.get(index)
      if (state === undefined) {
        state = { calls: 0, finished: false }
        this.choices.set(index, state)
      }
      const choice = state
      for (const part of candidate.content?.parts ?? []) {
        const canonical = partFromWire(part, () => syntheticCallId(this.responseId, index, choice.calls))
        if (canonical === undefined) continue
        switch (canonical.type) {
          case "text":
            out.push({ type: "text", index, text: canonical.text })
            break
          case "thinking":
            out.push(
              canonical.signature === undefined
                ? { type: "thinking", index, text: canonical.text }
                : { type: "thinking", index, text: canonical.text, signature: canonical.signature }
            )
            break
          case "tool_call": {
            const call = choice.calls++
            out.push(
              canonical.signature === undefined
                ? { type: "tool_call_start", index, call, id: canonical.id, name: canonical.name }
                : {
                  type: "tool_call_start",
                  index,
                  call,
                  id: canonical.id,
                  name: canonical.name,
                  signature: canonical.signature
                }
            )
            out.push({ type: "tool_call_delta", index, call, arguments: canonical.arguments })
            break
          }
          case "image":
            // Stream events carry no images: a generated image reaches the client as Markdown text with its data URL.
            out.push({ type: "text", index, text: imageMarkdown(canonical) })
            break
          case "file":
            return untranslatableMedia(canonical)
          default:
            break
        }
      }
      if (candidate.finishReason !== undefined && !choice.finished) {
        const reason = finishReasonFromWire(candidate.finishReason, choice.calls > 0)
        if (reason !== null) {
          choice.finished = true
          out.push({ type: "finish", index, reason })
        }
      }
    }
    if (candidates.length === 0 && wire.promptFeedback?.blockReason !== undefined && !this.choices.has(0)) {
      this.choices.set(0, { calls: 0, finished: true })
      out.push({ type: "finish", index: 0, reason: "content_filter" })
    }
    if (wire.usageMetadata !== undefined) this.usageWire = wire.usageMetadata
    return undefined
  }
}

// ---------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------

interface PendingCall {
  readonly call: number
  readonly id: string
  readonly name: string
  readonly signature: string | undefined
  args: string
}

interface EncodedChoice {
  pending: PendingCall | undefined
  /** Complete parts held for the final chunk (calls completed by the finish). */
  final: Array<GenerateContent.OutputPart>
  finish: Canonical.FinishReason | undefined
}

const callPart = (call: PendingCall): GenerateContent.OutputPart => {
  let args: GenerateContent.JsonObject
  const text = call.args
  if (text.trim().length === 0) args = {}
  else {
    try {
      const parsed: unknown = JSON.parse(text)
      args = Predicate.isObject(parsed) ? parsed as GenerateContent.JsonObject : { _raw: text }
    } catch {
      args = { _raw: text }
    }
  }
  const functionCall = { id: call.id, name: call.name, args }
  return call.signature === undefined ? { functionCall } : { functionCall, thoughtSignature: call.signature }
}

/**
 * Canonical events -> Gemini chunks for a Gemini client, one stream per
 * instance. `modelVersion` is the name the client asked for.
 *
 * @example
 * ```ts
 * const encoder = new StreamEncoder("gemini-2.5-flash")
 * encoder.push({ type: "start", id: "r1", model: "gpt-4o", created: 1 }) // []
 * encoder.push({ type: "text", index: 0, text: "Hi" })
 * // [{ candidates: [{ content: { role: "model", parts: [{ text: "Hi" }] }, index: 0 }], modelVersion: "gemini-2.5-flash", responseId: "r1" }]
 * encoder.push({ type: "finish", index: 0, reason: "stop" }) // []
 * encoder.end()
 * // [{ candidates: [{ content: { role: "model", parts: [] }, finishReason: "STOP", index: 0 }], modelVersion: "gemini-2.5-flash", responseId: "r1" }]
 * ```
 *
 * @category encoding
 */
export class StreamEncoder {
  private readonly modelVersion: string
  private responseId = ""
  private lastUsage: Canonical.Usage | undefined = undefined
  private readonly choices = new Map<number, EncodedChoice>()

  constructor(modelVersion: string) {
    this.modelVersion = modelVersion
  }

  /** Encodes one event; returns the chunks to send now (often none). */
  push(event: Canonical.StreamEvent): Array<GenerateContent.OutputResponse> {
    const out: Array<GenerateContent.OutputResponse> = []
    this.encodeInto(event, out)
    return out
  }

  /** Encodes several events in order. */
  pushAll(events: Iterable<Canonical.StreamEvent>): Array<GenerateContent.OutputResponse> {
    const out: Array<GenerateContent.OutputResponse> = []
    for (const event of events) this.encodeInto(event, out)
    return out
  }

  /**
   * Ends the stream: the final chunk with every finished candidate's
   * remaining parts and `finishReason`, calls still buffered, and
   * `usageMetadata`. Empty when there is nothing left to say.
   */
  end(): Array<GenerateContent.OutputResponse> {
    const candidates: Array<GenerateContent.OutputCandidate> = []
    const indexes = [...this.choices.keys()].sort((a, b) => a - b)
    for (const index of indexes) {
      const choice = this.choices.get(index)!
      if (choice.pending !== undefined) {
        choice.final.push(callPart(choice.pending))
        choice.pending = undefined
      }
      if (choice.finish === undefined && choice.final.length === 0) continue
      const content = { role: "model" as const, parts: choice.final }
      candidates.push(
        choice.finish === undefined
          ? { content, index }
          : { content, finishReason: finishReasonToWire(choice.finish), index }
      )
      choice.final = []
    }
    if (candidates.length === 0 && this.lastUsage === undefined) return []
    const chunk: {
      candidates: Array<GenerateContent.OutputCandidate>
      usageMetadata?: GenerateContent.UsageMetadata
      modelVersion: string
      responseId: string
    } = { candidates, modelVersion: this.modelVersion, responseId: this.responseId }
    if (this.lastUsage !== undefined) chunk.usageMetadata = usageToWire(this.lastUsage)
    this.lastUsage = undefined
    return [chunk]
  }

  private choice(index: number): EncodedChoice {
    let choice = this.choices.get(index)
    if (choice === undefined) {
      choice = { pending: undefined, final: [], finish: undefined }
      this.choices.set(index, choice)
    }
    return choice
  }

  private emit(
    index: number,
    parts: Array<GenerateContent.OutputPart>,
    out: Array<GenerateContent.OutputResponse>
  ): void {
    out.push({
      candidates: [{ content: { role: "model", parts }, index }],
      modelVersion: this.modelVersion,
      responseId: this.responseId
    })
  }

  private encodeInto(event: Canonical.StreamEvent, out: Array<GenerateContent.OutputResponse>): void {
    switch (event.type) {
      case "start":
        this.responseId = event.id
        return
      case "usage":
        this.lastUsage = event.usage
        return
      case "usage_rejected":
        // Figures the gateway refused are not passed on.
        this.lastUsage = undefined
        return
      case "text":
      case "thinking": {
        if (event.text.length === 0 && (event.type === "text" || event.signature === undefined)) return
        const choice = this.choice(event.index)
        const parts: Array<GenerateContent.OutputPart> = []
        if (choice.pending !== undefined) {
          parts.push(callPart(choice.pending))
          choice.pending = undefined
        }
        if (event.type === "text") parts.push({ text: event.text })
        else {
          parts.push(
            event.signature === undefined
              ? { text: event.text, thought: true }
              : { text: event.text, thought: true, thoughtSignature: event.signature }
          )
        }
        this.emit(event.index, parts, out)
        return
      }
      case "tool_call_start": {
        const choice = this.choice(event.index)
        if (choice.pending !== undefined) this.emit(event.index, [callPart(choice.pending)], out)
        choice.pending = { call: event.call, id: event.id, name: event.name, signature: event.signature, args: "" }
        return
      }
      case "tool_call_delta": {
        const pending = this.choices.get(event.index)?.pending
        if (pending !== undefined && pending.call === event.call) pending.args += event.arguments
        return
      }
      case "finish": {
        const choice = this.choice(event.index)
        if (choice.pending !== undefined) {
          choice.final.push(callPart(choice.pending))
          choice.pending = undefined
        }
        choice.finish = event.reason
        return
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Effect Stream versions
// ---------------------------------------------------------------------------

/**
 * Decodes a stream of parsed Gemini chunks into canonical events (the usage
 * event comes last, once the upstream stream ended).
 *
 * @category streams
 */
export const decodeStream =
  (options?: DecoderOptions) =>
  <E, R>(chunks: Stream.Stream<unknown, E, R>): Stream.Stream<Canonical.StreamEvent, E | StreamError, R> =>
    Stream.suspend(() => {
      const decoder = new StreamDecoder(options)
      return chunks.pipe(
        Stream.mapArrayEffect((array) => {
          const result = decoder.pushAll(array)
          return Result.isFailure(result) ? Effect.fail(result.failure) : Effect.succeed([result.success] as const)
        }),
        Stream.flattenIterable,
        Stream.concat(Stream.suspend(() => Stream.fromIterable(decoder.end())))
      )
    })

/**
 * Decodes a Gemini upstream's SSE text (`?alt=sse`), split anyhow, into
 * canonical events.
 *
 * @category streams
 */
export const decodeSseText =
  (options?: DecoderOptions) =>
  <E, R>(text: Stream.Stream<string, E, R>): Stream.Stream<Canonical.StreamEvent, E | StreamError, R> =>
    Stream.suspend(() => {
      const decoder = new StreamDecoder(options)
      return Sse.decode(text).pipe(
        Stream.mapArrayEffect((events) => {
          const result = decoder.pushAll(events.map((event) => event.data), true)
          return Result.isFailure(result) ? Effect.fail(result.failure) : Effect.succeed([result.success] as const)
        }),
        Stream.flattenIterable,
        Stream.concat(Stream.suspend(() => Stream.fromIterable(decoder.end())))
      )
    })

/**
 * Encodes canonical events into Gemini chunks for a client; the final chunk
 * (finish reasons and usage) is written when the event stream ends. Frame the
 * result with `Framing.encodeSse` or `Framing.encodeArray`.
 *
 * @category streams
 */
export const encodeStream =
  (modelVersion: string) =>
  <E, R>(events: Stream.Stream<Canonical.StreamEvent, E, R>): Stream.Stream<GenerateContent.OutputResponse, E, R> =>
    Stream.mapAccumArray(
      events,
      () => new StreamEncoder(modelVersion),
      (encoder, array) => [encoder, encoder.pushAll(array)] as const,
      {
        onHalt: (encoder) => encoder.end()
      }
    )
