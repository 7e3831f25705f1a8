/**
 * `generateContent` requests: Gemini wire body <-> canonical `ChatRequest`.
 *
 * - `decodeRequest` reads a Gemini client's body (camelCase or snake_case)
 *   for a call that goes to an upstream of another dialect. Bad input fails
 *   with an `InvalidRequest` naming the field; what the canonical model cannot
 *   carry fails with an `UnsupportedFeature` (400), never a silent drop.
 * - `encodeRequest` writes the body sent to a Gemini upstream (the model is in
 *   the URL, not the body).
 *
 * Mapping notes (also the contract the round-trip law checks):
 *
 * - `systemInstruction` text parts become `system` entries (one per part).
 * - Role `model` is `assistant`. A `user` turn's `functionResponse` parts
 *   become a canonical `tool` message of `tool_result` parts, its other parts
 *   a `user` message, in their original order.
 * - A `functionCall` without `id` gets the synthesised id `call_<turn>_<n>`
 *   (turn = index in `contents`, n = index of the call in that turn). A
 *   `functionResponse` takes its `callId` from its `id`, else from the
 *   earliest unanswered call of the same name (pairing by name and order).
 *   `response` objects become text: `{"output": "<text>"}` is unwrapped to the
 *   text, `{"error": "<text>"}` to the text with `isError`, anything else is
 *   JSON text.
 * - `thought: true` parts are thinking parts (with `thoughtSignature` as
 *   signature); a `thoughtSignature` on a `functionCall` part is the tool
 *   call's signature. A signature on a plain text part has no canonical field
 *   and is dropped (Google documents it as optional to return).
 * - `inlineData` with an `image/*` type is an image (data + media type), other
 *   types a file; `fileData` is always a file part with its URI (type
 *   `application/octet-stream` when not given).
 * - `responseMimeType: "application/json"` is JSON mode; with
 *   `responseJsonSchema` or `responseSchema` it is `json_schema` named
 *   `response`, the schema normalised by `normalizeSchema`.
 * - `thinkingConfig`: `thinkingLevel` -> `effort`, `thinkingBudget` ->
 *   `budgetTokens` (`-1`, "dynamic", is the default and is left out),
 *   `includeThoughts` as is.
 * - `toolConfig.functionCallingConfig`: AUTO and VALIDATED -> `auto`, NONE ->
 *   `none`, ANY -> `required`, ANY with exactly one allowed name -> that tool.
 *   Any other restriction to a subset of the declared functions is refused.
 * - A function's result schema (`response` / `responseJsonSchema`) has no
 *   place in other dialects: it is written into the function's description
 *   (`describeReturns`), so the model still learns it.
 * - Every field is checked before translation: a field Google does not
 *   define fails with an `InvalidRequest` in Google's words ("Unknown name
 *   ... Cannot find field"), as Google would answer.
 * - Refused (`UnsupportedFeature`): hosted tools (`googleSearch`,
 *   `codeExecution`, `urlContext`, ...), `cachedContent`, executable-code and
 *   video-metadata parts, non-text `responseModalities`, `speechConfig`,
 *   `imageConfig`, `responseLogprobs`, `text/x.enum` and other response types,
 *   streamed function-call arguments (`partialArgs`, `willContinue`) and
 *   function responses with media `parts`.
 * - Ignored, as hints for Google's own serving that no other dialect has:
 *   `safetySettings` (the upstream's own filters apply), `mediaResolution`
 *   (per request and per part), `enableEnhancedCivicAnswers`,
 *   `toolConfig.retrievalConfig`, `streamFunctionCallArguments` (calls are
 *   always sent complete), function `behavior`, `functionResponse.scheduling`
 *   and `willContinue`, `partMetadata`, blob and file `displayName`s, and the
 *   body's `model` (the URL names the model). Sampling hints the target
 *   dialect lacks (such as `topK` for OpenAI) are dropped by that dialect's
 *   encoder, not here.
 *
 * @since 0.1.0
 */
import { Abort, type Canonical, type GatewayError, Issues } from "@modelgate/core"
import { Effect, Result } from "effect"
import type { Mutable } from "effect/Types"
import * as GenerateContent from "./GenerateContent.ts"
import { checkRequestFields } from "./internal/fields.ts"

/** The errors a request can fail with. @category models */
export type RequestError = GatewayError.InvalidRequest | GatewayError.UnsupportedFeature

/** Options of `decodeRequest`. @category models */
export interface DecodeOptions {
  /** Whether the route streams (`:streamGenerateContent`); default false. */
  readonly stream?: boolean
}

// ---------------------------------------------------------------------------
// JSON schemas
// ---------------------------------------------------------------------------

const DROPPED_SCHEMA_KEYS = new Set(["propertyOrdering", "example", "nullable"])

