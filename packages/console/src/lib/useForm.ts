/**
 * A small form hook over the shared Schemas: holds the values, validates them
 * with the endpoint's own request Schema on submit, shows each problem next
 * to its field (in the console's language), and puts a server refusal that
 * names a field (`param`) next to that field too; other failures go to
 * `formError`.
 *
 * @since 0.1.0
 */
import type { Schema } from "effect"
import { useCallback, useMemo, useState } from "react"
import { type FieldErrors, type FieldProblems, problemText, serverFieldErrors, validate } from "./forms.ts"
import { useI18n } from "./i18n.tsx"

/** What `useForm` returns. @category models */
export interface Form<V extends Record<string, unknown>> {
  readonly values: V
  readonly errors: FieldErrors
  readonly formError: unknown
  readonly submitting: boolean
  readonly set: <K extends keyof V>(key: K, value: V[K]) => void
  readonly reset: (values?: V) => void
  /** Props for a Mantine input bound to `key` (value, onChange, error). */
  readonly field: <K extends keyof V & string>(
    key: K
  ) => { value: V[K]; error: string | undefined; onChange: (event: unknown) => void }
  readonly submit: (event?: { preventDefault: () => void }) => Promise<void>
}

const valueOf = (event: unknown): unknown => {
  if (typeof event === "object" && event !== null && "currentTarget" in event) {
    const target = (event as { currentTarget: { type?: string; checked?: boolean; value?: unknown } }).currentTarget
    return target.type === "checkbox" ? target.checked : target.value
  }
  return event
}

/**
 * Binds a form to a request Schema. `toRequest` turns the form's values into
 * the request (dropping empty optional fields, parsing numbers); `onSubmit`
 * sends it.
 *
 * @category hooks
 */
export const useForm = <V extends Record<string, unknown>, S extends Schema.Top>(options: {
  readonly initial: V
  readonly schema: S
  readonly toRequest: (values: V) => unknown
  readonly onSubmit: (request: S["Type"]) => Promise<unknown>
  /** Extra checks that the Schema cannot express (matching passwords). */
  readonly check?: (values: V) => FieldErrors
}): Form<V> => {
  const { t } = useI18n()
  const [values, setValues] = useState<V>(options.initial)
  const [problems, setErrors] = useState<FieldProblems>({})
  const errors = useMemo<FieldErrors>(
    () => Object.fromEntries(Object.entries(problems).map(([key, problem]) => [key, problemText(problem, t)])),
    [problems, t]
  )
  const [formError, setFormError] = useState<unknown>(undefined)
  const [submitting, setSubmitting] = useState(false)
  const set = useCallback(<K extends keyof V>(key: K, value: V[K]) => {
    setValues((current) => ({ ...current, [key]: value }))
    setErrors((current) => {
      if (!(key in current)) return current
      const { [key as string]: _, ...rest } = current
      return rest
    })
  }, [])
  const reset = useCallback((next?: V) => {
    setValues(next ?? options.initial)
    setErrors({})
    setFormError(undefined)
  }, [options.initial])
  const submit = async (event?: { preventDefault: () => void }) => {
    event?.preventDefault()
    setFormError(undefined)
    const extra = Object.fromEntries(
      Object.entries(options.check?.(values) ?? {}).map(([key, text]) => [key, { _tag: "text" as const, text }])
    )
    const result = validate(options.schema, options.toRequest(values))
    const fieldErrors = { ...(result.ok ? {} : result.errors), ...extra }
    if (!result.ok || Object.keys(extra).length > 0) {
      setErrors(fieldErrors)
      return
    }
    setSubmitting(true)
    try {
      await options.onSubmit(result.value)
      setErrors({})
    } catch (error) {
      const server = serverFieldErrors(error)
      if (server !== undefined && Object.keys(server).some((k) => k in values)) setErrors(server)
      else setFormError(error)
    } finally {
      setSubmitting(false)
    }
  }
  const field = <K extends keyof V & string>(key: K) => ({
    value: values[key],
    error: errors[key],
    onChange: (event: unknown) => set(key, valueOf(event) as V[K])
  })
  return { values, errors, formError, submitting, set, reset, field, submit }
}
