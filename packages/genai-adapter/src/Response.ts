/**
 * Non-stream `generateContent` answers: Gemini response body <-> canonical
 * `ChatResponse`, and the pieces the stream codecs share (finish reasons,
 * usage, parts, synthesised tool-call ids).
 *
 * - `decodeResponse` reads a Gemini upstream's answer.
 * - `encodeResponse` writes the answer for a Gemini client: every candidate
 *   has a `finishReason`, tool calls are complete `functionCall` parts with
 *   their `id`, and usage is reported in `usageMetadata`.
 *
 * @since 0.1.0
 */
import type { Canonical } from "@modelgate/core"
import { GatewayError, Tokens } from "@modelgate/core"
import { Effect, Result } from "effect"
import type { Mutable } from "effect/Types"
import * as GenerateContent from "./GenerateContent.ts"

// ---------------------------------------------------------------------------
// Finish reasons
// ---------------------------------------------------------------------------

const CONTENT_FILTER = new Set([
  "SAFETY",
  "RECITATION",
  "BLOCKLIST",
  "PROHIBITED_CONTENT",
  "SPII",
  "IMAGE_SAFETY",
  "IMAGE_PROHIBITED_CONTENT",
  "IMAGE_RECITATION"
])

const ABNORMAL = new Set(["MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS"])

/**
 * A Gemini `finishReason` in canonical form (wire-formats §8.5): `STOP` is
 * `tool_calls` when the candidate called functions, else `stop`; `MAX_TOKENS`
 * is `length`; the safety family (`SAFETY`, `RECITATION`, `BLOCKLIST`,
 * `PROHIBITED_CONTENT`, `SPII`, `IMAGE_*`) is `content_filter`;
 * `MALFORMED_FUNCTION_CALL`, `UNEXPECTED_TOOL_CALL` and `TOO_MANY_TOOL_CALLS`
 * are `error`; anything else (`OTHER`, `LANGUAGE`, unknown values) is `stop`.
 *
 * @category finish reasons
 */
export const finishReasonFromWire = (
  reason: string | undefined,
  hasToolCalls: boolean
): Canonical.FinishReason | null => {
  if (reason === undefined) return null
  if (reason === "STOP") return hasToolCalls ? "tool_calls" : "stop"
  if (reason === "MAX_TOKENS") return "length"
  if (CONTENT_FILTER.has(reason)) return "content_filter"
  if (ABNORMAL.has(reason)) return "error"
  return hasToolCalls ? "tool_calls" : "stop"
}

/**
 * A canonical finish reason for a Gemini client: stop and tool_calls `STOP`,
 * length `MAX_TOKENS`, content_filter `SAFETY`, error `OTHER`.
 *
 * @category finish reasons
 */
export const finishReasonToWire = (reason: Canonical.FinishReason | null): GenerateContent.FinishReason => {
  switch (reason) {
    case "length":
      return "MAX_TOKENS"
    case "content_filter":
      return "SAFETY"
    case "error":
      return "OTHER"
    default:
      return "STOP"
  }
}

// ---------------------------------------------------------------------------
// Usage
// ---------------------------------------------------------------------------

/**
 * Gemini `usageMetadata` in canonical form (wire-formats §8.6): prompt =
 * `promptTokenCount + toolUsePromptTokenCount`; completion =
 * `candidatesTokenCount + thoughtsTokenCount`; total = `totalTokenCount` (or
 * the sum); cached = `cachedContentTokenCount`; reasoning = `thoughtsTokenCount`.
 *
 * @category usage
 */
export const usageFromWire = (usage: GenerateContent.UsageMetadata): Canonical.Usage => {
  const promptTokens = (usage.promptTokenCount ?? 0) + (usage.toolUsePromptTokenCount ?? 0)
  const completionTokens = (usage.candidatesTokenCount ?? 0) + (usage.thoughtsTokenCount ?? 0)
  const out: Mutable<Canonical.Usage> = {
    promptTokens,
    completionTokens,
    totalTokens: usage.totalTokenCount ?? promptTokens + completionTokens
  }
  if (usage.cachedContentTokenCount !== undefined) out.cachedTokens = usage.cachedContentTokenCount
  if (usage.thoughtsTokenCount !== undefined) out.reasoningTokens = usage.thoughtsTokenCount
  return out
}

