/**
 * Wire schemas of OpenAI's `POST /v1/chat/completions` (request, response,
 * stream chunk), `GET /v1/models` and the OpenAI error envelope.
 *
 * These are the shapes on the wire, written as Effect Schemas so that every
 * edge decodes with a field path in its errors. They are lenient where real
 * clients and OpenAI-compatible servers are (optional fields may be `null`,
 * unknown fields are tolerated and dropped) and strict where a wrong value
 * would change the meaning of a call (roles, part types, numeric ranges).
 *
 * Translation to and from the canonical model lives in `Request.ts`,
 * `Response.ts` and `Stream.ts`.
 *
 * @since 0.1.0
 */
import { Canonical } from "@modelgate/core"
import { Schema } from "effect"

/** An optional field that clients may also send as `null` (treated as absent). */
const nullable = <S extends Schema.Top>(schema: S) => Schema.optionalKey(Schema.NullOr(schema))

// ---------------------------------------------------------------------------
// Request: content parts
// ---------------------------------------------------------------------------

/** `{"type":"text","text":"..."}`. @category request */
export const TextContentPart = Schema.Struct({
  type: Schema.Literal("text"),
  text: Schema.String
})
export type TextContentPart = typeof TextContentPart.Type

/** Image detail levels. @category request */
export const ImageDetail = Schema.Literals(["auto", "low", "high"])
export type ImageDetail = typeof ImageDetail.Type

/** `{"type":"image_url","image_url":{"url","detail"?}}`; `url` is `https:` or a `data:` URL. @category request */
export const ImageContentPart = Schema.Struct({
  type: Schema.Literal("image_url"),
  image_url: Schema.Struct({
    url: Schema.String,
    detail: nullable(ImageDetail)
  })
})
export type ImageContentPart = typeof ImageContentPart.Type

/** Audio formats accepted in `input_audio` parts. @category request */
export const AudioFormat = Schema.Literals(["wav", "mp3"])
export type AudioFormat = typeof AudioFormat.Type

/** `{"type":"input_audio","input_audio":{"data":"<base64>","format":"wav"|"mp3"}}`. @category request */
export const AudioContentPart = Schema.Struct({
  type: Schema.Literal("input_audio"),
  input_audio: Schema.Struct({
    data: Schema.String,
    format: AudioFormat
  })
})
export type AudioContentPart = typeof AudioContentPart.Type

/**
 * `{"type":"file","file":{"file_data"?,"file_id"?,"filename"?}}`; `file_data` is a
 * `data:` URL. (`file_id` names a file stored at OpenAI; the decoder refuses it,
 * because a gateway cannot forward it to another account.)
 *
 * @category request
 */
export const FileContentPart = Schema.Struct({
  type: Schema.Literal("file"),
  file: Schema.Struct({
    file_data: nullable(Schema.String),
    file_id: nullable(Schema.String),
    filename: nullable(Schema.String)
  })
})
export type FileContentPart = typeof FileContentPart.Type

/** `{"type":"refusal","refusal":"..."}`, in assistant history only. @category request */
export const RefusalContentPart = Schema.Struct({
  type: Schema.Literal("refusal"),
  refusal: Schema.String
})
export type RefusalContentPart = typeof RefusalContentPart.Type

/** Any part of a user message. @category request */
export const UserContentPart = Schema.Union([TextContentPart, ImageContentPart, AudioContentPart, FileContentPart])
  .annotate({ expected: "a content part of type 'text', 'image_url', 'input_audio' or 'file'" })
export type UserContentPart = typeof UserContentPart.Type

const textContent = Schema.Union([
  Schema.String,
  Schema.Array(TextContentPart.annotate({ expected: "a content part of type 'text'" }))
]).annotate({ expected: "a string or an array of text parts" })

// ---------------------------------------------------------------------------
// Request: messages
// ---------------------------------------------------------------------------

/** A function call the assistant made: `arguments` is JSON text (possibly invalid). @category request */
export const ToolCall = Schema.Struct({
  id: Schema.String,
  type: Schema.Literal("function"),
  function: Schema.Struct({
    name: Schema.String,
    arguments: Schema.String
  })
})
export type ToolCall = typeof ToolCall.Type

