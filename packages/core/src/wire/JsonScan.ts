/**
 * Reading a few top-level fields of a JSON object without parsing it: a
 * structural scan over the UTF-8 bytes that finds where each top-level value
 * starts and ends, skipping strings with the runtime's native search for the
 * next quote and nested values by counting brackets, and builds nothing but
 * the list of top-level fields. The values a caller needs (a model name, a
 * flag, a small object) are then decoded alone.
 *
 * This is what keeps a gateway's cost per call from growing with the prompt:
 * a coding agent sends 100 to 200 KB of JSON every turn, almost all of it
 * strings inside `messages`, which the same-dialect path forwards as it came.
 * Parsing all of it (`JSON.parse`) costs several times the scan and allocates
 * every string and object of the history.
 *
 * The scan checks the structure (one object, strings closed, brackets
 * matched, nesting within `JsonDepth.MAX_DEPTH`, keys, colons and commas
 * where they belong) but not every token
 * inside nested values (a misspelt literal deep in `messages` passes): a body
 * that is malformed there is for the one who parses it (the upstream, or the
 * translation path) to refuse.
 *
 * @since 0.1.0
 */
import { Effect, Result } from "effect"
import type { InvalidRequest } from "../errors/GatewayError.ts"
import * as Issues from "../errors/Issues.ts"
import { exceeds, MAX_DEPTH, tooDeep } from "./JsonDepth.ts"
import * as Utf8 from "./Utf8.ts"

/** Where a value lies in the bytes: `[start, end)`. @category models */
export interface Span {
  readonly start: number
  readonly end: number
}

/** The top-level fields of an object, by key. @category models */
export interface Fields {
  /** The span of a top-level key's value (the last, when the key repeats), if present. */
  readonly get: (key: string) => Span | undefined
  readonly keys: () => ReadonlyArray<string>
  /**
   * The first key the object sets more than once, if any (JSON parsers keep
   * the last, some upstreams and proxies the first: see `duplicateKey`).
   */
  readonly duplicate: string | undefined
}

/**
 * Called for each string met while a value is skipped: `start` is its opening
 * quote, `end` the index after its closing one.
 *
 * @category models
 */
export type StringVisitor = (bytes: Uint8Array, start: number, end: number) => void

const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_BRACE = 0x7b
const CLOSE_BRACE = 0x7d
const OPEN_BRACKET = 0x5b
const CLOSE_BRACKET = 0x5d
const COLON = 0x3a
const COMMA = 0x2c

const isSpace = (c: number): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09

const skipSpace = (b: Uint8Array, i: number): number => {
  while (i < b.length && isSpace(b[i]!)) i++
  return i
}

/** The index after the closing quote of the string whose opening quote is at `at`, or -1 when it is not closed. */
export const stringEnd = (b: Uint8Array, at: number): number => {
  let from = at + 1
  for (;;) {
    const quote = b.indexOf(QUOTE, from)
    if (quote === -1) return -1
    let backslashes = 0
    for (let k = quote - 1; b[k] === BACKSLASH; k--) backslashes++
    if ((backslashes & 1) === 0) return quote + 1
    from = quote + 1
  }
}

/**
 * Why a scan failed: the body is not one object, it nests deeper than
 * `JsonDepth.MAX_DEPTH`, or it is malformed; `reason` says how, `at` where (a
 * byte offset).
 *
 * @category models
 */
export interface ScanFailure {
  readonly kind: "not-object" | "too-deep" | "malformed"
  readonly reason: string
  readonly at: number
}

class Malformed {
  readonly kind: ScanFailure["kind"]
  readonly reason: string
  readonly at: number
  constructor(reason: string, at: number, kind: ScanFailure["kind"] = "malformed") {
    this.kind = kind
    this.reason = reason
    this.at = at
  }
}

/**
 * The index after the value that starts at `i` (a string, an object, an
 * array, or a number or literal up to the next delimiter); `visit` sees every
 * string inside it.
 */
