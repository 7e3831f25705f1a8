/**
 * The configuration, in the shape of modelgate's YAML configuration file:
 * its schema (field names are snake_case and a public interface;
 * docs/configuration.md documents every one with its default), decoding with
 * messages that name the source, the path of each bad field and what was
 * expected, and what it declares (`declaration`: users, keys, balances,
 * groups, models, aliases, channels). node-http reads it from a file; an
 * embedded gateway (`WebHandler.toWebHandler`) takes the same shape as an
 * object.
 *
 * @since 0.1.0
 */
import { Credentials, type Declaration, Domain, Money } from "@modelgate/core"
import { Data, Effect, Redacted, Schema, SchemaIssue } from "effect"
import { Yaml } from "effect/encoding"

const Usd = Schema.Union([Schema.Finite, Schema.String]).annotate({
  expected: "a USD amount (a number or a decimal string)"
})
const PositiveInt = Schema.Int.check(Schema.isGreaterThan(0))
const NonNegativeInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))
const Timestamp = Schema.Union([Schema.String, Schema.Date]).annotate({
  expected: "an ISO 8601 time such as 2027-01-01T00:00:00Z"
})

/** Limits on requests per minute, tokens per minute and concurrent calls. @category schemas */
export const LimitsFields = {
  rpm: Schema.optionalKey(Schema.NullOr(PositiveInt)),
  tpm: Schema.optionalKey(Schema.NullOr(PositiveInt)),
  concurrency: Schema.optionalKey(Schema.NullOr(PositiveInt))
}

/**
 * An upstream channel. `base_url` may be left out on `vertex` and `bedrock`
 * channels (their region's endpoint); they name where they are served
 * (`project` and `location`; `region`) and their credentials (`credentials`
 * or `credentials_file`: a service-account key; `access_key_id`,
 * `secret_access_key`, `session_token`, or `api_key`: a Bedrock API key).
 *
 * @category schemas
 */
export const ChannelConfig = Schema.Struct({
  name: Schema.NonEmptyString,
  type: Schema.Literals(["openai", "gemini", "anthropic", "azure", "vertex", "bedrock"]),
  base_url: Schema.optionalKey(Schema.NonEmptyString),
  project: Schema.optionalKey(Schema.NonEmptyString),
  location: Schema.optionalKey(Schema.NonEmptyString),
  /** A service account's key file, read at start (node-http; relative to the configuration file). */
  credentials_file: Schema.optionalKey(Schema.NonEmptyString),
  /** A service account's key, its JSON as text or as a mapping. */
  credentials: Schema.optionalKey(Schema.Union([Schema.NonEmptyString, Schema.JsonObject])),
  /** Vertex: the publisher of upstream models whose name does not say (`claude-…` is Anthropic's). */
  publishers: Schema.optionalKey(Schema.Record(Schema.String, Schema.Literals(["google", "anthropic"]))),
  region: Schema.optionalKey(Schema.NonEmptyString),
  access_key_id: Schema.optionalKey(Schema.NonEmptyString),
  secret_access_key: Schema.optionalKey(Schema.NonEmptyString),
  session_token: Schema.optionalKey(Schema.NonEmptyString),
  api_key: Schema.optionalKey(Schema.String),
  api_keys: Schema.optionalKey(Schema.Array(Schema.String)),
  models: Schema.Array(Schema.NonEmptyString),
  model_map: Schema.optionalKey(Schema.Record(Schema.String, Schema.String)),
  groups: Schema.optionalKey(Schema.Array(Schema.NonEmptyString)),
  priority: Schema.optionalKey(Schema.Int),
  weight: Schema.optionalKey(NonNegativeInt),
  enabled: Schema.optionalKey(Schema.Boolean),
  headers: Schema.optionalKey(Schema.Record(Schema.String, Schema.String)),
  api_version: Schema.optionalKey(Schema.String),
  timeouts: Schema.optionalKey(Schema.Struct({
    connect_ms: Schema.optionalKey(PositiveInt),
    first_byte_ms: Schema.optionalKey(PositiveInt),
    idle_ms: Schema.optionalKey(PositiveInt),
    total_ms: Schema.optionalKey(PositiveInt)
  })),
  breaker: Schema.optionalKey(Schema.Struct({
    consecutive_failures: Schema.optionalKey(PositiveInt),
    failure_rate: Schema.optionalKey(
      Schema.Finite.check(Schema.isGreaterThan(0), Schema.isLessThanOrEqualTo(1)).annotate({
        expected: "a fraction above 0 and at most 1, such as 0.5"
      })
    ),
    minimum_calls: Schema.optionalKey(PositiveInt),
    window_ms: Schema.optionalKey(PositiveInt),
    cooldown_ms: Schema.optionalKey(PositiveInt),
    half_open_calls: Schema.optionalKey(PositiveInt)
  })),
  params: Schema.optionalKey(Schema.Struct({
    defaults: Schema.optionalKey(Schema.JsonObject),
    overrides: Schema.optionalKey(Schema.JsonObject)
  })),
  stream_options: Schema.optionalKey(Schema.Boolean),
  responses: Schema.optionalKey(Schema.Boolean)
})
export type ChannelConfig = typeof ChannelConfig.Type

