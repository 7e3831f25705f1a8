/**
 * The `keys` group of the management API: the caller's API keys. Its request
 * and response Schemas and its endpoints (`KeysGroup`); `Contract.ts` states
 * the wire conventions and `Api.ts` composes the groups.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { AdminOnly, Authentication, Csrf, SessionOnly } from "../Guards.ts"
import { Created, describe, IdParams } from "../internal/endpoints.ts"
import { MyModels } from "./AccountContract.ts"
import { EpochMs, LimitValue, List, ModelNameText, Name, NonNegativeUsd, Ok, Usd } from "./SharedContract.ts"

/** An API key as its owner sees it: never its secret. @category keys */
export const ApiKey = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  prefix: Schema.String,
  group: Schema.String,
  /** Empty: every model the group reaches. */
  models: Schema.Array(Schema.String),
  expiresAt: Schema.NullOr(EpochMs),
  enabled: Schema.Boolean,
  /** Lifetime spending cap, or null. */
  quota: Schema.NullOr(Usd),
  /** Spending cap per UTC day, or null. */
  dailyBudget: Schema.NullOr(Usd),
  /** Spending cap per UTC month, or null. */
  monthlyBudget: Schema.NullOr(Usd),
  spent: Usd,
  /** The key's own requests per minute, or null (its group's limit applies). */
  rpm: LimitValue,
  /** The key's own tokens per minute, or null (its group's limit applies). */
  tpm: LimitValue,
  /** The key's own concurrent calls, or null (its group's limit applies). */
  concurrency: LimitValue,
  lastUsedAt: Schema.NullOr(EpochMs),
  createdAt: EpochMs
})
export type ApiKey = typeof ApiKey.Type

/**
 * A key's own limits and spending caps, as requests set them. A limit may
 * only narrow the key's group's (where the group sets one, the key's must not
 * be higher); `null` removes it.
 *
 * @category keys
 */
export const keyLimitFields = {
  rpm: Schema.optionalKey(LimitValue),
  tpm: Schema.optionalKey(LimitValue),
  concurrency: Schema.optionalKey(LimitValue),
  dailyBudget: Schema.optionalKey(Schema.NullOr(NonNegativeUsd)),
  monthlyBudget: Schema.optionalKey(Schema.NullOr(NonNegativeUsd))
}

/** `POST /api/keys`. @category keys */
export const CreateKeyRequest = Schema.Struct({
  name: Name,
  /** Defaults to the user's first selectable group. */
  group: Schema.optionalKey(Schema.String),
  models: Schema.optionalKey(Schema.Array(ModelNameText)),
  expiresAt: Schema.optionalKey(Schema.NullOr(EpochMs)),
  quota: Schema.optionalKey(Schema.NullOr(NonNegativeUsd)),
  ...keyLimitFields
})
export type CreateKeyRequest = typeof CreateKeyRequest.Type

/** The new key and its secret, shown this once. @category keys */
export const CreatedKey = Schema.Struct({ key: ApiKey, secret: Schema.String })
export type CreatedKey = typeof CreatedKey.Type

/** `PATCH /api/keys/:id`: only the fields given change. @category keys */
export const UpdateKeyRequest = Schema.Struct({
  name: Schema.optionalKey(Name),
  enabled: Schema.optionalKey(Schema.Boolean),
  models: Schema.optionalKey(Schema.Array(ModelNameText)),
  expiresAt: Schema.optionalKey(Schema.NullOr(EpochMs)),
  quota: Schema.optionalKey(Schema.NullOr(NonNegativeUsd)),
  ...keyLimitFields
})
export type UpdateKeyRequest = typeof UpdateKeyRequest.Type

/** `GET /api/keys`. @category keys */
export const KeyList = List(ApiKey)
export type KeyList = typeof KeyList.Type

/** API keys: one's own, and (admins) anyone's. @category groups */
export class KeysGroup extends HttpApiGroup.make("keys")
  .add(
    HttpApiEndpoint.get("list", "/api/keys", { success: KeyList })
      .annotateMerge(describe("One's own keys (with an API key: that key only).")),
    HttpApiEndpoint.post("create", "/api/keys", { payload: CreateKeyRequest, success: Created(CreatedKey) })
      .annotateMerge(describe("Create a key; the answer carries the secret, shown once.")).middleware(SessionOnly),
    HttpApiEndpoint.patch("update", "/api/keys/:id", {
      params: IdParams,
      payload: UpdateKeyRequest,
      success: ApiKey
    })
      .annotateMerge(describe("Rename, enable or disable, re-permission, re-cap one's key.")).middleware(SessionOnly),
    HttpApiEndpoint.delete("delete", "/api/keys/:id", { params: IdParams, success: Ok })
      .annotateMerge(describe("Delete one's key for good.")).middleware(SessionOnly)
  )
  .add(
    HttpApiEndpoint.get("userKeys", "/api/admin/users/:id/keys", { params: IdParams, success: KeyList })
      .annotateMerge(describe("A user's keys.")).middleware(AdminOnly),
    HttpApiEndpoint.patch("adminUpdate", "/api/admin/keys/:id", {
      params: IdParams,
      payload: UpdateKeyRequest,
      success: ApiKey
    })
      .annotateMerge(describe("An admin edits any user's key (not the key making the call).")).middleware(AdminOnly),
    HttpApiEndpoint.post("adminCreate", "/api/admin/users/:id/keys", {
      params: IdParams,
      payload: CreateKeyRequest,
      success: Created(CreatedKey)
    })
      .annotateMerge(
        describe("An admin creates a key for a user, in one of the user's groups; the secret is shown once.")
      )
      .middleware(AdminOnly),
    HttpApiEndpoint.delete("adminDelete", "/api/admin/keys/:id", { params: IdParams, success: Ok })
      .annotateMerge(describe("An admin revokes any user's key (not the key making the call).")).middleware(AdminOnly),
    HttpApiEndpoint.get("userModels", "/api/admin/users/:id/models", { params: IdParams, success: MyModels })
      .annotateMerge(describe("The groups a user may put keys in, with the models each reaches.")).middleware(AdminOnly)
  )
  .middleware(Csrf)
  .middleware(Authentication)
{}
