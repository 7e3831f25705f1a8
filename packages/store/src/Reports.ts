/**
 * The read side of the management API: pages of usage records, the ledger
 * and redemption codes (newest first, keyset-paged by an opaque cursor), and
 * sums of usage per day, model and user. Written against `SqlClient`, so it
 * runs on SQLite and PostgreSQL alike; it never writes.
 *
 * Days are UTC calendar days.
 *
 * @since 0.1.0
 */
import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import type { LedgerKind } from "./Accounts.ts"
import * as Row from "./internal/row.ts"
import { decodeUsageRow, type StoredUsage } from "./UsageWriter.ts"

const DAY_MS = 86_400_000

/** The UTC day number (days since the epoch) of a time, as `YYYY-MM-DD`. @category days */
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

/** A page of rows and the cursor of the next one (null on the last). @category paging */
export interface Page<A> {
  readonly data: ReadonlyArray<A>
  readonly nextCursor: string | null
}

/**
 * Which calls a status filter keeps: those that succeeded (below 400), failed
 * (400 and above), were the caller's or were refused (4xx), or failed on the
 * gateway's or an upstream's side (5xx).
 *
 * @category usage
 */
export type StatusClass = "ok" | "error" | "4xx" | "5xx"

/** Filters of a usage query; `userId` undefined means all users. @category usage */
export interface UsageFilter {
  readonly userId?: string | undefined
  readonly keyId?: string | undefined
  /** The model as the catalog names it (the model asked for, for a call refused before its model was known). */
  readonly model?: string | undefined
  /** The channel that served the call (or was tried last). */
  readonly channel?: string | undefined
  readonly status?: StatusClass | undefined
  /** The error code (`UpstreamTimeout`, `RateLimited`, ...). */
  readonly errorCode?: string | undefined
  /** One call, by its request id. */
  readonly requestId?: string | undefined
  /** Inclusive, epoch ms. */
  readonly from?: number | undefined
  /** Exclusive, epoch ms. */
  readonly to?: number | undefined
}

/** One usage record with the names of its user and key. @category usage */
export interface UsageRow extends StoredUsage {
  /** The user's name (anonymised once the user is deleted). */
  readonly userName: string
  /** The key's name, null once the key is deleted. */
  readonly keyName: string | null
}

/** Spend and tokens of one model on one day. @category usage */
export interface DailyRow {
  readonly day: string
  readonly model: string
  readonly requests: number
  readonly promptTokens: number
  readonly completionTokens: number
  readonly costNanos: bigint
}

/** Totals over a filter. @category usage */
export interface Totals {
  readonly requests: number
  readonly tokens: number
  readonly costNanos: bigint
}

/** One user's totals. @category usage */
export interface UserTotals extends Totals {
  readonly userId: string
  readonly userName: string
}

/** One ledger entry as listed. @category ledger */
export interface LedgerRow {
  readonly id: string
  readonly createdAt: number
  readonly kind: LedgerKind
  readonly amountNanos: bigint
  readonly reason: string | null
  readonly requestId: string | null
}

/** Filters of the codes list. @category codes */
export interface CodesFilter {
  readonly batch?: string | undefined
  readonly status?: "redeemed" | "unused" | undefined
}

/** A redemption code as listed: its prefix, never the code. @category codes */
export interface CodeRow {
  readonly prefix: string
  readonly amountNanos: bigint
  readonly batch: string
  readonly createdAt: number
  /** The creator's name (their id when the user is gone). */
  readonly createdBy: string
  readonly redeemedAt: number | null
  /** The redeeming user's name, null while unused. */
  readonly redeemedBy: string | null
}

/** Per user: key count, this month's spend and assigned groups. @category users */
export interface UserStats {
  readonly keyCount: number
  readonly spentNanos: bigint
  readonly groups: ReadonlyArray<string>
}

const decodeUsage = (row: Record<string, unknown>): UsageRow => ({
  ...decodeUsageRow(row),
  userName: Row.strOrNull(row.user_name, "users.name") ?? Row.str(row.user_id, "usage_records.user_id"),
  keyName: Row.strOrNull(row.key_name, "api_keys.name")
})

/** Sums of an aggregate are NULL over no rows, and may come back as text (PostgreSQL's NUMERIC). */
const sum = (value: unknown, column: string): bigint =>
  value === null || value === undefined ? 0n : Row.big(value, column)
