/**
 * The catalog tables: models, groups, channels (upstream API keys encrypted
 * with `Secrets`) and aliases. `load` returns exactly core's `Domain` records,
 * ready for `Catalog.makeSnapshot`; the upserts and deletes serve the admin API.
 *
 * @since 0.1.0
 */
import { Domain, GatewayError } from "@modelgate/core"
import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql"
import { newId } from "./internal/random.ts"
import * as Row from "./internal/row.ts"
import { Secrets, type SecretError } from "./Secrets.ts"
import { InvalidInput } from "./StoreError.ts"
import type { Source } from "./Users.ts"

/**
 * Everything the catalog snapshot is built from.
 *
 * @category models
 */
export interface CatalogData {
  readonly models: ReadonlyArray<Domain.Model>
  readonly groups: ReadonlyArray<Domain.Group>
  readonly channels: ReadonlyArray<Domain.Channel>
  readonly aliases: ReadonlyArray<Domain.Alias>
}

/**
 * A group and whether users may pick it for their own keys.
 *
 * @category models
 */
export interface GroupInput extends Domain.Group {
  readonly selectable: boolean
}

/**
 * A channel to store; `apiKeys` are plain text and are encrypted here. Without
 * `id` a new id is generated on insert (the natural key is `name`).
 *
 * @category models
 */
export type ChannelInput = Omit<Domain.Channel, "id">

/** Shared with the other repositories of this package, not a stable API. @internal @category internal */
export const decodeModel = (row: Record<string, unknown>): Domain.Model => ({
  id: Row.str(row.id, "models.id"),
  displayName: Row.str(row.display_name, "models.display_name"),
  inputNanosPerMillion: Row.bigOrNull(row.input_nanos_per_million, "models.input_nanos_per_million"),
  outputNanosPerMillion: Row.bigOrNull(row.output_nanos_per_million, "models.output_nanos_per_million"),
  cachedInputNanosPerMillion: Row.bigOrNull(row.cached_input_nanos_per_million, "models.cached_input_nanos_per_million"),
  cacheWriteNanosPerMillion: Row.bigOrNull(row.cache_write_nanos_per_million, "models.cache_write_nanos_per_million"),
  perRequestNanos: Row.bigOrNull(row.per_request_nanos, "models.per_request_nanos"),
  free: Row.bool(row.free, "models.free"),
  inputTokenLimit: Row.int(row.input_token_limit, "models.input_token_limit"),
  outputTokenLimit: Row.int(row.output_token_limit, "models.output_token_limit"),
  ...optionalDescription(Row.strOrNull(row.description, "models.description")),
  embedding: Row.bool(row.embedding, "models.embedding"),
  reasoning: Row.bool(row.reasoning, "models.reasoning"),
  reasoningContent: Row.bool(row.reasoning_content, "models.reasoning_content")
})

const optionalDescription = (description: string | null): { readonly description?: string } =>
  description === null ? {} : { description }

/** Shared with the other repositories of this package, not a stable API. @internal @category internal */
export const decodeGroup = (row: Record<string, unknown>): Domain.Group => ({
  name: Row.str(row.name, "groups.name"),
  ratioMicros: Row.big(row.ratio_micros, "groups.ratio_micros"),
  limits: {
    rpm: Row.intOrNull(row.rpm, "groups.rpm"),
    tpm: Row.intOrNull(row.tpm, "groups.tpm"),
    concurrency: Row.intOrNull(row.concurrency, "groups.concurrency")
  }
})

const { defaultBreaker, defaultTimeouts } = Domain

const jsonObject = (value: unknown, column: string): Record<string, unknown> => {
  const parsed: unknown = JSON.parse(Row.str(value, column))
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new TypeError(`Column '${column}': expected a JSON object`)
  }
  return parsed as Record<string, unknown>
}

const numbers = <A extends object>(value: unknown, column: string, defaults: A): A => {
  const parsed = jsonObject(value, column)
  const out: Record<string, unknown> = { ...(defaults as Record<string, unknown>) }
  for (const name of Object.keys(defaults)) {
    const v = parsed[name]
    if (v === undefined) continue
    if (typeof v !== "number" || !Number.isFinite(v)) throw new TypeError(`Column '${column}': '${name}' is not a number`)
    out[name] = v
  }
  return out as A
}

/**
 * A channel's timeouts from their JSON column; a field the row lacks takes
 * core's default. Shared with the admin API, not a stable API.
 *
 * @internal
 * @category internal
 */
