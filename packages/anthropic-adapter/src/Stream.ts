/**
 * Streamed Messages answers: Anthropic server-sent events <-> canonical stream
 * events (wire-formats §6.3, §8.4).
 *
 * - `StreamDecoder` reads an Anthropic upstream's events: `message_start` ->
 *   `start` (+ `usage` with the input counts); a `tool_use` block start ->
 *   `tool_call_start` whose `call` is the number of `tool_use` blocks before it
 *   (not the Anthropic block index, which text and thinking blocks share);
 *   `input_json_delta` -> `tool_call_delta` (empty fragments, such as the usual
 *   first `""`, are skipped, and a tool call that got no fragment at all is
 *   given `{}` when its block stops, as the non-stream decoding has it);
 *   `text_delta` -> `text`; `thinking_delta` -> `thinking`; `signature_delta`
 *   -> a `thinking` event carrying the signature; `message_delta` -> `finish`
 *   (its `stop_reason`) and `usage` (cumulative output tokens; input counts
 *   overwritten where given); `ping`, `message_stop`, citations and server-tool
 *   blocks are skipped; an `error` event fails with the classified upstream
 *   error. `SseDecoder` puts core's `Sse.Parser` and the decoder together
 *   (the decoder reads each event's type from its data, which Anthropic
 *   repeats from the `event:` line).
 * - `StreamEncoder` writes events for an Anthropic client: `message_start`
 *   (input usage 0, since it is not known yet) and a `ping`, as Anthropic's
 *   own streams begin, blocks with sequential indices
 *   (a text block is opened on the first text and closed before each
 *   `tool_use` or thinking block; tool arguments stream as
 *   `input_json_delta`), then at the end `content_block_stop`, `message_delta`
 *   with the stop reason and the final usage (cumulative `output_tokens`, and
 *   the real `input_tokens`, which the SDKs take over), and `message_stop`. A
 *   stream that ends without a canonical `finish` gets neither
 *   `message_delta` nor `message_stop`: a cut answer must not look complete.
 *   Only choice 0 is encoded (Anthropic answers have one).
 *
 * `decodeSseText`, `encodeStream` and `encodeSse` are the Effect `Stream`
 * versions.
 *
 * @since 0.1.0
 */
import type { Canonical } from "@modelgate/core"
import { GatewayError, Sse } from "@modelgate/core"
import { Effect, Predicate, Result, Stream } from "effect"
import * as ErrorEnvelope from "./ErrorEnvelope.ts"
import { decodeToolId, redactedFromWire, signatureFromWire, signatureToWire, signToolId } from "./Ids.ts"
import * as Messages from "./Messages.ts"
import { finishReasonFromWire, finishReasonToWire, readUsageFigures, usageFromWire, usageToWire } from "./Response.ts"

// ---------------------------------------------------------------------------
// Decoding: Anthropic upstream -> canonical
// ---------------------------------------------------------------------------

/** Errors an Anthropic upstream stream can end with. @category models */
export type StreamError = ErrorEnvelope.UpstreamError

/** Options of `StreamDecoder`. @category models */
export interface DecoderOptions {
  /** Creation time (epoch seconds) reported in the `start` event; default 0. */
  readonly created?: number
}

const TEXT = 0
const THINKING = 1
const TOOL = 2
const OTHER = 3

interface OpenBlock {
  readonly kind: number
  readonly call: number
  hasArguments: boolean
}

const unreadable = (detail: string): GatewayError.UpstreamUnavailable =>
  new GatewayError.UpstreamUnavailable({
    status: 502,
    message: `The upstream sent a stream event the gateway cannot read (${detail}).`
  })

