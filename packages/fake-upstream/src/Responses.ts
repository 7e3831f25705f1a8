/**
 * OpenAI's Responses API: `POST /v1/responses`, non-stream and the SSE event
 * sequence (`response.created`, `response.in_progress`, per item
 * `response.output_item.added` ... `response.output_item.done`, then
 * `response.completed`), as OpenAI sends it: every event with `event:` and
 * `data:` lines and a `sequence_number`.
 *
 * Like OpenAI it refuses `previous_response_id` of a response it never
 * stored, and function names outside `^[a-zA-Z0-9_-]+$`. A request that asks
 * for reasoning (`reasoning.effort` or `reasoning.summary`) of a reasoning
 * model (names starting `o<digit>` or `gpt-5`) gets a reasoning item first:
 * a summary ("Thinking about: <last user text>") when a summary was asked
 * for, and `encrypted_content` when `include` asks for it; its words are the
 * usage's `reasoning_tokens`. A request with `prompt_cache_key` reports half
 * of its prompt as `cached_tokens`.
 */
import type { ServerResponse } from "node:http"
import {
  type Answer,
  answerText,
  contentText,
  type Conversation,
  estimateTokens,
  isRecord,
  planAnswer,
  reportedUsage,
  type ToolResult,
  type ToolSpec,
  truncate,
  wordChunks
} from "./Content.ts"
import { openaiErrorBody } from "./Errors.ts"
import { type CallContext, sendJson, sendStream, type StreamPlan } from "./Writer.ts"

const items = (body: Record<string, unknown>): ReadonlyArray<unknown> => {
  const input = body["input"]
  return typeof input === "string"
    ? [{ type: "message", role: "user", content: input }]
    : Array.isArray(input)
    ? input
    : []
}

export const responsesConversation = (body: Record<string, unknown>, model: string): Conversation => {
  let chars = typeof body["instructions"] === "string" ? body["instructions"].length : 0
  let lastUserText = ""
  const callNames = new Map<string, string>()
  let last: ToolResult | undefined
  for (const item of items(body)) {
    last = undefined
    if (!isRecord(item)) continue
    const type = item["type"] ?? "message"
    if (type === "message") {
      const text = contentText(item["content"])
      chars += text.length
      if (item["role"] === "user" && text !== "") lastUserText = text
    } else if (type === "function_call") {
      const name = typeof item["name"] === "string" ? item["name"] : ""
      const args = typeof item["arguments"] === "string" ? item["arguments"] : ""
      chars += name.length + args.length
      if (typeof item["call_id"] === "string") callNames.set(item["call_id"], name)
    } else if (type === "function_call_output") {
      const text = typeof item["output"] === "string" ? item["output"] : contentText(item["output"])
      chars += text.length
      const id = item["call_id"]
      last = { name: (typeof id === "string" ? callNames.get(id) : undefined) ?? "tool", text }
    }
  }
  const tools: Array<ToolSpec> = []
  for (const tool of Array.isArray(body["tools"]) ? body["tools"] : []) {
    if (isRecord(tool) && tool["type"] === "function" && typeof tool["name"] === "string") {
      tools.push({ name: tool["name"], schema: tool["parameters"] })
    }
  }
  return { model, promptChars: chars, lastUserText, tools, lastToolResult: last }
}

const REASONING_MODEL = /^(?:o\d|gpt-5)/i
const FUNCTION_NAME = /^[a-zA-Z0-9_-]+$/

const invalid = (message: string, param: string | null, code: string | null) => ({
  status: 400,
  body: openaiErrorBody(message, "invalid_request_error", param, code)
})

/** What OpenAI refuses that a lenient fake would let through. */
export const responsesProblem = (body: Record<string, unknown>) => {
  const previous = body["previous_response_id"]
  if (typeof previous === "string") {
    return invalid(
      `Previous response with id '${previous}' not found.`,
      "previous_response_id",
      "previous_response_not_found"
    )
  }
  const tools = Array.isArray(body["tools"]) ? body["tools"] : []
  for (let i = 0; i < tools.length; i++) {
    const tool: unknown = tools[i]
    if (!isRecord(tool) || tool["type"] !== "function") continue
    const name = tool["name"]
    if (typeof name !== "string" || !FUNCTION_NAME.test(name) || name.length > 64) {
      return invalid(
        `Invalid 'tools[${i}].name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`,
        `tools[${i}].name`,
        "invalid_value"
      )
    }
  }
  if (!Array.isArray(body["input"]) && typeof body["input"] !== "string") {
    return invalid("Missing required parameter: 'input'.", "input", "missing_required_parameter")
  }
  return undefined
}

