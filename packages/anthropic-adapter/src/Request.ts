/**
 * Messages requests: Anthropic wire body <-> canonical `ChatRequest`.
 *
 * - `encodeRequest` writes the body sent to an Anthropic upstream
 *   (`POST {base_url}/v1/messages`) for a canonical request that came from an
 *   OpenAI or Gemini client.
 * - `decodeRequest` reads an Anthropic client's body for a call that goes to an
 *   upstream of another dialect.
 *
 * Bad input fails with an `InvalidRequest` naming the field; what Anthropic (or
 * the canonical model) cannot carry fails with an `UnsupportedFeature` (400),
 * never a silent drop of content.
 *
 * Decisions (also the contract the round-trip laws check):
 *
 * - **`max_tokens`** is required by Anthropic. It is the request's
 *   `maxOutputTokens`; without one it is `DEFAULT_MAX_TOKENS` (4096), or the
 *   thinking budget + 4096 when thinking is on.
 * - **`temperature`** is 0–1 at Anthropic and 0–2 in OpenAI and Gemini:
 *   values are clamped into 0–1 (not scaled, so the common 0–1 settings keep
 *   their meaning; anything above 1 becomes 1).
 * - **`top_p`** is not sent when `temperature` is (recent Claude models reject
 *   both together); `seed`, `presencePenalty` and `frequencyPenalty` have no
 *   Anthropic field and are not sent.
 * - **Reasoning** -> `thinking: {type:"enabled", budget_tokens}` (with
 *   `display: "omitted"` when `includeThoughts` is false): an explicit
 *   `budgetTokens`, else `THINKING_BUDGETS[effort]` (effort `none` or budget 0:
 *   no thinking). The budget is raised to Anthropic's minimum of 1024 and kept
 *   below `max_tokens`; when an explicit `maxOutputTokens` leaves no room for
 *   1024 thinking tokens, thinking is not requested. With thinking on,
 *   `temperature` and `top_k` are not sent and `top_p` only when it is at least
 *   0.95 (Anthropic rejects other sampling settings with thinking), and a forced
 *   tool choice (`required` or a named tool) turns thinking off instead, since
 *   Anthropic refuses forced tool use with thinking.
 * - **JSON mode** (wire-formats §8.7) is a system instruction, the last system
 *   block: `JSON_INSTRUCTION` for `json`, and the same followed by the schema
 *   for `json_schema`. A forced tool whose input is the answer was not chosen:
 *   it cannot be combined with thinking or with the caller's own tools, and
 *   turning its `tool_use` back into text would need request state in the
 *   response and stream decoders.
 * - **System**: each canonical `system` entry is one text block.
 * - **Turns**: `tool` messages become `user` turns of `tool_result` blocks;
 *   consecutive turns of the same Anthropic role are merged (Anthropic requires
 *   alternation), and in a merged user turn the `tool_result` blocks come first.
 *   Empty text is dropped; a conversation with nothing left fails.
 * - **Tool-call ids** go through `Ids.encodeToolId` (stateless and reversible;
 *   see `Ids.ts`), and come back through `Ids.decodeToolId`; an Anthropic
 *   client's ids written by `Ids.signToolId` give back the call's Gemini
 *   thought signature too.
 * - **Thinking parts** are sent back only with an Anthropic signature
 *   (`Ids.signatureToWire`); unsigned thinking and thinking signed by another
 *   provider (Gemini) is left out. Gemini thought signatures on tool calls have
 *   no Anthropic field and are not sent.
 * - **Images**: inline data or a `data:` URL -> a base64 source, `http(s)` URLs
 *   -> a url source; only jpeg, png, gif and webp. `detail` has no equivalent.
 *   **Files**: PDF (data, `data:` URL or `https` URL) and plain text -> a
 *   `document` block; other types are refused.
 * - **Tool choice**: auto -> `auto`, none -> `none`, required -> `any`, a named
 *   tool -> `tool`; `parallelToolCalls: false` ->
 *   `disable_parallel_tool_use: true`. Without tools no `tool_choice` is sent.
 * - Refused: more than one answer (`candidateCount`/`n` > 1).
 *
 * @since 0.1.0
 */
