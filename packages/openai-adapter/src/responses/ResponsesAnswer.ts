/**
 * Responses API answers: canonical responses and stream events <-> `response`
 * objects and the Responses stream (wire-formats §4.7).
 *
 * - `encodeResponse` writes a canonical answer as a `response` object for a
 *   Responses client: reasoning items (the thinking text as a summary, a
 *   signature as `encrypted_content`), one message item for the text, one
 *   `function_call` item per tool call, `status` `completed` or `incomplete`
 *   (`max_output_tokens`, `content_filter`), and `usage` with
 *   `input_tokens_details.cached_tokens` and
 *   `output_tokens_details.reasoning_tokens`.
 * - `StreamEncoder` writes canonical events as the Responses stream:
 *   `response.created`, `response.in_progress`, then per item
 *   `response.output_item.added`, its parts and deltas
 *   (`response.content_part.added`, `response.output_text.delta`/`done`,
 *   `response.content_part.done`; `response.reasoning_summary_part.added`,
 *   `response.reasoning_summary_text.delta`/`done`,
 *   `response.reasoning_summary_part.done`;
 *   `response.function_call_arguments.delta`/`done`) and
 *   `response.output_item.done`, and at the end `response.completed` (or
 *   `response.incomplete`) with the whole response and its usage. Every event
 *   carries its `sequence_number`. A stream that ends without a canonical
 *   `finish` gets no completion event: a cut answer must not look complete.
 *   `failed` writes the `response.failed` event for an error after the start.
 * - `decodeResponse` and `StreamDecoder` read a Responses upstream's answer
 *   and stream back into the canonical model (reasoning's
 *   `encrypted_content` kept as an `openai:` signature).
 *
 * @since 0.1.0
 */
import { type Canonical, GatewayError, Tokens } from "@modelgate/core"
import { Effect, Predicate, Result, Schema } from "effect"
import type { Mutable } from "effect/Types"
import { decodeToolName, signCallId } from "../Identifiers.ts"
import * as Responses from "./Responses.ts"
import { OPENAI_SIGNATURE_PREFIX, wrapSignature } from "./ResponsesRequest.ts"

// ---------------------------------------------------------------------------
// Shared mappings
// ---------------------------------------------------------------------------

/** Canonical usage as Responses usage. @category usage */
export const usageToWire = (usage: Canonical.Usage | undefined): Responses.Usage => ({
  input_tokens: usage?.promptTokens ?? 0,
  input_tokens_details: { cached_tokens: usage?.cachedTokens ?? 0, cache_write_tokens: usage?.cacheWriteTokens ?? 0 },
  output_tokens: usage?.completionTokens ?? 0,
  output_tokens_details: { reasoning_tokens: usage?.reasoningTokens ?? 0 },
  total_tokens: usage?.totalTokens ?? 0
})

/** Responses usage as canonical usage (input includes the cached tokens, output the reasoning tokens). @category usage */
export const usageFromWire = (usage: Responses.UsageFigures): Canonical.Usage => {
  const out: Mutable<Canonical.Usage> = {
    promptTokens: usage.input_tokens,
    completionTokens: usage.output_tokens,
    totalTokens: usage.total_tokens ?? usage.input_tokens + usage.output_tokens
  }
  const cached = usage.input_tokens_details?.cached_tokens
  if (cached !== undefined && cached !== null && cached > 0) out.cachedTokens = cached
  const written = usage.input_tokens_details?.cache_write_tokens
  if (written !== undefined && written !== null && written > 0) out.cacheWriteTokens = written
  const reasoning = usage.output_tokens_details?.reasoning_tokens
  if (reasoning !== undefined && reasoning !== null && reasoning > 0) out.reasoningTokens = reasoning
  return out
}

