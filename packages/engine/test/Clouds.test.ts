/**
 * Vertex AI and Bedrock channels through the engine (the web handler in this
 * process), against the fake upstream's strict clouds: Gemini and Claude on
 * Vertex (a service account's token, exchanged and cached), Bedrock's
 * Converse signed with SigV4 or a Bedrock API key, streams and not, from
 * every front door; the token refreshed once when Vertex refuses it; the
 * model-free probes; the books.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { FakeUpstream, TEST_CREDENTIALS } from "@modelgate/fake-upstream"
import { Effect } from "effect"
import { toWebHandler, type WebHandler } from "../src/host/WebHandler.ts"
import { cloudChannels, cloudModels } from "./support/CloudChannels.ts"

const KEY = "sk-embedded-alice-0000000000000000"

const post = (handler: WebHandler["handler"], path: string, headers: Record<string, string>, body: unknown) =>
  handler(
    new Request(`http://gateway.test${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body)
    })
  )

const openai = { authorization: `Bearer ${KEY}` }
const anthropic = { "x-api-key": KEY, "anthropic-version": "2023-06-01" }
const gemini = { "x-goog-api-key": KEY }

describe("cloud channels", () => {
  let upstream: FakeUpstream.FakeUpstream
  let gateway: WebHandler
  beforeAll(async () => {
    upstream = await Effect.runPromise(FakeUpstream.start({ port: 0, vertex: { tokenTtlSeconds: 3600 } }))
    gateway = await toWebHandler({
      routing: { probe_interval_ms: 600_000 },
      channels: cloudChannels(upstream.url, upstream.vertexKeyFile()),
      models: cloudModels,
      users: [{ name: "alice", balance: 100, keys: [{ name: "laptop", secret: KEY }] }]
    })
  })
  afterAll(async () => {
    await gateway?.dispose()
    await upstream?.close()
  })

  it("answers an OpenAI chat call from Gemini on Vertex, with a service account's token", async () => {
    const response = await post(gateway.handler, "/v1/chat/completions", openai, {
      model: "gemini-vertex",
      messages: [{ role: "user", content: "Hello" }]
    })
    const body = await response.json() as { model: string; choices: Array<{ message: { content: string } }> }
    assert.strictEqual(response.status, 200, JSON.stringify(body))
    assert.strictEqual(body.model, "gemini-vertex")
    assert.isAbove(body.choices[0]!.message.content.length, 0)
    assert.isAtLeast(upstream.vertexTokensIssued(), 1)
  })

  it("relays a Gemini stream to Gemini on Vertex, and a Messages call to Claude on Vertex", async () => {
    const issued = upstream.vertexTokensIssued()
    const stream = await post(
      gateway.handler,
      "/v1beta/models/gemini-vertex:streamGenerateContent?alt=sse",
      gemini,
      { contents: [{ role: "user", parts: [{ text: "Tell me a story" }] }] }
    )
    const text = await stream.text()
    assert.strictEqual(stream.status, 200, text)
    assert.include(text, "\"finishReason\":\"STOP\"")
    const messages = await post(gateway.handler, "/v1/messages", anthropic, {
      model: "claude-vertex",
      max_tokens: 64,
      messages: [{ role: "user", content: "Hello" }]
    })
    const body = await messages.json() as { model: string; type: string; content: Array<{ text: string }> }
    assert.strictEqual(messages.status, 200, JSON.stringify(body))
    assert.strictEqual(body.type, "message")
    assert.strictEqual(body.model, "claude-vertex")
    // The token was cached: no new exchange.
    assert.strictEqual(upstream.vertexTokensIssued(), issued)
  })

  it("streams a translated OpenAI call from Claude on Vertex", async () => {
    const response = await post(gateway.handler, "/v1/chat/completions", openai, {
      model: "claude-vertex",
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: "user", content: "Count to three" }]
    })
    const text = await response.text()
    assert.strictEqual(response.status, 200, text)
    assert.include(text, "data: [DONE]")
    assert.include(text, "\"finish_reason\":\"stop\"")
  })

  it("answers every front door from Bedrock's Converse, signed, stream and not", async () => {
    const chat = await post(gateway.handler, "/v1/chat/completions", openai, {
      model: "claude-bedrock",
      messages: [{ role: "user", content: "Hello" }]
    })
    const chatBody = await chat.json() as { choices: Array<{ message: { content: string } }> }
    assert.strictEqual(chat.status, 200, JSON.stringify(chatBody))
    assert.isAbove(chatBody.choices[0]!.message.content.length, 0)

    const stream = await post(gateway.handler, "/v1/chat/completions", openai, {
      model: "nova-pro",
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: "user", content: "Tell me a story" }]
    })
    const streamText = await stream.text()
    assert.strictEqual(stream.status, 200, streamText)
    assert.include(streamText, "data: [DONE]")
    assert.match(streamText, /"usage":\{"prompt_tokens":\d+/)

    const messages = await post(gateway.handler, "/v1/messages", anthropic, {
      model: "claude-bedrock",
      max_tokens: 64,
      stream: true,
      messages: [{ role: "user", content: "Hello" }]
    })
    const messagesText = await messages.text()
    assert.strictEqual(messages.status, 200, messagesText)
    assert.include(messagesText, "event: message_stop")

    const generate = await post(gateway.handler, "/v1beta/models/nova-key:generateContent", gemini, {
      contents: [{ role: "user", parts: [{ text: "Hello" }] }]
    })
    const generated = await generate.json() as { candidates: Array<{ finishReason: string }> }
    assert.strictEqual(generate.status, 200, JSON.stringify(generated))
    assert.strictEqual(generated.candidates[0]!.finishReason, "STOP")

    const responses = await post(gateway.handler, "/v1/responses", openai, {
      model: "nova-pro",
      input: "Hello"
    })
    const answered = await responses.json() as { status: string }
    assert.strictEqual(responses.status, 200, JSON.stringify(answered))
    assert.strictEqual(answered.status, "completed")
  })

  it("makes embeddings with a Vertex embedding model through :predict, and refuses them on a Bedrock chat model", async () => {
    const response = await post(gateway.handler, "/v1/embeddings", openai, {
      model: "embed-vertex",
      input: ["one", "two"]
    })
    const body = await response.json() as {
      data: Array<{ embedding: Array<number> }>
      usage: { prompt_tokens: number }
    }
    assert.strictEqual(response.status, 200, JSON.stringify(body))
    assert.strictEqual(body.data.length, 2)
    assert.isAbove(body.usage.prompt_tokens, 0)
    const bedrock = await post(gateway.handler, "/v1/embeddings", openai, { model: "nova-pro", input: "one" })
    const refused = await bedrock.json() as { error: { message: string } }
    assert.strictEqual(bedrock.status, 400, JSON.stringify(refused))
    assert.match(refused.error.message, /'nova-pro' is not an embedding model on the bedrock channels/)
  })

  it("counts tokens with Bedrock's CountTokens from the Anthropic and Gemini front doors, a profile counted as its model", async () => {
    const before = upstream.requests.length
    const records = gateway.inspect!.usage().length
    const anthropicCount = await post(gateway.handler, "/v1/messages/count_tokens", anthropic, {
      model: "claude-bedrock",
      system: "Be brief.",
      messages: [{ role: "user", content: "How many tokens is this?" }]
    })
    const counted = await anthropicCount.json() as { input_tokens: number }
    assert.strictEqual(anthropicCount.status, 200, JSON.stringify(counted))
    // The fake's count: a quarter of the prompt's characters ("Be brief." and the question), rounded up.
    assert.deepStrictEqual(counted, { input_tokens: Math.ceil(("Be brief.".length + 24) / 4) })
    const geminiCount = await post(gateway.handler, "/v1beta/models/nova-pro:countTokens", gemini, {
      contents: [{ role: "user", parts: [{ text: "Count these words for me" }] }]
    })
    const geminiCounted = await geminiCount.json() as { totalTokens: number }
    assert.strictEqual(geminiCount.status, 200, JSON.stringify(geminiCounted))
    assert.deepStrictEqual(geminiCounted, { totalTokens: Math.ceil("Count these words for me".length / 4) })
    const asked = upstream.requests.slice(before).filter((r) => r.path.endsWith("/count-tokens"))
    assert.deepStrictEqual(asked.map((r) => r.path), [
      "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/count-tokens",
      "/model/amazon.nova-pro-v1%3A0/count-tokens"
    ])
    assert.deepStrictEqual((asked[0]!.body as { input: { converse: { system: unknown } } }).input.converse.system, [
      { text: "Be brief." }
    ])
    // Counts are never billed.
    await new Promise((resolve) => setTimeout(resolve, 50))
    assert.strictEqual(gateway.inspect!.usage().length, records)
  })

  it("counts a Gemini client's tokens with Claude's counter on Vertex, and an Anthropic client's with Gemini's", async () => {
    const before = upstream.requests.length
    const geminiCount = await post(gateway.handler, "/v1beta/models/claude-vertex:countTokens", gemini, {
      contents: [{ role: "user", parts: [{ text: "Count these words for me" }] }]
    })
    const geminiCounted = await geminiCount.json() as { totalTokens: number }
    assert.strictEqual(geminiCount.status, 200, JSON.stringify(geminiCounted))
    const anthropicCount = await post(gateway.handler, "/v1/messages/count_tokens", anthropic, {
      model: "gemini-vertex",
      messages: [{ role: "user", content: "How many tokens is this?" }]
    })
    const anthropicCounted = await anthropicCount.json() as { input_tokens: number }
    assert.strictEqual(anthropicCount.status, 200, JSON.stringify(anthropicCounted))
    const asked = upstream.requests.slice(before).filter((r) => !r.path.endsWith("/token"))
    assert.deepStrictEqual(asked.map((r) => r.path.replace(/^.*\/publishers\//, "")), [
      "anthropic/models/count-tokens:rawPredict",
      "google/models/gemini-2.5-flash:countTokens"
    ])
    const claudeBody = asked[0]!.body as Record<string, unknown>
    assert.deepStrictEqual(Object.keys(claudeBody).sort(), ["anthropic_version", "messages", "model"])
    assert.strictEqual(claudeBody.model, "claude-sonnet-4-5@20250929")
    assert.deepStrictEqual(Object.keys(asked[1]!.body as object), ["contents"])
    // The answers are the upstreams' counts, in each client's shape.
    assert.deepStrictEqual(Object.keys(geminiCounted), ["totalTokens"])
    assert.deepStrictEqual(Object.keys(anthropicCounted), ["input_tokens"])
  })

  it("sends an OpenAI client's image to Bedrock as Converse image bytes, and to Gemini and Claude on Vertex", async () => {
    // A 1x1 PNG.
    const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    const before = upstream.requests.length
    for (const model of ["claude-bedrock", "gemini-vertex", "claude-vertex"]) {
      const response = await post(gateway.handler, "/v1/chat/completions", openai, {
        model,
        messages: [{
          role: "user",
          content: [
            { type: "text", text: "What is in this picture?" },
            { type: "image_url", image_url: { url: `data:image/png;base64,${png}` } }
          ]
        }]
      })
      assert.strictEqual(response.status, 200, `${model}: ${await response.clone().text()}`)
    }
    const sent = upstream.requests.slice(before).map((r) => JSON.stringify(r.body))
    assert.strictEqual(sent.length, 3)
    assert.include(sent[0], JSON.stringify({ image: { format: "png", source: { bytes: png } } }))
    assert.include(sent[1], JSON.stringify({ inlineData: { mimeType: "image/png", data: png } }))
    assert.include(
      sent[2],
      JSON.stringify({ type: "image", source: { type: "base64", media_type: "image/png", data: png } })
    )
  })

  /** The usage records written since `count`, once the writer has them. */
  const recordsSince = async (count: number, expected: number) => {
    for (let i = 0; i < 100 && gateway.inspect!.usage().length < count + expected; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    return gateway.inspect!.usage().slice(count)
  }
  /** The fake's token estimate of a text (a quarter of its characters, rounded up). */
  const tokensOf = (text: string) => Math.ceil(text.length / 4)

  it("makes embeddings with Titan on Bedrock through InvokeModel, one text a request, billed at the tokens Bedrock counted", async () => {
    const before = gateway.inspect!.balance("alice")!
    const count = gateway.inspect!.usage().length
    const inputs = ["the first text to embed", "a second", "and a third, somewhat longer than the others"]
    const response = await post(gateway.handler, "/v1/embeddings", openai, {
      model: "titan-embed",
      input: inputs,
      dimensions: 256
    })
    const body = await response.json() as {
      model: string
      data: Array<{ index: number; embedding: Array<number> }>
      usage: { prompt_tokens: number }
    }
    assert.strictEqual(response.status, 200, JSON.stringify(body))
    assert.strictEqual(body.model, "titan-embed")
    assert.deepStrictEqual(body.data.map((d) => d.index), [0, 1, 2])
    for (const d of body.data) assert.strictEqual(d.embedding.length, 256)
    // Each text's vector is its own (one request each, in order).
    assert.notDeepEqual(body.data[0]!.embedding, body.data[1]!.embedding)
    const tokens = inputs.reduce((n, text) => n + tokensOf(text), 0)
    assert.strictEqual(body.usage.prompt_tokens, tokens)
    const [record] = await recordsSince(count, 1)
    assert.strictEqual(record!.status, 200)
    assert.isTrue(record!.usageReported)
    assert.strictEqual(record!.promptTokens, tokens)
    // $0.02 a million tokens: 20 nano-dollars a token.
    assert.strictEqual(record!.costNanos, BigInt(tokens * 20))
    assert.strictEqual(before - gateway.inspect!.balance("alice")!, record!.costNanos)

    const sized = await post(gateway.handler, "/v1/embeddings", openai, {
      model: "titan-embed",
      input: "one",
      dimensions: 300
    })
    const refused = await sized.json() as { error: { message: string } }
    assert.strictEqual(sized.status, 400, JSON.stringify(refused))
    assert.match(refused.error.message, /256, 512, 1024 dimensions, not 300/)
  })

  it("makes embeddings with Cohere on Bedrock from Gemini's batchEmbedContents and embedContent, tokens from Bedrock's header", async () => {
    const count = gateway.inspect!.usage().length
    const texts = ["alpha beta", "gamma delta epsilon"]
    const before = upstream.requests.length
    const batch = await post(gateway.handler, "/v1beta/models/cohere-embed:batchEmbedContents", gemini, {
      requests: texts.map((text) => ({
        model: "models/cohere-embed",
        content: { parts: [{ text }] },
        taskType: "RETRIEVAL_QUERY"
      }))
    })
    const batchBody = await batch.json() as { embeddings: Array<{ values: Array<number> }> }
    assert.strictEqual(batch.status, 200, JSON.stringify(batchBody))
    assert.strictEqual(batchBody.embeddings.length, 2)
    assert.strictEqual(batchBody.embeddings[0]!.values.length, 1024)
    // Gemini's taskType is Cohere's input_type.
    assert.deepStrictEqual(upstream.requests.slice(before).map((r) => r.body), [{
      texts,
      input_type: "search_query"
    }])
    const single = await post(gateway.handler, "/v1beta/models/titan-embed:embedContent", gemini, {
      content: { parts: [{ text: "just one" }] }
    })
    const singleBody = await single.json() as { embedding: { values: Array<number> } }
    assert.strictEqual(single.status, 200, JSON.stringify(singleBody))
    assert.strictEqual(singleBody.embedding.values.length, 1024)
    const records = await recordsSince(count, 2)
    assert.strictEqual(records.length, 2)
    assert.deepStrictEqual(records.map((r) => [r.promptTokens, r.usageReported]), [
      [texts.reduce((n, text) => n + tokensOf(text), 0), true],
      [tokensOf("just one"), true]
    ])
    assert.strictEqual(records[0]!.costNanos, BigInt(records[0]!.promptTokens * 100))
    assert.strictEqual(records[1]!.costNanos, BigInt(records[1]!.promptTokens * 20))
  })

  it("makes embeddings with Gemini's embedding model on Vertex from both front doors, one text a :predict", async () => {
    const count = gateway.inspect!.usage().length
    const openaiCall = await post(gateway.handler, "/v1/embeddings", openai, {
      model: "gemini-embed-vertex",
      input: ["first of two", "second of two"]
    })
    const openaiBody = await openaiCall.json() as { data: Array<{ embedding: Array<number> }> }
    assert.strictEqual(openaiCall.status, 200, JSON.stringify(openaiBody))
    assert.strictEqual(openaiBody.data.length, 2)
    const before = upstream.requests.length
    const batch = await post(gateway.handler, "/v1beta/models/gemini-embed-vertex:batchEmbedContents", gemini, {
      requests: ["x", "yy", "zzz"].map((text) => ({
        model: "models/gemini-embed-vertex",
        content: { parts: [{ text }] },
        outputDimensionality: 64,
        taskType: "SEMANTIC_SIMILARITY"
      }))
    })
    const batchBody = await batch.json() as { embeddings: Array<{ values: Array<number> }> }
    assert.strictEqual(batch.status, 200, JSON.stringify(batchBody))
    assert.deepStrictEqual(batchBody.embeddings.map((e) => e.values.length), [64, 64, 64])
    // Gemini's taskType is each :predict instance's task_type.
    const predicted = upstream.requests.slice(before).filter((r) => r.path.endsWith(":predict")).map((r) => r.body)
    assert.deepStrictEqual(
      predicted,
      ["x", "yy", "zzz"].map((content) => ({
        instances: [{ content, task_type: "SEMANTIC_SIMILARITY" }],
        parameters: { outputDimensionality: 64 }
      }))
    )
    const single = await post(gateway.handler, "/v1beta/models/gemini-embed-vertex:embedContent", gemini, {
      content: { parts: [{ text: "one" }] }
    })
    assert.strictEqual(single.status, 200, await single.clone().text())
    const records = await recordsSince(count, 3)
    assert.deepStrictEqual(records.map((r) => [r.status, r.usageReported, r.promptTokens]), [
      [200, true, tokensOf("first of two") + tokensOf("second of two")],
      [200, true, 3],
      [200, true, 1]
    ])
  })

  it("charges what the usage records say, one record per call", async () => {
    const before = gateway.inspect!.balance("alice")!
    const count = gateway.inspect!.usage().length
    await (await post(gateway.handler, "/v1/chat/completions", openai, {
      model: "nova-pro",
      messages: [{ role: "user", content: "Hello" }]
    })).text()
    await (await post(gateway.handler, "/v1/messages", anthropic, {
      model: "claude-vertex",
      max_tokens: 32,
      stream: true,
      messages: [{ role: "user", content: "Hello" }]
    })).text()
    await new Promise((resolve) => setTimeout(resolve, 50))
    const records = gateway.inspect!.usage().slice(count)
    assert.strictEqual(records.length, 2)
    for (const record of records) {
      assert.strictEqual(record.status, 200)
      assert.isTrue(record.usageReported)
    }
    const spent = records.reduce((sum, record) => sum + record.costNanos, 0n)
    assert.strictEqual(before - gateway.inspect!.balance("alice")!, spent)
  })
})

