/**
 * Display formatting: money (exact decimal strings from the API, shown with a
 * dollar sign and sensible digits), token counts, times.
 *
 * @since 0.1.0
 */

/**
 * Formats an exact USD decimal string for display: at least 2 decimals, up to
 * 6 for small amounts, never through a float for the digits kept.
 *
 * @category money
 */
export const usd = (amount: string): string => {
  const negative = amount.startsWith("-")
  const [whole = "0", fraction = ""] = (negative ? amount.slice(1) : amount).split(".")
  // Amounts under a cent keep three significant digits, so small charges never read as $0.00.
  const significant = whole === "0" && /^0{2,}/.test(fraction) ? Math.min(9, fraction.search(/[1-9]/) + 3) : 2
  const digits = Math.max(2, Math.min(fraction.replace(/0+$/, "").length, Math.max(significant, 2)))
  const shown = fraction.padEnd(digits, "0").slice(0, digits)
  const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ",")
  return `${negative ? "-" : ""}$${grouped}.${shown}`
}

/** The number value of a USD string (for charts only; never for balances). @category money */
export const usdNumber = (amount: string): number => Number(amount)

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
