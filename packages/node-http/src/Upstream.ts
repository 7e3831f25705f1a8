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
 * The deadlines are kept by the connection pool itself (`DeadlineAgent`:
 * Undici's own header and body timers, and one timer for the total), not by
 * racing fibers: a race per call and a timer fiber per chunk cost more CPU
 * than the rest of relaying a call. Transport failures come back as
 * `HttpClientError`s whose cause names what happened; `transportError` turns
 * them into the gateway's timeouts and unavailability.
 *
 * Nothing is buffered here beyond what a non-stream answer needs.
 *
 * @since 0.1.0
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { Agent } from "@effect/platform-node/Undici"
import { Domain, GatewayError } from "@modelgate/core"
import { Cause, Clock, Context, Duration, Effect, Exit, Layer, Scope, Stream } from "effect"
import type { Dispatcher } from "@effect/platform-node/Undici"
import { HttpClient, HttpClientRequest, type HttpClientResponse } from "effect/http"

const trimSlash = (url: string) => url.endsWith("/") ? url.slice(0, -1) : url

/** The deadlines a request carries to its connection pool: epoch milliseconds, and the idle gap. */
interface PoolDeadlines {
  readonly firstByte: number
  readonly total: number
  readonly idleMs: number
}

/** Where a request's deadlines travel: an option Undici ignores, read and removed by `DeadlineAgent`. */
const DEADLINES = "modelgateDeadlines"

/** The abort reason of a call whose total deadline passed. @category timeouts */
export class TotalDeadlinePassed extends Error {
  readonly code = "MODELGATE_TOTAL_DEADLINE"
  constructor() {
    super("the call's total deadline passed")
  }
}

/**
 * An Undici agent that keeps a request's deadlines itself: the time to the
 * response headers (`headersTimeout`), the longest gap between body chunks
 * (`bodyTimeout`), and the whole call (one timer that aborts the request, or
 * its body, with `TotalDeadlinePassed`; cleared when the body closes).
 * Requests without deadlines are sent as they are.
 */
class DeadlineAgent extends Agent {
  override request(options: any, callback?: any): any {
    const deadlines: PoolDeadlines | undefined = options?.[DEADLINES]
    if (deadlines === undefined || callback !== undefined) return super.request(options, callback)
    const { [DEADLINES]: _deadlines, signal: outer, ...rest } = options as Record<string, any>
    const now = Date.now()
    const controller = new AbortController()
    const forward = () => controller.abort((outer as AbortSignal).reason)
    if (outer !== undefined && outer !== null) {
      if ((outer as AbortSignal).aborted) forward()
      else (outer as AbortSignal).addEventListener("abort", forward, { once: true })
    }
    const timer = setTimeout(() => controller.abort(new TotalDeadlinePassed()), Math.max(1, deadlines.total - now))
    const done = () => {
      clearTimeout(timer)
      if (outer !== undefined && outer !== null) (outer as AbortSignal).removeEventListener("abort", forward)
    }
    return (super.request({
      ...rest,
      signal: controller.signal,
      headersTimeout: Math.max(1, Math.min(deadlines.firstByte, deadlines.total) - now),
      bodyTimeout: deadlines.idleMs
    } as Dispatcher.RequestOptions) as Promise<Dispatcher.ResponseData>).then(
      (response) => {
        response.body.once("close", done)
        return response
      },
      (error: unknown) => {
        done()
        throw error
      }
    )
  }
}

/**
 * The HTTP clients upstream calls are sent with: one Undici connection pool
 * per distinct `connectMs`, so each channel's connect timeout is enforced
 * where connections are opened, and each pool keeps its requests' deadlines
 * (`DeadlineAgent`).
 *
 * @category services
 */
export class UpstreamClients extends Context.Service<UpstreamClients, {
  /** The client for a channel (its connect timeout). */
  readonly forChannel: (channel: Domain.Channel) => Effect.Effect<HttpClient.HttpClient>
}>()("modelgate/node-http/UpstreamClients") {
  /**
   * Undici pools created on first use and closed with the layer.
   *
   * @category layers
   */
  static readonly layer: Layer.Layer<UpstreamClients> = Layer.effect(
    UpstreamClients,
    Effect.gen(function*() {
      const clients = new Map<number, HttpClient.HttpClient>()
      const agents: Array<Agent> = []
      yield* Effect.addFinalizer(() => Effect.promise(() => Promise.all(agents.map((agent) => agent.destroy()))))
      const forChannel = (channel: Domain.Channel) =>
        Effect.suspend(() => {
          const connectMs = channel.timeouts.connectMs
          const cached = clients.get(connectMs)
          if (cached !== undefined) return Effect.succeed(cached)
          const agent = new DeadlineAgent({ connect: { timeout: connectMs } })
          agents.push(agent)
          return Effect.map(
            Effect.provideService(NodeHttpClient.makeUndici, NodeHttpClient.Dispatcher, agent),
            (client) => {
              clients.set(connectMs, client)
              return client
            }
          )
        })
      return UpstreamClients.of({ forChannel })
    })
  )
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

/** The earlier of the two deadlines, and the error for missing it. */
const firstDeadline = (channel: Domain.Channel, at: Deadlines) =>
  at.total < at.firstByte
    ? { at: at.total, error: () => totalTimeout(channel) }
    : { at: at.firstByte, error: () => firstByteTimeout(channel) }

const within = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  deadline: { readonly at: number; readonly error: () => GatewayError.UpstreamTimeout }
): Effect.Effect<A, E | GatewayError.UpstreamTimeout, R> =>
  Effect.flatMap(Effect.clockWith((clock) => clock.currentTimeMillis), (now) =>
    now >= deadline.at
      ? Effect.fail(deadline.error())
      : Effect.timeoutOrElse(effect, { duration: Duration.millis(deadline.at - now), orElse: () => Effect.fail(deadline.error()) }))

/** The code of the failure behind an HTTP client error (Undici's, or `TotalDeadlinePassed`'s). */
const transportCode = (error: unknown): string | undefined => {
  let cause: unknown = error
  for (let depth = 0; depth < 5 && typeof cause === "object" && cause !== null; depth++) {
    const code = (cause as { readonly code?: unknown }).code
    if (typeof code === "string") return code
    const next = cause as { readonly reason?: { readonly cause?: unknown }; readonly cause?: unknown }
    cause = next.reason !== undefined && typeof next.reason === "object" ? next.reason.cause : next.cause
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
 * Sends a JSON body upstream and returns the response once its headers arrive,
 * before the first-byte (or total) deadline; the response's body then keeps
 * the idle and total deadlines (the connection pool enforces all three). A
 * connection that cannot be opened within `connectMs` and missed deadlines are
 * `UpstreamTimeout`; other transport failures `UpstreamUnavailable`. The
 * status is not judged here.
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
  const client = yield* Effect.flatMap(Effect.service(UpstreamClients), (clients) => clients.forChannel(channel))
  const request = HttpClientRequest.post(url).pipe(
    HttpClientRequest.setHeaders(headers),
    HttpClientRequest.bodyText(body, "application/json")
  )
  const pool: PoolDeadlines = { firstByte: at.firstByte, total: at.total, idleMs: channel.timeouts.idleMs }
  return yield* client.execute(request).pipe(
    Effect.provideService(NodeHttpClient.UndiciOptions, { [DEADLINES]: pool } as Partial<Dispatcher.RequestOptions<null>>),
    Effect.catchTag("HttpClientError", (error) => Effect.fail(transportError(channel, at, error, "send")))
  )
})

/**
 * A stream's first chunk, read before anything is sent to the client (so a
 * stream that stalls, breaks or ends before its first byte can still fail
 * over), and the rest of the body. The body is read through a pull that lives
 * in a scope forked from the current one (the request's): `close` ends it at
 * once (an attempt that failed over), and the request's end closes it anyway.
 *
 * @category reading
 */
export const firstChunk = Effect.fnUntraced(function*(
  channel: Domain.Channel,
  response: HttpClientResponse.HttpClientResponse,
  at: Deadlines
) {
  const scope = yield* Scope.fork(yield* Scope.Scope)
  const close = Scope.close(scope, Exit.void)
  const pull = yield* Scope.provide(Stream.toPull(response.stream), scope)
  const first = yield* within(
    Effect.mapError(pull, (error) =>
      Cause.isDone(error)
        ? new GatewayError.UpstreamUnavailable({ message: `The upstream '${channel.name}' ended the answer before sending anything.` })
        : transportError(channel, at, error, "body")),
    firstDeadline(channel, at)
  ).pipe(Effect.onError(() => close))
  // After the first chunk the pool keeps the idle and total deadlines: a missed one fails the pull.
  const rest: Stream.Stream<Uint8Array, GatewayError.UpstreamUnavailable | GatewayError.UpstreamTimeout> = Stream.fromPull(
    Effect.succeed(Effect.mapError(pull, (error) => Cause.isDone(error) ? error : transportError(channel, at, error, "body")))
  )
  return { first, rest, close }
})

/**
 * Reads a whole (non-stream) body as text; the connection pool fails it when
 * the upstream pauses longer than `idleMs` between chunks or the call's total
 * deadline passes.
 *
 * @category reading
 */
export const readText = (
  channel: Domain.Channel,
  response: HttpClientResponse.HttpClientResponse,
  at: Deadlines
): Effect.Effect<string, GatewayError.UpstreamUnavailable | GatewayError.UpstreamTimeout> =>
  Effect.mapError(response.text, (error) => transportError(channel, at, error, "body"))

/**
 * Reads at most `limit` bytes of an error body as text (upstream error bodies
 * are small; a huge one is cut, and the rest is never read). A body that
 * pauses longer than `idleMs` (pass the channel's) ends the reading; a broken
 * one yields what was read.
 *
 * @category reading
 */
export const errorBody = (
  response: HttpClientResponse.HttpClientResponse,
  limit = 64 * 1024,
  idleMs = Domain.defaultTimeouts.idleMs
): Effect.Effect<string> =>
  Effect.scoped(Effect.gen(function*() {
    const pull = yield* Stream.toPull(response.stream)
    const decoder = new TextDecoder()
    let text = ""
    let bytes = 0
    while (bytes < limit) {
      const chunks = yield* pull.pipe(
        Effect.timeoutOrElse({ duration: Duration.millis(idleMs), orElse: () => Effect.succeed(undefined) }),
        Effect.orElseSucceed(() => undefined)
      )
      if (chunks === undefined) break
      for (const chunk of chunks) {
        const take = Math.min(chunk.byteLength, limit - bytes)
        text += decoder.decode(take === chunk.byteLength ? chunk : chunk.subarray(0, take), { stream: true })
        bytes += take
        if (bytes >= limit) break
      }
    }
    return text + decoder.decode()
  }))

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

/** Response headers as a plain record. @category reading */
export const headerRecord = (response: HttpClientResponse.HttpClientResponse): Record<string, string> =>
  response.headers as unknown as Record<string, string>
