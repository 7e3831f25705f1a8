/**
 * CSV files of the management API (usage records, redemption codes), as
 * RFC 4180 text that spreadsheets open safely: a cell that starts with `=`,
 * `+`, `-`, `@`, a tab or a carriage return would be read as a formula
 * (`=HYPERLINK(...)` in a key name runs when the file is opened), so it gets a
 * leading `'`, which spreadsheets show as text and do not evaluate. So does
 * one whose formula comes after leading whitespace or control characters
 * (` =1+1`, `\u0000=1+1`: spreadsheets skip them), and any cell that starts
 * with a control character. Control characters other than tab and line
 * breaks (NUL, ESC, ...) are written as U+FFFD.
 *
 * @since 0.1.0
 */

/** Formula characters (and their full-width forms), after any run of whitespace or control characters. */
// oxlint-disable-next-line no-control-regex -- control characters are what it looks for
const FORMULA = /^[\s\u0000-\u001f\u007f-\u009f\u200b-\u200d\u2060\ufeff]*[=+\-@\uff1d\uff0b\uff0d\uff20]/u

/** A cell that starts with a control character (a tab, a line break, NUL, ...). */
// oxlint-disable-next-line no-control-regex -- control characters are what it looks for
const LEADING_CONTROL = /^[\u0000-\u001f\u007f-\u009f]/

/** Control characters a cell may not carry (tab, CR and LF are quoted instead). */
// oxlint-disable-next-line no-control-regex -- control characters are what it looks for
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g

const NUMBER = /^[-+]?\d+(\.\d+)?$/

/**
 * One cell: formula-like text prefixed with `'`, then quoted when it holds a
 * comma, quote or line break. A plain number (`-0.5`) is a value, not a
 * formula, and is written as it is.
 *
 * @category cells
 */
export const cell = (value: string | number): string => {
  if (typeof value === "number") return String(value)
  const clean = value.replace(CONTROL, "\ufffd")
  const safe = (FORMULA.test(value) || LEADING_CONTROL.test(value)) && !NUMBER.test(value) ? `'${clean}` : clean
  return /[",\n\r]/.test(safe) ? `"${safe.replaceAll("\"", "\"\"")}"` : safe
}

/**
 * A whole file: the header row and the rows, each line ending in `\n`.
 *
 * @category files
 */
export const file = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string | number>>): string =>
  [header.join(","), ...rows.map((row) => row.map(cell).join(","))].join("\n") + "\n"
