/**
 * The `catalog` group of the management API (admin): groups, channels, models,
 * aliases and prices. Its request and response Schemas and its endpoints
 * (`CatalogGroup`); `Contract.ts` states the wire conventions and `Api.ts`
 * composes the groups.
 *
 * @since 0.1.0
 */
import * as Domain from "@modelgate/core/domain/Domain"
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { AdminOnly, Authentication, Csrf } from "../Guards.ts"
import { hasControl } from "../internal/controlCharacters.ts"
import { Created, describe, IdParams } from "../internal/endpoints.ts"
import { Limits, Prices } from "./AccountContract.ts"
import { ChannelType, Day, EpochMs, List, ModelNameText, Name, Ok, Ratio } from "./SharedContract.ts"

/** A group as an admin edits it. @category admin */
export const AdminGroup = Schema.Struct({
  name: Schema.String,
  ratio: Ratio,
  limits: Limits,
  /** Every user may pick it for new keys (otherwise only users it is assigned to). */
  selectable: Schema.Boolean,
  /** Names of the users it is assigned to. */
  users: Schema.Array(Schema.String),
  source: Schema.Literals(["config", "console"])
})
export type AdminGroup = typeof AdminGroup.Type

/** `POST /api/admin/groups`. @category admin */
export const CreateGroupRequest = Schema.Struct({
  name: Schema.String.check(
    Schema.isPattern(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, {
      expected: "a group name",
      message: "1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
    })
  ),
  ratio: Ratio,
  limits: Schema.optionalKey(Limits),
  selectable: Schema.optionalKey(Schema.Boolean)
})
export type CreateGroupRequest = typeof CreateGroupRequest.Type

/** `PATCH /api/admin/groups/:name`. `users` replaces the assigned users (by user id). @category admin */
export const UpdateGroupRequest = Schema.Struct({
  ratio: Schema.optionalKey(Ratio),
  limits: Schema.optionalKey(Limits),
  selectable: Schema.optionalKey(Schema.Boolean),
  userIds: Schema.optionalKey(Schema.Array(Schema.String))
})
export type UpdateGroupRequest = typeof UpdateGroupRequest.Type

/** `GET /api/admin/groups`. @category admin */
export const GroupList = List(AdminGroup)
export type GroupList = typeof GroupList.Type

/** A channel's timeouts in milliseconds (docs/routing.md). @category admin */
export const ChannelTimeouts = Schema.Struct({
  connectMs: Schema.Int,
  firstByteMs: Schema.Int,
  idleMs: Schema.Int,
  totalMs: Schema.Int
})
export type ChannelTimeouts = typeof ChannelTimeouts.Type

/** A channel's circuit breaker settings (docs/routing.md). @category admin */
export const BreakerSettings = Schema.Struct({
  consecutiveFailures: Schema.Int,
  failureRate: Schema.Number,
  minimumCalls: Schema.Int,
  windowMs: Schema.Int,
  cooldownMs: Schema.Int,
  halfOpenCalls: Schema.Int
})
export type BreakerSettings = typeof BreakerSettings.Type

/** Request parameters a channel fills in (`defaults`) or forces (`overrides`), in its own wire format. @category admin */
export const ChannelParams = Schema.Struct({
  defaults: Schema.JsonObject,
  overrides: Schema.JsonObject
})
export type ChannelParams = typeof ChannelParams.Type

/** Key states (see core's `ChannelHealth`). @category admin */
export const KeyState = Schema.Literals(["healthy", "open", "half_open", "disabled"])
export type KeyState = typeof KeyState.Type

/** One upstream key's health, named by position and hint (never the key). @category admin */
export const KeyHealth = Schema.Struct({
  index: Schema.Int,
  hint: Schema.String,
  state: KeyState,
  since: Schema.NullOr(EpochMs),
  reason: Schema.NullOr(Schema.String),
  status: Schema.NullOr(Schema.Int),
  retryAt: Schema.NullOr(EpochMs),
  recentCalls: Schema.Int,
  recentFailures: Schema.Int,
  consecutiveFailures: Schema.Int,
  lastFailureAt: Schema.NullOr(EpochMs),
  lastError: Schema.NullOr(Schema.String),
  lastProbeAt: Schema.NullOr(EpochMs),
  lastProbeOk: Schema.NullOr(Schema.Boolean)
})
export type KeyHealth = typeof KeyHealth.Type

