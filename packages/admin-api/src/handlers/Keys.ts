/**
 * API keys: one's own (created and changed with a console session only), and
 * anyone's for administrators. A key's limits may only narrow its group's.
 *
 * @since 0.1.0
 */
import { Catalog, Text } from "@modelgate/core"
import { CatalogRepo } from "@modelgate/store/CatalogRepo"
import { type KeyRecord, Keys } from "@modelgate/store/Keys"
import { Users } from "@modelgate/store/Users"
import { Clock, Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api, Principal, type PrincipalShape } from "../Api.ts"
import * as ApiError from "../ApiError.ts"
import type * as C from "../Contract.ts"
import * as Views from "../Views.ts"
import { groupModels, groupsOf } from "./Account.ts"
import { invalidate, orApiError, parseNanos } from "./Shared.ts"

const limitWording = { rpm: "requests per minute", tpm: "tokens per minute", concurrency: "concurrent calls" } as const

/**
 * Each model named must exist on the gateway and be served to the key's group
 * (a key cannot be allowed what its group never reaches); returns their ids
 * (aliases resolved).
 */
const resolveModels = Effect.fnUntraced(function*(models: ReadonlyArray<string> | undefined, group: string) {
  if (models === undefined) return undefined
  const snapshot = yield* (yield* Catalog.Catalog).current
  const reached = snapshot.modelsOfGroup(group)
  const ids: Array<string> = []
  for (const [i, name] of models.entries()) {
    const id = snapshot.resolveModel(name)
    if (id === undefined) {
      return yield* ApiError.invalid(
        `models[${i}]: no model named '${Text.clip(name)}' exists on this gateway`,
        `models[${i}]`
      )
    }
    if (!reached.includes(id)) {
      return yield* ApiError.invalid(
        `models[${i}]: the group '${group}' is not served '${Text.clip(name)}'; its models are: ${
          reached.length === 0 ? "none" : reached.join(", ")
        }`,
        `models[${i}]`
      )
    }
    ids.push(id)
  }
  return ids
})

const checkExpiry = Effect.fnUntraced(function*(expiresAt: number | null | undefined) {
  if (expiresAt === undefined || expiresAt === null) return
  if (expiresAt <= (yield* Clock.currentTimeMillis)) {
    return yield* ApiError.invalid("expiresAt: the expiry must be in the future", "expiresAt")
  }
})

/**
 * A key's limits may only narrow its group's: where the group sets a limit,
 * the key's must not be higher (the lower of the two applies anyway, so a
 * higher one would silently do nothing). This holds for admins too; to allow
 * a key more, put it in a group with a higher limit.
 */
const checkKeyLimits = Effect.fnUntraced(function*(body: C.UpdateKeyRequest, group: string) {
  const known = (yield* (yield* Catalog.Catalog).current).groups.get(group)
  const limits = known?.limits ?? (yield* orApiError((yield* CatalogRepo).findGroup(group)))?.group.limits
  if (limits === undefined) return
  for (const field of ["rpm", "tpm", "concurrency"] as const) {
    const value = body[field]
    const ceiling = limits[field]
    if (value === undefined || value === null || ceiling === null || value <= ceiling) continue
    return yield* ApiError.invalid(
      `${field}: a key's limit may not exceed its group's: group '${group}' allows ${ceiling} ${
        limitWording[field]
      }, ` +
        `so this key may have at most ${ceiling} (leave it empty to use the group's; for more, use a group with a higher limit)`,
      field
    )
  }
})

/** The limit fields a request names. */
const limitsOf = (body: C.UpdateKeyRequest) => {
  const limits: { rpm?: number | null; tpm?: number | null; concurrency?: number | null } = {}
  if (body.rpm !== undefined) limits.rpm = body.rpm
  if (body.tpm !== undefined) limits.tpm = body.tpm
  if (body.concurrency !== undefined) limits.concurrency = body.concurrency
  return limits
}

/** Applies an update to a key, whoever owns it (the caller checked who may). */
const updateKey = Effect.fnUntraced(function*(key: KeyRecord, body: C.UpdateKeyRequest) {
  const keys = yield* Keys
  const models = yield* resolveModels(body.models, key.group)
  yield* checkExpiry(body.expiresAt)
  yield* checkKeyLimits(body, key.group)
  yield* orApiError(keys.update(key.id, {
    name: body.name,
    models,
    expiresAt: body.expiresAt,
    quotaNanos: yield* parseNanos(body.quota, "quota"),
    dailyBudgetNanos: yield* parseNanos(body.dailyBudget, "dailyBudget"),
    monthlyBudgetNanos: yield* parseNanos(body.monthlyBudget, "monthlyBudget"),
    limits: limitsOf(body)
  }))
  if (body.enabled !== undefined) yield* orApiError(keys.setEnabled(key.id, body.enabled))
  yield* invalidate("keys", [key.id])
  const updated = yield* orApiError(keys.findById(key.id))
  return Views.key(updated!)
})

