/**
 * The canonical chat model: what every dialect's request, response and stream
 * is translated through when the client and the upstream speak different
 * dialects. It carries the union of what OpenAI chat completions, Gemini
 * generateContent and Anthropic messages can express in common, with the few
 * dialect-only fields that must survive a round trip (thought signatures,
 * cached and reasoning token counts) as optional fields.
 *
 * Same-dialect calls never pass through here: they are forwarded as bytes.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

// ---------------------------------------------------------------------------
// Content
// ---------------------------------------------------------------------------

/** Plain text. @category content */
export const TextPart = Schema.Struct({
  type: Schema.Literal("text"),
  text: Schema.String
})
export type TextPart = typeof TextPart.Type

/**
 * An image, by URL (`https:`, or a `data:` URL kept as such) or as inline
 * base64 data with its media type.
 *
 * @category content
 */
export const ImagePart = Schema.Struct({
  type: Schema.Literal("image"),
  mediaType: Schema.optionalKey(Schema.String),
  data: Schema.optionalKey(Schema.String),
  url: Schema.optionalKey(Schema.String),
  detail: Schema.optionalKey(Schema.Literals(["auto", "low", "high"]))
})
export type ImagePart = typeof ImagePart.Type

/** A document or other file (PDF, audio, ...), inline base64 or by URI. @category content */
export const FilePart = Schema.Struct({
  type: Schema.Literal("file"),
  mediaType: Schema.String,
  data: Schema.optionalKey(Schema.String),
  uri: Schema.optionalKey(Schema.String),
  filename: Schema.optionalKey(Schema.String)
})
export type FilePart = typeof FilePart.Type

/**
 * Model reasoning shown to the client (Gemini `thought: true` parts, Anthropic
 * `thinking` blocks, the non-standard OpenAI `reasoning_content`). `signature`
 * is opaque and must be sent back unchanged to the provider that produced it.
 *
 * @category content
 */
export const ThinkingPart = Schema.Struct({
  type: Schema.Literal("thinking"),
  text: Schema.String,
  signature: Schema.optionalKey(Schema.String)
})
export type ThinkingPart = typeof ThinkingPart.Type

/**
 * A call of a client-declared tool. `arguments` is the JSON text of an object
 * (OpenAI's form; Gemini and Anthropic objects are serialised). `signature` holds
 * a Gemini `thoughtSignature`, which Gemini 3 requires back on the next turn.
 *
 * @category content
 */
export const ToolCallPart = Schema.Struct({
  type: Schema.Literal("tool_call"),
  id: Schema.String,
  name: Schema.String,
  arguments: Schema.String,
  signature: Schema.optionalKey(Schema.String)
})
export type ToolCallPart = typeof ToolCallPart.Type

/**
 * The result of a tool call, sent by the client. `content` is text (JSON text
 * when the tool returned an object).
 *
 * @category content
 */
export const ToolResultPart = Schema.Struct({
  type: Schema.Literal("tool_result"),
  callId: Schema.String,
  name: Schema.optionalKey(Schema.String),
  content: Schema.String,
  isError: Schema.optionalKey(Schema.Boolean)
})
export type ToolResultPart = typeof ToolResultPart.Type

/** Any content part. @category content */
export const Part = Schema.Union([TextPart, ImagePart, FilePart, ThinkingPart, ToolCallPart, ToolResultPart])
export type Part = typeof Part.Type

/**
 * One turn of the conversation. System instructions live in
 * `ChatRequest.system`, not here. `tool` messages carry `tool_result` parts.
 *
 * @category messages
 */
export const Message = Schema.Struct({
  role: Schema.Literals(["user", "assistant", "tool"]),
  content: Schema.Array(Part),
  name: Schema.optionalKey(Schema.String)
})
export type Message = typeof Message.Type

// ---------------------------------------------------------------------------
// Request
// ---------------------------------------------------------------------------

/** A JSON Schema object (tool parameters, response schemas), kept as JSON. @category request */
export const JsonSchemaObject = Schema.Record(Schema.String, Schema.Json)
export type JsonSchemaObject = typeof JsonSchemaObject.Type

/** A tool the model may call. @category request */
export const ToolDefinition = Schema.Struct({
  name: Schema.String,
  description: Schema.optionalKey(Schema.String),
  parameters: Schema.optionalKey(JsonSchemaObject)
})
export type ToolDefinition = typeof ToolDefinition.Type

/** How the model may use tools. @category request */
export const ToolChoice = Schema.Union([
  Schema.Literals(["auto", "none", "required"]),
  Schema.Struct({ type: Schema.Literal("tool"), name: Schema.String })
])
export type ToolChoice = typeof ToolChoice.Type

