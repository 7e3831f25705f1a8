/**
 * Responses API requests: a `POST /v1/responses` body <-> canonical
 * `ChatRequest`.
 *
 * - `decodeRequest` reads a Responses client's body (Codex CLI, the openai
 *   SDK's `responses.create`, the Agents SDK) for a channel of another
 *   dialect, or an OpenAI channel that speaks only chat completions.
 * - `encodeRequest` writes the body for a channel that speaks Responses.
 *
 * Decisions (also the contract the round-trip law checks):
 *
 * - **State**: this gateway keeps no response state. `previous_response_id`,
 *   `conversation`, `background: true` and `store: true` are refused with a
 *   400 that says so; `store: false` (what Codex sends) and no `store` at all
 *   work, each request carrying its whole conversation.
 * - **Input**: a string is one user message. `message` items (with or without
 *   their `type`): `system` and `developer` messages and `instructions` become
 *   `system` entries in order (`instructions` first); `user` content parts
 *   `input_text`, `input_image` (a `data:` URL becomes inline data, another URL
 *   stays a URL) and `input_file` (`file_data`, or `file_url`); assistant
 *   `output_text` and `refusal` parts are its text. `function_call` items are
 *   tool calls of the assistant turn (a `call_id` written by
 *   `Identifiers.signCallId` gives back its thought signature);
 *   `function_call_output` items are tool results (text; content parts of
 *   text are joined); `reasoning` items are thinking parts (the summary text;
 *   `encrypted_content` this gateway wrote gives back the reasoning's own
 *   signature, see `wrapSignature`; one from OpenAI is kept as `openai:`).
 * - **Tools**: `function` tools are translated. Tools of other kinds
 *   (`web_search`, `namespace`, `custom`, `file_search`, `local_shell`, ...)
 *   cannot run on another dialect's model: they are left out and named in the
 *   request's `notes` (the usage record), never failing the call; so are input
 *   items of kinds this package does not translate (a hosted tool's earlier
 *   call). A `tool_choice` forcing such a tool is refused.
 * - **Settings**: `max_output_tokens`, `temperature`, `top_p`,
 *   `parallel_tool_calls`, `reasoning.effort` (and `summary` other than
 *   `none` as `includeThoughts`), `text.format` (`json_object` -> json,
 *   `json_schema` -> a schema), `user` or `safety_identifier` -> `user`.
 *   Ignored as bookkeeping with no effect on the answer: `include`,
 *   `metadata`, `prompt_cache_key`, `client_metadata`, `service_tier`,
 *   `truncation`, `text.verbosity`, `max_tool_calls`, tool `strict`.
 *
 * @since 0.1.0
 */
import { type Canonical, GatewayError } from "@modelgate/core"
import { Effect, Predicate, Result } from "effect"
import { Base64Url } from "effect/encoding"
import type { Mutable } from "effect/Types"
import { decodeToolName, encodeToolName, signCallId, unsignCallId } from "../Identifiers.ts"
import { base64DataUrl, parseBase64DataUrl } from "../internal/dataUrl.ts"
import * as Responses from "./Responses.ts"

/** The errors a request can fail with. @category models */
export type RequestError = GatewayError.InvalidRequest | GatewayError.UnsupportedFeature

class Abort {
  readonly error: RequestError
  constructor(error: RequestError) {
    this.error = error
  }
}

const abort = (error: RequestError): never => {
  throw new Abort(error)
}

const run = <A>(f: () => A): Result.Result<A, RequestError> => {
  try {
    return Result.succeed(f())
  } catch (u) {
    if (u instanceof Abort) return Result.fail(u.error)
    throw u
  }
}

const invalid = (param: string, message: string) => new GatewayError.InvalidRequest({ message, param })
const unsupported = (param: string, message: string) => new GatewayError.UnsupportedFeature({ message, param })

const unwrap = <A>(result: Result.Result<A, GatewayError.InvalidRequest>): A =>
  Result.isSuccess(result) ? result.success : abort(result.failure)

// ---------------------------------------------------------------------------
// Reasoning signatures
// ---------------------------------------------------------------------------

/** The marker of an `encrypted_content` this gateway wrote around another provider's signature. @category signatures */
export const SIGNATURE_MARKER = "mgrs_"

