/**
 * fast-check arbitraries for the Anthropic dialect: canonical requests and
 * answers that Anthropic can carry without loss, upstream Messages answers,
 * their stream events cut at arbitrary points, and SSE text. They generate
 * what the laws in `Laws.ts` need (a user turn first, tool results answering
 * the calls of the turn before, Anthropic-signed thinking, tool ids that need
 * sanitising), so other packages can reuse them to test their own code against
 * Anthropic-shaped input.
 *
 * @example
 * ```ts
 * import * as fc from "fast-check"
 * import { anthropicResponse } from "@modelgate/anthropic-adapter/testing/Arbitraries"
 *
 * fc.assert(fc.property(anthropicResponse, (body) => {
 *   // body is a valid Messages answer
 * }), { numRuns: 200 })
 * ```
 *
 * @since 0.1.0
 */
import type { Canonical } from "@modelgate/core"
import * as Cuts from "@modelgate/core/testing/Cuts"
import * as fc from "fast-check"

/** A JSON value as it survives `JSON.stringify` / `JSON.parse` unchanged. @category json */
export type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }

/** Object keys: short identifiers (never `__proto__`). @category json */
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

/** A tool name Anthropic accepts. @category json */
export const toolName: fc.Arbitrary<string> = fc.stringMatching(/^[a-z_][a-zA-Z0-9_-]{0,11}$/)

/**
 * Tool-call ids as clients and upstreams write them: Anthropic's `toolu_…`,
 * OpenAI's `call_…`, and ids Anthropic would reject (`functions.f:3`,
 * non-ASCII, ids that start with the `mgid_` marker).
 *
 * @category json
 */
export const toolId: fc.Arbitrary<string> = fc.oneof(
  fc.stringMatching(/^toolu_[A-Za-z0-9]{6,12}$/),
  fc.stringMatching(/^call_[a-z0-9]{4,8}$/),
  fc.stringMatching(/^functions\.[A-Za-z]{1,8}:[0-9]$/),
  fc.string({ minLength: 1, maxLength: 10 }),
  fc.stringMatching(/^mgid_[A-Za-z0-9]{0,6}$/)
)

/** Opaque base64-looking signatures. @category json */
export const signature: fc.Arbitrary<string> = fc.stringMatching(/^[A-Za-z0-9+/]{8,24}={0,2}$/)

/** A JSON schema for tool input. @category json */
export const inputSchema: fc.Arbitrary<{ readonly [key: string]: Json }> = fc.record({
  type: fc.constant("object"),
  properties: fc.dictionary(key, fc.record({ type: fc.constantFrom("string", "integer", "boolean") }), { maxKeys: 3 })
}).map((schema) => schema as { readonly [key: string]: Json })

// ---------------------------------------------------------------------------
// Canonical requests Anthropic can carry
// ---------------------------------------------------------------------------

const userPart: fc.Arbitrary<Canonical.Part> = fc.oneof(
  { weight: 4, arbitrary: text.map((t): Canonical.Part => ({ type: "text", text: t })) },
  {
    weight: 1,
    arbitrary: fc.record({
      mediaType: fc.constantFrom("image/png", "image/jpeg", "image/gif", "image/webp"),
      data: signature
    })
      .map(({ data, mediaType }): Canonical.Part => ({ type: "image", mediaType, data }))
  },
  { weight: 1, arbitrary: fc.constant<Canonical.Part>({ type: "image", url: "https://example.com/cat.png" }) },
  {
    weight: 1,
    arbitrary: signature.map((data): Canonical.Part => ({ type: "file", mediaType: "application/pdf", data }))
  }
)

const call = fc.record({ id: toolId, name: toolName, input: jsonObject })

const assistantTurn = fc.record({
  thinking: fc.option(fc.record({ text, signature }), { nil: undefined }),
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
          signature: `anthropic:${assistant.thinking.signature}`
        })
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

/**
 * A canonical request (as an OpenAI or Gemini client's would be decoded) that
 * Anthropic carries without loss: a user turn first, no two turns of the same
 * Anthropic role in a row except a tool message followed by a user message,
 * signed thinking, tool calls with object arguments and results naming their
 * call, images (png/jpeg/gif/webp data or an https URL) and PDFs, tools with
 * schemas, a tool choice only with tools, `maxOutputTokens` always set,
 * temperature 0–1 without `topP`, and a thinking budget (1024 or more, below
 * `maxOutputTokens`) only without sampling overrides or a forced tool. Its
 * `model` is `"claude-test"`, the upstream model the laws encode for.
 *
 * @category requests
 */
