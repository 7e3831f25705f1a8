/**
 * The health of channels and their upstream keys, as the gateway that serves
 * calls sees it: circuit breakers (per process) and keys disabled after the
 * upstream refused their credentials (shared through the database). The
 * server implements the port; the management API reads it for the console.
 * No secret ever appears here: keys are named by position and a hint.
 *
 * @since 0.1.0
 */
import { Context, type Effect } from "effect"
import type { Channel } from "../domain/Domain.ts"
import type { ProbeResult } from "./ChannelProbe.ts"

/**
 * The state of one upstream key:
 *
 * - `healthy`: calls go through (the breaker is closed);
 * - `open`: the breaker opened after failures; calls avoid the key until `retryAt`;
 * - `half_open`: the cool-down is over; a few trial calls or probes decide;
 * - `disabled`: a health probe with the key was refused (401, 403, or the
 *   like in the dialect's words; a call's refusal only has the key probed); only the
 *   health probe uses it, and re-enables it when it works again.
 *
 * @category models
 */
export type KeyState = "healthy" | "open" | "half_open" | "disabled"

/**
 * The state of a channel, from its keys: `healthy` (every key healthy),
 * `degraded` (some keys are not, or a model is kept off it), `open` (no key is healthy and at least one
 * is open or half-open), `disabled` (every key is disabled).
 *
 * @category models
 */
export type ChannelState = "healthy" | "degraded" | "open" | "disabled"

/** One key's health. @category models */
export interface KeyHealth {
  /** Position of the key in the channel's key list. */
  readonly index: number
  /** The last 4 characters of the key, as `…abcd`. */
  readonly hint: string
  readonly state: KeyState
  /** Epoch ms since the key is in this state (null: healthy since the process started). */
  readonly since: number | null
  /** Why the key is not healthy (the upstream's status and message, or the breaker's rule). */
  readonly reason: string | null
  /** Disabled keys: the upstream's HTTP status that disabled them. */
  readonly status: number | null
  /** Open keys: when calls or probes may try the key again (epoch ms). */
  readonly retryAt: number | null
  /** Calls that ended in the breaker's window, and how many of them failed. */
  readonly recentCalls: number
  readonly recentFailures: number
  /** Failures in a row, up to now. */
  readonly consecutiveFailures: number
  /** The last failure: when and what (null when none was seen). */
  readonly lastFailureAt: number | null
  readonly lastError: string | null
  /** The last health probe of this key: when and whether it worked (null: never probed). */
  readonly lastProbeAt: number | null
  readonly lastProbeOk: boolean | null
}

/** A key with no history: healthy since the process started, no calls, no failures, never probed. @category constructors */
export const unseenKey = (index: number, hint: string): KeyHealth => ({
  index,
  hint,
  state: "healthy",
  since: null,
  reason: null,
  status: null,
  retryAt: null,
  recentCalls: 0,
  recentFailures: 0,
  consecutiveFailures: 0,
  lastFailureAt: null,
  lastError: null,
  lastProbeAt: null,
  lastProbeOk: null
})

/**
 * A model the channel's upstream refused with a 403 that was about the model
 * (an organisation not verified for it, a project without access), confirmed
 * by a probe: calls for it go to its other channels until `until`, or until
 * the channel is reset. The keys stay in use for the channel's other models.
 *
 * @category models
 */
export interface RefusedModel {
  /** The model's public name (as callers ask for it). */
  readonly model: string
  /** Epoch ms since the model is kept off the channel. */
  readonly since: number
  /** Epoch ms when calls for it may go to the channel again. */
  readonly until: number
  /** The upstream's HTTP status (403). */
  readonly status: number
  /** The upstream's words, redacted. */
  readonly reason: string
}

/** A channel's health. @category models */
export interface ChannelReport {
  readonly state: ChannelState
  readonly keys: ReadonlyArray<KeyHealth>
  /** The models kept off the channel now (see `RefusedModel`), by name. */
  readonly refusedModels: ReadonlyArray<RefusedModel>
}

/**
 * The state of a channel from its keys' states, and how many of its models
 * are kept off it: a channel whose keys are all healthy is `degraded` while
 * a model is.
 *
 * @category models
 */
export const channelStateOf = (keys: ReadonlyArray<{ readonly state: KeyState }>, refusedModels = 0): ChannelState => {
  if (keys.length === 0) return "disabled"
  let healthy = 0
  let disabled = 0
  for (const key of keys) {
    if (key.state === "healthy") healthy++
    else if (key.state === "disabled") disabled++
  }
  if (healthy === keys.length) return refusedModels > 0 ? "degraded" : "healthy"
  if (healthy > 0) return "degraded"
  return disabled === keys.length ? "disabled" : "open"
}

/**
 * One key's result of an operator's test of a channel (`ChannelHealth.test`).
 *
 * @category models
 */
export interface KeyTest extends ProbeResult {
  /** Position of the key in the channel's key list. */
  readonly index: number
  /** The last 4 characters of the key, as `…abcd`. */
  readonly hint: string
}

/** @category services */
export class ChannelHealth extends Context.Service<ChannelHealth, {
  /** The health of a channel's keys (in the channel's key order). */
  readonly report: (channel: Channel) => Effect.Effect<ChannelReport>
  /** Closes every breaker of the channel and re-enables its disabled keys (an operator's "I fixed it"). */
  readonly reset: (channel: Channel) => Effect.Effect<void>
  /**
   * Tests every key of a channel with one real request for `model` (the
   * console's Test), and records each outcome in the key's health as a health
   * probe's would be: a key that works is healthy (its failures forgotten, a
   * disabled key enabled again); one the upstream refuses is disabled; one
   * that fails (unreachable, timed out, 5xx, 429, not an answer) is failing
   * (its breaker opens for a cool-down); a refusal of the request itself (a
   * 4xx about the model, say) changes nothing.
   */
  readonly test: (channel: Channel, model: string) => Effect.Effect<ReadonlyArray<KeyTest>>
}>()("modelgate/core/ChannelHealth") {}
