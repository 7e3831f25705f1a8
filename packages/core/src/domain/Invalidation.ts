/**
 * Cache invalidation: after a write that admission depends on (a key revoked,
 * a user disabled, a channel edited, a price changed), the writer announces
 * what changed and every node's caches reload it: this node's at once, the
 * other nodes' within a second (through Redis pub/sub where configured, and a
 * change log every node reads as the fallback).
 *
 * @since 0.1.0
 */
import { Context, type Effect } from "effect"

/**
 * What changed: `keys` (API keys, by key id), `users` (users, by user id: a
 * user's name, role, state and limits travel with their keys) or `catalog`
 * (channels, models and prices, aliases, groups).
 *
 * @category models
 */
export type Topic = "keys" | "catalog" | "users"

/** @category services */
export class Invalidation extends Context.Service<Invalidation, {
  /**
   * Announces that `topic` changed: for `keys` and `users`, the records with
   * these `ids` (key ids, user ids), or all of them when `ids` is omitted; the
   * catalog always reloads whole. Returns once this node's caches have
   * reloaded; never fails (a failure to reload or to announce is logged, and
   * the periodic catch-up repairs it).
   */
  readonly invalidate: (topic: Topic, ids?: ReadonlyArray<string>) => Effect.Effect<void>
}>()("modelgate/core/Invalidation") {}
