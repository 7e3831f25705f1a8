/**
 * What the configuration file declared for a user or a key when it was last
 * applied (the row's `config_declared` column, JSON), and the rule that uses
 * it: the file updates what it *changes*, and never undoes a later action.
 *
 * A field is written only when the file's value differs from what the file
 * declared last time: an entry the operator edited is applied, while a value
 * changed since in the console or with the CLI (a key disabled, a limit
 * lowered, a role taken away) is kept, and reported as a disagreement for the
 * log. A row without a record (created before the record was kept) takes the
 * file as already applied: nothing is written to it, and its differences are
 * reported. Revocation and passwords have their own rules in `Provisioning`.
 *
 * Values are stored as the comparable text `Provisioning` compares rows with
 * (`null` as JSON null), so bigints and booleans round-trip exactly.
 *
 * @since 0.1.0
 */

/** A declaration: field name (a column) to its comparable text, or null. */
export type Declared = Readonly<Record<string, string | null>>

/** One field the file and the database disagree on, with the reason, ready for the log (never a secret). */
export interface Disagreement {
  /** `users:alice`, `keys:alice/laptop`. */
  readonly entry: string
  /** The field's name in the file (`enabled`, `quota`, `password`). */
  readonly field: string
  readonly message: string
}

/** Comparable text of a column value, equal for `1n`, `1`, `true` and equal for `null`/`undefined`. */
export const norm = (value: unknown): string => {
  if (value === null || value === undefined) return "\u0000null"
  if (typeof value === "boolean") return value ? "1" : "0"
  return String(value)
}

/** A declaration of `desired`, for the column. */
export const declare = (desired: Readonly<Record<string, unknown>>, extra: Declared = {}): Declared => {
  const out: Record<string, string | null> = {}
  for (const key in desired) {
    const value = desired[key]
    out[key] = value === null || value === undefined ? null : norm(value)
  }
  return { ...out, ...extra }
}

/** The column's text for a declaration. */
export const encode = (declared: Declared): string => JSON.stringify(declared)

/** The declaration in a row's column, or null when none was kept. */
export const parse = (column: unknown): Declared | null => {
  if (typeof column !== "string" || column.length === 0) return null
  const parsed: unknown = JSON.parse(column)
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return null
  return parsed as Declared
}

const changed = (previous: Declared | null, field: string, value: unknown): boolean => {
  if (previous === null) return false
  const before = previous[field]
  return norm(before === undefined ? null : before) !== norm(value)
}

/**
 * Which of `desired`'s fields to write to `row`: those the file changed since
 * `previous`. Fields the row holds differently and the file did not change
 * are kept, each reported with `describe` naming the values.
 */
export const plan = (
  entry: string,
  row: Readonly<Record<string, unknown>>,
  desired: Readonly<Record<string, unknown>>,
  previous: Declared | null,
  describe: (column: string, value: unknown) => { readonly field: string; readonly shown: string }
): { readonly write: Record<string, unknown>; readonly disagreements: ReadonlyArray<Disagreement> } => {
  const write: Record<string, unknown> = {}
  const disagreements: Array<Disagreement> = []
  for (const column in desired) {
    const value = desired[column]
    if (changed(previous, column, value)) {
      write[column] = value
      continue
    }
    if (norm(row[column]) === norm(value)) continue
    const file = describe(column, value)
    const database = describe(column, row[column])
    disagreements.push({
      entry,
      field: file.field,
      message: `${file.field}: the file says ${file.shown}, the database has ${database.shown}, changed ` +
        `${
          previous === null ? "before this version kept track of the file, or " : ""
        }since the file was last applied. ` +
        "The database's value is kept; change this entry in the file to apply the file's."
    })
  }
  return { write, disagreements }
}
