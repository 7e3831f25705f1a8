/**
 * Settings of the management API, as a `Context.Reference` with defaults, so
 * the server overrides only what its configuration says.
 *
 * @since 0.1.0
 */
import { Context, type Redacted } from "effect"
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
 * - `passwordLogin`: whether users may sign in with a password (default on;
 *   `auth.password_login: false` leaves single sign-on only).
 * - `oidc`: single sign-on with OpenID Connect (`auth.oidc`), or undefined.
 *
 * @category configuration
 */
export const AdminApiConfig = Context.Reference<{
  readonly publicUrl: string | undefined
  readonly sessionTtlMs: number
  readonly trustedProxies: TrustedProxies.TrustedProxies
  readonly passwordLogin?: boolean | undefined
  readonly oidc?: OidcSettings | undefined
}>("modelgate/admin-api/AdminApiConfig", {
  defaultValue: () => ({
    publicUrl: undefined,
    sessionTtlMs: 7 * 24 * 60 * 60 * 1000,
    trustedProxies: TrustedProxies.unsafeMake(TrustedProxies.loopback)
  })
})

/**
 * Single sign-on with an OpenID provider (the `auth.oidc` block of the
 * configuration file; docs/configuration.md):
 *
 * - `name`: the sign-in button's label;
 * - `issuer`: the provider's issuer URL, whose
 *   `/.well-known/openid-configuration` is read (HTTPS, or HTTP on loopback);
 * - `clientId` / `clientSecret`: this gateway's client at the provider
 *   (no secret: a public client, PKCE only);
 * - `scopes`: requested scopes (`openid` is always asked for);
 * - `usernameClaim`: the ID token claim that names the user (undefined:
 *   `preferred_username`, then `email`);
 * - `groupsClaim`: the claim listing the user's groups at the provider;
 * - `groupMap`: provider group -> modelgate group;
 * - `adminGroups`: provider groups whose members are administrators;
 * - `autoCreate`: whether a first sign-in creates the user;
 * - `initialBalanceNanos`: the balance a created user starts with;
 * - `redirectUri`: the callback's full public address, when the gateway's
 *   address (`publicUrl`) plus `/api/auth/oidc/callback` is not it.
 *
 * @category configuration
 */
export interface OidcSettings {
  readonly name: string
  readonly issuer: string
  readonly clientId: string
  readonly clientSecret: Redacted.Redacted<string> | undefined
  readonly scopes: ReadonlyArray<string>
  readonly usernameClaim: string | undefined
  readonly groupsClaim: string | undefined
  readonly groupMap: Readonly<Record<string, string>>
  readonly adminGroups: ReadonlyArray<string>
  readonly autoCreate: boolean
  readonly initialBalanceNanos: bigint
  readonly redirectUri: string | undefined
}
