/**
 * AWS Bedrock, strict: `POST /model/{modelId}/converse` and
 * `/converse-stream` (the Converse API), `/count-tokens`, `/invoke` for the
 * embedding models (Amazon Titan Text Embeddings, Cohere Embed, each in its
 * own body, validated as Bedrock does) and `GET /foundation-models` (the
 * control plane's model list), each refused unless signed with Signature
 * Version 4 by a known access key (or sent with a known Bedrock API key),
 * checked as AWS checks it (`Aws.verifyRequest`). Answers in Converse's
 * shapes; streams as real event-stream frames; errors with AWS's status,
 * `x-amzn-ErrorType` and words.
 */
import { randomUUID } from "node:crypto"
import type { IncomingHttpHeaders, OutgoingHttpHeaders, ServerResponse } from "node:http"
import { setTimeout as sleep } from "node:timers/promises"
import { type AwsCredential, eventFrame, exceptionFrame, hugeEventFrame, verifyRequest } from "./Aws.ts"
import {
  type Answer,
  answerText,
  type Conversation,
  embedding,
  estimateTokens,
  isRecord,
  planAnswer,
  reportedUsage,
  type ToolResult,
  type ToolSpec
} from "./Content.ts"
import type { Scenario } from "./Scenario.ts"
import { cutConnection, sendJson } from "./Writer.ts"

/** What the Bedrock fake accepts. */
export interface BedrockOptions {
  /** The region requests must be signed for (default `us-east-1`). */
  readonly region?: string
  /** The access keys it knows (default `TEST_CREDENTIALS`). */
  readonly credentials?: ReadonlyArray<AwsCredential>
  /** The Bedrock API keys it knows (default `[TEST_API_KEY]`). */
  readonly apiKeys?: ReadonlyArray<string>
  /** Model ids `GET /foundation-models` lists. */
  readonly models?: ReadonlyArray<string>
  /**
   * Principals (access key ids; a Bedrock API key is `api-key:` and its first eight characters) that may call
   * models but not list them: `GET /foundation-models` answers them 403
   * `AccessDeniedException`, as AWS does an IAM identity without
   * `bedrock:ListFoundationModels`.
   */
  readonly listDenied?: ReadonlyArray<string>
}

/** A test-only access key pair (not AWS's): what the fake accepts unless told otherwise. */
export const TEST_CREDENTIALS: AwsCredential = {
  accessKeyId: "AKIAFAKEUPSTREAMTEST",
  secretAccessKey: "fake-upstream-test-secret-not-an-aws-key"
}

/** A test-only Bedrock API key. */
export const TEST_API_KEY = "ABSKfake-upstream-test-api-key"

export const DEFAULT_BEDROCK_MODELS: ReadonlyArray<string> = [
  "anthropic.claude-sonnet-4-5-20250929-v1:0",
  "amazon.nova-pro-v1:0",
  "meta.llama3-3-70b-instruct-v1:0",
  "amazon.titan-embed-text-v2:0",
  "cohere.embed-english-v3"
]

/** The Bedrock paths this fake serves. */
export const isBedrockPath = (path: string): boolean => path.startsWith("/model/") || path === "/foundation-models"

const errorTypeHeader = (type: string) => `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`

const sendError = (
  res: ServerResponse,
  status: number,
  type: string | undefined,
  body: Readonly<Record<string, string>>,
  headers: OutgoingHttpHeaders
): void =>
  sendJson(res, status, JSON.stringify(body), {
    ...headers,
    ...(type === undefined ? {} : { "x-amzn-errortype": errorTypeHeader(type) })
  })

const validation = (res: ServerResponse, message: string, headers: OutgoingHttpHeaders): void =>
  sendError(res, 400, "ValidationException", { message }, headers)

/** The documented error of each status a scenario asks for (`x-fake-fail`). */
const FAILURES: Readonly<Record<number, readonly [string, string]>> = {
  400: ["ValidationException", "fake-upstream: simulated validation error"],
  403: ["AccessDeniedException", "You don't have access to the model with the specified model ID."],
  404: ["ResourceNotFoundException", "The requested resource could not be found."],
  408: ["ModelTimeoutException", "Model has timed out in processing the request."],
  424: ["ModelErrorException", "The model returned an error."],
  429: ["ThrottlingException", "Too many requests, please wait before trying again."],
  500: ["InternalServerException", "The server encountered an internal error."],
  503: ["ServiceUnavailableException", "Bedrock is unable to process your request."]
}

