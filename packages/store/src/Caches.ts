/**
 * The in-memory side of the hot path: API keys by hash and the catalog
 * snapshot, loaded from the store at start and kept fresh by invalidation
 * (node-http's `CacheSync` applies the change log and Redis messages): a
 * change reloads only what it names (one key, one user's
 * keys) or, for the catalog, the small catalog; nothing reloads every key on
 * a timer.
 *
 * A key that is not in memory is looked up in the store once (so a key created
 * a moment ago works at once); unknown secrets are remembered briefly so a
 * flood of bad keys cannot reach the database.
 *
 * Loads never overwrite newer data: every change to the key map (a full load,
 * a reload of some keys) runs one at a time, in the order requested, so a full
 * load that started before a revocation is applied before it, never after;
 * and a key found by a lookup miss is remembered only if no change was applied
 * while it was being read.
 *
 * @since 0.1.0
 */
import { Catalog, type Domain, type GatewayError, KeyStore } from "@modelgate/core"
import { OutageLog } from "@modelgate/core"
import { Context, Duration, Effect, Layer, Schedule, Semaphore } from "effect"
import type { SqlError } from "effect/sql"
import * as CacheChanges from "./CacheChanges.ts"
import * as CatalogRepo from "./CatalogRepo.ts"
import * as Bounded from "./internal/bounded.ts"
import * as Keys from "./Keys.ts"
import type { SecretError } from "./Secrets.ts"
import * as Secrets from "./Secrets.ts"

const NEGATIVE_TTL_MS = 2_000
const LAST_USED_INTERVAL = Duration.seconds(5)
const NEGATIVE_MAX = 10_000
/** How many presented secrets' hashes are remembered (then the memo starts over). */
const HASHES_MAX = 50_000

/**
 * The change log's sequence number read before the caches first load: every
 * change after it is applied by `CacheSync`, so nothing that happens while the
 * caches load is missed.
 *
 * @category services
 */
export class Baseline
  extends Context.Service<Baseline, { readonly seq: number }>()("modelgate/node-http/Caches/Baseline")
{
  /** @category layers */
  static readonly layer: Layer.Layer<Baseline, SqlError.SqlError, CacheChanges.CacheChanges> = Layer.effect(
    Baseline,
    Effect.map(Effect.flatMap(CacheChanges.CacheChanges, (changes) => changes.latest), (seq) => ({ seq }))
  )
}

/**
 * API keys by keyed hash.
 *
 * @category services
 */
