/**
 * fast-check arbitraries for the Converse dialect: canonical requests and
 * answers Bedrock carries without loss, Converse answers, their
 * ConverseStream events cut at arbitrary points, and those events framed as
 * AWS event-stream bytes. They generate what the laws in `Laws.ts` need, so
 * other packages can test their own code against Converse-shaped input.
 *
 * @example
 * ```ts
 * import * as fc from "fast-check"
 * import { converseResponse, toEvents, toFrames } from "@modelgate/bedrock-adapter/testing/Arbitraries"
 *
 * fc.assert(fc.property(converseResponse, (body) => {
 *   const bytes = toFrames(toEvents(body, [3]))
 *   // bytes is a valid ConverseStream answer
 * }))
 * ```
 *
 * @since 0.1.0
 */
import type { Canonical } from "@modelgate/core"
import * as Cuts from "@modelgate/core/testing/Cuts"
import * as fc from "fast-check"
import * as EventStream from "../EventStream.ts"
import type { WireEvent } from "../Stream.ts"

/** A JSON value as it survives `JSON.stringify` / `JSON.parse` unchanged. @category json */
export type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }

/** The upstream model the laws encode for: a Claude inference profile (so thinking and `top_k` apply). @category requests */
export const MODEL = "us.anthropic.claude-test-v1:0"

/** Object keys: short identifiers. @category json */
export const key: fc.Arbitrary<string> = fc.stringMatching(/^[a-z][a-zA-Z0-9]{0,7}$/)

/** Short non-empty text, including non-ASCII, quotes and line breaks. @category json */
export const text: fc.Arbitrary<string> = fc.oneof(
  fc.string({ minLength: 1, maxLength: 20 }),
  fc.constantFrom("Hello", "héllo wörld", "line\nbreak", "quote \" and \\", "emoji 😀", "{\"looks\":\"json\"}")
)

const scalar: fc.Arbitrary<Json> = fc.oneof(
  fc.string({ maxLength: 10 }),
  fc.integer({ min: -1000, max: 1000 }),
  fc.boolean(),
  fc.constant(null)
)

/** JSON objects (tool inputs). @category json */
export const jsonObject: fc.Arbitrary<{ readonly [key: string]: Json }> =
  fc.letrec<{ value: Json; object: { [key: string]: Json } }>((tie) => ({
    value: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      scalar,
      tie("object"),
      fc.array(tie("value"), { maxLength: 3 })
    ),
    object: fc.dictionary(key, tie("value"), { maxKeys: 4 })
  })).object

/** A tool name Converse accepts. @category json */
export const toolName: fc.Arbitrary<string> = fc.stringMatching(/^[a-z_][a-zA-Z0-9_-]{0,11}$/)

/** Tool-call ids as clients write them, some of which Converse would refuse as they are. @category json */
export const toolId: fc.Arbitrary<string> = fc.oneof(
  fc.stringMatching(/^tooluse_[A-Za-z0-9]{6,12}$/),
  fc.stringMatching(/^call_[a-z0-9]{4,8}$/),
  fc.stringMatching(/^functions\.[A-Za-z]{1,8}:[0-9]$/),
  fc.string({ minLength: 1, maxLength: 10 }),
  fc.stringMatching(/^mgid_[A-Za-z0-9]{0,6}$/)
)

/** Opaque base64-looking data (signatures, bytes). @category json */
export const base64: fc.Arbitrary<string> = fc.stringMatching(/^[A-Za-z0-9+/]{8,24}={0,2}$/)

/** A JSON schema for tool input. @category json */
export const inputSchema: fc.Arbitrary<{ readonly [key: string]: Json }> = fc.record({
  type: fc.constant("object"),
  properties: fc.dictionary(key, fc.record({ type: fc.constantFrom("string", "integer", "boolean") }), { maxKeys: 3 })
}).map((schema) => schema as { readonly [key: string]: Json })

// ---------------------------------------------------------------------------
// Canonical requests Bedrock can carry
// ---------------------------------------------------------------------------

