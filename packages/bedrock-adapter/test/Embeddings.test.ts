/**
 * Bedrock's embeddings through `InvokeModel`: each family's body (Titan one
 * text a request, Cohere up to 96), the sizes each can make, and answers read
 * with their tokens from the body (Titan) or Bedrock's header (Cohere).
 */
import { assert, describe, it } from "@effect/vitest"
import { Embeddings } from "@modelgate/bedrock-adapter"
import { Effect } from "effect"

const encode = (inputs: ReadonlyArray<string>, model: string, dimensions?: number) =>
  Effect.runSync(Effect.result(Embeddings.encode(
    { model: "m", inputs, ...(dimensions === undefined ? {} : { dimensions }) },
    model
  )))
const decode = (text: string, count: number, headers: Record<string, string> = {}) =>
  Effect.runSync(Effect.result(Embeddings.decode(text, count, "bedrock", headers)))

describe("Bedrock embeddings", () => {
  it("knows the families by model id, inference profiles and ARNs included", () => {
    assert.strictEqual(Embeddings.familyOf("amazon.titan-embed-text-v2:0"), "titan-v2")
    assert.strictEqual(Embeddings.familyOf("amazon.titan-embed-text-v1"), "titan-v1")
    assert.strictEqual(Embeddings.familyOf("us.cohere.embed-v4:0"), "cohere-v4")
    assert.strictEqual(
      Embeddings.familyOf("arn:aws:bedrock:us-east-1::foundation-model/cohere.embed-multilingual-v3"),
      "cohere-v3"
    )
    assert.isUndefined(Embeddings.familyOf("amazon.nova-pro-v1:0"))
    assert.strictEqual(
      Embeddings.invokeUrl("https://bedrock-runtime.us-east-1.amazonaws.com/", "amazon.titan-embed-text-v2:0"),
      "https://bedrock-runtime.us-east-1.amazonaws.com/model/amazon.titan-embed-text-v2%3A0/invoke"
    )
  })

  it("writes each family's own body, and refuses sizes and models it cannot serve", () => {
    const titan = encode(["hi"], "amazon.titan-embed-text-v2:0", 256)
    assert.deepStrictEqual(titan._tag === "Success" && JSON.parse(titan.success), {
      inputText: "hi",
      dimensions: 256,
      normalize: true
    })
    const v1 = encode(["hi"], "amazon.titan-embed-text-v1")
    assert.deepStrictEqual(v1._tag === "Success" && JSON.parse(v1.success), { inputText: "hi" })
    const cohere = encode(["a", "b"], "cohere.embed-english-v3")
    assert.deepStrictEqual(cohere._tag === "Success" && JSON.parse(cohere.success), {
      texts: ["a", "b"],
      input_type: "search_document"
    })
    const v4 = encode(["a"], "cohere.embed-v4:0", 1536)
    assert.deepStrictEqual(v4._tag === "Success" && JSON.parse(v4.success), {
      texts: ["a"],
      input_type: "search_document",
      embedding_types: ["float"],
      output_dimension: 1536
    })
    for (
      const [inputs, model, dimensions, words] of [
        [["a"], "amazon.titan-embed-text-v2:0", 300, "256, 512, 1024 dimensions, not 300"],
        [["a"], "cohere.embed-english-v3", 512, "one size only"],
        [["a", "b"], "amazon.titan-embed-text-v2:0", undefined, "at most 1 texts a request"],
        [["a"], "amazon.nova-pro-v1:0", undefined, "makes no embeddings"]
      ] as const
    ) {
      const result = encode(inputs, model, dimensions)
      assert.strictEqual(result._tag, "Failure")
      if (result._tag === "Failure") {
        assert.strictEqual(result.failure._tag, "UnsupportedFeature")
        assert.include(result.failure.message, words)
      }
    }
    const query = Effect.runSync(
      Embeddings.encode({ model: "m", inputs: ["a"], task: "question_answering" }, "cohere.embed-english-v3")
    )
    assert.strictEqual(JSON.parse(query).input_type, "search_query")
    assert.deepStrictEqual(
      (["clustering", "classification", "semantic_similarity", undefined] as const).map(Embeddings.cohereInputType),
      ["clustering", "classification", "search_document", "search_document"]
    )
    assert.strictEqual(Embeddings.inputsPerRequest("titan-v2"), 1)
    assert.strictEqual(Embeddings.inputsPerRequest("cohere-v3"), 96)
  })

  it("reads Titan's tokens from its body, Cohere's from Bedrock's header, and refuses what is not a count", () => {
    const titan = decode(JSON.stringify({ embedding: [0.1, 0.2], inputTextTokenCount: 7 }), 1, {
      "x-amzn-bedrock-input-token-count": "99"
    })
    assert.deepStrictEqual(titan._tag === "Success" && titan.success, { vectors: [[0.1, 0.2]], promptTokens: 7 })
    const cohere = decode(JSON.stringify({ embeddings: [[1], [2]], id: "x", response_type: "embeddings_floats" }), 2, {
      "x-amzn-bedrock-input-token-count": "12"
    })
    assert.deepStrictEqual(cohere._tag === "Success" && cohere.success, { vectors: [[1], [2]], promptTokens: 12 })
    const byType = decode(JSON.stringify({ embeddings: { float: [[3]] }, response_type: "embeddings_by_type" }), 1)
    assert.deepStrictEqual(byType._tag === "Success" && byType.success, { vectors: [[3]] })
    const negative = decode(JSON.stringify({ embeddings: [[1]] }), 1, { "x-amzn-bedrock-input-token-count": "-5" })
    assert.deepStrictEqual(negative._tag === "Success" && negative.success, {
      vectors: [[1]],
      usageRejected: "x-amzn-bedrock-input-token-count: -5"
    })
    const fractional = decode(JSON.stringify({ embedding: [1], inputTextTokenCount: 1.5 }), 1)
    assert.deepStrictEqual(fractional._tag === "Success" && fractional.success, {
      vectors: [[1]],
      usageRejected: "inputTextTokenCount: 1.5"
    })
    for (
      const [text, count, words] of [
        [JSON.stringify({ embeddings: [[1]] }), 2, "1 embeddings for 2 inputs"],
        [JSON.stringify({ embedding: ["x"] }), 1, "not a list of numbers"],
        [JSON.stringify({ message: "error" }), 1, "not a list of embeddings"],
        ["<html>", 1, "not an embeddings answer"]
      ] as const
    ) {
      const result = decode(text, count)
      assert.strictEqual(result._tag, "Failure")
      if (result._tag === "Failure") assert.include(result.failure.message, words)
    }
  })
})
