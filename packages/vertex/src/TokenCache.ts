/**
 * When a cached access token is used and when a new one is fetched, and a
 * token source that follows the rule for one service account.
 *
 * The policy (pure): a token is used until `refreshMargin` before it
 * expires (five minutes, or half its lifetime when that is shorter, so a
 * short-lived token is not refreshed on every call); a token the upstream
 * refused (`Token.tokenRefused`) is dropped at once, and the next call fetches
 * another.
 *
 * The source (`make`): one token per service account, fetched on first use
 * and whenever the policy says so, by one fiber at a time (concurrent calls
 * wait for that fetch instead of each fetching one); time is the Effect
 * `Clock`'s, the exchange goes through the `fetch` the host gives (the
 * engine's transport), so this module does no I/O of its own.
 *
 * @since 0.1.0
 */
import type { GatewayError } from "@modelgate/core"
import { Clock, Effect, Semaphore } from "effect"
import * as ServiceAccount from "./ServiceAccount.ts"
import * as Token from "./Token.ts"

/** A cached token and when it expires (epoch milliseconds). @category policy */
export interface CachedToken {
  readonly accessToken: string
  readonly expiresAt: number
  /** When it was received (epoch milliseconds). */
  readonly receivedAt: number
}

/** The longest margin before expiry at which a token is refreshed: five minutes. @category policy */
export const MAX_REFRESH_MARGIN_MS = 5 * 60_000

/** A token received at `receivedAt` (epoch milliseconds). @category policy */
export const cached = (token: Token.AccessToken, receivedAt: number): CachedToken => ({
  accessToken: token.accessToken,
  expiresAt: receivedAt + token.expiresInSeconds * 1000,
  receivedAt
})

/** How long before its expiry a token is refreshed: five minutes, or half its lifetime if that is less. @category policy */
export const refreshMargin = (token: CachedToken): number =>
  Math.min(MAX_REFRESH_MARGIN_MS, (token.expiresAt - token.receivedAt) / 2)

/** Whether a token may still be used at `now` (epoch milliseconds). @category policy */
export const isFresh = (token: CachedToken | undefined, now: number): token is CachedToken =>
  token !== undefined && now < token.expiresAt - refreshMargin(token)

/** The answer of a request the host made. @category models */
export interface HttpAnswer {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly text: string
}

/** The errors fetching a token fails with. @category models */
export type TokenError =
  | GatewayError.UpstreamUnavailable
  | GatewayError.UpstreamRateLimited
  | GatewayError.UpstreamTimeout

/** The host's way to make the token request (the engine's transport, a `fetch`). @category models */
export type Fetch = (request: Token.HttpRequest) => Effect.Effect<HttpAnswer, TokenError>

/** Access tokens of one service account. @category sources */
export interface TokenSource {
  /** A token to send now: the cached one while fresh, else a new one. */
  readonly token: Effect.Effect<string, TokenError>
  /** The upstream refused `accessToken`: drop it, if it is still the cached one. */
  readonly invalidate: (accessToken: string) => Effect.Effect<void>
  /** The cached token, if any (for tests and metrics). */
  readonly current: Effect.Effect<CachedToken | undefined>
}

/**
 * A token source for `key`: assertions signed with its private key (imported
 * once), exchanged through `fetch`. A key WebCrypto cannot use fails here,
 * once, with the `KeyError`.
 *
 * @example
 * ```ts
 * import { TokenCache } from "@modelgate/vertex"
 *
 * const source = yield* TokenCache.make(key, fetch)
 * const token = yield* source.token            // "ya29..." (fetched once, then cached)
 * yield* source.invalidate(token)              // Vertex answered 401: the next call fetches another
 * ```
 *
 * @category sources
 */
export const make = (
  key: ServiceAccount.ServiceAccountKey,
  fetch: Fetch,
  options?: { readonly scope?: string | undefined }
): Effect.Effect<TokenSource, ServiceAccount.KeyError> =>
  Effect.gen(function*() {
    const privateKey = yield* ServiceAccount.importPrivateKey(key)
    const lock = yield* Semaphore.make(1)
    let current: CachedToken | undefined

    const fetchToken = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const assertion = yield* ServiceAccount.signAssertion(key, privateKey, now / 1000, { scope: options?.scope })
      const answer = yield* fetch(Token.tokenRequest(key, assertion))
      const token = yield* Effect.fromResult(Token.decodeTokenResponse(answer.status, answer.text, answer.headers))
      const receivedAt = yield* Clock.currentTimeMillis
      current = cached(token, receivedAt)
      return current.accessToken
    })

    const token = Effect.flatMap(Clock.currentTimeMillis, (now) =>
      isFresh(current, now)
        ? Effect.succeed(current.accessToken)
        // One fetch at a time: a caller that waited finds the token the fetch before it got.
        : lock.withPermits(1)(
          Effect.flatMap(
            Clock.currentTimeMillis,
            (later) => isFresh(current, later) ? Effect.succeed(current.accessToken) : fetchToken
          )
        ))

    return {
      token,
      invalidate: (accessToken) =>
        Effect.sync(() => {
          if (current?.accessToken === accessToken) current = undefined
        }),
      current: Effect.sync(() => current)
    }
  })