/**
 * Anthropic upstream events -> canonical events, one stream per instance.
 * Feed it each event's parsed `data` (`push`), or its JSON text (`pushText`).
 *
 * @example
 * ```ts
 * const decoder = new StreamDecoder()
 * decoder.push({ type: "message_start", message: { id: "msg_1", model: "claude", content: [], usage: { input_tokens: 5, output_tokens: 1 } } })
 * // Success([{ type: "start", id: "msg_1", model: "claude", created: 0 },
 * //          { type: "usage", usage: { promptTokens: 5, completionTokens: 1, totalTokens: 6 } }])
 * decoder.push({ type: "content_block_start", index: 0, content_block: { type: "tool_use", id: "toolu_1", name: "f", input: {} } })
 * // Success([{ type: "tool_call_start", index: 0, call: 0, id: "toolu_1", name: "f" }])
 * decoder.push({ type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: "{\"a\":1}" } })
 * // Success([{ type: "tool_call_delta", index: 0, call: 0, arguments: "{\"a\":1}" }])
 * ```
 *
 * @category decoding
 */
export class StreamDecoder {
  private readonly created: number
  private started = false
  private calls = 0
  private readonly blocks = new Map<number, OpenBlock>()
  private input: number | undefined = undefined
  private cacheRead: number | undefined = undefined
  private cacheCreation: number | undefined = undefined
  private lastUsage: Canonical.Usage | undefined = undefined
  /** A usage figure of this stream was refused: the stream's usage (assembled over several events) is refused as a whole. */
  private rejected: string | undefined = undefined

  constructor(options?: DecoderOptions) {
    this.created = options?.created ?? 0
  }

  /** Decodes one event (the parsed JSON of its `data`). */
  push(event: unknown): Result.Result<Array<Canonical.StreamEvent>, StreamError> {
    const out: Array<Canonical.StreamEvent> = []
    const failure = this.decodeInto(event, out)
    return failure === undefined ? Result.succeed(out) : Result.fail(failure)
  }

  /** Decodes the JSON text of one event's `data`. */
  pushText(data: string): Result.Result<Array<Canonical.StreamEvent>, StreamError> {
    return this.pushAll([data], true)
  }

  /** Decodes several events in order (parsed values, or JSON texts when `text` is true). */
  pushAll(events: Iterable<unknown>, text = false): Result.Result<Array<Canonical.StreamEvent>, StreamError> {
    const out: Array<Canonical.StreamEvent> = []
    for (const item of events) {
      let value: unknown = item
      if (text) {
        try {
          value = JSON.parse(item as string)
        } catch {
          return Result.fail(unreadable("not JSON"))
        }
      }
      const failure = this.decodeInto(value, out)
      if (failure !== undefined) return Result.fail(failure)
    }
    return Result.succeed(out)
  }

  /** The last usage reported so far (for billing a cut stream). */
  usage(): Canonical.Usage | undefined {
    return this.lastUsage
  }

  private start(out: Array<Canonical.StreamEvent>, id: string, model: string): void {
    if (this.started) return
    this.started = true
    out.push({ type: "start", id, model, created: this.created })
  }

  private addUsage(reported: unknown, out: Array<Canonical.StreamEvent>): void {
    const usage = this.rejected === undefined ? readUsageFigures(reported) : this.rejected
    if (usage === undefined) return
    if (typeof usage === "string") {
      this.rejected = usage
      this.lastUsage = undefined
      out.push({ type: "usage_rejected", reason: usage })
      return
    }
    if (usage.input_tokens !== undefined && usage.input_tokens !== null) this.input = usage.input_tokens
    if (usage.cache_read_input_tokens !== undefined && usage.cache_read_input_tokens !== null) {
      this.cacheRead = usage.cache_read_input_tokens
    }
    if (usage.cache_creation_input_tokens !== undefined && usage.cache_creation_input_tokens !== null) {
      this.cacheCreation = usage.cache_creation_input_tokens
    }
    const merged: { -readonly [K in keyof Messages.Usage]: Messages.Usage[K] } = { output_tokens: usage.output_tokens }
    if (this.input !== undefined) merged.input_tokens = this.input
    if (this.cacheRead !== undefined) merged.cache_read_input_tokens = this.cacheRead
    if (this.cacheCreation !== undefined) merged.cache_creation_input_tokens = this.cacheCreation
    this.lastUsage = usageFromWire(merged)
    out.push({ type: "usage", usage: this.lastUsage })
  }

