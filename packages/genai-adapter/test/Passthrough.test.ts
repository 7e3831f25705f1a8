import { assert, describe, it } from "@effect/vitest"
import { CountTokens, Passthrough } from "@modelgate/genai-adapter"
import { Effect } from "effect"

describe("Passthrough.inspectBody", () => {
  it.effect("parses the body and reads maxOutputTokens in either spelling", () =>
    Effect.gen(function*() {
      const a = yield* Passthrough.inspectBody(
        "{\"contents\":[{\"parts\":[{\"text\":\"hi\"}]}],\"generationConfig\":{\"maxOutputTokens\":64}}"
      )
      assert.strictEqual(a.maxOutputTokens, 64)
      const b = yield* Passthrough.inspectBody(
        "{\"contents\":[{\"parts\":[]}],\"generation_config\":{\"max_output_tokens\":9}}"
      )
      assert.strictEqual(b.maxOutputTokens, 9)
      const c = yield* Passthrough.inspectBody("{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"hi\"}]}]}")
      assert.isUndefined(c.maxOutputTokens)
      assert.deepStrictEqual(c.body, { contents: [{ role: "user", parts: [{ text: "hi" }] }] })
    }))

  it.effect("reports what the balance hold needs: candidateCount and the number of media parts", () =>
    Effect.gen(function*() {
      const plain = yield* Passthrough.inspectBody("{\"contents\":[{\"parts\":[{\"text\":\"hi\"}]}]}")
      assert.deepStrictEqual([plain.candidateCount, plain.mediaParts], [1, 0])
      const body = {
        systemInstruction: {
          parts: [{ text: "be brief" }, { fileData: { mimeType: "application/pdf", fileUri: "gs://b/rules.pdf" } }]
        },
        contents: [
          {
            role: "user",
            parts: [
              { text: "what is in these?" },
              { inlineData: { mimeType: "image/png", data: "iVBORw0KGgo=" } },
              { fileData: { mimeType: "video/mp4", fileUri: "https://example.com/v.mp4" } },
              { inline_data: { mime_type: "audio/wav", data: "UklGRg==" } }
            ]
          },
          { role: "model", parts: [{ text: "a cat" }] },
          { role: "user", parts: [{ file_data: { mime_type: "image/jpeg", file_uri: "gs://b/c.jpg" } }] }
        ],
        generationConfig: { candidateCount: 2, maxOutputTokens: 10 }
      }
      const inspected = yield* Passthrough.inspectBody(JSON.stringify(body))
      assert.deepStrictEqual([inspected.candidateCount, inspected.mediaParts, inspected.maxOutputTokens], [2, 5, 10])
      const snake = yield* Passthrough.inspectBody(
        "{\"contents\":[{\"parts\":[]}],\"generation_config\":{\"candidate_count\":4}}"
      )
      assert.strictEqual(snake.candidateCount, 4)
    }))

  it.effect("names what is wrong", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [string, string | undefined, string]> = [
        ["{", undefined, "not valid JSON"],
        ["[]", undefined, "JSON object"],
        ["{}", "contents", "'contents' is required"],
        ["{\"contents\":{}}", "contents", "must be an array"],
        ["{\"contents\":[]}", "contents", "at least one turn"],
        ["{\"contents\":[1]}", "contents[0]", "must be an object"],
        ["{\"contents\":[{\"parts\":{}}]}", "contents[0].parts", "array of parts"],
        [
          "{\"contents\":[{\"parts\":[]}],\"generationConfig\":{\"maxOutputTokens\":-3}}",
          "generationConfig.maxOutputTokens",
          "positive integer"
        ],
        [
          "{\"contents\":[{\"parts\":[]}],\"generationConfig\":{\"candidateCount\":0}}",
          "generationConfig.candidateCount",
          "positive integer"
        ],
        [
          "{\"contents\":[{\"parts\":[]}],\"generationConfig\":{\"candidateCount\":\"2\"}}",
          "generationConfig.candidateCount",
          "positive integer"
        ]
      ]
      for (const [text, param, fragment] of cases) {
        const error = yield* Effect.flip(Passthrough.inspectBody(text))
        assert.strictEqual(error._tag, "InvalidRequest")
        assert.strictEqual(error.param, param)
        assert.include(error.message, fragment)
      }
    }))
})

