/**
 * Streamed Converse answers (`/converse-stream`): ConverseStream events <->
 * canonical stream events.
 *
 * A ConverseStream event is an event-stream message (`EventStream.ts`) whose
 * `:event-type` header names it and whose payload is its JSON:
 *
 * - `messageStart` `{role}` -> `start` (the id, model and time from the
 *   caller: Converse names none of them);
 * - `contentBlockStart` `{contentBlockIndex, start: {toolUse: {toolUseId,
 *   name}}}` -> `tool_call_start`, whose `call` counts the tool blocks before
 *   it (text and reasoning blocks have no start event);
 * - `contentBlockDelta` `{contentBlockIndex, delta}`: `text` -> `text`,
 *   `toolUse.input` (a fragment of the JSON) -> `tool_call_delta`,
 *   `reasoningContent.text` -> `thinking`, `.signature` -> a `thinking` event
 *   carrying it (`bedrock:` prefix), `.redactedContent` -> an empty `thinking`
 *   signed `bedrock-redacted:`;
 * - `contentBlockStop` -> nothing (a tool call that got no fragment gets
 *   `{}`, as the non-stream decoding has it);
 * - `messageStop` `{stopReason}` -> `finish`;
 * - `metadata` `{usage, metrics}` -> `usage` (after `messageStop`, as
 *   Bedrock sends it);
 * - an `exception` message -> the classified gateway error
 *   (`ErrorEnvelope.classifyException`).
 *
 * Payloads may carry fields this package does not read (Bedrock pads events
 * with a random `p`): they are ignored. `StreamEncoder` writes the same
 * events from canonical ones (for the laws, tests and a Converse front door);
 * `ByteDecoder` puts `EventStream.FrameDecoder` and `StreamDecoder` together
 * for callers that move bytes.
 *
 * @since 0.1.0
 */
import type { Canonical } from "@modelgate/core"
import { Dialect as Core, GatewayError, Utf8 } from "@modelgate/core"
import { Predicate, Result } from "effect"
import * as ErrorEnvelope from "./ErrorEnvelope.ts"
import * as EventStream from "./EventStream.ts"
import { decodeToolId, encodeToolId, REDACTED_PREFIX, SIGNATURE_PREFIX, signatureToWire } from "./Ids.ts"
import { finishReasonFromWire, finishReasonToWire, readUsage, usageToWire } from "./Response.ts"

/** Errors a ConverseStream can end with. @category models */
export type StreamError = ErrorEnvelope.UpstreamError

/** A ConverseStream event: its `:event-type` and payload. @category models */
export interface WireEvent {
  readonly type: string
  readonly payload: Readonly<Record<string, unknown>>
}

/** What a ConverseStream does not say about itself. @category models */
export interface StreamFacts {
  readonly id: string
  readonly model: string
  readonly created: number
}

const unreadable = (detail: string): GatewayError.UpstreamUnavailable =>
  new GatewayError.UpstreamUnavailable({
    status: 502,
    message: `The upstream sent a stream event the gateway cannot read (${detail}).`
  })

interface OpenTool {
  readonly call: number
  hasArguments: boolean
}

/**
 * ConverseStream events -> canonical events, one stream per instance.
 *
 * @example
 * ```ts
 * const decoder = new StreamDecoder({ id: "chatcmpl-1", model: "amazon.nova-pro-v1:0", created: 0 })
 * decoder.push({ type: "messageStart", payload: { role: "assistant" } })
 * // Success([{ type: "start", id: "chatcmpl-1", model: "amazon.nova-pro-v1:0", created: 0 }])
 * decoder.push({ type: "contentBlockDelta", payload: { contentBlockIndex: 0, delta: { text: "Hi" } } })
 * // Success([{ type: "text", index: 0, text: "Hi" }])
 * ```
 *
 * @category decoding
 */
export class StreamDecoder {
  private started = false
  private calls = 0
  private readonly tools = new Map<number, OpenTool>()
  private lastUsage: Canonical.Usage | undefined
  private readonly facts: StreamFacts

  constructor(facts: StreamFacts) {
    this.facts = facts
  }

  /** Decodes one event. */
  push(event: WireEvent): Result.Result<Array<Canonical.StreamEvent>, StreamError> {
    const out: Array<Canonical.StreamEvent> = []
    const failure = this.decodeInto(event, out)
    return failure === undefined ? Result.succeed(out) : Result.fail(failure)
  }