/** `{"role":"system","content","name"?}`. @category request */
export const SystemMessage = Schema.Struct({
  role: Schema.Literal("system"),
  content: textContent,
  name: nullable(Schema.String)
})
export type SystemMessage = typeof SystemMessage.Type

/** `{"role":"developer","content","name"?}`: the newer name of a system message. @category request */
export const DeveloperMessage = Schema.Struct({
  role: Schema.Literal("developer"),
  content: textContent,
  name: nullable(Schema.String)
})
export type DeveloperMessage = typeof DeveloperMessage.Type

/** `{"role":"user","content","name"?}`. @category request */
export const UserMessage = Schema.Struct({
  role: Schema.Literal("user"),
  content: Schema.Union([Schema.String, Schema.Array(UserContentPart)])
    .annotate({ expected: "a string or an array of content parts" }),
  name: nullable(Schema.String)
})
export type UserMessage = typeof UserMessage.Type

/**
 * `{"role":"assistant","content"?,"refusal"?,"tool_calls"?,"reasoning_content"?}`:
 * conversation history. `reasoning_content` is the non-standard (DeepSeek, vLLM)
 * reasoning text.
 *
 * @category request
 */
export const AssistantMessage = Schema.Struct({
  role: Schema.Literal("assistant"),
  content: nullable(
    Schema.Union([
      Schema.String,
      Schema.Array(
        Schema.Union([TextContentPart, RefusalContentPart]).annotate({
          expected: "a content part of type 'text' or 'refusal'"
        })
      )
    ]).annotate({ expected: "a string, null or an array of text and refusal parts" })
  ),
  refusal: nullable(Schema.String),
  tool_calls: nullable(Schema.Array(ToolCall)),
  reasoning_content: nullable(Schema.String),
  name: nullable(Schema.String)
})
export type AssistantMessage = typeof AssistantMessage.Type

/** `{"role":"tool","tool_call_id","content"}`: the result of one tool call. @category request */
export const ToolMessage = Schema.Struct({
  role: Schema.Literal("tool"),
  tool_call_id: Schema.String,
  content: textContent
})
export type ToolMessage = typeof ToolMessage.Type

/** Any request message, discriminated by `role`. @category request */
export const Message = Schema.Union([SystemMessage, DeveloperMessage, UserMessage, AssistantMessage, ToolMessage])
  .annotate({ expected: "a message with role 'system', 'developer', 'user', 'assistant' or 'tool'" })
export type Message = typeof Message.Type

// ---------------------------------------------------------------------------
// Request: tools, formats, the request
// ---------------------------------------------------------------------------

/** `{"type":"function","function":{"name","description"?,"parameters"?,"strict"?}}`. @category request */
export const Tool = Schema.Struct({
  type: Schema.Literal("function"),
  function: Schema.Struct({
    name: Schema.String.check(Schema.isNonEmpty()),
    description: nullable(Schema.String),
    parameters: nullable(Canonical.JsonSchemaObject),
    strict: nullable(Schema.Boolean)
  })
})
export type Tool = typeof Tool.Type

/** `"none" | "auto" | "required" | {"type":"function","function":{"name"}}`. @category request */
export const ToolChoice = Schema.Union([
  Schema.Literals(["none", "auto", "required"]),
  Schema.Struct({
    type: Schema.Literal("function"),
    function: Schema.Struct({ name: Schema.String })
  })
]).annotate({ expected: "\"none\", \"auto\", \"required\" or {\"type\":\"function\",\"function\":{\"name\"}}" })
export type ToolChoice = typeof ToolChoice.Type

/** `{"type":"text"} | {"type":"json_object"} | {"type":"json_schema","json_schema":{...}}`. @category request */
export const ResponseFormat = Schema.Union([
  Schema.Struct({ type: Schema.Literal("text") }),
  Schema.Struct({ type: Schema.Literal("json_object") }),
  Schema.Struct({
    type: Schema.Literal("json_schema"),
    json_schema: Schema.Struct({
      name: Schema.String,
      description: nullable(Schema.String),
      schema: nullable(Canonical.JsonSchemaObject),
      strict: nullable(Schema.Boolean)
    })
  })
]).annotate({ expected: "a response format of type 'text', 'json_object' or 'json_schema'" })
export type ResponseFormat = typeof ResponseFormat.Type

