/**
 * The same-dialect fast path (OpenAI client -> OpenAI upstream): no full decode.
 *
 * - `inspectChatBody` parses the body once, reads what routing and billing
 *   need (`model`, `stream`, `n`, ...), counts the media parts of the messages
 *   for the balance hold, and checks the body's structure (roles, content
 *   parts, tool calls, the types of known fields) without decoding it, so a
 *   malformed body gets a 400 naming the field instead of being forwarded.
 * - `upstreamBody` forwards the client's bytes as they are when nothing needs
 *   to change, and otherwise re-serialises the same object with only `model`
 *   changed (and, for streams, `stream_options.include_usage: true`, so usage
 *   is always reported to the gateway).
 * - `PassthroughMeter` forwards the upstream's SSE text byte for byte, at event
 *   boundaries, dropping only the usage chunk when the client did not ask for
 *   it, and meters the stream: the reported usage, or a count of generated
 *   characters when the stream is cut before the usage chunk.
 * - `usageOfResponse` reads the usage of a non-stream answer.
 *
 * @since 0.1.0
 */
import { GatewayError, Issues } from "@modelgate/core"
import { Effect, Predicate } from "effect"
import { checkChatBody } from "./internal/bodyShape.ts"
import { readUsage } from "./Response.ts"

/** What `inspectChatBody` learnt about a body. @category models */
export interface InspectedBody {
  /** The body as received. */
  readonly text: string
  /** The parsed body, to be forwarded unchanged except for `model`. */
  readonly json: Record<string, unknown>
  readonly model: string
  readonly stream: boolean
  /** The client asked `stream_options.include_usage: true`. */
  readonly includeUsage: boolean
  /** `max_completion_tokens`, else `max_tokens`, when a number (a bound per choice). */
  readonly maxTokens: number | undefined
  /** `n`: how many choices to generate (1 when absent or `null`). */
  readonly choices: number
  /**
   * Content parts of the messages that are not text (`image_url`, `input_audio`,
   * `file`, or any other non-text type): each costs tokens its bytes in the
   * body do not bound (an image by URL is a short string).
   */
  readonly mediaParts: number
}

const TEXT_PARTS = new Set(["text", "refusal"])

/** Counts the non-text content parts of the messages. */
const countMediaParts = (messages: ReadonlyArray<unknown>): number => {
  let media = 0
  for (const message of messages) {
    if (!Predicate.isObject(message)) continue
    const content = message.content
    if (!Array.isArray(content)) continue
    for (const part of content) {
      if (Predicate.isObject(part) && Predicate.isString(part.type) && !TEXT_PARTS.has(part.type)) media++
    }
  }
  return media
}

/**
 * Parses a chat completions body once and checks `model` (a non-empty string),
 * `messages` (an array), `stream` (a boolean, or `null`, when present) and `n`
 * (a positive integer, or `null`, when present), counts the media parts, then
 * checks the structure of the rest: each message's `role` (a known one), `content` (a
 * string, or an array of parts of a type OpenAI defines for that role),
 * `tool_calls` and `tool_call_id`, and the types of the known top-level fields
 * (`temperature` a number, `max_tokens` an integer, `stop` a string or an
 * array of strings, `tools` an array of tools, ...). Unknown fields pass. Every
 * failure is an `InvalidRequest` whose `param` is the field's path
 * (`messages[0].role`). Malformed JSON fails with a message saying where the
 * parser stopped.
 *
 * @example
 * ```ts
 * import { Passthrough } from "@modelgate/openai-adapter"
 *
 * Passthrough.inspectChatBody('{"model":"gpt-4o","messages":[],"stream":true}')
 * // Effect<{ json, model: "gpt-4o", stream: true, includeUsage: false, maxTokens: undefined, choices: 1, mediaParts: 0 }>
 * Passthrough.inspectChatBody('{"model":')
 * // fails: InvalidRequest "The request body is not valid JSON: Unexpected end of JSON input"
 * ```
 *
 * @category inspection
 */
