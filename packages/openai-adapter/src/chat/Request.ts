/**
 * Chat completions requests: OpenAI wire body <-> canonical `ChatRequest`.
 *
 * - `decodeRequest` reads a client's body (the OpenAI-compatible surface). Bad
 *   input fails with an `InvalidRequest` whose message and `param` name the
 *   field (`'model' is required`, `messages[2].content[0].image_url`); the
 *   legacy function-calling API and OpenAI-stored files fail with an
 *   `UnsupportedFeature`.
 * - `encodeRequest` writes the body sent to an OpenAI (or OpenAI-compatible)
 *   upstream.
 *
 * Mapping notes (also the contract the round-trip law checks):
 *
 * - `system` and `developer` messages go to `ChatRequest.system`, one entry per
 *   text (a string content is one entry, an array content one entry per part).
 *   System messages that are not at the start of the conversation are folded
 *   into `system` too, in order: the canonical model has no mid-conversation
 *   instructions. `encodeRequest` writes each entry as a leading `system` message.
 * - `image_url` with a base64 `data:` URL becomes an image with `mediaType` and
 *   `data`; any other URL stays a `url`. `input_audio` becomes a file part with
 *   media type `audio/wav` or `audio/mpeg`. `file.file_data` (a `data:` URL)
 *   becomes a file part.
 * - Assistant history: `reasoning_content` becomes a leading thinking part,
 *   `content` text parts (refusals become text), `tool_calls` tool-call parts
 *   whose `arguments` stay JSON text, unparsed. Each `tool` message becomes a
 *   canonical `tool` message with one `tool_result` part. Tool-call ids written
 *   by `Identifiers.signCallId` (a Gemini model's call with its thought
 *   signature) give back the original id and the signature.
 * - `max_completion_tokens` wins over `max_tokens`; `n` is `candidateCount`;
 *   `stop` is always a list; `reasoning_effort` is `reasoning.effort`;
 *   `stream_options.include_usage` is `includeUsage`.
 * - Refused with `UnsupportedFeature` naming the field, because no other
 *   dialect's answer can carry what they ask for: `logprobs: true` and
 *   `top_logprobs`, a non-empty `logit_bias`, `modalities` other than
 *   `["text"]`, `audio`, `prediction` and `web_search_options`.
 * - Ignored (OpenAI-only hints and bookkeeping with no effect on the answer's
 *   content): `metadata`, `store`, `service_tier`, `user` (kept as `user`),
 *   `safety_identifier`, `prompt_cache_key`, `verbosity`,
 *   `stream_options.include_obfuscation`, tool `strict` and json-schema
 *   `description`; `parallel_tool_calls` is kept in the canonical request, and
 *   targets without such a switch (Gemini) leave it out.
 *
 * @since 0.1.0
 */
import { type Canonical, GatewayError, Issues } from "@modelgate/core"
import { Effect, Predicate, Result, Schema } from "effect"
import type { Mutable } from "effect/Types"
import { encodeToolName, isValidToolName, MAX_NAME_LENGTH, unsignCallId } from "../Identifiers.ts"
import { base64DataUrl, parseBase64DataUrl } from "../internal/dataUrl.ts"
import * as ChatCompletions from "./ChatCompletions.ts"

/** The errors a client's request body can fail with. @category models */
export type RequestError = GatewayError.InvalidRequest | GatewayError.UnsupportedFeature

const decodeWire = Schema.decodeUnknownResult(ChatCompletions.ChatCompletionRequest)