export const decodeTimeouts = (value: unknown): Domain.ChannelTimeouts => numbers(value, "channels.timeouts", defaultTimeouts)

/**
 * A channel's breaker settings from their JSON column (`{}`: the defaults).
 * Shared with the admin API, not a stable API.
 *
 * @internal
 * @category internal
 */
export const decodeBreaker = (value: unknown): Domain.BreakerSettings => numbers(value, "channels.breaker", defaultBreaker)

/**
 * A channel's parameter defaults and overrides from their JSON column.
 * Shared with the admin API, not a stable API.
 *
 * @internal
 * @category internal
 */
export const decodeParams = (value: unknown): Domain.ChannelParams => {
  const parsed = jsonObject(value, "channels.params")
  const part = (name: "defaults" | "overrides") => {
    const v = parsed[name]
    if (v === undefined) return {}
    if (typeof v !== "object" || v === null || Array.isArray(v)) throw new TypeError(`Column 'channels.params': '${name}' is not an object`)
    return v as Domain.ChannelParams["defaults"]
  }
  return { defaults: part("defaults"), overrides: part("overrides") }
}

/** Shared with the other repositories of this package, not a stable API. @internal @category internal */
export const modelColumns = (model: Domain.Model) => ({
  display_name: model.displayName,
  input_nanos_per_million: model.inputNanosPerMillion,
  output_nanos_per_million: model.outputNanosPerMillion,
  cached_input_nanos_per_million: model.cachedInputNanosPerMillion,
  cache_write_nanos_per_million: model.cacheWriteNanosPerMillion ?? null,
  per_request_nanos: model.perRequestNanos,
  free: model.free,
  input_token_limit: model.inputTokenLimit,
  output_token_limit: model.outputTokenLimit,
  description: model.description ?? null,
  embedding: model.embedding ?? false,
  reasoning: model.reasoning ?? false,
  reasoning_content: model.reasoningContent ?? false
})

/** Shared with the other repositories of this package, not a stable API. @internal @category internal */
export const groupColumns = (group: GroupInput) => ({
  ratio_micros: group.ratioMicros,
  rpm: group.limits.rpm,
  tpm: group.limits.tpm,
  concurrency: group.limits.concurrency,
  selectable: group.selectable
})

/** The channel columns other than id, name, keys, source and timestamps (shared with the admin API). @internal @category internal */
export const channelColumns = (channel: ChannelInput) => ({
  type: channel.type,
  base_url: channel.baseUrl,
  models: JSON.stringify(channel.models),
  model_map: JSON.stringify(channel.modelMap),
  groups: JSON.stringify(channel.groups),
  priority: channel.priority,
  weight: channel.weight,
  enabled: channel.enabled,
  headers: JSON.stringify(channel.headers),
  timeouts: JSON.stringify(channel.timeouts),
  api_version: channel.apiVersion,
  breaker: JSON.stringify(channel.breaker),
  params: JSON.stringify(channel.params),
  stream_options: channel.streamOptions,
  responses: channel.responses ?? false
})

/** Headers a channel may not set: the HTTP client owns framing and the connection. */
const RESERVED_HEADERS = new Set(["host", "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade", "te", "trailer"])

