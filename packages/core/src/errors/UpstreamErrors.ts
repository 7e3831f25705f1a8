/**
 * What the gateway tells a client when an upstream fails, in the same words
 * whatever the dialects: each adapter's `ErrorEnvelope.classifyUpstream` reads
 * its provider's status, headers and error body and builds one of these, and
 * the client's dialect writes it in its own envelope. The upstream's own
 * message is passed on only when it rejected the request itself (a 4xx that
 * is not about the channel's key or account): a refusal of the key may quote
 * the key.
 *
 * @example
 * ```ts
 * import { UpstreamErrors } from "@modelgate/core"
 *
 * UpstreamErrors.rateLimited(UpstreamErrors.retryAfterSeconds({ "retry-after-ms": "1500" }))
 * // UpstreamRateLimited { message: "The upstream is rate-limiting the gateway for this model. Retry after 2 seconds.", retryAfterSeconds: 1.5 }
 * UpstreamErrors.rejected(400, { message: "bad temperature", param: "temperature" })
 * // UpstreamRejected { status: 400, message: "bad temperature", param: "temperature" }
 * ```
 *
 * @since 0.1.0
 */
import { UpstreamRateLimited, UpstreamRejected, UpstreamTimeout, UpstreamUnavailable } from "./GatewayError.ts"

/** The errors an upstream's failure becomes. @category models */
export type UpstreamError = UpstreamUnavailable | UpstreamRateLimited | UpstreamRejected | UpstreamTimeout

/**
 * Response headers as the HTTP layer hands them over (Node's
 * `IncomingHttpHeaders`, a plain record; a repeated header as an array).
 *
 * @category models
 */
export type Headers = Readonly<Record<string, string | ReadonlyArray<string> | undefined>>

/**
 * A header's value, its name matched without regard to case (the first
 * value of a repeated header).
 *
 * @category headers
 */
export const header = (headers: Headers, name: string): string | undefined => {
  let value = headers[name]
  if (value === undefined) {
    const lower = name.toLowerCase()
    for (const key in headers) {
      if (key.toLowerCase() === lower) {
        value = headers[key]
        break
      }
    }
  }
  return typeof value === "string" ? value : value?.[0]
}

const nonNegative = (text: string | undefined): number | undefined => {
  if (text === undefined || text.trim().length === 0) return undefined
  const value = Number(text)
  return Number.isFinite(value) && value >= 0 ? value : undefined
}

/**
 * The delay an upstream asks for, in seconds: `retry-after-ms` (OpenAI,
 * Anthropic) or a numeric `retry-after`. (The HTTP-date form of `retry-after`
 * needs a clock and is ignored.)
 *
 * @category headers
 */
export const retryAfterSeconds = (headers: Headers): number | undefined => {
  const ms = nonNegative(header(headers, "retry-after-ms"))
  return ms === undefined ? nonNegative(header(headers, "retry-after")) : ms / 1000
}

/**
 * An error body as JSON, or `undefined` when it is none (an HTML error page,
 * a proxy's plain text).
 *
 * @category bodies
 */
export const parseBody = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/**
 * The upstream clearly refused the channel's `refused` (its credentials, or
 * the account it bills): the gateway's configuration, which an administrator
 * must fix by checking `check`; nothing of the upstream's message is passed
 * on. It carries `credentialsRefused`: the call moves to another key, and a
 * health probe with the key decides whether it is disabled. Only a refusal
 * of the key itself is one (HTTP 401, and the like in a dialect's words); a
 * 403 about something the request named is the caller's (`rejected`).
 *
 * @category constructors
 */
export const credentialsRefused = (
  status: number,
  refused = "credentials",
  check = "the channel's API key"
): UpstreamUnavailable =>
  new UpstreamUnavailable({
    status,
    credentialsRefused: true,
    message: `The upstream refused the gateway's ${refused} for this model's channel (HTTP ${status}). ` +
      `This is a gateway configuration problem, not a problem with your request: an administrator must check ${check}.`
  })

/**
 * The upstream timed out handling the request (408, 504, or its own timeout error).
 *
 * @category constructors
 */
export const timedOut = (status: number): UpstreamTimeout =>
  new UpstreamTimeout({ message: `The upstream timed out handling the request (HTTP ${status}). Retry later.` })

/**
 * The upstream is rate-limiting the gateway, asking for a delay in seconds
 * when it said one.
 *
 * @category constructors
 */
export const rateLimited = (retryAfterSeconds: number | undefined): UpstreamRateLimited => {
  const message = "The upstream is rate-limiting the gateway for this model." +
    (retryAfterSeconds === undefined ? " Retry later." : ` Retry after ${Math.ceil(retryAfterSeconds)} seconds.`)
  return retryAfterSeconds === undefined
    ? new UpstreamRateLimited({ message })
    : new UpstreamRateLimited({ message, retryAfterSeconds })
}

/**
 * The upstream rejected the request itself (a 4xx): its own message, and the
 * code and parameter it named, are passed on.
 *
 * @category constructors
 */
export const rejected = (
  status: number,
  error?: {
    readonly message?: string | undefined
    readonly code?: string | undefined
    readonly param?: string | undefined
  }
): UpstreamRejected => {
  const out: { message: string; status: number; code?: string; param?: string } = {
    status,
    message: error?.message ?? `The upstream refused the request (HTTP ${status}).`
  }
  if (error?.code !== undefined) out.code = error.code
  if (error?.param !== undefined) out.param = error.param
  return new UpstreamRejected(out)
}

/**
 * The upstream failed (a 5xx), or answered with a status that is no error
 * the gateway knows.
 *
 * @category constructors
 */
export const failed = (status: number): UpstreamUnavailable =>
  new UpstreamUnavailable({
    status,
    message: status >= 500
      ? `The upstream failed (HTTP ${status}). Retry later.`
      : `The upstream answered with an unexpected HTTP status ${status}.`
  })
