/**
 * The Redis `RateLimiter`: the same behaviour as `MemoryLimiter` (see
 * `Window`), shared by every gateway process that points at one Redis.
 *
 * - **Atomic.** One Lua script call per acquire and one per release, over all
 *   the call's subjects at once (EVALSHA, falling back to EVAL when Redis has
 *   not cached the script yet, e.g. after a restart).
 * - **One clock.** Time is read with `TIME` inside the script, so all nodes agree
 *   on window edges whatever their own clocks say (`time: "clock"` reads
 *   Effect's `Clock` instead, for tests driven by `TestClock`).
 * - **Small, bounded work.** A subject's keys hold at most `rpm` request
 *   entries (only with a request limit), 61 token buckets (only with a token
 *   limit) and its concurrency slots, whatever the traffic; the scripts read
 *   the request log only at its ends. Keys carry TTLs (window or lease plus
 *   1 s) refreshed on write; what left the window is pruned on every touch.
 * - **Redis down.** Detected lazily: when the client is disconnected or a
 *   command fails or takes longer than `commandTimeoutMs`. Then, for
 *   `onFailure: "local"`, calls are limited per process by an in-memory
 *   limiter (logged once per outage); for `"refuse"`, they are refused with a
 *   `RateLimited` error whose message says the limit store is unreachable
 *   (core's port allows no other error; see the package README). After a
 *   failure Redis is skipped for `retryDownMs`, then tried again; the client
 *   reconnects on its own with exponential backoff (100 ms doubling, at most
 *   5 s), so shared limiting resumes without a restart.
 * - **Each process counts what it admitted.** Every call admitted through
 *   Redis is also recorded in the process's in-memory limiter, so during an
 *   outage a process limits on everything it admitted in the window, before
 *   the outage too: with N processes, a key gets at most N times its limit in
 *   any window. For one window after Redis answers again, and after Redis is
 *   found to have lost its data (a restart without persistence: the marker key
 *   `<prefix>epoch` is gone), a call needs both Redis and the process's own
 *   count to admit it (Redis does not know what was admitted locally, or at
 *   all, before), so the same bound holds across those windows. At start the
 *   limiter warns when Redis keeps no append-only file (`appendonly no`): a
 *   restart then loses every window.
 * - **No leaked slots, no lost corrections.** A permit is released where it
 *   was admitted: calls admitted locally during an outage release locally. A
 *   release that was never sent (Redis unreachable) is queued and sent again,
 *   whole, once Redis answers. A release whose outcome is unknown (no answer
 *   in time, the connection dropped while it was in flight) may already have
 *   applied its token correction, which is not idempotent: that correction is
 *   logged as dropped (the call's estimate stays counted until its bucket
 *   leaves the window) and only the slot release, which is idempotent, is
 *   resent. The slot's lease frees it at the latest. An admission whose answer
 *   never reached the caller (timeout, interruption) is cancelled as soon as
 *   it completes.
 *
 * Keys live under `keyPrefix` (default `modelgate:limits:`); for Redis Cluster
 * put a hash tag in the prefix (`{modelgate}:limits:`) so a call's keys share a
 * slot.
 *
 * @since 0.1.0
 */
import { GatewayError, MemoryLimiter, RateLimiter as Port, RateWindow as Window } from "@modelgate/core"
import { Clock, Context, Effect, Layer, Option, Schedule } from "effect"
import { randomUUID } from "node:crypto"
import * as RedisClient from "./internal/redisClient.ts"
import * as Scripts from "./internal/scripts.ts"

