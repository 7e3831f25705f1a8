/**
 * Gemini (Generative Language API v1beta) dialect: `:generateContent`,
 * `:streamGenerateContent` (SSE with `alt=sse`, else one JSON array),
 * `:countTokens`, `:embedContent`, `:batchEmbedContents` and the model list.
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
import { type ErrorResponse, geminiErrorBody } from "./Errors.ts"
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

/** proto3-JSON parsers accept both spellings; so do we. */
const field = (o: Record<string, unknown>, camel: string, snake: string): unknown => o[camel] ?? o[snake]

const partsOf = (content: unknown): ReadonlyArray<unknown> =>
  isRecord(content) && Array.isArray(content["parts"]) ? content["parts"] : []

const responseText = (response: unknown): string => {
  if (isRecord(response) && typeof response["output"] === "string" && Object.keys(response).length === 1) {
    return response["output"]
  }
  return typeof response === "string" ? response : JSON.stringify(response ?? null)
}

export const geminiConversation = (body: Record<string, unknown>, model: string): Conversation => {
  // countTokens may wrap the request: {generateContentRequest: {contents, systemInstruction, tools}}
  const request = isRecord(body["generateContentRequest"]) ? body["generateContentRequest"] : body
  const contents = Array.isArray(request["contents"]) ? request["contents"] : []
  let chars = contentText(partsOf(field(request, "systemInstruction", "system_instruction"))).length
  let lastUserText = ""
  for (const content of contents) {
    if (!isRecord(content)) continue
    let text = ""
    for (const part of partsOf(content)) {
      if (!isRecord(part)) continue
      if (typeof part["text"] === "string") text += part["text"]
      const call = field(part, "functionCall", "function_call")
      if (isRecord(call)) chars += String(call["name"] ?? "").length + JSON.stringify(call["args"] ?? {}).length
      const response = field(part, "functionResponse", "function_response")
      if (isRecord(response)) chars += responseText(response["response"]).length
    }
    chars += text.length
    if ((content["role"] ?? "user") === "user" && text !== "") lastUserText = text
  }
  let lastToolResult: ToolResult | undefined
  const last: unknown = contents[contents.length - 1]
  for (const part of partsOf(last)) {
    const response = isRecord(part) ? field(part, "functionResponse", "function_response") : undefined
    if (isRecord(response)) {
      lastToolResult = {
        name: typeof response["name"] === "string" ? response["name"] : "tool",
        text: responseText(response["response"])
      }
    }
  }
  const tools: Array<ToolSpec> = []
  if (Array.isArray(request["tools"])) {
    for (const tool of request["tools"]) {
      const declarations = isRecord(tool) ? field(tool, "functionDeclarations", "function_declarations") : undefined
      if (!Array.isArray(declarations)) continue
      for (const d of declarations) {
        if (!isRecord(d) || typeof d["name"] !== "string") continue
        tools.push({
          name: d["name"],
          schema: d["parameters"] ?? field(d, "parametersJsonSchema", "parameters_json_schema")
        })
      }
    }
  }
  return { model, promptChars: chars, lastUserText, tools, lastToolResult }
}

/** Gemini counts thoughts apart from the candidates: a `thinking` model thinks half as many tokens again (rounded up). */
const usageMetadata = (prompt: number, candidates: number, thinking = false) => {
  const thoughts = thinking ? Math.ceil(candidates / 2) : 0
  return {
    promptTokenCount: prompt,
    candidatesTokenCount: candidates,
    ...(thinking ? { thoughtsTokenCount: thoughts } : {}),
    totalTokenCount: prompt + candidates + thoughts,
    promptTokensDetails: [{ modality: "TEXT", tokenCount: prompt }]
  }
}

const responseId = (seq: number): string => `fake-${seq}`

// ------------------------------------------------------- thought signatures

/** Gemini 3 models sign their function calls and require the signature back. */
const SIGNING_MODEL = /^gemini-3/i

/** The sentinel Google accepts in place of a signature it cannot have (gemini-cli sends it too). */
export const SKIP_SIGNATURE = "skip_thought_signature_validator"

const SIGNATURE_PREFIX = "fake-thought:"

/** The opaque `thoughtSignature` the fake gives a Gemini 3 function call (base64, like Google's). */
export const thoughtSignature = (seq: number, name: string): string =>
  Buffer.from(`${SIGNATURE_PREFIX}${seq}:${name}`, "utf8").toString("base64")

const isFakeSignature = (signature: string): boolean =>
  /^[A-Za-z0-9+/]+={0,2}$/.test(signature) &&
  Buffer.from(signature, "base64").toString("utf8").startsWith(SIGNATURE_PREFIX)

/**
 * What Google answers a Gemini 3 model's request with when a model turn's
 * first function call lacks its thought signature (or carries one Google never
 * issued): 400 INVALID_ARGUMENT, with Google's message.
 */