/** The prefix of a canonical signature that is OpenAI's own `encrypted_content`. @category signatures */
export const OPENAI_SIGNATURE_PREFIX = "openai:"

/**
 * The `encrypted_content` a Responses client is given for reasoning with a
 * canonical signature (an Anthropic model's thinking signature, a Gemini
 * thought signature): `mgrs_` + base64url of the signature, which the client
 * sends back unchanged and `unwrapSignature` restores. OpenAI's own
 * (`openai:`) is given back as it came.
 *
 * @category signatures
 */
export const wrapSignature = (signature: string): string =>
  signature.startsWith(OPENAI_SIGNATURE_PREFIX)
    ? signature.slice(OPENAI_SIGNATURE_PREFIX.length)
    : SIGNATURE_MARKER + Base64Url.encode(signature)

/** The canonical signature of an `encrypted_content` (see `wrapSignature`). @category signatures */
export const unwrapSignature = (encrypted: string): string => {
  if (encrypted.startsWith(SIGNATURE_MARKER)) {
    const decoded = Base64Url.decodeString(encrypted.slice(SIGNATURE_MARKER.length))
    if (Result.isSuccess(decoded)) return decoded.success
  }
  return OPENAI_SIGNATURE_PREFIX + encrypted
}

// ---------------------------------------------------------------------------
// Decoding: Responses client -> canonical
// ---------------------------------------------------------------------------

const imagePart = (part: Responses.InputImage, param: string): Canonical.ImagePart => {
  const url = part.image_url
  if (url === undefined || url === null) {
    return abort(
      part.file_id === undefined || part.file_id === null
        ? invalid(param, `'${param}' needs an 'image_url'.`)
        : unsupported(
          `${param}.file_id`,
          `'${param}.file_id' names a file stored at OpenAI, which this gateway cannot read. Send the image as 'image_url' (a data: URL or https URL).`
        )
    )
  }
  const inline = parseBase64DataUrl(url)
  const out: Mutable<Canonical.ImagePart> = inline === undefined
    ? { type: "image", url }
    : { type: "image", mediaType: inline.mediaType, data: inline.data }
  if (part.detail !== undefined && part.detail !== null) out.detail = part.detail
  return out
}

const filePart = (part: Responses.InputFile, param: string): Canonical.FilePart => {
  const named = (out: Mutable<Canonical.FilePart>): Canonical.FilePart => {
    if (part.filename !== undefined && part.filename !== null) out.filename = part.filename
    return out
  }
  if (part.file_data !== undefined && part.file_data !== null) {
    const inline = parseBase64DataUrl(part.file_data)
    if (inline !== undefined) return named({ type: "file", mediaType: inline.mediaType, data: inline.data })
    return named({ type: "file", mediaType: "application/pdf", data: part.file_data })
  }
  if (part.file_url !== undefined && part.file_url !== null) {
    return named({ type: "file", mediaType: "application/pdf", uri: part.file_url })
  }
  return abort(
    part.file_id === undefined || part.file_id === null
      ? invalid(param, `'${param}' needs 'file_data' or 'file_url'.`)
      : unsupported(
        `${param}.file_id`,
        `'${param}.file_id' names a file stored at OpenAI, which this gateway cannot read. Send the file as 'file_data'.`
      )
  )
}

const outputText = (content: Responses.FunctionCallOutputItem["output"], param: string): string => {
  if (typeof content === "string") return content
  let text = ""
  content.forEach((part, k) => {
    if (part.type === "input_text" || part.type === "output_text") {
      text += text.length === 0
        ? part.text
        : `\n${part.text}`
    } else {abort(
        unsupported(
          `${param}[${k}]`,
          `'${param}[${k}]' is an ${part.type} part: only text function results can be sent to this model.`
        )
      )}
  })
  return text
}

const USE_NOT_RUN = "cannot run on this model"