/** Refusals that need the raw body (the schema would only say "unexpected value"). */
const checkUnsupported = (
  body: { readonly [x: PropertyKey]: unknown }
): GatewayError.UnsupportedFeature | undefined => {
  if (body.functions !== undefined && body.functions !== null) {
    return Issues.unsupported(
      "functions",
      "The legacy 'functions' parameter is not supported. Declare functions in 'tools' as " +
        "{\"type\":\"function\",\"function\":{\"name\",\"description\",\"parameters\"}}."
    )
  }
  if (body.function_call !== undefined && body.function_call !== null) {
    return Issues.unsupported(
      "function_call",
      "The legacy 'function_call' parameter is not supported. Use 'tool_choice' instead."
    )
  }
  const messages = body.messages
  if (Array.isArray(messages)) {
    for (let i = 0; i < messages.length; i++) {
      const message: unknown = messages[i]
      if (Predicate.isObject(message) && message.role === "function") {
        return Issues.unsupported(
          `messages[${i}].role`,
          `Messages with role 'function' (the legacy function-calling API) are not supported (messages[${i}]). ` +
            "Send tool results as {\"role\":\"tool\",\"tool_call_id\",\"content\"}."
        )
      }
    }
  }
  const tools = body.tools
  if (Array.isArray(tools)) {
    for (let i = 0; i < tools.length; i++) {
      const tool: unknown = tools[i]
      if (Predicate.isObject(tool) && Predicate.isString(tool.type) && tool.type !== "function") {
        return Issues.unsupported(
          `tools[${i}].type`,
          `Tools of type '${tool.type}' are not supported (tools[${i}]); only 'function' tools are.`
        )
      }
    }
  }
  const choice = body.tool_choice
  if (Predicate.isObject(choice) && Predicate.isString(choice.type) && choice.type !== "function") {
    return Issues.unsupported(
      "tool_choice.type",
      `A tool_choice of type '${choice.type}' is not supported; use "auto", "none", "required" or a function.`
    )
  }
  if (body.logprobs === true) {
    return Issues.unsupported(
      "logprobs",
      "'logprobs' cannot be returned for this model: its answers carry no token log probabilities."
    )
  }
  if (body.top_logprobs !== undefined && body.top_logprobs !== null) {
    return Issues.unsupported(
      "top_logprobs",
      "'top_logprobs' cannot be returned for this model: its answers carry no token log probabilities."
    )
  }
  if (Predicate.isObject(body.logit_bias) && Object.keys(body.logit_bias).length > 0) {
    return Issues.unsupported("logit_bias", "'logit_bias' cannot be used with this model: it has no token ids to bias.")
  }
  const modalities = body.modalities
  if (Array.isArray(modalities) && modalities.some((m) => m !== "text")) {
    return Issues.unsupported(
      "modalities",
      "This model can only answer with text: set 'modalities' to [\"text\"] or leave it out."
    )
  }
  for (const field of ["audio", "prediction", "web_search_options"] as const) {
    if (body[field] !== undefined && body[field] !== null) {
      return Issues.unsupported(field, `'${field}' cannot be used with this model; leave it out.`)
    }
  }
  return undefined
}

const textsOf = (content: string | ReadonlyArray<ChatCompletions.TextContentPart>): Array<string> =>
  typeof content === "string" ? [content] : content.map((part) => part.text)

const audioMediaType = (format: ChatCompletions.AudioFormat): string => format === "wav" ? "audio/wav" : "audio/mpeg"

const userPart = (part: ChatCompletions.UserContentPart, at: string): Canonical.Part => {
  switch (part.type) {
    case "text":
      return { type: "text", text: part.text }
    case "image_url": {
      const detail = part.image_url.detail
      const inline = parseBase64DataUrl(part.image_url.url)
      const image: Mutable<Canonical.ImagePart> = inline === undefined
        ? { type: "image", url: part.image_url.url }
        : { type: "image", mediaType: inline.mediaType, data: inline.data }
      if (detail !== undefined && detail !== null) image.detail = detail
      return image
    }
    case "input_audio":
      return { type: "file", mediaType: audioMediaType(part.input_audio.format), data: part.input_audio.data }
    case "file": {
      const file = part.file
      if (file.file_id !== undefined && file.file_id !== null) {
        throw Issues.unsupported(
          `${at}.file.file_id`,
          `Files stored at OpenAI ('file_id', ${at}) cannot be forwarded by the gateway. Send the file inline as 'file_data' (a data: URL).`
        )
      }
      if (file.file_data === undefined || file.file_data === null) {
        throw new GatewayError.InvalidRequest({
          message: `'${at}.file.file_data' is required`,
          param: `${at}.file.file_data`
        })
      }
      const inline = parseBase64DataUrl(file.file_data)
      const out: Mutable<Canonical.FilePart> = inline === undefined
        ? { type: "file", mediaType: "application/octet-stream", data: file.file_data }
        : { type: "file", mediaType: inline.mediaType, data: inline.data }
      if (file.filename !== undefined && file.filename !== null) out.filename = file.filename
      return out
    }
  }
}

