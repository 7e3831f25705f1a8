/**
 * The `playground` group of the management API: a chat from the console. Its
 * request and response Schemas and its endpoints (`PlaygroundGroup`);
 * `Contract.ts` states the wire conventions and `Api.ts` composes the groups.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import { Authentication, Csrf, SessionOnly } from "../Guards.ts"
import { describe } from "../internal/endpoints.ts"

/** One message of a playground conversation. @category playground */
export const PlaygroundMessage = Schema.Struct({
  role: Schema.Literals(["user", "assistant"]),
  content: Schema.String.check(Schema.isMinLength(1, { message: "a message cannot be empty" }))
})
export type PlaygroundMessage = typeof PlaygroundMessage.Type

/**
 * `POST /api/playground/chat`: one turn of the console's playground, run
 * through the gateway's engine as the caller's own key `keyId` (its
 * permissions, limits, caps and balance), streamed back as OpenAI chat
 * completion chunks (server-sent events) with the call's `x-request-id`.
 *
 * @category playground
 */
export const PlaygroundChatRequest = Schema.Struct({
  keyId: Schema.String.check(Schema.isMinLength(1, { message: "Pick a key" })),
  model: Schema.String.check(Schema.isMinLength(1, { message: "Pick a model" })),
  system: Schema.optional(Schema.String),
  messages: Schema.Array(PlaygroundMessage).check(Schema.isMinLength(1, { message: "Write a message" })),
  temperature: Schema.optional(Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 2 }))),
  maxTokens: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 1_000_000 }))),
  topP: Schema.optional(Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 1 })))
})
export type PlaygroundChatRequest = typeof PlaygroundChatRequest.Type

/** The console's playground: chat through the engine as one of one's own keys. @category groups */
export class PlaygroundGroup extends HttpApiGroup.make("playground")
  .add(
    HttpApiEndpoint.post("chat", "/api/playground/chat", {
      payload: PlaygroundChatRequest,
      success: Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/event-stream" }))
    })
      .annotateMerge(
        describe(
          "One streamed chat turn as one of one's own keys (never its secret): the same engine, permissions, limits, " +
            "caps and billing as a call to /v1/chat/completions with that key; the answer is OpenAI chat completion " +
            "chunks as server-sent events, with the call's x-request-id. Needs a console session and its CSRF token."
        )
      )
  )
  .middleware(SessionOnly)
  .middleware(Csrf)
  .middleware(Authentication)
{}
