/**
 * The engine's settings: what the call flow needs to know of the gateway's
 * configuration. The host resolves them (node-http from the configuration
 * file and the environment, the web handler from its config object) and
 * provides them; `defaults` are the documented defaults (docs/configuration.md).
 *
 * @since 0.1.0
 */
import { Context } from "effect"

/** @category models */
export interface EngineSettings {
  /** This gateway process, as named in records of refused upstream keys (and balance leases). */
  readonly nodeId: string
  /** The largest request body accepted, in bytes. */
  readonly maxBodyBytes: number
  /** The largest non-stream upstream answer read, in bytes (a larger one fails the attempt). */
  readonly maxAnswerBytes: number
  /**
   * The largest single event of an upstream stream, in bytes (an SSE event,
   * up to its blank line); also the most a stream may send before its first
   * event is complete. A larger one fails the attempt before the first byte,
   * and ends a stream in-band after it.
   */
  readonly maxEventBytes: number
  /** The most upstream attempts one call makes. */
  readonly maxAttempts: number
  /** The request header (lower case) whose value keeps a client on one channel, or null for none. */
  readonly stickyHeader: string | null
  /** Whether rate limits are counted separately for each model. */
  readonly rateLimitsPerModel: boolean
  /** How often disabled keys and open breakers are probed, in milliseconds. */
  readonly probeIntervalMs: number
}

/** The documented defaults. @category constants */
export const defaults: Omit<EngineSettings, "nodeId"> = {
  maxBodyBytes: 10 * 1024 * 1024,
  maxAnswerBytes: 32 * 1024 * 1024,
  maxEventBytes: 4 * 1024 * 1024,
  maxAttempts: 3,
  stickyHeader: null,
  rateLimitsPerModel: false,
  probeIntervalMs: 30_000
}

/**
 * The settings service.
 *
 * @category services
 */
export class Settings extends Context.Service<Settings, EngineSettings>()("modelgate/engine/Settings") {}
