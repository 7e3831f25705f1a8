/**
 * The console's API client: one typed `call` per endpoint of the management
 * API, built from the shared endpoint table (`@modelgate/admin-api/Endpoints`),
 * so URLs, bodies and answers are checked against the server's own Schemas.
 * Answers are decoded with the endpoint's response Schema; errors become
 * `ApiFailure` with the server's message and the offending field.
 *
 * @since 0.1.0
 */
import type * as Contract from "@modelgate/admin-api/Contract"
import * as Endpoints from "@modelgate/admin-api/Endpoints"
import { Schema } from "effect"

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
  constructor(status: number, message: string, param: string | null, code: string | null, retryAfter: number | null = null) {
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

type TypeOf<S> = S extends Schema.Top ? S["Type"] : never
type EncodedOf<S> = S extends Schema.Top ? S["Encoded"] : never

/** What a call takes: path parameters, the query (as strings) and the body. @category models */
export interface CallOptions<E extends Endpoints.Endpoint> {
  readonly params?: Readonly<Record<string, string>>
  readonly query?: E["query"] extends Schema.Top ? Partial<Record<keyof EncodedOf<E["query"]>, string | number | undefined>> : never
  readonly body?: E["body"] extends Schema.Top ? EncodedOf<E["body"]> : never
}

/** Builds an endpoint's URL with its parameters and query. @category urls */
export const urlOf = <E extends Endpoints.Endpoint>(endpoint: E, options: CallOptions<E> = {}): string => {
  const path = Endpoints.fill(endpoint.path, options.params)
  const search = new URLSearchParams()
  for (const [key, value] of Object.entries(options.query ?? {})) {
    if (value !== undefined && value !== "") search.set(key, String(value))
  }
  const text = search.toString()
  return text === "" ? path : `${path}?${text}`
}

const ErrorBody = Schema.Struct({
  error: Schema.Struct({ message: Schema.String, param: Schema.NullOr(Schema.String), code: Schema.NullOr(Schema.String) })
})

/**
 * Calls an endpoint and decodes its answer.
 *
 * @category calls
 */
export const call = async <E extends Endpoints.Endpoint>(
  endpoint: E,
  options: CallOptions<E> = {}
): Promise<E["response"] extends Schema.Top ? TypeOf<E["response"]> : string> => {
  const headers: Record<string, string> = { accept: "application/json" }
  if (endpoint.method !== "GET" && csrfToken !== null) headers["x-csrf-token"] = csrfToken
  let body: string | null = null
  if (endpoint.body !== undefined || endpoint.method === "POST") {
    headers["content-type"] = "application/json"
    body = JSON.stringify(options.body ?? {})
  }
  let response: Response
  try {
    response = await fetch(urlOf(endpoint, options), { method: endpoint.method, headers, body, credentials: "same-origin" })
  } catch {
    throw new ApiFailure(0, "network", null, "network")
  }
  const text = await response.text()
  if (!response.ok) {
    let parsed: unknown
    try {
      parsed = JSON.parse(text)
    } catch {
      parsed = undefined
    }
    const decoded = Schema.decodeUnknownOption(ErrorBody)(parsed)
    const retry = Number(response.headers.get("retry-after") ?? Number.NaN)
    if (decoded._tag === "Some") {
      const e = decoded.value.error
      throw new ApiFailure(response.status, e.message, e.param, e.code, Number.isFinite(retry) ? retry : null)
    }
    throw new ApiFailure(response.status, `HTTP ${response.status}`, null, null)
  }
  if (endpoint.response === "csv") return text as never
  const value: unknown = JSON.parse(text)
  return Schema.decodeUnknownSync(endpoint.response as Schema.Codec<unknown, unknown>)(value) as never
}

/** The answer type of an endpoint. @category models */
export type Answer<E extends Endpoints.Endpoint> = E["response"] extends Schema.Top ? TypeOf<E["response"]> : string

export type { Contract }
export { Endpoints }
