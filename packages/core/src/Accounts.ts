/**
 * The money port: balance holds before a call and settlement after it. The
 * rule every implementation must keep is that nothing is spent that was not
 * held, so concurrent calls (on any number of processes) can never overspend
 * a balance. The store implements it with balance leases taken by atomic
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
  type SpendingCapReached
} from "./GatewayError.ts"
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
 * What a settlement charged: `chargedNanos` was taken from the balance;
 * `shortfallNanos` is what the call cost beyond it, when the hold and what the
 * balance (or the lease) had left did not cover the cost. A balance never goes
 * below zero, so a shortfall is never charged later.
 *
 * @category models
 */
export interface Settled {
  readonly chargedNanos: Nanos
  readonly shortfallNanos: Nanos
}

/** Nothing charged, nothing short (a hold already settled, or a charge of nothing). @category constants */
export const nothingSettled: Settled = { chargedNanos: 0n, shortfallNanos: 0n }

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
    message:
      `Your balance is ${formatUsd(balanceNanos)} USD but this call may cost up to ${
        formatUsd(request.amountNanos)
      } USD. ` +
      `Top up your balance, or ${askForLess(request.choices)}.`
  })

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
   * Charges `chargeNanos` against the hold (up to the hold plus what the
   * balance or lease has left; any amount, however large) and releases the
   * rest; returns what was charged and the shortfall. Idempotent: settling a
   * hold that is already settled does nothing (and returns `nothingSettled`).
   */
  readonly settle: (holdId: string, chargeNanos: Nanos) => Effect.Effect<Settled, InternalError | DatabaseUnavailable>
  /**
   * The user's balance for display: what is not spent, nor held by this gateway's calls in progress
   * (while the database cannot be reached, as last known).
   */
  readonly balance: (userId: string) => Effect.Effect<Nanos, InternalError | DatabaseUnavailable>
  /** What the user was charged in `[fromMs, toMs)` (epoch ms), for the legacy billing endpoints. */
  readonly spent: (
    userId: string,
    fromMs: number,
    toMs: number
  ) => Effect.Effect<Nanos, InternalError | DatabaseUnavailable>
}>()("modelgate/core/Accounts") {}
