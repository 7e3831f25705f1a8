/**
 * The console's API client: Effect's `HttpApiClient` derived from the
 * management API's contract (`@modelgate/admin-api/Api`), the same definition
 * the server is built from, so paths, bodies and answers are checked against
 * the server's own Schemas on both sides.
 *
 * React Query wants promises, so `call` runs one client call and resolves
 * with its decoded answer, or rejects with an `ApiFailure`: the HTTP status,
 * the server's message, the field it names and its `code` (decoded from the
 * contract's error responses into the API's `ApiError`), or `network`.
 * `urls` builds the links of the CSV downloads from the same contract.
 *
 * @since 0.1.0
 */
import { Api } from "@modelgate/admin-api/Api"
import { ApiError } from "@modelgate/admin-api/ApiError"
import type * as Contract from "@modelgate/admin-api/Contract"
import { Cause, Effect, Exit } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"
import { HttpApiClient } from "effect/http-api"

/**
 * A refused or failed call: the HTTP status, the server's message, the field
 * it names (`param`, for showing next to that field), its stable `code`, and
 * the `retry-after` seconds of a 429.
 *
 * @category errors
 */
export class ApiFailure extends Error {
  readonly status: number
  readonly param: string | null
  readonly code: string | null
  readonly retryAfter: number | null
  constructor(
    status: number,
    message: string,
    param: string | null,
    code: string | null,
    retryAfter: number | null = null
  ) {
    super(message)
    this.name = "ApiFailure"
    this.status = status
    this.param = param
    this.code = code
    this.retryAfter = retryAfter
  }
}

let csrfToken: string | null = null

/** Remembers the session's CSRF token, sent on every state-changing call. @category session */
export const setCsrfToken = (token: string | null): void => {
  csrfToken = token
}

/** The session's CSRF token, for calls made without the typed client (the playground's stream). @category session */
export const currentCsrfToken = (): string | null => csrfToken

/** The typed client of the whole API. @category client */
export type Client = HttpApiClient.ForApi<typeof Api>

const withCsrf = (request: HttpClientRequest.HttpClientRequest) =>
  request.method !== "GET" && request.method !== "HEAD" && csrfToken !== null
    ? HttpClientRequest.setHeader(request, "x-csrf-token", csrfToken)
    : request

const origin = (): string => globalThis.location?.origin ?? "http://localhost"

const makeClient = HttpApiClient.make(Api, {
  baseUrl: origin(),
  transformClient: HttpClient.mapRequest(withCsrf)
}).pipe(Effect.provide(FetchHttpClient.layer))

let client: Client | undefined

/** The client, made on first use. */
const theClient = (): Client => client ??= Effect.runSync(makeClient)

/** `fetch` as it is when a call runs (tests put their own in its place). */
const currentFetch: typeof globalThis.fetch = (input, init) => globalThis.fetch(input, init)

/** The failure of a call, as an `ApiFailure`. */
const failureOf = (cause: Cause.Cause<unknown>): ApiFailure => {
  const error = Cause.squash(cause)
  if (error instanceof ApiError) {
    return new ApiFailure(error.status, error.message, error.param, error.code, error.retryAfterSeconds ?? null)
  }
  const tag = typeof error === "object" && error !== null && "_tag" in error ? String(error._tag) : ""
  const reason = typeof error === "object" && error !== null && "reason" in error
    ? (error as { reason: { _tag?: string; response?: { status?: number } } }).reason
    : undefined
  if (tag === "HttpClientError" && reason?._tag === "TransportError") {
    return new ApiFailure(0, "network", null, "network")
  }
  const status = reason?.response?.status
  if (typeof status === "number") return new ApiFailure(status, `HTTP ${status}`, null, null)
  return new ApiFailure(0, error instanceof Error ? error.message : String(error), null, null)
}

/**
 * Runs one call of the typed client (`call((api) => api.keys.list())`) and
 * resolves with its answer, or rejects with an `ApiFailure`.
 *
 * @category calls
 */
export const call = async <A, E>(use: (api: Client) => Effect.Effect<A, E>): Promise<A> => {
  const exit = await Effect.runPromiseExit(
    Effect.suspend(() => use(theClient())).pipe(
      Effect.provideService(FetchHttpClient.Fetch, currentFetch),
      // Same-origin calls: no trace headers to send.
      Effect.provideService(HttpClient.TracerPropagationEnabled, false)
    )
  )
  if (Exit.isSuccess(exit)) return exit.value
  throw failureOf(exit.cause)
}

/**
 * The URLs of the API's endpoints (for links such as the CSV downloads).
 *
 * @category urls
 */
export const urls = HttpApiClient.urlBuilder(Api)

export type { Contract }