/** Request fields the gateway owns, which `params` may not set. */
const RESERVED_PARAMS: Readonly<Record<string, string>> = {
  model: "the model is chosen by the call and the channel's model_map",
  stream: "streaming is the client's choice",
  stream_options: "use the channel's stream_options switch"
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

/**
 * Checks a channel: a known type, an http(s) base URL, a weight of 0 or more
 * (0: tried only after the others of its tier), sane timeouts and breaker
 * settings, valid extra headers, and parameters that leave the gateway's own
 * fields alone. `path` prefixes the field names in messages (`channels[2]`);
 * empty for none.
 *
 * @category validation
 */
export const validateChannel = (channel: ChannelInput, path: string): Effect.Effect<void, InvalidInput> => {
  const fail = (field: string, message: string) => {
    const at = path === "" ? field : `${path}.${field}`
    return Effect.fail(new InvalidInput({ path: at, message: `${at}: ${message}` }))
  }
  if (channel.name.trim().length === 0) return fail("name", "a channel needs a name")
  if (!["openai", "gemini", "anthropic", "azure"].includes(channel.type)) {
    return fail("type", `expected one of openai, gemini, anthropic, azure, got '${channel.type}'`)
  }
  if (!URL.canParse(channel.baseUrl) || !/^https?:$/.test(new URL(channel.baseUrl).protocol)) {
    return fail("baseUrl", `expected an http(s) URL, got '${channel.baseUrl}'`)
  }
  if (channel.responses === true && channel.type !== "openai") {
    return fail("responses", `only an openai channel can relay Responses API calls (this one is ${channel.type})`)
  }
  if (!Number.isInteger(channel.weight) || channel.weight < 0) return fail("weight", "expected an integer of 0 or more")
  if (!Number.isInteger(channel.priority)) return fail("priority", "expected an integer")
  for (const name of ["connectMs", "firstByteMs", "idleMs", "totalMs"] as const) {
    const value = channel.timeouts[name]
    if (!Number.isInteger(value) || value <= 0) return fail(`timeouts.${name}`, "expected a positive whole number of milliseconds")
  }
  for (const name of ["consecutiveFailures", "minimumCalls", "windowMs", "cooldownMs", "halfOpenCalls"] as const) {
    const value = channel.breaker[name]
    if (!Number.isInteger(value) || value <= 0) return fail(`breaker.${name}`, "expected a positive whole number")
  }
  const rate = channel.breaker.failureRate
  if (!Number.isFinite(rate) || rate <= 0 || rate > 1) return fail("breaker.failureRate", `expected a fraction above 0 and at most 1, got ${rate}`)
  for (const [name, value] of Object.entries(channel.headers)) {
    if (!TOKEN.test(name)) return fail(`headers.${name}`, "not a valid header name")
    if (RESERVED_HEADERS.has(name.toLowerCase())) return fail(`headers.${name}`, "this header is managed by the gateway's HTTP client")
    if (/[\r\n\0]/.test(value)) return fail(`headers.${name}`, "a header value may not contain line breaks")
  }
  for (const part of ["defaults", "overrides"] as const) {
    for (const name of Object.keys(channel.params[part])) {
      const reason = RESERVED_PARAMS[name]
      if (reason !== undefined) return fail(`params.${part}.${name}`, `may not be set here: ${reason}`)
    }
  }
  return Effect.void
}

/**
 * The catalog repository.
 *
 * @category services
 */
export class CatalogRepo extends Context.Service<CatalogRepo, {
  /** Models and channels by name, groups by name, aliases in position order; channel keys decrypted. */
  readonly load: Effect.Effect<CatalogData, SecretError | SqlError.SqlError>
  /** Inserts or replaces a model by id. */
  readonly upsertModel: (model: Domain.Model, source?: Source) => Effect.Effect<void, SqlError.SqlError>
  readonly deleteModel: (id: string) => Effect.Effect<void, GatewayError.ResourceNotFound | SqlError.SqlError>
  readonly upsertGroup: (group: GroupInput, source?: Source) => Effect.Effect<void, SqlError.SqlError>
  readonly deleteGroup: (name: string) => Effect.Effect<void, GatewayError.ResourceNotFound | SqlError.SqlError>
  /** Inserts or replaces a channel by name; returns its id. */
  readonly upsertChannel: (channel: ChannelInput, source?: Source) => Effect.Effect<string, InvalidInput | SqlError.SqlError>
  readonly deleteChannel: (name: string) => Effect.Effect<void, GatewayError.ResourceNotFound | SqlError.SqlError>
  /** Sets an alias; `position` orders matching (lower first; default: after the last). */
  readonly setAlias: (alias: Domain.Alias, position?: number) => Effect.Effect<void, SqlError.SqlError>
  readonly deleteAlias: (pattern: string) => Effect.Effect<void, GatewayError.ResourceNotFound | SqlError.SqlError>
}>()("modelgate/store/CatalogRepo") {
  /** @category layers */
  static readonly layer = Layer.effect(
    CatalogRepo,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const secrets = yield* Secrets

      const gone = (what: string) => (rows: ReadonlyArray<unknown>) =>
        rows.length === 0 ? Effect.fail(new GatewayError.ResourceNotFound({ message: `No ${what}.` })) : Effect.void

      const decodeChannel = Effect.fnUntraced(function*(row: Record<string, unknown>) {
        const apiKeys = yield* Effect.forEach(Row.stringArray(row.api_keys_enc, "channels.api_keys_enc"), secrets.decrypt)
        const type = Row.str(row.type, "channels.type") as Domain.ChannelType
        return {
          id: Row.str(row.id, "channels.id"),
          name: Row.str(row.name, "channels.name"),
          type,
          baseUrl: Row.str(row.base_url, "channels.base_url"),
          apiKeys,
          models: Row.stringArray(row.models, "channels.models"),
          modelMap: Row.stringRecord(row.model_map, "channels.model_map"),
          groups: Row.stringArray(row.groups, "channels.groups"),
          priority: Row.int(row.priority, "channels.priority"),
          weight: Row.int(row.weight, "channels.weight"),
          enabled: Row.bool(row.enabled, "channels.enabled"),
          headers: Row.stringRecord(row.headers, "channels.headers"),
          timeouts: decodeTimeouts(row.timeouts),
          apiVersion: Row.strOrNull(row.api_version, "channels.api_version"),
          breaker: decodeBreaker(row.breaker),
          params: decodeParams(row.params),
          streamOptions: Row.bool(row.stream_options, "channels.stream_options"),
          responses: Row.bool(row.responses, "channels.responses")
        } satisfies Domain.Channel
      })

      const load = Effect.gen(function*() {
        const models = (yield* sql`SELECT * FROM models ORDER BY id`).map(decodeModel)
        const groups = (yield* sql`SELECT * FROM groups ORDER BY name`).map(decodeGroup)
        const channels = yield* Effect.forEach(yield* sql`SELECT * FROM channels ORDER BY name`, decodeChannel)
        const aliases = (yield* sql`SELECT pattern, target FROM aliases ORDER BY position, pattern`).map((row) => ({
          pattern: Row.str(row.pattern, "aliases.pattern"),
          target: Row.str(row.target, "aliases.target")
        }))
        return { models, groups, channels, aliases }
      }).pipe(Effect.withSpan("CatalogRepo.load"))

      const upsertChannel = Effect.fn("CatalogRepo.upsertChannel")(function*(channel: ChannelInput, source: Source = "console") {
        yield* validateChannel(channel, "channel")
        const encrypted = JSON.stringify(yield* Effect.forEach(channel.apiKeys, secrets.encrypt))
        const now = yield* Clock.currentTimeMillis
        return yield* sql.withTransaction(Effect.gen(function*() {
          const existing = yield* sql`SELECT id FROM channels WHERE name = ${channel.name}`
          if (existing[0] !== undefined) {
            const id = Row.str(existing[0].id, "channels.id")
            yield* sql`UPDATE channels SET ${
              sql.update({ ...channelColumns(channel), api_keys_enc: encrypted, source, updated_at: now })
            } WHERE id = ${id}`
            return id
          }
          const id = newId("chn")
          yield* sql`INSERT INTO channels ${
            sql.insert({
              id,
              name: channel.name,
              ...channelColumns(channel),
              api_keys_enc: encrypted,
              source,
              created_at: now,
              updated_at: now
            })
          }`
          return id
        }))
      })

      return CatalogRepo.of({
        load,
        upsertModel: (model, source = "console") =>
          Effect.asVoid(sql`INSERT INTO models ${sql.insert({ id: model.id, ...modelColumns(model), source })}
            ON CONFLICT (id) DO UPDATE SET ${sql.update({ ...modelColumns(model), source })}`),
        deleteModel: (id) => Effect.flatMap(sql`DELETE FROM models WHERE id = ${id} RETURNING id`, gone(`model '${id}'`)),
        upsertGroup: (group, source = "console") =>
          Effect.asVoid(sql`INSERT INTO groups ${sql.insert({ name: group.name, ...groupColumns(group), source })}
            ON CONFLICT (name) DO UPDATE SET ${sql.update({ ...groupColumns(group), source })}`),
        deleteGroup: (name) => Effect.flatMap(sql`DELETE FROM groups WHERE name = ${name} RETURNING name`, gone(`group '${name}'`)),
        upsertChannel,
        deleteChannel: (name) =>
          Effect.flatMap(sql`DELETE FROM channels WHERE name = ${name} RETURNING id`, gone(`channel '${name}'`)),
        setAlias: (alias, position) =>
          Effect.gen(function*() {
            const at = position ??
              Row.int((yield* sql`SELECT COALESCE(MAX(position), -1) + 1 AS next FROM aliases`)[0]!.next, "aliases.position")
            yield* sql`INSERT INTO aliases ${sql.insert({ pattern: alias.pattern, target: alias.target, position: at })}
              ON CONFLICT (pattern) DO UPDATE SET ${sql.update({ target: alias.target, position: at })}`
          }),
        deleteAlias: (pattern) =>
          Effect.flatMap(sql`DELETE FROM aliases WHERE pattern = ${pattern} RETURNING pattern`, gone(`alias '${pattern}'`))
      })
    })
  )
}