export const inspectChatBody = (bodyText: string): Effect.Effect<InspectedBody, GatewayError.InvalidRequest> => {
  let json: unknown
  try {
    json = JSON.parse(bodyText)
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error)
    return Effect.fail(Issues.invalid("", `The request body is not valid JSON: ${detail}`))
  }
  if (!Predicate.isObject(json)) {
    return Effect.fail(Issues.invalid("", "The request body must be a JSON object with 'model' and 'messages'"))
  }
  const model = json.model
  if (model === undefined) return Effect.fail(Issues.invalid("model", "'model' is required"))
  if (!Predicate.isString(model) || model.length === 0) {
    return Effect.fail(Issues.invalid("model", "'model' must be a non-empty string"))
  }
  if (json.messages === undefined) return Effect.fail(Issues.invalid("messages", "'messages' is required"))
  if (!Array.isArray(json.messages)) return Effect.fail(Issues.invalid("messages", "'messages' must be an array"))
  const stream = json.stream
  if (stream !== undefined && stream !== null && !Predicate.isBoolean(stream)) {
    return Effect.fail(Issues.invalid("stream", "'stream' must be a boolean"))
  }
  const n = json.n
  if (n !== undefined && n !== null && !(Predicate.isNumber(n) && Number.isInteger(n) && n >= 1)) {
    return Effect.fail(Issues.invalid("n", "'n' must be a positive integer (the number of choices)"))
  }
  const shape = checkChatBody(json)
  if (shape !== undefined) return Effect.fail(Issues.invalid(shape.param, shape.message))
  const options = json.stream_options
  const includeUsage = Predicate.isObject(options) && options.include_usage === true
  const maxTokens = Predicate.isNumber(json.max_completion_tokens)
    ? json.max_completion_tokens
    : Predicate.isNumber(json.max_tokens)
    ? json.max_tokens
    : undefined
  return Effect.succeed({
    text: bodyText,
    json: json as Record<string, unknown>,
    model,
    stream: stream === true,
    includeUsage,
    maxTokens,
    choices: Predicate.isNumber(n) ? n : 1,
    mediaParts: countMediaParts(json.messages)
  })
}

/**
 * The body for the upstream: the client's own text when the model keeps its
 * name and usage is already asked for (or not a stream); otherwise the
 * client's object with only `model` replaced (same key order) and, for
 * streams, `stream_options.include_usage: true` added (other `stream_options` kept).
 *
 * @category inspection
 */
export const upstreamBody = (inspected: InspectedBody, upstreamModel: string): string => {
  // Nothing to change: the client's own bytes (numbers, key order and spacing exactly as sent).
  if (upstreamModel === inspected.model && (!inspected.stream || inspected.includeUsage)) return inspected.text
  const out: Record<string, unknown> = { ...inspected.json, model: upstreamModel }
  if (inspected.stream) {
    const options = inspected.json.stream_options
    out.stream_options = Predicate.isObject(options) ? { ...options, include_usage: true } : { include_usage: true }
  }
  return JSON.stringify(out)
}

// ---------------------------------------------------------------------------
// Metering
// ---------------------------------------------------------------------------

/**
 * Usage of a passthrough call. `reported` says whether the upstream reported it;
 * when not, `completionTokens` is an estimate from the generated characters
 * (about four per token, as `Tokens.estimateGeneratedTokens`) and `promptTokens`
 * is the estimate the caller gave.
 *
 * @category metering
 */
export interface MeteredUsage {
  readonly promptTokens: number
  readonly completionTokens: number
  readonly cachedTokens: number
  /** Of `completionTokens`, those spent reasoning, when the upstream reported them (`completion_tokens_details.reasoning_tokens`). */
  readonly reasoningTokens?: number
  readonly reported: boolean
  /** The upstream's usage had figures that are not token counts (the first one, as `name: value`): refused, and estimated instead. */
  readonly usageRejected?: string
}

/** Options of a `PassthroughMeter`. @category metering */
export interface PassthroughMeterOptions {
  /** The client asked `stream_options.include_usage`: forward the usage chunk. */
  readonly includeUsage: boolean
  /** The prompt estimate to report when the upstream reports no usage (default 0). */
  readonly promptTokens?: number
}

