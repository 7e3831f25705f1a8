/**
 * Usage records and the ledger entries of calls: a background writer with
 * group commit, and the queries the console and billing pages read.
 *
 * `record` (a usage record), `charge` (a call's charge against a balance
 * lease) and `releaseLease` append to one in-memory buffer and return at once
 * (they never wait on the database). A fiber flushes the buffer every
 * `flushIntervalMs` (default 200 ms), or as soon as `maxBatch` entries
 * (default 500) are queued, writing each batch of up to `maxBatch` entries in
 * one transaction, in the order they were queued (so a lease is released only
 * after the charges taken from it). A batch that fails is put back at the head
 * of the buffer and retried on the next tick. Writing a batch is idempotent:
 * records and charges are keyed by request id and inserted or nothing, and a
 * charge moves money only when its entry was inserted, so a batch whose COMMIT
 * reached the database but whose answer was lost is written again without
 * recording or charging anything twice. The layer's finalizer stops the
 * fiber and flushes everything that is left, so a graceful shutdown (SIGTERM)
 * loses nothing; a crash loses at most what was queued in the last flush
 * interval (usage records, and charges: the calls of that window go unbilled,
 * and their lease returns whole to the balance when the node's leases are swept).
 *
 * `layerPort` exposes the writer as core's `UsageLog` port.
 *
 * @since 0.1.0
 */
import { UsageLog } from "@modelgate/core"
import type { Domain } from "@modelgate/core"
import { Array as Arr, Clock, Context, Deferred, Effect, Exit, Layer, Semaphore } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql"
import * as LeaseSql from "./internal/LeaseSql.ts"
import { newId } from "./internal/random.ts"
import * as Row from "./internal/row.ts"

/**
 * One call's charge against a balance lease (see `Purses.ts`); `leaseId` null
 * charges the balance directly.
 *
 * @category models
 */
export type LeaseCharge = LeaseSql.Charge

type Entry =
  | { readonly _tag: "Usage"; readonly record: UsageLog.UsageRecord }
  | { readonly _tag: "Charge"; readonly charge: LeaseCharge }
  | { readonly _tag: "Release"; readonly leaseId: string }

/**
 * A stored usage record.
 *
 * @category models
 */
export interface StoredUsage extends UsageLog.UsageRecord {
  readonly id: string
}

/**
 * Filters of `UsageWriter.query`: all optional except the page size. Times are
 * epoch milliseconds, `from` inclusive, `to` exclusive.
 *
 * @category models
 */
export interface UsageFilter {
  readonly userId?: string | undefined
  readonly keyId?: string | undefined
  readonly model?: string | undefined
  readonly from?: number | undefined
  readonly to?: number | undefined
  /** 1 to 1000. */
  readonly limit: number
  readonly offset?: number | undefined
}

/**
 * Totals of one UTC day and model.
 *
 * @category models
 */
export interface DailyTotal {
  /** `YYYY-MM-DD`, UTC. */
  readonly day: string
  readonly model: string
  readonly requests: number
  readonly promptTokens: number
  readonly completionTokens: number
  readonly costNanos: bigint
}

/**
 * Options of the writer.
 *
 * @category models
 */
export interface WriterOptions {
  readonly flushIntervalMs?: number | undefined
  readonly maxBatch?: number | undefined
}

const DAY_MS = 86_400_000

/**
 * A record's attempts from their JSON column (NULL: none, or a record written
 * before attempts were kept). Shared with the admin API, not a stable API.
 *
 * @internal
 * @category internal
 */
export const decodeAttemptLog = (value: unknown): ReadonlyArray<UsageLog.Attempt> => {
  if (value === null || value === undefined) return []
  const parsed: unknown = JSON.parse(Row.str(value, "usage_records.attempt_log"))
  if (!Array.isArray(parsed)) throw new TypeError("Column 'usage_records.attempt_log': expected a JSON array")
  return parsed.map((item: Record<string, unknown>) => ({
    channel: String(item.channel ?? ""),
    keyHint: String(item.keyHint ?? ""),
    status: typeof item.status === "number" ? item.status : null,
    errorCode: typeof item.errorCode === "string" ? item.errorCode : null,
    durationMs: typeof item.durationMs === "number" ? item.durationMs : 0
  }))
}

