/**
 * The old OpenAI billing endpoints that chat apps (NextChat, Cherry Studio,
 * ChatGPT-Next-Web forks) still call to show a balance:
 *
 * - `GET /v1/dashboard/billing/subscription`: `hard_limit_usd` (and the soft
 *   and system limits) is the user's balance plus what they were charged this
 *   UTC month, so an app that shows "used X of Y" shows this month's spend out
 *   of everything available this month, and "remaining" equals the balance.
 *   `access_until` is the key's expiry (epoch seconds, 0 for never).
 * - `GET /v1/dashboard/billing/usage?start_date=YYYY-MM-DD&end_date=YYYY-MM-DD`:
 *   `total_usage` is what the user was charged in `[start_date, end_date)`, in
 *   US cents (a decimal number, as OpenAI answered).
 *
 * Amounts in these answers are JSON numbers (the legacy format): they are for
 * display only; exact figures come from `/api/me` and the ledger.
 *
 * @since 0.1.0
 */
import { Accounts, type Domain, GatewayError, Money } from "@modelgate/core"
import { Clock, Effect } from "effect"
import * as Exchange from "../wire/Exchange.ts"

const toUsdNumber = (nanos: bigint): number => Number(Money.formatUsd(nanos))

const monthStart = (now: number): number => {
  const date = new Date(now)
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1)
}

/** `GET /v1/dashboard/billing/subscription`. @category endpoints */
export const subscription = Effect.fnUntraced(function*(key: Domain.ApiKey, requestId: string) {
  const accounts = yield* Accounts.Accounts
  const now = yield* Clock.currentTimeMillis
  const balance = yield* accounts.balance(key.userId)
  const spent = yield* accounts.spent(key.userId, monthStart(now), now + 1)
  const limit = toUsdNumber(balance + spent)
  return Exchange.json(
    {
      object: "billing_subscription",
      has_payment_method: true,
      soft_limit_usd: limit,
      hard_limit_usd: limit,
      system_hard_limit_usd: limit,
      access_until: key.expiresAt === null ? 0 : Math.floor(key.expiresAt / 1000)
    },
    200,
    { "x-request-id": requestId }
  )
})

const day = /^\d{4}-\d{2}-\d{2}$/

const parseDay = (value: string | null, name: string) => {
  if (value === null || !day.test(value) || !Number.isFinite(Date.parse(`${value}T00:00:00Z`))) {
    return Effect.fail(
      new GatewayError.InvalidRequest({ message: `'${name}' is required, as YYYY-MM-DD.`, param: name })
    )
  }
  return Effect.succeed(Date.parse(`${value}T00:00:00Z`))
}

/** `GET /v1/dashboard/billing/usage`. @category endpoints */
export const usage = Effect.fnUntraced(function*(key: Domain.ApiKey, requestId: string, search: string) {
  const params = new URLSearchParams(search)
  const from = yield* parseDay(params.get("start_date"), "start_date")
  const to = yield* parseDay(params.get("end_date"), "end_date")
  const accounts = yield* Accounts.Accounts
  const spent = yield* accounts.spent(key.userId, from, to)
  // cents, as a decimal number: nano-dollars / 10^7
  return Exchange.json(
    {
      object: "list",
      total_usage: Number(Money.formatScaled(spent, 7))
    },
    200,
    { "x-request-id": requestId }
  )
})
