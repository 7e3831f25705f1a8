/**
 * Talking to upstream channels: where a call goes (URL and auth headers per
 * channel type), sending it, and reading the answer within the channel's
 * timeouts (docs/routing.md):
 *
 * - `connectMs`: opening the connection (TCP and TLS), enforced by the HTTP
 *   client's connection pool (one pool per distinct value, `UpstreamClients`);
 * - `firstByteMs`: from sending the request to the response headers and, for
 *   streams, the first chunk of the body (`send`, `firstChunk`);
 * - `idleMs`: the longest gap between two chunks of a body, stream or not;
 * - `totalMs`: the whole call, measured from its start (`Deadlines.total`).
 *
 * Calls go straight to Undici (one connection pool per `connectMs`), and the
 * deadlines are kept by the connection itself (Undici's header and body
 * timers, and one timer for the total; see `send`), not by racing fibers: a
 * race per call and a timer fiber per chunk cost more CPU than the rest of
 * relaying a call. `transportError` turns Undici's failures into the gateway's
 * timeouts and unavailability.
 *
 * Nothing is buffered here beyond what a non-stream answer needs.
 *
 * @since 0.1.0
 */
import { Agent, type Dispatcher } from "@effect/platform-node/Undici"
import { Domain, GatewayError } from "@modelgate/core"
import { Clock, Context, Effect, Layer } from "effect"

const trimSlash = (url: string) => url.endsWith("/") ? url.slice(0, -1) : url

/**
 * A delay for a timer: at least 1 ms, and at most the longest a Node timer
 * can wait (about 24.8 days), since a longer one fires at once instead.
 */
const timerMs = (ms: number): number => Math.min(2_147_483_647, Math.max(1, ms))

/** The abort reason of a call whose total deadline passed. @category timeouts */
export class TotalDeadlinePassed extends Error {
  readonly code = "MODELGATE_TOTAL_DEADLINE"
  constructor() {
    super("the call's total deadline passed")
  }
}

/**
 * The connection pools upstream calls are sent through: one Undici agent per
 * distinct `connectMs`, so each channel's connect timeout is enforced where
 * connections are opened.
 *
 * @category services
 */
export class UpstreamClients extends Context.Service<UpstreamClients, {
  /** The connection pool for a channel (its connect timeout). */
  readonly agentFor: (channel: Domain.Channel) => Agent
}>()("modelgate/node-http/UpstreamClients") {
  /**
   * Undici agents created on first use and closed with the layer.
   *
   * @category layers
   */
  static readonly layer: Layer.Layer<UpstreamClients> = Layer.effect(
    UpstreamClients,
    Effect.gen(function*() {
      const agents = new Map<number, Agent>()
      yield* Effect.addFinalizer(() => Effect.promise(() => Promise.all([...agents.values()].map((agent) => agent.destroy()))))
      const agentFor = (channel: Domain.Channel): Agent => {
        const connectMs = channel.timeouts.connectMs
        let agent = agents.get(connectMs)
        if (agent === undefined) {
          agent = new Agent({ connect: { timeout: timerMs(connectMs) }, keepAliveTimeout: 60_000 })
          agents.set(connectMs, agent)
        }
        return agent
      }
      return UpstreamClients.of({ agentFor })
    })
  )
}

/**
 * An upstream's answer: its status and headers, and its body, not read yet
 * (`readText`, `errorBody`, `firstChunk`), with the channel and deadlines of
 * the call that got it (the body keeps the idle and total deadlines while it
 * is read; a missed one is named after the channel).
 *
 * @category models
 */