/**
 * A model kept off a channel: its upstream refused it with a 403 about the
 * model, confirmed by a probe; its other channels serve it until `until` or a
 * reset. @category admin
 */
export const RefusedModel = Schema.Struct({
  model: Schema.String,
  since: EpochMs,
  until: EpochMs,
  status: Schema.Int,
  reason: Schema.String
})
export type RefusedModel = typeof RefusedModel.Type

/**
 * A channel's health as the serving gateway process sees it: breakers and
 * models kept off are per process, disabled keys are shared. `healthy`,
 * `degraded` (some keys are not healthy, or a model is kept off), `open` (no
 * key is healthy), `disabled` (every key is disabled).
 *
 * @category admin
 */
export const ChannelHealth = Schema.Struct({
  state: Schema.Literals(["healthy", "degraded", "open", "disabled"]),
  keys: Schema.Array(KeyHealth),
  /** Models kept off the channel after the upstream refused them with a 403 about the model (core's `RefusedModel`). */
  refusedModels: Schema.Array(RefusedModel)
})
export type ChannelHealth = typeof ChannelHealth.Type

/**
 * A channel as an admin sees it: upstream keys are write-only, shown as a
 * count and their last 4 characters; header values that look like credentials
 * (authorization, cookies, names with key, token, secret or password) are
 * shown the same way.
 *
 * @category admin
 */
export const AdminChannel = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  type: ChannelType,
  baseUrl: Schema.String,
  keyCount: Schema.Int,
  keyHints: Schema.Array(Schema.String),
  models: Schema.Array(Schema.String),
  modelMap: Schema.Record(Schema.String, Schema.String),
  groups: Schema.Array(Schema.String),
  priority: Schema.Int,
  weight: Schema.Int,
  enabled: Schema.Boolean,
  /** Azure: the `api-version` (null: the default, 2024-10-21). */
  apiVersion: Schema.NullOr(Schema.String),
  headers: Schema.Record(Schema.String, Schema.String),
  timeouts: ChannelTimeouts,
  breaker: BreakerSettings,
  params: ChannelParams,
  /** Whether `stream_options` is sent to this (OpenAI-format) upstream. */
  streamOptions: Schema.Boolean,
  /** OpenAI channels: Responses API calls are relayed to the upstream's own `/responses` (absent: false). */
  responses: Schema.optionalKey(Schema.Boolean),
  /** Vertex AI channels: the Google Cloud project. */
  project: Schema.optionalKey(Schema.String),
  /** Vertex AI channels: the location (`us-east5`, `global`). */
  location: Schema.optionalKey(Schema.String),
  /** AWS Bedrock channels: the region. */
  region: Schema.optionalKey(Schema.String),
  /** Vertex AI channels: the publisher of models whose name does not say (`claude-…` is Anthropic's). */
  publishers: Schema.optionalKey(Schema.Record(Schema.String, Schema.Literals(["google", "anthropic"]))),
  health: ChannelHealth,
  source: Schema.Literals(["config", "console"]),
  createdAt: EpochMs
})
export type AdminChannel = typeof AdminChannel.Type

const BaseUrl = Schema.String.check(
  Schema.isPattern(/^https?:\/\/[^\s/]+(\/[^\s]*)?$/, {
    expected: "an http(s) URL",
    message: "Enter an address starting with http:// or https://"
  })
)

const Millis = Schema.Int.check(Schema.isGreaterThan(0, { message: "Must be a whole number of milliseconds above 0" }))
const Count = Schema.Int.check(Schema.isGreaterThan(0, { message: "Must be a whole number above 0" }))

