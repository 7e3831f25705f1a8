/**
 * The access-token exchange: the request that trades a signed assertion for
 * a token at the key's `token_uri` (`POST`, form-encoded
 * `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=...`),
 * its answer (`{"access_token", "expires_in", "token_type": "Bearer"}`) and
 * its refusals (`{"error": "invalid_grant", "error_description": ...}`), and
 * how Vertex says a token it was sent is no good (HTTP 401, Google's
 * `UNAUTHENTICATED`, `ACCESS_TOKEN_EXPIRED`).
 *
 * @since 0.1.0
 */
import { GatewayError, UpstreamErrors } from "@modelgate/core"
import { Predicate, Result } from "effect"
import type { ServiceAccountKey } from "./ServiceAccount.ts"

/** The JWT bearer grant type. @category constants */
export const GRANT_TYPE = "urn:ietf:params:oauth:grant-type:jwt-bearer"

/** An HTTP request to make, as the host's transport takes it. @category models */
export interface HttpRequest {
  readonly method: "POST"
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

/** The token request for `key` with a signed `assertion`. @category requests */
export const tokenRequest = (key: ServiceAccountKey, assertion: string): HttpRequest => ({
  method: "POST",
  url: key.tokenUri,
  headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
  body: new URLSearchParams({ grant_type: GRANT_TYPE, assertion }).toString()
})

/** An access token and how long it lives. @category models */
export interface AccessToken {
  readonly accessToken: string
  readonly expiresInSeconds: number
}

const refusedKey = (status: number, detail: string | undefined): GatewayError.UpstreamUnavailable =>
  UpstreamErrors.credentialsRefused(
    status,
    "service-account key",
    `the channel's service-account key (Google said: ${detail ?? "no reason given"})`
  )

/**
 * Reads the token endpoint's answer (`status`, body text): the token, or the
 * gateway error the call fails with. A refusal of the key (`invalid_grant`:
 * a bad signature, an unknown or deleted key, a clock far off;
 * `invalid_client`, `unauthorized_client`, any 400/401/403) is a credential
 * refusal naming Google's reason, which quotes no secret; 429 a rate limit;
 * anything else (5xx, an answer without `access_token`) the upstream
 * failing.
 *
 * @category responses
 */
export const decodeTokenResponse = (
  status: number,
  text: string,
  headers: UpstreamErrors.Headers = {}
): Result.Result<AccessToken, GatewayError.UpstreamUnavailable | GatewayError.UpstreamRateLimited> => {
  const json = UpstreamErrors.parseBody(text)
  if (status === 200) {
    if (
      Predicate.isObject(json) && typeof json.access_token === "string" && json.access_token.length > 0 &&
      typeof json.expires_in === "number" && json.expires_in > 0
    ) {
      return Result.succeed({ accessToken: json.access_token, expiresInSeconds: json.expires_in })
    }
    return Result.fail(
      new GatewayError.UpstreamUnavailable({
        status: 502,
        message: "Google's token endpoint answered 200 without an access token and its lifetime."
      })
    )
  }
  if (status === 429) return Result.fail(UpstreamErrors.rateLimited(UpstreamErrors.retryAfterSeconds(headers)))
  if (status >= 400 && status < 500) {
    const error = Predicate.isObject(json) ? json.error : undefined
    const description = Predicate.isObject(json) ? json.error_description : undefined
    const detail = typeof error === "string"
      ? typeof description === "string" && description.length > 0 ? `${error}: ${description}` : error
      : undefined
    return Result.fail(refusedKey(status, detail === undefined ? undefined : GatewayError.echo(detail)))
  }
  return Result.fail(
    new GatewayError.UpstreamUnavailable({
      status,
      message: `Google's token endpoint failed (HTTP ${status}). Retry later.`
    })
  )
}

/**
 * Whether a Vertex answer refuses the access token it was sent (so the
 * cached token is dropped and the call tried once more with a new one):
 * HTTP 401, or Google's error with status `UNAUTHENTICATED` or the reason
 * `ACCESS_TOKEN_EXPIRED`.
 *
 * @category refusals
 */
export const tokenRefused = (status: number, bodyText: string): boolean => {
  if (status === 401) return true
  if (status !== 403 && status !== 400) return false
  const json = UpstreamErrors.parseBody(bodyText)
  const error = Predicate.isObject(json) && Predicate.isObject(json.error) ? json.error : undefined
  if (error === undefined) return false
  if (error.status === "UNAUTHENTICATED") return true
  const details = Array.isArray(error.details) ? error.details : []
  return details.some((detail) =>
    Predicate.isObject(detail) && (detail.reason === "ACCESS_TOKEN_EXPIRED" || detail.reason === "ACCESS_TOKEN_INVALID")
  )
}
