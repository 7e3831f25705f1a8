/**
 * The same-dialect fast path (Anthropic client -> Anthropic channel): the
 * client's bytes are relayed with only `model` changed, and the answer's bytes
 * come back as they are while a meter reads them for usage.
 *
 * - `inspectBody` scans the body (`JsonScan`: its structure and the top-level
 *   fields routing and billing need, without parsing the rest) and checks
 *   `model`, `max_tokens`, `messages` and `stream`, and counts the media
 *   blocks for the balance hold. A body up to `EAGER_CHECK_BYTES` is also
 *   parsed and each turn's `role` and `content` checked; a larger one (Claude
 *   Code sends 100 KB and more every turn) is parsed only when the
 *   translation path reads it, or checked (`checkStructure`) when the channel
 *   refused it. Fields this gateway does not model (Claude Code's
 *   `context_management`, new tool kinds) pass untouched.
 * - `upstreamBody` forwards the client's bytes, with the model edited in
 *   place when the channel names it otherwise.
 * - `PassthroughMeter` forwards the upstream's bytes at event boundaries, as
 *   they came (`SseChunks.WholeEvents`), and meters their text: the input and
 *   cache counts of `message_start`, the cumulative output of each
 *   `message_delta` (figures that are not token counts are refused, and the
 *   stream counted locally), and, for a stream cut before its last
 *   `message_delta`, the output it carried estimated from the generated
 *   characters (text, thinking and tool input).
 * - `usageOfResponse` reads a non-stream answer's usage.
 * - `renameModel` puts the public model name in an answer or a stream event.
 *
 * @since 0.1.0
 */
import {
  type Dialect,
  type Domain,
  type GatewayError,
  Inspection,
  Issues,
  JsonScan,
  SseChunks,
  Tokens,
  Utf8
} from "@modelgate/core"
import { Effect, Predicate, Result } from "effect"
import { readUsageFigures } from "./Response.ts"

/** What `inspectBody` learnt about a body. @category models */
export interface InspectedBody {
  /** The body as received. */
  readonly bytes: Uint8Array
  /** The parsed body (parsed when first read: a large body the fast path forwards is never parsed). */
  readonly json: Record<string, unknown>
  readonly model: string
  readonly stream: boolean
  readonly maxTokens: number
  /** Image and document blocks, in the messages and inside tool results. */
  readonly mediaParts: number
  /** The same blocks by kind, for the hold: `image` an image, `document` a document. */
  readonly media: Tokens.MediaCounts
  /** Whether the whole body was checked at inspection; large bodies are checked only when refused (`checkStructure`). */
  readonly checked: boolean
  /** Where each top-level field lies in the bytes, for `upstreamBody`. */
  readonly fields: JsonScan.Fields
}

/**
 * Bodies up to this size are parsed and each turn checked at inspection;
 * larger ones are only scanned for the fields the call needs and forwarded as
 * they are: core's `Inspection.EAGER_CHECK_BYTES`, the same for every dialect.
 *
 * @category inspection
 */
export const EAGER_CHECK_BYTES = Inspection.EAGER_CHECK_BYTES

const MEDIA: ReadonlyArray<Domain.MediaKind> = ["image", "document"]

/** The block types that are media, each its own kind. */
const MEDIA_TYPES: ReadonlyArray<readonly [string, Domain.MediaKind]> = MEDIA.map((kind) => [kind, kind])

/** Counts the media blocks, by kind, in `media`; returns how many. */
const countMedia = (blocks: ReadonlyArray<unknown>, media: Tokens.MediaCounts): number => {
  let parts = 0
  for (const block of blocks) {
    if (!Predicate.isObject(block)) continue
    const kind = MEDIA.find((name) => name === block.type)
    if (kind !== undefined) {
      parts++
      Tokens.countMedia(media, kind)
    } else if (block.type === "tool_result" && Array.isArray(block.content)) parts += countMedia(block.content, media)
  }
  return parts
}

/**
 * Each turn's `role` (`user`, `assistant`, or `system`, which Claude Code
 * sends mid-conversation) and `content` (a string or an array of blocks): the
 * error naming the first that is wrong, or `undefined`.
 */
const checkMessages = (messages: ReadonlyArray<unknown>): GatewayError.InvalidRequest | undefined => {
  for (let i = 0; i < messages.length; i++) {
    const message: unknown = messages[i]
    if (!Predicate.isObject(message)) return Issues.invalid(`messages[${i}]`, `'messages[${i}]' must be an object.`)
    if (message.role !== "user" && message.role !== "assistant" && message.role !== "system") {
      return Issues.invalid(`messages[${i}].role`, `'messages[${i}].role' must be 'user', 'assistant' or 'system'.`)
    }
    if (!Array.isArray(message.content) && !Predicate.isString(message.content)) {
      return Issues.invalid(
        `messages[${i}].content`,
        `'messages[${i}].content' must be a string or an array of content blocks.`
      )
    }
  }
  return undefined
}