const userPart: fc.Arbitrary<Canonical.Part> = fc.oneof(
  { weight: 4, arbitrary: text.map((t): Canonical.Part => ({ type: "text", text: t })) },
  {
    weight: 1,
    arbitrary: fc.record({
      mediaType: fc.constantFrom("image/png", "image/jpeg", "image/gif", "image/webp"),
      data: base64
    })
      .map(({ data, mediaType }): Canonical.Part => ({ type: "image", mediaType, data }))
  },
  {
    weight: 1,
    arbitrary: fc.record({
      mediaType: fc.constantFrom("application/pdf", "text/csv", "text/plain", "text/markdown", "text/html"),
      data: base64,
      filename: fc.stringMatching(/^[A-Za-z][A-Za-z0-9-]{0,10}$/)
    }).map(({ data, filename, mediaType }): Canonical.Part => ({ type: "file", mediaType, data, filename }))
  }
)

const call = fc.record({ id: toolId, name: toolName, input: jsonObject })

const assistantTurn = fc.record({
  thinking: fc.option(fc.record({ text, signature: base64 }), { nil: undefined }),
  redacted: fc.option(base64, { nil: undefined }),
  text: fc.option(text, { nil: undefined }),
  calls: fc.array(call, { maxLength: 3 })
})

const turns: fc.Arbitrary<Array<Canonical.Message>> = fc
  .tuple(
    fc.array(userPart, { minLength: 1, maxLength: 3 }),
    fc.array(
      fc.tuple(
        assistantTurn,
        fc.array(fc.tuple(text, fc.boolean()), { minLength: 3, maxLength: 3 }),
        fc.array(userPart, { maxLength: 2 })
      ),
      { maxLength: 3 }
    )
  )
  .map(([first, rest]) => {
    const out: Array<Canonical.Message> = [{ role: "user", content: first }]
    let n = 0
    for (const [assistant, results, after] of rest) {
      const parts: Array<Canonical.Part> = []
      if (assistant.thinking !== undefined) {
        parts.push({
          type: "thinking",
          text: assistant.thinking.text,
          signature: `bedrock:${assistant.thinking.signature}`
        })
      }
      if (assistant.redacted !== undefined) {
        parts.push({ type: "thinking", text: "", signature: `bedrock-redacted:${assistant.redacted}` })
      }
      if (assistant.text !== undefined) parts.push({ type: "text", text: assistant.text })
      const calls = assistant.calls.map((c) => ({ ...c, id: `${c.id}_${n++}` }))
      for (const c of calls) {
        parts.push({ type: "tool_call", id: c.id, name: c.name, arguments: JSON.stringify(c.input) })
      }
      if (parts.length === 0) parts.push({ type: "text", text: "ok" })
      out.push({ role: "assistant", content: parts })
      if (calls.length > 0) {
        out.push({
          role: "tool",
          content: calls.map((c, i): Canonical.Part => {
            const [content, isError] = results[i % results.length]!
            return isError
              ? { type: "tool_result", callId: c.id, name: c.name, content, isError: true }
              : { type: "tool_result", callId: c.id, name: c.name, content }
          })
        })
      }
      if (after.length > 0) out.push({ role: "user", content: after })
      else if (calls.length === 0) out.push({ role: "user", content: [{ type: "text", text: "go on" }] })
    }
    return out
  })

const responseFormat: fc.Arbitrary<Canonical.ResponseFormat | undefined> = fc.oneof(
  { weight: 4, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: fc.constant<Canonical.ResponseFormat>({ type: "json" }) },
  {
    weight: 1,
    arbitrary: fc.record({
      name: fc.option(fc.stringMatching(/^[a-z_]{1,8}$/), { nil: undefined }),
      schema: inputSchema
    })
      .map(({ name, schema }): Canonical.ResponseFormat =>
        name === undefined ? { type: "json_schema", schema } : { type: "json_schema", name, schema }
      )
  }
)

