/**
 * The usage port: one record per call, written in the background in batches.
 *
 * @since 0.1.0
 */
import { Context, type Effect } from "effect"
import type { Dialect, WireDialect } from "../domain/Domain.ts"
import type { Nanos } from "./Money.ts"

/**
 * One call, as billed and logged: every call made with a valid key, those
 * refused before any upstream attempt included (with no cost and their
 * refusal's message). Token counts are the upstream's own when
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
  readonly dialectOut: WireDialect
  readonly stream: boolean
  readonly promptTokens: number
  readonly completionTokens: number
  readonly cachedTokens: number
  /** Prompt tokens written to the upstream's prompt cache (part of `promptTokens`). */
  readonly cacheWriteTokens?: number | undefined
  /** Of `completionTokens`, those spent reasoning, when the upstream said (absent: 0). */
  readonly reasoningTokens?: number | undefined
  readonly usageReported: boolean
  readonly costNanos: Nanos
  readonly latencyMs: number
  readonly ttfbMs: number | null
  readonly status: number
  readonly errorCode: string | null
  /**
   * What the caller was told went wrong (the error's message, with the
   * channels' secrets redacted), null when the call succeeded (absent: not
   * kept, as in records written before it was).
   */
  readonly errorMessage?: string | null | undefined
  /**
   * How many upstream attempts the call made (0: none; it was refused before
   * routing: an invalid body, a model it may not use, a rate limit, a balance
   * that cannot hold its worst case).
   */
  readonly attempts: number
  /** Each attempt, in order; the last one served the call when it succeeded. */
  readonly attemptLog: ReadonlyArray<Attempt>
  /**
   * What the translation left out of the client's request by decision (a
   * Responses client's `web_search` tool on another dialect's model), or null.
   */
  readonly note?: string | null | undefined
}

/**
 * One upstream attempt of a call: which channel and key (as a hint, never the
 * secret), what came of it, and how long it took.
 *
 * @category models
 */
export interface Attempt {
  readonly channel: string
  /** The upstream key's last 4 characters, as `…abcd`. */
  readonly keyHint: string
  /** The upstream's HTTP status, when it answered. */
  readonly status: number | null
  /** The error's code (a `GatewayError` tag, or `ClientClosed`), null when the attempt succeeded. */
  readonly errorCode: string | null
  /** What went wrong, in the gateway's words with the upstream's (secrets redacted); null when it succeeded. */
  readonly errorMessage?: string | null | undefined
  readonly durationMs: number
}

/** @category services */
export class UsageLog extends Context.Service<UsageLog, {
  /** Queues a record; never blocks on the database. */
  readonly record: (record: UsageRecord) => Effect.Effect<void>
}>()("modelgate/core/UsageLog") {}
