/**
 * The same-dialect fast path for the Responses API (a Responses client -> an
 * OpenAI channel marked `responses`): the client's bytes are relayed with only
 * `model` changed and the answer's bytes come back as they are, metered.
 *
 * - `inspectBody` scans the body (`JsonScan`: its structure and the top-level
 *   fields routing and billing need, without parsing the rest) and checks
 *   `model`, `input`, `stream` and `max_output_tokens`; refuses what needs
 *   response state this gateway does not keep (`previous_response_id`,
 *   `conversation`, `store: true`, `background: true`: the next call may go to
 *   another channel or key); and counts media parts for the balance hold. A
 *   body up to `EAGER_CHECK_BYTES` is also parsed whole; a larger one (Codex
 *   sends 100 KB and more of history every turn) is parsed only when the
 *   translation path reads it, or checked (`checkStructure`) when the channel
 *   refused it.
 * - `upstreamBody` forwards the client's bytes, with the model edited in
 *   place when the channel names it otherwise.
 * - `PassthroughMeter` forwards the upstream's bytes at event boundaries, as
 *   they came (`SseChunks.WholeEvents`), reads the usage of the final
 *   `response.completed` / `response.incomplete` / `response.failed` event
 *   (refusing figures that are not token counts), and counts the generated
 *   characters of the deltas, so a stream cut before its end is billed for
 *   what it carried. It also remembers the response's id and the last
 *   `sequence_number`, so that an error after the start ends the stream with
 *   a fitting `response.failed`.
 * - `usageOfResponse` reads a non-stream answer's usage.
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
import { readUsageFigures } from "./ResponsesAnswer.ts"

/** What `inspectBody` learnt about a body. @category models */
export interface InspectedBody {
  /** The body as received. */
  readonly bytes: Uint8Array
  /** The parsed body (parsed when first read: a large body the fast path forwards is never parsed). */
  readonly json: Record<string, unknown>
  readonly model: string
  readonly stream: boolean
  readonly maxOutputTokens: number | undefined
  /** Image, file and audio parts of the input (in messages and function results). */
  readonly mediaParts: number
  /** The same parts by kind, for the hold: `input_image` an image, `input_file` a document, `input_audio` audio. */
  readonly media: Tokens.MediaCounts
  /** Whether the whole body was parsed at inspection; large bodies are checked only when refused (`checkStructure`). */
  readonly checked: boolean
  /** Where each top-level field lies in the bytes, for `upstreamBody`. */
  readonly fields: JsonScan.Fields
}

/**
 * Bodies up to this size are parsed whole at inspection; larger ones are only
 * scanned for the fields the call needs and forwarded as they are: core's
 * `Inspection.EAGER_CHECK_BYTES`, the same for every dialect.
 *
 * @category inspection
 */
export const EAGER_CHECK_BYTES = Inspection.EAGER_CHECK_BYTES

const MEDIA: ReadonlyArray<readonly [string, Domain.MediaKind]> = [
  ["input_image", "image"],
  ["input_file", "document"],
  ["input_audio", "audio"]
]

const kindOf = (type: unknown): Domain.MediaKind | undefined => MEDIA.find(([name]) => name === type)?.[1]

/** Counts the media parts of the input, by kind, in `media`; returns how many. */
const countMedia = (input: unknown, media: Tokens.MediaCounts): number => {
  if (!Array.isArray(input)) return 0
  let parts = 0
  for (const item of input) {
    if (!Predicate.isObject(item)) continue
    const content = item.type === "function_call_output" ? item.output : item.content
    if (!Array.isArray(content)) continue
    for (const part of content) {
      const kind = Predicate.isObject(part) ? kindOf(part.type) : undefined
      if (kind === undefined) continue
      parts++
      Tokens.countMedia(media, kind)
    }
  }
  return parts
}

/**
 * The refusal of a request that needs response state (see the module doc),
 * or undefined.
 *
 * @category inspection
 */
export const stateRefusal = (body: Readonly<Record<string, unknown>>): GatewayError.InvalidRequest | undefined => {
  if (body.previous_response_id !== undefined && body.previous_response_id !== null) {
    return Issues.invalid(
      "previous_response_id",
      "'previous_response_id' is not supported: this gateway keeps no response state. Send the whole conversation in 'input' (and 'store': false)."
    )
  }
  if (body.conversation !== undefined && body.conversation !== null) {
    return Issues.invalid(
      "conversation",
      "'conversation' is not supported: this gateway keeps no conversation state. Send the whole conversation in 'input'."
    )
  }
  if (body.store === true) {
    return Issues.invalid(
      "store",
      "'store': true is not supported: this gateway keeps no response state. Send 'store': false and the whole conversation in 'input' with each request."
    )
  }
  if (body.background === true) {
    return Issues.invalid(
      "background",
      "'background': true is not supported: this gateway keeps no response state to poll. Send the request without it (stream it for long answers)."
    )
  }
  return undefined
}

