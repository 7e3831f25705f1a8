/**
 * The catalog: models, groups, channels and aliases, as one immutable snapshot
 * with its lookup indexes precomputed. The hot path reads the current snapshot
 * from memory; a reload (config change, console edit, invalidation from another
 * node) swaps in a new one.
 *
 * @since 0.1.0
 */
import { Context, type Effect } from "effect"
import type { Alias, Channel, Group, Model } from "./Domain.ts"
import { compileAliases, normalizeModelName } from "./ModelName.ts"

/**
 * An immutable view of the catalog with its indexes.
 *
 * @category models
 */
export interface Snapshot {
  readonly models: ReadonlyMap<string, Model>
  readonly groups: ReadonlyMap<string, Group>
  readonly channels: ReadonlyArray<Channel>
  /**
   * Resolves a client-sent model name (with `models/` prefix or an alias) to a
   * known model id: a model of the catalog, or a name an enabled channel
   * serves without a price (`models` has no entry for it; calls to it are
   * refused as unpriced rather than unknown). With `use`, an alias resolves
   * only to a model of that use (`embed`: an embedding model; `generate`: any
   * other; the first matching alias whose target fits wins), so a wildcard
   * alias such as `gemini-*` never turns an embedding model's name into a chat
   * model (or the reverse). A name that is itself known always resolves, and
   * an unpriced target (whose use is unknown) fits any use.
   */
  readonly resolveModel: (name: string, use?: ModelUse) => string | undefined
  /** Names enabled channels serve that have no model (and so no price), sorted. */
  readonly unpriced: ReadonlyArray<string>
  /** Enabled channels of `group` that serve `model`, best priority first. */
  readonly channelsFor: (group: string, model: string) => ReadonlyArray<Channel>
  /** Ids of the models some enabled channel of `group` serves, in catalog order. */
  readonly modelsOfGroup: (group: string) => ReadonlyArray<string>
}

/** What a call uses a model for: generating (chat, token counts) or embedding. @category models */
export type ModelUse = "generate" | "embed"

/** Whether a model serves a use (embedding models embed; every other model generates). @category models */
export const servesUse = (model: Model, use: ModelUse): boolean => (model.embedding === true) === (use === "embed")

/**
 * Builds a snapshot and its indexes.
 *
 * @category constructors
 */
export const makeSnapshot = (input: {
  readonly models: ReadonlyArray<Model>
  readonly groups: ReadonlyArray<Group>
  readonly channels: ReadonlyArray<Channel>
  readonly aliases: ReadonlyArray<Alias>
}): Snapshot => {
  const models = new Map(input.models.map((model) => [model.id, model]))
  const groups = new Map(input.groups.map((group) => [group.name, group]))
  const byGroupModel = new Map<string, Array<Channel>>()
  const groupModels = new Map<string, Set<string>>()
  for (const channel of input.channels) {
    if (!channel.enabled) continue
    for (const group of channel.groups) {
      let served = groupModels.get(group)
      if (served === undefined) groupModels.set(group, served = new Set())
      for (const model of channel.models) {
        served.add(model)
        const key = `${group}\u0000${model}`
        let list = byGroupModel.get(key)
        if (list === undefined) byGroupModel.set(key, list = [])
        list.push(channel)
      }
    }
  }
  for (const list of byGroupModel.values()) list.sort((a, b) => b.priority - a.priority)
  const modelOrder = [...models.keys()]
  const groupModelList = new Map<string, ReadonlyArray<string>>()
  for (const [group, served] of groupModels) {
    const known = modelOrder.filter((id) => served.has(id))
    const unknown = [...served].filter((id) => !models.has(id)).sort()
    groupModelList.set(group, [...known, ...unknown])
  }
  const served = new Set<string>()
  for (const names of groupModels.values()) for (const name of names) served.add(name)
  const known = (id: string) => models.has(id) || served.has(id)
  const aliases = compileAliases(input.aliases)
  const noChannels: ReadonlyArray<Channel> = []
  const noModels: ReadonlyArray<string> = []
  const resolveModel = (name: string, use?: ModelUse): string | undefined => {
    const normalized = normalizeModelName(name)
    if (known(normalized)) return normalized
    return aliases(normalized, (target) => {
      if (!known(target)) return false
      const model = models.get(target)
      return model === undefined || use === undefined || servesUse(model, use)
    })
  }
  return {
    models,
    groups,
    channels: input.channels,
    resolveModel,
    unpriced: [...served].filter((id) => !models.has(id)).sort(),
    channelsFor: (group, model) => byGroupModel.get(`${group}\u0000${model}`) ?? noChannels,
    modelsOfGroup: (group) => groupModelList.get(group) ?? noModels
  }
}

/**
 * The catalog service: the current snapshot.
 *
 * @category services
 */
export class Catalog extends Context.Service<Catalog, {
  readonly current: Effect.Effect<Snapshot>
}>()("modelgate/core/Catalog") {}
