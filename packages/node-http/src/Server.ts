/**
 * Assembling the server: the database, migrations, provisioning from the
 * configuration file, the caches, money and usage ports, the upstream HTTP
 * client and the listener, as one layer. `bin.ts` launches it; tests start it
 * in-process on an ephemeral port with `start`.
 *
 * @since 0.1.0
 */
import { NodeHttpClient } from "@effect/platform-node"
import * as AdminApi from "@modelgate/admin-api/AdminApi"
import { AdminApiConfig } from "@modelgate/admin-api/Config"
import { PlaygroundEngine } from "@modelgate/admin-api/PlaygroundEngine"
import * as TrustedProxies from "@modelgate/admin-api/TrustedProxies"
import type { RateLimiter } from "@modelgate/core"
import { OutageLog } from "@modelgate/core"
import { MemoryLimiter } from "@modelgate/core"
import * as Probe from "@modelgate/engine/call/Probe"
import { Settings as EngineSettings } from "@modelgate/engine/config/Settings"
import type * as EngineGateway from "@modelgate/engine/host/Gateway"
import * as Settlement from "@modelgate/engine/money/Settlement"
import * as Health from "@modelgate/engine/routing/Health"
import * as Telemetry from "@modelgate/engine/telemetry/Telemetry"
import { RedisLimiter } from "@modelgate/limits"
import * as Accounts from "@modelgate/store/Accounts"
import * as CacheChanges from "@modelgate/store/CacheChanges"
import * as Caches from "@modelgate/store/Caches"
import * as CatalogRepo from "@modelgate/store/CatalogRepo"
import * as ChannelKeyStates from "@modelgate/store/ChannelKeyStates"
import * as Database from "@modelgate/store/Database"
import * as Keys from "@modelgate/store/Keys"
import * as Migrations from "@modelgate/store/Migrations"
import * as Provisioning from "@modelgate/store/Provisioning"
import * as Purses from "@modelgate/store/Purses"
import * as Redemption from "@modelgate/store/Redemption"
import * as Secrets from "@modelgate/store/Secrets"
import * as UsageRetention from "@modelgate/store/UsageRetention"
import * as UsageWriter from "@modelgate/store/UsageWriter"
import * as Users from "@modelgate/store/Users"
import { Context, Duration, Effect, Layer, Logger, Ref, References } from "effect"
import { HttpServer } from "effect/http"
import { SqlClient } from "effect/sql"
import * as CacheSync from "./CacheSync.ts"
import type { ConfigFile } from "./ConfigFile.ts"
import * as ConsoleFiles from "./ConsoleFiles.ts"
import * as Gateway from "./Gateway.ts"
import * as Listener from "./Listener.ts"
import { MetricsExport } from "./MetricsExport.ts"
import * as Playground from "./Playground.ts"
import * as Provision from "./Provision.ts"
import { ServerSettings, type Settings } from "./Settings.ts"
import * as UndiciTransport from "./UndiciTransport.ts"

