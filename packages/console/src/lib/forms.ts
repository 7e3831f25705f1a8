/**
 * Form validation with the server's own Schemas: the same checks run in the
 * browser before sending, and the server's answer (`param`) lands next to the
 * same field when it refuses something only it can know (a taken name).
 * Problems keep the Schema's message and the server's code, and are put into
 * words in the console's language when shown (`problemText`).
 *
 * @since 0.1.0
 */
import { Schema, SchemaIssue } from "effect"
import { ApiFailure } from "./api.ts"
import { failureText, issueText, stripParam } from "./errors.ts"
import type { Translate } from "./i18n.tsx"

const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

/** A problem with one field: a Schema message, a server refusal, or a message already in words. @category models */
export type Problem =
  | { readonly _tag: "schema"; readonly message: string }
  | { readonly _tag: "server"; readonly failure: ApiFailure }
  | { readonly _tag: "text"; readonly text: string }

/** Field path (`models[1]` → `models`) to problem. @category models */
export type FieldProblems = Readonly<Record<string, Problem>>

/** Field path to the message shown next to it. @category models */
export type FieldErrors = Readonly<Record<string, string>>

const topField = (path: ReadonlyArray<unknown>): string => {
  const first = path[0]
  const key = typeof first === "object" && first !== null && "key" in first ? (first as { key: unknown }).key : first
  return key === undefined ? "" : String(key)
}

/**
 * Validates `value` with `schema`: `{ ok: true, value }` or the first problem
 * of each top-level field.
 *
 * @category validation
 */
export const validate = <S extends Schema.Top>(
  schema: S,
  value: unknown
): { readonly ok: true; readonly value: S["Type"] } | { readonly ok: false; readonly errors: FieldProblems } => {
  const result = Schema.decodeUnknownResult(schema as unknown as Schema.Codec<S["Type"], unknown>)(value, {
    errors: "all"
  })
  if (result._tag === "Success") return { ok: true, value: result.success }
  const errors: Record<string, Problem> = {}
  for (const issue of formatter(result.failure.issue).issues) {
    const field = topField(issue.path ?? [])
    if (!(field in errors)) errors[field] = { _tag: "schema", message: issue.message }
  }
  return { ok: false, errors }
}

/**
 * The field problem a server refusal carries (its `param`'s top-level field),
 * or `undefined` when it names no field.
 *
 * @category validation
 */
export const serverFieldErrors = (error: unknown): FieldProblems | undefined => {
  if (!(error instanceof ApiFailure) || error.param === null) return undefined
  const field = error.param.split(/[.[]/)[0]!
  return { [field]: { _tag: "server", failure: error } }
}

/**
 * A problem in words, in the console's language.
 *
 * @category validation
 */
export const problemText = (problem: Problem, t: Translate): string => {
  switch (problem._tag) {
    case "schema":
      return issueText(problem.message, t)
    case "text":
      return problem.text
    case "server": {
      const failure = problem.failure
      // A field refusal without a code of its own reads best as the server's words without the field's name.
      return failure.param !== null && (failure.code === null || failure.code === "invalid_request")
        ? issueText(stripParam(failure.message, failure.param), t)
        : failureText(failure, t)
    }
  }
}
