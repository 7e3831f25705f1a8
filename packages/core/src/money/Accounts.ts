/**
 * The money port: balance holds before a call and settlement after it. The
 * rules every implementation must keep: a call is admitted only when its
 * hold, its worst case, is covered by the balance (and the key's caps), so
 * concurrent calls (on any number of processes) can never spend what was not
 * there when they started; and a call is charged what it cost, in full, even
 * beyond its hold (an upstream that bills more than the estimate): the
 * balance then goes below zero and the user's next calls are refused until a
 * top-up. The store implements it with balance leases taken by atomic
 * conditional updates, calls' holds taken from them in memory, and charges
 * written in batches (`@modelgate/store/Purses`).
 *
 * @since 0.1.0
 */
import { Context, type Effect } from "effect"
import {
  type DatabaseUnavailable,
  InsufficientBalance,
  type InternalError,
  SpendingCapReached
} from "../errors/GatewayError.ts"
import { formatUsd, type Nanos } from "./Money.ts"

/** What a hold is for. @category models */
export interface HoldRequest {
  readonly userId: string
  readonly keyId: string
  readonly amountNanos: Nanos
  readonly requestId: string
  /**
   * The key has a spending cap (lifetime quota, daily or monthly budget): its
   * hold must be checked against the key's spending where every process sees
   * it, so it is taken in the database, not from a lease.
   */
  readonly capped?: boolean | undefined
  /** How many answers the call asks for (OpenAI `n`, Gemini `candidateCount`), for the refusal's advice. Default 1. */
  readonly choices?: number | undefined
}

/**
 * What a settlement charged. `chargedNanos` is what the call cost, all of it:
 * a charge is never cut at the hold. `overdrawnNanos` is the part of it that
 * the balance (after the hold went back) did not cover: by that much the
 * charge took the balance below zero, or further below, and the user's calls
 * are refused until a top-up. `overCap` is set when the charge took the key's
 * spending past one of its caps (a call already in flight when the cap was
 * reached is the only way past it).
 *
 * @category models
 */
export interface Settled {
  readonly chargedNanos: Nanos
  readonly overdrawnNanos: Nanos
  readonly overCap?: CapOverrun | undefined
}

/**
 * A key's spending cap that a charge took it past: the cap, its limit and the
 * key's spending against it after the charge (above the limit).
 *
 * @category models
 */
export interface CapOverrun {
  readonly cap: "quota" | "daily" | "monthly"
  readonly limitNanos: Nanos
  readonly spentNanos: Nanos
}

/**
 * A balance for display: `readAt` is null when it was read now, else when
 * (epoch ms) the part of it this node could not read now was last read.
 *
 * @category models
 */
export interface BalanceReading {
  readonly nanos: Nanos
  readonly readAt: number | null
}

/** Nothing charged (a hold already settled, or a charge of nothing). @category constants */
export const nothingSettled: Settled = { chargedNanos: 0n, overdrawnNanos: 0n }

/**
 * What a charge of `chargeNanos` overdraws a balance that stood at
 * `balanceNanos` before it (after the call's hold went back): the part of the
 * charge below zero, never more than the charge (a balance already below zero
 * is overdrawn by all of it).
 *
 * @category settlement
 */
export const overdrawn = (balanceNanos: Nanos, chargeNanos: Nanos): Nanos => {
  const covered = balanceNanos > 0n ? balanceNanos : 0n
  return chargeNanos > covered ? chargeNanos - covered : 0n
}

/**
 * The first of a key's caps that its spending is past after a charge
 * (spending above the limit), or undefined.
 *
 * @category settlement
 */
export const capOverrun = (
  caps: ReadonlyArray<readonly [CapOverrun["cap"], Nanos | null, Nanos]>
): CapOverrun | undefined => {
  for (const [cap, limitNanos, spentNanos] of caps) {
    if (limitNanos !== null && spentNanos > limitNanos) return { cap, limitNanos, spentNanos }
  }
  return undefined
}

/**
 * What a refused call can ask for less of: output tokens, and answers when it
 * asked for several (each answer is held for in full).
 *
 * @category refusals
 */
export const askForLess = (choices: number | undefined): string =>
  "ask for fewer output tokens (max_tokens)" +
  ((choices ?? 1) > 1 ? ` or fewer answers (n, candidateCount: ${choices} asked, each held for in full)` : "")

/**
 * The refusal of a hold the balance cannot cover, naming the balance, the
 * amount and what to ask for less of (every implementation of `hold` words it
 * this way).
 *
 * @category refusals
 */