const withName = (message: Mutable<Canonical.Message>, name: string | null | undefined): Canonical.Message => {
  if (name !== undefined && name !== null) message.name = name
  return message
}

const toCanonical = (wire: ChatCompletions.ChatCompletionRequest): Canonical.ChatRequest => {
  const system: Array<string> = []
  const messages: Array<Canonical.Message> = []
  for (let i = 0; i < wire.messages.length; i++) {
    const message = wire.messages[i]!
    switch (message.role) {
      case "system":
      case "developer":
        for (const text of textsOf(message.content)) system.push(text)
        break
      case "user": {
        const content: Array<Canonical.Part> = typeof message.content === "string"
          ? [{ type: "text", text: message.content }]
          : message.content.map((part, j) => userPart(part, `messages[${i}].content[${j}]`))
        messages.push(withName({ role: "user", content }, message.name))
        break
      }
      case "assistant": {
        const content: Array<Canonical.Part> = []
        if (Predicate.isString(message.reasoning_content) && message.reasoning_content.length > 0) {
          content.push({ type: "thinking", text: message.reasoning_content })
        }
        if (typeof message.content === "string") {
          if (message.content.length > 0) content.push({ type: "text", text: message.content })
        } else if (message.content !== undefined && message.content !== null) {
          for (const part of message.content) {
            content.push({ type: "text", text: part.type === "text" ? part.text : part.refusal })
          }
        }
        if (content.length === 0 && Predicate.isString(message.refusal) && message.refusal.length > 0) {
          content.push({ type: "text", text: message.refusal })
        }
        for (const call of message.tool_calls ?? []) {
          const { id, signature } = unsignCallId(call.id)
          content.push(
            signature === undefined
              ? { type: "tool_call", id, name: call.function.name, arguments: call.function.arguments }
              : { type: "tool_call", id, name: call.function.name, arguments: call.function.arguments, signature }
          )
        }
        messages.push(withName({ role: "assistant", content }, message.name))
        break
      }
      case "tool":
        messages.push({
          role: "tool",
          content: [{
            type: "tool_result",
            callId: unsignCallId(message.tool_call_id).id,
            content: textsOf(message.content).join("")
          }]
        })
        break
    }
  }

  const out: Mutable<Canonical.ChatRequest> = { model: wire.model, messages, stream: wire.stream === true }
  if (system.length > 0) out.system = system
  if (wire.tools !== undefined && wire.tools !== null) {
    out.tools = wire.tools.map((tool) => {
      const def: Mutable<Canonical.ToolDefinition> = { name: tool.function.name }
      if (Predicate.isString(tool.function.description)) def.description = tool.function.description
      if (tool.function.parameters !== undefined && tool.function.parameters !== null) {
        def.parameters = tool.function.parameters
      }
      return def
    })
  }
  const choice = wire.tool_choice
  if (choice !== undefined && choice !== null) {
    out.toolChoice = typeof choice === "string" ? choice : { type: "tool", name: choice.function.name }
  }
  if (Predicate.isBoolean(wire.parallel_tool_calls)) out.parallelToolCalls = wire.parallel_tool_calls
  const format = wire.response_format
  if (format !== undefined && format !== null) {
    if (format.type === "text") out.responseFormat = { type: "text" }
    else if (format.type === "json_object") out.responseFormat = { type: "json" }
    else {
      const schema: Mutable<Extract<Canonical.ResponseFormat, { type: "json_schema" }>> = {
        type: "json_schema",
        name: format.json_schema.name,
        schema: format.json_schema.schema ?? {}
      }
      if (Predicate.isBoolean(format.json_schema.strict)) schema.strict = format.json_schema.strict
      out.responseFormat = schema
    }
  }
  const maxTokens = wire.max_completion_tokens ?? wire.max_tokens
  if (maxTokens !== undefined && maxTokens !== null) out.maxOutputTokens = maxTokens
  if (Predicate.isNumber(wire.temperature)) out.temperature = wire.temperature
  if (Predicate.isNumber(wire.top_p)) out.topP = wire.top_p
  if (wire.stop !== undefined && wire.stop !== null) out.stop = typeof wire.stop === "string" ? [wire.stop] : wire.stop
  if (Predicate.isNumber(wire.n)) out.candidateCount = wire.n
  if (Predicate.isNumber(wire.seed)) out.seed = wire.seed
  if (Predicate.isNumber(wire.presence_penalty)) out.presencePenalty = wire.presence_penalty
  if (Predicate.isNumber(wire.frequency_penalty)) out.frequencyPenalty = wire.frequency_penalty
  if (wire.reasoning_effort !== undefined && wire.reasoning_effort !== null) {
    out.reasoning = { effort: wire.reasoning_effort }
  }
  const includeUsage = wire.stream_options?.include_usage
  if (Predicate.isBoolean(includeUsage)) out.includeUsage = includeUsage
  if (Predicate.isString(wire.user)) out.user = wire.user
  return out
}

