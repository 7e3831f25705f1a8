/**
 * The console's playground: one chat turn as one of the caller's own keys,
 * through the engine (`PlaygroundEngine`), so it is admitted, limited,
 * capped, billed and logged like any call made with that key. Only the key's
 * owner may use it, from a console session with its CSRF token (the group's
 * middleware); the key is named by id, never by its secret.
 *
 * @since 0.1.0
 */
import { Text } from "@modelgate/core"
import { Keys } from "@modelgate/store/Keys"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api, Principal } from "../Api.ts"
import * as ApiError from "../ApiError.ts"
import type * as C from "../Contract.ts"
import { PlaygroundEngine } from "../PlaygroundEngine.ts"
import { orApiError } from "./Shared.ts"

/**
 * The OpenAI chat completions request of a playground turn: the system prompt
 * first, streamed with usage in the last chunk.
 *
 * @category requests
 */
export const chatBody = (payload: C.PlaygroundChatRequest): Record<string, unknown> => ({
  model: payload.model,
  messages: [
    ...(payload.system !== undefined && payload.system.trim().length > 0
      ? [{ role: "system", content: payload.system }]
      : []),
    ...payload.messages.map((m) => ({ role: m.role, content: m.content }))
  ],
  stream: true,
  stream_options: { include_usage: true },
  ...(payload.temperature !== undefined ? { temperature: payload.temperature } : {}),
  ...(payload.maxTokens !== undefined ? { max_tokens: payload.maxTokens } : {}),
  ...(payload.topP !== undefined ? { top_p: payload.topP } : {})
})

const encoder = new TextEncoder()

/** The handlers of the `playground` group. @category handlers */
export const layer = HttpApiBuilder.group(
  Api,
  "playground",
  Effect.fn(function*(handlers) {
    const keys = yield* Keys
    return handlers.handleAll({
      chat: Effect.fn("playground.chat")(function*({ payload }) {
        const principal = yield* Principal
        const engine = yield* PlaygroundEngine
        if (engine.chat === undefined) {
          return yield* new ApiError.ApiError({
            status: 503,
            type: "api_error",
            code: "playground_unavailable",
            message: "The playground needs the gateway's engine, which this server does not run.",
            param: null
          })
        }
        const record = yield* orApiError(keys.findById(payload.keyId))
        // Another user's key is answered like a missing one: the playground never runs as someone else's key.
        if (record === undefined || record.userId !== principal.userId || record.revoked) {
          return yield* ApiError.invalid(
            `keyId: you have no key with id '${Text.clip(payload.keyId)}' (pick one of your keys on the Keys page)`,
            "keyId",
            "key_not_found"
          )
        }
        const [cached] = yield* orApiError(keys.loadByIds([record.id]))
        if (cached === undefined) {
          return yield* ApiError.invalid(`keyId: the key '${record.name}' was revoked`, "keyId", "key_not_found")
        }
        return yield* engine.chat({ key: cached.key, body: encoder.encode(JSON.stringify(chatBody(payload))) })
      })
    })
  })
)