/** Options of the Redis limiter. @category models */
export interface Options extends Window.WindowOptions {
  /** `redis://[[user]:password@]host[:port][/db]` or `rediss://...` */
  readonly url: string
  /** What calls get while Redis is unreachable: per-process limits (`"local"`) or a refusal (`"refuse"`). */
  readonly onFailure: "local" | "refuse"
  /** Prefix of every key the limiter writes. Default `modelgate:limits:`. */
  readonly keyPrefix?: string | undefined
  /** A command slower than this counts as a failure. Default 500 ms. */
  readonly commandTimeoutMs?: number | undefined
  /** After a failure, how long calls skip Redis before it is tried again. Default 1 000 ms. */
  readonly retryDownMs?: number | undefined
  /** Where time comes from: Redis `TIME` (default; one clock for all nodes) or Effect's `Clock` (tests). */
  readonly time?: "redis" | "clock" | undefined
}

/**
 * The health of the Redis limiter, for readiness endpoints and tests.
 *
 * @category services
 */
export class Status extends Context.Service<Status, {
  /** Whether the next call will go to Redis: the client is connected and no recent failure is being waited out. */
  readonly available: Effect.Effect<boolean>
  /** Releases waiting for Redis to answer again. */
  readonly pendingReleases: Effect.Effect<number>
}>()("modelgate/limits/RedisLimiter/Status") {}

/** A release waiting to be sent (again). */
interface PendingRelease {
  readonly keys: ReadonlyArray<string>
  readonly callId: string
  /** The token bucket the call was counted in. */
  readonly bucket: string
  /** Tokens to add to the bucket (actual minus estimate); 0 once a send's outcome is unknown. */
  readonly change: number
  /** Also remove the call from the request log (an admission nobody saw). */
  readonly cancel: boolean
}

/** What became of a release sent to Redis: applied, certainly not applied, or unknown. */
type Outcome = "done" | "notSent" | "unknown"

const maxPendingReleases = 10_000

/** How often the limiter checks that Redis kept its data (the marker key). @category constants */
export const MARKER_CHECK_MS = 1_000

/** How long the marker key outlives the last process that checks it. @category constants */
export const MARKER_TTL_MS = 86_400_000

/**
 * Warns, once at start, when Redis keeps no append-only file: a restart then
 * loses every window (what an RDB snapshot keeps is minutes old). Says so
 * when Redis does not allow `CONFIG GET` (managed services), without failing.
 */
const warnWithoutPersistence = (client: RedisClient.CommandClient) =>
  Effect.promise(async () => {
    if (!client.isReady) return undefined
    try {
      // A map (RESP3 clients) or a flat [name, value] list (RESP2).
      const reply: unknown = await client.sendCommand(["CONFIG", "GET", "appendonly"])
      if (Array.isArray(reply)) return reply.length >= 2 ? String(reply[1]) : "unknown"
      if (typeof reply === "object" && reply !== null && "appendonly" in reply) {
        return String((reply as { appendonly: unknown }).appendonly)
      }
      return "unknown"
    } catch {
      return "unknown"
    }
  }).pipe(
    Effect.flatMap((appendonly) => {
      if (appendonly === undefined || appendonly === "yes") return Effect.void
      if (appendonly === "unknown") {
        return Effect.logInfo(
          "RedisLimiter: cannot tell whether Redis persists its data (CONFIG GET is not allowed); without it a restart resets every rate-limit window"
        )
      }
      return Effect.logWarning(
        "RedisLimiter: Redis keeps no append-only file (appendonly no): a restart of Redis loses every rate-limit window, and for one window " +
          "after it each process limits on its own (at most N times a limit with N processes). Set appendonly yes on the Redis server."
      )
    })
  )

const isNoScript = (cause: unknown): boolean => cause instanceof Error && cause.message.startsWith("NOSCRIPT")

const checkOptions = (options: Options): string | undefined => {
  if (typeof options.url !== "string" || !/^rediss?:\/\//.test(options.url)) {
    return `url must be a redis:// or rediss:// URL, got ${JSON.stringify(options.url)}`
  }
  if (options.onFailure !== "local" && options.onFailure !== "refuse") {
    return `onFailure must be "local" or "refuse", got ${JSON.stringify(options.onFailure)}`
  }
  for (const field of ["commandTimeoutMs", "retryDownMs"] as const) {
    const value = options[field]
    if (value !== undefined && (!Number.isSafeInteger(value) || value <= 0)) {
      return `${field} must be a positive integer number of milliseconds, got ${String(value)}`
    }
  }
  if (options.time !== undefined && options.time !== "redis" && options.time !== "clock") {
    return `time must be "redis" or "clock", got ${JSON.stringify(options.time)}`
  }
  return undefined
}

