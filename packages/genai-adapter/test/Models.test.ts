import { assert, describe, it } from "@effect/vitest"
import type { Domain } from "@modelgate/core"
import { Models } from "@modelgate/genai-adapter"
import { Effect } from "effect"

const model = (id: string): Domain.Model => ({
  id,
  displayName: id.toUpperCase(),
  inputNanosPerMillion: 1n,
  outputNanosPerMillion: 1n,
  cachedInputNanosPerMillion: null,
  perRequestNanos: null,
  free: false,
  inputTokenLimit: 1_048_576,
  outputTokenLimit: 65_536
})

const models = Array.from({ length: 7 }, (_, i) => model(`m${i}`))

describe("Models", () => {
  it("builds Google's Model resource", () => {
    assert.deepStrictEqual(Models.modelResource(model("gemini-2.5-flash"), { thinking: true }), {
      name: "models/gemini-2.5-flash",
      baseModelId: "gemini-2.5-flash",
      version: "001",
      displayName: "GEMINI-2.5-FLASH",
      inputTokenLimit: 1_048_576,
      outputTokenLimit: 65_536,
      supportedGenerationMethods: ["generateContent", "streamGenerateContent", "countTokens"],
      temperature: 1,
      maxTemperature: 2,
      topP: 0.95,
      topK: 64,
      thinking: true
    })
    const embedding = Models.modelResource(model("models/text-embedding-004"), { embedding: true })
    assert.strictEqual(embedding.name, "models/text-embedding-004")
    assert.deepStrictEqual(embedding.supportedGenerationMethods, ["embedContent", "batchEmbedContents", "countTokens"])
    assert.isUndefined(embedding.temperature)
  })

  it("takes the methods, thinking and description from the catalog model", () => {
    const embedder = Models.modelResource({
      ...model("text-embedding-3-small"),
      embedding: true,
      description: "Embeds text"
    })
    assert.deepStrictEqual(embedder.supportedGenerationMethods, ["embedContent", "batchEmbedContents", "countTokens"])
    assert.strictEqual(embedder.description, "Embeds text")
    assert.isUndefined(embedder.thinking)
    const reasoner = Models.modelResource({ ...model("o3-mini"), reasoning: true })
    assert.include(reasoner.supportedGenerationMethods, "generateContent")
    assert.isTrue(reasoner.thinking)
    assert.isUndefined(reasoner.description)
    // Explicit options win over the model's flags.
    assert.deepStrictEqual(
      Models.modelResource({ ...model("x"), embedding: true }, { embedding: false }).supportedGenerationMethods,
      Models.GENERATION_METHODS
    )
  })

  it.effect("a page lists each model with its own methods", () =>
    Effect.gen(function*() {
      const page = yield* Models.modelsPage([{ ...model("chat") }, { ...model("embed"), embedding: true }])
      assert.deepStrictEqual(page.models.map((m) => m.supportedGenerationMethods), [
        Models.GENERATION_METHODS,
        Models.EMBEDDING_METHODS
      ])
      const overridden = yield* Models.modelsPage([model("chat")], undefined, undefined, { isEmbedding: () => true })
      assert.deepStrictEqual(overridden.models[0]!.supportedGenerationMethods, Models.EMBEDDING_METHODS)
    }))

  it.effect("pages with opaque tokens until the last page, which has no token", () =>
    Effect.gen(function*() {
      const seen: Array<string> = []
      let token: string | undefined
      let pages = 0
      do {
        const page: { models: ReadonlyArray<{ name: string }>; nextPageToken?: string } = yield* Models.modelsPage(
          models,
          3,
          token
        )
        seen.push(...page.models.map((m) => m.name))
        token = page.nextPageToken
        pages++
      } while (token !== undefined)
      assert.strictEqual(pages, 3)
      assert.deepStrictEqual(seen, models.map((m) => `models/${m.id}`))
    }))

  it.effect("defaults to 50, caps at 1000, accepts query-string sizes", () =>
    Effect.gen(function*() {
      const many = Array.from({ length: 1200 }, (_, i) => model(`m${i}`))
      assert.strictEqual((yield* Models.modelsPage(many)).models.length, 50)
      assert.strictEqual((yield* Models.modelsPage(many, 0)).models.length, 50)
      assert.strictEqual((yield* Models.modelsPage(many, 5000)).models.length, 1000)
      assert.strictEqual((yield* Models.modelsPage(many, "20")).models.length, 20)
      const last = yield* Models.modelsPage(models, 50)
      assert.strictEqual(last.nextPageToken, undefined)
    }))

  it.effect("rejects bad sizes and tokens with InvalidRequest naming the parameter", () =>
    Effect.gen(function*() {
      for (
        const [size, token, param] of [[-1, undefined, "pageSize"], ["ten", undefined, "pageSize"], [
          2,
          "not-a-token",
          "pageToken"
        ], [2, Models.encodePageToken(99), "pageToken"]] as const
      ) {
        const error = yield* Effect.flip(Models.modelsPage(models, size, token))
        assert.strictEqual(error._tag, "InvalidRequest")
        assert.strictEqual(error.param, param)
      }
    }))

  it("page tokens round trip", () => {
    for (const offset of [0, 1, 50, 999, 123456]) {
      assert.strictEqual(Models.decodePageToken(Models.encodePageToken(offset)), offset)
    }
  })
})
