import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Result } from "effect"
import * as fc from "fast-check"
import {
  checkStructure,
  EAGER_CHECK_BYTES,
  inspectChatBody,
  PassthroughMeter,
  upstreamBody,
  usageOfResponse
} from "../src/chat/Passthrough.ts"
import { decodeRequestResult } from "../src/chat/Request.ts"
import * as Arbitraries from "../src/testing/Arbitraries.ts"

const chunk = (delta: Record<string, unknown>) =>
  `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":${
    JSON.stringify(delta)
  },"finish_reason":null}],"usage":null}\n\n`
const usageChunk =
  "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":7,\"total_tokens\":18,\"prompt_tokens_details\":{\"cached_tokens\":4}}}\n\n"
const stream = chunk({ role: "assistant", content: "" }) + chunk({ content: "Hello" }) + chunk({ content: " world" }) +
  usageChunk +
  "data: [DONE]\n\n"

const feed = (meter: PassthroughMeter, parts: ReadonlyArray<string>) => {
  const forwarded: Array<string> = []
  for (const part of parts) forwarded.push(meter.push(part))
  forwarded.push(meter.end())
  return forwarded
}

/** The body forwarded upstream, as text. */
const forwarded = (inspected: Parameters<typeof upstreamBody>[0], model: string): string =>
  new TextDecoder().decode(upstreamBody(inspected, model))

