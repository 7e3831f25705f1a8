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
import { type Domain, type GatewayError, Inspection, Issues, JsonScan, SseChunks, Tokens } from "@modelgate/core"
import { Effect, Predicate, Result } from "effect"
import { checkChatBody, checkSizing } from "../internal/bodyShape.ts"
import { readUsage } from "./Response.ts"

/** What `inspectChatBody` learnt about a body. @category models */
export interface InspectedBody {
  /** The body as received. */
  readonly bytes: Uint8Array
  /** The parsed body (parsed when first read: a large body the fast path forwards is never parsed). */
  readonly json: Record<string, unknown>
  readonly model: string
  readonly stream: boolean
  /** The client asked `stream_options.include_usage: true`. */
  readonly includeUsage: boolean
  /** `max_completion_tokens` or `max_tokens` (the larger, when both are set), when a number (a bound per choice). */
  readonly maxTokens: number | undefined
  /** `n`: how many choices to generate (1 when absent or `null`). */
  readonly choices: number
  /**
   * Content parts of the messages that are not text (`image_url`, `input_audio`,
   * `file`, or any other non-text type): each costs tokens its bytes in the
   * body do not bound (an image by URL is a short string).
   */
  readonly mediaParts: number
  /**
   * The same parts by kind, for the hold: `image_url` an image,
   * `input_audio` audio, `file` a document (chat completions takes PDFs),
   * any other non-text type a file.
   */
  readonly media: Tokens.MediaCounts
  /** Whether the structure of the whole body was checked (`checkStructure`); large bodies are checked only when refused. */
  readonly checked: boolean
  /** Where `model` and `stream_options` lie in the bytes, for `upstreamBody`. */
  readonly fields: JsonScan.Fields
}

/**
 * Bodies up to this size are parsed and their whole structure checked at
 * once; larger ones are only scanned, forwarded as they are, and checked if
 * the upstream refuses them (`checkStructure`): core's
 * `Inspection.EAGER_CHECK_BYTES`, the same for every dialect.
 *
 * @category inspection
 */
export const EAGER_CHECK_BYTES = Inspection.EAGER_CHECK_BYTES

const TEXT_PARTS = new Set(["text", "refusal"])

/** The content parts types OpenAI defines that carry or point to media, and their kinds. */
const MEDIA_PARTS: ReadonlyArray<readonly [string, Domain.MediaKind]> = [
  ["image_url", "image"],
  ["input_audio", "audio"],
  ["file", "document"]
]

/** Counts the non-text content parts of the messages, by kind, in `media`; returns how many. */
const countMediaParts = (messages: ReadonlyArray<unknown>, media: Tokens.MediaCounts): number => {
  let parts = 0
  for (const message of messages) {
    if (!Predicate.isObject(message)) continue
    const content = message.content
    if (!Array.isArray(content)) continue
    for (const part of content) {
      if (Predicate.isObject(part) && Predicate.isString(part.type) && !TEXT_PARTS.has(part.type)) {
        parts++
        Tokens.countMedia(media, MEDIA_PARTS.find(([type]) => type === part.type)?.[1] ?? "file")
      }
    }
  }
  return parts
}

/**
 * Reads a chat completions body for the fast path. Every body is scanned
 * (`JsonScan`: its structure and the top-level fields routing and billing
 * need, without parsing the rest) and checks `model` (a non-empty string),
 * `messages` (an array), `stream` (a boolean, or `null`), `n` (a positive
 * integer, or `null`), and counts the media parts. A body up to
 * `EAGER_CHECK_BYTES` is also parsed and its whole structure checked
 * (`checkStructure`): each message's `role`, `content`, `tool_calls` and
 * `tool_call_id`, and the types of the known top-level fields. Every failure
 * is an `InvalidRequest` whose `param` is the field's path
 * (`messages[0].role`); malformed JSON fails with the parser's message.
 *
 * @example
 * ```ts
 * import { Passthrough } from "@modelgate/openai-adapter"
 *
 * Passthrough.inspectChatBody('{"model":"gpt-4o","messages":[],"stream":true}')
 * // Effect<{ model: "gpt-4o", stream: true, includeUsage: false, maxTokens: undefined, choices: 1, mediaParts: 0, ... }>
 * Passthrough.inspectChatBody('{"model":')
 * // fails: InvalidRequest "The request body is not valid JSON: Unexpected end of JSON input"
 * ```
 *
 * @category inspection
 */
