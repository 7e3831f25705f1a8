/**
 * Vertex AI and Bedrock channels through the engine (the web handler in this
 * process), against the fake upstream's strict clouds: Gemini and Claude on
 * Vertex (a service account's token, exchanged and cached), Bedrock's
 * Converse signed with SigV4 or a Bedrock API key, streams and not, from
 * every front door; the token refreshed once when Vertex refuses it; the
 * model-free probes; the books.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { FakeUpstream, TEST_API_KEY, TEST_CREDENTIALS } from "@modelgate/fake-upstream"
import { Effect } from "effect"
import { toWebHandler, type WebHandler } from "../src/host/WebHandler.ts"

const KEY = "sk-embedded-alice-0000000000000000"

export const cloudChannels = (upstream: string, keyFile: Record<string, string>) => [
  {
    name: "vertex",
    type: "vertex",
    base_url: upstream,
    project: "fake-project",
    location: "us-east5",
    credentials: keyFile,
    models: ["gemini-vertex", "claude-vertex", "embed-vertex"],
    model_map: {
      "gemini-vertex": "gemini-2.5-flash",
      "claude-vertex": "claude-sonnet-4-5@20250929",
      "embed-vertex": "text-embedding-005"
    }
  },
  {
    name: "bedrock",
    type: "bedrock",
    base_url: upstream,
    region: "us-east-1",
    access_key_id: TEST_CREDENTIALS.accessKeyId,
    secret_access_key: TEST_CREDENTIALS.secretAccessKey,
    models: ["claude-bedrock", "nova-pro"],
    model_map: {
      "claude-bedrock": "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
      "nova-pro": "amazon.nova-pro-v1:0"
    }
  },
  {
    name: "bedrock-key",
    type: "bedrock",
    base_url: upstream,
    region: "us-east-1",
    api_key: TEST_API_KEY,
    models: ["nova-key"],
    model_map: { "nova-key": "amazon.nova-pro-v1:0" }
  }
]

export const cloudModels = {
  "gemini-vertex": { input: 1, output: 2 },
  "claude-vertex": { input: 3, output: 15 },
  "embed-vertex": { input: 0.1, embedding: true },
  "claude-bedrock": { input: 3, output: 15 },
  "nova-pro": { input: 0.8, output: 3.2 },
  "nova-key": { input: 0.8, output: 3.2 }
}

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

  it("makes embeddings with a Vertex embedding model through :predict, and refuses them on Bedrock", async () => {
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
    assert.match(refused.error.message, /not supported on bedrock channels/)
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
