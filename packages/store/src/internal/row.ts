/**
 * Column decoding shared by the repositories. SQLite (read with `readBigInts`)
 * returns every INTEGER as `bigint` and booleans as `0n`/`1n`; PostgreSQL
 * returns INTEGER as `number`, BIGINT as `bigint` or a decimal string, and
 * BOOLEAN as `boolean`. These helpers accept all of those and fail loudly
 * (naming the column) on anything else, so a schema drift is never silent.
 *
 * @since 0.1.0
 */

const bad = (column: string, expected: string, value: unknown): never => {
  throw new TypeError(`Column '${column}': expected ${expected}, got ${typeof value} ${String(value)}`)
}

/** An exact integer (money, counters). */
export const big = (value: unknown, column: string): bigint => {
  switch (typeof value) {
    case "bigint":
      return value
    case "number":
      return Number.isSafeInteger(value) ? BigInt(value) : bad(column, "an integer", value)
    case "string":
      return /^-?\d+$/.test(value) ? BigInt(value) : bad(column, "an integer", value)
    default:
      return bad(column, "an integer", value)
  }
}

/** A nullable exact integer. */
export const bigOrNull = (value: unknown, column: string): bigint | null =>
  value === null || value === undefined ? null : big(value, column)

/** A small integer as a JavaScript number (must be a safe integer). */
export const int = (value: unknown, column: string): number => {
  if (typeof value === "number" && Number.isSafeInteger(value)) return value
  const n = big(value, column)
  return n <= BigInt(Number.MAX_SAFE_INTEGER) && n >= BigInt(Number.MIN_SAFE_INTEGER)
    ? Number(n)
    : bad(column, "a safe integer", value)
}

/** A nullable small integer. */
export const intOrNull = (value: unknown, column: string): number | null =>
  value === null || value === undefined ? null : int(value, column)

/** A boolean stored as BOOLEAN (PostgreSQL) or 0/1 (SQLite). */
export const bool = (value: unknown, column: string): boolean => {
  if (typeof value === "boolean") return value
  if (value === 1 || value === 1n) return true
  if (value === 0 || value === 0n) return false
  return bad(column, "a boolean", value)
}

/** A text column. */
export const str = (value: unknown, column: string): string =>
  typeof value === "string" ? value : bad(column, "text", value)

/** A nullable text column. */
export const strOrNull = (value: unknown, column: string): string | null =>
  value === null || value === undefined ? null : str(value, column)

/** A JSON array of strings stored as TEXT. */
export const stringArray = (value: unknown, column: string): ReadonlyArray<string> => {
  const parsed: unknown = JSON.parse(str(value, column))
  if (!Array.isArray(parsed) || !parsed.every((item) => typeof item === "string")) {
    return bad(column, "a JSON array of strings", value)
  }
  return parsed
}

/** A JSON object of string values stored as TEXT. */
export const stringRecord = (value: unknown, column: string): Readonly<Record<string, string>> => {
  const parsed: unknown = JSON.parse(str(value, column))
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    return bad(column, "a JSON object", value)
  }
  for (const item of Object.values(parsed)) if (typeof item !== "string") bad(column, "a JSON object of strings", value)
  return parsed as Record<string, string>
}