/** The shape of the answer. @category request */
export const ResponseFormat = Schema.Union([
  Schema.Struct({ type: Schema.Literal("text") }),
  Schema.Struct({ type: Schema.Literal("json") }),
  Schema.Struct({
    type: Schema.Literal("json_schema"),
    name: Schema.optionalKey(Schema.String),
    schema: JsonSchemaObject,
    strict: Schema.optionalKey(Schema.Boolean)
  })
])
export type ResponseFormat = typeof ResponseFormat.Type

/** Reasoning effort levels, from OpenAI's `reasoning_effort`. @category request */
export const ReasoningEffort = Schema.Literals(["none", "minimal", "low", "medium", "high", "xhigh", "max"])
export type ReasoningEffort = typeof ReasoningEffort.Type

/**
 * Reasoning controls: an effort level (OpenAI, Gemini 3 `thinkingLevel`) and/or a
 * token budget (Gemini 2.5 `thinkingBudget`, Anthropic `budget_tokens`), and
 * whether thought summaries are returned.
 *
 * @category request
 */
export const Reasoning = Schema.Struct({
  effort: Schema.optionalKey(ReasoningEffort),
  budgetTokens: Schema.optionalKey(Schema.Int),
  includeThoughts: Schema.optionalKey(Schema.Boolean)
})
export type Reasoning = typeof Reasoning.Type

/** A chat request in canonical form. @category request */
export const ChatRequest = Schema.Struct({
  model: Schema.String,
  system: Schema.optionalKey(Schema.Array(Schema.String)),
  messages: Schema.Array(Message),
  tools: Schema.optionalKey(Schema.Array(ToolDefinition)),
  toolChoice: Schema.optionalKey(ToolChoice),
  parallelToolCalls: Schema.optionalKey(Schema.Boolean),
  responseFormat: Schema.optionalKey(ResponseFormat),
  maxOutputTokens: Schema.optionalKey(Schema.Int),
  temperature: Schema.optionalKey(Schema.Finite),
  topP: Schema.optionalKey(Schema.Finite),
  topK: Schema.optionalKey(Schema.Int),
  stop: Schema.optionalKey(Schema.Array(Schema.String)),
  seed: Schema.optionalKey(Schema.Int),
  presencePenalty: Schema.optionalKey(Schema.Finite),
  frequencyPenalty: Schema.optionalKey(Schema.Finite),
  candidateCount: Schema.optionalKey(Schema.Int),
  reasoning: Schema.optionalKey(Reasoning),
  stream: Schema.Boolean,
  includeUsage: Schema.optionalKey(Schema.Boolean),
  user: Schema.optionalKey(Schema.String),
  /**
   * What the client sent that the translation left out by decision, for the
   * call's usage record (a Responses client's `web_search` tool, for one: a
   * tool another dialect's model cannot run). Never sent upstream.
   */
  notes: Schema.optionalKey(Schema.Array(Schema.String))
})
export type ChatRequest = typeof ChatRequest.Type

// ---------------------------------------------------------------------------
// Response
// ---------------------------------------------------------------------------

/**
 * Why a choice ended. `tool_calls` when the model asked for tools; `error` when
 * the upstream ended the choice abnormally (malformed call etc.).
 *
 * @category response
 */
export const FinishReason = Schema.Literals(["stop", "length", "tool_calls", "content_filter", "error"])
export type FinishReason = typeof FinishReason.Type

/**
 * Token usage as the upstream reported it. `completionTokens` includes
 * `reasoningTokens`; `promptTokens` includes `cachedTokens` (read from the
 * upstream's prompt cache) and `cacheWriteTokens` (written to it: Anthropic's
 * `cache_creation_input_tokens`, which a model's `cache_write` price bills).
 *
 * @category response
 */
export const Usage = Schema.Struct({
  promptTokens: Schema.Int,
  completionTokens: Schema.Int,
  totalTokens: Schema.Int,
  cachedTokens: Schema.optionalKey(Schema.Int),
  cacheWriteTokens: Schema.optionalKey(Schema.Int),
  reasoningTokens: Schema.optionalKey(Schema.Int)
})
export type Usage = typeof Usage.Type

/** One answer (OpenAI choice, Gemini candidate). @category response */
export const Choice = Schema.Struct({
  index: Schema.Int,
  content: Schema.Array(Part),
  finishReason: Schema.NullOr(FinishReason)
})
export type Choice = typeof Choice.Type

/**
 * A complete chat response. `usageRejected`: the upstream reported usage
 * whose figures are not token counts (negative, fractional, ...); it is not
 * in `usage`, and this says what was wrong (the call is counted locally).
 *
 * @category response
 */