interface Block {
  readonly [member: string]: unknown
}

/** Reads a Converse body the way Bedrock validates it; a string is the ValidationException's message. */
const check = (body: unknown): string | undefined => {
  if (!isRecord(body)) return "Malformed input request, please reformat your input and try again."
  const messages = body.messages
  if (!Array.isArray(messages) || messages.length === 0) {
    return "A conversation must start with a user message. Try again with a conversation that starts with a user message."
  }
  let previous: unknown
  let toolBlocks = false
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]
    if (!isRecord(message) || (message.role !== "user" && message.role !== "assistant")) {
      return `Value at 'messages.${
        i + 1
      }.member.role' failed to satisfy constraint: Member must satisfy enum value set: [user, assistant]`
    }
    if (i === 0 && message.role !== "user") {
      return "A conversation must start with a user message. Try again with a conversation that starts with a user message."
    }
    if (message.role === previous) {
      return "A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again."
    }
    previous = message.role
    if (!Array.isArray(message.content) || message.content.length === 0) {
      return `The content field in the Message object at messages.${i} is empty. Add a ContentBlock object to the content field and try again.`
    }
    for (let j = 0; j < message.content.length; j++) {
      const block = message.content[j] as Block
      if (!isRecord(block) || Object.keys(block).length !== 1) {
        return `The ContentBlock object at messages.${i}.content.${j} must set one of the following keys: text, image, toolUse, toolResult, document, video, cachePoint, reasoningContent.`
      }
      if (typeof block.text === "string" && block.text.trim().length === 0) {
        return `The text field in the ContentBlock object at messages.${i}.content.${j} is blank. Add text to the text field, and try again.`
      }
      if ("toolUse" in block || "toolResult" in block) toolBlocks = true
      if (("image" in block || "document" in block) && message.role !== "user") {
        return `The ContentBlock object at messages.${i}.content.${j} can only be in a user message.`
      }
    }
  }
  if (toolBlocks && !isRecord(body.toolConfig)) {
    return "The toolConfig field must be defined when using toolUse and toolResult content blocks."
  }
  const inference = body.inferenceConfig
  const maxTokens = isRecord(inference) ? inference.maxTokens : undefined
  if (maxTokens !== undefined && (typeof maxTokens !== "number" || maxTokens < 1)) {
    return "The maximum tokens you requested exceeds the model limit or is below 1. Try again with a maximum tokens value between 1 and the model limit."
  }
  const extra = body.additionalModelRequestFields
  const thinking = isRecord(extra) && isRecord(extra.thinking) ? extra.thinking : undefined
  if (thinking?.type === "enabled") {
    const budget = thinking.budget_tokens
    if (typeof budget !== "number" || budget < 1024) {
      return "The model returned the following errors: thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
    }
    if (typeof maxTokens === "number" && maxTokens <= budget) {
      return "The model returned the following errors: `max_tokens` must be greater than `thinking.budget_tokens`."
    }
  }
  return undefined
}

const textOf = (content: ReadonlyArray<unknown>): string => {
  let text = ""
  for (const block of content) if (isRecord(block) && typeof block.text === "string") text += block.text
  return text
}

