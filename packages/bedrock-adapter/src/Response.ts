/**
 * Non-stream Converse answers: Converse answer <-> canonical `ChatResponse`,
 * and what the stream codecs share (stop reasons, usage, blocks).
 *
 * A Converse answer names neither its id nor its model: the caller gives both
 * (the engine's fresh id, the upstream model it asked for), with the time the
 * answer started.
 *
 * @since 0.1.0
 */
import type { Canonical } from "@modelgate/core"
import { Dialect as Core, GatewayError, Tokens } from "@modelgate/core"
import { Effect, Predicate, Result } from "effect"
import type { Mutable } from "effect/Types"
import * as Converse from "./Converse.ts"
import { decodeToolId, encodeToolId, REDACTED_PREFIX, SIGNATURE_PREFIX, signatureToWire } from "./Ids.ts"

// ---------------------------------------------------------------------------
// Stop reasons
// ---------------------------------------------------------------------------

/**
 * A Converse `stopReason` in canonical form: `end_turn` and `stop_sequence`
 * -> `stop`; `max_tokens` and `model_context_window_exceeded` -> `length`;
 * `tool_use` -> `tool_calls`; `guardrail_intervened` and `content_filtered` ->
 * `content_filter`; an unknown reason -> `stop`; none -> `null`.
 *
 * @category stop reasons
 */
export const finishReasonFromWire = (reason: string | null | undefined): Canonical.FinishReason | null => {
  switch (reason) {
    case undefined:
    case null:
      return null
    case "max_tokens":
    case "model_context_window_exceeded":
      return "length"
    case "tool_use":
      return "tool_calls"
    case "guardrail_intervened":
    case "content_filtered":
      return "content_filter"
    default:
      return "stop"
  }
}

/**
 * A canonical finish reason as a Converse `stopReason`: stop `end_turn`,
 * length `max_tokens`, tool_calls `tool_use`, content_filter
 * `content_filtered`, error `end_turn`.
 *
 * @category stop reasons
 */
export const finishReasonToWire = (reason: Canonical.FinishReason): Converse.StopReason => {
  switch (reason) {
    case "length":
      return "max_tokens"
    case "tool_calls":
      return "tool_use"
    case "content_filter":
      return "content_filtered"
    default:
      return "end_turn"
  }
}

// ---------------------------------------------------------------------------
// Usage
// ---------------------------------------------------------------------------

/**
 * Converse usage in canonical form: prompt = `inputTokens` +
 * `cacheReadInputTokens` + `cacheWriteInputTokens` (Bedrock's `inputTokens`
 * excludes both); cached = cache reads and cache writes = cache writes (each
 * only when above 0); completion = `outputTokens` (reasoning included:
 * Bedrock does not report it apart); total = prompt + completion.
 *
 * @category usage
 */
export const usageFromWire = (usage: Converse.Usage): Canonical.Usage => {
  const cacheRead = usage.cacheReadInputTokens ?? 0
  const cacheWrite = usage.cacheWriteInputTokens ?? 0
  const promptTokens = usage.inputTokens + cacheRead + cacheWrite
  const out: Mutable<Canonical.Usage> = {
    promptTokens,
    completionTokens: usage.outputTokens,
    totalTokens: promptTokens + usage.outputTokens
  }
  if (cacheRead > 0) out.cachedTokens = cacheRead
  if (cacheWrite > 0) out.cacheWriteTokens = cacheWrite
  return out
}

/**
 * Canonical usage as Converse usage (`inputTokens` = prompt − cache reads −
 * cache writes).
 *
 * @category usage
 */
export const usageToWire = (usage: Canonical.Usage | undefined): Converse.Usage => {
  if (usage === undefined) return { inputTokens: 0, outputTokens: 0, totalTokens: 0 }
  const cached = usage.cachedTokens ?? 0
  const written = usage.cacheWriteTokens ?? 0
  const inputTokens = Math.max(0, usage.promptTokens - cached - written)
  const out: Mutable<Converse.Usage> = {
    inputTokens,
    outputTokens: usage.completionTokens,
    totalTokens: inputTokens + cached + written + usage.completionTokens
  }
  if (cached > 0) out.cacheReadInputTokens = cached
  if (written > 0) out.cacheWriteInputTokens = written
  return out
}