/**
 * `decodeRequest` as a `Result`, for synchronous callers (property tests, the
 * laws in `testing/Laws`). Never throws.
 *
 * @category decoding
 */
export const decodeRequestResult = (body: unknown): Result.Result<Canonical.ChatRequest, RequestError> => {
  if (Predicate.isObject(body)) {
    const refusal = checkUnsupported(body)
    if (refusal !== undefined) return Result.fail(refusal)
  }
  const wire = decodeWire(body)
  if (Result.isFailure(wire)) return Result.fail(Issues.invalidRequest(wire.failure.issue))
  try {
    return Result.succeed(toCanonical(wire.success))
  } catch (error) {
    if (error instanceof GatewayError.UnsupportedFeature || error instanceof GatewayError.InvalidRequest) {
      return Result.fail(error)
    }
    throw error
  }
}

/**
 * Decodes a client's chat completions body (already `JSON.parse`d) into a
 * canonical request.
 *
 * @example
 * ```ts
 * import { Request } from "@modelgate/openai-adapter"
 * import { Effect } from "effect"
 *
 * const program = Request.decodeRequest({ model: "gpt-4o", messages: [{ role: "user", content: "Hi" }] })
 * // Effect<ChatRequest>: { model: "gpt-4o", messages: [{ role: "user", content: [{ type: "text", text: "Hi" }] }], stream: false }
 * Effect.runSync(program)
 * // Request.decodeRequest({ messages: [] }) fails with InvalidRequest { message: "'model' is required", param: "model" }
 * ```
 *
 * @category decoding
 */
export const decodeRequest = (body: unknown): Effect.Effect<Canonical.ChatRequest, RequestError> =>
  Effect.fromResult(decodeRequestResult(body))

// ---------------------------------------------------------------------------
// Encoding (to an OpenAI upstream)
// ---------------------------------------------------------------------------

/** Options of `encodeRequest`. @category encoding */
export interface EncodeRequestOptions {
  /**
   * The field that carries `maxOutputTokens`: `max_completion_tokens` (default;
   * required by OpenAI's reasoning models) or the older `max_tokens`, which
   * some OpenAI-compatible servers still need.
   */
  readonly maxTokensField?: "max_completion_tokens" | "max_tokens"
  /**
   * Whether the model takes `reasoning_effort` (a reasoning model); default
   * true. When false, the canonical reasoning controls (a Gemini client's
   * `thinkingConfig`, which is only a hint) are left out: OpenAI refuses
   * `reasoning_effort` for other models.
   */
  readonly reasoningEffort?: boolean
  /**
   * Whether the upstream accepts earlier reasoning as `reasoning_content` on
   * assistant messages (vLLM and some other servers); default false, because
   * OpenAI and DeepSeek reject the field. When false, thinking parts of the
   * history are left out (the model's reasoning is not part of the
   * conversation's content).
   */
  readonly reasoningContent?: boolean
}

