/**
 * Redemption codes, for administrators: generate a batch (the full codes are
 * shown only in that answer), list them, export them as CSV (prefixes only).
 *
 * @since 0.1.0
 */
import { Money } from "@modelgate/core"
import { Redemption } from "@modelgate/store/Redemption"
import { Reports } from "@modelgate/store/Reports"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api, Principal } from "../Api.ts"
import type * as C from "../Contract.ts"
import * as Csv from "../Csv.ts"
import * as Views from "../Views.ts"
import { orApiError, pageLimit, parseNanos } from "./Shared.ts"
import { CSV_MAX_ROWS, csvResponse } from "./Usage.ts"

/** The handlers of the `codes` group. @category handlers */
export const layer = HttpApiBuilder.group(
  Api,
  "codes",
  Effect.fn(function*(handlers) {
    const redemption = yield* Redemption
    const reports = yield* Reports

    return handlers.handleAll({
      generate: Effect.fn("codes.generate")(function*({ payload }) {
        const principal = yield* Principal
        const nanos = yield* parseNanos(payload.amount, "amount")
        const batch = yield* orApiError(redemption.generate(payload.count, nanos, principal.userId))
        return { batch: batch.batch, amount: Money.formatUsd(nanos), codes: batch.codes } satisfies C.GeneratedCodes
      }),

      list: ({ query }) =>
        Effect.map(
          orApiError(reports.codesPage({ batch: query.batch, status: query.status }, pageLimit(query), query.cursor)),
          (page) => ({ data: page.data.map(Views.code), nextCursor: page.nextCursor }) satisfies C.CodePage
        ),

      csv: Effect.fn("codes.csv")(function*({ query }) {
        const page = yield* orApiError(
          reports.codesPage({ batch: query.batch, status: query.status }, CSV_MAX_ROWS, undefined)
        )
        const rows = page.data.map((c) => [
          c.prefix,
          Money.formatUsd(c.amountNanos),
          c.batch,
          new Date(c.createdAt).toISOString(),
          c.createdBy,
          c.redeemedAt === null ? "" : new Date(c.redeemedAt).toISOString(),
          c.redeemedBy ?? ""
        ])
        return csvResponse(
          Csv.file(
            ["code_prefix", "amount_usd", "batch", "created_at", "created_by", "redeemed_at", "redeemed_by"],
            rows
          ),
          "codes.csv"
        )
      })
    })
  })
)
