/**
 * What the management API reads from a request beyond its contract: the
 * client's address and scheme (believing `x-forwarded-*` only from trusted
 * proxies), the session cookie it sets, and the gateway's public address.
 *
 * @since 0.1.0
 */
import { Option } from "effect"
import type { HttpServerRequest } from "effect/http/HttpServerRequest"
import { timingSafeEqual } from "node:crypto"
import { COOKIE } from "./Api.ts"
import type { AdminApiConfig } from "./Config.ts"
import * as TrustedProxies from "./TrustedProxies.ts"

/** The socket peer's address. @category requests */
export const peerOf = (request: HttpServerRequest): string => Option.getOrElse(request.remoteAddress, () => "unknown")

/** Whether the client uses HTTPS: to us directly, or to a trusted proxy that says so in `x-forwarded-proto`. @category requests */
export const isHttps = (request: HttpServerRequest, trusted: TrustedProxies.TrustedProxies): boolean =>
  request.protocol === "https" ||
  request.originalUrl.startsWith("https:") ||
  TrustedProxies.forwardedHttps(trusted, peerOf(request), request.headers["x-forwarded-proto"]) === true

/** The client's address: the peer's, or the one a trusted proxy names in `x-forwarded-for`. @category requests */
export const clientAddress = (request: HttpServerRequest, trusted: TrustedProxies.TrustedProxies): string =>
  TrustedProxies.clientAddress(trusted, peerOf(request), request.headers["x-forwarded-for"])

/**
 * The `set-cookie` value of a session token (an empty token with `maxAgeSeconds`
 * 0 clears it): HttpOnly, SameSite=Lax, and Secure over HTTPS.
 *
 * @category cookies
 */
export const sessionCookie = (
  request: HttpServerRequest,
  trusted: TrustedProxies.TrustedProxies,
  token: string,
  maxAgeSeconds: number
): string =>
  `${COOKIE}=${token}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSeconds}${
    isHttps(request, trusted) ? "; Secure" : ""
  }`

/** The gateway's address as clients reach it (see `AdminApiConfig.publicUrl`). @category requests */
export const publicBaseUrl = (request: HttpServerRequest, config: typeof AdminApiConfig.Service): string => {
  if (config.publicUrl !== undefined && config.publicUrl.length > 0) return config.publicUrl.replace(/\/+$/, "")
  const proto = isHttps(request, config.trustedProxies) ? "https" : "http"
  const forwardedHost = config.trustedProxies.contains(peerOf(request))
    ? request.headers["x-forwarded-host"]
    : undefined
  const host = (forwardedHost ?? request.headers["host"] ?? "localhost").split(",")[0]!.trim()
  return `${proto}://${host}`
}

/** Compares two strings in constant time (for CSRF tokens). @category security */
export const safeEqual = (a: string, b: string): boolean => {
  const x = Buffer.from(a, "utf8")
  const y = Buffer.from(b, "utf8")
  return x.length === y.length && timingSafeEqual(x, y)
}
