/**
 * What a call's spans say: the OpenTelemetry GenAI semantic conventions'
 * attributes (`gen_ai.*`), the gateway's own (`modelgate.*`), and, when the
 * operator turns it on (`telemetry.capture_content`), the prompt and the
 * answer as the conventions' `gen_ai.client.inference.operation.details`
 * event, size-bounded and with the channel's secrets redacted.
 *
 * Every function here takes the call's trace (`Telemetry.CallTrace`) or one
 * of its spans and does nothing, allocating nothing, when it is undefined
 * (tracing off) or not sampled: code on the call path calls them as they are.
 * Usage and response attributes go on the call's server span only (one
 * generation per call for a tool that sums usage over spans), the attempt's
 * own facts (channel, provider, address, status, error) on its client span.
 *
 * @since 0.1.0
 */
import type { Canonical, Dialect, Domain, GatewayError, UsageLog } from "@modelgate/core"
import { Exit, type Tracer } from "effect"
import * as Redaction from "./Redaction.ts"
import * as Telemetry from "./Telemetry.ts"

type Trace = Telemetry.CallTrace | undefined

// ---------------------------------------------------------------------------------------------------------------------
// Names

/**
 * `gen_ai.provider.name` of a channel, as the conventions name providers
 * (`openai`, `gcp.gemini`, `anthropic`, `azure.ai.openai`, `gcp.vertex_ai`,
 * `aws.bedrock`); a channel type they do not name is itself.
 *
 * @category names
 */
export const providerName = (type: string): string => PROVIDERS[type] ?? type

const PROVIDERS: Readonly<Record<string, string>> = {
  openai: "openai",
  gemini: "gcp.gemini",
  anthropic: "anthropic",
  azure: "azure.ai.openai",
  vertex: "gcp.vertex_ai",
  bedrock: "aws.bedrock"
}

/** The kinds of call the gateway traces. @category names */
export type CallKind = "chat" | "embeddings" | "count_tokens"

/**
 * `gen_ai.operation.name` of a call: `chat` (OpenAI chat completions and
 * Responses, Anthropic Messages), `generate_content` (Gemini's
 * generateContent, as the conventions name it), `embeddings`, and
 * `count_tokens` (which the conventions do not name).
 *
 * @category names
 */
export const operationName = (kind: CallKind, dialect: Domain.Dialect): string =>
  kind === "chat" ? (dialect === "gemini" ? "generate_content" : "chat") : kind

// ---------------------------------------------------------------------------------------------------------------------
// The server span

/**
 * The call's model is known (the catalog's name): the server span is named
 * `{operation} {model}` (`chat gpt-4o-mini`), with `gen_ai.operation.name`,
 * `gen_ai.request.model` and the group the key's calls are routed in.
 *
 * @category server span
 */
export const admitted = (trace: Trace, operation: string, model: string, group: string): void => {
  if (trace === undefined || !trace.span.sampled) return
  trace.name(operation, model)
  trace.span.attribute("modelgate.group", group)
}

/**
 * Who is calling: the key's and its user's ids (never a secret, nor the
 * key's prefix).
 *
 * @category server span
 */
export const caller = (trace: Trace, key: Domain.ApiKey): void => {
  if (trace === undefined || !trace.span.sampled) return
  trace.span.attribute("modelgate.user_id", key.userId)
  trace.span.attribute("modelgate.key_id", key.id)
}

/**
 * The call was refused, or failed: `modelgate.error_code`, the gateway's
 * error code the caller got (`RateLimited`, `InsufficientBalance`, ...).
 *
 * @category server span
 */