/**
 * A model's `media_part_tokens`: tokens a hold counts per media part, per kind.
 *
 * @category schemas
 */
export const MediaPartTokensConfig = Schema.Struct({
  image: Schema.optionalKey(NonNegativeInt),
  audio: Schema.optionalKey(NonNegativeInt),
  video: Schema.optionalKey(NonNegativeInt),
  document: Schema.optionalKey(NonNegativeInt),
  file: Schema.optionalKey(NonNegativeInt)
})

/**
 * A model's price, limits and what it is. Prices are USD per one million
 * tokens (`cache_write`: prompt tokens written to the upstream's prompt cache,
 * Anthropic's `cache_creation_input_tokens`; default the input price);
 * `per_request` is USD per call. `embedding` marks an embedding model
 * (Gemini's list advertises `embedContent`/`batchEmbedContents` for it),
 * `reasoning` a reasoning model (a Gemini client's thinking budget becomes
 * `reasoning_effort` on an OpenAI channel only for these), `reasoning_content`
 * an upstream that accepts earlier reasoning as `reasoning_content` in the
 * history (vLLM; OpenAI and DeepSeek reject it). `media_part_tokens` is what
 * a call's hold counts for one media part of each kind it names (`image`,
 * `audio`, `video`, `document`, `file`); a kind left out takes its default
 * (`Tokens.mediaPartTokens`: 2,000 for an image, the model's input token
 * limit for the others).
 *
 * @category schemas
 */
export const ModelConfig = Schema.Struct({
  input: Schema.optionalKey(Usd),
  output: Schema.optionalKey(Usd),
  cached_input: Schema.optionalKey(Usd),
  cache_write: Schema.optionalKey(Usd),
  per_request: Schema.optionalKey(Usd),
  free: Schema.optionalKey(Schema.Boolean),
  display_name: Schema.optionalKey(Schema.String),
  input_token_limit: Schema.optionalKey(PositiveInt),
  output_token_limit: Schema.optionalKey(PositiveInt),
  description: Schema.optionalKey(Schema.String),
  embedding: Schema.optionalKey(Schema.Boolean),
  reasoning: Schema.optionalKey(Schema.Boolean),
  reasoning_content: Schema.optionalKey(Schema.Boolean),
  media_part_tokens: Schema.optionalKey(MediaPartTokensConfig)
})
export type ModelConfig = typeof ModelConfig.Type

/** A group of keys: price ratio and default limits. @category schemas */
export const GroupConfig = Schema.Struct({
  ratio: Schema.optionalKey(Schema.Union([Schema.Finite, Schema.String])),
  selectable: Schema.optionalKey(Schema.Boolean),
  ...LimitsFields
})
export type GroupConfig = typeof GroupConfig.Type

/**
 * A fixed API key secret: `sk-` followed by at least 17 more characters
 * (20 or more in all), without spaces. The same rule the store applies.
 *
 * @category schemas
 */
export const KeySecret = Schema.String.check(Schema.isPattern(/^sk-\S{17,}$/, {
  expected: "a key secret: 'sk-' followed by at least 17 more characters (20 or more in all), without spaces"
}))

/** An API key declared in the file. @category schemas */
export const KeyConfig = Schema.Struct({
  name: Schema.NonEmptyString,
  secret: Schema.optionalKey(KeySecret),
  group: Schema.optionalKey(Schema.NonEmptyString),
  models: Schema.optionalKey(Schema.Array(Schema.NonEmptyString)),
  expires_at: Schema.optionalKey(Schema.NullOr(Timestamp)),
  enabled: Schema.optionalKey(Schema.Boolean),
  quota: Schema.optionalKey(Schema.NullOr(Usd)),
  daily_budget: Schema.optionalKey(Schema.NullOr(Usd)),
  monthly_budget: Schema.optionalKey(Schema.NullOr(Usd)),
  ...LimitsFields
})
export type KeyConfig = typeof KeyConfig.Type

