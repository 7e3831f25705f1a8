/**
 * The catalog tables: models, groups (and who they are assigned to),
 * channels and aliases. `load` returns exactly core's `Domain` records, ready
 * for `Catalog.makeSnapshot`; the other operations serve the management API.
 * Every statement is in `internal/CatalogTables.ts`, which provisioning uses
 * too, so these tables are written in one place.
 *
 * Channel secrets are encrypted with `Secrets`: the upstream keys one by one,
 * the extra headers (which often carry credentials) as one blob. Building the
 * layer encrypts headers that rows from before that still hold in plain text.
 *
 * @since 0.1.0
 */
import { type Domain, GatewayError } from "@modelgate/core"
import { Context, Effect, Layer } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import * as CatalogTables from "./internal/CatalogTables.ts"
import { uniqueAsConflict } from "./internal/unique.ts"
import { type SecretError, Secrets } from "./Secrets.ts"
import { Conflict, InvalidInput } from "./StoreError.ts"
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
export type GroupInput = CatalogTables.GroupInput

/**
 * A channel to store; `apiKeys` and `headers` are plain text and are
 * encrypted here.
 *
 * @category models
 */
export type ChannelInput = CatalogTables.ChannelInput

/**
 * A stored channel for display: its secrets decrypted, or (`readable: false`)
 * none of them when they do not decrypt with this server's secret.
 *
 * @category models
 */
export type ChannelRecord = CatalogTables.ChannelRow

/**
 * A model and where it came from.
 *
 * @category models
 */
export interface ModelRecord {
  readonly model: Domain.Model
  readonly source: Source
}

/**
 * A group, the names of the users it is assigned to, and where it came from.
 *
 * @category models
 */
export interface GroupRecord {
  readonly group: GroupInput
  readonly users: ReadonlyArray<string>
  readonly source: Source
}

/**
 * An alias and its place in matching order.
 *
 * @category models
 */
export interface AliasRecord extends Domain.Alias {
  readonly position: number
}

/**
 * Checks a channel as the gateway will use it (the same rules for the
 * configuration file and the management API). `path` prefixes the field names
 * in messages (`channels[2]`); empty for none.
 *
 * @category validation
 */
export const validateChannel: (channel: ChannelInput, path: string) => Effect.Effect<void, InvalidInput> =
  CatalogTables.validateChannel

const notFound = (what: string) => new GatewayError.ResourceNotFound({ message: `No ${what}.` })

/**
 * The catalog repository.
 *
 * @category services
 */
export class CatalogRepo extends Context.Service<CatalogRepo, {
  /** Models and channels by name, groups by name, aliases in position order; channel secrets decrypted. */
  readonly load: Effect.Effect<CatalogData, SecretError | SqlError.SqlError>

  /** All models, by id. */
  readonly listModels: Effect.Effect<ReadonlyArray<ModelRecord>, SqlError.SqlError>
  readonly findModel: (id: string) => Effect.Effect<ModelRecord | undefined, SqlError.SqlError>
  /** Inserts or replaces a model by id (source: the console unless said). */
  readonly upsertModel: (model: Domain.Model, source?: Source) => Effect.Effect<void, SqlError.SqlError>
  readonly deleteModel: (id: string) => Effect.Effect<void, GatewayError.ResourceNotFound | SqlError.SqlError>

  /** All groups, by name, with the users they are assigned to. */
  readonly listGroups: Effect.Effect<ReadonlyArray<GroupRecord>, SqlError.SqlError>
  readonly findGroup: (name: string) => Effect.Effect<GroupRecord | undefined, SqlError.SqlError>
  /** Creates a group (a console group unless said); a taken name is a `Conflict`. */
  readonly createGroup: (group: GroupInput, source?: Source) => Effect.Effect<void, Conflict | SqlError.SqlError>
  /** Inserts or replaces a group by name. */
  readonly upsertGroup: (group: GroupInput, source?: Source) => Effect.Effect<void, SqlError.SqlError>
  /**
   * Changes a group's ratio, limits and selectability, and with `userIds`
   * replaces who it is assigned to (an unknown id is refused, naming it).
   */
  readonly updateGroup: (
    group: GroupInput,
    userIds?: ReadonlyArray<string>
  ) => Effect.Effect<void, GatewayError.ResourceNotFound | InvalidInput | SqlError.SqlError>
  /** Deletes a group that no API key uses (a `Conflict` otherwise). */
  readonly deleteGroup: (
    name: string
  ) => Effect.Effect<void, GatewayError.ResourceNotFound | Conflict | SqlError.SqlError>

  /** All channels for display, best priority first. */
  readonly listChannels: Effect.Effect<ReadonlyArray<ChannelRecord>, SqlError.SqlError>
  readonly findChannel: (id: string) => Effect.Effect<ChannelRecord | undefined, SqlError.SqlError>
  /** Validates and creates a channel (a console channel unless said); returns its id. */
  readonly createChannel: (
    channel: ChannelInput,
    source?: Source
  ) => Effect.Effect<string, InvalidInput | Conflict | SqlError.SqlError>
  /**
   * Validates and rewrites a channel. With `keys: false` the stored upstream
   * keys stay as they are (`channel.apiKeys` is ignored).
   */
  readonly updateChannel: (
    id: string,
    channel: ChannelInput,
    options: { readonly keys: boolean }
  ) => Effect.Effect<void, GatewayError.ResourceNotFound | InvalidInput | Conflict | SqlError.SqlError>
  /** Validates and inserts or replaces a channel by name; returns its id. */
  readonly upsertChannel: (
    channel: ChannelInput,
    source?: Source
  ) => Effect.Effect<string, InvalidInput | SqlError.SqlError>
  /** Deletes a channel by id (the record of its disabled keys goes with it). */
  readonly deleteChannel: (id: string) => Effect.Effect<void, GatewayError.ResourceNotFound | SqlError.SqlError>
  /** Deletes a channel by name. */
  readonly deleteChannelNamed: (name: string) => Effect.Effect<void, GatewayError.ResourceNotFound | SqlError.SqlError>