const decodeSync = (body: unknown): Canonical.ChatRequest => {
  const wire = unwrap(Responses.decodeRequestBody(body))
  if (wire.previous_response_id !== undefined && wire.previous_response_id !== null) {
    abort(
      invalid(
        "previous_response_id",
        "'previous_response_id' is not supported: this gateway keeps no response state. Send the whole conversation in 'input' (and 'store': false)."
      )
    )
  }
  if (wire.conversation !== undefined && wire.conversation !== null) {
    abort(
      invalid(
        "conversation",
        "'conversation' is not supported: this gateway keeps no conversation state. Send the whole conversation in 'input'."
      )
    )
  }
  if (wire.store === true) {
    abort(
      invalid(
        "store",
        "'store': true is not supported: this gateway keeps no response state. Send 'store': false and the whole conversation in 'input' with each request."
      )
    )
  }
  if (wire.background === true) {
    abort(
      invalid(
        "background",
        "'background': true is not supported: this gateway keeps no response state to poll. Send the request without it (stream it for long answers)."
      )
    )
  }
  const notes: Array<string> = []
  const system: Array<string> = []
  if (wire.instructions !== undefined && wire.instructions !== null && wire.instructions.length > 0) {
    system.push(wire.instructions)
  }
  const messages: Array<Canonical.Message> = []
  const names = new Map<string, string>()
  // Consecutive assistant items (text, reasoning, calls) make one assistant turn; consecutive results one tool turn.
  const push = (role: Canonical.Message["role"], part: Canonical.Part) => {
    const last = messages[messages.length - 1]
    if (last !== undefined && last.role === role && role !== "user") (last.content as Array<Canonical.Part>).push(part)
    else messages.push({ role, content: [part] })
  }
  const input = wire.input === undefined
    ? []
    : typeof wire.input === "string"
    ? [{ role: "user", content: wire.input }]
    : wire.input
  if (typeof wire.input !== "string" && input.length === 0) {
    abort(invalid("input", "'input' is required: a string or a non-empty array of items."))
  }
  const skipped = new Map<string, number>()
  input.forEach((value, i) => {
    const item = unwrap(Responses.decodeItem(value, i))
    if ("other" in item) {
      skipped.set(item.type, (skipped.get(item.type) ?? 0) + 1)
      return
    }
    const param = `input[${i}]`
    switch (item.type) {
      case "function_call": {
        const { id, signature } = unsignCallId(item.call_id)
        names.set(id, item.name)
        const call: Mutable<Canonical.ToolCallPart> = {
          type: "tool_call",
          id,
          name: item.name,
          arguments: item.arguments
        }
        if (signature !== undefined) call.signature = signature
        return push("assistant", call)
      }
      case "function_call_output": {
        const callId = unsignCallId(item.call_id).id
        const result: Mutable<Canonical.ToolResultPart> = {
          type: "tool_result",
          callId,
          content: outputText(item.output, `${param}.output`)
        }
        const name = names.get(callId)
        if (name !== undefined) result.name = name
        return push("tool", result)
      }
      case "reasoning": {
        const text = item.summary.map((s) => s.text).join("\n\n")
        const encrypted = item.encrypted_content
        return push(
          "assistant",
          encrypted === undefined || encrypted === null || encrypted.length === 0
            ? { type: "thinking", text }
            : { type: "thinking", text, signature: unwrapSignature(encrypted) }
        )
      }
      default: {
        const content = item.content
        if (item.role === "system" || item.role === "developer") {
          if (typeof content === "string") {
            if (content.length > 0) system.push(content)
            return
          }
          content.forEach((part, k) => {
            if (part.type === "input_text" || part.type === "output_text") {
              if (part.text.length > 0) system.push(part.text)
            } else {abort(
                unsupported(
                  `${param}.content[${k}]`,
                  `'${param}.content[${k}]' is an ${part.type} part in a ${item.role} message: only text instructions can be translated.`
                )
              )}
          })
          return
        }
        if (item.role === "assistant") {
          const parts = typeof content === "string" ? [{ type: "output_text" as const, text: content }] : content
          parts.forEach((part, k) => {
            if (part.type === "output_text" || part.type === "input_text") {
              if (part.text.length > 0) push("assistant", { type: "text", text: part.text })
            } else if (part.type === "refusal") push("assistant", { type: "text", text: part.refusal })
            else {abort(
                unsupported(
                  `${param}.content[${k}]`,
                  `'${param}.content[${k}]' is an ${part.type} part in an assistant message, which this model cannot take.`
                )
              )}
          })
          return
        }
        const parts: Array<Canonical.Part> = []
        if (typeof content === "string") {
          if (content.length > 0) parts.push({ type: "text", text: content })
        } else {
          content.forEach((part, k) => {
            const at = `${param}.content[${k}]`
            switch (part.type) {
              case "input_text":
              case "output_text":
                if (part.text.length > 0) parts.push({ type: "text", text: part.text })
                break
              case "input_image":
                parts.push(imagePart(part, at))
                break
              case "input_file":
                parts.push(filePart(part, at))
                break
              case "refusal":
                parts.push({ type: "text", text: part.refusal })
                break
            }
          })
        }
        if (parts.length > 0) messages.push({ role: "user", content: parts })
      }
    }
  })
  for (const [type, count] of skipped) notes.push(`input items of type '${type}' left out (${count}): ${USE_NOT_RUN}`)
  if (messages.length === 0) abort(invalid("input", "'input' has no message to answer."))

  const out: Mutable<Canonical.ChatRequest> = { model: wire.model, messages, stream: wire.stream === true }
  if (system.length > 0) out.system = system

  const tools: Array<Canonical.ToolDefinition> = []
  const dropped: Array<string> = []
  ;(wire.tools ?? []).forEach((value, k) => {
    const tool = unwrap(Responses.decodeTool(value, k))
    if ("other" in tool) {
      const name = Predicate.isObject(value) && Predicate.isString(value.name)
        ? `${tool.type} '${value.name}'`
        : tool.type
      dropped.push(name)
      return
    }
    const definition: Mutable<Canonical.ToolDefinition> = { name: tool.name }
    if (tool.description !== undefined && tool.description !== null) definition.description = tool.description
    if (tool.parameters !== undefined && tool.parameters !== null) definition.parameters = tool.parameters
    tools.push(definition)
  })
  if (dropped.length > 0) notes.push(`tools left out: ${dropped.join(", ")} (${USE_NOT_RUN})`)
  if (tools.length > 0) out.tools = tools
  const choice = wire.tool_choice
  if (choice !== undefined && choice !== null) {
    if (typeof choice === "string") out.toolChoice = choice
    else if (choice.type === "function" && "name" in choice && typeof choice.name === "string") {
      out.toolChoice = { type: "tool", name: choice.name }
    } else if (choice.type === "auto" || choice.type === "none" || choice.type === "required") {
      out.toolChoice = choice.type
    } else {
      abort(
        unsupported(
          "tool_choice",
          `'tool_choice' forces the '${choice.type}' tool, which ${USE_NOT_RUN}. Use "auto", "required", "none" or a function tool.`
        )
      )
    }
  }
  if (wire.parallel_tool_calls !== undefined && wire.parallel_tool_calls !== null) {
    out.parallelToolCalls = wire.parallel_tool_calls
  }
  if (wire.max_output_tokens !== undefined && wire.max_output_tokens !== null) {
    out.maxOutputTokens = wire.max_output_tokens
  }
  if (wire.temperature !== undefined && wire.temperature !== null) out.temperature = wire.temperature
  if (wire.top_p !== undefined && wire.top_p !== null) out.topP = wire.top_p
  const reasoning = wire.reasoning
  if (reasoning !== undefined && reasoning !== null) {
    const r: Mutable<Canonical.Reasoning> = {}
    if (reasoning.effort !== undefined && reasoning.effort !== null) r.effort = reasoning.effort
    if (reasoning.summary !== undefined && reasoning.summary !== null) r.includeThoughts = reasoning.summary !== "none"
    if (Object.keys(r).length > 0) out.reasoning = r
  }
  const format = wire.text?.format
  if (format !== undefined && format !== null) {
    if (format.type === "json_object") out.responseFormat = { type: "json" }
    else if (format.type === "json_schema") {
      const f: Mutable<Extract<Canonical.ResponseFormat, { type: "json_schema" }>> = {
        type: "json_schema",
        schema: format.schema
      }
      if (format.name !== undefined && format.name !== null) f.name = format.name
      if (format.strict !== undefined && format.strict !== null) f.strict = format.strict
      out.responseFormat = f
    } else out.responseFormat = { type: "text" }
  }
  const user = wire.user ?? wire.safety_identifier
  if (user !== undefined && user !== null) out.user = user
  if (out.stream) out.includeUsage = true
  if (notes.length > 0) out.notes = notes
  return out
}

