/**
 * Where each dialect's clients put their API key (wire-formats.md §2):
 *
 * - OpenAI: `Authorization: Bearer <key>`;
 * - Gemini: `x-goog-api-key: <key>` (the SDKs), `?key=<key>` (curl examples and
 *   third-party clients), or `Authorization: Bearer <key>` (gemini-cli with
 *   `GEMINI_API_KEY_AUTH_MECHANISM=bearer`);
 * - Anthropic: `x-api-key: <key>` or `Authorization: Bearer <key>`.
 *
 * @since 0.1.0
 */
import type { Domain } from "@modelgate/core"

type HeaderBag = Readonly<Record<string, string | undefined>>

const bearer = (headers: HeaderBag): string | undefined => {
  const value = headers["authorization"]
  if (value === undefined) return undefined
  const match = /^\s*bearer\s+(.+?)\s*$/i.exec(value)
  return match === null ? undefined : match[1]
}

const nonEmpty = (value: string | undefined): string | undefined =>
  value === undefined || value.trim().length === 0 ? undefined : value.trim()

/**
 * The key presented with a request in `dialect`, or `undefined` when none was.
 * `search` is the raw query string (with or without the leading `?`).
 *
 * @category extraction
 */
export const presentedKey = (dialect: Domain.Dialect, headers: HeaderBag, search: string): string | undefined => {
  switch (dialect) {
    case "openai":
      return nonEmpty(bearer(headers))
    case "gemini":
      return nonEmpty(headers["x-goog-api-key"]) ?? nonEmpty(queryKey(search)) ?? nonEmpty(bearer(headers))
    case "anthropic":
      return nonEmpty(headers["x-api-key"]) ?? nonEmpty(bearer(headers))
  }
}

const queryKey = (search: string): string | undefined => {
  if (search.length === 0 || !search.includes("key=")) return undefined
  return new URLSearchParams(search).get("key") ?? undefined
}