/**
 * The system instruction added in JSON mode when no message mentions JSON:
 * OpenAI refuses `response_format: {"type":"json_object"}` unless the word
 * "JSON" appears in the messages (Gemini has no such rule).
 *
 * @category encoding
 */
export const JSON_MODE_HINT = "Respond with a JSON object."

/**
 * A token budget as an effort level, for upstreams that only take
 * `reasoning_effort` (budgets from Gemini 2.5 or Anthropic): 0 is `none`, up
 * to 1,024 `low`, up to 8,192 `medium`, more `high`; negative (Gemini's
 * "dynamic") gives no effort at all.
 *
 * @category encoding
 */
export const effortOfBudget = (budget: number): Canonical.ReasoningEffort | undefined =>
  budget < 0 ? undefined : budget === 0 ? "none" : budget <= 1_024 ? "low" : budget <= 8_192 ? "medium" : "high"

const AUDIO_FORMATS: Readonly<Record<string, ChatCompletions.AudioFormat>> = {
  "audio/wav": "wav",
  "audio/x-wav": "wav",
  "audio/wave": "wav",
  "audio/mpeg": "mp3",
  "audio/mp3": "mp3"
}

const wirePart = (part: Canonical.Part): ChatCompletions.UserContentPart | undefined => {
  switch (part.type) {
    case "text":
      return { type: "text", text: part.text }
    case "image": {
      const url = part.url ??
        (part.data !== undefined ? base64DataUrl(part.mediaType ?? "image/png", part.data) : undefined)
      if (url === undefined) return undefined
      return part.detail === undefined
        ? { type: "image_url", image_url: { url } }
        : { type: "image_url", image_url: { url, detail: part.detail } }
    }
    case "file": {
      if (part.data !== undefined) {
        const format = AUDIO_FORMATS[part.mediaType]
        if (format !== undefined) return { type: "input_audio", input_audio: { data: part.data, format } }
        const file_data = base64DataUrl(part.mediaType, part.data)
        return part.filename === undefined
          ? { type: "file", file: { file_data } }
          : { type: "file", file: { file_data, filename: part.filename } }
      }
      if (part.uri !== undefined && part.mediaType.startsWith("image/")) {
        return { type: "image_url", image_url: { url: part.uri } }
      }
      return undefined
    }
    default:
      return undefined
  }
}

const pushWireMessages = (
  message: Canonical.Message,
  out: Array<ChatCompletions.Message>,
  options: EncodeRequestOptions | undefined
): void => {
  if (message.role === "assistant") {
    const texts: Array<string> = []
    let reasoning = ""
    const calls: Array<ChatCompletions.ToolCall> = []
    for (const part of message.content) {
      if (part.type === "text") texts.push(part.text)
      else if (part.type === "thinking") reasoning += part.text
      else if (part.type === "tool_call") {
        calls.push({
          id: part.id,
          type: "function",
          function: { name: encodeToolName(part.name), arguments: part.arguments }
        })
      }
    }
    const wire: Mutable<ChatCompletions.AssistantMessage> = {
      role: "assistant",
      content: texts.length === 0
        ? null
        : texts.length === 1
        ? texts[0]!
        : texts.map((text) => ({ type: "text", text }))
    }
    if (calls.length > 0) wire.tool_calls = calls
    if (reasoning.length > 0 && options?.reasoningContent === true) wire.reasoning_content = reasoning
    if (message.name !== undefined) wire.name = message.name
    out.push(wire)
    return
  }
  const parts: Array<ChatCompletions.UserContentPart> = []
  for (const part of message.content) {
    if (part.type === "tool_result") {
      // OpenAI's tool messages have no error flag: a failed call's result says so in Gemini's own words.
      const content = part.isError === true ? JSON.stringify({ error: part.content }) : part.content
      out.push({ role: "tool", tool_call_id: part.callId, content })
      continue
    }
    const wire = wirePart(part)
    if (wire !== undefined) parts.push(wire)
  }
  if (parts.length === 0) return
  const content = parts.length === 1 && parts[0]!.type === "text" ? parts[0].text : parts
  out.push(message.name === undefined ? { role: "user", content } : { role: "user", content, name: message.name })
}

