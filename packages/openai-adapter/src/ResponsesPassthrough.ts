/**
 * The same-dialect fast path for the Responses API (a Responses client -> an
 * OpenAI channel marked `responses`): the client's body is relayed with only
 * `model` changed and the answer's bytes come back as they are, metered.
 *
 * - `inspectBody` parses the body once, checks what routing and billing rely
 *   on (`model`, `input`, `stream`, `max_output_tokens`), refuses what needs
 *   response state this gateway does not keep (`previous_response_id`,
 *   `conversation`, `store: true`, `background: true`: the next call may go to
 *   another channel or key), and counts media parts for the balance hold.
 * - `PassthroughMeter` forwards the upstream's SSE text at event boundaries,
 *   reads the usage of the final `response.completed` / `response.incomplete`
 *   / `response.failed` event, and counts the generated characters of the
 *   deltas, so a stream cut before its end is billed for what it carried. It
 *   also remembers the response's id and the last `sequence_number`, so that
 *   an error after the start ends the stream with a fitting `response.failed`.
 * - `usageOfResponse` reads a non-stream answer's usage.
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
  readonly maxOutputTokens: number | undefined
  readonly mediaParts: number
}

const invalid = (message: string, param?: string) =>
  new GatewayError.InvalidRequest(param === undefined ? { message } : { message, param })

const MEDIA = new Set(["input_image", "input_file", "input_audio"])

const countMedia = (input: unknown): number => {
  if (!Array.isArray(input)) return 0
  let media = 0
  for (const item of input) {
    if (!Predicate.isObject(item)) continue
    const content = item.type === "function_call_output" ? item.output : item.content
    if (!Array.isArray(content)) continue
    for (const part of content) if (Predicate.isObject(part) && Predicate.isString(part.type) && MEDIA.has(part.type)) media++
  }
  return media
}

/**
 * The refusal of a request that needs response state (see the module doc),
 * or undefined.
 *
 * @category inspection
 */
export const stateRefusal = (body: Readonly<Record<string, unknown>>): GatewayError.InvalidRequest | undefined => {
  if (body.previous_response_id !== undefined && body.previous_response_id !== null) {
    return invalid("'previous_response_id' is not supported: this gateway keeps no response state. Send the whole conversation in 'input' (and 'store': false).", "previous_response_id")
  }
  if (body.conversation !== undefined && body.conversation !== null) {
    return invalid("'conversation' is not supported: this gateway keeps no conversation state. Send the whole conversation in 'input'.", "conversation")
  }
  if (body.store === true) {
    return invalid("'store': true is not supported: this gateway keeps no response state. Send 'store': false and the whole conversation in 'input' with each request.", "store")
  }
  if (body.background === true) {
    return invalid("'background': true is not supported: this gateway keeps no response state to poll. Send the request without it (stream it for long answers).", "background")
  }
  return undefined
}

/**
 * Parses a `POST /v1/responses` body and checks `model` (a non-empty
 * string), `input` (a string or an array), `stream` (a boolean when present)
 * and `max_output_tokens` (a positive integer when present); refuses what
 * needs response state (`stateRefusal`).
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
  if (!Predicate.isObject(json) || Array.isArray(json)) return Effect.fail(invalid("The request body must be a JSON object with 'model' and 'input'."))
  const { model, input, stream, max_output_tokens } = json
  if (!Predicate.isString(model) || model.length === 0) return Effect.fail(invalid("'model' is required (a model name).", "model"))
  if (input !== undefined && !Predicate.isString(input) && !Array.isArray(input)) {
    return Effect.fail(invalid("'input' must be a string or an array of items.", "input"))
  }
  if (stream !== undefined && stream !== null && !Predicate.isBoolean(stream)) return Effect.fail(invalid("'stream' must be a boolean.", "stream"))
  if (max_output_tokens !== undefined && max_output_tokens !== null && !(Predicate.isNumber(max_output_tokens) && Number.isInteger(max_output_tokens) && max_output_tokens >= 1)) {
    return Effect.fail(invalid("'max_output_tokens' must be a positive integer.", "max_output_tokens"))
  }
  const refused = stateRefusal(json)
  if (refused !== undefined) return Effect.fail(refused)
  return Effect.succeed({
    text,
    json: json as Record<string, unknown>,
    model,
    stream: stream === true,
    maxOutputTokens: Predicate.isNumber(max_output_tokens) ? max_output_tokens : undefined,
    mediaParts: countMedia(input)
  })
}

/**
 * The body for the channel: the client's own bytes when the model keeps its
 * name, else the same object with only `model` replaced.
 *
 * @category inspection
 */
export const upstreamBody = (inspected: InspectedBody, upstreamModel: string): string =>
  upstreamModel === inspected.model ? inspected.text : JSON.stringify({ ...inspected.json, model: upstreamModel })

// ---------------------------------------------------------------------------
// Metering
// ---------------------------------------------------------------------------

const isCount = (value: unknown): value is number => Predicate.isNumber(value) && Number.isInteger(value) && value >= 0

