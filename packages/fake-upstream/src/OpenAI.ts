/**
 * OpenAI dialect: `/v1/chat/completions` (non-stream and SSE), `/v1/embeddings`,
 * `/v1/models`. Azure OpenAI deployments reuse the same bodies.
 */
import type { ServerResponse } from "node:http"
import {
  type Answer,
  answerText,
  contentText,
  type Conversation,
  embedding,
  estimateTokens,
  isRecord,
  planAnswer,
  reportedUsage,
  type ToolResult,
  type ToolSpec
} from "./Content.ts"
import { type ErrorResponse, openaiErrorBody } from "./Errors.ts"
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

export const openaiConversation = (body: Record<string, unknown>, model: string): Conversation => {
  const messages = Array.isArray(body["messages"]) ? body["messages"] : []
  let chars = 0
  let lastUserText = ""
  const callNames = new Map<string, string>()
  for (const m of messages) {
    if (!isRecord(m)) continue
    const text = contentText(m["content"])
    chars += text.length
    if (m["role"] === "user") lastUserText = text
    const calls = m["tool_calls"]
    if (Array.isArray(calls)) {
      for (const call of calls) {
        if (!isRecord(call) || !isRecord(call["function"])) continue
        const name = typeof call["function"]["name"] === "string" ? call["function"]["name"] : ""
        const args = typeof call["function"]["arguments"] === "string" ? call["function"]["arguments"] : ""
        chars += name.length + args.length
        if (typeof call["id"] === "string") callNames.set(call["id"], name)
      }
    }
  }
  let lastToolResult: ToolResult | undefined
  const last: unknown = messages[messages.length - 1]
  if (isRecord(last) && (last["role"] === "tool" || last["role"] === "function")) {
    const id = last["tool_call_id"]
    const name = (typeof id === "string" ? callNames.get(id) : undefined) ??
      (typeof last["name"] === "string" ? last["name"] : "tool")
    lastToolResult = { name, text: contentText(last["content"]) }
  }
  const tools: Array<ToolSpec> = []
  if (Array.isArray(body["tools"])) {
    for (const t of body["tools"]) {
      if (isRecord(t) && isRecord(t["function"]) && typeof t["function"]["name"] === "string") {
        tools.push({ name: t["function"]["name"], schema: t["function"]["parameters"] })
      }
    }
  } else if (Array.isArray(body["functions"])) {
    for (const f of body["functions"]) {
      if (isRecord(f) && typeof f["name"] === "string") tools.push({ name: f["name"], schema: f["parameters"] })
    }
  }
  return { model, promptChars: chars, lastUserText, tools, lastToolResult }
}

/** The reasoning tokens a `thinking` model reports: half its completion, rounded up (they are part of the completion). */
export const reasoningTokens = (completion: number): number => Math.ceil(completion / 2)

const usageObject = (prompt: number, completion: number, thinking = false) => ({
  prompt_tokens: prompt,
  completion_tokens: completion,
  total_tokens: prompt + completion,
  prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
  completion_tokens_details: {
    reasoning_tokens: thinking ? reasoningTokens(completion) : 0,
    audio_tokens: 0,
    accepted_prediction_tokens: 0,
    rejected_prediction_tokens: 0
  }
})

const toolCallId = (seq: number): string => `call_fake${seq}`

const nowSeconds = (): number => Math.floor(Date.now() / 1000)

/** Reasoning models (they take `reasoning_effort`): o-series and gpt-5 names. */
const REASONING_MODEL = /^(?:o\d|gpt-5)/i

/** Servers that take earlier reasoning as `reasoning_content` in messages (vLLM); OpenAI refuses it. */
const REASONING_CONTENT_MODEL = /vllm/i

const FUNCTION_NAME = /^[a-zA-Z0-9_-]+$/

const invalid = (message: string, param: string | null, code: string | null) => ({
  status: 400,
  body: openaiErrorBody(message, "invalid_request_error", param, code)
})

/**
 * What OpenAI refuses and a lenient fake would let through, with OpenAI's own
 * messages: function names outside `^[a-zA-Z0-9_-]+$` or over 64 characters,
 * `json_object` mode without the word "json" in the messages,
 * `reasoning_effort` for a model that does not reason, and `reasoning_content`
 * on a message (accepted only by models named like a vLLM server's).
 */