describe("Passthrough.inspectBody: large bodies", () => {
  /** A body past EAGER_CHECK_BYTES: a long history, then `turns`, then `fields`. */
  const large = (turns: ReadonlyArray<unknown> = [], fields: Record<string, unknown> = {}) =>
    JSON.stringify({
      contents: [
        ...Array.from(
          { length: 40 },
          (_, i) => ({ role: i % 2 ? "model" : "user", parts: [{ text: `turn ${i} ${"x".repeat(600)}` }] })
        ),
        ...turns
      ],
      ...fields
    })

  it.effect("reads what the call needs by scanning, counts media keys (not text that reads like one), and defers the turn check", () =>
    Effect.gen(function*() {
      const text = large(
        [{
          role: "user",
          parts: [{ text: "\"inlineData\": is only text" }, {
            inlineData: { mimeType: "image/png", data: "iVBORw0KGgo=" }
          }, { file_data: { file_uri: "gs://b/c" } }]
        }],
        {
          systemInstruction: { parts: [{ fileData: { fileUri: "gs://b/rules.pdf" } }] },
          generationConfig: { candidateCount: 2, maxOutputTokens: 7 }
        }
      )
      assert.isAbove(text.length, Passthrough.EAGER_CHECK_BYTES)
      const inspected = yield* Passthrough.inspectBody(new TextEncoder().encode(text))
      assert.deepStrictEqual([
        inspected.candidateCount,
        inspected.maxOutputTokens,
        inspected.mediaParts,
        inspected.checked
      ], [2, 7, 3, false])
      assert.isUndefined(Passthrough.checkStructure(inspected))
      assert.strictEqual(
        inspected.body.contents instanceof Array && inspected.body.contents.length,
        41,
        "the body is parsed when first read"
      )
    }))

  it.effect("a malformed turn deep in a large body is named by the deferred check; the top level is checked at once", () =>
    Effect.gen(function*() {
      const deferred = Passthrough.checkStructure(yield* Passthrough.inspectBody(large([{ role: "user", parts: {} }])))
      assert.strictEqual(deferred?.param, "contents[40].parts")
      const cases: ReadonlyArray<readonly [string, string | undefined, string]> = [
        [
          large([], { generationConfig: { maxOutputTokens: -3 } }),
          "generationConfig.maxOutputTokens",
          "positive integer"
        ],
        [large([], { contents: { a: "x".repeat(Passthrough.EAGER_CHECK_BYTES) } }), "contents", "must be an array"],
        [
          large([], { generationConfig: { maxOutputTokens: "100000" } }),
          "generationConfig.maxOutputTokens",
          "positive integer"
        ],
        [
          large([], { generationConfig: { maxOutputTokens: 1, max_output_tokens: 100000 } }),
          "generationConfig.maxOutputTokens",
          "twice"
        ],
        [
          large([], { generationConfig: { candidate_count: "8" } }),
          "generationConfig.candidateCount",
          "positive integer"
        ],
        [
          large([], { generationConfig: { maxOutputTokens: 1 } }).slice(0, -1) +
          ",\"generation_config\":{\"maxOutputTokens\":100000}}",
          "generation_config",
          "more than once"
        ],
        [large().slice(0, -1) + ",\"contents\":[]}", "contents", "more than once"],
        [large().slice(0, -2), undefined, "not valid JSON"]
      ]
      for (const [text, param, fragment] of cases) {
        const error = yield* Effect.flip(Passthrough.inspectBody(text))
        assert.strictEqual(error.param, param)
        assert.include(error.message, fragment)
      }
    }))
})

