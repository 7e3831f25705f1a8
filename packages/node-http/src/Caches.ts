/**
 * The in-memory side of the hot path: API keys by hash and the catalog
 * snapshot, loaded from the store at start and kept fresh by invalidation (at
 * once for writes made through this process) and by a periodic reload (for
 * writes made elsewhere: the CLI, another node without Redis).
 *
 * A key that is not in memory is looked up in the store once (so a key created
 * a moment ago works at once); unknown secrets are remembered briefly so a
 * flood of bad keys cannot reach the database.
 *
 * @since 0.1.0
 */
import { Catalog, type Domain, GatewayError, Invalidation, KeyStore } from "@modelgate/core"
import * as CatalogRepo from "@modelgate/store/CatalogRepo"
import * as Keys from "@modelgate/store/Keys"
import * as Secrets from "@modelgate/store/Secrets"
import { Context, Duration, Effect, Layer, Schedule } from "effect"

/** How often caches reload everything, catching writes made outside this process. @category constants */
export const REFRESH_INTERVAL = Duration.seconds(2)

const NEGATIVE_TTL_MS = 2_000
const LAST_USED_INTERVAL = Duration.seconds(5)
const NEGATIVE_MAX = 10_000

const keyLookupFailed = new GatewayError.InternalError({ message: "The gateway could not check the API key; try again." })

/**
 * API keys by keyed hash.
 *
 * @category services
 */
export class KeyCache extends Context.Service<KeyCache, {
  readonly lookup: (secret: string) => Effect.Effect<Domain.ApiKey | undefined, GatewayError.InternalError>
  readonly reload: Effect.Effect<void>
}>()("modelgate/node-http/KeyCache") {
  /** @category layers */
  static readonly layer = Layer.effect(
    KeyCache,
    Effect.gen(function*() {
      const keys = yield* Keys.Keys
      const hasher = yield* Secrets.KeyHasher
      let byHash = new Map<string, Domain.ApiKey>()
      const unknown = new Map<string, number>()
      const load = Effect.map(keys.loadAll, (all) => {
        const next = new Map<string, Domain.ApiKey>()
        for (const entry of all) next.set(entry.hash, entry.key)
        byHash = next
        unknown.clear()
      })
      yield* load
      const reload = load.pipe(Effect.catchCause((cause) => Effect.logWarning("reloading API keys failed", cause)))
      yield* reload.pipe(Effect.repeat(Schedule.spaced(REFRESH_INTERVAL)), Effect.forkScoped)
      // Last use is kept in memory and written in one batch every few seconds, never per request.
      let used = new Map<string, number>()
      const flushUses = Effect.suspend(() => {
        if (used.size === 0) return Effect.void
        const batch = [...used].map(([keyId, at]) => ({ keyId, at }))
        used = new Map()
        return keys.touchLastUsed(batch).pipe(Effect.catchCause((cause) => Effect.logWarning("recording key use failed", cause)))
      })
      yield* flushUses.pipe(Effect.repeat(Schedule.spaced(LAST_USED_INTERVAL)), Effect.forkScoped)
      yield* Effect.addFinalizer(() => flushUses)
      const lookup = (secret: string): Effect.Effect<Domain.ApiKey | undefined, GatewayError.InternalError> => {
        const hash = hasher.hash(secret)
        const cached = byHash.get(hash)
        if (cached !== undefined) {
          used.set(cached.id, Date.now())
          return Effect.succeed(cached)
        }
        const missedAt = unknown.get(hash)
        if (missedAt !== undefined && Date.now() - missedAt < NEGATIVE_TTL_MS) return Effect.succeed(undefined)
        return keys.findByHash(hash).pipe(
          Effect.tap((found) =>
            Effect.sync(() => {
              if (found !== undefined) {
                byHash.set(hash, found)
              } else {
                if (unknown.size >= NEGATIVE_MAX) unknown.clear()
                unknown.set(hash, Date.now())
              }
            })
          ),
          Effect.catchCause((cause) => Effect.logError("key lookup failed", cause).pipe(Effect.andThen(Effect.fail(keyLookupFailed))))
        )
      }
      return KeyCache.of({ lookup, reload })
    })
  )
}

/**
 * The catalog snapshot.
 *
 * @category services
 */
export class CatalogCache extends Context.Service<CatalogCache, {
  readonly current: Effect.Effect<Catalog.Snapshot>
  readonly reload: Effect.Effect<void>
}>()("modelgate/node-http/CatalogCache") {
  /** @category layers */
  static readonly layer = Layer.effect(
    CatalogCache,
    Effect.gen(function*() {
      const repo = yield* CatalogRepo.CatalogRepo
      const build = Effect.map(repo.load, (loaded) => Catalog.makeSnapshot(loaded))
      let snapshot = yield* build
      const reload = build.pipe(
        Effect.tap((next) => Effect.sync(() => snapshot = next)),
        Effect.asVoid,
        Effect.catchCause((cause) => Effect.logWarning("reloading the catalog failed", cause))
      )
      yield* reload.pipe(Effect.repeat(Schedule.spaced(REFRESH_INTERVAL)), Effect.forkScoped)
      return CatalogCache.of({ current: Effect.sync(() => snapshot), reload })
    })
  )
}

/**
 * Core's `KeyStore`, `Catalog` and `Invalidation` ports over the caches.
 *
 * @category layers
 */
export const ports: Layer.Layer<KeyStore.KeyStore | Catalog.Catalog | Invalidation.Invalidation, never, KeyCache | CatalogCache> =
  Layer.effectContext(
    Effect.gen(function*() {
      const keys = yield* KeyCache
      const catalog = yield* CatalogCache
      const invalidate = (topic: Invalidation.Topic): Effect.Effect<void> =>
        topic === "catalog" ? catalog.reload : keys.reload
      return Context.make(KeyStore.KeyStore, { lookup: keys.lookup }).pipe(
        Context.add(Catalog.Catalog, { current: catalog.current }),
        Context.add(Invalidation.Invalidation, { invalidate })
      )
    })
  )
