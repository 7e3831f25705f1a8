/**
 * The Gemini surface (`/v1beta`) through the real server, beyond what the SDK
 * tests cover: the model list's per-model metadata, Google's exact answers to
 * bad keys and wrong API versions, Google's OpenAI-compatible paths, the
 * `models/` prefix, relaying a Gemini channel's answer byte for byte with the
 * public model name, `countTokens` never billed, and what an OpenAI client of
 * a Gemini channel sees (`created`, `id`).
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { GoogleGenAI } from "@google/genai"
import OpenAI from "openai"
import type { ConfigFile } from "../src/ConfigFile.ts"
import { books, runSql } from "./support/Databases.ts"
import { startGateway, type TestGateway } from "./support/Gateway.ts"

const KEY = "sk-gemini-surface-00000000000000000000000000"

const config = (upstream: string): ConfigFile => ({
  listen: "127.0.0.1:0",
  log_level: "error",
  usage: { flush_interval_ms: 20 },
  channels: [
    {
      name: "gemini",
      type: "gemini",
      base_url: upstream,
      api_key: "g",
      models: ["gemini-2.5-flash", "flash"],
      model_map: { flash: "gemini-2.5-flash-upstream-name" }
    },
    {
      name: "openai",
      type: "openai",
      base_url: `${upstream}/v1`,
      api_key: "k",
      models: ["gpt-4o-mini", "text-embedding-3-small", "o3-mini", "no-price"]
    }
  ],
  models: {
    "gemini-2.5-flash": { input: 1, output: 1, description: "Fast Gemini" },
    flash: { input: 1, output: 1 },
    "gpt-4o-mini": { input: 1, output: 1 },
    "text-embedding-3-small": { input: 0.02, embedding: true, description: "Embeds text" },
    "o3-mini": { input: 1, output: 4, reasoning: true }
  },
  users: [{ name: "gina", balance: 5, keys: [{ name: "k", secret: KEY }] }]
})

let gateway: TestGateway
beforeAll(async () => {
  gateway = await startGateway(config)
})
afterAll(async () => {
  await gateway.close()
})

const contents = [{ role: "user", parts: [{ text: "hello there" }] }]

const post = (path: string, body: unknown, headers: Record<string, string> = { "x-goog-api-key": KEY }) =>
  fetch(`${gateway.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body)
  })

const get = (path: string, headers: Record<string, string> = { "x-goog-api-key": KEY }) =>
  fetch(`${gateway.url}${path}`, { headers })

const usageRows = () =>
  runSql(gateway.database, (sql) => sql`SELECT COUNT(*) AS n FROM usage_records`).then((rows) => Number(rows[0]!.n))

const settle = () => new Promise((resolve) => setTimeout(resolve, 150))

describe("the models list", () => {
  it("advertises each model's own methods, thinking and description, and leaves out unpriced models", async () => {
    const body = await (await get("/v1beta/models")).json() as {
      models: Array<
        { name: string; supportedGenerationMethods: Array<string>; description?: string; thinking?: boolean }
      >
    }
    const byName = new Map(body.models.map((m) => [m.name, m]))
    assert.deepStrictEqual([...byName.keys()].sort(), [
      "models/flash",
      "models/gemini-2.5-flash",
      "models/gpt-4o-mini",
      "models/o3-mini",
      "models/text-embedding-3-small"
    ])
    const embedder = byName.get("models/text-embedding-3-small")!
    assert.includeMembers(embedder.supportedGenerationMethods, ["embedContent", "batchEmbedContents"])
    assert.notInclude(embedder.supportedGenerationMethods, "generateContent")
    assert.strictEqual(embedder.description, "Embeds text")
    const chat = byName.get("models/gemini-2.5-flash")!
    assert.includeMembers(chat.supportedGenerationMethods, ["generateContent", "countTokens"])
    assert.notInclude(chat.supportedGenerationMethods, "embedContent")
    assert.strictEqual(chat.description, "Fast Gemini")
    assert.isTrue(byName.get("models/o3-mini")!.thinking)
    // The SDK sees the same.
    const genai = new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl: gateway.url, apiVersion: "v1beta" } })
    const one = await genai.models.get({ model: "text-embedding-3-small" })
    assert.includeMembers(one.supportedActions ?? [], ["embedContent"])
    // The OpenAI list is unchanged in shape and agrees on what may be called.
    const openai = await (await get("/v1/models", { authorization: `Bearer ${KEY}` })).json() as {
      data: Array<Record<string, unknown>>
    }
    assert.deepStrictEqual(openai.data.map((m) => m.id).sort(), [
      "flash",
      "gemini-2.5-flash",
      "gpt-4o-mini",
      "o3-mini",
      "text-embedding-3-small"
    ])
    assert.deepStrictEqual(Object.keys(openai.data[0]!).sort(), ["created", "id", "object", "owned_by"])
  })

  it("accepts the models/ prefix as a literal path segment and percent-encoded", async () => {
    for (const name of ["models/gemini-2.5-flash", "models%2Fgemini-2.5-flash"]) {
      const one = await get(`/v1beta/models/${name}`)
      assert.strictEqual(one.status, 200, name)
      assert.strictEqual((await one.json() as { name: string }).name, "models/gemini-2.5-flash")
      const generated = await post(`/v1beta/models/${name}:generateContent`, { contents })
      assert.strictEqual(generated.status, 200, name)
      const counted = await post(`/v1beta/models/${name}:countTokens`, { contents })
      assert.strictEqual(counted.status, 200, name)
    }
  })
})

describe("Google's answers to wrong keys and versions", () => {
  it("answers a bad key exactly as Google does: 400 INVALID_ARGUMENT with ErrorInfo API_KEY_INVALID", async () => {
    const response = await post(
      "/v1beta/models/gemini-2.5-flash:generateContent?key=wrong-key-123456",
      { contents },
      {}
    )
    assert.strictEqual(response.status, 400)
    assert.strictEqual(response.headers.get("content-type"), "application/json")
    const body = await response.json() as {
      error: { code: number; status: string; message: string; details: Array<Record<string, unknown>> }
    }
    assert.strictEqual(body.error.code, 400)
    assert.strictEqual(body.error.status, "INVALID_ARGUMENT")
    assert.deepStrictEqual(body.error.details, [{
      "@type": "type.googleapis.com/google.rpc.ErrorInfo",
      reason: "API_KEY_INVALID",
      domain: "googleapis.com",
      metadata: { service: "generativelanguage.googleapis.com" }
    }])
    assert.notInclude(body.error.message, "wrong-key-123456")
  })

  it("answers a @google/genai client on its default API version v1 with a 404 naming v1beta", async () => {
    for (const path of ["/v1/models", "/v1/models/gemini-2.5-flash"]) {
      const response = await get(path)
      assert.strictEqual(response.status, 404, path)
      const body = await response.json() as { error: { status: string; message: string } }
      assert.strictEqual(body.error.status, "NOT_FOUND")
      assert.match(body.error.message, /apiVersion: 'v1beta'/)
    }
    const genai = new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl: gateway.url, apiVersion: "v1" } })
    try {
      await genai.models.generateContent({ model: "gemini-2.5-flash", contents: "hi" })
      assert.fail("expected a 404")
    } catch (error) {
      assert.match(String(error), /v1beta/)
    }
  })

  it("points a Gemini client at /v1beta/models, never at /v1/models", async () => {
    const response = await post("/v1beta/models/no-such-model:generateContent", { contents })
    const body = await response.json() as { error: { status: string; message: string } }
    assert.strictEqual(response.status, 404)
    assert.include(body.error.message, "GET /v1beta/models")
    assert.notInclude(body.error.message, "/v1/models")
  })
})

describe("Google's OpenAI-compatible paths", () => {
  it("serves /v1beta/openai/chat/completions and /v1beta/openai/models with the openai SDK", async () => {
    const client = new OpenAI({ apiKey: KEY, baseURL: `${gateway.url}/v1beta/openai`, maxRetries: 0 })
    const completion = await client.chat.completions.create({
      model: "gemini-2.5-flash",
      messages: [{ role: "user", content: "hi" }]
    })
    assert.match(completion.choices[0]!.message.content ?? "", /fake-upstream/)
    const stream = await client.chat.completions.create({
      model: "gpt-4o-mini",
      messages: [{ role: "user", content: "hi" }],
      stream: true
    })
    let text = ""
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ""
    assert.match(text, /fake-upstream/)
    const ids = (await client.models.list()).data.map((m) => m.id)
    assert.include(ids, "gemini-2.5-flash")
    assert.strictEqual((await client.models.retrieve("gemini-2.5-flash")).id, "gemini-2.5-flash")
  })
})

describe("relaying a Gemini channel", () => {
  it("relays a non-stream answer byte for byte, with the public name in modelVersion", async () => {
    const response = await post("/v1beta/models/flash:generateContent", { contents })
    assert.strictEqual(response.status, 200)
    const text = await response.text()
    // The fake upstream pretty-prints like Google; a re-encoded answer would be compact.
    assert.include(text, "\n  \"candidates\": [")
    const body = JSON.parse(text) as { modelVersion: string }
    assert.strictEqual(body.modelVersion, "flash")
    const sent = gateway.upstream.requests.at(-1)!
    assert.strictEqual(sent.model, "gemini-2.5-flash-upstream-name")
  })

  it("reports the public name in every event of a relayed stream, SSE and JSON array", async () => {
    const sse = await (await post("/v1beta/models/flash:streamGenerateContent?alt=sse", { contents })).text()
    const events = sse.split("\r\n\r\n").filter((e) => e.length > 0)
    assert.isAbove(events.length, 1)
    for (const event of events) {
      assert.strictEqual((JSON.parse(event.slice(6)) as { modelVersion: string }).modelVersion, "flash")
    }
    const array = await (await post("/v1beta/models/flash:streamGenerateContent", { contents })).text()
    const elements = JSON.parse(array) as Array<{ modelVersion: string }>
    assert.isAbove(elements.length, 1)
    for (const element of elements) assert.strictEqual(element.modelVersion, "flash")
  })

  it("gives an OpenAI client of a Gemini channel a creation time and a chat completion id", async () => {
    const client = new OpenAI({ apiKey: KEY, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
    const before = Math.floor(Date.now() / 1000)
    const completion = await client.chat.completions.create({
      model: "gemini-2.5-flash",
      messages: [{ role: "user", content: "hi" }]
    })
    assert.isAtLeast(completion.created, before - 1)
    assert.isAtMost(completion.created, Math.floor(Date.now() / 1000) + 1)
    assert.isAbove(completion.id.length, 0)
    const stream = await client.chat.completions.create({
      model: "gemini-2.5-flash",
      messages: [{ role: "user", content: "hi" }],
      stream: true
    })
    for await (const chunk of stream) {
      assert.isAtLeast(chunk.created, before - 1)
      assert.isAbove(chunk.id.length, 0)
    }
  })
})

describe("countTokens", () => {
  it("is never billed: the balance, the ledger and the usage records stay as they were", async () => {
    // A billed call first, so the usage writer is known to be running.
    assert.strictEqual((await post("/v1beta/models/gemini-2.5-flash:generateContent", { contents })).status, 200)
    await settle()
    const before = await books(gateway.database, "gina")
    const rows = await usageRows()
    assert.isAbove(rows, 0)
    for (const model of ["gemini-2.5-flash", "gpt-4o-mini"]) {
      const response = await post(`/v1beta/models/${model}:countTokens`, { contents })
      assert.strictEqual(response.status, 200)
      assert.isAbove((await response.json() as { totalTokens: number }).totalTokens, 0)
    }
    await settle()
    const after = await books(gateway.database, "gina")
    assert.strictEqual(after.balance, before.balance)
    assert.strictEqual(after.ledger, before.ledger)
    assert.strictEqual(await usageRows(), rows)
  })
})
