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