export const refused = (trace: Trace, error: GatewayError.GatewayError): void => {
  if (trace === undefined) return
  trace.span.attribute("modelgate.error_code", error._tag)
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * What the request asked for, where it said: `gen_ai.request.max_tokens`,
 * `gen_ai.request.temperature`, `gen_ai.request.top_p` (the dialect's
 * `sampling`, read from its inspection's top-level scan: the body is not
 * parsed for them, whatever its size), `gen_ai.request.choice.count` (when
 * not 1), and whether it streams (`modelgate.stream`).
 *
 * @category server span
 */
export const request = (
  trace: Trace,
  asked: {
    readonly stream: boolean
    readonly maxOutputTokens: number | undefined
    readonly choices: number
    sampling?(): Dialect.SamplingSettings
  }
): void => {
  if (trace === undefined || !trace.span.sampled) return
  const span = trace.span
  span.attribute("modelgate.stream", asked.stream)
  if (asked.maxOutputTokens !== undefined) span.attribute("gen_ai.request.max_tokens", asked.maxOutputTokens)
  if (asked.choices !== 1) span.attribute("gen_ai.request.choice.count", asked.choices)
  const sampling = asked.sampling?.()
  if (sampling === undefined) return
  if (sampling.temperature !== undefined) span.attribute("gen_ai.request.temperature", sampling.temperature)
  if (sampling.topP !== undefined) span.attribute("gen_ai.request.top_p", sampling.topP)
}

const string = (value: unknown): string | undefined => typeof value === "string" ? value : undefined

/**
 * The answer as the upstream wrote it (a same-dialect call's JSON, read in
 * `dialect`'s shape): `gen_ai.response.id`, `gen_ai.response.model` and
 * `gen_ai.response.finish_reasons`.
 *
 * @category server span
 */
export const responseJson = (trace: Trace, dialect: Domain.Dialect, json: unknown): void => {
  if (trace === undefined || !trace.span.sampled || !isRecord(json)) return
  const span = trace.span
  let id: string | undefined
  let model: string | undefined
  const reasons: Array<string> = []
  switch (dialect) {
    case "openai": {
      id = string(json["id"])
      model = string(json["model"])
      const choices = json["choices"]
      if (Array.isArray(choices)) {
        for (const choice of choices) {
          const reason = isRecord(choice) ? string(choice["finish_reason"]) : undefined
          if (reason !== undefined) reasons.push(reason)
        }
      }
      break
    }
    case "responses": {
      id = string(json["id"])
      model = string(json["model"])
      const details = json["incomplete_details"]
      const reason = isRecord(details) ? string(details["reason"]) : string(json["status"])
      if (reason !== undefined) reasons.push(reason)
      break
    }
    case "anthropic": {
      id = string(json["id"])
      model = string(json["model"])
      const reason = string(json["stop_reason"])
      if (reason !== undefined) reasons.push(reason)
      break
    }
    case "gemini": {
      id = string(json["responseId"])
      model = string(json["modelVersion"])
      const candidates = json["candidates"]
      if (Array.isArray(candidates)) {
        for (const candidate of candidates) {
          const reason = isRecord(candidate) ? string(candidate["finishReason"]) : undefined
          if (reason !== undefined) reasons.push(reason)
        }
      }
      break
    }
  }
  if (id !== undefined) span.attribute("gen_ai.response.id", id)
  if (model !== undefined) span.attribute("gen_ai.response.model", model)
  if (reasons.length > 0) span.attribute("gen_ai.response.finish_reasons", reasons)
}

/**
 * A stream relayed as the upstream wrote it: its id and model, from its
 * first event (`opening`: the bytes read before the client got anything),
 * read in `dialect`'s shape (OpenAI's first chunk, Anthropic's
 * `message_start`, Responses' `response.created`, Gemini's first chunk).
 *
 * @category server span
 */
export const streamOpening = (trace: Trace, dialect: Domain.Dialect, opening: Uint8Array): void => {
  if (trace === undefined || !trace.span.sampled) return
  const text = new TextDecoder().decode(opening)
  let json: unknown
  for (const line of text.split("\n")) {
    if (!line.startsWith("data:")) continue
    try {
      json = JSON.parse(line.slice(5))
    } catch {
      return
    }
    break
  }
  if (!isRecord(json)) return
  // Anthropic and Responses wrap the answer's head in their first event.
  const head = dialect === "anthropic" ? json["message"] : dialect === "responses" ? json["response"] : json
  if (!isRecord(head)) return
  const id = string(dialect === "gemini" ? head["responseId"] : head["id"])
  const model = string(dialect === "gemini" ? head["modelVersion"] : head["model"])
  if (id !== undefined) trace.span.attribute("gen_ai.response.id", id)
  if (model !== undefined) trace.span.attribute("gen_ai.response.model", model)
}

/**
 * A stream relayed as the upstream wrote it, read for its finish reasons as
 * its events go out (`scan` each forwarded text: whole events), written on
 * the server span by `end`: OpenAI's `finish_reason` of each choice,
 * Anthropic's `stop_reason` (its `message_delta`), Gemini's `finishReason` of
 * each candidate, and the Responses API's final event (`completed`,
 * `failed`, or an incomplete answer's reason), as a non-stream answer's are
 * read (`responseJson`). A match is a key followed by a string: the same
 * text inside a string is escaped, so never taken for one. Undefined (nothing
 * to scan) when the call is not sampled.
 *
 * @category server span
 */
export const streamReasons = (trace: Trace, dialect: Domain.Dialect): StreamReasons | undefined =>
  trace === undefined || !trace.span.sampled ? undefined : new StreamReasons(trace, dialect)

/** The most finish reasons a stream's span records (one per choice). @category server span */
export const MAX_REASONS = 16

const REASON_KEYS: Record<Domain.Dialect, RegExp> = {
  openai: /"finish_reason"\s*:\s*"([^"\\]*)"/g,
  anthropic: /"stop_reason"\s*:\s*"([^"\\]*)"/g,
  gemini: /"finishReason"\s*:\s*"([^"\\]*)"/g,
  responses: /"type"\s*:\s*"response\.(completed|incomplete|failed)"/g
}

