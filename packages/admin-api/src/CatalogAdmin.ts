/**
 * Editing the catalog tables (models, groups, channels) from the console, as
 * SQL over `SqlClient`. Column formats follow the store's migration: money in
 * nano-dollar BIGINTs, ratios in millionths, JSON text for lists and maps,
 * channel upstream keys as a JSON array of `Secrets.encrypt` blobs. Upstream
 * keys are write-only: reads return a count and the last 4 characters.
 *
 * After every write the caller announces `Invalidation.invalidate("catalog")`
 * so the gateway's in-memory catalog reloads.
 *
 * @since 0.1.0
 */
import { ChannelHealth, Domain, Money } from "@modelgate/core"
import { channelColumns, decodeBreaker, decodeParams, decodeTimeouts, validateChannel } from "@modelgate/store/CatalogRepo"
import { Secrets } from "@modelgate/store/Secrets"
import { Clock, Effect } from "effect"
import { SqlClient, SqlError } from "effect/sql"
import * as ApiError from "./ApiError.ts"
import type * as C from "./Contract.ts"

const big = (value: unknown): bigint =>
  typeof value === "bigint" ? value : typeof value === "number" ? BigInt(Math.trunc(value)) : BigInt(String(value ?? 0))
const bigOrNull = (value: unknown): bigint | null => value === null || value === undefined ? null : big(value)
const int = (value: unknown): number => typeof value === "number" ? value : Number(value ?? 0)
const intOrNull = (value: unknown): number | null => value === null || value === undefined ? null : int(value)
const str = (value: unknown): string => String(value)
const bool = (value: unknown): boolean => value === true || value === 1 || value === 1n || value === "t"
const source = (value: unknown): "config" | "console" => value === "config" ? "config" : "console"
const jsonArray = (value: unknown): ReadonlyArray<string> => {
  const parsed: unknown = JSON.parse(String(value ?? "[]"))
  return Array.isArray(parsed) ? parsed.map(String) : []
}
const jsonRecord = (value: unknown): Record<string, string> => {
  const parsed: unknown = JSON.parse(String(value ?? "{}"))
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return {}
  return Object.fromEntries(Object.entries(parsed).map(([k, v]) => [k, String(v)]))
}

/** The default channel timeouts in milliseconds: core's, the one source of them. @category constants */
export const defaultTimeouts: Domain.ChannelTimeouts = Domain.defaultTimeouts

/** Default token limits of a model created without them. @category constants */
export const defaultTokenLimits = { input: 128_000, output: 8_192 } as const

/**
 * Whether an error is a unique-constraint violation (PostgreSQL reports
 * `UniqueViolation`; the SQLite driver a `ConstraintError` naming UNIQUE).
 *
 * @category errors
 */
export const isUniqueViolation = (error: unknown): boolean =>
  SqlError.isSqlError(error) &&
  (error.reason._tag === "UniqueViolation" ||
    (error.reason._tag === "ConstraintError" && /UNIQUE/i.test(String((error.reason as { cause?: unknown }).cause))))

const uniqueAsConflict = (message: string) => <A, E, R>(self: Effect.Effect<A, E | SqlError.SqlError, R>) =>
  Effect.catchIf(
    self,
    (error): error is SqlError.SqlError => isUniqueViolation(error),
    () => Effect.fail(ApiError.conflict(message))
  )

// ---------------------------------------------------------------------------
// Prices and ratios
// ---------------------------------------------------------------------------

/**
 * A ratio string (`"0.8"`) to millionths (800000). Like the configuration
 * file, it refuses a ratio of 0 or below: a free group is made with models
 * marked `free`, not with a ratio that silently zeroes every price.
 *
 * @category conversions
 */
export const ratioToMicros = (ratio: string, param = "ratio"): Effect.Effect<bigint, ApiError.ApiError> => {
  const micros = Money.parseScaled(ratio, 6)
  return micros === undefined || micros <= 0n
    ? Effect.fail(ApiError.invalid(`${param}: expected a positive ratio like 1 or 0.8 with at most 6 decimal places, got '${ratio}'`, param))
    : Effect.succeed(micros)
}