/**
 * A canonical request (as any client's would be decoded) that Converse
 * carries without loss for a Claude model (`MODEL`): a user turn first,
 * Bedrock-signed and redacted reasoning, tool calls with object arguments
 * and results naming their call, inline images and documents (named),
 * tools with schemas, a tool choice (auto, required or one tool) only with
 * tools, JSON mode, sampling as Claude takes it (temperature 0–1 without
 * `topP`, or `topP` and `topK`), or a thinking budget below
 * `maxOutputTokens` without a forced tool. Its `model` is `MODEL`.
 *
 * @category requests
 */
export const canonicalRequest: fc.Arbitrary<Canonical.ChatRequest> = fc
  .record({
    messages: turns,
    system: fc.option(fc.array(text, { minLength: 1, maxLength: 2 }), { nil: undefined }),
    format: responseFormat,
    tools: fc.option(
      fc.uniqueArray(
        fc.record({ name: toolName, description: fc.option(text, { nil: undefined }), parameters: inputSchema }),
        { minLength: 1, maxLength: 3, selector: (tool) => tool.name }
      ),
      { nil: undefined }
    ),
    choice: fc.constantFrom(undefined, "auto", "required", "tool"),
    maxOutputTokens: fc.option(fc.integer({ min: 1, max: 64_000 }), { nil: undefined }),
    sampling: fc.oneof(
      fc.constant({}),
      fc.record({ temperature: fc.integer({ min: 0, max: 100 }).map((n) => n / 100) }, { requiredKeys: [] }),
      fc.record(
        { topP: fc.integer({ min: 1, max: 100 }).map((n) => n / 100), topK: fc.integer({ min: 1, max: 100 }) },
        { requiredKeys: [] }
      ),
      fc.record({ budget: fc.integer({ min: 1024, max: 32_000 }) })
    ),
    stop: fc.option(fc.array(fc.string({ minLength: 1, maxLength: 5 }), { minLength: 1, maxLength: 3 }), {
      nil: undefined
    }),
    stream: fc.boolean()
  })
  .map((r) => {
    const out: { -readonly [K in keyof Canonical.ChatRequest]: Canonical.ChatRequest[K] } = {
      model: MODEL,
      messages: r.messages,
      stream: r.stream
    }
    if (r.maxOutputTokens !== undefined) out.maxOutputTokens = r.maxOutputTokens
    if (r.system !== undefined) out.system = r.system
    if (r.format !== undefined) out.responseFormat = r.format
    if (r.tools !== undefined) {
      out.tools = r.tools.map((tool) =>
        tool.description === undefined
          ? { name: tool.name, parameters: tool.parameters }
          : tool as Canonical.ToolDefinition
      )
      if (r.choice !== undefined) {
        out.toolChoice = r.choice === "tool"
          ? { type: "tool", name: r.tools[0]!.name }
          : r.choice
      }
    }
    const forced = r.tools !== undefined && (r.choice === "required" || r.choice === "tool")
    const s = r.sampling as { temperature?: number; topP?: number; topK?: number; budget?: number }
    if (s.temperature !== undefined) out.temperature = s.temperature
    if (s.topP !== undefined) out.topP = s.topP
    if (s.topK !== undefined) out.topK = s.topK
    if (s.budget !== undefined && !forced) {
      out.maxOutputTokens = Math.max(r.maxOutputTokens ?? 0, s.budget + 1)
      out.reasoning = { budgetTokens: s.budget, includeThoughts: true }
    }
    if (r.stop !== undefined) out.stop = r.stop
    if (r.stream) out.includeUsage = true
    return out as Canonical.ChatRequest
  })

// ---------------------------------------------------------------------------
// Converse answers and streams
// ---------------------------------------------------------------------------

const answerBlock: fc.Arbitrary<Record<string, Json>> = fc.oneof(
  { weight: 4, arbitrary: text.map((t) => ({ text: t })) },
  {
    weight: 1,
    arbitrary: fc.record({ text, signature: base64 }).map((reasoningText) => ({ reasoningContent: { reasoningText } }))
  },
  { weight: 1, arbitrary: base64.map((redactedContent) => ({ reasoningContent: { redactedContent } })) },
  {
    weight: 2,
    arbitrary: fc.record({
      toolUseId: fc.stringMatching(/^tooluse_[A-Za-z0-9]{8}$/),
      name: toolName,
      input: jsonObject
    })
      .map((toolUse) => ({ toolUse }))
  }
)

