/**
 * Talking to upstream channels through the host's `Transport`: the deadlines
 * of an attempt (docs/routing.md), sending, reading answers, and wording a
 * transport's failures as the gateway's errors, named after the channel.
 *
 * - `connectMs`: opening the connection (the transport's connection pool);
 * - `firstByteMs`: from sending the request to the response headers and, for
 *   streams, the first event of the body (`send`, `opening`);
 * - `idleMs`: the longest gap between two chunks of a body, stream or not;
 * - `totalMs`: the whole call, measured from its start (`Deadlines.total`).
 *
 * @since 0.1.0
 */
import { Dialect, type Domain, GatewayError, Utf8 } from "@modelgate/core"
import { Context, Effect, Tracer } from "effect"
import * as Redaction from "../telemetry/Redaction.ts"
import * as Telemetry from "../telemetry/Telemetry.ts"
import * as CloudAuth from "./CloudAuth.ts"
import { type Deadlines, type ResponseBody, Transport, TransportError, type TransportResponse } from "./Transport.ts"

export type { Deadlines } from "./Transport.ts"

/**
 * The deadlines of an attempt on `channel` that starts at `attemptStart`, in a
 * call that started at `callStart`.
 *
 * @category timeouts
 */
export const deadlines = (channel: Domain.Channel, attemptStart: number, callStart: number): Deadlines => ({
  firstByte: attemptStart + channel.timeouts.firstByteMs,
  total: callStart + channel.timeouts.totalMs
})

/** The error of a missed total deadline. @category timeouts */
export const totalTimeout = (channel: Domain.Channel): GatewayError.UpstreamTimeout =>
  new GatewayError.UpstreamTimeout({
    message: `The upstream '${channel.name}' did not finish the answer within ${channel.timeouts.totalMs} ms.`
  })

/** The error of a missed idle deadline. @category timeouts */
export const idleTimeout = (channel: Domain.Channel): GatewayError.UpstreamTimeout =>
  new GatewayError.UpstreamTimeout({
    message:
      `The upstream '${channel.name}' sent nothing for ${channel.timeouts.idleMs} ms in the middle of the answer.`
  })

const firstByteTimeout = (channel: Domain.Channel): GatewayError.UpstreamTimeout =>
  new GatewayError.UpstreamTimeout({
    message: `The upstream '${channel.name}' did not answer within ${channel.timeouts.firstByteMs} ms.`
  })

/**
 * The gateway error for a transport failure of a call on `channel`: one of
 * its timeouts (connect, first byte, idle, total), the upstream being
 * unreachable (before the headers), breaking off or sending nothing, or
 * answering with more than the gateway reads.
 *
 * @category errors
 */
export const transportError = (
  channel: Domain.Channel,
  error: TransportError
): GatewayError.UpstreamTimeout | GatewayError.UpstreamUnavailable => {
  switch (error.kind) {
    case "total-timeout":
      return totalTimeout(channel)
    case "first-byte-timeout":
      return firstByteTimeout(channel)
    case "idle-timeout":
      return idleTimeout(channel)
    case "connect-timeout":
      return new GatewayError.UpstreamTimeout({
        message: `The upstream '${channel.name}' did not accept a connection within ${channel.timeouts.connectMs} ms.`
      })
    case "unreachable":
      return new GatewayError.UpstreamUnavailable({
        message: `The upstream '${channel.name}' could not be reached (${error.detail ?? "transport error"}).`
      })
    case "broken":
      return new GatewayError.UpstreamUnavailable({ message: `The upstream '${channel.name}' broke off the answer.` })
    case "empty":
      return new GatewayError.UpstreamUnavailable({
        message: `The upstream '${channel.name}' ended the answer before sending anything.`
      })
    case "too-large":
      return new GatewayError.UpstreamUnavailable({
        message: `The upstream '${channel.name}' answered with more than this gateway reads${
          error.detail === undefined ? "" : ` (${error.detail})`
        }.`
      })
  }
}

/** An upstream's answer with the channel it came from (errors name it). @category models */
export interface UpstreamResponse extends TransportResponse {
  readonly channel: Domain.Channel
}

/**
 * The headers of an upstream request with the W3C trace context of the span
 * it is sent under (a traced call's attempt span, `CallSpans.attempt`):
 * `traceparent` naming that span, and the caller's `tracestate`, so a
 * provider or proxy that traces joins the call's trace. The headers as they
 * are when nothing traces the request (tracing off, a health probe).
 *
 * @category sending
 */