/** Millionths to a ratio string. @category conversions */
export const microsToRatio = (micros: bigint): string => Money.formatScaled(micros, 6)

const usdOrNull = (nanos: bigint | null): string | null => nanos === null ? null : Money.formatUsd(nanos)

const parseUsd = (value: string | null, param: string): Effect.Effect<bigint | null, ApiError.ApiError> => {
  if (value === null) return Effect.succeed(null)
  const nanos = Money.usdToNanos(value)
  return nanos === undefined || nanos < 0n || nanos > Money.MAX_NANOS
    ? Effect.fail(ApiError.invalid(`${param}: expected a non-negative USD amount, got '${value}'`, param))
    : Effect.succeed(nanos)
}

/**
 * A model's prices as the API shows them, multiplied by a group's ratio
 * (rounded up to a whole nano-dollar, as charges are).
 *
 * @category conversions
 */
export const pricesOf = (model: Domain.Model, ratioMicros = 1_000_000n): C.Prices => {
  const apply = (nanos: bigint | null) => nanos === null ? null : Money.formatUsd(Money.divCeil(nanos * ratioMicros, 1_000_000n))
  return {
    input: apply(model.inputNanosPerMillion),
    output: apply(model.outputNanosPerMillion),
    cachedInput: apply(model.cachedInputNanosPerMillion),
    cacheWrite: apply(model.cacheWriteNanosPerMillion ?? null),
    perRequest: apply(model.perRequestNanos),
    free: model.free
  }
}

// ---------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------

const decodeModel = (row: Record<string, unknown>): C.AdminModel => ({
  id: str(row.id),
  displayName: str(row.display_name),
  prices: {
    input: usdOrNull(bigOrNull(row.input_nanos_per_million)),
    output: usdOrNull(bigOrNull(row.output_nanos_per_million)),
    cachedInput: usdOrNull(bigOrNull(row.cached_input_nanos_per_million)),
    cacheWrite: usdOrNull(bigOrNull(row.cache_write_nanos_per_million)),
    perRequest: usdOrNull(bigOrNull(row.per_request_nanos)),
    free: bool(row.free)
  },
  inputTokenLimit: int(row.input_token_limit),
  outputTokenLimit: int(row.output_token_limit),
  description: row.description === null || row.description === undefined ? null : str(row.description),
  embedding: bool(row.embedding),
  reasoning: bool(row.reasoning),
  reasoningContent: bool(row.reasoning_content),
  source: source(row.source)
})

/** All models, by id. @category models */
export const listModels = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`SELECT * FROM models ORDER BY id`
  return rows.map(decodeModel)
})

/** Creates or replaces a model. @category models */
export const upsertModel = Effect.fnUntraced(function*(input: C.UpsertModelRequest) {
  const sql = yield* SqlClient.SqlClient
  const row = {
    display_name: input.displayName ?? input.id,
    input_nanos_per_million: yield* parseUsd(input.prices.input, "prices.input"),
    output_nanos_per_million: yield* parseUsd(input.prices.output, "prices.output"),
    cached_input_nanos_per_million: yield* parseUsd(input.prices.cachedInput, "prices.cachedInput"),
    // Left out, the cache-write price stays as it was (older clients do not know the field).
    ...(input.prices.cacheWrite !== undefined
      ? { cache_write_nanos_per_million: yield* parseUsd(input.prices.cacheWrite, "prices.cacheWrite") }
      : {}),
    per_request_nanos: yield* parseUsd(input.prices.perRequest, "prices.perRequest"),
    free: input.prices.free,
    input_token_limit: input.inputTokenLimit ?? defaultTokenLimits.input,
    output_token_limit: input.outputTokenLimit ?? defaultTokenLimits.output,
    ...(input.description !== undefined ? { description: input.description } : {}),
    ...(input.embedding !== undefined ? { embedding: input.embedding } : {}),
    ...(input.reasoning !== undefined ? { reasoning: input.reasoning } : {}),
    ...(input.reasoningContent !== undefined ? { reasoning_content: input.reasoningContent } : {}),
    source: "console"
  }
  const existing = yield* sql`SELECT id FROM models WHERE id = ${input.id}`
  if (existing.length === 0) yield* sql`INSERT INTO models ${sql.insert({ id: input.id, ...row })}`
  else yield* sql`UPDATE models SET ${sql.update(row)} WHERE id = ${input.id}`
  const rows = yield* sql`SELECT * FROM models WHERE id = ${input.id}`
  return decodeModel(rows[0]!)
})

