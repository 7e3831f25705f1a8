import { assert, describe, it } from "@effect/vitest"
import type { Canonical } from "@modelgate/core"
import { Effect, Stream } from "effect"
import { decodeUpstream, encodeClient } from "../src/chat/Stream.ts"
import * as Framing from "../src/Framing.ts"

describe("Framing", () => {
  it("frames one JSON text per event and ends with [DONE]", () => {
    assert.strictEqual(Framing.frame("{\"a\":1}"), "data: {\"a\":1}\n\n")
    assert.strictEqual(Framing.DONE, "data: [DONE]\n\n")
  })
})

describe("Stream transforms", () => {
  it.effect("decodeUpstream then encodeClient", () =>
    Effect.gen(function*() {
      const upstream = [
        "data: {\"id\":\"c\",\"created\":2,\"model\":\"up\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c\",\"created\":2,\"model\":\"up\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"
      ]
      const events = yield* Stream.fromIterable(upstream).pipe(decodeUpstream, Stream.runCollect)
      assert.deepStrictEqual(
        events,
        [
          { type: "start", id: "c", model: "up", created: 2 },
          { type: "text", index: 0, text: "Hi" },
          { type: "finish", index: 0, reason: "stop" }
        ] satisfies Array<Canonical.StreamEvent>
      )
      const text = (yield* Stream.fromIterable(events).pipe(
        encodeClient({ model: "alias", includeUsage: false }),
        Stream.runCollect
      )).join("")
      assert.strictEqual(
        text,
        "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":2,\"model\":\"alias\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n" +
          "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":2,\"model\":\"alias\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n" +
          "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":2,\"model\":\"alias\",\"choices\":[{\"index\":0,\"delta\":{},\"logprobs\":null,\"finish_reason\":\"stop\"}]}\n\n" +
          "data: [DONE]\n\n"
      )
    }))
  it.effect("an in-band upstream error fails the stream with the classified error", () =>
    Effect.gen(function*() {
      const error = yield* Stream.make(
        "data: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\",\"code\":null}}\n\n"
      ).pipe(
        decodeUpstream,
        Stream.runCollect,
        Effect.flip
      )
      assert.strictEqual(error._tag, "UpstreamUnavailable")
      const garbage = yield* Stream.make("data: {\"nope\":1}\n\n").pipe(decodeUpstream, Stream.runCollect, Effect.flip)
      assert.include(garbage.message, "id")
    }))
})
