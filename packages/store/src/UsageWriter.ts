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
 * of the buffer and retried on the next tick; so does one the database has not
 * finished after `flushTimeoutMs` (a watchdog: a silent database never holds
 * the writer longer). Writing a batch is idempotent:
 * records and charges are keyed by request id and inserted or nothing, and a
 * charge moves money only when its entry was inserted, so a batch whose COMMIT
 * reached the database but whose answer was lost is written again without
 * recording or charging anything twice.
 *
 * With a journal (`journal`, see `UsageJournal`), nothing queued is lost while
 * the node's disk works: when a batch cannot be written (the database is
 * down), everything queued moves to an append-only file on disk (fsync'd),
 * later entries follow it there, and the file is written to the database, in
 * order, once it answers. The layer's finalizer stops the fiber and flushes
 * what is left, retrying for `shutdownRetryMs` (so it ends within that plus
 * `flushTimeoutMs`, whatever the database does); what it still cannot write
 * stays in the journal, and the next writer started on the same directory
 * (any node id) writes it before anything else. Without a journal, a crash
 * loses what was queued in the last flush interval (those calls go unbilled,
 * and their lease returns whole to the balance when the node's leases are
 * swept), and a shutdown whose database does not answer loses what is left.
 *
 * `layerPort` exposes the writer as core's `UsageLog` port.
 *
 * @since 0.1.0
 */
import { PlainMetrics, UsageLog } from "@modelgate/core"
import type { Domain } from "@modelgate/core"
import { OutageLog } from "@modelgate/core"
import { Array as Arr, Clock, Context, Deferred, Effect, Exit, Fiber, Layer, Semaphore } from "effect"
import { SqlClient, SqlError } from "effect/sql"
import { rmSync } from "node:fs"
import * as LeaseSql from "./internal/LeaseSql.ts"
import * as MultiInsert from "./internal/MultiInsert.ts"
import { newSortableId } from "./internal/random.ts"
import * as Row from "./internal/row.ts"
import * as UsageJournal from "./UsageJournal.ts"

/**
 * One call's charge against a balance lease (see `Purses.ts`); `leaseId` null
 * charges the balance directly.
 *
 * @category models
 */
export type LeaseCharge = LeaseSql.Charge

type Entry = UsageJournal.Entry

/**
 * A stored usage record.
 *
 * @category models
 */
export interface StoredUsage extends UsageLog.UsageRecord {
  readonly id: string
  /** Read back, every count and message is there (0 or null when the call had none). */
  readonly cacheWriteTokens: number
  readonly reasoningTokens: number
  readonly errorMessage: string | null
  readonly note: string | null
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

/** Upper bounds (seconds) of the flush-time histogram's buckets. @category constants */
export const FLUSH_BUCKETS: ReadonlyArray<number> = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5]

/**
 * What the writer counts about itself, as plain numbers (an exporter reads
 * them): how long each batch took to write, and the batches that failed.
 *
 * @category models
 */
export interface WriterMetrics {
  /** Seconds per batch written (one transaction), successful or not. */
  readonly flushSeconds: PlainMetrics.Histogram
  /** Batches the database did not take (kept, and retried or journaled). */
  readonly flushFailures: PlainMetrics.Counter
  /** Appends to the journal that failed (a full, read-only or failing disk); tried again after a growing pause. */
  readonly journalFailures: PlainMetrics.Counter
}

/**
 * Options of the writer.
 *
 * @category models
 */
export interface WriterOptions {
  readonly flushIntervalMs?: number | undefined
  readonly maxBatch?: number | undefined
  /**
   * Where queued entries go when the database cannot take them, so a crash or
   * a shutdown during an outage loses none (see `UsageJournal`): the
   * directory, and this writer's name in it (the node id). Without it they
   * are kept in memory only.
   */
  readonly journal?: { readonly dir: string; readonly name: string } | undefined
  /** At shutdown, how long the last flush keeps retrying before what is left goes to the journal (default 0: one try). */
  readonly shutdownRetryMs?: number | undefined
  /**
   * A batch (one transaction) the database has not finished writing after this
   * long counts as failed (default 5,000 ms): its entries go to the journal and
   * the transaction is abandoned (interrupted in the background, which retires
   * its connection). Writing it again later is safe: entries are written once.
   */
  readonly flushTimeoutMs?: number | undefined
  /**
   * The most entries kept in memory when neither the database nor the journal
   * takes them (default 100,000); `admitting` turns false at 90% of it.
   */
  readonly maxMemoryEntries?: number | undefined
}

/** Default bound of entries kept in memory only. @category constants */
export const DEFAULT_MAX_MEMORY_ENTRIES = 100_000

/** The share of `maxMemoryEntries` past which priced calls are refused. @category constants */
export const ADMIT_SHARE = 0.9

/** The longest pause between tries of a journal that fails. @category constants */
export const JOURNAL_MAX_BACKOFF_MS = 30_000

/**
 * Where the writer's entries stand, for `/readyz` and `/metrics`.
 *
 * @category models
 */
export interface WriterState {
  /** Entries in memory only: neither in the database nor in the journal. */
  readonly memoryEntries: number
  /** The last try of the journal failed (a full, read-only or failing disk). */
  readonly journalFailing: boolean
  /** Priced calls may be admitted: memory holds less than 90% of `maxMemoryEntries`. */
  readonly admitting: boolean
}

/** Default bound of one batch's write. @category constants */
export const DEFAULT_FLUSH_TIMEOUT_MS = 5_000

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
    errorMessage: typeof item.errorMessage === "string" ? item.errorMessage : null,
    durationMs: typeof item.durationMs === "number" ? item.durationMs : 0
  }))
}

