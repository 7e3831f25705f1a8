/**
 * Wire schemas of OpenAI's Responses API (`POST /v1/responses`): the request
 * body and its input items, tools and settings, and the shapes of the answer
 * (a `response` object) and of its stream events, as this package reads and
 * writes them (wire-formats §4.7).
 *
 * Input items are decoded one at a time (`decodeItem`), so an item of a kind
 * this package does not translate (a hosted tool's call in the history) can be
 * left out with a note instead of failing the whole body, and every error names
 * its field (`input[3].content[0].image_url`). Unknown fields are tolerated and
 * dropped; optional fields may be `null`.
 *
 * Translation to and from the canonical model lives in `ResponsesRequest.ts`
 * and `ResponsesAnswer.ts`; the same-dialect relay in `ResponsesPassthrough.ts`.
 *
 * @since 0.1.0
 */
import { type GatewayError, Issues } from "@modelgate/core"
import { Result, Schema, SchemaIssue } from "effect"

/** An optional field that clients may also send as `null` (treated as absent). */
const nullable = <S extends Schema.Top>(schema: S) => Schema.optionalKey(Schema.NullOr(schema))

/** A JSON object kept as JSON (schemas, tool parameters). @category common */
export const JsonObject = Schema.Record(Schema.String, Schema.Json)
export type JsonObject = typeof JsonObject.Type

// ---------------------------------------------------------------------------
// Input content
// ---------------------------------------------------------------------------

/** `{"type":"input_text","text"}`. @category input */
export const InputText = Schema.Struct({ type: Schema.Literal("input_text"), text: Schema.String })

/** `{"type":"input_image","image_url"?,"file_id"?,"detail"?}`: `image_url` is `https:` or a `data:` URL. @category input */
export const InputImage = Schema.Struct({
  type: Schema.Literal("input_image"),
  image_url: nullable(Schema.String),
  file_id: nullable(Schema.String),
  detail: nullable(Schema.Literals(["auto", "low", "high"]))
})
export type InputImage = typeof InputImage.Type

/** `{"type":"input_file","file_data"?,"file_url"?,"file_id"?,"filename"?}`: `file_data` is a `data:` URL or base64. @category input */
export const InputFile = Schema.Struct({
  type: Schema.Literal("input_file"),
  file_data: nullable(Schema.String),
  file_url: nullable(Schema.String),
  file_id: nullable(Schema.String),
  filename: nullable(Schema.String)
})
export type InputFile = typeof InputFile.Type

/** `{"type":"output_text","text"}`: an earlier answer's text, in assistant history. @category input */
export const OutputText = Schema.Struct({ type: Schema.Literal("output_text"), text: Schema.String })

/** `{"type":"refusal","refusal"}`: an earlier refusal, in assistant history. @category input */
export const Refusal = Schema.Struct({ type: Schema.Literal("refusal"), refusal: Schema.String })

/** Any part of a message's content. @category input */
export const ContentPart = Schema.Union([InputText, InputImage, InputFile, OutputText, Refusal])
export type ContentPart = typeof ContentPart.Type

/** Message roles. @category input */
export const Role = Schema.Literals(["user", "assistant", "system", "developer"])
export type Role = typeof Role.Type

// ---------------------------------------------------------------------------
// Input items
// ---------------------------------------------------------------------------

/** A message: `{"type"?:"message","role","content"}` (content a string or parts). @category items */
export const MessageItem = Schema.Struct({
  type: Schema.optionalKey(Schema.Literal("message")),
  role: Role,
  content: Schema.Union([Schema.String, Schema.Array(ContentPart)])
})
export type MessageItem = typeof MessageItem.Type

/** An earlier call of a function tool: `{"type":"function_call","call_id","name","arguments"}`. @category items */
export const FunctionCallItem = Schema.Struct({
  type: Schema.Literal("function_call"),
  id: nullable(Schema.String),
  call_id: Schema.String,
  name: Schema.String,
  arguments: Schema.String
})
export type FunctionCallItem = typeof FunctionCallItem.Type

