/**
 * Converse requests: canonical `ChatRequest` <-> Converse body.
 *
 * - `encodeRequest` writes the body sent to a Bedrock channel
 *   (`POST {base_url}/model/{modelId}/converse` or `/converse-stream`) for a
 *   canonical request from a client of any dialect.
 * - `decodeRequest` reads a Converse body back into canonical form: the
 *   translation laws' other half, and what a Converse front door would use.
 *
 * Bad input fails with an `InvalidRequest` naming the field; what Converse
 * cannot carry fails with an `UnsupportedFeature` (400), never a silent drop
 * of content.
 *
 * Decisions (also the contract the round-trip laws check):
 *
 * - **System**: each canonical `system` entry is one `{"text"}` block. JSON
 *   mode is a system instruction, the last block (as for Anthropic): Converse
 *   has no JSON mode that every model family honours.
 * - **Turns**: `tool` messages become `user` turns of `toolResult` blocks
 *   (`status: "error"` for a failed tool); consecutive turns of one role are
 *   merged (Converse requires alternation), with the tool results first in a
 *   merged user turn. Empty text is dropped; nothing left fails.
 * - **Tool-call ids** go through `Ids.encodeToolId` (Converse accepts only
 *   `[a-zA-Z0-9_-]`), and come back through `Ids.decodeToolId`.
 * - **Images**: inline data or a base64 `data:` URL, png/jpeg/gif/webp, as
 *   `bytes`; images by `http(s)` URL are refused (Converse reads bytes or S3
 *   only). **Files**: the document formats Converse knows (PDF, CSV, Word,
 *   Excel, HTML, plain text, Markdown) as `bytes`, named by their filename
 *   made safe (Converse allows letters, digits, single spaces, hyphens,
 *   parentheses and brackets) or `document-N`; other types are refused.
 * - **Reasoning (Claude)**: for an Anthropic model (its id names `anthropic`
 *   or `claude`) `additionalModelRequestFields.thinking = {type: "enabled",
 *   budget_tokens}` with the Anthropic adapter's budget rules: an explicit
 *   budget or one per effort, at least 1024, below `maxTokens` (which is the
 *   budget + 4096 when the request sets none), none with a forced tool
 *   choice; with thinking on, `temperature` and `top_k` are not sent and
 *   `topP` only when at least 0.95. Earlier reasoning goes back as
 *   `reasoningContent` only when Bedrock signed it (`Ids.signatureToWire`).
 *   Other families (Nova, Llama, Mistral, DeepSeek...) get no reasoning
 *   field: their controls differ per model, and Converse ignores nothing.
 * - **Sampling**: `maxOutputTokens` -> `inferenceConfig.maxTokens`;
 *   `temperature` clamped into 0–1 (every Bedrock family's range);
 *   `topP` only without `temperature` for Claude (recent Claude models refuse
 *   both); `stop` -> `stopSequences`; `topK` -> `additionalModelRequestFields.top_k`
 *   for Claude only (the other families name it differently or lack it);
 *   `seed`, `presencePenalty`, `frequencyPenalty`, `user` and
 *   `parallelToolCalls` have no Converse field and are not sent.
 * - **Tools**: `toolConfig.tools[].toolSpec` with the schema as
 *   `inputSchema.json` (an empty object schema when none); choice auto ->
 *   `{auto:{}}`, required -> `{any:{}}`, a named tool -> `{tool:{name}}`.
 *   Converse has no "none": without tool blocks in the conversation the tools
 *   are left out (the model cannot call what it is not given); with them it
 *   is refused, since Converse then requires the tools declared.
 * - Refused: more than one answer (`candidateCount`/`n` > 1).
 *
 * @since 0.1.0
 */
import { Abort, type Canonical, type GatewayError, Issues } from "@modelgate/core"
import { Effect, Result } from "effect"
import type { Mutable } from "effect/Types"
import * as Converse from "./Converse.ts"
import { decodeToolId, encodeToolId, REDACTED_PREFIX, SIGNATURE_PREFIX, signatureToWire } from "./Ids.ts"

/** The errors a request can fail with. @category models */
export type RequestError = GatewayError.InvalidRequest | GatewayError.UnsupportedFeature

