/**
 * Assembling the server: the database, migrations, provisioning from the
 * configuration file, the caches, money and usage ports, the upstream HTTP
 * client and the listener, as one layer. `bin.ts` launches it; tests start it
 * in-process on an ephemeral port with `start`.
 *
 * @since 0.1.0
 */
import { NodeHttpClient, NodeHttpServer } from "@effect/platform-node"
import { Accounts as AccountsPort, GatewayError, KeyStore, type RateLimiter } from "@modelgate/core"
import * as Accounts from "@modelgate/store/Accounts"
import * as CacheChanges from "@modelgate/store/CacheChanges"
import * as CatalogRepo from "@modelgate/store/CatalogRepo"
import * as Database from "@modelgate/store/Database"
import * as Keys from "@modelgate/store/Keys"
import * as Migrations from "@modelgate/store/Migrations"
import * as Provisioning from "@modelgate/store/Provisioning"
import * as Secrets from "@modelgate/store/Secrets"
import * as UsageWriter from "@modelgate/store/UsageWriter"
import * as Users from "@modelgate/store/Users"
import { Duration, Effect, Layer, Logger, References, Schedule } from "effect"
import { HttpServer, type HttpServerRequest } from "effect/http"
import * as Handlers from "@modelgate/admin-api/Handlers"
import { MemoryLimiter, RedisLimiter } from "@modelgate/limits"
import * as Redemption from "@modelgate/store/Redemption"
import { SqlClient } from "effect/sql"
import { createServer, type Server as HttpNodeServer } from "node:http"
import * as Caches from "./Caches.ts"
import * as CacheSync from "./CacheSync.ts"
import * as ConsoleFiles from "./ConsoleFiles.ts"
import * as Probe from "./Probe.ts"
import type { ConfigFile } from "./ConfigFile.ts"
import * as Gateway from "./Gateway.ts"
import * as Provision from "./Provision.ts"
import { ServerSettings, type Settings } from "./Settings.ts"
import { defaultTimeouts } from "./Upstream.ts"

const internalError = new GatewayError.InternalError({ message: "The gateway could not update the balance; try again." })

/**
 * Core's `Accounts` port over the store's accounts repository.
 *
 * @category layers
 */
export const accountsPort: Layer.Layer<AccountsPort.Accounts, never, Accounts.Accounts | ServerSettings> = Layer.effect(
  AccountsPort.Accounts,
  Effect.gen(function*() {
    const accounts = yield* Accounts.Accounts
    const settings = yield* ServerSettings
    const internal = (what: string) => (cause: unknown) =>
      Effect.logError(`${what} failed`, cause).pipe(Effect.andThen(Effect.fail(internalError)))
    return AccountsPort.Accounts.of({
      hold: (request) =>
        accounts.hold({ ...request, nodeId: settings.nodeId }).pipe(
          Effect.catchTag(["ResourceNotFound", "InvalidInput", "SqlError"], internal("balance hold"))
        ),
      settle: (holdId, charge) =>
        accounts.settle(holdId, charge).pipe(
          Effect.asVoid,
          Effect.catch(internal("settlement"))
        ),
      balance: (userId) => accounts.balance(userId).pipe(Effect.catch(internal("balance read")))
    })
  })
)

/** Everything below the HTTP layer: database, migrations, provisioning, repositories, caches and ports. @category layers */
export const services = (settings: Settings, file: ConfigFile) => {
  const database = Database.layer(settings.database)
  const secrets = Secrets.layer(settings.secret !== null ? { secret: settings.secret } : { keyFile: settings.secretFile })
  const migrated = Layer.effectDiscard(Migrations.migrate).pipe(Layer.provideMerge(database))
  const repositories = Layer.mergeAll(
    Users.Users.layer,
    Keys.Keys.layer,
    Accounts.Accounts.layer,
    CatalogRepo.CatalogRepo.layer,
    Provisioning.Provisioning.layer,
    CacheChanges.CacheChanges.layer
  ).pipe(
    Layer.provideMerge(secrets),
    Layer.provideMerge(migrated)
  )
  const provisioned = Layer.effectDiscard(Provision.apply(file, settings).pipe(Effect.tap(CacheSync.recordProvisioned))).pipe(
    Layer.provideMerge(repositories)
  )
  const maxCallMs = Math.max(defaultTimeouts.totalMs, ...(file.channels ?? []).map((c) => c.timeouts?.total_ms ?? 0))
  const usage = UsageWriter.UsageWriter.layerWith({
    flushIntervalMs: settings.usageFlushIntervalMs,
    maxBatch: settings.usageMaxBatch
  })
  const caches = Layer.mergeAll(Caches.KeyCache.layer, Caches.CatalogCache.layer).pipe(Layer.provideMerge(Caches.Baseline.layer))
  return Layer.mergeAll(
    rateLimiter(settings),
    Caches.ports.pipe(Layer.provide(caches)),
    cacheSync(settings).pipe(Layer.provide(caches)),
    Redemption.Redemption.layer,
    Handlers.layer({ sessionTtlMs: SESSION_TTL_MS }),
    Probe.layer,
    accountsPort,
    UsageWriter.UsageWriter.layerPort.pipe(Layer.provideMerge(usage)),
    sweeper(maxCallMs)
  ).pipe(
    Layer.provideMerge(provisioned),
    Layer.provideMerge(Layer.succeed(ServerSettings, settings))
  )
}

/**
 * Cache invalidation across nodes: the change log always, Redis pub/sub when
 * `redis` is configured (see `CacheSync`).
 *
 * @category layers
 */