export const openaiChatProblem = (body: Record<string, unknown>, model: string): ErrorResponse | undefined => {
  const tools = Array.isArray(body["tools"]) ? body["tools"] : []
  for (let i = 0; i < tools.length; i++) {
    const tool: unknown = tools[i]
    const name = isRecord(tool) && isRecord(tool["function"]) ? tool["function"]["name"] : undefined
    if (typeof name !== "string") continue
    const param = `tools[${i}].function.name`
    if (!FUNCTION_NAME.test(name)) {
      return invalid(
        `Invalid '${param}': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`,
        param,
        "invalid_value"
      )
    }
    if (name.length > 64) {
      return invalid(
        `Invalid '${param}': string too long. Expected a string with maximum length 64, but got a string with length ${name.length} instead.`,
        param,
        "string_above_max_length"
      )
    }
  }
  const messages = Array.isArray(body["messages"]) ? body["messages"] : []
  const format = body["response_format"]
  if (isRecord(format) && format["type"] === "json_object") {
    const mentioned = messages.some((m) => isRecord(m) && /json/i.test(contentText(m["content"])))
    if (!mentioned) {
      return invalid(
        "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.",
        "messages",
        null
      )
    }
  }
  if (body["reasoning_effort"] !== undefined && body["reasoning_effort"] !== null && !REASONING_MODEL.test(model)) {
    return invalid(
      "Unsupported parameter: 'reasoning_effort' is not supported with this model.",
      "reasoning_effort",
      "unsupported_parameter"
    )
  }
  if (!REASONING_CONTENT_MODEL.test(model)) {
    for (let i = 0; i < messages.length; i++) {
      const message: unknown = messages[i]
      if (isRecord(message) && message["reasoning_content"] !== undefined) {
        return invalid(
          `Additional properties are not allowed ('reasoning_content' was unexpected) - 'messages.${i}'`,
          `messages[${i}]`,
          null
        )
      }
    }
  }
  return undefined
}

export const openaiChat = async (
  res: ServerResponse,
  body: Record<string, unknown>,
  ctx: CallContext
): Promise<void> => {
  const problem = openaiChatProblem(body, ctx.model)
  if (problem !== undefined) return sendJson(res, problem.status, problem.body, ctx.headers)
  const conversation = openaiConversation(body, ctx.model)
  const answer = planAnswer(conversation, ctx.scenario)
  const [promptTokens, completionTokens] = reportedUsage(
    ctx.scenario,
    estimateTokens(conversation.promptChars),
    answer.outputTokens
  )
  if (body["stream"] === true) {
    const options = body["stream_options"]
    const includeUsage = isRecord(options) && options["include_usage"] === true && ctx.scenario.usage
    return sendStream(res, streamPlan(answer, ctx, promptTokens, completionTokens, includeUsage), ctx.scenario)
  }
  const id = `chatcmpl-fake${ctx.seq}`
  const lazy = answer._tag === "text" && answer.lazy
  const message = answer._tag === "tool"
    ? {
      role: "assistant",
      content: null,
      refusal: null,
      annotations: [],
      tool_calls: [{
        id: toolCallId(ctx.seq),
        type: "function",
        function: { name: answer.name, arguments: answer.argsJson }
      }]
    }
    : { role: "assistant", content: lazy ? SENTINEL : answerText(answer), refusal: null, annotations: [] }
  const response = {
    id,
    object: "chat.completion",
    created: nowSeconds(),
    model: ctx.model,
    choices: [{
      index: 0,
      message,
      logprobs: null,
      finish_reason: answer._tag === "tool" ? "tool_calls" : "stop"
    }],
    ...(ctx.scenario.usage ? { usage: usageObject(promptTokens, completionTokens, ctx.scenario.thinking) } : {}),
    service_tier: "default",
    system_fingerprint: "fp_fake"
  }
  const json = JSON.stringify(response)
  if (answer._tag === "text" && lazy) {
    const [prefix, suffix] = splitAtSentinel(json)
    return sendLazyJson(res, ctx.headers, prefix, answer, suffix)
  }
  sendJson(res, 200, json, ctx.headers)
}