/**
 * Builds the Redis limiter and its status within a scope; the client is closed
 * when the scope ends. Never fails: an unreachable Redis at start is an outage
 * like any other (it waits at most `max(commandTimeoutMs, 1 s)` for the first
 * connection, less when the connection fails at once). Dies with a message naming the option when `options` is invalid.
 *
 * @category constructors
 */
export const make = Effect.fnUntraced(function*(options: Options) {
  const invalid = checkOptions(options)
  if (invalid !== undefined) return yield* Effect.die(new Error(`RedisLimiter: ${invalid}`))
  const resolved = Window.resolveOptions(options)
  if (typeof resolved === "string") return yield* Effect.die(new Error(`RedisLimiter: ${resolved}`))
  const { leaseMs, windowMs } = resolved
  const prefix = options.keyPrefix ?? "modelgate:limits:"
  const commandTimeoutMs = options.commandTimeoutMs ?? 500
  const retryDownMs = options.retryDownMs ?? 1_000
  const redisTime = (options.time ?? "redis") === "redis"
  const onFailure = options.onFailure
  const windowArg = String(windowMs)
  const leaseArg = String(leaseMs)
  const bucketArg = String(Window.bucketMs(windowMs))

  // This process's own count of every call it admitted (through Redis or not): the limits while
  // Redis cannot be asked, and a second check for a window after it answers again.
  const local = yield* MemoryLimiter.make({ windowMs, leaseMs })
  /** Until when calls need this process's own count to admit them too (after an outage, or lost Redis data). */
  let catchUpUntil = 0

  // Commands fail at once while disconnected; outages are reported by the limiter itself, once each.
  const { ClientOfflineError } = yield* RedisClient.load
  const client = yield* RedisClient.commandClient(options.url, commandTimeoutMs)
  yield* RedisClient.firstConnection(client, commandTimeoutMs)

  let down = false
  let downUntil = 0
  const pending: Array<PendingRelease> = []
  // For logging from the client's promise callbacks, with this scope's logger.
  const services = yield* Effect.context<never>()
  const logLater = (effect: Effect.Effect<void>): void => {
    Effect.runForkWith(services)(effect)
  }

  const send = (script: Scripts.Script, keys: ReadonlyArray<string>, args: ReadonlyArray<string>): Promise<unknown> => {
    const count = String(keys.length)
    return client.sendCommand(["EVALSHA", script.sha, count, ...keys, ...args]).catch((cause: unknown) => {
      if (isNoScript(cause)) return client.sendCommand(["EVAL", script.source, count, ...keys, ...args])
      throw cause
    })
  }

  /** Runs a script with the command timeout; `None` on failure or timeout. */
  const run = (
    script: Scripts.Script,
    keys: ReadonlyArray<string>,
    args: ReadonlyArray<string>,
    onAbandon: (late: Promise<unknown>) => void
  ): Effect.Effect<Option.Option<unknown>> => {
    if (!client.isReady) return Effect.succeedNone
    let promise: Promise<unknown> | undefined
    let settled = false
    return Effect.tryPromise({
      try: () => {
        promise = send(script, keys, args).finally(() => {
          settled = true
        })
        return promise
      },
      catch: (cause) => cause
    }).pipe(
      Effect.timeoutOption(commandTimeoutMs),
      Effect.tapCause((cause) => Effect.logDebug("RedisLimiter: script failed", cause)),
      Effect.orElseSucceed(Option.none),
      Effect.onInterrupt(() => Effect.sync(() => promise !== undefined && !settled && onAbandon(promise))),
      Effect.tap((result) =>
        Effect.sync(() => {
          if (Option.isNone(result) && promise !== undefined && !settled) onAbandon(promise)
        })
      )
    )
  }

  const markDown = Effect.fnUntraced(function*(reason: string) {
    const now = yield* Clock.currentTimeMillis
    downUntil = now + retryDownMs
    if (down) return
    down = true
    yield* Effect.logWarning(
      onFailure === "local"
        ? `RedisLimiter: Redis is unreachable (${reason}); limiting per process until it is back`
        : `RedisLimiter: Redis is unreachable (${reason}); refusing calls until it is back`
    )
  })

  const timeArg = Effect.map(Clock.currentTimeMillis, (now) => redisTime ? "-1" : String(now))

  const releaseArgs = (
    release: PendingRelease,
    time: string
  ): Array<string> => [
    time,
    windowArg,
    release.callId,
    release.bucket,
    String(release.change),
    release.cancel ? "1" : "0"
  ]

  /** Sends a release once; never rejects. */
  const sendRelease = (release: PendingRelease, time: string): Promise<Outcome> =>
    client.isReady
      ? send(Scripts.release, release.keys, releaseArgs(release, time)).then(
        (): Outcome => "done",
        (cause: unknown): Outcome => cause instanceof ClientOfflineError ? "notSent" : "unknown"
      )
      : Promise.resolve("notSent")

  const enqueue = (release: PendingRelease): void => {
    if (pending.length >= maxPendingReleases) {
      pending.shift()
      logLater(Effect.logWarning(
        `RedisLimiter: more than ${maxPendingReleases} releases are waiting for Redis; the oldest is dropped (its concurrency slot frees when its lease ends)`
      ))
    }
    pending.push(release)
  }

  /** What to do after a send: nothing, queue it again whole, or queue only its idempotent part. */
  const afterSend = (release: PendingRelease, outcome: Outcome): void => {
    if (outcome === "done") return
    if (outcome === "notSent" || release.change === 0) return enqueue(release)
    logLater(
      Effect.logWarning(
        "RedisLimiter: Redis did not confirm a token correction, which cannot safely be sent twice; it is dropped (the call's estimate stays counted until its bucket leaves the window) and only the slot release is sent again"
      ).pipe(Effect.annotateLogs({ change: release.change }))
    )
    enqueue({ ...release, change: 0 })
  }

  const markUp = Effect.suspend(() => {
    if (!down) return Effect.void
    down = false
    const queued = pending.splice(0, pending.length)
    return Effect.flatMap(Effect.zip(timeArg, Clock.currentTimeMillis), ([time, now]) => {
      // Redis does not know what this process admitted on its own meanwhile: check both for a window.
      catchUpUntil = now + windowMs
      for (const release of queued) {
        void sendRelease(release, time).then((outcome) => afterSend(release, outcome))
      }
      return Effect.logInfo(
        `RedisLimiter: Redis answers again; shared limiting resumed (${queued.length} queued releases sent)`
      )
    })
  })

  const whenDown = (
    subjects: ReadonlyArray<Port.Subject>,
    estimatedTokens: number
  ): Effect.Effect<Port.Permit, GatewayError.RateLimited> => {
    if (onFailure === "local") return local.acquire(subjects, estimatedTokens)
    const seconds = Window.retrySeconds(retryDownMs)
    return Effect.fail(
      new GatewayError.RateLimited({
        message:
          `Rate limits cannot be checked right now (the shared limit store is unreachable), so calls are refused. Retry in ${seconds} s.`,
        retryAfterSeconds: retryDownMs / 1000,
        limit: "unavailable"
      })
    )
  }

  const keysOf = (subjects: ReadonlyArray<Port.Subject>): Array<string> => {
    const keys: Array<string> = new Array(subjects.length * 3)
    for (let i = 0; i < subjects.length; i++) {
      const id = subjects[i].id
      keys[3 * i] = `${prefix}l:${id}`
      keys[3 * i + 1] = `${prefix}t:${id}`
      keys[3 * i + 2] = `${prefix}c:${id}`
    }
    return keys
  }

  const cancelLate =
    (keys: ReadonlyArray<string>, callId: string, estimate: number) => (late: Promise<unknown>): void => {
      late.then((reply) => {
        if (Array.isArray(reply) && reply[0] === 1) {
          const cancel: PendingRelease = { keys, callId, bucket: String(reply[1]), change: -estimate, cancel: true }
          return sendRelease(cancel, "-1").then((outcome) => afterSend(cancel, outcome))
        }
        return undefined
      }).catch(() => {})
    }

  const makeRelease = (keys: ReadonlyArray<string>, callId: string, bucket: string, estimate: number) => {
    let released = false
    return (actualTokens: number): Effect.Effect<void> =>
      Effect.suspend(() => {
        if (released) return Effect.void
        released = true
        const release: PendingRelease = {
          keys,
          callId,
          bucket,
          change: Window.correctedTokens(actualTokens, estimate) - estimate,
          cancel: false
        }
        if (!client.isReady) {
          enqueue(release)
          return markDown("disconnected")
        }
        return Effect.flatMap(timeArg, (time) => {
          let late: Promise<Outcome> | undefined
          let settled = false
          const abandon = () => {
            if (late !== undefined && !settled) void late.then((outcome) => afterSend(release, outcome))
          }
          return Effect.promise(() => {
            late = sendRelease(release, time).finally(() => {
              settled = true
            })
            return late
          }).pipe(
            Effect.timeoutOption(commandTimeoutMs),
            Effect.onInterrupt(() => Effect.sync(abandon)),
            Effect.flatMap((result) => {
              if (Option.isSome(result) && result.value === "done") return markUp
              if (Option.isSome(result)) afterSend(release, result.value)
              else abandon()
              return markDown(client.isReady ? "a release failed or timed out" : "disconnected")
            })
          )
        })
      })
  }

  const acquire = Effect.fnUntraced(function*(subjects: ReadonlyArray<Port.Subject>, estimatedTokens: number) {
    const invalidInput = Window.checkInput(subjects, estimatedTokens)
    if (invalidInput !== undefined) return yield* Effect.die(new Error(`RateLimiter.acquire: ${invalidInput}`))
    const limited = subjects.filter((subject) => Window.isLimited(subject.limits))
    if (limited.length === 0) return { snapshot: Port.unlimited, release: () => Effect.void } satisfies Port.Permit
    const estimate = Window.wholeTokens(estimatedTokens)

    const now = yield* Clock.currentTimeMillis
    if (!client.isReady) {
      yield* markDown("disconnected")
      return yield* whenDown(limited, estimate)
    }
    if (down && now < downUntil) return yield* whenDown(limited, estimate)

    const callId = randomUUID()
    const keys = keysOf(limited)
    const args: Array<string> = [
      redisTime ? "-1" : String(now),
      windowArg,
      leaseArg,
      callId,
      String(estimate),
      bucketArg
    ]
    for (const { limits } of limited) {
      args.push(String(limits.rpm ?? -1), String(limits.tpm ?? -1), String(limits.concurrency ?? -1))
    }
    const result = yield* run(Scripts.acquire, keys, args, cancelLate(keys, callId, estimate))
    if (Option.isNone(result)) {
      yield* markDown(client.isReady ? "a limit script failed or timed out" : "disconnected")
      return yield* whenDown(limited, estimate)
    }
    const reply = result.value
    if (!Array.isArray(reply) || reply.length !== 2 + Window.observationWidth * limited.length) {
      yield* Effect.logError("RedisLimiter: unexpected script reply", reply)
      yield* markDown("unexpected script reply")
      return yield* whenDown(limited, estimate)
    }
    yield* markUp
    const observations: Array<Window.Observation> = new Array(limited.length)
    for (let i = 0; i < limited.length; i++) {
      const b = 2 + Window.observationWidth * i
      observations[i] = {
        requests: Number(reply[b]),
        tokens: Number(reply[b + 1]),
        inflight: Number(reply[b + 2]),
        requestsResetMs: Number(reply[b + 3]),
        tokensResetMs: Number(reply[b + 4]),
        requestsWaitMs: Number(reply[b + 5]),
        tokensWaitMs: Number(reply[b + 6]),
        concurrencyWaitMs: Number(reply[b + 7])
      }
    }
    if (reply[0] !== 1) return yield* Window.refusal(limited, observations, estimate, windowMs)
    const bucket = String(reply[1])
    const shared: Port.Permit = {
      snapshot: Window.snapshot(limited, observations),
      release: makeRelease(keys, callId, bucket, estimate)
    }
    // Counted here too; for a window after an outage or lost data, only if this process's own count allows it.
    const own = now < catchUpUntil
      ? yield* Effect.result(local.acquire(limited, estimate))
      : { _tag: "Success" as const, success: yield* local.record(limited, estimate) }
    if (own._tag === "Failure") {
      const cancel: PendingRelease = { keys, callId, bucket, change: -estimate, cancel: true }
      void sendRelease(cancel, "-1").then((outcome) => afterSend(cancel, outcome))
      return yield* Effect.fail(own.failure)
    }
    return {
      snapshot: shared.snapshot,
      release: (actualTokens: number) => Effect.andThen(own.success.release(actualTokens), shared.release(actualTokens))
    } satisfies Port.Permit
  })

  // Redis that lost its data (restarted without persistence, flushed): the marker key is gone or
  // was set again by another process (or expired: no process checked it for a day). Then every window restarted empty there, and calls need this
  // process's own count too, for a window.
  const marker = `${prefix}epoch`
  let epoch: string | null = null
  const checkMarker = Effect.promise(async () => {
    if (!client.isReady) return undefined
    try {
      await client.sendCommand(["SET", marker, randomUUID(), "NX"])
      const seen = String(await client.sendCommand(["GET", marker]))
      // Kept while any process checks it, gone a day after the last one stopped.
      await client.sendCommand(["PEXPIRE", marker, String(MARKER_TTL_MS)])
      return seen
    } catch {
      return undefined
    }
  }).pipe(
    Effect.flatMap((seen) => {
      if (seen === undefined || seen === epoch) return Effect.void
      const lost = epoch !== null
      epoch = seen
      if (!lost) return Effect.void
      return Effect.flatMap(Clock.currentTimeMillis, (now) => {
        catchUpUntil = now + windowMs
        return Effect.logWarning(
          "RedisLimiter: Redis lost its data (restarted without persistence?): every rate-limit window restarted empty there, so for one window " +
            "each process also limits on what it admitted itself. Turn on Redis persistence (appendonly yes) to keep windows across restarts."
        )
      })
    })
  )
  yield* checkMarker
  yield* checkMarker.pipe(
    Effect.repeat(Schedule.spaced(MARKER_CHECK_MS)),
    Effect.delay(MARKER_CHECK_MS),
    Effect.forkScoped
  )
  yield* warnWithoutPersistence(client)

  return {
    limiter: Port.RateLimiter.of({ acquire }),
    status: Status.of({
      available: Effect.map(Clock.currentTimeMillis, (now) => client.isReady && !(down && now < downUntil)),
      pendingReleases: Effect.sync(() => pending.length)
    })
  }
})

/**
 * The Redis `RateLimiter` (and its `Status`). The layer never fails to build:
 * an unreachable Redis is handled as `onFailure` says until it is back.
 *
 * @example
 * ```ts
 * import { RedisLimiter } from "@modelgate/limits"
 *
 * const Limits = RedisLimiter.layer({ url: "redis://127.0.0.1:6379", onFailure: "local" })
 * ```
 *
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<Port.RateLimiter | Status> =>
  Layer.effectContext(
    Effect.map(make(options), ({ limiter, status }) =>
      Context.make(Port.RateLimiter, limiter).pipe(Context.add(Status, status)))
  )
