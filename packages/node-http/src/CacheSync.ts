/**
 * Cache invalidation across gateway processes: core's `Invalidation` port
 * over the caches of `Caches`, the store's change log and, when `redis` is
 * configured, a Redis pub/sub channel.
 *
 * A change (a key created, edited, revoked or deleted; a user edited, enabled
 * or disabled; a group, channel, model or price edited) is, in this order:
 *
 * 1. **recorded** in the change log (`CacheChanges`) with a sequence number;
 * 2. **published** on the channel `<redis_key_prefix>invalidation`, so every
 *    node applies it within milliseconds;
 * 3. **applied** here: only what it names is reloaded (one key, one user's
 *    keys), or the catalog, which is small.
 *
 * Every node also reads the change log every `pollIntervalMs` (default 500 ms)
 * from the last sequence number it has applied: one primary-key read when
 * nothing changed. That is the fallback when Redis is absent, down, or lost a
 * message (pub/sub delivers at most once, and only to connected subscribers),
 * and it picks up the writes of processes without caches (the CLI). After
 * every (re)subscription the log is read at once, to catch up on what was
 * missed meanwhile. A change applied from a message is not applied again when
 * the log reaches it. So a key revoked on one node stops working on every node
 * within a second with Redis down, and within milliseconds with it up.
 *
 * A node that fell behind the part of the log already pruned (changes are kept
 * `retentionMs`, default one hour) reloads everything once.
 *
 * @since 0.1.0
 */
import { Invalidation } from "@modelgate/core"
import { OutageLog } from "@modelgate/core"
import { RedisBroadcast } from "@modelgate/limits"
import * as CacheChanges from "@modelgate/store/CacheChanges"
import { Baseline, CatalogCache, KeyCache } from "@modelgate/store/Caches"
import { Clock, Context, Duration, Effect, Layer, Option, Schedule, Schema, Semaphore } from "effect"
import type { Scope } from "effect"
import type { SqlError } from "effect/sql"

/** How often each node reads the change log by default. @category constants */
export const POLL_INTERVAL_MS = 500

/** How long changes stay in the log by default (one hour). @category constants */
export const RETENTION_MS = 3_600_000

const PRUNE_INTERVAL = Duration.minutes(1)
const BATCH = 500

/** Options of cache invalidation. @category models */
export interface Options {
  /** The Redis to publish and listen on, or `null` to rely on the change log alone. */
  readonly redis: string | null
  /** The pub/sub channel (see {@link channelFor}). */
  readonly channel: string
  /** How often the change log is read. Default {@link POLL_INTERVAL_MS}. */
  readonly pollIntervalMs?: number | undefined
  /** How long changes stay in the log. Default {@link RETENTION_MS}. */
  readonly retentionMs?: number | undefined
}

/**
 * The pub/sub channel for a deployment: `<redis_key_prefix>invalidation`, so
 * deployments sharing one Redis under different prefixes do not hear each other.
 *
 * @category constructors
 */
export const channelFor = (redisKeyPrefix: string): string => `${redisKeyPrefix}invalidation`

const Message = Schema.Struct({
  seq: Schema.NullOr(Schema.Int),
  topic: Schema.Literals(["keys", "users", "catalog"]),
  ids: Schema.NullOr(Schema.Array(Schema.String))
})
const decodeMessage = Schema.decodeUnknownOption(Schema.fromJsonString(Message))

/** The pub/sub message of a change. @category encoding */
export const encodeMessage = (seq: number | null, change: CacheChanges.Change): string =>
  JSON.stringify({ seq, topic: change.topic, ids: change.ids })

/**
 * Records changes in the log and publishes them, for writers: the server's
 * `Invalidation`, and the CLI.
 *
 * @category services
 */