const CloudName = Schema.String.check(Schema.isMinLength(1, { message: "Must not be empty" }))

const channelFields = {
  name: Name,
  type: ChannelType,
  /** Optional for vertex and bedrock channels (their region's endpoint). */
  baseUrl: Schema.optionalKey(BaseUrl),
  /** Vertex AI: the Google Cloud project (required there; refused on other types). */
  project: Schema.optionalKey(CloudName),
  /** Vertex AI: the location (required there). */
  location: Schema.optionalKey(CloudName),
  /** AWS Bedrock: the region (required there). */
  region: Schema.optionalKey(CloudName),
  /** Vertex AI: the publisher of models whose name does not say. */
  publishers: Schema.optionalKey(Schema.Record(Schema.String, Schema.Literals(["google", "anthropic"]))),
  models: Schema.Array(ModelNameText).check(
    Schema.isMinLength(1, { message: "List at least one model" })
  ),
  modelMap: Schema.optionalKey(
    Schema.Record(Schema.String, ModelNameText).check(
      Schema.makeFilter((map: Readonly<Record<string, string>>) => !Object.keys(map).some(hasControl), {
        message: "A model name may not contain control characters (NUL, line breaks, tabs, DEL)"
      })
    )
  ),
  groups: Schema.optionalKey(Schema.Array(Schema.String.check(Schema.isMinLength(1)))),
  priority: Schema.optionalKey(Schema.Int),
  weight: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0, { message: "Must be 0 or more" }))),
  enabled: Schema.optionalKey(Schema.Boolean),
  apiVersion: Schema.optionalKey(Schema.NullOr(Schema.String)),
  /** Extra headers sent upstream; replaces them all. A masked value as read back keeps the stored one. */
  headers: Schema.optionalKey(Schema.Record(Schema.String, Schema.String)),
  /** Timeouts to change (the others keep their value, or the default). */
  timeouts: Schema.optionalKey(Schema.Struct({
    connectMs: Schema.optionalKey(Millis),
    firstByteMs: Schema.optionalKey(Millis),
    idleMs: Schema.optionalKey(Millis),
    totalMs: Schema.optionalKey(Millis)
  })),
  /** Breaker settings to change (the others keep their value, or the default). */
  breaker: Schema.optionalKey(Schema.Struct({
    consecutiveFailures: Schema.optionalKey(Count),
    failureRate: Schema.optionalKey(Schema.Number.check(
      Schema.isGreaterThan(0, { message: "Must be above 0" }),
      Schema.isLessThanOrEqualTo(1, { message: "Must be at most 1" })
    )),
    minimumCalls: Schema.optionalKey(Count),
    windowMs: Schema.optionalKey(Millis),
    cooldownMs: Schema.optionalKey(Millis),
    halfOpenCalls: Schema.optionalKey(Count)
  })),
  /** Parameter defaults and overrides; each part given replaces that part. */
  params: Schema.optionalKey(Schema.Struct({
    defaults: Schema.optionalKey(Schema.JsonObject),
    overrides: Schema.optionalKey(Schema.JsonObject)
  })),
  streamOptions: Schema.optionalKey(Schema.Boolean),
  responses: Schema.optionalKey(Schema.Boolean)
}

/**
 * `POST /api/admin/channels`. A cloud channel's `apiKeys` are its
 * credentials: a Vertex AI channel's are service-account key files (their
 * JSON), a Bedrock channel's Bedrock API keys or access key pairs as JSON
 * (`{"access_key_id", "secret_access_key", "session_token"}`).
 *
 * @category admin
 */
export const CreateChannelRequest = Schema.Struct({
  ...channelFields,
  apiKeys: Schema.Array(Schema.String.check(Schema.isMinLength(1)))
})
export type CreateChannelRequest = typeof CreateChannelRequest.Type