describe("inspectChatBody / upstreamBody", () => {
  it.effect("reads model, stream, include_usage and max tokens; changes only model", () =>
    Effect.gen(function*() {
      const text =
        "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"model\":\"alias\",\"stream\":true,\"max_tokens\":5,\"stream_options\":{\"x\":1},\"extra\":[1]}"
      const inspected = yield* inspectChatBody(text)
      assert.deepStrictEqual([inspected.model, inspected.stream, inspected.includeUsage, inspected.maxTokens], [
        "alias",
        true,
        false,
        5
      ])
      assert.strictEqual(
        forwarded(inspected, "gpt-4o"),
        "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"model\":\"gpt-4o\",\"stream\":true,\"max_tokens\":5,\"stream_options\":{\"x\":1,\"include_usage\":true},\"extra\":[1]}"
      )
      const plain = yield* inspectChatBody("{\"model\":\"a\",\"messages\":[]}")
      assert.strictEqual(forwarded(plain, "b"), "{\"model\":\"b\",\"messages\":[]}")
    }))
  it.effect("forwards the client's own bytes when nothing changes", () =>
    Effect.gen(function*() {
      // Spacing, key order and a number JSON.parse would round (a 64-bit seed) survive as sent.
      const text = "{ \"model\": \"m\", \"seed\": 12345678901234567890, \"messages\": [] }"
      assert.strictEqual(forwarded(yield* inspectChatBody(text), "m"), text)
      const asked = "{\"model\":\"m\",\"stream\":true,\"stream_options\":{\"include_usage\":true},\"messages\":[]}"
      assert.strictEqual(forwarded(yield* inspectChatBody(asked), "m"), asked)
      // A stream that did not ask for usage is changed: the gateway asks for it.
      const streamed = "{\"model\":\"m\",\"stream\":true,\"messages\":[]}"
      assert.include(forwarded(yield* inspectChatBody(streamed), "m"), "\"include_usage\":true")
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

describe("inspectChatBody: large bodies", () => {
  /** A body past EAGER_CHECK_BYTES: a long history a coding agent would send, plus `fields`. */
  const large = (fields: Record<string, unknown> = {}, messages: ReadonlyArray<unknown> = []) =>
    JSON.stringify({
      model: "m",
      messages: [
        ...Array.from(
          { length: 40 },
          (_, i) => ({ role: i % 2 ? "assistant" : "user", content: `turn ${i} ${"x".repeat(600)}` })
        ),
        ...messages
      ],
      ...fields
    })

  it.effect("reads what the call needs by scanning, counts media, and leaves the structure check for a refusal", () =>
    Effect.gen(function*() {
      const text = large({ stream: true, max_tokens: 9, n: 2 }, [
        {
          role: "user",
          content: [{ type: "text", text: "the word \"type\": \"image_url\" in text is not an image" }, {
            type: "image_url",
            image_url: { url: "https://x/a.png" }
          }]
        },
        {
          role: "user",
          content: [{ type: "input_audio", input_audio: { data: "UklGRg==", format: "wav" } }, {
            type: "file",
            file: { file_id: "f" }
          }]
        }
      ])
      assert.isAbove(text.length, EAGER_CHECK_BYTES)
      const inspected = yield* inspectChatBody(new TextEncoder().encode(text))
      assert.deepStrictEqual(
        [
          inspected.model,
          inspected.stream,
          inspected.maxTokens,
          inspected.choices,
          inspected.mediaParts,
          inspected.checked
        ],
        ["m", true, 9, 2, 3, false]
      )
      assert.isUndefined(checkStructure(inspected), "a well-formed body passes the deferred check")
      const both = yield* inspectChatBody(large({ max_tokens: 900, max_completion_tokens: 9 }))
      assert.strictEqual(both.maxTokens, 900, "both set: the hold covers the larger")
      // Only the model is replaced and usage asked for; every other byte goes as it came.
      assert.strictEqual(
        forwarded(inspected, "up"),
        text.replace("\"model\":\"m\"", "\"model\":\"up\"").slice(0, -1) +
          ",\"stream_options\":{\"include_usage\":true}}"
      )
    }))

  it.effect("a malformed message deep in a large body is named by the deferred check", () =>
    Effect.gen(function*() {
      const inspected = yield* inspectChatBody(large({}, [{ role: "usr", content: "x" }]))
      const error = checkStructure(inspected)
      assert.strictEqual(error?.param, "messages[40].role")
      assert.include(error?.message, "got the string 'usr'")
    }))

  it.effect("the top-level fields and JSON syntax are still refused at once, whatever the size", () =>
    Effect.gen(function*() {
      const cases: Array<[string, string, string | undefined]> = [
        [large({ stream: "yes" }), "'stream' must be a boolean", "stream"],
        [large({ n: 0 }), "'n' must be a positive integer", "n"],
        [large({ model: "" }), "'model' must be a non-empty string", "model"],
        [large({ messages: { a: "x".repeat(EAGER_CHECK_BYTES) } }), "'messages' must be an array", "messages"],
        [
          large({ max_tokens: 1, max_completion_tokens: "100000" }),
          "Invalid 'max_completion_tokens'",
          "max_completion_tokens"
        ],
        [large({ max_tokens: 1.5 }), "Invalid 'max_tokens': expected an integer", "max_tokens"],
        [large({ model: "o1-pro" }).slice(0, -1) + ",\"model\":\"vip-model\"}", "sets 'model' more than once", "model"],
        [large().slice(0, -1), "The request body is not valid JSON", undefined],
        [large().replace("\"turn 3", "\"turn 3\"]"), "The request body is not valid JSON", undefined]
      ]
      for (const [text, message, param] of cases) {
        const error = yield* Effect.flip(inspectChatBody(text))
        assert.include(error.message, message)
        assert.strictEqual(error.param, param)
      }
    }))
})

describe("inspectChatBody: structure", () => {
  const body = (fields: Record<string, unknown>) =>
    JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }], ...fields })

  it.effect("refuses wrong types, naming the field and what was expected", () =>
    Effect.gen(function*() {
      const cases: Array<[string, string, string]> = [
        [
          body({ messages: [{ role: 5, content: { x: 1 } }] }),
          "messages[0].role",
          "expected one of 'system', 'developer', 'user', 'assistant', 'tool' or 'function', got the number 5"
        ],
        [body({ messages: [{ role: "usr", content: "x" }] }), "messages[0].role", "got the string 'usr'"],
        [body({ messages: [{ content: "x" }] }), "messages[0].role", "'messages[0].role' is required"],
        [body({ messages: ["hello"] }), "messages[0]", "expected a message object"],
        [
          body({ messages: [{ role: "user", content: { x: 1 } }] }),
          "messages[0].content",
          "expected a string or an array of content parts"
        ],
        [body({ messages: [{ role: "user" }] }), "messages[0].content", "'messages[0].content' is required"],
        [
          body({ messages: [{ role: "user", content: [{ type: "video", url: "x" }] }] }),
          "messages[0].content[0].type",
          "expected 'text', 'image_url', 'input_audio' or 'file'"
        ],
        [
          body({ messages: [{ role: "system", content: [{ type: "image_url", image_url: { url: "x" } }] }] }),
          "messages[0].content[0].type",
          "expected 'text'"
        ],
        [
          body({ messages: [{ role: "user", content: [{ type: "text", text: 1 }] }] }),
          "messages[0].content[0].text",
          "expected a string"
        ],
        [
          body({ messages: [{ role: "user", content: [{ type: "image_url", image_url: {} }] }] }),
          "messages[0].content[0].image_url.url",
          "is required"
        ],
        [
          body({ messages: [{ role: "assistant", tool_calls: {} }] }),
          "messages[0].tool_calls",
          "expected an array of tool calls"
        ],
        [
          body({
            messages: [{
              role: "assistant",
              tool_calls: [{ id: "c", type: "function", function: { name: "f", arguments: {} } }]
            }]
          }),
          "messages[0].tool_calls[0].function.arguments",
          "expected a string of JSON"
        ],
        [body({ messages: [{ role: "tool", content: "42" }] }), "messages[0].tool_call_id", "is required"],
        [body({ temperature: "hot" }), "temperature", "expected a number, got the string 'hot'"],
        [body({ max_tokens: 1.5 }), "max_tokens", "expected an integer, got the number 1.5"],
        [body({ stop: [1] }), "stop", "expected a string or an array of strings"],
        [body({ tools: "search" }), "tools", "expected an array of tools"],
        [
          body({ tools: [{ type: "function", function: { name: "" } }] }),
          "tools[0].function.name",
          "expected a non-empty string"
        ],
        [body({ tool_choice: 3 }), "tool_choice", "expected"],
        [body({ response_format: "json" }), "response_format", "expected an object with 'type'"],
        [body({ stream_options: { include_usage: "yes" } }), "stream_options.include_usage", "expected a boolean"]
      ]
      for (const [text, param, message] of cases) {
        const error = yield* Effect.flip(inspectChatBody(text))
        assert.strictEqual(error._tag, "InvalidRequest")
        assert.strictEqual(error.param, param, text)
        assert.include(error.message, message, text)
      }
    }))

  it.effect("lets unknown fields, legacy function messages, other tool types and null optionals through", () =>
    Effect.gen(function*() {
      const text = body({
        messages: [
          { role: "developer", content: [{ type: "text", text: "be brief" }] },
          {
            role: "user",
            content: [{ type: "text", text: "hi" }, {
              type: "image_url",
              image_url: { url: "https://x/a.png", detail: "low" }
            }]
          },
          {
            role: "assistant",
            content: null,
            tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }]
          },
          { role: "tool", tool_call_id: "c1", content: "42" },
          { role: "function", name: "f", content: "old" }
        ],
        tools: [{ type: "custom", custom: { name: "grammar" } }, {
          type: "function",
          function: { name: "f", parameters: { type: "object" } }
        }],
        temperature: null,
        max_completion_tokens: 10,
        stop: ["x"],
        vendor_extension: { anything: [1, 2] }
      })
      const inspected = yield* inspectChatBody(text)
      // Forwarded as received apart from the model.
      assert.strictEqual(forwarded(inspected, "up"), text.replace("\"model\":\"m\"", "\"model\":\"up\""))
    }))

  /** Replaces the value at one path of a JSON value with `replacement`. */
  const mutate = (value: unknown, pick: number, replacement: unknown): unknown => {
    const paths: Array<Array<string | number>> = []
    const walk = (node: unknown, path: Array<string | number>) => {
      paths.push(path)
      if (Array.isArray(node)) node.forEach((child, i) => walk(child, [...path, i]))
      else if (typeof node === "object" && node !== null) {
        for (const [key, child] of Object.entries(node)) walk(child, [...path, key])
      }
    }
    walk(value, [])
    const path = paths[pick % paths.length]!
    if (path.length === 0) return replacement
    const copy = structuredClone(value) as Record<string | number, unknown>
    let node = copy
    for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>
    node[path.at(-1)!] = replacement
    return copy
  }

  it("valid bodies from the adapter's arbitraries pass", async () => {
    await fc.assert(
      fc.asyncProperty(Arbitraries.wireRequest, async (request) => {
        const exit = await Effect.runPromiseExit(inspectChatBody(JSON.stringify(request)))
        assert.isTrue(Exit.isSuccess(exit), String(exit))
      }),
      { numRuns: 300 }
    )
  })

  it("malformed bodies get a 400 naming a field, never a crash; what the full decoder accepts always passes", async () => {
    const malformed = fc.oneof(
      fc.tuple(Arbitraries.wireRequest, fc.nat(), fc.jsonValue()).map(([request, pick, replacement]) =>
        JSON.stringify(mutate(request, pick, replacement))
      ),
      fc.jsonValue().map((value) => JSON.stringify(value)),
      fc.string()
    )
    await fc.assert(
      fc.asyncProperty(malformed, async (text) => {
        const exit = await Effect.runPromiseExit(inspectChatBody(text))
        if (Exit.isFailure(exit)) {
          const error = exit.cause.reasons[0]
          assert.strictEqual(error?._tag, "Fail", `a defect for ${text}`)
          const failure =
            (error as { readonly error: { readonly _tag: string; readonly param?: string; readonly message: string } })
              .error
          assert.strictEqual(failure._tag, "InvalidRequest")
          if (failure.param !== undefined) assert.include(failure.message, failure.param)
          let json: unknown
          try {
            json = JSON.parse(text)
          } catch {
            return
          }
          assert.isTrue(
            Result.isFailure(decodeRequestResult(json)),
            `the full decoder accepts what the passthrough refused: ${text}`
          )
        }
      }),
      { numRuns: 1000 }
    )
  })
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
    // The event ends at the lone \r (a line end of its own); the \n that follows completes it and goes with the next piece.
    assert.strictEqual(forwarded[0], crlf.slice(0, at))
    assert.strictEqual(forwarded.join(""), crlf.replace(usageChunk.replaceAll("\n", "\r\n"), ""))
  })
  it("a cut stream is billed from the generated characters", () => {
    const meter = new PassthroughMeter({ includeUsage: false, promptTokens: 30 })
    const cut = chunk({ content: "Hello" }) + chunk({ content: "\"wor\\u00e9d\"" }) +
      chunk({ tool_calls: [{ index: 0, function: { arguments: "{\"a\":1}" } }] }) +
      chunk({ reasoning_content: "abc" }) +
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

describe("inspectChatBody: media by kind", () => {
  it.effect("image_url is an image, input_audio audio, file a document, in a small body and a large one alike", () =>
    Effect.gen(function*() {
      const content = [
        { type: "text", text: "what \"type\": \"file\" says" },
        { type: "image_url", image_url: { url: "https://x/a.png" } },
        { type: "input_audio", input_audio: { data: "UklGRg==", format: "wav" } },
        { type: "file", file: { file_id: "file-abc" } },
        { type: "file", file: { file_data: "data:application/pdf;base64,JVBERi0=", filename: "a.pdf" } }
      ]
      const history = Array.from({ length: 40 }, (_, i) => ({ role: "user", content: "x".repeat(600) + i }))
      for (const messages of [[{ role: "user", content }], [...history, { role: "user", content }]]) {
        const inspected = yield* inspectChatBody(JSON.stringify({ model: "m", messages }))
        assert.strictEqual(inspected.mediaParts, 4)
        assert.deepStrictEqual(inspected.media, { image: 1, audio: 1, document: 2 })
      }
    }))
})