  /** The last usage reported so far. */
  usage(): Canonical.Usage | undefined {
    return this.lastUsage
  }

  private start(out: Array<Canonical.StreamEvent>): void {
    if (this.started) return
    this.started = true
    out.push({ type: "start", id: this.facts.id, model: this.facts.model, created: this.facts.created })
  }

  /** Decodes one event into `out`; returns the error that ends the stream, if it is one. */
  decodeInto(event: WireEvent, out: Array<Canonical.StreamEvent>): StreamError | undefined {
    const payload = event.payload
    switch (event.type) {
      case "messageStart":
        this.start(out)
        return undefined
      case "contentBlockDelta":
        return this.delta(payload, out)
      case "contentBlockStart": {
        const index = payload.contentBlockIndex
        const start = payload.start
        if (typeof index !== "number" || !Predicate.isObject(start)) {
          return unreadable("a contentBlockStart without contentBlockIndex or start")
        }
        this.start(out)
        const tool = start.toolUse
        if (!Predicate.isObject(tool)) return undefined
        if (typeof tool.toolUseId !== "string" || typeof tool.name !== "string") {
          return unreadable("a toolUse start without toolUseId or name")
        }
        const call = this.calls++
        this.tools.set(index, { call, hasArguments: false })
        out.push({ type: "tool_call_start", index: 0, call, id: decodeToolId(tool.toolUseId), name: tool.name })
        return undefined
      }
      case "contentBlockStop": {
        const index = payload.contentBlockIndex
        if (typeof index !== "number") return unreadable("a contentBlockStop without contentBlockIndex")
        const tool = this.tools.get(index)
        if (tool !== undefined && !tool.hasArguments) {
          out.push({ type: "tool_call_delta", index: 0, call: tool.call, arguments: "{}" })
        }
        this.tools.delete(index)
        return undefined
      }
      case "messageStop": {
        if (typeof payload.stopReason !== "string") return unreadable("a messageStop without stopReason")
        this.start(out)
        const reason = finishReasonFromWire(payload.stopReason)
        if (reason !== null) out.push({ type: "finish", index: 0, reason })
        return undefined
      }
      case "metadata": {
        const usage = readUsage(payload.usage)
        if (usage === undefined) return undefined
        this.start(out)
        if (typeof usage === "string") {
          this.lastUsage = undefined
          out.push({ type: "usage_rejected", reason: usage })
        } else {
          this.lastUsage = usage
          out.push({ type: "usage", usage })
        }
        return undefined
      }
      default:
        return undefined // event types added later are skipped, as the SDKs do
    }
  }

  private delta(
    payload: Readonly<Record<string, unknown>>,
    out: Array<Canonical.StreamEvent>
  ): StreamError | undefined {
    const index = payload.contentBlockIndex
    const delta = payload.delta
    if (typeof index !== "number" || !Predicate.isObject(delta)) {
      return unreadable("a contentBlockDelta without contentBlockIndex or delta")
    }
    if (typeof delta.text === "string") {
      this.start(out)
      if (delta.text.length > 0) out.push({ type: "text", index: 0, text: delta.text })
      return undefined
    }
    if (Predicate.isObject(delta.toolUse)) {
      const fragment = delta.toolUse.input
      if (typeof fragment !== "string") return unreadable("a toolUse delta without input")
      const tool = this.tools.get(index)
      if (tool === undefined) return unreadable(`a toolUse delta for block ${index}, which no toolUse start opened`)
      if (fragment.length > 0) {
        tool.hasArguments = true
        out.push({ type: "tool_call_delta", index: 0, call: tool.call, arguments: fragment })
      }
      return undefined
    }
    if (Predicate.isObject(delta.reasoningContent)) {
      const reasoning = delta.reasoningContent
      this.start(out)
      if (typeof reasoning.text === "string") {
        if (reasoning.text.length > 0) out.push({ type: "thinking", index: 0, text: reasoning.text })
      } else if (typeof reasoning.signature === "string") {
        if (reasoning.signature.length > 0) {
          out.push({ type: "thinking", index: 0, text: "", signature: SIGNATURE_PREFIX + reasoning.signature })
        }
      } else if (typeof reasoning.redactedContent === "string") {
        out.push({ type: "thinking", index: 0, text: "", signature: REDACTED_PREFIX + reasoning.redactedContent })
      } else return unreadable("a reasoningContent delta without text, signature or redactedContent")
      return undefined
    }
    return undefined // citations and future delta members
  }
}

