/**
 * The server's resolved settings: the configuration file's values with every
 * default applied and the environment's overrides (`MODELGATE_LISTEN`,
 * `MODELGATE_DATABASE`, `MODELGATE_REDIS`, `MODELGATE_SECRET`,
 * `MODELGATE_METRICS_TOKEN`, `MODELGATE_OIDC_CLIENT_SECRET`; an empty variable counts as unset) on top, and tracing's standard `OTEL_*`
 * variables over the file's `telemetry:` section (`@modelgate/engine/TelemetryConfig`). docs/configuration.md
 * lists the same defaults; this module is their one source.
 *
 * @since 0.1.0
 */
import type { OidcSettings } from "@modelgate/admin-api/Config"
import * as TrustedProxies from "@modelgate/admin-api/TrustedProxies"
import { Money } from "@modelgate/core"
import { defaults as engineDefaults, type EngineSettings } from "@modelgate/engine/config/Settings"
import * as TelemetryConfig from "@modelgate/engine/config/TelemetryConfig"
import * as Database from "@modelgate/store/Database"
import * as Secrets from "@modelgate/store/Secrets"
import { Context, Effect, Redacted, Result } from "effect"
import { hostname } from "node:os"
import { dirname, join, resolve } from "node:path"
import { ConfigError, type ConfigFile } from "./ConfigFile.ts"

/**
 * Everything the server needs, the engine's settings (`EngineSettings`)
 * included.
 *
 * @category models
 */
export interface Settings extends EngineSettings {
  /** Where the configuration came from (a file path, or "the built-in demo configuration"), for messages. */
  readonly configSource: string
  readonly host: string
  readonly port: number
  readonly database: string
  readonly redis: string | null
  /** What rate-limited calls get while Redis is unreachable: per-process limits, or a refusal. */
  readonly redisFailure: "local" | "refuse"
  /** Prefix of the rate limiter's Redis keys. */
  readonly redisKeyPrefix: string
  /** Length of the sliding window `rpm` and `tpm` count over, in milliseconds. */
  readonly rateLimitWindowMs: number
  /** Whether rate limits are counted separately for each model. */
  readonly rateLimitsPerModel: boolean
  /** The address clients use, when configured; otherwise it is taken from the bound address or the request. */
  readonly publicUrl: string | null
  /** Reverse proxies whose X-Forwarded-* headers are believed (addresses and CIDR ranges, checked). */
  readonly trustedProxies: ReadonlyArray<string>
  readonly secret: Redacted.Redacted<string> | null
  readonly secretFile: string
  /**
   * This process's name in leases, holds and heartbeats: `node_id`, else
   * `hostname-pid` here; `serve` replaces that fallback with a stable id kept
   * beside the key file (`NodeIdentity`).
   */
  readonly nodeId: string
  readonly maxBodyBytes: number
  readonly shutdownGraceSeconds: number
  /** On SIGTERM: how long `/readyz` answers 503 while calls are still accepted, before the listener closes. */
  readonly shutdownDelaySeconds: number
  /** One structured line per request (not for `/healthz` and `/readyz`), at level info. */
  readonly accessLog: boolean
  readonly logLevel: "debug" | "info" | "warning" | "error"
  readonly logFormat: "json" | "logfmt" | "pretty"
  readonly usageFlushIntervalMs: number
  /** A batch of usage records the database has not finished writing after this long counts as failed (journaled). */
  readonly usageFlushTimeoutMs: number
  /** At shutdown, how long the last flush of usage records retries before what is left goes to the journal. */
  readonly usageShutdownFlushSeconds: number
  /** Usage entries kept in memory when neither the database nor the journal takes them (priced calls refused at 90%). */
  readonly usageMaxMemoryEntries: number
  /** PostgreSQL's statement_timeout for the store's statements (0: none). */
  readonly databaseStatementTimeoutMs: number
  /** SQLite's busy_timeout: how long a statement waits for a lock another process holds. */
  readonly databaseBusyTimeoutMs: number
  /** How long a call waits for a database that answers nothing before its 503 (or memory's answer). */
  readonly databaseCallWaitMs: number
  readonly usageMaxBatch: number
  /** Where usage records and charges the database cannot take are kept on disk (beside the key file by default). */
  readonly usageJournalDir: string
  /** Usage records older than this many days are pruned in the background; null: kept for ever. */
  readonly usageRetentionDays: number | null
  /** The bearer token `/metrics` requires; null: `/metrics` is not served (404). */
  readonly metricsToken: Redacted.Redacted<string> | null
  /** Calls hold from balance leases (false: one database hold per call). */
  readonly balanceLeases: boolean
  /** An idle balance lease goes back to the balance after this long. */
  readonly leaseIdleMs: number
  /** A lease reserves at least this many seconds of the user's recent spending (calls go on through a short database outage). */
  readonly leaseCoverSeconds: number
  /** Where the console's built files are, or null when they are not built. */
  readonly consoleDir: string | null
  /** The most upstream attempts one call makes. */
  readonly maxAttempts: number
  /** The request header (lower case) whose value keeps a client on one channel, or null for none. */
  readonly stickyHeader: string | null
  /** How often disabled keys and open breakers are probed, in milliseconds. */
  readonly probeIntervalMs: number
  /** Tracing over OpenTelemetry: the `OTEL_*` variables over the file's `telemetry:` section. */
  readonly telemetry: TelemetryConfig.TelemetrySettings
  /** Whether the console accepts password sign-ins (`auth.password_login`, default true). */
  readonly passwordLogin: boolean
  /** Single sign-on with OpenID Connect (`auth.oidc`), or null. */
  readonly oidc: OidcSettings | null
}