export class UpstreamResponse {
  readonly channel: Domain.Channel
  readonly at: Deadlines
  readonly data: Dispatcher.ResponseData
  constructor(channel: Domain.Channel, at: Deadlines, data: Dispatcher.ResponseData) {
    this.channel = channel
    this.at = at
    this.data = data
  }
  get status(): number {
    return this.data.statusCode
  }
  /** The headers (a header sent several times has its values joined by ", "). */
  get headers(): Record<string, string> {
    const out: Record<string, string> = {}
    for (const name in this.data.headers) {
      const value = this.data.headers[name]
      if (value !== undefined) out[name] = Array.isArray(value) ? value.join(", ") : value
    }
    return out
  }
  /** The body, as Undici's readable. */
  get body(): Dispatcher.ResponseData["body"] {
    return this.data.body
  }
}

/** Auth and extra headers for a channel. @category targets */
export const channelHeaders = (channel: Domain.Channel, apiKey: string): Record<string, string> => {
  const headers: Record<string, string> = { "content-type": "application/json", ...channel.headers }
  switch (channel.type) {
    case "openai":
      headers["authorization"] = `Bearer ${apiKey}`
      break
    case "azure":
      headers["api-key"] = apiKey
      break
    case "gemini":
      headers["x-goog-api-key"] = apiKey
      break
    case "anthropic":
      headers["x-api-key"] = apiKey
      // Header names are case-insensitive: a channel's `Anthropic-Version` is its version.
      if (!Object.keys(channel.headers).some((name) => name.toLowerCase() === "anthropic-version")) {
        headers["anthropic-version"] = "2023-06-01"
      }
      break
  }
  return headers
}

/**
 * The chat endpoint of a channel for an upstream model name.
 *
 * @category targets
 */
export const chatUrl = (channel: Domain.Channel, upstreamModel: string, stream: boolean): string => {
  const base = trimSlash(channel.baseUrl)
  switch (channel.type) {
    case "openai":
      return `${base}/chat/completions`
    case "azure":
      return `${base}/openai/deployments/${encodeURIComponent(upstreamModel)}/chat/completions?api-version=${
        encodeURIComponent(channel.apiVersion ?? Domain.DEFAULT_AZURE_API_VERSION)
      }`
    case "gemini":
      return `${base}/v1beta/models/${encodeURIComponent(upstreamModel)}:${stream ? "streamGenerateContent?alt=sse" : "generateContent"}`
    case "anthropic":
      return `${base}/v1/messages`
  }
}

/** The Gemini method URL of a channel (`countTokens`, `embedContent`, ...). @category targets */
export const geminiMethodUrl = (channel: Domain.Channel, upstreamModel: string, method: string, query = ""): string =>
  `${trimSlash(channel.baseUrl)}/v1beta/models/${encodeURIComponent(upstreamModel)}:${method}${query}`

/**
 * When an attempt must have its first byte, and when the whole call must be
 * over (epoch ms).
 *
 * @category timeouts
 */
export interface Deadlines {
  readonly firstByte: number
  readonly total: number
}

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
    message: `The upstream '${channel.name}' sent nothing for ${channel.timeouts.idleMs} ms in the middle of the answer.`
  })

const firstByteTimeout = (channel: Domain.Channel): GatewayError.UpstreamTimeout =>
  new GatewayError.UpstreamTimeout({
    message: `The upstream '${channel.name}' did not answer within ${channel.timeouts.firstByteMs} ms.`
  })

/** The code of the failure behind a transport error (Undici's, or `TotalDeadlinePassed`'s). */
const transportCode = (error: unknown): string | undefined => {
  let cause: unknown = error
  for (let depth = 0; depth < 5 && typeof cause === "object" && cause !== null; depth++) {
    const code = (cause as { readonly code?: unknown }).code
    if (typeof code === "string") return code
    cause = (cause as { readonly cause?: unknown }).cause
  }
  return undefined
}

/**
 * The gateway error for a transport failure of a call on `channel`: one of
 * its timeouts (connect, first byte, idle, total), or the upstream being
 * unreachable (before the headers) or breaking off its answer (after them).
 *
 * @category timeouts
 */