export const signatureProblem = (body: Record<string, unknown>, model: string): ErrorResponse | undefined => {
  if (!SIGNING_MODEL.test(model)) return undefined
  const contents = Array.isArray(body["contents"]) ? body["contents"] : []
  for (let turn = 0; turn < contents.length; turn++) {
    const content: unknown = contents[turn]
    if (!isRecord(content) || content["role"] !== "model") continue
    const first = partsOf(content).findIndex((part) =>
      isRecord(part) && isRecord(field(part, "functionCall", "function_call"))
    )
    if (first < 0) continue
    const part = partsOf(content)[first] as Record<string, unknown>
    const signature = field(part, "thoughtSignature", "thought_signature")
    const call = field(part, "functionCall", "function_call") as Record<string, unknown>
    if (typeof signature !== "string") {
      return {
        status: 400,
        body: geminiErrorBody(
          400,
          "Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, " +
            `and missing thought_signature may lead to degraded model performance. Additional data, function call \`default_api:${
              String(call["name"])
            }\` , position ${
              first + 1
            }. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.`
        )
      }
    }
    if (signature !== SKIP_SIGNATURE && !isFakeSignature(signature)) {
      return { status: 400, body: geminiErrorBody(400, "Corrupted thought signature.") }
    }
  }
  return undefined
}