export const canonicalRequest: fc.Arbitrary<Canonical.ChatRequest> = fc
  .record({
    messages: turns,
    system: fc.option(fc.array(text, { minLength: 1, maxLength: 2 }), { nil: undefined }),
    tools: fc.option(
      fc.uniqueArray(
        fc.record({ name: toolName, description: fc.option(text, { nil: undefined }), parameters: inputSchema }),
        {
          minLength: 1,
          maxLength: 3,
          selector: (tool) => tool.name
        }
      ),
      { nil: undefined }
    ),
    choice: fc.constantFrom(undefined, "auto", "none", "required", "tool"),
    noParallel: fc.boolean(),
    maxOutputTokens: fc.integer({ min: 1, max: 64_000 }),
    sampling: fc.oneof(
      fc.constant({}),
      fc.record({ temperature: fc.integer({ min: 0, max: 100 }).map((n) => n / 100) }, { requiredKeys: [] }),
      fc.record(
        { topP: fc.integer({ min: 1, max: 100 }).map((n) => n / 100), topK: fc.integer({ min: 1, max: 100 }) },
        { requiredKeys: [] }
      ),
      fc.record({ budget: fc.integer({ min: 1024, max: 32_000 }), thoughts: fc.boolean() })
    ),
    stop: fc.option(fc.array(fc.string({ minLength: 1, maxLength: 5 }), { minLength: 1, maxLength: 3 }), {
      nil: undefined
    }),
    user: fc.option(fc.stringMatching(/^[a-z0-9]{1,8}$/), { nil: undefined }),
    stream: fc.boolean()
  })
  .map((r) => {
    const out: { -readonly [K in keyof Canonical.ChatRequest]: Canonical.ChatRequest[K] } = {
      model: "claude-test",
      messages: r.messages,
      maxOutputTokens: r.maxOutputTokens,
      stream: r.stream
    }
    if (r.system !== undefined) out.system = r.system
    if (r.tools !== undefined) {
      out.tools = r.tools.map((tool) =>
        tool.description === undefined
          ? { name: tool.name, parameters: tool.parameters }
          : tool as Canonical.ToolDefinition
      )
      if (r.choice !== undefined) {
        out.toolChoice = r.choice === "tool" ? { type: "tool", name: r.tools[0]!.name } : r.choice
        if (r.noParallel && r.choice !== "none") out.parallelToolCalls = false
      }
    }
    const forced = r.choice === "required" || r.choice === "tool"
    const s = r.sampling as { temperature?: number; topP?: number; topK?: number; budget?: number; thoughts?: boolean }
    if (s.temperature !== undefined) out.temperature = s.temperature
    if (s.topP !== undefined) out.topP = s.topP
    if (s.topK !== undefined) out.topK = s.topK
    if (s.budget !== undefined && !forced) {
      out.maxOutputTokens = Math.max(r.maxOutputTokens, s.budget + 1)
      out.reasoning = { budgetTokens: s.budget, includeThoughts: s.thoughts ?? true }
    }
    if (r.stop !== undefined) out.stop = r.stop
    if (r.user !== undefined) out.user = r.user
    if (r.stream) out.includeUsage = true
    return out as Canonical.ChatRequest
  })

// ---------------------------------------------------------------------------
// Anthropic answers and streams
// ---------------------------------------------------------------------------

const answerBlock: fc.Arbitrary<Record<string, Json>> = fc.oneof(
  { weight: 4, arbitrary: text.map((t) => ({ type: "text", text: t })) },
  { weight: 1, arbitrary: fc.record({ thinking: text, signature }).map((b) => ({ type: "thinking", ...b })) },
  { weight: 1, arbitrary: signature.map((data) => ({ type: "redacted_thinking", data })) },
  {
    weight: 2,
    arbitrary: fc.record({ id: fc.stringMatching(/^toolu_[A-Za-z0-9]{8}$/), name: toolName, input: jsonObject })
      .map((b) => ({ type: "tool_use", ...b }))
  }
)