/** Google's Schema fields in their snake_case proto spelling (property names are never touched). */
const SNAKE_KEYWORDS: Readonly<Record<string, string>> = {
  any_of: "anyOf",
  property_ordering: "propertyOrdering",
  max_items: "maxItems",
  min_items: "minItems",
  max_length: "maxLength",
  min_length: "minLength",
  max_properties: "maxProperties",
  min_properties: "minProperties"
}

const normalizeSchemaValue = (value: Canonical.JsonSchemaObject): Canonical.JsonSchemaObject => {
  const out: Record<string, unknown> = {}
  for (const name in value) {
    const key = SNAKE_KEYWORDS[name] ?? name
    if (DROPPED_SCHEMA_KEYS.has(key)) continue
    const item = value[name]
    switch (key) {
      case "type":
        out.type = typeof item === "string"
          ? item.toLowerCase()
          : Array.isArray(item)
          ? item.map((t) => typeof t === "string" ? t.toLowerCase() : t)
          : item
        break
      case "format":
        if (item !== "enum") out.format = item
        break
      case "properties":
      case "$defs":
      case "definitions":
      case "patternProperties":
        out[key] = isObject(item) ? mapValues(item) : item
        break
      case "items":
      case "additionalProperties":
      case "not":
      case "contains":
        out[key] = isObject(item) ? normalizeSchemaValue(item) : item
        break
      case "anyOf":
      case "oneOf":
      case "allOf":
      case "prefixItems":
        out[key] = Array.isArray(item) ? item.map((s) => isObject(s) ? normalizeSchemaValue(s) : s) : item
        break
      default:
        out[key] = item
    }
  }
  if (value.nullable === true) {
    const type = out.type
    if (typeof type === "string") out.type = type === "null" ? type : [type, "null"]
    else if (Array.isArray(type)) {
      if (!type.includes("null")) out.type = [...type, "null"]
    } else if (Array.isArray(out.anyOf)) out.anyOf = [...out.anyOf, { type: "null" }]
  }
  return out as Canonical.JsonSchemaObject
}

const isObject = (u: unknown): u is Canonical.JsonSchemaObject =>
  typeof u === "object" && u !== null && !Array.isArray(u)

const mapValues = (record: Canonical.JsonSchemaObject): Canonical.JsonSchemaObject => {
  const out: Record<string, unknown> = {}
  for (const key in record) {
    const item = record[key]
    out[key] = isObject(item) ? normalizeSchemaValue(item) : item
  }
  return out as Canonical.JsonSchemaObject
}

/**
 * Normalises a Gemini schema (OpenAPI subset or JSON Schema) into plain JSON
 * Schema: type names in lower case (`"OBJECT"` -> `"object"`), `nullable: true`
 * as a type array with `"null"` (or an extra `anyOf` branch), Google's
 * snake_case field spellings (`any_of`, `max_items`, ...) in camelCase, and
 * `propertyOrdering`, `example` and the Gemini-only `format: "enum"` dropped.
 * Property names are never changed.
 *
 * @example
 * ```ts
 * normalizeSchema({ type: "OBJECT", properties: { a: { type: "STRING", nullable: true } }, propertyOrdering: ["a"] })
 * // { type: "object", properties: { a: { type: ["string", "null"] } } }
 * ```
 *
 * @category schemas
 */
export const normalizeSchema = (schema: Canonical.JsonSchemaObject): Canonical.JsonSchemaObject =>
  normalizeSchemaValue(schema)

// ---------------------------------------------------------------------------
// Decoding: Gemini client -> canonical
// ---------------------------------------------------------------------------

const DATA_FIELDS = [
  "text",
  "inlineData",
  "fileData",
  "functionCall",
  "functionResponse",
  "executableCode",
  "codeExecutionResult"
] as const

/** The one data field of a part, or an error naming the part. */
const dataFieldOf = (part: GenerateContent.Part, param: string): (typeof DATA_FIELDS)[number] => {
  let found: (typeof DATA_FIELDS)[number] | undefined
  for (const field of DATA_FIELDS) {
    if (part[field] === undefined) continue
    if (found !== undefined) {
      return Abort.abort(
        Issues.invalid(param, `'${param}' has both '${found}' and '${field}'; a part holds exactly one kind of data.`)
      )
    }
    found = field
  }
  if (found === undefined) {
    if (part.videoMetadata !== undefined) {
      return Abort.abort(
        Issues.unsupported(`${param}.videoMetadata`, `'${param}.videoMetadata' cannot be translated for this model.`)
      )
    }
    if (part.thoughtSignature !== undefined) return "text"
    return Abort.abort(Issues.invalid(
      param,
      `'${param}' has no data: set one of text, inlineData, fileData, functionCall or functionResponse.`
    ))
  }
  return found
}

