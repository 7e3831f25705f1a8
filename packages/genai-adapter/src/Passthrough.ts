/**
 * The same-dialect fast path: a Gemini client calling a Gemini upstream. The
 * body is forwarded unchanged (the model is in the URL path, not the body), so
 * the gateway only inspects it cheaply, and meters the answer without
 * re-encoding it.
 *
 * - `inspectBody` parses the body once, checks the one thing every call needs
 *   (`contents` is a non-empty array of turns with `parts` arrays) and reads
 *   what the balance hold needs: `generationConfig.maxOutputTokens` and
 *   `candidateCount`, and the number of media parts.
 * - `PassthroughMeter` is fed the upstream's SSE text in order and returns it
 *   unchanged; it remembers only the raw text of the last event that mentions
 *   `usageMetadata` (parsed once, on demand) and counts the characters of
 *   generated text, to bill a stream that was cut before any usage arrived.
 * - `usageOfResponse` reads the usage of a non-stream answer.
 * - `renameModelVersion` reports the public model name in a relayed answer
 *   (when the channel maps it to another upstream name) without re-encoding it.
 *
 * @since 0.1.0
 */
import type { Canonical } from "@modelgate/core"
import {
  type GatewayError,
  Inspection as BodyInspection,
  Issues,
  JsonDepth,
  JsonScan,
  Sse,
  Tokens
} from "@modelgate/core"
import { Effect, Predicate, Result } from "effect"
import { readUsage } from "./Response.ts"

/** What the fast path needs to know of a request body. @category inspection */
export interface Inspection {
  /** The body as received. */
  readonly bytes: Uint8Array
  /** The parsed body, to re-serialise with a channel's edit (parsed when first read: a large body the fast path forwards is never parsed). */
  readonly body: Readonly<Record<string, unknown>>
  /** `generationConfig.maxOutputTokens` (either spelling), when the client set it: a bound per candidate. */
  readonly maxOutputTokens?: number
  /** `generationConfig.candidateCount` (either spelling): how many answers to generate, 1 when absent. */
  readonly candidateCount: number
  /**
   * Parts of `contents` and `systemInstruction` that carry or point to media
   * (`inlineData` or `fileData`, either spelling): each costs tokens its bytes
   * in the body do not bound (a file by URI is a short string).
   */
  readonly mediaParts: number
  /**
   * The same parts by kind, for the hold, by their `mimeType` (`image/*`,
   * `video/*`, `audio/*`, a PDF a document; anything else, or none said, a
   * file: `Tokens.mediaKindOf`).
   */
  readonly media: Tokens.MediaCounts
  /** Whether the structure of the whole body was checked; large bodies are checked only when refused (`checkStructure`). */
  readonly checked: boolean
  /** `generationConfig` (either spelling), parsed on its own from the scan, when the body has one. */
  readonly config?: Readonly<Record<string, unknown>> | undefined
}

/**
 * Bodies up to this size are parsed and their structure checked at once;
 * larger ones are only scanned for what the call needs, forwarded as they are,
 * and checked if the upstream refuses them (`checkStructure`): core's
 * `Inspection.EAGER_CHECK_BYTES`, the same for every dialect.
 *
 * @category inspection
 */
export const EAGER_CHECK_BYTES = BodyInspection.EAGER_CHECK_BYTES

/** A part's media (`inlineData` or `fileData`, either spelling), if it carries or points to some. */
const mediaOf = (part: unknown): unknown =>
  Predicate.isObject(part)
    ? part.inlineData ?? part.inline_data ?? part.fileData ?? part.file_data
    : undefined

/** Counts the media parts, by kind, in `media`; returns how many. */
const countMedia = (parts: ReadonlyArray<unknown>, media: Tokens.MediaCounts): number => {
  let count = 0
  for (const part of parts) {
    const data = mediaOf(part)
    if (data === undefined) continue
    count++
    const mime = Predicate.isObject(data) ? data.mimeType ?? data.mime_type : undefined
    Tokens.countMedia(media, Tokens.mediaKindOf(Predicate.isString(mime) ? mime : undefined))
  }
  return count
}

