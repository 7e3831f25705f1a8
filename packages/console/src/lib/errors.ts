/**
 * Messages for people, in the console's language: form problems found by the
 * shared Schemas (whose messages are English) and the server's refusals
 * (whose `code` is stable). English shows the server's own words; Chinese
 * shows the translation of the code, or of the Schema's message.
 *
 * @since 0.1.0
 */
import { ApiFailure } from "./api.ts"
import type { MessageKey, Translate } from "./i18n.tsx"

/**
 * The messages the shared Schemas (`@modelgate/admin-api/Contract`) use, each
 * with the dictionary entry that says it in the console's language. The
 * English entries are the same words (a test checks both).
 *
 * @category validation
 */
export const schemaMessages: Readonly<Record<string, MessageKey>> = {
  "Required": "validation.required",
  "Missing key": "validation.required",
  "Enter an amount in USD, like 10 or 0.15 (at most 9 decimal places)": "validation.usd",
  "Enter a non-negative amount in USD, like 10 or 0.15 (at most 9 decimal places)": "validation.usdNonNegative",
  "The amount must be greater than 0": "validation.positiveAmount",
  "The amount must not be 0": "validation.nonZeroAmount",
  "At most 64 characters": "validation.max64",
  "At most 256 characters": "validation.max256",
  "At most 500 characters": "validation.max500",
  "At least 8 characters": "validation.min8",
  "Remove the spaces at the start and end": "validation.trimmed",
  "1-64 letters, digits, '.', '_', '@' or '-', starting with a letter or digit": "validation.userName",
  "1-64 letters, digits, '.', '_' or '-', starting with a letter or digit": "validation.groupName",
  "1-128 letters, digits or . _ : / @ -": "validation.modelId",
  "Enter a ratio like 1 or 0.8 (at most 6 decimal places)": "validation.ratio",
  "Must be a whole number above 0, or empty for no limit": "validation.limit",
  "Must be a whole number above 0": "validation.positiveInt",
  "Must be 0 or more": "validation.nonNegativeInt",
  "Enter your user name": "validation.enterUserName",
  "Enter your password": "validation.enterPassword",
  "Enter your current password": "validation.enterCurrentPassword",
  "Enter a code": "validation.enterCode",
  "Say why the balance changes": "validation.reason",
  "Enter an address starting with http:// or https://": "validation.url",
  "List at least one model": "validation.models",
  "Between 1 and 1000 codes": "validation.codeCount"
}

/**
 * One Schema message in the console's language. Messages the Schemas do not
 * set themselves ("Expected a finite number, got NaN") get a general wording.
 *
 * @category validation
 */
export const issueText = (message: string, t: Translate): string => {
  const key = schemaMessages[message]
  if (key !== undefined) return t(key)
  if (/^Expected .*(number|integer|finite)/i.test(message)) return t("validation.number")
  if (message.startsWith("Missing key")) return t("validation.required")
  return t("validation.other", { message })
}

/** The server codes that have wording of their own. */
const codes = new Set<string>([
  "invalid_credentials",
  "rate_limited",
  "wrong_password",
  "csrf_failed",
  "unauthenticated",
  "admin_only",
  "forbidden",
  "not_found",
  "conflict",
  "code_unknown",
  "code_already_redeemed",
  "insufficient_balance",
  "invalid_api_key",
  "internal_error"
])

/**
 * A server refusal in the console's language: by its code when the console
 * knows it, a Schema problem when it is one, else the server's message.
 *
 * @category errors
 */
export const failureText = (error: ApiFailure, t: Translate): string => {
  if (error.code === "network") return t("common.network")
  const detail = error.param === null ? error.message : stripParam(error.message, error.param)
  if (error.code !== null && codes.has(error.code)) {
    return t(`error.${error.code}` as MessageKey, { message: detail, seconds: error.retryAfter ?? "?" })
  }
  if (error.code === null && error.message === `HTTP ${error.status}`) return t("error.http", { status: error.status })
  if (error.param !== null && schemaMessages[detail] !== undefined) return issueText(detail, t)
  return t("error.other", { message: detail })
}

/**
 * Any error in the console's language (`ApiFailure`s as above, other errors by
 * their message).
 *
 * @category errors
 */
export const errorText = (error: unknown, t: Translate): string =>
  error instanceof ApiFailure ? failureText(error, t) : error instanceof Error ? error.message : String(error)

/**
 * The server's message without the field name it starts with
 * (`"name: you already have…"` → `"you already have…"`).
 *
 * @category errors
 */
export const stripParam = (message: string, param: string): string =>
  message.replace(new RegExp(`^${param.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}:\\s*`), "")
