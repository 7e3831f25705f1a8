/**
 * The read side of the management API, as SQL over the store's tables (usage
 * records, ledger, redemption codes, and the catalog tables), written against
 * `SqlClient` so it runs on SQLite and PostgreSQL alike. The store's
 * repositories own the writes that keep invariants (balances, holds, key
 * hashes); these queries only read, except for the catalog edits at the end,
 * which the store has no repository for.
 *
 * Days are UTC calendar days.
 *
 * @since 0.1.0
 */
import { Money } from "@modelgate/core"
import { decodeAttemptLog } from "@modelgate/store/UsageWriter"
import { Clock, Effect } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import type * as C from "./Contract.ts"

const DAY_MS = 86_400_000

const big = (value: unknown): bigint =>
  typeof value === "bigint" ? value : typeof value === "number" ? BigInt(Math.trunc(value)) : BigInt(String(value ?? 0))
const int = (value: unknown): number => typeof value === "number" ? value : Number(value ?? 0)
const intOrNull = (value: unknown): number | null => value === null || value === undefined ? null : int(value)
const str = (value: unknown): string => String(value)
const strOrNull = (value: unknown): string | null => value === null || value === undefined ? null : String(value)
const bool = (value: unknown): boolean => value === true || value === 1 || value === 1n || value === "t"

/** `YYYY-MM-DD` of a UTC day number (days since the epoch). @category days */
export const dayString = (dayNumber: number): string => new Date(dayNumber * DAY_MS).toISOString().slice(0, 10)

/** The start (epoch ms) of the UTC day containing `ms`. @category days */
export const startOfDay = (ms: number): number => Math.floor(ms / DAY_MS) * DAY_MS

/** The start (epoch ms) of the UTC month containing `ms`. @category days */
export const startOfMonth = (ms: number): number => {
  const date = new Date(ms)
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1)
}

/**
 * An opaque page cursor: the sort key (`createdAt`, `id`) of the last row seen.
 *
 * @category paging
 */
export const encodeCursor = (createdAt: number, id: string): string =>
  Buffer.from(`${createdAt}:${id}`, "utf8").toString("base64url")

/**
 * Reads a cursor made by `encodeCursor`; `undefined` when it is not one.
 *
 * @category paging
 */
export const decodeCursor = (cursor: string): { readonly createdAt: number; readonly id: string } | undefined => {
  const text = Buffer.from(cursor, "base64url").toString("utf8")
  const colon = text.indexOf(":")
  if (colon <= 0) return undefined
  const createdAt = Number(text.slice(0, colon))
  if (!Number.isSafeInteger(createdAt)) return undefined
  return { createdAt, id: text.slice(colon + 1) }
}

/** Filters of a usage query; `userId` undefined means all users (admin). @category usage */
export interface UsageFilter {
  readonly userId?: string | undefined
  readonly keyId?: string | undefined
  readonly model?: string | undefined
  readonly from?: number | undefined
  readonly to?: number | undefined
}

const usageWhere = (sql: SqlClient.SqlClient, filter: UsageFilter, prefix = "") => {
  const clauses = []
  if (filter.userId !== undefined) clauses.push(sql`${sql.literal(prefix)}user_id = ${filter.userId}`)
  if (filter.keyId !== undefined) clauses.push(sql`${sql.literal(prefix)}key_id = ${filter.keyId}`)
  if (filter.model !== undefined) clauses.push(sql`${sql.literal(prefix)}model = ${filter.model}`)
  if (filter.from !== undefined) clauses.push(sql`${sql.literal(prefix)}created_at >= ${filter.from}`)
  if (filter.to !== undefined) clauses.push(sql`${sql.literal(prefix)}created_at < ${filter.to}`)
  return clauses
}