/**
 * `decodeRequest` as a `Result`. Never throws.
 *
 * @category decoding
 */
export const decodeRequestResult = (body: unknown): Result.Result<Canonical.ChatRequest, RequestError> =>
  run(() => decodeSync(body))

/**
 * Decodes a Responses client's body into a canonical request (see the module
 * doc for every decision).
 *
 * @example
 * ```ts
 * import { ResponsesRequest } from "@modelgate/openai-adapter"
 *
 * yield* ResponsesRequest.decodeRequest({ model: "gpt-5", instructions: "Be brief", input: "Hi", store: false })
 * // { model: "gpt-5", messages: [{ role: "user", content: [{ type: "text", text: "Hi" }] }], stream: false, system: ["Be brief"] }
 * ```
 *
 * @category decoding
 */
export const decodeRequest = (body: unknown): Effect.Effect<Canonical.ChatRequest, RequestError> =>
  Effect.fromResult(decodeRequestResult(body))

// ---------------------------------------------------------------------------
// Encoding: canonical -> Responses upstream
// ---------------------------------------------------------------------------

/** A thinking part as an input item for OpenAI: only OpenAI's own encrypted reasoning goes back to it. */
const reasoningItem = (part: Canonical.ThinkingPart): Record<string, unknown> | undefined =>
  part.signature === undefined || !part.signature.startsWith(OPENAI_SIGNATURE_PREFIX)
    ? undefined
    : {
      type: "reasoning",
      summary: part.text.length === 0 ? [] : [{ type: "summary_text", text: part.text }],
      encrypted_content: part.signature.slice(OPENAI_SIGNATURE_PREFIX.length)
    }