import { Abort, Canonical, type GatewayError, Issues } from "@modelgate/core"
import { Effect, Result } from "effect"
import { Base64 } from "effect/encoding"
import type { Mutable } from "effect/Types"
import { encodeToolId, redactedFromWire, signatureFromWire, signatureToWire, unsignToolId } from "./Ids.ts"
import * as Messages from "./Messages.ts"

/** The errors a request can fail with. @category models */
export type RequestError = GatewayError.InvalidRequest | GatewayError.UnsupportedFeature

/** `max_tokens` sent when the request gives no `maxOutputTokens`. @category encoding */
export const DEFAULT_MAX_TOKENS = 4096

/** Anthropic's smallest thinking budget. @category encoding */
export const MIN_THINKING_BUDGET = 1024

/**
 * Thinking budgets (tokens) for each reasoning effort: none 0 (no thinking),
 * minimal and low 1024, medium 8192, high 24576, xhigh and max 32768.
 *
 * @category encoding
 */
export const THINKING_BUDGETS: Readonly<Record<Canonical.ReasoningEffort, number>> = {
  none: 0,
  minimal: 1024,
  low: 1024,
  medium: 8192,
  high: 24576,
  xhigh: 32768,
  max: 32768
}

/** The system instruction that asks for JSON (JSON mode, wire-formats §8.7). @category encoding */
export const JSON_INSTRUCTION =
  "Respond with a single valid JSON value only: no prose before or after it, and no Markdown code fences."

/** The system instruction for a JSON schema answer. @category encoding */
export const jsonSchemaInstruction = (schema: Canonical.JsonSchemaObject, name?: string): string =>
  `${JSON_INSTRUCTION} The JSON must conform to this JSON Schema${name === undefined ? "" : ` (named "${name}")`}:\n${
    JSON.stringify(schema)
  }`

// ---------------------------------------------------------------------------
// Encoding: canonical -> Anthropic upstream
// ---------------------------------------------------------------------------

type Block = Messages.ContentBlock

interface Turn {
  readonly role: "user" | "assistant"
  readonly results: Array<Block>
  readonly blocks: Array<Block>
}

const parseDataUrl = (url: string): { readonly mediaType: string; readonly data: string } | undefined => {
  if (!url.startsWith("data:")) return undefined
  const comma = url.indexOf(",")
  if (comma < 0) return undefined
  const meta = url.slice(5, comma)
  if (!meta.endsWith(";base64")) return undefined
  return { mediaType: meta.slice(0, -7), data: url.slice(comma + 1) }
}

const isHttpUrl = (url: string): boolean => url.startsWith("https://") || url.startsWith("http://")

const imageBlock = (part: Canonical.ImagePart, param: string): Block => {
  let mediaType = part.mediaType
  let data = part.data
  if (data === undefined) {
    const url = part.url
    if (url === undefined) {
      return Abort.abort(Issues.invalid(param, `The image at '${param}' has neither data nor a URL.`))
    }
    const parsed = parseDataUrl(url)
    if (parsed === undefined) {
      if (isHttpUrl(url)) return { type: "image", source: { type: "url", url } }
      return Abort.abort(
        Issues.unsupported(
          `${param}.url`,
          `The image URL at '${param}' must be an http(s) URL or a base64 'data:' URL.`
        )
      )
    }
    mediaType = parsed.mediaType
    data = parsed.data
  }
  if (mediaType === undefined || mediaType.length === 0) {
    return Abort.abort(Issues.invalid(`${param}.mediaType`, `The image at '${param}' has data but no media type.`))
  }
  if (!Messages.IMAGE_MEDIA_TYPES.includes(mediaType)) {
    return Abort.abort(Issues.unsupported(
      `${param}.mediaType`,
      `The image at '${param}' is '${mediaType}'; Anthropic models accept only image/jpeg, image/png, image/gif and image/webp.`
    ))
  }
  return { type: "image", source: { type: "base64", media_type: mediaType, data } }
}