/**
 * A `usage_records` row as a stored usage record (the reports add the names
 * of its user and key).
 *
 * @category decoding
 */
export const decodeUsageRow = (row: Record<string, unknown>): StoredUsage => ({
  id: Row.str(row.id, "usage_records.id"),
  createdAt: Row.int(row.created_at, "usage_records.created_at"),
  requestId: Row.str(row.request_id, "usage_records.request_id"),
  userId: Row.str(row.user_id, "usage_records.user_id"),
  keyId: Row.str(row.key_id, "usage_records.key_id"),
  model: Row.str(row.model, "usage_records.model"),
  upstreamModel: Row.str(row.upstream_model, "usage_records.upstream_model"),
  channel: Row.str(row.channel, "usage_records.channel"),
  dialectIn: Row.str(row.dialect_in, "usage_records.dialect_in") as Domain.Dialect,
  dialectOut: Row.str(row.dialect_out, "usage_records.dialect_out") as Domain.WireDialect,
  stream: Row.bool(row.stream, "usage_records.stream"),
  promptTokens: Row.int(row.prompt_tokens, "usage_records.prompt_tokens"),
  completionTokens: Row.int(row.completion_tokens, "usage_records.completion_tokens"),
  cachedTokens: Row.int(row.cached_tokens, "usage_records.cached_tokens"),
  cacheWriteTokens: Row.int(row.cache_write_tokens, "usage_records.cache_write_tokens"),
  reasoningTokens: Row.int(row.reasoning_tokens, "usage_records.reasoning_tokens"),
  usageReported: Row.bool(row.usage_reported, "usage_records.usage_reported"),
  costNanos: Row.big(row.cost_nanos, "usage_records.cost_nanos"),
  latencyMs: Row.int(row.latency_ms, "usage_records.latency_ms"),
  ttfbMs: Row.intOrNull(row.ttfb_ms, "usage_records.ttfb_ms"),
  status: Row.int(row.status, "usage_records.status"),
  errorCode: Row.strOrNull(row.error_code, "usage_records.error_code"),
  errorMessage: Row.strOrNull(row.error_message, "usage_records.error_message"),
  attempts: Row.int(row.attempts, "usage_records.attempts"),
  attemptLog: decodeAttemptLog(row.attempt_log),
  note: Row.strOrNull(row.note, "usage_records.note")
})

/** The longest error message a record keeps (the messages callers get are shorter; older journals may not be). */
const MAX_ERROR_MESSAGE = 2_000

const encode = (r: UsageLog.UsageRecord): Record<string, unknown> => ({
  id: newSortableId("use"),
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
  cache_write_tokens: r.cacheWriteTokens ?? 0,
  reasoning_tokens: r.reasoningTokens ?? 0,
  usage_reported: r.usageReported,
  cost_nanos: r.costNanos,
  latency_ms: r.latencyMs,
  ttfb_ms: r.ttfbMs,
  status: r.status,
  error_code: r.errorCode,
  error_message: r.errorMessage === undefined || r.errorMessage === null
    ? null
    : r.errorMessage.slice(0, MAX_ERROR_MESSAGE),
  attempts: r.attempts,
  attempt_log: r.attemptLog.length === 0 ? null : JSON.stringify(r.attemptLog),
  note: r.note ?? null
})

/**
 * A batch's usage records as one multi-row INSERT (insert or nothing, by
 * request id) and its parameters, row after row (`MultiInsert`: the text is
 * kept per row count, so SQLite's statement cache finds it prepared).
 */