/**
 * The bytes of a ConverseStream answer -> canonical events: the frames
 * decoded (`EventStream.FrameDecoder`), their payloads parsed, the events
 * decoded (`StreamDecoder`). An `exception` message, a broken frame or a
 * payload that is not JSON is thrown as the classified gateway error; the
 * events decoded before it are returned first, and the error is thrown by
 * the next `push` or by `end` (the text before a failure was generated, so
 * it reaches the client and is billed).
 *
 * @category decoding
 */
export class ByteDecoder {
  private readonly frames: EventStream.FrameDecoder
  private readonly decoder: StreamDecoder
  private failure: StreamError | undefined

  /** `bound`: the operator's bound on one event (`max_event_bytes`), checked on each frame's prelude. */
  constructor(facts: StreamFacts, bound?: Core.StreamBound) {
    this.decoder = new StreamDecoder(facts)
    this.frames = new EventStream.FrameDecoder(bound)
  }

  /** The canonical events completed by `chunk`. */
  push(chunk: Uint8Array): Array<Canonical.StreamEvent> {
    if (this.failure !== undefined) throw this.failure
    let messages: Array<EventStream.Message>
    try {
      messages = this.frames.push(chunk)
    } catch (error) {
      throw (this.failure = error as StreamError)
    }
    return this.feed(messages)
  }

  /** The stream ended. */
  end(): Array<Canonical.StreamEvent> {
    if (this.failure !== undefined) throw this.failure
    try {
      this.frames.end()
    } catch (error) {
      throw (this.failure = error as StreamError)
    }
    return []
  }

  /** The last usage reported so far. */
  usage(): Canonical.Usage | undefined {
    return this.decoder.usage()
  }

  private feed(messages: ReadonlyArray<EventStream.Message>): Array<Canonical.StreamEvent> {
    const out: Array<Canonical.StreamEvent> = []
    for (const message of messages) {
      const failure = this.message(message, out)
      if (failure !== undefined) {
        this.failure = failure
        break
      }
    }
    if (this.failure !== undefined && out.length === 0) throw this.failure
    return out
  }

  private message(message: EventStream.Message, out: Array<Canonical.StreamEvent>): StreamError | undefined {
    let payload: unknown
    try {
      payload = message.payload.length === 0 ? {} : JSON.parse(Utf8.decode(message.payload))
    } catch {
      return unreadable("a payload that is not JSON")
    }
    const kind = message.headers[":message-type"]
    if (kind === "exception" || kind === "error") {
      const type = message.headers[":exception-type"] ?? message.headers[":error-code"] ?? "internalServerException"
      return ErrorEnvelope.classifyException(type, payload)
    }
    if (!Predicate.isObject(payload)) return unreadable("a payload that is not a JSON object")
    const type = message.headers[":event-type"]
    if (type === undefined) return unreadable("an event without :event-type")
    return this.decoder.decodeInto({ type, payload }, out)
  }
}

/**
 * Canonical events -> ConverseStream events (choice 0), as Bedrock writes
 * them: `messageStart`, text and reasoning deltas under one block index until
 * the kind changes (no start event, as Bedrock sends none for them), each
 * tool call as `contentBlockStart` with `toolUse`, its input fragments and
 * `contentBlockStop`, then `messageStop` and `metadata` with the usage. A
 * stream that ends without a canonical `finish` gets no `messageStop`.
 *
 * @category encoding
 */
export class StreamEncoder {
  private started = false
  private index = -1
  private open: "text" | "reasoning" | "tool" | undefined
  private finish: Canonical.FinishReason | undefined
  private usage: Canonical.Usage | undefined
  private readonly toolBlocks = new Map<number, number>()

  /** The events for a batch of canonical events. */
  pushAll(events: Iterable<Canonical.StreamEvent>): Array<WireEvent> {
    const out: Array<WireEvent> = []
    for (const event of events) this.push(event, out)
    return out
  }

  /** The closing events. */
  end(): Array<WireEvent> {
    const out: Array<WireEvent> = []
    this.ensureStarted(out)
    this.close(out)
    if (this.finish !== undefined) {
      out.push({ type: "messageStop", payload: { stopReason: finishReasonToWire(this.finish) } })
      out.push({ type: "metadata", payload: { usage: usageToWire(this.usage), metrics: { latencyMs: 0 } } })
    }
    return out
  }

