import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { inspectChatBody, PassthroughMeter, upstreamBody, usageOfResponse } from "../src/Passthrough.ts"

const chunk = (delta: Record<string, unknown>) =>
  `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":${JSON.stringify(delta)},"finish_reason":null}],"usage":null}\n\n`
const usageChunk =
  "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":7,\"total_tokens\":18,\"prompt_tokens_details\":{\"cached_tokens\":4}}}\n\n"
const stream = chunk({ role: "assistant", content: "" }) + chunk({ content: "Hello" }) + chunk({ content: " world" }) + usageChunk +
  "data: [DONE]\n\n"

const feed = (meter: PassthroughMeter, parts: ReadonlyArray<string>) => {
  const forwarded: Array<string> = []
  for (const part of parts) forwarded.push(meter.push(part))
  forwarded.push(meter.end())
  return forwarded
}

describe("inspectChatBody / upstreamBody", () => {
  it.effect("reads model, stream, include_usage and max tokens; changes only model", () =>
    Effect.gen(function*() {
      const text = "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"model\":\"alias\",\"stream\":true,\"max_tokens\":5,\"stream_options\":{\"x\":1},\"extra\":[1]}"
      const inspected = yield* inspectChatBody(text)
      assert.deepStrictEqual([inspected.model, inspected.stream, inspected.includeUsage, inspected.maxTokens], ["alias", true, false, 5])
      assert.strictEqual(
        upstreamBody(inspected, "gpt-4o"),
        "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"model\":\"gpt-4o\",\"stream\":true,\"max_tokens\":5,\"stream_options\":{\"x\":1,\"include_usage\":true},\"extra\":[1]}"
      )
      const plain = yield* inspectChatBody("{\"model\":\"a\",\"messages\":[]}")
      assert.strictEqual(upstreamBody(plain, "b"), "{\"model\":\"b\",\"messages\":[]}")
    }))
  it.effect("reports what the balance hold needs: the number of choices and of media parts", () =>
    Effect.gen(function*() {
      const plain = yield* inspectChatBody("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}")
      assert.deepStrictEqual([plain.choices, plain.mediaParts], [1, 0])
      assert.strictEqual((yield* inspectChatBody("{\"model\":\"m\",\"messages\":[],\"n\":null}")).choices, 1)
      const body = {
        model: "m",
        n: 3,
        messages: [
          { role: "system", content: [{ type: "text", text: "be brief" }] },
          {
            role: "user",
            content: [
              { type: "text", text: "what is in these?" },
              { type: "image_url", image_url: { url: "https://example.com/a.png" } },
              { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
              { type: "input_audio", input_audio: { data: "UklGRg==", format: "wav" } },
              { type: "file", file: { file_id: "file-abc" } }
            ]
          },
          { role: "assistant", content: [{ type: "refusal", refusal: "no" }] },
          { role: "tool", tool_call_id: "c", content: [{ type: "text", text: "42" }] }
        ]
      }
      const inspected = yield* inspectChatBody(JSON.stringify(body))
      assert.deepStrictEqual([inspected.choices, inspected.mediaParts], [3, 4])
    }))
  it.effect("clear errors", () =>
    Effect.gen(function*() {
      const cases: Array<[string, string, string | undefined]> = [
        ["{\"model\":", "The request body is not valid JSON", undefined],
        ["[1]", "The request body must be a JSON object", undefined],
        ["{\"messages\":[]}", "'model' is required", "model"],
        ["{\"model\":\"\",\"messages\":[]}", "'model' must be a non-empty string", "model"],
        ["{\"model\":\"m\"}", "'messages' is required", "messages"],
        ["{\"model\":\"m\",\"messages\":{}}", "'messages' must be an array", "messages"],
        ["{\"model\":\"m\",\"messages\":[],\"stream\":\"yes\"}", "'stream' must be a boolean", "stream"],
        ["{\"model\":\"m\",\"messages\":[],\"n\":0}", "'n' must be a positive integer", "n"],
        ["{\"model\":\"m\",\"messages\":[],\"n\":1.5}", "'n' must be a positive integer", "n"],
        ["{\"model\":\"m\",\"messages\":[],\"n\":\"3\"}", "'n' must be a positive integer", "n"]
      ]
      for (const [text, message, param] of cases) {
        const error = yield* Effect.flip(inspectChatBody(text))
        assert.include(error.message, message)
        assert.strictEqual(error.param, param)
      }
    }))
})

describe("PassthroughMeter", () => {
  it("drops the usage chunk when the client did not ask for it, and records the usage", () => {
    const meter = new PassthroughMeter({ includeUsage: false })
    assert.strictEqual(feed(meter, [stream]).join(""), stream.replace(usageChunk, ""))
    assert.deepStrictEqual(meter.usage(), { promptTokens: 11, completionTokens: 7, cachedTokens: 4, reported: true })
  })
  it("keeps the usage chunk when the client asked for it", () => {
    const meter = new PassthroughMeter({ includeUsage: true })
    assert.strictEqual(feed(meter, [stream]).join(""), stream)
  })
  it("forwards only whole events, whatever the split", () => {
    const meter = new PassthroughMeter({ includeUsage: false })
    const parts: Array<string> = []
    for (let i = 0; i < stream.length; i += 7) parts.push(stream.slice(i, i + 7))
    const forwarded = feed(meter, parts)
    for (const text of forwarded) assert.isTrue(text === "" || text.endsWith("\n\n"), JSON.stringify(text))
    assert.strictEqual(forwarded.join(""), stream.replace(usageChunk, ""))
    assert.isTrue(meter.usage().reported)
  })
  it("handles CRLF events split between \\r and \\n", () => {
    const crlf = stream.replaceAll("\n", "\r\n")
    const meter = new PassthroughMeter({ includeUsage: false })
    const at = crlf.indexOf("\r\n\r\n") + 3
    const forwarded = feed(meter, [crlf.slice(0, at), crlf.slice(at)])
    assert.strictEqual(forwarded[0], "")
    assert.strictEqual(forwarded.join(""), crlf.replace(usageChunk.replaceAll("\n", "\r\n"), ""))
  })
  it("a cut stream is billed from the generated characters", () => {
    const meter = new PassthroughMeter({ includeUsage: false, promptTokens: 30 })
    const cut = chunk({ content: "Hello" }) + chunk({ content: "\"wor\\u00e9d\"" }) +
      chunk({ tool_calls: [{ index: 0, function: { arguments: "{\"a\":1}" } }] }) + chunk({ reasoning_content: "abc" }) +
      "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tru"
    feed(meter, [cut])
    // 5 + 12 ("wor\u00e9d" with its quotes, decoded) + 7 + 3 + 3 ("tru", unterminated) = 30 characters
    assert.deepStrictEqual(meter.usage(), { promptTokens: 30, completionTokens: 8, cachedTokens: 0, reported: false })
  })
  it("usageOfResponse reads usage or estimates", () => {
    assert.deepStrictEqual(usageOfResponse({ usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } }), {
      promptTokens: 3,
      completionTokens: 2,
      cachedTokens: 0,
      reported: true
    })
    assert.deepStrictEqual(usageOfResponse({ choices: [{ message: { content: "12345678" } }] }, 9), {
      promptTokens: 9,
      completionTokens: 2,
      cachedTokens: 0,
      reported: false
    })
  })
})