const documentBlock = (part: Canonical.FilePart, param: string): Block => {
  let mediaType = part.mediaType
  let data = part.data
  if (data === undefined && part.uri !== undefined) {
    const parsed = parseDataUrl(part.uri)
    if (parsed !== undefined) {
      data = parsed.data
      if (parsed.mediaType.length > 0) mediaType = parsed.mediaType
    } else if (isHttpUrl(part.uri) && mediaType === "application/pdf") {
      return { type: "document", source: { type: "url", url: part.uri } }
    } else {
      return Abort.abort(Issues.unsupported(
        `${param}.uri`,
        `The file at '${param}' is given by a URI Anthropic cannot read; only https URLs of PDF documents are accepted. Send the file's bytes instead.`
      ))
    }
  }
  if (data === undefined) {
    return Abort.abort(Issues.invalid(param, `The file at '${param}' has neither data nor a URI.`))
  }
  if (mediaType === "application/pdf") {
    return { type: "document", source: { type: "base64", media_type: mediaType, data } }
  }
  if (mediaType === "text/plain") {
    const text = Base64.decodeString(data)
    if (Result.isFailure(text)) {
      return Abort.abort(Issues.invalid(`${param}.data`, `The file at '${param}' is not valid base64.`))
    }
    return { type: "document", source: { type: "text", media_type: "text/plain", data: text.success } }
  }
  return Abort.abort(Issues.unsupported(
    `${param}.mediaType`,
    `The file at '${param}' is '${mediaType}'; Anthropic models accept only PDF and plain-text documents.`
  ))
}

const parseInput = (text: string): Messages.JsonObject | undefined => {
  if (text.trim().length === 0) return {}
  try {
    const parsed: unknown = JSON.parse(text)
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)
      ? parsed as Messages.JsonObject
      : undefined
  } catch {
    return undefined
  }
}

const thinkingBlock = (part: Canonical.ThinkingPart): Block | undefined => {
  const wire = signatureToWire(part.signature)
  switch (wire._tag) {
    case "signature":
      return { type: "thinking", thinking: part.text, signature: wire.signature }
    case "redacted":
      return { type: "redacted_thinking", data: wire.data }
    case "foreign":
      return undefined
  }
}

interface Thinking {
  readonly budget: number
  readonly maxTokens: number
}

/** The thinking budget and `max_tokens` for a request (see the module doc). */
const planThinking = (request: Canonical.ChatRequest): Thinking | undefined => {
  const reasoning = request.reasoning
  if (reasoning === undefined) return undefined
  const choice = request.toolChoice
  if (choice === "required" || (typeof choice === "object" && choice.type === "tool")) return undefined
  let budget = reasoning.budgetTokens ?? (reasoning.effort === undefined ? 0 : THINKING_BUDGETS[reasoning.effort])
  if (budget <= 0) return undefined
  budget = Math.max(budget, MIN_THINKING_BUDGET)
  if (request.maxOutputTokens === undefined) return { budget, maxTokens: budget + DEFAULT_MAX_TOKENS }
  budget = Math.min(budget, request.maxOutputTokens - 1)
  return budget < MIN_THINKING_BUDGET ? undefined : { budget, maxTokens: request.maxOutputTokens }
}

