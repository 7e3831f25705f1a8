/**
 * Validation against OpenAI's published OpenAPI document
 * (`/work/shared/reference/openai-openapi.json.gz`, OpenAPI 3.1: JSON Schema
 * 2020-12), with `@cfworker/json-schema`. `validator("Response")` checks a
 * value against `#/components/schemas/Response`, its references resolved in
 * the document.
 */
import { Validator } from "@cfworker/json-schema"
import { readFileSync } from "node:fs"
import { gunzipSync } from "node:zlib"

const DOCUMENT = "/work/shared/reference/openai-openapi.json.gz"

let components: unknown

const strip = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(strip)
  if (typeof value !== "object" || value === null) return value
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => key !== "example" && key !== "examples" && !key.startsWith("x-"))
      .map(([key, inner]) => [key, strip(inner)])
  )
}

const load = () => {
  if (components === undefined) {
    const document = JSON.parse(gunzipSync(readFileSync(DOCUMENT)).toString("utf8")) as { components: unknown }
    // Examples and vendor notes are no schema (an example's `id` would be taken for a schema's URI).
    components = strip(document.components)
  }
  return components
}

/** Whether the published document is here to validate against. */
export const available = (): boolean => {
  try {
    readFileSync(DOCUMENT)
    return true
  } catch {
    return false
  }
}

/** A check of values against one of the document's schemas: the errors, none when valid. */
export const validator = (schema: string): (value: unknown) => ReadonlyArray<string> => {
  const root = {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    $ref: `#/components/schemas/${schema}`,
    components: load()
  }
  const check = new Validator(root as never, "2020-12", false)
  return (value) => {
    const result = check.validate(value)
    return result.valid ? [] : result.errors.map((e) => `${e.instanceLocation} ${e.keyword}: ${e.error}`)
  }
}