/**
 * The field a key names: Gemini (proto JSON) takes a field in lowerCamelCase
 * or in snake_case (`generationConfig` or `generation_config`), so a body
 * that sets both sets one field twice (`JsonScan.duplicateKey`), and a
 * reader would take one and the upstream possibly the other.
 *
 * @category inspection
 */
export const sameField = (key: string): string =>
  key.includes("_") ? key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase()) : key

const MEDIA_KEYS = ["inlineData", "inline_data", "fileData", "file_data"]

const fail = (param: string, message: string): Result.Result<never, GatewayError.InvalidRequest> =>
  Result.fail(Issues.invalid(param, message))

const notJson = (): Result.Result<never, GatewayError.InvalidRequest> => fail("", "The request body is not valid JSON.")

/** The structure of `contents`, as the eager path and `checkStructure` check it, with the media parts counted (by kind, in `media`). */
const checkContents = (
  body: Readonly<Record<string, unknown>>,
  media: Tokens.MediaCounts = {}
): Result.Result<number, GatewayError.InvalidRequest> => {
  const contents = body.contents
  if (contents === undefined) return fail("contents", "'contents' is required.")
  if (!Array.isArray(contents)) return fail("contents", "'contents' must be an array of turns.")
  if (contents.length === 0) return fail("contents", "'contents' must contain at least one turn.")
  let mediaParts = 0
  for (let i = 0; i < contents.length; i++) {
    const content: unknown = contents[i]
    if (!Predicate.isObject(content)) return fail(`contents[${i}]`, `'contents[${i}]' must be an object.`)
    if (!Array.isArray(content.parts)) {
      return fail(`contents[${i}].parts`, `'contents[${i}].parts' must be an array of parts.`)
    }
    mediaParts += countMedia(content.parts, media)
  }
  const system = body.systemInstruction ?? body.system_instruction
  if (Predicate.isObject(system) && Array.isArray(system.parts)) mediaParts += countMedia(system.parts, media)
  return Result.succeed(mediaParts)
}

/**
 * `inspectBody` as a `Result`. Never throws. Every body is scanned
 * (`JsonScan`) for `contents` (a non-empty array) and `generationConfig`
 * (`maxOutputTokens` and `candidateCount` positive integers when present);
 * a body up to `EAGER_CHECK_BYTES` is parsed and every turn checked too (an
 * object with a `parts` array).
 *
 * @category inspection
 */
