/**
 * The money port: balance holds before a call and settlement after it. The
 * store implements it with one atomic conditional update per hold (SQLite or
 * PostgreSQL); the rule it must keep is that nothing is spent that was not
 * held, so concurrent calls can never overspend a balance.
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
  /** The user's current balance (what is not held or spent). */
  readonly balance: (userId: string) => Effect.Effect<Nanos, InternalError>
}>()("modelgate/core/Accounts") {}