export const insufficientBalance = (
  balanceNanos: Nanos,
  request: Pick<HoldRequest, "amountNanos" | "choices">
): InsufficientBalance =>
  new InsufficientBalance({
    message: balanceNanos < 0n
      ? `Your balance is ${formatUsd(balanceNanos)} USD, below zero: earlier calls cost more than they held. ` +
        `Calls are refused until your balance is topped up (this call may cost up to ${
          formatUsd(request.amountNanos)
        } USD).`
      : `Your balance is ${formatUsd(balanceNanos)} USD but this call may cost up to ${
        formatUsd(request.amountNanos)
      } USD. ` +
        `Top up your balance, or ${askForLess(request.choices)}.`
  })

/**
 * The refusal of a hold a key's cap cannot take, naming the cap, its limit,
 * what the key spent against it and what its calls in progress hold (every
 * implementation of `hold` words it this way). A key whose spending reached
 * the cap (or went past it: calls in flight when it was reached cost more
 * than they held) is told its calls are refused until the cap is raised or
 * its period ends.
 *
 * @category refusals
 */
export const spendingCapReached = (options: {
  readonly keyName: string
  readonly cap: CapOverrun["cap"]
  readonly limitNanos: Nanos
  readonly spentNanos: Nanos
  readonly heldNanos: Nanos
  readonly request: Pick<HoldRequest, "amountNanos" | "choices">
}): SpendingCapReached => {
  const { cap, limitNanos: limit, spentNanos: spent, heldNanos: held } = options
  const what = { quota: "a lifetime spending cap", daily: "a daily budget", monthly: "a monthly budget" }[cap]
  const until = cap === "quota" ? "" : cap === "daily" ? " or the UTC day ends" : " or the UTC month ends"
  return new SpendingCapReached({
    cap,
    message: spent >= limit
      ? `Your API key '${options.keyName}' has ${what} of ${formatUsd(limit)} USD and has spent ${
        formatUsd(spent)
      } USD of it${
        spent > limit ? " (calls in flight when it was reached cost more than they held)" : ""
      }: its calls are refused until the cap is raised in the console${until}.`
      : `Your API key '${options.keyName}' has ${what} of ${formatUsd(limit)} USD: ${formatUsd(spent)} USD spent${
        held > 0n ? ` and ${formatUsd(held)} USD held by calls in progress` : ""
      }, and this call may cost up to ${formatUsd(options.request.amountNanos)} USD. Raise the cap in the console, or ${
        askForLess(options.request.choices)
      }.`
  })
}

/** @category services */
export class Accounts extends Context.Service<Accounts, {
  /**
   * Holds `amountNanos` of the user's balance in one atomic step, or refuses. Returns the hold id.
   * `DatabaseUnavailable` when the hold needs the database and it cannot be reached (nothing was held).
   */
  readonly hold: (
    request: HoldRequest
  ) => Effect.Effect<string, InsufficientBalance | SpendingCapReached | InternalError | DatabaseUnavailable>
  /**
   * Charges `chargeNanos` against the hold, all of it (any amount, however
   * large: beyond the hold it is taken from the balance, which may go below
   * zero) and releases the rest of the hold; returns what was charged, what
   * of it the balance did not cover, and a key cap it took the key past.
   * Idempotent: settling a hold that is already settled does nothing (and
   * returns `nothingSettled`).
   */
  readonly settle: (holdId: string, chargeNanos: Nanos) => Effect.Effect<Settled, InternalError | DatabaseUnavailable>
  /**
   * The user's balance for display: what is not spent, nor held by this gateway's calls in progress
   * (while the database cannot be reached, as last known).
   */
  readonly balance: (userId: string) => Effect.Effect<Nanos, InternalError | DatabaseUnavailable>
  /**
   * The balance as `balance` gives it, and whether it is as last known (the
   * database could not be reached in time) rather than read now. Absent: the
   * balance is always read now.
   */
  readonly balanceAsKnown?: (userId: string) => Effect.Effect<BalanceReading, InternalError | DatabaseUnavailable>
  /** What the user was charged in `[fromMs, toMs)` (epoch ms), for the legacy billing endpoints. */
  readonly spent: (
    userId: string,
    fromMs: number,
    toMs: number
  ) => Effect.Effect<Nanos, InternalError | DatabaseUnavailable>
}>()("modelgate/core/Accounts") {}
