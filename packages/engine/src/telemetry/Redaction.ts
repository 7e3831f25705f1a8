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
 * Each is replaced by `[redacted]` in every form it may take in an echo: as
 * written in any letter case, JSON-escaped, URL-encoded, base64 or base64url
 * encoded (alone, after `Bearer `, or inside a longer encoded value, at any
 * byte offset), and split across lines. One case-insensitive pattern per
 * channel, compiled once (about 1 µs on a stream event that quotes nothing).
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
export const secretsOf = (channel: Domain.Channel): ReadonlyArray<string> => compiled(channel).secrets

interface Compiled {
  /** The secrets as written (and JSON-escaped), longest first. */
  readonly secrets: ReadonlyArray<string>
  /** Every form of every secret (see `forms`), one alternation, longest first. */
  readonly pattern: RegExp | undefined
}

const cache = new WeakMap<Domain.Channel, Compiled>()

const compiled = (channel: Domain.Channel): Compiled => {
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
  const patterns = [...new Set(secrets.flatMap(forms))].sort((a, b) => b.length - a.length)
  const result: Compiled = {
    secrets,
    pattern: patterns.length === 0 ? undefined : new RegExp(patterns.join("|"), "gi")
  }
  cache.set(channel, result)
  return result
}

/** What may split a secret: whitespace and line breaks, raw or JSON-escaped (`\n`, `\r\n`). */
const SPLIT = String.raw`(?:\s|\\[rnt])*`

const escapeChar = (c: string) => /[\\^$.*+?()[\]{}|/-]/.test(c) ? `\\${c}` : c

/** A run of characters as a pattern that also matches it split by line breaks or whitespace. */
const spread = (chars: ReadonlyArray<string>): string => chars.join(SPLIT)

/** A base64 character in either alphabet (`+/` or base64url's `-_`), raw or URL-encoded. */
const base64Char = (c: string): string =>
  c === "+" || c === "-" ? String.raw`(?:\+|-|%2B)` : c === "/" || c === "_" ? String.raw`(?:\/|_|%2F)` : c

const encoder = new TextEncoder()

const base64 = (bytes: Uint8Array): string => {
  let binary = ""
  for (const byte of bytes) binary += String.fromCharCode(byte)
  return btoa(binary)
}

/**
 * The base64 text of `secret` wherever it sits in an encoded blob (alone,
 * after `Bearer `, inside an encoded JSON body): for each of the three byte
 * alignments, the characters that only the secret's own bytes decide (whole
 * groups of 3 bytes), so the secret is found at any offset.
 */
const base64Cores = (secret: string): Array<string> => {
  const bytes = encoder.encode(secret)
  const cores: Array<string> = []
  for (let offset = 0; offset < 3; offset++) {
    const padded = new Uint8Array(offset + bytes.length)
    padded.set(bytes, offset)
    const encoded = base64(padded)
    const firstGroup = offset === 0 ? 0 : 1
    const lastGroup = Math.floor((offset + bytes.length) / 3)
    if (lastGroup - firstGroup >= 2) cores.push(encoded.slice(firstGroup * 4, lastGroup * 4))
  }
  return cores
}

/**
 * The patterns of one secret: as written (any letter case), JSON-escaped,
 * URL-encoded, and its base64 and base64url text (alone, with `Bearer `, or
 * inside a longer encoded value), each also when split by line breaks.
 */
const forms = (secret: string): Array<string> => {
  const texts = new Set([secret, JSON.stringify(secret).slice(1, -1), encodeURIComponent(secret)])
  return [
    ...[...texts].map((text) => spread([...text].map(escapeChar))),
    ...base64Cores(secret).map((core) => spread([...core].map(base64Char)))
  ]
}

/**
 * `text` with every secret of `channel` replaced by `[redacted]`: as
 * written, in any letter case, JSON-escaped, URL-encoded, base64 or
 * base64url encoded (alone, after `Bearer `, or within a longer encoded
 * value), and split across lines.
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
  const pattern = compiled(channel).pattern
  if (pattern === undefined) return value
  pattern.lastIndex = 0
  return value.replace(pattern, REDACTED)
}

/**
 * Whether `value` holds a secret of `channel` in any of its forms (what `text` would replace).
 *
 * @category redaction
 */
export const quotes = (channel: Domain.Channel, value: string): boolean => {
  const pattern = compiled(channel).pattern
  if (pattern === undefined) return false
  pattern.lastIndex = 0
  const found = pattern.test(value)
  pattern.lastIndex = 0
  return found
}

/**
 * The error with every secret of `channel` replaced in its message and
 * `param` (the same error when it quotes none).
 *
 * @category redaction
 */
export const error = <E extends GatewayError.GatewayError>(channel: Domain.Channel, failure: E): E =>
  GatewayError.mapText(failure, (value) => text(channel, value))
