/**
 * The `codes` group of the management API (admin): redemption codes. Its
 * request and response Schemas and its endpoints (`CodesGroup`); `Contract.ts`
 * states the wire conventions and `Api.ts` composes the groups.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { AdminOnly, Authentication, Csrf } from "../Guards.ts"
import { Created, Csv, describe } from "../internal/endpoints.ts"
import { EpochMs, Page, PageQuery, PositiveUsd, Usd } from "./SharedContract.ts"

/** `POST /api/admin/codes`: a batch of codes of one value. @category admin */
export const GenerateCodesRequest = Schema.Struct({
  count: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 1000 }, { message: "Between 1 and 1000 codes" })),
  amount: PositiveUsd
})
export type GenerateCodesRequest = typeof GenerateCodesRequest.Type

/** The new codes, in full, this once. @category admin */
export const GeneratedCodes = Schema.Struct({
  batch: Schema.String,
  amount: Usd,
  codes: Schema.Array(Schema.String)
})
export type GeneratedCodes = typeof GeneratedCodes.Type

/** A code as listed: only its prefix, its value and who redeemed it. @category admin */
export const AdminCode = Schema.Struct({
  prefix: Schema.String,
  amount: Usd,
  batch: Schema.String,
  createdAt: EpochMs,
  createdBy: Schema.String,
  redeemedAt: Schema.NullOr(EpochMs),
  redeemedBy: Schema.NullOr(Schema.String)
})
export type AdminCode = typeof AdminCode.Type

/** `GET /api/admin/codes` filters. @category admin */
export const CodesQuery = Schema.Struct({
  ...PageQuery.fields,
  batch: Schema.optional(Schema.String),
  status: Schema.optional(Schema.Literals(["redeemed", "unused"]))
})
export type CodesQuery = typeof CodesQuery.Type

/** `GET /api/admin/codes`. @category admin */
export const CodePage = Page(AdminCode)
export type CodePage = typeof CodePage.Type

/** Redemption codes (administrators only). @category groups */
export class CodesGroup extends HttpApiGroup.make("codes")
  .add(
    HttpApiEndpoint.post("generate", "/api/admin/codes", {
      payload: GenerateCodesRequest,
      success: Created(GeneratedCodes)
    })
      .annotateMerge(describe("Generate a batch of redemption codes (returned in full only here).")),
    HttpApiEndpoint.get("list", "/api/admin/codes", { query: CodesQuery, success: CodePage })
      .annotateMerge(describe("Codes, newest first.")),
    HttpApiEndpoint.get("csv", "/api/admin/codes.csv", { query: CodesQuery, success: Csv })
      .annotateMerge(describe("Codes as CSV (prefixes only; same filters)."))
  )
  .middleware(AdminOnly)
  .middleware(Csrf)
  .middleware(Authentication)
{}