/** The metered usage of a Responses `usage` object, when it is one. @category metering */
export const meteredOfUsage = (usage: unknown): Dialect.Metered | undefined => {
  if (!Predicate.isObject(usage) || !isCount(usage.input_tokens) || !isCount(usage.output_tokens)) return undefined
  const details = usage.input_tokens_details
  const cached = Predicate.isObject(details) && isCount(details.cached_tokens) ? details.cached_tokens : 0
  return { promptTokens: usage.input_tokens, completionTokens: usage.output_tokens, cachedTokens: cached, reported: true }
}

const estimateTokens = (characters: number): number => characters === 0 ? 0 : Math.ceil(characters / 4)

/** The decoded characters of the `"delta"` string of a delta event's text, without parsing. */
const deltaLength = (raw: string): number => {
  const at = raw.indexOf("\"delta\":\"")
  if (at === -1) return 0
  let total = 0
  for (let i = at + 9; i < raw.length; i++) {
    const code = raw.charCodeAt(i)
    if (code === 34) break
    if (code === 92) i += raw.charCodeAt(i + 1) === 117 ? 5 : 1
    total++
  }
  return total
}

const dataOf = (raw: string): string => {
  let data: string | undefined
  for (const line of raw.split(/\r\n|\r|\n/)) {
    if (!line.startsWith("data:")) continue
    const value = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5)
    data = data === undefined ? value : `${data}\n${value}`
  }
  return data ?? ""
}

const FINAL = /"type"\s*:\s*"response\.(completed|incomplete|failed)"/
const CREATED = /"type"\s*:\s*"response\.created"/
const SEQUENCE = /"sequence_number"\s*:\s*(\d+)/

/** Where the event starting at `from` ends (after its blank line), or -1 when it is not complete. */
const eventEnd = (text: string, from: number): number => {
  let lineStart = true
  for (let i = from; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code !== 10 && code !== 13) {
      lineStart = false
      continue
    }
    if (code === 13) {
      if (i + 1 === text.length) return -1
      if (text.charCodeAt(i + 1) === 10) i++
    }
    if (lineStart) return i + 1
    lineStart = true
  }
  return -1
}

/**
 * Meters a relayed Responses stream (see the module doc). Forward what `push`
 * and `end` return.
 *
 * @category metering
 */
export class PassthroughMeter {
  private pending = ""
  private generated = 0
  private reported: Dialect.Metered | undefined = undefined
  /** The response's id, from `response.created` (empty until then). */
  responseId = ""
  /** The last `sequence_number` forwarded (-1 before any). */
  lastSequence = -1

  /** Takes the next piece of upstream text; returns the complete events in it. */
  push(text: string): string {
    const all = this.pending.length === 0 ? text : this.pending + text
    let from = 0
    for (;;) {
      const end = eventEnd(all, from)
      if (end === -1) break
      this.event(all.slice(from, end))
      from = end
    }
    this.pending = from === 0 ? all : all.slice(from)
    return from === 0 ? "" : from === all.length ? all : all.slice(0, from)
  }

  /** Ends the stream: the unterminated rest, forwarded as is (and metered). */
  end(): string {
    const rest = this.pending
    this.pending = ""
    if (rest.length > 0) this.event(rest)
    return rest
  }

  /** What the stream consumed: the final event's usage, else the caller's prompt estimate and the estimated output. */
  metered(promptEstimate: number): Dialect.Metered {
    return this.reported ?? { promptTokens: promptEstimate, completionTokens: estimateTokens(this.generated), cachedTokens: 0, reported: false }
  }

  private event(raw: string): void {
    const sequence = SEQUENCE.exec(raw)
    if (sequence !== null) this.lastSequence = Number(sequence[1])
    if (raw.includes(".delta\"")) {
      this.generated += deltaLength(raw)
      return
    }
    if (FINAL.test(raw) || CREATED.test(raw)) {
      let json: unknown
      try {
        json = JSON.parse(dataOf(raw))
      } catch {
        return
      }
      const response = Predicate.isObject(json) && Predicate.isObject(json.response) ? json.response : undefined
      if (response === undefined) return
      if (Predicate.isString(response.id) && this.responseId.length === 0) this.responseId = response.id
      const usage = meteredOfUsage(response.usage)
      if (usage !== undefined) this.reported = usage
    }
  }
}

/**
 * A non-stream answer's usage, or an estimate from its output when it
 * reports none.
 *
 * @category metering
 */
export const usageOfResponse = (json: unknown, promptEstimate: number): Dialect.Metered => {
  const usage = Predicate.isObject(json) ? meteredOfUsage(json.usage) : undefined
  if (usage !== undefined) return usage
  let generated = 0
  const output = Predicate.isObject(json) && Array.isArray(json.output) ? json.output : []
  for (const item of output) {
    if (!Predicate.isObject(item)) continue
    if (Predicate.isString(item.arguments)) generated += item.arguments.length
    for (const part of Array.isArray(item.content) ? item.content : []) {
      if (Predicate.isObject(part) && Predicate.isString(part.text)) generated += part.text.length
    }
  }
  return { promptTokens: promptEstimate, completionTokens: estimateTokens(generated), cachedTokens: 0, reported: false }
}
