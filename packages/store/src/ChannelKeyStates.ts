/**
 * Upstream keys disabled after the upstream refused their credentials (401 or
 * 403), kept in the database so that a restart, or another gateway process
 * sharing the database, does not send calls to them again. Keys are named by a
 * fingerprint: a keyed hash (HMAC with the server secret) of the key, never
 * the key itself, so the table holds nothing usable.
 *
 * Circuit breakers are not stored: they are per process (docs/routing.md).
 *
 * @since 0.1.0
 */
import { ChannelKeyStates as Port, GatewayError } from "@modelgate/core"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql"
import * as Row from "./internal/row.ts"
import { KeyHasher } from "./Secrets.ts"

/**
 * A disabled upstream key.
 *
 * @category models
 */
/** A refused upstream key (core's port's model). @category models */
export type DisabledKey = Port.DisabledKey

const FINGERPRINT_LABEL = "modelgate upstream key\u0000"

/**
 * The repository of disabled upstream keys.
 *
 * @category services
 */
export class ChannelKeyStates extends Context.Service<ChannelKeyStates, {
  /** The fingerprint of an upstream key: 32 hex characters of its keyed hash. Pure and fast. */
  readonly fingerprint: (apiKey: string) => string
  /** Every disabled key. */
  readonly list: Effect.Effect<ReadonlyArray<DisabledKey>, SqlError.SqlError>
  /** Records a key as disabled (replacing an earlier record of it). */
  readonly disable: (key: DisabledKey) => Effect.Effect<void, SqlError.SqlError>
  /** Re-enables a key; nothing happens when it was not disabled. */
  readonly enable: (channelId: string, fingerprint: string) => Effect.Effect<void, SqlError.SqlError>
  /** Re-enables every key of a channel. */
  readonly enableChannel: (channelId: string) => Effect.Effect<void, SqlError.SqlError>
}>()("modelgate/store/ChannelKeyStates") {
  /** @category layers */
  static readonly layer: Layer.Layer<ChannelKeyStates, never, SqlClient.SqlClient | KeyHasher> = Layer.effect(
    ChannelKeyStates,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const hasher = yield* KeyHasher
      const decode = (row: Record<string, unknown>): DisabledKey => ({
        channelId: Row.str(row.channel_id, "channel_key_states.channel_id"),
        fingerprint: Row.str(row.key_fingerprint, "channel_key_states.key_fingerprint"),
        status: Row.intOrNull(row.status, "channel_key_states.status"),
        reason: Row.str(row.reason, "channel_key_states.reason"),
        disabledAt: Row.int(row.disabled_at, "channel_key_states.disabled_at"),
        nodeId: Row.str(row.node_id, "channel_key_states.node_id")
      })
      return ChannelKeyStates.of({
        fingerprint: (apiKey) => hasher.hash(FINGERPRINT_LABEL + apiKey).slice(0, 32),
        list: Effect.map(
          sql`SELECT * FROM channel_key_states ORDER BY channel_id, key_fingerprint`,
          (rows) => rows.map(decode)
        ),
        disable: (key) => {
          const columns = { status: key.status, reason: key.reason, disabled_at: key.disabledAt, node_id: key.nodeId }
          return Effect.asVoid(
            sql`INSERT INTO channel_key_states ${
              sql.insert({ channel_id: key.channelId, key_fingerprint: key.fingerprint, ...columns })
            }
              ON CONFLICT (channel_id, key_fingerprint) DO UPDATE SET ${sql.update(columns)}`
          )
        },
        enable: (channelId, fingerprint) =>
          Effect.asVoid(
            sql`DELETE FROM channel_key_states WHERE channel_id = ${channelId} AND key_fingerprint = ${fingerprint}`
          ),
        enableChannel: (channelId) => Effect.asVoid(sql`DELETE FROM channel_key_states WHERE channel_id = ${channelId}`)
      })
    })
  )

  /**
   * Core's `ChannelKeyStates` port over this repository (what the call
   * engine's key health reads and writes); a database failure is an
   * `InternalError`.
   *
   * @category layers
   */
  static readonly layerPort: Layer.Layer<Port.ChannelKeyStates, never, ChannelKeyStates> = Layer.effect(
    Port.ChannelKeyStates,
    Effect.map(ChannelKeyStates, (states) => {
      const failed = (what: string) => (error: unknown) =>
        new GatewayError.InternalError({
          message: `The disabled upstream keys could not be ${what}: ${
            error instanceof Error ? error.message : String(error)
          }`
        })
      return Port.ChannelKeyStates.of({
        fingerprint: states.fingerprint,
        list: Effect.mapError(states.list, failed("read")),
        disable: (key) => Effect.mapError(states.disable(key), failed("written")),
        enable: (channelId, fingerprint) => Effect.mapError(states.enable(channelId, fingerprint), failed("written")),
        enableChannel: (channelId) => Effect.mapError(states.enableChannel(channelId), failed("written"))
      })
    })
  )
}