export const withTraceContext = (
  headers: Readonly<Record<string, string>>,
  context: Context.Context<never>
): Readonly<Record<string, string>> => {
  const span = Context.getOrUndefined(context, Tracer.ParentSpan)
  return span === undefined ? headers : { ...headers, ...Telemetry.propagation(span) }
}

/**
 * Sends a request upstream and returns the answer once its headers arrive
 * (the status is not judged here), with the trace context of the attempt's
 * span when it is traced (`withTraceContext`). The answer's headers stay as
 * the transport made them: read when something reads them (an error's
 * classification, a stream's content type), not copied on every call.
 *
 * @category sending
 */
export const send = (
  channel: Domain.Channel,
  url: string,
  headers: Readonly<Record<string, string>>,
  body: string | Uint8Array | undefined,
  at: Deadlines,
  method: "GET" | "POST" = "POST",
  key?: string
): Effect.Effect<UpstreamResponse, GatewayError.GatewayError, Transport> =>
  Effect.contextWith((context: Context.Context<Transport>) => {
    const transport = Context.get(context, Transport)
    // Traced: the attempt's trace context goes with the request (and under a cloud's signature).
    const traced = withTraceContext(headers, context)
    if (CloudAuth.isCloud(channel)) return cloudSend(transport, channel, url, traced, body, at, method, key)
    return Effect.mapBothEager(transport.send({ channel, method, url, headers: traced, body, deadlines: at }), {
      onFailure: (error) => transportError(channel, error),
      onSuccess: (response) => upstreamOf(response, channel)
    })
  })

/**
 * The transport's answer as the upstream's, its headers read through (the transport may make them when first
 * read). A class: its getter is on the prototype, where an object literal's would be made for every answer.
 */
class Answered implements UpstreamResponse {
  readonly status: number
  readonly body: ResponseBody
  readonly channel: Domain.Channel
  readonly #response: TransportResponse
  constructor(response: TransportResponse, channel: Domain.Channel) {
    this.status = response.status
    this.body = response.body
    this.channel = channel
    this.#response = response
  }
  get headers(): Readonly<Record<string, string>> {
    return this.#response.headers
  }
}

const upstreamOf = (response: TransportResponse, channel: Domain.Channel): UpstreamResponse =>
  new Answered(response, channel)

/** `send` to a cloud channel: its credentials go on last, over the request as it is sent (`CloudAuth`). */
const cloudSend = Effect.fnUntraced(function*(
  transport: Transport["Service"],
  channel: Domain.Channel,
  url: string,
  traced: Readonly<Record<string, string>>,
  body: string | Uint8Array | undefined,
  at: Deadlines,
  method: "GET" | "POST",
  key: string | undefined
) {
  const sendWith = (sent: Readonly<Record<string, string>>) =>
    Effect.mapError(
      transport.send({ channel, method, url, headers: sent, body, deadlines: at }),
      (error) => transportError(channel, error)
    )
  const outgoing = { method, url, headers: traced, body }
  const keyText = key ?? channel.apiKeys[0] ?? ""
  const authorized = yield* Effect.mapError(
    CloudAuth.authorize(transport, channel, keyText, outgoing, at),
    (error) => Redaction.error(channel, error)
  )
  let response: TransportResponse = yield* sendWith(authorized.headers)
  if (CloudAuth.mayRefuseToken(authorized, response.status)) {
    const text = yield* response.body.prefix(ERROR_BODY_LIMIT)
    // Vertex refused the access token (expired early, revoked): once more with a new one.
    if (yield* CloudAuth.refusedToken(authorized, response.status, text)) {
      const again = yield* Effect.mapError(
        CloudAuth.authorize(transport, channel, keyText, outgoing, at),
        (error) => Redaction.error(channel, error)
      )
      response = yield* sendWith(again.headers)
    } else response = { ...response, body: textBody(text) }
  }
  return upstreamOf(response, channel)
})