const conversationOf = (body: Record<string, unknown>, model: string): Conversation => {
  const messages = body.messages as ReadonlyArray<Record<string, unknown>>
  let chars = Array.isArray(body.system) ? textOf(body.system).length : 0
  let lastUserText = ""
  const names = new Map<string, string>()
  for (const message of messages) {
    const content = message.content as ReadonlyArray<Block>
    const text = textOf(content)
    chars += text.length
    for (const block of content) {
      if (isRecord(block.toolUse)) {
        const name = String(block.toolUse.name ?? "")
        names.set(String(block.toolUse.toolUseId), name)
        chars += name.length + JSON.stringify(block.toolUse.input ?? {}).length
      } else if (isRecord(block.toolResult)) chars += JSON.stringify(block.toolResult.content ?? []).length
    }
    if (message.role === "user" && text !== "") lastUserText = text
  }
  let lastToolResult: ToolResult | undefined
  const last = messages[messages.length - 1]!
  for (const block of last.content as ReadonlyArray<Block>) {
    if (isRecord(block.toolResult)) {
      lastToolResult = {
        name: names.get(String(block.toolResult.toolUseId)) ?? "tool",
        text: textOf(Array.isArray(block.toolResult.content) ? block.toolResult.content : [])
      }
    }
  }
  const tools: Array<ToolSpec> = []
  const config = body.toolConfig
  if (isRecord(config) && Array.isArray(config.tools)) {
    for (const tool of config.tools) {
      if (isRecord(tool) && isRecord(tool.toolSpec) && typeof tool.toolSpec.name === "string") {
        const schema = isRecord(tool.toolSpec.inputSchema) ? tool.toolSpec.inputSchema.json : undefined
        tools.push({ name: tool.toolSpec.name, schema })
      }
    }
  }
  return { model, promptChars: chars, lastUserText, tools, lastToolResult }
}

const thinkingOf = (body: Record<string, unknown>, conversation: Conversation): string | undefined => {
  const extra = body.additionalModelRequestFields
  return isRecord(extra) && isRecord(extra.thinking) && extra.thinking.type === "enabled"
    ? `Thinking about: ${conversation.lastUserText.slice(0, 80)}`
    : undefined
}

const usageOf = (input: number, output: number) => ({
  inputTokens: input,
  outputTokens: output,
  totalTokens: input + output
})

/** Bedrock's random padding of stream events (its length hides the payload's). */
const pad = (seq: number, i: number): string =>
  "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ".slice(0, 1 + ((seq * 7 + i * 3) % 30))

export interface BedrockCall {
  readonly seq: number
  readonly method: string
  readonly rawUrl: string
  readonly path: string
  readonly headers: IncomingHttpHeaders
  readonly body: Buffer
  readonly scenario: Scenario
  readonly now: number
}

