/**
 * Per-request behaviour of the fake upstream ("scenario"), chosen by request
 * header (wins), by tokens in the model name (so tests that go through a
 * gateway which does not forward `x-fake-*` headers can still pick a
 * behaviour), or by the server's global options.
 *
 * Model-name tokens (case-insensitive, anywhere in the name, e.g.
 * `gpt-fake-tools-slow-200`):
 *   tools            answer with a tool call (when tools are declared)
 *   call-NAME        answer with a call of the declared tool NAME (letters, digits and `_`):
 *                    `x-fake-tool-call` in a name, for gateways whose channel headers are secrets
 *   slow / slow-N    delay the first byte by `slowMs` (default 1000) / N ms
 *   fail-NNN         fail with HTTP status NNN in the dialect's error envelope
 *
 * Header only: `x-fake-fail-on: TEXT` fails only the requests whose body
 * contains TEXT (with `x-fake-fail`'s status, 500 by default): one request of
 * several a call is sent in (an embeddings model that takes one text a request).
 *   cut-N            stream N content chunks, then kill the connection
 *   stall-N          stream N content chunks, then stall forever
 *   chunks-NxB       N content chunks of B bytes each
 *   bytes-B          answer text of about B bytes
 *   interval-N       N ms between stream chunks
 *   nousage          omit usage
 *   negusage         report negative usage (-1000000 prompt, -5000000 completion tokens)
 *   fracusage        report fractional usage (1.5 prompt, 2.5 completion tokens)
 *   html-200         answer 200 with an HTML page (a proxy's error page)
 *   error-200        answer 200 with the dialect's error (a JSON body, or a first stream event)
 *   broken-200       answer 200 with broken JSON (the body, or the first stream event)
 *   empty-200        answer 200 with nothing (an empty stream, or `{}`)
 *   line-B           end a stream with one line of B bytes that never ends
 *   echo-NNN         fail with status NNN, the message quoting the request's headers
 */
import type { IncomingHttpHeaders } from "node:http"

export type CutMode = "close" | "reset"

/**
 * A 200 that is not an answer: an HTML page, the dialect's error, broken
 * JSON, or nothing (see the README).
 */
export type NotAnAnswer = "html" | "error" | "broken" | "empty"

export interface Scenario {
  /** false: never; true: the first declared tool; string: that tool's name. */
  readonly toolCall: boolean | string
  readonly delayFirstMs: number
  readonly failStatus: number | undefined
  /** Fail (`failStatus`, 500 by default) only a request whose body contains this text. */
  readonly failOn: string | undefined
  readonly cutAfter: number | undefined
  readonly cutMode: CutMode
  readonly stallAfter: number | undefined
  readonly chunks: number | undefined
  readonly chunkBytes: number | undefined
  readonly responseBytes: number | undefined
  readonly chunkIntervalMs: number
  readonly usage: boolean
  /** Report part of the completion as reasoning (OpenAI `reasoning_tokens`, Gemini `thoughtsTokenCount`). */
  readonly thinking: boolean
  /** The prompt and completion token counts to report instead of the true ones (raw: negative or fractional). */
  readonly usageValues: readonly [number, number] | undefined
  /** Answer 200 with something that is not an answer. */
  readonly notAnAnswer: NotAnAnswer | undefined
  /** End a stream with one line of this many bytes that never ends. */
  readonly lineBytes: number | undefined
  /** Fail with this status, the message quoting every request header (an upstream that echoes credentials). */
  readonly echoStatus: number | undefined
}

export interface ScenarioDefaults {
  readonly latencyMs: number
  readonly chunkIntervalMs: number
  readonly slowMs: number
}

/** Upper bounds that keep a typo from asking for terabytes or years. */
const MAX_CHUNKS = 10_000_000
const MAX_BYTES = 1 << 30
const MAX_DELAY_MS = 3_600_000
const MAX_LINE_BYTES = 4 * MAX_BYTES

const header = (headers: IncomingHttpHeaders, name: string): string | undefined => {
  const value = headers[name]
  return Array.isArray(value) ? value[0] : value
}

const int = (raw: string | undefined, max: number): number | undefined => {
  if (raw === undefined) return undefined
  const trimmed = raw.trim()
  if (!/^\d+$/.test(trimmed)) return undefined
  const n = Number(trimmed)
  return n <= max ? n : max
}

const status = (raw: string | undefined): number | undefined => {
  const n = int(raw, 999)
  return n !== undefined && n >= 400 && n <= 599 ? n : undefined
}