const encodeSync = (request: Canonical.ChatRequest, upstreamModel: string): Messages.MessagesRequest => {
  if (request.candidateCount !== undefined && request.candidateCount > 1) {
    Abort.abort(Issues.unsupported(
      "candidateCount",
      `Anthropic models return one answer per request; ${request.candidateCount} answers ('n' / 'candidateCount') cannot be produced.`
    ))
  }
  if (request.maxOutputTokens !== undefined && request.maxOutputTokens < 1) {
    Abort.abort(Issues.invalid("maxOutputTokens", "The maximum number of output tokens must be at least 1."))
  }

  const turns: Array<Turn> = []
  const turn = (role: "user" | "assistant"): Turn => {
    const last = turns[turns.length - 1]
    if (last !== undefined && last.role === role) return last
    const next: Turn = { role, results: [], blocks: [] }
    turns.push(next)
    return next
  }
  for (let i = 0; i < request.messages.length; i++) {
    const message = request.messages[i]!
    const role = message.role === "assistant" ? "assistant" : "user"
    for (let j = 0; j < message.content.length; j++) {
      const part = message.content[j]!
      const param = `messages[${i}].content[${j}]`
      switch (part.type) {
        case "text":
          if (part.text.length > 0) turn(role).blocks.push({ type: "text", text: part.text })
          break
        case "thinking": {
          if (role !== "assistant") break
          const block = thinkingBlock(part)
          if (block !== undefined) turn(role).blocks.push(block)
          break
        }
        case "image":
          if (role === "assistant") {
            Abort.abort(
              Issues.unsupported(
                param,
                `'${param}' is an image in an assistant turn; Anthropic accepts images only from the user.`
              )
            )
          }
          turn(role).blocks.push(imageBlock(part, param))
          break
        case "file":
          if (role === "assistant") {
            Abort.abort(
              Issues.unsupported(
                param,
                `'${param}' is a file in an assistant turn; Anthropic accepts documents only from the user.`
              )
            )
          }
          turn(role).blocks.push(documentBlock(part, param))
          break
        case "tool_call": {
          if (role !== "assistant") {
            Abort.abort(Issues.invalid(param, `'${param}' is a tool call outside an assistant turn.`))
          }
          const input = parseInput(part.arguments)
          if (input === undefined) {
            Abort.abort(Issues.invalid(
              `${param}.arguments`,
              `The arguments of tool call '${part.id}' (${part.name}) at '${param}' are not a JSON object.`
            ))
          }
          turn(role).blocks.push({ type: "tool_use", id: encodeToolId(part.id), name: part.name, input: input! })
          break
        }
        case "tool_result": {
          if (role === "assistant") {
            Abort.abort(Issues.invalid(param, `'${param}' is a tool result inside an assistant turn.`))
          }
          const block: Mutable<Messages.ToolResultBlock> = {
            type: "tool_result",
            tool_use_id: encodeToolId(part.callId)
          }
          if (part.content.length > 0) block.content = part.content
          if (part.isError === true) block.is_error = true
          turn("user").results.push(block)
          break
        }
      }
    }
  }
  const messages: Array<Messages.MessageParam> = []
  for (const t of turns) {
    const content = t.results.length === 0 ? t.blocks : [...t.results, ...t.blocks]
    if (content.length > 0) messages.push({ role: t.role, content })
  }
  if (messages.length === 0) Abort.abort(Issues.invalid("messages", "The conversation has no content to send."))

  const thinking = planThinking(request)
  const out: Mutable<Messages.MessagesRequest> = {
    model: upstreamModel,
    max_tokens: thinking?.maxTokens ?? request.maxOutputTokens ?? DEFAULT_MAX_TOKENS,
    messages
  }

  const system: Array<Messages.TextBlock> = []
  for (const text of request.system ?? []) if (text.length > 0) system.push({ type: "text", text })
  const format = request.responseFormat
  if (format !== undefined && format.type !== "text") {
    system.push({
      type: "text",
      text: format.type === "json" ? JSON_INSTRUCTION : jsonSchemaInstruction(format.schema, format.name)
    })
  }
  if (system.length > 0) out.system = system

  const tools = request.tools ?? []
  if (tools.length > 0) {
    out.tools = tools.map((tool) => {
      const wire: Mutable<Messages.Tool> = {
        name: tool.name,
        input_schema: tool.parameters ?? { type: "object", properties: {} }
      }
      if (tool.description !== undefined) wire.description = tool.description
      return wire
    })
    const choice = request.toolChoice
    const noParallel = request.parallelToolCalls === false
    if (choice === "none") out.tool_choice = { type: "none" }
    else if (choice === undefined || choice === "auto" || choice === "required") {
      const type = choice === "required" ? "any" : "auto"
      if (choice !== undefined || noParallel) {
        out.tool_choice = noParallel ? { type, disable_parallel_tool_use: true } : { type }
      }
    } else {
      out.tool_choice = noParallel
        ? { type: "tool", name: choice.name, disable_parallel_tool_use: true }
        : { type: "tool", name: choice.name }
    }
  }

  if (thinking !== undefined) {
    // A client that asked for no thought text (Gemini `includeThoughts: false`) gets the signature only.
    out.thinking = request.reasoning?.includeThoughts === false
      ? { type: "enabled", budget_tokens: thinking.budget, display: "omitted" }
      : { type: "enabled", budget_tokens: thinking.budget }
    if (request.topP !== undefined && request.topP >= 0.95) out.top_p = Math.min(1, request.topP)
  } else {
    if (request.temperature !== undefined) out.temperature = Math.min(1, Math.max(0, request.temperature))
    else if (request.topP !== undefined) out.top_p = request.topP
    if (request.topK !== undefined) out.top_k = request.topK
  }
  if (request.stop !== undefined && request.stop.length > 0) out.stop_sequences = request.stop
  if (request.user !== undefined) out.metadata = { user_id: request.user }
  if (request.stream) out.stream = true
  return out
}