const outputOf = (response: GenerateContent.JsonObject): { readonly content: string; readonly isError: boolean } => {
  const keys = Object.keys(response)
  if (keys.length === 1) {
    const key = keys[0]!
    const value = response[key]
    if ((key === "output" || key === "error") && typeof value === "string" && !looksLikeJsonObject(value)) {
      return { content: value, isError: key === "error" }
    }
  }
  return { content: JSON.stringify(response), isError: false }
}

const looksLikeJsonObject = (text: string): boolean => {
  const start = text.trimStart()
  if (!start.startsWith("{")) return false
  try {
    const parsed: unknown = JSON.parse(text)
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)
  } catch {
    return false
  }
}

interface PendingCall {
  readonly id: string
  readonly name: string
  answered: boolean
}

const mediaPart = (blob: GenerateContent.Blob): Canonical.Part =>
  blob.mimeType.startsWith("image/")
    ? { type: "image", mediaType: blob.mimeType, data: blob.data }
    : { type: "file", mediaType: blob.mimeType, data: blob.data }

const EFFORTS: Readonly<Record<string, Canonical.ReasoningEffort>> = {
  MINIMAL: "minimal",
  LOW: "low",
  MEDIUM: "medium",
  HIGH: "high",
  minimal: "minimal",
  low: "low",
  medium: "medium",
  high: "high"
}