/** A function's result: `{"type":"function_call_output","call_id","output"}` (text, or content parts). @category items */
export const FunctionCallOutputItem = Schema.Struct({
  type: Schema.Literal("function_call_output"),
  call_id: Schema.String,
  output: Schema.Union([Schema.String, Schema.Array(ContentPart)])
})
export type FunctionCallOutputItem = typeof FunctionCallOutputItem.Type

/** `{"type":"summary_text","text"}`. @category items */
export const SummaryText = Schema.Struct({ type: Schema.Literal("summary_text"), text: Schema.String })

/** Earlier reasoning: `{"type":"reasoning","summary","encrypted_content"?}`. @category items */
export const ReasoningItem = Schema.Struct({
  type: Schema.Literal("reasoning"),
  id: nullable(Schema.String),
  summary: Schema.Array(SummaryText),
  encrypted_content: nullable(Schema.String),
  content: nullable(Schema.Array(Schema.Struct({ type: Schema.String, text: Schema.String })))
})
export type ReasoningItem = typeof ReasoningItem.Type

/** An input item this package translates. @category items */
export type Item = MessageItem | FunctionCallItem | FunctionCallOutputItem | ReasoningItem

const decoders: Readonly<Record<string, (value: unknown) => Result.Result<Item, Schema.SchemaError>>> = {
  message: Schema.decodeUnknownResult(MessageItem),
  function_call: Schema.decodeUnknownResult(FunctionCallItem),
  function_call_output: Schema.decodeUnknownResult(FunctionCallOutputItem),
  reasoning: Schema.decodeUnknownResult(ReasoningItem)
}

/** A schema failure under `path` (`["input", 3]`), as an `InvalidRequest` naming the whole path. */
const at = (path: ReadonlyArray<PropertyKey>, issue: SchemaIssue.Issue): GatewayError.InvalidRequest =>
  Issues.invalidRequest(new SchemaIssue.Pointer(path, issue))

/**
 * Decodes one input item at `input[index]`: a message (with or without its
 * `type`), a function call, a function's output, or reasoning; `undefined`
 * for an item of another kind (its `type` is then what to note).
 *
 * @category items
 */
export const decodeItem = (
  value: unknown,
  index: number
): Result.Result<Item | { readonly type: string; readonly other: true }, GatewayError.InvalidRequest> => {
  const type = typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as { type?: unknown }).type
    : undefined
  // Without a type (or not an object at all) it must be a message, whose decoder says what is wrong.
  const decode = type === undefined || type === null
    ? decoders.message
    : typeof type === "string" && Object.hasOwn(decoders, type)
    ? decoders[type]
    : undefined
  if (decode === undefined) {
    return Result.succeed({ type: typeof type === "string" ? type : String(type), other: true as const })
  }
  const decoded = decode(value)
  return Result.isSuccess(decoded)
    ? Result.succeed(decoded.success)
    : Result.fail(at(["input", index], decoded.failure.issue))
}

// ---------------------------------------------------------------------------
// Request
// ---------------------------------------------------------------------------

/** A function tool: `{"type":"function","name","description"?,"parameters"?,"strict"?}`. @category request */
export const FunctionTool = Schema.Struct({
  type: Schema.Literal("function"),
  name: Schema.String,
  description: nullable(Schema.String),
  parameters: nullable(JsonObject),
  strict: nullable(Schema.Boolean)
})
export type FunctionTool = typeof FunctionTool.Type

/** `tool_choice`: a mode, one function, or (refused by the translation) a hosted tool. @category request */
export const ToolChoice = Schema.Union([
  Schema.Literals(["auto", "none", "required"]),
  Schema.Struct({ type: Schema.Literal("function"), name: Schema.String }),
  Schema.Struct({ type: Schema.String })
])
export type ToolChoice = typeof ToolChoice.Type

