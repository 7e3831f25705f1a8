/**
 * Settings of the management API, as a `Context.Reference` with defaults, so
 * the server overrides only what its configuration says.
 *
 * @since 0.1.0
 */
import { Context } from "effect"
import * as TrustedProxies from "./TrustedProxies.ts"

/**
 * - `publicUrl`: the gateway's address as clients reach it
 *   (`https://llm.example.com`), shown on "Connect a client"; when unset it is
 *   derived from the request's `host` header (and a trusted proxy's
 *   `x-forwarded-proto`/`x-forwarded-host`).
 * - `sessionTtlMs`: the session cookie's lifetime (the sessions repository
 *   is built with the same).
 * - `trustedProxies`: the peers whose `x-forwarded-for` and `x-forwarded-*`
 *   headers are believed (default: loopback only; see `TrustedProxies`).
 *
 * @category configuration
 */
export const AdminApiConfig = Context.Reference<{
  readonly publicUrl: string | undefined
  readonly sessionTtlMs: number
  readonly trustedProxies: TrustedProxies.TrustedProxies
}>("modelgate/admin-api/AdminApiConfig", {
  defaultValue: () => ({
    publicUrl: undefined,
    sessionTtlMs: 7 * 24 * 60 * 60 * 1000,
    trustedProxies: TrustedProxies.unsafeMake(TrustedProxies.loopback)
  })
})
