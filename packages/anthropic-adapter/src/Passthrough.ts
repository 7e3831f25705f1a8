/**
 * The same-dialect fast path (Anthropic client -> Anthropic channel): the
 * client's body is relayed with only `model` changed, and the answer's bytes
 * come back as they are while a meter reads them for usage.
 *
 * - `inspectBody` parses the body once and checks what routing and billing
 *   rely on (`model`, `max_tokens`, `messages`, `stream`), counts the media
 *   blocks for the balance hold, and leaves the rest to the upstream: a
 *   passthrough forwards fields this gateway does not model (Claude Code's
 *   `context_management`, new tool kinds) untouched.
 * - `PassthroughMeter` forwards the upstream's SSE text at event boundaries,
 *   byte for byte, and meters it: the input and cache counts of
 *   `message_start`, the cumulative output of each `message_delta`, and,
 *   for a stream cut before its last `message_delta`, the output it carried
 *   estimated from the generated characters (text, thinking and tool input).
 * - `usageOfResponse` reads a non-stream answer's usage.
 * - `renameModel` puts the public model name in an answer or a stream event.
 *
 * @since 0.1.0
 */
import { type Dialect, GatewayError } from "@modelgate/core"
import { Effect, Predicate } from "effect"

/** What `inspectBody` learnt about a body. @category models */
export interface InspectedBody {
  readonly text: string
  readonly json: Record<string, unknown>
  readonly model: string
  readonly stream: boolean
  readonly maxTokens: number
  /** Image and document blocks, in the messages and inside tool results. */
  readonly mediaParts: number
}

const invalid = (message: string, param?: string) =>
  new GatewayError.InvalidRequest(param === undefined ? { message } : { message, param })

const MEDIA = new Set(["image", "document"])

const countMedia = (blocks: ReadonlyArray<unknown>): number => {
  let media = 0
  for (const block of blocks) {
    if (!Predicate.isObject(block)) continue
    if (Predicate.isString(block.type) && MEDIA.has(block.type)) media++
    else if (block.type === "tool_result" && Array.isArray(block.content)) media += countMedia(block.content)
  }
  return media
}

/**
 * Parses a `POST /v1/messages` body and checks `model` (a non-empty string),
 * `max_tokens` (a positive integer), `messages` (an array of turns whose
 * `role` is `user` or `assistant` and whose `content` is a string or an
 * array) and `stream` (a boolean when present). Every failure is an
 * `InvalidRequest` naming the field, as Anthropic names it.
 *
 * @example
 * ```ts
 * import { Passthrough } from "@modelgate/anthropic-adapter"
 *
 * Passthrough.inspectBody('{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{"role":"user","content":"Hi"}]}')
 * // Effect<{ model: "claude-sonnet-4-5", stream: false, maxTokens: 1024, mediaParts: 0, ... }>
 * ```
 *
 * @category inspection
 */
export const inspectBody = (text: string): Effect.Effect<InspectedBody, GatewayError.InvalidRequest> => {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    return Effect.fail(invalid(`The request body is not valid JSON: ${(error as Error).message}`))
  }
  if (!Predicate.isObject(json) || Array.isArray(json)) {
    return Effect.fail(invalid("The request body must be a JSON object with 'model', 'max_tokens' and 'messages'."))
  }
  const { model, max_tokens, messages, stream } = json
  if (!Predicate.isString(model) || model.length === 0) return Effect.fail(invalid("'model' is required (a model name).", "model"))
  if (!(Predicate.isNumber(max_tokens) && Number.isInteger(max_tokens) && max_tokens >= 1)) {
    return Effect.fail(invalid("'max_tokens' is required: a positive integer (the most tokens the answer may have).", "max_tokens"))
  }
  if (!Array.isArray(messages)) return Effect.fail(invalid("'messages' is required: an array of turns.", "messages"))
  let mediaParts = 0
  for (let i = 0; i < messages.length; i++) {
    const message: unknown = messages[i]
    if (!Predicate.isObject(message)) return Effect.fail(invalid(`'messages[${i}]' must be an object.`, `messages[${i}]`))
    if (message.role !== "user" && message.role !== "assistant" && message.role !== "system") {
      return Effect.fail(invalid(`'messages[${i}].role' must be 'user', 'assistant' or 'system'.`, `messages[${i}].role`))
    }
    if (Array.isArray(message.content)) mediaParts += countMedia(message.content)
    else if (!Predicate.isString(message.content)) {
      return Effect.fail(invalid(`'messages[${i}].content' must be a string or an array of content blocks.`, `messages[${i}].content`))
    }
  }
  if (stream !== undefined && stream !== null && !Predicate.isBoolean(stream)) {
    return Effect.fail(invalid("'stream' must be a boolean.", "stream"))
  }
  return Effect.succeed({ text, json: json as Record<string, unknown>, model, stream: stream === true, maxTokens: max_tokens, mediaParts })
}