/** Everything below the HTTP layer: database, migrations, provisioning, repositories, caches and ports. @category layers */
export const services = (settings: Settings, file: ConfigFile) => {
  const database = Database.layer(settings.database, {
    statementTimeoutMs: settings.databaseStatementTimeoutMs,
    busyTimeoutMs: settings.databaseBusyTimeoutMs
  })
  const secrets = Secrets.layer(
    settings.secret !== null ? { secret: settings.secret } : { keyFile: settings.secretFile }
  )
  const migrated = Layer.effectDiscard(Migrations.migrate).pipe(Layer.provideMerge(database))
  const repositories = Layer.mergeAll(
    Users.Users.layer,
    Keys.Keys.layer,
    Accounts.Accounts.layer,
    CatalogRepo.CatalogRepo.layer,
    ChannelKeyStates.ChannelKeyStates.layer,
    Provisioning.Provisioning.layer,
    CacheChanges.CacheChanges.layer
  ).pipe(
    Layer.provideMerge(secrets),
    Layer.provideMerge(migrated)
  )
  const provisioned = Layer.effectDiscard(Provision.apply(file, settings).pipe(Effect.tap(CacheSync.recordProvisioned)))
    .pipe(
      Layer.provideMerge(repositories)
    )
  const usage = UsageWriter.UsageWriter.layerWith({
    flushIntervalMs: settings.usageFlushIntervalMs,
    maxBatch: settings.usageMaxBatch,
    // What the database cannot take (an outage, a shutdown during one) is kept on disk, never lost.
    journal: { dir: settings.usageJournalDir, name: settings.nodeId },
    shutdownRetryMs: settings.usageShutdownFlushSeconds * 1000,
    flushTimeoutMs: settings.usageFlushTimeoutMs,
    maxMemoryEntries: settings.usageMaxMemoryEntries
  })
  const purses = Purses.layer({
    nodeId: settings.nodeId,
    leases: settings.balanceLeases,
    leaseIdleMs: settings.leaseIdleMs,
    leaseCoverSeconds: settings.leaseCoverSeconds,
    databaseWaitMs: settings.databaseCallWaitMs
  })
  const caches = Layer.mergeAll(
    Caches.KeyCache.layerWith({ waitMs: settings.databaseCallWaitMs }),
    Caches.CatalogCache.layer
  ).pipe(
    Layer.provideMerge(Caches.Baseline.layer)
  )
  const ports = Caches.ports.pipe(Layer.provide(caches))
  // Upstream calls, probes and key health: the health service probes through the channel probe and
  // reads channels from the catalog port.
  const upstream = Probe.layer.pipe(Layer.provideMerge(UndiciTransport.layer))
  const health = Health.Health.layerPort.pipe(
    Layer.provideMerge(Health.Health.layer),
    Layer.provideMerge(upstream),
    Layer.provideMerge(ports),
    Layer.provideMerge(ChannelKeyStates.ChannelKeyStates.layerPort)
  )
  // Tracing (nothing when no OTLP endpoint is set): the listener starts each call's server span, `/metrics` counts
  // the spans exported and dropped. Built before the listener, so it flushes after the calls in flight have ended.
  // Spans go out with undici's own client: fetch's streams cost the gateway several times as much CPU per batch.
  const telemetry = Telemetry.layer(settings.telemetry, {
    instanceId: settings.nodeId,
    httpClient: NodeHttpClient.layerUndici
  })
  return Layer.mergeAll(
    rateLimiter(settings),
    health,
    telemetry,
    // `/metrics`, and where the engine counts its calls (nothing without a metrics token).
    MetricsExport.layer(settings.metricsToken).pipe(Layer.provide(Layer.mergeAll(health, usage, telemetry))),
    retention(settings),
    cacheSync(settings).pipe(Layer.provide(caches)),
    Redemption.Redemption.layer,
    // Built after the balance leases and the batch writer, so it closes first: the streams a shutdown
    // cut are settled before the leases go back and the writer flushes for the last time.
    Settlement.Settlements.layer.pipe(
      Layer.provideMerge(
        Layer.mergeAll(purses, UsageWriter.UsageWriter.layerPort).pipe(Layer.provideMerge(usage))
      )
    ),
    // After the usage writer: what an earlier run left in the journal is written before its leases are released.
    sweeper(settings.nodeId).pipe(Layer.provide(usage))
  ).pipe(
    Layer.provideMerge(provisioned),
    Layer.provideMerge(Layer.succeed(ServerSettings, settings)),
    Layer.provideMerge(Layer.succeed(EngineSettings, settings))
  )
}

/**
 * Pruning usage records older than `usage.retention_days` in the background
 * (`UsageRetention`); nothing when it is not set.
 *
 * @category layers
 */
export const retention = (settings: Settings): Layer.Layer<never, never, SqlClient.SqlClient> =>
  settings.usageRetentionDays === null ? Layer.empty : UsageRetention.layer({ days: settings.usageRetentionDays })

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

