/**
 * Key lookup, the port admission authenticates through. Implementations hash
 * the presented secret with a keyed hash and look the hash up in memory
 * (falling back to the store on a miss); core never sees how.
 *
 * @since 0.1.0
 */
import { Context, type Effect } from "effect"
import type { ApiKey } from "../domain/Domain.ts"
import type { DatabaseUnavailable, InternalError } from "../errors/GatewayError.ts"

/** @category services */
export class KeyStore extends Context.Service<KeyStore, {
  /** The key whose secret this is, or `undefined` when no key has it (`DatabaseUnavailable` when a key not in memory cannot be looked up). */
  readonly lookup: (secret: string) => Effect.Effect<ApiKey | undefined, InternalError | DatabaseUnavailable>
}>()("modelgate/core/KeyStore") {}
