/**
 * Per-channel request parameters: defaults fill what the client did not send,
 * overrides replace what it sent (objects key by key, `null` removes), the
 * client's body is never changed, and the stream_options switch.
 */
import { assert, describe, it } from "@effect/vitest"
import { Domain } from "@modelgate/core"
import * as Params from "../src/dialect/Params.ts"

const channel = (over: Partial<Domain.Channel>): Domain.Channel => ({
  id: "c",
  name: "c",
  type: "openai",
  baseUrl: "http://c.test/v1",
  apiKeys: ["k"],
  models: ["m"],
  modelMap: {},
  groups: ["default"],
  priority: 0,
  weight: 1,
  enabled: true,
  ...Domain.channelDefaults,
  ...over
})

describe("Params", () => {
  it("applies defaults and overrides as a table", () => {
    const cases: ReadonlyArray<
      readonly [string, Record<string, unknown>, Domain.ChannelParams, Record<string, unknown>]
    > = [
      ["a default fills a missing field", { a: 1 }, { defaults: { temperature: 0.2 }, overrides: {} }, {
        a: 1,
        temperature: 0.2
      }],
      ["a default leaves a sent field", { temperature: 1 }, { defaults: { temperature: 0.2 }, overrides: {} }, {
        temperature: 1
      }],
      ["a default fills a null field", { temperature: null }, { defaults: { temperature: 0.2 }, overrides: {} }, {
        temperature: 0.2
      }],
      [
        "a default fills inside a sent object",
        { generationConfig: { topK: 3 } },
        { defaults: { generationConfig: { temperature: 0, topK: 40 } }, overrides: {} },
        { generationConfig: { topK: 3, temperature: 0 } }
      ],
      ["an override replaces", { max_tokens: 5000 }, { defaults: {}, overrides: { max_tokens: 1000 } }, {
        max_tokens: 1000
      }],
      ["an override adds", {}, { defaults: {}, overrides: { user: "gateway" } }, { user: "gateway" }],
      ["a null override removes", { user: "alice", a: 1 }, { defaults: {}, overrides: { user: null } }, { a: 1 }],
      [
        "an override replaces inside an object, key by key",
        { reasoning: { effort: "high", summary: "auto" } },
        { defaults: {}, overrides: { reasoning: { effort: "low" } } },
        { reasoning: { effort: "low", summary: "auto" } }
      ],
      ["arrays are values, not merged", { stop: ["a"] }, { defaults: { stop: ["x", "y"] }, overrides: {} }, {
        stop: ["a"]
      }],
      ["an override beats a default", {}, { defaults: { top_p: 0.5 }, overrides: { top_p: 0.9 } }, { top_p: 0.9 }]
    ]
    for (const [name, body, params, expected] of cases) {
      const before = JSON.stringify(body)
      assert.deepStrictEqual(Params.apply(body, params), expected, name)
      assert.strictEqual(JSON.stringify(body), before, `${name}: the client's body is unchanged`)
    }
  })

  it("edits nothing for a channel without parameters and with stream_options on", () => {
    assert.isUndefined(Params.editOf(channel({})))
    assert.deepStrictEqual(Params.editOf(channel({ params: { defaults: { a: 1 }, overrides: {} } })), {
      params: { defaults: { a: 1 }, overrides: {} },
      streamOptions: true
    })
    // The switch matters only for OpenAI-format upstreams.
    assert.deepStrictEqual(Params.editOf(channel({ streamOptions: false })), {
      params: undefined,
      streamOptions: false
    })
    assert.deepStrictEqual(Params.editOf(channel({ streamOptions: false, type: "azure" })), {
      params: undefined,
      streamOptions: false
    })
    assert.isUndefined(Params.editOf(channel({ streamOptions: false, type: "gemini" })))
  })

  it("removes stream_options when the upstream rejects it, in an object or an encoded body", () => {
    const body = { model: "m", stream: true, stream_options: { include_usage: true } }
    assert.deepStrictEqual(Params.edit(body, { params: undefined, streamOptions: false }), { model: "m", stream: true })
    assert.deepStrictEqual(body.stream_options, { include_usage: true })
    assert.strictEqual(
      Params.editText(JSON.stringify(body), {
        params: { defaults: { temperature: 0 }, overrides: {} },
        streamOptions: false
      }),
      JSON.stringify({ model: "m", stream: true, temperature: 0 })
    )
  })
})