export const inspectChatBody = (
  body: string | Uint8Array
): Effect.Effect<InspectedBody, GatewayError.InvalidRequest> => {
  const scanned = Inspection.scan(body, {
    notObject: "The request body must be a JSON object with 'model' and 'messages'",
    media: { in: ["messages"], types: MEDIA_PARTS }
  })
  if (Result.isFailure(scanned)) return Effect.fail(scanned.failure)
  const { bytes, eager, field, fields, json, media } = scanned.success
  let mediaParts = scanned.success.mediaParts
  const model = field("model")
  if (model === undefined) return Effect.fail(Issues.invalid("model", "'model' is required"))
  if (!Predicate.isString(model) || model.length === 0) {
    return Effect.fail(Issues.invalid("model", "'model' must be a non-empty string"))
  }
  const messages = fields.get("messages")
  if (messages === undefined) return Effect.fail(Issues.invalid("messages", "'messages' is required"))
  if (bytes[messages.start] !== 0x5b) return Effect.fail(Issues.invalid("messages", "'messages' must be an array"))
  const stream = field("stream")
  if (stream !== undefined && stream !== null && !Predicate.isBoolean(stream)) {
    return Effect.fail(Issues.invalid("stream", "'stream' must be a boolean"))
  }
  const n = field("n")
  if (n !== undefined && n !== null && !(Predicate.isNumber(n) && Number.isInteger(n) && n >= 1)) {
    return Effect.fail(Issues.invalid("n", "'n' must be a positive integer (the number of choices)"))
  }
  // What sizes the hold is checked whatever the body's size: a large body is forwarded without `checkChatBody`.
  const completion = field("max_completion_tokens")
  const max = field("max_tokens")
  if (completion === Inspection.invalid || max === Inspection.invalid) return Effect.fail(Issues.notJson(bytes))
  const sizing = checkSizing({ max_tokens: max, max_completion_tokens: completion })
  if (sizing !== undefined) return Effect.fail(Issues.invalid(sizing.param, sizing.message))
  if (eager) {
    const shape = checkChatBody(json())
    if (shape !== undefined) return Effect.fail(Issues.invalid(shape.param, shape.message))
    mediaParts = countMediaParts(json().messages as ReadonlyArray<unknown>, media)
  }
  const options = field("stream_options")
  const includeUsage = Predicate.isObject(options) && options.include_usage === true
  // Both set: an upstream may honour either, so the hold covers the larger.
  const maxTokens = Predicate.isNumber(completion)
    ? (Predicate.isNumber(max) ? Math.max(completion, max) : completion)
    : Predicate.isNumber(max)
    ? max
    : undefined
  return Effect.succeed({
    bytes,
    get json() {
      return json()
    },
    model,
    stream: stream === true,
    includeUsage,
    maxTokens,
    choices: Predicate.isNumber(n) ? n : 1,
    mediaParts,
    media,
    checked: eager,
    fields
  })
}

/**
 * The structure check a large body skipped at inspection (see
 * `EAGER_CHECK_BYTES`), for when the upstream refused it: the failure naming
 * the field, or `undefined` when the body is well formed (the upstream's own
 * refusal then stands).
 *
 * @category inspection
 */
export const checkStructure = (inspected: InspectedBody): GatewayError.InvalidRequest | undefined =>
  Inspection.checkKept(inspected, (json) => {
    const shape = checkChatBody(json)
    return shape === undefined ? undefined : Issues.invalid(shape.param, shape.message)
  })