const consolePassword =
  `a console password of ${Domain.PASSWORD_LENGTH.min} to ${Domain.PASSWORD_LENGTH.max} characters`

/**
 * A console password: 8 to 256 characters, the rule the store and the console
 * apply (the message never repeats the password).
 *
 * @category schemas
 */
export const ConsolePassword = Schema.String.check(
  Schema.isMinLength(Domain.PASSWORD_LENGTH.min, { expected: consolePassword }),
  Schema.isMaxLength(Domain.PASSWORD_LENGTH.max, { expected: consolePassword })
)

/** A user declared in the file. `balance` is the initial balance, credited once. @category schemas */
export const UserConfig = Schema.Struct({
  name: Schema.NonEmptyString,
  role: Schema.optionalKey(Schema.Literals(["user", "admin"])),
  password: Schema.optionalKey(ConsolePassword),
  balance: Schema.optionalKey(Usd),
  enabled: Schema.optionalKey(Schema.Boolean),
  groups: Schema.optionalKey(Schema.Array(Schema.NonEmptyString)),
  keys: Schema.optionalKey(Schema.Array(KeyConfig)),
  ...LimitsFields
})
export type UserConfig = typeof UserConfig.Type

/**
 * How rate limits are counted (the limits themselves sit on groups, users and
 * keys). `window_ms` is the length of the sliding window `rpm` and `tpm` count
 * over (default one minute); `per_model` counts every model separately.
 *
 * @category schemas
 */
export const RateLimitsConfig = Schema.Struct({
  window_ms: Schema.optionalKey(PositiveInt),
  per_model: Schema.optionalKey(Schema.Boolean)
})
export type RateLimitsConfig = typeof RateLimitsConfig.Type

/**
 * How calls are routed over channels (docs/routing.md): `max_attempts` bounds
 * the upstream attempts of one call, `sticky_header` names a request header
 * whose value keeps a client on one channel while it is healthy (off when
 * absent), and `probe_interval_ms` is how often disabled keys and open
 * breakers are probed.
 *
 * @category schemas
 */
export const RoutingConfig = Schema.Struct({
  max_attempts: Schema.optionalKey(
    Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 20 })).annotate({
      expected: "a whole number from 1 to 20"
    })
  ),
  sticky_header: Schema.optionalKey(
    Schema.NullOr(
      Schema.String.check(Schema.isPattern(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/)).annotate({
        expected: "a header name such as x-session-id"
      })
    )
  ),
  probe_interval_ms: Schema.optionalKey(PositiveInt)
})
export type RoutingConfig = typeof RoutingConfig.Type

/**
 * Tracing over OpenTelemetry (docs/operations.md, "Tracing"): the same
 * settings as the standard `OTEL_*` variables, which win over these.
 * Export is on when an endpoint is set. `capture_content` exports prompts
 * and answers (off by default).
 *
 * @category schemas
 */
export const TelemetryConfig = Schema.Struct({
  /** Base URL of an OTLP/HTTP receiver; `/v1/traces` is appended (`OTEL_EXPORTER_OTLP_ENDPOINT`). */
  endpoint: Schema.optionalKey(Schema.NonEmptyString),
  /** The traces URL, used as it is (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`). */
  traces_endpoint: Schema.optionalKey(Schema.NonEmptyString),
  protocol: Schema.optionalKey(Schema.Literals(["http/protobuf", "http/json"])),
  /** Headers sent with every export, such as a vendor's key (`OTEL_EXPORTER_OTLP_HEADERS`). */
  headers: Schema.optionalKey(Schema.Record(Schema.String, Schema.String)),
  compression: Schema.optionalKey(Schema.Literals(["gzip", "none"])),
  /** How long one export request may take (`OTEL_EXPORTER_OTLP_TIMEOUT`). */
  timeout_ms: Schema.optionalKey(PositiveInt),
  service_name: Schema.optionalKey(Schema.NonEmptyString),
  resource_attributes: Schema.optionalKey(Schema.Record(Schema.String, Schema.String)),
  sampler: Schema.optionalKey(
    Schema.Literals([
      "always_on",
      "always_off",
      "traceidratio",
      "parentbased_always_on",
      "parentbased_always_off",
      "parentbased_traceidratio"
    ])
  ),
  /** The ratio of a `traceidratio` sampler, from 0 to 1. */
  sampler_arg: Schema.optionalKey(
    Schema.Finite.check(Schema.isGreaterThanOrEqualTo(0), Schema.isLessThanOrEqualTo(1)).annotate({
      expected: "a ratio from 0 to 1, such as 0.25"
    })
  ),
  /** Turns all telemetry off (`OTEL_SDK_DISABLED`). */
  disabled: Schema.optionalKey(Schema.Boolean),
  /** `none` turns trace export off (`OTEL_TRACES_EXPORTER`). */
  traces_exporter: Schema.optionalKey(Schema.Literals(["otlp", "none"])),
  /** Export prompts and answers as span events (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`). */
  capture_content: Schema.optionalKey(Schema.Boolean),
  /** The batch span processor (`OTEL_BSP_*`). */
  batch: Schema.optionalKey(Schema.Struct({
    schedule_delay_ms: Schema.optionalKey(PositiveInt),
    export_timeout_ms: Schema.optionalKey(PositiveInt),
    max_queue_size: Schema.optionalKey(PositiveInt),
    max_export_batch_size: Schema.optionalKey(PositiveInt)
  }))
})
export type TelemetryConfig = typeof TelemetryConfig.Type