/**
 * Encodes a canonical request as the body for an OpenAI (or OpenAI-compatible)
 * upstream, with `model` replaced by the upstream's name of the model. Streams
 * always ask for `stream_options.include_usage: true`, so the gateway can bill
 * them whatever the client asked for.
 *
 * - Tool names OpenAI would refuse (`.`, `:`) are sent as
 *   `Identifiers.encodeToolName` gives them (declarations, `tool_choice` and
 *   the history alike); the response decoders turn them back.
 * - JSON mode (`json_object`) adds the system instruction `JSON_MODE_HINT`
 *   when no message mentions JSON, which OpenAI requires; a schema is sent as
 *   `json_schema`.
 * - A tool result with `isError` is sent as `{"error": "<text>"}`.
 * - Reasoning: `reasoning_effort` only when `options.reasoningEffort` is not
 *   false (a `budgetTokens` with no effort is sent as
 *   `effortOfBudget(budget)`); earlier thinking as `reasoning_content` only
 *   when `options.reasoningContent` is true.
 * - Not carried, as hints OpenAI has no field for (docs/design/decisions.md):
 *   `topK`, `reasoning.includeThoughts`, thinking and tool-call signatures
 *   (Gemini's, meaningless to OpenAI) and `tool_result.name` (results pair by
 *   id). Check requests with `ensureEncodable` first: it refuses what cannot
 *   be sent at all.
 *
 * @example
 * ```ts
 * import { Request } from "@modelgate/openai-adapter"
 *
 * Request.encodeRequest(
 *   { model: "fast", messages: [{ role: "user", content: [{ type: "text", text: "Hi" }] }], stream: true },
 *   "gpt-4o-mini"
 * )
 * // { model: "gpt-4o-mini", messages: [{ role: "user", content: "Hi" }], stream: true,
 * //   stream_options: { include_usage: true } }
 * ```
 *
 * @category encoding
 */
export const encodeRequest = (
  request: Canonical.ChatRequest,
  upstreamModel: string,
  options?: EncodeRequestOptions
): ChatCompletions.ChatCompletionRequest => {
  const messages: Array<ChatCompletions.Message> = []
  for (const text of request.system ?? []) messages.push({ role: "system", content: text })
  if (request.responseFormat?.type === "json" && !mentionsJson(request)) {
    messages.push({ role: "system", content: JSON_MODE_HINT })
  }
  for (const message of request.messages) pushWireMessages(message, messages, options)
  const out: Mutable<ChatCompletions.ChatCompletionRequest> = { model: upstreamModel, messages }
  if (request.tools !== undefined) {
    out.tools = request.tools.map((tool) => {
      const fn: Mutable<ChatCompletions.Tool["function"]> = { name: encodeToolName(tool.name) }
      if (tool.description !== undefined) fn.description = tool.description
      if (tool.parameters !== undefined) fn.parameters = tool.parameters
      return { type: "function", function: fn }
    })
  }
  if (request.toolChoice !== undefined) {
    out.tool_choice = typeof request.toolChoice === "string"
      ? request.toolChoice
      : { type: "function", function: { name: encodeToolName(request.toolChoice.name) } }
  }
  if (request.parallelToolCalls !== undefined) out.parallel_tool_calls = request.parallelToolCalls
  const format = request.responseFormat
  if (format !== undefined) {
    if (format.type === "text") out.response_format = { type: "text" }
    else if (format.type === "json") out.response_format = { type: "json_object" }
    else {
      const json_schema: Mutable<Extract<ChatCompletions.ResponseFormat, { type: "json_schema" }>["json_schema"]> = {
        name: format.name ?? "response",
        schema: format.schema
      }
      if (format.strict !== undefined) json_schema.strict = format.strict
      out.response_format = { type: "json_schema", json_schema }
    }
  }
  if (request.maxOutputTokens !== undefined) {
    if (options?.maxTokensField === "max_tokens") out.max_tokens = request.maxOutputTokens
    else out.max_completion_tokens = request.maxOutputTokens
  }
  if (request.temperature !== undefined) out.temperature = request.temperature
  if (request.topP !== undefined) out.top_p = request.topP
  if (request.stop !== undefined) out.stop = request.stop
  if (request.candidateCount !== undefined) out.n = request.candidateCount
  if (request.seed !== undefined) out.seed = request.seed
  if (request.presencePenalty !== undefined) out.presence_penalty = request.presencePenalty
  if (request.frequencyPenalty !== undefined) out.frequency_penalty = request.frequencyPenalty
  const reasoning = request.reasoning
  if (reasoning !== undefined && options?.reasoningEffort !== false) {
    const effort = reasoning.effort ??
      (reasoning.budgetTokens !== undefined ? effortOfBudget(reasoning.budgetTokens) : undefined)
    if (effort !== undefined) out.reasoning_effort = effort
  }
  out.stream = request.stream
  if (request.stream) out.stream_options = { include_usage: true }
  if (request.user !== undefined) out.user = request.user
  return out
}

