/**
 * Dialect-independent answer generation: every dialect first reduces its
 * request to a `Conversation`, then `planAnswer` decides what to say. All
 * answers are deterministic functions of the request and the scenario.
 */
import type { Scenario } from "./Scenario.ts"

export interface ToolSpec {
  readonly name: string
  /** JSON Schema (or Gemini's OpenAPI subset) of the arguments, if declared. */
  readonly schema: unknown
}

export interface ToolResult {
  readonly name: string
  readonly text: string
}

export interface Conversation {
  readonly model: string
  /** Characters of all message text (system, user, assistant, tool args/results). */
  readonly promptChars: number
  readonly lastUserText: string
  readonly tools: ReadonlyArray<ToolSpec>
  /** Set when the last message is a tool result. */
  readonly lastToolResult: ToolResult | undefined
}

export interface TextAnswer {
  readonly _tag: "text"
  /** Number of content chunks (word chunks, or filler chunks). */
  readonly count: number
  /** The i-th content chunk; computed on demand so huge answers never sit in memory. */
  readonly chunk: (i: number) => string
  /** True when the answer is filler that must be streamed lazily even when not streaming. */
  readonly lazy: boolean
  readonly outputTokens: number
}

export interface ToolCallAnswer {
  readonly _tag: "tool"
  readonly name: string
  readonly args: Readonly<Record<string, unknown>>
  readonly argsJson: string
  /** `argsJson` split into fragments for streaming. */
  readonly fragments: ReadonlyArray<string>
  readonly outputTokens: number
}

export type Answer = TextAnswer | ToolCallAnswer

export const isRecord = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

/**
 * The prompt and completion token counts an answer reports: the true ones, or
 * those the scenario asks for instead (`x-fake-usage-values`, `negusage`,
 * `fracusage`: an upstream that reports nonsense).
 */
export const reportedUsage = (scenario: Scenario, prompt: number, completion: number): readonly [number, number] =>
  scenario.usageValues ?? [prompt, completion]

/** The deterministic token estimate used for every prompt: ceil(chars / 4). */
export const estimateTokens = (chars: number): number => Math.ceil(chars / 4)

export const truncate = (text: string, max: number): string => text.length <= max ? text : `${text.slice(0, max)}...`

/** "a b  c" → ["a ", "b  ", "c"]: concatenating the chunks gives the text back. */
export const wordChunks = (text: string): Array<string> => {
  const out = text.match(/\S+\s*|\s+/g)
  return out === null ? [""] : out
}

const FILLER_PATTERN = "lorem ipsum dolor sit amet consectetur adipiscing elit "
const fillerCache = new Map<number, string>()

/** A deterministic ASCII string of exactly `bytes` bytes (cached per size). */
export const filler = (bytes: number): string => {
  const cached = fillerCache.get(bytes)
  if (cached !== undefined) return cached
  const text = FILLER_PATTERN.repeat(Math.ceil(bytes / FILLER_PATTERN.length)).slice(0, bytes)
  if (fillerCache.size < 64) fillerCache.set(bytes, text)
  return text
}

/** Split a string into up to `parts` non-empty fragments of similar size. */
export const fragments = (text: string, parts: number): Array<string> => {
  if (text.length <= 1 || parts <= 1) return [text]
  const n = Math.min(parts, text.length)
  const size = Math.ceil(text.length / n)
  const out: Array<string> = []
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size))
  return out
}

const schemaType = (schema: unknown): string => {
  if (!isRecord(schema)) return ""
  const t = schema["type"]
  if (typeof t === "string") return t.toLowerCase()
  if (Array.isArray(t)) {
    const first = t.find((x) => typeof x === "string" && x.toLowerCase() !== "null")
    return typeof first === "string" ? first.toLowerCase() : ""
  }
  return ""
}

/**
 * Arguments for a fake tool call: one value per required property of the
 * schema (strings get `hint`, or the first enum value), or `{query: hint}`
 * when the schema declares no required properties.
 */