/**
 * Console sign-in (docs/configuration.md, "auth"): `password_login: false`
 * turns password sign-in off (single sign-on only); `oidc` is single sign-on
 * with an OpenID Connect provider (docs/operations.md, "Single sign-on").
 *
 * @category schemas
 */
export const AuthConfig = Schema.Struct({
  password_login: Schema.optionalKey(Schema.Boolean),
  oidc: Schema.optionalKey(Schema.Struct({
    /** The sign-in button's label. */
    name: Schema.optionalKey(Schema.NonEmptyString),
    issuer: Schema.String.check(Schema.isPattern(/^https?:\/\/[^\s]+$/)).annotate({
      expected: "the provider's issuer URL, such as https://sso.example.com/realms/main"
    }),
    client_id: Schema.NonEmptyString,
    client_secret: Schema.optionalKey(Schema.NonEmptyString),
    scopes: Schema.optionalKey(Schema.Array(Schema.NonEmptyString)),
    /** Default: preferred_username, then email. */
    username_claim: Schema.optionalKey(Schema.NonEmptyString),
    groups_claim: Schema.optionalKey(Schema.NonEmptyString),
    group_map: Schema.optionalKey(Schema.Record(Schema.String, Schema.NonEmptyString)),
    admin_groups: Schema.optionalKey(Schema.Array(Schema.NonEmptyString)),
    auto_create: Schema.optionalKey(Schema.Boolean),
    initial_balance: Schema.optionalKey(Schema.Union([Schema.Finite, Schema.String])),
    /** The callback's full public address (default: public_url + /api/auth/oidc/callback). */
    redirect_uri: Schema.optionalKey(
      Schema.String.check(Schema.isPattern(/^https?:\/\/[^\s]+$/)).annotate({
        expected: "an http(s) URL ending in /api/auth/oidc/callback"
      })
    )
  }))
})
export type AuthConfig = typeof AuthConfig.Type