const USAGE_FIELDS = [
  "promptTokenCount",
  "candidatesTokenCount",
  "totalTokenCount",
  "cachedContentTokenCount",
  "thoughtsTokenCount",
  "toolUsePromptTokenCount"
] as const

/**
 * An upstream's `usageMetadata` (as sent: anything) in canonical form,
 * checked: `undefined` when there is none; the reason it was refused (a
 * string, `Tokens.badCount`'s `name: value`) when a figure that is present is
 * not a token count (Google leaves out the counts that are zero, so absent
 * figures are 0); otherwise the usage (`usageFromWire`).
 *
 * @example
 * ```ts
 * import { Response } from "@modelgate/genai-adapter"
 *
 * Response.readUsage({ promptTokenCount: 4, candidatesTokenCount: 2 }) // { promptTokens: 4, completionTokens: 2, totalTokens: 6 }
 * Response.readUsage({ promptTokenCount: 1.5 }) // "promptTokenCount: 1.5"
 * ```
 *
 * @category usage
 */
export const readUsage = (metadata: unknown): Canonical.Usage | string | undefined => {
  if (metadata === undefined || metadata === null) return undefined
  if (typeof metadata !== "object" || Array.isArray(metadata)) return "usageMetadata: not an object"
  const record = metadata as Readonly<Record<string, unknown>>
  const figures: Record<string, unknown> = {}
  for (const field of USAGE_FIELDS) figures[field] = record[field]
  const bad = Tokens.badCount(figures)
  if (bad !== undefined) return bad
  const usage: Mutable<GenerateContent.UsageMetadata> = {}
  for (const field of USAGE_FIELDS) {
    const value = record[field]
    if (typeof value === "number") usage[field] = value
  }
  return usageFromWire(usage)
}

/**
 * Canonical usage as Gemini `usageMetadata`: `candidatesTokenCount` excludes
 * the reasoning tokens, which go to `thoughtsTokenCount`; cached tokens go to
 * `cachedContentTokenCount`.
 *
 * @category usage
 */
export const usageToWire = (usage: Canonical.Usage): GenerateContent.UsageMetadata => {
  const reasoning = usage.reasoningTokens ?? 0
  const out: Mutable<GenerateContent.UsageMetadata> = {
    promptTokenCount: usage.promptTokens,
    candidatesTokenCount: Math.max(0, usage.completionTokens - reasoning),
    totalTokenCount: usage.totalTokens
  }
  if (usage.cachedTokens !== undefined) out.cachedContentTokenCount = usage.cachedTokens
  if (usage.reasoningTokens !== undefined) out.thoughtsTokenCount = usage.reasoningTokens
  return out
}

// ---------------------------------------------------------------------------
// Parts
// ---------------------------------------------------------------------------

const sanitize = (text: string): string => text.replace(/[^A-Za-z0-9_-]/g, "")

/**
 * The id given to a `functionCall` that came without one: `call_<n>` for the
 * n-th call of candidate `choice` (numbered from 0 across the whole answer),
 * prefixed with the response id when there is one
 * (`call_<responseId>_<choice>_<n>`), so ids stay unique across turns and a
 * stream and its assembled answer agree.
 *
 * @category parts
 */
export const syntheticCallId = (responseId: string | undefined, choice: number, n: number): string => {
  const tag = responseId === undefined ? "" : sanitize(responseId)
  return tag.length === 0 ? `call_${choice}_${n}` : `call_${tag}_${choice}_${n}`
}

/**
 * One part of a Gemini answer in canonical form, or `undefined` for parts the
 * canonical model has no place for (`executableCode`, `codeExecutionResult`,
 * empty text, a bare signature on a non-thought part). `callId` is used when a
 * `functionCall` has no id of its own.
 *
 * @category parts
 */