const count = (value: unknown, column: string): number =>
  value === null || value === undefined ? 0 : Row.int(value, column)

/**
 * The reports repository.
 *
 * @category services
 */
export class Reports extends Context.Service<Reports, {
  /**
   * One page of usage records, newest first, after `cursor` (keyset paging on
   * `(created_at, id)`, each filter served by an index that ends in them).
   */
  readonly usagePage: (
    filter: UsageFilter,
    limit: number,
    cursor: string | undefined
  ) => Effect.Effect<Page<UsageRow>, SqlError.SqlError>
  /** Spend and tokens per UTC day and model. */
  readonly daily: (filter: UsageFilter) => Effect.Effect<ReadonlyArray<DailyRow>, SqlError.SqlError>
  readonly totals: (filter: UsageFilter) => Effect.Effect<Totals, SqlError.SqlError>
  /** Totals per user, biggest spenders first. */
  readonly perUser: (filter: UsageFilter, limit?: number) => Effect.Effect<ReadonlyArray<UserTotals>, SqlError.SqlError>
  /**
   * One page of a user's ledger, newest first: top-ups, redemptions,
   * adjustments and charges. Holds and releases (the bookkeeping of calls in
   * flight) are left out.
   */
  readonly ledgerPage: (
    userId: string,
    limit: number,
    cursor: string | undefined
  ) => Effect.Effect<Page<LedgerRow>, SqlError.SqlError>
  /** One page of redemption codes, newest first, with the redeeming user's name. */
  readonly codesPage: (
    filter: CodesFilter,
    limit: number,
    cursor: string | undefined
  ) => Effect.Effect<Page<CodeRow>, SqlError.SqlError>
  /** Key counts, this month's spend and assigned groups, per user id. */
  readonly userStats: Effect.Effect<ReadonlyMap<string, UserStats>, SqlError.SqlError>
}>()("modelgate/store/Reports") {
  /** @category layers */
  static readonly layer = Layer.effect(
    Reports,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const usageWhere = (filter: UsageFilter, prefix = "") => {
        const column = (name: string) => sql.literal(`${prefix}${name}`)
        const clauses = []
        if (filter.requestId !== undefined) clauses.push(sql`${column("request_id")} = ${filter.requestId}`)
        if (filter.userId !== undefined) clauses.push(sql`${column("user_id")} = ${filter.userId}`)
        if (filter.keyId !== undefined) clauses.push(sql`${column("key_id")} = ${filter.keyId}`)
        if (filter.model !== undefined) clauses.push(sql`${column("model")} = ${filter.model}`)
        if (filter.channel !== undefined) clauses.push(sql`${column("channel")} = ${filter.channel}`)
        if (filter.errorCode !== undefined) clauses.push(sql`${column("error_code")} = ${filter.errorCode}`)
        // Literal bounds, and 'status >= 400' written out for every failure class: the failed calls' partial index
        // (migration 12) is used only by a query that states its condition as it is written.
        const status = column("status")
        if (filter.status === "ok") clauses.push(sql`${status} < ${sql.literal("400")}`)
        if (filter.status === "error") clauses.push(sql`${status} >= ${sql.literal("400")}`)
        if (filter.status === "4xx") {
          clauses.push(sql`${status} >= ${sql.literal("400")} AND ${status} < ${sql.literal("500")}`)
        }
        if (filter.status === "5xx") {
          clauses.push(sql`${status} >= ${sql.literal("400")} AND ${status} >= ${sql.literal("500")}`)
        }
        if (filter.from !== undefined) clauses.push(sql`${column("created_at")} >= ${filter.from}`)
        if (filter.to !== undefined) clauses.push(sql`${column("created_at")} < ${filter.to}`)
        return clauses
      }

      const after = (cursor: string | undefined, prefix: string) => {
        const at = cursor === undefined ? undefined : decodeCursor(cursor)
        if (at === undefined) return []
        const column = (name: string) => sql.literal(`${prefix}${name}`)
        return [
          sql`(${column("created_at")} < ${at.createdAt} OR (${column("created_at")} = ${at.createdAt} AND ${
            column("id")
          } < ${at.id}))`
        ]
      }

      const paged = <A extends { readonly createdAt: number }>(
        rows: ReadonlyArray<A>,
        limit: number,
        idOf: (a: A) => string
      ): Page<A> => {
        const data = rows.slice(0, limit)
        const last = data[data.length - 1]
        return {
          data,
          nextCursor: rows.length > limit && last !== undefined ? encodeCursor(last.createdAt, idOf(last)) : null
        }
      }

      const usagePage = Effect.fn("Reports.usagePage")(
        function*(filter: UsageFilter, limit: number, cursor: string | undefined) {
          const at = cursor === undefined ? undefined : decodeCursor(cursor)
          // A row value, which both databases walk as one range of a (..., created_at, id) index: a deep page costs
          // what the first does.
          const clauses = [
            ...usageWhere(filter, "r."),
            ...(at === undefined ? [] : [sql`(r.created_at, r.id) < (${at.createdAt}, ${at.id})`])
          ]
          const rows = yield* sql`SELECT r.*, u.name AS user_name, k.name AS key_name
          FROM usage_records r LEFT JOIN users u ON u.id = r.user_id LEFT JOIN api_keys k ON k.id = r.key_id
          WHERE ${sql.and(clauses)} ORDER BY r.created_at DESC, r.id DESC LIMIT ${limit + 1}`
          return paged(rows.map(decodeUsage), limit, (r) => r.id)
        }
      )

      const daily = Effect.fn("Reports.daily")(function*(filter: UsageFilter) {
        // The divisor is a literal: a bound number is a REAL in SQLite, which would make the division fractional.
        const day = sql.literal(`created_at / ${DAY_MS}`)
        const rows = yield* sql`SELECT ${day} AS day, model, COUNT(*) AS requests,
            SUM(prompt_tokens) AS prompt_tokens, SUM(completion_tokens) AS completion_tokens, SUM(cost_nanos) AS cost_nanos
          FROM usage_records WHERE ${sql.and(usageWhere(filter))}
          GROUP BY ${day}, model ORDER BY day, model`
        return rows.map((row): DailyRow => ({
          day: dayString(Row.int(row.day, "day")),
          model: Row.str(row.model, "usage_records.model"),
          requests: count(row.requests, "requests"),
          promptTokens: count(row.prompt_tokens, "prompt_tokens"),
          completionTokens: count(row.completion_tokens, "completion_tokens"),
          costNanos: sum(row.cost_nanos, "cost_nanos")
        }))
      })

      const totals = Effect.fn("Reports.totals")(function*(filter: UsageFilter) {
        const rows =
          yield* sql`SELECT COUNT(*) AS requests, SUM(prompt_tokens + completion_tokens) AS tokens, SUM(cost_nanos) AS cost_nanos
          FROM usage_records WHERE ${sql.and(usageWhere(filter))}`
        const row = rows[0] ?? {}
        return {
          requests: count(row.requests, "requests"),
          tokens: count(row.tokens, "tokens"),
          costNanos: sum(row.cost_nanos, "cost_nanos")
        } satisfies Totals
      })

      const perUser = Effect.fn("Reports.perUser")(function*(filter: UsageFilter, limit = 20) {
        const rows = yield* sql`SELECT r.user_id, u.name AS user_name, COUNT(*) AS requests,
            SUM(r.prompt_tokens + r.completion_tokens) AS tokens, SUM(r.cost_nanos) AS cost_nanos
          FROM usage_records r LEFT JOIN users u ON u.id = r.user_id WHERE ${sql.and(usageWhere(filter, "r."))}
          GROUP BY r.user_id, u.name ORDER BY SUM(r.cost_nanos) DESC LIMIT ${limit}`
        return rows.map((row): UserTotals => ({
          userId: Row.str(row.user_id, "usage_records.user_id"),
          userName: Row.strOrNull(row.user_name, "users.name") ?? Row.str(row.user_id, "usage_records.user_id"),
          requests: count(row.requests, "requests"),
          tokens: count(row.tokens, "tokens"),
          costNanos: sum(row.cost_nanos, "cost_nanos")
        }))
      })

      const ledgerPage = Effect.fn("Reports.ledgerPage")(
        function*(userId: string, limit: number, cursor: string | undefined) {
          const clauses = [
            sql`user_id = ${userId}`,
            sql`kind IN ('topup', 'redemption', 'adjustment', 'charge')`,
            ...after(cursor, "")
          ]
          const rows = yield* sql`SELECT * FROM ledger WHERE ${
            sql.and(clauses)
          } ORDER BY created_at DESC, id DESC LIMIT ${limit + 1}`
          return paged(
            rows.map((row): LedgerRow => ({
              id: Row.str(row.id, "ledger.id"),
              createdAt: Row.int(row.created_at, "ledger.created_at"),
              kind: Row.str(row.kind, "ledger.kind") as LedgerKind,
              amountNanos: Row.big(row.amount_nanos, "ledger.amount_nanos"),
              reason: Row.strOrNull(row.reason, "ledger.reason"),
              requestId: Row.strOrNull(row.request_id, "ledger.request_id")
            })),
            limit,
            (r) => r.id
          )
        }
      )

      const codesPage = Effect.fn("Reports.codesPage")(
        function*(filter: CodesFilter, limit: number, cursor: string | undefined) {
          const clauses = []
          if (filter.batch !== undefined) clauses.push(sql`c.batch = ${filter.batch}`)
          if (filter.status === "redeemed") clauses.push(sql`c.redeemed_by IS NOT NULL`)
          if (filter.status === "unused") clauses.push(sql`c.redeemed_by IS NULL`)
          // Codes of one batch share a creation time: within it they go by prefix, ascending.
          const at = cursor === undefined ? undefined : decodeCursor(cursor)
          if (at !== undefined) {
            clauses.push(
              sql`(c.created_at < ${at.createdAt} OR (c.created_at = ${at.createdAt} AND c.code_prefix > ${at.id}))`
            )
          }
          const rows = yield* sql`SELECT c.*, u.name AS redeemed_name, a.name AS creator_name FROM redemption_codes c
          LEFT JOIN users u ON u.id = c.redeemed_by LEFT JOIN users a ON a.id = c.created_by
          WHERE ${sql.and(clauses)} ORDER BY c.created_at DESC, c.code_prefix ASC LIMIT ${limit + 1}`
          return paged(
            rows.map((row): CodeRow => {
              const redeemedBy = Row.strOrNull(row.redeemed_by, "redemption_codes.redeemed_by")
              return {
                prefix: Row.str(row.code_prefix, "redemption_codes.code_prefix"),
                amountNanos: Row.big(row.amount_nanos, "redemption_codes.amount_nanos"),
                batch: Row.str(row.batch, "redemption_codes.batch"),
                createdAt: Row.int(row.created_at, "redemption_codes.created_at"),
                createdBy: Row.strOrNull(row.creator_name, "users.name") ??
                  Row.str(row.created_by, "redemption_codes.created_by"),
                redeemedAt: Row.intOrNull(row.redeemed_at, "redemption_codes.redeemed_at"),
                redeemedBy: redeemedBy === null ? null : Row.strOrNull(row.redeemed_name, "users.name") ?? redeemedBy
              }
            }),
            limit,
            (c) => c.prefix
          )
        }
      )

      const userStats = Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const keys =
          yield* sql`SELECT user_id, COUNT(*) AS n FROM api_keys WHERE hash NOT LIKE ${"revoked:%"} GROUP BY user_id`
        const spend = yield* sql`SELECT user_id, SUM(cost_nanos) AS cost FROM usage_records WHERE created_at >= ${
          startOfMonth(now)
        } GROUP BY user_id`
        const groups = yield* sql`SELECT user_id, group_name FROM user_groups ORDER BY group_name`
        const stats = new Map<string, { keyCount: number; spentNanos: bigint; groups: Array<string> }>()
        const get = (id: string) => {
          let entry = stats.get(id)
          if (entry === undefined) stats.set(id, entry = { keyCount: 0, spentNanos: 0n, groups: [] })
          return entry
        }
        for (const row of keys) get(Row.str(row.user_id, "api_keys.user_id")).keyCount = count(row.n, "count")
        for (const row of spend) get(Row.str(row.user_id, "usage_records.user_id")).spentNanos = sum(row.cost, "cost")
        for (const row of groups) {
          get(Row.str(row.user_id, "user_groups.user_id")).groups.push(
            Row.str(row.group_name, "user_groups.group_name")
          )
        }
        return stats as ReadonlyMap<string, UserStats>
      }).pipe(Effect.withSpan("Reports.userStats"))

      return Reports.of({ usagePage, daily, totals, perUser, ledgerPage, codesPage, userStats })
    })
  )
}