/** Converse usage with cache reads and writes. @category responses */
export const usage: fc.Arbitrary<Record<string, Json>> = fc
  .record({
    inputTokens: fc.nat({ max: 100_000 }),
    outputTokens: fc.nat({ max: 10_000 }),
    cacheReadInputTokens: fc.option(fc.nat({ max: 50_000 }), { nil: undefined }),
    cacheWriteInputTokens: fc.option(fc.nat({ max: 5_000 }), { nil: undefined })
  })
  .map((u) => {
    const out: Record<string, Json> = {
      inputTokens: u.inputTokens,
      outputTokens: u.outputTokens,
      totalTokens: u.inputTokens + u.outputTokens + (u.cacheReadInputTokens ?? 0) + (u.cacheWriteInputTokens ?? 0)
    }
    if (u.cacheReadInputTokens !== undefined) out.cacheReadInputTokens = u.cacheReadInputTokens
    if (u.cacheWriteInputTokens !== undefined) out.cacheWriteInputTokens = u.cacheWriteInputTokens
    return out
  })

/**
 * A complete Converse answer: text, signed and redacted reasoning, tool use
 * (unique ids), a stop reason (`tool_use` exactly when it called tools) and
 * usage with cache counts.
 *
 * @category responses
 */
export const converseResponse: fc.Arbitrary<Record<string, Json>> = fc
  .record({
    content: fc.array(answerBlock, { maxLength: 5 }),
    stop: fc.constantFrom("end_turn", "max_tokens", "stop_sequence", "content_filtered", "guardrail_intervened"),
    usage
  })
  .map(({ content, stop, usage }) => {
    const blocks = content.map((block, i) =>
      "toolUse" in block
        ? {
          toolUse: { ...(block.toolUse as Record<string, Json>), toolUseId: `${(block.toolUse as any).toolUseId}${i}` }
        }
        : block
    )
    const calls = blocks.some((block) => "toolUse" in block)
    return {
      output: { message: { role: "assistant", content: blocks } },
      stopReason: calls ? "tool_use" : stop,
      usage,
      metrics: { latencyMs: 120 }
    }
  })

/**
 * The ConverseStream events Bedrock sends for an answer: `messageStart`, each
 * block's deltas cut at the given points under its own `contentBlockIndex`
 * (text and reasoning without a start event; reasoning text then its
 * signature; a tool call as `contentBlockStart`, input fragments and
 * `contentBlockStop`), `messageStop`, then `metadata` with the usage. Some
 * events carry Bedrock's random `p` padding.
 *
 * @category streams
 */
export const toEvents = (response: Record<string, Json>, cuts: ReadonlyArray<number>): Array<WireEvent> => {
  const events: Array<WireEvent> = [{ type: "messageStart", payload: { role: "assistant" } }]
  const blocks = ((response.output as Record<string, Json>).message as Record<string, Json>).content as ReadonlyArray<
    Record<string, any>
  >
  blocks.forEach((block, index) => {
    const delta = (d: Record<string, Json>, pad = false) =>
      events.push({
        type: "contentBlockDelta",
        payload: pad
          ? { contentBlockIndex: index, delta: d, p: "abcdefghij".slice(0, index + 1) }
          : { contentBlockIndex: index, delta: d }
      })
    if ("text" in block) {
      Cuts.splitNonEmpty(block.text as string, cuts).forEach((piece, k) => delta({ text: piece }, k % 2 === 1))
    } else if ("reasoningContent" in block) {
      const reasoning = block.reasoningContent
      if ("redactedContent" in reasoning) delta({ reasoningContent: { redactedContent: reasoning.redactedContent } })
      else {
        for (const piece of Cuts.splitNonEmpty(reasoning.reasoningText.text, cuts)) {
          delta({ reasoningContent: { text: piece } })
        }
        delta({ reasoningContent: { signature: reasoning.reasoningText.signature } })
      }
    } else if ("toolUse" in block) {
      events.push({
        type: "contentBlockStart",
        payload: {
          contentBlockIndex: index,
          start: { toolUse: { toolUseId: block.toolUse.toolUseId, name: block.toolUse.name } }
        }
      })
      for (const piece of Cuts.splitNonEmpty(JSON.stringify(block.toolUse.input), cuts)) {
        delta({ toolUse: { input: piece } })
      }
    }
    events.push({ type: "contentBlockStop", payload: { contentBlockIndex: index } })
  })
  events.push({ type: "messageStop", payload: { stopReason: response.stopReason as Json } })
  events.push({ type: "metadata", payload: { usage: response.usage as Json, metrics: { latencyMs: 120 } } })
  return events
}