const decodeSync = (body: unknown, model: string, options: DecodeOptions | undefined): Canonical.ChatRequest => {
  const normalized = GenerateContent.normalizeKeys(body)
  const field = checkRequestFields(normalized)
  if (field !== undefined) Abort.abort(field)
  const decoded = GenerateContent.decodeRequestBody(normalized)
  if (Result.isFailure(decoded)) return Abort.abort(decoded.failure)
  const wire = decoded.success
  const out: Mutable<Canonical.ChatRequest> = { model, messages: [], stream: options?.stream ?? false }
  if (out.stream) out.includeUsage = true

  if (wire.cachedContent !== undefined) {
    Abort.abort(Issues.unsupported(
      "cachedContent",
      "'cachedContent' refers to content cached at Google and cannot be used with this model."
    ))
  }

  // System instruction
  if (wire.systemInstruction !== undefined) {
    const system: Array<string> = []
    wire.systemInstruction.parts.forEach((part, j) => {
      const param = `systemInstruction.parts[${j}]`
      if (dataFieldOf(part, param) !== "text") {
        Abort.abort(
          Issues.unsupported(param, `'${param}' must be a text part: only text system instructions can be translated.`)
        )
      }
      if (part.text !== undefined && part.text.length > 0) system.push(part.text)
    })
    if (system.length > 0) out.system = system
  }

  // Contents
  if (wire.contents.length === 0) {
    Abort.abort(Issues.invalid("contents", "'contents' must contain at least one turn."))
  }
  const messages: Array<Canonical.Message> = []
  const pending: Array<PendingCall> = []
  wire.contents.forEach((content, turn) => {
    const role = content.role ?? "user"
    if (content.parts.length === 0) {
      Abort.abort(Issues.invalid(`contents[${turn}].parts`, `'contents[${turn}].parts' must not be empty.`))
    }
    if (role === "model") {
      const parts: Array<Canonical.Part> = []
      let n = 0
      content.parts.forEach((part, j) => {
        const param = `contents[${turn}].parts[${j}]`
        const field = dataFieldOf(part, param)
        switch (field) {
          case "text": {
            const text = part.text ?? ""
            if (part.thought === true) {
              parts.push(
                part.thoughtSignature === undefined
                  ? { type: "thinking", text }
                  : { type: "thinking", text, signature: part.thoughtSignature }
              )
            } else if (text.length > 0) parts.push({ type: "text", text })
            break
          }
          case "functionCall": {
            const call = part.functionCall!
            const id = call.id ?? `call_${turn}_${n}`
            n++
            pending.push({ id, name: call.name, answered: false })
            const toolCall: Mutable<Canonical.ToolCallPart> = {
              type: "tool_call",
              id,
              name: call.name,
              arguments: JSON.stringify(call.args ?? {})
            }
            if (part.thoughtSignature !== undefined) toolCall.signature = part.thoughtSignature
            parts.push(toolCall)
            break
          }
          case "inlineData":
            parts.push(mediaPart(part.inlineData!))
            break
          case "fileData":
            parts.push(filePart(part.fileData!))
            break
          case "functionResponse":
            Abort.abort(
              Issues.invalid(
                `${param}.functionResponse`,
                `'${param}.functionResponse' must be in a 'user' turn, not a 'model' turn.`
              )
            )
            break
          default:
            Abort.abort(
              Issues.unsupported(
                `${param}.${field}`,
                `'${param}.${field}' (code execution) cannot be translated for this model.`
              )
            )
        }
      })
      messages.push({ role: "assistant", content: parts })
      return
    }
    // user / function / tool
    let run: Array<Canonical.Part> = []
    let runRole: "user" | "tool" | undefined
    const flush = () => {
      if (runRole !== undefined && run.length > 0) messages.push({ role: runRole, content: run })
      run = []
      runRole = undefined
    }
    let r = 0
    content.parts.forEach((part, j) => {
      const param = `contents[${turn}].parts[${j}]`
      const field = dataFieldOf(part, param)
      if (field === "functionResponse") {
        if (runRole !== "tool") flush()
        runRole = "tool"
        const response = part.functionResponse!
        let callId = response.id
        if (callId !== undefined) {
          const call = pending.find((c) => c.id === callId && !c.answered)
          if (call !== undefined) call.answered = true
        } else {
          const call = pending.find((c) => c.name === response.name && !c.answered)
          if (call !== undefined) {
            call.answered = true
            callId = call.id
          } else callId = `call_${turn}_${r}`
        }
        r++
        const { content: text, isError } = outputOf(response.response)
        const result: Mutable<Canonical.ToolResultPart> = {
          type: "tool_result",
          callId,
          name: response.name,
          content: text
        }
        if (isError) result.isError = true
        run.push(result)
        return
      }
      if (runRole !== "user") flush()
      runRole = "user"
      switch (field) {
        case "text":
          if (part.thought === true) {
            run.push(
              part.thoughtSignature === undefined
                ? { type: "thinking", text: part.text ?? "" }
                : { type: "thinking", text: part.text ?? "", signature: part.thoughtSignature }
            )
          } else if ((part.text ?? "").length > 0) run.push({ type: "text", text: part.text! })
          break
        case "inlineData":
          run.push(mediaPart(part.inlineData!))
          break
        case "fileData":
          run.push(filePart(part.fileData!))
          break
        case "functionCall":
          Abort.abort(
            Issues.invalid(
              `${param}.functionCall`,
              `'${param}.functionCall' must be in a 'model' turn, not a '${role}' turn.`
            )
          )
          break
        default:
          Abort.abort(
            Issues.unsupported(
              `${param}.${field}`,
              `'${param}.${field}' (code execution) cannot be translated for this model.`
            )
          )
      }
    })
    flush()
  })
  out.messages = messages

  // Tools
  const declared: Array<string> = []
  if (wire.tools !== undefined) {
    const tools: Array<Canonical.ToolDefinition> = []
    wire.tools.forEach((tool, i) => {
      for (const hosted of GenerateContent.HOSTED_TOOLS) {
        if (tool[hosted] !== undefined) {
          Abort.abort(Issues.unsupported(
            `tools[${i}].${hosted}`,
            `'tools[${i}].${hosted}' is a tool hosted by Google and cannot be used with this model; declare your own functions in 'functionDeclarations'.`
          ))
        }
      }
      tool.functionDeclarations?.forEach((fn, j) => {
        const param = `tools[${i}].functionDeclarations[${j}]`
        if (fn.parameters !== undefined && fn.parametersJsonSchema !== undefined) {
          Abort.abort(Issues.invalid(param, `'${param}' sets both 'parameters' and 'parametersJsonSchema'; use one.`))
        }
        const schema = fn.parametersJsonSchema ?? fn.parameters
        if (fn.response !== undefined && fn.responseJsonSchema !== undefined) {
          Abort.abort(Issues.invalid(param, `'${param}' sets both 'response' and 'responseJsonSchema'; use one.`))
        }
        const returns = fn.responseJsonSchema ?? fn.response
        const def: Mutable<Canonical.ToolDefinition> = { name: fn.name }
        if (fn.description !== undefined) def.description = fn.description
        if (returns !== undefined) def.description = describeReturns(fn.description, returns)
        if (schema !== undefined) def.parameters = normalizeSchema(schema)
        tools.push(def)
        declared.push(fn.name)
      })
    })
    if (tools.length > 0) out.tools = tools
  }

  // Tool config
  const calling = wire.toolConfig?.functionCallingConfig
  if (calling !== undefined) {
    const mode = calling.mode ?? "AUTO"
    const allowed = calling.allowedFunctionNames ?? []
    const restricts = allowed.length > 0 && !declared.every((name) => allowed.includes(name))
    const param = "toolConfig.functionCallingConfig.allowedFunctionNames"
    switch (mode) {
      case "NONE":
        out.toolChoice = "none"
        break
      case "ANY":
        if (allowed.length === 1 && (restricts || declared.length === 1)) {
          out.toolChoice = { type: "tool", name: allowed[0]! }
        } else if (restricts) {
          Abort.abort(
            Issues.unsupported(param, `'${param}' may name only one function (or all of them) for this model.`)
          )
        } else out.toolChoice = "required"
        break
      default:
        if (restricts) {
          Abort.abort(Issues.unsupported(param, `'${param}' can only be used with mode ANY for this model.`))
        }
        out.toolChoice = "auto"
    }
  }

  // Generation config
  const config = wire.generationConfig
  if (config !== undefined) {
    if (config.temperature !== undefined) out.temperature = config.temperature
    if (config.topP !== undefined) out.topP = config.topP
    if (config.topK !== undefined) out.topK = config.topK
    if (config.maxOutputTokens !== undefined) out.maxOutputTokens = config.maxOutputTokens
    if (config.stopSequences !== undefined && config.stopSequences.length > 0) out.stop = config.stopSequences
    if (config.candidateCount !== undefined) out.candidateCount = config.candidateCount
    if (config.seed !== undefined) out.seed = config.seed
    if (config.presencePenalty !== undefined) out.presencePenalty = config.presencePenalty
    if (config.frequencyPenalty !== undefined) out.frequencyPenalty = config.frequencyPenalty
    if (config.responseLogprobs === true || config.logprobs !== undefined) {
      Abort.abort(
        Issues.unsupported(
          "generationConfig.responseLogprobs",
          "Log probabilities cannot be requested from this model."
        )
      )
    }
    if (config.responseModalities !== undefined && config.responseModalities.some((m) => m.toUpperCase() !== "TEXT")) {
      Abort.abort(
        Issues.unsupported("generationConfig.responseModalities", "This model can only answer with text ('TEXT').")
      )
    }
    if (config.speechConfig !== undefined) {
      Abort.abort(
        Issues.unsupported(
          "generationConfig.speechConfig",
          "'generationConfig.speechConfig' cannot be used with this model."
        )
      )
    }
    if (config.imageConfig !== undefined) {
      Abort.abort(
        Issues.unsupported(
          "generationConfig.imageConfig",
          "'generationConfig.imageConfig' cannot be used with this model."
        )
      )
    }
    if (config.responseSchema !== undefined && config.responseJsonSchema !== undefined) {
      Abort.abort(
        Issues.invalid(
          "generationConfig.responseJsonSchema",
          "Set only one of 'responseSchema' and 'responseJsonSchema'."
        )
      )
    }
    const schema = config.responseJsonSchema ?? config.responseSchema
    const mime = config.responseMimeType
    if (mime === "application/json") {
      out.responseFormat = schema === undefined
        ? { type: "json" }
        : { type: "json_schema", name: "response", schema: normalizeSchema(schema) }
    } else if (mime !== undefined && mime !== "text/plain") {
      Abort.abort(Issues.unsupported(
        "generationConfig.responseMimeType",
        `'generationConfig.responseMimeType' '${mime}' cannot be used with this model; use 'text/plain' or 'application/json'.`
      ))
    } else if (schema !== undefined) {
      const field = config.responseJsonSchema !== undefined ? "responseJsonSchema" : "responseSchema"
      Abort.abort(
        Issues.invalid(
          `generationConfig.${field}`,
          `'generationConfig.${field}' requires 'responseMimeType' "application/json".`
        )
      )
    }
    const thinking = config.thinkingConfig
    if (thinking !== undefined) {
      const reasoning: Mutable<Canonical.Reasoning> = {}
      if (thinking.thinkingLevel !== undefined) {
        const effort = EFFORTS[thinking.thinkingLevel]
        if (effort !== undefined) reasoning.effort = effort
      }
      if (thinking.thinkingBudget !== undefined && thinking.thinkingBudget !== -1) {
        if (thinking.thinkingBudget < -1) {
          Abort.abort(
            Issues.invalid(
              "generationConfig.thinkingConfig.thinkingBudget",
              "'thinkingBudget' must be -1 (dynamic), 0 (off) or a positive number of tokens."
            )
          )
        }
        reasoning.budgetTokens = thinking.thinkingBudget
      }
      if (thinking.includeThoughts !== undefined) reasoning.includeThoughts = thinking.includeThoughts
      if (Object.keys(reasoning).length > 0) out.reasoning = reasoning
    }
  }
  return out
}