/** `reasoning_effort` levels. @category request */
export const ReasoningEffort = Schema.Literals(["none", "minimal", "low", "medium", "high", "xhigh", "max"])
export type ReasoningEffort = typeof ReasoningEffort.Type

/** `stream_options`. @category request */
export const StreamOptions = Schema.Struct({
  include_usage: nullable(Schema.Boolean)
})
export type StreamOptions = typeof StreamOptions.Type

const positiveInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))
const penalty = Schema.Finite.check(Schema.isBetween({ minimum: -2, maximum: 2 }))

/**
 * The chat completions request. Unknown fields are tolerated (and dropped by
 * decoding). The legacy `functions`/`function_call` fields are not part of the
 * schema: the request decoder refuses them with an `UnsupportedFeature`.
 *
 * @category request
 */
export const ChatCompletionRequest = Schema.Struct({
  model: Schema.String.check(Schema.isNonEmpty()),
  messages: Schema.Array(Message).check(Schema.isMinLength(1)),
  tools: nullable(Schema.Array(Tool)),
  tool_choice: nullable(ToolChoice),
  parallel_tool_calls: nullable(Schema.Boolean),
  response_format: nullable(ResponseFormat),
  max_tokens: nullable(positiveInt),
  max_completion_tokens: nullable(positiveInt),
  temperature: nullable(Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 2 }))),
  top_p: nullable(Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 1 }))),
  stop: nullable(
    Schema.Union([Schema.String, Schema.Array(Schema.String)]).annotate({ expected: "a string or an array of strings" })
  ),
  n: nullable(positiveInt),
  seed: nullable(Schema.Int),
  presence_penalty: nullable(penalty),
  frequency_penalty: nullable(penalty),
  reasoning_effort: nullable(ReasoningEffort),
  stream: nullable(Schema.Boolean),
  stream_options: nullable(StreamOptions),
  user: nullable(Schema.String)
})
export type ChatCompletionRequest = typeof ChatCompletionRequest.Type

// ---------------------------------------------------------------------------
// Response
// ---------------------------------------------------------------------------

/**
 * `finish_reason` values. Decoding from upstreams accepts any string (some
 * OpenAI-compatible servers invent their own) and maps unknown ones to `stop`.
 *
 * @category response
 */
export const FinishReason = Schema.Literals(["stop", "length", "tool_calls", "content_filter", "function_call"])
export type FinishReason = typeof FinishReason.Type

/** `usage`, with the cached and reasoning token details. @category response */
export const Usage = Schema.Struct({
  prompt_tokens: Schema.Int,
  completion_tokens: Schema.Int,
  total_tokens: Schema.Int,
  prompt_tokens_details: nullable(Schema.Struct({ cached_tokens: nullable(Schema.Int) })),
  completion_tokens_details: nullable(Schema.Struct({ reasoning_tokens: nullable(Schema.Int) }))
})
export type Usage = typeof Usage.Type

/** The assistant message of a non-stream choice. @category response */
export const ResponseMessage = Schema.Struct({
  role: Schema.optionalKey(Schema.String),
  content: nullable(Schema.String),
  refusal: nullable(Schema.String),
  tool_calls: nullable(Schema.Array(ToolCall)),
  reasoning_content: nullable(Schema.String)
})
export type ResponseMessage = typeof ResponseMessage.Type

/** One choice of a non-stream response. @category response */
export const ResponseChoice = Schema.Struct({
  index: Schema.Int,
  message: ResponseMessage,
  finish_reason: Schema.NullOr(Schema.String),
  logprobs: Schema.optionalKey(Schema.Unknown)
})
export type ResponseChoice = typeof ResponseChoice.Type