// One cheap test on the hot path: only models that contain a control word
// pay for the individual regular expressions below.
const MODEL_HINT =
  /tools|call-|slow|fail-|cut-|stall-|chunks-|bytes-|interval-|nousage|negusage|fracusage|thinking|-200|line-|echo-/i
const token = (word: string, arg: string): RegExp => new RegExp(`(?:^|[^a-z0-9])${word}${arg}(?![0-9])`, "i")
const MODEL_TOOLS = /tools/i
const MODEL_CALL = token("call-", "([A-Za-z0-9_]+)")
const MODEL_SLOW = /slow(?:-(\d+))?/i
const MODEL_FAIL = token("fail-", "(\\d{3})")
const MODEL_CUT = token("cut-", "(\\d+)")
const MODEL_STALL = token("stall-", "(\\d+)")
const MODEL_CHUNKS = token("chunks-", "(\\d+)(?:x(\\d+))?")
const MODEL_BYTES = token("bytes-", "(\\d+)")
const MODEL_INTERVAL = token("interval-", "(\\d+)")
const MODEL_NOUSAGE = /nousage/i
const MODEL_NEGUSAGE = /negusage/i
const MODEL_FRACUSAGE = /fracusage/i
const MODEL_NOT_AN_ANSWER = token("(html|error|broken|empty)", "-200")
const MODEL_LINE = token("line-", "(\\d+)")
const MODEL_ECHO = token("echo-", "(\\d{3})")

/** The usage `negusage` reports: it would credit a balance if it were charged. */
export const NEGATIVE_USAGE: readonly [number, number] = [-1_000_000, -5_000_000]
/** The usage `fracusage` reports: `BigInt(1.5)` throws. */
export const FRACTIONAL_USAGE: readonly [number, number] = [1.5, 2.5]

const NOT_AN_ANSWER = new Set<string>(["html", "error", "broken", "empty"])

const notAnAnswer = (raw: string | undefined): NotAnAnswer | undefined => {
  const value = raw?.trim().toLowerCase()
  return value !== undefined && NOT_AN_ANSWER.has(value) ? value as NotAnAnswer : undefined
}

/** `P,C`: two JSON numbers (any sign, fractions allowed). */
const usageValues = (raw: string | undefined): readonly [number, number] | undefined => {
  const match = raw === undefined ? null : /^\s*(-?\d+(?:\.\d+)?)\s*,\s*(-?\d+(?:\.\d+)?)\s*$/.exec(raw)
  return match === null ? undefined : [Number(match[1]), Number(match[2])]
}

type Mutable = {
  -readonly [K in keyof Scenario]: Scenario[K]
}

const fromModel = (model: string, s: Mutable, defaults: ScenarioDefaults): void => {
  if (!MODEL_HINT.test(model)) return
  if (MODEL_TOOLS.test(model)) s.toolCall = true
  const call = MODEL_CALL.exec(model)
  if (call) s.toolCall = call[1]!
  const slow = MODEL_SLOW.exec(model)
  if (slow) s.delayFirstMs = slow[1] !== undefined ? Math.min(Number(slow[1]), MAX_DELAY_MS) : defaults.slowMs
  const fail = MODEL_FAIL.exec(model)
  if (fail) s.failStatus = status(fail[1])
  const cut = MODEL_CUT.exec(model)
  if (cut) s.cutAfter = int(cut[1], MAX_CHUNKS)
  const stall = MODEL_STALL.exec(model)
  if (stall) s.stallAfter = int(stall[1], MAX_CHUNKS)
  const chunks = MODEL_CHUNKS.exec(model)
  if (chunks) {
    s.chunks = int(chunks[1], MAX_CHUNKS)
    if (chunks[2] !== undefined) s.chunkBytes = int(chunks[2], MAX_BYTES)
  }
  const bytes = MODEL_BYTES.exec(model)
  if (bytes) s.responseBytes = int(bytes[1], MAX_BYTES)
  const interval = MODEL_INTERVAL.exec(model)
  if (interval) s.chunkIntervalMs = int(interval[1], MAX_DELAY_MS) ?? s.chunkIntervalMs
  if (MODEL_NOUSAGE.test(model)) s.usage = false
  if (/thinking/i.test(model)) s.thinking = true
  if (MODEL_NEGUSAGE.test(model)) s.usageValues = NEGATIVE_USAGE
  if (MODEL_FRACUSAGE.test(model)) s.usageValues = FRACTIONAL_USAGE
  const body = MODEL_NOT_AN_ANSWER.exec(model)
  if (body) s.notAnAnswer = notAnAnswer(body[1])
  const line = MODEL_LINE.exec(model)
  if (line) s.lineBytes = int(line[1], MAX_LINE_BYTES)
  const echo = MODEL_ECHO.exec(model)
  if (echo) s.echoStatus = status(echo[1])
}