/** `PATCH /api/admin/channels/:id`. `apiKeys`, when given, replaces all upstream keys. @category admin */
export const UpdateChannelRequest = Schema.Struct({
  name: Schema.optionalKey(channelFields.name),
  type: Schema.optionalKey(channelFields.type),
  baseUrl: channelFields.baseUrl,
  project: channelFields.project,
  location: channelFields.location,
  region: channelFields.region,
  publishers: channelFields.publishers,
  models: Schema.optionalKey(channelFields.models),
  modelMap: channelFields.modelMap,
  groups: channelFields.groups,
  priority: channelFields.priority,
  weight: channelFields.weight,
  enabled: channelFields.enabled,
  apiVersion: channelFields.apiVersion,
  headers: channelFields.headers,
  timeouts: channelFields.timeouts,
  breaker: channelFields.breaker,
  params: channelFields.params,
  streamOptions: channelFields.streamOptions,
  responses: channelFields.responses,
  apiKeys: Schema.optionalKey(Schema.Array(Schema.String.check(Schema.isMinLength(1))))
})
export type UpdateChannelRequest = typeof UpdateChannelRequest.Type

/** `GET /api/admin/channels`. @category admin */
export const ChannelList = List(AdminChannel)
export type ChannelList = typeof ChannelList.Type

/** `POST /api/admin/channels/:id/test` body: which model to try (default: the channel's first). @category admin */
export const TestChannelRequest = Schema.Struct({ model: Schema.optionalKey(Schema.String) })
export type TestChannelRequest = typeof TestChannelRequest.Type

/** One key's result of a channel test. @category admin */
export const KeyTestResult = Schema.Struct({
  index: Schema.Int,
  /** The key's last 4 characters, as `…abcd`. */
  hint: Schema.String,
  ok: Schema.Boolean,
  latencyMs: Schema.Number,
  status: Schema.NullOr(Schema.Int),
  message: Schema.String
})
export type KeyTestResult = typeof KeyTestResult.Type

/**
 * The outcome of a channel test: every key was tried, and its health updated
 * (see `POST /api/admin/channels/:id/test`). `ok` when every key worked; the
 * other top-level fields are those of the first key that failed (else the
 * first key's).
 *
 * @category admin
 */
export const TestChannelResult = Schema.Struct({
  ok: Schema.Boolean,
  latencyMs: Schema.Number,
  status: Schema.NullOr(Schema.Int),
  message: Schema.String,
  model: Schema.String,
  keys: Schema.Array(KeyTestResult)
})
export type TestChannelResult = typeof TestChannelResult.Type

/**
 * `POST /api/admin/channels/models`: the upstream's own model list, for a
 * saved channel (`channelId`: its address, keys and headers) or one being
 * made (`type`, `baseUrl`, `apiKey`). Fields given replace the saved
 * channel's (a changed address in the edit form, a masked header sent back as
 * read keeps its secret).
 *
 * @category admin
 */
export const FetchModelsRequest = Schema.Struct({
  channelId: Schema.optionalKey(Schema.String),
  type: Schema.optionalKey(ChannelType),
  baseUrl: Schema.optionalKey(BaseUrl),
  project: Schema.optionalKey(CloudName),
  location: Schema.optionalKey(CloudName),
  region: Schema.optionalKey(CloudName),
  /** The key to list with (default: the saved channel's first). */
  apiKey: Schema.optionalKey(Schema.String.check(Schema.isMinLength(1))),
  apiVersion: Schema.optionalKey(Schema.NullOr(Schema.String)),
  headers: Schema.optionalKey(Schema.Record(Schema.String, Schema.String))
})
export type FetchModelsRequest = typeof FetchModelsRequest.Type

/** A model an upstream lists, and what the gateway knows of it. @category admin */
export const UpstreamModel = Schema.Struct({
  id: Schema.String,
  displayName: Schema.NullOr(Schema.String),
  inputTokenLimit: Schema.NullOr(Schema.Int),
  outputTokenLimit: Schema.NullOr(Schema.Int),
  /** It makes embeddings, not chat answers. */
  embedding: Schema.Boolean,
  /** The gateway has a price for it (calls to it can be billed). */
  priced: Schema.Boolean,
  /** The price table that ships with modelgate knows it (one click prices it). */
  preset: Schema.Boolean
})
export type UpstreamModel = typeof UpstreamModel.Type

