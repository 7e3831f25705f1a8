/**
 * Who is calling the management API and the middleware that guards its
 * endpoints (see `Api.ts` for who may call what); `Middleware.ts` implements
 * them on the server.
 *
 * Browser-safe: depends on `effect` (and types of core) only.
 *
 * @since 0.1.0
 */
import type { Domain } from "@modelgate/core"
import { Context } from "effect"
import { HttpApiMiddleware, HttpApiSecurity, OpenApi } from "effect/http-api"
import * as ApiError from "./ApiError.ts"

// ---------------------------------------------------------------------------
// Who is calling
// ---------------------------------------------------------------------------

/** The session cookie's name. @category constants */
export const COOKIE = "mg_session"

/** The CSRF header's name. @category constants */
export const CSRF_HEADER = "x-csrf-token"

/**
 * Who is calling, and how they proved it.
 *
 * @category principal
 */
export interface PrincipalShape {
  readonly userId: string
  readonly userName: string
  readonly role: Domain.Role
  readonly via: "session" | "key"
  /** The API key that authenticated the call (keys only). */
  readonly key: Domain.ApiKey | undefined
  /** The session's cookie token, CSRF token and end (sessions only). */
  readonly session: { readonly token: string; readonly csrfToken: string; readonly expiresAt: number } | undefined
}

/**
 * The caller of an authenticated endpoint, provided by `Authentication`.
 *
 * @category principal
 */
export class Principal extends Context.Service<Principal, PrincipalShape>()("modelgate/admin-api/Principal") {}

// ---------------------------------------------------------------------------
// Middleware
// ---------------------------------------------------------------------------

const sessionScheme = HttpApiSecurity.apiKey({ in: "cookie", key: COOKIE }).pipe(
  HttpApiSecurity.annotate(
    OpenApi.Description,
    "A console session: the cookie POST /api/auth/login sets. State-changing requests (POST, PATCH, DELETE) also send " +
      `the session's csrfToken in the '${CSRF_HEADER}' header.`
  )
)

const bearerScheme = HttpApiSecurity.bearer.pipe(
  HttpApiSecurity.annotate(
    OpenApi.Description,
    "An API key (sk-...). Keys may read; creating keys, changing limits and other changes to one's own account need a session. " +
      "An admin's key may call the admin endpoints, but never change its own key or user."
  )
)

/**
 * A console session or an API key; provides the `Principal`. A valid session
 * cookie wins; otherwise the bearer key decides (and its refusal is the answer).
 *
 * @category middleware
 */
export class Authentication extends HttpApiMiddleware.Service<Authentication, { provides: Principal }>()(
  "modelgate/admin-api/Authentication",
  { security: { session: sessionScheme, bearer: bearerScheme }, error: ApiError.responses }
) {}

/**
 * State-changing requests made with a session carry its CSRF token.
 *
 * @category middleware
 */
export class Csrf extends HttpApiMiddleware.Service<Csrf, { requires: Principal }>()("modelgate/admin-api/Csrf", {
  error: ApiError.responses
}) {}

/**
 * An API key may not call the endpoint (403 `session_required`).
 *
 * @category middleware
 */
export class SessionOnly
  extends HttpApiMiddleware.Service<SessionOnly, { requires: Principal }>()("modelgate/admin-api/SessionOnly", {
    error: ApiError.responses
  })
{}

/**
 * Administrators only (403 `admin_only`).
 *
 * @category middleware
 */
export class AdminOnly
  extends HttpApiMiddleware.Service<AdminOnly, { requires: Principal }>()("modelgate/admin-api/AdminOnly", {
    error: ApiError.responses
  })
{}

/**
 * Every request: a body is JSON (415 otherwise), and one the contract cannot
 * decode is a 400 naming the field. It declares every error response.
 *
 * @category middleware
 */
export class Requests extends HttpApiMiddleware.Service<Requests>()("modelgate/admin-api/Requests", {
  error: ApiError.responses
}) {}