/** `maxTokens` added to a thinking budget when the request gives no `maxOutputTokens`. @category encoding */
export const DEFAULT_MAX_TOKENS = 4096

/** Claude's smallest thinking budget. @category encoding */
export const MIN_THINKING_BUDGET = 1024

/** Thinking budgets (tokens) per reasoning effort, as the Anthropic adapter has them. @category encoding */
export const THINKING_BUDGETS: Readonly<Record<Canonical.ReasoningEffort, number>> = {
  none: 0,
  minimal: 1024,
  low: 1024,
  medium: 8192,
  high: 24576,
  xhigh: 32768,
  max: 32768
}

/** The system instruction that asks for JSON. @category encoding */
export const JSON_INSTRUCTION =
  "Respond with a single valid JSON value only: no prose before or after it, and no Markdown code fences."

/** The system instruction for a JSON schema answer. @category encoding */
export const jsonSchemaInstruction = (schema: Canonical.JsonSchemaObject, name?: string): string =>
  `${JSON_INSTRUCTION} The JSON must conform to this JSON Schema${name === undefined ? "" : ` (named "${name}")`}:\n${
    JSON.stringify(schema)
  }`

/**
 * Whether a Bedrock model id is an Anthropic model (`anthropic.claude-...`,
 * `us.anthropic.claude-...`, an ARN naming one): the family whose extra
 * fields (`thinking`, `top_k`) this package sends.
 *
 * @category encoding
 */
export const isAnthropicModel = (modelId: string): boolean => /anthropic|claude/i.test(modelId)

/** Media types -> Converse image formats. @category encoding */
export const IMAGE_FORMAT_OF: Readonly<Record<string, Converse.ImageFormat>> = {
  "image/png": "png",
  "image/jpeg": "jpeg",
  "image/jpg": "jpeg",
  "image/gif": "gif",
  "image/webp": "webp"
}

/** Media types -> Converse document formats. @category encoding */
export const DOCUMENT_FORMAT_OF: Readonly<Record<string, Converse.DocumentFormat>> = {
  "application/pdf": "pdf",
  "text/csv": "csv",
  "application/msword": "doc",
  "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
  "application/vnd.ms-excel": "xls",
  "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
  "text/html": "html",
  "text/plain": "txt",
  "text/markdown": "md"
}

const MEDIA_OF_IMAGE: Readonly<Record<string, string>> = {
  png: "image/png",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp"
}

const MEDIA_OF_DOCUMENT: Readonly<Record<string, string>> = Object.fromEntries(
  Object.entries(DOCUMENT_FORMAT_OF).map(([media, format]) => [format, media])
)

// ---------------------------------------------------------------------------
// Encoding: canonical -> Converse
// ---------------------------------------------------------------------------

type Block = Converse.ContentBlock

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
      return Abort.abort(Issues.unsupported(
        `${param}.url`,
        `The image at '${param}' is given by URL; Bedrock models read images only as bytes. Send the image inline (base64 data or a 'data:' URL).`
      ))
    }
    mediaType = parsed.mediaType
    data = parsed.data
  }
  const format = mediaType === undefined ? undefined : IMAGE_FORMAT_OF[mediaType]
  if (format === undefined) {
    return Abort.abort(Issues.unsupported(
      `${param}.mediaType`,
      `The image at '${param}' is '${
        mediaType ?? "of no media type"
      }'; Bedrock models accept only image/png, image/jpeg, image/gif and image/webp.`
    ))
  }
  return { image: { format, source: { bytes: data } } }
}

/** A document name Converse accepts: letters, digits, single spaces, hyphens, parentheses, brackets. @category encoding */
export const documentName = (filename: string | undefined, n: number): string => {
  const base = (filename ?? "").replace(/\.[A-Za-z0-9]{1,5}$/, "")
  const safe = base.replace(/[^A-Za-z0-9\s\-()[\]]/g, "-").replace(/\s+/g, " ").trim().slice(0, 200)
  return safe.length === 0 ? `document-${n}` : safe
}