/**
 * An upstream's `usage` (as sent: anything), checked: `undefined` when there
 * is none, the reason it was refused (`Tokens.badCount`'s `name: value`) when
 * `input_tokens` or `output_tokens` is missing or a figure that is present is
 * not a token count, otherwise its figures.
 *
 * @example
 * ```ts
 * import { ResponsesAnswer } from "@modelgate/openai-adapter"
 *
 * ResponsesAnswer.readUsageFigures({ input_tokens: 5, output_tokens: 2 }) // { input_tokens: 5, output_tokens: 2 }
 * ResponsesAnswer.readUsageFigures({ input_tokens: -1000000, output_tokens: 2 }) // "input_tokens: -1000000"
 * ResponsesAnswer.readUsageFigures(null) // undefined
 * ```
 *
 * @category usage
 */
export const readUsageFigures = (usage: unknown): Responses.UsageFigures | string | undefined => {
  if (usage === undefined || usage === null) return undefined
  if (!Predicate.isObject(usage) || Array.isArray(usage)) return "usage: not an object"
  const input = Predicate.isObject(usage.input_tokens_details) ? usage.input_tokens_details : undefined
  const output = Predicate.isObject(usage.output_tokens_details) ? usage.output_tokens_details : undefined
  const bad = Tokens.badCount({
    input_tokens: usage.input_tokens ?? "missing",
    output_tokens: usage.output_tokens ?? "missing",
    total_tokens: usage.total_tokens,
    "input_tokens_details.cached_tokens": input?.cached_tokens,
    "input_tokens_details.cache_write_tokens": input?.cache_write_tokens,
    "output_tokens_details.reasoning_tokens": output?.reasoning_tokens
  })
  return bad ?? (usage as unknown as Responses.UsageFigures)
}

/**
 * `readUsageFigures` in canonical form (`usageFromWire`).
 *
 * @category usage
 */
export const readUsage = (usage: unknown): Canonical.Usage | string | undefined => {
  const figures = readUsageFigures(usage)
  return figures === undefined || typeof figures === "string" ? figures : usageFromWire(figures)
}

/** How a response ends for a finish reason: `completed`, or `incomplete` with its reason. @category status */
export const statusOf = (
  reason: Canonical.FinishReason | null | undefined
): Pick<Responses.Response, "status" | "incomplete_details"> =>
  reason === "length"
    ? { status: "incomplete", incomplete_details: { reason: "max_output_tokens" } }
    : reason === "content_filter"
    ? { status: "incomplete", incomplete_details: { reason: "content_filter" } }
    : { status: "completed", incomplete_details: null }

const responseId = (id: string): string => id.startsWith("resp_") ? id : `resp_${id.replace(/^chatcmpl-/, "")}`

const shell = (id: string, model: string, created: number, echo: Readonly<Record<string, unknown>>) => ({
  id,
  object: "response" as const,
  created_at: created,
  status: "in_progress" as const,
  error: null,
  incomplete_details: null,
  model,
  output: [] as Array<Responses.OutputItem>,
  // No `usage` until there is one: the published schema allows an object or no field, never null.
  ...echo
})

/**
 * What a response echoes of its request (the API returns the request's
 * settings with the answer): `instructions`, `tools`, `tool_choice`,
 * `parallel_tool_calls`, `reasoning`, `text`, `max_output_tokens`,
 * `temperature`, `top_p`, `metadata`, and `store: false`.
 *
 * @category echo
 */
export const echoOf = (request: unknown): Readonly<Record<string, unknown>> => {
  const body = Predicate.isObject(request) ? request : {}
  const pick = (name: string, fallback: unknown) => body[name] === undefined ? fallback : body[name]
  return {
    instructions: pick("instructions", null),
    max_output_tokens: pick("max_output_tokens", null),
    parallel_tool_calls: pick("parallel_tool_calls", true),
    previous_response_id: null,
    reasoning: pick("reasoning", { effort: null, summary: null }),
    store: false,
    temperature: pick("temperature", 1),
    text: pick("text", { format: { type: "text" } }),
    tool_choice: pick("tool_choice", "auto"),
    tools: pick("tools", []),
    top_p: pick("top_p", 1),
    truncation: "disabled",
    metadata: pick("metadata", {})
  }
}

// ---------------------------------------------------------------------------
// Encoding: canonical -> Responses client
// ---------------------------------------------------------------------------

const textPart = (text: string): Responses.OutputTextPart => ({
  type: "output_text",
  text,
  annotations: [],
  logprobs: []
})

