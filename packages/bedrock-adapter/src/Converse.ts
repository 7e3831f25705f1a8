/**
 * Wire schemas of AWS Bedrock Runtime's Converse API
 * (`POST /model/{modelId}/converse`, and `/converse-stream` whose events are
 * the payloads of `Stream.ts`): the request body, the answer, the stream
 * events' payloads and the error body.
 *
 * Converse content blocks are unions written as objects with exactly one
 * member (`{"text": ...}`, `{"toolUse": {...}}`, ...). Blocks this package
 * does not translate (video, guard content, cache points, citations, S3
 * sources) decode as `OtherBlock` so the translators can name them in a
 * refusal instead of failing with a schema error. Bytes (images, documents,
 * redacted reasoning) are base64 in JSON.
 *
 * @since 0.1.0
 */
import { type GatewayError, Issues } from "@modelgate/core"
import { Result, Schema } from "effect"

/** A JSON object kept as JSON (tool inputs, schemas). @category common */
export const JsonObject = Schema.Record(Schema.String, Schema.Json)
export type JsonObject = typeof JsonObject.Type

// ---------------------------------------------------------------------------
// Content blocks
// ---------------------------------------------------------------------------

/** The image formats Converse accepts. @category content */
export const IMAGE_FORMATS = ["png", "jpeg", "gif", "webp"] as const
export type ImageFormat = typeof IMAGE_FORMATS[number]

/** The document formats Converse accepts. @category content */
export const DOCUMENT_FORMATS = ["pdf", "csv", "doc", "docx", "xls", "xlsx", "html", "txt", "md"] as const
export type DocumentFormat = typeof DOCUMENT_FORMATS[number]

/** `{"bytes": base64}` (an `s3Location` source decodes as something else and is refused). @category content */
export const BytesSource = Schema.Struct({ bytes: Schema.String })

/** `{"image": {"format", "source": {"bytes"}}}`. @category content */
export const ImageBlock = Schema.Struct({
  image: Schema.Struct({ format: Schema.Literals(IMAGE_FORMATS), source: BytesSource })
})
export type ImageBlock = typeof ImageBlock.Type

/** `{"document": {"format", "name", "source": {"bytes"}}}`. @category content */
export const DocumentBlock = Schema.Struct({
  document: Schema.Struct({ format: Schema.Literals(DOCUMENT_FORMATS), name: Schema.String, source: BytesSource })
})
export type DocumentBlock = typeof DocumentBlock.Type

/** `{"text"}`. @category content */
export const TextBlock = Schema.Struct({ text: Schema.String })
export type TextBlock = typeof TextBlock.Type

/** `{"toolUse": {"toolUseId", "name", "input"}}`: a call of a client tool (assistant turns). @category content */
export const ToolUseBlock = Schema.Struct({
  toolUse: Schema.Struct({ toolUseId: Schema.String, name: Schema.String, input: Schema.Json })
})
export type ToolUseBlock = typeof ToolUseBlock.Type

/** One item of a tool result's content: text or JSON (images and documents are refused). @category content */
export const ToolResultContent = Schema.Union([
  Schema.Struct({ text: Schema.String }),
  Schema.Struct({ json: Schema.Json })
])
export type ToolResultContent = typeof ToolResultContent.Type

/** `{"toolResult": {"toolUseId", "content", "status"?}}` (user turns). @category content */
export const ToolResultBlock = Schema.Struct({
  toolResult: Schema.Struct({
    toolUseId: Schema.String,
    content: Schema.Array(Schema.Union([ToolResultContent, Schema.Record(Schema.String, Schema.Unknown)])),
    status: Schema.optionalKey(Schema.Literals(["success", "error"]))
  })
})
export type ToolResultBlock = typeof ToolResultBlock.Type

/**
 * `{"reasoningContent": {"reasoningText": {"text", "signature"?}}}` or
 * `{"reasoningContent": {"redactedContent": base64}}`: Claude's extended
 * thinking as Converse carries it.
 *
 * @category content
 */