const decodeUsage = (row: Record<string, unknown>): C.UsageItem => ({
  id: str(row.id),
  createdAt: int(row.created_at),
  requestId: str(row.request_id),
  userId: str(row.user_id),
  userName: str(row.user_name ?? row.user_id),
  keyId: str(row.key_id),
  keyName: strOrNull(row.key_name),
  model: str(row.model),
  stream: bool(row.stream),
  promptTokens: int(row.prompt_tokens),
  completionTokens: int(row.completion_tokens),
  cachedTokens: int(row.cached_tokens),
  cost: Money.formatUsd(big(row.cost_nanos)),
  latencyMs: int(row.latency_ms),
  status: int(row.status),
  errorCode: strOrNull(row.error_code)
})

/** A record with what only admins see: the channel, time to first byte and each upstream attempt. */
const decodeUsageDetail = (row: Record<string, unknown>): C.UsageItem => ({
  ...decodeUsage(row),
  channel: str(row.channel),
  ttfbMs: row.ttfb_ms === null || row.ttfb_ms === undefined ? null : int(row.ttfb_ms),
  attempts: int(row.attempts),
  attemptLog: decodeAttemptLog(row.attempt_log)
})

/**
 * One page of usage records, newest first. With `detail` (admin views) each
 * record also carries its channel, time to first byte and upstream attempts.
 *
 * @category usage
 */
export const usagePage = Effect.fnUntraced(function*(
  filter: UsageFilter,
  limit: number,
  cursor: string | undefined,
  options: { readonly detail?: boolean } = {}
) {
  const sql = yield* SqlClient.SqlClient
  const clauses = usageWhere(sql, filter, "r.")
  if (cursor !== undefined) {
    const at = decodeCursor(cursor)
    if (at !== undefined) {
      clauses.push(sql`(r.created_at < ${at.createdAt} OR (r.created_at = ${at.createdAt} AND r.id < ${at.id}))`)
    }
  }
  const rows = yield* sql`SELECT r.*, u.name AS user_name, k.name AS key_name
    FROM usage_records r LEFT JOIN users u ON u.id = r.user_id LEFT JOIN api_keys k ON k.id = r.key_id
    WHERE ${sql.and(clauses)} ORDER BY r.created_at DESC, r.id DESC LIMIT ${limit + 1}`
  const data = rows.slice(0, limit).map(options.detail === true ? decodeUsageDetail : decodeUsage)
  const last = data[data.length - 1]
  return {
    data,
    nextCursor: rows.length > limit && last !== undefined ? encodeCursor(last.createdAt, last.id) : null
  } satisfies C.UsagePage
})

const csvField = (value: string): string => /[",\n\r]/.test(value) ? `"${value.replaceAll("\"", "\"\"")}"` : value

/** The header of the usage CSV. @category usage */
export const usageCsvHeader = "time,request_id,user,key,model,stream,prompt_tokens,completion_tokens,cached_tokens,cost_usd,latency_ms,status,error_code"

/**
 * Usage records as CSV text (newest first, at most `max` rows).
 *
 * @category usage
 */
export const usageCsv = Effect.fnUntraced(function*(filter: UsageFilter, max = 100_000) {
  const page = yield* usagePage(filter, max, undefined)
  const lines = page.data.map((r) =>
    [
      new Date(r.createdAt).toISOString(),
      r.requestId,
      r.userName,
      r.keyName ?? r.keyId,
      r.model,
      String(r.stream),
      String(r.promptTokens),
      String(r.completionTokens),
      String(r.cachedTokens),
      r.cost,
      String(r.latencyMs),
      String(r.status),
      r.errorCode ?? ""
    ].map(csvField).join(",")
  )
  return [usageCsvHeader, ...lines].join("\n") + "\n"
})

/**
 * Spend and tokens per UTC day and model.
 *
 * @category usage
 */
export const daily = Effect.fnUntraced(function*(filter: UsageFilter) {
  const sql = yield* SqlClient.SqlClient
  // The divisor is a literal: a bound number is a REAL in SQLite, which would make the division fractional.
  const day = sql.literal(`created_at / ${DAY_MS}`)
  const rows = yield* sql`SELECT ${day} AS day, model, COUNT(*) AS requests,
      SUM(prompt_tokens) AS prompt_tokens, SUM(completion_tokens) AS completion_tokens, SUM(cost_nanos) AS cost_nanos
    FROM usage_records WHERE ${sql.and(usageWhere(sql, filter))}
    GROUP BY ${day}, model ORDER BY day, model`
  return rows.map((row): C.DailyPoint => ({
    day: dayString(int(row.day)),
    model: str(row.model),
    requests: int(row.requests),
    promptTokens: int(row.prompt_tokens),
    completionTokens: int(row.completion_tokens),
    cost: Money.formatUsd(big(row.cost_nanos))
  }))
})

/**
 * Totals over a filter: requests, tokens and cost in nano-dollars.
 *
 * @category usage
 */
export const totals = Effect.fnUntraced(function*(filter: UsageFilter) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`SELECT COUNT(*) AS requests, SUM(prompt_tokens + completion_tokens) AS tokens, SUM(cost_nanos) AS cost_nanos
    FROM usage_records WHERE ${sql.and(usageWhere(sql, filter))}`
  const row = rows[0] ?? {}
  return { requests: int(row.requests), tokens: int(row.tokens), costNanos: big(row.cost_nanos) }
})