/**
 * The body for an Anthropic channel: the client's own bytes when the model
 * keeps its name, else the same object with only `model` replaced.
 *
 * @category inspection
 */
export const upstreamBody = (inspected: InspectedBody, upstreamModel: string): string =>
  upstreamModel === inspected.model ? inspected.text : JSON.stringify({ ...inspected.json, model: upstreamModel })

// ---------------------------------------------------------------------------
// Metering
// ---------------------------------------------------------------------------

const isSpace = (code: number) => code === 32 || code === 9 || code === 10 || code === 13

/** The decoded characters of every JSON string value of `key` in `text`, without parsing. */
const countStringValues = (text: string, key: string): number => {
  let total = 0
  let from = 0
  for (;;) {
    const at = text.indexOf(key, from)
    if (at === -1) return total
    let i = at + key.length
    while (i < text.length && isSpace(text.charCodeAt(i))) i++
    if (text.charCodeAt(i) !== 58 /* : */) {
      from = i
      continue
    }
    i++
    while (i < text.length && isSpace(text.charCodeAt(i))) i++
    if (text.charCodeAt(i) !== 34 /* " */) {
      from = i
      continue
    }
    for (i++; i < text.length; i++) {
      const code = text.charCodeAt(i)
      if (code === 34) break
      if (code === 92 /* \ */) i += text.charCodeAt(i + 1) === 117 /* u */ ? 5 : 1
      total++
    }
    from = i + 1
  }
}

/** Tokens for generated characters: about four per token (`Tokens.estimateGeneratedTokens`). */
const estimateTokens = (characters: number): number => characters === 0 ? 0 : Math.ceil(characters / 4)

/** Generated characters of an event or an answer: text, thinking and tool input fragments. */
const countGenerated = (text: string): number =>
  countStringValues(text, "\"text\"") + countStringValues(text, "\"thinking\"") + countStringValues(text, "\"partial_json\"")

interface WireUsage {
  input: number | undefined
  cacheRead: number | undefined
  cacheWrite: number | undefined
  output: number | undefined
}

const count = (value: unknown): number | undefined => Predicate.isNumber(value) && Number.isInteger(value) && value >= 0 ? value : undefined

/** Fields of a wire `usage` object over `into` (a missing or null field keeps the earlier value, as the SDKs merge). */
const mergeUsage = (into: WireUsage, usage: unknown): boolean => {
  if (!Predicate.isObject(usage)) return false
  into.input = count(usage.input_tokens) ?? into.input
  into.cacheRead = count(usage.cache_read_input_tokens) ?? into.cacheRead
  into.cacheWrite = count(usage.cache_creation_input_tokens) ?? into.cacheWrite
  into.output = count(usage.output_tokens) ?? into.output
  return true
}

const meteredOf = (usage: WireUsage, output: number): Dialect.Metered => {
  const cached = usage.cacheRead ?? 0
  const written = usage.cacheWrite ?? 0
  return {
    promptTokens: (usage.input ?? 0) + cached + written,
    completionTokens: output,
    cachedTokens: cached,
    cacheWriteTokens: written,
    reported: true
  }
}

/** The joined `data:` lines of one raw event. */
const dataOf = (raw: string): string => {
  let data: string | undefined
  for (const line of raw.split(/\r\n|\r|\n/)) {
    if (!line.startsWith("data:")) continue
    const value = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5)
    data = data === undefined ? value : `${data}\n${value}`
  }
  return data ?? ""
}

/**
 * Meters a relayed Anthropic stream. Feed it the upstream's SSE text in order
 * with `push` and forward what it returns (complete events, byte for byte); at
 * the end forward `end()`. Only `message_start` and `message_delta` events are
 * parsed; the generated characters of the others are counted by a scan.
 *
 * @example
 * ```ts
 * import { Passthrough } from "@modelgate/anthropic-adapter"
 *
 * const meter = new Passthrough.PassthroughMeter()
 * meter.push('event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":12,"output_tokens":1}}}\n\n')
 * meter.push('event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}}\n\n')
 * meter.metered(0) // { promptTokens: 12, completionTokens: 7, cachedTokens: 0, cacheWriteTokens: 0, reported: true }
 * ```
 *
 * @category metering
 */
