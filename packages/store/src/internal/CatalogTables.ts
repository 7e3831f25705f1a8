/**
 * Every statement that reads or writes the catalog tables (models, groups and
 * their members, channels, aliases), in one place: the catalog repository
 * serves the gateway and the management API with them, and provisioning
 * applies the configuration file with the same statements (inside its own
 * transaction), so a column is encoded and decoded exactly once.
 *
 * Column formats: money in nano-dollar BIGINTs, ratios in millionths, lists
 * and maps as JSON text. A channel's upstream keys are a JSON array of
 * `Secrets.encrypt` blobs; its extra headers (which often carry credentials:
 * `authorization`, `x-api-key`, cookies) are one `Secrets.encrypt` blob of
 * their JSON object. Rows written before headers were encrypted hold the
 * plain JSON object; they are read as they are and encrypted by
 * `encryptLegacyHeaders`.
 *
 * @since 0.1.0
 */
import { Credentials, Domain, Text } from "@modelgate/core"
import { Clock, Effect } from "effect"
import type { SqlClient, SqlError } from "effect/sql"
import type { SecretError, Secrets } from "../Secrets.ts"
import { InvalidInput } from "../StoreError.ts"
import { norm } from "./Declared.ts"
import { newId } from "./random.ts"
import * as Row from "./row.ts"

/** Where a catalog row came from. */
export type Source = "config" | "console"

/** What a provisioning step did to one row. */
export type SyncOutcome = "created" | "updated" | "skipped" | "unchanged"

/** A group and whether users may pick it for their own keys. */
export interface GroupInput extends Domain.Group {
  readonly selectable: boolean
}

/** A channel to store; `apiKeys` and `headers` in plain text (encrypted here). */
export type ChannelInput = Omit<Domain.Channel, "id">

/** A stored channel: the channel with its secrets decrypted, or, when they cannot be, none of them. */
export interface ChannelRow {
  readonly channel: Domain.Channel
  /** False when the upstream keys or headers do not decrypt with this server's secret. */
  readonly readable: boolean
  /** How many upstream keys are stored (also when they cannot be read). */
  readonly keyCount: number
  readonly source: Source
  readonly createdAt: number
}

// ---------------------------------------------------------------------------
// Decoding and encoding of rows
// ---------------------------------------------------------------------------

const source = (value: unknown, column: string): Source => Row.str(value, column) === "config" ? "config" : "console"

const MEDIA_KINDS: ReadonlyArray<Domain.MediaKind> = ["image", "audio", "video", "document", "file"]

/** `models.media_part_tokens` (JSON; NULL: every kind at its default) as a model's `mediaPartTokens`. */
const decodeMediaPartTokens = (value: unknown): Domain.MediaPartTokens | undefined => {
  if (value === null || value === undefined) return undefined
  const parsed = jsonObject(value, "models.media_part_tokens")
  const out: { -readonly [K in Domain.MediaKind]?: number } = {}
  for (const kind of MEDIA_KINDS) {
    const tokens = parsed[kind]
    if (typeof tokens === "number" && Number.isSafeInteger(tokens) && tokens >= 0) out[kind] = tokens
  }
  return Object.keys(out).length === 0 ? undefined : out
}

/** A model's `mediaPartTokens` for its column: the kinds it sets, or NULL. */
const encodeMediaPartTokens = (tokens: Domain.MediaPartTokens | undefined): string | null => {
  if (tokens === undefined) return null
  const set = MEDIA_KINDS.filter((kind) => tokens[kind] !== undefined)
  return set.length === 0 ? null : JSON.stringify(Object.fromEntries(set.map((kind) => [kind, tokens[kind]])))
}

