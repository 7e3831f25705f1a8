/**
 * Talking to upstream channels: where a call goes (URL and auth headers per
 * channel type), sending it, and reading the answer within the channel's
 * timeouts (docs/routing.md):
 *
 * - `connectMs`: opening the connection (TCP and TLS), enforced by the HTTP
 *   client's connection pool (one pool per distinct value, `UpstreamClients`);
 * - `firstByteMs`: from sending the request to the response headers and, for
 *   streams, the first chunk of the body (`send`, `firstChunk`);
 * - `idleMs`: the longest gap between two chunks of a body, stream or not
 *   (`readText`, `errorBody`, and the relay in `Chat.ts`);
 * - `totalMs`: the whole call, measured from its start (`Deadlines.total`).
 *
 * Nothing is buffered here beyond what a non-stream answer needs.
 *
 * @since 0.1.0
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { Agent } from "@effect/platform-node/Undici"
import { Domain, GatewayError } from "@modelgate/core"
import { Cause, Clock, Context, Duration, Effect, Exit, Layer, Scope, Stream } from "effect"
import { HttpClient, HttpClientRequest, type HttpClientResponse } from "effect/http"

const trimSlash = (url: string) => url.endsWith("/") ? url.slice(0, -1) : url

/**
 * The HTTP clients upstream calls are sent with: one Undici connection pool
 * per distinct `connectMs`, so each channel's connect timeout is enforced
 * where connections are opened.
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
          const agent = new Agent({ connect: { timeout: connectMs } })
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

  /**
   * Every channel through the ambient `HttpClient` (connect timeouts are then
   * that client's own; for embedding and tests).
   *
   * @category layers
   */
  static readonly layerFrom: Layer.Layer<UpstreamClients, never, HttpClient.HttpClient> = Layer.effect(
    UpstreamClients,
    Effect.map(Effect.service(HttpClient.HttpClient), (client) => UpstreamClients.of({ forChannel: () => Effect.succeed(client) }))
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
    ? { at: at.total, error: totalTimeout(channel) }
    : { at: at.firstByte, error: firstByteTimeout(channel) }

const within = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  deadline: { readonly at: number; readonly error: GatewayError.UpstreamTimeout }
): Effect.Effect<A, E | GatewayError.UpstreamTimeout, R> =>
  Effect.flatMap(Effect.clockWith((clock) => clock.currentTimeMillis), (now) =>
    now >= deadline.at
      ? Effect.fail(deadline.error)
      : Effect.timeoutOrElse(effect, { duration: Duration.millis(deadline.at - now), orElse: () => Effect.fail(deadline.error) }))

/**
 * Sends a JSON body upstream and returns the response once its headers arrive,
 * before the first-byte (or total) deadline. A connection that cannot be
 * opened within `connectMs` and missed deadlines are `UpstreamTimeout`; other
 * transport failures `UpstreamUnavailable`. The status is not judged here.
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
  return yield* within(client.execute(request), firstDeadline(channel, at)).pipe(
    Effect.catchTag("HttpClientError", (error) => {
      const code = transportCode(error)
      return Effect.fail(
        code === "UND_ERR_CONNECT_TIMEOUT"
          ? new GatewayError.UpstreamTimeout({
            message: `The upstream '${channel.name}' did not accept a connection within ${channel.timeouts.connectMs} ms.`
          })
          : new GatewayError.UpstreamUnavailable({
            message: `The upstream '${channel.name}' could not be reached (${code ?? error.reason._tag}).`
          })
      )
    })
  )
})

const transportCode = (error: { readonly reason?: { readonly cause?: unknown } }): string | undefined => {
  const cause = error.reason?.cause as { code?: string; cause?: { code?: string } } | undefined
  return cause?.code ?? cause?.cause?.code
}

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
  const broken = new GatewayError.UpstreamUnavailable({ message: `The upstream '${channel.name}' broke off the answer.` })
  const empty = new GatewayError.UpstreamUnavailable({ message: `The upstream '${channel.name}' ended the answer before sending anything.` })
  const first = yield* within(
    Effect.mapError(pull, (error) => Cause.isDone(error) ? empty : broken),
    firstDeadline(channel, at)
  ).pipe(Effect.onError(() => close))
  const rest: Stream.Stream<Uint8Array, GatewayError.UpstreamUnavailable> = Stream.fromPull(
    Effect.succeed(Effect.mapError(pull, (error) => Cause.isDone(error) ? error : broken))
  )
  return { first, rest, close }
})

/**
 * Reads a whole (non-stream) body as text, failing when the upstream pauses
 * longer than `idleMs` between chunks or the call's total deadline passes.
 *
 * @category reading
 */
export const readText = (
  channel: Domain.Channel,
  response: HttpClientResponse.HttpClientResponse,
  at: Deadlines
): Effect.Effect<string, GatewayError.UpstreamUnavailable | GatewayError.UpstreamTimeout> => {
  const broken = new GatewayError.UpstreamUnavailable({ message: `The upstream '${channel.name}' broke off the answer.` })
  return within(
    response.stream.pipe(
      Stream.mapError(() => broken),
      Stream.timeoutOrElse({ duration: Duration.millis(channel.timeouts.idleMs), orElse: () => Stream.fail(idleTimeout(channel)) }),
      Stream.decodeText(),
      Stream.mkString
    ),
    { at: at.total, error: totalTimeout(channel) }
  )
}

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
