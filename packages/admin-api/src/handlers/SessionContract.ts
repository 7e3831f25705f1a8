/**
 * The `session` group of the management API: signing in and out, the session,
 * the password. Its request and response Schemas and its endpoints
 * (`SessionGroup`); `Contract.ts` states the wire conventions and `Api.ts`
 * composes the groups.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { Authentication, Csrf, SessionOnly } from "../Guards.ts"
import { describe } from "../internal/endpoints.ts"
import { EpochMs, NewPassword, Ok, Role, Usd } from "./SharedContract.ts"

/** `POST /api/auth/login`. @category auth */
export const LoginRequest = Schema.Struct({
  username: Schema.String.check(Schema.isMinLength(1, { message: "Enter your user name" })),
  password: Schema.String.check(Schema.isMinLength(1, { message: "Enter your password" }))
})
export type LoginRequest = typeof LoginRequest.Type

/** The signed-in user. @category auth */
export const Me = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  role: Role,
  balance: Usd
})
export type Me = typeof Me.Type

/**
 * A session: who is signed in, the CSRF token to send as `x-csrf-token` on
 * every state-changing request, and when the session ends. (`csrfToken` is
 * null when the caller authenticated with an API key.)
 *
 * @category auth
 */
export const SessionInfo = Schema.Struct({
  user: Me,
  csrfToken: Schema.NullOr(Schema.String),
  expiresAt: Schema.NullOr(EpochMs)
})
export type SessionInfo = typeof SessionInfo.Type

/** `POST /api/auth/password`. @category auth */
export const ChangePasswordRequest = Schema.Struct({
  currentPassword: Schema.String.check(Schema.isMinLength(1, { message: "Enter your current password" })),
  newPassword: NewPassword
})
export type ChangePasswordRequest = typeof ChangePasswordRequest.Type

/** Sign-in, sign-out, the current session, one's password. @category groups */
export class SessionGroup extends HttpApiGroup.make("session")
  .add(
    HttpApiEndpoint.post("login", "/api/auth/login", { payload: LoginRequest, success: SessionInfo })
      .annotateMerge(
        describe("Sign in with user name and password; sets the mg_session cookie. JSON only (login CSRF).")
      ),
    HttpApiEndpoint.post("logout", "/api/auth/logout", { success: Ok })
      .annotateMerge(
        describe("Sign out: ends the session and clears the cookie (needs the CSRF token while a session is live).")
      )
  )
  .add(
    HttpApiEndpoint.get("session", "/api/auth/session", { success: SessionInfo })
      .annotateMerge(describe("The current session (csrfToken is null for API keys).")).middleware(Csrf).middleware(
        Authentication
      ),
    HttpApiEndpoint.post("changePassword", "/api/auth/password", { payload: ChangePasswordRequest, success: Ok })
      .annotateMerge(describe("Change one's own password; ends one's other sessions."))
      .middleware(SessionOnly).middleware(Csrf).middleware(Authentication)
  )
{}