/**
 * `encodeRequest` as a `Result`, for synchronous callers. Never throws.
 *
 * @category encoding
 */
export const encodeRequestResult = (
  request: Canonical.ChatRequest,
  upstreamModel: string
): Result.Result<Messages.MessagesRequest, RequestError> => Abort.run(() => encodeSync(request, upstreamModel))

/**
 * Writes the `POST /v1/messages` body for an Anthropic upstream serving
 * `upstreamModel` (see the module doc for every mapping decision).
 *
 * @example
 * ```ts
 * import { Request } from "@modelgate/anthropic-adapter"
 *
 * const body = yield* Request.encodeRequest({
 *   model: "gpt-4o",
 *   system: ["Be brief"],
 *   messages: [{ role: "user", content: [{ type: "text", text: "Hi" }] }],
 *   temperature: 1.4,
 *   stream: false
 * }, "claude-sonnet-4-5")
 * // { model: "claude-sonnet-4-5", max_tokens: 4096, system: [{ type: "text", text: "Be brief" }],
 * //   messages: [{ role: "user", content: [{ type: "text", text: "Hi" }] }], temperature: 1 }
 * ```
 *
 * @category encoding
 */
export const encodeRequest = (
  request: Canonical.ChatRequest,
  upstreamModel: string
): Effect.Effect<Messages.MessagesRequest, RequestError> =>
  Effect.fromResult(encodeRequestResult(request, upstreamModel))

// ---------------------------------------------------------------------------
// Decoding: Anthropic client -> canonical
// ---------------------------------------------------------------------------

const EFFORTS = new Set<string>(Canonical.ReasoningEffort.literals)

const base64Text = (text: string): string => Base64.encode(text)

const imagePart = (block: Messages.ImageBlock, param: string): Canonical.ImagePart => {
  const source = block.source
  switch (source.type) {
    case "base64":
      return { type: "image", mediaType: source.media_type, data: source.data }
    case "url":
      return { type: "image", url: source.url }
    case "file":
      return Abort.abort(
        Issues.unsupported(
          `${param}.source`,
          `The image at '${param}' refers to an Anthropic Files API upload, which cannot be sent to this model.`
        )
      )
  }
}

