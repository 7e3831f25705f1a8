/**
 * Non-stream chat completions: OpenAI response body <-> canonical `ChatResponse`.
 *
 * - `decodeResponse` reads an OpenAI (or OpenAI-compatible) upstream's answer.
 * - `encodeResponse` writes the answer for an OpenAI client.
 *
 * A choice's canonical content is, in order: one thinking part (from the
 * non-standard `reasoning_content`), the text, then the tool calls. Tool names
 * escaped by `Identifiers.encodeToolName` (for an OpenAI upstream) are decoded
 * back. Thinking signatures have no place in OpenAI's answers and are dropped
 * by `encodeResponse`; a tool call's signature (Gemini 3's `thoughtSignature`)
 * travels in its id (`Identifiers.signCallId`), which the client sends back.
 *
 * @since 0.1.0
 */
import type { Canonical } from "@modelgate/core"
import { GatewayError, Issues, Tokens } from "@modelgate/core"
import { Effect, Predicate, Result, Schema } from "effect"
import type { Mutable } from "effect/Types"
import { decodeToolName, signCallId } from "../Identifiers.ts"
import * as ChatCompletions from "./ChatCompletions.ts"

/**
 * An OpenAI `finish_reason` in canonical form: `function_call` counts as
 * `tool_calls`; unknown values (some compatible servers invent their own) as `stop`.
 *
 * @category decoding
 */
export const finishReasonFromWire = (reason: string | null | undefined): Canonical.FinishReason | null => {
  switch (reason) {
    case undefined:
    case null:
      return null
    case "length":
    case "tool_calls":
    case "content_filter":
      return reason
    case "function_call":
      return "tool_calls"
    default:
      return "stop"
  }
}

/**
 * A canonical finish reason for an OpenAI client (`error` has no OpenAI
 * counterpart and is sent as `stop`).
 *
 * @category encoding
 */
export const finishReasonToWire = (reason: Canonical.FinishReason): ChatCompletions.FinishReason =>
  reason === "error" ? "stop" : reason

/** OpenAI `usage` in canonical form (cached and reasoning tokens when reported). @category decoding */
export const usageFromWire = (usage: ChatCompletions.Usage): Canonical.Usage => {
  const out: Mutable<Canonical.Usage> = {
    promptTokens: usage.prompt_tokens,
    completionTokens: usage.completion_tokens,
    totalTokens: usage.total_tokens
  }
  const cached = usage.prompt_tokens_details?.cached_tokens
  if (Predicate.isNumber(cached)) out.cachedTokens = cached
  const reasoning = usage.completion_tokens_details?.reasoning_tokens
  if (Predicate.isNumber(reasoning)) out.reasoningTokens = reasoning
  return out
}

/**
 * An upstream's `usage` (as sent: anything) in canonical form, checked:
 * `undefined` when there is none (absent or `null`); the reason the figures
 * were refused (a string, `Tokens.badCount`'s `name: value`) when
 * `prompt_tokens` or `completion_tokens` is missing, or a figure that is
 * present (those two, `total_tokens`, the cached and reasoning details) is not
 * a token count; otherwise the usage (`total_tokens` defaults to the sum).
 *
 * @example
 * ```ts
 * import { Response } from "@modelgate/openai-adapter"
 *
 * Response.readUsage({ prompt_tokens: 5, completion_tokens: 2 }) // { promptTokens: 5, completionTokens: 2, totalTokens: 7 }
 * Response.readUsage({ prompt_tokens: -1000000, completion_tokens: 2 }) // "prompt_tokens: -1000000"
 * Response.readUsage(null) // undefined
 * ```
 *
 * @category decoding
 */