const INCOMPLETE_REASON = /"incomplete_details"\s*:\s*\{\s*"reason"\s*:\s*"([^"\\]*)"/

/** The finish reasons of a relayed stream, read as it goes out (`streamReasons`). @category server span */
export class StreamReasons {
  private readonly trace: Telemetry.CallTrace
  private readonly pattern: RegExp
  private readonly responses: boolean
  private readonly reasons: Array<string> = []

  constructor(trace: Telemetry.CallTrace, dialect: Domain.Dialect) {
    this.trace = trace
    this.pattern = REASON_KEYS[dialect]
    this.responses = dialect === "responses"
  }

  /** Reads forwarded text (whole events) for finish reasons. */
  scan(text: string): void {
    const pattern = this.pattern
    pattern.lastIndex = 0
    for (let found = pattern.exec(text); found !== null; found = pattern.exec(text)) {
      if (this.reasons.length >= MAX_REASONS) return
      let reason = found[1]!
      if (this.responses && reason === "incomplete") {
        reason = INCOMPLETE_REASON.exec(text.slice(found.index))?.[1] ?? reason
      }
      this.reasons.push(reason)
    }
  }

  /** The stream ended: its finish reasons on the server span (none read: nothing recorded). */
  end(): void {
    if (this.reasons.length > 0) this.trace.span.attribute("gen_ai.response.finish_reasons", this.reasons)
  }
}

/**
 * The answer decoded to the canonical model (a translated call, or a stream
 * assembled from its events): its id, model and finish reasons. An answer
 * that names no model (Bedrock's Converse) was made by the model the channel
 * was asked for, `asked`.
 *
 * @category server span
 */
export const response = (trace: Trace, answer: Canonical.ChatResponse, asked: string): void => {
  if (trace === undefined || !trace.span.sampled) return
  const span = trace.span
  if (answer.id !== "") span.attribute("gen_ai.response.id", answer.id)
  span.attribute("gen_ai.response.model", answer.model !== "" ? answer.model : asked)
  const reasons: Array<string> = []
  for (const choice of answer.choices) if (choice.finishReason !== null) reasons.push(choice.finishReason)
  if (reasons.length > 0) span.attribute("gen_ai.response.finish_reasons", reasons)
}