const decode = (row: Record<string, unknown>): StoredUsage => ({
  id: Row.str(row.id, "usage_records.id"),
  createdAt: Row.int(row.created_at, "usage_records.created_at"),
  requestId: Row.str(row.request_id, "usage_records.request_id"),
  userId: Row.str(row.user_id, "usage_records.user_id"),
  keyId: Row.str(row.key_id, "usage_records.key_id"),
  model: Row.str(row.model, "usage_records.model"),
  upstreamModel: Row.str(row.upstream_model, "usage_records.upstream_model"),
  channel: Row.str(row.channel, "usage_records.channel"),
  dialectIn: Row.str(row.dialect_in, "usage_records.dialect_in") as Domain.Dialect,
  dialectOut: Row.str(row.dialect_out, "usage_records.dialect_out") as Domain.Dialect,
  stream: Row.bool(row.stream, "usage_records.stream"),
  promptTokens: Row.int(row.prompt_tokens, "usage_records.prompt_tokens"),
  completionTokens: Row.int(row.completion_tokens, "usage_records.completion_tokens"),
  cachedTokens: Row.int(row.cached_tokens, "usage_records.cached_tokens"),
  usageReported: Row.bool(row.usage_reported, "usage_records.usage_reported"),
  costNanos: Row.big(row.cost_nanos, "usage_records.cost_nanos"),
  latencyMs: Row.int(row.latency_ms, "usage_records.latency_ms"),
  ttfbMs: Row.intOrNull(row.ttfb_ms, "usage_records.ttfb_ms"),
  status: Row.int(row.status, "usage_records.status"),
  errorCode: Row.strOrNull(row.error_code, "usage_records.error_code"),
  attempts: Row.int(row.attempts, "usage_records.attempts"),
  attemptLog: decodeAttemptLog(row.attempt_log)
})

const encode = (r: UsageLog.UsageRecord): Record<string, unknown> => ({
  id: newId("use"),
  created_at: r.createdAt,
  request_id: r.requestId,
  user_id: r.userId,
  key_id: r.keyId,
  model: r.model,
  upstream_model: r.upstreamModel,
  channel: r.channel,
  dialect_in: r.dialectIn,
  dialect_out: r.dialectOut,
  stream: r.stream,
  prompt_tokens: r.promptTokens,
  completion_tokens: r.completionTokens,
  cached_tokens: r.cachedTokens,
  usage_reported: r.usageReported,
  cost_nanos: r.costNanos,
  latency_ms: r.latencyMs,
  ttfb_ms: r.ttfbMs,
  status: r.status,
  error_code: r.errorCode,
  attempts: r.attempts,
  attempt_log: r.attemptLog.length === 0 ? null : JSON.stringify(r.attemptLog)
})

/**
 * The usage writer and usage queries.
 *
 * @category services
 */
