/**
 * The records admission and routing work on, as they sit in memory on the hot
 * path. The store persists them; node-http loads them into a `Catalog` and the
 * `KeyStore` cache.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

/**
 * The wire dialects modelgate speaks, to clients and to upstreams: OpenAI chat
 * completions, Gemini generateContent, Anthropic Messages, and OpenAI's
 * Responses API (`responses`: Codex CLI, the Agents SDK; spoken upstream by
 * OpenAI channels marked `responses`).
 *
 * @category models
 */
export const Dialect = Schema.Literals(["openai", "gemini", "anthropic", "responses"])
export type Dialect = typeof Dialect.Type

/**
 * Upstream channel types. `azure` speaks the OpenAI dialect with Azure's paths
 * and auth; `vertex` (Google Vertex AI) speaks Gemini's dialect to Google's
 * models and Anthropic's Messages to Claude, with a service account's access
 * tokens; `bedrock` (AWS Bedrock Runtime) speaks the Converse API, signed
 * with AWS Signature Version 4 or sent with a Bedrock API key.
 *
 * @category models
 */
export const ChannelType = Schema.Literals(["openai", "gemini", "anthropic", "azure", "vertex", "bedrock"])
export type ChannelType = typeof ChannelType.Type

/** Every channel type, in the order messages list them. @category constants */
export const CHANNEL_TYPES: ReadonlyArray<ChannelType> = ChannelType.literals

/**
 * The wire formats spoken to upstreams: the client dialects, and AWS
 * Bedrock's Converse API (spoken to upstreams only).
 *
 * @category models
 */
export const WireDialect = Schema.Literals(["openai", "gemini", "anthropic", "responses", "bedrock"])
export type WireDialect = typeof WireDialect.Type

/**
 * The dialect a channel type speaks on the wire (a `vertex` channel: Gemini's
 * for Google's models; its Claude models speak Anthropic's, see
 * `@modelgate/vertex`'s `Location.publisherOf`).
 *
 * @category models
 */
export const dialectOf = (type: ChannelType): WireDialect =>
  type === "azure" ? "openai" : type === "vertex" ? "gemini" : type

/** User roles. @category models */
/** How long a console password may be (the store, the configuration file and the console apply it). @category constants */
export const PASSWORD_LENGTH = { min: 8, max: 256 } as const

export const Role = Schema.Literals(["user", "admin"])
export type Role = typeof Role.Type

/**
 * An API key as admission sees it: never its secret, only who it belongs to and
 * what it may do. `models` empty means everything the group reaches. Its
 * rate limits travel with it so the hot path needs no lookup.
 *
 * @category models
 */
export interface ApiKey {
  readonly id: string
  readonly name: string
  readonly prefix: string
  readonly userId: string
  readonly userName: string
  readonly userRole: Role
  readonly userEnabled: boolean
  readonly group: string
  readonly models: ReadonlyArray<string>
  /** Epoch milliseconds, or null for never. */
  readonly expiresAt: number | null
  readonly enabled: boolean
  /** Lifetime spending cap in nano-dollars, or null. */
  readonly quotaNanos: bigint | null
  readonly dailyBudgetNanos: bigint | null
  readonly monthlyBudgetNanos: bigint | null
  /**
   * The key's own rate limits (`null` where unset). Where the key sets none,
   * its group's limits apply; where both are set, the lower one does.
   */
  readonly limits: Limits
  /** The rate limits of the key's user, shared by all the user's keys (`null` where unset). */
  readonly userLimits: Limits
}

/**
 * A model and its price. Prices are nano-dollars per one million tokens
 * (`input`, `output`, `cachedInput`, `cacheWrite`) and nano-dollars per call
 * (`perRequest`). A model with no price at all and `free: false` is refused.
 *
 * @category models
 */
