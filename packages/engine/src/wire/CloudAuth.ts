/**
 * The credentials of cloud channels, put on each request as it is sent
 * (`Upstream.send`), after everything else about it is final:
 *
 * - `bedrock`: a request with an access key pair is signed with AWS
 *   Signature Version 4 over its final URL, headers and bytes (after the
 *   model map, the channel's parameters and the body's last edit), as of the
 *   Effect `Clock`; a Bedrock API key goes as `Authorization: Bearer`.
 * - `vertex`: an access token of the key's service account, from a token
 *   source per service account (`@modelgate/vertex`'s `TokenCache`: fetched
 *   once, used until shortly before it expires, by one fiber at a time). The
 *   token exchange goes through the same `Transport` as the calls, within
 *   the call's deadlines. When Vertex refuses a token (`Token.tokenRefused`:
 *   HTTP 401, `UNAUTHENTICATED`, an expired token), the token is dropped and
 *   the request sent once more with a new one (`retry`).
 *
 * Token sources live with the transport they fetch through (one cache per
 * `Transport` service: a gateway's), at most `MAX_SOURCES` of them.
 *
 * Other channel types are left alone: their key is in the dialect's headers.
 *
 * @since 0.1.0
 */
import { Signer } from "@modelgate/bedrock-adapter"
import { Credentials, type Domain, GatewayError } from "@modelgate/core"
import { ServiceAccount, Token, TokenCache } from "@modelgate/vertex"
import { Effect, Result } from "effect"
import type { Deadlines, Transport } from "./Transport.ts"

/** A request as it will be sent, before its credentials. @category models */
export interface Outgoing {
  readonly method: "GET" | "POST"
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: string | Uint8Array | undefined
}

/** The most service accounts whose tokens one transport keeps. @category constants */
export const MAX_SOURCES = 256

/** Whether a channel's requests get their credentials here. @category predicates */
export const isCloud = (channel: Domain.Channel): boolean => channel.type === "vertex" || channel.type === "bedrock"

type TransportService = Transport["Service"]

interface Source {
  readonly source: TokenCache.TokenSource
  /** The channel and deadlines of the call that needs a token now (the exchange runs within them). */
  readonly holder: { current: { readonly channel: Domain.Channel; readonly at: Deadlines } }
}

const sources = new WeakMap<TransportService, Map<string, Source>>()

/** A key the gateway cannot use: the key's own fault, so a probe with it disables it. */
const badKey = (channel: Domain.Channel, what: string): GatewayError.UpstreamUnavailable =>
  new GatewayError.UpstreamUnavailable({
    status: 401,
    credentialsRefused: true,
    message:
      `The gateway cannot use a key of the channel '${channel.name}': ${what}. This is a gateway configuration problem: an administrator must replace the key.`
  })

const tokenSource = (
  transport: TransportService,
  channel: Domain.Channel,
  keyText: string,
  at: Deadlines
): Effect.Effect<Source, GatewayError.UpstreamUnavailable> =>
  Effect.suspend(() => {
    let cache = sources.get(transport)
    if (cache === undefined) {
      cache = new Map()
      sources.set(transport, cache)
    }
    const known = cache.get(keyText)
    if (known !== undefined) {
      known.holder.current = { channel, at }
      return Effect.succeed(known)
    }
    const parsed = ServiceAccount.parseKey(keyText)
    if (Result.isFailure(parsed)) return Effect.fail(badKey(channel, parsed.failure.message))
    const holder: Source["holder"] = { current: { channel, at } }
    const fetch: TokenCache.Fetch = (request) =>
      Effect.gen(function*() {
        const { channel, at } = holder.current
        const response = yield* Effect.mapError(
          transport.send({
            channel,
            method: request.method,
            url: request.url,
            headers: request.headers,
            body: request.body,
            deadlines: at
          }),
          (error) =>
            new GatewayError.UpstreamUnavailable({
              message: `The token endpoint of the channel '${channel.name}' could not be reached (${
                error.detail ?? error.kind
              }).`
            })
        )
        const text = yield* Effect.mapError(
          response.body.text(64 * 1024),
          () =>
            new GatewayError.UpstreamUnavailable({
              message: `The token endpoint of the channel '${channel.name}' broke off its answer.`
            })
        )
        return { status: response.status, headers: response.headers, text }
      })
    return TokenCache.make(parsed.success, fetch).pipe(
      Effect.mapError((error) => badKey(channel, error.message)),
      Effect.map((source) => {
        const entry: Source = { source, holder }
        if (cache.size >= MAX_SOURCES) cache.delete(cache.keys().next().value!)
        cache.set(keyText, entry)
        return entry
      })
    )
  })

