/**
 * How long usage records are kept (`usage.retention_days`): a background task
 * that deletes the records older than that, in small batches, at start and
 * then every `intervalMs`. Only the request log is pruned: the ledger, the
 * balances, the keys' spending and the redemption codes are never touched,
 * so every balance still equals its ledger and every charge keeps its entry.
 * (The dashboards' sums of spending and tokens come from usage records, so
 * they go back no further than the records do.)
 *
 * Each batch is one short statement (`PRUNE_BATCH` records, oldest first,
 * found through the `(created_at, id)` index) with a pause between batches,
 * so a large backlog (retention switched on over years of records) is worked
 * off without holding SQLite's single writer or PostgreSQL's locks for long.
 * Several nodes may prune at once: deleting what another node just deleted
 * deletes nothing.
 *
 * @since 0.1.0
 */
import { OutageLog } from "@modelgate/core"
import { Clock, Duration, Effect, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql"

const DAY_MS = 86_400_000

/** How many records one statement deletes. @category constants */
export const PRUNE_BATCH = 2_000

/** The pause between two batches of one pruning round. @category constants */
export const PRUNE_PAUSE = Duration.millis(20)

/** How often pruning runs by default. @category constants */
export const PRUNE_INTERVAL = Duration.hours(1)

/** Options of the retention task. @category models */
export interface RetentionOptions {
  /** Records older than this many days are deleted (at least 1). */
  readonly days: number
  /** How often a pruning round runs (default `PRUNE_INTERVAL`). */
  readonly interval?: Duration.Input | undefined
  /** Records per statement (default `PRUNE_BATCH`). */
  readonly batch?: number | undefined
}

/**
 * Deletes up to `batch` usage records created before `before` (epoch ms),
 * oldest first, and returns how many it deleted.
 *
 * @category pruning
 */
export const pruneBatch = (
  before: number,
  batch: number = PRUNE_BATCH
): Effect.Effect<number, SqlError.SqlError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql`DELETE FROM usage_records WHERE id IN (
        SELECT id FROM usage_records WHERE created_at < ${before} ORDER BY created_at, id LIMIT ${batch}
      ) RETURNING id`
    return rows.length
  })

/**
 * One pruning round: deletes every usage record created before `before`,
 * batch after batch, and returns how many it deleted.
 *
 * @category pruning
 */
export const prune = (
  before: number,
  options: { readonly batch?: number | undefined; readonly pause?: Duration.Input | undefined } = {}
): Effect.Effect<number, SqlError.SqlError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const batch = Math.max(1, options.batch ?? PRUNE_BATCH)
    let total = 0
    while (true) {
      const deleted = yield* pruneBatch(before, batch)
      total += deleted
      if (deleted < batch) return total
      yield* Effect.sleep(options.pause ?? PRUNE_PAUSE)
    }
  })

/**
 * The retention task: a pruning round at start and every `interval`, each
 * deleting the records older than `days` days. A round that fails (the
 * database is down) is logged once per outage and tried again next time.
 *
 * @category layers
 */
export const layer = (options: RetentionOptions): Layer.Layer<never, never, SqlClient.SqlClient> =>
  Layer.effectDiscard(Effect.gen(function*() {
    const days = Math.max(1, options.days)
    const outage = OutageLog.make("pruning usage records older than usage.retention_days (the database)")
    const round = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const deleted = yield* prune(now - days * DAY_MS, { batch: options.batch })
      if (deleted > 0) {
        yield* Effect.logInfo("pruned usage records past their retention").pipe(
          Effect.annotateLogs({ deleted, retention_days: days })
        )
      }
    }).pipe(Effect.andThen(outage.succeeded), Effect.catchCause(outage.failed))
    yield* round.pipe(Effect.repeat(Schedule.spaced(options.interval ?? PRUNE_INTERVAL)), Effect.forkScoped)
  }))