const filePart = (block: Messages.DocumentBlock, param: string): Canonical.FilePart => {
  const source = block.source
  const out = (part: Mutable<Canonical.FilePart>): Canonical.FilePart => {
    if (typeof block.title === "string") part.filename = block.title
    return part
  }
  switch (source.type) {
    case "base64":
      return out({ type: "file", mediaType: source.media_type, data: source.data })
    case "url":
      return out({ type: "file", mediaType: "application/pdf", uri: source.url })
    case "text":
      return out({ type: "file", mediaType: source.media_type ?? "text/plain", data: base64Text(source.data) })
    case "file":
      return Abort.abort(
        Issues.unsupported(
          `${param}.source`,
          `The document at '${param}' refers to an Anthropic Files API upload, which cannot be sent to this model.`
        )
      )
    case "content":
      return Abort.abort(
        Issues.unsupported(
          `${param}.source`,
          `The document at '${param}' is made of content blocks, which cannot be sent to this model.`
        )
      )
  }
}

const resultText = (block: Messages.ToolResultBlock, param: string): string => {
  const content = block.content
  if (content === undefined) return ""
  if (typeof content === "string") return content
  let text = ""
  for (let k = 0; k < content.length; k++) {
    const item = content[k]!
    if (item.type !== "text") {
      return Abort.abort(Issues.unsupported(
        `${param}.content[${k}]`,
        `The tool result at '${param}' contains ${
          item.type === "image" ? "an image" : "a document"
        }; only text tool results can be sent to this model.`
      ))
    }
    text += text.length === 0 ? item.text : `\n${item.text}`
  }
  return text
}

const otherBlock = (type: string, param: string): never =>
  Abort.abort(
    Issues.unsupported(
      param,
      `'${param}' is a '${type}' block (an Anthropic server tool or feature), which cannot be sent to this model.`
    )
  )