export const transportError = (
  channel: Domain.Channel,
  at: Deadlines,
  error: unknown,
  phase: "send" | "body"
): GatewayError.UpstreamTimeout | GatewayError.UpstreamUnavailable => {
  const code = transportCode(error)
  switch (code) {
    case "MODELGATE_TOTAL_DEADLINE":
      return totalTimeout(channel)
    case "UND_ERR_HEADERS_TIMEOUT":
      return at.total <= at.firstByte ? totalTimeout(channel) : firstByteTimeout(channel)
    case "UND_ERR_BODY_TIMEOUT":
      return idleTimeout(channel)
    case "UND_ERR_CONNECT_TIMEOUT":
      return new GatewayError.UpstreamTimeout({
        message: `The upstream '${channel.name}' did not accept a connection within ${channel.timeouts.connectMs} ms.`
      })
    default:
      return phase === "send"
        ? new GatewayError.UpstreamUnavailable({
          message: `The upstream '${channel.name}' could not be reached (${code ?? "transport error"}).`
        })
        : new GatewayError.UpstreamUnavailable({ message: `The upstream '${channel.name}' broke off the answer.` })
  }
}

/**
 * Sends a JSON body upstream and returns the response once its headers
 * arrive. The deadlines are kept by the connection itself, not by racing
 * fibers (a race per call and a timer per chunk cost more CPU than the rest of
 * relaying a call): Undici's header timer (the first-byte deadline), its body
 * timer (the idle gap between chunks) and one timer for the total, which
 * aborts the request or its body with `TotalDeadlinePassed` and is cleared when
 * the body closes. Interrupting the calling fiber aborts the request. A
 * connection that cannot be opened within `connectMs` and missed deadlines are
 * `UpstreamTimeout`; other transport failures `UpstreamUnavailable`. The status
 * is not judged here.
 *
 * @category sending
 */
export const send = Effect.fnUntraced(function*(
  channel: Domain.Channel,
  url: string,
  headers: Record<string, string>,
  body: string,
  deadlinesOf?: Deadlines
) {
  // Without deadlines (calls outside the chat flow) the attempt starts the call.
  const at = deadlinesOf ?? deadlines(channel, yield* Clock.currentTimeMillis, yield* Clock.currentTimeMillis)
  const agent = (yield* UpstreamClients).agentFor(channel)
  const target = new URL(url)
  const data = yield* Effect.tryPromise({
    try: (signal) => {
      const now = Date.now()
      const controller = new AbortController()
      const forward = () => controller.abort(signal.reason)
      signal.addEventListener("abort", forward, { once: true })
      const timer = setTimeout(() => controller.abort(new TotalDeadlinePassed()), timerMs(at.total - now))
      const done = () => {
        clearTimeout(timer)
        signal.removeEventListener("abort", forward)
      }
      return agent.request({
        origin: target.origin,
        path: target.pathname + target.search,
        method: "POST",
        headers,
        body,
        signal: controller.signal,
        headersTimeout: timerMs(Math.min(at.firstByte, at.total) - now),
        bodyTimeout: timerMs(channel.timeouts.idleMs)
      }).then(
        (response) => {
          response.body.once("close", done)
          return response
        },
        (error: unknown) => {
          done()
          throw error
        }
      )
    },
    catch: (error) => transportError(channel, at, error, "send")
  })
  return new UpstreamResponse(channel, at, data)
})

const ignore = () => {}

/**
 * Ends a body that will not be read further. Undici fails an unfinished body
 * it is asked to destroy with an `error` event (`RequestAbortedError`), which
 * would be an uncaught exception (and end the process) if nothing listened.
 */
const discard = (body: UpstreamResponse["body"]): void => {
  body.on("error", ignore)
  body.destroy()
}

/** Reads a body to its end, destroying it when the calling fiber is interrupted. */
const readAll = <A>(response: UpstreamResponse, read: () => Promise<A>) =>
  Effect.tryPromise({
    try: (signal) => {
      const body = response.body
      const stop = () => discard(body)
      signal.addEventListener("abort", stop, { once: true })
      return read().finally(() => signal.removeEventListener("abort", stop))
    },
    catch: (error) => transportError(response.channel, response.at, error, "body")
  })