/**
 * Reads a `POST /v1/responses` body for the call (see the module doc):
 * `model` (a non-empty string), `input` (a string or an array, when present),
 * `stream` (a boolean, or `null`) and `max_output_tokens` (a positive
 * integer, or `null`); a request that needs response state is refused
 * (`stateRefusal`). A body nested deeper than `JsonDepth.MAX_DEPTH` is
 * refused by the scan; malformed JSON fails with the parser's message.
 *
 * @example
 * ```ts
 * import { ResponsesPassthrough } from "@modelgate/openai-adapter"
 *
 * ResponsesPassthrough.inspectBody('{"model":"gpt-5","input":"Hi","stream":true}')
 * // Effect<{ model: "gpt-5", stream: true, maxOutputTokens: undefined, mediaParts: 0, ... }>
 * ```
 *
 * @category inspection
 */
export const inspectBody = (body: string | Uint8Array): Effect.Effect<InspectedBody, GatewayError.InvalidRequest> => {
  const scanned = Inspection.scan(body, {
    notObject: "The request body must be a JSON object with 'model' and 'input'.",
    media: { in: ["input"], types: MEDIA }
  })
  if (Result.isFailure(scanned)) return Effect.fail(scanned.failure)
  const { bytes, eager, field, fields, json, media } = scanned.success
  let mediaParts = scanned.success.mediaParts
  const model = field("model")
  if (!Predicate.isString(model) || model.length === 0) {
    return Effect.fail(Issues.invalid("model", "'model' is required (a model name)."))
  }
  const input = fields.get("input")
  if (input !== undefined && bytes[input.start] !== 0x22 && bytes[input.start] !== 0x5b) {
    return Effect.fail(Issues.invalid("input", "'input' must be a string or an array of items."))
  }
  const stream = field("stream")
  if (stream !== undefined && stream !== null && !Predicate.isBoolean(stream)) {
    return Effect.fail(Issues.invalid("stream", "'stream' must be a boolean."))
  }
  const max = field("max_output_tokens")
  if (max !== undefined && max !== null && !(Predicate.isNumber(max) && Number.isInteger(max) && max >= 1)) {
    return Effect.fail(Issues.invalid("max_output_tokens", "'max_output_tokens' must be a positive integer."))
  }
  const refused = stateRefusal({
    previous_response_id: field("previous_response_id"),
    conversation: field("conversation"),
    store: field("store"),
    background: field("background")
  })
  if (refused !== undefined) return Effect.fail(refused)
  if (eager) mediaParts = countMedia(json().input, media)
  return Effect.succeed({
    bytes,
    get json() {
      return json()
    },
    model,
    stream: stream === true,
    maxOutputTokens: Predicate.isNumber(max) ? max : undefined,
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
 * when the channel refused it: the scan checks the structure but not every
 * token, so a body JSON refuses gets the parser's message; `undefined` when
 * the body is well formed (the channel's own refusal then stands).
 *
 * @category inspection
 */
export const checkStructure = (inspected: InspectedBody): GatewayError.InvalidRequest | undefined =>
  Inspection.checkKept(inspected, () => undefined)

/**
 * The body for the channel: the client's own bytes when the model keeps its
 * name, else the same bytes with only the `model` value replaced.
 *
 * @category inspection
 */
export const upstreamBody = (inspected: InspectedBody, upstreamModel: string): Uint8Array =>
  JsonScan.withModel(inspected.bytes, inspected.fields.get("model")!, inspected.model, upstreamModel)

// ---------------------------------------------------------------------------
// Metering
// ---------------------------------------------------------------------------

/**
 * The metered usage of a Responses `usage` object: its figures, the reason
 * they were refused (`ResponsesAnswer.readUsageFigures`), or `undefined` when
 * there is none.
 *
 * @category metering
 */
export const meteredOfUsage = (usage: unknown): Dialect.Metered | string | undefined => {
  const figures = readUsageFigures(usage)
  if (figures === undefined || typeof figures === "string") return figures
  // Every figure the upstream reports is recorded: cached and cache-written prompt tokens, reasoning tokens.
  const cached = figures.input_tokens_details?.cached_tokens ?? 0
  const written = figures.input_tokens_details?.cache_write_tokens
  const reasoning = figures.output_tokens_details?.reasoning_tokens
  return {
    promptTokens: figures.input_tokens,
    completionTokens: figures.output_tokens,
    cachedTokens: cached ?? 0,
    ...(written !== undefined && written !== null && written > 0 ? { cacheWriteTokens: written } : {}),
    ...(reasoning !== undefined && reasoning !== null ? { reasoningTokens: reasoning } : {}),
    reported: true
  }
}

/** The decoded characters of every `"delta"` string value in `text` (the deltas of whole events), without parsing. */
const deltaCharacters = (text: string): number => {
  let total = 0
  for (let at = text.indexOf(DELTA); at !== -1; at = text.indexOf(DELTA, at)) {
    let i = at + DELTA.length
    for (; i < text.length; i++) {
      const code = text.charCodeAt(i)
      if (code === 34) break
      if (code === 92) i += text.charCodeAt(i + 1) === 117 ? 5 : 1
      total++
    }
    at = i + 1
  }
  return total
}

const DELTA = "\"delta\":\""

/** The last top-level `sequence_number` of whole events' text (nested JSON has none), or undefined. */
const lastSequenceOf = (text: string): number | undefined => {
  const at = text.lastIndexOf("\"sequence_number\"")
  if (at === -1) return undefined
  const match = /^"sequence_number"\s*:\s*(\d+)/.exec(text.slice(at, at + 48))
  return match === null ? undefined : Number(match[1])
}

const FINAL = /"type"\s*:\s*"response\.(completed|incomplete|failed)"/
const CREATED = /"type"\s*:\s*"response\.created"/

/**
 * Meters a relayed Responses stream (see the module doc). Feed it the
 * upstream's bytes in order with `pushBytes` and forward what it returns
 * (whole events, as they came); at the end forward `endBytes()`. Only the
 * events of a piece that holds `response.created` or the final event are
 * parsed; the deltas are counted and the sequence numbers read by a scan.
 * `push` and `end` do the same for text.
 *
 * @category metering
 */
export class PassthroughMeter {
  private readonly events = new SseChunks.WholeEvents()
  private generated = 0
  private reported: Dialect.Metered | undefined = undefined
  /** The last usage the upstream reported was refused: why. */
  private rejected: string | undefined = undefined
  /** The response's id, from `response.created` (empty until then). */
  responseId = ""
  /** The last `sequence_number` forwarded (-1 before any). */
  lastSequence = -1

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
   * What the stream consumed: the final event's usage, else the caller's
   * prompt estimate and the estimated output (also when the final usage's
   * figures were refused, which `usageRejected` then says).
   */
  metered(promptEstimate: number): Dialect.Metered {
    if (this.reported !== undefined) return this.reported
    const estimate = {
      promptTokens: promptEstimate,
      completionTokens: Tokens.estimateGeneratedLength(this.generated),
      cachedTokens: 0,
      reported: false
    }
    return this.rejected === undefined ? estimate : { ...estimate, usageRejected: this.rejected }
  }

  /** Meters whole events (their text). */
  private meter(text: string): void {
    const sequence = lastSequenceOf(text)
    if (sequence !== undefined) this.lastSequence = sequence
    this.generated += deltaCharacters(text)
    if (!FINAL.test(text) && !CREATED.test(text)) return
    for (let from = 0; from < text.length;) {
      const end = SseChunks.eventEnd(text, from)
      const stop = end === -1 ? text.length : end
      this.response(text.slice(from, stop))
      from = stop
    }
  }

  /** Reads the response of `response.created` (its id) or of the final event (its usage). */
  private response(raw: string): void {
    if (!FINAL.test(raw) && !CREATED.test(raw)) return
    let json: unknown
    try {
      json = JSON.parse(SseChunks.dataOf(raw))
    } catch {
      return
    }
    const response = Predicate.isObject(json) && Predicate.isObject(json.response) ? json.response : undefined
    if (response === undefined) return
    if (Predicate.isString(response.id) && this.responseId.length === 0) this.responseId = response.id
    const usage = meteredOfUsage(response.usage)
    if (typeof usage === "string") {
      this.reported = undefined
      this.rejected = usage
    } else if (usage !== undefined) {
      this.reported = usage
      this.rejected = undefined
    }
  }
}

/**
 * A non-stream answer's usage, or an estimate from its output when it
 * reports none (also when its figures are not token counts, which
 * `usageRejected` then says).
 *
 * @category metering
 */
export const usageOfResponse = (json: unknown, promptEstimate: number): Dialect.Metered => {
  const usage = Predicate.isObject(json) ? meteredOfUsage(json.usage) : undefined
  if (usage !== undefined && typeof usage !== "string") return usage
  let generated = 0
  const output = Predicate.isObject(json) && Array.isArray(json.output) ? json.output : []
  for (const item of output) {
    if (!Predicate.isObject(item)) continue
    if (Predicate.isString(item.arguments)) generated += item.arguments.length
    for (const part of Array.isArray(item.content) ? item.content : []) {
      if (Predicate.isObject(part) && Predicate.isString(part.text)) generated += part.text.length
    }
  }
  const estimate = {
    promptTokens: promptEstimate,
    completionTokens: Tokens.estimateGeneratedLength(generated),
    cachedTokens: 0,
    reported: false
  }
  return usage === undefined ? estimate : { ...estimate, usageRejected: usage }
}