/**
 * The call's usage record was written: its tokens
 * (`gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens`, and the cache's),
 * cost in USD, attempts, channel, time to first byte, and its error code.
 *
 * @category server span
 */
export const settled = (trace: Trace, record: UsageLog.UsageRecord): void => {
  if (trace === undefined || !trace.span.sampled) return
  const span = trace.span
  span.attribute("gen_ai.usage.input_tokens", record.promptTokens)
  span.attribute("gen_ai.usage.output_tokens", record.completionTokens)
  if (record.cachedTokens > 0) span.attribute("gen_ai.usage.cache_read.input_tokens", record.cachedTokens)
  if ((record.cacheWriteTokens ?? 0) > 0) {
    span.attribute("gen_ai.usage.cache_creation.input_tokens", record.cacheWriteTokens)
  }
  if ((record.reasoningTokens ?? 0) > 0) span.attribute("modelgate.usage.reasoning_tokens", record.reasoningTokens)
  span.attribute("modelgate.usage.reported", record.usageReported)
  span.attribute("modelgate.cost_usd", Number(record.costNanos) / 1e9)
  span.attribute("modelgate.attempts", record.attempts)
  if (record.channel !== "") span.attribute("modelgate.channel", record.channel)
  if (record.upstreamModel !== record.model) span.attribute("modelgate.upstream_model", record.upstreamModel)
  if (record.ttfbMs !== null) span.attribute("modelgate.ttfb_ms", record.ttfbMs)
  if (record.errorCode !== null) span.attribute("modelgate.error_code", record.errorCode)
}

// ---------------------------------------------------------------------------------------------------------------------
// Attempts

const addresses = new WeakMap<Domain.Channel, { readonly host: string; readonly port: number }>()

/** A channel's `server.address` and `server.port`, from its base URL (read once per channel). */
const addressOf = (channel: Domain.Channel): { readonly host: string; readonly port: number } | undefined => {
  let address = addresses.get(channel)
  if (address === undefined) {
    try {
      const url = new URL(channel.baseUrl)
      address = {
        host: url.hostname.replace(/^\[|\]$/g, ""),
        port: url.port !== "" ? Number(url.port) : url.protocol === "http:" ? 80 : 443
      }
    } catch {
      return undefined
    }
    addresses.set(channel, address)
  }
  return address
}

/**
 * The client span of one upstream attempt, a child of the call's server span,
 * named as the conventions name an inference call (`chat gpt-4o-mini`, the
 * model as the channel knows it): `gen_ai.operation.name`,
 * `gen_ai.provider.name`, `gen_ai.request.model`, `server.address`,
 * `server.port`, the channel and the attempt's number. The caller ends it
 * (`attemptEnded`). Undefined when the call is not traced.
 *
 * @category attempts
 */
export const attempt = (
  trace: Trace,
  operation: string,
  channel: Domain.Channel,
  upstreamModel: string,
  number: number
): Tracer.Span | undefined => {
  const span = Telemetry.child(trace, `${operation} ${upstreamModel}`, { kind: "client" })
  if (span === undefined || !span.sampled) return span
  const provider = providerName(channel.type)
  span.attribute("gen_ai.operation.name", operation)
  span.attribute("gen_ai.provider.name", provider)
  span.attribute("gen_ai.system", provider)
  span.attribute("gen_ai.request.model", upstreamModel)
  const address = addressOf(channel)
  if (address !== undefined) {
    span.attribute("server.address", address.host)
    span.attribute("server.port", address.port)
  }
  span.attribute("modelgate.channel", channel.name)
  span.attribute("modelgate.attempt", number)
  return span
}

/**
 * Ends an attempt's span: `http.response.status_code` when the upstream
 * answered, and, when it failed, `error.type` (the gateway's error code) and
 * the error (redacted of the channel's secrets by then) as its exception.
 *
 * @category attempts
 */
