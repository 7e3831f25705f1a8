/**
 * Users, for administrators: create, change (role, groups, limits, password,
 * enabled), adjust balances, delete. An admin cannot demote, disable or
 * delete themself, and an admin's API key never changes its own user.
 *
 * @since 0.1.0
 */
import { Catalog, Money, Text } from "@modelgate/core"
import { Accounts } from "@modelgate/store/Accounts"
import { CatalogRepo } from "@modelgate/store/CatalogRepo"
import { Reports } from "@modelgate/store/Reports"
import { Sessions } from "@modelgate/store/Sessions"
import { type User, Users } from "@modelgate/store/Users"
import { Effect, Redacted } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api, Principal, type PrincipalShape } from "../Api.ts"
import * as ApiError from "../ApiError.ts"
import type * as C from "../Contract.ts"
import * as Views from "../Views.ts"
import { invalidate, orApiError, parseNanos } from "./Shared.ts"

/** A user's rate limits from a request (only the fields it names), or undefined when it names none. */
const limitsOf = (
  body: { readonly rpm?: number | null; readonly tpm?: number | null; readonly concurrency?: number | null }
) => {
  const limits: { rpm?: number | null; tpm?: number | null; concurrency?: number | null } = {}
  if (body.rpm !== undefined) limits.rpm = body.rpm
  if (body.tpm !== undefined) limits.tpm = body.tpm
  if (body.concurrency !== undefined) limits.concurrency = body.concurrency
  return Object.keys(limits).length === 0 ? undefined : limits
}

/** Each group named must exist (in the database or the catalog). */
const checkGroupsExist = Effect.fnUntraced(function*(groups: ReadonlyArray<string> | undefined) {
  if (groups === undefined) return
  const stored = yield* orApiError((yield* CatalogRepo).listGroups)
  const snapshot = yield* (yield* Catalog.Catalog).current
  const known = new Set([...stored.map((record) => record.group.name), ...snapshot.groups.keys(), "default"])
  const index = groups.findIndex((g) => !known.has(g))
  if (index !== -1) {
    return yield* ApiError.invalid(
      `groups[${index}]: no group named '${Text.clip(groups[index]!)}'`,
      `groups[${index}]`
    )
  }
})

/** An admin's key may not change the user it belongs to (its own limits, balance or state). */
const notSelfByKey = (principal: PrincipalShape, userId: string) =>
  principal.via === "key" && principal.userId === userId
    ? Effect.fail(
      ApiError.forbidden("An API key cannot change its own user: do it from a console session.", "self_change")
    )
    : Effect.void

/** The handlers of the `users` group. @category handlers */
export const layer = HttpApiBuilder.group(
  Api,
  "users",
  Effect.fn(function*(handlers) {
    const users = yield* Users
    const reports = yield* Reports
    const accounts = yield* Accounts
    const sessions = yield* Sessions

    const existing = Effect.fnUntraced(function*(id: string) {
      const user = yield* orApiError(users.findById(id))
      if (user === undefined || user.deletedAt !== null) {
        return yield* ApiError.notFound(`No user with id '${Text.clip(id)}'.`)
      }
      return user
    })

    const view = Effect.fnUntraced(function*(user: User) {
      const stats = yield* orApiError(reports.userStats)
      return Views.adminUser(user, stats.get(user.id))
    })

    const reload = (id: string) => Effect.flatMap(existing(id), view)

    return handlers.handleAll({
      list: Effect.fn("users.list")(function*() {
        const all = yield* orApiError(users.list)
        const stats = yield* orApiError(reports.userStats)
        return {
          data: all.filter((u) => u.deletedAt === null).map((u) => Views.adminUser(u, stats.get(u.id)))
        } satisfies C.UserList
      }),

      create: Effect.fn("users.create")(function*({ payload }) {
        const principal = yield* Principal
        yield* checkGroupsExist(payload.groups)
        const opening = yield* parseNanos(payload.balance, "balance")
        const user = yield* orApiError(
          users.create({ name: payload.name, role: payload.role ?? "user", password: Redacted.make(payload.password) })
        )
        if (payload.groups !== undefined) yield* orApiError(users.setGroups(user.id, payload.groups))
        const limits = limitsOf(payload)
        if (limits !== undefined) yield* orApiError(users.setLimits(user.id, limits))
        if (opening !== undefined && opening > 0n) {
          yield* orApiError(accounts.topUp(user.id, opening, "opening balance", principal.userId))
        }
        yield* invalidate("users", [user.id])
        return yield* reload(user.id)
      }),

      get: ({ params }) => reload(params.id),

      update: Effect.fn("users.update")(function*({ params, payload }) {
        const principal = yield* Principal
        const user = yield* existing(params.id)
        yield* notSelfByKey(principal, user.id)
        if (user.id === principal.userId && (payload.role === "user" || payload.enabled === false)) {
          return yield* ApiError.invalid(
            payload.role === "user"
              ? "role: you cannot remove your own admin role"
              : "enabled: you cannot disable yourself",
            payload.role === "user" ? "role" : "enabled"
          )
        }
        yield* checkGroupsExist(payload.groups)
        if (payload.role !== undefined) yield* orApiError(users.setRole(user.id, payload.role))
        if (payload.enabled !== undefined) yield* orApiError(users.setEnabled(user.id, payload.enabled))
        if (payload.groups !== undefined) yield* orApiError(users.setGroups(user.id, payload.groups))
        const limits = limitsOf(payload)
        if (limits !== undefined) yield* orApiError(users.setLimits(user.id, limits))
        if (payload.password !== undefined) {
          yield* orApiError(users.setPassword(user.id, Redacted.make(payload.password)))
          // A reset password ends the user's sessions (the admin's own one stays when they reset their own).
          yield* orApiError(
            sessions.removeAllOf(user.id, user.id === principal.userId ? principal.session?.token : undefined)
          )
        }
        if (payload.enabled === false) yield* orApiError(sessions.removeAllOf(user.id))
        yield* invalidate("users", [user.id])
        return yield* reload(user.id)
      }),

      delete: Effect.fn("users.delete")(function*({ params }) {
        const principal = yield* Principal
        const user = yield* existing(params.id)
        if (user.id === principal.userId) return yield* ApiError.invalid("id: you cannot delete yourself", "id")
        const revoked = yield* orApiError(users.remove(user.id))
        // The gateways drop the user's keys from their caches: by user, and each revoked key by id.
        yield* invalidate("users", [user.id])
        if (revoked.length > 0) yield* invalidate("keys", revoked)
        return { ok: true } satisfies C.Ok
      }),

      adjust: Effect.fn("users.adjust")(function*({ params, payload }) {
        const principal = yield* Principal
        const user = yield* existing(params.id)
        yield* notSelfByKey(principal, user.id)
        const nanos = yield* parseNanos(payload.amount, "amount")
        const balance = yield* accounts.adjust(user.id, nanos, payload.reason, principal.userId).pipe(
          Effect.catchTag("InvalidInput", (error) =>
            Effect.fail(
              ApiError.invalid(
                nanos < 0n && /below zero/.test(error.message)
                  ? `amount: the balance is $${Money.formatUsd(user.balanceNanos)}; it cannot go below zero (at most $${
                    Money.formatUsd(user.balanceNanos)
                  } can be deducted)`
                  : `amount: ${error.message.replace(/^amountNanos:\s*/, "")}`,
                "amount"
              )
            )),
          orApiError
        )
        return { balance: Money.formatUsd(balance) } satisfies C.BalanceResult
      })
    })
  })
)