/**
 * A function's description with its result schema (`response` or
 * `responseJsonSchema`, which no other dialect declares) written into it, so
 * the model still learns what the function returns.
 *
 * @category decoding
 */
export const describeReturns = (description: string | undefined, returns: Canonical.JsonSchemaObject): string => {
  const sentence = `The function returns JSON matching this schema: ${JSON.stringify(normalizeSchema(returns))}`
  return description === undefined || description.length === 0 ? sentence : `${description}\n\n${sentence}`
}

const filePart = (file: GenerateContent.FileData): Canonical.FilePart => ({
  type: "file",
  mediaType: file.mimeType ?? "application/octet-stream",
  uri: file.fileUri
})

/**
 * Client Gemini body -> canonical request, as a `Result` (for hot paths and
 * property tests). See `decodeRequest`.
 *
 * @category decoding
 */
export const decodeRequestResult = (
  body: unknown,
  model: string,
  options?: DecodeOptions
): Result.Result<Canonical.ChatRequest, RequestError> => Abort.run(() => decodeSync(body, model, options))

/**
 * Decodes a Gemini client's `generateContent` body into a canonical request
 * for `model` (taken from the URL). `stream` is decided by the route.
 *
 * @example
 * ```ts
 * import { Request } from "@modelgate/genai-adapter"
 *
 * const request = yield* Request.decodeRequest(
 *   { contents: [{ role: "user", parts: [{ text: "Hi" }] }], system_instruction: { parts: [{ text: "Be brief" }] } },
 *   "gemini-2.5-flash",
 *   { stream: true }
 * )
 * // { model: "gemini-2.5-flash", system: ["Be brief"], messages: [{ role: "user", content: [{ type: "text", text: "Hi" }] }], stream: true, includeUsage: true }
 * ```
 *
 * @category decoding
 */