const reasoningItem = (id: string, text: string, signature: string | undefined): Responses.OutputReasoning => {
  const summary = text.length === 0 ? [] : [{ type: "summary_text" as const, text }]
  return signature === undefined
    ? { type: "reasoning", id, summary }
    : { type: "reasoning", id, summary, encrypted_content: wrapSignature(signature) }
}

/**
 * A canonical answer (its choice 0) as a `response` object; `echo` is what
 * the response repeats of its request (`echoOf`).
 *
 * @category encoding
 */
export const encodeResponse = (
  response: Canonical.ChatResponse,
  model: string,
  echo: Readonly<Record<string, unknown>> = echoOf(undefined)
): Responses.Response => {
  const id = responseId(response.id)
  const choice = response.choices.find((c) => c.index === 0) ?? response.choices[0]
  const output: Array<Responses.OutputItem> = []
  let text: Array<Responses.OutputTextPart> | undefined
  // Thinking runs until a signature ends it (Anthropic signs last), as the stream writes it.
  let thinking: { readonly at: number; readonly id: string; text: string } | undefined
  let n = 0
  for (const part of choice?.content ?? []) {
    if (part.type !== "thinking") thinking = undefined
    switch (part.type) {
      case "text":
        if (text === undefined) {
          text = []
          output.push({
            type: "message",
            id: `msg_${id.slice(5)}_${n++}`,
            status: "completed",
            role: "assistant",
            content: text
          })
        }
        text.push(textPart(part.text))
        break
      case "thinking":
        text = undefined
        if (thinking === undefined) {
          thinking = { at: output.length, id: `rs_${id.slice(5)}_${n++}`, text: "" }
          output.push(reasoningItem(thinking.id, "", undefined))
        }
        thinking.text += part.text
        output[thinking.at] = reasoningItem(thinking.id, thinking.text, part.signature)
        if (part.signature !== undefined) thinking = undefined
        break
      case "tool_call":
        text = undefined
        output.push({
          type: "function_call",
          id: `fc_${id.slice(5)}_${n++}`,
          call_id: signCallId(part.id, part.signature),
          name: part.name,
          arguments: part.arguments,
          status: "completed"
        })
        break
      default:
        break
    }
  }
  // One message per run of text: a message's parts are joined into one output_text, as the API writes them.
  for (let i = 0; i < output.length; i++) {
    const item = output[i]!
    if (item.type === "message" && item.content.length > 1) {
      output[i] = { ...item, content: [textPart(item.content.map((p) => p.text).join(""))] }
    }
  }
  return {
    ...shell(id, model, response.created, echo),
    ...statusOf(choice?.finishReason),
    output,
    usage: usageToWire(response.usage)
  }
}

const MESSAGE = 0
const REASONING = 1

interface OpenText {
  readonly kind: typeof MESSAGE | typeof REASONING
  readonly id: string
  readonly index: number
  text: string
  signature: string | undefined
}

interface OpenCall {
  readonly id: string
  readonly index: number
  readonly callId: string
  readonly name: string
  arguments: string
}

/**
 * Canonical events -> Responses stream events for a client, one stream per
 * instance; `model` is the name the client asked for, `echo` what the
 * response repeats of the request. Frame each event with `Responses.frame`.
 *
 * @category encoding
 */
export class StreamEncoder {
  private readonly model: string
  private readonly echo: Readonly<Record<string, unknown>>
  private id = "resp_"
  private created = 0
  private started = false
  private ended = false
  private sequence = 0
  private readonly output: Array<Responses.OutputItem> = []
  private open: OpenText | undefined = undefined
  private readonly calls = new Map<number, OpenCall>()
  private finish: Canonical.FinishReason | undefined = undefined
  private usage: Canonical.Usage | undefined = undefined

  constructor(model: string, echo: Readonly<Record<string, unknown>> = echoOf(undefined)) {
    this.model = model
    this.echo = echo
  }

  /** Encodes several events in order. */
  pushAll(events: Iterable<Canonical.StreamEvent>): Array<Responses.OutputEvent> {
    const out: Array<Responses.OutputEvent> = []
    for (const event of events) this.encodeInto(event, out)
    return out
  }