/** `POST /api/admin/channels/models`: the upstream's models, by id. @category admin */
export const FetchedModels = List(UpstreamModel)
export type FetchedModels = typeof FetchedModels.Type

const MediaTokens = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0, { message: "Must be a whole number, 0 or more" }))

/**
 * Tokens a call's hold counts for one media part of each kind (an image,
 * audio, video, a document such as a PDF, any other file; inline or by URL),
 * as set on a model: null (or left out) is the kind's default (2,000 for an
 * image, the model's input token limit for the others).
 *
 * @category admin
 */
export const MediaPartTokens = Schema.Struct({
  image: Schema.optionalKey(Schema.NullOr(MediaTokens)),
  audio: Schema.optionalKey(Schema.NullOr(MediaTokens)),
  video: Schema.optionalKey(Schema.NullOr(MediaTokens)),
  document: Schema.optionalKey(Schema.NullOr(MediaTokens)),
  file: Schema.optionalKey(Schema.NullOr(MediaTokens))
})
export type MediaPartTokens = typeof MediaPartTokens.Type

/** What a hold counts per media part of each kind on a model: the figure set, or the kind's default. @category admin */
export const MediaHoldTokens = Schema.Struct({
  image: Schema.Int,
  audio: Schema.Int,
  video: Schema.Int,
  document: Schema.Int,
  file: Schema.Int
})
export type MediaHoldTokens = typeof MediaHoldTokens.Type

/** A model and its list prices (before any group ratio). @category admin */
export const AdminModel = Schema.Struct({
  id: Schema.String,
  displayName: Schema.String,
  prices: Prices,
  inputTokenLimit: Schema.Int,
  outputTokenLimit: Schema.Int,
  /** Shown in model lists (Gemini's `description`); null for none. */
  description: Schema.NullOr(Schema.String),
  /** An embedding model (Gemini lists `embedContent`/`batchEmbedContents` for it). */
  embedding: Schema.Boolean,
  /** A reasoning model: it takes a reasoning effort. */
  reasoning: Schema.Boolean,
  /** Its upstream accepts `reasoning_content` in assistant history. */
  reasoningContent: Schema.Boolean,
  /** Tokens per media part as set on the model (null: the kind's default); answers always carry it. */
  mediaPartTokens: Schema.optionalKey(MediaPartTokens),
  /** What a hold counts per media part of each kind (what is set, or the default); answers always carry it. */
  mediaHoldTokens: Schema.optionalKey(MediaHoldTokens),
  source: Schema.Literals(["config", "console"])
})
export type AdminModel = typeof AdminModel.Type

const TokenLimit = Schema.Int.check(Schema.isGreaterThan(0, { message: "Must be a whole number above 0" }))

/**
 * The token limits of a model created without them (core's, the one default
 * the configuration file, the API and the console share).
 *
 * @category admin
 */
export const modelDefaults: { readonly inputTokenLimit: number; readonly outputTokenLimit: number } =
  Domain.modelDefaults

/** `POST /api/admin/models` (creates or replaces by id). @category admin */
export const UpsertModelRequest = Schema.Struct({
  id: Schema.String.check(
    Schema.isPattern(/^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,127}$/, {
      expected: "a model id",
      message: "1-128 letters, digits or . _ : / @ -"
    })
  ),
  displayName: Schema.optionalKey(Schema.String),
  prices: Prices,
  inputTokenLimit: Schema.optionalKey(TokenLimit),
  outputTokenLimit: Schema.optionalKey(TokenLimit),
  /** Left as it is when absent; null clears it. */
  description: Schema.optionalKey(Schema.NullOr(Schema.String)),
  /** Left as it is when absent (false for a new model); likewise `reasoning` and `reasoningContent`. */
  embedding: Schema.optionalKey(Schema.Boolean),
  reasoning: Schema.optionalKey(Schema.Boolean),
  reasoningContent: Schema.optionalKey(Schema.Boolean),
  /**
   * Tokens a hold counts per media part, per kind: the kinds given (a null
   * kind: its default) replace what was set. Left as it is when absent; null
   * puts every kind back to its default.
   */
  mediaPartTokens: Schema.optionalKey(Schema.NullOr(MediaPartTokens))
})
export type UpsertModelRequest = typeof UpsertModelRequest.Type