export const attemptEnded = (
  trace: Trace,
  span: Tracer.Span | undefined,
  status: number | null,
  error: GatewayError.GatewayError | undefined
): void => {
  if (trace === undefined || span === undefined) return
  if (status !== null) span.attribute("http.response.status_code", status)
  if (error !== undefined) span.attribute("error.type", error._tag)
  span.end(trace.now(), error === undefined ? Exit.void : Exit.fail(error))
}

/**
 * Ends an attempt's span that was interrupted (the client went away, the
 * shutdown's grace period ended).
 *
 * @category attempts
 */
export const attemptInterrupted = (trace: Trace, span: Tracer.Span | undefined): void => {
  if (trace === undefined || span === undefined) return
  span.end(trace.now(), Exit.interrupt())
}

// ---------------------------------------------------------------------------------------------------------------------
// Content (only when the operator turns it on)

/** The most characters of one text part exported. @category content */
export const MAX_PART_CHARS = 4_096

/** The most messages of a prompt exported (the last ones, where the question is). @category content */
export const MAX_MESSAGES = 32

const cut = (text: string): string =>
  text.length <= MAX_PART_CHARS ? text : `${text.slice(0, MAX_PART_CHARS)}… [${text.length - MAX_PART_CHARS} more]`

/** A canonical part as the conventions' message part; media as its kind and type only, never its data. */
const partOf = (part: Canonical.Part): Record<string, unknown> => {
  switch (part.type) {
    case "text":
      return { type: "text", content: cut(part.text) }
    case "thinking":
      return { type: "reasoning", content: cut(part.text) }
    case "tool_call":
      return { type: "tool_call", id: part.id, name: part.name, arguments: cut(part.arguments) }
    case "tool_result":
      return { type: "tool_call_response", id: part.callId, response: cut(part.content) }
    case "image":
      return { type: part.url !== undefined && !part.url.startsWith("data:") ? "uri" : "blob", modality: "image" }
    case "file":
      return { type: part.uri !== undefined ? "uri" : "blob", modality: "file", mime_type: part.mediaType }
  }
}

/**
 * Whether the call's content is to be exported: the operator turned it on
 * and the call is sampled.
 *
 * @category content
 */
export const capturing = (trace: Trace): trace is Telemetry.CallTrace =>
  trace !== undefined && trace.captureContent && trace.span.sampled

/**
 * The prompt and the answer, as the conventions' event
 * `gen_ai.client.inference.operation.details` on the server span:
 * `gen_ai.system_instructions`, `gen_ai.input.messages` and
 * `gen_ai.output.messages` as JSON in the conventions' message shape, each
 * text cut at `MAX_PART_CHARS`, the prompt's last `MAX_MESSAGES` messages,
 * media by kind only; the answer is redacted of the channel's secrets. Only
 * when `capturing`.
 *
 * @category content
 */
export const content = (
  trace: Trace,
  channel: Domain.Channel | undefined,
  prompt: Canonical.ChatRequest | undefined,
  answer: Canonical.ChatResponse | undefined
): void => {
  if (!capturing(trace)) return
  const attributes: Record<string, unknown> = {}
  if (prompt !== undefined) {
    if (prompt.system !== undefined && prompt.system.length > 0) {
      attributes["gen_ai.system_instructions"] = JSON.stringify(
        prompt.system.map((text) => ({ type: "text", content: cut(text) }))
      )
    }
    attributes["gen_ai.input.messages"] = JSON.stringify(
      prompt.messages.slice(-MAX_MESSAGES).map((message) => ({
        role: message.role,
        parts: message.content.map(partOf)
      }))
    )
  }
  if (answer !== undefined) {
    const output = JSON.stringify(answer.choices.map((choice) => ({
      role: "assistant",
      parts: choice.content.map(partOf),
      finish_reason: choice.finishReason ?? "error"
    })))
    attributes["gen_ai.output.messages"] = channel === undefined ? output : Redaction.text(channel, output)
  }
  trace.span.event("gen_ai.client.inference.operation.details", trace.now(), attributes)
}