describe("Passthrough.PassthroughMeter", () => {
  const stream = [
    "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hel\\\"lo\"}],\"role\":\"model\"}}],\"usageMetadata\":{\"promptTokenCount\":4,\"totalTokenCount\":4}}\r\n\r\n",
    "data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"f\",\"args\":{\"a\":1}}}],\"role\":\"model\"}}]}\r\n\r\n",
    "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"!\"}],\"role\":\"model\"},\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":4,\"candidatesTokenCount\":5,\"thoughtsTokenCount\":2,\"totalTokenCount\":11}}\r\n\r\n"
  ].join("")

  it("forwards text unchanged and reads the last usage, for any split", () => {
    for (let cut = 0; cut <= stream.length; cut += 7) {
      const meter = new Passthrough.PassthroughMeter()
      const forwarded = meter.feed(stream.slice(0, cut)) + meter.feed(stream.slice(cut))
      meter.end()
      assert.strictEqual(forwarded, stream)
      assert.deepStrictEqual(meter.usage(), {
        promptTokens: 4,
        completionTokens: 7,
        totalTokens: 11,
        reasoningTokens: 2
      })
      assert.strictEqual(meter.generatedCharacters(), 6 + 1 + 7 + 1)
      assert.isTrue(meter.sawFinish())
    }
  })

  it("counts a cut stream and reports the usage seen so far", () => {
    const meter = new Passthrough.PassthroughMeter()
    meter.feed(stream.slice(0, stream.indexOf("data:", 10)))
    assert.deepStrictEqual(meter.usage(), { promptTokens: 4, completionTokens: 0, totalTokens: 4 })
    assert.strictEqual(meter.generatedCharacters(), 6)
    assert.strictEqual(meter.estimatedCompletionTokens(), 2)
    assert.isFalse(meter.sawFinish())
  })

  it("usageOfResponse reads a non-stream answer", () => {
    assert.deepStrictEqual(
      Passthrough.usageOfResponse({
        usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 2, cachedContentTokenCount: 1, totalTokenCount: 5 }
      }),
      { promptTokens: 3, completionTokens: 2, totalTokens: 5, cachedTokens: 1 }
    )
    assert.isUndefined(Passthrough.usageOfResponse({ candidates: [] }))
    assert.isUndefined(Passthrough.usageOfResponse("nope"))
  })
})

describe("CountTokens", () => {
  it.effect("estimates both request forms", () =>
    Effect.gen(function*() {
      const contents = [{
        role: "user",
        parts: [{ text: "How many tokens is this?" }, { inline_data: { mime_type: "image/png", data: "AA" } }]
      }]
      assert.deepStrictEqual(yield* CountTokens.countTokens({ contents }), { totalTokens: 8 + 6 + 2000 })
      const wrapped = yield* CountTokens.countTokens({
        generateContentRequest: { model: "models/x", contents, systemInstruction: { parts: [{ text: "abcd" }] } }
      })
      assert.deepStrictEqual(wrapped, { totalTokens: 8 + 6 + 2000 + 8 + 1 })
    }))

  it.effect("rejects malformed bodies with the field named", () =>
    Effect.gen(function*() {
      const missing = yield* Effect.flip(CountTokens.countTokens({}))
      assert.strictEqual(missing.param, "contents")
      const bad = yield* Effect.flip(CountTokens.countTokens({ contents: [{ parts: [{ text: 1 }] }] }))
      assert.strictEqual(bad.param, "contents[0].parts[0].text")
      const both = yield* Effect.flip(
        CountTokens.countTokens({ contents: [], generateContentRequest: { contents: [] } })
      )
      assert.include(both.message, "not both")
    }))
})