/**
 * Totals per user over a filter, biggest spenders first.
 *
 * @category usage
 */
export const perUser = Effect.fnUntraced(function*(filter: UsageFilter, limit = 20) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`SELECT r.user_id, u.name AS user_name, COUNT(*) AS requests,
      SUM(r.prompt_tokens + r.completion_tokens) AS tokens, SUM(r.cost_nanos) AS cost_nanos
    FROM usage_records r LEFT JOIN users u ON u.id = r.user_id WHERE ${sql.and(usageWhere(sql, filter, "r."))}
    GROUP BY r.user_id, u.name ORDER BY SUM(r.cost_nanos) DESC LIMIT ${limit}`
  return rows.map((row): C.UserSpend => ({
    userId: str(row.user_id),
    userName: str(row.user_name ?? row.user_id),
    requests: int(row.requests),
    tokens: int(row.tokens),
    cost: Money.formatUsd(big(row.cost_nanos))
  }))
})

/**
 * One page of a user's ledger, newest first: top-ups, redemptions,
 * adjustments and charges. Holds and releases (the bookkeeping of calls in
 * flight) are left out.
 *
 * @category ledger
 */
export const ledgerPage = Effect.fnUntraced(function*(userId: string, limit: number, cursor: string | undefined) {
  const sql = yield* SqlClient.SqlClient
  const clauses = [sql`user_id = ${userId}`, sql`kind IN ('topup', 'redemption', 'adjustment', 'charge')`]
  if (cursor !== undefined) {
    const at = decodeCursor(cursor)
    if (at !== undefined) clauses.push(sql`(created_at < ${at.createdAt} OR (created_at = ${at.createdAt} AND id < ${at.id}))`)
  }
  const rows = yield* sql`SELECT * FROM ledger WHERE ${sql.and(clauses)} ORDER BY created_at DESC, id DESC LIMIT ${limit + 1}`
  const data = rows.slice(0, limit).map((row): C.LedgerItem => ({
    id: str(row.id),
    createdAt: int(row.created_at),
    kind: str(row.kind) as C.LedgerKind,
    amount: Money.formatUsd(big(row.amount_nanos)),
    reason: strOrNull(row.reason),
    requestId: strOrNull(row.request_id)
  }))
  const last = data[data.length - 1]
  return {
    data,
    nextCursor: rows.length > limit && last !== undefined ? encodeCursor(last.createdAt, last.id) : null
  } satisfies C.LedgerPage
})

/**
 * One page of redemption codes, newest first, with the redeeming user's name.
 *
 * @category codes
 */
