/**
 * How one may sign in, and single sign-on with OpenID Connect.
 *
 * The protocol is `openid-client` (the OpenID Foundation-certified relying
 * party by the author of `jose` and `oidc-provider`, built on `oauth4webapi`
 * and WebCrypto): discovery from the issuer, the authorization-code flow with
 * PKCE (S256), `state` and `nonce`, and the ID token checked for its
 * signature against the issuer's published keys (JWKS), `iss`, `aud`, `exp`,
 * `iat` and `nonce`. Nothing of OAuth is written by hand here.
 *
 * The flow's secrets (state, nonce, PKCE verifier) live in a short-lived
 * HttpOnly cookie scoped to `/api/auth/oidc/`, so any node behind a load
 * balancer can finish a sign-in another started. A verified sign-in opens the
 * very session a password sign-in opens (`Sessions`, the `mg_session`
 * cookie, its CSRF token); every refusal sends the browser back to the
 * sign-in page with the reason in `?sso_error=`, and counts as a failed
 * sign-in from the client's address for the sign-in limiter.
 *
 * @since 0.1.0
 */
import { Catalog, Text } from "@modelgate/core"
import { Accounts } from "@modelgate/store/Accounts"
import { CatalogRepo } from "@modelgate/store/CatalogRepo"
import { Sessions } from "@modelgate/store/Sessions"
import { Users } from "@modelgate/store/Users"
import { Duration, Effect, Redacted } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import type { HttpServerRequest } from "effect/http/HttpServerRequest"
import * as client from "openid-client"
import { Api, COOKIE } from "../Api.ts"
import * as ApiError from "../ApiError.ts"
import { AdminApiConfig, type OidcSettings } from "../Config.ts"
import type * as C from "../Contract.ts"
import { clientAddress, isHttps, publicBaseUrl } from "../Http.ts"
import { LoginLimiter } from "../LoginLimiter.ts"
import { invalidate, orApiError } from "./Shared.ts"

/** Where the provider sends the browser back. @category constants */
export const CALLBACK_PATH = "/api/auth/oidc/callback"

/** Where single sign-on starts. @category constants */
export const START_PATH = "/api/auth/oidc/start"

/** The cookie that carries a sign-in in progress (state, nonce, PKCE verifier). @category constants */
export const FLOW_COOKIE = "mg_oidc"

/** How long a started sign-in may take at the provider. */
const FLOW_TTL = Duration.minutes(10)

/** The sign-in limiter's subject for single sign-on failures (counted per client address). */
const LIMITER_SUBJECT = "\u0000sso"

/** A refused single sign-on: the message the sign-in page shows. */
class Refused {
  readonly _tag = "Refused"
  readonly message: string
  /** Whether it counts as a failed sign-in for the limiter (a misconfiguration does not). */
  readonly counts: boolean
  constructor(message: string, counts = true) {
    this.message = message
    this.counts = counts
  }
}

const refuse = (message: string, counts = true) => Effect.fail(new Refused(message, counts))

const isLoopbackHost = (host: string) =>
  host === "localhost" || host === "[::1]" || host === "::1" || /^127\.\d+\.\d+\.\d+$/.test(host)

/** The callback's public address (`redirect_uri`). @category urls */
export const redirectUri = (request: HttpServerRequest, config: typeof AdminApiConfig.Service, oidc: OidcSettings) =>
  oidc.redirectUri ?? `${publicBaseUrl(request, config)}${CALLBACK_PATH}`

/** Discovered provider configurations, by issuer and client (a failed discovery is tried again next time). */
const discovered = new Map<string, Promise<client.Configuration>>()

