/**
 * Keeping a channel's own secrets out of what the gateway passes on or
 * writes down. An upstream's error text may quote the request it refused,
 * credentials included (some proxies and self-hosted servers echo the
 * headers they got), and that text reaches clients (an `UpstreamRejected`
 * message, an in-band stream error), the log, the keys' health reasons and
 * the console's Test results. Everything read from an upstream's error goes
 * through `text` (or `error`) first.
 *
 * A channel's secrets are its API keys (a cloud channel's JSON keys, and the
 * secrets within them: a service account's private key, an access key's
 * secret and session token) and the values of its custom headers
 * (and the tokens within them, so `Authorization: Bearer sk-...` is caught
 * however it is quoted), except headers known to carry no secret
 * (`anthropic-version`, `content-type`, ...) and values too short to be one.
 * Each is replaced by `[redacted]`, as written and JSON-escaped.
 *
 * @since 0.1.0
 */
import { type Domain, GatewayError } from "@modelgate/core"

/** What a secret is replaced by. @category constants */
export const REDACTED = "[redacted]"

/** Values shorter than this are not treated as secrets (they would mangle ordinary words and numbers). @category constants */
export const MIN_SECRET_LENGTH = 8

/** Custom headers whose values are not secrets. @category constants */
export const PUBLIC_HEADERS: ReadonlySet<string> = new Set([
  "accept",
  "anthropic-beta",
  "anthropic-version",
  "content-type",
  "user-agent"
])

const cache = new WeakMap<Domain.Channel, ReadonlyArray<string>>()

/** The secret fields of a cloud channel's JSON key (`Credentials`). */
const SECRET_FIELDS = ["private_key", "private_key_id", "secret_access_key", "session_token"] as const

const structuredSecrets = (key: string): ReadonlyArray<string> => {
  let json: unknown
  try {
    json = JSON.parse(key)
  } catch {
    return []
  }
  if (typeof json !== "object" || json === null) return []
  const out: Array<string> = []
  for (const field of SECRET_FIELDS) {
    const value = (json as Record<string, unknown>)[field]
    if (typeof value === "string") out.push(value)
  }
  return out
}

/**
 * The secrets of a channel, longest first (so a key is replaced whole before
 * a shorter secret inside it), each as written and, when different,
 * JSON-escaped. Computed once per channel.
 *
 * @category redaction
 */
export const secretsOf = (channel: Domain.Channel): ReadonlyArray<string> => {
  const known = cache.get(channel)
  if (known !== undefined) return known
  const found = new Set<string>()
  const add = (value: string) => {
    const trimmed = value.trim()
    if (trimmed.length < MIN_SECRET_LENGTH) return
    found.add(trimmed)
    const escaped = JSON.stringify(trimmed).slice(1, -1)
    if (escaped !== trimmed) found.add(escaped)
  }
  for (const key of channel.apiKeys) {
    add(key)
    // A cloud channel's key is JSON (a service-account key, an access key pair): its secrets on their own too.
    if (key.trimStart().startsWith("{")) { for (const secret of structuredSecrets(key)) add(secret) }
  }
  for (const [name, value] of Object.entries(channel.headers)) {
    if (PUBLIC_HEADERS.has(name.toLowerCase())) continue
    add(value)
    // `Bearer sk-...`, `Basic ...`, `key=value; other=...`: each token on its own too.
    for (const token of value.split(/[\s,;=]+/)) add(token)
  }
  const secrets = [...found].sort((a, b) => b.length - a.length)
  cache.set(channel, secrets)
  return secrets
}

/**
 * `text` with every secret of `channel` replaced by `[redacted]`.
 *
 * @example
 * ```ts
 * import { Redaction } from "@modelgate/engine"
 *
 * Redaction.text(channel, "bad header authorization: Bearer sk-live-123456") // "bad header authorization: Bearer [redacted]"
 * ```
 *
 * @category redaction
 */
export const text = (channel: Domain.Channel, value: string): string => {
  let out = value
  for (const secret of secretsOf(channel)) if (out.includes(secret)) out = out.replaceAll(secret, REDACTED)
  return out
}

/**
 * Whether `value` holds a secret of `channel` (what `text` would replace).
 *
 * @category redaction
 */
export const quotes = (channel: Domain.Channel, value: string): boolean => {
  for (const secret of secretsOf(channel)) if (value.includes(secret)) return true
  return false
}

/**
 * The error with every secret of `channel` replaced in its message and
 * `param` (the same error when it quotes none).
 *
 * @category redaction
 */
export const error = <E extends GatewayError.GatewayError>(channel: Domain.Channel, failure: E): E =>
  GatewayError.mapText(failure, (value) => text(channel, value))
