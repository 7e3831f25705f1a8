/**
 * Non-stream Messages answers: Anthropic response body <-> canonical
 * `ChatResponse`, and the pieces the stream codecs share (stop reasons, usage).
 *
 * - `decodeResponse` reads an Anthropic upstream's answer: text blocks ->
 *   text parts, `tool_use` -> tool calls (`arguments` = `JSON.stringify(input)`,
 *   id through `Ids.decodeToolId`), `thinking` -> thinking parts with the
 *   signature in canonical form (`anthropic:` prefix), `redacted_thinking` ->
 *   an empty thinking part signed `anthropic-redacted:<data>`. Server-tool
 *   blocks have no canonical form and are skipped.
 * - `encodeResponse` writes the answer for an Anthropic client.
 *
 * @since 0.1.0
 */
import type { Canonical } from "@modelgate/core"
import { GatewayError, Tokens } from "@modelgate/core"
import { Effect, Result } from "effect"
import type { Mutable } from "effect/Types"
import { decodeToolId, redactedFromWire, signatureFromWire, signatureToWire, signToolId } from "./Ids.ts"
import * as Messages from "./Messages.ts"

// ---------------------------------------------------------------------------
// Stop reasons
// ---------------------------------------------------------------------------

/**
 * An Anthropic `stop_reason` in canonical form (wire-formats §8.5):
 * `end_turn`, `stop_sequence` and `pause_turn` -> `stop`; `max_tokens` and
 * `model_context_window_exceeded` -> `length`; `tool_use` -> `tool_calls`;
 * `refusal` -> `content_filter`; an unknown reason -> `stop`; none -> `null`.
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
    case "refusal":
      return "content_filter"
    default:
      return "stop"
  }
}

/**
 * A canonical finish reason as an Anthropic `stop_reason`: stop `end_turn`,
 * length `max_tokens`, tool_calls `tool_use`, content_filter `refusal`, error
 * `end_turn` (the upstream ended abnormally; the content is what it is).
 *
 * @category stop reasons
 */
export const finishReasonToWire = (reason: Canonical.FinishReason): Messages.StopReason => {
  switch (reason) {
    case "length":
      return "max_tokens"
    case "tool_calls":
      return "tool_use"
    case "content_filter":
      return "refusal"
    default:
      return "end_turn"
  }
}

// ---------------------------------------------------------------------------
// Usage
// ---------------------------------------------------------------------------

/**
 * Anthropic usage in canonical form (wire-formats §8.6): prompt = `input_tokens`
 * + `cache_read_input_tokens` + `cache_creation_input_tokens` (Anthropic's
 * `input_tokens` excludes both); cached = `cache_read_input_tokens` (only when
 * above 0, so an answer without cache hits reports no cached tokens); cache writes =
 * `cache_creation_input_tokens` (likewise); completion = `output_tokens` (thinking included; Anthropic does not
 * report reasoning tokens separately); total = prompt + completion.
 *
 * @category usage
 */
export const usageFromWire = (usage: Messages.Usage): Canonical.Usage => {
  const cacheRead = usage.cache_read_input_tokens ?? 0
  const cacheWrite = usage.cache_creation_input_tokens ?? 0
  const promptTokens = (usage.input_tokens ?? 0) + cacheRead + cacheWrite
  const out: Mutable<Canonical.Usage> = {
    promptTokens,
    completionTokens: usage.output_tokens,
    totalTokens: promptTokens + usage.output_tokens
  }
  if (cacheRead > 0) out.cachedTokens = cacheRead
  if (cacheWrite > 0) out.cacheWriteTokens = cacheWrite
  return out
}

/**
 * An upstream's `usage` (as sent: anything), checked: `undefined` when there
 * is none, the reason it was refused (a string, `Tokens.badCount`'s
 * `name: value`) when `output_tokens` is missing or a figure that is present
 * is not a token count, otherwise its figures.
 *
 * @category usage
 */
