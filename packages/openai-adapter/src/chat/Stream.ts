/**
 * Streaming chat completions: OpenAI chunks <-> canonical stream events.
 *
 * - `StreamDecoder` reads an OpenAI upstream's chunks. A tool call appears as a
 *   `tool_call_start` the first time its `index` is seen (its name decoded by
 *   `Identifiers.decodeToolName`), then one `tool_call_delta` per `arguments`
 *   fragment. `reasoning_content` deltas are thinking. The usage chunk
 *   (`choices: []`) becomes a `usage` event.
 * - `StreamEncoder` writes chunks for an OpenAI client: a role chunk first (per
 *   choice), content and tool-call deltas (the first delta of a call carries
 *   `index`, `id` (with the call's thought signature, `Identifiers.signCallId`),
 *   `type` and `function.name`), a finish chunk (`tool_calls` when
 *   the choice called tools), and, only if the client asked `include_usage`, the
 *   usage chunk with `choices: []` right before `[DONE]`.
 *
 * Both are plain stateful objects (one per stream, allocation-light), and are
 * also offered as Effect Stream transforms (`decodeUpstream`, `encodeClient`)
 * that process whole chunk arrays at a time.
 *
 * @since 0.1.0
 */
import type { Canonical } from "@modelgate/core"
import { GatewayError, Issues, Sse } from "@modelgate/core"
import { Effect, Predicate, Result, Schema, Stream } from "effect"
import type { Mutable } from "effect/Types"
import { classifyUpstreamError, type UpstreamError, upstreamErrorOf } from "../ErrorEnvelope.ts"
import * as Framing from "../Framing.ts"
import { decodeToolName, signCallId } from "../Identifiers.ts"
import * as ChatCompletions from "./ChatCompletions.ts"
import { finishReasonFromWire, finishReasonToWire, readUsage, usageToWire } from "./Response.ts"

// ---------------------------------------------------------------------------
// Decoding (from an OpenAI upstream)
// ---------------------------------------------------------------------------

/**
 * Canonical events from OpenAI chunks, one stream at a time.
 *
 * @example
 * ```ts
 * import { Stream } from "@modelgate/openai-adapter"
 *
 * const decoder = new Stream.StreamDecoder()
 * decoder.push({ id: "c1", created: 1, model: "gpt-4o", choices: [{ index: 0, delta: { role: "assistant", content: "Hi" }, finish_reason: null }] })
 * // [{ type: "start", id: "c1", model: "gpt-4o", created: 1 }, { type: "text", index: 0, text: "Hi" }]
 * ```
 *
 * @category decoding
 */
export class StreamDecoder {
  private started = false
  /** Per choice: wire tool-call index -> canonical call number. */
  private readonly calls = new Map<number, Map<number, number>>()

  /** The events of one chunk, in order. */
  push(chunk: ChatCompletions.UpstreamChatCompletionChunk): Array<Canonical.StreamEvent> {
    const events: Array<Canonical.StreamEvent> = []
    if (!this.started) {
      this.started = true
      events.push({ type: "start", id: chunk.id, model: chunk.model ?? "", created: Math.trunc(chunk.created ?? 0) })
    }
    for (const choice of chunk.choices) {
      const index = choice.index
      const delta = choice.delta
      if (delta !== undefined && delta !== null) {
        const reasoning = delta.reasoning_content
        if (Predicate.isString(reasoning) && reasoning.length > 0) {
          events.push({ type: "thinking", index, text: reasoning })
        }
        const content = delta.content
        if (Predicate.isString(content) && content.length > 0) events.push({ type: "text", index, text: content })
        const refusal = delta.refusal
        if (Predicate.isString(refusal) && refusal.length > 0) events.push({ type: "text", index, text: refusal })
        const toolCalls = delta.tool_calls
        if (toolCalls !== undefined && toolCalls !== null) {
          let calls = this.calls.get(index)
          if (calls === undefined) this.calls.set(index, calls = new Map())
          for (const call of toolCalls) {
            let number = calls.get(call.index)
            if (number === undefined) {
              number = calls.size
              calls.set(call.index, number)
              events.push({
                type: "tool_call_start",
                index,
                call: number,
                id: call.id ?? `call_${index}_${number}`,
                name: decodeToolName(call.function?.name ?? "")
              })
            }
            const args = call.function?.arguments
            if (Predicate.isString(args) && args.length > 0) {
              events.push({ type: "tool_call_delta", index, call: number, arguments: args })
            }
          }
        }
      }
      const reason = finishReasonFromWire(choice.finish_reason)
      if (reason !== null) events.push({ type: "finish", index, reason })
    }
    const usage = readUsage(chunk.usage)
    if (typeof usage === "string") events.push({ type: "usage_rejected", reason: usage })
    else if (usage !== undefined) events.push({ type: "usage", usage })
    return events
  }
}