/** How often a node writes its heartbeat and sweeps the holds of dead nodes. @category constants */
export const HEARTBEAT_INTERVAL_MS = 5_000

/** A node whose heartbeat is older than this is dead: its holds and leases are released. @category constants */
export const DEAD_NODE_AFTER_MS = 60_000

/**
 * Releases holds and balance leases whose process died. At start a node
 * releases what an earlier run under its own id left; on SQLite, where only
 * one process uses the database, also everything else. Then every
 * `HEARTBEAT_INTERVAL_MS` it writes its heartbeat and releases the holds and
 * leases of nodes whose heartbeat stopped `DEAD_NODE_AFTER_MS` ago, so a live
 * node's calls are never swept however long they run.
 *
 * @category layers
 */
export const sweeper = (
  nodeId: string
): Layer.Layer<never, never, Accounts.Accounts | Database.Dialect | UsageWriter.UsageWriter> =>
  Layer.effectDiscard(Effect.gen(function*() {
    // Built after the writer, which writes the charges an earlier run left in the journal (against
    // that run's leases) before the sweep below releases those leases.
    yield* UsageWriter.UsageWriter
    const accounts = yield* Accounts.Accounts
    const dialect = yield* Database.Dialect
    const report = (released: number) =>
      released > 0
        ? Effect.logWarning("released balance holds and leases left by processes that died").pipe(
          Effect.annotateLogs({ released })
        )
        : Effect.void
    yield* accounts.heartbeat(nodeId).pipe(Effect.orDie)
    yield* accounts.sweepHolds({ nodeId }).pipe(Effect.flatMap(report), Effect.orDie)
    if (dialect === "sqlite") {
      yield* accounts.sweepHolds({ deadAfterMs: 0, except: nodeId }).pipe(Effect.flatMap(report), Effect.orDie)
    }
    const outage = OutageLog.make("the heartbeat and sweeping dead nodes' holds (the database)")
    const tick = accounts.heartbeat(nodeId).pipe(
      Effect.andThen(accounts.sweepHolds({ deadAfterMs: DEAD_NODE_AFTER_MS, except: nodeId })),
      Effect.flatMap(report),
      Effect.andThen(outage.succeeded),
      Effect.catchCause(outage.failed)
    )
    yield* Effect.sleep(Duration.millis(HEARTBEAT_INTERVAL_MS)).pipe(
      Effect.andThen(tick),
      Effect.forever,
      Effect.forkScoped
    )
  }))

/**
 * The management API (`/api/...`, from `@modelgate/admin-api`), `/metrics`, the console's
 * files, and `/readyz` (the database answers within 2 s).
 *
 * @category layers
 */
export const extensions = (
  settings: Settings
): Layer.Layer<
  Gateway.Extensions,
  never,
  AdminApi.Requirements | MetricsExport | EngineGateway.Requirements | UsageWriter.UsageWriter