/** A body already read (as text), read again through the `ResponseBody` interface. */
const textBody = (text: string): ResponseBody => {
  let bytes: Uint8Array | undefined = Utf8.encode(text)
  return {
    text: (maxBytes) =>
      Utf8.encode(text).length > maxBytes
        ? Effect.fail(new TransportError({ kind: "too-large" }))
        : Effect.succeed(text),
    prefix: () => Effect.succeed(text),
    next: Effect.sync(() => {
      const out = bytes
      bytes = undefined
      return out
    }),
    flow: (sink) => {
      let done = false
      const pump = () => {
        if (done) return
        done = true
        if (bytes !== undefined && bytes.length > 0) sink.chunk(bytes)
        bytes = undefined
        sink.end()
      }
      return { resume: pump, pause: () => {}, cancel: () => (done = true) }
    },
    discard: () => {
      bytes = undefined
    }
  }
}

/**
 * Reads a whole (non-stream) body as text, at most `maxBytes` of it; the
 * transport fails it when the upstream pauses longer than `idleMs` between
 * chunks or the call's total deadline passes.
 *
 * @category reading
 */
export const readText = (
  response: UpstreamResponse,
  maxBytes: number
): Effect.Effect<string, GatewayError.UpstreamUnavailable | GatewayError.UpstreamTimeout> =>
  Effect.mapError(response.body.text(maxBytes), (error) => transportError(response.channel, error))

/** What a stream opened with: its bytes, and whether the body ended there. @category models */
export interface StreamOpening {
  readonly bytes: Uint8Array
  readonly ended: boolean
}

/** Content types that are not a stream, whatever the body holds (an error page, a JSON error or answer). */
const NOT_A_STREAM = /^\s*(?:text\/html|application\/(?:[\w.+-]*\+)?json)\b/i

const concat = (chunks: ReadonlyArray<Uint8Array>, bytes: number): Uint8Array => {
  if (chunks.length === 1) return chunks[0]!
  const out = new Uint8Array(bytes)
  let at = 0
  for (const chunk of chunks) {
    out.set(chunk, at)
    at += chunk.byteLength
  }
  return out
}

/** Bytes of an opening's chunk decoded and judged at a time. */
const OPENING_WINDOW = 4096

/**
 * A stream's opening, read before anything is sent to the client (so a
 * stream that stalls, breaks, ends, or opens with something that is not an
 * answer can still fail over): chunks within the first-byte (or total)
 * deadline until the channel's dialect has judged its first event
 * (`UpstreamDialect.opening`), at most `maxBytes`. A content type that is
 * not a stream (`text/html`, JSON), an opening the dialect refuses (an error
 * event, broken JSON, nothing), and more than `maxBytes` without a first
 * event all fail it with `UpstreamUnavailable`.
 *
 * @category reading
 */
export const opening = Effect.fnUntraced(function*(
  response: UpstreamResponse,
  upstream: Dialect.UpstreamDialect,
  maxBytes: number
) {
  const channel = response.channel
  const type = response.headers["content-type"] ?? ""
  if (upstream.binaryStream !== undefined) return yield* binaryOpening(response, upstream.binaryStream, maxBytes)
  if (NOT_A_STREAM.test(type)) {
    const text = yield* errorBody(response)
    return yield* new GatewayError.UpstreamUnavailable({
      message: `The upstream '${channel.name}' answered a stream request with ${
        type.split(";")[0]!.trim()
      } instead of an event stream: ${upstreamMessage(text)}`
    })
  }
  const decoder = new TextDecoder()
  const chunks: Array<Uint8Array> = []
  let bytes = 0
  let text = ""
  for (;;) {
    const chunk = yield* Effect.mapError(response.body.next, (error) => transportError(channel, error))
    const ended = chunk === undefined
    let verdict: Dialect.Opening
    if (chunk !== undefined) {
      chunks.push(chunk)
      bytes += chunk.byteLength
      // Judged a window at a time (as if the chunk had come in pieces, which the dialect's judgement allows):
      // a fast upstream's whole stream read at once is decoded only as far as its first event.
      let from = 0
      do {
        const to = Math.min(chunk.byteLength, from + OPENING_WINDOW)
        text += decoder.decode(from === 0 && to === chunk.byteLength ? chunk : chunk.subarray(from, to), {
          stream: true
        })
        from = to
        verdict = upstream.opening(text, false, channel.name)
      } while (verdict === "incomplete" && from < chunk.byteLength)
    } else if (bytes === 0) {
      return yield* transportError(channel, new TransportError({ kind: "empty" }))
    } else {
      verdict = upstream.opening(text, true, channel.name)
    }
    if (verdict === "answer") {
      const opened: StreamOpening = { bytes: concat(chunks, bytes), ended }
      return opened
    }
    if (verdict !== "incomplete" || ended) {
      response.body.discard()
      return yield* Redaction.error(channel, verdict === "incomplete" ? Dialect.emptyStream(channel.name) : verdict)
    }
    if (bytes > maxBytes) {
      response.body.discard()
      return yield* new GatewayError.UpstreamUnavailable({
        message:
          `The upstream '${channel.name}' sent more than ${maxBytes} bytes (max_event_bytes) without a complete first event.`
      })
    }
  }
})