export const inspectBodyResult = (
  text: string | Uint8Array
): Result.Result<Inspection, GatewayError.InvalidRequest> => {
  const bytes = typeof text === "string" ? JsonScan.encode(text) : text
  const eager = bytes.length <= EAGER_CHECK_BYTES
  let scannedMedia = 0
  // The kinds said by the `mimeType` keys met in the scan; parts that said none are files.
  const scannedKinds: { -readonly [K in keyof Tokens.MediaCounts]: Tokens.MediaCounts[K] } = {}
  let kindsSaid = 0
  const media: JsonScan.StringVisitor = (b, start, end) => {
    for (const key of MEDIA_KEYS) {
      if (JsonScan.stringIs(b, start, end, key)) {
        // A key (followed by ':'), not a string value that happens to read the same.
        let i = end
        while (b[i] === 0x20 || b[i] === 0x0a || b[i] === 0x0d || b[i] === 0x09) i++
        if (b[i] === 0x3a) scannedMedia++
        return
      }
    }
    if (JsonScan.stringIs(b, start, end, "mimeType") || JsonScan.stringIs(b, start, end, "mime_type")) {
      const value = JsonScan.stringValueAfter(b, end)
      if (value === undefined) return
      kindsSaid++
      Tokens.countMedia(scannedKinds, Tokens.mediaKindOf(JsonScan.decode(b.subarray(value.start + 1, value.end - 1))))
    }
  }
  const scanned = JsonScan.topLevel(
    bytes,
    eager ? undefined : { contents: media, systemInstruction: media, system_instruction: media }
  )
  if (Result.isFailure(scanned)) {
    if (scanned.failure.kind === "too-deep") return Result.fail(JsonDepth.tooDeep())
    if (scanned.failure.kind !== "not-object") return notJson()
    try {
      JSON.parse(JsonScan.decode(bytes))
    } catch {
      return notJson()
    }
    return fail("", "The request body must be a JSON object.")
  }
  const fields = scanned.success
  const twice = JsonScan.duplicateKey(fields, sameField)
  if (twice !== undefined) return Result.fail(Issues.duplicateKey(twice))
  let parsed: Readonly<Record<string, unknown>> | undefined
  const json = (): Readonly<Record<string, unknown>> =>
    parsed ??= JSON.parse(JsonScan.decode(bytes)) as Readonly<Record<string, unknown>>
  let mediaParts = scannedMedia
  let mediaKinds: Tokens.MediaCounts = scannedKinds
  if (!eager && scannedMedia > kindsSaid) scannedKinds.file = (scannedKinds.file ?? 0) + scannedMedia - kindsSaid
  if (eager) {
    let body: Readonly<Record<string, unknown>>
    try {
      body = json()
    } catch {
      return notJson()
    }
    mediaKinds = {}
    const checked = checkContents(body, mediaKinds)
    if (Result.isFailure(checked)) return Result.fail(checked.failure)
    mediaParts = checked.success
  } else {
    const contents = fields.get("contents")
    if (contents === undefined) return fail("contents", "'contents' is required.")
    if (bytes[contents.start] !== 0x5b) return fail("contents", "'contents' must be an array of turns.")
    let i = contents.start + 1
    while (bytes[i] === 0x20 || bytes[i] === 0x0a || bytes[i] === 0x0d || bytes[i] === 0x09) i++
    if (bytes[i] === 0x5d) return fail("contents", "'contents' must contain at least one turn.")
  }
  let config: unknown
  try {
    config = JsonScan.valueOf(bytes, fields.get("generationConfig") ?? fields.get("generation_config"))
  } catch {
    return notJson()
  }
  const inspection = (extra: { readonly maxOutputTokens?: number; readonly candidateCount: number }): Inspection => ({
    bytes,
    get body() {
      return json()
    },
    ...extra,
    mediaParts,
    media: mediaKinds,
    checked: eager,
    config: Predicate.isObject(config) ? config : undefined
  })
  if (config === undefined) return Result.succeed(inspection({ candidateCount: 1 }))
  if (!Predicate.isObject(config)) return fail("generationConfig", "'generationConfig' must be an object.")
  const candidates = sizing(config, "candidateCount", "candidate_count")
  if (Result.isFailure(candidates)) return Result.fail(candidates.failure)
  const candidateCount = candidates.success ?? 1
  const max = sizing(config, "maxOutputTokens", "max_output_tokens")
  if (Result.isFailure(max)) return Result.fail(max.failure)
  if (max.success === undefined) return Result.succeed(inspection({ candidateCount }))
  return Result.succeed(inspection({ maxOutputTokens: max.success, candidateCount }))
}

/**
 * A `generationConfig` field that sizes the hold (`candidateCount`,
 * `maxOutputTokens`): a positive integer when present, in either spelling but
 * not both (a reader would take one and the upstream possibly the other).
 */
const sizing = (
  config: Readonly<Record<string, unknown>>,
  camel: string,
  snake: string
): Result.Result<number | undefined, GatewayError.InvalidRequest> => {
  const param = `generationConfig.${camel}`
  if (config[camel] !== undefined && config[snake] !== undefined) {
    return fail(param, `'generationConfig' sets '${camel}' twice (as '${camel}' and '${snake}'): send it once.`)
  }
  const value = config[camel] ?? config[snake]
  if (value === undefined) return Result.succeed(undefined)
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1) {
    return fail(param, `'${param}' must be a positive integer.`)
  }
  return Result.succeed(value)
}

/**
 * Inspects a Gemini request body for forwarding (see `inspectBodyResult`):
 * the body must be a JSON object whose `contents` is a non-empty array of
 * objects with a `parts` array; `maxOutputTokens` and `candidateCount` must be
 * positive integers when present. Media parts are counted for the balance
 * hold. Every failure is an `InvalidRequest` naming the field.
 *
 * @example
 * ```ts
 * import { Passthrough } from "@modelgate/genai-adapter"
 *
 * yield* Passthrough.inspectBody('{"contents":[{"parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":64}}')
 * // { body: {...}, maxOutputTokens: 64, candidateCount: 1, mediaParts: 0, ... }
 * ```
 *
 * @category inspection
 */