/** Deletes a model. @category models */
export const deleteModel = Effect.fnUntraced(function*(id: string) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`DELETE FROM models WHERE id = ${id} RETURNING id`
  if (rows.length === 0) return yield* ApiError.notFound(`No model '${id}'.`)
})

// ---------------------------------------------------------------------------
// Groups
// ---------------------------------------------------------------------------

/** All groups with their assigned users' names. @category groups */
export const listGroups = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`SELECT * FROM groups ORDER BY name`
  const members = yield* sql`SELECT g.group_name, u.name FROM user_groups g JOIN users u ON u.id = g.user_id ORDER BY u.name`
  const byGroup = new Map<string, Array<string>>()
  for (const m of members) {
    const list = byGroup.get(str(m.group_name)) ?? []
    list.push(str(m.name))
    byGroup.set(str(m.group_name), list)
  }
  return rows.map((row): C.AdminGroup => ({
    name: str(row.name),
    ratio: microsToRatio(big(row.ratio_micros)),
    limits: { rpm: intOrNull(row.rpm), tpm: intOrNull(row.tpm), concurrency: intOrNull(row.concurrency) },
    selectable: bool(row.selectable),
    users: byGroup.get(str(row.name)) ?? [],
    source: source(row.source)
  }))
})

const findGroup = (name: string) =>
  Effect.flatMap(listGroups, (groups) => {
    const group = groups.find((g) => g.name === name)
    return group === undefined ? Effect.fail(ApiError.notFound(`No group '${name}'.`)) : Effect.succeed(group)
  })

/** Creates a group. @category groups */
export const createGroup = Effect.fnUntraced(function*(input: C.CreateGroupRequest) {
  const sql = yield* SqlClient.SqlClient
  const ratioMicros = yield* ratioToMicros(input.ratio)
  yield* sql`INSERT INTO groups ${
    sql.insert({
      name: input.name,
      ratio_micros: ratioMicros,
      rpm: input.limits?.rpm ?? null,
      tpm: input.limits?.tpm ?? null,
      concurrency: input.limits?.concurrency ?? null,
      selectable: input.selectable ?? false,
      source: "console"
    })
  }`.pipe(uniqueAsConflict(`A group named '${input.name}' already exists.`))
  return yield* findGroup(input.name)
})

/** Changes a group (and, with `userIds`, who it is assigned to). @category groups */
export const updateGroup = Effect.fnUntraced(function*(name: string, input: C.UpdateGroupRequest) {
  const sql = yield* SqlClient.SqlClient
  yield* findGroup(name)
  const changes: Record<string, unknown> = {}
  if (input.ratio !== undefined) changes.ratio_micros = yield* ratioToMicros(input.ratio)
  if (input.limits !== undefined) {
    changes.rpm = input.limits.rpm
    changes.tpm = input.limits.tpm
    changes.concurrency = input.limits.concurrency
  }
  if (input.selectable !== undefined) changes.selectable = input.selectable
  yield* sql.withTransaction(Effect.gen(function*() {
    if (Object.keys(changes).length > 0) yield* sql`UPDATE groups SET ${sql.update(changes)} WHERE name = ${name}`
    if (input.userIds !== undefined) {
      const ids = [...new Set(input.userIds)]
      if (ids.length > 0) {
        const known = yield* sql`SELECT id FROM users WHERE ${sql.in("id", ids)}`
        const knownIds = new Set(known.map((row) => str(row.id)))
        const index = ids.findIndex((id) => !knownIds.has(id))
        if (index !== -1) return yield* ApiError.invalid(`userIds[${index}]: no user with id '${ids[index]}'`, `userIds[${index}]`)
      }
      yield* sql`DELETE FROM user_groups WHERE group_name = ${name}`
      for (const userId of ids) {
        yield* sql`INSERT INTO user_groups ${sql.insert({ user_id: userId, group_name: name })}`
      }
    }
  }))
  return yield* findGroup(name)
})