  private decodeInto(event: unknown, out: Array<Canonical.StreamEvent>): StreamError | undefined {
    if (!Predicate.isObject(event)) return unreadable("not a JSON object")
    const type = event.type
    if (type === "content_block_delta") return this.delta(event, out)
    switch (type) {
      case "ping":
      case "message_stop":
        return undefined
      case "error":
        return ErrorEnvelope.classifyErrorObject(event)
      case "message_start":
      case "content_block_start":
      case "content_block_stop":
      case "message_delta":
        break
      default:
        return undefined // unknown event types are skipped, as the SDKs do
    }
    const decoded = Messages.decodeStreamEvent(event)
    if (Result.isFailure(decoded)) return unreadable(decoded.failure.message)
    const wire = decoded.success
    switch (wire.type) {
      case "message_start": {
        this.start(out, wire.message.id, wire.message.model)
        this.addUsage(wire.message.usage, out)
        return undefined
      }
      case "content_block_start": {
        this.start(out, "", "")
        const block = Messages.knownResponseBlock(wire.content_block)
        if (block === undefined) {
          this.blocks.set(wire.index, { kind: OTHER, call: -1, hasArguments: false })
          return undefined
        }
        switch (block.type) {
          case "text":
            this.blocks.set(wire.index, { kind: TEXT, call: -1, hasArguments: false })
            if (block.text.length > 0) out.push({ type: "text", index: 0, text: block.text })
            return undefined
          case "thinking":
            this.blocks.set(wire.index, { kind: THINKING, call: -1, hasArguments: false })
            if (block.thinking.length > 0 || (block.signature !== undefined && block.signature.length > 0)) {
              out.push(
                block.signature === undefined || block.signature.length === 0
                  ? { type: "thinking", index: 0, text: block.thinking }
                  : { type: "thinking", index: 0, text: block.thinking, signature: signatureFromWire(block.signature) }
              )
            }
            return undefined
          case "redacted_thinking":
            this.blocks.set(wire.index, { kind: OTHER, call: -1, hasArguments: false })
            out.push({ type: "thinking", index: 0, text: "", signature: redactedFromWire(block.data) })
            return undefined
          case "tool_use": {
            const call = this.calls++
            const hasArguments = Object.keys(block.input).length > 0
            this.blocks.set(wire.index, { kind: TOOL, call, hasArguments })
            out.push({ type: "tool_call_start", index: 0, call, id: decodeToolId(block.id), name: block.name })
            if (hasArguments) {
              out.push({ type: "tool_call_delta", index: 0, call, arguments: JSON.stringify(block.input) })
            }
            return undefined
          }
        }
        return undefined
      }
      case "content_block_stop": {
        const block = this.blocks.get(wire.index)
        if (block !== undefined && block.kind === TOOL && !block.hasArguments) {
          out.push({ type: "tool_call_delta", index: 0, call: block.call, arguments: "{}" })
        }
        this.blocks.delete(wire.index)
        return undefined
      }
      case "message_delta": {
        this.start(out, "", "")
        const reason = finishReasonFromWire(wire.delta.stop_reason)
        if (reason !== null) out.push({ type: "finish", index: 0, reason })
        this.addUsage(wire.usage, out)
        return undefined
      }
      default:
        return undefined
    }
  }

