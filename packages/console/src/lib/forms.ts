/**
 * Form validation with the server's own Schemas: the same checks run in the
 * browser before sending, and the server's answer (`param`) lands next to the
 * same field when it refuses something only it can know (a taken name).
 *
 * @since 0.1.0
 */
import { Schema, SchemaIssue } from "effect"
import { ApiFailure } from "./api.ts"

const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

/** Field path (`models[1]` → `models`) to message. @category models */
export type FieldErrors = Readonly<Record<string, string>>

const topField = (path: ReadonlyArray<unknown>): string => {
  const first = path[0]
  const key = typeof first === "object" && first !== null && "key" in first ? (first as { key: unknown }).key : first
  return key === undefined ? "" : String(key)
}

/**
 * Validates `value` with `schema`: `{ ok: true, value }` or the message of the
 * first problem of each top-level field.
 *
 * @category validation
 */
export const validate = <S extends Schema.Top>(
  schema: S,
  value: unknown
): { readonly ok: true; readonly value: S["Type"] } | { readonly ok: false; readonly errors: FieldErrors } => {
  const result = Schema.decodeUnknownResult(schema as unknown as Schema.Codec<S["Type"], unknown>)(value, { errors: "all" })
  if (result._tag === "Success") return { ok: true, value: result.success }
  const errors: Record<string, string> = {}
  for (const issue of formatter(result.failure.issue).issues) {
    const field = topField(issue.path ?? [])
    if (!(field in errors)) errors[field] = issue.message
  }
  return { ok: false, errors }
}

/**
 * The field errors a server refusal carries (its `param`'s top-level field),
 * or `undefined` when it names no field.
 *
 * @category validation
 */
export const serverFieldErrors = (error: unknown): FieldErrors | undefined => {
  if (!(error instanceof ApiFailure) || error.param === null) return undefined
  const field = error.param.split(/[.[]/)[0]!
  const message = error.message.replace(new RegExp(`^${error.param.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}:\\s*`), "")
  return { [field]: message }
}