const skipValue = (b: Uint8Array, i: number, visit: StringVisitor | undefined): number => {
  const c = b[i]
  if (c === QUOTE) {
    const end = stringEnd(b, i)
    if (end === -1) throw new Malformed("a string is not closed", i)
    visit?.(b, i, end)
    return end
  }
  if (c === OPEN_BRACE || c === OPEN_BRACKET) {
    // Brackets are matched by kind with a small stack of what is open.
    const open: Array<number> = [c]
    let j = i + 1
    while (open.length > 0) {
      if (j >= b.length) throw new Malformed("an object or array is not closed", i)
      const d = b[j]!
      if (d === QUOTE) {
        const end = stringEnd(b, j)
        if (end === -1) throw new Malformed("a string is not closed", j)
        visit?.(b, j, end)
        j = end
        continue
      }
      if (d === OPEN_BRACE || d === OPEN_BRACKET) {
        // The top-level object is the first level.
        if (open.length + 2 > MAX_DEPTH) {
          throw new Malformed(`it nests more than ${MAX_DEPTH} levels deep`, j, "too-deep")
        }
        open.push(d)
      } else if (d === CLOSE_BRACE || d === CLOSE_BRACKET) {
        const expected = open.pop() === OPEN_BRACE ? CLOSE_BRACE : CLOSE_BRACKET
        if (d !== expected) throw new Malformed("brackets do not match", j)
      }
      j++
    }
    return j
  }
  let j = i
  while (j < b.length) {
    const d = b[j]!
    if (d === COMMA || d === CLOSE_BRACE || d === CLOSE_BRACKET || isSpace(d)) break
    j++
  }
  if (j === i) throw new Malformed("a value is missing", i)
  return j
}

/**
 * UTF-8 text of bytes (`Utf8.decode`).
 *
 * @category decoding
 */
export const decode = Utf8.decode

/**
 * UTF-8 bytes of text (`Utf8.encode`).
 *
 * @category decoding
 */
export const encode = Utf8.encode

/** A key's text: its bytes as they are, unless escaped (then JSON decides). */
const keyText = (b: Uint8Array, start: number, end: number): string => {
  const raw = b.subarray(start + 1, end - 1)
  return raw.includes(BACKSLASH) ? JSON.parse(Utf8.decode(b.subarray(start, end))) as string : Utf8.decode(raw)
}

/**
 * Scans a JSON document that must be one object, and returns its top-level
 * fields; `visit` (per key) sees the strings inside that key's value. Fails
 * with what is wrong and the byte offset (`ScanFailure`).
 *
 * @category scanning
 */
export const topLevel = (
  bytes: Uint8Array,
  visit?: Readonly<Record<string, StringVisitor>>
): Result.Result<Fields, ScanFailure> => {
  try {
    const keys: Array<string> = []
    const spans: Array<Span> = []
    const seen = new Set<string>()
    let duplicate: string | undefined
    let i = skipSpace(bytes, 0)
    if (bytes[i] !== OPEN_BRACE) {
      return Result.fail({ kind: "not-object", reason: "the body is not a JSON object", at: i })
    }
    i = skipSpace(bytes, i + 1)
    if (bytes[i] === CLOSE_BRACE) i++
    else {
      for (;;) {
        if (bytes[i] !== QUOTE) throw new Malformed("a key was expected", i)
        const keyEnd = stringEnd(bytes, i)
        if (keyEnd === -1) throw new Malformed("a key is not closed", i)
        const key = keyText(bytes, i, keyEnd)
        i = skipSpace(bytes, keyEnd)
        if (bytes[i] !== COLON) throw new Malformed("':' was expected after a key", i)
        const start = skipSpace(bytes, i + 1)
        const end = skipValue(bytes, start, visit?.[key])
        keys.push(key)
        spans.push({ start, end })
        if (duplicate === undefined) {
          if (seen.has(key)) duplicate = key
          else seen.add(key)
        }
        i = skipSpace(bytes, end)
        if (bytes[i] === COMMA) {
          i = skipSpace(bytes, i + 1)
          continue
        }
        if (bytes[i] === CLOSE_BRACE) {
          i++
          break
        }
        throw new Malformed("',' or '}' was expected", i)
      }
    }
    if (skipSpace(bytes, i) !== bytes.length) {
      return Result.fail({ kind: "malformed", reason: "there is more after the object", at: i })
    }
    return Result.succeed({
      get: (key) => {
        const at = keys.lastIndexOf(key)
        return at === -1 ? undefined : spans[at]
      },
      keys: () => keys,
      duplicate
    })
  } catch (error) {
    if (error instanceof Malformed) return Result.fail({ kind: error.kind, reason: error.reason, at: error.at })
    // A key whose escapes JSON refuses.
    if (error instanceof SyntaxError) {
      return Result.fail({ kind: "malformed", reason: "a key is not valid JSON", at: 0 })
    }
    throw error
  }
}