const documentBlock = (part: Canonical.FilePart, param: string, n: number): Block => {
  let mediaType = part.mediaType
  let data = part.data
  if (data === undefined && part.uri !== undefined) {
    const parsed = parseDataUrl(part.uri)
    if (parsed === undefined) {
      return Abort.abort(Issues.unsupported(
        `${param}.uri`,
        `The file at '${param}' is given by a URI; Bedrock models read documents only as bytes. Send the file's bytes instead.`
      ))
    }
    data = parsed.data
    if (parsed.mediaType.length > 0) mediaType = parsed.mediaType
  }
  if (data === undefined) {
    return Abort.abort(Issues.invalid(param, `The file at '${param}' has neither data nor a URI.`))
  }
  const format = DOCUMENT_FORMAT_OF[mediaType]
  if (format === undefined) {
    return Abort.abort(Issues.unsupported(
      `${param}.mediaType`,
      `The file at '${param}' is '${mediaType}'; Bedrock models accept only PDF, CSV, Word, Excel, HTML, plain-text and Markdown documents.`
    ))
  }
  return { document: { format, name: documentName(part.filename, n), source: { bytes: data } } }
}

const parseInput = (text: string): Converse.JsonObject | undefined => {
  if (text.trim().length === 0) return {}
  try {
    const parsed: unknown = JSON.parse(text)
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)
      ? parsed as Converse.JsonObject
      : undefined
  } catch {
    return undefined
  }
}

const reasoningBlock = (part: Canonical.ThinkingPart): Block | undefined => {
  const wire = signatureToWire(part.signature)
  switch (wire._tag) {
    case "signature":
      return { reasoningContent: { reasoningText: { text: part.text, signature: wire.signature } } }
    case "redacted":
      return { reasoningContent: { redactedContent: wire.data } }
    case "foreign":
      return undefined
  }
}

interface Thinking {
  readonly budget: number
  readonly maxTokens: number
}

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