/**
 * An upstream's `usage` (as sent: anything), checked: `undefined` when there
 * is none, the reason it was refused (`Tokens.badCount`'s `name: value`) when
 * `inputTokens` or `outputTokens` is missing or a figure is not a token
 * count, otherwise its canonical form.
 *
 * @category usage
 */
export const readUsage = (usage: unknown): Canonical.Usage | string | undefined => {
  if (usage === undefined || usage === null) return undefined
  if (typeof usage !== "object" || Array.isArray(usage)) return "usage: not an object"
  const record = usage as Readonly<Record<string, unknown>>
  const bad = Tokens.badCount({
    inputTokens: record.inputTokens ?? "missing",
    outputTokens: record.outputTokens ?? "missing",
    cacheReadInputTokens: record.cacheReadInputTokens,
    cacheWriteInputTokens: record.cacheWriteInputTokens
  })
  if (bad !== undefined) return bad
  return usageFromWire({
    inputTokens: record.inputTokens as number,
    outputTokens: record.outputTokens as number,
    cacheReadInputTokens: record.cacheReadInputTokens as number | undefined,
    cacheWriteInputTokens: record.cacheWriteInputTokens as number | undefined
  })
}

// ---------------------------------------------------------------------------
// Blocks
// ---------------------------------------------------------------------------

/**
 * One answer block in canonical form, or `undefined` for blocks without one
 * (empty text; images, documents, citations and other members).
 *
 * @category blocks
 */
export const partFromWire = (wire: Converse.ContentBlock): Canonical.Part | undefined => {
  const block = Converse.knownBlock(wire)
  if (block === undefined) return undefined
  if ("text" in block) return block.text.length === 0 ? undefined : { type: "text", text: block.text }
  if ("toolUse" in block) {
    return {
      type: "tool_call",
      id: decodeToolId(block.toolUse.toolUseId),
      name: block.toolUse.name,
      arguments: JSON.stringify(block.toolUse.input)
    }
  }
  if ("reasoningContent" in block) {
    const reasoning = block.reasoningContent
    if ("redactedContent" in reasoning) {
      return { type: "thinking", text: "", signature: REDACTED_PREFIX + reasoning.redactedContent }
    }
    const signature = reasoning.reasoningText.signature
    return signature === undefined || signature.length === 0
      ? { type: "thinking", text: reasoning.reasoningText.text }
      : { type: "thinking", text: reasoning.reasoningText.text, signature: SIGNATURE_PREFIX + signature }
  }
  return undefined
}

/** Tool-call arguments as an `input` object: `{}` when empty, `{"_raw": text}` when not a JSON object. @category blocks */
export const inputOf = (text: string): Converse.JsonObject => {
  if (text.trim().length === 0) return {}
  try {
    const parsed: unknown = JSON.parse(text)
    if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) return parsed as Converse.JsonObject
  } catch {
    // not JSON: passed on verbatim below
  }
  return { _raw: text }
}

/**
 * One canonical part as an answer block, or `undefined` for parts an answer
 * does not carry (media, tool results, reasoning another provider signed).
 *
 * @category blocks
 */
export const partToWire = (part: Canonical.Part): Converse.OutputBlock | undefined => {
  switch (part.type) {
    case "text":
      return { text: part.text }
    case "thinking": {
      const wire = signatureToWire(part.signature)
      if (wire._tag === "redacted") return { reasoningContent: { redactedContent: wire.data } }
      return {
        reasoningContent: {
          reasoningText: wire._tag === "signature"
            ? { text: part.text, signature: wire.signature }
            : { text: part.text }
        }
      }
    }
    case "tool_call":
      return { toolUse: { toolUseId: encodeToolId(part.id), name: part.name, input: inputOf(part.arguments) } }
    default:
      return undefined
  }
}

// ---------------------------------------------------------------------------
// Answers
// ---------------------------------------------------------------------------

/** What a Converse answer does not say about itself. @category models */
export interface AnswerFacts {
  /** The answer's id (Converse gives none). */
  readonly id: string
  /** The model the answer is from (the upstream model that was asked). */
  readonly model: string
  /** Creation time, epoch seconds. */
  readonly created: number
}

