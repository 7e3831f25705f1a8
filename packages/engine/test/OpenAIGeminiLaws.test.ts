/**
 * The cross-dialect law between the two adapters this server joins: OpenAI ->
 * Gemini -> OpenAI keeps what both carry, for requests, responses and streams.
 * The laws live in `@modelgate/openai-adapter/testing/Laws` and take the
 * Gemini side's codecs (`@modelgate/genai-adapter/testing/Laws`
 * `foreignDialect`) as an argument, so neither adapter depends on the other;
 * this file supplies what only the pair knows: which OpenAI requests Gemini can
 * take at all, and what of them survives (`keepRequest`, `keepResponse`).
 */
import { describe, it } from "@effect/vitest"
import type { Canonical } from "@modelgate/core"
import { Request as GeminiRequest } from "@modelgate/genai-adapter"
import * as GeminiLaws from "@modelgate/genai-adapter/testing/Laws"
import * as Arbitraries from "@modelgate/openai-adapter/testing/Arbitraries"
import * as Laws from "@modelgate/openai-adapter/testing/Laws"
import * as fc from "fast-check"

const runs = { numRuns: 300 }

// ---------------------------------------------------------------------------
// What an OpenAI client may send that Gemini can take at all
// ---------------------------------------------------------------------------

/**
 * OpenAI requests Gemini can be sent: images inline (Gemini cannot fetch a
 * URL), every tool result answering a call made earlier in the conversation
 * (Gemini names each function response), and something to send.
 */
const requestsGeminiTakes: fc.Arbitrary<Canonical.ChatRequest> = Arbitraries.canonicalRequest.map((request) => {
  const calls: Array<string> = []
  const messages: Array<Canonical.Message> = []
  for (const message of request.messages) {
    if (message.role === "tool") {
      if (calls.length === 0) continue
      messages.push({
        ...message,
        content: message.content.map((part, i) =>
          part.type === "tool_result" ? { ...part, callId: calls[i % calls.length]! } : part
        )
      })
      continue
    }
    const content = message.content.filter((part) => part.type !== "image" || part.data !== undefined)
    for (const part of content) if (part.type === "tool_call") calls.push(part.id)
    messages.push({ ...message, content })
  }
  return { ...request, messages }
}).filter((request) => request.messages.some((m) => m.content.some((p) => p.type !== "text" || p.text.length > 0)))

// ---------------------------------------------------------------------------
// What survives the trip
// ---------------------------------------------------------------------------

const parseObject = (text: string): Record<string, unknown> | undefined => {
  if (text.trim().length === 0) return undefined
  try {
    const parsed: unknown = JSON.parse(text)
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)
      ? parsed as Record<string, unknown>
      : undefined
  } catch {
    return undefined
  }
}

/** Tool-call arguments become a Gemini object and come back as compact JSON text. */
const keepArguments = (text: string): string => JSON.stringify(parseObject(text) ?? {})

/**
 * A tool result becomes a Gemini `response` object (`{"output": text}` unless
 * the text is a JSON object) and comes back as its `output` or `error` text,
 * or as compact JSON; an `error` text returns flagged, which OpenAI writes as
 * `{"error": text}`.
 */
const keepResult = (content: string): string => {
  const parsed = parseObject(content)
  if (parsed === undefined) return content
  const keys = Object.keys(parsed)
  if (keys.length === 1 && (keys[0] === "output" || keys[0] === "error")) {
    const value = parsed[keys[0]]
    if (typeof value === "string" && parseObject(value) === undefined) {
      return keys[0] === "error"
        ? JSON.stringify({ error: value })
        : value
    }
  }
  return JSON.stringify(parsed)
}

/** Reasoning efforts as Gemini 3 thinking levels. */
const LEVELS: Readonly<Record<Canonical.ReasoningEffort, Canonical.ReasoningEffort>> = {
  none: "minimal",
  minimal: "minimal",
  low: "low",
  medium: "medium",
  high: "high",
  xhigh: "high",
  max: "high"
}

const keepPart = (part: Canonical.Part): Canonical.Part | undefined => {
  switch (part.type) {
    case "text":
      return part.text.length === 0 ? undefined : part
    case "image": {
      const { detail: _detail, ...rest } = part
      return rest
    }
    case "file": {
      const { filename: _filename, ...rest } = part
      return rest
    }
    case "tool_call":
      return { ...part, arguments: keepArguments(part.arguments) }
    case "tool_result":
      return { ...part, content: keepResult(part.content) }
    case "thinking":
      return part.text.length === 0 ? undefined : part
  }
}