const USAGE_OBJECT = /"usage"\s*:\s*\{/

const isSpace = (code: number) => code === 32 || code === 9 || code === 10 || code === 13

/**
 * Counts the decoded characters of every JSON string value of `key` in `text`
 * (`"key": "..."`), without parsing: escapes count as one character.
 */
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
    i++
    for (; i < text.length; i++) {
      const code = text.charCodeAt(i)
      if (code === 34) break
      if (code === 92 /* \ */) i += text.charCodeAt(i + 1) === 117 /* u */ ? 5 : 1
      total++
    }
    from = i + 1
  }
}

/** Generated characters of a chunk or message text: content, reasoning and tool-call arguments. */
const countGenerated = (text: string): number =>
  countStringValues(text, "\"content\"") + countStringValues(text, "\"reasoning_content\"") +
  countStringValues(text, "\"arguments\"")

interface Reported {
  readonly prompt: number
  readonly completion: number
  readonly cached: number
  readonly reasoning: number | undefined
}

/** The usage an answer or a chunk reports: its figures, the reason they were refused, or undefined when it reports none. */
const usageOf = (value: unknown): Reported | string | undefined => {
  const usage = readUsage(value)
  return usage === undefined || typeof usage === "string"
    ? usage
    : { prompt: usage.promptTokens, completion: usage.completionTokens, cached: usage.cachedTokens ?? 0, reasoning: usage.reasoningTokens }
}

/** Reported figures as metered usage. */
const meteredOf = (usage: Reported): MeteredUsage => ({
  promptTokens: usage.prompt,
  completionTokens: usage.completion,
  cachedTokens: usage.cached,
  ...(usage.reasoning === undefined ? {} : { reasoningTokens: usage.reasoning }),
  reported: true
})

/**
 * Meters and filters a passthrough stream. Feed it the upstream's SSE text
 * chunks in order with `push`; forward what it returns (complete events, byte for
 * byte as received); at the end forward `end()` (an unterminated last event, if
 * any). Only events whose text holds a `"usage": {` object are parsed; the
 * characters of `content`, `reasoning_content` and `arguments` strings are
 * counted by a scan, so a stream cut before its usage chunk can still be billed.
 *
 * @example
 * ```ts
 * import { Passthrough } from "@modelgate/openai-adapter"
 *
 * const meter = new Passthrough.PassthroughMeter({ includeUsage: false, promptTokens: 12 })
 * meter.push('data: {"choices":[{"index":0,"delta":{"content":"Hel') // "" (event not complete yet)
 * meter.push('lo"}}]}\n\ndata: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}\n\n')
 * // 'data: {"choices":[{"index":0,"delta":{"content":"Hello"}}]}\n\n' (usage chunk dropped)
 * meter.usage() // { promptTokens: 5, completionTokens: 1, cachedTokens: 0, reported: true }
 * ```
 *
 * @category metering
 */
export class PassthroughMeter {
  private readonly includeUsage: boolean
  private readonly promptEstimate: number
  /** Text of the event being received (not yet terminated by a blank line). */
  private pending = ""
  /** Where the scan for a blank line resumes in `pending`. */
  private scanned = 0
  /** `pending` up to `scanned` ends right after a line terminator. */
  private atLineStart = true
  private generated = 0
  private reported: Reported | undefined = undefined
  /** The last usage the upstream reported was refused: why. */
  private rejected: string | undefined = undefined

  constructor(options: PassthroughMeterOptions) {
    this.includeUsage = options.includeUsage
    this.promptEstimate = options.promptTokens ?? 0
  }