  /** Ends the stream: closes open items and, when the answer finished, writes `response.completed` (or `.incomplete`). */
  end(): Array<Responses.OutputEvent> {
    const out: Array<Responses.OutputEvent> = []
    if (this.ended) return out
    this.ended = true
    this.closeAll(out)
    if (this.finish === undefined) return out
    this.ensureStarted(out)
    const status = statusOf(this.finish)
    this.emit(out, status.status === "completed" ? "response.completed" : "response.incomplete", {
      response: { ...this.response(), ...status, usage: usageToWire(this.usage) }
    })
    return out
  }

  /**
   * The events that end the stream with an error after it started: the start
   * (when nothing was sent yet) and `response.failed`, whose response carries
   * the error and the items completed so far.
   */
  failed(error: { readonly code: string; readonly message: string }): Array<Responses.OutputEvent> {
    const out: Array<Responses.OutputEvent> = []
    this.ensureStarted(out)
    this.ended = true
    this.emit(out, "response.failed", { response: { ...this.response(), status: "failed", error } })
    return out
  }

  private response() {
    return { ...shell(this.id, this.model, this.created, this.echo), output: [...this.output] }
  }

  private emit(out: Array<Responses.OutputEvent>, type: string, fields: Record<string, unknown>): void {
    out.push({ type, sequence_number: this.sequence++, ...fields })
  }

  private ensureStarted(out: Array<Responses.OutputEvent>): void {
    if (this.started) return
    this.started = true
    this.emit(out, "response.created", { response: this.response() })
    this.emit(out, "response.in_progress", { response: this.response() })
  }

  private nextIndex(): number {
    return this.output.length + (this.open === undefined ? 0 : 1) + this.calls.size
  }

  private openText(kind: OpenText["kind"], out: Array<Responses.OutputEvent>): OpenText {
    if (this.open !== undefined && this.open.kind === kind) return this.open
    this.closeAll(out)
    const index = this.nextIndex()
    const suffix = `${this.id.slice(5)}_${index}`
    const open: OpenText = {
      kind,
      id: kind === MESSAGE ? `msg_${suffix}` : `rs_${suffix}`,
      index,
      text: "",
      signature: undefined
    }
    this.open = open
    if (kind === MESSAGE) {
      this.emit(out, "response.output_item.added", {
        output_index: index,
        item: { type: "message", id: open.id, status: "in_progress", role: "assistant", content: [] }
      })
      this.emit(out, "response.content_part.added", {
        item_id: open.id,
        output_index: index,
        content_index: 0,
        part: textPart("")
      })
    } else {
      this.emit(out, "response.output_item.added", {
        output_index: index,
        item: { type: "reasoning", id: open.id, summary: [] }
      })
    }
    return open
  }

  private closeText(out: Array<Responses.OutputEvent>): void {
    const open = this.open
    if (open === undefined) return
    this.open = undefined
    if (open.kind === MESSAGE) {
      this.emit(out, "response.output_text.done", {
        item_id: open.id,
        output_index: open.index,
        content_index: 0,
        text: open.text,
        logprobs: []
      })
      this.emit(out, "response.content_part.done", {
        item_id: open.id,
        output_index: open.index,
        content_index: 0,
        part: textPart(open.text)
      })
      const item: Responses.OutputMessage = {
        type: "message",
        id: open.id,
        status: "completed",
        role: "assistant",
        content: [textPart(open.text)]
      }
      this.output.push(item)
      this.emit(out, "response.output_item.done", { output_index: open.index, item })
      return
    }
    if (open.text.length > 0) {
      this.emit(out, "response.reasoning_summary_text.done", {
        item_id: open.id,
        output_index: open.index,
        summary_index: 0,
        text: open.text
      })
      this.emit(out, "response.reasoning_summary_part.done", {
        item_id: open.id,
        output_index: open.index,
        summary_index: 0,
        part: { type: "summary_text", text: open.text }
      })
    }
    const item = reasoningItem(open.id, open.text, open.signature)
    this.output.push(item)
    this.emit(out, "response.output_item.done", { output_index: open.index, item })
  }

