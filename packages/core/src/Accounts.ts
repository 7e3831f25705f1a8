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
import type { InsufficientBalance, InternalError, SpendingCapReached } from "./GatewayError.ts"
import type { Nanos } from "./Money.ts"

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
}

/** @category services */
export class Accounts extends Context.Service<Accounts, {
  /** Holds `amountNanos` of the user's balance in one atomic step, or refuses. Returns the hold id. */
  readonly hold: (request: HoldRequest) => Effect.Effect<string, InsufficientBalance | SpendingCapReached | InternalError>
  /**
   * Charges `chargeNanos` against the hold and releases the rest. Idempotent:
   * settling a hold that is already settled does nothing.
   */
  readonly settle: (holdId: string, chargeNanos: Nanos) => Effect.Effect<void, InternalError>
  /** The user's balance for display: what is not spent, nor held by this gateway's calls in progress. */
  readonly balance: (userId: string) => Effect.Effect<Nanos, InternalError>
}>()("modelgate/core/Accounts") {}
