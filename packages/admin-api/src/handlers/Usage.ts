/**
 * Usage records (one's own; everyone's for administrators), daily sums, CSV
 * exports and the ledger. Users see their calls; only administrators see the
 * channels and upstream attempts behind them.
 *
 * @since 0.1.0
 */
import { Money, Text } from "@modelgate/core"
import { Reports, startOfDay, type UsageFilter, type UsageRow } from "@modelgate/store/Reports"
import { Users } from "@modelgate/store/Users"
import { Clock, Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { Api, Principal } from "../Api.ts"
import * as ApiError from "../ApiError.ts"
import type * as C from "../Contract.ts"
import * as Csv from "../Csv.ts"
import * as Views from "../Views.ts"
import { orApiError, pageLimit } from "./Shared.ts"

const DAY_MS = 86_400_000

/** At most this many rows go into one CSV file. @category constants */
export const CSV_MAX_ROWS = 100_000

/**
 * The header of the usage CSV (columns are only ever added at the end).
 *
 * @category csv
 */
export const usageCsvHeader = [
  "time",
  "request_id",
  "user",
  "key",
  "model",
  "stream",
  "prompt_tokens",
  "completion_tokens",
  "cached_tokens",
  "cost_usd",
  "latency_ms",
  "status",
  "error_code",
  "dialect",
  "reasoning_tokens",
  "ttfb_ms",
  "error_message",
  "cache_write_tokens",
  "note"
]

/** The admin's usage CSV: the user's columns, and where each call went. @category csv */
export const adminUsageCsvHeader = [...usageCsvHeader, "channel", "upstream_model", "attempts"]

const csvRow = (r: UsageRow) => [
  new Date(r.createdAt).toISOString(),
  r.requestId,
  r.userName,
  r.keyName ?? r.keyId,
  r.model,
  String(r.stream),
  r.promptTokens,
  r.completionTokens,
  r.cachedTokens,
  Money.formatUsd(r.costNanos),
  r.latencyMs,
  r.status,
  r.errorCode ?? "",
  r.dialectIn,
  r.reasoningTokens,
  r.ttfbMs ?? "",
  r.errorMessage ?? "",
  r.cacheWriteTokens,
  r.note ?? ""
]

const filterOf = (query: C.UsageQuery): UsageFilter => ({
  keyId: query.keyId,
  model: query.model,
  status: query.status,
  errorCode: query.errorCode,
  // A request id pasted from a log or a terminal often comes with spaces around it.
  requestId: query.requestId?.trim(),
  from: query.from,
  to: query.to
})

const adminFilterOf = (query: C.AdminUsageQuery): UsageFilter => ({
  ...filterOf(query),
  userId: query.userId,
  channel: query.channel
})

/** A CSV file as a download. @category csv */
export const csvResponse = (text: string, filename: string) =>
  HttpServerResponse.text(text, {
    contentType: "text/csv; charset=utf-8",
    headers: { "content-disposition": `attachment; filename="${filename}"` }
  })

/** The handlers of the `usage` group. @category handlers */
export const layer = HttpApiBuilder.group(
  Api,
  "usage",
  Effect.fn(function*(handlers) {
    const reports = yield* Reports
    const users = yield* Users

    const page = (filter: UsageFilter, query: C.PageQuery, detail: boolean) =>
      Effect.map(orApiError(reports.usagePage(filter, pageLimit(query), query.cursor)), (result) =>
        ({
          data: result.data.map((row) => Views.usageItem(row, detail)),
          nextCursor: result.nextCursor
        }) satisfies C.UsagePage)

    const lastThirtyDays = Effect.map(Clock.currentTimeMillis, (now) => startOfDay(now) - 29 * DAY_MS)

    const existingUser = Effect.fnUntraced(function*(id: string) {
      const user = yield* orApiError(users.findById(id))
      if (user === undefined) return yield* ApiError.notFound(`No user with id '${Text.clip(id)}'.`)
      return user
    })

    return handlers.handleAll({
      list: ({ query }) =>
        Effect.flatMap(Principal, (principal) => page({ ...filterOf(query), userId: principal.userId }, query, false)),

      csv: Effect.fn("usage.csv")(function*({ query }) {
        const principal = yield* Principal
        const result = yield* orApiError(
          reports.usagePage({ ...filterOf(query), userId: principal.userId }, CSV_MAX_ROWS, undefined)
        )
        return csvResponse(Csv.file(usageCsvHeader, result.data.map(csvRow)), "usage.csv")
      }),

      adminCsv: Effect.fn("usage.adminCsv")(function*({ query }) {
        const result = yield* orApiError(reports.usagePage(adminFilterOf(query), CSV_MAX_ROWS, undefined))
        const rows = result.data.map((r) => [...csvRow(r), r.channel, r.upstreamModel, r.attempts])
        return csvResponse(Csv.file(adminUsageCsvHeader, rows), "requests.csv")
      }),

      daily: Effect.fn("usage.daily")(function*({ query }) {
        const principal = yield* Principal
        const filter = { ...filterOf(query), userId: principal.userId }
        const data = yield* orApiError(reports.daily({ ...filter, from: filter.from ?? (yield* lastThirtyDays) }))
        return { data: data.map(Views.dailyPoint) } satisfies C.DailyUsage
      }),

      ledger: Effect.fn("usage.ledger")(function*({ query }) {
        const principal = yield* Principal
        const result = yield* orApiError(reports.ledgerPage(principal.userId, pageLimit(query), query.cursor))
        return { data: result.data.map(Views.ledgerItem), nextCursor: result.nextCursor } satisfies C.LedgerPage
      }),

      adminDaily: Effect.fn("usage.adminDaily")(function*({ query }) {
        const filter = adminFilterOf(query)
        const scoped = { ...filter, from: filter.from ?? (yield* lastThirtyDays) }
        const daily = yield* orApiError(reports.daily(scoped))
        const perUser = yield* orApiError(reports.perUser(scoped))
        const total = yield* orApiError(reports.totals(scoped))
        return {
          daily: daily.map(Views.dailyPoint),
          users: perUser.map((u) => ({
            userId: u.userId,
            userName: u.userName,
            requests: u.requests,
            tokens: u.tokens,
            cost: Money.formatUsd(u.costNanos)
          })),
          totalCost: Money.formatUsd(total.costNanos),
          totalRequests: total.requests
        } satisfies C.AdminOverview
      }),

      adminList: ({ query }) => page(adminFilterOf(query), query, true),

      userUsage: ({ params, query }) =>
        Effect.flatMap(existingUser(params.id), (user) => page({ ...filterOf(query), userId: user.id }, query, true)),

      userLedger: Effect.fn("usage.userLedger")(function*({ params, query }) {
        const user = yield* existingUser(params.id)
        const result = yield* orApiError(reports.ledgerPage(user.id, pageLimit(query), query.cursor))
        return { data: result.data.map(Views.ledgerItem), nextCursor: result.nextCursor } satisfies C.LedgerPage
      })
    })
  })
)