describe("Passthrough.PassthroughMeter.feedBytes", () => {
  it("decodes UTF-8 split across pieces and returns the bytes unchanged", () => {
    const bytes = new TextEncoder().encode(
      "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"é😀\"}]}}],\"usageMetadata\":{\"promptTokenCount\":1,\"totalTokenCount\":1}}\r\n\r\n"
    )
    const meter = new Passthrough.PassthroughMeter()
    const at = bytes.indexOf(0xf0) + 2
    const out = [meter.feedBytes(bytes.slice(0, at)), meter.feedBytes(bytes.slice(at))]
    meter.end()
    assert.deepStrictEqual(Buffer.concat(out), Buffer.from(bytes))
    assert.strictEqual(meter.generatedCharacters(), 3)
    assert.deepStrictEqual(meter.usage(), { promptTokens: 1, completionTokens: 0, totalTokens: 1 })
  })
})

describe("Passthrough.renameModelVersion", () => {
  it("rewrites only the top-level modelVersion and keeps every other byte", () => {
    const body =
      "{\n  \"candidates\": [{\"content\": {\"parts\": [{\"functionCall\": {\"name\": \"f\", \"args\": {\"modelVersion\": \"keep\"}}}]}}],\n" +
      "  \"modelVersion\": \"gemini-2.5-flash-001\",\n  \"responseId\": \"r\"\n}"
    const renamed = Passthrough.renameModelVersion(body, "fast")
    assert.strictEqual(renamed, body.replace("\"modelVersion\": \"gemini-2.5-flash-001\"", "\"modelVersion\":\"fast\""))
    assert.deepStrictEqual(JSON.parse(renamed).candidates, JSON.parse(body).candidates)
    assert.strictEqual(Passthrough.renameModelVersion("{\"candidates\":[]}", "fast"), "{\"candidates\":[]}")
    // A quoted key inside a text part is escaped and never taken for the field.
    const text =
      "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"say \\\"modelVersion\\\":\\\"x\\\"\"}]}}],\"modelVersion\":\"up\"}"
    assert.strictEqual(
      JSON.parse(Passthrough.renameModelVersion(text, "pub")).candidates[0].content.parts[0].text,
      "say \"modelVersion\":\"x\""
    )
    assert.strictEqual(JSON.parse(Passthrough.renameModelVersion(text, "pub")).modelVersion, "pub")
  })

  it("rewrites each event of relayed stream text", () => {
    const sse =
      "data: {\"candidates\":[],\"modelVersion\":\"up\",\"responseId\":\"a\"}\r\n\r\ndata: {\"candidates\":[],\"modelVersion\":\"up\"}\r\n\r\n"
    assert.strictEqual(Passthrough.renameModelVersionPerLine(sse, "pub"), sse.replaceAll("\"up\"", "\"pub\""))
    const array = "[{\"modelVersion\":\"up\"},\r\n{\"modelVersion\":\"up\"}]"
    assert.deepStrictEqual(JSON.parse(Passthrough.renameModelVersionPerLine(array, "pub")), [{ modelVersion: "pub" }, {
      modelVersion: "pub"
    }])
  })
})

describe("Passthrough.inspectBody: media by kind", () => {
  it.effect("counts each media part by its mimeType, in a small body and a large one alike", () =>
    Effect.gen(function*() {
      const parts = [
        { inlineData: { mimeType: "image/png", data: "iVBORw0KGgo=" } },
        { fileData: { mimeType: "video/mp4", fileUri: "https://x/v.mp4" } },
        { file_data: { mime_type: "audio/wav", file_uri: "gs://b/a.wav" } },
        { fileData: { mimeType: "application/pdf", fileUri: "https://x/a.pdf" } },
        { fileData: { fileUri: "https://x/unknown" } }
      ]
      const history = Array.from({ length: 40 }, (_, i) => ({ role: "user", parts: [{ text: "x".repeat(600) + i }] }))
      for (const contents of [[{ role: "user", parts }], [...history, { role: "user", parts }]]) {
        const inspected = yield* Passthrough.inspectBody(JSON.stringify({ contents }))
        assert.strictEqual(inspected.mediaParts, 5)
        assert.deepStrictEqual(inspected.media, { image: 1, video: 1, audio: 1, document: 1, file: 1 })
      }
    }))
})
