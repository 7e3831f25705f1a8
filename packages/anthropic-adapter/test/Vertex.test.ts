import { assert, describe, it } from "@effect/vitest"
import { Vertex } from "@modelgate/anthropic-adapter"
import { Result } from "effect"

const target = { baseUrl: "https://us-east5-aiplatform.googleapis.com", project: "my-project", location: "us-east5" }

describe("Claude on Vertex AI", () => {
  it("builds rawPredict, streamRawPredict and count-tokens paths, keeping the model's @version", () => {
    assert.strictEqual(
      Vertex.chatUrl(target, "claude-sonnet-4-5@20250929", false),
      "https://us-east5-aiplatform.googleapis.com/v1/projects/my-project/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict"
    )
    assert.match(Vertex.chatUrl(target, "claude-sonnet-4-5@20250929", true), /:streamRawPredict$/)
    assert.match(Vertex.countTokensUrl(target), /publishers\/anthropic\/models\/count-tokens:rawPredict$/)
  })

  it("the body loses its model and gains anthropic_version; a count keeps its model", () => {
    const body = {
      model: "claude-sonnet-4-5",
      max_tokens: 64,
      stream: true,
      messages: [{ role: "user", content: "Hi" }]
    }
    assert.deepStrictEqual(Result.getOrThrow(Vertex.toVertexBody(body)), {
      max_tokens: 64,
      stream: true,
      messages: [{ role: "user", content: "Hi" }],
      anthropic_version: "vertex-2023-10-16"
    })
    assert.deepStrictEqual(Vertex.toVertexCountBody({ model: "claude-sonnet-4-5", messages: [] }), {
      model: "claude-sonnet-4-5",
      messages: [],
      anthropic_version: "vertex-2023-10-16"
    })
  })

  it("refuses a document by URL, naming where it is", () => {
    const result = Vertex.toVertexBody({
      model: "m",
      max_tokens: 1,
      messages: [{ role: "user", content: [{ type: "document", source: { type: "url", url: "https://x/a.pdf" } }] }]
    })
    assert.isTrue(Result.isFailure(result) && result.failure.param === "messages[0].content[0].source")
  })

  it("reads Google's envelope and Anthropic's", () => {
    const token = Vertex.classify(
      401,
      "{\"error\":{\"code\":401,\"message\":\"Request had invalid authentication credentials.\",\"status\":\"UNAUTHENTICATED\"}}"
    )
    assert.isTrue((token as { credentialsRefused?: boolean }).credentialsRefused)
    assert.isTrue(
      (Vertex.classify(
        403,
        "{\"error\":{\"code\":403,\"message\":\"Permission denied\",\"status\":\"PERMISSION_DENIED\"}}"
      ) as { credentialsRefused?: boolean }).credentialsRefused
    )
    assert.strictEqual(
      Vertex.classify(
        429,
        "{\"error\":{\"code\":429,\"message\":\"Quota exceeded for aiplatform.googleapis.com/online_prediction_requests_per_base_model\",\"status\":\"RESOURCE_EXHAUSTED\"}}"
      )._tag,
      "UpstreamRateLimited"
    )
    const invalid = Vertex.classify(
      400,
      "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"max_tokens: must be positive\"}}"
    )
    assert.strictEqual(invalid._tag, "UpstreamRejected")
    assert.strictEqual(invalid.message, "max_tokens: must be positive")
    assert.strictEqual(
      Vertex.classify(529, "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}")
        ._tag,
      "UpstreamUnavailable"
    )
  })
})
