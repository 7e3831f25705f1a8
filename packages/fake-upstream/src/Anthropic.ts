/**
 * Anthropic dialect: `/v1/messages` (non-stream and the full SSE event
 * sequence), `/v1/messages/count_tokens` and the model list.
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
  type ToolSpec
} from "./Content.ts"
import {
  type CallContext,
  memoFrame,
  sendJson,
  sendLazyJson,
  sendStream,
  SENTINEL,
  splitAtSentinel,
  type StreamPlan
} from "./Writer.ts"

const blocks = (content: unknown): ReadonlyArray<unknown> =>
  Array.isArray(content) ? content : typeof content === "string" ? [{ type: "text", text: content }] : []

export const anthropicConversation = (body: Record<string, unknown>, model: string): Conversation => {
  const messages = Array.isArray(body["messages"]) ? body["messages"] : []
  let chars = contentText(body["system"]).length
  let lastUserText = ""
  const toolNames = new Map<string, string>()
  for (const m of messages) {
    if (!isRecord(m)) continue
    let text = ""
    for (const block of blocks(m["content"])) {
      if (!isRecord(block)) continue
      if (block["type"] === "text" && typeof block["text"] === "string") text += block["text"]
      else if (block["type"] === "tool_use") {
        const name = typeof block["name"] === "string" ? block["name"] : ""
        chars += name.length + JSON.stringify(block["input"] ?? {}).length
        if (typeof block["id"] === "string") toolNames.set(block["id"], name)
      } else if (block["type"] === "tool_result") chars += contentText(block["content"]).length
    }
    chars += text.length
    if (m["role"] === "user" && text !== "") lastUserText = text
  }
  let lastToolResult: ToolResult | undefined
  const last: unknown = messages[messages.length - 1]
  if (isRecord(last) && last["role"] === "user") {
    for (const block of blocks(last["content"])) {
      if (isRecord(block) && block["type"] === "tool_result") {
        const id = block["tool_use_id"]
        lastToolResult = {
          name: (typeof id === "string" ? toolNames.get(id) : undefined) ?? "tool",
          text: contentText(block["content"])
        }
      }
    }
  }
  const tools: Array<ToolSpec> = []
  if (Array.isArray(body["tools"])) {
    for (const t of body["tools"]) {
      if (isRecord(t) && typeof t["name"] === "string") tools.push({ name: t["name"], schema: t["input_schema"] })
    }
  }
  return { model, promptChars: chars, lastUserText, tools, lastToolResult }
}

const messageId = (seq: number): string => `msg_fake${seq}`
const toolUseId = (seq: number): string => `toolu_fake${seq}`

const usage = (input: number, output: number) => ({
  input_tokens: input,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 0,
  output_tokens: output,
  service_tier: "standard"
})

const stopReason = (answer: Answer): string => (answer._tag === "tool" ? "tool_use" : "end_turn")

export const anthropicMessages = (
  res: ServerResponse,
  body: Record<string, unknown>,
  ctx: CallContext
): Promise<void> | void => {
  const conversation = anthropicConversation(body, ctx.model)
  const answer = planAnswer(conversation, ctx.scenario)
  const [inputTokens, outputTokens] = reportedUsage(
    ctx.scenario,
    estimateTokens(conversation.promptChars),
    answer.outputTokens
  )
  if (body["stream"] === true) return sendStream(res, streamPlan(answer, ctx, inputTokens, outputTokens), ctx.scenario)
  const lazy = answer._tag === "text" && answer.lazy
  const content = answer._tag === "tool"
    ? [{ type: "tool_use", id: toolUseId(ctx.seq), name: answer.name, input: answer.args }]
    : [{ type: "text", text: lazy ? SENTINEL : answerText(answer), citations: null }]
  const response = {
    id: messageId(ctx.seq),
    type: "message",
    role: "assistant",
    model: ctx.model,
    content,
    stop_reason: stopReason(answer),
    stop_sequence: null,
    ...(ctx.scenario.usage ? { usage: usage(inputTokens, outputTokens) } : {})
  }
  const json = JSON.stringify(response)
  if (answer._tag === "text" && lazy) {
    const [prefix, suffix] = splitAtSentinel(json)
    return sendLazyJson(res, ctx.headers, prefix, answer, suffix)
  }
  sendJson(res, 200, json, ctx.headers)
}

const event = (name: string, data: string): string => `event: ${name}\ndata: ${data}\n\n`

const streamPlan = (answer: Answer, ctx: CallContext, inputTokens: number, outputTokens: number): StreamPlan => {
  const start = {
    type: "message_start",
    message: {
      id: messageId(ctx.seq),
      type: "message",
      role: "assistant",
      model: ctx.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      ...(ctx.scenario.usage ? { usage: usage(inputTokens, 1) } : {})
    }
  }
  const block = answer._tag === "tool"
    ? { type: "tool_use", id: toolUseId(ctx.seq), name: answer.name, input: {} }
    : { type: "text", text: "" }
  const head = event("message_start", JSON.stringify(start)) +
    event("content_block_start", JSON.stringify({ type: "content_block_start", index: 0, content_block: block })) +
    event("ping", `{"type":"ping"}`)
  const delta = answer._tag === "tool"
    ? (i: number): string =>
      event(
        "content_block_delta",
        `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":${
          JSON.stringify(answer.fragments[i])
        }}}`
      )
    : (() => {
      const text = memoFrame((chunk) =>
        event(
          "content_block_delta",
          `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":${JSON.stringify(chunk)}}}`
        )
      )
      return (i: number): string => text(answer.chunk(i))
    })()
  const messageDelta = {
    type: "message_delta",
    delta: { stop_reason: stopReason(answer), stop_sequence: null },
    ...(ctx.scenario.usage ? { usage: { output_tokens: outputTokens } } : {})
  }
  return {
    contentType: "text/event-stream; charset=utf-8",
    headers: ctx.headers,
    head,
    count: answer._tag === "tool" ? answer.fragments.length : answer.count,
    frame: delta,
    tail: () =>
      event("content_block_stop", `{"type":"content_block_stop","index":0}`) +
      event("message_delta", JSON.stringify(messageDelta)) +
      event("message_stop", `{"type":"message_stop"}`)
  }
}

export const anthropicCountTokens = (res: ServerResponse, body: Record<string, unknown>, ctx: CallContext): void => {
  const tokens = estimateTokens(anthropicConversation(body, ctx.model).promptChars)
  sendJson(res, 200, JSON.stringify({ input_tokens: tokens }), ctx.headers)
}

// ---------------------------------------------------------------- models

export const anthropicModel = (id: string) => ({
  type: "model",
  id,
  display_name: id,
  created_at: "2025-01-01T00:00:00Z"
})

/**
 * One page of the model list, as Anthropic pages it: `limit` models (default
 * 20, at most 1000) after the model `after_id`, with `has_more`, `first_id`
 * and `last_id`.
 */
export const anthropicModelsPage = (ids: ReadonlyArray<string>, query: Readonly<Record<string, string>>): string => {
  const limit = Math.min(1000, Math.max(1, Number.parseInt(query["limit"] ?? "", 10) || 20))
  const after = query["after_id"] === undefined ? -1 : ids.indexOf(query["after_id"])
  const page = ids.slice(after + 1, after + 1 + limit)
  return JSON.stringify({
    data: page.map(anthropicModel),
    has_more: after + 1 + limit < ids.length,
    first_id: page[0] ?? null,
    last_id: page[page.length - 1] ?? null
  })
}