/** Usage with cache reads and writes. @category responses */
export const usage: fc.Arbitrary<Record<string, Json>> = fc.record({
  input_tokens: fc.nat({ max: 100_000 }),
  output_tokens: fc.nat({ max: 10_000 }),
  cache_creation_input_tokens: fc.nat({ max: 5_000 }),
  cache_read_input_tokens: fc.nat({ max: 50_000 })
})

/**
 * A complete Messages answer from an Anthropic upstream: text, signed and
 * redacted thinking, tool_use blocks (unique ids), a stop reason (`tool_use`
 * exactly when it called tools) and usage with cache counts.
 *
 * @category responses
 */
export const anthropicResponse: fc.Arbitrary<Record<string, Json>> = fc
  .record({
    id: fc.stringMatching(/^msg_[A-Za-z0-9]{8}$/),
    content: fc.array(answerBlock, { maxLength: 5 }),
    stop: fc.constantFrom("end_turn", "max_tokens", "stop_sequence", "refusal", "pause_turn"),
    usage
  })
  .map(({ content, id, stop, usage }) => {
    const blocks = content.map((block, i) =>
      block.type === "tool_use" ? { ...block, id: `${block.id as string}${i}` } : block
    )
    const calls = blocks.some((block) => block.type === "tool_use")
    return {
      id,
      type: "message",
      role: "assistant",
      model: "claude-test",
      content: blocks,
      stop_reason: calls ? "tool_use" : stop,
      stop_sequence: null,
      usage
    }
  })

/**
 * The stream events an Anthropic upstream sends for an answer: `message_start`
 * (input usage, `output_tokens: 1`), each block as start, deltas cut at the
 * given points (tool input as `input_json_delta` fragments, the first one
 * `""`; a thinking block's signature as a `signature_delta`), stop, with a
 * `ping` after the first block, then `message_delta` (stop reason, cumulative
 * output tokens) and `message_stop`.
 *
 * @category streams
 */
export const toEvents = (response: Record<string, Json>, cuts: ReadonlyArray<number>): Array<Record<string, Json>> => {
  const usage = response.usage as Record<string, Json>
  const events: Array<Record<string, Json>> = [{
    type: "message_start",
    message: {
      id: response.id as Json,
      type: "message",
      role: "assistant",
      model: response.model as Json,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...usage, output_tokens: 1 }
    }
  }]
  const blocks = response.content as ReadonlyArray<Record<string, Json>>
  blocks.forEach((block, index) => {
    const delta = (d: Record<string, Json>) => events.push({ type: "content_block_delta", index, delta: d })
    switch (block.type) {
      case "text":
        events.push({ type: "content_block_start", index, content_block: { type: "text", text: "" } })
        for (const piece of Cuts.splitNonEmpty(block.text as string, cuts)) delta({ type: "text_delta", text: piece })
        break
      case "thinking":
        events.push({
          type: "content_block_start",
          index,
          content_block: { type: "thinking", thinking: "", signature: "" }
        })
        for (const piece of Cuts.splitNonEmpty(block.thinking as string, cuts)) {
          delta({ type: "thinking_delta", thinking: piece })
        }
        delta({ type: "signature_delta", signature: block.signature as string })
        break
      case "redacted_thinking":
        events.push({ type: "content_block_start", index, content_block: block })
        break
      case "tool_use":
        events.push({ type: "content_block_start", index, content_block: { ...block, input: {} } })
        delta({ type: "input_json_delta", partial_json: "" })
        for (const piece of Cuts.splitNonEmpty(JSON.stringify(block.input), cuts)) {
          delta({ type: "input_json_delta", partial_json: piece })
        }
        break
    }
    events.push({ type: "content_block_stop", index })
    if (index === 0) events.push({ type: "ping" })
  })
  events.push({
    type: "message_delta",
    delta: { stop_reason: response.stop_reason as Json, stop_sequence: null },
    usage: { output_tokens: usage.output_tokens as Json }
  })
  events.push({ type: "message_stop" })
  return events
}

