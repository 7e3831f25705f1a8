/**
 * Whether the server is shutting down. Once it is, `/readyz` answers 503 so
 * load balancers stop sending new calls (the server keeps serving for
 * `shutdown_delay_seconds`, then stops accepting and drains), and a stream cut
 * while it drains is recorded as `503 ShuttingDown` rather than as a client
 * that went away. Without a provided value the server is never draining.
 *
 * @since 0.1.0
 */
import { Context, Effect } from "effect"

/** @category services */
export const Draining = Context.Reference<{ readonly draining: Effect.Effect<boolean> }>("modelgate/engine/Draining", {
  defaultValue: () => ({ draining: Effect.succeed(false) })
})
