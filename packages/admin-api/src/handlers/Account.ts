/**
 * What the caller is, may call and spends: `/api/me`, the dashboard, one's
 * models, the client settings, and redeeming a code.
 *
 * @since 0.1.0
 */
import { Accounts as AccountsPort, Admission, Catalog, type Domain, Money, Pricing } from "@modelgate/core"
import { Accounts } from "@modelgate/store/Accounts"
import { CatalogRepo } from "@modelgate/store/CatalogRepo"
import { Keys } from "@modelgate/store/Keys"
import { Redemption } from "@modelgate/store/Redemption"
import { Reports, startOfDay, startOfMonth } from "@modelgate/store/Reports"
import { Users } from "@modelgate/store/Users"
import { Clock, Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api, Principal, type PrincipalShape } from "../Api.ts"
import * as ApiError from "../ApiError.ts"
import { AdminApiConfig } from "../Config.ts"
import type * as C from "../Contract.ts"
import { publicBaseUrl } from "../Http.ts"
import * as Views from "../Views.ts"
import { orApiError } from "./Shared.ts"

const DAY_MS = 86_400_000

/**
 * The groups a user may pick for keys: the selectable ones and those assigned
 * to them; admins may pick any (the catalog's too). `default` when none.
 *
 * @category groups
 */
export const groupsOf = Effect.fnUntraced(function*(userId: string, role: "user" | "admin") {
  const repo = yield* CatalogRepo
  const groups = yield* orApiError(repo.listGroups)
  const names = new Set<string>()
  if (role === "admin") {
    for (const { group } of groups) names.add(group.name)
    for (const name of (yield* (yield* Catalog.Catalog).current).groups.keys()) names.add(name)
  } else {
    for (const { group } of groups) if (group.selectable) names.add(group.name)
    for (const name of yield* orApiError((yield* Users).groups(userId))) names.add(name)
  }
  return names.size === 0 ? ["default"] : [...names].sort()
})

/** The caller's user record (404 when it is gone). */
const userOf = Effect.fnUntraced(function*(principal: PrincipalShape) {
  const user = yield* orApiError((yield* Users).findById(principal.userId))
  if (user === undefined) return yield* ApiError.notFound(`No user with id '${principal.userId}'.`)
  return user
})

/**
 * The groups a user may put keys in, each with the models it reaches (prices
 * after the group's ratio): what their key forms offer.
 */
export const groupModels = Effect.fnUntraced(function*(userId: string, role: Domain.Role) {
  const names = yield* groupsOf(userId, role)
  const snapshot = yield* (yield* Catalog.Catalog).current
  const stored = new Map((yield* orApiError((yield* CatalogRepo).listGroups)).map((r) => [r.group.name, r.group]))
  const groups = names.map((name): C.GroupModels => {
    const group = snapshot.groups.get(name) ?? stored.get(name)
    const ratioMicros = group?.ratioMicros ?? 1_000_000n
    const models = snapshot.modelsOfGroup(name).flatMap((id) => {
      const model = snapshot.models.get(id)
      return model === undefined ? [] : [Views.modelInfo(model, ratioMicros)]
    })
    return {
      name,
      ratio: Views.ratio(ratioMicros),
      limits: group?.limits ?? { rpm: null, tpm: null, concurrency: null },
      models
    }
  })
  return { groups } satisfies C.MyModels
})

/** The handlers of the `account` group. @category handlers */
export const layer = HttpApiBuilder.group(
  Api,
  "account",
  Effect.fn(function*(handlers) {
    const reports = yield* Reports

    return handlers.handleAll({
      me: Effect.fn("account.me")(function*() {
        const principal = yield* Principal
        const snapshot = yield* (yield* Catalog.Catalog).current
        const accounts = yield* AccountsPort.Accounts
        // Answered from memory, marked as possibly stale, when the database does not answer in time.
        const reading = yield* orApiError(
          accounts.balanceAsKnown === undefined
            ? Effect.map(accounts.balance(principal.userId), (nanos) => ({ nanos, readAt: null }))
            : accounts.balanceAsKnown(principal.userId)
        )
        const balance = reading.nanos
        const freshness = reading.readAt === null
          ? {}
          : { balance_stale: true, balance_read_at: new Date(reading.readAt).toISOString() }
        const key = principal.key
        if (key !== undefined) {
          return {
            user: key.userName,
            role: key.userRole,
            group: key.group,
            key: {
              id: key.id,
              name: key.name,
              prefix: key.prefix,
              expires_at: key.expiresAt === null ? null : new Date(key.expiresAt).toISOString()
            },
            models: Admission.allowedModels(snapshot, key).map((m) => m.id),
            balance_usd: Money.formatUsd(balance),
            ...freshness
          } satisfies C.GatewayMe
        }
        const models = new Set<string>()
        for (const group of yield* groupsOf(principal.userId, principal.role)) {
          for (const id of snapshot.modelsOfGroup(group)) {
            const model = snapshot.models.get(id)
            if (model !== undefined && Pricing.isPriced(model)) models.add(id)
          }
        }
        return {
          user: principal.userName,
          role: principal.role,
          group: null,
          key: null,
          models: [...models],
          balance_usd: Money.formatUsd(balance),
          ...freshness
        } satisfies C.GatewayMe
      }),

      dashboard: Effect.fn("account.dashboard")(function*() {
        const principal = yield* Principal
        const now = yield* Clock.currentTimeMillis
        const user = yield* userOf(principal)
        const today = yield* orApiError(reports.totals({ userId: user.id, from: startOfDay(now) }))
        const month = yield* orApiError(reports.totals({ userId: user.id, from: startOfMonth(now) }))
        const daily = yield* orApiError(reports.daily({ userId: user.id, from: startOfDay(now) - 29 * DAY_MS }))
        const keys = yield* orApiError((yield* Keys).list(user.id))
        return {
          balance: Money.formatUsd(user.balanceNanos),
          spentToday: Money.formatUsd(today.costNanos),
          spentThisMonth: Money.formatUsd(month.costNanos),
          requestsToday: today.requests,
          tokensToday: today.tokens,
          activeKeys: keys.filter((k) => k.enabled && !k.revoked && (k.expiresAt === null || k.expiresAt > now)).length,
          daily: daily.map(Views.dailyPoint)
        } satisfies C.Dashboard
      }),

      models: Effect.fn("account.models")(function*() {
        const principal = yield* Principal
        return yield* groupModels(principal.userId, principal.role)
      }),

      connect: Effect.fn("account.connect")(function*({ request }) {
        const principal = yield* Principal
        const config = yield* AdminApiConfig
        const baseUrl = publicBaseUrl(request, config)
        const snapshot = yield* (yield* Catalog.Catalog).current
        const groups = yield* groupsOf(principal.userId, principal.role)
        return {
          baseUrl,
          openaiBaseUrl: `${baseUrl}/v1`,
          geminiBaseUrl: baseUrl,
          geminiApiVersion: "v1beta",
          exampleModel: groups.flatMap((g) => snapshot.modelsOfGroup(g))[0] ?? null
        } satisfies C.ConnectInfo
      }),

      redeem: Effect.fn("account.redeem")(function*({ payload }) {
        const principal = yield* Principal
        const amount = yield* orApiError((yield* Redemption).redeem(payload.code, principal.userId))
        const balance = yield* orApiError((yield* Accounts).spendable(principal.userId))
        return { amount: Money.formatUsd(amount), balance: Money.formatUsd(balance) } satisfies C.RedeemResult
      })
    })
  })
)