/** An assistant turn as OpenAI writes it: its reasoning as one text first, then the texts, then the calls. */
const asOpenAiWrites = (content: ReadonlyArray<Canonical.Part>): Array<Canonical.Part> => {
  const thinking = content.filter((part) => part.type === "thinking").map((part) => part.text).join("")
  return [
    ...(thinking.length > 0 ? [{ type: "thinking" as const, text: thinking }] : []),
    ...content.filter((part) => part.type === "text"),
    ...content.filter((part) => part.type === "tool_call")
  ]
}

/**
 * What of an OpenAI request comes back from Gemini: the conversation without
 * message names, image details, file names and empty text, with consecutive
 * user turns (and model turns, in the order OpenAI writes a turn) merged as
 * Gemini merges them; tool arguments
 * and results as Gemini's objects give them back; schemas normalised; no
 * `parallel_tool_calls`, `user` or `text` response format (Gemini has no such
 * fields); json-schema formats named `response` without `strict`; efforts as
 * Gemini 3's thinking levels; a forced tool without declarations as
 * `required`.
 */
const keepRequest = (request: Canonical.ChatRequest): Canonical.ChatRequest => {
  const messages: Array<Canonical.Message> = []
  for (const message of request.messages) {
    const content = message.content.map(keepPart).filter((part): part is Canonical.Part => part !== undefined)
    if (content.length === 0) continue
    const last = messages[messages.length - 1]
    if (last !== undefined && last.role === message.role && message.role !== "tool") {
      const merged = [...last.content, ...content]
      messages[messages.length - 1] = {
        role: last.role,
        content: last.role === "assistant" ? asOpenAiWrites(merged) : merged
      }
    } else messages.push({ role: message.role, content })
  }
  const { parallelToolCalls: _parallel, user: _user, system, tools, toolChoice, responseFormat, reasoning, ...rest } =
    request
  const out: Record<string, unknown> = { ...rest, messages }
  const kept = (system ?? []).filter((text) => text.length > 0)
  if (kept.length > 0) out.system = kept
  if (tools !== undefined) {
    out.tools = tools.map((tool) =>
      tool.parameters === undefined ? tool : { ...tool, parameters: GeminiRequest.normalizeSchema(tool.parameters) }
    )
  }
  if (toolChoice !== undefined) {
    out.toolChoice = typeof toolChoice === "object" && (tools === undefined || tools.length === 0)
      ? "required"
      : toolChoice
  }
  if (responseFormat !== undefined && responseFormat.type !== "text") {
    out.responseFormat = responseFormat.type === "json"
      ? responseFormat
      : { type: "json_schema", name: "response", schema: GeminiRequest.normalizeSchema(responseFormat.schema) }
  }
  if (reasoning?.effort !== undefined) out.reasoning = { effort: LEVELS[reasoning.effort] }
  return out as unknown as Canonical.ChatRequest
}

/**
 * What of an OpenAI answer comes back from Gemini: everything but the exact
 * text of tool arguments (compact JSON of the object), and completion tokens
 * are at least the reasoning tokens (Gemini counts them apart).
 */
const keepResponse = (response: Canonical.ChatResponse): Canonical.ChatResponse => {
  const out: Canonical.ChatResponse = {
    ...response,
    choices: response.choices.map((choice) => ({
      ...choice,
      content: choice.content.map((part) =>
        part.type === "tool_call" ? { ...part, arguments: keepArguments(part.arguments) } : part
      )
    }))
  }
  const usage = response.usage
  if (usage === undefined || usage.reasoningTokens === undefined) return out
  return {
    ...out,
    usage: {
      ...usage,
      completionTokens: Math.max(0, usage.completionTokens - usage.reasoningTokens) + usage.reasoningTokens
    }
  }
}

describe("OpenAI -> Gemini -> OpenAI keeps what both carry", () => {
  it("requests", () => {
    fc.assert(Laws.requestThrough(GeminiLaws.foreignDialect, keepRequest, requestsGeminiTakes), runs)
  })
  it("responses", () => {
    fc.assert(Laws.responseThrough(GeminiLaws.foreignDialect, keepResponse), runs)
  })
  it("streams, however the last one is cut", () => {
    fc.assert(Laws.streamThrough(GeminiLaws.foreignDialect, keepResponse), runs)
  })
})