const configurationOf = (oidc: OidcSettings): Effect.Effect<client.Configuration, Refused> => {
  const cacheKey = `${oidc.issuer}\u0000${oidc.clientId}`
  return Effect.tryPromise({
    try: () => {
      let pending = discovered.get(cacheKey)
      if (pending === undefined) {
        const issuer = new URL(oidc.issuer)
        const secret = oidc.clientSecret === undefined ? undefined : Redacted.value(oidc.clientSecret)
        pending = client.discovery(
          issuer,
          oidc.clientId,
          secret,
          secret === undefined ? client.None() : client.ClientSecretPost(secret),
          {
            // The ID token's signature is checked against the issuer's JWKS, not only trusted for coming over TLS.
            execute: [
              client.enableNonRepudiationChecks,
              // Plain HTTP only to a provider on this machine (development and tests).
              ...(issuer.protocol === "http:" && isLoopbackHost(issuer.hostname) ? [client.allowInsecureRequests] : [])
            ],
            timeout: 10
          }
        )
        discovered.set(cacheKey, pending)
        pending.catch(() => discovered.delete(cacheKey))
      }
      return pending
    },
    catch: (cause) =>
      new Refused(
        `Single sign-on is not available: the OpenID provider at ${oidc.issuer} could not be discovered (${
          describeError(cause)
        }). Tell an administrator.`,
        false
      )
  })
}

/** The messages, codes and claims of an error and its causes (openid-client wraps oauth4webapi's). */
const chainOf = (error: unknown) => {
  const messages: Array<string> = []
  const codes: Array<string> = []
  const claims: Array<string> = []
  let current: unknown = error
  for (let depth = 0; depth < 6 && typeof current === "object" && current !== null; depth++) {
    const record = current as Record<string, unknown>
    if (typeof record.message === "string") messages.push(record.message)
    if (typeof record.code === "string") codes.push(record.code)
    if (typeof record.claim === "string") claims.push(record.claim)
    if (typeof record.error_description === "string") messages.push(record.error_description)
    current = record.cause
  }
  return { text: messages.join(" | "), codes: codes.join(" "), claims, first: messages[0] ?? String(error) }
}

/** An `openid-client` failure as a sentence about the ID token or the provider. @category errors */
export const describeError = (error: unknown): string => {
  const { text, codes, claims, first } = chainOf(error)
  const about = (claim: string) => claims.includes(claim) || text.includes(`"${claim}"`)
  if (about("aud") || /audience/i.test(text)) {
    return "the ID token was issued for another client: its audience (aud) is not this gateway's client_id"
  }
  if (about("exp") || /expir/i.test(text)) return "the ID token has expired (exp is in the past)"
  if (about("iss")) return "the ID token was issued by another issuer (iss)"
  if (about("nonce")) return "the ID token's nonce does not belong to this sign-in"
  if (about("iat") || about("nbf")) return "the ID token's issue time (iat) is wrong"
  if (/signature/i.test(text) || /SIGNATURE/.test(codes)) {
    return "the ID token's signature does not verify with the issuer's published keys (JWKS)"
  }
  if (/state/i.test(text)) return "the sign-in's state does not match (start the sign-in again)"
  if (/OAUTH_AUTHORIZATION_RESPONSE_ERROR|OAUTH_RESPONSE_BODY_ERROR/.test(codes)) {
    return `the provider refused: ${Text.clip(text, 200)}`
  }
  return Text.clip(text.length > 0 ? text : first, 300)
}

const base64url = (text: string) => Buffer.from(text, "utf8").toString("base64url")

interface Flow {
  readonly state: string
  readonly nonce: string
  readonly verifier: string
}

const parseFlow = (value: string | undefined): Flow | undefined => {
  if (value === undefined || value.length === 0 || value.length > 2_000) return undefined
  try {
    const parsed: unknown = JSON.parse(Buffer.from(value, "base64url").toString("utf8"))
    if (typeof parsed !== "object" || parsed === null) return undefined
    const { state, nonce, verifier } = parsed as Record<string, unknown>
    return typeof state === "string" && typeof nonce === "string" && typeof verifier === "string"
      ? { state, nonce, verifier }
      : undefined
  } catch {
    return undefined
  }
}

const flowCookie = (request: HttpServerRequest, config: typeof AdminApiConfig.Service) => ({
  path: "/api/auth/oidc/",
  httpOnly: true,
  sameSite: "lax" as const,
  secure: isHttps(request, config.trustedProxies)
})

/** A claim as a list of strings (a single string is a list of one). */
const stringsOf = (value: unknown): ReadonlyArray<string> =>
  typeof value === "string"
    ? [value]
    : Array.isArray(value)
    ? value.filter((v): v is string => typeof v === "string")
    : []