export const readUsage = (usage: unknown): Canonical.Usage | string | undefined => {
  if (usage === undefined || usage === null) return undefined
  if (!Predicate.isObject(usage) || Array.isArray(usage)) return "usage: not an object"
  const promptDetails = Predicate.isObject(usage.prompt_tokens_details) ? usage.prompt_tokens_details : undefined
  const completionDetails = Predicate.isObject(usage.completion_tokens_details)
    ? usage.completion_tokens_details
    : undefined
  const bad = Tokens.badCount({
    prompt_tokens: usage.prompt_tokens ?? "missing",
    completion_tokens: usage.completion_tokens ?? "missing",
    total_tokens: usage.total_tokens,
    "prompt_tokens_details.cached_tokens": promptDetails?.cached_tokens,
    "completion_tokens_details.reasoning_tokens": completionDetails?.reasoning_tokens
  })
  if (bad !== undefined) return bad
  const prompt = usage.prompt_tokens as number
  const completion = usage.completion_tokens as number
  const total = usage.total_tokens
  return usageFromWire({
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: Tokens.isCount(total) ? total : prompt + completion,
    ...(promptDetails === undefined
      ? {}
      : { prompt_tokens_details: promptDetails as { readonly cached_tokens?: number | null } }),
    ...(completionDetails === undefined
      ? {}
      : { completion_tokens_details: completionDetails as { readonly reasoning_tokens?: number | null } })
  })
}

/** Canonical usage as OpenAI `usage` (details only when known). @category encoding */
export const usageToWire = (usage: Canonical.Usage): ChatCompletions.Usage => {
  const out: Mutable<ChatCompletions.Usage> = {
    prompt_tokens: usage.promptTokens,
    completion_tokens: usage.completionTokens,
    total_tokens: usage.totalTokens
  }
  if (usage.cachedTokens !== undefined) out.prompt_tokens_details = { cached_tokens: usage.cachedTokens }
  if (usage.reasoningTokens !== undefined) out.completion_tokens_details = { reasoning_tokens: usage.reasoningTokens }
  return out
}

const decodeWire = Schema.decodeUnknownResult(ChatCompletions.UpstreamChatCompletion)

/**
 * An image of an answer as Markdown: `![image](data:<type>;base64,<data>)`, or
 * its URL. OpenAI's chat answers carry only text, so that is how a generated
 * image reaches an OpenAI client.
 *
 * @category encoding
 */
export const imageMarkdown = (part: Canonical.ImagePart): string =>
  `![image](${part.data !== undefined ? `data:${part.mediaType ?? "image/png"};base64,${part.data}` : part.url ?? ""})`

const choiceFromWire = (choice: ChatCompletions.ResponseChoice): Canonical.Choice => {
  const message = choice.message
  const content: Array<Canonical.Part> = []
  if (Predicate.isString(message.reasoning_content) && message.reasoning_content.length > 0) {
    content.push({ type: "thinking", text: message.reasoning_content })
  }
  if (Predicate.isString(message.content) && message.content.length > 0) {
    content.push({ type: "text", text: message.content })
  } else if (Predicate.isString(message.refusal) && message.refusal.length > 0) {
    content.push({ type: "text", text: message.refusal })
  }
  for (const call of message.tool_calls ?? []) {
    content.push({
      type: "tool_call",
      id: call.id,
      name: decodeToolName(call.function.name),
      arguments: call.function.arguments
    })
  }
  return { index: choice.index, content, finishReason: finishReasonFromWire(choice.finish_reason) }
}

/**
 * `decodeResponse` as a `Result`, for synchronous callers. Never throws.
 *
 * @category decoding
 */
export const decodeResponseResult = (
  body: unknown
): Result.Result<Canonical.ChatResponse, GatewayError.UpstreamUnavailable> => {
  const wire = decodeWire(body)
  if (Result.isFailure(wire)) {
    const { message, param } = Issues.firstIssue(wire.failure.issue)
    return Result.fail(
      new GatewayError.UpstreamUnavailable({
        message: `The upstream answered with a chat completion the gateway cannot read (${
          param.length === 0 ? message : `${param}: ${message}`
        }).`,
        status: 502
      })
    )
  }
  const response = wire.success
  const out: Mutable<Canonical.ChatResponse> = {
    id: response.id,
    model: response.model,
    created: Math.trunc(response.created ?? 0),
    choices: response.choices.map(choiceFromWire)
  }
  const usage = readUsage(response.usage)
  if (typeof usage === "string") out.usageRejected = usage
  else if (usage !== undefined) out.usage = usage
  return Result.succeed(out)
}

