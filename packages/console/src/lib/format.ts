/**
 * Display formatting: money (exact decimal strings from the API: amounts
 * rounded to cents, prices with every significant digit), token counts, times.
 *
 * @since 0.1.0
 */

const NANO_DIGITS = 9
const decimal = /^[-+]?\d+(\.\d+)?$/

/** An exact decimal string as a sign and a count of nano-dollars (digits past the 9th are rounded half up). */
const toNanos = (amount: string): { readonly negative: boolean; readonly nanos: bigint } => {
  const text = amount.trim()
  const negative = text.startsWith("-")
  const [whole = "0", fraction = ""] = text.replace(/^[-+]/, "").split(".")
  const kept = fraction.padEnd(NANO_DIGITS, "0").slice(0, NANO_DIGITS)
  const roundUp = fraction.length > NANO_DIGITS && fraction[NANO_DIGITS]! >= "5"
  const nanos = BigInt(whole === "" ? "0" : whole) * 10n ** BigInt(NANO_DIGITS) + BigInt(kept) + (roundUp ? 1n : 0n)
  return { negative: negative && nanos > 0n, nanos }
}

/** Rounds nano-dollars half up (away from zero) to `decimals` places and writes them with grouped thousands. */
const written = (negative: boolean, nanos: bigint, decimals: number, trim: boolean): string => {
  const step = 10n ** BigInt(NANO_DIGITS - decimals)
  const rounded = ((nanos + step / 2n) / step) * step
  const whole = (rounded / 10n ** BigInt(NANO_DIGITS)).toString()
  let fraction = (rounded % 10n ** BigInt(NANO_DIGITS)).toString().padStart(NANO_DIGITS, "0").slice(0, decimals)
  if (trim) fraction = fraction.replace(/0+$/, "").padEnd(2, "0")
  const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ",")
  return `${negative && rounded > 0n ? "-" : ""}$${grouped}.${fraction}`
}

/**
 * Formats an exact USD amount (a balance, a cost, a spend) for display:
 * rounded half up to cents, except amounts under a cent, which keep three
 * significant digits so small charges never read as $0.00. Never goes
 * through a float.
 *
 * @category money
 */
export const usd = (amount: string): string => {
  if (!decimal.test(amount.trim())) return amount
  const { negative, nanos } = toNanos(amount)
  if (nanos === 0n) return "$0.00"
  if (nanos >= 10_000_000n) return written(negative, nanos, 2, false)
  // The first significant digit's place after the point, then two more.
  const firstDigit = NANO_DIGITS - nanos.toString().length + 1
  return written(negative, nanos, Math.min(NANO_DIGITS, firstDigit + 2), true)
}

/**
 * Formats a price (USD per 1M tokens, or per request) with every significant
 * digit, down to the nano-dollar the gateway counts in: `$0.075`, `$2.50`,
 * `$0.000125`. At least two decimals.
 *
 * @category money
 */
export const price = (amount: string): string => {
  if (!decimal.test(amount.trim())) return amount
  const { negative, nanos } = toNanos(amount)
  return written(negative, nanos, NANO_DIGITS, true)
}

/** Compact token counts: 1,234 / 12.3K / 4.5M. @category numbers */
export const tokens = (n: number): string =>
  n < 10_000 ? n.toLocaleString("en-US") : n < 1_000_000 ? `${(n / 1000).toFixed(1)}K` : `${(n / 1_000_000).toFixed(1)}M`

/** A date and time in the viewer's locale. @category time */
export const dateTime = (ms: number, locale: string): string =>
  new Date(ms).toLocaleString(locale, { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" })

/** A date in the viewer's locale. @category time */
export const date = (ms: number, locale: string): string =>
  new Date(ms).toLocaleDateString(locale, { year: "numeric", month: "short", day: "numeric" })

/** "3 minutes ago" style relative time. @category time */
export const ago = (ms: number, locale: string, now = Date.now()): string => {
  const seconds = Math.round((ms - now) / 1000)
  const format = new Intl.RelativeTimeFormat(locale, { numeric: "auto" })
  const abs = Math.abs(seconds)
  if (abs < 60) return format.format(seconds, "second")
  if (abs < 3600) return format.format(Math.round(seconds / 60), "minute")
  if (abs < 86_400) return format.format(Math.round(seconds / 3600), "hour")
  return format.format(Math.round(seconds / 86_400), "day")
}