/**
 * Reads a `POST /v1/messages` body for the call (see the module doc):
 * `model` (a non-empty string), `max_tokens` (a positive integer),
 * `messages` (an array; in a body up to `EAGER_CHECK_BYTES` also each turn's
 * `role` and `content`) and `stream` (a boolean, or `null`). Every failure is
 * an `InvalidRequest` naming the field, as Anthropic names it; a body nested
 * deeper than `JsonDepth.MAX_DEPTH` is refused by the scan, and malformed
 * JSON fails with the parser's message.
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
export const inspectBody = (body: string | Uint8Array): Effect.Effect<InspectedBody, GatewayError.InvalidRequest> => {
  const scanned = Inspection.scan(body, {
    notObject: "The request body must be a JSON object with 'model', 'max_tokens' and 'messages'.",
    media: { in: ["messages"], types: MEDIA_TYPES }
  })
  if (Result.isFailure(scanned)) return Effect.fail(scanned.failure)
  const { bytes, eager, field, fields, json, media } = scanned.success
  let mediaParts = scanned.success.mediaParts
  const model = field("model")
  if (!Predicate.isString(model) || model.length === 0) {
    return Effect.fail(Issues.invalid("model", "'model' is required (a model name)."))
  }
  const maxTokens = field("max_tokens")
  if (!(Predicate.isNumber(maxTokens) && Number.isInteger(maxTokens) && maxTokens >= 1)) {
    return Effect.fail(
      Issues.invalid(
        "max_tokens",
        "'max_tokens' is required: a positive integer (the most tokens the answer may have)."
      )
    )
  }
  const messages = fields.get("messages")
  if (messages === undefined || bytes[messages.start] !== 0x5b) {
    return Effect.fail(Issues.invalid("messages", "'messages' is required: an array of turns."))
  }
  if (eager) {
    const turns = json().messages as ReadonlyArray<unknown>
    const wrong = checkMessages(turns)
    if (wrong !== undefined) return Effect.fail(wrong)
    for (const turn of turns) {
      if (Predicate.isObject(turn) && Array.isArray(turn.content)) mediaParts += countMedia(turn.content, media)
    }
  }
  const stream = field("stream")
  if (stream !== undefined && stream !== null && !Predicate.isBoolean(stream)) {
    return Effect.fail(Issues.invalid("stream", "'stream' must be a boolean."))
  }
  return Effect.succeed({
    bytes,
    get json() {
      return json()
    },
    model,
    stream: stream === true,
    maxTokens,
    mediaParts,
    media,
    checked: eager,
    fields
  })
}

/**
 * The parsed body, for the translation path: a large body the scan let
 * through but JSON refuses fails with the parser's message.
 *
 * @category inspection
 */
export const parsed = (inspected: InspectedBody): Effect.Effect<Record<string, unknown>, GatewayError.InvalidRequest> =>
  JsonScan.parsed(inspected)

/**
 * The check a large body skipped at inspection (see `EAGER_CHECK_BYTES`), for
 * when the channel refused it: the error naming the first turn whose `role`
 * or `content` is wrong (or the parser's message for JSON the scan let
 * through), or `undefined` when the body is well formed (the channel's own
 * refusal then stands).
 *
 * @category inspection
 */
export const checkStructure = (inspected: InspectedBody): GatewayError.InvalidRequest | undefined =>
  Inspection.checkKept(inspected, (json) => checkMessages(json.messages as ReadonlyArray<unknown>))

/**
 * The body for an Anthropic channel: the client's own bytes when the model
 * keeps its name, else the same bytes with only the `model` value replaced.
 *
 * @category inspection
 */
export const upstreamBody = (inspected: InspectedBody, upstreamModel: string): Uint8Array =>
  JsonScan.withModel(inspected.bytes, inspected.fields.get("model")!, inspected.model, upstreamModel)

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

/** Generated characters of an event or an answer: text, thinking and tool input fragments. */
const countGenerated = (text: string): number =>
  countStringValues(text, "\"text\"") + countStringValues(text, "\"thinking\"") +
  countStringValues(text, "\"partial_json\"")

interface WireUsage {
  input: number | undefined
  cacheRead: number | undefined
  cacheWrite: number | undefined
  output: number | undefined
}

/**
 * Merges a wire `usage` object over `into` (a missing or null field keeps the
 * earlier value, as the SDKs merge): `true` when there was one, `false` when
 * there was none, or the reason its figures were refused
 * (`Response.readUsageFigures`), leaving `into` as it was.
 */
