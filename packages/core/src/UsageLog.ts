/**
 * The usage port: one record per call, written in the background in batches.
 *
 * @since 0.1.0
 */
import { Context, type Effect } from "effect"
import type { Dialect } from "./Domain.ts"
import type { Nanos } from "./Money.ts"

/**
 * One call, as billed and logged. Token counts are the upstream's own when
 * `usageReported`, otherwise local estimates.
 *
 * @category models
 */
export interface UsageRecord {
  readonly createdAt: number
  readonly requestId: string
  readonly userId: string
  readonly keyId: string
  readonly model: string
  readonly upstreamModel: string
  readonly channel: string
  readonly dialectIn: Dialect
  readonly dialectOut: Dialect
  readonly stream: boolean
  readonly promptTokens: number
  readonly completionTokens: number
  readonly cachedTokens: number
  readonly usageReported: boolean
  readonly costNanos: Nanos
  readonly latencyMs: number
  readonly ttfbMs: number | null
  readonly status: number
  readonly errorCode: string | null
  readonly attempts: number
}

/** @category services */
export class UsageLog extends Context.Service<UsageLog, {
  /** Queues a record; never blocks on the database. */
  readonly record: (record: UsageRecord) => Effect.Effect<void>
}>()("modelgate/core/UsageLog") {}