const decodeChunkJson = Schema.decodeUnknownResult(Schema.fromJsonString(ChatCompletions.UpstreamChatCompletionChunk))

/**
 * Reads the `data` of one upstream SSE event as a chunk. An in-band
 * `{"error":{...}}` event becomes the classified upstream error; data that is
 * not a chunk fails with `UpstreamUnavailable` naming the field.
 *
 * @category decoding
 */
export const parseChunk = (data: string): Result.Result<ChatCompletions.UpstreamChatCompletionChunk, UpstreamError> => {
  let parsed: unknown
  try {
    parsed = JSON.parse(data)
  } catch {
    parsed = undefined
  }
  // The usual chunk is checked by hand; anything else goes to the schema, which names what is wrong.
  const common = ChatCompletions.readCommonChunk(parsed)
  if (common !== undefined) return Result.succeed(common)
  const result = decodeChunkJson(data)
  if (Result.isSuccess(result)) return Result.succeed(result.success)
  if (data.includes("\"error\"")) {
    let json: unknown
    try {
      json = JSON.parse(data)
    } catch {
      json = undefined
    }
    const error = upstreamErrorOf(json)
    if (error !== undefined) {
      const status = Predicate.isObject(json) && Predicate.isObject(json.error) && Predicate.isNumber(json.error.code)
        ? json.error.code
        : 500
      return Result.fail(classifyUpstreamError(status, error))
    }
  }
  const { message, param } = Issues.firstIssue(result.failure.issue)
  return Result.fail(
    new GatewayError.UpstreamUnavailable({
      status: 502,
      message: `The upstream sent a stream event the gateway cannot read (${
        param.length === 0 ? message : `${param}: ${message}`
      }).`
    })
  )
}

/** Decoder state of one upstream stream: the SSE parser, the chunk decoder and whether `[DONE]` was seen. */
class UpstreamState {
  readonly parser = new Sse.Parser()
  readonly decoder = new StreamDecoder()
  done = false

  feed(events: ReadonlyArray<Sse.Event>, out: Array<Canonical.StreamEvent>): UpstreamError | undefined {
    for (const event of events) {
      if (this.done) return undefined
      if (event.data === "[DONE]") {
        this.done = true
        return undefined
      }
      const chunk = parseChunk(event.data)
      if (Result.isFailure(chunk)) return chunk.failure
      for (const e of this.decoder.push(chunk.success)) out.push(e)
    }
    return undefined
  }
}

/**
 * Decodes a whole upstream SSE text, given as chunks split anywhere, into
 * canonical events (stopping at `[DONE]`). For tests and non-streaming callers.
 *
 * @category decoding
 */
export const decodeSseText = (chunks: Iterable<string>): Result.Result<Array<Canonical.StreamEvent>, UpstreamError> => {
  const state = new UpstreamState()
  const out: Array<Canonical.StreamEvent> = []
  for (const chunk of chunks) {
    const error = state.feed(state.parser.push(chunk), out)
    if (error !== undefined) return Result.fail(error)
  }
  const error = state.feed(state.parser.end(), out)
  return error === undefined ? Result.succeed(out) : Result.fail(error)
}

/**
 * A Stream transform: upstream SSE text (split anywhere; use
 * `Stream.decodeText()` first for bytes) to canonical events. Events after
 * `[DONE]` are ignored; an in-band error event or an unreadable chunk fails the
 * stream with the classified `UpstreamError`.
 *
 * @example
 * ```ts
 * import { Stream as OpenAiStream } from "@modelgate/openai-adapter"
 * import { Stream } from "effect"
 *
 * declare const upstreamBytes: Stream.Stream<Uint8Array>
 * const events = upstreamBytes.pipe(Stream.decodeText(), OpenAiStream.decodeUpstream)
 * ```
 *
 * @category streams
 */