export class UsageWriter extends Context.Service<UsageWriter, {
  /** Queues a record; never blocks on the database. */
  readonly record: (usage: UsageLog.UsageRecord) => Effect.Effect<void>
  /** Queues a call's charge against a lease; never blocks on the database. */
  readonly charge: (charge: LeaseCharge) => Effect.Effect<void>
  /** Queues the end of a lease, after every charge queued before it; never blocks on the database. */
  readonly releaseLease: (leaseId: string) => Effect.Effect<void>
  /** Writes everything queued so far. */
  readonly flush: Effect.Effect<void, SqlError.SqlError>
  /** How many entries (records, charges, releases) are queued and not yet written. */
  readonly pending: Effect.Effect<number>
  /** Records matching the filter, newest first. */
  readonly query: (filter: UsageFilter) => Effect.Effect<ReadonlyArray<StoredUsage>, SqlError.SqlError>
  /** Sums per UTC day and model (optionally of one user and time range), oldest day first. */
  readonly dailyTotals: (
    filter: Omit<UsageFilter, "limit" | "offset" | "model">
  ) => Effect.Effect<ReadonlyArray<DailyTotal>, SqlError.SqlError>
}>()("modelgate/store/UsageWriter") {
  /**
   * The writer with its background fiber; the finalizer flushes what is left.
   *
   * @category layers
   */
  static readonly layerWith = (options: WriterOptions = {}): Layer.Layer<UsageWriter, never, SqlClient.SqlClient> =>
    Layer.effect(
      UsageWriter,
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const flushIntervalMs = Math.max(1, options.flushIntervalMs ?? 200)
        const maxBatch = Math.max(1, options.maxBatch ?? 500)
        let buffer: Array<Entry> = []
        /** Entries taken from the buffer by the batch being written. */
        let writing = 0
        let wake = Deferred.makeUnsafe<void>()
        const lock = yield* Semaphore.make(1)

        const writeBatch = (batch: Array<Entry>): Effect.Effect<void, SqlError.SqlError> => {
          const rows: Array<Record<string, unknown>> = []
          const charges: Array<LeaseCharge> = []
          const releases: Array<string> = []
          for (const entry of batch) {
            if (entry._tag === "Usage") rows.push(encode(entry.record))
            else if (entry._tag === "Charge") charges.push(entry.charge)
            else releases.push(entry.leaseId)
          }
          return sql.withTransaction(Effect.gen(function*() {
            // Insert or nothing: a batch written again after its COMMIT's answer was lost records each call once.
            if (Arr.isReadonlyArrayNonEmpty(rows)) {
              yield* sql`INSERT INTO usage_records ${sql.insert(rows)} ON CONFLICT (request_id) DO NOTHING`
            }
            if (charges.length === 0 && releases.length === 0) return
            const now = yield* Clock.currentTimeMillis
            // Charges first, then releases: a lease released in this batch was charged by
            // entries queued before its release, and none are queued after it.
            if (charges.length > 0) yield* LeaseSql.applyCharges(sql, charges, now)
            for (const leaseId of releases) yield* LeaseSql.release(sql, leaseId, now)
          }))
        }

        const enqueue = (entry: Entry) =>
          Effect.sync(() => {
            buffer.push(entry)
            if (buffer.length >= maxBatch) Deferred.doneUnsafe(wake, Exit.void)
          })

        // One batch at a time; uninterruptible so shutdown waits for a write in flight,
        // and a failed batch goes back to the head of the buffer.
        const flushOnce = Effect.uninterruptible(Effect.suspend(() => {
          if (buffer.length === 0) return Effect.succeed(false)
          const batch = buffer.length <= maxBatch ? buffer : buffer.slice(0, maxBatch)
          buffer = buffer.length <= maxBatch ? [] : buffer.slice(maxBatch)
          writing = batch.length
          return writeBatch(batch).pipe(
            Effect.onExit((exit) =>
              Effect.sync(() => {
                writing = 0
                if (Exit.isFailure(exit)) buffer = batch.concat(buffer)
              })
            ),
            Effect.as(true)
          )
        }))

        const flush: Effect.Effect<void, SqlError.SqlError> = lock.withPermit(
          Effect.whileLoop({ while: () => buffer.length > 0, body: () => flushOnce, step: () => {} })
        )

        const loop = Effect.gen(function*() {
          while (true) {
            yield* Effect.raceFirst(Effect.sleep(flushIntervalMs), Deferred.await(wake))
            wake = Deferred.makeUnsafe<void>()
            yield* flush.pipe(
              Effect.catchCause((cause) =>
                Effect.logError(`Writing usage records and charges failed; ${buffer.length} kept for retry`, cause)
              )
            )
          }
        })

        yield* Effect.addFinalizer(() =>
          flush.pipe(
            Effect.catchCause((cause) =>
              Effect.logError(`Could not write ${buffer.length} usage record(s) and charge(s) at shutdown`, cause)
            )
          )
        )
        yield* Effect.forkScoped(loop)

        const query = (filter: UsageFilter) => {
          const clauses = [
            ...(filter.userId === undefined ? [] : [sql`user_id = ${filter.userId}`]),
            ...(filter.keyId === undefined ? [] : [sql`key_id = ${filter.keyId}`]),
            ...(filter.model === undefined ? [] : [sql`model = ${filter.model}`]),
            ...(filter.from === undefined ? [] : [sql`created_at >= ${filter.from}`]),
            ...(filter.to === undefined ? [] : [sql`created_at < ${filter.to}`])
          ]
          return Effect.map(
            sql`SELECT * FROM usage_records WHERE ${sql.and(clauses)} ORDER BY created_at DESC, id DESC
              LIMIT ${Math.max(1, Math.min(1000, filter.limit))} OFFSET ${Math.max(0, filter.offset ?? 0)}`,
            (rows) => rows.map(decode)
          )
        }

        const dailyTotals = (filter: Omit<UsageFilter, "limit" | "offset" | "model">) => {
          const clauses = [
            ...(filter.userId === undefined ? [] : [sql`user_id = ${filter.userId}`]),
            ...(filter.keyId === undefined ? [] : [sql`key_id = ${filter.keyId}`]),
            ...(filter.from === undefined ? [] : [sql`created_at >= ${filter.from}`]),
            ...(filter.to === undefined ? [] : [sql`created_at < ${filter.to}`])
          ]
          return Effect.map(
            sql`SELECT created_at / ${sql.literal(String(DAY_MS))} AS day, model, COUNT(*) AS requests,
                COALESCE(SUM(prompt_tokens), 0) AS prompt_tokens, COALESCE(SUM(completion_tokens), 0) AS completion_tokens,
                COALESCE(SUM(cost_nanos), 0) AS cost_nanos
              FROM usage_records WHERE ${sql.and(clauses)}
              GROUP BY created_at / ${sql.literal(String(DAY_MS))}, model ORDER BY day, model`,
            (rows) =>
              rows.map((row): DailyTotal => ({
                day: new Date(Row.int(row.day, "day") * DAY_MS).toISOString().slice(0, 10),
                model: Row.str(row.model, "usage_records.model"),
                requests: Row.int(row.requests, "COUNT(*)"),
                promptTokens: Row.int(row.prompt_tokens, "SUM(prompt_tokens)"),
                completionTokens: Row.int(row.completion_tokens, "SUM(completion_tokens)"),
                costNanos: Row.big(row.cost_nanos, "SUM(cost_nanos)")
              }))
          )
        }

        return UsageWriter.of({
          record: (record) => enqueue({ _tag: "Usage", record }),
          charge: (charge) => enqueue({ _tag: "Charge", charge }),
          releaseLease: (leaseId) => enqueue({ _tag: "Release", leaseId }),
          flush,
          pending: Effect.sync(() => buffer.length + writing),
          query,
          dailyTotals
        })
      })
    )

  /**
   * The writer with default options (flush every 200 ms or at 500 queued records).
   *
   * @category layers
   */
  static readonly layer: Layer.Layer<UsageWriter, never, SqlClient.SqlClient> = UsageWriter.layerWith()

  /**
   * Core's `UsageLog` port over the writer.
   *
   * @category layers
   */
  static readonly layerPort: Layer.Layer<UsageLog.UsageLog, never, UsageWriter> = Layer.effect(
    UsageLog.UsageLog,
    Effect.map(UsageWriter, (writer) => UsageLog.UsageLog.of({ record: writer.record }))
  )
}
