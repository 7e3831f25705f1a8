/**
 * Multi-row INSERTs written by hand, for the batch writer's per-call rows
 * (usage records, ledger charges): `sql.insert` has Effect's compiler build
 * the statement and its parameters anew for every batch (about 2.4 KB a row
 * in the heap profile, issue 22). The text is kept per table, columns, row
 * count and dialect, so SQLite's statement cache finds it prepared; the
 * parameters are the rows' values, row after row, `undefined` as null, as
 * `sql.insert` gives them.
 *
 * @since 0.1.0
 */
import type { Array as Arr } from "effect"

const texts = new Map<string, string>()

/**
 * `INSERT INTO table (columns) VALUES (...), (...) suffix` for `rows` (all of
 * the first row's columns, in its key order) and its parameters (`pg`: `$n`
 * placeholders, else `?`).
 *
 * @category statements
 */
export const multiInsert = (
  table: string,
  rows: Arr.NonEmptyReadonlyArray<Record<string, unknown>>,
  pg: boolean,
  suffix: string
): readonly [string, Array<unknown>] => {
  const columns = Object.keys(rows[0])
  const width = columns.length
  // Sized once: a batch of hundreds of rows has thousands of parameters.
  const params = new Array<unknown>(rows.length * width)
  let at = 0
  for (const row of rows) {
    for (let column = 0; column < width; column++) params[at++] = row[columns[column]!] ?? null
  }
  const key = `${pg ? "pg" : "sqlite"}:${rows.length}:${table}(${columns.join(",")})${suffix}`
  let text = texts.get(key)
  if (text === undefined) {
    const values: Array<string> = []
    let mark = 0
    for (let row = 0; row < rows.length; row++) {
      const marks: Array<string> = []
      for (let column = 0; column < width; column++) marks.push(pg ? `$${++mark}` : "?")
      values.push(`(${marks.join(", ")})`)
    }
    text = `INSERT INTO ${table} (${columns.map((column) => `"${column}"`).join(", ")}) VALUES ${values.join(", ")}${
      suffix === "" ? "" : ` ${suffix}`
    }`
    // Batch sizes vary with the load; a few hundred texts at most are kept.
    if (texts.size >= 512) texts.clear()
    texts.set(key, text)
  }
  return [text, params]
}