/**
 * The body for the upstream: the client's own bytes when the model keeps its
 * name and usage is already asked for (or not a stream); otherwise the same
 * bytes with only the `model` value replaced and, for streams,
 * `stream_options.include_usage: true` set (other `stream_options` kept), so
 * usage is always reported to the gateway. Nothing else is parsed or
 * rewritten.
 *
 * @category inspection
 */
export const upstreamBody = (inspected: InspectedBody, upstreamModel: string): Uint8Array => {
  const usage = inspected.stream && !inspected.includeUsage
  // Nothing to change: the client's own bytes (numbers, key order and spacing exactly as sent).
  if (upstreamModel === inspected.model && !usage) return inspected.bytes
  const edits: Array<JsonScan.Edit> = []
  if (upstreamModel !== inspected.model) {
    edits.push({ span: inspected.fields.get("model")!, text: JSON.stringify(upstreamModel) })
  }
  let appended: string | undefined
  if (usage) {
    const options = inspected.fields.get("stream_options")
    let current: unknown
    try {
      current = JsonScan.valueOf(inspected.bytes, options)
    } catch {
      current = undefined
    }
    const merged = JSON.stringify(
      Predicate.isObject(current) ? { ...current, include_usage: true } : { include_usage: true }
    )
    if (options === undefined) appended = merged
    else edits.push({ span: options, text: merged })
  }
  const edited = JsonScan.edit(inspected.bytes, edits)
  return appended === undefined ? edited : JsonScan.appendField(edited, "stream_options", appended)
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
 * The decoded characters (an escape counts as one) of the string values of
 * the keys in `text` that end with `suffix` and are one of `keys` (each given
 * with its opening quote, e.g. `"content`), counted without parsing: one
 * native search for `suffix` + `"` finds the candidates; a string that ends
 * there is one of the keys when the key's name comes before it, and a key
 * when `:` follows (a value is followed by `,`, `}` or `]`, and a quote inside
 * a string is escaped).
 */
const countValues = (text: string, suffix: string, keys: ReadonlyArray<string>): number => {
  const anchor = suffix + "\""
  let total = 0
  let from = 0
  const length = text.length
  for (;;) {
    const at = text.indexOf(anchor, from)
    if (at === -1) return total
    from = at + anchor.length
    const end = at + suffix.length
    if (!keys.some((key) => text.startsWith(key, end - key.length))) continue
    let i = from
    while (i < length && isSpace(text.charCodeAt(i))) i++
    if (text.charCodeAt(i) !== 58 /* : */) continue
    i++
    while (i < length && isSpace(text.charCodeAt(i))) i++
    if (text.charCodeAt(i) !== 34 /* " */) continue
    for (i++; i < length; i++) {
      const code = text.charCodeAt(i)
      if (code === 34) break
      if (code === 92 /* \ */) i += text.charCodeAt(i + 1) === 117 /* u */ ? 5 : 1
      total++
    }
    from = i + 1
  }
}

const CONTENT_KEYS = ["\"content", "\"reasoning_content"]
const ARGUMENT_KEYS = ["\"arguments"]

/** Generated characters of stream text: the values of `content`, `reasoning_content` and `arguments`. */
const countGenerated = (text: string): number =>
  countValues(text, "t", CONTENT_KEYS) + countValues(text, "ts", ARGUMENT_KEYS)

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
    : {
      prompt: usage.promptTokens,
      completion: usage.completionTokens,
      cached: usage.cachedTokens ?? 0,
      reasoning: usage.reasoningTokens
    }
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
  private readonly events = new SseChunks.WholeEvents()
  private generated = 0
  private reported: Reported | undefined = undefined
  /** The last usage the upstream reported was refused: why. */
  private rejected: string | undefined = undefined

  constructor(options: PassthroughMeterOptions) {
    this.includeUsage = options.includeUsage
    this.promptEstimate = options.promptTokens ?? 0
  }

  /**
   * Takes the next chunk of the upstream's bytes: what to forward now, the
   * whole events it completed as they came (`SseChunks.Events`: forward their
   * bytes) or, when one was left out, the text of the others; undefined when
   * it completed none.
   */
  pushBytes(chunk: Uint8Array): SseChunks.Events | string | undefined {
    const whole = this.events.push(chunk)
    return whole === undefined ? undefined : this.meter(whole)
  }

  /** Ends the stream: any unterminated trailing event, forwarded as it came (and metered). */
  endBytes(): SseChunks.Events | string | undefined {
    const rest = this.events.end()
    return rest === undefined ? undefined : this.meter(rest)
  }

  /** `pushBytes` for text: the text to forward now (complete events only). */
  push(chunk: string): string {
    return textOf(this.pushBytes(JsonScan.encode(chunk)))
  }

  /** `endBytes` for text. */
  end(): string {
    return textOf(this.endBytes())
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

  /** Meters whole events: themselves when all are forwarded, else the text of those that are. */
  private meter(whole: SseChunks.Events): SseChunks.Events | string {
    const text = whole.text
    // Only an event that reports usage is parsed (one per stream, at its end); most chunks hold none.
    const first = text.indexOf("\"usage\"")
    if (first === -1) {
      this.generated += countGenerated(text)
      return whole
    }
    const before = this.reported
    const crlf = text.includes("\r")
    let out = ""
    let kept = 0
    USAGE_OBJECTS.lastIndex = first
    for (let found = USAGE_OBJECTS.exec(text); found !== null; found = USAGE_OBJECTS.exec(text)) {
      const start = eventStart(text, found.index, crlf)
      const end = eventEnd(text, found.index, crlf)
      if (!this.reports(text.slice(start, end))) {
        out += text.slice(kept, start)
        kept = end
      }
      USAGE_OBJECTS.lastIndex = end
    }
    // The characters are the estimate for a stream whose usage never comes: usage reported with these
    // events (it counts everything up to it) makes counting them useless.
    if (this.reported === undefined || this.reported === before) this.generated += countGenerated(text)
    return kept === 0 ? whole : out + text.slice(kept)
  }

  /** Reads the usage of one complete event; false when the event is to be left out (a usage chunk the client did not ask for). */
  private reports(raw: string): boolean {
    if (!USAGE_OBJECT.test(raw)) return true
    let json: unknown
    try {
      json = JSON.parse(SseChunks.dataOf(raw))
    } catch {
      return true
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
    return !(Array.isArray(choices) && choices.length === 0) || this.includeUsage
  }
}

/** What a meter gives out, as text. */
const textOf = (forward: SseChunks.Events | string | undefined): string =>
  forward === undefined ? "" : typeof forward === "string" ? forward : forward.text

const USAGE_OBJECTS = /"usage"\s*:\s*\{/g

/** The line ends that make a blank line. */
const BLANK_LINES = ["\n\n", "\r\n\r\n", "\r\r"] as const

/** Where the event holding `at` starts: after the blank line before it, or at 0 (`crlf`: the text has CRs). */
const eventStart = (text: string, at: number, crlf: boolean): number => {
  if (!crlf) {
    const found = text.lastIndexOf("\n\n", at)
    return found === -1 ? 0 : found + 2
  }
  let start = 0
  for (const blank of BLANK_LINES) {
    const found = text.lastIndexOf(blank, at)
    if (found !== -1 && found + blank.length > start) start = found + blank.length
  }
  return start
}

/** Where the event holding `at` ends: after its blank line, or at the end of the text (`crlf`: the text has CRs). */
const eventEnd = (text: string, at: number, crlf: boolean): number => {
  if (!crlf) {
    const found = text.indexOf("\n\n", at)
    return found === -1 ? text.length : found + 2
  }
  let end = text.length
  for (const blank of BLANK_LINES) {
    const found = text.indexOf(blank, at)
    if (found !== -1 && found + blank.length < end) end = found + blank.length
  }
  return end
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
  const estimate = {
    promptTokens,
    completionTokens: generated === 0 ? 0 : Math.ceil(generated / 4),
    cachedTokens: 0,
    reported: false
  }
  return usage === undefined ? estimate : { ...estimate, usageRejected: usage }
}