export interface Model {
  readonly id: string
  readonly displayName: string
  readonly inputNanosPerMillion: bigint | null
  readonly outputNanosPerMillion: bigint | null
  readonly cachedInputNanosPerMillion: bigint | null
  /**
   * The price of prompt tokens written to the upstream's prompt cache
   * (Anthropic's `cache_creation_input_tokens`); null or absent: the input
   * price.
   */
  readonly cacheWriteNanosPerMillion?: bigint | null | undefined
  readonly perRequestNanos: bigint | null
  readonly free: boolean
  readonly inputTokenLimit: number
  readonly outputTokenLimit: number
  /** A short description shown in model lists (the Gemini resource's `description`). */
  readonly description?: string | undefined
  /**
   * An embedding model: Gemini's list advertises `embedContent` and
   * `batchEmbedContents` for it instead of the generation methods. Default false.
   */
  readonly embedding?: boolean | undefined
  /**
   * A reasoning model: it takes a reasoning effort (OpenAI `reasoning_effort`),
   * so a Gemini client's `thinkingConfig` is passed on to it; for other models
   * that hint is left out. Gemini's list reports it as `thinking`. Default false.
   */
  readonly reasoning?: boolean | undefined
  /**
   * The model's upstream accepts the non-standard `reasoning_content` field on
   * assistant messages in the history (vLLM and some OpenAI-compatible
   * servers). Default false: OpenAI and DeepSeek reject it, so earlier reasoning
   * is not sent back to an OpenAI-style upstream unless this is set.
   */
  readonly reasoningContent?: boolean | undefined
  /**
   * The prompt tokens a hold counts for one media part of each kind (an
   * image, audio, video, a document such as a PDF, any other file; inline or
   * by URL), where the operator sets them; a kind left out takes its default
   * (`Tokens.mediaPartTokens`). Set it to what one such part can cost on this
   * model, so a call's hold covers what its upstream bills.
   */
  readonly mediaPartTokens?: MediaPartTokens | undefined
}

/**
 * The kinds of media part a prompt may carry or point to: what the hold
 * counts each one as (`Model.mediaPartTokens`) depends on it.
 *
 * @category models
 */
export const MediaKind = Schema.Literals(["image", "audio", "video", "document", "file"])
export type MediaKind = typeof MediaKind.Type

/** Tokens per media part, per kind (each a positive whole number; a kind left out takes its default). @category models */
export type MediaPartTokens = { readonly [K in MediaKind]?: number | undefined }

/**
 * The token limits of a model whose configuration (the file or the console)
 * gives none: the one source of these numbers. The output limit is also what
 * a call that does not limit its answer is held for.
 *
 * @category constants
 */
export const modelDefaults = { inputTokenLimit: 128_000, outputTokenLimit: 16_384 } as const

/** Request limits; `null` means no limit. @category models */
export interface Limits {
  readonly rpm: number | null
  readonly tpm: number | null
  readonly concurrency: number | null
}

/**
 * A group: a price ratio (in millionths, so 0.8 is 800000) and default limits for
 * its members' keys.
 *
 * @category models
 */
export interface Group {
  readonly name: string
  readonly ratioMicros: bigint
  readonly limits: Limits
}

/**
 * Per-channel timeouts in milliseconds (docs/routing.md explains each):
 * `connectMs` bounds opening the connection (TCP and TLS), `firstByteMs` the
 * wait for the answer's headers and, for streams, its first event,
 * `idleMs` the gap between two chunks of the body (stream or not), and
 * `totalMs` the whole call, measured from its start, stream included.
 *
 * @category models
 */
export interface ChannelTimeouts {
  readonly connectMs: number
  readonly firstByteMs: number
  readonly idleMs: number
  readonly totalMs: number
}

/**
 * The default channel timeouts: the one source of these numbers (the config
 * file, the admin API and the docs all use them).
 *
 * @category constants
 */
export const defaultTimeouts: ChannelTimeouts = {
  connectMs: 10_000,
  firstByteMs: 60_000,
  idleMs: 120_000,
  totalMs: 600_000
}

/**
 * When the circuit breaker of a channel key opens, and how it recovers.
 *
 * It opens after `consecutiveFailures` failures in a row, or when at least
 * `minimumCalls` calls were made in the last `windowMs` and `failureRate`
 * (0 to 1) or more of them failed. It stays open `cooldownMs`, then lets
 * `halfOpenCalls` trial calls (or health probes) through at a time: a trial
 * that succeeds closes it, one that fails opens it again.
 *
 * @category models
 */
export interface BreakerSettings {
  readonly consecutiveFailures: number
  readonly failureRate: number
  readonly minimumCalls: number
  readonly windowMs: number
  readonly cooldownMs: number
  readonly halfOpenCalls: number
}