export const decodeUpstream = <E, R>(
  self: Stream.Stream<string, E, R>
): Stream.Stream<Canonical.StreamEvent, E | UpstreamError, R> =>
  self.pipe(
    Stream.mapAccumArrayEffect(() => new UpstreamState(), (state, chunks) => {
      const out: Array<Canonical.StreamEvent> = []
      for (const chunk of chunks) {
        const error = state.feed(state.parser.push(chunk), out)
        if (error !== undefined) return Effect.fail(error)
      }
      return Effect.succeed([state, out] as const)
    }, {
      onHalt: (state) => {
        const out: Array<Canonical.StreamEvent> = []
        state.feed(state.parser.end(), out)
        return out
      }
    })
  )

// ---------------------------------------------------------------------------
// Encoding (to an OpenAI client)
// ---------------------------------------------------------------------------

/** Options of a `StreamEncoder`. @category encoding */
export interface StreamEncoderOptions {
  /** The model name the client asked for (reported in every chunk). */
  readonly model: string
  /** Whether the client asked `stream_options.include_usage`: only then is the usage chunk sent. */
  readonly includeUsage: boolean
  /** The chunk id when the canonical stream has no `start` event (default `chatcmpl-modelgate`). */
  readonly id?: string
  /** The creation time when the canonical stream has no `start` event (default 0). */
  readonly created?: number
}

interface ChoiceState {
  toolCalls: boolean
}

/**
 * OpenAI chunks from canonical events, one stream at a time. `push` returns the
 * chunks of one event; `finish` returns the closing SSE text: the usage chunk
 * (when the client asked `include_usage` and usage was seen: the last usage event
 * wins, as usage events are cumulative) and `data: [DONE]`.
 *
 * @example
 * ```ts
 * import { Stream } from "@modelgate/openai-adapter"
 *
 * const encoder = new Stream.StreamEncoder({ model: "gpt-4o", includeUsage: false })
 * encoder.push({ type: "start", id: "c1", model: "upstream-name", created: 1 }) // []
 * encoder.push({ type: "text", index: 0, text: "Hi" })
 * // [role chunk { delta: { role: "assistant", content: "" } }, { delta: { content: "Hi" } }]
 * encoder.push({ type: "finish", index: 0, reason: "stop" }) // [{ delta: {}, finish_reason: "stop" }]
 * encoder.finish() // "data: [DONE]\n\n"
 * ```
 *
 * @category encoding
 */
export class StreamEncoder {
  private id: string
  private created: number
  private readonly model: string
  private readonly includeUsage: boolean
  private readonly choices = new Map<number, ChoiceState>()
  private usage: Canonical.Usage | undefined = undefined
  /** `data: {"id":…,"model":…,"choices":[{"index":` for this stream's id, created and model. */
  private prefix: string | undefined = undefined

  constructor(options: StreamEncoderOptions) {
    this.model = options.model
    this.includeUsage = options.includeUsage
    this.id = options.id ?? "chatcmpl-modelgate"
    this.created = options.created ?? 0
  }

  /** The chunks for one event (none for `start` and `usage`). */
  push(event: Canonical.StreamEvent): Array<ChatCompletions.ChatCompletionChunk> {
    switch (event.type) {
      case "start":
        this.id = event.id
        this.created = event.created
        this.prefix = undefined
        return []
      case "usage":
        this.usage = event.usage
        return []
      case "usage_rejected":
        // Figures the gateway refused are not passed on.
        this.usage = undefined
        return []
      case "text":
        if (event.text.length === 0) return this.opened(event.index, [])
        return this.opened(event.index, [this.chunk(event.index, { content: event.text })])
      case "thinking":
        if (event.text.length === 0) return this.opened(event.index, [])
        return this.opened(event.index, [this.chunk(event.index, { reasoning_content: event.text })])
      case "tool_call_start": {
        const chunks = this.opened(event.index, [])
        this.choices.get(event.index)!.toolCalls = true
        chunks.push(this.chunk(event.index, {
          tool_calls: [{
            index: event.call,
            id: signCallId(event.id, event.signature),
            type: "function",
            function: { name: event.name, arguments: "" }
          }]
        }))
        return chunks
      }
      case "tool_call_delta":
        return this.opened(event.index, [
          this.chunk(event.index, { tool_calls: [{ index: event.call, function: { arguments: event.arguments } }] })
        ])
      case "finish": {
        const chunks = this.opened(event.index, [])
        const reason = this.choices.get(event.index)!.toolCalls && event.reason === "stop"
          ? "tool_calls"
          : finishReasonToWire(event.reason)
        chunks.push(this.chunk(event.index, {}, reason))
        return chunks
      }
    }
  }

