/**
 * The catalog, for administrators: groups, channels (with their health, a
 * test call and a reset), models and prices (with the channel models that
 * have none yet, and the shipped price table), and aliases. Every change is
 * announced so the gateways reload their catalog.
 *
 * @since 0.1.0
 */
import { Catalog, ChannelHealth, ChannelProbe, Credentials, Domain, Money, Pricing, Text } from "@modelgate/core"
import { CatalogRepo, type ChannelInput, type ChannelRecord } from "@modelgate/store/CatalogRepo"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../Api.ts"
import * as ApiError from "../ApiError.ts"
import type * as C from "../Contract.ts"
import * as PriceTable from "../PriceTable.ts"
import * as Views from "../Views.ts"
import { invalidate, orApiError } from "./Shared.ts"

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
    ? Effect.fail(
      ApiError.invalid(
        `${param}: expected a positive ratio like 1 or 0.8 with at most 6 decimal places, got '${Text.clip(ratio)}'`,
        param
      )
    )
    : Effect.succeed(micros)
}

/**
 * A model's media part tokens after an upsert: kept when the request leaves
 * them out, back to the defaults for null, else the kinds the request sets
 * (a null kind: its default).
 */
const mediaPartTokensOf = (
  given: C.UpsertModelRequest["mediaPartTokens"],
  existing: Domain.MediaPartTokens | undefined
): { readonly mediaPartTokens?: Domain.MediaPartTokens } => {
  if (given === undefined) return existing === undefined ? {} : { mediaPartTokens: existing }
  if (given === null) return {}
  const set = Object.fromEntries(
    Object.entries(given).filter((entry): entry is [string, number] => typeof entry[1] === "number")
  ) as Domain.MediaPartTokens
  return Object.keys(set).length === 0 ? {} : { mediaPartTokens: set }
}

const parsePrice = (value: string | null, param: string): Effect.Effect<bigint | null, ApiError.ApiError> => {
  if (value === null) return Effect.succeed(null)
  const nanos = Money.usdToNanos(value)
  return nanos === undefined || nanos < 0n || nanos > Money.MAX_NANOS
    ? Effect.fail(ApiError.invalid(`${param}: expected a non-negative USD amount, got '${Text.clip(value)}'`, param))
    : Effect.succeed(nanos)
}

const checkModelMap = (models: ReadonlyArray<string>, modelMap: Readonly<Record<string, string>> | undefined) => {
  for (const name of Object.keys(modelMap ?? {})) {
    if (!models.includes(name)) {
      const field = `modelMap.${Text.clip(name)}`
      return Effect.fail(ApiError.invalid(`${field}: '${Text.clip(name)}' is not one of the channel's models`, field))
    }
  }
  return Effect.void
}

/** Where a cloud channel is served: the request's fields over the current ones (undefined: none given). */
const cloudOf = (
  input: {
    readonly project?: string | undefined
    readonly location?: string | undefined
    readonly region?: string | undefined
    readonly publishers?: Readonly<Record<string, "google" | "anthropic">> | undefined
  },
  current: Domain.ChannelCloud | undefined
): Domain.ChannelCloud | undefined => {
  const cloud: Domain.ChannelCloud = {
    ...current,
    ...(input.project === undefined ? {} : { project: input.project.trim() }),
    ...(input.location === undefined ? {} : { location: input.location.trim() }),
    ...(input.region === undefined ? {} : { region: input.region.trim() }),
    ...(input.publishers === undefined ? {} : { publishers: input.publishers })
  }
  return Object.keys(cloud).length === 0 ? undefined : cloud
}

/**
 * A channel's base URL: the one given (without a trailing slash), else a
 * cloud channel's default for its region; a channel of another type must
 * give one. Where the cloud fields are wrong, the error names them.
 */
const baseUrlOf = (
  type: Domain.ChannelType,
  given: string | undefined,
  cloud: Domain.ChannelCloud | undefined
): Effect.Effect<string, ApiError.ApiError> => {
  const problem = Credentials.cloudProblem(type, cloud)
  if (problem !== undefined) return Effect.fail(ApiError.invalid(`${problem.field}: ${problem.message}`, problem.field))
  const url = given?.replace(/\/+$/, "") ?? Credentials.defaultBaseUrl(type, cloud)
  return url === undefined
    ? Effect.fail(
      ApiError.invalid(`baseUrl: required for a ${type} channel (only vertex and bedrock have a default)`, "baseUrl")
    )
    : Effect.succeed(url)
}