export const codesPage = Effect.fnUntraced(function*(
  filter: { readonly batch?: string | undefined; readonly status?: "redeemed" | "unused" | undefined },
  limit: number,
  cursor: string | undefined
) {
  const sql = yield* SqlClient.SqlClient
  const clauses = []
  if (filter.batch !== undefined) clauses.push(sql`c.batch = ${filter.batch}`)
  if (filter.status === "redeemed") clauses.push(sql`c.redeemed_by IS NOT NULL`)
  if (filter.status === "unused") clauses.push(sql`c.redeemed_by IS NULL`)
  if (cursor !== undefined) {
    const at = decodeCursor(cursor)
    if (at !== undefined) {
      clauses.push(sql`(c.created_at < ${at.createdAt} OR (c.created_at = ${at.createdAt} AND c.code_prefix > ${at.id}))`)
    }
  }
  const rows = yield* sql`SELECT c.*, u.name AS redeemed_name, a.name AS creator_name FROM redemption_codes c
    LEFT JOIN users u ON u.id = c.redeemed_by LEFT JOIN users a ON a.id = c.created_by
    WHERE ${sql.and(clauses)} ORDER BY c.created_at DESC, c.code_prefix ASC LIMIT ${limit + 1}`
  const data = rows.slice(0, limit).map((row): C.AdminCode => ({
    prefix: str(row.code_prefix),
    amount: Money.formatUsd(big(row.amount_nanos)),
    batch: str(row.batch),
    createdAt: int(row.created_at),
    createdBy: str(row.creator_name ?? row.created_by),
    redeemedAt: intOrNull(row.redeemed_at),
    redeemedBy: row.redeemed_by === null || row.redeemed_by === undefined ? null : str(row.redeemed_name ?? row.redeemed_by)
  }))
  const last = data[data.length - 1]
  return {
    data,
    nextCursor: rows.length > limit && last !== undefined ? encodeCursor(last.createdAt, last.prefix) : null
  } satisfies C.CodePage
})

/**
 * Codes as CSV text (prefixes only: full codes are shown once, at generation).
 *
 * @category codes
 */
export const codesCsv = Effect.fnUntraced(function*(filter: { readonly batch?: string | undefined; readonly status?: "redeemed" | "unused" | undefined }) {
  const page = yield* codesPage(filter, 100_000, undefined)
  return [
    "code_prefix,amount_usd,batch,created_at,created_by,redeemed_at,redeemed_by",
    ...page.data.map((c) =>
      [
        c.prefix,
        c.amount,
        c.batch,
        new Date(c.createdAt).toISOString(),
        c.createdBy,
        c.redeemedAt === null ? "" : new Date(c.redeemedAt).toISOString(),
        c.redeemedBy ?? ""
      ].map(csvField).join(",")
    )
  ].join("\n") + "\n"
})

/**
 * Key counts and this month's spend per user.
 *
 * @category users
 */
export const userStats = Effect.fnUntraced(function*() {
  const sql = yield* SqlClient.SqlClient
  const now = yield* Clock.currentTimeMillis
  const keys = yield* sql`SELECT user_id, COUNT(*) AS n FROM api_keys GROUP BY user_id`
  const spend = yield* sql`SELECT user_id, SUM(cost_nanos) AS cost FROM usage_records WHERE created_at >= ${startOfMonth(now)} GROUP BY user_id`
  const groups = yield* sql`SELECT user_id, group_name FROM user_groups ORDER BY group_name`
  const stats = new Map<string, { keyCount: number; spentNanos: bigint; groups: Array<string> }>()
  const get = (id: string) => {
    let entry = stats.get(id)
    if (entry === undefined) stats.set(id, entry = { keyCount: 0, spentNanos: 0n, groups: [] })
    return entry
  }
  for (const row of keys) get(str(row.user_id)).keyCount = int(row.n)
  for (const row of spend) get(str(row.user_id)).spentNanos = big(row.cost)
  for (const row of groups) get(str(row.user_id)).groups.push(str(row.group_name))
  return stats
})

/** A type helper: the error channel of the queries above. @category models */
export type QueryError = SqlError.SqlError
