/**
 * Sign-in, sign-out, the current session and one's password.
 *
 * @since 0.1.0
 */
import { Sessions } from "@modelgate/store/Sessions"
import { Users } from "@modelgate/store/Users"
import { Effect, Redacted } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api, COOKIE, CSRF_HEADER, Principal } from "../Api.ts"
import * as ApiError from "../ApiError.ts"
import { AdminApiConfig } from "../Config.ts"
import * as C from "../Contract.ts"
import { clientAddress, safeEqual, sessionCookie } from "../Http.ts"
import { LoginLimiter } from "../LoginLimiter.ts"
import * as Views from "../Views.ts"
import { jsonWith, orApiError } from "./Shared.ts"

const ok: C.Ok = { ok: true }

/** The handlers of the `session` group. @category handlers */
export const layer = HttpApiBuilder.group(
  Api,
  "session",
  Effect.fn(function*(handlers) {
    const users = yield* Users
    const sessions = yield* Sessions
    const limiter = yield* LoginLimiter

    return handlers.handleAll({
      login: Effect.fn("session.login")(function*({ payload, request }) {
        const config = yield* AdminApiConfig
        if (config.passwordLogin === false) {
          return yield* ApiError.forbidden(
            "Signing in with a password is turned off on this gateway (auth.password_login): use single sign-on.",
            "password_login_disabled"
          )
        }
        const address = clientAddress(request, config.trustedProxies)
        const wait = yield* limiter.retryAfter(payload.username, address)
        if (wait > 0) {
          return yield* ApiError.tooManyRequests(
            `Too many failed sign-in attempts. Try again in ${wait} seconds.`,
            wait
          )
        }
        const user = yield* orApiError(users.verifyLogin(payload.username, Redacted.make(payload.password)))
        if (user === undefined) {
          yield* limiter.fail(payload.username, address)
          return yield* new ApiError.ApiError({
            status: 401,
            type: "authentication_error",
            code: "invalid_credentials",
            message: "Wrong user name or password.",
            param: null
          })
        }
        yield* limiter.succeed(payload.username, address)
        const session = yield* orApiError(sessions.create(user.id))
        const info: C.SessionInfo = { user: Views.me(user), csrfToken: session.csrfToken, expiresAt: session.expiresAt }
        return yield* jsonWith(C.SessionInfo, info, {
          "set-cookie": sessionCookie(
            request,
            config.trustedProxies,
            session.token,
            Math.floor(config.sessionTtlMs / 1000)
          )
        })
      }),

      logout: Effect.fn("session.logout")(function*({ request }) {
        const token = request.cookies[COOKIE]
        if (token !== undefined && token.length > 0) {
          const session = yield* orApiError(sessions.find(token))
          if (session !== undefined) {
            const sent = request.headers[CSRF_HEADER]
            if (sent === undefined || !safeEqual(sent, session.csrfToken)) {
              return yield* ApiError.forbidden(`Missing or wrong CSRF token in '${CSRF_HEADER}'.`, "csrf_failed")
            }
            yield* orApiError(sessions.remove(token))
          }
        }
        const config = yield* AdminApiConfig
        return yield* jsonWith(C.Ok, ok, { "set-cookie": sessionCookie(request, config.trustedProxies, "", 0) })
      }),

      session: Effect.fn("session.session")(function*() {
        const principal = yield* Principal
        const user = yield* orApiError(users.findById(principal.userId))
        if (user === undefined) return yield* ApiError.unauthenticated("Your account no longer exists.")
        return {
          user: Views.me(user),
          csrfToken: principal.session?.csrfToken ?? null,
          expiresAt: principal.session?.expiresAt ?? null
        } satisfies C.SessionInfo
      }),

      changePassword: Effect.fn("session.changePassword")(function*({ payload, request }) {
        const principal = yield* Principal
        const config = yield* AdminApiConfig
        const address = clientAddress(request, config.trustedProxies)
        const wait = yield* limiter.retryAfter(principal.userName, address)
        if (wait > 0) {
          return yield* ApiError.tooManyRequests(`Too many wrong passwords. Try again in ${wait} seconds.`, wait)
        }
        const verified = yield* orApiError(
          users.verifyLogin(principal.userName, Redacted.make(payload.currentPassword))
        )
        if (verified === undefined) {
          yield* limiter.fail(principal.userName, address)
          return yield* ApiError.invalid(
            "currentPassword: the current password is wrong",
            "currentPassword",
            "wrong_password"
          )
        }
        yield* orApiError(users.setPassword(principal.userId, Redacted.make(payload.newPassword)))
        yield* orApiError(sessions.removeAllOf(principal.userId, principal.session?.token))
        return ok
      })
    })
  })
)
