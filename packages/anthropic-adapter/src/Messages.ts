/**
 * Wire schemas of the Anthropic Messages API (`POST /v1/messages`, API
 * version `2023-06-01`): the request body, the response, the server-sent stream
 * events and the error envelope (wire-formats §6, §7.3).
 *
 * Unknown fields are tolerated and dropped. Content blocks this package does
 * not translate (server tools and their results, search results, containers)
 * decode as `OtherBlock` so the translators can refuse them by name, instead of
 * failing with a schema error. Translation to and from the canonical model lives
 * in `Request.ts`, `Response.ts` and `Stream.ts`.
 *
 * @since 0.1.0
 */
import { type GatewayError, Issues } from "@modelgate/core"
import { Result, Schema } from "effect"

/** The `anthropic-version` header value this package speaks. @category constants */
export const ANTHROPIC_VERSION = "2023-06-01"

/** A JSON object kept as JSON (tool inputs, schemas). @category common */
export const JsonObject = Schema.Record(Schema.String, Schema.Json)
export type JsonObject = typeof JsonObject.Type

// ---------------------------------------------------------------------------
// Content blocks
// ---------------------------------------------------------------------------

/** `{"type":"text","text"}` (with optional `cache_control` and `citations`, not translated). @category content */
export const TextBlock = Schema.Struct({
  type: Schema.Literal("text"),
  text: Schema.String,
  cache_control: Schema.optionalKey(Schema.Unknown),
  citations: Schema.optionalKey(Schema.Unknown)
})
export type TextBlock = typeof TextBlock.Type

/** `{"type":"base64","media_type","data"}`. @category content */
export const Base64Source = Schema.Struct({
  type: Schema.Literal("base64"),
  media_type: Schema.String,
  data: Schema.String
})
export type Base64Source = typeof Base64Source.Type

/** `{"type":"url","url"}`. @category content */
export const UrlSource = Schema.Struct({
  type: Schema.Literal("url"),
  url: Schema.String
})
export type UrlSource = typeof UrlSource.Type

/** `{"type":"file","file_id"}`: a Files API upload (exists only at Anthropic). @category content */
export const FileSource = Schema.Struct({
  type: Schema.Literal("file"),
  file_id: Schema.String
})
export type FileSource = typeof FileSource.Type

/** `{"type":"text","media_type":"text/plain","data"}`: a plain-text document. @category content */
export const PlainTextSource = Schema.Struct({
  type: Schema.Literal("text"),
  media_type: Schema.optionalKey(Schema.String),
  data: Schema.String
})
export type PlainTextSource = typeof PlainTextSource.Type

/** `{"type":"content","content"}`: a document made of content blocks (not translated). @category content */
export const ContentSource = Schema.Struct({
  type: Schema.Literal("content"),
  content: Schema.Unknown
})

/** The media types Anthropic accepts for images. @category content */
export const IMAGE_MEDIA_TYPES: ReadonlyArray<string> = ["image/jpeg", "image/png", "image/gif", "image/webp"]

/** `{"type":"image","source"}`. @category content */
export const ImageBlock = Schema.Struct({
  type: Schema.Literal("image"),
  source: Schema.Union([Base64Source, UrlSource, FileSource]),
  cache_control: Schema.optionalKey(Schema.Unknown)
})
export type ImageBlock = typeof ImageBlock.Type

/** `{"type":"document","source","title"?,"context"?}` (PDF or plain text). @category content */
export const DocumentBlock = Schema.Struct({
  type: Schema.Literal("document"),
  source: Schema.Union([Base64Source, UrlSource, FileSource, PlainTextSource, ContentSource]),
  title: Schema.optionalKey(Schema.NullOr(Schema.String)),
  context: Schema.optionalKey(Schema.NullOr(Schema.String)),
  cache_control: Schema.optionalKey(Schema.Unknown),
  citations: Schema.optionalKey(Schema.Unknown)
})
export type DocumentBlock = typeof DocumentBlock.Type

/** `{"type":"tool_use","id","name","input"}`: a call of a client tool (assistant turns). @category content */
export const ToolUseBlock = Schema.Struct({
  type: Schema.Literal("tool_use"),
  id: Schema.String,
  name: Schema.String,
  input: JsonObject,
  cache_control: Schema.optionalKey(Schema.Unknown)
})
export type ToolUseBlock = typeof ToolUseBlock.Type