export const ChatResponse = Schema.Struct({
  id: Schema.String,
  model: Schema.String,
  created: Schema.Int,
  choices: Schema.Array(Choice),
  usage: Schema.optionalKey(Usage),
  usageRejected: Schema.optionalKey(Schema.String)
})
export type ChatResponse = typeof ChatResponse.Type

// ---------------------------------------------------------------------------
// Stream
// ---------------------------------------------------------------------------

/** The stream opened (id, model and creation time of the response). @category stream */
export const StartEvent = Schema.Struct({
  type: Schema.Literal("start"),
  id: Schema.String,
  model: Schema.String,
  created: Schema.Int
})

/** A fragment of answer text of choice `index`. @category stream */
export const TextDeltaEvent = Schema.Struct({
  type: Schema.Literal("text"),
  index: Schema.Int,
  text: Schema.String
})

/** A fragment of reasoning text (and/or its signature) of choice `index`. @category stream */
export const ThinkingDeltaEvent = Schema.Struct({
  type: Schema.Literal("thinking"),
  index: Schema.Int,
  text: Schema.String,
  signature: Schema.optionalKey(Schema.String)
})

/**
 * A tool call of choice `index` begins. `call` numbers the calls of the choice
 * from 0; later argument fragments refer to it.
 *
 * @category stream
 */
export const ToolCallStartEvent = Schema.Struct({
  type: Schema.Literal("tool_call_start"),
  index: Schema.Int,
  call: Schema.Int,
  id: Schema.String,
  name: Schema.String,
  signature: Schema.optionalKey(Schema.String)
})

/** A fragment of the JSON arguments of tool call `call` of choice `index`. @category stream */
export const ToolCallDeltaEvent = Schema.Struct({
  type: Schema.Literal("tool_call_delta"),
  index: Schema.Int,
  call: Schema.Int,
  arguments: Schema.String
})

/** Choice `index` ended. @category stream */
export const FinishEvent = Schema.Struct({
  type: Schema.Literal("finish"),
  index: Schema.Int,
  reason: FinishReason
})

/** Usage so far (cumulative; the last one wins). @category stream */
export const UsageEvent = Schema.Struct({
  type: Schema.Literal("usage"),
  usage: Usage
})

/**
 * The upstream reported usage whose figures are not token counts; `reason`
 * names the first bad figure (`Tokens.badCount`). A decoder emits it in place
 * of a `usage` event; encoders write nothing for it (the client is not sent
 * figures the gateway refused), and the call is counted locally.
 *
 * @category stream
 */
export const UsageRejectedEvent = Schema.Struct({
  type: Schema.Literal("usage_rejected"),
  reason: Schema.String
})

/** Any canonical stream event. @category stream */
export const StreamEvent = Schema.Union([
  StartEvent,
  TextDeltaEvent,
  ThinkingDeltaEvent,
  ToolCallStartEvent,
  ToolCallDeltaEvent,
  FinishEvent,
  UsageEvent,
  UsageRejectedEvent
])
export type StreamEvent = typeof StreamEvent.Type

/**
 * What embeddings are for, when the caller said (Gemini's `taskType`, in lower
 * case): models that take a task embed for it (Vertex AI's `task_type`,
 * Cohere's `input_type`); the others ignore it.
 *
 * @category embeddings
 */
export const EmbedTask = Schema.Literals([
  "retrieval_query",
  "retrieval_document",
  "semantic_similarity",
  "classification",
  "clustering",
  "question_answering",
  "fact_verification",
  "code_retrieval_query"
])
export type EmbedTask = typeof EmbedTask.Type

/**
 * An embeddings request: texts to embed, in order, the size of the vectors
 * when the caller asked for one, and what they are for when it said.
 *
 * @category embeddings
 */
export const EmbedRequest = Schema.Struct({
  model: Schema.String,
  inputs: Schema.Array(Schema.String),
  dimensions: Schema.optionalKey(Schema.Int),
  task: Schema.optionalKey(EmbedTask)
})
export type EmbedRequest = typeof EmbedRequest.Type

/**
 * An embeddings answer: one vector per input, in the inputs' order, and the
 * tokens the upstream counted when it said (`usageRejected`: it said
 * something that is not a token count, refused as for chat).
 *
 * @category embeddings
 */
export const EmbedResponse = Schema.Struct({
  vectors: Schema.Array(Schema.Array(Schema.Finite)),
  promptTokens: Schema.optionalKey(Schema.Int),
  usageRejected: Schema.optionalKey(Schema.String)
})
export type EmbedResponse = typeof EmbedResponse.Type
