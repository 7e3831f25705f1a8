/**
 * OpenAI's informational rate-limit headers, rendered from a limiter
 * `Snapshot`, for successful answers as well as refusals:
 *
 * | header | value |
 * | --- | --- |
 * | `x-ratelimit-limit-requests` | the request limit of the most constrained subject |
 * | `x-ratelimit-remaining-requests` | requests left in its window after this call |
 * | `x-ratelimit-reset-requests` | when the next request frees up, e.g. `6m0s`, `1.5s`, `12ms` |
 * | `x-ratelimit-limit-tokens` / `-remaining-tokens` / `-reset-tokens` | the same for tokens |
 *
 * Headers of a dimension no subject limits are left out. Durations use
 * OpenAI's format (Go's `time.Duration` notation at millisecond precision).
 *
 * @since 0.1.0
 */
import type { RateLimiter } from "@modelgate/core"

/**
 * A duration in OpenAI's header format: `0s`, `12ms`, `1s`, `1.5s`, `6m0s`,
 * `1h2m3.25s`. Negative or fractional milliseconds are rounded to whole
 * milliseconds, at least 0.
 *
 * @category formatting
 */
export const formatDuration = (milliseconds: number): string => {
  const ms = Number.isFinite(milliseconds) ? Math.max(0, Math.round(milliseconds)) : 0
  if (ms === 0) return "0s"
  if (ms < 1000) return `${ms}ms`
  const hours = Math.floor(ms / 3_600_000)
  const minutes = Math.floor((ms % 3_600_000) / 60_000)
  const rest = ms % 60_000
  const whole = Math.floor(rest / 1000)
  const fraction = rest % 1000
  const seconds = fraction === 0 ? `${whole}` : `${whole}.${String(fraction).padStart(3, "0").replace(/0+$/, "")}`
  if (hours > 0) return `${hours}h${minutes}m${seconds}s`
  if (minutes > 0) return `${minutes}m${seconds}s`
  return `${seconds}s`
}

/**
 * The `x-ratelimit-*` headers of a snapshot as a plain record (lower-case
 * names), leaving out the dimensions that have no limit. An unlimited
 * snapshot gives `{}`.
 *
 * @example
 * ```ts
 * import { RateLimitHeaders } from "@modelgate/openai-adapter"
 *
 * RateLimitHeaders.toHeaders({
 *   limitRequests: 10, remainingRequests: 9, resetRequestsMs: 60_000,
 *   limitTokens: null, remainingTokens: null, resetTokensMs: null
 * })
 * // { "x-ratelimit-limit-requests": "10", "x-ratelimit-remaining-requests": "9", "x-ratelimit-reset-requests": "1m0s" }
 * ```
 *
 * @category rendering
 */
export const toHeaders = (snapshot: RateLimiter.Snapshot): Record<string, string> => {
  const headers: Record<string, string> = {}
  if (snapshot.limitRequests !== null) headers["x-ratelimit-limit-requests"] = String(snapshot.limitRequests)
  if (snapshot.remainingRequests !== null) {
    headers["x-ratelimit-remaining-requests"] = String(snapshot.remainingRequests)
  }
  if (snapshot.resetRequestsMs !== null) {
    headers["x-ratelimit-reset-requests"] = formatDuration(snapshot.resetRequestsMs)
  }
  if (snapshot.limitTokens !== null) headers["x-ratelimit-limit-tokens"] = String(snapshot.limitTokens)
  if (snapshot.remainingTokens !== null) headers["x-ratelimit-remaining-tokens"] = String(snapshot.remainingTokens)
  if (snapshot.resetTokensMs !== null) headers["x-ratelimit-reset-tokens"] = formatDuration(snapshot.resetTokensMs)
  return headers
}
