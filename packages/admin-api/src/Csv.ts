/**
 * CSV files of the management API (usage records, redemption codes), as
 * RFC 4180 text that spreadsheets open safely: a cell that starts with `=`,
 * `+`, `-`, `@`, a tab or a carriage return would be read as a formula
 * (`=HYPERLINK(...)` in a key name runs when the file is opened), so it gets a
 * leading `'`, which spreadsheets show as text and do not evaluate.
 *
 * @since 0.1.0
 */

const FORMULA = /^[=+\-@\t\r]/

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
  const safe = FORMULA.test(value) && !NUMBER.test(value) ? `'${value}` : value
  return /[",\n\r]/.test(safe) ? `"${safe.replaceAll("\"", "\"\"")}"` : safe
}

/**
 * A whole file: the header row and the rows, each line ending in `\n`.
 *
 * @category files
 */
export const file = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string | number>>): string =>
  [header.join(","), ...rows.map((row) => row.map(cell).join(","))].join("\n") + "\n"