/** A `models` row as core's `Domain.Model`. */
export const decodeModel = (row: Record<string, unknown>): Domain.Model => {
  const description = Row.strOrNull(row.description, "models.description")
  const mediaPartTokens = decodeMediaPartTokens(row.media_part_tokens)
  return {
    id: Row.str(row.id, "models.id"),
    displayName: Row.str(row.display_name, "models.display_name"),
    inputNanosPerMillion: Row.bigOrNull(row.input_nanos_per_million, "models.input_nanos_per_million"),
    outputNanosPerMillion: Row.bigOrNull(row.output_nanos_per_million, "models.output_nanos_per_million"),
    cachedInputNanosPerMillion: Row.bigOrNull(
      row.cached_input_nanos_per_million,
      "models.cached_input_nanos_per_million"
    ),
    cacheWriteNanosPerMillion: Row.bigOrNull(row.cache_write_nanos_per_million, "models.cache_write_nanos_per_million"),
    perRequestNanos: Row.bigOrNull(row.per_request_nanos, "models.per_request_nanos"),
    free: Row.bool(row.free, "models.free"),
    inputTokenLimit: Row.int(row.input_token_limit, "models.input_token_limit"),
    outputTokenLimit: Row.int(row.output_token_limit, "models.output_token_limit"),
    ...(description === null ? {} : { description }),
    embedding: Row.bool(row.embedding, "models.embedding"),
    reasoning: Row.bool(row.reasoning, "models.reasoning"),
    reasoningContent: Row.bool(row.reasoning_content, "models.reasoning_content"),
    ...(mediaPartTokens === undefined ? {} : { mediaPartTokens })
  }
}

const modelColumns = (model: Domain.Model) => ({
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
  reasoning_content: model.reasoningContent ?? false,
  media_part_tokens: encodeMediaPartTokens(model.mediaPartTokens)
})

/** A `groups` row as core's `Domain.Group` with its `selectable` flag. */
export const decodeGroup = (row: Record<string, unknown>): GroupInput => ({
  name: Row.str(row.name, "groups.name"),
  ratioMicros: Row.big(row.ratio_micros, "groups.ratio_micros"),
  limits: {
    rpm: Row.intOrNull(row.rpm, "groups.rpm"),
    tpm: Row.intOrNull(row.tpm, "groups.tpm"),
    concurrency: Row.intOrNull(row.concurrency, "groups.concurrency")
  },
  selectable: Row.bool(row.selectable, "groups.selectable")
})

const groupColumns = (group: GroupInput) => ({
  ratio_micros: group.ratioMicros,
  rpm: group.limits.rpm,
  tpm: group.limits.tpm,
  concurrency: group.limits.concurrency,
  selectable: group.selectable
})

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
    if (typeof v !== "number" || !Number.isFinite(v)) {
      throw new TypeError(`Column '${column}': '${name}' is not a number`)
    }
    out[name] = v
  }
  return out as A
}

/** A channel's timeouts from their JSON column; a field the row lacks takes core's default. */
export const decodeTimeouts = (value: unknown): Domain.ChannelTimeouts =>
  numbers(value, "channels.timeouts", Domain.defaultTimeouts)

/** A channel's breaker settings from their JSON column (`{}`: the defaults). */
export const decodeBreaker = (value: unknown): Domain.BreakerSettings =>
  numbers(value, "channels.breaker", Domain.defaultBreaker)

/** A channel's parameter defaults and overrides from their JSON column. */
export const decodeParams = (value: unknown): Domain.ChannelParams => {
  const parsed = jsonObject(value, "channels.params")
  const part = (name: "defaults" | "overrides") => {
    const v = parsed[name]
    if (v === undefined) return {}
    if (typeof v !== "object" || v === null || Array.isArray(v)) {
      throw new TypeError(`Column 'channels.params': '${name}' is not an object`)
    }
    return v as Domain.ChannelParams["defaults"]
  }
  return { defaults: part("defaults"), overrides: part("overrides") }
}

/** The channel columns that hold no secret (everything but id, name, keys, headers, source and times). */
const channelColumns = (channel: ChannelInput) => ({
  type: channel.type,
  base_url: channel.baseUrl,
  models: JSON.stringify(channel.models),
  model_map: JSON.stringify(channel.modelMap),
  groups: JSON.stringify(channel.groups),
  priority: channel.priority,
  weight: channel.weight,
  enabled: channel.enabled,
  timeouts: JSON.stringify(channel.timeouts),
  api_version: channel.apiVersion,
  breaker: JSON.stringify(channel.breaker),
  params: JSON.stringify(channel.params),
  stream_options: channel.streamOptions,
  responses: channel.responses ?? false,
  cloud: channel.cloud === undefined ? null : JSON.stringify(channel.cloud)
})