const chatCompletionFields = {
  id: Schema.String,
  object: Schema.optionalKey(Schema.String),
  created: Schema.optionalKey(Schema.Number),
  model: Schema.String,
  choices: Schema.Array(ResponseChoice),
  system_fingerprint: nullable(Schema.String)
}

/** `{"id","object":"chat.completion","created","model","choices","usage"?}`. @category response */
export const ChatCompletion = Schema.Struct({ ...chatCompletionFields, usage: nullable(Usage) })
export type ChatCompletion = typeof ChatCompletion.Type

/**
 * A chat completion as an upstream sends it: `usage` is taken as it comes and
 * read apart (`Response.readUsage`), so figures that are not token counts are
 * refused without making the whole answer unreadable.
 *
 * @category response
 */
export const UpstreamChatCompletion = Schema.Struct({
  ...chatCompletionFields,
  usage: Schema.optionalKey(Schema.Unknown)
})
export type UpstreamChatCompletion = typeof UpstreamChatCompletion.Type

// ---------------------------------------------------------------------------
// Stream chunk
// ---------------------------------------------------------------------------

/** A fragment of a tool call in a stream delta; the first fragment of a call carries `id`, `type` and `function.name`. @category stream */
export const ToolCallDelta = Schema.Struct({
  index: Schema.Int,
  id: nullable(Schema.String),
  type: nullable(Schema.Literal("function")),
  function: nullable(Schema.Struct({
    name: nullable(Schema.String),
    arguments: nullable(Schema.String)
  }))
})
export type ToolCallDelta = typeof ToolCallDelta.Type

/** The `delta` of a stream choice. @category stream */
export const Delta = Schema.Struct({
  role: nullable(Schema.String),
  content: nullable(Schema.String),
  refusal: nullable(Schema.String),
  reasoning_content: nullable(Schema.String),
  tool_calls: nullable(Schema.Array(ToolCallDelta))
})
export type Delta = typeof Delta.Type

/** One choice of a stream chunk. @category stream */
export const ChunkChoice = Schema.Struct({
  index: Schema.Int,
  delta: nullable(Delta),
  finish_reason: nullable(Schema.String),
  logprobs: Schema.optionalKey(Schema.Unknown)
})
export type ChunkChoice = typeof ChunkChoice.Type

/**
 * `{"id","object":"chat.completion.chunk","created","model","choices","usage"?}`.
 * The usage chunk (sent last, only with `include_usage`) has `choices: []`.
 *
 * @category stream
 */
export const ChatCompletionChunk = Schema.Struct({
  id: Schema.String,
  object: Schema.optionalKey(Schema.String),
  created: Schema.optionalKey(Schema.Number),
  model: Schema.optionalKey(Schema.String),
  choices: Schema.Array(ChunkChoice),
  usage: nullable(Usage)
})
export type ChatCompletionChunk = typeof ChatCompletionChunk.Type

/** A stream chunk as an upstream sends it, `usage` read apart (see `UpstreamChatCompletion`). @category stream */
export const UpstreamChatCompletionChunk = Schema.Struct({
  ...ChatCompletionChunk.fields,
  usage: Schema.optionalKey(Schema.Unknown)
})
export type UpstreamChatCompletionChunk = typeof UpstreamChatCompletionChunk.Type

// One `switch` per object kind, as in the Gemini adapter's reader of the usual chunk: this runs once per stream event.

const isPlain = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value) &&
  (Object.getPrototypeOf(value) === Object.prototype || Object.getPrototypeOf(value) === null)

const isStringOrNull = (value: unknown): boolean => value === null || typeof value === "string"

const isToolCallDelta = (value: unknown): boolean => {
  if (!isPlain(value) || !Number.isSafeInteger(value.index)) return false
  for (const key in value) {
    const item = value[key]
    switch (key) {
      case "id":
        if (!isStringOrNull(item)) return false
        break
      case "type":
        if (item !== null && item !== "function") return false
        break
      case "function": {
        if (item === null) break
        if (!isPlain(item)) return false
        if (item.name !== undefined && !isStringOrNull(item.name)) return false
        if (item.arguments !== undefined && !isStringOrNull(item.arguments)) return false
        if ("name" in item && item.name === undefined) return false
        if ("arguments" in item && item.arguments === undefined) return false
        break
      }
      case "index":
        break
      default:
        if (item === undefined) return false
    }
  }
  return true
}