/**
 * Decodes an OpenAI upstream's non-stream answer (already `JSON.parse`d). A body
 * that is not a chat completion fails with `UpstreamUnavailable` (a bad
 * gateway: the caller did nothing wrong), naming the field that is off.
 *
 * @example
 * ```ts
 * import { Response } from "@modelgate/openai-adapter"
 *
 * Response.decodeResponse({
 *   id: "chatcmpl-1", object: "chat.completion", created: 1, model: "gpt-4o",
 *   choices: [{ index: 0, message: { role: "assistant", content: "Hi" }, finish_reason: "stop", logprobs: null }]
 * })
 * // Effect<ChatResponse>: choices[0].content = [{ type: "text", text: "Hi" }], finishReason "stop"
 * ```
 *
 * @category decoding
 */
export const decodeResponse = (
  body: unknown
): Effect.Effect<Canonical.ChatResponse, GatewayError.UpstreamUnavailable> =>
  Effect.fromResult(decodeResponseResult(body))

/**
 * Encodes a canonical response for an OpenAI client, reporting `model` (the
 * name the client asked for, not the upstream's). Text parts are concatenated
 * into `content` (`null` when there is none), images (a Gemini model's
 * generated pictures) join it as Markdown with their data URL
 * (`![image](data:image/png;base64,...)`), thinking parts go into the
 * non-standard `reasoning_content`, tool calls into `tool_calls` with their
 * signature in the id (`Identifiers.signCallId`). A choice without a finish
 * reason is reported as `stop`.
 *
 * @example
 * ```ts
 * import { Response } from "@modelgate/openai-adapter"
 *
 * Response.encodeResponse(
 *   { id: "r1", model: "gpt-4o-2024-08-06", created: 1, choices: [{ index: 0, content: [{ type: "text", text: "Hi" }], finishReason: "stop" }] },
 *   "gpt-4o"
 * )
 * // { id: "r1", object: "chat.completion", created: 1, model: "gpt-4o", choices: [{ index: 0,
 * //   message: { role: "assistant", content: "Hi", refusal: null }, finish_reason: "stop", logprobs: null }] }
 * ```
 *
 * @category encoding
 */
export const encodeResponse = (response: Canonical.ChatResponse, model: string): ChatCompletions.ChatCompletion => {
  const out: Mutable<ChatCompletions.ChatCompletion> = {
    id: response.id,
    object: "chat.completion",
    created: response.created,
    model,
    choices: response.choices.map((choice): ChatCompletions.ResponseChoice => {
      let text: string | null = null
      let reasoning = ""
      const calls: Array<ChatCompletions.ToolCall> = []
      for (const part of choice.content) {
        if (part.type === "text") text = text === null ? part.text : text + part.text
        else if (part.type === "image") text = text === null ? imageMarkdown(part) : text + imageMarkdown(part)
        else if (part.type === "thinking") reasoning += part.text
        else if (part.type === "tool_call") {
          calls.push({
            id: signCallId(part.id, part.signature),
            type: "function",
            function: { name: part.name, arguments: part.arguments }
          })
        }
      }
      const message: Mutable<ChatCompletions.ResponseMessage> = { role: "assistant", content: text, refusal: null }
      if (calls.length > 0) message.tool_calls = calls
      if (reasoning.length > 0) message.reasoning_content = reasoning
      const finish = choice.finishReason === null
        ? "stop"
        : calls.length > 0 && choice.finishReason === "stop"
        ? "tool_calls"
        : finishReasonToWire(choice.finishReason)
      return { index: choice.index, message, finish_reason: finish, logprobs: null }
    })
  }
  if (response.usage !== undefined) out.usage = usageToWire(response.usage)
  return out
}