  private ensureStarted(out: Array<WireEvent>): void {
    if (this.started) return
    this.started = true
    out.push({ type: "messageStart", payload: { role: "assistant" } })
  }

  private close(out: Array<WireEvent>): void {
    if (this.open !== undefined) out.push({ type: "contentBlockStop", payload: { contentBlockIndex: this.index } })
    this.open = undefined
  }

  private block(kind: "text" | "reasoning", out: Array<WireEvent>): number {
    if (this.open !== kind) {
      this.close(out)
      this.open = kind
      this.index++
    }
    return this.index
  }

  private push(event: Canonical.StreamEvent, out: Array<WireEvent>): void {
    if (event.type === "start") return this.ensureStarted(out)
    if (event.type === "usage") {
      this.usage = event.usage
      return
    }
    if (event.type === "usage_rejected") return
    if (event.index !== 0) return
    this.ensureStarted(out)
    switch (event.type) {
      case "text": {
        if (event.text.length === 0) return
        const index = this.block("text", out)
        out.push({ type: "contentBlockDelta", payload: { contentBlockIndex: index, delta: { text: event.text } } })
        return
      }
      case "thinking": {
        const wire = signatureToWire(event.signature)
        if (wire._tag === "redacted") {
          // Redacted reasoning is a block of its own.
          this.close(out)
          const index = this.block("reasoning", out)
          out.push({
            type: "contentBlockDelta",
            payload: { contentBlockIndex: index, delta: { reasoningContent: { redactedContent: wire.data } } }
          })
          this.close(out)
          return
        }
        const index = this.block("reasoning", out)
        if (event.text.length > 0) {
          out.push({
            type: "contentBlockDelta",
            payload: { contentBlockIndex: index, delta: { reasoningContent: { text: event.text } } }
          })
        }
        if (wire._tag === "signature") {
          out.push({
            type: "contentBlockDelta",
            payload: { contentBlockIndex: index, delta: { reasoningContent: { signature: wire.signature } } }
          })
          // A signature ends its reasoning block.
          this.close(out)
        }
        return
      }
      case "tool_call_start": {
        this.close(out)
        this.index++
        this.open = "tool"
        this.toolBlocks.set(event.call, this.index)
        out.push({
          type: "contentBlockStart",
          payload: {
            contentBlockIndex: this.index,
            start: { toolUse: { toolUseId: encodeToolId(event.id), name: event.name } }
          }
        })
        return
      }
      case "tool_call_delta": {
        const index = this.toolBlocks.get(event.call)
        if (index === undefined || event.arguments.length === 0) return
        out.push({
          type: "contentBlockDelta",
          payload: { contentBlockIndex: index, delta: { toolUse: { input: event.arguments } } }
        })
        return
      }
      case "finish":
        this.finish = event.reason
        return
    }
  }
}

/**
 * What the opening bytes of a 200 ConverseStream are, judged before a call
 * commits to the answer: `"answer"` when its first message is an event,
 * `"incomplete"` before a whole message arrived, or the upstream failing:
 * an `exception` first (classified: a throttling exception is a rate limit,
 * so the call may fail over), a broken frame, a payload that is not JSON,
 * or no message at all before the end (`ended`). `channel` names the
 * upstream.
 *
 * @category decoding
 */
export const opening = (
  bytes: Uint8Array,
  ended: boolean,
  channel: string,
  maxEventBytes?: number
): Core.Opening | StreamError => {
  const frames = new EventStream.FrameDecoder(
    maxEventBytes === undefined ? undefined : { maxEventBytes, channel }
  )
  let messages: Array<EventStream.Message>
  try {
    messages = frames.push(bytes)
  } catch (error) {
    return error as StreamError
  }
  const first = messages[0]
  if (first === undefined) return ended ? Core.emptyStream(channel) : "incomplete"
  let payload: unknown
  try {
    payload = first.payload.length === 0 ? {} : JSON.parse(Utf8.decode(first.payload))
  } catch {
    return Core.brokenEvent(channel)
  }
  const kind = first.headers[":message-type"]
  if (kind === "exception" || kind === "error") {
    return ErrorEnvelope.classifyException(first.headers[":exception-type"] ?? "internalServerException", payload)
  }
  if (!Predicate.isObject(payload) || first.headers[":event-type"] === undefined) {
    return Core.answeredOther(channel, "a ConverseStream event")
  }
  return "answer"
}
