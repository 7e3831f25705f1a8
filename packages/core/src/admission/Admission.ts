/**
 * Admission: the ordered checks every call passes before anything is sent
 * upstream. The order is part of the public contract (it decides which error a
 * caller sees when several apply):
 *
 * 1. a key was presented;
 * 2. the key is valid: known, enabled (and its user enabled), not expired;
 * 3. (the body is decoded by the adapter, so malformed bodies fail here)
 * 4. the model is known (after `models/` prefix and aliases);
 * 5. the model is within the key's permissions;
 * 6. the key's group has a channel for the model;
 * 7. the model has a price (or is free).
 *
 * Rate limits and the balance hold come after, in the money and limits modules.
 *
 * @since 0.1.0
 */
import { Context, Effect } from "effect"
import { Catalog, type ModelUse, type Snapshot } from "../domain/Catalog.ts"
import type { ApiKey, Channel, Dialect, Group, Model } from "../domain/Domain.ts"
import { controlCharacter, controlCharacterMessage } from "../domain/ModelName.ts"
import {
  type DatabaseUnavailable,
  echo,
  type InternalError,
  InvalidApiKey,
  InvalidRequest,
  KeyDisabled,
  KeyExpired,
  MissingApiKey,
  ModelNotAllowed,
  ModelNotFound,
  ModelNotInGroup,
  ModelUnpriced
} from "../errors/GatewayError.ts"
import { isPriced } from "../money/Pricing.ts"
import { KeyStore } from "./KeyStore.ts"

/**
 * Checks 1 and 2: the presented secret belongs to a usable key.
 *
 * @category admission
 */
export const authenticate = (
  secret: string | undefined
): Effect.Effect<
  ApiKey,
  MissingApiKey | InvalidApiKey | KeyDisabled | KeyExpired | InternalError | DatabaseUnavailable,
  KeyStore
> => {
  if (secret === undefined || secret.length === 0) {
    return Effect.fail(
      new MissingApiKey({
        message: "No API key was sent. Send your modelgate key as 'Authorization: Bearer <key>' " +
          "(Gemini clients: the 'x-goog-api-key' header or '?key='). Keys are created in the console."
      })
    )
  }
  // A plain chain (no generator): every call runs it.
  return Effect.flatMap(KeyStore, (keys) => Effect.flatMap(keys.lookup(secret), (key) => usable(secret, key)))
}

/** Checks 2 and 3 of `authenticate`: the key found for the secret exists, is enabled and has not expired. */
const usable = (
  secret: string,
  key: ApiKey | undefined
): Effect.Effect<ApiKey, InvalidApiKey | KeyDisabled | KeyExpired> => {
  if (key === undefined) {
    return Effect.fail(
      new InvalidApiKey({
        message: `The API key ${
          redact(secret)
        } is not valid. Check that you copied the whole key, or create a new one in the console.`
      })
    )
  }
  if (!key.userEnabled) {
    return Effect.fail(
      new KeyDisabled({
        message:
          `The API key '${key.name}' (${key.prefix}...) belongs to a disabled account. Ask an administrator to enable it.`
      })
    )
  }
  if (!key.enabled) {
    return Effect.fail(
      new KeyDisabled({
        message:
          `The API key '${key.name}' (${key.prefix}...) has been disabled or revoked. Enable it in the console or use another key.`
      })
    )
  }
  const expiresAt = key.expiresAt
  if (expiresAt === null) return Effect.succeed(key)
  return Effect.clockWith((clock) =>
    clock.currentTimeMillisUnsafe() >= expiresAt
      ? Effect.fail(
        new KeyExpired({
          message: `The API key '${key.name}' (${key.prefix}...) expired at ${
            new Date(expiresAt).toISOString()
          }. Create a new key or extend this one in the console.`
        })
      )
      : Effect.succeed(key)
  )
}

/**
 * The dialect of the client being served, so that messages point at that
 * dialect's own paths (a Gemini client is told about `GET /v1beta/models`, not
 * `GET /v1/models`). The server sets it per request; without it, OpenAI.
 *
 * @category admission
 */
export const ClientDialect = Context.Reference<Dialect>("modelgate/core/Admission/ClientDialect", {
  defaultValue: () => "openai"
})

/**
 * Where a client of `dialect` lists the models its key can use.
 *
 * @category admission
 */
export const modelsListPath = (dialect: Dialect): string =>
  dialect === "gemini" ? "GET /v1beta/models" : "GET /v1/models"

/** Shows a key's first characters only, so a mistyped key is recognisable in an error without echoing it. */
const redact = (secret: string): string => secret.length <= 8 ? "'***'" : `'${secret.slice(0, 6)}...'`