/** Events framed as AWS event-stream bytes (one message per event). @category streams */
export const toFrames = (events: ReadonlyArray<WireEvent>): Uint8Array =>
  Cuts.joinBytes(events.map((event) => EventStream.encodeMessage(EventStream.eventMessage(event.type, event.payload))))

/** Cut points for `toEvents` and for splitting bytes. @category streams */
export const cuts: fc.Arbitrary<Array<number>> = fc.array(fc.nat({ max: 400 }), { maxLength: 8 })

// ---------------------------------------------------------------------------
// Canonical answers Bedrock can carry
// ---------------------------------------------------------------------------

const canonicalAnswerPart: fc.Arbitrary<Canonical.Part> = fc.oneof(
  { weight: 3, arbitrary: text.map((t): Canonical.Part => ({ type: "text", text: t })) },
  {
    weight: 1,
    arbitrary: fc.record({ text, signature: base64 }).map(({ signature, text }): Canonical.Part => ({
      type: "thinking",
      text,
      signature: `bedrock:${signature}`
    }))
  },
  {
    weight: 1,
    arbitrary: base64.map((data): Canonical.Part => ({
      type: "thinking",
      text: "",
      signature: `bedrock-redacted:${data}`
    }))
  },
  {
    weight: 2,
    arbitrary: fc.record({ id: toolId, name: toolName, input: jsonObject })
      .map(({ id, input, name }): Canonical.Part => ({ type: "tool_call", id, name, arguments: JSON.stringify(input) }))
  }
)

/**
 * A canonical answer Converse carries without loss: one choice of text,
 * Bedrock-signed or redacted reasoning and tool calls (object arguments,
 * unique ids that may need encoding), finish `tool_calls` exactly when it
 * calls tools, usage whose cache counts are part of the prompt, model
 * `MODEL`, created 0.
 *
 * @category canonical
 */
export const canonicalResponse: fc.Arbitrary<Canonical.ChatResponse> = fc
  .record({
    id: fc.stringMatching(/^[a-z0-9]{6}$/),
    parts: fc.array(canonicalAnswerPart, { maxLength: 5 }),
    finish: fc.constantFrom<Canonical.FinishReason>("stop", "length", "content_filter"),
    usage: fc.record({
      prompt: fc.nat({ max: 1000 }),
      completion: fc.nat({ max: 1000 }),
      cached: fc.option(fc.integer({ min: 1, max: 100 }), { nil: undefined }),
      written: fc.option(fc.integer({ min: 1, max: 100 }), { nil: undefined })
    })
  })
  .map(({ finish, id, parts, usage }): Canonical.ChatResponse => {
    const content = parts.map((part, i) => part.type === "tool_call" ? { ...part, id: `${part.id}_${i}` } : part)
    const calls = content.some((part) => part.type === "tool_call")
    const promptTokens = usage.prompt + (usage.cached ?? 0) + (usage.written ?? 0)
    const wire: { -readonly [K in keyof Canonical.Usage]: Canonical.Usage[K] } = {
      promptTokens,
      completionTokens: usage.completion,
      totalTokens: promptTokens + usage.completion
    }
    if (usage.cached !== undefined) wire.cachedTokens = usage.cached
    if (usage.written !== undefined) wire.cacheWriteTokens = usage.written
    return {
      id,
      model: MODEL,
      created: 0,
      choices: [{ index: 0, content, finishReason: calls ? "tool_calls" : finish }],
      usage: wire
    }
  })