const encodeSync = (request: Canonical.ChatRequest, upstreamModel: string): Converse.ConverseRequest => {
  if (request.candidateCount !== undefined && request.candidateCount > 1) {
    Abort.abort(Issues.unsupported(
      "candidateCount",
      `Bedrock models return one answer per request; ${request.candidateCount} answers ('n' / 'candidateCount') cannot be produced.`
    ))
  }
  if (request.maxOutputTokens !== undefined && request.maxOutputTokens < 1) {
    Abort.abort(Issues.invalid("maxOutputTokens", "The maximum number of output tokens must be at least 1."))
  }
  const claude = isAnthropicModel(upstreamModel)

  const turns: Array<Turn> = []
  const turn = (role: "user" | "assistant"): Turn => {
    const last = turns[turns.length - 1]
    if (last !== undefined && last.role === role) return last
    const next: Turn = { role, results: [], blocks: [] }
    turns.push(next)
    return next
  }
  let documents = 0
  let toolBlocks = false
  for (let i = 0; i < request.messages.length; i++) {
    const message = request.messages[i]!
    const role = message.role === "assistant" ? "assistant" : "user"
    for (let j = 0; j < message.content.length; j++) {
      const part = message.content[j]!
      const param = `messages[${i}].content[${j}]`
      switch (part.type) {
        case "text":
          if (part.text.length > 0) turn(role).blocks.push({ text: part.text })
          break
        case "thinking": {
          if (role !== "assistant") break
          const block = reasoningBlock(part)
          if (block !== undefined) turn(role).blocks.push(block)
          break
        }
        case "image":
          if (role === "assistant") {
            Abort.abort(
              Issues.unsupported(
                param,
                `'${param}' is an image in an assistant turn; Bedrock accepts images only from the user.`
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
                `'${param}' is a file in an assistant turn; Bedrock accepts documents only from the user.`
              )
            )
          }
          turn(role).blocks.push(documentBlock(part, param, ++documents))
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
          toolBlocks = true
          turn(role).blocks.push({ toolUse: { toolUseId: encodeToolId(part.id), name: part.name, input: input! } })
          break
        }
        case "tool_result": {
          if (role === "assistant") {
            Abort.abort(Issues.invalid(param, `'${param}' is a tool result inside an assistant turn.`))
          }
          toolBlocks = true
          turn("user").results.push({
            toolResult: {
              toolUseId: encodeToolId(part.callId),
              content: [{ text: part.content }],
              ...(part.isError === true ? { status: "error" as const } : {})
            }
          })
          break
        }
      }
    }
  }
  const messages: Array<Converse.Message> = []
  for (const t of turns) {
    const content = t.results.length === 0 ? t.blocks : [...t.results, ...t.blocks]
    if (content.length > 0) messages.push({ role: t.role, content })
  }
  if (messages.length === 0) Abort.abort(Issues.invalid("messages", "The conversation has no content to send."))

  const out: Mutable<Converse.ConverseRequest> = { messages }

  const system: Array<Converse.SystemBlock> = []
  for (const text of request.system ?? []) if (text.length > 0) system.push({ text })
  const format = request.responseFormat
  if (format !== undefined && format.type !== "text") {
    system.push({
      text: format.type === "json" ? JSON_INSTRUCTION : jsonSchemaInstruction(format.schema, format.name)
    })
  }
  if (system.length > 0) out.system = system

  const thinking = claude ? planThinking(request) : undefined
  const inference: Mutable<Converse.InferenceConfig> = {}
  const maxTokens = thinking?.maxTokens ?? request.maxOutputTokens
  if (maxTokens !== undefined) inference.maxTokens = maxTokens
  const extra: Record<string, unknown> = {}
  if (thinking !== undefined) {
    extra.thinking = { type: "enabled", budget_tokens: thinking.budget }
    if (request.topP !== undefined && request.topP >= 0.95) inference.topP = Math.min(1, request.topP)
  } else {
    if (request.temperature !== undefined) inference.temperature = Math.min(1, Math.max(0, request.temperature))
    if (request.topP !== undefined && (!claude || request.temperature === undefined)) inference.topP = request.topP
    if (request.topK !== undefined && claude) extra.top_k = request.topK
  }
  if (request.stop !== undefined && request.stop.length > 0) inference.stopSequences = request.stop
  if (Object.keys(inference).length > 0) out.inferenceConfig = inference
  if (Object.keys(extra).length > 0) out.additionalModelRequestFields = extra

  const tools = request.tools ?? []
  const choice = request.toolChoice
  if (tools.length > 0) {
    if (choice === "none") {
      if (toolBlocks) {
        Abort.abort(Issues.unsupported(
          "toolChoice",
          "Bedrock's Converse API has no 'none' tool choice, and a conversation that holds tool calls must declare its tools there: the model could not be kept from calling them. Use 'auto', or leave out the tool history."
        ))
      }
    } else {
      const config: Mutable<NonNullable<Converse.ConverseRequest["toolConfig"]>> = {
        tools: tools.map((tool) => ({
          toolSpec: {
            name: tool.name,
            ...(tool.description === undefined ? {} : { description: tool.description }),
            inputSchema: { json: tool.parameters ?? { type: "object", properties: {} } }
          }
        }))
      }
      if (choice === "auto") config.toolChoice = { auto: {} }
      else if (choice === "required") config.toolChoice = { any: {} }
      else if (typeof choice === "object") config.toolChoice = { tool: { name: choice.name } }
      out.toolConfig = config
    }
  }
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
): Result.Result<Converse.ConverseRequest, RequestError> => Abort.run(() => encodeSync(request, upstreamModel))

/**
 * Writes the Converse body for a Bedrock channel serving `upstreamModel`
 * (see the module doc for every mapping decision).
 *
 * @example
 * ```ts
 * import { Request } from "@modelgate/bedrock-adapter"
 *
 * const body = yield* Request.encodeRequest({
 *   model: "claude-sonnet-4-5",
 *   system: ["Be brief"],
 *   messages: [{ role: "user", content: [{ type: "text", text: "Hi" }] }],
 *   maxOutputTokens: 512,
 *   stream: false
 * }, "us.anthropic.claude-sonnet-4-5-20250929-v1:0")
 * // { messages: [{ role: "user", content: [{ text: "Hi" }] }], system: [{ text: "Be brief" }],
 * //   inferenceConfig: { maxTokens: 512 } }
 * ```
 *
 * @category encoding
 */
export const encodeRequest = (
  request: Canonical.ChatRequest,
  upstreamModel: string
): Effect.Effect<Converse.ConverseRequest, RequestError> =>
  Effect.fromResult(encodeRequestResult(request, upstreamModel))