/** Deletes a group that no key uses. @category groups */
export const deleteGroup = Effect.fnUntraced(function*(name: string) {
  const sql = yield* SqlClient.SqlClient
  yield* findGroup(name)
  const used = yield* sql`SELECT COUNT(*) AS n FROM api_keys WHERE group_name = ${name}`
  const n = int(used[0]?.n)
  if (n > 0) return yield* ApiError.conflict(`The group '${name}' is used by ${n} API key(s); move or delete them first.`)
  yield* sql`DELETE FROM user_groups WHERE group_name = ${name}`
  yield* sql`DELETE FROM groups WHERE name = ${name}`
})

// ---------------------------------------------------------------------------
// Channels
// ---------------------------------------------------------------------------

/** Header names whose values are credentials: shown as a hint, like upstream keys. */
const SECRET_HEADER = /authorization|cookie|key|token|secret|password|signature/i

const hintOf = (key: string): string => `…${key.slice(-4)}`

/** A header value as the API shows it: credential-like values as a hint. @category channels */
export const shownHeader = (name: string, value: string): string => SECRET_HEADER.test(name) ? hintOf(value) : value

/** A channel row as core's `Domain.Channel` (keys as given). */
const channelOf = (row: Record<string, unknown>, apiKeys: ReadonlyArray<string>): Domain.Channel => ({
  id: str(row.id),
  name: str(row.name),
  type: str(row.type) as C.ChannelType,
  baseUrl: str(row.base_url),
  apiKeys,
  models: jsonArray(row.models),
  modelMap: jsonRecord(row.model_map),
  groups: jsonArray(row.groups),
  priority: int(row.priority),
  weight: int(row.weight),
  enabled: bool(row.enabled),
  headers: jsonRecord(row.headers),
  timeouts: decodeTimeouts(row.timeouts),
  apiVersion: row.api_version === null || row.api_version === undefined ? null : str(row.api_version),
  breaker: decodeBreaker(row.breaker),
  params: decodeParams(row.params),
  streamOptions: bool(row.stream_options),
  responses: bool(row.responses)
})

const viewOf = Effect.fnUntraced(function*(row: Record<string, unknown>) {
  const blobs = jsonArray(row.api_keys_enc)
  const keys = yield* Effect.option(decryptKeys(row))
  const channel = channelOf(row, keys._tag === "Some" ? keys.value : [])
  const health = keys._tag === "Some"
    ? yield* (yield* ChannelHealth.ChannelHealth).report(channel)
    : undecryptable(blobs.length)
  const hints = keys._tag === "Some" ? keys.value.map(hintOf) : blobs.map(() => "????")
  return {
    id: channel.id,
    name: channel.name,
    type: channel.type,
    baseUrl: channel.baseUrl,
    keyCount: hints.length,
    keyHints: hints,
    models: channel.models,
    modelMap: channel.modelMap,
    groups: channel.groups,
    priority: channel.priority,
    weight: channel.weight,
    enabled: channel.enabled,
    apiVersion: channel.apiVersion,
    headers: Object.fromEntries(Object.entries(channel.headers).map(([name, value]) => [name, shownHeader(name, value)])),
    timeouts: channel.timeouts,
    breaker: channel.breaker,
    params: channel.params,
    streamOptions: channel.streamOptions,
    responses: channel.responses === true,
    health,
    source: source(row.source),
    createdAt: int(row.created_at)
  } satisfies C.AdminChannel
})

/** Keys that no longer decrypt (the server secret changed) are counted, and reported as unusable. */
const undecryptable = (count: number): C.ChannelHealth => ({
  state: "disabled",
  keys: Array.from({ length: count }, (_, index) => ({
    ...ChannelHealth.unseenKey(index, "????"),
    state: "disabled" as const,
    reason: "The key cannot be decrypted with this server's secret; enter it again."
  }))
})

