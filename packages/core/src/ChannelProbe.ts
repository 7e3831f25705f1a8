/**
 * Sending one real, tiny request through a channel, for the console's Test
 * button and the health prober. Implemented by the server (it owns the
 * upstream HTTP client).
 *
 * @since 0.1.0
 */
import { Context, type Effect } from "effect"
import type { Channel } from "./Domain.ts"

/** The outcome of a probe. @category models */
export interface ProbeResult {
  readonly ok: boolean
  readonly latencyMs: number
  /** The upstream's HTTP status, when it answered. */
  readonly status: number | null
  /** A short description: the answer's first words, or the upstream's error as the gateway classified it, with the upstream's own words. */
  readonly message: string
  /** The upstream's own error message, when it answered with an error. */
  readonly upstreamMessage: string | null
  /**
   * Whether the upstream refused the key: a clear refusal of its credentials
   * (401, or a 4xx its error names as a key problem), or any 403 (a probe
   * carries nothing of a caller's, so a 403 to it is about the key).
   */
  readonly credentialsRefused: boolean
}

/** @category services */
export class ChannelProbe extends Context.Service<ChannelProbe, {
  /**
   * Sends a one-token chat request for `model` (default: the channel's first
   * model) through `channel`, with `apiKey` (default: the channel's first key).
   */
  readonly probe: (channel: Channel, model?: string, apiKey?: string) => Effect.Effect<ProbeResult>
}>()("modelgate/core/ChannelProbe") {}