/** Creates a key for a user in one of the groups they may use. */
const createKey = Effect.fnUntraced(function*(
  userId: string,
  role: "user" | "admin",
  payload: C.CreateKeyRequest,
  who: string
) {
  const keys = yield* Keys
  const allowed = yield* groupsOf(userId, role)
  const group = payload.group ?? allowed[0]!
  if (!allowed.includes(group)) {
    return yield* ApiError.invalid(
      `group: the group '${Text.clip(group)}' is not one this user may use; choose one of: ${allowed.join(", ")}`,
      "group"
    )
  }
  const models = yield* resolveModels(payload.models, group)
  yield* checkExpiry(payload.expiresAt)
  yield* checkKeyLimits(payload, group)
  const created = yield* orApiError(
    keys.create({
      userId,
      name: payload.name,
      group,
      models: models ?? [],
      expiresAt: payload.expiresAt ?? null,
      quotaNanos: (yield* parseNanos(payload.quota, "quota")) ?? null,
      dailyBudgetNanos: (yield* parseNanos(payload.dailyBudget, "dailyBudget")) ?? null,
      monthlyBudgetNanos: (yield* parseNanos(payload.monthlyBudget, "monthlyBudget")) ?? null,
      limits: { rpm: payload.rpm ?? null, tpm: payload.tpm ?? null, concurrency: payload.concurrency ?? null }
    }).pipe(
      Effect.catchTag(
        "Conflict",
        () => Effect.fail(ApiError.conflict(`${who} a key named '${payload.name}'.`))
      )
    )
  )
  yield* invalidate("keys", [created.key.id])
  return { key: Views.key(created.key), secret: created.secret } satisfies C.CreatedKey
})

/** The caller's own key, or 404 (also for someone else's key, so ids cannot be probed). */
const ownKey = Effect.fnUntraced(function*(principal: PrincipalShape, id: string) {
  const key = yield* orApiError((yield* Keys).findById(id))
  if (key === undefined || key.userId !== principal.userId || key.revoked) {
    return yield* ApiError.notFound(`No API key with id '${Text.clip(id)}'.`)
  }
  return key
})

/** The handlers of the `keys` group. @category handlers */
export const layer = HttpApiBuilder.group(
  Api,
  "keys",
  Effect.fn(function*(handlers) {
    const keys = yield* Keys
    const users = yield* Users

    const existingUser = Effect.fnUntraced(function*(id: string) {
      const user = yield* orApiError(users.findById(id))
      if (user === undefined || user.deletedAt !== null) {
        return yield* ApiError.notFound(`No user with id '${Text.clip(id)}'.`)
      }
      return user
    })

    return handlers.handleAll({
      list: Effect.fn("keys.list")(function*() {
        const principal = yield* Principal
        // With an API key, the key sees itself only.
        const list = principal.key === undefined
          ? yield* orApiError(keys.list(principal.userId))
          : [yield* ownKey(principal, principal.key.id)]
        return { data: list.filter((k) => !k.revoked).map(Views.key) } satisfies C.KeyList
      }),

      create: Effect.fn("keys.create")(function*({ payload }) {
        const principal = yield* Principal
        return yield* createKey(principal.userId, principal.role, payload, "You already have")
      }),

      update: Effect.fn("keys.update")(function*({ params, payload }) {
        const key = yield* ownKey(yield* Principal, params.id)
        return yield* updateKey(key, payload).pipe(
          Effect.catchIf(
            (error) => error.code === "conflict",
            () => Effect.fail(ApiError.conflict(`You already have a key named '${payload.name}'.`))
          )
        )
      }),

      delete: Effect.fn("keys.delete")(function*({ params }) {
        const key = yield* ownKey(yield* Principal, params.id)
        yield* orApiError(keys.remove(key.id))
        yield* invalidate("keys", [key.id])
        return { ok: true } satisfies C.Ok
      }),

      userKeys: Effect.fn("keys.userKeys")(function*({ params }) {
        const user = yield* existingUser(params.id)
        const list = yield* orApiError(keys.list(user.id))
        return { data: list.filter((k) => !k.revoked).map(Views.key) } satisfies C.KeyList
      }),

      adminUpdate: Effect.fn("keys.adminUpdate")(function*({ params, payload }) {
        const principal = yield* Principal
        if (principal.key?.id === params.id) {
          return yield* ApiError.forbidden(
            "A key cannot change itself: change it from a console session, or with another administrator's key.",
            "self_change"
          )
        }
        const key = yield* orApiError(keys.findById(params.id))
        if (key === undefined || key.revoked) {
          return yield* ApiError.notFound(`No API key with id '${Text.clip(params.id)}'.`)
        }
        return yield* updateKey(key, payload).pipe(
          Effect.catchIf(
            (error) => error.code === "conflict",
            () => Effect.fail(ApiError.conflict(`The user already has a key named '${payload.name}'.`))
          )
        )
      }),

      adminCreate: Effect.fn("keys.adminCreate")(function*({ params, payload }) {
        const user = yield* existingUser(params.id)
        return yield* createKey(user.id, user.role, payload, `${user.name} already has`)
      }),

      adminDelete: Effect.fn("keys.adminDelete")(function*({ params }) {
        const principal = yield* Principal
        if (principal.key?.id === params.id) {
          return yield* ApiError.forbidden(
            "A key cannot revoke itself: revoke it from a console session, or with another administrator's key.",
            "self_change"
          )
        }
        const key = yield* orApiError(keys.findById(params.id))
        if (key === undefined || key.revoked) {
          return yield* ApiError.notFound(`No API key with id '${Text.clip(params.id)}'.`)
        }
        yield* orApiError(keys.remove(key.id))
        yield* invalidate("keys", [key.id])
        return { ok: true } satisfies C.Ok
      }),

      userModels: Effect.fn("keys.userModels")(function*({ params }) {
        const user = yield* existingUser(params.id)
        return yield* groupModels(user.id, user.role)
      })
    })
  })
)