/**
 * `decodeResponse` as a `Result`. Never throws.
 *
 * @category decoding
 */
export const decodeResponseResult = (
  body: unknown,
  facts: AnswerFacts
): Result.Result<Canonical.ChatResponse, GatewayError.UpstreamUnavailable> => {
  const decoded = Converse.decodeResponseBody(body)
  if (Result.isFailure(decoded)) {
    return Result.fail(
      new GatewayError.UpstreamUnavailable({
        message: `The upstream answered with a Converse answer the gateway cannot read (${decoded.failure.message}).`,
        status: 502
      })
    )
  }
  const wire = decoded.success
  const content: Array<Canonical.Part> = []
  for (const block of wire.output.message.content) {
    const part = partFromWire(block)
    if (part !== undefined) content.push(part)
  }
  const out: Mutable<Canonical.ChatResponse> = {
    id: facts.id,
    model: facts.model,
    created: facts.created,
    choices: [{ index: 0, content, finishReason: finishReasonFromWire(wire.stopReason) }]
  }
  const usage = readUsage(wire.usage)
  if (typeof usage === "string") out.usageRejected = usage
  else if (usage !== undefined) out.usage = usage
  return Result.succeed(out)
}

/**
 * Decodes a Converse answer into one canonical choice. Stop reasons follow
 * `finishReasonFromWire`, usage `usageFromWire`; an unreadable body fails with
 * `UpstreamUnavailable` (502).
 *
 * @example
 * ```ts
 * import { Response } from "@modelgate/bedrock-adapter"
 *
 * Response.decodeResponse({
 *   output: { message: { role: "assistant", content: [{ text: "Hi" }] } },
 *   stopReason: "end_turn",
 *   usage: { inputTokens: 10, outputTokens: 2, totalTokens: 112, cacheReadInputTokens: 100 },
 *   metrics: { latencyMs: 300 }
 * }, { id: "chatcmpl-1", model: "amazon.nova-pro-v1:0", created: 1 })
 * // { id: "chatcmpl-1", model: "amazon.nova-pro-v1:0", created: 1,
 * //   choices: [{ index: 0, content: [{ type: "text", text: "Hi" }], finishReason: "stop" }],
 * //   usage: { promptTokens: 110, completionTokens: 2, totalTokens: 112, cachedTokens: 100 } }
 * ```
 *
 * @category decoding
 */
export const decodeResponse = (
  body: unknown,
  facts: AnswerFacts
): Effect.Effect<Canonical.ChatResponse, GatewayError.UpstreamUnavailable> =>
  Effect.fromResult(decodeResponseResult(body, facts))

/**
 * A canonical answer (its first choice) as a Converse answer: what the laws
 * check `decodeResponse` against, and what a Converse front door would write.
 *
 * @category encoding
 */
export const encodeResponse = (response: Canonical.ChatResponse): Converse.OutputResponse => {
  const choice = response.choices.find((c) => c.index === 0) ?? response.choices[0]
  const content: Array<Converse.OutputBlock> = []
  for (const part of choice?.content ?? []) {
    const block = partToWire(part)
    if (block !== undefined) content.push(block)
  }
  return {
    output: { message: { role: "assistant", content } },
    stopReason: finishReasonToWire(choice?.finishReason ?? "stop"),
    usage: usageToWire(response.usage),
    metrics: { latencyMs: 0 }
  }
}

/**
 * Why a 200 non-stream answer (parsed JSON) is not a Converse answer (an
 * error body, no `output.message`), or `undefined` when it is one. `channel`
 * names the upstream.
 *
 * @category decoding
 */
export const notAnAnswer = (json: unknown, channel: string): GatewayError.UpstreamUnavailable | undefined => {
  if (!Predicate.isObject(json)) return Core.answeredOther(channel, "a Converse answer")
  if (json.output === undefined && (typeof json.message === "string" || typeof json.Message === "string")) {
    return Core.answeredError(channel, (json.message ?? json.Message) as string)
  }
  return Predicate.isObject(json.output) && Predicate.isObject(json.output.message)
    ? undefined
    : Core.answeredOther(channel, "a Converse answer")
}