const mergeUsage = (into: WireUsage, usage: unknown): boolean | string => {
  const figures = readUsageFigures(usage)
  if (figures === undefined) return false
  if (typeof figures === "string") return figures
  into.input = figures.input_tokens ?? into.input
  into.cacheRead = figures.cache_read_input_tokens ?? into.cacheRead
  into.cacheWrite = figures.cache_creation_input_tokens ?? into.cacheWrite
  into.output = figures.output_tokens
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

/**
 * Meters a relayed Anthropic stream. Feed it the upstream's bytes in order with
 * `pushBytes` and forward what it returns (whole events, as they came); at the
 * end forward `endBytes()`. Only the events of a piece that holds a
 * `message_start` or `message_delta` are parsed (two per stream); the
 * generated characters are counted by a scan. `push` and `end` do the same
 * for text.
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
  private readonly events = new SseChunks.WholeEvents()
  private generated = 0
  private readonly usage: WireUsage = {
    input: undefined,
    cacheRead: undefined,
    cacheWrite: undefined,
    output: undefined
  }
  private started = false
  /** A `message_delta` arrived: its output count is the whole answer's so far. */
  private delta = false
  /** The upstream reported usage whose figures are not token counts: why (the first such report). */
  private rejected: string | undefined = undefined

  /** Takes the next chunk of the upstream's bytes: the whole events it completed, as they came (forward their bytes), or undefined. */
  pushBytes(chunk: Uint8Array): SseChunks.Events | undefined {
    const whole = this.events.push(chunk)
    if (whole !== undefined) this.meter(whole.text)
    return whole
  }

  /** Ends the stream: an unterminated last event, forwarded as it came (and metered), or undefined. */
  endBytes(): SseChunks.Events | undefined {
    const rest = this.events.end()
    if (rest !== undefined) this.meter(rest.text)
    return rest
  }

  /** `pushBytes` for text: the complete events in it (possibly ""). */
  push(text: string): string {
    return this.pushBytes(Utf8.encode(text))?.text ?? ""
  }

  /** `endBytes` for text. */
  end(): string {
    return this.endBytes()?.text ?? ""
  }

  /**
   * What the stream consumed: the upstream's counts once `message_start` gave
   * them; the output of a stream cut before its last `message_delta` is at
   * least the estimate of the characters it carried. Without any usage, or
   * when a report's figures were refused (`usageRejected` then says why), the
   * caller's prompt estimate and the estimated output.
   */
  metered(promptEstimate: number): Dialect.Metered {
    const estimate = Tokens.estimateGeneratedLength(this.generated)
    if (this.rejected !== undefined) {
      return {
        promptTokens: promptEstimate,
        completionTokens: estimate,
        cachedTokens: 0,
        reported: false,
        usageRejected: this.rejected
      }
    }
    if (!this.started) {
      return { promptTokens: promptEstimate, completionTokens: estimate, cachedTokens: 0, reported: false }
    }
    const reported = this.usage.output ?? 0
    return meteredOf(this.usage, this.delta ? reported : Math.max(reported, estimate))
  }

  /** Meters whole events (their text): the generated characters, and the usage of `message_start` and `message_delta`. */
  private meter(text: string): void {
    // Neither usage event carries generated text, so the whole piece is counted at once.
    this.generated += countGenerated(text)
    if (!text.includes("\"message_start\"") && !text.includes("\"message_delta\"")) return
    for (let from = 0; from < text.length;) {
      const end = SseChunks.eventEnd(text, from)
      const stop = end === -1 ? text.length : end
      this.usageOf(text.slice(from, stop))
      from = stop
    }
  }

  private usageOf(raw: string): void {
    if (!raw.includes("message_start") && !raw.includes("message_delta")) return
    let json: unknown
    try {
      json = JSON.parse(SseChunks.dataOf(raw))
    } catch {
      return
    }
    if (!Predicate.isObject(json)) return
    if (json.type === "message_start" && Predicate.isObject(json.message)) this.merge(json.message.usage, false)
    else if (json.type === "message_delta") this.merge(json.usage, true)
  }

  private merge(usage: unknown, delta: boolean): void {
    const merged = mergeUsage(this.usage, usage)
    if (typeof merged === "string") this.rejected ??= merged
    else if (merged) {
      this.started = true
      if (delta) this.delta = true
    }
  }
}

/**
 * A non-stream answer's usage (parsed JSON), or an estimate from its blocks
 * when it reports none (also when its figures are not token counts, which
 * `usageRejected` then says).
 *
 * @category metering
 */
export const usageOfResponse = (json: unknown, promptEstimate: number): Dialect.Metered => {
  const usage: WireUsage = { input: undefined, cacheRead: undefined, cacheWrite: undefined, output: undefined }
  const merged = Predicate.isObject(json) ? mergeUsage(usage, json.usage) : false
  if (merged === true) return meteredOf(usage, usage.output ?? 0)
  let generated = 0
  if (Predicate.isObject(json) && Array.isArray(json.content)) {
    for (const block of json.content) {
      if (!Predicate.isObject(block)) continue
      if (Predicate.isString(block.text)) generated += block.text.length
      if (Predicate.isString(block.thinking)) generated += block.thinking.length
      if (block.type === "tool_use") generated += JSON.stringify(block.input ?? {}).length
    }
  }
  const estimate = {
    promptTokens: promptEstimate,
    completionTokens: Tokens.estimateGeneratedLength(generated),
    cachedTokens: 0,
    reported: false
  }
  return merged === false ? estimate : { ...estimate, usageRejected: merged }
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
export const renameModel = (text: string, model: string): string =>
  text.replace(MODEL_FIELD, `"model":${JSON.stringify(model)}`)