export const decodeRequest = (
  body: unknown,
  model: string,
  options?: DecodeOptions
): Effect.Effect<Canonical.ChatRequest, RequestError> => Effect.fromResult(decodeRequestResult(body, model, options))

// ---------------------------------------------------------------------------
// Encoding: canonical -> Gemini upstream
// ---------------------------------------------------------------------------

/**
 * The sentinel Google accepts in place of a thought signature on the first
 * function call of a model turn whose real signature is unknown (history from
 * an OpenAI or Anthropic client). gemini-cli sends the same.
 *
 * @category encoding
 */
export const SKIP_THOUGHT_SIGNATURE = "skip_thought_signature_validator"

/**
 * Thinking budgets (tokens) sent to Gemini 2.x models for each reasoning
 * effort: none 0 (thinking off, where the model allows it), minimal 128,
 * low 1024, medium 8192, high 24576, xhigh and max 32768 (Gemini 2.5 Pro's
 * ceiling). A canonical `budgetTokens` is always sent as it is instead.
 *
 * @category encoding
 */
export const THINKING_BUDGETS: Readonly<Record<Canonical.ReasoningEffort, number>> = {
  none: 0,
  minimal: 128,
  low: 1024,
  medium: 8192,
  high: 24576,
  xhigh: 32768,
  max: 32768
}

/**
 * Thinking levels sent to Gemini 3 (and later) models for each reasoning
 * effort: none and minimal `MINIMAL` (Gemini 3 cannot switch thinking off),
 * low `LOW`, medium `MEDIUM`, high, xhigh and max `HIGH`.
 *
 * @category encoding
 */
export const THINKING_LEVELS: Readonly<Record<Canonical.ReasoningEffort, "MINIMAL" | "LOW" | "MEDIUM" | "HIGH">> = {
  none: "MINIMAL",
  minimal: "MINIMAL",
  low: "LOW",
  medium: "MEDIUM",
  high: "HIGH",
  xhigh: "HIGH",
  max: "HIGH"
}

/**
 * How reasoning effort is expressed: `budget` (`thinkingBudget`, Gemini 2.x)
 * or `level` (`thinkingLevel`, Gemini 3+). By default it is chosen from the
 * model name: `gemini-1*` and `gemini-2*` use budgets, everything else levels.
 *
 * @category encoding
 */
export type ThinkingStyle = "budget" | "level"

/** Options of `encodeRequest`. @category models */
export interface EncodeOptions {
  readonly thinkingStyle?: ThinkingStyle
}

/** The thinking style for a model name (see `ThinkingStyle`). @category encoding */
export const thinkingStyleOf = (model: string): ThinkingStyle => {
  const id = model.startsWith("models/") ? model.slice(7) : model
  return /^gemini-(1|2)(\.|-)/.test(id) ? "budget" : "level"
}

type MutablePart = { -readonly [K in keyof GenerateContent.OutputPart]: GenerateContent.OutputPart[K] }
interface MutableContent {
  readonly role: "user" | "model"
  readonly parts: Array<GenerateContent.OutputPart>
}

/** The body this package sends to a Gemini upstream. @category encoding */
export interface UpstreamRequest {
  readonly contents: ReadonlyArray<
    { readonly role: "user" | "model"; readonly parts: ReadonlyArray<GenerateContent.OutputPart> }
  >
  readonly systemInstruction?: { readonly parts: ReadonlyArray<{ readonly text: string }> }
  readonly tools?: ReadonlyArray<{
    readonly functionDeclarations: ReadonlyArray<{
      readonly name: string
      readonly description?: string
      readonly parametersJsonSchema?: Canonical.JsonSchemaObject
    }>
  }>
  readonly toolConfig?: {
    readonly functionCallingConfig: {
      readonly mode: "AUTO" | "ANY" | "NONE"
      readonly allowedFunctionNames?: ReadonlyArray<string>
    }
  }
  readonly generationConfig?: Readonly<Record<string, unknown>>
}

