/**
 * Small helpers the API groups declare their endpoints with.
 *
 * @internal
 */
import { Schema } from "effect"
import { HttpApiSchema, OpenApi } from "effect/http-api"

export const Csv = Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/csv" }))
export const Created = <S extends Schema.Top>(schema: S) => schema.pipe(HttpApiSchema.status(201))
export const IdParams = { id: Schema.String }

export const describe = (description: string) => OpenApi.annotations({ description })