const contentPart = (part: Canonical.Part, param: string): Record<string, unknown> => {
  switch (part.type) {
    case "text":
      return { type: "input_text", text: part.text }
    case "image": {
      const url = part.url ??
        (part.data !== undefined && part.mediaType !== undefined ? base64DataUrl(part.mediaType, part.data) : undefined)
      if (url === undefined) {
        return abort(invalid(param, `The image at '${param}' has neither a URL nor data with a media type.`))
      }
      return part.detail === undefined
        ? { type: "input_image", image_url: url }
        : { type: "input_image", image_url: url, detail: part.detail }
    }
    case "file": {
      const out: Record<string, unknown> = { type: "input_file" }
      if (part.data !== undefined) out.file_data = base64DataUrl(part.mediaType, part.data)
      else if (part.uri !== undefined) out.file_url = part.uri
      else return abort(invalid(param, `The file at '${param}' has neither data nor a URI.`))
      if (part.filename !== undefined) out.filename = part.filename
      return out
    }
    default:
      return abort(invalid(param, `'${param}' cannot be part of a user message.`))
  }
}

const encodeSync = (request: Canonical.ChatRequest, upstreamModel: string): Record<string, unknown> => {
  if (request.candidateCount !== undefined && request.candidateCount > 1) {
    abort(
      unsupported(
        "candidateCount",
        `The Responses API returns one answer per request; ${request.candidateCount} answers ('n' / 'candidateCount') cannot be produced.`
      )
    )
  }
  if (request.stop !== undefined && request.stop.length > 0) {
    abort(unsupported("stop", "The Responses API has no stop sequences; this model cannot stop at them."))
  }
  const input: Array<Record<string, unknown>> = []
  for (const text of request.system ?? []) input.push({ type: "message", role: "developer", content: text })
  request.messages.forEach((message, i) => {
    if (message.role === "user") {
      input.push({
        type: "message",
        role: "user",
        content: message.content.map((part, j) => contentPart(part, `messages[${i}].content[${j}]`))
      })
      return
    }
    let text: Array<Record<string, unknown>> = []
    const flush = () => {
      if (text.length > 0) input.push({ type: "message", role: "assistant", content: text })
      text = []
    }
    message.content.forEach((part, j) => {
      const param = `messages[${i}].content[${j}]`
      switch (part.type) {
        case "text":
          text.push({ type: "output_text", text: part.text })
          return
        case "thinking": {
          flush()
          const item = reasoningItem(part)
          if (item !== undefined) input.push(item)
          return
        }
        case "tool_call":
          flush()
          input.push({
            type: "function_call",
            call_id: signCallId(part.id, part.signature),
            name: encodeToolName(part.name),
            arguments: part.arguments
          })
          return
        case "tool_result":
          flush()
          input.push({
            type: "function_call_output",
            call_id: signCallId(part.callId),
            output: part.isError === true ? JSON.stringify({ error: part.content }) : part.content
          })
          return
        default:
          return abort(
            unsupported(
              param,
              `'${param}' is ${
                part.type === "image" ? "an image" : "a file"
              } in an ${message.role} turn; the Responses API takes media only from the user.`
            )
          )
      }
    })
    flush()
  })
  const out: Record<string, unknown> = { model: upstreamModel, input, store: false }
  if (request.tools !== undefined && request.tools.length > 0) {
    out.tools = request.tools.map((tool) => {
      const wire: Record<string, unknown> = { type: "function", name: encodeToolName(tool.name) }
      if (tool.description !== undefined) wire.description = tool.description
      wire.parameters = tool.parameters ?? { type: "object", properties: {} }
      wire.strict = false
      return wire
    })
  }
  const choice = request.toolChoice
  if (choice !== undefined) {
    out.tool_choice = typeof choice === "string"
      ? choice
      : { type: "function", name: encodeToolName(choice.name) }
  }
  if (request.parallelToolCalls !== undefined) out.parallel_tool_calls = request.parallelToolCalls
  if (request.maxOutputTokens !== undefined) out.max_output_tokens = request.maxOutputTokens
  if (request.temperature !== undefined) out.temperature = request.temperature
  if (request.topP !== undefined) out.top_p = request.topP
  const reasoning = request.reasoning
  if (reasoning !== undefined) {
    const wire: Record<string, unknown> = {}
    const effort = reasoning.effort ??
      (reasoning.budgetTokens === undefined ? undefined : effortOfBudget(reasoning.budgetTokens))
    if (effort !== undefined) wire.effort = effort === "max" ? "xhigh" : effort
    if (reasoning.includeThoughts !== undefined) wire.summary = reasoning.includeThoughts ? "auto" : "none"
    if (Object.keys(wire).length > 0) {
      out.reasoning = wire
      // Stateless: reasoning comes back encrypted, so a later turn can send it again.
      out.include = ["reasoning.encrypted_content"]
    }
  }
  const format = request.responseFormat
  if (format !== undefined) {
    out.text = {
      format: format.type === "text"
        ? { type: "text" }
        : format.type === "json"
        ? { type: "json_object" }
        : {
          type: "json_schema",
          name: format.name ?? "response",
          schema: format.schema,
          ...(format.strict === undefined ? {} : { strict: format.strict })
        }
    }
  }
  if (request.user !== undefined) out.safety_identifier = request.user
  if (request.stream) out.stream = true
  return out
}