/**
 * The first top-level key a body sets more than once, or `undefined`. A
 * parser keeps one of the values (JSON.parse the last, some upstreams and
 * proxies the first), so a body that says `model` twice could be authorised
 * and priced as one model and served as the other: every front door refuses
 * it (`Issues.duplicateKey`). `sameKey` maps a key to the one field it names
 * where a dialect takes several spellings (Gemini: `generation_config` is
 * `generationConfig`), so two spellings of one field count as a repeat too.
 * Nested objects are the upstream's to judge.
 *
 * @example
 * ```ts
 * import { JsonScan } from "@modelgate/core"
 * import { Result } from "effect"
 *
 * const fields = JsonScan.topLevel(JsonScan.encode('{"model":"a","messages":[],"model":"b"}'))
 * Result.isSuccess(fields) && JsonScan.duplicateKey(fields.success) // "model"
 * ```
 *
 * @category scanning
 */
export const duplicateKey = (fields: Fields, sameKey?: (key: string) => string): string | undefined => {
  if (sameKey === undefined || fields.duplicate !== undefined) return fields.duplicate
  const seen = new Set<string>()
  for (const key of fields.keys()) {
    const name = sameKey(key)
    if (seen.has(name)) return key
    seen.add(name)
  }
  return undefined
}

/**
 * Checks a body that is parsed whole (embeddings, token counts) before it is:
 * refuses one nested more than `JsonDepth.MAX_DEPTH` levels (`tooDeep`), and
 * one whose top-level object sets a key twice (`Issues.duplicateKey`; see
 * `duplicateKey` for `sameKey`). Other malformed JSON passes, for the parser
 * to refuse in its own words.
 *
 * @category bodies
 */
export const checkWhole = (
  bytes: Uint8Array,
  sameKey?: (key: string) => string
): InvalidRequest | undefined => {
  const scanned = topLevel(bytes)
  if (Result.isFailure(scanned)) {
    if (scanned.failure.kind === "too-deep") return tooDeep()
    // Not an object, or malformed before its end: its depth still counts, the parser names the rest.
    return exceeds(bytes) ? tooDeep() : undefined
  }
  const twice = duplicateKey(scanned.success, sameKey)
  return twice === undefined ? undefined : Issues.duplicateKey(twice)
}

/**
 * A request body as a dialect's inspection has it: its top-level fields, and
 * the whole body parsed on demand, once.
 *
 * @category bodies
 */
export interface ScannedBody {
  readonly fields: Fields
  /** The body parsed; throws the parser's error for JSON the scan let through (see `Issues.notJson`). */
  readonly json: () => Record<string, unknown>
}

/**
 * Scans a client's request body the way every dialect's inspection does: the
 * structure and depth by `topLevel` (`visit` sees the strings of the named
 * top-level fields), and, when `eager` (a small body), the whole body parsed
 * at once, so JSON the scan let through is refused now. Each failure is the
 * client's 400: too deep, not an object (`notObject`, in the dialect's
 * words), or not JSON (in the parser's words).
 *
 * @category bodies
 */
export const scanBody = (bytes: Uint8Array, options: {
  readonly eager: boolean
  readonly visit?: Readonly<Record<string, StringVisitor>> | undefined
  readonly notObject: (bytes: Uint8Array) => InvalidRequest
  /** How the dialect names a key whatever its spelling (see `duplicateKey`). */
  readonly sameKey?: ((key: string) => string) | undefined
}): Result.Result<ScannedBody, InvalidRequest> => {
  const scanned = topLevel(bytes, options.visit)
  if (Result.isFailure(scanned)) {
    const { kind } = scanned.failure
    return Result.fail(
      kind === "too-deep" ? tooDeep() : kind === "not-object" ? options.notObject(bytes) : Issues.notJson(bytes)
    )
  }
  const twice = duplicateKey(scanned.success, options.sameKey)
  if (twice !== undefined) return Result.fail(Issues.duplicateKey(twice))
  let parsed: Record<string, unknown> | undefined
  const json = (): Record<string, unknown> => parsed ??= JSON.parse(decode(bytes)) as Record<string, unknown>
  if (options.eager) {
    try {
      json()
    } catch {
      return Result.fail(Issues.notJson(bytes))
    }
  }
  return Result.succeed({ fields: scanned.success, json })
}

/**
 * A value's JSON, parsed on its own (`undefined` for no span; a value the scan
 * let through but JSON refuses throws a `SyntaxError`).
 *
 * @category decoding
 */
export const valueOf = (bytes: Uint8Array, span: Span | undefined): unknown =>
  span === undefined ? undefined : JSON.parse(Utf8.decode(bytes.subarray(span.start, span.end)))

/**
 * A top-level number of a scanned body, parsed on its own: `undefined` when
 * the field is absent, not a finite number, or not JSON.
 *
 * @category decoding
 */