describe("a Bedrock stream's events within max_event_bytes", () => {
  let upstream: FakeUpstream.FakeUpstream
  let gateway: WebHandler
  beforeAll(async () => {
    upstream = await Effect.runPromise(FakeUpstream.start({ port: 0 }))
    gateway = await toWebHandler({
      routing: { probe_interval_ms: 600_000 },
      max_event_bytes: 64 * 1024,
      channels: [{
        name: "bedrock",
        type: "bedrock",
        base_url: upstream.url,
        region: "us-east-1",
        access_key_id: TEST_CREDENTIALS.accessKeyId,
        secret_access_key: TEST_CREDENTIALS.secretAccessKey,
        models: ["nova-huge"],
        // The fake sends one contentBlockDelta frame of 8 MB after the first text: inside AWS's 16 MiB.
        model_map: { "nova-huge": "amazon.nova-pro-line-8000000-v1:0" }
      }],
      models: { "nova-huge": { input: 0.8, output: 3.2 } },
      users: [{ name: "alice", balance: 100, keys: [{ name: "laptop", secret: KEY }] }]
    })
  })
  afterAll(async () => {
    await gateway?.dispose()
    await upstream?.close()
  })

  it("a frame announcing more ends the stream in-band, charged for what was delivered", async () => {
    const before = gateway.inspect!.balance("alice")!
    const response = await post(gateway.handler, "/v1/chat/completions", openai, {
      model: "nova-huge",
      stream: true,
      messages: [{ role: "user", content: "Tell me a story" }]
    })
    assert.strictEqual(response.status, 200)
    const text = await response.text()
    assert.isBelow(text.length, 64 * 1024, "nothing of the huge event reaches the client")
    const events = text.split("\n\n").filter((e) => e.startsWith("data: {")).map((e) => JSON.parse(e.slice(6)))
    assert.isAbove(events.filter((e) => e.choices?.[0]?.delta?.content).length, 0, "the text before it is delivered")
    const last = events.at(-1)
    assert.strictEqual(last.error.code, "upstream_error")
    assert.match(last.error.message, /sent a stream event larger than 65536 bytes \(max_event_bytes\)/)
    for (let i = 0; i < 100 && gateway.inspect!.usage().length === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    const [record] = gateway.inspect!.usage()
    assert.strictEqual(record!.status, 502)
    assert.isFalse(record!.usageReported)
    assert.isAbove(record!.completionTokens, 0)
    assert.strictEqual(before - gateway.inspect!.balance("alice")!, record!.costNanos)
  })
})