export const partFromWire = (part: GenerateContent.Part, callId: () => string): Canonical.Part | undefined => {
  if (part.functionCall !== undefined) {
    const call = part.functionCall
    const out: Mutable<Canonical.ToolCallPart> = {
      type: "tool_call",
      id: call.id ?? callId(),
      name: call.name,
      arguments: JSON.stringify(call.args ?? {})
    }
    if (part.thoughtSignature !== undefined) out.signature = part.thoughtSignature
    return out
  }
  if (part.text !== undefined || part.thought === true) {
    const text = part.text ?? ""
    if (part.thought === true) {
      return part.thoughtSignature === undefined
        ? { type: "thinking", text }
        : { type: "thinking", text, signature: part.thoughtSignature }
    }
    return text.length === 0 ? undefined : { type: "text", text }
  }
  if (part.inlineData !== undefined) {
    const blob = part.inlineData
    return blob.mimeType.startsWith("image/")
      ? { type: "image", mediaType: blob.mimeType, data: blob.data }
      : { type: "file", mediaType: blob.mimeType, data: blob.data }
  }
  if (part.fileData !== undefined) {
    return { type: "file", mediaType: part.fileData.mimeType ?? "application/octet-stream", uri: part.fileData.fileUri }
  }
  return undefined
}

const parseArgs = (text: string): GenerateContent.JsonObject => {
  if (text.trim().length === 0) return {}
  try {
    const parsed: unknown = JSON.parse(text)
    if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) {
      return parsed as GenerateContent.JsonObject
    }
  } catch {
    // not JSON: kept verbatim below
  }
  return { _raw: text }
}

/**
 * One canonical part as a Gemini output part, or `undefined` for parts a model
 * answer does not carry (tool results). Tool-call arguments that are not a
 * JSON object (an upstream cut off mid-call) are passed on as
 * `{"_raw": "<text>"}` rather than dropped.
 *
 * @category parts
 */
export const partToWire = (part: Canonical.Part): GenerateContent.OutputPart | undefined => {
  switch (part.type) {
    case "text":
      return { text: part.text }
    case "thinking":
      return part.signature === undefined
        ? { text: part.text, thought: true }
        : { text: part.text, thought: true, thoughtSignature: part.signature }
    case "tool_call": {
      const functionCall = { id: part.id, name: part.name, args: parseArgs(part.arguments) }
      return part.signature === undefined ? { functionCall } : { functionCall, thoughtSignature: part.signature }
    }
    case "image":
      if (part.data !== undefined) {
        return { inlineData: { mimeType: part.mediaType ?? "application/octet-stream", data: part.data } }
      }
      return part.url === undefined
        ? undefined
        : { fileData: { mimeType: part.mediaType ?? "application/octet-stream", fileUri: part.url } }
    case "file":
      if (part.data !== undefined) return { inlineData: { mimeType: part.mediaType, data: part.data } }
      return part.uri === undefined ? undefined : { fileData: { mimeType: part.mediaType, fileUri: part.uri } }
    case "tool_result":
      return undefined
  }
}

// ---------------------------------------------------------------------------
// Responses
// ---------------------------------------------------------------------------

/** Options of `decodeResponse`. @category models */
export interface DecodeOptions {
  /** The response's creation time in epoch seconds (Gemini reports none); default 0. */
  readonly created?: number
  /** The model name to report when the answer has no `modelVersion`. */
  readonly model?: string
  /** The response id to report when the answer has no `responseId`; default `""`. */
  readonly id?: string
}

/**
 * The error for a media part of an answer that is not an image: the other
 * dialects' answers carry text, images (as data URLs) and tool calls, not
 * audio or documents.
 *
 * @category parts
 */
export const untranslatableMedia = (part: Canonical.FilePart): GatewayError.UpstreamUnavailable =>
  new GatewayError.UpstreamUnavailable({
    status: 502,
    message: `The model answered with '${part.mediaType}' data, which this API's answers cannot carry ` +
      "(only text, images and tool calls can be translated). Ask for text, or call the model through the Gemini API."
  })

/**
 * An image of an answer as Markdown (`![image](data:<type>;base64,<data>)`, or
 * its URL): how an image a Gemini model generated reaches a client whose
 * answers carry only text, such as OpenAI chat completions.
 *
 * @category parts
 */
export const imageMarkdown = (part: Canonical.ImagePart): string =>
  `![image](${
    part.data !== undefined
      ? `data:${part.mediaType ?? "application/octet-stream"};base64,${part.data}`
      : part.url ?? ""
  })`