/**
 * Where a call may go: the resolved model, the key's group and the candidate
 * channels, best priority first.
 *
 * @category models
 */
export interface Route {
  readonly model: Model
  readonly group: Group
  readonly channels: ReadonlyArray<Channel>
}

const defaultGroup = (name: string): Group => ({
  name,
  ratioMicros: 1_000_000n,
  limits: { rpm: null, tpm: null, concurrency: null }
})

/**
 * Whether the key's own permissions include a model (an empty list allows all).
 *
 * @category admission
 */
export const keyAllows = (key: ApiKey, model: string): boolean => key.models.length === 0 || key.models.includes(model)

/**
 * Checks 4 to 7 against a catalog snapshot. Messages name the listing path of
 * the `ClientDialect` being served.
 *
 * @category admission
 */
export const authorizeIn = (snapshot: Snapshot, key: ApiKey, requested: string, use?: ModelUse): Effect.Effect<
  Route,
  InvalidRequest | ModelNotFound | ModelNotAllowed | ModelNotInGroup | ModelUnpriced
> =>
  Effect.flatMap(
    Effect.service(ClientDialect),
    (dialect) => check(snapshot, key, requested, modelsListPath(dialect), use)
  )

const check = (
  snapshot: Snapshot,
  key: ApiKey,
  requested: string,
  listPath: string,
  use: ModelUse | undefined
): Effect.Effect<
  Route,
  InvalidRequest | ModelNotFound | ModelNotAllowed | ModelNotInGroup | ModelUnpriced
> => {
  // A name with NUL or a line break is refused before it goes anywhere (logs, the request log, CSV files).
  const control = controlCharacter(requested)
  if (control !== undefined) {
    return Effect.fail(
      new InvalidRequest({ param: "model", message: echo(controlCharacterMessage(requested, control)) })
    )
  }
  const id = snapshot.resolveModel(requested, use)
  if (id === undefined) {
    return Effect.fail(
      new ModelNotFound({
        model: echo(requested),
        message: `The model '${
          echo(requested)
        }' does not exist on this gateway. ${listPath} lists the models your key can use.`
      })
    )
  }
  // Undefined for a name a channel serves that has no model (and so no price): refused as unpriced below.
  const model = snapshot.models.get(id)
  if (!keyAllows(key, id)) {
    return Effect.fail(
      new ModelNotAllowed({
        model: id,
        message: `Your API key '${key.name}' may not use the model '${id}'. It may use: ${key.models.join(", ")}. ` +
          "Use one of those, or change the key's models in the console."
      })
    )
  }
  const channels = snapshot.channelsFor(key.group, id)
  if (channels.length === 0) {
    return Effect.fail(
      new ModelNotInGroup({
        model: id,
        group: key.group,
        message: `The model '${id}' is not available in your key's group '${key.group}'. ` +
          `${listPath} lists the models your key can use; an administrator can add the model to the group.`
      })
    )
  }
  if (model === undefined || !isPriced(model)) {
    return Effect.fail(
      new ModelUnpriced({
        model: id,
        message:
          `The model '${id}' has no price configured, so it cannot be billed. An administrator must set its price (or mark it free).`
      })
    )
  }
  return Effect.succeed({ model, group: snapshot.groups.get(key.group) ?? defaultGroup(key.group), channels })
}

/**
 * Checks 4 to 7 against the current catalog. `use` says what the call uses
 * the model for, so that aliases resolve only to a model of that use (see
 * `Snapshot.resolveModel`).
 *
 * @category admission
 */
export const authorize = (
  key: ApiKey,
  requested: string,
  use?: ModelUse
): Effect.Effect<
  Route,
  InvalidRequest | ModelNotFound | ModelNotAllowed | ModelNotInGroup | ModelUnpriced,
  Catalog
> =>
  Effect.flatMap(
    Catalog,
    (catalog) => Effect.flatMap(catalog.current, (snapshot) => authorizeIn(snapshot, key, requested, use))
  )

/**
 * The models a key may call: its permissions intersected with what its group's
 * channels serve, without the models that have no price (a call to them is
 * refused with `ModelUnpriced`, so they are not offered), in catalog order.
 * Exactly the models `authorizeIn` admits for the key.
 *
 * @category admission
 */
export const allowedModels = (snapshot: Snapshot, key: ApiKey): ReadonlyArray<Model> => {
  const result: Array<Model> = []
  for (const id of snapshot.modelsOfGroup(key.group)) {
    const model = snapshot.models.get(id)
    if (model !== undefined && keyAllows(key, id) && isPriced(model)) result.push(model)
  }
  return result
}