  private closeCalls(out: Array<Responses.OutputEvent>): void {
    for (const call of [...this.calls.values()].sort((a, b) => a.index - b.index)) {
      this.emit(out, "response.function_call_arguments.done", {
        item_id: call.id,
        output_index: call.index,
        name: call.name,
        arguments: call.arguments
      })
      const item: Responses.OutputFunctionCall = {
        type: "function_call",
        id: call.id,
        call_id: call.callId,
        name: call.name,
        arguments: call.arguments,
        status: "completed"
      }
      this.output.push(item)
      this.emit(out, "response.output_item.done", { output_index: call.index, item })
    }
    this.calls.clear()
  }

  private closeAll(out: Array<Responses.OutputEvent>): void {
    this.closeText(out)
    this.closeCalls(out)
  }

  private encodeInto(event: Canonical.StreamEvent, out: Array<Responses.OutputEvent>): void {
    if (this.ended) return
    switch (event.type) {
      case "start":
        if (!this.started) {
          this.id = responseId(event.id)
          this.created = event.created
          this.ensureStarted(out)
        }
        return
      case "usage":
        this.usage = event.usage
        return
      case "finish":
        if (event.index === 0) this.finish = event.reason
        return
      case "text": {
        if (event.index !== 0 || event.text.length === 0) return
        this.ensureStarted(out)
        if (this.calls.size > 0) this.closeCalls(out)
        const open = this.openText(MESSAGE, out)
        open.text += event.text
        this.emit(out, "response.output_text.delta", {
          item_id: open.id,
          output_index: open.index,
          content_index: 0,
          delta: event.text,
          logprobs: []
        })
        return
      }
      case "thinking": {
        if (event.index !== 0) return
        this.ensureStarted(out)
        if (this.calls.size > 0) this.closeCalls(out)
        const open = this.openText(REASONING, out)
        if (event.text.length > 0) {
          if (open.text.length === 0) {
            this.emit(out, "response.reasoning_summary_part.added", {
              item_id: open.id,
              output_index: open.index,
              summary_index: 0,
              part: { type: "summary_text", text: "" }
            })
          }
          open.text += event.text
          this.emit(out, "response.reasoning_summary_text.delta", {
            item_id: open.id,
            output_index: open.index,
            summary_index: 0,
            delta: event.text
          })
        }
        if (event.signature !== undefined) {
          open.signature = event.signature
          // A signature ends its thinking (Anthropic sends it last): the next thinking is another item.
          this.closeText(out)
        }
        return
      }
      case "tool_call_start": {
        if (event.index !== 0) return
        this.ensureStarted(out)
        this.closeText(out)
        const index = this.nextIndex()
        const call: OpenCall = {
          id: `fc_${this.id.slice(5)}_${index}`,
          index,
          callId: signCallId(event.id, event.signature),
          name: event.name,
          arguments: ""
        }
        this.calls.set(event.call, call)
        this.emit(out, "response.output_item.added", {
          output_index: index,
          item: {
            type: "function_call",
            id: call.id,
            call_id: call.callId,
            name: call.name,
            arguments: "",
            status: "in_progress"
          }
        })
        return
      }
      case "tool_call_delta": {
        if (event.index !== 0 || event.arguments.length === 0) return
        const call = this.calls.get(event.call)
        if (call === undefined) return
        call.arguments += event.arguments
        this.emit(out, "response.function_call_arguments.delta", {
          item_id: call.id,
          output_index: call.index,
          delta: event.arguments
        })
        return
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Decoding: Responses upstream -> canonical
// ---------------------------------------------------------------------------

const decodeUpstream = Schema.decodeUnknownResult(Responses.UpstreamResponse)

const unreadable = (detail: string) =>
  new GatewayError.UpstreamUnavailable({
    status: 502,
    message: `The upstream answered with a response the gateway cannot read (${detail}).`
  })

const finishOf = (
  status: string | null | undefined,
  reason: string | null | undefined,
  called: boolean
): Canonical.FinishReason =>
  status === "incomplete"
    ? reason === "content_filter" ? "content_filter" : "length"
    : called
    ? "tool_calls"
    : "stop"

const summaryText = (item: Readonly<Record<string, unknown>>): string =>
  Array.isArray(item.summary)
    ? item.summary.map((s) => Predicate.isObject(s) && Predicate.isString(s.text) ? s.text : "").filter((t) =>
      t.length > 0
    ).join("\n\n")
    : ""

/** The canonical parts of one output item (none for items of kinds this package does not translate). */
const partsOf = (item: unknown): Array<Canonical.Part> => {
  if (!Predicate.isObject(item)) return []
  switch (item.type) {
    case "message": {
      const parts: Array<Canonical.Part> = []
      for (const part of Array.isArray(item.content) ? item.content : []) {
        if (!Predicate.isObject(part)) continue
        if (part.type === "output_text" && Predicate.isString(part.text)) parts.push({ type: "text", text: part.text })
        else if (part.type === "refusal" && Predicate.isString(part.refusal)) {
          parts.push({ type: "text", text: part.refusal })
        }
      }
      return parts
    }
    case "function_call":
      return Predicate.isString(item.call_id) && Predicate.isString(item.name)
        ? [{
          type: "tool_call",
          id: item.call_id,
          name: decodeToolName(item.name),
          arguments: Predicate.isString(item.arguments) ? item.arguments : "{}"
        }]
        : []
    case "reasoning": {
      const text = summaryText(item)
      return Predicate.isString(item.encrypted_content) && item.encrypted_content.length > 0
        ? [{ type: "thinking", text, signature: OPENAI_SIGNATURE_PREFIX + item.encrypted_content }]
        : text.length > 0
        ? [{ type: "thinking", text }]
        : []
    }
    default:
      return []
  }
}

/**
 * A Responses upstream's answer as a canonical response; `created` stands in
 * when the answer carries no `created_at`.
 *
 * @category decoding
 */
export const decodeResponseResult = (
  body: unknown,
  created = 0
): Result.Result<Canonical.ChatResponse, GatewayError.UpstreamUnavailable> => {
  const decoded = decodeUpstream(body)
  if (Result.isFailure(decoded)) return Result.fail(unreadable(decoded.failure.message))
  const wire = decoded.success
  if (wire.status === "failed") {
    return Result.fail(
      new GatewayError.UpstreamUnavailable({
        message: `The upstream failed the response: ${wire.error?.message ?? "no reason given"}.`
      })
    )
  }
  const content = wire.output.flatMap(partsOf)
  const out: Mutable<Canonical.ChatResponse> = {
    id: wire.id,
    model: wire.model ?? "",
    created: wire.created_at ?? created,
    choices: [{
      index: 0,
      content,
      finishReason: finishOf(wire.status, wire.incomplete_details?.reason, content.some((p) => p.type === "tool_call"))
    }]
  }
  const usage = readUsage(wire.usage)
  if (typeof usage === "string") out.usageRejected = usage
  else if (usage !== undefined) out.usage = usage
  return Result.succeed(out)
}

/** `decodeResponseResult` as an Effect. @category decoding */
export const decodeResponse = (
  body: unknown,
  created = 0
): Effect.Effect<Canonical.ChatResponse, GatewayError.UpstreamUnavailable> =>
  Effect.fromResult(decodeResponseResult(body, created))

/**
 * A Responses upstream's stream events (parsed `data:` JSON) -> canonical
 * events, one stream per instance. `response.failed` and `error` events fail
 * with the upstream's message; unknown events are skipped.
 *
 * @category decoding
 */
export class StreamDecoder {
  private readonly created: number
  private started = false
  private calls = 0
  private called = false
  private readonly callOf = new Map<string, number>()
  private reasoningSeen = new Set<string>()

  constructor(options?: { readonly created?: number }) {
    this.created = options?.created ?? 0
  }

  /** Decodes one event. */
  push(event: unknown): Result.Result<Array<Canonical.StreamEvent>, GatewayError.GatewayError> {
    if (!Predicate.isObject(event) || !Predicate.isString(event.type)) {
      return Result.fail(unreadable("an event that is not an object with a type"))
    }
    const out: Array<Canonical.StreamEvent> = []
    const start = (response: unknown) => {
      if (this.started) return
      this.started = true
      const r = Predicate.isObject(response) ? response : {}
      out.push({
        type: "start",
        id: Predicate.isString(r.id) ? r.id : "",
        model: Predicate.isString(r.model) ? r.model : "",
        created: Predicate.isNumber(r.created_at) ? r.created_at : this.created
      })
    }
    switch (event.type) {
      case "response.created":
      case "response.in_progress":
        start(event.response)
        break
      case "response.output_text.delta":
        start(undefined)
        if (Predicate.isString(event.delta) && event.delta.length > 0) {
          out.push({ type: "text", index: 0, text: event.delta })
        }
        break
      case "response.reasoning_summary_text.delta":
        start(undefined)
        if (Predicate.isString(event.delta) && event.delta.length > 0) {
          out.push({ type: "thinking", index: 0, text: event.delta })
        }
        break
      case "response.reasoning_summary_part.added":
        // A second summary part of the same reasoning starts a new paragraph.
        if (Predicate.isString(event.item_id) && Predicate.isNumber(event.summary_index) && event.summary_index > 0) {
          out.push({ type: "thinking", index: 0, text: "\n\n" })
        }
        break
      case "response.output_item.added": {
        start(undefined)
        const item = event.item
        if (
          Predicate.isObject(item) && item.type === "function_call" && Predicate.isString(item.call_id) &&
          Predicate.isString(item.name)
        ) {
          const call = this.calls++
          this.called = true
          if (Predicate.isString(item.id)) this.callOf.set(item.id, call)
          out.push({ type: "tool_call_start", index: 0, call, id: item.call_id, name: decodeToolName(item.name) })
          if (Predicate.isString(item.arguments) && item.arguments.length > 0) {
            out.push({ type: "tool_call_delta", index: 0, call, arguments: item.arguments })
          }
        }
        break
      }
      case "response.function_call_arguments.delta": {
        const call = Predicate.isString(event.item_id) ? this.callOf.get(event.item_id) : undefined
        if (call !== undefined && Predicate.isString(event.delta) && event.delta.length > 0) {
          out.push({ type: "tool_call_delta", index: 0, call, arguments: event.delta })
        }
        break
      }
      case "response.output_item.done": {
        const item = event.item
        if (
          Predicate.isObject(item) && item.type === "reasoning" && Predicate.isString(item.id) &&
          !this.reasoningSeen.has(item.id)
        ) {
          this.reasoningSeen.add(item.id)
          if (Predicate.isString(item.encrypted_content) && item.encrypted_content.length > 0) {
            out.push({
              type: "thinking",
              index: 0,
              text: "",
              signature: OPENAI_SIGNATURE_PREFIX + item.encrypted_content
            })
          }
        }
        break
      }
      case "response.completed":
      case "response.incomplete": {
        start(event.response)
        const response = Predicate.isObject(event.response) ? event.response : {}
        const details = Predicate.isObject(response.incomplete_details) ? response.incomplete_details : {}
        out.push({
          type: "finish",
          index: 0,
          reason: finishOf(
            Predicate.isString(response.status) ? response.status : event.type.slice(9),
            Predicate.isString(details.reason) ? details.reason : undefined,
            this.called
          )
        })
        const usage = readUsage(response.usage)
        if (typeof usage === "string") out.push({ type: "usage_rejected", reason: usage })
        else if (usage !== undefined) out.push({ type: "usage", usage })
        break
      }
      case "response.failed": {
        const response = Predicate.isObject(event.response) ? event.response : {}
        const error = Predicate.isObject(response.error) ? response.error : {}
        return Result.fail(
          new GatewayError.UpstreamUnavailable({
            message: `The upstream failed the response: ${
              Predicate.isString(error.message) ? error.message : "no reason given"
            }.`
          })
        )
      }
      case "error":
        return Result.fail(
          new GatewayError.UpstreamUnavailable({
            message: `The upstream failed the response: ${
              Predicate.isString(event.message) ? event.message : "no reason given"
            }.`
          })
        )
      default:
        break
    }
    return Result.succeed(out)
  }
}