  /** All aliases in matching order. */
  readonly listAliases: Effect.Effect<ReadonlyArray<AliasRecord>, SqlError.SqlError>
  /** Sets an alias; `position` orders matching (lower first; default: after the last). */
  readonly setAlias: (alias: Domain.Alias, position?: number) => Effect.Effect<void, SqlError.SqlError>
  readonly deleteAlias: (pattern: string) => Effect.Effect<void, GatewayError.ResourceNotFound | SqlError.SqlError>
}>()("modelgate/store/CatalogRepo") {
  /** @category layers */
  static readonly layer = Layer.effect(
    CatalogRepo,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const tables = CatalogTables.make(sql, yield* Secrets)
      const encrypted = yield* tables.encryptLegacyHeaders.pipe(Effect.orDie)
      if (encrypted > 0) {
        yield* Effect.logInfo("encrypted the extra headers of channels stored before headers were encrypted").pipe(
          Effect.annotateLogs({ channels: encrypted })
        )
      }

      const load = Effect.gen(function*() {
        const models = (yield* tables.models).map((record) => record.model)
        const groups = (yield* tables.groups).map(({ selectable: _, ...group }) => group)
        const channels = yield* tables.channels
        const aliases = (yield* tables.aliases).map(({ pattern, target }) => ({ pattern, target }))
        return { models, groups, channels, aliases }
      }).pipe(Effect.withSpan("CatalogRepo.load"))

      const listGroups = tables.groupsWithMembers
      const findGroup = (name: string) => Effect.map(listGroups, (groups) => groups.find((g) => g.group.name === name))

      const channelTaken = (name: string) => uniqueAsConflict(`A channel named '${name}' already exists.`)

      return CatalogRepo.of({
        load,

        listModels: tables.models,
        findModel: tables.findModel,
        upsertModel: (model, source = "console") => tables.upsertModel(model, source),
        deleteModel: (id) =>
          Effect.flatMap(
            tables.deleteModel(id),
            (deleted) => deleted ? Effect.void : Effect.fail(notFound(`model '${id}'`))
          ),

        listGroups,
        findGroup,
        createGroup: (group, source = "console") =>
          tables.insertGroup(group, source).pipe(uniqueAsConflict(`A group named '${group.name}' already exists.`)),
        upsertGroup: (group, source = "console") => tables.upsertGroup(group, source),
        updateGroup: Effect.fn("CatalogRepo.updateGroup")(function*(group, userIds) {
          yield* sql.withTransaction(Effect.gen(function*() {
            if (!(yield* tables.updateGroup(group))) return yield* notFound(`group '${group.name}'`)
            if (userIds === undefined) return
            const unknown = yield* tables.setGroupMembers(group.name, userIds)
            if (unknown.length > 0) {
              const index = userIds.indexOf(unknown[0]!)
              return yield* new InvalidInput({
                path: `userIds[${index}]`,
                message: `userIds[${index}]: no user with id '${unknown[0]}'`
              })
            }
          }))
        }),
        deleteGroup: Effect.fn("CatalogRepo.deleteGroup")(function*(name) {
          yield* sql.withTransaction(Effect.gen(function*() {
            if ((yield* findGroup(name)) === undefined) return yield* notFound(`group '${name}'`)
            const keys = yield* tables.keysInGroup(name)
            if (keys > 0) {
              return yield* new Conflict({
                message: `The group '${name}' is used by ${keys} API key(s); move or delete them first.`
              })
            }
            yield* tables.deleteGroup(name)
          }))
        }),

        listChannels: tables.channelRows,
        findChannel: tables.findChannel,
        createChannel: Effect.fn("CatalogRepo.createChannel")(function*(channel, source = "console") {
          yield* validateChannel(channel, "")
          return yield* tables.insertChannel(channel, source).pipe(channelTaken(channel.name))
        }),
        updateChannel: Effect.fn("CatalogRepo.updateChannel")(function*(id, channel, options) {
          yield* validateChannel(channel, "")
          const updated = yield* tables.updateChannel(id, channel, options).pipe(channelTaken(channel.name))
          if (!updated) return yield* notFound(`channel with id '${id}'`)
        }),
        upsertChannel: Effect.fn("CatalogRepo.upsertChannel")(function*(channel, source = "console") {
          yield* validateChannel(channel, "channel")
          return yield* sql.withTransaction(tables.upsertChannel(channel, source))
        }),
        deleteChannel: (id) =>
          Effect.flatMap(
            tables.deleteChannel(id),
            (deleted) => deleted ? Effect.void : Effect.fail(notFound(`channel with id '${id}'`))
          ),
        deleteChannelNamed: (name) =>
          Effect.flatMap(
            tables.deleteChannelNamed(name),
            (deleted) => deleted ? Effect.void : Effect.fail(notFound(`channel '${name}'`))
          ),

        listAliases: tables.aliases,
        setAlias: (alias, position) => tables.setAlias(alias, position),
        deleteAlias: (pattern) =>
          Effect.flatMap(
            tables.deleteAlias(pattern),
            (deleted) => deleted ? Effect.void : Effect.fail(notFound(`alias '${pattern}'`))
          )
      })
    })
  )
}
