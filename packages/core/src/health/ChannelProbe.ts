/**
 * Sending one real, tiny request through a channel, for the console's Test
 * button and the health prober, and reading the upstream's own model list,
 * for the console's Fetch models. Implemented by the engine over the host's
 * upstream transport.
 *
 * @since 0.1.0
 */
import { Context, type Effect } from "effect"
import type { ListedModel } from "../dialect/Dialect.ts"
import type { Channel } from "../domain/Domain.ts"
import type { GatewayError } from "../errors/GatewayError.ts"

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
   * (401, or a 4xx its error names as a key problem); for `checkKey` (which
   * asks for no model) any 401 or 403 too. A 403 to a model probe may be
   * about that model (an organisation not verified for it), never the key's.
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
  /**
   * Tests `apiKey` (default: the channel's first key) with a request that
   * depends on no model: the first page of the provider's model list (OpenAI
   * `GET /models`, Gemini `GET /v1beta/models`, Anthropic `GET /v1/models`,
   * Azure OpenAI `GET /openai/models`). The health prober's check of a key.
   */
  readonly checkKey: (channel: Channel, apiKey?: string) => Effect.Effect<ProbeResult>
  /**
   * The upstream's own list of its models (every page), read with `apiKey`
   * (default: the channel's first key), sorted by id. Fails with
   * `UnsupportedFeature` when the channel cannot list (Azure OpenAI), else
   * with the upstream's error as the gateway classifies it, its own words
   * added (secrets redacted).
   */
  readonly listModels: (channel: Channel, apiKey?: string) => Effect.Effect<ReadonlyArray<ListedModel>, GatewayError>
}>()("modelgate/core/ChannelProbe") {}
