/**
 * Sending upstream (`Upstream.send`): the answer's headers are the
 * transport's, read through when something reads them, not copied on every
 * call (a transport may make them only when first read, as the Undici one does).
 */
import { assert, describe, it } from "@effect/vitest"
import { Domain } from "@modelgate/core"
import { Effect, Layer } from "effect"
import { type ResponseBody, Transport } from "../src/wire/Transport.ts"
import * as Upstream from "../src/wire/Upstream.ts"

const channel: Domain.Channel = {
  ...Domain.channelDefaults,
  id: "ch-1",
  name: "openai-main",
  type: "openai",
  baseUrl: "https://upstream.test",
  apiKeys: ["sk-upstream"],
  models: [],
  modelMap: {},
  groups: ["default"],
  priority: 0,
  weight: 1,
  enabled: true
}

const body: ResponseBody = {
  text: () => Effect.succeed("{}"),
  prefix: () => Effect.succeed("{}"),
  next: Effect.undefined,
  flow: () => ({ resume: () => {}, pause: () => {}, cancel: () => {} }),
  discard: () => {}
}

describe("Upstream.send", () => {
  it.effect("reads the answer's headers only when they are read", () => {
    let reads = 0
    const transport = Layer.succeed(Transport)(Transport.of({
      send: () =>
        Effect.succeed({
          status: 200,
          get headers() {
            reads++
            return { "content-type": "application/json" }
          },
          body
        })
    }))
    return Effect.gen(function*() {
      const response = yield* Upstream.send(channel, "https://upstream.test/v1/chat/completions", {}, "{}", {
        total: Number.MAX_SAFE_INTEGER,
        firstByte: Number.MAX_SAFE_INTEGER
      })
      assert.strictEqual(response.status, 200)
      assert.strictEqual(response.channel, channel)
      assert.strictEqual(reads, 0)
      assert.strictEqual(response.headers["content-type"], "application/json")
      assert.strictEqual(reads, 1)
    }).pipe(Effect.provide(transport))
  })
})