  /** `content_block_delta`, the hot path: plain checks, no Schema decode. */
  private delta(event: Readonly<Record<string, unknown>>, out: Array<Canonical.StreamEvent>): StreamError | undefined {
    const delta = event.delta
    if (typeof event.index !== "number" || !Predicate.isObject(delta)) {
      return unreadable("a content_block_delta without index or delta")
    }
    const block = this.blocks.get(event.index)
    switch (delta.type) {
      case "text_delta": {
        const text = delta.text
        if (typeof text !== "string") return unreadable("a text_delta without text")
        this.start(out, "", "")
        if (text.length > 0) out.push({ type: "text", index: 0, text })
        return undefined
      }
      case "input_json_delta": {
        const fragment = delta.partial_json
        if (typeof fragment !== "string") return unreadable("an input_json_delta without partial_json")
        if (block === undefined || block.kind !== TOOL) return undefined // a server tool's input
        if (fragment.length > 0) {
          block.hasArguments = true
          out.push({ type: "tool_call_delta", index: 0, call: block.call, arguments: fragment })
        }
        return undefined
      }
      case "thinking_delta": {
        const text = delta.thinking
        if (typeof text !== "string") return unreadable("a thinking_delta without thinking")
        this.start(out, "", "")
        if (text.length > 0) out.push({ type: "thinking", index: 0, text })
        return undefined
      }
      case "signature_delta": {
        const signature = delta.signature
        if (typeof signature !== "string") return unreadable("a signature_delta without signature")
        this.start(out, "", "")
        if (signature.length > 0) {
          out.push({ type: "thinking", index: 0, text: "", signature: signatureFromWire(signature) })
        }
        return undefined
      }
      default:
        return undefined // citations_delta and future delta types
    }
  }
}

/**
 * SSE text of an Anthropic upstream -> canonical events: core's `Sse.Parser`
 * and `StreamDecoder` together, for callers that move text pieces.
 *
 * @example
 * ```ts
 * const decoder = new SseDecoder()
 * decoder.push('event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}\n\n')
 * // Success([{ type: "start", id: "", model: "", created: 0 }, { type: "text", index: 0, text: "Hi" }])
 * ```
 *
 * @category decoding
 */
export class SseDecoder {
  private readonly parser = new Sse.Parser()
  private readonly decoder: StreamDecoder

  constructor(options?: DecoderOptions) {
    this.decoder = new StreamDecoder(options)
  }

  /** Feeds the next piece of SSE text. */
  push(text: string): Result.Result<Array<Canonical.StreamEvent>, StreamError> {
    return this.feed(this.parser.push(text))
  }

  /** Ends the text (an event not followed by a blank line is decoded now). */
  end(): Result.Result<Array<Canonical.StreamEvent>, StreamError> {
    return this.feed(this.parser.end())
  }

  /** The last usage reported so far (for billing a cut stream). */
  usage(): Canonical.Usage | undefined {
    return this.decoder.usage()
  }

  private feed(events: ReadonlyArray<Sse.Event>): Result.Result<Array<Canonical.StreamEvent>, StreamError> {
    if (events.length === 0) return Result.succeed([])
    const data: Array<string> = []
    for (const event of events) data.push(event.data)
    return this.decoder.pushAll(data, true)
  }
}

// ---------------------------------------------------------------------------
// Encoding: canonical -> Anthropic client
// ---------------------------------------------------------------------------

/**
 * One Anthropic SSE frame: `event: <name>\ndata: <one-line JSON>\n\n`.
 *
 * @example
 * ```ts
 * sseEvent({ event: "message_stop", data: { type: "message_stop" } })
 * // 'event: message_stop\ndata: {"type":"message_stop"}\n\n'
 * ```
 *
 * @category encoding
 */
export const sseEvent = (event: Messages.OutputEvent): string =>
  `event: ${event.event}\ndata: ${JSON.stringify(event.data)}\n\n`

/** A keep-alive frame (`ping`), allowed anywhere in an Anthropic stream. @category encoding */
export const PING_FRAME = "event: ping\ndata: {\"type\":\"ping\"}\n\n"

/** The `Content-Type` of an SSE stream. @category encoding */
export const SSE_CONTENT_TYPE = "text/event-stream"

const frame = (type: string, data: unknown): Messages.OutputEvent => ({ event: type, data })

/** Options of a `StreamEncoder`. @category encoding */
export interface EncoderOptions {
  /**
   * The prompt's tokens `message_start` states (Anthropic's own streams count
   * them before the answer; a translated stream's upstream reports its usage
   * only at the end, so an estimate stands in). Default 0. The final
   * `message_delta` carries the upstream's count.
   */
  readonly inputTokens?: number | undefined
}