/** The routing settings of a request applied over a channel's current (or default) ones. */
const routingOf = (
  input: C.UpdateChannelRequest,
  current: Pick<Domain.Channel, "headers" | "timeouts" | "breaker" | "params" | "streamOptions" | "responses">
) => ({
  headers: input.headers === undefined ? current.headers : Views.mergeHeaders(input.headers, current.headers),
  timeouts: { ...current.timeouts, ...input.timeouts },
  breaker: { ...current.breaker, ...input.breaker },
  params: { ...current.params, ...input.params },
  streamOptions: input.streamOptions ?? current.streamOptions,
  responses: input.responses ?? current.responses ?? false
})

/** The handlers of the `catalog` group. @category handlers */
export const layer = HttpApiBuilder.group(
  Api,
  "catalog",
  Effect.fn(function*(handlers) {
    const repo = yield* CatalogRepo
    const health = yield* ChannelHealth.ChannelHealth
    const probe = yield* ChannelProbe.ChannelProbe
    const presets = yield* Effect.orDie(PriceTable.load)

    const findGroup = Effect.fnUntraced(function*(name: string) {
      const group = yield* orApiError(repo.findGroup(name))
      if (group === undefined) return yield* ApiError.notFound(`No group '${Text.clip(name)}'.`)
      return group
    })

    const channelView = (record: ChannelRecord) =>
      record.readable
        ? Effect.map(health.report(record.channel), (report) => Views.adminChannel(record, report))
        : Effect.succeed(Views.adminChannel(record, undefined))

    const findChannel = Effect.fnUntraced(function*(id: string) {
      const record = yield* orApiError(repo.findChannel(id))
      if (record === undefined) return yield* ApiError.notFound(`No channel with id '${Text.clip(id)}'.`)
      return record
    })

    /** A channel whose secrets decrypt (to call it, or to change it without re-entering its keys). */
    const usableChannel = Effect.fnUntraced(function*(id: string) {
      const record = yield* findChannel(id)
      if (!record.readable) {
        return yield* ApiError.invalid(
          "apiKeys: this channel's keys cannot be decrypted with this server's secret; enter them again",
          "apiKeys"
        )
      }
      return record.channel
    })

    const knownModel = Effect.fnUntraced(function*(name: string) {
      const snapshot = yield* (yield* Catalog.Catalog).current
      return snapshot.resolveModel(name) !== undefined
    })

    return handlers.handleAll({
      // ---- groups ---------------------------------------------------------------

      listGroups: () =>
        Effect.map(
          orApiError(repo.listGroups),
          (groups) => ({ data: groups.map(Views.adminGroup) }) satisfies C.GroupList
        ),

      createGroup: Effect.fn("catalog.createGroup")(function*({ payload }) {
        const ratioMicros = yield* ratioToMicros(payload.ratio)
        yield* orApiError(repo.createGroup({
          name: payload.name,
          ratioMicros,
          limits: payload.limits ?? { rpm: null, tpm: null, concurrency: null },
          selectable: payload.selectable ?? false
        }))
        yield* invalidate("catalog")
        return Views.adminGroup(yield* findGroup(payload.name))
      }),

      updateGroup: Effect.fn("catalog.updateGroup")(function*({ params, payload }) {
        const current = yield* findGroup(params.name)
        yield* orApiError(repo.updateGroup({
          ...current.group,
          ...(payload.ratio !== undefined ? { ratioMicros: yield* ratioToMicros(payload.ratio) } : {}),
          ...(payload.limits !== undefined ? { limits: payload.limits } : {}),
          ...(payload.selectable !== undefined ? { selectable: payload.selectable } : {})
        }, payload.userIds))
        yield* invalidate("catalog")
        yield* invalidate("users")
        return Views.adminGroup(yield* findGroup(params.name))
      }),

      deleteGroup: Effect.fn("catalog.deleteGroup")(function*({ params }) {
        // The default group is where new users and their keys land: it can be changed, never removed.
        if (params.name === "default") {
          return yield* ApiError.conflict(
            "The group 'default' cannot be deleted: new users and their keys are put in it. " +
              "Change its ratio and limits with Edit instead."
          )
        }
        const group = yield* findGroup(params.name)
        // A group still in use would vanish from the Groups page while channels serve it or users hold it.
        const serving = (yield* orApiError(repo.listChannels)).filter((r) => r.channel.groups.includes(params.name))
        if (serving.length > 0) {
          return yield* ApiError.conflict(
            `The group '${params.name}' is served by the channel(s) ${
              serving.map((r) => r.channel.name).join(", ")
            }: remove it from their Groups (Channels → Edit) first.`
          )
        }
        if (group.users.length > 0) {
          return yield* ApiError.conflict(
            `The group '${params.name}' is assigned to the user(s) ${
              group.users.join(", ")
            }: remove them from its Assigned users (Groups → Edit) first.`
          )
        }
        yield* orApiError(repo.deleteGroup(params.name))
        yield* invalidate("catalog")
        return { ok: true } satisfies C.Ok
      }),

      // ---- channels -------------------------------------------------------------

      listChannels: Effect.fn("catalog.listChannels")(function*() {
        const records = yield* orApiError(repo.listChannels)
        return { data: yield* Effect.forEach(records, channelView) } satisfies C.ChannelList
      }),

      getChannel: ({ params }) => Effect.flatMap(findChannel(params.id), channelView),

      createChannel: Effect.fn("catalog.createChannel")(function*({ payload }) {
        yield* checkModelMap(payload.models, payload.modelMap)
        const cloud = cloudOf(payload, undefined)
        const baseUrl = yield* baseUrlOf(payload.type, payload.baseUrl, cloud)
        const channel: ChannelInput = {
          name: payload.name,
          type: payload.type,
          baseUrl,
          ...(cloud === undefined ? {} : { cloud }),
          apiKeys: payload.apiKeys.map((key) => key.trim()),
          models: payload.models,
          modelMap: payload.modelMap ?? {},
          groups: payload.groups ?? ["default"],
          priority: payload.priority ?? 0,
          weight: payload.weight ?? 1,
          enabled: payload.enabled ?? true,
          apiVersion: payload.apiVersion ?? null,
          ...routingOf(payload, Domain.channelDefaults)
        }
        const id = yield* orApiError(repo.createChannel(channel))
        yield* invalidate("catalog")
        return yield* channelView(yield* findChannel(id))
      }),

      updateChannel: Effect.fn("catalog.updateChannel")(function*({ params, payload }) {
        const record = yield* findChannel(params.id)
        const current = record.channel
        // Without its secrets a channel can change only if the edit gives its keys again.
        if (!record.readable && payload.apiKeys === undefined) yield* usableChannel(params.id)
        yield* checkModelMap(payload.models ?? current.models, payload.modelMap ?? current.modelMap)
        const type = payload.type ?? current.type
        // A channel that changes type keeps nothing of where the old type was served.
        const cloud = cloudOf(payload, type === current.type ? current.cloud : undefined)
        // A base URL that was the old region's default follows the region; one the operator gave stays.
        const followsRegion = current.baseUrl === Credentials.defaultBaseUrl(current.type, current.cloud)
        const baseUrl = payload.baseUrl !== undefined || followsRegion
          ? yield* baseUrlOf(type, payload.baseUrl, cloud)
          : yield* Effect.as(baseUrlOf(type, current.baseUrl, cloud), current.baseUrl)
        const { cloud: _, ...rest } = current
        const next: ChannelInput = {
          ...rest,
          ...(cloud === undefined ? {} : { cloud }),
          ...(payload.name !== undefined ? { name: payload.name } : {}),
          type,
          baseUrl,
          ...(payload.models !== undefined ? { models: payload.models } : {}),
          ...(payload.modelMap !== undefined ? { modelMap: payload.modelMap } : {}),
          ...(payload.groups !== undefined ? { groups: payload.groups } : {}),
          ...(payload.priority !== undefined ? { priority: payload.priority } : {}),
          ...(payload.weight !== undefined ? { weight: payload.weight } : {}),
          ...(payload.enabled !== undefined ? { enabled: payload.enabled } : {}),
          ...(payload.apiVersion !== undefined ? { apiVersion: payload.apiVersion } : {}),
          ...(payload.apiKeys !== undefined ? { apiKeys: payload.apiKeys.map((key) => key.trim()) } : {}),
          ...routingOf(payload, current)
        }
        yield* orApiError(repo.updateChannel(params.id, next, { keys: payload.apiKeys !== undefined }))
        yield* invalidate("catalog")
        return yield* channelView(yield* findChannel(params.id))
      }),

      deleteChannel: Effect.fn("catalog.deleteChannel")(function*({ params }) {
        yield* orApiError(repo.deleteChannel(params.id))
        yield* invalidate("catalog")
        return { ok: true } satisfies C.Ok
      }),

      testChannel: Effect.fn("catalog.testChannel")(function*({ params, payload }) {
        const channel = yield* usableChannel(params.id)
        const model = payload.model ?? channel.models[0]
        if (model === undefined) return yield* ApiError.invalid("model: the channel lists no models to test", "model")
        if (!channel.models.includes(model)) {
          return yield* ApiError.invalid(
            `model: '${Text.clip(model)}' is not one of the channel's models (${channel.models.join(", ")})`,
            "model"
          )
        }
        if (channel.apiKeys.length === 0) {
          return yield* ApiError.invalid("apiKeys: the channel has no keys to test with", "apiKeys")
        }
        // Every key is tried, and each outcome goes into the key's health.
        const keys = yield* health.test(channel, model)
        const shown = keys.find((key) => !key.ok) ?? keys[0]!
        return {
          ok: keys.every((key) => key.ok),
          latencyMs: shown.latencyMs,
          status: shown.status,
          message: shown.message,
          model,
          keys: keys.map((key) => ({
            index: key.index,
            hint: key.hint,
            ok: key.ok,
            latencyMs: key.latencyMs,
            status: key.status,
            message: key.message
          }))
        } satisfies C.TestChannelResult
      }),

      fetchModels: Effect.fn("catalog.fetchModels")(function*({ payload }) {
        const saved = payload.channelId === undefined ? undefined : (yield* usableChannel(payload.channelId))
        const missing = (field: string) =>
          ApiError.invalid(
            `${field}: required to list the models of a channel that is not saved (or give channelId)`,
            field
          )
        const type = payload.type ?? saved?.type
        if (type === undefined) return yield* missing("type")
        const cloud = cloudOf(payload, saved?.type === type ? saved?.cloud : undefined)
        const baseUrl = payload.baseUrl?.replace(/\/+$/, "") ?? saved?.baseUrl ??
          Credentials.defaultBaseUrl(type, cloud)
        if (baseUrl === undefined) return yield* missing("baseUrl")
        // The saved key (and the saved headers' secrets) only ever go to the saved address: another address
        // needs its key in the same request, or an admin key could collect every provider key.
        const elsewhere = saved !== undefined && baseUrl !== saved.baseUrl.replace(/\/+$/, "")
        const givenKey = payload.apiKey?.trim()
        if (elsewhere && (givenKey === undefined || givenKey === "")) {
          return yield* ApiError.invalid(
            `apiKey: required to list models at ${baseUrl}, which is not the channel's saved address; ` +
              "the saved key is only ever sent to the saved address",
            "apiKey"
          )
        }
        const apiKey = givenKey ?? saved?.apiKeys[0]
        if (apiKey === undefined) {
          return yield* saved === undefined
            ? missing("apiKey")
            : ApiError.invalid("apiKey: the channel has no key to list its models with", "apiKey")
        }
        const savedHeaders = elsewhere
          ? Object.fromEntries(
            Object.entries(saved?.headers ?? {}).filter(([name, value]) => !Views.isSecretHeader(name, value))
          )
          : saved?.headers ?? {}
        const channel: Domain.Channel = {
          ...Domain.channelDefaults,
          id: saved?.id ?? "unsaved",
          name: saved?.name ?? "new channel",
          models: saved?.models ?? [],
          modelMap: saved?.modelMap ?? {},
          groups: saved?.groups ?? [],
          priority: 0,
          weight: 1,
          enabled: true,
          ...(saved === undefined
            ? {}
            : {
              timeouts: saved.timeouts,
              breaker: saved.breaker,
              params: saved.params,
              streamOptions: saved.streamOptions
            }),
          type,
          baseUrl,
          ...(cloud === undefined ? {} : { cloud }),
          apiKeys: [apiKey],
          apiVersion: payload.apiVersion !== undefined ? payload.apiVersion : saved?.apiVersion ?? null,
          headers: payload.headers === undefined
            ? savedHeaders
            : Views.mergeHeaders(payload.headers, savedHeaders)
        }
        const listed = yield* probe.listModels(channel, apiKey).pipe(
          Effect.mapError((error) =>
            error._tag === "UnsupportedFeature"
              ? ApiError.invalid(error.message, "type", "models_not_listed")
              : ApiError.badGateway(error.message)
          )
        )
        const snapshot = yield* (yield* Catalog.Catalog).current
        const preset = new Set(presets.data.map((p) => p.id))
        return {
          data: listed.map((model) => {
            const known = snapshot.models.get(model.id)
            return {
              id: model.id,
              displayName: model.displayName ?? null,
              inputTokenLimit: model.inputTokenLimit ?? null,
              outputTokenLimit: model.outputTokenLimit ?? null,
              embedding: model.embedding ?? false,
              priced: known !== undefined && Pricing.isPriced(known),
              preset: preset.has(model.id)
            }
          })
        } satisfies C.FetchedModels
      }),

      resetChannel: Effect.fn("catalog.resetChannel")(function*({ params }) {
        yield* health.reset(yield* usableChannel(params.id))
        return yield* channelView(yield* findChannel(params.id))
      }),

      // ---- models ---------------------------------------------------------------

      listModels: Effect.fn("catalog.listModels")(function*() {
        const models = yield* orApiError(repo.listModels)
        // A model row without any price (the configuration file adds one for each channel model it does not price) counts as unpriced too.
        const priced = new Set(
          models.filter((record) => Pricing.isPriced(record.model)).map((record) => record.model.id)
        )
        const servedBy = new Map<string, Array<string>>()
        for (const { channel } of yield* orApiError(repo.listChannels)) {
          for (const model of channel.models) {
            if (priced.has(model)) continue
            servedBy.set(model, [...(servedBy.get(model) ?? []), channel.name])
          }
        }
        return {
          data: models.map(Views.adminModel),
          unpriced: [...servedBy].sort(([a], [b]) => a.localeCompare(b)).map(([id, channels]) => ({
            id,
            channels: channels.sort()
          }))
        } satisfies C.ModelList
      }),

      pricePresets: () => Effect.succeed(presets),

      upsertModel: Effect.fn("catalog.upsertModel")(function*({ payload }) {
        const existing = (yield* orApiError(repo.findModel(payload.id)))?.model
        const model: Domain.Model = {
          id: payload.id,
          displayName: payload.displayName ?? existing?.displayName ?? payload.id,
          inputNanosPerMillion: yield* parsePrice(payload.prices.input, "prices.input"),
          outputNanosPerMillion: yield* parsePrice(payload.prices.output, "prices.output"),
          cachedInputNanosPerMillion: yield* parsePrice(payload.prices.cachedInput, "prices.cachedInput"),
          // Left out, the cache-write price stays as it was (older clients do not know the field).
          cacheWriteNanosPerMillion: payload.prices.cacheWrite === undefined
            ? existing?.cacheWriteNanosPerMillion ?? null
            : yield* parsePrice(payload.prices.cacheWrite, "prices.cacheWrite"),
          perRequestNanos: yield* parsePrice(payload.prices.perRequest, "prices.perRequest"),
          free: payload.prices.free,
          inputTokenLimit: payload.inputTokenLimit ?? existing?.inputTokenLimit ?? Domain.modelDefaults.inputTokenLimit,
          outputTokenLimit: payload.outputTokenLimit ?? existing?.outputTokenLimit ??
            Domain.modelDefaults.outputTokenLimit,
          ...(payload.description === undefined
            ? existing?.description === undefined ? {} : { description: existing.description }
            : payload.description === null
            ? {}
            : { description: payload.description }),
          embedding: payload.embedding ?? existing?.embedding ?? false,
          reasoning: payload.reasoning ?? existing?.reasoning ?? false,
          reasoningContent: payload.reasoningContent ?? existing?.reasoningContent ?? false,
          ...mediaPartTokensOf(payload.mediaPartTokens, existing?.mediaPartTokens)
        }
        yield* orApiError(repo.upsertModel(model, "console"))
        yield* invalidate("catalog")
        return Views.adminModel({ model, source: "console" })
      }),

      deleteModel: Effect.fn("catalog.deleteModel")(function*({ params }) {
        yield* orApiError(repo.deleteModel(params.id))
        yield* invalidate("catalog")
        return { ok: true } satisfies C.Ok
      }),

      // ---- aliases --------------------------------------------------------------

      listAliases: () =>
        Effect.map(orApiError(repo.listAliases), (aliases) => ({ data: aliases }) satisfies C.AliasList),

      setAlias: Effect.fn("catalog.setAlias")(function*({ payload }) {
        if (!(yield* knownModel(payload.target))) {
          return yield* ApiError.invalid(
            `target: no model named '${Text.clip(payload.target)}' exists on this gateway`,
            "target"
          )
        }
        yield* orApiError(repo.setAlias({ pattern: payload.pattern, target: payload.target }, payload.position))
        yield* invalidate("catalog")
        const alias = (yield* orApiError(repo.listAliases)).find((a) => a.pattern === payload.pattern)
        return alias!
      }),

      deleteAlias: Effect.fn("catalog.deleteAlias")(function*({ query }) {
        yield* orApiError(repo.deleteAlias(query.pattern))
        yield* invalidate("catalog")
        return { ok: true } satisfies C.Ok
      })
    })
  })
)