export const readUsageFigures = (usage: unknown): Messages.Usage | string | undefined => {
  if (usage === undefined || usage === null) return undefined
  if (typeof usage !== "object" || Array.isArray(usage)) return "usage: not an object"
  const record = usage as Readonly<Record<string, unknown>>
  const bad = Tokens.badCount({
    input_tokens: record.input_tokens,
    output_tokens: record.output_tokens ?? "missing",
    cache_creation_input_tokens: record.cache_creation_input_tokens,
    cache_read_input_tokens: record.cache_read_input_tokens
  })
  if (bad !== undefined) return bad
  const figures: { -readonly [K in keyof Messages.Usage]: Messages.Usage[K] } = {
    output_tokens: record.output_tokens as number
  }
  if (typeof record.input_tokens === "number") figures.input_tokens = record.input_tokens
  if (typeof record.cache_creation_input_tokens === "number") {
    figures.cache_creation_input_tokens = record.cache_creation_input_tokens
  }
  if (typeof record.cache_read_input_tokens === "number") {
    figures.cache_read_input_tokens = record.cache_read_input_tokens
  }
  return figures
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

/**
 * Canonical usage as Anthropic usage: `input_tokens` = prompt − cache reads −
 * cache writes, `cache_read_input_tokens` = cached,
 * `cache_creation_input_tokens` = cache writes, `output_tokens` = completion.
 *
 * @category usage
 */
export const usageToWire = (usage: Canonical.Usage | undefined): Messages.OutputUsage => {
  if (usage === undefined) {
    return { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 }
  }
  const cached = usage.cachedTokens ?? 0
  const written = usage.cacheWriteTokens ?? 0
  return {
    input_tokens: Math.max(0, usage.promptTokens - cached - written),
    output_tokens: usage.completionTokens,
    cache_creation_input_tokens: written,
    cache_read_input_tokens: cached
  }
}

// ---------------------------------------------------------------------------
// Blocks
// ---------------------------------------------------------------------------

/**
 * One answer block in canonical form, or `undefined` for blocks without one
 * (server tools and their results, empty text).
 *
 * @category blocks
 */
export const partFromWire = (wire: Messages.ResponseBlock): Canonical.Part | undefined => {
  const block = Messages.knownResponseBlock(wire)
  if (block === undefined) return undefined
  switch (block.type) {
    case "text":
      return block.text.length === 0 ? undefined : { type: "text", text: block.text }
    case "thinking":
      return block.signature === undefined || block.signature.length === 0
        ? { type: "thinking", text: block.thinking }
        : { type: "thinking", text: block.thinking, signature: signatureFromWire(block.signature) }
    case "redacted_thinking":
      return { type: "thinking", text: "", signature: redactedFromWire(block.data) }
    case "tool_use":
      return { type: "tool_call", id: decodeToolId(block.id), name: block.name, arguments: JSON.stringify(block.input) }
  }
}

/** Tool-call arguments as an `input` object: `{}` when empty, `{"_raw": text}` when not a JSON object. @category blocks */
export const inputOf = (text: string): Messages.JsonObject => {
  if (text.trim().length === 0) return {}
  try {
    const parsed: unknown = JSON.parse(text)
    if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) return parsed as Messages.JsonObject
  } catch {
    // not JSON: passed on verbatim below
  }
  return { _raw: text }
}

/**
 * One canonical part as an answer block for an Anthropic client, or
 * `undefined` for parts an answer does not carry (media, tool results). Tool
 * ids go through `Ids.encodeToolId`; arguments that are not a JSON object (an
 * upstream cut off mid-call) become `{"_raw": "<text>"}` rather than being
 * dropped; thinking keeps its Anthropic signature, and thinking signed by
 * another provider gets an empty one.
 *
 * @category blocks
 */
export const partToWire = (part: Canonical.Part): Messages.OutputResponseBlock | undefined => {
  switch (part.type) {
    case "text":
      return { type: "text", text: part.text }
    case "thinking": {
      const wire = signatureToWire(part.signature)
      if (wire._tag === "redacted") return { type: "redacted_thinking", data: wire.data }
      return { type: "thinking", thinking: part.text, signature: wire._tag === "signature" ? wire.signature : "" }
    }
    case "tool_call":
      return {
        type: "tool_use",
        id: signToolId(part.id, part.signature),
        name: part.name,
        input: inputOf(part.arguments)
      }
    default:
      return undefined
  }
}

// ---------------------------------------------------------------------------
// Responses
// ---------------------------------------------------------------------------

/** Options of `decodeResponse`. @category models */
export interface DecodeOptions {
  /** The response's creation time in epoch seconds (Anthropic reports none); default 0. */
  readonly created?: number
}