/** A cloud channel's `cloud` column (JSON: project, location, region, publishers), or undefined. */
const decodeCloud = (value: unknown): Domain.ChannelCloud | undefined => {
  if (value === null || value === undefined) return undefined
  const parsed = jsonObject(value, "channels.cloud")
  const out: { -readonly [K in keyof Domain.ChannelCloud]: Domain.ChannelCloud[K] } = {}
  for (const name of ["project", "location", "region"] as const) {
    const field = parsed[name]
    if (field === undefined) continue
    if (typeof field !== "string") throw new TypeError(`Column 'channels.cloud': '${name}' is not a string`)
    out[name] = field
  }
  if (parsed.publishers !== undefined) {
    out.publishers = Row.stringRecord(JSON.stringify(parsed.publishers), "channels.cloud") as Readonly<
      Record<string, "google" | "anthropic">
    >
  }
  return out
}

const cloudField = (cloud: Domain.ChannelCloud | undefined) => cloud === undefined ? {} : { cloud }

/** Whether a `channels.headers` value is the plain JSON of rows written before headers were encrypted. */
const isPlainHeaders = (value: string): boolean => value.trimStart().startsWith("{")

const differs = (row: Record<string, unknown>, desired: Record<string, unknown>): boolean => {
  for (const key in desired) if (norm(row[key]) !== norm(desired[key])) return true
  return false
}