export class Announcer extends Context.Service<Announcer, {
  /**
   * Records and publishes `changes`; returns their sequence numbers (`null`
   * where recording failed). Never fails: a failure is logged, and the other
   * nodes then still get the change from the channel, or the log, whichever
   * worked.
   */
  readonly announce: (changes: ReadonlyArray<CacheChanges.Change>) => Effect.Effect<ReadonlyArray<number | null>>
}>()("modelgate/node-http/CacheSync/Announcer") {
  /**
   * An announcer that publishes on its own connection (no subscription): for
   * processes without caches, such as the CLI.
   *
   * @category layers
   */
  static readonly layer = (
    options: Pick<Options, "redis" | "channel">
  ): Layer.Layer<Announcer, never, CacheChanges.CacheChanges> =>
    Layer.effect(
      Announcer,
      Effect.gen(function*() {
        const log = yield* CacheChanges.CacheChanges
        const broadcast = options.redis === null
          ? undefined
          : yield* RedisBroadcast.make({ url: options.redis, channel: options.channel })
        return makeAnnouncer(log, broadcast)
      })
    )
}

const makeAnnouncer = (
  log: CacheChanges.CacheChanges["Service"],
  broadcast: RedisBroadcast.Broadcast | undefined
): Announcer["Service"] =>
  Announcer.of({
    announce: (changes) =>
      Effect.gen(function*() {
        const seqs: ReadonlyArray<number | null> = yield* log.record(changes).pipe(
          Effect.catchCause((cause) =>
            Effect.as(
              Effect.logWarning("recording a change for the other nodes failed; they get it through Redis only", cause),
              changes.map(() => null)
            )
          )
        )
        if (broadcast !== undefined) {
          for (let i = 0; i < changes.length; i++) {
            const published = yield* broadcast.publish(encodeMessage(seqs[i] ?? null, changes[i]!))
            if (!published) {
              yield* Effect.logDebug("publishing a change failed; the other nodes read it from the change log")
            }
          }
        }
        return seqs
      })
  })

/**
 * The state of invalidation on this node, for tests and health checks.
 *
 * @category services
 */
export class Status extends Context.Service<Status, {
  /** The last sequence number of the change log this node has applied (or skipped as already applied). */
  readonly watermark: Effect.Effect<number>
  /** Whether changes arrive through Redis right now (false without Redis). */
  readonly subscribed: Effect.Effect<boolean>
}>()("modelgate/node-http/CacheSync/Status") {}

/**
 * Applies one change to this node's caches.
 *
 * @category applying
 */
export const apply = (change: CacheChanges.Change) =>
  Effect.gen(function*() {
    if (change.topic === "catalog") return yield* (yield* CatalogCache).reload
    const keys = yield* KeyCache
    if (change.ids === null) return yield* keys.reloadAll
    return yield* (change.topic === "keys" ? keys.reloadKeys(change.ids) : keys.reloadUsers(change.ids))
  })

/**
 * Core's `Invalidation` (and this node's `Status`, `Announcer`) over the
 * caches, the change log and, when configured, Redis; runs the log reader and
 * the pruning of old changes for the scope.
 *
 * @category layers
 */
export const layer = (
  options: Options
): Layer.Layer<
  Invalidation.Invalidation | Status | Announcer,
  never,
  KeyCache | CatalogCache | Baseline | CacheChanges.CacheChanges
> => Layer.effectContext(make(options))

