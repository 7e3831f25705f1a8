/**
 * Display formatting: money (exact decimal strings from the API: amounts of
 * a dollar or more in cents, smaller ones with at least four decimals, prices
 * and exact values with every significant digit), token counts, times.
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
 * Formats an exact USD amount (a balance, a cost, a spend) for display,
 * never through a float: a dollar or more in cents (rounded half up), less
 * than a dollar with at least four decimals (and three significant digits
 * below that), so a run of $0.0002 calls visibly moves a small balance and a
 * small charge never reads as $0.00. `exactUsd` gives every digit (shown on
 * hover by `Usd`).
 *
 * @category money
 */
export const usd = (amount: string): string => {
  if (!decimal.test(amount.trim())) return amount
  const { negative, nanos } = toNanos(amount)
  if (nanos === 0n) return "$0.00"
  if (nanos >= 1_000_000_000n) return written(negative, nanos, 2, false)
  // The first significant digit's place after the point, then two more; at least four places.
  const firstDigit = NANO_DIGITS - nanos.toString().length + 1
  const shown = written(negative, nanos, Math.min(NANO_DIGITS, Math.max(4, firstDigit + 2)), false)
  // Zeros past the fourth place say nothing.
  return shown.replace(/(\.\d{4}\d*?)0+$/, "$1")
}

/**
 * Compares two exact USD amounts: negative, zero or positive as `a` is less
 * than, equal to or more than `b`.
 *
 * @category money
 */
export const compareUsd = (a: string, b: string): number => {
  const x = toNanos(a)
  const y = toNanos(b)
  const difference = (x.negative ? -x.nanos : x.nanos) - (y.negative ? -y.nanos : y.nanos)
  return difference < 0n ? -1 : difference > 0n ? 1 : 0
}

/**
 * The exact sum of two USD amounts, as a decimal string (for previews such as
 * "the balance after this adjustment").
 *
 * @category money
 */
export const addUsd = (a: string, b: string): string => {
  const x = toNanos(a)
  const y = toNanos(b)
  const total = (x.negative ? -x.nanos : x.nanos) + (y.negative ? -y.nanos : y.nanos)
  const abs = total < 0n ? -total : total
  const whole = abs / 10n ** BigInt(NANO_DIGITS)
  const fraction = (abs % 10n ** BigInt(NANO_DIGITS)).toString().padStart(NANO_DIGITS, "0").replace(/0+$/, "")
  return `${total < 0n ? "-" : ""}${whole}${fraction === "" ? "" : `.${fraction}`}`
}

/**
 * An exact USD amount with every significant digit (at least cents):
 * `$9.9998`, `$0.000125`, `$12.50`.
 *
 * @category money
 */
export const exactUsd = (amount: string): string => price(amount)

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
  n < 10_000
    ? n.toLocaleString("en-US")
    : n < 1_000_000
    ? `${(n / 1000).toFixed(1)}K`
    : `${(n / 1_000_000).toFixed(1)}M`

/** A date and time in the viewer's locale. @category time */
export const dateTime = (ms: number, locale: string): string =>
  new Date(ms).toLocaleString(locale, {
    year: "numeric",
    month: "short",
    day: "numeric",
    hour: "2-digit",
    minute: "2-digit"
  })

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