export const ReasoningBlock = Schema.Struct({
  reasoningContent: Schema.Union([
    Schema.Struct({
      reasoningText: Schema.Struct({ text: Schema.String, signature: Schema.optionalKey(Schema.String) })
    }),
    Schema.Struct({ redactedContent: Schema.String })
  ])
})
export type ReasoningBlock = typeof ReasoningBlock.Type

/** The block members this package translates; any other member makes an `OtherBlock`. @category content */
export const KNOWN_MEMBERS: ReadonlyArray<string> = [
  "text",
  "image",
  "document",
  "toolUse",
  "toolResult",
  "reasoningContent"
]

/**
 * Any other block (`video`, `guardContent`, `cachePoint`, `citationsContent`,
 * ...): kept only as an object, so the translators can refuse it by name.
 *
 * @category content
 */
export const OtherBlock = Schema.Record(Schema.String, Schema.Unknown).check(
  Schema.makeFilter((block: Readonly<Record<string, unknown>>) => {
    const member = Object.keys(block).find((key) => KNOWN_MEMBERS.includes(key))
    return member === undefined ? undefined : `a '${member}' block is malformed`
  })
)
export type OtherBlock = typeof OtherBlock.Type

/** Any block of a message. @category content */
export const ContentBlock = Schema.Union([
  TextBlock,
  ImageBlock,
  DocumentBlock,
  ToolUseBlock,
  ToolResultBlock,
  ReasoningBlock,
  OtherBlock
])
export type ContentBlock = typeof ContentBlock.Type

/** The blocks this package translates. @category content */
export type KnownBlock = TextBlock | ImageBlock | DocumentBlock | ToolUseBlock | ToolResultBlock | ReasoningBlock

/** The member name of a block (`text`, `toolUse`, ...; the first key of an `OtherBlock`). @category content */
export const memberOf = (block: ContentBlock): string => Object.keys(block)[0] ?? "(empty)"

/** Narrows a decoded block to `KnownBlock`, or `undefined` for an `OtherBlock`. @category content */
export const knownBlock = (block: ContentBlock): KnownBlock | undefined =>
  KNOWN_MEMBERS.includes(memberOf(block)) ? block as KnownBlock : undefined

/** One turn. @category content */
export const Message = Schema.Struct({
  role: Schema.Literals(["user", "assistant"]),
  content: Schema.Array(ContentBlock)
})
export type Message = typeof Message.Type

// ---------------------------------------------------------------------------
// Request
// ---------------------------------------------------------------------------

/** A system block: `{"text"}` (cache points and guard content are other members). @category request */
export const SystemBlock = Schema.Union([TextBlock, Schema.Record(Schema.String, Schema.Unknown)])
export type SystemBlock = typeof SystemBlock.Type

/** `{"toolSpec": {"name", "description"?, "inputSchema": {"json"}}}`. @category request */
export const Tool = Schema.Struct({
  toolSpec: Schema.Struct({
    name: Schema.String,
    description: Schema.optionalKey(Schema.String),
    inputSchema: Schema.Struct({ json: JsonObject })
  })
})
export type Tool = typeof Tool.Type

/** `toolChoice`: `{"auto":{}}`, `{"any":{}}` or `{"tool":{"name"}}` (Converse has no "none"). @category request */
export const ToolChoice = Schema.Union([
  Schema.Struct({ auto: Schema.Struct({}) }),
  Schema.Struct({ any: Schema.Struct({}) }),
  Schema.Struct({ tool: Schema.Struct({ name: Schema.String }) })
])
export type ToolChoice = typeof ToolChoice.Type

/** `inferenceConfig`. @category request */
export const InferenceConfig = Schema.Struct({
  maxTokens: Schema.optionalKey(Schema.Int),
  temperature: Schema.optionalKey(Schema.Finite),
  topP: Schema.optionalKey(Schema.Finite),
  stopSequences: Schema.optionalKey(Schema.Array(Schema.String))
})
export type InferenceConfig = typeof InferenceConfig.Type