/** The whole file. Every key is optional; docs/configuration.md lists the defaults. @category schemas */
export const ConfigFile = Schema.Struct({
  listen: Schema.optionalKey(Schema.String),
  database: Schema.optionalKey(Schema.String),
  /** PostgreSQL's statement_timeout for the store's statements (0: none); a connection silent for 5 s more is cut. */
  database_statement_timeout_ms: Schema.optionalKey(NonNegativeInt),
  /** SQLite's busy_timeout: how long a statement waits for a lock held elsewhere before it fails. */
  database_busy_timeout_ms: Schema.optionalKey(NonNegativeInt),
  /** How long a call waits for the database (a hold, a lease, a key lookup) before its 503, while it answers nothing. */
  database_call_wait_ms: Schema.optionalKey(PositiveInt),
  redis: Schema.optionalKey(Schema.NullOr(Schema.String)),
  redis_failure: Schema.optionalKey(Schema.Literals(["local", "refuse"])),
  redis_key_prefix: Schema.optionalKey(Schema.NonEmptyString),
  rate_limits: Schema.optionalKey(RateLimitsConfig),
  routing: Schema.optionalKey(RoutingConfig),
  public_url: Schema.optionalKey(Schema.String),
  /** Reverse proxies (addresses or CIDR ranges) whose X-Forwarded-For/-Proto/-Host the console's sign-in believes. */
  trusted_proxies: Schema.optionalKey(Schema.Array(Schema.String)),
  secret_file: Schema.optionalKey(Schema.String),
  node_id: Schema.optionalKey(Schema.String),
  max_body_bytes: Schema.optionalKey(PositiveInt),
  max_answer_bytes: Schema.optionalKey(PositiveInt),
  max_event_bytes: Schema.optionalKey(PositiveInt),
  shutdown_grace_seconds: Schema.optionalKey(NonNegativeInt),
  shutdown_delay_seconds: Schema.optionalKey(NonNegativeInt),
  access_log: Schema.optionalKey(Schema.Boolean),
  log_level: Schema.optionalKey(Schema.Literals(["debug", "info", "warning", "error"])),
  log_format: Schema.optionalKey(Schema.Literals(["json", "logfmt", "pretty"])),
  usage: Schema.optionalKey(Schema.Struct({
    flush_interval_ms: Schema.optionalKey(PositiveInt),
    max_batch: Schema.optionalKey(PositiveInt),
    journal_dir: Schema.optionalKey(Schema.NonEmptyString),
    /** A batch the database has not finished writing after this long counts as failed and goes to the journal. */
    flush_timeout_ms: Schema.optionalKey(PositiveInt),
    /** At shutdown, how long the last flush retries before what is left goes to the journal. */
    shutdown_flush_seconds: Schema.optionalKey(NonNegativeInt),
    /** Entries kept in memory when neither the database nor the journal takes them; priced calls are refused at 90%. */
    max_memory_entries: Schema.optionalKey(PositiveInt),
    /** Usage records (the request log) older than this many days are deleted in the background; absent or null: kept for ever. */
    retention_days: Schema.optionalKey(Schema.NullOr(PositiveInt))
  })),
  /** Prometheus metrics at `/metrics`, for scrapers that send `Authorization: Bearer <token>` (absent: `/metrics` is 404). */
  metrics: Schema.optionalKey(Schema.Struct({
    token: Schema.String.check(Schema.isMinLength(16)).annotate({ expected: "a token of at least 16 characters" })
  })),
  /** Console sign-in: password on or off, single sign-on (see `AuthConfig`). */
  auth: Schema.optionalKey(AuthConfig),
  /** Tracing over OpenTelemetry; the `OTEL_*` variables win (see `TelemetryConfig`). */
  telemetry: Schema.optionalKey(TelemetryConfig),
  billing: Schema.optionalKey(Schema.Struct({
    leases: Schema.optionalKey(Schema.Boolean),
    lease_idle_ms: Schema.optionalKey(NonNegativeInt),
    lease_cover_seconds: Schema.optionalKey(NonNegativeInt)
  })),
  channels: Schema.optionalKey(Schema.Array(ChannelConfig)),
  models: Schema.optionalKey(Schema.Record(Schema.String, ModelConfig)),
  aliases: Schema.optionalKey(Schema.Record(Schema.String, Schema.String)),
  groups: Schema.optionalKey(Schema.Record(Schema.String, GroupConfig)),
  users: Schema.optionalKey(Schema.Array(UserConfig))
})
export type ConfigFile = typeof ConfigFile.Type

/**
 * The configuration could not be read or decoded. `message` is ready to print:
 * it names the file, each bad field's path and what was expected.
 *
 * @category errors
 */
export class ConfigError extends Data.TaggedError("ConfigError")<{
  readonly message: string
}> {}

/** Renders a Schema path (`["channels", 0, "type"]`) as `channels[0].type`. @category formatting */
export const formatPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.reduce<string>(
    (acc, key) => typeof key === "number" ? `${acc}[${key}]` : acc === "" ? String(key) : `${acc}.${String(key)}`,
    ""
  )

const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

/**
 * Decodes an already parsed document, or fails with one line per bad field.
 *
 * @category decoding
 */
export const decode = (document: unknown, source: string): Effect.Effect<ConfigFile, ConfigError> =>
  Schema.decodeUnknownEffect(ConfigFile)(document ?? {}, { errors: "all", onExcessProperty: "error" }).pipe(
    Effect.mapError((error) => {
      const issues = formatter(error.issue).issues
      const lines = issues.map((issue) => {
        const path = formatPath((issue.path ?? []).map((p) => typeof p === "object" ? p.key : p))
        const message = issue.message === "Expected no excess property"
          ? "Unknown field (check its spelling; docs/configuration.md lists every field)"
          : issue.message
        return `  at ${path === "" ? "(top level)" : path}: ${message}`
      })
      return new ConfigError({ message: `Invalid configuration in ${source}:\n${lines.join("\n")}` })
    })
  )

/**
 * Parses YAML text and decodes it.
 *
 * @category decoding
 */
export const parse = (text: string, source: string): Effect.Effect<ConfigFile, ConfigError> =>
  Effect.try({
    try: () => Yaml.parse(text),
    catch: (cause) =>
      new ConfigError({
        message: `Invalid YAML in ${source}: ${cause instanceof Error ? cause.message : String(cause)}`
      })
  }).pipe(Effect.flatMap((document) => decode(document, source)))

