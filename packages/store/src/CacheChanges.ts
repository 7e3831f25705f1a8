/**
 * The change log behind cache invalidation across nodes. Every write that an
 * in-memory cache depends on (a key created, changed, revoked or deleted; a
 * user changed; the catalog edited) is recorded here with a sequence number,
 * besides being announced on Redis pub/sub where configured. Pub/sub delivers
 * at most once and only to nodes connected at that moment, so every node also
 * reads this log every half second from the last sequence number it has seen:
 * one primary-key read when nothing changed, the changed rows otherwise.
 *
 * Sequence numbers come from one counter row updated in the recording
 * transaction: its row lock makes writers take turns, so numbers become
 * visible in the order they were given and `since(n)` never skips a change
 * that commits later with a smaller number. Old entries are pruned; a reader
 * that fell behind the pruned part sees a gap and reloads everything.
 *
 * @since 0.1.0
 */
import type { Invalidation } from "@modelgate/core"
import { Array as Arr, Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql"
import * as Row from "./internal/row.ts"

/**
 * One change: what changed (`keys`: the ids of keys; `users`: the ids of
 * users, whose keys carry their name, state and limits; `catalog`: channels,
 * models, prices, aliases, groups) and which records, or `null` for all of
 * them.
 *
 * @category models
 */
export interface Change {
  readonly topic: Invalidation.Topic
  readonly ids: ReadonlyArray<string> | null
}

/** A change as logged, with its sequence number. @category models */
export interface Logged extends Change {
  readonly seq: number
}

const topics: ReadonlyArray<string> = ["keys", "users", "catalog"]

const decode = (row: Record<string, unknown>): Logged => {
  const topic = Row.str(row.topic, "cache_changes.topic")
  if (!topics.includes(topic)) throw new Error(`cache_changes.topic: unknown topic '${topic}'`)
  return {
    seq: Row.int(row.seq, "cache_changes.seq"),
    topic: topic as Invalidation.Topic,
    ids: row.ids === null || row.ids === undefined ? null : Row.stringArray(row.ids, "cache_changes.ids")
  }
}

/**
 * The change log.
 *
 * @category services
 */
export class CacheChanges extends Context.Service<CacheChanges, {
  /** Records changes in one transaction; returns the sequence number of each, in order. */
  readonly record: (changes: ReadonlyArray<Change>) => Effect.Effect<ReadonlyArray<number>, SqlError.SqlError>
  /** The last sequence number given (0 before any change). */
  readonly latest: Effect.Effect<number, SqlError.SqlError>
  /** Up to `limit` changes after `seq`, oldest first. */
  readonly since: (seq: number, limit: number) => Effect.Effect<ReadonlyArray<Logged>, SqlError.SqlError>
  /** Deletes changes recorded before `before` (epoch ms); returns how many. */
  readonly prune: (before: number) => Effect.Effect<number, SqlError.SqlError>
}>()("modelgate/store/CacheChanges") {
  /** @category layers */
  static readonly layer = Layer.effect(
    CacheChanges,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const latest = Effect.map(
        sql`SELECT seq FROM cache_change_seq WHERE id = 1`,
        (rows) => rows[0] === undefined ? 0 : Row.int(rows[0].seq, "cache_change_seq.seq")
      )
      return CacheChanges.of({
        record: (changes) =>
          changes.length === 0 ? Effect.succeed([]) : sql.withTransaction(Effect.gen(function*() {
            const counter =
              yield* sql`UPDATE cache_change_seq SET seq = seq + ${changes.length} WHERE id = 1 RETURNING seq`
            const last = Row.int(counter[0]?.seq, "cache_change_seq.seq")
            const first = last - changes.length + 1
            const now = yield* Clock.currentTimeMillis
            const inserted = changes.map((change, i): Record<string, unknown> => ({
              seq: first + i,
              topic: change.topic,
              ids: change.ids === null ? null : JSON.stringify(change.ids),
              created_at: now
            }))
            if (Arr.isReadonlyArrayNonEmpty(inserted)) yield* sql`INSERT INTO cache_changes ${sql.insert(inserted)}`
            return changes.map((_, i) => first + i)
          })),
        latest,
        since: (seq, limit) =>
          Effect.map(
            sql`SELECT seq, topic, ids FROM cache_changes WHERE seq > ${seq} ORDER BY seq LIMIT ${limit}`,
            (rows) => rows.map(decode)
          ),
        prune: (before) =>
          Effect.map(sql`DELETE FROM cache_changes WHERE created_at < ${before} RETURNING seq`, (rows) => rows.length)
      })
    })
  )
}
