/**
 * Key lookup, the port admission authenticates through. Implementations hash
 * the presented secret with a keyed hash and look the hash up in memory
 * (falling back to the store on a miss); core never sees how.
 *
 * @since 0.1.0
 */
import { Context, type Effect } from "effect"
import type { ApiKey } from "./Domain.ts"
import type { InternalError } from "./GatewayError.ts"

/** @category services */
export class KeyStore extends Context.Service<KeyStore, {
  /** The key whose secret this is, or `undefined` when no key has it. */
  readonly lookup: (secret: string) => Effect.Effect<ApiKey | undefined, InternalError>
}>()("modelgate/core/KeyStore") {}