const make = Effect.fnUntraced(function*(options: Options): Effect.fn.Return<
  Context.Context<Invalidation.Invalidation | Status | Announcer>,
  never,
  KeyCache | CatalogCache | Baseline | CacheChanges.CacheChanges | Scope.Scope
> {
  const pollIntervalMs = options.pollIntervalMs ?? POLL_INTERVAL_MS
  const retentionMs = options.retentionMs ?? RETENTION_MS
  const log = yield* CacheChanges.CacheChanges
  const caches = Context.make(KeyCache, yield* KeyCache).pipe(Context.add(CatalogCache, yield* CatalogCache))
  const applyHere = (change: CacheChanges.Change) => Effect.provideContext(apply(change), caches)

  let watermark = (yield* Baseline).seq
  // Changes applied ahead of the log reader (from a message, or made here), by sequence number.
  const applied = new Set<number>()

  const reloadEverything = Effect.gen(function*() {
    yield* applyHere({ topic: "keys", ids: null })
    yield* applyHere({ topic: "catalog", ids: null })
  })

  const readLog: Effect.Effect<void, SqlError.SqlError | CacheError> = Effect.gen(function*() {
    const latest = yield* log.latest
    while (watermark < latest) {
      const batch = yield* log.since(watermark, BATCH)
      if (batch.length === 0 || batch[0]!.seq !== watermark + 1) {
        yield* Effect.logWarning(
          "this node fell behind the pruned part of the change log; reloading every key and the catalog"
        )
        yield* reloadEverything
        watermark = latest
        break
      }
      for (const change of batch) {
        if (!applied.delete(change.seq)) yield* applyHere(change)
        watermark = change.seq
      }
    }
    for (const seq of applied) if (seq <= watermark) applied.delete(seq)
  })

  const reading = yield* Semaphore.make(1)
  // Every 500 ms: while the database is down, one line per outage (with its reason, no stack trace).
  const readingOutage = OutageLog.make("reading the change log (changes from other nodes may be late meanwhile)")
  const catchUp = reading.withPermits(1)(readLog).pipe(
    Effect.andThen(readingOutage.succeeded),
    Effect.catchCause(readingOutage.failed)
  )

  const onMessage = (message: string): Effect.Effect<void> =>
    Option.match(decodeMessage(message), {
      onNone: () =>
        Effect.logWarning("ignoring a malformed invalidation message").pipe(Effect.annotateLogs({ message })),
      onSome: ({ ids, seq, topic }) => {
        if (seq !== null && (seq <= watermark || applied.has(seq))) return Effect.void
        return applyHere({ topic, ids }).pipe(
          Effect.tap(() => Effect.sync(() => seq !== null && seq > watermark && applied.add(seq))),
          Effect.catchCause((cause) =>
            Effect.logWarning("applying a change from another node failed; the change log reader retries it", cause)
          )
        )
      }
    })

  const broadcast = options.redis === null
    ? undefined
    : yield* RedisBroadcast.make({ url: options.redis, channel: options.channel }, { onMessage, onSubscribed: catchUp })
  const announcer = makeAnnouncer(log, broadcast)

  const invalidate = (topic: Invalidation.Topic, ids?: ReadonlyArray<string>): Effect.Effect<void> =>
    Effect.gen(function*() {
      const change: CacheChanges.Change = { topic, ids: ids === undefined ? null : [...ids] }
      const [seq] = yield* announcer.announce([change])
      yield* applyHere(change).pipe(
        Effect.tap(() => Effect.sync(() => seq !== null && seq !== undefined && seq > watermark && applied.add(seq))),
        Effect.catchCause((cause) =>
          Effect.logWarning("reloading a cache after a change failed; the change log reader retries it", cause)
        )
      )
    })

  const prune = Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    yield* log.prune(now - retentionMs)
  }).pipe(Effect.catchCause((cause) => Effect.logDebug("pruning the change log failed", cause)))

  yield* catchUp.pipe(Effect.repeat(Schedule.spaced(Duration.millis(pollIntervalMs))), Effect.forkScoped)
  yield* prune.pipe(Effect.repeat(Schedule.spaced(PRUNE_INTERVAL)), Effect.forkScoped)

  return Context.make(Invalidation.Invalidation, Invalidation.Invalidation.of({ invalidate })).pipe(
    Context.add(Announcer, announcer),
    Context.add(
      Status,
      Status.of({
        watermark: Effect.sync(() => watermark),
        subscribed: broadcast === undefined ? Effect.succeed(false) : broadcast.subscribed
      })
    )
  )
})

type CacheError = Effect.Error<ReturnType<typeof apply>>

/**
 * After provisioning from the configuration file changed something, records
 * that everything may have changed, so the other nodes reload (this node's
 * caches load afterwards anyway).
 *
 * @category applying
 */
export const recordProvisioned = (
  result: { readonly created: ReadonlyArray<string>; readonly updated: ReadonlyArray<string> }
) =>
  result.created.length + result.updated.length === 0 ? Effect.void : Effect.flatMap(
    CacheChanges.CacheChanges,
    (log) =>
      log.record([{ topic: "keys", ids: null }, { topic: "catalog", ids: null }]).pipe(
        Effect.asVoid,
        Effect.catchCause((cause) =>
          Effect.logWarning("recording the configuration's changes for the other nodes failed", cause)
        )
      )
  )
