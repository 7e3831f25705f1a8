/**
 * The node-redis client setup the Redis limiter and broadcast share.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type * as Redis from "redis"

/**
 * node-redis, loaded when a Redis is configured: a gateway without one does
 * not keep its modules in memory (issue 22, idle memory).
 */
export const load: Effect.Effect<typeof Redis> = Effect.promise(() => import("redis"))

/** Reconnection backoff: 100 ms doubling per attempt, at most 5 s. */
export const reconnectStrategy = (retries: number): number => Math.min(100 * 2 ** Math.min(retries, 10), 5_000)

/** How long a first connection may take: the command timeout, at least a second. */
export const connectTimeoutMs = (commandTimeoutMs: number): number => Math.max(commandTimeoutMs, 1_000)

/**
 * A client for commands, connecting in the background and destroyed with the
 * scope. Commands fail at once while it is disconnected (no offline queue),
 * and its `error` events are swallowed: node-redis would otherwise rethrow
 * them unhandled and crash the process; the callers report outages
 * themselves, once each.
 */
export const commandClient = (url: string, commandTimeoutMs: number) =>
  Effect.acquireRelease(
    Effect.map(load, ({ createClient }) => {
      const client = createClient({
        url,
        disableOfflineQueue: true,
        socket: { connectTimeout: connectTimeoutMs(commandTimeoutMs), reconnectStrategy }
      })
      client.on("error", () => {})
      client.connect().catch(() => {})
      return client
    }),
    (client) =>
      Effect.sync(() => {
        if (client.isOpen) client.destroy()
      })
  )

/** A client of `commandClient`. */
export type CommandClient = Effect.Success<ReturnType<typeof commandClient>>

/**
 * Waits for a client's first connection (ready, or its first error), at most
 * `connectTimeoutMs`: so commands right after start go to Redis, and an
 * unreachable Redis is an outage like any later one.
 */
export const firstConnection = (client: CommandClient, commandTimeoutMs: number): Effect.Effect<void> =>
  Effect.promise(() =>
    new Promise<void>((resolve) => {
      if (client.isReady) return resolve()
      const done = () => {
        clearTimeout(timer)
        client.off("ready", done)
        client.off("error", done)
        resolve()
      }
      const timer = setTimeout(done, connectTimeoutMs(commandTimeoutMs))
      client.once("ready", done)
      client.once("error", done)
    })
  )