/** The settings service. @category services */
export class ServerSettings extends Context.Service<ServerSettings, Settings>()("modelgate/node-http/ServerSettings") {}

/** Defaults of the top-level settings. @category constants */
export const defaults = {
  listen: "127.0.0.1:8080",
  database: "sqlite:data/modelgate.db",
  maxBodyBytes: engineDefaults.maxBodyBytes,
  maxAnswerBytes: engineDefaults.maxAnswerBytes,
  maxEventBytes: engineDefaults.maxEventBytes,
  shutdownGraceSeconds: 30,
  shutdownDelaySeconds: 0,
  accessLog: true,
  usageFlushIntervalMs: 200,
  usageFlushTimeoutMs: 5_000,
  usageShutdownFlushSeconds: 10,
  usageMaxMemoryEntries: 100_000,
  databaseStatementTimeoutMs: 15_000,
  databaseBusyTimeoutMs: 5_000,
  databaseCallWaitMs: 1_000,
  usageMaxBatch: 500,
  leaseIdleMs: 1_000,
  leaseCoverSeconds: 30,
  redisFailure: "local",
  redisKeyPrefix: "modelgate:limits:",
  rateLimitWindowMs: 60_000,
  rateLimitsPerModel: false,
  maxAttempts: engineDefaults.maxAttempts,
  probeIntervalMs: engineDefaults.probeIntervalMs
} as const

/** The shortest metrics token accepted (the configuration file's schema says the same). @category constants */
export const MIN_METRICS_TOKEN = 16

/**
 * Splits `host:port` (`[::1]:8080`, `:8080` and a bare port are accepted).
 *
 * @category parsing
 */
export const parseListen = (listen: string): { readonly host: string; readonly port: number } | undefined => {
  const match = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(listen.trim()) ?? /^()()(\d{1,5})$/.exec(listen.trim())
  if (match === null) return undefined
  const port = Number(match[3])
  if (port > 65_535) return undefined
  const host = match[1] ?? (match[2] === "" || match[2] === undefined ? "0.0.0.0" : match[2])
  return { host, port }
}

/**
 * Resolves the settings of a configuration file read from `source`.
 *
 * @category resolving
 */