const decryptKeys = Effect.fnUntraced(function*(row: Record<string, unknown>) {
  const secrets = yield* Secrets
  return yield* Effect.forEach(jsonArray(row.api_keys_enc), (blob) => secrets.decrypt(blob))
})

/** All channels (upstream keys as hints only), with their health. @category channels */
export const listChannels = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`SELECT * FROM channels ORDER BY priority DESC, name`
  return yield* Effect.forEach(rows, viewOf)
})

const channelRow = Effect.fnUntraced(function*(id: string) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`SELECT * FROM channels WHERE id = ${id}`
  const row = rows[0]
  if (row === undefined) return yield* ApiError.notFound(`No channel with id '${id}'.`)
  return row
})

/** One channel (upstream keys as hints only), with its health. @category channels */
export const getChannel = (id: string) => Effect.flatMap(channelRow(id), viewOf)

/** One channel as the gateway uses it, with its upstream keys decrypted (for the Test button and resets). @category channels */
export const channelForProbe = Effect.fnUntraced(function*(id: string) {
  const row = yield* channelRow(id)
  return channelOf(row, yield* decryptKeys(row))
})

/** Closes a channel's breakers and re-enables its disabled keys. @category channels */
export const resetChannel = Effect.fnUntraced(function*(id: string) {
  const channel = yield* channelForProbe(id)
  yield* (yield* ChannelHealth.ChannelHealth).reset(channel)
  return yield* getChannel(id)
})

const encryptAll = Effect.fnUntraced(function*(keys: ReadonlyArray<string>) {
  const secrets = yield* Secrets
  const blobs = yield* Effect.forEach(keys, (key) => secrets.encrypt(key.trim()))
  return JSON.stringify(blobs)
})

const checkModelMap = (models: ReadonlyArray<string>, modelMap: Readonly<Record<string, string>> | undefined) => {
  for (const name of Object.keys(modelMap ?? {})) {
    if (!models.includes(name)) {
      return Effect.fail(ApiError.invalid(`modelMap.${name}: '${name}' is not one of the channel's models`, `modelMap.${name}`))
    }
  }
  return Effect.void
}

/** Headers as given, except that a masked value read back unchanged keeps the stored value. */
const mergeHeaders = (given: Readonly<Record<string, string>>, stored: Readonly<Record<string, string>>): Record<string, string> =>
  Object.fromEntries(Object.entries(given).map(([name, value]) => {
    const kept = stored[name]
    return [name, kept !== undefined && SECRET_HEADER.test(name) && value === hintOf(kept) ? kept : value]
  }))

/** The routing settings of a request applied over a channel's current (or default) ones. */
const routingOf = (
  input: C.UpdateChannelRequest,
  current: Pick<Domain.Channel, "headers" | "timeouts" | "breaker" | "params" | "streamOptions">
) => ({
  headers: input.headers === undefined ? current.headers : mergeHeaders(input.headers, current.headers),
  timeouts: { ...current.timeouts, ...input.timeouts },
  breaker: { ...current.breaker, ...input.breaker },
  params: { ...current.params, ...input.params },
  streamOptions: input.streamOptions ?? current.streamOptions
})

/** Validates a channel as the gateway will use it (the same rules as the configuration file). */
const validate = (channel: Omit<Domain.Channel, "id">) => validateChannel(channel, "")

/**
 * Creates a channel. An Azure channel without `apiVersion` uses the default,
 * as in the configuration file.
 *
 * @category channels
 */
export const createChannel = Effect.fnUntraced(function*(input: C.CreateChannelRequest) {
  const sql = yield* SqlClient.SqlClient
  yield* checkModelMap(input.models, input.modelMap)
  const routing = routingOf(input, Domain.channelDefaults)
  const apiKeys = input.apiKeys.map((key) => key.trim())
  const channel: Omit<Domain.Channel, "id"> = {
    name: input.name,
    type: input.type,
    baseUrl: input.baseUrl.replace(/\/+$/, ""),
    apiKeys,
    models: input.models,
    modelMap: input.modelMap ?? {},
    groups: input.groups ?? ["default"],
    priority: input.priority ?? 0,
    weight: input.weight ?? 1,
    enabled: input.enabled ?? true,
    apiVersion: input.apiVersion ?? null,
    responses: input.responses ?? false,
    ...routing
  }
  yield* validate(channel)
  const now = yield* Clock.currentTimeMillis
  const id = `chn_${crypto.randomUUID().replaceAll("-", "").slice(0, 20)}`
  yield* sql`INSERT INTO channels ${
    sql.insert({
      id,
      name: channel.name,
      api_keys_enc: yield* encryptAll(apiKeys),
      ...channelColumns(channel),
      source: "console",
      created_at: now,
      updated_at: now
    })
  }`.pipe(uniqueAsConflict(`A channel named '${input.name}' already exists.`))
  return yield* getChannel(id)
})