/**
 * A model some channel serves that has no price (no row under Models &
 * prices, or a row with no price that is not free): the gateway refuses calls
 * to it with 403 `model_unpriced` until an admin sets its price (or marks it
 * free).
 *
 * @category admin
 */
export const UnpricedModel = Schema.Struct({
  id: Schema.String,
  /** The names of the channels that serve it. */
  channels: Schema.Array(Schema.String)
})
export type UnpricedModel = typeof UnpricedModel.Type

/** `GET /api/admin/models`: the priced models, and the channel models without a price. @category admin */
export const ModelList = Schema.Struct({
  data: Schema.Array(AdminModel),
  unpriced: Schema.Array(UnpricedModel)
})
export type ModelList = typeof ModelList.Type

/** A well-known model's list prices from the price table that ships with modelgate. @category admin */
export const PricePreset = Schema.Struct({
  id: Schema.String,
  displayName: Schema.String,
  /** Who sells it (`openai`, `anthropic`, `google`, ...). */
  provider: Schema.String,
  prices: Prices,
  inputTokenLimit: Schema.Int,
  outputTokenLimit: Schema.Int,
  embedding: Schema.Boolean,
  reasoning: Schema.Boolean
})
export type PricePreset = typeof PricePreset.Type

/**
 * `GET /api/admin/models/presets`: the price table and where its figures come
 * from. The table is a file in the repository, updated by hand; prices change,
 * so check them before relying on them.
 *
 * @category admin
 */
export const PricePresets = Schema.Struct({
  /** The day the figures were taken from the providers' price pages (YYYY-MM-DD). */
  asOf: Day,
  /** The pages they were taken from. */
  sources: Schema.Array(Schema.String),
  data: Schema.Array(PricePreset)
})
export type PricePresets = typeof PricePresets.Type

/** A model-name alias: a glob (`*` matches any run of characters) and the model it stands for. @category admin */
export const Alias = Schema.Struct({
  pattern: Schema.String,
  target: Schema.String,
  /** Matching order: lower first. */
  position: Schema.Int
})
export type Alias = typeof Alias.Type

/** `GET /api/admin/aliases`, in matching order. @category admin */
export const AliasList = List(Alias)
export type AliasList = typeof AliasList.Type

/** `POST /api/admin/aliases`: creates or changes the alias of `pattern`. @category admin */
export const SetAliasRequest = Schema.Struct({
  pattern: Schema.String.check(
    Schema.isPattern(/^[A-Za-z0-9*][A-Za-z0-9._:/@*-]{0,127}$/, {
      expected: "an alias pattern",
      message: "1-128 letters, digits or . _ : / @ - and * (any characters)"
    })
  ),
  target: Schema.String.check(Schema.isMinLength(1, { message: "Required" }), Schema.isMaxLength(128)),
  /** Default: after the last alias. */
  position: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0, { message: "Must be 0 or more" })))
})
export type SetAliasRequest = typeof SetAliasRequest.Type

/** `DELETE /api/admin/aliases?pattern=`. @category admin */
export const AliasQuery = Schema.Struct({ pattern: Schema.String })
export type AliasQuery = typeof AliasQuery.Type