export class PassthroughMeter {
  private pending = ""
  private generated = 0
  private readonly usage: WireUsage = { input: undefined, cacheRead: undefined, cacheWrite: undefined, output: undefined }
  private started = false
  /** A `message_delta` arrived: its output count is the whole answer's so far. */
  private delta = false

  /** Takes the next piece of upstream text; returns the complete events in it (possibly ""). */
  push(text: string): string {
    const all = this.pending.length === 0 ? text : this.pending + text
    let out = ""
    let from = 0
    for (;;) {
      const end = eventEnd(all, from)
      if (end === -1) break
      const raw = all.slice(from, end)
      this.event(raw)
      out += raw
      from = end
    }
    this.pending = from === 0 ? all : all.slice(from)
    return out
  }

  /** Ends the stream: the unterminated rest, forwarded as is (and metered). */
  end(): string {
    const rest = this.pending
    this.pending = ""
    if (rest.length > 0) this.event(rest)
    return rest
  }

  /**
   * What the stream consumed: the upstream's counts once `message_start` gave
   * them; the output of a stream cut before its last `message_delta` is at
   * least the estimate of the characters it carried. Without any usage, the
   * caller's prompt estimate and the estimated output.
   */
  metered(promptEstimate: number): Dialect.Metered {
    const estimate = estimateTokens(this.generated)
    if (!this.started) {
      return { promptTokens: promptEstimate, completionTokens: estimate, cachedTokens: 0, reported: false }
    }
    const reported = this.usage.output ?? 0
    return meteredOf(this.usage, this.delta ? reported : Math.max(reported, estimate))
  }

  private event(raw: string): void {
    if (raw.includes("message_start") || raw.includes("message_delta")) {
      let json: unknown
      try {
        json = JSON.parse(dataOf(raw))
      } catch {
        json = undefined
      }
      if (Predicate.isObject(json)) {
        if (json.type === "message_start" && Predicate.isObject(json.message)) {
          if (mergeUsage(this.usage, json.message.usage)) this.started = true
          return
        }
        if (json.type === "message_delta") {
          if (mergeUsage(this.usage, json.usage)) {
            this.started = true
            this.delta = true
          }
          return
        }
      }
    }
    this.generated += countGenerated(raw)
  }
}

/** Where the event starting at `from` ends (just after its blank line), or -1 when it is not complete. */
const eventEnd = (text: string, from: number): number => {
  let lineStart = true
  for (let i = from; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code !== 10 && code !== 13) {
      lineStart = false
      continue
    }
    if (code === 13) {
      if (i + 1 === text.length) return -1 // a `\r` that may be half of `\r\n`
      if (text.charCodeAt(i + 1) === 10) i++
    }
    if (lineStart) return i + 1
    lineStart = true
  }
  return -1
}

/**
 * A non-stream answer's usage (parsed JSON), or an estimate from its blocks
 * when it reports none.
 *
 * @category metering
 */
export const usageOfResponse = (json: unknown, promptEstimate: number): Dialect.Metered => {
  const usage: WireUsage = { input: undefined, cacheRead: undefined, cacheWrite: undefined, output: undefined }
  if (Predicate.isObject(json) && mergeUsage(usage, json.usage)) return meteredOf(usage, usage.output ?? 0)
  let generated = 0
  if (Predicate.isObject(json) && Array.isArray(json.content)) {
    for (const block of json.content) {
      if (!Predicate.isObject(block)) continue
      if (Predicate.isString(block.text)) generated += block.text.length
      if (Predicate.isString(block.thinking)) generated += block.thinking.length
      if (block.type === "tool_use") generated += JSON.stringify(block.input ?? {}).length
    }
  }
  return { promptTokens: promptEstimate, completionTokens: estimateTokens(generated), cachedTokens: 0, reported: false }
}

// ---------------------------------------------------------------------------
// Renaming
// ---------------------------------------------------------------------------

const MODEL_FIELD = /"model"\s*:\s*"(?:[^"\\]|\\.)*"/

/**
 * An answer's (or a `message_start` event's) model name replaced by `model`,
 * at the string level: the first `"model"` key, which is the message's own
 * (blocks and usage carry none).
 *
 * @category renaming
 */
export const renameModel = (text: string, model: string): string => text.replace(MODEL_FIELD, `"model":${JSON.stringify(model)}`)