/** `text.format`. @category request */
export const TextFormat = Schema.Union([
  Schema.Struct({ type: Schema.Literal("text") }),
  Schema.Struct({ type: Schema.Literal("json_object") }),
  Schema.Struct({
    type: Schema.Literal("json_schema"),
    name: nullable(Schema.String),
    schema: JsonObject,
    strict: nullable(Schema.Boolean),
    description: nullable(Schema.String)
  })
])
export type TextFormat = typeof TextFormat.Type

/** Reasoning efforts of the Responses API. @category request */
export const Effort = Schema.Literals(["none", "minimal", "low", "medium", "high", "xhigh"])

/**
 * The `POST /v1/responses` body, as far as the translation reads it. `input`
 * items and `tools` are kept raw here and decoded one at a time.
 *
 * @category request
 */
export const ResponsesRequest = Schema.Struct({
  model: Schema.String,
  input: Schema.optionalKey(Schema.Union([Schema.String, Schema.Array(Schema.Unknown)])),
  instructions: nullable(Schema.String),
  max_output_tokens: nullable(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))),
  temperature: nullable(Schema.Finite),
  top_p: nullable(Schema.Finite),
  stream: nullable(Schema.Boolean),
  store: nullable(Schema.Boolean),
  background: nullable(Schema.Boolean),
  previous_response_id: nullable(Schema.String),
  conversation: Schema.optionalKey(Schema.Unknown),
  tools: nullable(Schema.Array(Schema.Unknown)),
  tool_choice: nullable(ToolChoice),
  parallel_tool_calls: nullable(Schema.Boolean),
  reasoning: nullable(Schema.Struct({
    effort: nullable(Effort),
    summary: nullable(Schema.Literals(["auto", "concise", "detailed", "none"]))
  })),
  text: nullable(Schema.Struct({
    format: nullable(TextFormat),
    verbosity: nullable(Schema.String)
  })),
  include: nullable(Schema.Array(Schema.String)),
  user: nullable(Schema.String),
  safety_identifier: nullable(Schema.String)
})
export type ResponsesRequest = typeof ResponsesRequest.Type

const decodeRequestWire = Schema.decodeUnknownResult(ResponsesRequest)

/**
 * Decodes a request body's top level; a bad body fails with an
 * `InvalidRequest` naming the field.
 *
 * @category request
 */
export const decodeRequestBody = (body: unknown): Result.Result<ResponsesRequest, GatewayError.InvalidRequest> => {
  const decoded = decodeRequestWire(body)
  return Result.isSuccess(decoded)
    ? Result.succeed(decoded.success)
    : Result.fail(Issues.invalidRequest(decoded.failure.issue))
}

const decodeFunctionTool = Schema.decodeUnknownResult(FunctionTool)

/**
 * Decodes `tools[index]` when it is a function tool; `undefined` for a tool
 * of another kind (`web_search`, `namespace`, `custom`, `file_search`, ...).
 *
 * @category request
 */
export const decodeTool = (
  value: unknown,
  index: number
): Result.Result<FunctionTool | { readonly type: string; readonly other: true }, GatewayError.InvalidRequest> => {
  const type = typeof value === "object" && value !== null ? (value as { type?: unknown }).type : undefined
  if (type !== "function") {
    return Result.succeed({ type: typeof type === "string" ? type : "unknown", other: true as const })
  }
  const decoded = decodeFunctionTool(value)
  return Result.isSuccess(decoded)
    ? Result.succeed(decoded.success)
    : Result.fail(at(["tools", index], decoded.failure.issue))
}

// ---------------------------------------------------------------------------
// The answer
// ---------------------------------------------------------------------------

/** `usage` of a response. @category answer */
export interface Usage {
  readonly input_tokens: number
  readonly input_tokens_details: { readonly cached_tokens: number; readonly cache_write_tokens: number }
  readonly output_tokens: number
  readonly output_tokens_details: { readonly reasoning_tokens: number }
  readonly total_tokens: number
}