/**
 * `opening` for an upstream whose streams are binary frames (Bedrock's event
 * stream): a content type other than the stream's is not a stream (AWS
 * answers an error before the stream as JSON), and the dialect judges the
 * bytes, not text.
 */
const binaryOpening = Effect.fnUntraced(function*(
  response: UpstreamResponse,
  binary: Dialect.BinaryStream,
  maxBytes: number
) {
  const channel = response.channel
  const type = response.headers["content-type"] ?? ""
  if (!type.toLowerCase().startsWith(binary.contentType)) {
    const text = yield* errorBody(response)
    return yield* new GatewayError.UpstreamUnavailable({
      message: `The upstream '${channel.name}' answered a stream request with ${
        type.split(";")[0]!.trim() || "no content type"
      } instead of ${binary.contentType}: ${upstreamMessage(text)}`
    })
  }
  const chunks: Array<Uint8Array> = []
  let bytes = 0
  for (;;) {
    const chunk = yield* Effect.mapError(response.body.next, (error) => transportError(channel, error))
    const ended = chunk === undefined
    if (chunk !== undefined) {
      chunks.push(chunk)
      bytes += chunk.byteLength
    } else if (bytes === 0) {
      return yield* transportError(channel, new TransportError({ kind: "empty" }))
    }
    const all = concat(chunks, bytes)
    chunks.length = 0
    chunks.push(all)
    const verdict = binary.opening(all, ended, channel.name, maxBytes)
    if (verdict === "answer") {
      const opened: StreamOpening = { bytes: all, ended }
      return opened
    }
    if (verdict !== "incomplete" || ended) {
      response.body.discard()
      return yield* Redaction.error(channel, verdict === "incomplete" ? Dialect.emptyStream(channel.name) : verdict)
    }
    if (bytes > maxBytes) {
      response.body.discard()
      return yield* new GatewayError.UpstreamUnavailable({
        message:
          `The upstream '${channel.name}' sent more than ${maxBytes} bytes (max_event_bytes) without a complete first event.`
      })
    }
  }
})

/** How much of an error answer is read: upstream error bodies are small; a huge one is cut. @category constants */
export const ERROR_BODY_LIMIT = 64 * 1024

/**
 * Reads at most `ERROR_BODY_LIMIT` bytes of an error body as text (the rest is
 * never read), with the channel's secrets redacted (`Redaction`): an upstream
 * may quote the credentials it was sent. A body that breaks or stalls yields
 * what was read.
 *
 * @category reading
 */
export const errorBody = (response: UpstreamResponse): Effect.Effect<string> =>
  Effect.map(response.body.prefix(ERROR_BODY_LIMIT), (text) => Redaction.text(response.channel, text))

/**
 * The upstream's own error message from an error body (`error.message` in
 * every dialect's envelope, else the body's first line), for operators: the
 * reason a key was disabled, the console's Test result. Never sent to callers.
 *
 * @category reading
 */
export const upstreamMessage = (body: string): string => {
  let message: unknown
  try {
    const json = JSON.parse(body) as unknown
    const error = typeof json === "object" && json !== null ? (json as Record<string, unknown>).error : undefined
    message = typeof error === "object" && error !== null
      ? (error as Record<string, unknown>).message
      : typeof error === "string"
      ? error
      : typeof json === "object" && json !== null
      ? (json as Record<string, unknown>).message
      : undefined
  } catch {
    message = undefined
  }
  const text = (typeof message === "string" && message.trim() !== "" ? message : body).trim().split("\n")[0] ?? ""
  return text.length > 300 ? `${text.slice(0, 300)}…` : text === "" ? "(no message)" : text
}
