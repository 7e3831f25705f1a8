import { assert, describe, it } from "@effect/vitest"
import type { Canonical } from "@modelgate/core"
import { Request } from "@modelgate/genai-adapter"
import * as Arbitraries from "@modelgate/genai-adapter/testing/Arbitraries"
import { Effect } from "effect"
import * as fc from "fast-check"

const user = (parts: Array<unknown>) => ({ role: "user", parts })
const decodeError = (body: unknown) => Effect.flip(Request.decodeRequest(body, "gemini-2.5-flash"))

describe("Request.decodeRequest", () => {
  it.effect("names the field of a malformed body", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [unknown, string | undefined, string]> = [
        [null, undefined, "JSON object"],
        [{}, "contents", "'contents' is required"],
        [{ contents: [] }, "contents", "at least one turn"],
        [
          { contents: [{ role: "assistant", parts: [{ text: "x" }] }] },
          "contents[0].role",
          "Invalid 'contents[0].role'"
        ],
        [
          { contents: [user([{ inlineData: { data: "AA" } }])] },
          "contents[0].parts[0].inlineData.mimeType",
          "is required"
        ],
        [{ contents: [user([{}])] }, "contents[0].parts[0]", "has no data"],
        [
          { contents: [user([{ text: "a", functionCall: { name: "f" } }])] },
          "contents[0].parts[0]",
          "exactly one kind of data"
        ],
        [{ contents: [user([{ functionCall: { name: "f" } }])] }, "contents[0].parts[0].functionCall", "'model' turn"],
        [{ contents: [user([])] }, "contents[0].parts", "must not be empty"],
        [
          { contents: [user([{ text: "x" }])], generationConfig: { topK: 1.5 } },
          "generationConfig.topK",
          "Invalid 'generationConfig.topK'"
        ],
        [
          { contents: [user([{ text: "x" }])], generationConfig: { responseJsonSchema: { type: "object" } } },
          "generationConfig.responseJsonSchema",
          "requires 'responseMimeType'"
        ]
      ]
      for (const [body, param, fragment] of cases) {
        const error = yield* decodeError(body)
        assert.strictEqual(error._tag, "InvalidRequest", JSON.stringify(body))
        assert.strictEqual(error.param, param, JSON.stringify(body))
        assert.include(error.message, fragment)
      }
    }))

  it.effect("refuses what cannot be translated with UnsupportedFeature (never a silent drop)", () =>
    Effect.gen(function*() {
      const base = { contents: [user([{ text: "x" }])] }
      const cases: ReadonlyArray<readonly [unknown, string]> = [
        [{ ...base, tools: [{ googleSearch: {} }] }, "tools[0].googleSearch"],
        [{ ...base, tools: [{ code_execution: {} }] }, "tools[0].codeExecution"],
        [{ ...base, tools: [{ urlContext: {} }] }, "tools[0].urlContext"],
        [{ ...base, cachedContent: "cachedContents/1" }, "cachedContent"],
        [{ ...base, generationConfig: { responseMimeType: "text/x.enum" } }, "generationConfig.responseMimeType"],
        [{ ...base, generationConfig: { responseModalities: ["IMAGE"] } }, "generationConfig.responseModalities"],
        [{ contents: [user([{ executableCode: { code: "1" } }])] }, "contents[0].parts[0].executableCode"],
        [
          { ...base, systemInstruction: { parts: [{ inlineData: { mimeType: "image/png", data: "A" } }] } },
          "systemInstruction.parts[0]"
        ],
        [{
          ...base,
          tools: [{ functionDeclarations: [{ name: "a" }, { name: "b" }, { name: "c" }] }],
          toolConfig: { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["a", "b"] } }
        }, "toolConfig.functionCallingConfig.allowedFunctionNames"]
      ]
      for (const [body, param] of cases) {
        const error = yield* decodeError(body)
        assert.strictEqual(error._tag, "UnsupportedFeature", param)
        assert.strictEqual(error.param, param)
      }
    }))

  it.effect("answers an unknown field as Google would, and refuses fields it cannot carry", () =>
    Effect.gen(function*() {
      const base = { contents: [user([{ text: "x" }])] }
      const unknown: ReadonlyArray<readonly [unknown, string, string]> = [
        [{ ...base, foo: 1 }, "foo", "'request'"],
        [{ ...base, generationConfig: { temprature: 1 } }, "generationConfig.temprature", "'generationConfig'"],
        [
          { ...base, generation_config: { thinking_config: { budget: 1 } } },
          "generationConfig.thinkingConfig.budget",
          "'generationConfig.thinkingConfig'"
        ],
        [{ contents: [user([{ text: "x", colour: "red" }])] }, "contents[0].parts[0].colour", "'contents[0].parts[0]'"],
        [
          { ...base, tools: [{ functionDeclarations: [{ name: "f", strict: true }] }] },
          "tools[0].functionDeclarations[0].strict",
          "Cannot find field"
        ]
      ]
      for (const [body, param, fragment] of unknown) {
        const error = yield* decodeError(body)
        assert.strictEqual(error._tag, "InvalidRequest", param)
        assert.strictEqual(error.param, param)
        assert.include(error.message, "Unknown name")
        assert.include(error.message, fragment)
      }
      const refused: ReadonlyArray<readonly [unknown, string]> = [
        [{
          contents: [user([{ text: "x" }]), {
            role: "model",
            parts: [{ functionCall: { name: "f", partialArgs: [] } }]
          }]
        }, "contents[1].parts[0].functionCall.partialArgs"],
        [{
          contents: [
            user([{
              functionResponse: {
                name: "f",
                response: {},
                parts: [{ inlineData: { mimeType: "image/png", data: "A" } }]
              }
            }])
          ]
        }, "contents[0].parts[0].functionResponse.parts"]
      ]
      for (const [body, param] of refused) {
        const error = yield* decodeError(body)
        assert.strictEqual(error._tag, "UnsupportedFeature", param)
        assert.strictEqual(error.param, param)
      }
      // Google's serving hints are accepted and left out.
      const hinted = yield* Request.decodeRequest({
        model: "models/gemini-2.5-flash",
        contents: [user([{ text: "x", mediaResolution: { level: "MEDIA_RESOLUTION_LOW" } }])],
        safetySettings: [{ category: "HARM_CATEGORY_HARASSMENT", threshold: "BLOCK_NONE" }],
        toolConfig: { retrievalConfig: { languageCode: "en" } },
        tools: [{ functionDeclarations: [{ name: "f", behavior: "BLOCKING" }] }],
        generationConfig: { mediaResolution: "MEDIA_RESOLUTION_LOW", enableEnhancedCivicAnswers: true }
      }, "gemini-2.5-flash")
      assert.deepStrictEqual(hinted.messages, [{ role: "user", content: [{ type: "text", text: "x" }] }])
      assert.deepStrictEqual(hinted.tools, [{ name: "f" }])
    }))

  it.effect("takes a system instruction whatever its role says, as Google does (legacy SDKs and LangChain send 'system')", () =>
    Effect.gen(function*() {
      for (const role of ["system", "user", "model", undefined]) {
        const systemInstruction = role === undefined
          ? { parts: [{ text: "Be brief." }] }
          : { role, parts: [{ text: "Be brief." }] }
        const request = yield* Request.decodeRequest(
          { contents: [user([{ text: "Hi" }])], systemInstruction },
          "gemini-2.5-flash"
        )
        assert.deepStrictEqual(request.system, ["Be brief."], String(role))
        assert.deepStrictEqual(request.messages, [{ role: "user", content: [{ type: "text", text: "Hi" }] }])
      }
    }))

  it.effect("writes a function's result schema into its description", () =>
    Effect.gen(function*() {
      const request = yield* Request.decodeRequest({
        contents: [user([{ text: "x" }])],
        tools: [{
          functionDeclarations: [
            {
              name: "f",
              description: "Finds things.",
              response: { type: "OBJECT", properties: { n: { type: "INTEGER" } } }
            },
            { name: "g", responseJsonSchema: { type: "string" } }
          ]
        }]
      }, "gemini-2.5-flash")
      assert.deepStrictEqual(request.tools, [
        {
          name: "f",
          description:
            "Finds things.\n\nThe function returns JSON matching this schema: {\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\"}}}"
        },
        { name: "g", description: "The function returns JSON matching this schema: {\"type\":\"string\"}" }
      ])
      const both = yield* decodeError({
        contents: [user([{ text: "x" }])],
        tools: [{ functionDeclarations: [{ name: "f", response: {}, responseJsonSchema: {} }] }]
      })
      assert.strictEqual(both.param, "tools[0].functionDeclarations[0]")
    }))

  it.effect("pairs responses without ids to calls by name and order", () =>
    Effect.gen(function*() {
      const request = yield* Request.decodeRequest({
        contents: [
          user([{ text: "go" }]),
          {
            role: "model",
            parts: [{ functionCall: { name: "a", args: {} } }, { functionCall: { name: "b", args: {} } }, {
              functionCall: { name: "a", args: {} }
            }]
          },
          user([
            { functionResponse: { name: "b", response: { x: 1 } } },
            { functionResponse: { name: "a", response: { output: "first" } } },
            { functionResponse: { name: "a", response: { output: "second" } } }
          ])
        ]
      }, "m")
      const results = request.messages[2]!.content as ReadonlyArray<Canonical.ToolResultPart>
      assert.deepStrictEqual(results.map((r) => [r.callId, r.content]), [["call_1_1", "{\"x\":1}"], [
        "call_1_0",
        "first"
      ], ["call_1_2", "second"]])
    }))

  it.effect("maps tool config and thinking", () =>
    Effect.gen(function*() {
      const tools = [{ functionDeclarations: [{ name: "a" }, { name: "b" }] }]
      const contents = [user([{ text: "x" }])]
      const choice = (functionCallingConfig: unknown) =>
        Request.decodeRequest({ contents, tools, toolConfig: { functionCallingConfig } }, "m").pipe(
          Effect.map((r) => r.toolChoice)
        )
      assert.strictEqual(yield* choice({ mode: "AUTO" }), "auto")
      assert.strictEqual(yield* choice({ mode: "NONE" }), "none")
      assert.strictEqual(yield* choice({ mode: "ANY" }), "required")
      assert.strictEqual(yield* choice({ mode: "VALIDATED" }), "auto")
      assert.deepStrictEqual(yield* choice({ mode: "ANY", allowedFunctionNames: ["b"] }), { type: "tool", name: "b" })
      const thinking = yield* Request.decodeRequest({
        contents,
        generationConfig: { thinkingConfig: { thinkingBudget: -1, thinkingLevel: "low" } }
      }, "m")
      assert.deepStrictEqual(thinking.reasoning, { effort: "low" })
    }))
})