/** Defaults for models the file does not give limits for. @category constants */
export const modelDefaults = Domain.modelDefaults

/** The group keys get when they name none. @category constants */
export const DEFAULT_GROUP = "default"

const usd = (value: string | number | undefined | null, path: string, problems: Array<string>): bigint | null => {
  if (value === undefined || value === null) return null
  const nanos = Money.usdToNanos(value)
  if (nanos === undefined || nanos < 0n || nanos > Money.MAX_NANOS) {
    problems.push(
      `  at ${path}: Expected a non-negative USD amount of at most 1000000000 with at most 9 decimal places, got ${
        JSON.stringify(value)
      }`
    )
    return null
  }
  return nanos
}

const time = (value: string | Date | null | undefined, path: string, problems: Array<string>): number | null => {
  if (value === undefined || value === null) return null
  const ms = value instanceof Date ? value.getTime() : Date.parse(value)
  if (!Number.isFinite(ms)) {
    problems.push(`  at ${path}: Expected an ISO 8601 time such as 2027-01-01T00:00:00Z, got ${JSON.stringify(value)}`)
    return null
  }
  return ms
}

const limitsOf = (
  source: { readonly rpm?: number | null; readonly tpm?: number | null; readonly concurrency?: number | null }
) => ({
  ...(source.rpm !== undefined ? { rpm: source.rpm } : {}),
  ...(source.tpm !== undefined ? { tpm: source.tpm } : {}),
  ...(source.concurrency !== undefined ? { concurrency: source.concurrency } : {})
})

/**
 * What a configuration file declares (core's `Declaration`: money in
 * nano-dollars, ratios in micros, times in epoch ms), or a failure naming
 * every bad value. Models a channel serves but the file does not price are
 * declared without a price, so a call to them is refused with a clear "no
 * price" error rather than "no such model".
 *
 * @category mapping
 */