const isDelta = (value: unknown): boolean => {
  if (value === null) return true
  if (!isPlain(value)) return false
  for (const key in value) {
    const item = value[key]
    switch (key) {
      case "role":
      case "content":
      case "refusal":
      case "reasoning_content":
        if (!isStringOrNull(item)) return false
        break
      case "tool_calls":
        if (item === null) break
        if (!Array.isArray(item)) return false
        for (let i = 0; i < item.length; i++) if (!isToolCallDelta(item[i])) return false
        break
      default:
        if (item === undefined) return false
    }
  }
  return true
}

const isChunkChoice = (value: unknown): boolean => {
  if (!isPlain(value) || !Number.isSafeInteger(value.index)) return false
  for (const key in value) {
    const item = value[key]
    switch (key) {
      case "delta":
        if (!isDelta(item)) return false
        break
      case "finish_reason":
        if (!isStringOrNull(item)) return false
        break
      case "index":
      case "logprobs":
        break
      default:
        if (item === undefined) return false
    }
  }
  return true
}

/**
 * The usual upstream stream chunk, checked by hand and returned as it is:
 * each field the schema knows has the type it wants; fields it does not know
 * (`system_fingerprint`, `service_tier`, `obfuscation`...) are left in place,
 * where the schema would drop them, and nothing reads them. Anything else
 * gives `undefined`, and `Stream.parseChunk` hands the text to the schema,
 * which reads it or names what is wrong. A law in the tests holds that the
 * stream decoder makes the same events of this reader's chunk as of the
 * schema's.
 *
 * @category stream
 */
export const readCommonChunk = (value: unknown): UpstreamChatCompletionChunk | undefined => {
  if (!isPlain(value) || typeof value.id !== "string" || !Array.isArray(value.choices)) return undefined
  for (const key in value) {
    const item = value[key]
    switch (key) {
      case "object":
      case "model":
        if (typeof item !== "string") return undefined
        break
      case "created":
        if (!Number.isFinite(item)) return undefined
        break
      case "choices":
        for (let i = 0; i < (item as Array<unknown>).length; i++) {
          if (!isChunkChoice((item as Array<unknown>)[i])) return undefined
        }
        break
      case "id":
      case "usage":
        break
      default:
        if (item === undefined) return undefined
    }
  }
  return value as UpstreamChatCompletionChunk
}

// ---------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------

/** `{"id","object":"model","created","owned_by"}`. @category models */
export const ModelObject = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("model"),
  created: Schema.Int,
  owned_by: Schema.String
})
export type ModelObject = typeof ModelObject.Type

/** `{"object":"list","data":[ModelObject]}`. @category models */
export const ModelsList = Schema.Struct({
  object: Schema.Literal("list"),
  data: Schema.Array(ModelObject)
})
export type ModelsList = typeof ModelsList.Type

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/** The body of OpenAI's error envelope. @category errors */
export const ErrorObject = Schema.Struct({
  message: Schema.String,
  type: Schema.String,
  param: Schema.NullOr(Schema.String),
  code: Schema.NullOr(Schema.String)
})
export type ErrorObject = typeof ErrorObject.Type

/** `{"error":{"message","type","param","code"}}`. @category errors */
export const ErrorEnvelope = Schema.Struct({ error: ErrorObject })
export type ErrorEnvelope = typeof ErrorEnvelope.Type

/**
 * The error envelope as upstreams really send it: only `message` is required,
 * `code` may be a number, other fields may be missing or `null`.
 *
 * @category errors
 */
export const UpstreamErrorEnvelope = Schema.Struct({
  error: Schema.Struct({
    message: Schema.String,
    type: nullable(Schema.String),
    param: nullable(Schema.String),
    code: nullable(Schema.Union([Schema.String, Schema.Number]))
  })
})
export type UpstreamErrorEnvelope = typeof UpstreamErrorEnvelope.Type