> =>
  Layer.effect(
    Gateway.Extensions,
    Effect.gen(function*() {
      const admin = yield* AdminApi.AdminApi
      const sql = yield* SqlClient.SqlClient
      const metrics = yield* MetricsExport
      const writer = yield* UsageWriter.UsageWriter
      const config = {
        publicUrl: settings.publicUrl ?? undefined,
        sessionTtlMs: SESSION_TTL_MS,
        trustedProxies: TrustedProxies.unsafeMake(settings.trustedProxies),
        passwordLogin: settings.passwordLogin,
        oidc: settings.oidc ?? undefined
      }
      const playground = Playground.make(yield* Effect.context<EngineGateway.Requirements>())
      return Gateway.Extensions.of({
        api: (request) =>
          admin.handle(request).pipe(
            Effect.provideService(AdminApiConfig, config),
            Effect.provideService(PlaygroundEngine, playground)
          ),
        console: settings.consoleDir === null ? undefined : ConsoleFiles.make(settings.consoleDir),
        metrics: metrics.handle,
        ready: Effect.flatMap(writer.state, (state) =>
          !state.admitting
            ? Effect.succeed(
              "usage records can be written neither to the database nor to the journal; priced calls are refused"
            )
            : sql`SELECT 1`.pipe(
              Effect.timeout(Duration.seconds(2)),
              Effect.as(null),
              Effect.orElseSucceed(() => "the database is not reachable")
            ))
      })
    })
  ).pipe(Layer.provide(AdminApi.AdminApi.layer({ sessionTtlMs: SESSION_TTL_MS })))

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
  const listener = Listener.layer(settings)
  const served = HttpServer.serve(Gateway.app).pipe(
    Layer.provide(extensions(settings)),
    Layer.provideMerge(listener),
    Layer.provideMerge(ready)
  )
  // Built after the listener, so released before it: readiness turns 503 first, then the listener closes.
  return drainOnShutdown(settings).pipe(
    Layer.provideMerge(served),
    Layer.provideMerge(draining),
    Layer.provide(logging(settings))
  )
}

/** The shutdown state: a flag that `/readyz` reads and the shutdown sets. */
class ShutdownState extends Context.Service<ShutdownState, Ref.Ref<boolean>>()("modelgate/node-http/ShutdownState") {}

const draining = Layer.effectContext(
  Effect.map(
    Ref.make(false),
    (flag) => Context.make(ShutdownState, flag).pipe(Context.add(Gateway.Draining, { draining: Ref.get(flag) }))
  )
)

/**
 * The first step of a shutdown (SIGTERM, SIGINT, or the layer released):
 * `/readyz` answers 503 from now on, and for `shutdown_delay_seconds` the
 * server keeps accepting and serving calls, so a load balancer that polls
 * `/readyz` takes it out of rotation before the listener closes. Then the
 * listener closes and in-flight calls drain for up to `shutdown_grace_seconds`.
 * A database connection that does not answer is cut after
 * `Database.SHUTDOWN_NO_ANSWER_MS` from the start of the shutdown on.
 *
 * @category layers
 */
export const drainOnShutdown = (
  settings: Settings
): Layer.Layer<never, never, ShutdownState | Database.Bounds> =>
  Layer.effectDiscard(Effect.gen(function*() {
    const flag = yield* ShutdownState
    const bounds = yield* Database.Bounds
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        yield* Ref.set(flag, true)
        // From now on no step of the shutdown waits on a silent database for more than a second.
        yield* bounds.closing
        yield* Effect.logInfo("shutting down: /readyz answers 503; in-flight calls may finish").pipe(
          Effect.annotateLogs({
            delay_seconds: settings.shutdownDelaySeconds,
            grace_seconds: settings.shutdownGraceSeconds
          })
        )
        if (settings.shutdownDelaySeconds > 0) yield* Effect.sleep(Duration.seconds(settings.shutdownDelaySeconds))
      })
    )
  }))

/**
 * The log sink and level from the settings. `json` and `logfmt` lines are
 * batched: written to stdout together every 100 ms (and at shutdown), so a
 * busy server pays one write per batch rather than one per line. `pretty`,
 * for development, writes each line at once.
 *
 * @category layers
 */
export const logging = (settings: Settings) =>
  Layer.mergeAll(
    Logger.layer([
      settings.logFormat === "pretty"
        ? Logger.consolePretty()
        : Logger.batched(settings.logFormat === "json" ? Logger.formatJson : Logger.formatLogFmt, {
          window: Duration.millis(100),
          flush: (lines) => Effect.sync(() => process.stdout.write(lines.join("\n") + "\n"))
        })
    ]),
    Layer.succeed(
      References.MinimumLogLevel,
      settings.logLevel === "debug"
        ? "Debug"
        : settings.logLevel === "warning"
        ? "Warn"
        : settings.logLevel === "error"
        ? "Error"
        : "Info"
    )
  )
