/**
 * Cache invalidation: after a write that admission depends on (a key revoked,
 * a channel edited, a price changed), the writer announces it and every cache
 * (on this node at once, on other nodes through Redis pub/sub where configured)
 * reloads what changed.
 *
 * @since 0.1.0
 */
import { Context, type Effect } from "effect"

/** What changed. @category models */
export type Topic = "keys" | "catalog" | "users"

/** @category services */
export class Invalidation extends Context.Service<Invalidation, {
  /** Announces that `topic` changed; returns once this node's caches have reloaded. */
  readonly invalidate: (topic: Topic) => Effect.Effect<void>
}>()("modelgate/core/Invalidation") {}
