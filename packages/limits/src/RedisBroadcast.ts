/**
 * A Redis pub/sub channel that every gateway process publishes to and listens
 * on: the transport of cache invalidation across nodes (a key revoked on one
 * node reaches every node in milliseconds).
 *
 * - **Two connections.** One publishes (commands fail at once while it is
 *   disconnected, never queue), one subscribes (a subscribed connection can
 *   send nothing else).
 * - **Reconnects by itself.** Both clients reconnect with backoff (100 ms
 *   doubling, at most 5 s) and the subscriber resubscribes; `onSubscribed` runs
 *   each time the subscription is (re)established, so the owner can catch up
 *   on what it missed meanwhile (pub/sub delivers at most once, only to
 *   connected subscribers).
 * - **Never fails.** An unreachable Redis at start or later is reported once
 *   per outage in the log; `publish` answers `false` and `subscribed` says
 *   whether messages can currently arrive. `make` waits at most
 *   `max(commandTimeoutMs, 1 s)` for the first connection, less when it fails
 *   at once.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { Scope } from "effect"
import * as RedisClient from "./internal/redisClient.ts"

/** Options of a broadcast channel. @category models */
export interface Options {
  /** `redis://[[user]:password@]host[:port][/db]` or `rediss://...` */
  readonly url: string
  /** The pub/sub channel name, e.g. `modelgate:invalidation`. */
  readonly channel: string
  /** A publish slower than this counts as failed. Default 500 ms. */
  readonly commandTimeoutMs?: number | undefined
}

/** What to do with the channel's messages. @category models */
export interface Handlers {
  /** Runs for every message (also this process's own). */
  readonly onMessage: (message: string) => Effect.Effect<void>
  /** Runs each time the subscription is established, the first time and after every reconnection. */
  readonly onSubscribed: Effect.Effect<void>
}

/** A broadcast channel. @category models */
export interface Broadcast {
  /** Publishes `message`; `false` when Redis did not take it (unreachable, or slower than the timeout). */
  readonly publish: (message: string) => Effect.Effect<boolean>
  /** Whether messages can arrive now: the subscription is established and its connection is up. */
  readonly subscribed: Effect.Effect<boolean>
}

const checkOptions = (options: Options): string | undefined => {
  if (typeof options.url !== "string" || !/^rediss?:\/\//.test(options.url)) {
    return `url must be a redis:// or rediss:// URL, got ${JSON.stringify(options.url)}`
  }
  if (typeof options.channel !== "string" || options.channel.length === 0) {
    return `channel must be a non-empty string, got ${JSON.stringify(options.channel)}`
  }
  const timeout = options.commandTimeoutMs
  if (timeout !== undefined && (!Number.isSafeInteger(timeout) || timeout <= 0)) {
    return `commandTimeoutMs must be a positive integer number of milliseconds, got ${String(timeout)}`
  }
  return undefined
}

/**
 * Opens the channel for the scope: a publisher and, when `handlers` are
 * given, a subscriber. Dies with a message naming the option when `options`
 * is invalid.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { RedisBroadcast } from "@modelgate/limits"
 *
 * const program = Effect.scoped(Effect.gen(function*() {
 *   const channel = yield* RedisBroadcast.make({ url: "redis://127.0.0.1:6379", channel: "modelgate:invalidation" }, {
 *     onMessage: (message) => Effect.log("received", message),
 *     onSubscribed: Effect.log("listening")
 *   })
 *   yield* channel.publish(JSON.stringify({ topic: "keys", ids: ["key_1"] }))
 * }))
 * ```
 *
 * @category constructors
 */
export const make = Effect.fnUntraced(function*(
  options: Options,
  handlers?: Handlers | undefined
): Effect.fn.Return<Broadcast, never, Scope.Scope> {
  const invalid = checkOptions(options)
  if (invalid !== undefined) return yield* Effect.die(new Error(`RedisBroadcast: ${invalid}`))
  const timeoutMs = options.commandTimeoutMs ?? 500
  const services = yield* Effect.context<never>()
  const run = (effect: Effect.Effect<void>): void => {
    Effect.runForkWith(services)(effect)
  }

  // A publish right after start (a CLI command) reaches Redis once the first connection is made.
  const { createClient } = yield* RedisClient.load
  const publisher = yield* RedisClient.commandClient(options.url, timeoutMs)
  yield* RedisClient.firstConnection(publisher, timeoutMs)

  let subscribedOnce = false
  // The subscription is established on the current connection.
  let live = false
  let outage = false
  const subscriber = handlers === undefined ? undefined : yield* Effect.acquireRelease(
    Effect.sync(() => {
      // The offline queue stays on here: the SUBSCRIBE waits for the first connection.
      const client = createClient({
        url: options.url,
        socket: {
          connectTimeout: RedisClient.connectTimeoutMs(timeoutMs),
          reconnectStrategy: RedisClient.reconnectStrategy
        }
      })
      const lost = () => {
        live = false
        if (outage || !subscribedOnce) return
        outage = true
        run(Effect.logWarning(
          `RedisBroadcast: lost the subscription to '${options.channel}'; reconnecting (until then, changes arrive through polling)`
        ))
      }
      client.on("error", lost)
      client.on("reconnecting", lost)
      client.on("ready", () => {
        // After a reconnection node-redis has resubscribed before it reports ready.
        if (!subscribedOnce || live) return
        live = true
        if (outage) {
          outage = false
          run(Effect.logInfo(`RedisBroadcast: subscribed to '${options.channel}' again`))
        }
        run(handlers.onSubscribed)
      })
      client.connect().catch(() => {})
      client.subscribe(options.channel, (message) => run(handlers.onMessage(message))).then(
        () => {
          subscribedOnce = true
          live = true
          run(handlers.onSubscribed)
        },
        (cause: unknown) => run(Effect.logWarning(`RedisBroadcast: could not subscribe to '${options.channel}'`, cause))
      )
      return client
    }),
    (client) => Effect.sync(() => client.isOpen && client.destroy())
  )

  // Lazy: whether the publisher is ready is read each time the effect runs, not when it is made
  // (an effect made during an outage and run after it must publish).
  const publish = (message: string): Effect.Effect<boolean> =>
    Effect.suspend(() => {
      if (!publisher.isReady) return Effect.succeed(false)
      return Effect.tryPromise(() => publisher.publish(options.channel, message)).pipe(
        Effect.timeoutOption(timeoutMs),
        Effect.map((result) => result._tag === "Some"),
        Effect.orElseSucceed(() => false)
      )
    })

  return {
    publish,
    subscribed: Effect.sync(() => subscriber !== undefined && live && subscriber.isReady)
  }
})