/**
 * Canonical events -> Anthropic events for a client, one stream per
 * instance; `model` is the name the client asked for. Frame the result with
 * `sseEvent`.
 *
 * @example
 * ```ts
 * const encoder = new StreamEncoder("claude-sonnet-4-5")
 * encoder.pushAll([
 *   { type: "start", id: "chatcmpl-1", model: "gpt-4o", created: 1 },
 *   { type: "text", index: 0, text: "Hi" },
 *   { type: "finish", index: 0, reason: "stop" }
 * ])
 * // message_start, content_block_start (text, index 0), content_block_delta (text_delta "Hi")
 * encoder.end()
 * // content_block_stop, message_delta (stop_reason "end_turn", usage), message_stop
 * ```
 *
 * @category encoding
 */
export class StreamEncoder {
  private readonly model: string
  private id = ""
  private started = false
  private next = 0
  private open: { readonly index: number; readonly kind: number } | undefined = undefined
  private readonly callBlocks = new Map<number, number>()
  private finish: Canonical.FinishReason | undefined = undefined
  private lastUsage: Canonical.Usage | undefined = undefined
  private ended = false
  private readonly inputTokens: number

  constructor(model: string, options?: EncoderOptions) {
    this.model = model
    this.inputTokens = options?.inputTokens ?? 0
  }

  /** Encodes one event; returns the events to send now (often none). */
  push(event: Canonical.StreamEvent): Array<Messages.OutputEvent> {
    const out: Array<Messages.OutputEvent> = []
    this.encodeInto(event, out)
    return out
  }

  /** Encodes several events in order. */
  pushAll(events: Iterable<Canonical.StreamEvent>): Array<Messages.OutputEvent> {
    const out: Array<Messages.OutputEvent> = []
    for (const event of events) this.encodeInto(event, out)
    return out
  }

  /**
   * Ends the stream: closes the open block and, when the answer finished,
   * sends `message_delta` (stop reason, final usage) and `message_stop`.
   */
  end(): Array<Messages.OutputEvent> {
    const out: Array<Messages.OutputEvent> = []
    if (this.ended) return out
    this.ended = true
    this.close(out)
    if (this.finish === undefined) return out
    this.ensureStarted(out)
    out.push(frame("message_delta", {
      type: "message_delta",
      delta: { stop_reason: finishReasonToWire(this.finish), stop_sequence: null },
      usage: usageToWire(this.lastUsage)
    }))
    out.push(frame("message_stop", { type: "message_stop" }))
    return out
  }

  private ensureStarted(out: Array<Messages.OutputEvent>): void {
    if (this.started) return
    this.started = true
    out.push(frame("message_start", {
      type: "message_start",
      message: {
        id: this.id,
        type: "message",
        role: "assistant",
        model: this.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: {
          input_tokens: this.inputTokens,
          output_tokens: 0,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0
        }
      }
    }))
    // Anthropic's own streams send a ping right after the start; clients skip it.
    out.push(frame("ping", { type: "ping" }))
  }

  private close(out: Array<Messages.OutputEvent>): void {
    if (this.open === undefined) return
    out.push(frame("content_block_stop", { type: "content_block_stop", index: this.open.index }))
    this.open = undefined
  }

  private openBlock(kind: number, block: unknown, out: Array<Messages.OutputEvent>): number {
    this.ensureStarted(out)
    this.close(out)
    const index = this.next++
    out.push(frame("content_block_start", { type: "content_block_start", index, content_block: block }))
    this.open = { index, kind }
    return index
  }

  private delta(index: number, delta: unknown, out: Array<Messages.OutputEvent>): void {
    out.push(frame("content_block_delta", { type: "content_block_delta", index, delta }))
  }