const streamPlan = (
  answer: Answer,
  ctx: CallContext,
  promptTokens: number,
  completionTokens: number,
  includeUsage: boolean
): StreamPlan => {
  const created = nowSeconds()
  const envelope = `{"id":"chatcmpl-fake${ctx.seq}","object":"chat.completion.chunk","created":${created},"model":${
    JSON.stringify(ctx.model)
  },"system_fingerprint":"fp_fake","choices":`
  const usageNull = includeUsage ? `,"usage":null` : ""
  const frame = (delta: string, finish: string | null): string =>
    `data: ${envelope}[{"index":0,"delta":${delta},"logprobs":null,"finish_reason":${
      finish === null ? "null" : `"${finish}"`
    }}]${usageNull}}\n\n`
  const tail = (finish: string) => (): string => {
    let out = frame("{}", finish)
    if (includeUsage) {
      out += `data: ${envelope}[],"usage":${
        JSON.stringify(usageObject(promptTokens, completionTokens, ctx.scenario.thinking))
      }}\n\n`
    }
    return out + "data: [DONE]\n\n"
  }
  const base = { contentType: "text/event-stream; charset=utf-8", headers: ctx.headers }
  if (answer._tag === "tool") {
    const start = JSON.stringify({
      role: "assistant",
      content: null,
      tool_calls: [{
        index: 0,
        id: toolCallId(ctx.seq),
        type: "function",
        function: { name: answer.name, arguments: "" }
      }],
      refusal: null
    })
    const parts = answer.fragments
    return {
      ...base,
      head: frame(start, null),
      count: parts.length,
      frame: (i) => frame(JSON.stringify({ tool_calls: [{ index: 0, function: { arguments: parts[i] } }] }), null),
      tail: tail("tool_calls")
    }
  }
  const content = memoFrame((chunk) => frame(`{"content":${JSON.stringify(chunk)}}`, null))
  return {
    ...base,
    head: frame(`{"role":"assistant","content":"","refusal":null}`, null),
    count: answer.count,
    frame: (i) => content(answer.chunk(i)),
    tail: tail("stop")
  }
}

// ------------------------------------------------------------ embeddings

const embeddingInputs = (input: unknown): Array<string> => {
  if (typeof input === "string") return [input]
  if (!Array.isArray(input)) return []
  if (input.every((x) => typeof x === "number")) return [input.join(" ")]
  return input.map((x) => (typeof x === "string" ? x : Array.isArray(x) ? x.join(" ") : ""))
}

const float32Base64 = (values: ReadonlyArray<number>): string => {
  const buf = Buffer.allocUnsafe(values.length * 4)
  for (let i = 0; i < values.length; i++) buf.writeFloatLE(values[i], i * 4)
  return buf.toString("base64")
}

export const DEFAULT_OPENAI_EMBEDDING_DIMENSIONS = 1536

export const openaiEmbeddings = (res: ServerResponse, body: Record<string, unknown>, ctx: CallContext): void => {
  const inputs = embeddingInputs(body["input"])
  const dims = typeof body["dimensions"] === "number" && body["dimensions"] >= 1
    ? Math.min(Math.floor(body["dimensions"]), 8192)
    : DEFAULT_OPENAI_EMBEDDING_DIMENSIONS
  const base64 = body["encoding_format"] === "base64"
  let counted = 0
  const data = inputs.map((text, index) => {
    counted += estimateTokens(text.length)
    const values = embedding(text, dims)
    return { object: "embedding", index, embedding: base64 ? float32Base64(values) : values }
  })
  const [tokens] = reportedUsage(ctx.scenario, counted, 0)
  const response = {
    object: "list",
    data,
    model: ctx.model,
    ...(ctx.scenario.usage ? { usage: { prompt_tokens: tokens, total_tokens: tokens } } : {})
  }
  sendJson(res, 200, JSON.stringify(response), ctx.headers)
}

// ---------------------------------------------------------------- models

/** Fixed creation time so the list body is static and precomputed. */
const MODEL_CREATED = 1_700_000_000

export const openaiModel = (id: string) => ({ id, object: "model", created: MODEL_CREATED, owned_by: "fake-upstream" })

export const openaiModelsBody = (ids: ReadonlyArray<string>): string =>
  JSON.stringify({ object: "list", data: ids.map(openaiModel) })

/** Azure OpenAI's `GET /openai/models?api-version=`: the models the resource may deploy, in Azure's shape. */
export const azureModelsBody = (ids: ReadonlyArray<string>): string =>
  JSON.stringify({
    data: ids.map((id) => ({
      status: "succeeded",
      capabilities: {
        fine_tune: false,
        inference: true,
        completion: false,
        chat_completion: !/embed/i.test(id),
        embeddings: /embed/i.test(id)
      },
      lifecycle_status: "generally-available",
      deprecation: { inference: MODEL_CREATED + 2 * 365 * 86_400 },
      id,
      created_at: MODEL_CREATED,
      object: "model"
    })),
    object: "list"
  })

/** Azure OpenAI's `GET /openai/deployments?api-version=` (data-plane versions up to 2023-05-15): one deployment per model, named after it. */
export const azureDeploymentsBody = (ids: ReadonlyArray<string>): string =>
  JSON.stringify({
    data: ids.map((id) => ({
      scale_settings: { scale_type: "standard" },
      model: id,
      owner: "organization-owner",
      id,
      status: "succeeded",
      created_at: MODEL_CREATED,
      updated_at: MODEL_CREATED,
      object: "deployment"
    })),
    object: "list"
  })