/**
 * `{"type":"tool_result","tool_use_id","content"?,"is_error"?}` (user turns).
 * `content` is a string or a list of text, image and document blocks.
 *
 * @category content
 */
export const ToolResultBlock = Schema.Struct({
  type: Schema.Literal("tool_result"),
  tool_use_id: Schema.String,
  content: Schema.optionalKey(
    Schema.Union([Schema.String, Schema.Array(Schema.Union([TextBlock, ImageBlock, DocumentBlock]))])
  ),
  is_error: Schema.optionalKey(Schema.Boolean),
  cache_control: Schema.optionalKey(Schema.Unknown)
})
export type ToolResultBlock = typeof ToolResultBlock.Type

/** `{"type":"thinking","thinking","signature"}`: extended thinking, signed. @category content */
export const ThinkingBlock = Schema.Struct({
  type: Schema.Literal("thinking"),
  thinking: Schema.String,
  signature: Schema.optionalKey(Schema.String)
})
export type ThinkingBlock = typeof ThinkingBlock.Type

/** `{"type":"redacted_thinking","data"}`: encrypted thinking. @category content */
export const RedactedThinkingBlock = Schema.Struct({
  type: Schema.Literal("redacted_thinking"),
  data: Schema.String
})
export type RedactedThinkingBlock = typeof RedactedThinkingBlock.Type

/** The block types this package knows; anything else is an `OtherBlock`. @category content */
export const KNOWN_BLOCK_TYPES: ReadonlyArray<string> = [
  "text",
  "image",
  "document",
  "tool_use",
  "tool_result",
  "thinking",
  "redacted_thinking"
]

const otherType = Schema.String.check(
  Schema.makeFilter((type: string) => KNOWN_BLOCK_TYPES.includes(type) ? `a '${type}' block is malformed` : undefined)
)

/**
 * Any other block (`server_tool_use`, `web_search_tool_result`,
 * `search_result`, `container_upload`, ...): kept only by its `type`, so the
 * translators can refuse it with a clear message.
 *
 * @category content
 */
export const OtherBlock = Schema.Struct({ type: otherType })
export type OtherBlock = typeof OtherBlock.Type

/** Any block of a request message. @category content */
export const ContentBlock = Schema.Union([
  TextBlock,
  ImageBlock,
  DocumentBlock,
  ToolUseBlock,
  ToolResultBlock,
  ThinkingBlock,
  RedactedThinkingBlock,
  OtherBlock
])
export type ContentBlock = typeof ContentBlock.Type

/**
 * The blocks this package translates: a `ContentBlock` whose `type` is in
 * `KNOWN_BLOCK_TYPES` (TypeScript cannot narrow the `OtherBlock` member away by
 * itself, since its `type` is any string).
 *
 * @category content
 */
export type KnownBlock =
  | TextBlock
  | ImageBlock
  | DocumentBlock
  | ToolUseBlock
  | ToolResultBlock
  | ThinkingBlock
  | RedactedThinkingBlock

/** Narrows a decoded block to `KnownBlock`, or `undefined` for an `OtherBlock`. @category content */
export const knownBlock = (block: ContentBlock): KnownBlock | undefined =>
  KNOWN_BLOCK_TYPES.includes(block.type) ? block as KnownBlock : undefined

/**
 * One turn: `{"role","content"}` with content a string or blocks. `system`
 * turns are instructions in the middle of the conversation (Claude Code sends
 * them, under its `mid-conversation-tool-changes` beta).
 *
 * @category content
 */
export const MessageParam = Schema.Struct({
  role: Schema.Literals(["user", "assistant", "system"]),
  content: Schema.Union([Schema.String, Schema.Array(ContentBlock)])
})
export type MessageParam = typeof MessageParam.Type

// ---------------------------------------------------------------------------
// Request
// ---------------------------------------------------------------------------

/**
 * A tool: a client tool `{"name","description"?,"input_schema"}`, or one of
 * Anthropic's server tools, which carry a versioned `type`
 * (`web_search_20250305`, `bash_20250124`, ...) and are not translated.
 *
 * @category request
 */
export const Tool = Schema.Struct({
  type: Schema.optionalKey(Schema.NullOr(Schema.String)),
  name: Schema.String,
  description: Schema.optionalKey(Schema.String),
  input_schema: Schema.optionalKey(JsonObject),
  cache_control: Schema.optionalKey(Schema.Unknown),
  strict: Schema.optionalKey(Schema.Boolean)
})
export type Tool = typeof Tool.Type