export const inspectBody = (text: string | Uint8Array): Effect.Effect<Inspection, GatewayError.InvalidRequest> =>
  Effect.fromResult(inspectBodyResult(text))

/**
 * The structure check a large body skipped at inspection, for when the
 * upstream refused it: the failure naming the field, or `undefined` when the
 * body is well formed (the upstream's refusal then stands).
 *
 * @category inspection
 */
export const checkStructure = (inspection: Inspection): GatewayError.InvalidRequest | undefined => {
  if (inspection.checked) return undefined
  let body: Readonly<Record<string, unknown>>
  try {
    body = inspection.body
  } catch {
    return Issues.invalid("", "The request body is not valid JSON.")
  }
  const checked = checkContents(body)
  return Result.isFailure(checked) ? checked.failure : undefined
}

/**
 * The usage of a non-stream Gemini answer (a parsed body): `undefined` when it
 * reports none, the reason its figures were refused (a string) when one is
 * not a token count (`Response.readUsage`).
 *
 * @category metering
 */
export const usageOfResponse = (json: unknown): Canonical.Usage | string | undefined =>
  Predicate.isObject(json) ? readUsage(json.usageMetadata) : undefined

/**
 * Counts the characters of the string values of `"text"` keys in a JSON text
 * without parsing it (an escape sequence counts as one character).
 */
const textCharacters = (json: string): number => {
  let total = 0
  let at = json.indexOf("\"text\"")
  while (at >= 0) {
    let i = at + 6
    while (i < json.length && (json.charCodeAt(i) === 32 || json.charCodeAt(i) === 58)) i++
    if (json.charCodeAt(i) !== 34) {
      at = json.indexOf("\"text\"", i)
      continue
    }
    i++
    while (i < json.length) {
      const code = json.charCodeAt(i)
      if (code === 34) break
      if (code === 92) {
        i += json.charCodeAt(i + 1) === 117 ? 6 : 2
      } else i++
      total++
    }
    at = json.indexOf("\"text\"", i + 1)
  }
  return total
}

/**
 * Meters a passed-through Gemini SSE stream. Feed every piece of upstream text
 * to `feed` (or every piece of bytes to `feedBytes`) in order; both return the
 * piece unchanged, so they can sit in a `Stream.map`. At the end, or when the client went away, `usage()` is the
 * upstream's last reported usage and `estimatedCompletionTokens()` the
 * fallback estimate from the generated characters.
 *
 * Cost per event: one `indexOf` for `usageMetadata`, one scan of the `"text"`
 * values, and a full `JSON.parse` only for events carrying a function call
 * (whose arguments count as generated output). The usage event itself is
 * parsed once, lazily.
 *
 * @example
 * ```ts
 * import { Passthrough } from "@modelgate/genai-adapter"
 *
 * const meter = new Passthrough.PassthroughMeter()
 * meter.feed('data: {"candidates":[{"content":{"parts":[{"text":"Hello"}]}}]}\r\n\r\n')
 * meter.feed('data: {"candidates":[{"content":{"parts":[{"text":"!"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":4,"candidatesTokenCount":2,"totalTokenCount":6}}\r\n\r\n')
 * meter.generatedCharacters() // 6
 * meter.usage() // { promptTokens: 4, completionTokens: 2, totalTokens: 6 }
 * ```
 *
 * @category metering
 */
export class PassthroughMeter {
  private readonly parser = new Sse.Parser()
  private decoder: TextDecoder | undefined = undefined
  private lastUsageEvent: string | undefined = undefined
  private parsedUsage: Canonical.Usage | string | undefined = undefined
  private parsedFrom: string | undefined = undefined
  private characters = 0
  private finished = false

  /** Observes the next piece of upstream text; returns it unchanged. */
  feed(text: string): string {
    for (const event of this.parser.push(text)) this.observe(event.data)
    return text
  }

  /**
   * Observes the next piece of upstream bytes (UTF-8, decoded incrementally,
   * so a character split across pieces is read correctly); returns the
   * bytes unchanged.
   */
  feedBytes(bytes: Uint8Array): Uint8Array {
    this.decoder ??= new TextDecoder()
    this.feed(this.decoder.decode(bytes, { stream: true }))
    return bytes
  }