/**
 * Whether any system instruction, text or tool result of a request mentions
 * JSON (case-insensitively), which OpenAI's JSON mode requires.
 *
 * @category encoding
 */
export const mentionsJson = (request: Canonical.ChatRequest): boolean => {
  if ((request.system ?? []).some((text) => /json/i.test(text))) return true
  return request.messages.some((message) =>
    message.content.some((part) =>
      (part.type === "text" && /json/i.test(part.text)) || (part.type === "tool_result" && /json/i.test(part.content))
    )
  )
}

/**
 * Checks that an OpenAI upstream can carry a canonical request, failing with
 * `UnsupportedFeature` naming what it cannot:
 *
 * - files given only by a URI that is not an image (Gemini Files API
 *   references), which OpenAI cannot fetch (`messages[i].content[j]`);
 * - images or files in the model's own earlier turns (OpenAI's assistant
 *   messages hold only text and tool calls);
 * - tool names OpenAI refuses even once escaped (longer than 64 characters;
 *   `tools[i].name`).
 *
 * `encodeRequest` would otherwise have to drop them.
 *
 * @category encoding
 */
export const ensureEncodable = (
  request: Canonical.ChatRequest
): Effect.Effect<Canonical.ChatRequest, GatewayError.UnsupportedFeature> => {
  for (let i = 0; i < request.messages.length; i++) {
    const message = request.messages[i]!
    const content = message.content
    for (let j = 0; j < content.length; j++) {
      const part = content[j]!
      const at = `messages[${i}].content[${j}]`
      if (part.type === "file" && part.data === undefined && !part.mediaType.startsWith("image/")) {
        return Effect.fail(Issues.unsupported(
          at,
          `A '${part.mediaType}' file given by URI (${at}) cannot be sent to an OpenAI upstream; send the file inline.`
        ))
      }
      if (message.role === "assistant" && (part.type === "image" || part.type === "file")) {
        return Effect.fail(Issues.unsupported(
          at,
          `The model's earlier turn holds ${
            part.type === "image" ? "an image" : "a file"
          } (${at}), which an OpenAI upstream cannot take in an assistant message; ` +
            "send it in a user turn instead."
        ))
      }
    }
  }
  const tools = request.tools ?? []
  for (let i = 0; i < tools.length; i++) {
    const refusal = checkToolName(tools[i]!.name, `tools[${i}].name`)
    if (refusal !== undefined) return Effect.fail(refusal)
  }
  for (let i = 0; i < request.messages.length; i++) {
    const content = request.messages[i]!.content
    for (let j = 0; j < content.length; j++) {
      const part = content[j]!
      if (part.type !== "tool_call") continue
      const refusal = checkToolName(part.name, `messages[${i}].content[${j}].name`)
      if (refusal !== undefined) return Effect.fail(refusal)
    }
  }
  return Effect.succeed(request)
}

const checkToolName = (name: string, param: string): GatewayError.UnsupportedFeature | undefined =>
  isValidToolName(encodeToolName(name))
    ? undefined
    : Issues.unsupported(
      param,
      `The tool name '${name}' cannot be sent to an OpenAI-compatible model: names may have at most ${MAX_NAME_LENGTH} ` +
        "characters (letters, digits, '_' and '-'; '-', '.', ':' and any other character take two or more once escaped). Use a shorter name."
    )