/** `{"type":"output_text","text","annotations":[]}`. @category answer */
export interface OutputTextPart {
  readonly type: "output_text"
  readonly text: string
  readonly annotations: ReadonlyArray<unknown>
  readonly logprobs: ReadonlyArray<unknown>
}

/** An answer's message item. @category answer */
export interface OutputMessage {
  readonly type: "message"
  readonly id: string
  readonly status: "in_progress" | "completed" | "incomplete"
  readonly role: "assistant"
  readonly content: ReadonlyArray<OutputTextPart>
}

/** An answer's function call item. @category answer */
export interface OutputFunctionCall {
  readonly type: "function_call"
  readonly id: string
  readonly call_id: string
  readonly name: string
  readonly arguments: string
  readonly status: "in_progress" | "completed" | "incomplete"
}

/** An answer's reasoning item (`encrypted_content` when the reasoning is signed). @category answer */
export interface OutputReasoning {
  readonly type: "reasoning"
  readonly id: string
  readonly summary: ReadonlyArray<{ readonly type: "summary_text"; readonly text: string }>
  readonly encrypted_content?: string
}

/** Any output item. @category answer */
export type OutputItem = OutputMessage | OutputFunctionCall | OutputReasoning

/** A `response` object, as this package writes it. @category answer */
export interface Response {
  readonly id: string
  readonly object: "response"
  readonly created_at: number
  readonly status: "in_progress" | "completed" | "incomplete" | "failed"
  readonly error: { readonly code: string; readonly message: string } | null
  readonly incomplete_details: { readonly reason: "max_output_tokens" | "content_filter" } | null
  readonly model: string
  readonly output: ReadonlyArray<OutputItem>
  /** Absent until the answer is complete (the published schema allows no `null`). */
  readonly usage?: Usage | undefined
  readonly [echoed: string]: unknown
}

/**
 * The figures of an upstream's `usage`, once checked (`ResponsesAnswer.readUsage`
 * refuses any that is not a token count).
 *
 * @category answer
 */
export interface UsageFigures {
  readonly input_tokens: number
  readonly input_tokens_details?:
    | { readonly cached_tokens?: number | null | undefined; readonly cache_write_tokens?: number | null | undefined }
    | null
    | undefined
  readonly output_tokens: number
  readonly output_tokens_details?: { readonly reasoning_tokens?: number | null | undefined } | null | undefined
  readonly total_tokens?: number | null | undefined
}

/**
 * A `response` object as an upstream sends it, as far as the translation
 * reads it; `usage` is taken as it comes and checked apart
 * (`ResponsesAnswer.readUsage`).
 *
 * @category answer
 */
export const UpstreamResponse = Schema.Struct({
  id: Schema.String,
  created_at: nullable(Schema.Finite),
  model: nullable(Schema.String),
  status: nullable(Schema.String),
  incomplete_details: nullable(Schema.Struct({ reason: nullable(Schema.String) })),
  error: nullable(Schema.Struct({ code: nullable(Schema.String), message: nullable(Schema.String) })),
  output: Schema.Array(Schema.Unknown),
  usage: Schema.optionalKey(Schema.Unknown)
})
export type UpstreamResponse = typeof UpstreamResponse.Type

/** A stream event as this package writes it (its `type` is also its SSE `event:` name). @category stream */
export interface OutputEvent {
  readonly type: string
  readonly sequence_number: number
  readonly [field: string]: unknown
}

/** The `Content-Type` of a Responses stream. @category stream */
export const SSE_CONTENT_TYPE = "text/event-stream"

/**
 * One SSE frame: `event: <type>\ndata: <one-line JSON>\n\n` (the OpenAI SDKs
 * and Codex read the `data:`; the `event:` line is what the API sends).
 *
 * @category stream
 */
export const frame = (event: OutputEvent): string => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`