const sameRecord = (a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean => {
  const keys = Object.keys(a)
  return keys.length === Object.keys(b).length && keys.every((key) => b[key] === a[key])
}

// ---------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------

/** Headers a channel may not set: the HTTP client owns framing and the connection. */
const RESERVED_HEADERS = new Set([
  "host",
  "content-length",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "upgrade",
  "te",
  "trailer"
])

/** Request fields the gateway owns, which `params` may not set. */
const RESERVED_PARAMS: Readonly<Record<string, string>> = {
  model: "the model is chosen by the call and the channel's model_map",
  stream: "streaming is the client's choice",
  stream_options: "use the channel's stream_options switch"
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

/**
 * Checks a channel: a name, a known type, an http(s) base URL, a weight of 0
 * or more (0: tried only after the others of its tier), sane timeouts and
 * breaker settings, valid extra headers, and parameters that leave the
 * gateway's own fields alone. `path` prefixes the field names in messages
 * (`channels[2]`); empty for none.
 */
export const validateChannel = (channel: ChannelInput, path: string): Effect.Effect<void, InvalidInput> => {
  const fail = (field: string, message: string) => {
    const at = path === "" ? field : `${path}.${field}`
    return Effect.fail(new InvalidInput({ path: at, message: `${at}: ${message}` }))
  }
  if (channel.name.trim().length === 0) return fail("name", "a channel needs a name")
  if (!Domain.CHANNEL_TYPES.includes(channel.type)) {
    return fail("type", `expected one of ${Domain.CHANNEL_TYPES.join(", ")}, got '${Text.clip(channel.type)}'`)
  }
  const cloud = Credentials.cloudProblem(channel.type, channel.cloud)
  if (cloud !== undefined) return fail(cloud.field, cloud.message)
  for (const [k, key] of channel.apiKeys.entries()) {
    const problem = Credentials.keyProblem(channel.type, key)
    if (problem !== undefined) return fail(`apiKeys[${k}]`, problem)
  }
  if (!URL.canParse(channel.baseUrl) || !/^https?:$/.test(new URL(channel.baseUrl).protocol)) {
    return fail("baseUrl", `expected an http(s) URL, got '${Text.clip(channel.baseUrl)}'`)
  }
  if (channel.responses === true && channel.type !== "openai") {
    return fail("responses", `only an openai channel can relay Responses API calls (this one is ${channel.type})`)
  }
  if (!Number.isInteger(channel.weight) || channel.weight < 0) return fail("weight", "expected an integer of 0 or more")
  if (!Number.isInteger(channel.priority)) return fail("priority", "expected an integer")
  for (const name of ["connectMs", "firstByteMs", "idleMs", "totalMs"] as const) {
    const value = channel.timeouts[name]
    if (!Number.isInteger(value) || value <= 0) {
      return fail(`timeouts.${name}`, "expected a positive whole number of milliseconds")
    }
  }
  for (const name of ["consecutiveFailures", "minimumCalls", "windowMs", "cooldownMs", "halfOpenCalls"] as const) {
    const value = channel.breaker[name]
    if (!Number.isInteger(value) || value <= 0) return fail(`breaker.${name}`, "expected a positive whole number")
  }
  const rate = channel.breaker.failureRate
  if (!Number.isFinite(rate) || rate <= 0 || rate > 1) {
    return fail("breaker.failureRate", `expected a fraction above 0 and at most 1, got ${rate}`)
  }
  for (const [name, value] of Object.entries(channel.headers)) {
    if (!TOKEN.test(name)) return fail(`headers.${Text.clip(name)}`, "not a valid header name")
    if (RESERVED_HEADERS.has(name.toLowerCase())) {
      return fail(`headers.${name}`, "this header is managed by the gateway's HTTP client")
    }
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

// ---------------------------------------------------------------------------
// The statements
// ---------------------------------------------------------------------------

/**
 * The catalog statements over one SQL client and the server's secrets.
 */
export const make = (sql: SqlClient.SqlClient, secrets: Secrets["Service"]) => {
  const encryptKeys = (keys: ReadonlyArray<string>) =>
    Effect.map(Effect.forEach(keys, (key) => secrets.encrypt(key)), (blobs) => JSON.stringify(blobs))

  const encryptHeaders = (headers: Readonly<Record<string, string>>): Effect.Effect<string> =>
    Object.keys(headers).length === 0 ? Effect.succeed("{}") : secrets.encrypt(JSON.stringify(headers))

  const decryptHeaders = (value: unknown): Effect.Effect<Readonly<Record<string, string>>, SecretError> => {
    const text = Row.str(value, "channels.headers")
    if (isPlainHeaders(text)) return Effect.sync(() => Row.stringRecord(text, "channels.headers"))
    return Effect.map(secrets.decrypt(text), (plain) => Row.stringRecord(plain, "channels.headers"))
  }

  const channelOf = (
    row: Record<string, unknown>,
    apiKeys: ReadonlyArray<string>,
    headers: Readonly<Record<string, string>>
  ): Domain.Channel => ({
    id: Row.str(row.id, "channels.id"),
    name: Row.str(row.name, "channels.name"),
    type: Row.str(row.type, "channels.type") as Domain.ChannelType,
    baseUrl: Row.str(row.base_url, "channels.base_url"),
    apiKeys,
    models: Row.stringArray(row.models, "channels.models"),
    modelMap: Row.stringRecord(row.model_map, "channels.model_map"),
    groups: Row.stringArray(row.groups, "channels.groups"),
    priority: Row.int(row.priority, "channels.priority"),
    weight: Row.int(row.weight, "channels.weight"),
    enabled: Row.bool(row.enabled, "channels.enabled"),
    headers,
    timeouts: decodeTimeouts(row.timeouts),
    apiVersion: Row.strOrNull(row.api_version, "channels.api_version"),
    breaker: decodeBreaker(row.breaker),
    params: decodeParams(row.params),
    streamOptions: Row.bool(row.stream_options, "channels.stream_options"),
    responses: Row.bool(row.responses, "channels.responses"),
    ...cloudField(decodeCloud(row.cloud))
  })

  /** A channel row with its secrets decrypted; fails when they do not decrypt. */
  const decodeChannel = Effect.fnUntraced(function*(row: Record<string, unknown>) {
    const apiKeys = yield* Effect.forEach(Row.stringArray(row.api_keys_enc, "channels.api_keys_enc"), secrets.decrypt)
    return channelOf(row, apiKeys, yield* decryptHeaders(row.headers))
  })

  /** A channel row for display: secrets decrypted, or the channel without them when they cannot be. */
  const channelRow = Effect.fnUntraced(function*(row: Record<string, unknown>) {
    const keyCount = Row.stringArray(row.api_keys_enc, "channels.api_keys_enc").length
    const decoded = yield* Effect.option(decodeChannel(row))
    return {
      channel: decoded._tag === "Some" ? decoded.value : channelOf(row, [], {}),
      readable: decoded._tag === "Some",
      keyCount,
      source: source(row.source, "channels.source"),
      createdAt: Row.int(row.created_at, "channels.created_at")
    } satisfies ChannelRow
  })

  const groupMembers = Effect.map(
    sql`SELECT g.group_name, u.name FROM user_groups g JOIN users u ON u.id = g.user_id ORDER BY u.name`,
    (rows) => {
      const byGroup = new Map<string, Array<string>>()
      for (const row of rows) {
        const group = Row.str(row.group_name, "user_groups.group_name")
        const list = byGroup.get(group) ?? []
        list.push(Row.str(row.name, "users.name"))
        byGroup.set(group, list)
      }
      return byGroup
    }
  )

  const nextAliasPosition = Effect.map(
    sql`SELECT COALESCE(MAX(position), -1) + 1 AS next FROM aliases`,
    (rows) => Row.int(rows[0]!.next, "aliases.position")
  )

  return {
    decodeChannel,

    // ---- models ---------------------------------------------------------------------

    models: Effect.map(
      sql`SELECT * FROM models ORDER BY id`,
      (rows) => rows.map((row) => ({ model: decodeModel(row), source: source(row.source, "models.source") }))
    ),

    findModel: (id: string) =>
      Effect.map(
        sql`SELECT * FROM models WHERE id = ${id}`,
        (rows) =>
          rows[0] === undefined
            ? undefined
            : { model: decodeModel(rows[0]), source: source(rows[0].source, "models.source") }
      ),

    upsertModel: (model: Domain.Model, from: Source) =>
      Effect.asVoid(sql`INSERT INTO models ${sql.insert({ id: model.id, ...modelColumns(model), source: from })}
        ON CONFLICT (id) DO UPDATE SET ${sql.update({ ...modelColumns(model), source: from })}`),

    /** Deletes a model; false when there was none. */
    deleteModel: (id: string) =>
      Effect.map(sql`DELETE FROM models WHERE id = ${id} RETURNING id`, (rows) => rows.length > 0),

    syncModel: Effect.fnUntraced(function*(model: Domain.Model) {
      const desired = modelColumns(model)
      const row = (yield* sql`SELECT * FROM models WHERE id = ${model.id}`)[0]
      if (row === undefined) {
        yield* sql`INSERT INTO models ${sql.insert({ id: model.id, ...desired, source: "config" })}`
        return "created" as SyncOutcome
      }
      if (row.source !== "config") return "skipped" as SyncOutcome
      if (!differs(row, desired)) return "unchanged" as SyncOutcome
      yield* sql`UPDATE models SET ${sql.update(desired)} WHERE id = ${model.id}`
      return "updated" as SyncOutcome
    }),

    // ---- groups ---------------------------------------------------------------------

    groups: Effect.map(sql`SELECT * FROM groups ORDER BY name`, (rows) => rows.map(decodeGroup)),

    /** Every group with the names of the users it is assigned to. */
    groupsWithMembers: Effect.gen(function*() {
      const rows = yield* sql`SELECT * FROM groups ORDER BY name`
      const members = yield* groupMembers
      return rows.map((row) => ({
        group: decodeGroup(row),
        users: members.get(Row.str(row.name, "groups.name")) ?? [],
        source: source(row.source, "groups.source")
      }))
    }),

    upsertGroup: (group: GroupInput, from: Source) =>
      Effect.asVoid(sql`INSERT INTO groups ${sql.insert({ name: group.name, ...groupColumns(group), source: from })}
        ON CONFLICT (name) DO UPDATE SET ${sql.update({ ...groupColumns(group), source: from })}`),

    insertGroup: (group: GroupInput, from: Source) =>
      Effect.asVoid(sql`INSERT INTO groups ${sql.insert({ name: group.name, ...groupColumns(group), source: from })}`),

    updateGroup: (group: GroupInput) =>
      Effect.map(
        sql`UPDATE groups SET ${sql.update(groupColumns(group))} WHERE name = ${group.name} RETURNING name`,
        (rows) => rows.length > 0
      ),

    /** Replaces who a group is assigned to; returns the ids that name no user (nothing is written then). */
    setGroupMembers: Effect.fnUntraced(function*(name: string, userIds: ReadonlyArray<string>) {
      const ids = [...new Set(userIds)]
      if (ids.length > 0) {
        const known = new Set(
          (yield* sql`SELECT id FROM users WHERE ${sql.in("id", ids)}`).map((row) => Row.str(row.id, "users.id"))
        )
        const unknown = userIds.filter((id) => !known.has(id))
        if (unknown.length > 0) return unknown
      }
      yield* sql`DELETE FROM user_groups WHERE group_name = ${name}`
      for (const userId of ids) yield* sql`INSERT INTO user_groups ${sql.insert({ user_id: userId, group_name: name })}`
      return []
    }),

    /** How many API keys (revoked ones included) belong to the group. */
    keysInGroup: (name: string) =>
      Effect.map(
        sql`SELECT COUNT(*) AS n FROM api_keys WHERE group_name = ${name}`,
        (rows) => Row.int(rows[0]?.n ?? 0, "count")
      ),

    /** Deletes a group and its assignments; false when there was none. */
    deleteGroup: Effect.fnUntraced(function*(name: string) {
      yield* sql`DELETE FROM user_groups WHERE group_name = ${name}`
      return (yield* sql`DELETE FROM groups WHERE name = ${name} RETURNING name`).length > 0
    }),

    syncGroup: Effect.fnUntraced(function*(group: GroupInput) {
      const desired = groupColumns(group)
      const row = (yield* sql`SELECT * FROM groups WHERE name = ${group.name}`)[0]
      if (row === undefined) {
        yield* sql`INSERT INTO groups ${sql.insert({ name: group.name, ...desired, source: "config" })}`
        return "created" as SyncOutcome
      }
      if (row.source !== "config") return "skipped" as SyncOutcome
      if (!differs(row, desired)) return "unchanged" as SyncOutcome
      yield* sql`UPDATE groups SET ${sql.update(desired)} WHERE name = ${group.name}`
      return "updated" as SyncOutcome
    }),

    // ---- channels -------------------------------------------------------------------

    /** Every channel, secrets decrypted (for the gateway); fails when one does not decrypt. */
    channels: Effect.flatMap(sql`SELECT * FROM channels ORDER BY name`, (rows) => Effect.forEach(rows, decodeChannel)),

    /** Every channel for display, best priority first. */
    channelRows: Effect.flatMap(
      sql`SELECT * FROM channels ORDER BY priority DESC, name`,
      (rows) => Effect.forEach(rows, channelRow)
    ),

    findChannel: (id: string) =>
      Effect.flatMap(
        sql`SELECT * FROM channels WHERE id = ${id}`,
        (rows) => rows[0] === undefined ? Effect.succeed(undefined) : channelRow(rows[0])
      ),

    /** Inserts a channel; returns its new id. */
    insertChannel: Effect.fnUntraced(function*(channel: ChannelInput, from: Source) {
      const now = yield* Clock.currentTimeMillis
      const id = newId("chn")
      yield* sql`INSERT INTO channels ${
        sql.insert({
          id,
          name: channel.name,
          ...channelColumns(channel),
          api_keys_enc: yield* encryptKeys(channel.apiKeys),
          headers: yield* encryptHeaders(channel.headers),
          source: from,
          created_at: now,
          updated_at: now
        })
      }`
      return id
    }),

    /**
     * Rewrites a channel; `keys: false` leaves the stored upstream keys as
     * they are (an edit that does not name them). False when there was none.
     */
    updateChannel: Effect.fnUntraced(function*(id: string, channel: ChannelInput, options: { readonly keys: boolean }) {
      const now = yield* Clock.currentTimeMillis
      const rows = yield* sql`UPDATE channels SET ${
        sql.update({
          name: channel.name,
          ...channelColumns(channel),
          ...(options.keys ? { api_keys_enc: yield* encryptKeys(channel.apiKeys) } : {}),
          headers: yield* encryptHeaders(channel.headers),
          updated_at: now
        })
      } WHERE id = ${id} RETURNING id`
      return rows.length > 0
    }),

    /** Inserts or replaces a channel by name (console source unless said); returns its id. */
    upsertChannel: Effect.fnUntraced(function*(channel: ChannelInput, from: Source) {
      const now = yield* Clock.currentTimeMillis
      const columns = {
        ...channelColumns(channel),
        api_keys_enc: yield* encryptKeys(channel.apiKeys),
        headers: yield* encryptHeaders(channel.headers),
        source: from,
        updated_at: now
      }
      const existing = (yield* sql`SELECT id FROM channels WHERE name = ${channel.name}`)[0]
      if (existing !== undefined) {
        const id = Row.str(existing.id, "channels.id")
        yield* sql`UPDATE channels SET ${sql.update(columns)} WHERE id = ${id}`
        return id
      }
      const id = newId("chn")
      yield* sql`INSERT INTO channels ${sql.insert({ id, name: channel.name, ...columns, created_at: now })}`
      return id
    }),

    /** Deletes a channel by id; false when there was none. */
    deleteChannel: (id: string) =>
      Effect.map(sql`DELETE FROM channels WHERE id = ${id} RETURNING id`, (rows) => rows.length > 0),

    /** Deletes a channel by name; false when there was none. */
    deleteChannelNamed: (name: string) =>
      Effect.map(sql`DELETE FROM channels WHERE name = ${name} RETURNING id`, (rows) => rows.length > 0),

    syncChannel: Effect.fnUntraced(function*(channel: ChannelInput) {
      const row = (yield* sql`SELECT * FROM channels WHERE name = ${channel.name}`)[0]
      const now = yield* Clock.currentTimeMillis
      if (row === undefined) {
        yield* sql`INSERT INTO channels ${
          sql.insert({
            id: newId("chn"),
            name: channel.name,
            ...channelColumns(channel),
            api_keys_enc: yield* encryptKeys(channel.apiKeys),
            headers: yield* encryptHeaders(channel.headers),
            source: "config",
            created_at: now,
            updated_at: now
          })
        }`
        return "created" as SyncOutcome
      }
      if (row.source !== "config") return "skipped" as SyncOutcome
      const stored = yield* decodeChannel(row)
      // Secrets are compared decrypted: their blobs differ on every write (a fresh IV each time).
      const keysChanged = stored.apiKeys.join("\u0000") !== channel.apiKeys.join("\u0000")
      const headersChanged = !sameRecord(stored.headers, channel.headers)
      if (!differs(row, channelColumns(channel)) && !keysChanged && !headersChanged) return "unchanged" as SyncOutcome
      yield* sql`UPDATE channels SET ${
        sql.update({
          ...channelColumns(channel),
          ...(keysChanged ? { api_keys_enc: yield* encryptKeys(channel.apiKeys) } : {}),
          ...(headersChanged ? { headers: yield* encryptHeaders(channel.headers) } : {}),
          updated_at: now
        })
      } WHERE name = ${channel.name}`
      return "updated" as SyncOutcome
    }),

    /**
     * Encrypts the headers of rows written before headers were encrypted.
     * Idempotent, and safe when several nodes run it at once (each row is
     * rewritten only while it still holds the plain text it read).
     */
    encryptLegacyHeaders: Effect.gen(function*() {
      const rows = yield* sql`SELECT id, headers FROM channels WHERE headers LIKE ${"{%"} AND headers <> ${"{}"}`
      for (const row of rows) {
        const plain = Row.str(row.headers, "channels.headers")
        const headers = Row.stringRecord(plain, "channels.headers")
        yield* sql`UPDATE channels SET headers = ${yield* encryptHeaders(
          headers
        )} WHERE id = ${row.id} AND headers = ${plain}`
      }
      return rows.length
    }),

    // ---- aliases --------------------------------------------------------------------

    aliases: Effect.map(
      sql`SELECT pattern, target, position FROM aliases ORDER BY position, pattern`,
      (rows) =>
        rows.map((row) => ({
          pattern: Row.str(row.pattern, "aliases.pattern"),
          target: Row.str(row.target, "aliases.target"),
          position: Row.int(row.position, "aliases.position")
        }))
    ),

    setAlias: Effect.fnUntraced(function*(alias: Domain.Alias, position?: number) {
      const at = position ?? (yield* nextAliasPosition)
      yield* sql`INSERT INTO aliases ${sql.insert({ pattern: alias.pattern, target: alias.target, position: at })}
        ON CONFLICT (pattern) DO UPDATE SET ${sql.update({ target: alias.target, position: at })}`
    }),

    /** Deletes an alias; false when there was none. */
    deleteAlias: (pattern: string) =>
      Effect.map(sql`DELETE FROM aliases WHERE pattern = ${pattern} RETURNING pattern`, (rows) => rows.length > 0),

    syncAlias: Effect.fnUntraced(function*(alias: Domain.Alias, position: number) {
      const desired = { target: alias.target, position }
      const row = (yield* sql`SELECT * FROM aliases WHERE pattern = ${alias.pattern}`)[0]
      if (row === undefined) {
        yield* sql`INSERT INTO aliases ${sql.insert({ pattern: alias.pattern, ...desired })}`
        return "created" as SyncOutcome
      }
      if (!differs(row, desired)) return "unchanged" as SyncOutcome
      yield* sql`UPDATE aliases SET ${sql.update(desired)} WHERE pattern = ${alias.pattern}`
      return "updated" as SyncOutcome
    })
  }
}

/** The statements' type. */
export type CatalogTables = ReturnType<typeof make>

/** The error of most statements. */
export type TableError = SqlError.SqlError