/** The canonical form of one decoded Gemini candidate, or the media part it cannot carry. */
const choiceFromWire = (
  candidate: GenerateContent.Candidate,
  position: number,
  responseId: string | undefined
): Canonical.Choice | Canonical.FilePart => {
  const index = candidate.index ?? position
  const content: Array<Canonical.Part> = []
  let calls = 0
  for (const part of candidate.content?.parts ?? []) {
    const out = partFromWire(part, () => syntheticCallId(responseId, index, calls))
    if (out === undefined) continue
    if (out.type === "file") return out
    if (out.type === "tool_call") calls++
    content.push(out)
  }
  return { index, content, finishReason: finishReasonFromWire(candidate.finishReason, calls > 0) }
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
  const decoded = GenerateContent.decodeResponseBody(body)
  if (Result.isFailure(decoded)) {
    return Result.fail(
      new GatewayError.UpstreamUnavailable({
        message: `The upstream answered with a Gemini response the gateway cannot read (${decoded.failure.message}).`,
        status: 502
      })
    )
  }
  const wire = decoded.success
  const choices: Array<Canonical.Choice> = []
  const candidates = wire.candidates ?? []
  for (let i = 0; i < candidates.length; i++) {
    const choice = choiceFromWire(candidates[i]!, i, wire.responseId)
    if (!("index" in choice)) return Result.fail(untranslatableMedia(choice))
    choices.push(choice)
  }
  if (choices.length === 0 && wire.promptFeedback?.blockReason !== undefined) {
    choices.push({ index: 0, content: [], finishReason: "content_filter" })
  }
  const out: Mutable<Canonical.ChatResponse> = {
    id: wire.responseId ?? options?.id ?? "",
    model: wire.modelVersion ?? options?.model ?? "",
    created: options?.created ?? 0,
    choices
  }
  const usage = readUsage(wire.usageMetadata)
  if (typeof usage === "string") out.usageRejected = usage
  else if (usage !== undefined) out.usage = usage
  return Result.succeed(out)
}

/**
 * Decodes a Gemini upstream's `generateContent` answer. Finish reasons follow
 * `finishReasonFromWire`; a prompt blocked by `promptFeedback.blockReason`
 * (no candidates) becomes one empty choice with `content_filter`; a
 * `functionCall` without id gets `syntheticCallId`; thought parts become
 * thinking parts; generated images become image parts. An unreadable body,
 * and an answer with media that is not an image (audio, documents), fail
 * with `UpstreamUnavailable` (502) saying so.
 *
 * @example
 * ```ts
 * import { Response } from "@modelgate/genai-adapter"
 *
 * Response.decodeResponse({
 *   candidates: [{ content: { role: "model", parts: [{ functionCall: { name: "f", args: { a: 1 } } }] }, finishReason: "STOP" }],
 *   responseId: "r1"
 * })
 * // choices[0]: { index: 0, content: [{ type: "tool_call", id: "call_r1_0_0", name: "f", arguments: "{\"a\":1}" }], finishReason: "tool_calls" }
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
 * Encodes a canonical answer for a Gemini client, reporting `modelVersion`
 * (the name the client asked for). Every candidate carries a `finishReason`
 * (`STOP` when the canonical one is unknown); a candidate with no parts (a
 * content filter) has no `content`, as Google's own blocked candidates do.
 *
 * @example
 * ```ts
 * import { Response } from "@modelgate/genai-adapter"
 *
 * Response.encodeResponse(
 *   { id: "r1", model: "gpt-4o", created: 1, choices: [{ index: 0, content: [{ type: "text", text: "Hi" }], finishReason: "stop" }] },
 *   "gemini-2.5-flash"
 * )
 * // { candidates: [{ content: { role: "model", parts: [{ text: "Hi" }] }, finishReason: "STOP", index: 0 }],
 * //   modelVersion: "gemini-2.5-flash", responseId: "r1" }
 * ```
 *
 * @category encoding
 */
export const encodeResponse = (
  response: Canonical.ChatResponse,
  modelVersion: string
): GenerateContent.OutputResponse => {
  const candidates = response.choices.map((choice): GenerateContent.OutputCandidate => {
    const parts: Array<GenerateContent.OutputPart> = []
    for (const part of choice.content) {
      const out = partToWire(part)
      if (out !== undefined) parts.push(out)
    }
    const finishReason = finishReasonToWire(choice.finishReason)
    return parts.length === 0
      ? { finishReason, index: choice.index }
      : { content: { role: "model", parts }, finishReason, index: choice.index }
  })
  const out: Mutable<GenerateContent.OutputResponse> = { candidates, modelVersion, responseId: response.id }
  if (response.usage !== undefined) out.usageMetadata = usageToWire(response.usage)
  return out
}