export const cacheSync = (settings: Settings) =>
  CacheSync.layer({ redis: settings.redis, channel: CacheSync.channelFor(settings.redisKeyPrefix) })

/**
 * The rate limiter: in memory for one process, or shared through Redis
 * scripts when `redis` is configured (`redis_failure` decides what calls get
 * while Redis is unreachable: per-process limits or a refusal).
 *
 * @category layers
 */
export const rateLimiter = (settings: Settings): Layer.Layer<RateLimiter.RateLimiter> =>
  settings.redis === null
    ? MemoryLimiter.layerWith({ windowMs: settings.rateLimitWindowMs })
    : RedisLimiter.layer({
      url: settings.redis,
      onFailure: settings.redisFailure,
      keyPrefix: settings.redisKeyPrefix,
      windowMs: settings.rateLimitWindowMs
    })

/**
 * Releases holds whose call died with its process. On SQLite only one process
 * uses the database, so every open hold at start is an orphan; on PostgreSQL
 * other nodes may be mid-call, so only holds older than the longest a call may
 * take are released, at start and then every minute.
 *
 * @category layers
 */
export const sweeper = (maxCallMs: number): Layer.Layer<never, never, Accounts.Accounts | Database.Dialect> =>
  Layer.effectDiscard(Effect.gen(function*() {
    const accounts = yield* Accounts.Accounts
    const dialect = yield* Database.Dialect
    const report = (released: number) =>
      released > 0 ? Effect.logWarning("released holds left by calls that died with their process").pipe(Effect.annotateLogs({ released })) : Effect.void
    const sweepOld = accounts.sweepHolds({ olderThanMs: maxCallMs + 60_000 }).pipe(
      Effect.flatMap(report),
      Effect.catchCause((cause) => Effect.logWarning("sweeping stale holds failed", cause))
    )
    if (dialect === "sqlite") {
      yield* accounts.sweepHolds({ olderThanMs: 0 }).pipe(Effect.flatMap(report), Effect.orDie)
    } else {
      yield* sweepOld
    }
    yield* sweepOld.pipe(Effect.repeat(Schedule.spaced(Duration.minutes(1))), Effect.forkScoped)
  }))

/**
 * The management API (`/api/...`, from `@modelgate/admin-api`), the console's
 * files, and `/readyz` (the database answers within 2 s).
 *
 * @category layers
 */
export const extensions = (settings: Settings): Layer.Layer<Gateway.Extensions, never, Handlers.Requirements> =>
  Layer.effect(
    Gateway.Extensions,
    Effect.gen(function*() {
      const context = yield* Effect.context<Handlers.Requirements>()
      const sql = yield* SqlClient.SqlClient
      const api = (request: HttpServerRequest.HttpServerRequest) =>
        Handlers.handle(request).pipe(
          Effect.provideContext(context),
          Effect.provideService(Handlers.AdminApiConfig, { publicUrl: settings.publicUrl ?? undefined, sessionTtlMs: SESSION_TTL_MS })
        )
      return Gateway.Extensions.of({
        api,
        console: settings.consoleDir === null ? undefined : ConsoleFiles.make(settings.consoleDir),
        ready: sql`SELECT 1`.pipe(
          Effect.timeout(Duration.seconds(2)),
          Effect.as(true),
          Effect.orElseSucceed(() => false)
        )
      })
    })
  )

/** How long a console session lasts. @category constants */
export const SESSION_TTL_MS = 7 * 24 * 60 * 60 * 1000

/**
 * The whole server as a layer: listening once built, draining in-flight calls
 * (up to the grace period) and flushing usage when released.
 *
 * @category layers
 */
export const layer = (settings: Settings, file: ConfigFile) => {
  const ready = services(settings, file)
  // The listener opens only once everything behind it is ready (migrated, provisioned, caches loaded),
  // so a health check or a call before that is refused at once rather than left hanging.
  const listener = Layer.unwrap(
    Effect.as(
      Effect.service(KeyStore.KeyStore),
      NodeHttpServer.layer(drainingServer, {
        host: settings.host,
        port: settings.port,
        gracefulShutdownTimeout: Duration.seconds(settings.shutdownGraceSeconds)
      })
    )
  )
  return HttpServer.serve(Gateway.app).pipe(
    Layer.provide(extensions(settings)),
    Layer.provideMerge(listener),
    Layer.provideMerge(ready),
    Layer.provide(NodeHttpClient.layerUndici),
    Layer.provide(logging(settings))
  )
}

/**
 * A Node HTTP server whose `close` also closes keep-alive connections as they
 * become idle: Node closes only those idle at the moment `close` is called, so a
 * connection whose stream finishes during the grace period would otherwise hold
 * the shutdown open until its keep-alive timeout.
 *
 * @category servers
 */
export const drainingServer = (): HttpNodeServer => {
  const server = createServer({ keepAliveTimeout: 65_000 })
  const close = server.close.bind(server)
  server.close = (callback?: (error?: Error) => void) => {
    const timer = setInterval(() => server.closeIdleConnections(), 50)
    return close((error) => {
      clearInterval(timer)
      callback?.(error)
    })
  }
  return server
}

/** The log sink and level from the settings. @category layers */
export const logging = (settings: Settings) =>
  Layer.mergeAll(
    Logger.layer([settings.logFormat === "json" ? Logger.consoleJson : settings.logFormat === "pretty" ? Logger.consolePretty() : Logger.consoleLogFmt]),
    Layer.succeed(References.MinimumLogLevel, settings.logLevel === "debug" ? "Debug" : settings.logLevel === "warning" ? "Warn" : settings.logLevel === "error" ? "Error" : "Info")
  )
