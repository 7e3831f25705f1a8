/**
 * Talking to upstream channels: where a call goes (URL and auth headers per
 * channel type) and sending it with the channel's timeouts. Responses come back
 * unread: the caller streams or reads the body, so nothing is buffered here.
 *
 * @since 0.1.0
 */
import type { Domain } from "@modelgate/core"
import { GatewayError } from "@modelgate/core"
import { Duration, Effect } from "effect"
import { HttpClient, HttpClientRequest, type HttpClientResponse } from "effect/http"

/** Where a request goes. @category models */
export interface Target {
  readonly url: string
  readonly headers: Record<string, string>
}

const trimSlash = (url: string) => url.endsWith("/") ? url.slice(0, -1) : url

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
      headers["anthropic-version"] ??= "2023-06-01"
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
        encodeURIComponent(channel.apiVersion ?? "2024-10-21")
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

/** Channel default timeouts (milliseconds), documented in docs/configuration.md. @category constants */
export const defaultTimeouts: Domain.ChannelTimeouts = {
  connectMs: 10_000,
  firstByteMs: 60_000,
  idleMs: 120_000,
  totalMs: 600_000
}

/**
 * Sends a JSON body upstream and returns the response once its headers arrive,
 * within the channel's first-byte timeout. Transport failures become
 * `UpstreamUnavailable`, a missed deadline `UpstreamTimeout`; the status is not
 * judged here.
 *
 * @category sending
 */
export const send = Effect.fnUntraced(function*(
  channel: Domain.Channel,
  url: string,
  headers: Record<string, string>,
  body: string
) {
  const client = yield* HttpClient.HttpClient
  const request = HttpClientRequest.post(url).pipe(
    HttpClientRequest.setHeaders(headers),
    HttpClientRequest.bodyText(body, "application/json")
  )
  return yield* client.execute(request).pipe(
    Effect.timeoutOrElse({
      duration: Duration.millis(channel.timeouts.firstByteMs),
      orElse: () =>
        Effect.fail(
          new GatewayError.UpstreamTimeout({
            message: `The upstream '${channel.name}' did not answer within ${channel.timeouts.firstByteMs} ms.`
          })
        )
    }),
    Effect.catchTag("HttpClientError", (error) =>
      Effect.fail(
        new GatewayError.UpstreamUnavailable({
          message: `The upstream '${channel.name}' could not be reached (${describeTransport(error)}).`
        })
      ))
  )
})

const describeTransport = (error: { readonly reason?: { readonly _tag?: string; readonly cause?: unknown } }): string => {
  const cause = error.reason?.cause as { code?: string; cause?: { code?: string } } | undefined
  const code = cause?.code ?? cause?.cause?.code
  return code !== undefined ? code : error.reason?._tag ?? "transport error"
}

/** Reads at most `limit` bytes of an error body as text (upstream error bodies are small; a huge one is cut). @category reading */
export const errorBody = (response: HttpClientResponse.HttpClientResponse, limit = 64 * 1024): Effect.Effect<string> =>
  response.text.pipe(
    Effect.map((text) => text.length > limit ? text.slice(0, limit) : text),
    Effect.orElseSucceed(() => "")
  )

/** Response headers as a plain record. @category reading */
export const headerRecord = (response: HttpClientResponse.HttpClientResponse): Record<string, string> =>
  response.headers as unknown as Record<string, string>