describe("Request.encodeRequest", () => {
  const base: Canonical.ChatRequest = {
    model: "gemini-2.5-flash",
    messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
    stream: false
  }

  it.effect("refuses http image URLs and names bad tool-call arguments", () =>
    Effect.gen(function*() {
      const image = yield* Effect.flip(Request.encodeRequest({
        ...base,
        messages: [{ role: "user", content: [{ type: "image", url: "https://example.com/cat.png" }] }]
      }))
      assert.strictEqual(image._tag, "UnsupportedFeature")
      assert.strictEqual(image.param, "messages[0].content[0].url")
      assert.include(image.message, "data:")
      const args = yield* Effect.flip(Request.encodeRequest({
        ...base,
        messages: [...base.messages, {
          role: "assistant",
          content: [{ type: "tool_call", id: "call_9", name: "f", arguments: "{not json" }]
        }]
      }))
      assert.strictEqual(args._tag, "InvalidRequest")
      assert.strictEqual(args.param, "messages[1].content[0].arguments")
      assert.include(args.message, "call_9")
      const orphan = yield* Effect.flip(Request.encodeRequest({
        ...base,
        messages: [{ role: "tool", content: [{ type: "tool_result", callId: "nope", content: "x" }] }]
      }))
      assert.strictEqual(orphan._tag, "InvalidRequest")
    }))

  it.effect("chooses thinking budgets or levels by model, per the documented tables", () =>
    Effect.gen(function*() {
      const config = (model: string, reasoning: Canonical.Reasoning) =>
        Request.encodeRequest({ ...base, model, reasoning }).pipe(Effect.map((r) => r.generationConfig?.thinkingConfig))
      assert.deepStrictEqual(yield* config("gemini-2.5-pro", { effort: "low" }), { thinkingBudget: 1024 })
      assert.deepStrictEqual(yield* config("gemini-2.5-pro", { effort: "none" }), { thinkingBudget: 0 })
      assert.deepStrictEqual(yield* config("gemini-3-pro-preview", { effort: "medium" }), { thinkingLevel: "MEDIUM" })
      assert.deepStrictEqual(yield* config("gemini-3-pro-preview", { effort: "high", budgetTokens: 100 }), {
        thinkingBudget: 100
      })
      const forced = yield* Request.encodeRequest({ ...base, model: "gemini-3-pro", reasoning: { effort: "high" } }, {
        thinkingStyle: "budget"
      })
      assert.deepStrictEqual(forced.generationConfig?.thinkingConfig, { thinkingBudget: 24576 })
    }))

  it.effect("puts the sentinel only on the first unsigned call of each model turn", () =>
    Effect.gen(function*() {
      const call = (id: string, signature?: string): Canonical.Part =>
        signature === undefined
          ? { type: "tool_call", id, name: "f", arguments: "{}" }
          : { type: "tool_call", id, name: "f", arguments: "{}", signature }
      const wire = yield* Request.encodeRequest({
        ...base,
        messages: [
          ...base.messages,
          { role: "assistant", content: [call("a"), call("b")] },
          {
            role: "tool",
            content: [{ type: "tool_result", callId: "a", content: "1" }, {
              type: "tool_result",
              callId: "b",
              content: "2"
            }]
          },
          { role: "assistant", content: [call("c", "real")] }
        ]
      })
      const signatures = wire.contents.filter((c) => c.role === "model").map((c) =>
        c.parts.map((p) => p.thoughtSignature)
      )
      assert.deepStrictEqual(signatures, [[Request.SKIP_THOUGHT_SIGNATURE, undefined], ["real"]])
      const responses = wire.contents[2]!.parts.map((p) => p.functionResponse?.response)
      assert.deepStrictEqual(responses, [{ output: "1" }, { output: "2" }])
    }))

  it("normalizes Gemini schemas", () => {
    assert.deepStrictEqual(
      Request.normalizeSchema({
        type: "OBJECT",
        properties: {
          a: { type: "STRING", nullable: true, example: "x" },
          b: { anyOf: [{ type: "INTEGER" }], nullable: true }
        },
        propertyOrdering: ["a", "b"]
      }),
      {
        type: "object",
        properties: { a: { type: ["string", "null"] }, b: { anyOf: [{ type: "integer" }, { type: "null" }] } }
      }
    )
  })
})

describe("Request.normalizeSchema (property)", () => {
  it("leaves no upper-case type, nullable or propertyOrdering, and keeps property names", () => {
    fc.assert(
      fc.property(Arbitraries.geminiSchema, (schema) => {
        const normalized = Request.normalizeSchema(schema)
        const text = JSON.stringify(normalized)
        assert.isFalse(/"type":"[A-Z]/.test(text))
        assert.isFalse(text.includes("nullable") || text.includes("propertyOrdering"))
        assert.deepStrictEqual(Object.keys(normalized.properties as object), Object.keys(schema.properties as object))
      }),
      { numRuns: 200 }
    )
  })

  it("reads Google's snake_case schema fields", () => {
    assert.deepStrictEqual(
      Request.normalizeSchema({
        type: "ARRAY",
        max_items: 2,
        items: { any_of: [{ type: "STRING" }] },
        property_ordering: []
      }),
      { type: "array", maxItems: 2, items: { anyOf: [{ type: "string" }] } }
    )
  })
})