export const resolveSettings = (
  file: ConfigFile,
  env: Readonly<Record<string, string | undefined>>,
  options: { readonly consoleDir: string | null; readonly source: string }
): Effect.Effect<Settings, ConfigError> =>
  Effect.gen(function*() {
    // An empty variable counts as unset, for every variable alike.
    const listenEnv = nonEmpty(env["MODELGATE_LISTEN"])
    const listen = listenEnv ?? file.listen ?? defaults.listen
    const address = parseListen(listen)
    if (address === undefined) {
      return yield* new ConfigError({
        message: `${
          originOf(listenEnv, "MODELGATE_LISTEN", "listen", options.source)
        }: expected HOST:PORT such as 127.0.0.1:8080, got '${listen}'`
      })
    }
    const databaseEnv = nonEmpty(env["MODELGATE_DATABASE"])
    const database = databaseEnv ?? file.database ?? defaults.database
    yield* Database.parseUrl(database).pipe(
      Effect.mapError((error) =>
        new ConfigError({
          message: `${originOf(databaseEnv, "MODELGATE_DATABASE", "database", options.source)}: ${error.message}`
        })
      )
    )
    const secretEnv = nonEmpty(env["MODELGATE_SECRET"])
    const weakSecret = secretEnv === undefined ? undefined : Secrets.weakSecret(secretEnv)
    if (weakSecret !== undefined) return yield* new ConfigError({ message: `Invalid MODELGATE_SECRET: ${weakSecret}` })
    const trustedProxies = file.trusted_proxies ?? TrustedProxies.loopback
    const proxies = TrustedProxies.make(trustedProxies)
    if (Result.isFailure(proxies)) {
      return yield* new ConfigError({ message: `Invalid trusted_proxies in ${options.source}: ${proxies.failure}.` })
    }
    const metricsEnv = nonEmpty(env["MODELGATE_METRICS_TOKEN"])
    if (metricsEnv !== undefined && metricsEnv.length < MIN_METRICS_TOKEN) {
      return yield* new ConfigError({
        message:
          `Invalid MODELGATE_METRICS_TOKEN: it must be at least ${MIN_METRICS_TOKEN} characters (scrapers send it as a bearer token; use a random one)`
      })
    }
    const metricsToken = metricsEnv ?? file.metrics?.token
    const secretFile = file.secret_file ?? defaultSecretFile(database)
    // Tracing: the standard OTEL_* variables win over the file's telemetry section.
    const telemetry = yield* TelemetryConfig.resolve(file.telemetry, env, options.source)
    const oidc = yield* resolveOidc(file, env, options.source)
    if (file.auth?.password_login === false && oidc === null) {
      return yield* new ConfigError({
        message:
          `Invalid configuration in ${options.source}:\n  at auth.password_login: password sign-in can only be turned off when auth.oidc (single sign-on) is configured; no one could sign in`
      })
    }
    const shownHost = address.host === "0.0.0.0" || address.host === "::"
      ? "127.0.0.1"
      : address.host.includes(":")
      ? `[${address.host}]`
      : address.host
    return {
      configSource: options.source,
      host: address.host,
      port: address.port,
      database,
      redis: nonEmpty(env["MODELGATE_REDIS"]) ?? file.redis ?? null,
      redisFailure: file.redis_failure ?? defaults.redisFailure,
      redisKeyPrefix: file.redis_key_prefix ?? defaults.redisKeyPrefix,
      rateLimitWindowMs: file.rate_limits?.window_ms ?? defaults.rateLimitWindowMs,
      rateLimitsPerModel: file.rate_limits?.per_model ?? defaults.rateLimitsPerModel,
      publicUrl: file.public_url !== undefined
        ? file.public_url.replace(/\/+$/, "")
        : address.port === 0
        ? null
        : `http://${shownHost}:${address.port}`,
      trustedProxies,
      secret: secretEnv !== undefined ? Redacted.make(secretEnv) : null,
      secretFile,
      nodeId: file.node_id ?? `${hostname()}-${process.pid}`,
      maxBodyBytes: file.max_body_bytes ?? defaults.maxBodyBytes,
      maxAnswerBytes: file.max_answer_bytes ?? defaults.maxAnswerBytes,
      maxEventBytes: file.max_event_bytes ?? defaults.maxEventBytes,
      shutdownGraceSeconds: file.shutdown_grace_seconds ?? defaults.shutdownGraceSeconds,
      shutdownDelaySeconds: file.shutdown_delay_seconds ?? defaults.shutdownDelaySeconds,
      accessLog: file.access_log ?? defaults.accessLog,
      logLevel: file.log_level ?? "info",
      logFormat: file.log_format ?? "logfmt",
      usageFlushIntervalMs: file.usage?.flush_interval_ms ?? defaults.usageFlushIntervalMs,
      usageFlushTimeoutMs: file.usage?.flush_timeout_ms ?? defaults.usageFlushTimeoutMs,
      usageShutdownFlushSeconds: file.usage?.shutdown_flush_seconds ?? defaults.usageShutdownFlushSeconds,
      usageMaxMemoryEntries: file.usage?.max_memory_entries ?? defaults.usageMaxMemoryEntries,
      databaseStatementTimeoutMs: file.database_statement_timeout_ms ?? defaults.databaseStatementTimeoutMs,
      databaseBusyTimeoutMs: file.database_busy_timeout_ms ?? defaults.databaseBusyTimeoutMs,
      databaseCallWaitMs: file.database_call_wait_ms ?? defaults.databaseCallWaitMs,
      usageMaxBatch: file.usage?.max_batch ?? defaults.usageMaxBatch,
      usageJournalDir: resolve(file.usage?.journal_dir ?? join(dirname(secretFile), "journal")),
      usageRetentionDays: file.usage?.retention_days ?? null,
      metricsToken: metricsToken === undefined ? null : Redacted.make(metricsToken),
      balanceLeases: file.billing?.leases ?? true,
      leaseIdleMs: file.billing?.lease_idle_ms ?? defaults.leaseIdleMs,
      leaseCoverSeconds: file.billing?.lease_cover_seconds ?? defaults.leaseCoverSeconds,
      consoleDir: options.consoleDir,
      maxAttempts: file.routing?.max_attempts ?? defaults.maxAttempts,
      stickyHeader: file.routing?.sticky_header?.toLowerCase() ?? null,
      probeIntervalMs: file.routing?.probe_interval_ms ?? defaults.probeIntervalMs,
      telemetry,
      passwordLogin: file.auth?.password_login ?? true,
      oidc
    }
  })