export const declaration = (file: ConfigFile, source: string): Effect.Effect<Declaration.Declaration, ConfigError> =>
  Effect.suspend(() => {
    const problems: Array<string> = []
    const models: Array<Domain.Model> = Object.entries(file.models ?? {}).map(([id, model]) => ({
      id,
      displayName: model.display_name ?? id,
      inputNanosPerMillion: usd(model.input, `models.${id}.input`, problems),
      outputNanosPerMillion: usd(model.output, `models.${id}.output`, problems),
      cachedInputNanosPerMillion: usd(model.cached_input, `models.${id}.cached_input`, problems),
      cacheWriteNanosPerMillion: usd(model.cache_write, `models.${id}.cache_write`, problems),
      perRequestNanos: usd(model.per_request, `models.${id}.per_request`, problems),
      free: model.free ?? false,
      inputTokenLimit: model.input_token_limit ?? modelDefaults.inputTokenLimit,
      outputTokenLimit: model.output_token_limit ?? modelDefaults.outputTokenLimit,
      ...(model.description !== undefined ? { description: model.description } : {}),
      embedding: model.embedding ?? false,
      reasoning: model.reasoning ?? false,
      reasoningContent: model.reasoning_content ?? false,
      ...(model.media_part_tokens === undefined ? {} : { mediaPartTokens: model.media_part_tokens })
    }))
    const known = new Set(models.map((m) => m.id))
    const groupNames = new Set<string>([DEFAULT_GROUP])
    const channels = (file.channels ?? []).map((channel, i): Omit<Domain.Channel, "id"> => {
      const at = `channels[${i}]`
      const apiKeys = cloudKeys(channel, at, problems) ??
        [...(channel.api_key !== undefined ? [channel.api_key] : []), ...(channel.api_keys ?? [])]
      if (apiKeys.length === 0) {
        problems.push(`  at ${at}: Expected ${credentialsNamed(channel.type)} (the upstream's credentials)`)
      }
      for (const [k, key] of apiKeys.entries()) {
        const problem = Credentials.keyProblem(channel.type, key)
        if (problem !== undefined) problems.push(`  at ${at}${keyPath(channel, k)}: ${problem}`)
      }
      const cloud = cloudOf(channel)
      const cloudProblem = Credentials.cloudProblem(channel.type, cloud)
      if (cloudProblem !== undefined) problems.push(`  at ${at}.${cloudProblem.field}: ${cloudProblem.message}`)
      const baseUrl = channel.base_url ?? Credentials.defaultBaseUrl(channel.type, cloud)
      if (baseUrl === undefined && cloudProblem === undefined) {
        problems.push(
          `  at ${at}.base_url: Expected the upstream's base URL (only vertex and bedrock channels have a default)`
        )
      }
      for (const model of channel.models) {
        if (!known.has(model)) {
          known.add(model)
          models.push({
            id: model,
            displayName: model,
            inputNanosPerMillion: null,
            outputNanosPerMillion: null,
            cachedInputNanosPerMillion: null,
            perRequestNanos: null,
            free: false,
            ...modelDefaults
          })
        }
      }
      const groups = channel.groups ?? [DEFAULT_GROUP]
      for (const group of groups) groupNames.add(group)
      if (channel.responses === true && channel.type !== "openai") {
        problems.push(
          `  at channels[${i}].responses: only an openai channel can relay Responses API calls (this one is ${channel.type})`
        )
      }
      return {
        name: channel.name,
        type: channel.type,
        baseUrl: baseUrl ?? "",
        apiKeys,
        models: channel.models,
        modelMap: channel.model_map ?? {},
        groups,
        priority: channel.priority ?? 0,
        weight: channel.weight ?? 1,
        enabled: channel.enabled ?? true,
        headers: channel.headers ?? {},
        timeouts: {
          connectMs: channel.timeouts?.connect_ms ?? Domain.defaultTimeouts.connectMs,
          firstByteMs: channel.timeouts?.first_byte_ms ?? Domain.defaultTimeouts.firstByteMs,
          idleMs: channel.timeouts?.idle_ms ?? Domain.defaultTimeouts.idleMs,
          totalMs: channel.timeouts?.total_ms ?? Domain.defaultTimeouts.totalMs
        },
        apiVersion: channel.api_version ?? null,
        breaker: {
          consecutiveFailures: channel.breaker?.consecutive_failures ?? Domain.defaultBreaker.consecutiveFailures,
          failureRate: channel.breaker?.failure_rate ?? Domain.defaultBreaker.failureRate,
          minimumCalls: channel.breaker?.minimum_calls ?? Domain.defaultBreaker.minimumCalls,
          windowMs: channel.breaker?.window_ms ?? Domain.defaultBreaker.windowMs,
          cooldownMs: channel.breaker?.cooldown_ms ?? Domain.defaultBreaker.cooldownMs,
          halfOpenCalls: channel.breaker?.half_open_calls ?? Domain.defaultBreaker.halfOpenCalls
        },
        params: { defaults: channel.params?.defaults ?? {}, overrides: channel.params?.overrides ?? {} },
        streamOptions: channel.stream_options ?? true,
        responses: channel.responses ?? false,
        ...(cloud === undefined ? {} : { cloud })
      }
    })
    const keys: Array<Declaration.Key> = []
    const users = (file.users ?? []).map((user, u): Declaration.User => {
      for (const [k, key] of (user.keys ?? []).entries()) {
        keys.push(keyOf(user.name, key, `users[${u}].keys[${k}]`, problems, groupNames))
      }
      for (const group of user.groups ?? []) groupNames.add(group)
      return {
        name: user.name,
        role: user.role ?? "user",
        enabled: user.enabled ?? true,
        balanceNanos: usd(user.balance, `users[${u}].balance`, problems) ?? 0n,
        limits: limitsOf(user),
        ...(user.password !== undefined ? { password: Redacted.make(user.password) } : {}),
        ...(user.groups !== undefined ? { groups: user.groups } : {})
      }
    })
    const declared = Object.entries(file.groups ?? {}).map(([name, group]): Declaration.Group => {
      groupNames.delete(name)
      const ratio = group.ratio === undefined ? 1_000_000n : Money.parseScaled(group.ratio, 6)
      if (ratio === undefined || ratio <= 0n) {
        problems.push(
          `  at groups.${name}.ratio: Expected a positive number with at most 6 decimal places, got ${
            JSON.stringify(group.ratio)
          }`
        )
      }
      return { name, ratioMicros: ratio ?? 1_000_000n, limits: limitsOf(group), selectable: group.selectable ?? false }
    })
    const implied = [...groupNames].map((name): Declaration.Group => ({ name, ratioMicros: 1_000_000n }))
    const aliases = Object.entries(file.aliases ?? {}).map(([pattern, target]) => ({ pattern, target }))
    for (const alias of aliases) {
      if (!known.has(alias.target)) {
        problems.push(`  at aliases.${alias.pattern}: the target model '${alias.target}' is not a known model`)
      }
    }
    if (problems.length > 0) {
      return Effect.fail(new ConfigError({ message: `Invalid configuration in ${source}:\n${problems.join("\n")}` }))
    }
    return Effect.succeed({ users, groups: [...declared, ...implied], models, aliases, channels, keys })
  })

