import { assert, describe, it } from "@effect/vitest"
import { Vertex } from "@modelgate/genai-adapter"
import { Effect } from "effect"

const target = {
  baseUrl: "https://us-central1-aiplatform.googleapis.com/",
  project: "my-project",
  location: "us-central1"
}

describe("Gemini on Vertex AI", () => {
  it("builds the publisher paths", () => {
    assert.strictEqual(
      Vertex.chatUrl(target, "gemini-2.5-flash", false),
      "https://us-central1-aiplatform.googleapis.com/v1/projects/my-project/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent"
    )
    assert.strictEqual(
      Vertex.chatUrl(target, "gemini-2.5-flash", true),
      "https://us-central1-aiplatform.googleapis.com/v1/projects/my-project/locations/us-central1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    )
    assert.match(Vertex.countTokensUrl(target, "gemini-2.5-flash"), /models\/gemini-2\.5-flash:countTokens$/)
    assert.match(
      Vertex.embeddingsUrl(target, "text-embedding-005"),
      /publishers\/google\/models\/text-embedding-005:predict$/
    )
  })

  it("sends the access token as a bearer token, over the channel's own headers", () => {
    assert.deepStrictEqual(Vertex.headers({ "x-goog-user-project": "billing", authorization: "x" }, "ya29.t"), {
      "content-type": "application/json",
      "x-goog-user-project": "billing",
      authorization: "Bearer ya29.t"
    })
  })

  it.effect("writes :predict instances and reads predictions with their token counts", () =>
    Effect.gen(function*() {
      assert.strictEqual(
        Vertex.encodeEmbeddings({ model: "m", inputs: ["a", "b"], dimensions: 256 }),
        "{\"instances\":[{\"content\":\"a\"},{\"content\":\"b\"}],\"parameters\":{\"outputDimensionality\":256}}"
      )
      const answer = JSON.stringify({
        predictions: [
          { embeddings: { values: [0.1, 0.2], statistics: { token_count: 3, truncated: false } } },
          { embeddings: { values: [0.3, 0.4], statistics: { token_count: 4, truncated: false } } }
        ],
        metadata: { billableCharacterCount: 12 }
      })
      assert.deepStrictEqual(yield* Vertex.decodeEmbeddings(answer, 2, "vertex"), {
        vectors: [[0.1, 0.2], [0.3, 0.4]],
        promptTokens: 7
      })
      const fewer = yield* Effect.flip(Vertex.decodeEmbeddings(answer, 3, "vertex"))
      assert.include(fewer.message, "2 embeddings for 3 inputs")
      const bad = JSON.stringify({ predictions: [{ embeddings: { values: [1], statistics: { token_count: -1 } } }] })
      assert.isString((yield* Vertex.decodeEmbeddings(bad, 1, "vertex")).usageRejected)
    }))

  it("a missing IAM role refuses the service account; other errors as the Gemini API's", () => {
    const iam = Vertex.classify(
      403,
      JSON.stringify({
        error: {
          code: 403,
          message: "Permission 'aiplatform.endpoints.predict' denied on resource",
          status: "PERMISSION_DENIED",
          details: [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "IAM_PERMISSION_DENIED" }]
        }
      })
    )
    assert.isTrue((iam as { credentialsRefused?: boolean }).credentialsRefused)
    const expired = Vertex.classify(
      401,
      "{\"error\":{\"code\":401,\"message\":\"Request had invalid authentication credentials.\",\"status\":\"UNAUTHENTICATED\"}}"
    )
    assert.isTrue((expired as { credentialsRefused?: boolean }).credentialsRefused)
    assert.strictEqual(
      Vertex.classify(
        429,
        "{\"error\":{\"code\":429,\"message\":\"Quota exceeded\",\"status\":\"RESOURCE_EXHAUSTED\"}}"
      )._tag,
      "UpstreamRateLimited"
    )
    assert.strictEqual(
      Vertex.classify(400, "{\"error\":{\"code\":400,\"message\":\"bad\",\"status\":\"INVALID_ARGUMENT\"}}")._tag,
      "UpstreamRejected"
    )
  })
})

describe("Vertex AI's model list", () => {
  const page = (names: ReadonlyArray<string>, next?: string) =>
    JSON.stringify({
      publisherModels: names.map((name) => ({ name, versionId: "001", launchStage: "GA" })),
      ...(next === undefined ? {} : { nextPageToken: next })
    })
  const decode = (text: string) => Effect.runSync(Vertex.decodePublisherModels(text, "vertex"))

  it("reads Model Garden's pages, Google's then Anthropic's, keeping the models a channel can call", () => {
    assert.strictEqual(
      Vertex.publisherModelsUrl("https://us-east5-aiplatform.googleapis.com/", undefined),
      "https://us-east5-aiplatform.googleapis.com/v1beta1/publishers/google/models?pageSize=100"
    )
    const first = decode(page([
      "publishers/google/models/gemini-2.5-flash",
      "publishers/google/models/gemini-2.5-flash-image",
      "publishers/google/models/imagen-4.0-generate-001",
      "publishers/google/models/text-embedding-005"
    ], "tok/en="))
    assert.deepStrictEqual(first, {
      models: [{ id: "gemini-2.5-flash" }, { id: "text-embedding-005", embedding: true }],
      next: "google|tok/en="
    })
    assert.strictEqual(
      Vertex.publisherModelsUrl("https://x", first.next),
      "https://x/v1beta1/publishers/google/models?pageSize=100&pageToken=tok%2Fen%3D"
    )
    const last = decode(page(["publishers/google/models/gemini-embedding-001"]))
    assert.deepStrictEqual(last, { models: [{ id: "gemini-embedding-001", embedding: true }], next: "anthropic|" })
    assert.strictEqual(
      Vertex.publisherModelsUrl("https://x", last.next),
      "https://x/v1beta1/publishers/anthropic/models?pageSize=100"
    )
    assert.deepStrictEqual(decode(page(["publishers/anthropic/models/claude-sonnet-4-5"])), {
      models: [{ id: "claude-sonnet-4-5" }]
    })
    assert.deepStrictEqual(decode("{}"), { models: [] })
    assert.strictEqual(
      Effect.runSync(Effect.flip(Vertex.decodePublisherModels("<html>", "vertex")))._tag,
      "UpstreamUnavailable"
    )
  })
})