/**
 * An environment variable's value, with an empty one counting as unset (so
 * `MODELGATE_DATABASE= modelgate serve` uses the file's value, as for every
 * other variable).
 *
 * @category resolving
 */
export const nonEmpty = (value: string | undefined): string | undefined =>
  value === undefined || value.length === 0 ? undefined : value

/** Where a bad value came from, for messages: the variable, or the field of the configuration. */
const originOf = (fromEnv: string | undefined, variable: string, field: string, source: string): string =>
  fromEnv !== undefined ? `Invalid ${variable}` : `Invalid configuration in ${source}:\n  at ${field}`

/** The key file sits beside a SQLite database, or in ./data for PostgreSQL. */
const defaultSecretFile = (database: string): string => {
  if (database.startsWith("sqlite:") && !database.includes(":memory:")) {
    return join(dirname(resolve(database.slice("sqlite:".length))), "modelgate.key")
  }
  return resolve("data", "modelgate.key")
}

/**
 * The `auth.oidc` block with its defaults (`MODELGATE_OIDC_CLIENT_SECRET`
 * wins over `client_secret`), or null when it is absent.
 *
 * @category resolving
 */
export const resolveOidc = (
  file: ConfigFile,
  env: Readonly<Record<string, string | undefined>>,
  source: string
): Effect.Effect<OidcSettings | null, ConfigError> => {
  const oidc = file.auth?.oidc
  if (oidc === undefined) return Effect.succeed(null)
  const balance = oidc.initial_balance ?? 0
  const nanos = Money.usdToNanos(balance)
  if (nanos === undefined || nanos < 0n || nanos > Money.MAX_NANOS) {
    return Effect.fail(
      new ConfigError({
        message:
          `Invalid configuration in ${source}:\n  at auth.oidc.initial_balance: Expected a non-negative USD amount, got ${
            JSON.stringify(balance)
          }`
      })
    )
  }
  const secret = nonEmpty(env["MODELGATE_OIDC_CLIENT_SECRET"]) ?? oidc.client_secret
  return Effect.succeed({
    name: oidc.name ?? "Single sign-on",
    issuer: oidc.issuer,
    clientId: oidc.client_id,
    clientSecret: secret === undefined ? undefined : Redacted.make(secret),
    scopes: oidc.scopes ?? ["openid", "email", "profile"],
    usernameClaim: oidc.username_claim,
    groupsClaim: oidc.groups_claim,
    groupMap: oidc.group_map ?? {},
    adminGroups: oidc.admin_groups ?? [],
    autoCreate: oidc.auto_create ?? false,
    initialBalanceNanos: nanos,
    redirectUri: oidc.redirect_uri
  })
}