// ---------------------------------------------------------------------------
// Decoding: Converse -> canonical
// ---------------------------------------------------------------------------

const otherBlock = (member: string, param: string): never =>
  Abort.abort(Issues.unsupported(param, `'${param}' is a '${member}' block, which cannot be sent to this model.`))

const resultText = (block: Converse.ToolResultBlock, param: string): string => {
  let text = ""
  block.toolResult.content.forEach((item, k) => {
    let piece: string
    if ("text" in item && typeof item.text === "string") piece = item.text
    else if ("json" in item) piece = JSON.stringify(item.json)
    else {
      return Abort.abort(Issues.unsupported(
        `${param}.toolResult.content[${k}]`,
        `The tool result at '${param}' contains a '${
          Object.keys(item)[0] ?? "(empty)"
        }' item; only text and JSON tool results can be sent to this model.`
      ))
    }
    text += text.length === 0 ? piece : `\n${piece}`
  })
  return text
}

const decodeSync = (body: unknown, model: string, stream: boolean): Canonical.ChatRequest => {
  const decoded = Converse.decodeRequestBody(body)
  if (Result.isFailure(decoded)) return Abort.abort(decoded.failure)
  const wire = decoded.success
  if (wire.messages.length === 0) {
    Abort.abort(Issues.invalid("messages", "'messages' must contain at least one message."))
  }
  const out: Mutable<Canonical.ChatRequest> = { model, messages: [], stream }

  const system: Array<string> = []
  const instructions = [JSON_INSTRUCTION]
  wire.system?.forEach((block, k) => {
    if (!("text" in block) || typeof block.text !== "string") {
      return otherBlock(Object.keys(block)[0] ?? "(empty)", `system[${k}]`)
    }
    if (block.text.length > 0) system.push(block.text)
  })
  // The JSON instruction this package writes reads back as JSON mode.
  const last = system[system.length - 1]
  if (last !== undefined && last.startsWith(instructions[0]!)) {
    system.pop()
    const schemaAt = last.indexOf(":\n")
    if (last === JSON_INSTRUCTION) out.responseFormat = { type: "json" }
    else if (schemaAt >= 0) {
      const named = /\(named "([^"]*)"\):\n/.exec(last)
      try {
        const schema = JSON.parse(last.slice(schemaAt + 2)) as Canonical.JsonSchemaObject
        out.responseFormat = named === null
          ? { type: "json_schema", schema }
          : { type: "json_schema", name: named[1]!, schema }
      } catch {
        system.push(last)
      }
    } else system.push(last)
  }
  if (system.length > 0) out.system = system

  const messages: Array<Canonical.Message> = []
  const names = new Map<string, string>()
  wire.messages.forEach((message, i) => {
    if (message.role === "assistant") {
      const parts: Array<Canonical.Part> = []
      message.content.forEach((wireBlock, j) => {
        const param = `messages[${i}].content[${j}]`
        const block = Converse.knownBlock(wireBlock)
        if (block === undefined) return otherBlock(Converse.memberOf(wireBlock), param)
        if ("text" in block) {
          if (block.text.length > 0) parts.push({ type: "text", text: block.text })
        } else if ("reasoningContent" in block) {
          const reasoning = block.reasoningContent
          if ("reasoningText" in reasoning) {
            const signature = reasoning.reasoningText.signature
            parts.push(
              signature === undefined || signature.length === 0
                ? { type: "thinking", text: reasoning.reasoningText.text }
                : { type: "thinking", text: reasoning.reasoningText.text, signature: SIGNATURE_PREFIX + signature }
            )
          } else parts.push({ type: "thinking", text: "", signature: REDACTED_PREFIX + reasoning.redactedContent })
        } else if ("toolUse" in block) {
          const id = decodeToolId(block.toolUse.toolUseId)
          names.set(id, block.toolUse.name)
          parts.push({
            type: "tool_call",
            id,
            name: block.toolUse.name,
            arguments: JSON.stringify(block.toolUse.input)
          })
        } else {
          Abort.abort(
            Issues.invalid(
              param,
              `'${param}' is a '${Converse.memberOf(block)}' block, which only a user turn may contain.`
            )
          )
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
      const block = Converse.knownBlock(wireBlock)
      if (block === undefined) return otherBlock(Converse.memberOf(wireBlock), param)
      if ("text" in block) {
        if (block.text.length > 0) into("user").push({ type: "text", text: block.text })
      } else if ("image" in block) {
        into("user").push({
          type: "image",
          mediaType: MEDIA_OF_IMAGE[block.image.format]!,
          data: block.image.source.bytes
        })
      } else if ("document" in block) {
        into("user").push({
          type: "file",
          mediaType: MEDIA_OF_DOCUMENT[block.document.format]!,
          data: block.document.source.bytes,
          filename: block.document.name
        })
      } else if ("toolResult" in block) {
        const callId = decodeToolId(block.toolResult.toolUseId)
        const result: Mutable<Canonical.ToolResultPart> = {
          type: "tool_result",
          callId,
          content: resultText(block, param)
        }
        const name = names.get(callId)
        if (name !== undefined) result.name = name
        if (block.toolResult.status === "error") result.isError = true
        into("tool").push(result)
      } else {
        Abort.abort(
          Issues.invalid(
            param,
            `'${param}' is a '${Converse.memberOf(block)}' block, which only an assistant turn may contain.`
          )
        )
      }
    })
    flush()
  })
  out.messages = messages

  const config = wire.toolConfig
  if (config !== undefined && config.tools.length > 0) {
    out.tools = config.tools.map((tool, k) => {
      if (!("toolSpec" in tool)) return otherBlock(Object.keys(tool)[0] ?? "(empty)", `toolConfig.tools[${k}]`)
      const spec = (tool as Converse.Tool).toolSpec
      const definition: Mutable<Canonical.ToolDefinition> = { name: spec.name, parameters: spec.inputSchema.json }
      if (spec.description !== undefined) definition.description = spec.description
      return definition
    })
    const choice = config.toolChoice
    if (choice !== undefined) {
      if ("auto" in choice) out.toolChoice = "auto"
      else if ("any" in choice) out.toolChoice = "required"
      else out.toolChoice = { type: "tool", name: choice.tool.name }
    }
  }

  const inference = wire.inferenceConfig
  if (inference?.maxTokens !== undefined) out.maxOutputTokens = inference.maxTokens
  if (inference?.temperature !== undefined) out.temperature = inference.temperature
  if (inference?.topP !== undefined) out.topP = inference.topP
  if (inference?.stopSequences !== undefined && inference.stopSequences.length > 0) out.stop = inference.stopSequences
  const extra = wire.additionalModelRequestFields
  if (extra !== undefined) {
    if (typeof extra.top_k === "number" && Number.isInteger(extra.top_k)) out.topK = extra.top_k
    const thinking = extra.thinking as { readonly type?: unknown; readonly budget_tokens?: unknown } | undefined
    if (thinking?.type === "enabled" && typeof thinking.budget_tokens === "number") {
      out.reasoning = { budgetTokens: thinking.budget_tokens, includeThoughts: true }
    }
  }
  if (stream) out.includeUsage = true
  return out
}

/**
 * `decodeRequest` as a `Result`. Never throws.
 *
 * @category decoding
 */
export const decodeRequestResult = (
  body: unknown,
  model: string,
  stream = false
): Result.Result<Canonical.ChatRequest, RequestError> => Abort.run(() => decodeSync(body, model, stream))

/**
 * Reads a Converse body (for the model `model`, from the path, streamed when
 * it came to `/converse-stream`) into a canonical request: the inverse of
 * `encodeRequest` on what both carry. Reasoning signatures get the
 * `bedrock:` prefix (redacted reasoning `bedrock-redacted:`), tool ids pass
 * through `Ids.decodeToolId`, `thinking` in `additionalModelRequestFields`
 * becomes a budget, and this package's own JSON instruction reads back as
 * JSON mode. Refused: blocks other than text, images, documents, tool use,
 * tool results and reasoning (video, S3 sources, guard content, cache points),
 * and tool results holding images or documents.
 *
 * @category decoding
 */
export const decodeRequest = (
  body: unknown,
  model: string,
  stream = false
): Effect.Effect<Canonical.ChatRequest, RequestError> => Effect.fromResult(decodeRequestResult(body, model, stream))