export class KeyCache extends Context.Service<KeyCache, {
  readonly lookup: (secret: string) => Effect.Effect<Domain.ApiKey | undefined, GatewayError.DatabaseUnavailable>
  /** Reloads every key. */
  readonly reloadAll: Effect.Effect<void, SqlError.SqlError>
  /** Reloads these keys (dropping those revoked or deleted). */
  readonly reloadKeys: (ids: ReadonlyArray<string>) => Effect.Effect<void, SqlError.SqlError>
  /** Reloads the keys of these users (their name, state and limits travel with the keys). */
  readonly reloadUsers: (userIds: ReadonlyArray<string>) => Effect.Effect<void, SqlError.SqlError>
  /** Number of keys in memory. */
  readonly size: Effect.Effect<number>
}>()("modelgate/node-http/KeyCache") {
  /**
   * The cache; `waitMs` bounds a lookup's wait on a database that answers
   * nothing (a key not in memory), past which the call gets 503 (default
   * 1,000 ms).
   *
   * @category layers
   */
  static layerWith(options: { readonly waitMs?: number | undefined } = {}) {
    const waitMs = Math.max(1, options.waitMs ?? Bounded.CALL_WAIT_MS)
    return Layer.effect(
      KeyCache,
      Effect.gen(function*() {
        yield* Baseline
        const keys = yield* Keys.Keys
        const hasher = yield* Secrets.KeyHasher
        let byHash = new Map<string, Domain.ApiKey>()
        let hashById = new Map<string, string>()
        const unknown = new Map<string, number>()
        // Incremented by every change applied to the map; a lookup miss caches its answer only if it did not move.
        let epoch = 0
        const writes = yield* Semaphore.make(1)
        const serially = <A, E>(effect: Effect.Effect<A, E>) => writes.withPermits(1)(effect)
        const outage = OutageLog.make("API key lookups (the database)")

        const forget = (id: string): void => {
          const hash = hashById.get(id)
          if (hash === undefined) return
          hashById.delete(id)
          byHash.delete(hash)
        }
        const remember = (loaded: Keys.CachedKey): void => {
          forget(loaded.key.id)
          byHash.set(loaded.hash, loaded.key)
          hashById.set(loaded.key.id, loaded.hash)
        }
        const applied = (): void => {
          epoch++
          unknown.clear()
        }

        const reloadAll = serially(Effect.map(keys.loadAll, (all) => {
          const nextByHash = new Map<string, Domain.ApiKey>()
          const nextHashById = new Map<string, string>()
          for (const entry of all) {
            nextByHash.set(entry.hash, entry.key)
            nextHashById.set(entry.key.id, entry.hash)
          }
          byHash = nextByHash
          hashById = nextHashById
          applied()
        }))
        const reloadKeys = (ids: ReadonlyArray<string>) =>
          serially(Effect.map(keys.loadByIds(ids), (loaded) => {
            for (const id of ids) forget(id)
            for (const entry of loaded) remember(entry)
            applied()
          }))
        const reloadUsers = (userIds: ReadonlyArray<string>) =>
          serially(Effect.map(keys.loadByUsers(userIds), (loaded) => {
            const users = new Set(userIds)
            for (const [id, hash] of hashById) {
              if (users.has(byHash.get(hash)?.userId ?? "")) forget(id)
            }
            for (const entry of loaded) remember(entry)
            applied()
          }))

        yield* reloadAll

        // Last use is kept in memory and written in one batch every few seconds, never per request.
        let used = new Map<string, number>()
        const usesOutage = OutageLog.make("recording when keys were last used (the database)")
        const flushUses = Effect.suspend(() => {
          if (used.size === 0) return Effect.void
          const batch = [...used].map(([keyId, at]) => ({ keyId, at }))
          used = new Map()
          return keys.touchLastUsed(batch).pipe(
            Effect.andThen(usesOutage.succeeded),
            Effect.catchCause(usesOutage.failed)
          )
        })
        yield* flushUses.pipe(Effect.repeat(Schedule.spaced(LAST_USED_INTERVAL)), Effect.forkScoped)
        yield* Effect.addFinalizer(() => flushUses)

        // The keyed hash of each secret that named a key, so a key in use costs a map lookup per call rather
        // than an HMAC. It maps secrets to hashes only: which key a hash is, and whether it is still valid,
        // stays in `byHash`, which invalidation keeps current. Secrets that named no key are not kept (a
        // flood of made-up keys must not fill memory).
        const hashes = new Map<string, string>()
        const remembered = (secret: string, hash: string): void => {
          if (hashes.size >= HASHES_MAX) hashes.clear()
          hashes.set(secret, hash)
        }

        // A key in memory is answered in one step (the clock read directly); only a miss goes on to the store.
        const lookup = (secret: string): Effect.Effect<Domain.ApiKey | undefined, GatewayError.DatabaseUnavailable> =>
          Effect.clockWith((clock) => {
            const known = hashes.get(secret)
            const hash = known ?? hasher.hash(secret)
            const now = clock.currentTimeMillisUnsafe()
            const cached = byHash.get(hash)
            if (cached !== undefined) {
              if (known === undefined) remembered(secret, hash)
              used.set(cached.id, now)
              return Effect.succeed(cached)
            }
            const missedAt = unknown.get(hash)
            if (missedAt !== undefined && now - missedAt < NEGATIVE_TTL_MS) return Effect.undefined
            return lookupStored(hash, now)
          })
        const lookupStored = Effect.fnUntraced(function*(hash: string, now: number) {
          const startedAt = epoch
          // A key not in memory while the database is down may exist: 503, logged once per outage.
          const found = yield* Bounded.within(keys.findByHash(hash), {
            ms: waitMs,
            what: "looking up an API key"
          }).pipe(
            Effect.tap(() => outage.succeeded),
            Effect.catchCause((cause) => Effect.andThen(outage.failed(cause), Effect.fail(Keys.keyLookupUnavailable)))
          )
          // A change applied meanwhile may have been about this very key: answer, but do not remember.
          if (epoch === startedAt) {
            if (found !== undefined) {
              remember({ hash, key: found })
            } else {
              if (unknown.size >= NEGATIVE_MAX) unknown.clear()
              unknown.set(hash, now)
            }
          }
          return found
        })
        return KeyCache.of({ lookup, reloadAll, reloadKeys, reloadUsers, size: Effect.sync(() => byHash.size) })
      })
    )
  }

  /** The cache, a lookup waiting at most 1,000 ms for a silent database. @category layers */
  static readonly layer = KeyCache.layerWith()
}

/**
 * The catalog snapshot.
 *
 * @category services
 */
export class CatalogCache extends Context.Service<CatalogCache, {
  readonly current: Effect.Effect<Catalog.Snapshot>
  readonly reload: Effect.Effect<void, SecretError | SqlError.SqlError>
}>()("modelgate/node-http/CatalogCache") {
  /** @category layers */
  static readonly layer = Layer.effect(
    CatalogCache,
    Effect.gen(function*() {
      yield* Baseline
      const repo = yield* CatalogRepo.CatalogRepo
      const writes = yield* Semaphore.make(1)
      const build = Effect.map(repo.load, (loaded) => Catalog.makeSnapshot(loaded))
      let snapshot = yield* build
      const reload = writes.withPermits(1)(Effect.map(build, (next) => {
        snapshot = next
      }))
      return CatalogCache.of({ current: Effect.sync(() => snapshot), reload })
    })
  )
}

/**
 * Core's `KeyStore` and `Catalog` ports over the caches.
 *
 * @category layers
 */
export const ports: Layer.Layer<KeyStore.KeyStore | Catalog.Catalog, never, KeyCache | CatalogCache> = Layer
  .effectContext(
    Effect.gen(function*() {
      const keys = yield* KeyCache
      const catalog = yield* CatalogCache
      return Context.make(KeyStore.KeyStore, { lookup: keys.lookup }).pipe(
        Context.add(Catalog.Catalog, { current: catalog.current })
      )
    })
  )