/** Groups, channels, models and prices, aliases (administrators only). @category groups */
export class CatalogGroup extends HttpApiGroup.make("catalog")
  .add(
    HttpApiEndpoint.get("listGroups", "/api/admin/groups", { success: GroupList }).annotateMerge(
      describe("All groups.")
    ),
    HttpApiEndpoint.post("createGroup", "/api/admin/groups", {
      payload: CreateGroupRequest,
      success: Created(AdminGroup)
    })
      .annotateMerge(describe("Create a group.")),
    HttpApiEndpoint.patch("updateGroup", "/api/admin/groups/:name", {
      params: { name: Schema.String },
      payload: UpdateGroupRequest,
      success: AdminGroup
    }).annotateMerge(describe("Change a group's ratio, limits, selectability or assigned users.")),
    HttpApiEndpoint.delete("deleteGroup", "/api/admin/groups/:name", { params: { name: Schema.String }, success: Ok })
      .annotateMerge(describe("Delete a group no key uses.")),
    HttpApiEndpoint.get("listChannels", "/api/admin/channels", { success: ChannelList })
      .annotateMerge(describe("All channels (upstream keys never included).")),
    HttpApiEndpoint.post("createChannel", "/api/admin/channels", {
      payload: CreateChannelRequest,
      success: Created(AdminChannel)
    })
      .annotateMerge(describe("Create a channel.")),
    HttpApiEndpoint.get("getChannel", "/api/admin/channels/:id", { params: IdParams, success: AdminChannel })
      .annotateMerge(describe("One channel.")),
    HttpApiEndpoint.patch("updateChannel", "/api/admin/channels/:id", {
      params: IdParams,
      payload: UpdateChannelRequest,
      success: AdminChannel
    })
      .annotateMerge(describe("Change a channel.")),
    HttpApiEndpoint.delete("deleteChannel", "/api/admin/channels/:id", { params: IdParams, success: Ok })
      .annotateMerge(describe("Delete a channel.")),
    HttpApiEndpoint.post("testChannel", "/api/admin/channels/:id/test", {
      params: IdParams,
      payload: TestChannelRequest,
      success: TestChannelResult
    })
      .annotateMerge(describe(
        "Send one real request through each of a channel's keys, report latency or the upstream's error, and update each key's health with the outcome."
      )),
    HttpApiEndpoint.post("fetchModels", "/api/admin/channels/models", {
      payload: FetchModelsRequest,
      success: FetchedModels
    })
      .annotateMerge(
        describe(
          "The upstream's own model list, for a saved channel (channelId) or one being made (type, baseUrl, apiKey)."
        )
      ),
    HttpApiEndpoint.post("resetChannel", "/api/admin/channels/:id/reset", { params: IdParams, success: AdminChannel })
      .annotateMerge(describe("Close the channel's circuit breakers and re-enable its disabled keys."))
  )
  .add(
    HttpApiEndpoint.get("listModels", "/api/admin/models", { success: ModelList })
      .annotateMerge(describe("All models with list prices, and the channel models that have no price yet.")),
    HttpApiEndpoint.get("pricePresets", "/api/admin/models/presets", { success: PricePresets })
      .annotateMerge(
        describe("The price table of well-known models that ships with modelgate (with its sources and date).")
      ),
    HttpApiEndpoint.post("upsertModel", "/api/admin/models", { payload: UpsertModelRequest, success: AdminModel })
      .annotateMerge(describe("Create or replace a model and its prices.")),
    HttpApiEndpoint.delete("deleteModel", "/api/admin/models/:id", { params: IdParams, success: Ok })
      .annotateMerge(describe("Delete a model.")),
    HttpApiEndpoint.get("listAliases", "/api/admin/aliases", { success: AliasList })
      .annotateMerge(describe("Model-name aliases, in matching order.")),
    HttpApiEndpoint.post("setAlias", "/api/admin/aliases", { payload: SetAliasRequest, success: Alias })
      .annotateMerge(describe("Create or change an alias.")),
    HttpApiEndpoint.delete("deleteAlias", "/api/admin/aliases", { query: AliasQuery, success: Ok })
      .annotateMerge(describe("Delete an alias (?pattern=)."))
  )
  .middleware(AdminOnly)
  .middleware(Csrf)
  .middleware(Authentication)
{}