/** Serves one Bedrock request. */
export const handleBedrock = async (
  res: ServerResponse,
  call: BedrockCall,
  options: BedrockOptions
): Promise<void> => {
  const headers: OutgoingHttpHeaders = { "x-amzn-requestid": randomUUID() }
  const verdict = verifyRequest(call.method, call.rawUrl, call.headers, call.body, {
    region: options.region ?? "us-east-1",
    service: "bedrock",
    credentials: options.credentials ?? [TEST_CREDENTIALS],
    apiKeys: options.apiKeys ?? [TEST_API_KEY],
    now: call.now
  })
  if (!verdict.ok) return sendError(res, verdict.refusal.status, verdict.refusal.type, verdict.refusal.body, headers)

  if (call.path === "/foundation-models") {
    if (call.method !== "GET") {
      return sendError(res, 404, "UnknownOperationException", { message: "Unknown operation" }, headers)
    }
    if (options.listDenied?.includes(verdict.principal) === true) {
      return sendError(res, 403, "AccessDeniedException", {
        message:
          `User: arn:aws:iam::000000000000:user/gateway is not authorized to perform: bedrock:ListFoundationModels because no identity-based policy allows the bedrock:ListFoundationModels action`
      }, headers)
    }
    const models = options.models ?? DEFAULT_BEDROCK_MODELS
    return sendJson(
      res,
      200,
      JSON.stringify({
        modelSummaries: models.map((modelId) => ({
          modelArn: `arn:aws:bedrock:${options.region ?? "us-east-1"}::foundation-model/${modelId}`,
          modelId,
          modelName: modelId,
          providerName: modelId.split(".")[0],
          inputModalities: ["TEXT"],
          outputModalities: [modelId.includes("embed") ? "EMBEDDING" : "TEXT"],
          responseStreamingSupported: !modelId.includes("embed"),
          customizationsSupported: [],
          inferenceTypesSupported: ["ON_DEMAND"],
          modelLifecycle: { status: "ACTIVE" }
        }))
      }),
      headers
    )
  }

  const match = /^\/model\/([^/]+)\/(converse|converse-stream|count-tokens|invoke)$/.exec(call.path)
  if (match === null || call.method !== "POST") {
    return sendError(res, 404, "UnknownOperationException", { message: "Unknown operation" }, headers)
  }
  let modelId: string
  try {
    modelId = decodeURIComponent(match[1]!)
  } catch {
    return validation(res, "The provided model identifier is invalid.", headers)
  }
  const stream = match[2] === "converse-stream"
  const scenario = call.scenario
  if (match[2] === "count-tokens") return countTokens(res, modelId, call.body, headers)
  if (match[2] === "invoke" && scenario.failStatus === undefined) {
    return invoke(res, modelId, call.body, headers, call.scenario.usage)
  }
  if (scenario.failStatus !== undefined) {
    const [type, message] = FAILURES[scenario.failStatus] ??
      [
        scenario.failStatus >= 500 ? "InternalServerException" : "ValidationException",
        `fake-upstream: simulated HTTP ${scenario.failStatus}`
      ]
    return sendError(res, scenario.failStatus, type, { message }, {
      ...headers,
      ...(scenario.failStatus === 429 ? { "retry-after": "1" } : {})
    })
  }
  let body: unknown
  try {
    body = JSON.parse(call.body.toString("utf8"))
  } catch {
    return sendError(res, 400, "SerializationException", {
      Message: "Unexpected character: was expecting a JSON value"
    }, headers)
  }
  const problem = check(body)
  if (problem !== undefined) return validation(res, problem, headers)
  const json = body as Record<string, unknown>
  const conversation = conversationOf(json, modelId)
  const answer = planAnswer(conversation, scenario)
  const thinking = thinkingOf(json, conversation)
  const [inputTokens, outputTokens] = reportedUsage(
    scenario,
    estimateTokens(conversation.promptChars),
    answer.outputTokens + (thinking === undefined ? 0 : 1)
  )
  if (!stream) {
    if (scenario.cutAfter !== undefined) return cutConnection(res, scenario.cutMode)
    const content: Array<unknown> = []
    if (thinking !== undefined) {
      content.push({ reasoningContent: { reasoningText: { text: thinking, signature: `fake-signature-${call.seq}` } } })
    }
    content.push(
      answer._tag === "tool"
        ? { toolUse: { toolUseId: `tooluse_fake${call.seq}`, name: answer.name, input: answer.args } }
        : { text: answerText(answer) }
    )
    return sendJson(
      res,
      200,
      JSON.stringify({
        output: { message: { role: "assistant", content } },
        stopReason: stopReason(answer),
        ...(scenario.usage ? { usage: usageOf(inputTokens, outputTokens) } : {}),
        metrics: { latencyMs: 42 }
      }),
      headers
    )
  }
  return sendEventStream(res, call, answer, thinking, [inputTokens, outputTokens], headers)
}

/** `CountTokens`: `{"input": {"converse": {...}}}` -> `{"inputTokens"}`, for bare foundation-model ids only. */
const countTokens = (res: ServerResponse, modelId: string, raw: Buffer, headers: OutgoingHttpHeaders): void => {
  if (/^(us|eu|apac|global|jp|au)\./.test(modelId) || modelId.startsWith("arn:")) {
    return validation(res, "The provided model doesn't support counting tokens.", headers)
  }
  let body: unknown
  try {
    body = JSON.parse(raw.toString("utf8"))
  } catch {
    return sendError(res, 400, "SerializationException", {
      Message: "Unexpected character: was expecting a JSON value"
    }, headers)
  }
  const converse = isRecord(body) && isRecord(body.input) ? body.input.converse : undefined
  if (!isRecord(converse)) {
    return validation(
      res,
      "1 validation error detected: Value at 'input' failed to satisfy constraint: Member must not be null",
      headers
    )
  }
  const problem = check(converse)
  if (problem !== undefined) return validation(res, problem, headers)
  const conversation = conversationOf(converse, modelId)
  sendJson(res, 200, JSON.stringify({ inputTokens: estimateTokens(conversation.promptChars) }), headers)
}

/** Bedrock's words for a body its model's JSON schema refuses. */
const malformed = (res: ServerResponse, detail: string, headers: OutgoingHttpHeaders): void =>
  validation(res, `Malformed input request: ${detail}, please reformat your input and try again.`, headers)

const COHERE_INPUT_TYPES = ["search_document", "search_query", "classification", "clustering"]