/** `tool_choice`: auto, any, none, or one named tool. @category request */
export const ToolChoice = Schema.Union([
  Schema.Struct({
    type: Schema.Literals(["auto", "any"]),
    disable_parallel_tool_use: Schema.optionalKey(Schema.Boolean)
  }),
  Schema.Struct({ type: Schema.Literal("none") }),
  Schema.Struct({
    type: Schema.Literal("tool"),
    name: Schema.String,
    disable_parallel_tool_use: Schema.optionalKey(Schema.Boolean)
  })
])
export type ToolChoice = typeof ToolChoice.Type

/** `thinking`: enabled with a token budget, disabled, or adaptive. @category request */
export const ThinkingConfig = Schema.Union([
  Schema.Struct({
    type: Schema.Literal("enabled"),
    budget_tokens: Schema.Int,
    /** `summarized` (default) or `omitted`: whether the answer carries the thinking text. */
    display: Schema.optionalKey(Schema.NullOr(Schema.String))
  }),
  Schema.Struct({ type: Schema.Literal("disabled") }),
  Schema.Struct({ type: Schema.Literal("adaptive") })
])
export type ThinkingConfig = typeof ThinkingConfig.Type

/** `output_config`: structured output format and effort. @category request */
export const OutputConfig = Schema.Struct({
  effort: Schema.optionalKey(Schema.NullOr(Schema.String)),
  format: Schema.optionalKey(Schema.NullOr(Schema.Struct({ type: Schema.Literal("json_schema"), schema: JsonObject })))
})
export type OutputConfig = typeof OutputConfig.Type

/**
 * The `POST /v1/messages` body. `model`, `max_tokens` and `messages` are
 * required by Anthropic.
 *
 * @category request
 */
export const MessagesRequest = Schema.Struct({
  model: Schema.String,
  max_tokens: Schema.Int,
  messages: Schema.Array(MessageParam),
  system: Schema.optionalKey(Schema.Union([Schema.String, Schema.Array(TextBlock)])),
  stop_sequences: Schema.optionalKey(Schema.Array(Schema.String)),
  stream: Schema.optionalKey(Schema.Boolean),
  temperature: Schema.optionalKey(Schema.Finite),
  top_p: Schema.optionalKey(Schema.Finite),
  top_k: Schema.optionalKey(Schema.Int),
  tools: Schema.optionalKey(Schema.Array(Tool)),
  tool_choice: Schema.optionalKey(ToolChoice),
  thinking: Schema.optionalKey(ThinkingConfig),
  metadata: Schema.optionalKey(Schema.Struct({ user_id: Schema.optionalKey(Schema.NullOr(Schema.String)) })),
  output_config: Schema.optionalKey(OutputConfig),
  service_tier: Schema.optionalKey(Schema.String),
  container: Schema.optionalKey(Schema.Unknown),
  mcp_servers: Schema.optionalKey(Schema.Unknown)
})
export type MessagesRequest = typeof MessagesRequest.Type

// ---------------------------------------------------------------------------
// Response
// ---------------------------------------------------------------------------

/**
 * `usage`. `input_tokens` excludes the cache reads and writes, which are
 * reported separately. In stream `message_delta` events every field but
 * `output_tokens` may be missing. Answers and events are decoded with their
 * `usage` taken as it comes and checked apart (`Response.readUsageFigures`),
 * so figures that are not token counts are refused without dropping the
 * answer.
 *
 * @category response
 */
export const Usage = Schema.Struct({
  input_tokens: Schema.optionalKey(Schema.NullOr(Schema.Int)),
  output_tokens: Schema.Int,
  cache_creation_input_tokens: Schema.optionalKey(Schema.NullOr(Schema.Int)),
  cache_read_input_tokens: Schema.optionalKey(Schema.NullOr(Schema.Int)),
  service_tier: Schema.optionalKey(Schema.NullOr(Schema.String))
})
export type Usage = typeof Usage.Type

/** Any block of an answer (server-tool blocks decode as `OtherBlock` and are skipped). @category response */
export const ResponseBlock = Schema.Union([TextBlock, ToolUseBlock, ThinkingBlock, RedactedThinkingBlock, OtherBlock])
export type ResponseBlock = typeof ResponseBlock.Type