const parseObject = (text: string): GenerateContent.JsonObject | undefined => {
  if (text.trim().length === 0) return {}
  try {
    const parsed: unknown = JSON.parse(text)
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)
      ? parsed as GenerateContent.JsonObject
      : undefined
  } catch {
    return undefined
  }
}

/** `data:<mime>;base64,<data>` -> its parts. */
const parseDataUrl = (url: string): { readonly mimeType: string; readonly data: string } | undefined => {
  if (!url.startsWith("data:")) return undefined
  const comma = url.indexOf(",")
  if (comma < 0) return undefined
  const meta = url.slice(5, comma)
  if (!meta.endsWith(";base64")) return undefined
  const mimeType = meta.slice(0, -7)
  return { mimeType: mimeType.length === 0 ? "application/octet-stream" : mimeType, data: url.slice(comma + 1) }
}

const encodeSync = (request: Canonical.ChatRequest, options: EncodeOptions | undefined): UpstreamRequest => {
  const contents: Array<MutableContent> = []
  const names = new Map<string, string>()
  const push = (role: "user" | "model", parts: Array<GenerateContent.OutputPart>) => {
    if (parts.length === 0) return
    const last = contents[contents.length - 1]
    if (last !== undefined && last.role === role) last.parts.push(...parts)
    else contents.push({ role, parts })
  }
  request.messages.forEach((message, i) => {
    const parts: Array<GenerateContent.OutputPart> = []
    const role = message.role === "assistant" ? "model" : "user"
    let firstCall = true
    message.content.forEach((part, j) => {
      const param = `messages[${i}].content[${j}]`
      switch (part.type) {
        case "text":
          if (part.text.length > 0) parts.push({ text: part.text })
          break
        case "thinking": {
          if (part.text.length === 0 && part.signature === undefined) break
          const out: MutablePart = { text: part.text, thought: true }
          if (part.signature !== undefined) out.thoughtSignature = part.signature
          parts.push(out)
          break
        }
        case "image": {
          if (part.data !== undefined) {
            if (part.mediaType === undefined) {
              Abort.abort(Issues.invalid(`${param}.mediaType`, `The image at '${param}' has data but no media type.`))
            }
            parts.push({ inlineData: { mimeType: part.mediaType!, data: part.data } })
          } else if (part.url !== undefined) {
            const data = parseDataUrl(part.url)
            if (data === undefined) {
              Abort.abort(Issues.unsupported(
                `${param}.url`,
                `The image at '${param}' is given by URL; this model only accepts images sent inline as base64 data (a 'data:' URL). Download the image and send its bytes.`
              ))
            }
            parts.push({ inlineData: data! })
          } else Abort.abort(Issues.invalid(param, `The image at '${param}' has neither data nor a URL.`))
          break
        }
        case "file":
          if (part.data !== undefined) parts.push({ inlineData: { mimeType: part.mediaType, data: part.data } })
          else if (part.uri !== undefined) {
            const data = parseDataUrl(part.uri)
            parts.push(
              data !== undefined ? { inlineData: data } : { fileData: { mimeType: part.mediaType, fileUri: part.uri } }
            )
          } else Abort.abort(Issues.invalid(param, `The file at '${param}' has neither data nor a URI.`))
          break
        case "tool_call": {
          const args = parseObject(part.arguments)
          if (args === undefined) {
            Abort.abort(Issues.invalid(
              `${param}.arguments`,
              `The arguments of tool call '${part.id}' (${part.name}) at '${param}' are not a JSON object.`
            ))
          }
          names.set(part.id, part.name)
          const out: MutablePart = { functionCall: { id: part.id, name: part.name, args: args! } }
          if (part.signature !== undefined) out.thoughtSignature = part.signature
          else if (firstCall && role === "model") out.thoughtSignature = SKIP_THOUGHT_SIGNATURE
          firstCall = false
          parts.push(out)
          break
        }
        case "tool_result": {
          const name = part.name ?? names.get(part.callId)
          if (name === undefined) {
            Abort.abort(Issues.invalid(
              param,
              `The tool result at '${param}' answers call '${part.callId}', which is not in the conversation, and names no function.`
            ))
          }
          const parsed = part.isError === true ? undefined : parseObject(part.content)
          const response: GenerateContent.JsonObject = parsed !== undefined && part.content.trim().length > 0
            ? parsed
            : part.isError === true
            ? { error: part.content }
            : { output: part.content }
          parts.push({ functionResponse: { id: part.callId, name: name!, response } })
          break
        }
      }
    })
    push(role, parts)
  })
  if (contents.length === 0) Abort.abort(Issues.invalid("messages", "The conversation has no content to send."))

  const out: Mutable<UpstreamRequest> = { contents }
  if (request.system !== undefined) {
    const parts = request.system.filter((text) => text.length > 0).map((text) => ({ text }))
    if (parts.length > 0) out.systemInstruction = { parts }
  }
  if (request.tools !== undefined && request.tools.length > 0) {
    out.tools = [{
      functionDeclarations: request.tools.map((tool) => {
        const fn: { name: string; description?: string; parametersJsonSchema?: Canonical.JsonSchemaObject } = {
          name: tool.name
        }
        if (tool.description !== undefined) fn.description = tool.description
        if (tool.parameters !== undefined) fn.parametersJsonSchema = tool.parameters
        return fn
      })
    }]
  }
  const choice = request.toolChoice
  if (choice !== undefined) {
    out.toolConfig = {
      functionCallingConfig: choice === "auto"
        ? { mode: "AUTO" }
        : choice === "none"
        ? { mode: "NONE" }
        : choice === "required"
        ? { mode: "ANY" }
        : { mode: "ANY", allowedFunctionNames: [choice.name] }
    }
  }
  const config: Record<string, unknown> = {}
  if (request.temperature !== undefined) config.temperature = request.temperature
  if (request.topP !== undefined) config.topP = request.topP
  if (request.topK !== undefined) config.topK = request.topK
  if (request.candidateCount !== undefined) config.candidateCount = request.candidateCount
  if (request.maxOutputTokens !== undefined) config.maxOutputTokens = request.maxOutputTokens
  if (request.stop !== undefined && request.stop.length > 0) config.stopSequences = request.stop
  if (request.presencePenalty !== undefined) config.presencePenalty = request.presencePenalty
  if (request.frequencyPenalty !== undefined) config.frequencyPenalty = request.frequencyPenalty
  if (request.seed !== undefined) config.seed = request.seed
  const format = request.responseFormat
  if (format !== undefined && format.type !== "text") {
    config.responseMimeType = "application/json"
    if (format.type === "json_schema") config.responseJsonSchema = format.schema
  }
  const reasoning = request.reasoning
  if (reasoning !== undefined) {
    const thinking: Record<string, unknown> = {}
    if (reasoning.includeThoughts !== undefined) thinking.includeThoughts = reasoning.includeThoughts
    if (reasoning.budgetTokens !== undefined) thinking.thinkingBudget = reasoning.budgetTokens
    else if (reasoning.effort !== undefined) {
      const style = options?.thinkingStyle ?? thinkingStyleOf(request.model)
      if (style === "budget") thinking.thinkingBudget = THINKING_BUDGETS[reasoning.effort]
      else thinking.thinkingLevel = THINKING_LEVELS[reasoning.effort]
    }
    if (Object.keys(thinking).length > 0) config.thinkingConfig = thinking
  }
  if (Object.keys(config).length > 0) out.generationConfig = config
  return out
}

