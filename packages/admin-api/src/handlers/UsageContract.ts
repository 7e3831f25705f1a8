/**
 * The `usage` group of the management API: usage records, daily spend, the
 * ledger and the admin overview. Its request and response Schemas and its
 * endpoints (`UsageGroup`); `Contract.ts` states the wire conventions and
 * `Api.ts` composes the groups.
 *
 * @since 0.1.0
 */
import * as Domain from "@modelgate/core/domain/Domain"
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { AdminOnly, Authentication, Csrf } from "../Guards.ts"
import { Csv, describe, IdParams } from "../internal/endpoints.ts"
import { Day, EpochMs, List, Page, PageQuery, Usd } from "./SharedContract.ts"

/** Spend and tokens of one model on one day. @category usage */
export const DailyPoint = Schema.Struct({
  day: Day,
  model: Schema.String,
  requests: Schema.Int,
  promptTokens: Schema.Int,
  completionTokens: Schema.Int,
  cost: Usd
})
export type DailyPoint = typeof DailyPoint.Type

/** One upstream attempt of a call (admins only): channel, key hint, outcome, duration. @category usage */
export const UsageAttempt = Schema.Struct({
  channel: Schema.String,
  /** The upstream key's last 4 characters, as `…abcd`. */
  keyHint: Schema.String,
  /** The upstream's HTTP status, when it answered. */
  status: Schema.NullOr(Schema.Int),
  /** What went wrong (`UpstreamTimeout`, `UpstreamUnavailable`, `ClientClosed`, ...), null when the attempt served the call. */
  errorCode: Schema.NullOr(Schema.String),
  /** What went wrong, in the gateway's words with the upstream's (secrets redacted); null when it served the call or was not kept. */
  errorMessage: Schema.NullOr(Schema.String),
  durationMs: Schema.Int
})

/** The dialects a client speaks to the gateway, and channels speak to it (core's). @category usage */
export const Dialect = Domain.Dialect
export type Dialect = typeof Dialect.Type
export type UsageAttempt = typeof UsageAttempt.Type

/**
 * One call, as billed and logged (the request log): every call made with a
 * valid key, those refused before any upstream was tried included (no
 * channel, no attempts, no cost, and the message their caller got).
 *
 * @category usage
 */
export const UsageItem = Schema.Struct({
  id: Schema.String,
  createdAt: EpochMs,
  requestId: Schema.String,
  userId: Schema.String,
  userName: Schema.String,
  keyId: Schema.String,
  keyName: Schema.NullOr(Schema.String),
  /** The model as the catalog names it (as asked, for a call refused before its model was known). */
  model: Schema.String,
  /** The dialect the client spoke. */
  dialect: Dialect,
  stream: Schema.Boolean,
  promptTokens: Schema.Int,
  completionTokens: Schema.Int,
  /** Of the prompt, tokens read from the upstream's cache. */
  cachedTokens: Schema.Int,
  /** Prompt tokens written to the provider's cache (part of `promptTokens`, billed at the model's cacheWrite price). */
  cacheWriteTokens: Schema.optionalKey(Schema.Int),
  /** Of the completion, tokens the model spent reasoning (when the upstream said). */
  reasoningTokens: Schema.Int,
  /** The token counts are the upstream's own (false: counted by the gateway). */
  usageReported: Schema.Boolean,
  cost: Usd,
  latencyMs: Schema.Int,
  /** Time to the first byte of the answer, null when none came. */
  ttfbMs: Schema.NullOr(Schema.Int),
  status: Schema.Int,
  errorCode: Schema.NullOr(Schema.String),
  /** What a translation left out of the request by decision (a Responses client's hosted tools on another dialect's model), or null. */
  note: Schema.optionalKey(Schema.NullOr(Schema.String)),
  /** Admin views only: the channel that served (or last tried) the call, time to first byte, and every attempt. */
  /** What the caller was told went wrong; null when nothing did (or for calls logged before messages were kept). */
  errorMessage: Schema.NullOr(Schema.String),
  /** Admin views only: the channel that served (or last tried) the call, its name for the model and dialect, and every attempt. */
  channel: Schema.optionalKey(Schema.String),
  upstreamModel: Schema.optionalKey(Schema.String),
  upstreamDialect: Schema.optionalKey(Domain.WireDialect),
  attempts: Schema.optionalKey(Schema.Int),
  attemptLog: Schema.optionalKey(Schema.Array(UsageAttempt))
})
export type UsageItem = typeof UsageItem.Type

/** Which calls a status filter keeps: succeeded (below 400), failed (400 and above), 4xx, 5xx. @category usage */
export const StatusClass = Schema.Literals(["ok", "error", "4xx", "5xx"])
export type StatusClass = typeof StatusClass.Type