export const numberOf = (bytes: Uint8Array, fields: Fields, key: string): number | undefined => {
  const span = fields.get(key)
  if (span === undefined) return undefined
  let value: unknown
  try {
    value = valueOf(bytes, span)
  } catch {
    return undefined
  }
  return typeof value === "number" && Number.isFinite(value) ? value : undefined
}

/**
 * Whether the string at `[start, end)` (its quotes included) is exactly
 * `text` (ASCII, without escapes).
 *
 * @category decoding
 */
export const stringIs = (bytes: Uint8Array, start: number, end: number, text: string): boolean => {
  if (end - start !== text.length + 2) return false
  for (let k = 0; k < text.length; k++) if (bytes[start + 1 + k] !== text.charCodeAt(k)) return false
  return true
}

/**
 * The string value that follows a key string ending at `end`, as `[start,
 * end)` of that value string, when the key's value is a string.
 *
 * @category decoding
 */
export const stringValueAfter = (bytes: Uint8Array, end: number): Span | undefined => {
  let i = skipSpace(bytes, end)
  if (bytes[i] !== COLON) return undefined
  i = skipSpace(bytes, i + 1)
  if (bytes[i] !== QUOTE) return undefined
  const close = stringEnd(bytes, i)
  return close === -1 ? undefined : { start: i, end: close }
}

/** A value to put where another one was. @category editing */
export interface Edit {
  readonly span: Span
  /** The new value's JSON. */
  readonly text: string
}

/**
 * The bytes with each span replaced by its edit's JSON (spans must not
 * overlap); everything else is copied as it was.
 *
 * @category editing
 */
export const edit = (bytes: Uint8Array, edits: ReadonlyArray<Edit>): Uint8Array => {
  if (edits.length === 0) return bytes
  const sorted = [...edits].sort((a, b) => a.span.start - b.span.start)
  const parts = sorted.map((e) => Utf8.encode(e.text))
  let length = bytes.length
  for (let i = 0; i < sorted.length; i++) length += parts[i]!.length - (sorted[i]!.span.end - sorted[i]!.span.start)
  const out = new Uint8Array(length)
  let from = 0
  let at = 0
  for (let i = 0; i < sorted.length; i++) {
    const { span } = sorted[i]!
    out.set(bytes.subarray(from, span.start), at)
    at += span.start - from
    out.set(parts[i]!, at)
    at += parts[i]!.length
    from = span.end
  }
  out.set(bytes.subarray(from), at)
  return out
}

/**
 * The bytes of an object (as `topLevel` accepted it) with one more top-level
 * field at its end.
 *
 * @category editing
 */
export const appendField = (bytes: Uint8Array, key: string, valueJson: string): Uint8Array => {
  let close = bytes.length - 1
  while (close > 0 && bytes[close] !== CLOSE_BRACE) close--
  let last = close - 1
  while (last > 0 && isSpace(bytes[last]!)) last--
  const empty = bytes[last] === OPEN_BRACE
  const field = Utf8.encode(`${empty ? "" : ","}${JSON.stringify(key)}:${valueJson}`)
  const out = new Uint8Array(bytes.length + field.length)
  out.set(bytes.subarray(0, last + 1), 0)
  out.set(field, last + 1)
  out.set(bytes.subarray(last + 1), last + 1 + field.length)
  return out
}

/**
 * What a dialect's inspection keeps of a scanned body: its bytes, and the
 * whole of it parsed on demand (which throws for JSON the scan let through).
 *
 * @category bodies
 */
export interface KeptBody {
  readonly bytes: Uint8Array
  readonly json: Record<string, unknown>
}

/**
 * A kept body parsed whole, for a translation or the structure check a large
 * body skipped: JSON the scan let through (a misspelt literal deep inside)
 * fails with the parser's words (`Issues.notJson`).
 *
 * @category bodies
 */
export const parseKept = (body: KeptBody): Result.Result<Record<string, unknown>, InvalidRequest> => {
  try {
    return Result.succeed(body.json)
  } catch {
    return Result.fail(Issues.notJson(body.bytes))
  }
}

/**
 * `parseKept` as an Effect (parsed when run).
 *
 * @category bodies
 */
export const parsed = (body: KeptBody): Effect.Effect<Record<string, unknown>, InvalidRequest> =>
  Effect.suspend(() => Effect.fromResult(parseKept(body)))

/**
 * The body for a channel of the client's own dialect: its bytes as they came
 * when the model keeps its name, else the same bytes with only the model's
 * value (at `span`) replaced.
 *
 * @category editing
 */
export const withModel = (bytes: Uint8Array, span: Span, model: string, upstreamModel: string): Uint8Array =>
  upstreamModel === model ? bytes : edit(bytes, [{ span, text: JSON.stringify(upstreamModel) }])