interface Reasoning {
  readonly summary: string | undefined
  readonly encrypted: string | undefined
  readonly tokens: number
}

const reasoningOf = (
  body: Record<string, unknown>,
  ctx: CallContext,
  conversation: Conversation
): Reasoning | undefined => {
  const reasoning = body["reasoning"]
  if (!REASONING_MODEL.test(ctx.model) || !isRecord(reasoning)) return undefined
  const summary = reasoning["summary"]
  const wantsSummary = summary === "auto" || summary === "concise" || summary === "detailed"
  if (!wantsSummary && reasoning["effort"] === undefined) return undefined
  const text = `Thinking about: ${
    truncate(conversation.lastUserText.replace(/\s+/g, " ").trim(), 64) || "the question"
  }`
  const include = Array.isArray(body["include"]) && body["include"].includes("reasoning.encrypted_content")
  return {
    summary: wantsSummary ? text : undefined,
    encrypted: include ? Buffer.from(`fake-reasoning:${ctx.seq}`).toString("base64") : undefined,
    tokens: wordChunks(text).length
  }
}

const usage = (prompt: number, completion: number, cached: number, reasoning: number) => ({
  input_tokens: prompt,
  input_tokens_details: { cached_tokens: cached, cache_write_tokens: 0 },
  output_tokens: completion,
  output_tokens_details: { reasoning_tokens: reasoning },
  total_tokens: prompt + completion
})

const nowSeconds = (): number => Math.floor(Date.now() / 1000)

const echo = (body: Record<string, unknown>) => ({
  instructions: body["instructions"] ?? null,
  max_output_tokens: body["max_output_tokens"] ?? null,
  parallel_tool_calls: body["parallel_tool_calls"] ?? true,
  previous_response_id: null,
  reasoning: body["reasoning"] ?? { effort: null, summary: null },
  store: body["store"] ?? true,
  temperature: body["temperature"] ?? 1,
  text: body["text"] ?? { format: { type: "text" } },
  tool_choice: body["tool_choice"] ?? "auto",
  tools: body["tools"] ?? [],
  top_p: body["top_p"] ?? 1,
  truncation: "disabled",
  metadata: body["metadata"] ?? {}
})

const reasoningItem = (id: string, reasoning: Reasoning) => ({
  type: "reasoning",
  id,
  summary: reasoning.summary === undefined ? [] : [{ type: "summary_text", text: reasoning.summary }],
  ...(reasoning.encrypted === undefined ? {} : { encrypted_content: reasoning.encrypted })
})

const messageItem = (id: string, text: string, status: string) => ({
  type: "message",
  id,
  status,
  role: "assistant",
  content: [{ type: "output_text", text, annotations: [], logprobs: [] }]
})

const callItem = (ctx: CallContext, answer: Extract<Answer, { _tag: "tool" }>, status: string, args: string) => ({
  type: "function_call",
  id: `fc_fake${ctx.seq}`,
  call_id: `call_fake${ctx.seq}`,
  name: answer.name,
  arguments: args,
  status
})

export const responses = (
  res: ServerResponse,
  body: Record<string, unknown>,
  ctx: CallContext
): Promise<void> | void => {
  const problem = responsesProblem(body)
  if (problem !== undefined) return sendJson(res, problem.status, problem.body, ctx.headers)
  const conversation = responsesConversation(body, ctx.model)
  const answer = planAnswer(conversation, ctx.scenario)
  const reasoning = reasoningOf(body, ctx, conversation)
  const prompt = estimateTokens(conversation.promptChars)
  const cached = typeof body["prompt_cache_key"] === "string" ? Math.floor(prompt / 2) : 0
  const reasoningTokens = reasoning?.tokens ?? 0
  const id = `resp_fake${ctx.seq}`
  const base = {
    id,
    object: "response",
    created_at: nowSeconds(),
    error: null,
    incomplete_details: null,
    model: ctx.model,
    ...echo(body)
  }
  // An upstream that reports nonsense (`negusage`, `fracusage`, `x-fake-usage-values`) reports it here too.
  const [input, output] = reportedUsage(ctx.scenario, prompt, answer.outputTokens + reasoningTokens)
  const finalUsage = ctx.scenario.usage ? usage(input, output, cached, reasoningTokens) : null
  const outputOf = (text: string) => [
    ...(reasoning === undefined ? [] : [reasoningItem(`rs_fake${ctx.seq}`, reasoning)]),
    answer._tag === "tool"
      ? callItem(ctx, answer, "completed", answer.argsJson)
      : messageItem(`msg_fake${ctx.seq}`, text, "completed")
  ]
  if (body["stream"] !== true) {
    const text = answer._tag === "text" ? answerText(answer) : ""
    return sendJson(
      res,
      200,
      JSON.stringify({ ...base, status: "completed", output: outputOf(text), usage: finalUsage }),
      ctx.headers
    )
  }
  return sendStream(res, streamPlan(answer, ctx, base, reasoning, outputOf, finalUsage), ctx.scenario)
}