/** The names a channel type's credentials go by in the file. */
const credentialsNamed = (type: Domain.ChannelType): string =>
  type === "vertex"
    ? "credentials or credentials_file (a service account's key)"
    : type === "bedrock"
    ? "access_key_id and secret_access_key, or api_key (a Bedrock API key)"
    : "api_key or api_keys"

/** Where the file gives a channel's `k`-th key, for messages. */
const keyPath = (channel: ChannelConfig, k: number): string =>
  channel.type === "vertex"
    ? channel.credentials !== undefined && k === 0 ? ".credentials" : `.api_keys[${k}]`
    : channel.type === "bedrock" && channel.access_key_id !== undefined && k === 0
    ? ".access_key_id"
    : channel.api_key !== undefined
    ? k === 0 ? ".api_key" : `.api_keys[${k - 1}]`
    : `.api_keys[${k}]`

const CLOUD_FIELDS = {
  vertex: ["project", "location", "credentials", "credentials_file", "publishers"],
  bedrock: ["region", "access_key_id", "secret_access_key", "session_token"]
} as const

/**
 * A cloud channel's keys from its own fields (a service-account key; an
 * access key pair, or api_key/api_keys as Bedrock API keys after it), or
 * undefined to take api_key/api_keys as they are. Fields of another type's
 * credentials are refused by name.
 */
const cloudKeys = (channel: ChannelConfig, at: string, problems: Array<string>): Array<string> | undefined => {
  for (const [type, fields] of Object.entries(CLOUD_FIELDS)) {
    if (type === channel.type) continue
    for (const field of fields) {
      if ((channel as Record<string, unknown>)[field] !== undefined) {
        problems.push(`  at ${at}.${field}: only a ${type} channel has ${field} (this one is ${channel.type})`)
      }
    }
  }
  if (channel.type === "vertex") {
    if (channel.credentials_file !== undefined) {
      problems.push(
        `  at ${at}.credentials_file: the file could not be read here; give the key inline as credentials (node-http reads credentials_file when it starts)`
      )
    }
    if (channel.credentials === undefined) return undefined
    if (channel.api_key !== undefined) {
      problems.push(`  at ${at}.api_key: a vertex channel's credentials are a service account's key (credentials)`)
    }
    const text = typeof channel.credentials === "string" ? channel.credentials : JSON.stringify(channel.credentials)
    return [text, ...(channel.api_keys ?? [])]
  }
  if (channel.type === "bedrock") {
    const id = channel.access_key_id
    const secret = channel.secret_access_key
    if (id === undefined && secret === undefined) {
      if (channel.session_token !== undefined) {
        problems.push(`  at ${at}.session_token: a session token goes with access_key_id and secret_access_key`)
      }
      return undefined
    }
    if (id === undefined || secret === undefined) {
      problems.push(
        `  at ${at}.${
          id === undefined ? "access_key_id" : "secret_access_key"
        }: Expected both access_key_id and secret_access_key`
      )
      return []
    }
    const pair = Credentials.bedrockKeyText({
      accessKeyId: id,
      secretAccessKey: secret,
      sessionToken: channel.session_token
    })
    return [pair, ...(channel.api_key !== undefined ? [channel.api_key] : []), ...(channel.api_keys ?? [])]
  }
  return undefined
}

/** Where a cloud channel is served, from its fields. */
const cloudOf = (channel: ChannelConfig): Domain.ChannelCloud | undefined => {
  const cloud: Domain.ChannelCloud = {
    ...(channel.project === undefined ? {} : { project: channel.project }),
    ...(channel.location === undefined ? {} : { location: channel.location }),
    ...(channel.region === undefined ? {} : { region: channel.region }),
    ...(channel.publishers === undefined ? {} : { publishers: channel.publishers })
  }
  return Object.keys(cloud).length === 0 ? undefined : cloud
}

const keyOf = (
  user: string,
  key: KeyConfig,
  path: string,
  problems: Array<string>,
  groups: Set<string>
): Declaration.Key => {
  const group = key.group ?? DEFAULT_GROUP
  groups.add(group)
  return {
    user,
    name: key.name,
    group,
    ...(key.secret !== undefined ? { secret: Redacted.make(key.secret) } : {}),
    models: key.models ?? [],
    expiresAt: time(key.expires_at, `${path}.expires_at`, problems),
    enabled: key.enabled ?? true,
    quotaNanos: usd(key.quota, `${path}.quota`, problems),
    dailyBudgetNanos: usd(key.daily_budget, `${path}.daily_budget`, problems),
    monthlyBudgetNanos: usd(key.monthly_budget, `${path}.monthly_budget`, problems),
    limits: limitsOf(key)
  }
}