/** The answer blocks this package translates. @category response */
export type KnownResponseBlock = TextBlock | ToolUseBlock | ThinkingBlock | RedactedThinkingBlock

/** Narrows a decoded answer block to `KnownResponseBlock`, or `undefined` for any other block. @category response */
export const knownResponseBlock = (block: ResponseBlock): KnownResponseBlock | undefined =>
  block.type === "text" || block.type === "tool_use" || block.type === "thinking" || block.type === "redacted_thinking"
    ? block as KnownResponseBlock
    : undefined

/**
 * Stop reasons: `end_turn`, `max_tokens`, `stop_sequence`, `tool_use`,
 * `pause_turn`, `refusal`, `model_context_window_exceeded`. Kept as a string so
 * a new reason does not make an answer unreadable.
 *
 * @category response
 */
export type StopReason =
  | "end_turn"
  | "max_tokens"
  | "stop_sequence"
  | "tool_use"
  | "pause_turn"
  | "refusal"
  | "model_context_window_exceeded"

/** A complete answer (`"type":"message"`). @category response */
export const MessagesResponse = Schema.Struct({
  id: Schema.String,
  type: Schema.optionalKey(Schema.Literal("message")),
  role: Schema.optionalKey(Schema.Literal("assistant")),
  model: Schema.String,
  content: Schema.Array(ResponseBlock),
  stop_reason: Schema.optionalKey(Schema.NullOr(Schema.String)),
  stop_sequence: Schema.optionalKey(Schema.NullOr(Schema.String)),
  usage: Schema.optionalKey(Schema.Unknown)
})
export type MessagesResponse = typeof MessagesResponse.Type

/** A text block as this package writes it. @category output */
export interface OutputTextBlock {
  readonly type: "text"
  readonly text: string
}

/** A tool_use block as this package writes it. @category output */
export interface OutputToolUseBlock {
  readonly type: "tool_use"
  readonly id: string
  readonly name: string
  readonly input: JsonObject
}

/** A thinking block as this package writes it. @category output */
export interface OutputThinkingBlock {
  readonly type: "thinking"
  readonly thinking: string
  readonly signature: string
}

/** A redacted_thinking block as this package writes it. @category output */
export interface OutputRedactedThinkingBlock {
  readonly type: "redacted_thinking"
  readonly data: string
}

/** A block of an answer as this package writes it. @category output */
export type OutputResponseBlock =
  | OutputTextBlock
  | OutputToolUseBlock
  | OutputThinkingBlock
  | OutputRedactedThinkingBlock

/** Usage as this package writes it (all four counts, always). @category output */
export interface OutputUsage {
  readonly input_tokens: number
  readonly output_tokens: number
  readonly cache_creation_input_tokens: number
  readonly cache_read_input_tokens: number
}

/** An answer as this package writes it for an Anthropic client. @category output */
export interface OutputResponse {
  readonly id: string
  readonly type: "message"
  readonly role: "assistant"
  readonly model: string
  readonly content: ReadonlyArray<OutputResponseBlock>
  readonly stop_reason: StopReason | null
  readonly stop_sequence: string | null
  readonly usage: OutputUsage
}

// ---------------------------------------------------------------------------
// Stream events
// ---------------------------------------------------------------------------

/** `message_start`: the message shell with input usage. @category stream */
export const MessageStartEvent = Schema.Struct({
  type: Schema.Literal("message_start"),
  message: Schema.Struct({
    id: Schema.String,
    model: Schema.String,
    content: Schema.optionalKey(Schema.Array(Schema.Unknown)),
    usage: Schema.optionalKey(Schema.Unknown)
  })
})
export type MessageStartEvent = typeof MessageStartEvent.Type

/** `content_block_start`: block `index` opens (tool_use blocks start with `input: {}`). @category stream */
export const ContentBlockStartEvent = Schema.Struct({
  type: Schema.Literal("content_block_start"),
  index: Schema.Int,
  content_block: ResponseBlock
})
export type ContentBlockStartEvent = typeof ContentBlockStartEvent.Type