/** Frames events as Anthropic SSE text (`event:` + `data:`), with `\n` or `\r\n` line ends. @category streams */
export const toSseText = (events: ReadonlyArray<Record<string, Json>>, eol: "\n" | "\r\n" = "\n"): string => {
  let out = ""
  for (const event of events) out += `event: ${event.type as string}${eol}data: ${JSON.stringify(event)}${eol}${eol}`
  return out
}

/** Cut points for `toEvents` and for splitting text. @category streams */
export const cuts: fc.Arbitrary<Array<number>> = fc.array(fc.nat({ max: 40 }), { maxLength: 6 })

/** Cuts a text into pieces at arbitrary points (for split-invariance laws). @category sse */
export const splits = (value: string): fc.Arbitrary<Array<string>> =>
  fc.array(fc.nat({ max: Math.max(0, value.length) }), { maxLength: 8 }).map((points) =>
    Cuts.splitNonEmpty(value, points)
  )

/**
 * SSE text as upstreams write it: events with or without an `event:` line,
 * one or more `data:` lines (with or without the space), comments, and `\r\n`,
 * `\n` or `\r` line ends.
 *
 * @category sse
 */
export const sseText: fc.Arbitrary<string> = fc
  .tuple(
    fc.array(
      fc.record({
        lines: fc.array(fc.string({ maxLength: 12 }).map((s) => s.replace(/[\r\n]/g, "")), {
          minLength: 1,
          maxLength: 3
        }),
        name: fc.option(fc.constantFrom("message_start", "content_block_delta", "ping", "error"), { nil: undefined }),
        space: fc.boolean(),
        comment: fc.boolean()
      }),
      { maxLength: 5 }
    ),
    fc.constantFrom("\r\n", "\n", "\r")
  )
  .map(([events, eol]) =>
    events
      .map((e) =>
        (e.comment ? `: keep-alive${eol}` : "") + (e.name === undefined ? "" : `event: ${e.name}${eol}`) +
        e.lines.map((line) => `data:${e.space ? " " : ""}${line}${eol}`).join("") + eol
      )
      .join("")
  )

// ---------------------------------------------------------------------------
// Canonical answers Anthropic can carry
// ---------------------------------------------------------------------------

const canonicalAnswerPart: fc.Arbitrary<Canonical.Part> = fc.oneof(
  { weight: 3, arbitrary: text.map((t): Canonical.Part => ({ type: "text", text: t })) },
  {
    weight: 1,
    arbitrary: fc.record({ text, signature }).map(({ signature, text }): Canonical.Part => ({
      type: "thinking",
      text,
      signature: `anthropic:${signature}`
    }))
  },
  {
    weight: 1,
    arbitrary: signature.map((data): Canonical.Part => ({
      type: "thinking",
      text: "",
      signature: `anthropic-redacted:${data}`
    }))
  },
  {
    weight: 2,
    arbitrary: fc.record({ id: toolId, name: toolName, input: jsonObject })
      .map(({ id, input, name }): Canonical.Part => ({ type: "tool_call", id, name, arguments: JSON.stringify(input) }))
  }
)

/**
 * A canonical answer an Anthropic client can be sent without loss: one choice
 * of text, Anthropic-signed or redacted thinking and tool calls (object
 * arguments, unique ids that may need sanitising), finish `tool_calls` exactly
 * when it calls tools, usage (an Anthropic stream always reports it) whose
 * cached tokens (if any) are part of the prompt, model `claude-test`, created 0.
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
      cached: fc.option(fc.integer({ min: 1, max: 100 }), { nil: undefined })
    })
  })
  .map(({ finish, id, parts, usage }): Canonical.ChatResponse => {
    const content = parts.map((part, i) => part.type === "tool_call" ? { ...part, id: `${part.id}_${i}` } : part)
    const calls = content.some((part) => part.type === "tool_call")
    const out: Canonical.ChatResponse = {
      id,
      model: "claude-test",
      created: 0,
      choices: [{ index: 0, content, finishReason: calls ? "tool_calls" : finish }]
    }
    const promptTokens = usage.prompt + (usage.cached ?? 0)
    const wire: Canonical.Usage = {
      promptTokens,
      completionTokens: usage.completion,
      totalTokens: promptTokens + usage.completion
    }
    return { ...out, usage: usage.cached === undefined ? wire : { ...wire, cachedTokens: usage.cached } }
  })