/** The Converse request body (the model is in the path; the stream is the other path). @category request */
export const ConverseRequest = Schema.Struct({
  messages: Schema.Array(Message),
  system: Schema.optionalKey(Schema.Array(SystemBlock)),
  inferenceConfig: Schema.optionalKey(InferenceConfig),
  toolConfig: Schema.optionalKey(Schema.Struct({
    tools: Schema.Array(Schema.Union([Tool, Schema.Record(Schema.String, Schema.Unknown)])),
    toolChoice: Schema.optionalKey(ToolChoice)
  })),
  additionalModelRequestFields: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown)),
  additionalModelResponseFieldPaths: Schema.optionalKey(Schema.Array(Schema.String)),
  guardrailConfig: Schema.optionalKey(Schema.Unknown),
  requestMetadata: Schema.optionalKey(Schema.Record(Schema.String, Schema.String)),
  performanceConfig: Schema.optionalKey(Schema.Unknown)
})
export type ConverseRequest = typeof ConverseRequest.Type

// ---------------------------------------------------------------------------
// Answer
// ---------------------------------------------------------------------------

/**
 * Stop reasons: `end_turn`, `tool_use`, `max_tokens`, `stop_sequence`,
 * `guardrail_intervened`, `content_filtered`, `model_context_window_exceeded`.
 * Kept as a string so a new reason does not make an answer unreadable.
 *
 * @category response
 */
export type StopReason =
  | "end_turn"
  | "tool_use"
  | "max_tokens"
  | "stop_sequence"
  | "guardrail_intervened"
  | "content_filtered"
  | "model_context_window_exceeded"

/**
 * `usage`: `inputTokens` excludes the cache reads and writes, which are
 * reported apart (`cacheReadInputTokens`, `cacheWriteInputTokens`);
 * `totalTokens` is the sum of all four. Read apart from the schema
 * (`Response.readUsage`), so figures that are not token counts are refused
 * without dropping the answer.
 *
 * @category response
 */
export interface Usage {
  readonly inputTokens: number
  readonly outputTokens: number
  readonly totalTokens?: number | undefined
  readonly cacheReadInputTokens?: number | undefined
  readonly cacheWriteInputTokens?: number | undefined
}

/** A Converse answer. @category response */
export const ConverseResponse = Schema.Struct({
  output: Schema.Struct({ message: Message }),
  stopReason: Schema.String,
  usage: Schema.optionalKey(Schema.Unknown),
  metrics: Schema.optionalKey(Schema.Unknown),
  additionalModelResponseFields: Schema.optionalKey(Schema.Unknown)
})
export type ConverseResponse = typeof ConverseResponse.Type

/** A block of an answer as this package writes it. @category output */
export type OutputBlock =
  | { readonly text: string }
  | { readonly toolUse: { readonly toolUseId: string; readonly name: string; readonly input: JsonObject } }
  | {
    readonly reasoningContent:
      | { readonly reasoningText: { readonly text: string; readonly signature?: string } }
      | { readonly redactedContent: string }
  }

/** An answer as this package writes it. @category output */
export interface OutputResponse {
  readonly output: { readonly message: { readonly role: "assistant"; readonly content: ReadonlyArray<OutputBlock> } }
  readonly stopReason: StopReason
  readonly usage: Usage
  readonly metrics: { readonly latencyMs: number }
}

// ---------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------

const decodeRequestWire = Schema.decodeUnknownResult(ConverseRequest)
const decodeResponseWire = Schema.decodeUnknownResult(ConverseResponse)

const decodeWith = <A>(
  decode: (u: unknown) => Result.Result<A, Schema.SchemaError>,
  body: unknown
): Result.Result<A, GatewayError.InvalidRequest> => {
  const result = decode(body)
  return Result.isSuccess(result)
    ? Result.succeed(result.success)
    : Result.fail(Issues.invalidRequest(result.failure.issue))
}

/** Decodes a Converse request body (the error names the field). @category decoding */
export const decodeRequestBody = (body: unknown): Result.Result<ConverseRequest, GatewayError.InvalidRequest> =>
  decodeWith(decodeRequestWire, body)

/** Decodes a Converse answer (the error names the field). @category decoding */
export const decodeResponseBody = (body: unknown): Result.Result<ConverseResponse, GatewayError.InvalidRequest> =>
  decodeWith(decodeResponseWire, body)