const decodeSync = (body: unknown): Canonical.ChatRequest => {
  const decoded = Messages.decodeRequestBody(body)
  if (Result.isFailure(decoded)) return Abort.abort(decoded.failure)
  const wire = decoded.success
  if (wire.max_tokens < 1) Abort.abort(Issues.invalid("max_tokens", "'max_tokens' must be at least 1."))
  if (wire.messages.length === 0) {
    Abort.abort(Issues.invalid("messages", "'messages' must contain at least one message."))
  }
  const out: Mutable<Canonical.ChatRequest> = {
    model: wire.model,
    messages: [],
    maxOutputTokens: wire.max_tokens,
    stream: wire.stream === true
  }

  if (wire.system !== undefined) {
    const system = typeof wire.system === "string"
      ? (wire.system.length > 0 ? [wire.system] : [])
      : wire.system.filter((block) => block.text.length > 0).map((block) => block.text)
    if (system.length > 0) out.system = system
  }

  const messages: Array<Canonical.Message> = []
  const names = new Map<string, string>()
  wire.messages.forEach((message, i) => {
    if (message.role === "system") {
      // Instructions in the middle of the conversation join the system prompt, in order (the canonical model has no
      // mid-conversation instructions; OpenAI's mid-conversation system messages are read the same way).
      const system = (out.system ??= []) as Array<string>
      if (typeof message.content === "string") {
        if (message.content.length > 0) system.push(message.content)
      } else {
        message.content.forEach((block, j) => {
          if (block.type !== "text") {
            return Abort.abort(
              Issues.unsupported(
                `messages[${i}].content[${j}]`,
                `'messages[${i}].content[${j}]' is a '${block.type}' block in a system turn; only text instructions can be sent to this model.`
              )
            )
          }
          const text = (block as Messages.TextBlock).text
          if (text.length > 0) system.push(text)
        })
      }
      if (system.length === 0) delete out.system
      return
    }
    if (typeof message.content === "string") {
      if (message.content.length > 0) {
        messages.push({ role: message.role, content: [{ type: "text", text: message.content }] })
      }
      return
    }
    if (message.role === "assistant") {
      const parts: Array<Canonical.Part> = []
      message.content.forEach((wireBlock, j) => {
        const param = `messages[${i}].content[${j}]`
        const block = Messages.knownBlock(wireBlock)
        if (block === undefined) return otherBlock(wireBlock.type, param)
        switch (block.type) {
          case "text":
            if (block.text.length > 0) parts.push({ type: "text", text: block.text })
            break
          case "thinking":
            parts.push(
              block.signature === undefined || block.signature.length === 0
                ? { type: "thinking", text: block.thinking }
                : { type: "thinking", text: block.thinking, signature: signatureFromWire(block.signature) }
            )
            break
          case "redacted_thinking":
            parts.push({ type: "thinking", text: "", signature: redactedFromWire(block.data) })
            break
          case "tool_use": {
            const { id, signature } = unsignToolId(block.id)
            names.set(id, block.name)
            parts.push(
              signature === undefined
                ? { type: "tool_call", id, name: block.name, arguments: JSON.stringify(block.input) }
                : { type: "tool_call", id, name: block.name, arguments: JSON.stringify(block.input), signature }
            )
            break
          }
          case "image":
          case "document":
          case "tool_result":
            Abort.abort(
              Issues.invalid(param, `'${param}' is a '${block.type}' block, which only a user turn may contain.`)
            )
            break
        }
      })
      if (parts.length > 0) messages.push({ role: "assistant", content: parts })
      return
    }
    let current: Array<Canonical.Part> = []
    let currentRole: "user" | "tool" | undefined
    const flush = () => {
      if (currentRole !== undefined && current.length > 0) messages.push({ role: currentRole, content: current })
      current = []
      currentRole = undefined
    }
    const into = (role: "user" | "tool"): Array<Canonical.Part> => {
      if (currentRole !== role) {
        flush()
        currentRole = role
      }
      return current
    }
    message.content.forEach((wireBlock, j) => {
      const param = `messages[${i}].content[${j}]`
      const block = Messages.knownBlock(wireBlock)
      if (block === undefined) return otherBlock(wireBlock.type, param)
      switch (block.type) {
        case "text":
          if (block.text.length > 0) into("user").push({ type: "text", text: block.text })
          break
        case "image":
          into("user").push(imagePart(block, param))
          break
        case "document":
          into("user").push(filePart(block, param))
          break
        case "tool_result": {
          const callId = unsignToolId(block.tool_use_id).id
          const result: Mutable<Canonical.ToolResultPart> = {
            type: "tool_result",
            callId,
            content: resultText(block, param)
          }
          const name = names.get(callId)
          if (name !== undefined) result.name = name
          if (block.is_error === true) result.isError = true
          into("tool").push(result)
          break
        }
        case "tool_use":
        case "thinking":
        case "redacted_thinking":
          Abort.abort(
            Issues.invalid(param, `'${param}' is a '${block.type}' block, which only an assistant turn may contain.`)
          )
          break
      }
    })
    flush()
  })
  out.messages = messages

  if (wire.tools !== undefined && wire.tools.length > 0) {
    out.tools = wire.tools.map((tool, k) => {
      if (tool.type !== undefined && tool.type !== null && tool.type !== "custom") {
        return Abort.abort(Issues.unsupported(
          `tools[${k}]`,
          `'tools[${k}]' is the Anthropic server tool '${tool.type}', which cannot be used with this model.`
        ))
      }
      if (tool.input_schema === undefined) {
        Abort.abort(Issues.invalid(`tools[${k}].input_schema`, `'tools[${k}].input_schema' is required`))
      }
      const definition: Mutable<Canonical.ToolDefinition> = { name: tool.name, parameters: tool.input_schema! }
      if (tool.description !== undefined) definition.description = tool.description
      return definition
    })
  }
  const choice = wire.tool_choice
  if (choice !== undefined) {
    switch (choice.type) {
      case "auto":
        out.toolChoice = "auto"
        break
      case "any":
        out.toolChoice = "required"
        break
      case "none":
        out.toolChoice = "none"
        break
      case "tool":
        out.toolChoice = { type: "tool", name: choice.name }
        break
    }
    if ("disable_parallel_tool_use" in choice && choice.disable_parallel_tool_use === true) {
      out.parallelToolCalls = false
    }
  }

  if (wire.temperature !== undefined) out.temperature = wire.temperature
  if (wire.top_p !== undefined) out.topP = wire.top_p
  if (wire.top_k !== undefined) out.topK = wire.top_k
  if (wire.stop_sequences !== undefined && wire.stop_sequences.length > 0) out.stop = wire.stop_sequences
  const user = wire.metadata?.user_id
  if (typeof user === "string") out.user = user
  if (out.stream) out.includeUsage = true

  const reasoning: Mutable<Canonical.Reasoning> = {}
  if (wire.thinking?.type === "enabled") {
    reasoning.budgetTokens = wire.thinking.budget_tokens
    // `display: "omitted"` (Claude Code) asks for the signature without the thinking text.
    reasoning.includeThoughts = wire.thinking.display !== "omitted"
  }
  const effort = wire.output_config?.effort
  if (typeof effort === "string" && EFFORTS.has(effort)) reasoning.effort = effort as Canonical.ReasoningEffort
  if (Object.keys(reasoning).length > 0) out.reasoning = reasoning
  const format = wire.output_config?.format
  if (format !== undefined && format !== null) out.responseFormat = { type: "json_schema", schema: format.schema }
  return out
}