/** The handlers of the `sso` group. @category handlers */
export const layer = HttpApiBuilder.group(
  Api,
  "sso",
  Effect.fn(function*(handlers) {
    const users = yield* Users
    const sessions = yield* Sessions
    const accounts = yield* Accounts
    const limiter = yield* LoginLimiter
    const catalogRepo = yield* CatalogRepo

    const oidcOf = Effect.gen(function*() {
      const config = yield* AdminApiConfig
      if (config.oidc === undefined) {
        return yield* ApiError.notFound(
          "Single sign-on is not configured on this gateway (auth.oidc in the configuration file)."
        )
      }
      return { config, oidc: config.oidc }
    })

    /** The user the verified claims name: found, or created; their role and groups as the provider says. */
    const signIn = Effect.fnUntraced(function*(oidc: OidcSettings, claims: Record<string, unknown>) {
      const claimNames = oidc.usernameClaim !== undefined ? [oidc.usernameClaim] : ["preferred_username", "email"]
      const claimName = claimNames.find((name) => typeof claims[name] === "string" && String(claims[name]).length > 0)
      if (claimName === undefined) {
        return yield* refuse(
          `the ID token has no ${claimNames.join(" or ")} claim to name the user by (set auth.oidc.username_claim)`
        )
      }
      const name = String(claims[claimName])
      const providerGroups = oidc.groupsClaim !== undefined ? stringsOf(claims[oidc.groupsClaim]) : []
      const mapped = [
        ...new Set(providerGroups.flatMap((g) => oidc.groupMap[g] !== undefined ? [oidc.groupMap[g]!] : []))
      ]
      const admin = providerGroups.some((g) => oidc.adminGroups.includes(g))
      if (mapped.length > 0) {
        const stored = yield* orApiError(catalogRepo.listGroups)
        const snapshot = yield* (yield* Catalog.Catalog).current
        const known = new Set([...stored.map((r) => r.group.name), ...snapshot.groups.keys(), "default"])
        const missing = mapped.find((g) => !known.has(g))
        if (missing !== undefined) {
          return yield* refuse(
            `auth.oidc.group_map maps your provider group to '${missing}', which is not a group here. Tell an administrator.`,
            false
          )
        }
      }
      let user = yield* orApiError(users.findByName(name))
      if (user !== undefined && user.deletedAt !== null) {
        return yield* refuse(`the account '${Text.clip(name)}' was deleted. Ask an administrator.`)
      }
      if (user === undefined) {
        if (!oidc.autoCreate) {
          return yield* refuse(
            `there is no account named '${
              Text.clip(name)
            }' here, and accounts are not created at first sign-in (auth.oidc.auto_create). Ask an administrator to create it.`
          )
        }
        user = yield* orApiError(users.create({ name, role: admin ? "admin" : "user", source: "console" }))
        if (mapped.length > 0) yield* orApiError(users.setGroups(user.id, mapped))
        if (oidc.initialBalanceNanos > 0n) {
          yield* orApiError(
            accounts.topUp(user.id, oidc.initialBalanceNanos, "opening balance (single sign-on)", "sso")
          )
        }
        yield* Effect.logInfo("single sign-on created a user").pipe(
          Effect.annotateLogs({ user: name, role: admin ? "admin" : "user", groups: mapped.join(",") })
        )
      } else {
        if (!user.enabled) return yield* refuse(`the account '${Text.clip(name)}' is disabled. Ask an administrator.`)
        // The provider decides the role (when admin groups are configured) and the groups (when a mapped one is given).
        if (oidc.adminGroups.length > 0 && (user.role === "admin") !== admin) {
          yield* orApiError(users.setRole(user.id, admin ? "admin" : "user"))
        }
        if (mapped.length > 0) yield* orApiError(users.setGroups(user.id, mapped))
      }
      yield* invalidate("users", [user.id])
      return user
    })

    return handlers.handleAll({
      methods: Effect.fn("sso.methods")(function*() {
        const config = yield* AdminApiConfig
        return {
          password: config.passwordLogin !== false,
          sso: config.oidc === undefined ? null : { name: config.oidc.name, startUrl: START_PATH }
        } satisfies C.AuthMethods
      }),

      oidcStart: Effect.fn("sso.oidcStart")(function*({ request }) {
        const { config, oidc } = yield* oidcOf
        const configuration = yield* Effect.catch(configurationOf(oidc), (refused) => Effect.succeed(refused))
        if (configuration instanceof Refused) return backToSignIn(request, config, configuration.message)
        const verifier = client.randomPKCECodeVerifier()
        const challenge = yield* Effect.promise(() => client.calculatePKCECodeChallenge(verifier))
        const flow: Flow = { state: client.randomState(), nonce: client.randomNonce(), verifier }
        const scopes = [...new Set(["openid", ...oidc.scopes])]
        const target = client.buildAuthorizationUrl(configuration, {
          redirect_uri: redirectUri(request, config, oidc),
          scope: scopes.join(" "),
          code_challenge: challenge,
          code_challenge_method: "S256",
          state: flow.state,
          nonce: flow.nonce
        })
        return HttpServerResponse.redirect(target.href, { status: 302 }).pipe(
          HttpServerResponse.setCookieUnsafe(FLOW_COOKIE, base64url(JSON.stringify(flow)), {
            ...flowCookie(request, config),
            maxAge: FLOW_TTL
          })
        )
      }),

      oidcCallback: Effect.fn("sso.oidcCallback")(function*({ request }) {
        const { config, oidc } = yield* oidcOf
        const address = clientAddress(request, config.trustedProxies)
        const attempt = Effect.gen(function*() {
          const wait = yield* limiter.retryAfter(LIMITER_SUBJECT, address)
          if (wait > 0) return yield* refuse(`too many failed sign-ins. Try again in ${wait} seconds.`, false)
          const flow = parseFlow(request.cookies[FLOW_COOKIE])
          if (flow === undefined) {
            return yield* refuse(
              "this sign-in was not started here, or took longer than 10 minutes. Start it again from the sign-in page."
            )
          }
          const configuration = yield* configurationOf(oidc)
          // The provider's answer, read against the callback's public address (the gateway may sit behind a proxy).
          const query = request.url.includes("?") ? request.url.slice(request.url.indexOf("?")) : ""
          const current = new URL(`${redirectUri(request, config, oidc)}${query}`)
          const tokens = yield* Effect.tryPromise({
            try: () =>
              client.authorizationCodeGrant(configuration, current, {
                pkceCodeVerifier: flow.verifier,
                expectedState: flow.state,
                expectedNonce: flow.nonce,
                idTokenExpected: true
              }),
            catch: (cause) => new Refused(describeError(cause))
          })
          const claims = tokens.claims()
          if (claims === undefined) return yield* refuse("the provider sent no ID token")
          return yield* signIn(oidc, claims as Record<string, unknown>)
        })
        const outcome = yield* attempt.pipe(
          Effect.map((user) => ({ _tag: "SignedIn" as const, user })),
          // A refusal of the store (a name it does not take, say) goes back to the sign-in page too.
          Effect.catch((error) =>
            error instanceof Refused
              ? Effect.succeed(error)
              : error instanceof ApiError.ApiError
              ? Effect.succeed(new Refused(error.message, false))
              : Effect.fail(error)
          )
        )
        if (outcome._tag === "Refused") {
          if (outcome.counts) yield* limiter.fail(LIMITER_SUBJECT, address)
          yield* Effect.logWarning("single sign-on refused").pipe(Effect.annotateLogs({ reason: outcome.message }))
          return backToSignIn(request, config, `Single sign-on failed: ${outcome.message}`)
        }
        yield* limiter.succeed(LIMITER_SUBJECT, address)
        const session = yield* orApiError(sessions.create(outcome.user.id))
        return HttpServerResponse.redirect("/console/", { status: 302 }).pipe(
          HttpServerResponse.setCookieUnsafe(COOKIE, session.token, {
            path: "/",
            httpOnly: true,
            sameSite: "lax",
            secure: isHttps(request, config.trustedProxies),
            maxAge: Duration.millis(config.sessionTtlMs)
          }),
          HttpServerResponse.expireCookieUnsafe(FLOW_COOKIE, flowCookie(request, config))
        )
      })
    })
  })
)

/** Back to the sign-in page, saying why (the flow's cookie cleared). */
const backToSignIn = (request: HttpServerRequest, config: typeof AdminApiConfig.Service, message: string) =>
  HttpServerResponse.redirect(`/console/?sso_error=${encodeURIComponent(message)}`, { status: 302 }).pipe(
    HttpServerResponse.expireCookieUnsafe(FLOW_COOKIE, flowCookie(request, config))
  )