/** Changes a channel; `apiKeys`, when given, replaces every upstream key. @category channels */
export const updateChannel = Effect.fnUntraced(function*(id: string, input: C.UpdateChannelRequest) {
  const sql = yield* SqlClient.SqlClient
  const row = yield* channelRow(id)
  const current = channelOf(row, [])
  yield* checkModelMap(input.models ?? current.models, input.modelMap ?? current.modelMap)
  const routing = routingOf(input, current)
  const next: Omit<Domain.Channel, "id"> = {
    ...current,
    ...(input.name !== undefined ? { name: input.name } : {}),
    ...(input.type !== undefined ? { type: input.type } : {}),
    ...(input.baseUrl !== undefined ? { baseUrl: input.baseUrl.replace(/\/+$/, "") } : {}),
    ...(input.models !== undefined ? { models: input.models } : {}),
    ...(input.modelMap !== undefined ? { modelMap: input.modelMap } : {}),
    ...(input.groups !== undefined ? { groups: input.groups } : {}),
    ...(input.priority !== undefined ? { priority: input.priority } : {}),
    ...(input.weight !== undefined ? { weight: input.weight } : {}),
    ...(input.enabled !== undefined ? { enabled: input.enabled } : {}),
    ...(input.apiVersion !== undefined ? { apiVersion: input.apiVersion } : {}),
    ...(input.responses !== undefined ? { responses: input.responses } : {}),
    ...routing
  }
  yield* validate(next)
  const changes: Record<string, unknown> = { updated_at: yield* Clock.currentTimeMillis }
  if (input.name !== undefined) changes.name = input.name
  if (input.type !== undefined) changes.type = input.type
  if (input.baseUrl !== undefined) changes.base_url = next.baseUrl
  if (input.models !== undefined) changes.models = JSON.stringify(input.models)
  if (input.modelMap !== undefined) changes.model_map = JSON.stringify(input.modelMap)
  if (input.groups !== undefined) changes.groups = JSON.stringify(input.groups)
  if (input.priority !== undefined) changes.priority = input.priority
  if (input.weight !== undefined) changes.weight = input.weight
  if (input.enabled !== undefined) changes.enabled = input.enabled
  if (input.apiVersion !== undefined) changes.api_version = input.apiVersion
  if (input.headers !== undefined) changes.headers = JSON.stringify(next.headers)
  if (input.timeouts !== undefined) changes.timeouts = JSON.stringify(next.timeouts)
  if (input.breaker !== undefined) changes.breaker = JSON.stringify(next.breaker)
  if (input.params !== undefined) changes.params = JSON.stringify(next.params)
  if (input.streamOptions !== undefined) changes.stream_options = input.streamOptions
  if (input.responses !== undefined) changes.responses = input.responses
  if (input.apiKeys !== undefined) changes.api_keys_enc = yield* encryptAll(input.apiKeys)
  yield* sql`UPDATE channels SET ${sql.update(changes)} WHERE id = ${id}`.pipe(
    uniqueAsConflict(`A channel named '${input.name}' already exists.`)
  )
  return yield* getChannel(id)
})

/** Deletes a channel (the record of its disabled keys goes with it). @category channels */
export const deleteChannel = Effect.fnUntraced(function*(id: string) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`DELETE FROM channels WHERE id = ${id} RETURNING id`
  if (rows.length === 0) return yield* ApiError.notFound(`No channel with id '${id}'.`)
})