/** A token budget as an effort (see `Request.effortOfBudget`). */
const effortOfBudget = (budget: number): Canonical.ReasoningEffort | undefined =>
  budget < 0 ? undefined : budget === 0 ? "none" : budget <= 1_024 ? "low" : budget <= 8_192 ? "medium" : "high"

/**
 * `encodeRequest` as a `Result`. Never throws.
 *
 * @category encoding
 */
export const encodeRequestResult = (
  request: Canonical.ChatRequest,
  upstreamModel: string
): Result.Result<Record<string, unknown>, RequestError> => run(() => encodeSync(request, upstreamModel))

/**
 * Writes the `POST /responses` body for a channel that speaks Responses:
 * system entries as `developer` messages, turns as items (tool names escaped
 * as for chat completions, a Gemini thought signature carried in the
 * `call_id`), `store: false`, and, with reasoning, `include:
 * ["reasoning.encrypted_content"]` so the reasoning can be sent back.
 * Refused: more than one answer, stop sequences (the API has none). Left out:
 * `topK`, `seed` and the penalties, which the API does not take, and thinking
 * that is not OpenAI's own.
 *
 * @category encoding
 */
export const encodeRequest = (
  request: Canonical.ChatRequest,
  upstreamModel: string
): Effect.Effect<Record<string, unknown>, RequestError> =>
  Effect.fromResult(encodeRequestResult(request, upstreamModel))

/** A tool name in an upstream answer, as the client declared it. @category encoding */
export const toolNameFromWire = decodeToolName
