/**
 * The demo setup, as a newcomer uses it (`pnpm start` serves `Demo.config`):
 * its embedding models answer both SDKs' embedding calls, a Gemini embedding
 * model through OpenAI's `/v1/embeddings` included (translated to Gemini's
 * `batchEmbedContents`), and the demo's wildcard aliases, which serve
 * gemini-cli's built-in chat model ids, never catch an embedding model's name.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { GoogleGenAI } from "@google/genai"
import OpenAI from "openai"
import * as Demo from "../src/Demo.ts"
import { startGateway, type TestGateway } from "./support/Gateway.ts"

let gateway: TestGateway

beforeAll(async () => {
  gateway = await startGateway((upstream) => ({ ...Demo.config(upstream), listen: "127.0.0.1:0", log_level: "error" }))
})
afterAll(async () => {
  await gateway?.close()
})

const genai = () =>
  new GoogleGenAI({ apiKey: Demo.DEMO_KEY, httpOptions: { baseUrl: gateway.url, apiVersion: "v1beta" } })
const openai = (base = "/v1") => new OpenAI({ apiKey: Demo.DEMO_KEY, baseURL: `${gateway.url}${base}`, maxRetries: 0 })

/** The upstream requests made since `from` (an index into the fake upstream's log). */
const since = (from: number) => gateway.upstream.requests.slice(from)

describe("the demo's embedding models", () => {
  it("gemini-embedding-001 through @google/genai is served by the Gemini embedding model, not an alias's chat model", async () => {
    const from = gateway.upstream.requests.length
    const answer = await genai().models.embedContent({ model: "gemini-embedding-001", contents: ["one", "two"] })
    assert.deepStrictEqual(answer.embeddings?.map((e) => e.values?.length), [768, 768])
    const sent = since(from)
    assert.deepStrictEqual(sent.map((r) => [r.path, r.model]), [[
      "/v1beta/models/gemini-embedding-001:batchEmbedContents",
      "gemini-embedding-001"
    ]])
  })

  for (const base of ["/v1", "/v1beta/openai"]) {
    it(`gemini-embedding-001 through the openai SDK at ${base}/embeddings: translated to batchEmbedContents, base64 vectors decoded by the SDK`, async () => {
      const from = gateway.upstream.requests.length
      const answer = await openai(base).embeddings.create({
        model: "gemini-embedding-001",
        input: ["first text", "second text"]
      })
      assert.strictEqual(answer.model, "gemini-embedding-001")
      assert.deepStrictEqual(answer.data.map((d) => [d.index, d.embedding.length]), [[0, 768], [1, 768]])
      // Unit vectors, as the fake upstream makes them: the base64 float32s were read back as numbers.
      const norm = Math.sqrt(answer.data[0]!.embedding.reduce((sum, v) => sum + v * v, 0))
      assert.approximately(norm, 1, 1e-3)
      assert.isAbove(answer.usage.prompt_tokens, 0)
      const sent = since(from)
      assert.strictEqual(sent.length, 1)
      assert.strictEqual(sent[0]!.path, "/v1beta/models/gemini-embedding-001:batchEmbedContents")
      const body = sent[0]!.body as { requests: Array<{ model: string; content: { parts: Array<{ text: string }> } }> }
      assert.deepStrictEqual(body.requests.map((r) => [r.model, r.content.parts[0]!.text]), [
        ["models/gemini-embedding-001", "first text"],
        ["models/gemini-embedding-001", "second text"]
      ])
    })
  }

  it("text-embedding-3-small through both SDKs", async () => {
    const viaOpenAI = await openai().embeddings.create({ model: "text-embedding-3-small", input: "hello" })
    assert.strictEqual(viaOpenAI.data[0]!.embedding.length, 1536)
    const viaGemini = await genai().models.embedContent({ model: "text-embedding-3-small", contents: "hello" })
    assert.strictEqual(viaGemini.embeddings?.[0]?.values?.length, 1536)
  })

  it("an unknown gemini-* embedding name is refused, not embedded (and billed) by gemini-2.5-pro through the gemini-* alias", async () => {
    const from = gateway.upstream.requests.length
    const refused = await fetch(`${gateway.url}/v1beta/models/gemini-embedding-002:embedContent`, {
      method: "POST",
      headers: { "x-goog-api-key": Demo.DEMO_KEY, "content-type": "application/json" },
      body: JSON.stringify({ content: { parts: [{ text: "hello" }] } })
    })
    assert.strictEqual(refused.status, 404)
    const body = await refused.json() as { error: { status: string; message: string } }
    assert.strictEqual(body.error.status, "NOT_FOUND")
    assert.include(body.error.message, "gemini-embedding-002")
    const viaOpenAI = await openai().embeddings.create({ model: "gemini-embedding-002", input: "hello" }).then(
      () => undefined,
      (e: unknown) => e
    )
    assert.instanceOf(viaOpenAI, OpenAI.NotFoundError)
    assert.deepStrictEqual(since(from), [])
  })

  it("the gemini-* aliases still serve gemini-cli's chat model ids", async () => {
    const from = gateway.upstream.requests.length
    const answer = await genai().models.generateContent({ model: "gemini-3-pro-preview", contents: "hi" })
    assert.include(answer.text ?? "", "Hello from fake-upstream (model gemini-2.5-pro)")
    assert.deepStrictEqual(since(from).map((r) => r.model), ["gemini-2.5-pro"])
  })
})