/** The default breaker settings. @category constants */
export const defaultBreaker: BreakerSettings = {
  consecutiveFailures: 5,
  failureRate: 0.5,
  minimumCalls: 20,
  windowMs: 60_000,
  cooldownMs: 30_000,
  halfOpenCalls: 1
}

/**
 * Request parameters a channel adds to every upstream body, in the channel's
 * own wire format: `defaults` fill fields the client did not send, `overrides`
 * replace what it sent (objects merge key by key; a `null` override removes
 * the field).
 *
 * @category models
 */
export interface ChannelParams {
  readonly defaults: Schema.JsonObject
  readonly overrides: Schema.JsonObject
}

/** No parameter changes. @category constants */
export const noParams: ChannelParams = { defaults: {}, overrides: {} }

/** Whether a channel changes request parameters at all. @category models */
export const hasParams = (params: ChannelParams): boolean =>
  Object.keys(params.defaults).length > 0 || Object.keys(params.overrides).length > 0

/** The `api-version` of Azure channels that set none. @category constants */
export const DEFAULT_AZURE_API_VERSION = "2024-10-21"

/**
 * An upstream account. `apiKeys` are decrypted and only ever held in memory.
 * `modelMap` maps a public model name to the name sent upstream.
 *
 * @category models
 */
export interface Channel {
  readonly id: string
  readonly name: string
  readonly type: ChannelType
  readonly baseUrl: string
  readonly apiKeys: ReadonlyArray<string>
  readonly models: ReadonlyArray<string>
  readonly modelMap: Readonly<Record<string, string>>
  readonly groups: ReadonlyArray<string>
  readonly priority: number
  readonly weight: number
  readonly enabled: boolean
  readonly headers: Readonly<Record<string, string>>
  readonly timeouts: ChannelTimeouts
  /** Azure only: the `api-version` query parameter (null: `DEFAULT_AZURE_API_VERSION`). */
  readonly apiVersion: string | null
  readonly breaker: BreakerSettings
  readonly params: ChannelParams
  /**
   * Whether the upstream accepts `stream_options` (OpenAI-format channels).
   * When false it is never sent, and stream usage is counted locally.
   */
  readonly streamOptions: boolean
  /**
   * OpenAI channels only: the upstream also serves OpenAI's Responses API at
   * `{baseUrl}/responses`, so a Responses client's body is relayed to it as it
   * is (with the model name changed) instead of translated to chat
   * completions. Absent: false.
   */
  readonly responses?: boolean | undefined
  /** `vertex` and `bedrock` channels: where the cloud serves them (see `ChannelCloud`). Absent for other types. */
  readonly cloud?: ChannelCloud | undefined
}

/**
 * Where a cloud channel is served. Its credentials are its `apiKeys` (each
 * one key, see `Credentials`): a `vertex` channel's are service-account keys
 * (the JSON file Google issues), a `bedrock` channel's Bedrock API keys or
 * access key pairs.
 *
 * @category models
 */
export interface ChannelCloud {
  /** `vertex`: the Google Cloud project. */
  readonly project?: string | undefined
  /** `vertex`: the location (`us-east5`, `europe-west1`, `global`). */
  readonly location?: string | undefined
  /** `bedrock`: the AWS region (`us-east-1`). */
  readonly region?: string | undefined
  /**
   * `vertex`: the publisher of an upstream model where its name does not say
   * (`claude-…` is Anthropic's, every other Google's).
   */
  readonly publishers?: Readonly<Record<string, "google" | "anthropic">> | undefined
}

/** A model-name alias: a glob pattern (`*` matches any run of characters) and its target. @category models */
export interface Alias {
  readonly pattern: string
  readonly target: string
}

/**
 * A channel's tuning left at its defaults: no extra headers, the default
 * timeouts and breaker, the default Azure `api-version`, no parameter changes,
 * and `stream_options` sent.
 *
 * @category constants
 */
export const channelDefaults: Pick<
  Channel,
  "headers" | "timeouts" | "apiVersion" | "breaker" | "params" | "streamOptions"
> = {
  headers: {},
  timeouts: defaultTimeouts,
  apiVersion: null,
  breaker: defaultBreaker,
  params: noParams,
  streamOptions: true
}

/** The upstream name of a public model on a channel. @category models */
export const upstreamModel = (channel: Channel, model: string): string => channel.modelMap[model] ?? model