/** What `authorize` did, for `retry`: the token a Vertex request was sent with. @category models */
export interface Authorized {
  readonly headers: Record<string, string>
  readonly token?: { readonly source: TokenCache.TokenSource; readonly accessToken: string } | undefined
}

/**
 * The headers to send `request` with on `channel` with `key`: its own, and
 * the credentials (a signature, an API key, an access token). Other channel
 * types' requests are returned as they are.
 *
 * @category authorizing
 */
export const authorize = (
  transport: TransportService,
  channel: Domain.Channel,
  key: string,
  request: Outgoing,
  at: Deadlines
): Effect.Effect<Authorized, TokenCache.TokenError> => {
  if (channel.type === "bedrock") {
    const parsed = Credentials.bedrockKey(key)
    if (typeof parsed === "string") return Effect.fail(badKey(channel, parsed))
    if (parsed.kind === "api_key") return Effect.succeed({ headers: Signer.bearer(request.headers, parsed.apiKey) })
    return Effect.map(
      Signer.signEffect(
        { method: request.method, url: request.url, headers: request.headers, body: request.body ?? "" },
        {
          credentials: {
            accessKeyId: parsed.accessKeyId,
            secretAccessKey: parsed.secretAccessKey,
            sessionToken: parsed.sessionToken
          },
          region: channel.cloud?.region ?? "us-east-1"
        }
      ),
      (headers) => ({ headers })
    )
  }
  if (channel.type === "vertex") {
    return Effect.gen(function*() {
      const { source } = yield* tokenSource(transport, channel, key, at)
      const accessToken = yield* source.token
      return {
        headers: { ...request.headers, authorization: `Bearer ${accessToken}` },
        token: { source, accessToken }
      }
    })
  }
  return Effect.succeed({ headers: { ...request.headers } })
}

/**
 * A new access token for a Vertex key, whatever is cached (the cached one is
 * dropped first): the model-free check of the key (`Probe`).
 *
 * @category authorizing
 */
export const freshToken = (
  transport: TransportService,
  channel: Domain.Channel,
  key: string,
  at: Deadlines
): Effect.Effect<string, TokenCache.TokenError> =>
  Effect.gen(function*() {
    const { source } = yield* tokenSource(transport, channel, key, at)
    const cached = yield* source.current
    if (cached !== undefined) yield* source.invalidate(cached.accessToken)
    return yield* source.token
  })

/**
 * Whether a Vertex answer refused the token it was sent, so the request is
 * worth sending once more with a new one: the token is dropped then.
 *
 * @category authorizing
 */
export const refusedToken = (
  authorized: Authorized,
  status: number,
  bodyText: string
): Effect.Effect<boolean> => {
  const token = authorized.token
  if (token === undefined || !Token.tokenRefused(status, bodyText)) return Effect.succeed(false)
  return Effect.as(token.source.invalidate(token.accessToken), true)
}

/** The HTTP statuses worth reading an answer's body for, to see whether it refused a token. @category authorizing */
export const mayRefuseToken = (authorized: Authorized, status: number): boolean =>
  authorized.token !== undefined && (status === 401 || status === 403 || status === 400)