/** A file of the Files API named by a `fileData` URI (`.../v1beta/files/<id>`). */
const FILE_URI = /\/files\/([^/?#]+)/

/**
 * What Google answers a request whose `fileData` names a Files API file the
 * caller's project does not own: 403 PERMISSION_DENIED about that file. The
 * fake owns no files, so every such reference is another project's: a 403
 * about the request's own content, not about the key.
 */
export const fileProblem = (body: Record<string, unknown>): ErrorResponse | undefined => {
  const contents = Array.isArray(body["contents"]) ? body["contents"] : []
  for (const content of contents) {
    for (const part of partsOf(content)) {
      const data = isRecord(part) ? field(part, "fileData", "file_data") : undefined
      const uri = isRecord(data) ? field(data, "fileUri", "file_uri") : undefined
      const file = typeof uri === "string" ? FILE_URI.exec(uri) : null
      if (file !== null) {
        return {
          status: 403,
          body: geminiErrorBody(403, `You do not have permission to access the File ${file[1]} or it may not exist.`)
        }
      }
    }
  }
  return undefined
}

const parts = (answer: Answer, text: string, ctx: CallContext): Array<unknown> =>
  answer._tag === "tool"
    ? [
      SIGNING_MODEL.test(ctx.model)
        ? {
          functionCall: { name: answer.name, args: answer.args },
          thoughtSignature: thoughtSignature(ctx.seq, answer.name)
        }
        : { functionCall: { name: answer.name, args: answer.args } }
    ]
    : [{ text }]

export const geminiGenerate = (
  res: ServerResponse,
  body: Record<string, unknown>,
  ctx: CallContext
): Promise<void> | void => {
  const problem = signatureProblem(body, ctx.model) ?? fileProblem(body)
  if (problem !== undefined) return sendJson(res, problem.status, problem.body, ctx.headers)
  const conversation = geminiConversation(body, ctx.model)
  const answer = planAnswer(conversation, ctx.scenario)
  const [promptTokens, completionTokens] = reportedUsage(
    ctx.scenario,
    estimateTokens(conversation.promptChars),
    answer.outputTokens
  )
  const lazy = answer._tag === "text" && answer.lazy
  const response = {
    candidates: [{
      content: {
        parts: parts(answer, answer._tag === "text" ? (lazy ? SENTINEL : answerText(answer)) : "", ctx),
        role: "model"
      },
      finishReason: "STOP",
      index: 0
    }],
    ...(ctx.scenario.usage
      ? { usageMetadata: usageMetadata(promptTokens, completionTokens, ctx.scenario.thinking) }
      : {}),
    modelVersion: ctx.model,
    responseId: responseId(ctx.seq)
  }
  // Google pretty-prints non-stream answers (two-space indentation); so does the fake, so a relay that re-encodes shows.
  const json = JSON.stringify(response, null, 2)
  if (answer._tag === "text" && lazy) {
    const [prefix, suffix] = splitAtSentinel(json)
    return sendLazyJson(res, ctx.headers, prefix, answer, suffix)
  }
  sendJson(res, 200, json, ctx.headers)
}

export const geminiStream = (
  res: ServerResponse,
  body: Record<string, unknown>,
  ctx: CallContext,
  sse: boolean
): Promise<void> => {
  const problem = signatureProblem(body, ctx.model) ?? fileProblem(body)
  if (problem !== undefined) {
    sendJson(res, problem.status, problem.body, ctx.headers)
    return Promise.resolve()
  }
  const conversation = geminiConversation(body, ctx.model)
  const answer = planAnswer(conversation, ctx.scenario)
  const [promptTokens, completionTokens] = reportedUsage(
    ctx.scenario,
    estimateTokens(conversation.promptChars),
    answer.outputTokens
  )
  const trailer = `,"modelVersion":${JSON.stringify(ctx.model)},"responseId":"${responseId(ctx.seq)}"}`
  // Like Google: intermediate chunks carry the prompt count only, the last one the full usage.
  const partialUsage = ctx.scenario.usage
    ? `,"usageMetadata":{"promptTokenCount":${promptTokens},"totalTokenCount":${promptTokens}}`
    : ""
  const finalUsage = ctx.scenario.usage
    ? `,"usageMetadata":${JSON.stringify(usageMetadata(promptTokens, completionTokens, ctx.scenario.thinking))}`
    : ""
  const chunkJson = (partsJson: string, last: boolean): string =>
    `{"candidates":[{"content":{"parts":${partsJson},"role":"model"},${
      last ? `"finishReason":"STOP",` : ""
    }"index":0}]${last ? finalUsage : partialUsage}${trailer}`
  const count = answer._tag === "tool" ? 1 : answer.count
  const middle = memoFrame((chunk) => chunkJson(`[{"text":${JSON.stringify(chunk)}}]`, false))
  const json = (i: number): string => {
    const last = i === count - 1
    if (answer._tag === "tool") return chunkJson(JSON.stringify(parts(answer, "", ctx)), true)
    return last ? chunkJson(`[{"text":${JSON.stringify(answer.chunk(i))}}]`, true) : middle(answer.chunk(i))
  }
  const plan: StreamPlan = sse
    ? {
      contentType: "text/event-stream",
      headers: ctx.headers,
      head: "",
      count,
      // Google's framing: one-line JSON, CRLF CRLF; no `event:` lines, no comments.
      frame: (i) => `data: ${json(i)}\r\n\r\n`,
      tail: () => ""
    }
    : {
      contentType: "application/json",
      headers: ctx.headers,
      head: "",
      count,
      frame: (i) => `${i === 0 ? "[" : ","}${json(i)}\n`,
      tail: () => "]"
    }
  return sendStream(res, plan, ctx.scenario)
}

export const geminiCountTokens = (res: ServerResponse, body: Record<string, unknown>, ctx: CallContext): void => {
  const tokens = estimateTokens(geminiConversation(body, ctx.model).promptChars)
  sendJson(
    res,
    200,
    JSON.stringify({ totalTokens: tokens, promptTokensDetails: [{ modality: "TEXT", tokenCount: tokens }] }),
    ctx.headers
  )
}

export const DEFAULT_GEMINI_EMBEDDING_DIMENSIONS = 768

const embedValues = (request: Record<string, unknown>): { values: Array<number> } => {
  const text = contentText(partsOf(request["content"]))
  const dims = field(request, "outputDimensionality", "output_dimensionality")
  const n = typeof dims === "number" && dims >= 1
    ? Math.min(Math.floor(dims), 8192)
    : DEFAULT_GEMINI_EMBEDDING_DIMENSIONS
  return { values: embedding(text, n) }
}

export const geminiEmbed = (res: ServerResponse, body: Record<string, unknown>, ctx: CallContext): void => {
  sendJson(res, 200, JSON.stringify({ embedding: embedValues(body) }), ctx.headers)
}

export const geminiBatchEmbed = (res: ServerResponse, body: Record<string, unknown>, ctx: CallContext): void => {
  const requests = Array.isArray(body["requests"]) ? body["requests"] : []
  const embeddings = requests.map((r) => embedValues(isRecord(r) ? r : {}))
  sendJson(res, 200, JSON.stringify({ embeddings }), ctx.headers)
}

// ---------------------------------------------------------------- models

export const geminiModel = (id: string) => {
  const embed = id.includes("embedding")
  return {
    name: `models/${id}`,
    baseModelId: id,
    version: "001",
    displayName: id,
    description: `fake-upstream model ${id}`,
    inputTokenLimit: embed ? 2048 : 1048576,
    outputTokenLimit: embed ? 1 : 65536,
    supportedGenerationMethods: embed
      ? ["embedContent", "batchEmbedContents"]
      : ["generateContent", "streamGenerateContent", "countTokens"],
    ...(embed ? {} : { temperature: 1, maxTemperature: 2, topP: 0.95, topK: 64 })
  }
}

/**
 * One page of the model list, as Google pages it: `pageSize` models (default
 * 50, at most 1000) from `pageToken` (an opaque token from the page before),
 * and `nextPageToken` while more follow.
 */
export const geminiModelsPage = (ids: ReadonlyArray<string>, query: Readonly<Record<string, string>>): string => {
  const size = Math.min(1000, Math.max(1, Number.parseInt(query["pageSize"] ?? "", 10) || 50))
  const start = query["pageToken"] === undefined
    ? 0
    : Math.max(0, Number.parseInt(Buffer.from(query["pageToken"], "base64url").toString(), 10) || 0)
  const end = start + size
  return JSON.stringify({
    models: ids.slice(start, end).map(geminiModel),
    ...(end < ids.length ? { nextPageToken: Buffer.from(String(end)).toString("base64url") } : {})
  })
}