  private encodeInto(event: Canonical.StreamEvent, out: Array<Messages.OutputEvent>): void {
    if (this.ended) return
    switch (event.type) {
      case "start":
        if (!this.started) {
          this.id = event.id
          this.ensureStarted(out)
        }
        return
      case "usage":
        this.lastUsage = event.usage
        return
      case "usage_rejected":
        // Figures the gateway refused are not passed on.
        this.lastUsage = undefined
        return
      case "finish":
        if (event.index === 0) this.finish = event.reason
        return
      case "text": {
        if (event.index !== 0 || event.text.length === 0) return
        const index = this.open?.kind === TEXT ? this.open.index : this.openBlock(TEXT, { type: "text", text: "" }, out)
        this.delta(index, { type: "text_delta", text: event.text }, out)
        return
      }
      case "thinking": {
        if (event.index !== 0) return
        const wire = signatureToWire(event.signature)
        if (wire._tag === "redacted") {
          this.openBlock(OTHER, { type: "redacted_thinking", data: wire.data }, out)
          this.close(out)
          return
        }
        if (event.text.length === 0 && wire._tag === "foreign") return
        const index = this.open?.kind === THINKING
          ? this.open.index
          : this.openBlock(THINKING, { type: "thinking", thinking: "", signature: "" }, out)
        if (event.text.length > 0) this.delta(index, { type: "thinking_delta", thinking: event.text }, out)
        if (wire._tag === "signature") {
          this.delta(index, { type: "signature_delta", signature: wire.signature }, out)
          this.close(out)
        }
        return
      }
      case "tool_call_start": {
        if (event.index !== 0) return
        const index = this.openBlock(TOOL, {
          type: "tool_use",
          id: signToolId(event.id, event.signature),
          name: event.name,
          input: {}
        }, out)
        this.callBlocks.set(event.call, index)
        return
      }
      case "tool_call_delta": {
        if (event.index !== 0 || event.arguments.length === 0) return
        const index = this.callBlocks.get(event.call)
        if (index === undefined) return
        this.delta(index, { type: "input_json_delta", partial_json: event.arguments }, out)
        return
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Effect Stream versions
// ---------------------------------------------------------------------------

/**
 * Decodes an Anthropic upstream's SSE text, split anyhow, into canonical
 * events; an `error` event fails the stream with the classified upstream error.
 *
 * @category streams
 */
export const decodeSseText =
  (options?: DecoderOptions) =>
  <E, R>(text: Stream.Stream<string, E, R>): Stream.Stream<Canonical.StreamEvent, E | StreamError, R> =>
    Stream.suspend(() => {
      const decoder = new SseDecoder(options)
      const lift = (result: Result.Result<Array<Canonical.StreamEvent>, StreamError>) =>
        Result.isFailure(result) ? Effect.fail(result.failure) : Effect.succeed(result.success)
      return text.pipe(
        Stream.mapArrayEffect((pieces) => {
          const events: Array<Canonical.StreamEvent> = []
          for (const piece of pieces) {
            const result = decoder.push(piece)
            if (Result.isFailure(result)) return Effect.fail(result.failure)
            for (const event of result.success) events.push(event)
          }
          return Effect.succeed([events] as const)
        }),
        Stream.flattenIterable,
        Stream.concat(Stream.unwrap(Effect.map(Effect.suspend(() => lift(decoder.end())), Stream.fromIterable)))
      )
    })

/**
 * Encodes canonical events into Anthropic events for a client; the closing
 * events are written when the event stream ends. Frame with `encodeSse`.
 *
 * @category streams
 */
export const encodeStream =
  (model: string) =>
  <E, R>(events: Stream.Stream<Canonical.StreamEvent, E, R>): Stream.Stream<Messages.OutputEvent, E, R> =>
    Stream.mapAccumArray(
      events,
      () => new StreamEncoder(model),
      (encoder, array) => [encoder, encoder.pushAll(array)] as const,
      {
        onHalt: (encoder) => encoder.end()
      }
    )

/**
 * Frames Anthropic events as SSE text (`event:` + `data:` per event).
 *
 * @category streams
 */
export const encodeSse = <E, R>(events: Stream.Stream<Messages.OutputEvent, E, R>): Stream.Stream<string, E, R> =>
  Stream.map(events, sseEvent)