/**
 * `InvokeModel` for the embedding models, each body checked against its
 * family's schema as Bedrock checks it: Titan Text Embeddings v2 (`{"inputText",
 * "dimensions", "normalize"}` -> `{"embedding", "inputTextTokenCount"}`) and
 * Cohere Embed v3 (`{"texts", "input_type", "truncate", "embedding_types"}` ->
 * `{"embeddings", "id", "response_type", "texts"}`). Every answer says its input
 * tokens in `X-Amzn-Bedrock-Input-Token-Count`, as Bedrock's do (and Titan's
 * body in `inputTextTokenCount`), unless the scenario omits usage. Other models
 * are chat models here: `InvokeModel` with an embeddings body is refused.
 */
const invoke = (
  res: ServerResponse,
  modelId: string,
  raw: Buffer,
  headers: OutgoingHttpHeaders,
  usage: boolean
): void => {
  let body: unknown
  try {
    body = JSON.parse(raw.toString("utf8"))
  } catch {
    return sendError(res, 400, "SerializationException", {
      Message: "Unexpected character: was expecting a JSON value"
    }, headers)
  }
  if (!isRecord(body)) return malformed(res, "#: expected type: JSONObject", headers)
  const answer = (json: Record<string, unknown>, tokens: number) => {
    if (!usage) delete json.inputTextTokenCount
    return sendJson(res, 200, JSON.stringify(json), {
      ...headers,
      ...(usage ? { "x-amzn-bedrock-input-token-count": String(tokens) } : {}),
      "x-amzn-bedrock-invocation-latency": "42"
    })
  }
  if (modelId.includes("amazon.titan-embed-text-v2")) {
    for (const key of Object.keys(body)) {
      if (!["inputText", "dimensions", "normalize", "embeddingTypes"].includes(key)) {
        return malformed(res, `#: extraneous key [${key}] is not permitted`, headers)
      }
    }
    if (typeof body.inputText !== "string") {
      return malformed(
        res,
        body.inputText === undefined ? "#: required key [inputText] not found" : "#/inputText: expected type: String",
        headers
      )
    }
    if (body.inputText.length === 0) return malformed(res, "#/inputText: expected minLength: 1, actual: 0", headers)
    const dimensions = body.dimensions ?? 1024
    if (dimensions !== 256 && dimensions !== 512 && dimensions !== 1024) {
      return malformed(res, `#/dimensions: ${JSON.stringify(dimensions)} is not a valid enum value`, headers)
    }
    if (body.normalize !== undefined && typeof body.normalize !== "boolean") {
      return malformed(res, "#/normalize: expected type: Boolean", headers)
    }
    const tokens = estimateTokens(body.inputText.length)
    return answer({ embedding: embedding(body.inputText, dimensions), inputTextTokenCount: tokens }, tokens)
  }
  if (modelId.includes("cohere.embed-")) {
    for (const key of Object.keys(body)) {
      if (!["texts", "input_type", "truncate", "embedding_types", "images"].includes(key)) {
        return malformed(res, `#: extraneous key [${key}] is not permitted`, headers)
      }
    }
    if (!Array.isArray(body.texts)) return malformed(res, "#: required key [texts] not found", headers)
    if (body.texts.length > 96) {
      return malformed(res, `#/texts: expected maximum item count: 96, found: ${body.texts.length}`, headers)
    }
    const bad = body.texts.findIndex((t) => typeof t !== "string" || t.length > 2048)
    if (bad >= 0) {
      return malformed(
        res,
        typeof body.texts[bad] === "string"
          ? `#/texts/${bad}: expected maxLength: 2048, actual: ${(body.texts[bad] as string).length}`
          : `#/texts/${bad}: expected type: String`,
        headers
      )
    }
    if (body.input_type === undefined) return malformed(res, "#: required key [input_type] not found", headers)
    if (!COHERE_INPUT_TYPES.includes(body.input_type as string)) {
      return malformed(res, `#/input_type: ${JSON.stringify(body.input_type)} is not a valid enum value`, headers)
    }
    const texts = body.texts as ReadonlyArray<string>
    const vectors = texts.map((text) => embedding(text, 1024))
    const tokens = texts.reduce((n, text) => n + estimateTokens(text.length), 0)
    const byType = Array.isArray(body.embedding_types)
    return answer({
      id: randomUUID(),
      texts,
      ...(byType
        ? { embeddings: { float: vectors }, response_type: "embeddings_by_type" }
        : { embeddings: vectors, response_type: "embeddings_floats" })
    }, tokens)
  }
  return validation(
    res,
    modelId.includes("embed")
      ? "The provided model identifier is invalid."
      : `Malformed input request: #: required key [messages] not found, please reformat your input and try again.`,
    headers
  )
}