const insertUsage = (
  rows: Arr.NonEmptyReadonlyArray<Record<string, unknown>>,
  pg: boolean
): readonly [string, Array<unknown>] =>
  MultiInsert.multiInsert("usage_records", rows, pg, "ON CONFLICT (request_id) DO NOTHING")

/**
 * Writes a batch of queued entries in one transaction, idempotently: usage
 * records inserted or nothing (keyed by request id), charges applied once
 * (see `LeaseSql.applyCharges`), then lease releases (a lease already gone is
 * not released again). Charges come before releases: a lease released in a
 * batch was charged by entries queued before its release, and none after it.
 *
 * @category writing
 */
export const writeEntries = (
  sql: SqlClient.SqlClient,
  batch: ReadonlyArray<UsageJournal.Entry>
): Effect.Effect<void, SqlError.SqlError> => {
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
      const [text, params] = insertUsage(rows, sql.onDialectOrElse({ pg: () => true, orElse: () => false }))
      yield* sql.unsafe(text, params)
    }
    if (charges.length === 0 && releases.length === 0) return
    const now = yield* Clock.currentTimeMillis
    if (charges.length > 0) yield* LeaseSql.applyCharges(sql, charges, now)
    for (const leaseId of releases) yield* LeaseSql.release(sql, leaseId, now)
  }))
}

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
  /** Writes everything queued so far (the journal's entries first). */
  readonly flush: Effect.Effect<void, SqlError.SqlError | UsageJournal.JournalError>
  /** How many entries (records, charges, releases) are queued and not yet written. */
  readonly pending: Effect.Effect<number>
  /** Entries in memory only, whether the journal fails, whether priced calls may be admitted. */
  readonly state: Effect.Effect<WriterState>
  /** False once memory holds 90% of `maxMemoryEntries` (the database and the journal both fail): refuse priced calls. */
  readonly admitting: () => boolean
  /** The writer's own figures (flush times, failed batches), for metrics. */
  readonly metrics: WriterMetrics
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

        const metrics: WriterMetrics = {
          flushSeconds: new PlainMetrics.Histogram(
            "modelgate_usage_flush_seconds",
            "Time to write one batch of usage records, charges and lease releases (one transaction).",
            [],
            FLUSH_BUCKETS
          ),
          flushFailures: new PlainMetrics.Counter(
            "modelgate_usage_flush_failures_total",
            "Batches of usage records and charges the database did not take (kept and retried, or journaled).",
            []
          ),
          journalFailures: new PlainMetrics.Counter(
            "modelgate_usage_journal_failures_total",
            "Appends to the usage journal that failed (a full, read-only or failing disk); the entries stay in memory.",
            []
          )
        }
        const noLabels: ReadonlyArray<string> = []
        const flushTimeoutMs = Math.max(1, options.flushTimeoutMs ?? DEFAULT_FLUSH_TIMEOUT_MS)
        /**
         * The watchdog: the database's work runs in a fiber of its own, and this waits for it at
         * most `flushTimeoutMs`. A database that stops answering without an error (a frozen
         * server, a network that swallows bytes) would otherwise hold the writer for ever; after
         * the bound the work is interrupted in the background (its connection is retired) and
         * this fails at once.
         */
        const bounded = <A>(what: string, work: Effect.Effect<A, SqlError.SqlError>) =>
          Effect.flatMap(
            Effect.forkDetach(Effect.interruptible(work)),
            (fiber) =>
              Effect.interruptible(Fiber.join(fiber)).pipe(
                Effect.timeoutOrElse({
                  duration: flushTimeoutMs,
                  orElse: () =>
                    Effect.andThen(
                      Effect.forkDetach(Fiber.interrupt(fiber)),
                      Effect.fail(
                        new SqlError.SqlError({
                          reason: new SqlError.StatementTimeoutError({
                            cause: undefined,
                            message: `the database did not finish ${what} within ${flushTimeoutMs} ms`,
                            operation: what
                          })
                        })
                      )
                    )
                }),
                Effect.onInterrupt(() => Effect.asVoid(Effect.forkDetach(Fiber.interrupt(fiber))))
              )
          )
        const writeBatch = (batch: ReadonlyArray<Entry>) =>
          Effect.flatMap(
            Clock.currentTimeNanos,
            (started) =>
              bounded("writing a batch of usage records and charges", writeEntries(sql, batch)).pipe(
                Effect.onExit((exit) =>
                  Effect.map(Clock.currentTimeNanos, (ended) => {
                    metrics.flushSeconds.observe(noLabels, Number(ended - started) / 1e9)
                    if (Exit.isFailure(exit)) metrics.flushFailures.add(noLabels)
                  })
                )
              )
          )
        const startedAt = yield* Clock.currentTimeMillis
        let journal = options.journal === undefined
          ? undefined
          : UsageJournal.make(options.journal.dir, options.journal.name, startedAt)
        let rotations = 0
        const maxMemory = Math.max(1, options.maxMemoryEntries ?? DEFAULT_MAX_MEMORY_ENTRIES)
        const admitBelow = Math.max(1, Math.floor(maxMemory * ADMIT_SHARE))
        let journalFailing = false
        let journalRetryAt = 0
        let journalBackoffMs = 0
        /** Entries being appended to the journal right now (still only in memory). */
        let spilling = 0
        const inMemory = () => buffer.length + writing + spilling
        const admitting = () => inMemory() < admitBelow
        /** Entries in the journal and not yet in the database; they come before everything in `buffer`. */
        let journaled = 0

        // A full batch, or memory reaching the admission bound, starts a write at once: at the bound
        // priced calls are refused until the database or the journal takes the queue, and the next
        // tick may be far. Only the crossing wakes the writer, so an outage is not retried per call.
        const enqueue = (entry: Entry) =>
          Effect.sync(() => {
            buffer.push(entry)
            if (buffer.length >= maxBatch || inMemory() === admitBelow) Deferred.doneUnsafe(wake, Exit.void)
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

        /**
         * Moves what is queued in memory to the journal (on disk, fsync'd), after what is there
         * already: while the database cannot take them, a crash loses none of them.
         */
        const spill = Effect.suspend(() => {
          if (journal === undefined || buffer.length === 0) return Effect.succeed(0)
          const moved = buffer
          buffer = []
          spilling = moved.length
          return journal.append(moved).pipe(
            Effect.tap(() => Effect.sync(() => journaled += moved.length)),
            Effect.as(moved.length),
            Effect.tapError(() => Effect.sync(() => buffer = moved.concat(buffer))),
            Effect.ensuring(Effect.sync(() => spilling = 0))
          )
        })

        /**
         * A journal that cannot be read back is left on disk, for the next start on the directory
         * (or `modelgate usage replay`), and a new one begun: what is in memory is written without it.
         */
        const setAside = (current: UsageJournal.Journal, error: UsageJournal.JournalError) =>
          Effect.suspend(() => {
            const dir = options.journal!.dir
            journal = UsageJournal.make(dir, options.journal!.name, startedAt + ++rotations)
            journaled = 0
            return Effect.logError(
              `The usage journal ${current.path} cannot be read back; it is left for the next start on ${dir} ` +
                `(or: modelgate usage replay FILE), and the writer goes on without it`,
              error
            )
          })

        /** Writes the journal to the database, in order and in batches, then removes it. */
        const drain = Effect.suspend(() => {
          const current = journal
          if (current === undefined || journaled === 0) return Effect.void
          // A cheap question first: while the database is down the journal is not read every tick.
          return bounded("answering before the journal is replayed", sql`SELECT 1`).pipe(
            Effect.andThen(Effect.result(current.read)),
            Effect.flatMap((read) =>
              read._tag === "Failure"
                ? setAside(current, read.failure)
                : Effect.forEach(Arr.chunksOf(read.success.entries, maxBatch), writeBatch, { discard: true }).pipe(
                  Effect.andThen(Effect.sync(() => journaled = 0)),
                  // Written: a file that cannot be removed is set aside (its entries are written once anyway).
                  Effect.andThen(Effect.exit(current.remove)),
                  Effect.flatMap((removed) =>
                    Exit.isSuccess(removed) ? Effect.void : Effect.sync(() => {
                      journal = UsageJournal.make(options.journal!.dir, options.journal!.name, startedAt + ++rotations)
                    })
                  )
                )
            )
          )
        })

        /**
         * Writes everything queued: the journal first (it holds the oldest entries), then memory,
         * straight to the database: a journal that fails never holds back a database that answers.
         */
        const flush: Effect.Effect<void, SqlError.SqlError | UsageJournal.JournalError> = lock.withPermit(
          drain.pipe(
            Effect.andThen(Effect.whileLoop({ while: () => buffer.length > 0, body: () => flushOnce, step: () => {} }))
          )
        )

        // While the database is down every tick fails: one line per outage, not one per tick; and
        // what is queued goes to the journal, so that a crash during the outage loses nothing.
        const outage = OutageLog.make(
          `writing usage records and charges (kept ${
            journal === undefined ? "in memory" : `in ${journal.path}`
          } and retried)`
        )
        const journalOutage = OutageLog.make("writing the usage journal (entries kept in memory)")
        // A journal that fails is tried again after a pause that doubles up to 30 s: no tight loop on a
        // full disk. Meanwhile entries stay in memory (see `admitting`).
        const keep = Effect.flatMap(Clock.currentTimeMillis, (now) => {
          if (now < journalRetryAt) return Effect.void
          return lock.withPermit(spill).pipe(
            // Only a write that reached the journal says it works again: with nothing to write, it is
            // as failing (or not) as it was.
            Effect.flatMap((written) =>
              written === 0 ? Effect.void : Effect.andThen(
                Effect.sync(() => {
                  journalFailing = false
                  journalBackoffMs = 0
                }),
                journalOutage.succeeded
              )
            ),
            Effect.catchCause((cause) =>
              Effect.andThen(
                Effect.sync(() => {
                  metrics.journalFailures.add(noLabels)
                  journalFailing = true
                  journalBackoffMs = Math.min(JOURNAL_MAX_BACKOFF_MS, Math.max(flushIntervalMs, journalBackoffMs * 2))
                  journalRetryAt = now + journalBackoffMs
                }),
                journalOutage.failed(cause)
              )
            )
          )
        })
        const loop = Effect.gen(function*() {
          while (true) {
            yield* Effect.raceFirst(Effect.sleep(flushIntervalMs), Deferred.await(wake))
            wake = Deferred.makeUnsafe<void>()
            yield* flush.pipe(
              Effect.andThen(outage.succeeded),
              Effect.catchCause((cause) => Effect.andThen(outage.failed(cause), keep))
            )
          }
        })

        /**
         * The last flush, at shutdown: retried until `shutdownRetryMs` has passed; what it could
         * not write stays in the journal for the next start (or `modelgate usage replay`).
         */
        const finalFlush = Effect.gen(function*() {
          const deadline = (yield* Clock.currentTimeMillis) + Math.max(0, options.shutdownRetryMs ?? 0)
          while (true) {
            const result = yield* Effect.exit(flush)
            if (Exit.isSuccess(result)) return
            const now = yield* Clock.currentTimeMillis
            if (now >= deadline) break
            yield* Effect.sleep(Math.min(500, deadline - now))
          }
          const left = buffer.length + journaled
          if (journal === undefined) {
            return yield* Effect.logError(
              `${left} usage record(s), charge(s) and lease release(s) could not be written at shutdown and are lost`
            )
          }
          const kept = yield* Effect.exit(spill)
          if (Exit.isFailure(kept)) {
            return yield* Effect.logError(
              `${left} usage record(s), charge(s) and lease release(s) could not be written at shutdown, nor kept in ${journal.path}; they are lost`,
              kept.cause
            )
          }
          yield* Effect.logWarning(
            `${journaled} usage record(s), charge(s) and lease release(s) could not be written at shutdown (the database did not answer): ` +
              `they are kept in ${journal.path}, and written by the next start on this directory (or with: modelgate usage replay FILE)`
          )
        })

        // Entries an earlier run (of any node) left in this directory's journals come first: moved
        // into this writer's journal (a copy surviving a crash in between is written once anyway)
        // and written now, before this node releases what its earlier run left.
        const initial = journal
        if (initial !== undefined && options.journal !== undefined) {
          for (const path of UsageJournal.leftBehind(options.journal.dir, initial.path)) {
            const claimed = UsageJournal.claim(path)
            if (claimed === undefined) continue
            const adopted = yield* UsageJournal.read(claimed.path).pipe(
              Effect.tap(({ entries }) => initial.append(entries)),
              Effect.tap(() => Effect.sync(() => rmSync(claimed.path, { force: true }))),
              Effect.result
            )
            if (adopted._tag === "Failure") {
              claimed.giveBack()
              yield* Effect.logError(
                `Cannot take over the usage journal ${path}; it is left for the next start`,
                adopted.failure
              )
              continue
            }
            journaled += adopted.success.entries.length
            yield* Effect.logInfo(
              `taking over ${adopted.success.entries.length} usage record(s), charge(s) and lease release(s) an earlier run left in ${path}`
            )
            if (adopted.success.unreadable > 0) {
              yield* Effect.logWarning(
                `${adopted.success.unreadable} line(s) of ${path} could not be read (cut short by a crash while they were written) and are skipped`
              )
            }
          }
          yield* flush.pipe(Effect.catchCause(outage.failed))
        }

        yield* Effect.addFinalizer(() => finalFlush)
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
            (rows) => rows.map(decodeUsageRow)
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
          pending: Effect.sync(() => inMemory() + journaled),
          state: Effect.sync(() => ({ memoryEntries: inMemory(), journalFailing, admitting: admitting() })),
          admitting,
          metrics,
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
