/**
 * Rate limits: requests per minute, tokens per minute and concurrent calls,
 * for each subject of a call (its key, its user, optionally per model).
 * Implementations: in memory for one process, Redis (atomic scripts) for a
 * cluster; both keep the same behaviour, tested by one suite.
 *
 * A call is admitted for all its subjects at once or not at all. Tokens are
 * admitted on an estimate and corrected with the actual count when the call
 * ends (`Permit.release`), which also frees its concurrency slot.
 *
 * @since 0.1.0
 */
import { Context, type Effect } from "effect"
import type { Limits } from "../domain/Domain.ts"
import type { RateLimited } from "../errors/GatewayError.ts"

/** Who a limit applies to. @category models */
export interface Subject {
  /** A stable identity such as `key:key_123`, `user:usr_9`, `key:key_123:model:gpt-4o`. */
  readonly id: string
  /** Human wording for messages, e.g. "your API key 'laptop'". */
  readonly label: string
  readonly limits: Limits
}

/**
 * The most constrained subject's state after admission, for the
 * `x-ratelimit-*` headers answered on successful calls too.
 *
 * @category models
 */
export interface Snapshot {
  readonly limitRequests: number | null
  readonly remainingRequests: number | null
  /** Milliseconds until the request window frees up. */
  readonly resetRequestsMs: number | null
  readonly limitTokens: number | null
  readonly remainingTokens: number | null
  readonly resetTokensMs: number | null
}

/** An admitted call. @category models */
export interface Permit {
  readonly snapshot: Snapshot
  /** Ends the call: frees its concurrency slot and corrects its token count to `actualTokens`. Idempotent. */
  readonly release: (actualTokens: number) => Effect.Effect<void>
}

/** @category services */
export class RateLimiter extends Context.Service<RateLimiter, {
  /**
   * Admits a call for every subject, or fails with `RateLimited` naming the
   * limit hit (and when a retry may succeed) without consuming anything.
   */
  readonly acquire: (subjects: ReadonlyArray<Subject>, estimatedTokens: number) => Effect.Effect<Permit, RateLimited>
}>()("modelgate/core/RateLimiter") {}

/** A snapshot with no limits. @category constants */
export const unlimited: Snapshot = {
  limitRequests: null,
  remainingRequests: null,
  resetRequestsMs: null,
  limitTokens: null,
  remainingTokens: null,
  resetTokensMs: null
}
