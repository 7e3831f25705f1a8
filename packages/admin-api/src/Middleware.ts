/**
 * The server side of the contract's middleware (see `Api.ts` for what each
 * one guards): who is calling, CSRF, what an API key may not do, admins only,
 * and JSON bodies with field-level 400s.
 *
 * @since 0.1.0
 */
import { Admission, KeyStore } from "@modelgate/core"
import { Sessions } from "@modelgate/store/Sessions"
import { Users } from "@modelgate/store/Users"
import { Effect, Layer, Redacted } from "effect"
import { HttpServerRequest } from "effect/http"
import { HttpApiError } from "effect/http-api"
import {
  AdminOnly,
  Authentication,
  COOKIE,
  Csrf,
  CSRF_HEADER,
  Principal,
  type PrincipalShape,
  Requests,
  SessionOnly
} from "./Api.ts"
import * as ApiError from "./ApiError.ts"
import { safeEqual } from "./Http.ts"

const failWith = (error: unknown) => Effect.flatMap(ApiError.fromUnknown(error), Effect.fail)

/**
 * A valid session cookie wins; without one the bearer key decides, and its
 * refusal (unknown, disabled, expired key) is the answer.
 *
 * @category layers
 */
export const authenticationLayer = Layer.effect(
  Authentication,
  Effect.gen(function*() {
    const sessions = yield* Sessions
    const users = yield* Users
    const keyStore = yield* KeyStore.KeyStore
    return Authentication.of({
      session: (httpEffect, { credential }) =>
        Effect.gen(function*() {
          const token = Redacted.value(credential)
          if (token.length === 0) return yield* ApiError.unauthenticated()
          const session = yield* sessions.find(token).pipe(Effect.catch(failWith))
          if (session === undefined) return yield* ApiError.unauthenticated("Your session has ended. Sign in again.")
          const user = yield* users.findById(session.userId).pipe(Effect.catch(failWith))
          if (user === undefined || !user.enabled) {
            yield* sessions.remove(token).pipe(Effect.catch(failWith))
            return yield* ApiError.unauthenticated("Your account is disabled or no longer exists.")
          }
          const principal: PrincipalShape = {
            userId: user.id,
            userName: user.name,
            role: user.role,
            via: "session",
            key: undefined,
            session: { token, csrfToken: session.csrfToken, expiresAt: session.expiresAt }
          }
          return yield* Effect.provideService(httpEffect, Principal, principal)
        }),
      bearer: (httpEffect, { credential }) =>
        Effect.gen(function*() {
          const secret = Redacted.value(credential)
          if (secret.length === 0) {
            // Neither a valid session nor a key: say why the cookie, if one was sent, did not do.
            const request = yield* HttpServerRequest.HttpServerRequest
            return yield* (request.cookies[COOKIE] ?? "") === ""
              ? ApiError.unauthenticated()
              : ApiError.unauthenticated("Your session has ended (or your account was disabled). Sign in again.")
          }
          const key = yield* Admission.authenticate(secret).pipe(
            Effect.provideService(KeyStore.KeyStore, keyStore),
            Effect.catch(failWith)
          )
          const principal: PrincipalShape = {
            userId: key.userId,
            userName: key.userName,
            role: key.userRole,
            via: "key",
            key,
            session: undefined
          }
          return yield* Effect.provideService(httpEffect, Principal, principal)
        })
    })
  })
)

/**
 * State-changing requests made with a session must carry its CSRF token.
 *
 * @category layers
 */
export const csrfLayer = Layer.succeed(Csrf)((httpEffect) =>
  Effect.gen(function*() {
    const principal = yield* Principal
    const request = yield* HttpServerRequest.HttpServerRequest
    if (principal.via === "session" && request.method !== "GET" && request.method !== "HEAD") {
      const sent = request.headers[CSRF_HEADER]
      if (sent === undefined || principal.session === undefined || !safeEqual(sent, principal.session.csrfToken)) {
        return yield* ApiError.forbidden(
          `Missing or wrong CSRF token: send the csrfToken from sign-in in the '${CSRF_HEADER}' header on every state-changing request.`,
          "csrf_failed"
        )
      }
    }
    return yield* httpEffect
  })
)

/**
 * Endpoints an API key may not call: a key reads; creating keys, changing
 * limits and spending changes need a console session.
 *
 * @category layers
 */
export const sessionOnlyLayer = Layer.succeed(SessionOnly)((httpEffect) =>
  Effect.gen(function*() {
    const principal = yield* Principal
    if (principal.via === "key") {
      return yield* ApiError.forbidden(
        "An API key may only read (its owner's details, usage and ledger, and its own key). " +
          "Creating keys, changing limits and other changes to your account need a console session: sign in at /console/.",
        "session_required"
      )
    }
    return yield* httpEffect
  })
)

/**
 * Administrators only.
 *
 * @category layers
 */
export const adminOnlyLayer = Layer.succeed(AdminOnly)((httpEffect) =>
  Effect.gen(function*() {
    const principal = yield* Principal
    if (principal.role !== "admin") {
      return yield* ApiError.forbidden("This endpoint is for administrators only.", "admin_only")
    }
    return yield* httpEffect
  })
)

const parts: Readonly<Record<string, string>> = {
  Params: "path",
  Query: "query",
  Headers: "headers",
  Payload: "body"
}

/** Whether a request has a body: a non-zero `content-length`, or a chunked one. */
const hasBody = (request: HttpServerRequest.HttpServerRequest): boolean => {
  const length = request.headers["content-length"]
  return length !== undefined ? length.trim() !== "0" : request.headers["transfer-encoding"] !== undefined
}

const isJson = (contentType: string): boolean => /^application\/json\s*(;|$)/i.test(contentType.trim())

/**
 * Every request: a body must be JSON (a form or `text/plain` post, which a
 * browser sends cross-site without asking, is refused before anything runs),
 * and a request the contract cannot decode is a 400 naming the field.
 *
 * @category layers
 */
export const requestsLayer = Layer.succeed(Requests)((httpEffect) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    if (request.method !== "GET" && request.method !== "HEAD") {
      // A declared type must be JSON; a body sent without one (a Blob posted cross-site) is refused too.
      const contentType = request.headers["content-type"]
      if (contentType !== undefined ? !isJson(contentType) : hasBody(request)) {
        return yield* ApiError.unsupportedMediaType(contentType ?? "none")
      }
    }
    return yield* Effect.catch(httpEffect, (error: unknown) => {
      if (!HttpApiError.HttpApiSchemaError.is(error)) return Effect.fail(error as never)
      const part = parts[error.kind]
      if (part === undefined) {
        return Effect.andThen(
          Effect.logError("admin-api answer does not match its schema", error.cause),
          Effect.fail(ApiError.internal())
        )
      }
      const issue = error.cause.issue
      if (
        part === "body" && issue._tag === "InvalidValue" && /valid JSON/.test(String(issue.annotations?.message ?? ""))
      ) {
        return Effect.fail(ApiError.invalid("The request body is not valid JSON.", null, "invalid_json"))
      }
      return Effect.fail(ApiError.fromSchemaIssue(issue, part))
    })
  })
)

/**
 * The middleware of the contract, needing the sessions, users and (for keys)
 * core's key store.
 *
 * @category layers
 */
export const layer = Layer.mergeAll(authenticationLayer, csrfLayer, sessionOnlyLayer, adminOnlyLayer, requestsLayer)