const streamPlan = (
  answer: Answer,
  ctx: CallContext,
  base: Record<string, unknown>,
  reasoning: Reasoning | undefined,
  outputOf: (text: string) => Array<unknown>,
  finalUsage: unknown
): StreamPlan => {
  let sequence = 0
  const event = (type: string, fields: Record<string, unknown>): string =>
    `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...fields })}\n\n`
  // As the published schema has it: no usage until the end (an object or no field, never null).
  const shell = { ...base, status: "in_progress", output: [] }
  let head = event("response.created", { response: shell }) + event("response.in_progress", { response: shell })
  let index = 0
  if (reasoning !== undefined) {
    const rid = `rs_fake${ctx.seq}`
    head += event("response.output_item.added", {
      output_index: index,
      item: { type: "reasoning", id: rid, summary: [] }
    })
    if (reasoning.summary !== undefined) {
      const part = { type: "summary_text", text: "" }
      head += event("response.reasoning_summary_part.added", {
        item_id: rid,
        output_index: index,
        summary_index: 0,
        part
      })
      for (const word of wordChunks(reasoning.summary)) {
        head += event("response.reasoning_summary_text.delta", {
          item_id: rid,
          output_index: index,
          summary_index: 0,
          delta: word
        })
      }
      head += event("response.reasoning_summary_text.done", {
        item_id: rid,
        output_index: index,
        summary_index: 0,
        text: reasoning.summary
      })
      head += event("response.reasoning_summary_part.done", {
        item_id: rid,
        output_index: index,
        summary_index: 0,
        part: { type: "summary_text", text: reasoning.summary }
      })
    }
    head += event("response.output_item.done", { output_index: index, item: reasoningItem(rid, reasoning) })
    index++
  }
  const out = index
  const base_ = { contentType: "text/event-stream; charset=utf-8", headers: ctx.headers }
  const completed = (text: string) =>
    event("response.completed", {
      response: { ...base, status: "completed", output: outputOf(text), usage: finalUsage }
    })
  if (answer._tag === "tool") {
    const item = callItem(ctx, answer, "in_progress", "")
    head += event("response.output_item.added", { output_index: out, item })
    return {
      ...base_,
      head,
      count: answer.fragments.length,
      frame: (i) =>
        event("response.function_call_arguments.delta", {
          item_id: item.id,
          output_index: out,
          delta: answer.fragments[i]
        }),
      tail: () =>
        event("response.function_call_arguments.done", {
          item_id: item.id,
          output_index: out,
          name: answer.name,
          arguments: answer.argsJson
        }) +
        event("response.output_item.done", {
          output_index: out,
          item: callItem(ctx, answer, "completed", answer.argsJson)
        }) +
        completed("")
    }
  }
  const mid = `msg_fake${ctx.seq}`
  head += event("response.output_item.added", {
    output_index: out,
    item: { type: "message", id: mid, status: "in_progress", role: "assistant", content: [] }
  })
  head += event("response.content_part.added", {
    item_id: mid,
    output_index: out,
    content_index: 0,
    part: { type: "output_text", text: "", annotations: [], logprobs: [] }
  })
  // Sequence numbers are taken as frames are built, which the writer does in order, once each.
  return {
    ...base_,
    head,
    count: answer.count,
    frame: (i) =>
      event("response.output_text.delta", {
        item_id: mid,
        output_index: out,
        content_index: 0,
        delta: answer.chunk(i),
        logprobs: []
      }),
    tail: () => {
      const text = answer.lazy ? "" : answerText(answer)
      return event("response.output_text.done", {
        item_id: mid,
        output_index: out,
        content_index: 0,
        text,
        logprobs: []
      }) +
        event("response.content_part.done", {
          item_id: mid,
          output_index: out,
          content_index: 0,
          part: { type: "output_text", text, annotations: [], logprobs: [] }
        }) +
        event("response.output_item.done", { output_index: out, item: messageItem(mid, text, "completed") }) +
        completed(text)
    }
  }
}