  /**
   * The SSE text for one event: its chunks, each framed (`data: {...}\n\n`),
   * exactly `push(event)` through `JSON.stringify` and `Framing.frame`. The
   * steady state of a stream, a text delta of a choice already opened, is
   * written from a prefix kept per stream instead of building and
   * stringifying a chunk object.
   */
  encode(event: Canonical.StreamEvent): string {
    if (
      event.type === "text" && event.text.length > 0 && (event.index | 0) === event.index &&
      this.choices.has(event.index)
    ) {
      if (this.prefix === undefined) {
        this.prefix = `data: {"id":${JSON.stringify(this.id)},"object":"chat.completion.chunk","created":${
          JSON.stringify(this.created)
        },"model":${JSON.stringify(this.model)},"choices":[{"index":`
      }
      return `${this.prefix}${event.index},"delta":{"content":${
        JSON.stringify(event.text)
      }},"logprobs":null,"finish_reason":null}]${this.includeUsage ? `,"usage":null}` : "}"}\n\n`
    }
    let text = ""
    for (const chunk of this.push(event)) text += Framing.frame(JSON.stringify(chunk))
    return text
  }

  /** The usage chunk (`choices: []`), when the client asked for it and usage was seen. */
  usageChunk(): ChatCompletions.ChatCompletionChunk | undefined {
    if (!this.includeUsage || this.usage === undefined) return undefined
    return {
      id: this.id,
      object: "chat.completion.chunk",
      created: this.created,
      model: this.model,
      choices: [],
      usage: usageToWire(this.usage)
    }
  }

  /** The closing SSE text: the usage chunk (if due) and `data: [DONE]`. */
  finish(): string {
    const usage = this.usageChunk()
    return usage === undefined ? Framing.DONE : Framing.frame(JSON.stringify(usage)) + Framing.DONE
  }

  private opened(index: number, chunks: Array<ChatCompletions.ChatCompletionChunk>) {
    if (!this.choices.has(index)) {
      this.choices.set(index, { toolCalls: false })
      chunks.unshift(this.chunk(index, { role: "assistant", content: "" }))
    }
    return chunks
  }

  private chunk(
    index: number,
    delta: ChatCompletions.Delta,
    finishReason: ChatCompletions.FinishReason | null = null
  ): ChatCompletions.ChatCompletionChunk {
    const chunk: Mutable<ChatCompletions.ChatCompletionChunk> = {
      id: this.id,
      object: "chat.completion.chunk",
      created: this.created,
      model: this.model,
      choices: [{ index, delta, logprobs: null, finish_reason: finishReason }]
    }
    if (this.includeUsage) chunk.usage = null
    return chunk
  }
}

/**
 * Encodes a whole canonical event sequence as the SSE text an OpenAI client
 * receives (including the closing usage chunk and `[DONE]`).
 *
 * @category encoding
 */
export const encodeSseText = (events: Iterable<Canonical.StreamEvent>, options: StreamEncoderOptions): string => {
  const encoder = new StreamEncoder(options)
  let text = ""
  for (const event of events) text += encoder.encode(event)
  return text + encoder.finish()
}

/**
 * A Stream transform: canonical events to the SSE text for an OpenAI client,
 * one string per incoming chunk array (nothing for arrays that produce no
 * chunk), ending with the usage chunk (if due) and `data: [DONE]`.
 *
 * @example
 * ```ts
 * import { Stream as OpenAiStream } from "@modelgate/openai-adapter"
 * import type { Canonical } from "@modelgate/core"
 * import { Stream } from "effect"
 *
 * declare const events: Stream.Stream<Canonical.StreamEvent>
 * const sse = events.pipe(OpenAiStream.encodeClient({ model: "gpt-4o", includeUsage: true }))
 * ```
 *
 * @category streams
 */
export const encodeClient =
  (options: StreamEncoderOptions) =>
  <E, R>(self: Stream.Stream<Canonical.StreamEvent, E, R>): Stream.Stream<string, E, R> =>
    self.pipe(
      Stream.mapAccumArray(() => new StreamEncoder(options), (encoder, events) => {
        let text = ""
        for (const event of events) text += encoder.encode(event)
        return [encoder, text.length === 0 ? [] : [text]] as const
      }, { onHalt: (encoder) => [encoder.finish()] })
    )