export const buildToolArgs = (schema: unknown, hint: string): Record<string, unknown> => {
  const properties = isRecord(schema) ? schema["properties"] : undefined
  const required = isRecord(schema) ? schema["required"] : undefined
  if (!isRecord(properties) || !Array.isArray(required) || required.length === 0) return { query: hint }
  const args: Record<string, unknown> = {}
  for (const key of required) {
    if (typeof key !== "string") continue
    const prop = properties[key]
    const en = isRecord(prop) ? prop["enum"] : undefined
    if (Array.isArray(en) && en.length > 0) {
      args[key] = en[0]
      continue
    }
    switch (schemaType(prop)) {
      case "number":
      case "integer":
        args[key] = 1
        break
      case "boolean":
        args[key] = true
        break
      case "array":
        args[key] = []
        break
      case "object":
        args[key] = {}
        break
      default:
        args[key] = hint
    }
  }
  return Object.keys(args).length === 0 ? { query: hint } : args
}

export const echoText = (model: string, lastUserText: string): string =>
  `Hello from fake-upstream (model ${model}). You said: ${truncate(lastUserText.replace(/\s+/g, " ").trim(), 200)}`

export const toolResultText = (result: ToolResult): string =>
  `The tool ${result.name} returned: ${truncate(result.text, 2000)}`

const words = (text: string): TextAnswer => {
  const chunks = wordChunks(text)
  return { _tag: "text", count: chunks.length, chunk: (i) => chunks[i], lazy: false, outputTokens: chunks.length }
}

/** Size of the pieces of an `x-fake-response-bytes` answer. */
const RESPONSE_PIECE_BYTES = 1024

export const planAnswer = (conversation: Conversation, scenario: Scenario): Answer => {
  if (conversation.lastToolResult !== undefined) return words(toolResultText(conversation.lastToolResult))
  if (scenario.toolCall !== false && conversation.tools.length > 0) {
    const wanted = scenario.toolCall
    const declared = typeof wanted === "string"
      ? conversation.tools.find((t) => t.name === wanted)
      : conversation.tools[0]
    const name = typeof wanted === "string" ? wanted : conversation.tools[0].name
    const hint = truncate(conversation.lastUserText.replace(/\s+/g, " ").trim(), 64) || "fake query"
    const args = buildToolArgs(declared?.schema, hint)
    const argsJson = JSON.stringify(args)
    const parts = fragments(argsJson, 3)
    return { _tag: "tool", name, args, argsJson, fragments: parts, outputTokens: parts.length }
  }
  if (scenario.chunks !== undefined || scenario.chunkBytes !== undefined) {
    const count = Math.max(1, scenario.chunks ?? 100)
    const piece = filler(Math.max(1, scenario.chunkBytes ?? 16))
    return { _tag: "text", count, chunk: () => piece, lazy: true, outputTokens: count }
  }
  if (scenario.responseBytes !== undefined) {
    const total = Math.max(1, scenario.responseBytes)
    const count = Math.ceil(total / RESPONSE_PIECE_BYTES)
    const full = filler(RESPONSE_PIECE_BYTES)
    const last = filler(total - (count - 1) * RESPONSE_PIECE_BYTES)
    return { _tag: "text", count, chunk: (i) => (i === count - 1 ? last : full), lazy: true, outputTokens: count }
  }
  return words(echoText(conversation.model, conversation.lastUserText))
}

/** The whole text of a (non-lazy) text answer. */
export const answerText = (answer: TextAnswer): string => {
  let text = ""
  for (let i = 0; i < answer.count; i++) text += answer.chunk(i)
  return text
}

/** A deterministic unit vector derived from `text` (FNV-1a seed, mulberry32 stream). */
export const embedding = (text: string, dimensions: number): Array<number> => {
  let seed = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    seed ^= text.charCodeAt(i)
    seed = Math.imul(seed, 0x01000193)
  }
  const values = new Array<number>(dimensions)
  let norm = 0
  for (let i = 0; i < dimensions; i++) {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    const v = ((t ^ (t >>> 14)) >>> 0) / 4294967296 - 0.5
    values[i] = v
    norm += v * v
  }
  const scale = norm > 0 ? 1 / Math.sqrt(norm) : 0
  for (let i = 0; i < dimensions; i++) values[i] = Math.fround(values[i] * scale)
  return values
}

/** Text of a content value that is a string or an array of `{text}` parts. */
export const contentText = (content: unknown): string => {
  if (typeof content === "string") return content
  if (!Array.isArray(content)) return ""
  let text = ""
  for (const part of content) {
    if (typeof part === "string") text += part
    else if (isRecord(part) && typeof part["text"] === "string") text += part["text"]
  }
  return text
}