const fromHeaders = (headers: IncomingHttpHeaders, s: Mutable): void => {
  const tool = header(headers, "x-fake-tool-call")
  if (tool !== undefined) {
    const v = tool.trim()
    const lower = v.toLowerCase()
    if (lower === "none" || lower === "0" || lower === "false" || lower === "off") s.toolCall = false
    else if (v === "" || lower === "1" || lower === "true" || lower === "auto" || v === "*") s.toolCall = true
    else s.toolCall = v
  }
  const delay = int(header(headers, "x-fake-delay-first-ms"), MAX_DELAY_MS)
  if (delay !== undefined) s.delayFirstMs = delay
  const fail = header(headers, "x-fake-fail")
  if (fail !== undefined) s.failStatus = status(fail)
  const failOn = header(headers, "x-fake-fail-on")
  if (failOn !== undefined && failOn !== "") s.failOn = failOn
  const cut = int(header(headers, "x-fake-cut-after"), MAX_CHUNKS)
  if (cut !== undefined) s.cutAfter = cut
  const cutMode = header(headers, "x-fake-cut-mode")
  if (cutMode !== undefined) s.cutMode = cutMode.trim().toLowerCase() === "reset" ? "reset" : "close"
  const stall = int(header(headers, "x-fake-stall-after"), MAX_CHUNKS)
  if (stall !== undefined) s.stallAfter = stall
  const chunks = int(header(headers, "x-fake-chunks"), MAX_CHUNKS)
  if (chunks !== undefined) s.chunks = chunks
  const chunkBytes = int(header(headers, "x-fake-chunk-bytes"), MAX_BYTES)
  if (chunkBytes !== undefined) s.chunkBytes = chunkBytes
  const responseBytes = int(header(headers, "x-fake-response-bytes"), MAX_BYTES)
  if (responseBytes !== undefined) s.responseBytes = responseBytes
  const interval = int(header(headers, "x-fake-chunk-interval-ms"), MAX_DELAY_MS)
  if (interval !== undefined) s.chunkIntervalMs = interval
  const usage = header(headers, "x-fake-usage")
  if (usage !== undefined) s.usage = usage.trim().toLowerCase() !== "none"
  const values = usageValues(header(headers, "x-fake-usage-values"))
  if (values !== undefined) s.usageValues = values
  const body = notAnAnswer(header(headers, "x-fake-body"))
  if (body !== undefined) s.notAnAnswer = body
  const line = int(header(headers, "x-fake-line-bytes"), MAX_LINE_BYTES)
  if (line !== undefined) s.lineBytes = line
  const echo = status(header(headers, "x-fake-echo-headers"))
  if (echo !== undefined) s.echoStatus = echo
}

/** Quick check so plain requests skip all header parsing. */
const hasFakeHeader = (headers: IncomingHttpHeaders): boolean => {
  for (const name in headers) {
    if (name.startsWith("x-fake-")) return true
  }
  return false
}

export const resolveScenario = (
  model: string,
  headers: IncomingHttpHeaders,
  defaults: ScenarioDefaults,
  /** The request's body as text (for `x-fake-fail-on`). */
  body = ""
): Scenario => {
  const s: Mutable = {
    toolCall: false,
    delayFirstMs: 0,
    failStatus: undefined,
    failOn: undefined,
    cutAfter: undefined,
    cutMode: "close",
    stallAfter: undefined,
    chunks: undefined,
    chunkBytes: undefined,
    responseBytes: undefined,
    chunkIntervalMs: defaults.chunkIntervalMs,
    usage: true,
    thinking: false,
    usageValues: undefined,
    notAnAnswer: undefined,
    lineBytes: undefined,
    echoStatus: undefined
  }
  fromModel(model, s, defaults)
  if (hasFakeHeader(headers)) fromHeaders(headers, s)
  if (s.failOn !== undefined) s.failStatus = body.includes(s.failOn) ? s.failStatus ?? 500 : undefined
  return s
}
