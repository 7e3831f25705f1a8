/**
 * The port the console's playground runs its calls through: the host (node-
 * http) hands the call to the gateway's engine as the given key, exactly as a
 * request to `POST /v1/chat/completions` presenting that key's secret would
 * run (admission, limits, caps, balance hold, routing, settlement, the request
 * log), and answers with the engine's answer as an HTTP response (a stream of
 * server-sent events, or a JSON error in the OpenAI envelope). The API itself
 * never sees a key's secret: keys are stored hashed, and the playground names
 * a key by its id.
 *
 * A `Context.Reference` whose default has no engine: an API served without
 * one (its unit tests) answers the playground with a 503 that says so.
 *
 * @since 0.1.0
 */
import type { Domain } from "@modelgate/core"
import { Context, type Effect } from "effect"
import type { HttpServerResponse } from "effect/http/HttpServerResponse"

/** One playground call: the key it runs as, and an OpenAI chat completions request body. @category models */
export interface PlaygroundCall {
  readonly key: Domain.ApiKey
  readonly body: Uint8Array
}

/** @category services */
export const PlaygroundEngine = Context.Reference<{
  readonly chat: ((call: PlaygroundCall) => Effect.Effect<HttpServerResponse>) | undefined
}>("modelgate/admin-api/PlaygroundEngine", { defaultValue: () => ({ chat: undefined }) })