/** `GET /api/usage`, `/api/usage.csv` and `/api/usage/daily` filters (query strings). @category usage */
export const UsageQuery = Schema.Struct({
  ...PageQuery.fields,
  keyId: Schema.optional(Schema.String),
  model: Schema.optional(Schema.String),
  /** `ok`, `error`, `4xx` or `5xx`. */
  status: Schema.optional(StatusClass),
  /** An error code (`RateLimited`, `UpstreamTimeout`, ...). */
  errorCode: Schema.optional(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(64))),
  /** One call, by the `x-request-id` its caller got (spaces around it are ignored). */
  requestId: Schema.optional(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(200))),
  /** Inclusive lower bound, epoch ms. */
  from: Schema.optional(Schema.NumberFromString.check(Schema.isInt(), Schema.isGreaterThanOrEqualTo(0))),
  /** Exclusive upper bound, epoch ms. */
  to: Schema.optional(Schema.NumberFromString.check(Schema.isInt(), Schema.isGreaterThanOrEqualTo(0)))
})
export type UsageQuery = typeof UsageQuery.Type

/** Admin usage filters add a user and a channel. @category usage */
export const AdminUsageQuery = Schema.Struct({
  ...UsageQuery.fields,
  userId: Schema.optional(Schema.String),
  /** The channel that served the call (or was tried last). */
  channel: Schema.optional(Schema.String)
})
export type AdminUsageQuery = typeof AdminUsageQuery.Type

/** `GET /api/usage`. @category usage */
export const UsagePage = Page(UsageItem)
export type UsagePage = typeof UsagePage.Type

/** `GET /api/usage/daily`. @category usage */
export const DailyUsage = List(DailyPoint)
export type DailyUsage = typeof DailyUsage.Type

/** Ledger entry kinds. @category usage */
export const LedgerKind = Schema.Literals(["topup", "redemption", "adjustment", "hold", "charge", "release"])
export type LedgerKind = typeof LedgerKind.Type

/** One change of a balance. @category usage */
export const LedgerItem = Schema.Struct({
  id: Schema.String,
  createdAt: EpochMs,
  kind: LedgerKind,
  amount: Usd,
  reason: Schema.NullOr(Schema.String),
  requestId: Schema.NullOr(Schema.String)
})
export type LedgerItem = typeof LedgerItem.Type

/** `GET /api/ledger`. @category usage */
export const LedgerPage = Page(LedgerItem)
export type LedgerPage = typeof LedgerPage.Type

/** One user's total in the overview. @category admin */
export const UserSpend = Schema.Struct({
  userId: Schema.String,
  userName: Schema.String,
  requests: Schema.Int,
  tokens: Schema.Int,
  cost: Usd
})
export type UserSpend = typeof UserSpend.Type

/** `GET /api/admin/usage/daily`: per day and model, and the top users, over the period. @category admin */
export const AdminOverview = Schema.Struct({
  daily: Schema.Array(DailyPoint),
  users: Schema.Array(UserSpend),
  totalCost: Usd,
  totalRequests: Schema.Int
})
export type AdminOverview = typeof AdminOverview.Type

/** Usage records (the request log), daily sums and the ledger. @category groups */
export class UsageGroup extends HttpApiGroup.make("usage")
  .add(
    HttpApiEndpoint.get("list", "/api/usage", { query: UsageQuery, success: UsagePage })
      .annotateMerge(describe(
        "One's calls (the request log), newest first, refused ones included: filter by key, model, status class, error code, request id and time; page with nextCursor."
      )),
    HttpApiEndpoint.get("csv", "/api/usage.csv", { query: UsageQuery, success: Csv })
      .annotateMerge(describe("One's usage records as CSV (same filters; at most 100 000 rows).")),
    HttpApiEndpoint.get("daily", "/api/usage/daily", { query: UsageQuery, success: DailyUsage })
      .annotateMerge(describe("One's spend and tokens per day and model.")),
    HttpApiEndpoint.get("ledger", "/api/ledger", { query: PageQuery, success: LedgerPage })
      .annotateMerge(describe("One's ledger, newest first."))
  )
  .add(
    HttpApiEndpoint.get("adminDaily", "/api/admin/usage/daily", { query: AdminUsageQuery, success: AdminOverview })
      .annotateMerge(describe("Usage across all users: per day and model, and totals per user.")).middleware(AdminOnly),
    HttpApiEndpoint.get("adminList", "/api/admin/usage", { query: AdminUsageQuery, success: UsagePage })
      .annotateMerge(describe(
        "Every user's calls (the request log), with their channel, upstream model and attempts; filters add user and channel."
      )).middleware(AdminOnly),
    HttpApiEndpoint.get("adminCsv", "/api/admin/usage.csv", { query: AdminUsageQuery, success: Csv })
      .annotateMerge(
        describe(
          "Every user's calls as CSV, with channel, upstream model and attempts (same filters; at most 100 000 rows)."
        )
      ).middleware(AdminOnly),
    HttpApiEndpoint.get("userUsage", "/api/admin/users/:id/usage", {
      params: IdParams,
      query: UsageQuery,
      success: UsagePage
    })
      .annotateMerge(describe("A user's usage records.")).middleware(AdminOnly),
    HttpApiEndpoint.get("userLedger", "/api/admin/users/:id/ledger", {
      params: IdParams,
      query: PageQuery,
      success: LedgerPage
    })
      .annotateMerge(describe("A user's ledger.")).middleware(AdminOnly)
  )
  .middleware(Csrf)
  .middleware(Authentication)
{}