  /** Observes the end of the upstream stream (an event not followed by a blank line). */
  end(): void {
    if (this.decoder !== undefined) {
      const rest = this.decoder.decode()
      if (rest.length > 0) this.feed(rest)
    }
    for (const event of this.parser.end()) this.observe(event.data)
  }

  /** The last usage the upstream reported, the reason its figures were refused (a string), or `undefined`. */
  usage(): Canonical.Usage | string | undefined {
    const event = this.lastUsageEvent
    if (event === undefined) return undefined
    if (event !== this.parsedFrom) {
      this.parsedFrom = event
      try {
        this.parsedUsage = usageOfResponse(JSON.parse(event))
      } catch {
        this.parsedUsage = undefined
      }
    }
    return this.parsedUsage
  }

  /** Characters of generated text, thoughts and function calls seen so far. */
  generatedCharacters(): number {
    return this.characters
  }

  /** A typical-case token estimate of the generated output: four characters per token, as `Tokens.estimateGeneratedTokens`. */
  estimatedCompletionTokens(): number {
    return this.characters === 0 ? 0 : Math.ceil(this.characters / 4)
  }

  /** Whether some event carried a `finishReason` (the answer was complete). */
  sawFinish(): boolean {
    return this.finished
  }

  private observe(data: string): void {
    if (data.includes("usageMetadata")) this.lastUsageEvent = data
    if (!this.finished && data.includes("\"finishReason\"")) this.finished = true
    this.characters += textCharacters(data)
    if (data.includes("\"functionCall\"")) {
      try {
        const chunk: unknown = JSON.parse(data)
        if (Predicate.isObject(chunk) && Array.isArray(chunk.candidates)) {
          for (const candidate of chunk.candidates) {
            const parts: unknown = Predicate.isObject(candidate) && Predicate.isObject(candidate.content)
              ? candidate.content.parts
              : undefined
            if (!Array.isArray(parts)) continue
            for (const part of parts) {
              if (Predicate.isObject(part) && Predicate.isObject(part.functionCall)) {
                const call = part.functionCall
                this.characters += (typeof call.name === "string" ? call.name.length : 0) +
                  JSON.stringify(call.args ?? {}).length
              }
            }
          }
        }
      } catch {
        // An unreadable event generates nothing countable.
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Model names in relayed answers
// ---------------------------------------------------------------------------

const MODEL_VERSION = /"modelVersion"\s*:\s*"(?:[^"\\]|\\.)*"/g

/**
 * Rewrites the top-level `modelVersion` of one Gemini answer (a whole
 * non-stream body, one SSE event or one array element) to `model`, at the
 * string level: every other byte is kept. Google writes `modelVersion` after
 * `candidates` and `usageMetadata`, so the top-level field is the last
 * `"modelVersion": "..."` key of the text (a function call's arguments may use
 * the same key before it; inside strings the quotes are escaped and never
 * match). Text without the field is returned as it is.
 *
 * @example
 * ```ts
 * renameModelVersion('{"candidates":[],"modelVersion": "gemini-2.5-flash-001"}', "fast")
 * // '{"candidates":[],"modelVersion":"fast"}'
 * ```
 *
 * @category relay
 */
export const renameModelVersion = (text: string, model: string): string => {
  let last: RegExpExecArray | undefined
  MODEL_VERSION.lastIndex = 0
  for (let match = MODEL_VERSION.exec(text); match !== null; match = MODEL_VERSION.exec(text)) last = match
  if (last === undefined) return text
  return text.slice(0, last.index) + `"modelVersion":${JSON.stringify(model)}` + text.slice(last.index + last[0].length)
}

/**
 * `renameModelVersion` applied to each line of relayed stream text, where
 * every SSE event and every element of the JSON array stream is one line (the
 * text must end at a line end or be the end of the stream).
 *
 * @category relay
 */
export const renameModelVersionPerLine = (text: string, model: string): string => {
  if (!text.includes("\"modelVersion\"")) return text
  return text.split("\n").map((line) => renameModelVersion(line, model)).join("\n")
}