/**
 * Reads a whole (non-stream) body as text; the connection fails it when the
 * upstream pauses longer than `idleMs` between chunks or the call's total
 * deadline passes.
 *
 * @category reading
 */
export const readText = (response: UpstreamResponse): Effect.Effect<string, GatewayError.UpstreamUnavailable | GatewayError.UpstreamTimeout> =>
  readAll(response, () => response.body.text())

/**
 * A stream's first chunk, read before anything is sent to the client (so a
 * stream that stalls, breaks or ends before its first byte can still fail
 * over), within the first-byte (or total) deadline. The body is left paused
 * after it, for the relay; `close` ends it at once (an attempt that failed
 * over), and an interruption of the calling fiber while waiting ends it too.
 *
 * @category reading
 */
export const firstChunk = (response: UpstreamResponse): Effect.Effect<
  { readonly first: Uint8Array; readonly body: UpstreamResponse["body"]; readonly close: Effect.Effect<void> },
  GatewayError.UpstreamUnavailable | GatewayError.UpstreamTimeout
> => {
  const { body, channel, at } = response
  const close = Effect.sync(() => discard(body))
  return Effect.callback<Uint8Array, GatewayError.UpstreamUnavailable | GatewayError.UpstreamTimeout>((resume) => {
    const deadline = firstDeadline(channel, at)
    let timer: ReturnType<typeof setTimeout> | undefined
    const cleanup = () => {
      if (timer !== undefined) clearTimeout(timer)
      body.off("readable", onReadable)
      body.off("end", onEnd)
      body.off("error", onError)
    }
    const onReadable = () => {
      const chunk = body.read() as Uint8Array | null
      if (chunk === null) return
      cleanup()
      resume(Effect.succeed(chunk))
    }
    const onEnd = () => {
      cleanup()
      resume(Effect.fail(
        new GatewayError.UpstreamUnavailable({ message: `The upstream '${channel.name}' ended the answer before sending anything.` })
      ))
    }
    const onError = (error: unknown) => {
      cleanup()
      resume(Effect.fail(transportError(channel, at, error, "body")))
    }
    timer = setTimeout(() => {
      cleanup()
      discard(body)
      resume(Effect.fail(deadline.error()))
    }, timerMs(deadline.at - Date.now()))
    body.on("readable", onReadable)
    body.once("end", onEnd)
    body.once("error", onError)
    onReadable()
    return Effect.sync(() => {
      cleanup()
      discard(body)
    })
  }).pipe(
    Effect.onError(() => close),
    Effect.map((first) => ({ first, body, close }))
  )
}

/** The earlier of the two deadlines, and the error for missing it. */
const firstDeadline = (channel: Domain.Channel, at: Deadlines) =>
  at.total < at.firstByte
    ? { at: at.total, error: () => totalTimeout(channel) }
    : { at: at.firstByte, error: () => firstByteTimeout(channel) }

/**
 * Reads at most `limit` bytes of an error body as text (upstream error bodies
 * are small; a huge one is cut, and the rest is never read: the body is
 * destroyed). A body that breaks or pauses longer than the channel's
 * `idleMs` yields what was read.
 *
 * @category reading
 */
export const errorBody = (response: UpstreamResponse, limit = 64 * 1024): Effect.Effect<string> =>
  readAll(response, async () => {
    const decoder = new TextDecoder()
    let text = ""
    let bytes = 0
    try {
      for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
        const take = Math.min(chunk.byteLength, limit - bytes)
        text += decoder.decode(take === chunk.byteLength ? chunk : chunk.subarray(0, take), { stream: true })
        bytes += take
        if (bytes >= limit) break
      }
    } catch {
      // A broken or stalled body: what was read is the message.
    } finally {
      discard(response.body)
    }
    return text + decoder.decode()
  }).pipe(Effect.orElseSucceed(() => ""))

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