/**
 * Canonical request -> Gemini upstream body, as a `Result`. See `encodeRequest`.
 *
 * @category encoding
 */
export const encodeRequestResult = (
  request: Canonical.ChatRequest,
  options?: EncodeOptions
): Result.Result<UpstreamRequest, RequestError> => Abort.run(() => encodeSync(request, options))

/**
 * Writes the `generateContent` body for a Gemini upstream.
 *
 * - `system` -> `systemInstruction`; `assistant` -> `model`; `tool` messages
 *   -> `functionResponse` parts in a `user` turn; consecutive turns of the same
 *   Gemini role are merged; empty text parts are dropped.
 * - Tool calls -> `functionCall` with `id` and `args` (the arguments JSON
 *   parsed; text that is not a JSON object fails with `InvalidRequest` naming
 *   the call) and the call's `thoughtSignature`; when the first call of a model
 *   turn has none, `SKIP_THOUGHT_SIGNATURE` is sent in its place.
 * - Tool results -> `functionResponse.response`: the content when it is a JSON
 *   object, else `{"output": text}`, or `{"error": text}` when `isError`.
 * - Images: inline data or `data:` URLs -> `inlineData`; `http(s)` URLs fail
 *   with `UnsupportedFeature`, because a pure adapter cannot download them.
 *   Files: data -> `inlineData`, URI -> `fileData`.
 * - Tools -> one tool object of `functionDeclarations` with
 *   `parametersJsonSchema`; `toolChoice` -> `toolConfig`; JSON modes ->
 *   `responseMimeType` (+ `responseJsonSchema`); `stop` -> `stopSequences`;
 *   reasoning -> `thinkingConfig` (see `THINKING_BUDGETS`, `THINKING_LEVELS`).
 * - Not sent (no Gemini field): `parallelToolCalls`, `user`, `includeUsage`
 *   (Gemini always reports usage), `stream` (the URL decides).
 *
 * @category encoding
 */
export const encodeRequest = (
  request: Canonical.ChatRequest,
  options?: EncodeOptions
): Effect.Effect<UpstreamRequest, RequestError> => Effect.fromResult(encodeRequestResult(request, options))
