/**
 * The port where the upstream keys a channel's provider refused are kept, so
 * a restart does not send calls to a revoked key again and every node learns
 * of a refusal. Keys are named by a keyed fingerprint, never by their secret.
 * The store implements it in the database; an embedded gateway in memory.
 *
 * @since 0.1.0
 */
import { Context, type Effect } from "effect"
import type { InternalError } from "../errors/GatewayError.ts"

/** A refused upstream key. @category models */
export interface DisabledKey {
  readonly channelId: string
  /** `fingerprint(key)`. */
  readonly fingerprint: string
  /** The upstream's HTTP status that disabled it. */
  readonly status: number | null
  /** Why: the status and the upstream's message. */
  readonly reason: string
  /** Epoch ms. */
  readonly disabledAt: number
  /** The gateway process that saw the refusal. */
  readonly nodeId: string
}

/** @category services */
export class ChannelKeyStates extends Context.Service<ChannelKeyStates, {
  /** The fingerprint of an upstream key: a keyed hash, pure and fast. */
  readonly fingerprint: (apiKey: string) => string
  /** Every disabled key. */
  readonly list: Effect.Effect<ReadonlyArray<DisabledKey>, InternalError>
  /** Records a key as disabled (replacing an earlier record of it). */
  readonly disable: (key: DisabledKey) => Effect.Effect<void, InternalError>
  /** Re-enables a key; nothing happens when it was not disabled. */
  readonly enable: (channelId: string, fingerprint: string) => Effect.Effect<void, InternalError>
  /** Re-enables every key of a channel. */
  readonly enableChannel: (channelId: string) => Effect.Effect<void, InternalError>
}>()("modelgate/core/ChannelKeyStates") {}