/** The delta of a `content_block_delta`. @category stream */
export const Delta = Schema.Union([
  Schema.Struct({ type: Schema.Literal("text_delta"), text: Schema.String }),
  Schema.Struct({ type: Schema.Literal("input_json_delta"), partial_json: Schema.String }),
  Schema.Struct({ type: Schema.Literal("thinking_delta"), thinking: Schema.String }),
  Schema.Struct({ type: Schema.Literal("signature_delta"), signature: Schema.String }),
  Schema.Struct({ type: Schema.Literal("citations_delta"), citation: Schema.Unknown })
])
export type Delta = typeof Delta.Type

/** `content_block_delta`: a fragment of block `index`. @category stream */
export const ContentBlockDeltaEvent = Schema.Struct({
  type: Schema.Literal("content_block_delta"),
  index: Schema.Int,
  delta: Delta
})
export type ContentBlockDeltaEvent = typeof ContentBlockDeltaEvent.Type

/** `content_block_stop`: block `index` is complete. @category stream */
export const ContentBlockStopEvent = Schema.Struct({
  type: Schema.Literal("content_block_stop"),
  index: Schema.Int
})

/** `message_delta`: the stop reason and the cumulative usage. @category stream */
export const MessageDeltaEvent = Schema.Struct({
  type: Schema.Literal("message_delta"),
  delta: Schema.Struct({
    stop_reason: Schema.optionalKey(Schema.NullOr(Schema.String)),
    stop_sequence: Schema.optionalKey(Schema.NullOr(Schema.String))
  }),
  usage: Schema.optionalKey(Schema.Unknown)
})
export type MessageDeltaEvent = typeof MessageDeltaEvent.Type

/** `message_stop`: the end of the message. @category stream */
export const MessageStopEvent = Schema.Struct({ type: Schema.Literal("message_stop") })

/** `ping`: keep-alive, may appear anywhere. @category stream */
export const PingEvent = Schema.Struct({ type: Schema.Literal("ping") })

/** The `error` object of an error envelope or error event. @category errors */
export const ErrorObject = Schema.Struct({
  type: Schema.String,
  message: Schema.String
})

/** `{"type":"error","error":{"type","message"},"request_id"?}`: the error body and the in-stream `error` event. @category errors */
export const ErrorEnvelope = Schema.Struct({
  type: Schema.Literal("error"),
  error: ErrorObject,
  request_id: Schema.optionalKey(Schema.NullOr(Schema.String))
})
export type ErrorEnvelope = typeof ErrorEnvelope.Type

/** Any stream event. @category stream */
export const StreamEvent = Schema.Union([
  MessageStartEvent,
  ContentBlockStartEvent,
  ContentBlockDeltaEvent,
  ContentBlockStopEvent,
  MessageDeltaEvent,
  MessageStopEvent,
  PingEvent,
  ErrorEnvelope
])
export type StreamEvent = typeof StreamEvent.Type

/** A stream event as this package writes it: the SSE `event:` name and the `data:` JSON value. @category output */
export interface OutputEvent {
  readonly event: string
  readonly data: unknown
}

// ---------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------

const decodeRequestWire = Schema.decodeUnknownResult(MessagesRequest)
const decodeResponseWire = Schema.decodeUnknownResult(MessagesResponse)
const decodeEventWire = Schema.decodeUnknownResult(StreamEvent)

const decodeWith = <A>(
  decode: (u: unknown) => Result.Result<A, Schema.SchemaError>,
  body: unknown
): Result.Result<A, GatewayError.InvalidRequest> => {
  const result = decode(body)
  return Result.isSuccess(result)
    ? Result.succeed(result.success)
    : Result.fail(Issues.invalidRequest(result.failure.issue))
}

/**
 * Decodes a `POST /v1/messages` body into the wire type; a bad body fails with
 * an `InvalidRequest` naming the field (`messages[1].content[0].source`).
 *
 * @category decoding
 */
export const decodeRequestBody = (body: unknown): Result.Result<MessagesRequest, GatewayError.InvalidRequest> =>
  decodeWith(decodeRequestWire, body)

/**
 * Decodes an answer body into the wire type (the error names the field).
 *
 * @category decoding
 */
export const decodeResponseBody = (body: unknown): Result.Result<MessagesResponse, GatewayError.InvalidRequest> =>
  decodeWith(decodeResponseWire, body)

/**
 * Decodes one parsed stream event (the error names the field).
 *
 * @category decoding
 */
export const decodeStreamEvent = (event: unknown): Result.Result<StreamEvent, GatewayError.InvalidRequest> =>
  decodeWith(decodeEventWire, event)