/**
 * `decodeRequest` as a `Result`, for hot paths and property tests. Never
 * throws.
 *
 * @category decoding
 */
export const decodeRequestResult = (body: unknown): Result.Result<Canonical.ChatRequest, RequestError> =>
  Abort.run(() => decodeSync(body))

/**
 * Decodes an Anthropic client's `POST /v1/messages` body into a canonical
 * request (model as the client named it).
 *
 * - `system` (string or text blocks) -> `system` entries, followed by the
 *   text of `system` turns in the conversation, in order; `max_tokens` ->
 *   `maxOutputTokens`; `stop_sequences` -> `stop`; `metadata.user_id` ->
 *   `user`; `thinking.budget_tokens` -> `reasoning.budgetTokens` (with
 *   `includeThoughts` unless `thinking.display` is `omitted`)
 *   (`adaptive` and `disabled` leave reasoning unset); `output_config.format`
 *   -> `json_schema`; a streamed call asks for usage (`includeUsage`).
 * - A user turn's `tool_result` blocks become a canonical `tool` message, its
 *   other blocks a `user` message, in their original order; results take the
 *   tool name from the earlier `tool_use` with that id. `tool_use` -> tool call
 *   with `arguments` = `JSON.stringify(input)`; ids pass through
 *   `Ids.decodeToolId`. Thinking signatures get the `anthropic:` prefix,
 *   `redacted_thinking` becomes an empty thinking part signed
 *   `anthropic-redacted:<data>`.
 * - Refused (`UnsupportedFeature`): server tools, server-tool and other unknown
 *   blocks, Files API sources, content-block documents, images or documents
 *   inside tool results.
 * - Ignored: `cache_control`, `citations`, `service_tier`, `container`.
 *
 * @example
 * ```ts
 * import { Request } from "@modelgate/anthropic-adapter"
 *
 * const request = yield* Request.decodeRequest({
 *   model: "claude-sonnet-4-5", max_tokens: 1024, system: "Be brief",
 *   messages: [{ role: "user", content: "Hi" }]
 * })
 * // { model: "claude-sonnet-4-5", messages: [{ role: "user", content: [{ type: "text", text: "Hi" }] }],
 * //   maxOutputTokens: 1024, stream: false, system: ["Be brief"] }
 * ```
 *
 * @category decoding
 */
export const decodeRequest = (body: unknown): Effect.Effect<Canonical.ChatRequest, RequestError> =>
  Effect.fromResult(decodeRequestResult(body))