  /** Takes the next chunk of upstream text; returns the text to forward now (possibly empty). */
  push(chunk: string): string {
    const text = this.pending.length === 0 ? chunk : this.pending + chunk
    let out = ""
    let eventStart = 0
    let i = this.scanned
    let lineStart = this.atLineStart
    const length = text.length
    while (i < length) {
      const code = text.charCodeAt(i)
      if (code !== 10 && code !== 13) {
        lineStart = false
        i++
        continue
      }
      // A `\r` at the very end may be the first half of `\r\n`: wait for more text.
      if (code === 13 && i + 1 === length) break
      const end = code === 13 && text.charCodeAt(i + 1) === 10 ? i + 2 : i + 1
      if (lineStart) {
        out += this.event(text.slice(eventStart, end))
        eventStart = end
      }
      lineStart = true
      i = end
    }
    this.pending = eventStart === 0 ? text : text.slice(eventStart)
    this.scanned = i - eventStart
    this.atLineStart = lineStart
    return out
  }

  /** Ends the stream: returns any unterminated trailing text, forwarded as is (and metered). */
  end(): string {
    const rest = this.pending
    this.pending = ""
    this.scanned = 0
    this.atLineStart = true
    return rest.length === 0 ? rest : this.event(rest)
  }

  /**
   * Usage so far: the upstream's report, else the estimate from generated
   * characters (also when the last report's figures were refused, which
   * `usageRejected` then says).
   */
  usage(): MeteredUsage {
    if (this.reported !== undefined) return meteredOf(this.reported)
    const estimate = {
      promptTokens: this.promptEstimate,
      completionTokens: this.generated === 0 ? 0 : Math.ceil(this.generated / 4),
      cachedTokens: 0,
      reported: false
    }
    return this.rejected === undefined ? estimate : { ...estimate, usageRejected: this.rejected }
  }

  /** One complete event's raw text: meter it and decide whether to forward it. */
  private event(raw: string): string {
    if (!USAGE_OBJECT.test(raw)) {
      this.generated += countGenerated(raw)
      return raw
    }
    const data = dataOf(raw)
    let json: unknown
    try {
      json = JSON.parse(data)
    } catch {
      this.generated += countGenerated(raw)
      return raw
    }
    const usage = Predicate.isObject(json) ? usageOf(json.usage) : undefined
    if (typeof usage === "string") {
      this.reported = undefined
      this.rejected = usage
    } else if (usage !== undefined) {
      this.reported = usage
      this.rejected = undefined
    }
    const choices = Predicate.isObject(json) ? json.choices : undefined
    if (Array.isArray(choices) && choices.length === 0) return this.includeUsage ? raw : ""
    this.generated += countGenerated(raw)
    return raw
  }
}

/** The joined `data:` lines of one raw event. */
const dataOf = (raw: string): string => {
  let data = ""
  let first = true
  for (const line of raw.split(/\r\n|\r|\n/)) {
    if (!line.startsWith("data:")) continue
    const value = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5)
    data = first ? value : data + "\n" + value
    first = false
  }
  return data
}

/**
 * The usage of a non-stream answer (parsed JSON): the upstream's report, else
 * an estimate from the generated characters of its choices (also when the
 * report's figures are not token counts, which `usageRejected` then says).
 *
 * @category metering
 */
export const usageOfResponse = (json: unknown, promptTokens = 0): MeteredUsage => {
  const usage = Predicate.isObject(json) ? usageOf(json.usage) : undefined
  if (usage !== undefined && typeof usage !== "string") return meteredOf(usage)
  let generated = 0
  const choices = Predicate.isObject(json) ? json.choices : undefined
  if (Array.isArray(choices)) {
    for (const choice of choices) {
      const message = Predicate.isObject(choice) ? choice.message : undefined
      if (!Predicate.isObject(message)) continue
      if (Predicate.isString(message.content)) generated += message.content.length
      if (Predicate.isString(message.reasoning_content)) generated += message.reasoning_content.length
      if (Array.isArray(message.tool_calls)) {
        for (const call of message.tool_calls) {
          const fn = Predicate.isObject(call) ? call.function : undefined
          if (Predicate.isObject(fn) && Predicate.isString(fn.arguments)) generated += fn.arguments.length
        }
      }
    }
  }
  const estimate = { promptTokens, completionTokens: generated === 0 ? 0 : Math.ceil(generated / 4), cachedTokens: 0, reported: false }
  return usage === undefined ? estimate : { ...estimate, usageRejected: usage }
}