/**
 * `decodeResponse` as a `Result`, for synchronous callers. Never throws.
 *
 * @category decoding
 */
export const decodeResponseResult = (
  body: unknown,
  options?: DecodeOptions
): Result.Result<Canonical.ChatResponse, GatewayError.UpstreamUnavailable> => {
  const decoded = Messages.decodeResponseBody(body)
  if (Result.isFailure(decoded)) {
    return Result.fail(
      new GatewayError.UpstreamUnavailable({
        message:
          `The upstream answered with an Anthropic message the gateway cannot read (${decoded.failure.message}).`,
        status: 502
      })
    )
  }
  const wire = decoded.success
  const content: Array<Canonical.Part> = []
  for (const block of wire.content) {
    const part = partFromWire(block)
    if (part !== undefined) content.push(part)
  }
  const out: Mutable<Canonical.ChatResponse> = {
    id: wire.id,
    model: wire.model,
    created: options?.created ?? 0,
    choices: [{ index: 0, content, finishReason: finishReasonFromWire(wire.stop_reason) }]
  }
  const usage = readUsage(wire.usage)
  if (typeof usage === "string") out.usageRejected = usage
  else if (usage !== undefined) out.usage = usage
  return Result.succeed(out)
}

/**
 * Decodes an Anthropic upstream's answer into one canonical choice. Stop
 * reasons follow `finishReasonFromWire`, usage `usageFromWire`. An unreadable
 * body fails with `UpstreamUnavailable` (502).
 *
 * @example
 * ```ts
 * import { Response } from "@modelgate/anthropic-adapter"
 *
 * Response.decodeResponse({
 *   id: "msg_1", type: "message", role: "assistant", model: "claude-sonnet-4-5",
 *   content: [{ type: "tool_use", id: "toolu_1", name: "f", input: { a: 1 } }],
 *   stop_reason: "tool_use", stop_sequence: null,
 *   usage: { input_tokens: 10, output_tokens: 5, cache_creation_input_tokens: 2, cache_read_input_tokens: 100 }
 * })
 * // { id: "msg_1", model: "claude-sonnet-4-5", created: 0,
 * //   choices: [{ index: 0, content: [{ type: "tool_call", id: "toolu_1", name: "f", arguments: "{\"a\":1}" }], finishReason: "tool_calls" }],
 * //   usage: { promptTokens: 112, completionTokens: 5, totalTokens: 117, cachedTokens: 100 } }
 * ```
 *
 * @category decoding
 */
export const decodeResponse = (
  body: unknown,
  options?: DecodeOptions
): Effect.Effect<Canonical.ChatResponse, GatewayError.UpstreamUnavailable> =>
  Effect.fromResult(decodeResponseResult(body, options))

/**
 * Encodes a canonical answer (its first choice: Anthropic answers carry one)
 * for an Anthropic client, reporting `model` (the name the client asked for).
 * A missing finish reason is `end_turn`; missing usage is reported as zeros
 * (the SDKs require the field).
 *
 * @example
 * ```ts
 * import { Response } from "@modelgate/anthropic-adapter"
 *
 * Response.encodeResponse(
 *   { id: "chatcmpl-1", model: "gpt-4o", created: 1, choices: [{ index: 0, content: [{ type: "text", text: "Hi" }], finishReason: "stop" }] },
 *   "claude-sonnet-4-5"
 * )
 * // { id: "chatcmpl-1", type: "message", role: "assistant", model: "claude-sonnet-4-5",
 * //   content: [{ type: "text", text: "Hi" }], stop_reason: "end_turn", stop_sequence: null,
 * //   usage: { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 } }
 * ```
 *
 * @category encoding
 */
export const encodeResponse = (response: Canonical.ChatResponse, model: string): Messages.OutputResponse => {
  const choice = response.choices.find((c) => c.index === 0) ?? response.choices[0]
  const content: Array<Messages.OutputResponseBlock> = []
  for (const part of choice?.content ?? []) {
    const block = partToWire(part)
    if (block !== undefined) content.push(block)
  }
  return {
    id: response.id,
    type: "message",
    role: "assistant",
    model,
    content,
    stop_reason: finishReasonToWire(choice?.finishReason ?? "stop"),
    stop_sequence: null,
    usage: usageToWire(response.usage)
  }
}