const stopReason = (answer: Answer): string => answer._tag === "tool" ? "tool_use" : "end_turn"

const write = (res: ServerResponse, bytes: Buffer): Promise<void> | undefined =>
  res.write(bytes)
    ? undefined
    : new Promise<void>((resolve) => {
      const done = () => {
        res.off("drain", done)
        res.off("close", done)
        resolve()
      }
      res.once("drain", done)
      res.once("close", done)
    })

const sendEventStream = async (
  res: ServerResponse,
  call: BedrockCall,
  answer: Answer,
  thinking: string | undefined,
  [inputTokens, outputTokens]: readonly [number, number],
  headers: OutgoingHttpHeaders
): Promise<void> => {
  const scenario = call.scenario
  res.writeHead(200, { ...headers, "content-type": "application/vnd.amazon.eventstream" })
  const frames: Array<() => Buffer> = [() => eventFrame("messageStart", { p: pad(call.seq, 0), role: "assistant" })]
  let index = 0
  if (thinking !== undefined) {
    const at = index++
    frames.push(
      () => eventFrame("contentBlockDelta", { contentBlockIndex: at, delta: { reasoningContent: { text: thinking } } }),
      () =>
        eventFrame("contentBlockDelta", {
          contentBlockIndex: at,
          delta: { reasoningContent: { signature: `fake-signature-${call.seq}` } }
        }),
      () => eventFrame("contentBlockStop", { contentBlockIndex: at })
    )
  }
  const at = index++
  if (answer._tag === "tool") {
    frames.push(() =>
      eventFrame("contentBlockStart", {
        contentBlockIndex: at,
        start: { toolUse: { toolUseId: `tooluse_fake${call.seq}`, name: answer.name } }
      })
    )
    answer.fragments.forEach((fragment, i) =>
      frames.push(() =>
        eventFrame("contentBlockDelta", {
          contentBlockIndex: at,
          delta: { toolUse: { input: fragment } },
          p: pad(call.seq, i)
        })
      )
    )
  } else {
    for (let i = 0; i < answer.count; i++) {
      frames.push(() =>
        eventFrame("contentBlockDelta", {
          contentBlockIndex: at,
          delta: { text: answer.chunk(i) },
          p: pad(call.seq, i)
        })
      )
    }
  }
  frames.push(
    () => eventFrame("contentBlockStop", { contentBlockIndex: at }),
    () => eventFrame("messageStop", { stopReason: stopReason(answer) })
  )
  if (scenario.usage) {
    frames.push(() =>
      eventFrame("metadata", {
        usage: usageOf(inputTokens, outputTokens),
        metrics: { latencyMs: 42 },
        p: pad(call.seq, 9)
      })
    )
  }
  // `x-fake-stream-exception: <type>`: the stream fails after its first frames with an in-stream exception.
  const exception = call.headers["x-fake-stream-exception"]
  if (typeof exception === "string" && exception.length > 0) {
    frames.splice(
      Math.min(frames.length, 2),
      frames.length,
      () => exceptionFrame(exception, `fake-upstream: simulated ${exception}`)
    )
  }
  for (let i = 0; i < frames.length; i++) {
    if (res.destroyed) return
    // `line-B`: after its first text, one event of B bytes, sent as it is made (the stream's biggest).
    if (scenario.lineBytes !== undefined && i === 2) {
      for (const piece of hugeEventFrame(scenario.lineBytes)) {
        if (res.destroyed) return
        const pending = write(res, piece)
        if (pending !== undefined) await pending
      }
    }
    if (scenario.cutAfter !== undefined && i === scenario.cutAfter + 1) return cutConnection(res, scenario.cutMode)
    if (scenario.stallAfter !== undefined && i === scenario.stallAfter + 1) return
    const pending = write(res, frames[i]!())
    if (pending !== undefined) await pending
    if (scenario.chunkIntervalMs > 0 && i < frames.length - 1) await sleep(scenario.chunkIntervalMs)
  }
  res.end()
}
