/**
 * Edges of the contract through the real server: an upstream that is too slow
 * to answer (504 upstream_timeout, also through the openai SDK), an upstream
 * that cannot be reached with no channel to fail over to (502 upstream_error),
 * failover to the next channel when the first is unreachable, Gemini's
 * streamed JSON array (without `alt=sse`) through both kinds of channel, every
 * way a Gemini client may present its key, and upstream keys kept encrypted in
 * the database.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { DatabaseSync } from "node:sqlite"
import OpenAI from "openai"
import type { ConfigFile } from "../src/ConfigFile.ts"
import { startGateway, type TestGateway } from "./support/Gateway.ts"

const KEY = "sk-edges-0000000000000000000000000000000000"

const config = (upstream: string): ConfigFile => ({
  listen: "127.0.0.1:0",
  log_level: "error",
  max_body_bytes: 64 * 1024,
  channels: [
    {
      name: "slow",
      type: "openai",
      base_url: `${upstream}/v1`,
      api_key: "k",
      models: ["slow-model"],
      model_map: { "slow-model": "gpt-slow-2000" },
      timeouts: { first_byte_ms: 300 }
    },
    // The preferred channel for "failover-model" points at a port nothing listens on.
    {
      name: "dead",
      type: "openai",
      base_url: "http://127.0.0.1:9/v1",
      api_key: "k",
      models: ["failover-model"],
      priority: 10
    },
    // The only channel of "unreachable-model": nothing to fail over to.
    {
      name: "dead-only",
      type: "openai",
      base_url: "http://127.0.0.1:9/v1",
      api_key: "sk-upstream-secret-dead",
      models: ["unreachable-model"]
    },
    {
      name: "alive",
      type: "openai",
      base_url: `${upstream}/v1`,
      api_key: "k",
      models: ["failover-model", "gpt-4o-mini", "cut-openai"],
      model_map: { "cut-openai": "gpt-cut-2" }
    },
    {
      name: "gemini",
      type: "gemini",
      base_url: upstream,
      api_key: "g",
      models: ["gemini-2.5-flash", "cut-gemini"],
      model_map: { "cut-gemini": "gemini-2.5-flash-cut-2" }
    }
  ],
  models: {
    "slow-model": { input: 1, output: 1 },
    "failover-model": { input: 1, output: 1 },
    "unreachable-model": { input: 1, output: 1 },
    "gpt-4o-mini": { input: 1, output: 1 },
    "gemini-2.5-flash": { input: 1, output: 1 },
    "cut-openai": { input: 1, output: 1 },
    "cut-gemini": { input: 1, output: 1 }
  },
  users: [{ name: "edgar", balance: 5, keys: [{ name: "k", secret: KEY }] }]
})

let gateway: TestGateway
beforeAll(async () => {
  gateway = await startGateway(config)
})
afterAll(async () => {
  await gateway.close()
})

const openai = (body: unknown) =>
  fetch(`${gateway.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
    body: JSON.stringify(body)
  })

const gemini = (
  model: string,
  action: string,
  init: { readonly headers?: Record<string, string>; readonly query?: string } = {}
) =>
  fetch(`${gateway.url}/v1beta/models/${model}:${action}${init.query ?? ""}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(init.headers ?? { "x-goog-api-key": KEY }) },
    body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hello" }] }] })
  })

describe("edges", () => {
  it("answers 504 upstream_timeout when the upstream is slower than the channel's first-byte timeout", async () => {
    const response = await openai({ model: "slow-model", messages: [{ role: "user", content: "hi" }] })
    assert.strictEqual(response.status, 504)
    assert.strictEqual((await response.json() as { error: { code: string } }).error.code, "upstream_timeout")
  })

  it("surfaces upstream timeouts and unreachable upstreams as the openai SDK's error classes", async () => {
    const sdk = new OpenAI({ apiKey: KEY, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
    const expectError = async (model: string, status: number, code: string, message: RegExp) => {
      try {
        await sdk.chat.completions.create({ model, messages: [{ role: "user", content: "hi" }] })
      } catch (error) {
        assert.instanceOf(error, OpenAI.InternalServerError)
        const apiError = error as InstanceType<typeof OpenAI.APIError>
        assert.strictEqual(apiError.status, status)
        assert.strictEqual(apiError.code, code)
        assert.match(apiError.message, message)
        // Callers never see the operator's channel names (docs/api.md).
        assert.notMatch(apiError.message, /'slow'|'dead-only'/)
        return
      }
      assert.fail(`expected ${code}`)
    }
    await expectError("slow-model", 504, "upstream_timeout", /^504 The upstream did not answer within 300 ms/)
    await expectError("unreachable-model", 502, "upstream_error", /^502 The upstream could not be reached/)
  })

  it("refuses a body over max_body_bytes with 413, whether its length is declared or it is sent chunked", async () => {
    const big = JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "x".repeat(100 * 1024) }] })
    const declared = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: big
    })
    assert.strictEqual(declared.status, 413)
    assert.strictEqual((await declared.json() as { error: { code: string } }).error.code, "request_too_large")
    const bytes = new TextEncoder().encode(big)
    const chunked = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: new ReadableStream({
        start(controller) {
          for (let i = 0; i < bytes.length; i += 8192) controller.enqueue(bytes.slice(i, i + 8192))
          controller.close()
        }
      }),
      duplex: "half"
    } as RequestInit)
    assert.strictEqual(chunked.status, 413)
    const body = await chunked.json() as { error: { code: string; message: string } }
    assert.strictEqual(body.error.code, "request_too_large")
    assert.include(body.error.message, "65536 bytes")
  })

  it("fails over to the next channel when the preferred one is unreachable", async () => {
    const response = await openai({ model: "failover-model", messages: [{ role: "user", content: "hi" }] })
    assert.strictEqual(response.status, 200)
    assert.match(
      (await response.json() as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content,
      /fake-upstream/
    )
  })

  for (const model of ["gemini-2.5-flash", "gpt-4o-mini"]) {
    it(`streams a JSON array without alt=sse (${model})`, async () => {
      const response = await gemini(model, "streamGenerateContent")
      assert.strictEqual(response.status, 200)
      // Google sends the array stream as JSON, not as server-sent events.
      assert.strictEqual(response.headers.get("content-type"), "application/json")
      const body = await response.text()
      const chunks = JSON.parse(body) as Array<{ candidates?: Array<{ finishReason?: string }> }>
      assert.isArray(chunks)
      assert.isAbove(chunks.length, 0)
      assert.strictEqual(chunks.at(-1)!.candidates?.[0]?.finishReason, "STOP")
    })

    it(`ends a JSON array stream cut by the upstream with an error element and the closing bracket (${model})`, async () => {
      const response = await gemini(model === "gemini-2.5-flash" ? "cut-gemini" : "cut-openai", "streamGenerateContent")
      assert.strictEqual(response.status, 200)
      assert.strictEqual(response.headers.get("content-type"), "application/json")
      const body = await response.text()
      assert.notInclude(body, "data:")
      assert.isTrue(body.startsWith("[") && body.endsWith("]"), body)
      const elements = JSON.parse(body) as Array<
        { candidates?: unknown; error?: { code: number; status: string; message: string } }
      >
      assert.isAbove(elements.length, 1, "the chunks before the cut are kept")
      const last = elements.at(-1)!
      assert.strictEqual(last.error?.code, 502)
      assert.strictEqual(last.error?.status, "UNAVAILABLE")
      assert.match(last.error?.message ?? "", /broke off/)
      for (const element of elements.slice(0, -1)) assert.isDefined(element.candidates)
    })

    it(`frames alt=sse as data lines only (${model})`, async () => {
      const response = await gemini(model, "streamGenerateContent", { query: "?alt=sse" })
      assert.strictEqual(response.headers.get("content-type")?.startsWith("text/event-stream"), true)
      const body = await response.text()
      const events = body.split("\r\n\r\n").filter((e) => e.length > 0)
      assert.isAbove(events.length, 0)
      for (const event of events) {
        assert.isTrue(event.startsWith("data: "), event)
        assert.notInclude(event.slice(6), "\n")
        JSON.parse(event.slice(6))
      }
    })
  }

  it("takes a Gemini client's key from x-goog-api-key, ?key= or a bearer token", async () => {
    assert.strictEqual(
      (await gemini("gemini-2.5-flash", "generateContent", { headers: { "x-goog-api-key": KEY } })).status,
      200
    )
    assert.strictEqual(
      (await gemini("gemini-2.5-flash", "generateContent", { headers: {}, query: `?key=${KEY}` })).status,
      200
    )
    assert.strictEqual(
      (await gemini("gemini-2.5-flash", "generateContent", { headers: { authorization: `Bearer ${KEY}` } })).status,
      200
    )
    const missing = await gemini("gemini-2.5-flash", "generateContent", { headers: {} })
    const body = await missing.json() as { error: { code: number; status: string } }
    assert.strictEqual(missing.status, 403)
    assert.strictEqual(body.error.status, "PERMISSION_DENIED")
  })

  it("keeps upstream keys encrypted in the channel rows", () => {
    const db = new DatabaseSync(gateway.database.slice("sqlite:".length), { readOnly: true })
    try {
      const rows = db.prepare("SELECT * FROM channels WHERE name = 'dead-only'").all()
      assert.strictEqual(rows.length, 1)
      const raw = JSON.stringify(rows[0])
      assert.notInclude(raw, "sk-upstream-secret-dead")
      assert.notInclude(raw, Buffer.from("sk-upstream-secret-dead").toString("base64"))
      assert.isAbove(String(rows[0]!.api_keys_enc).length, "sk-upstream-secret-dead".length)
    } finally {
      db.close()
    }
  })

  it("puts an x-request-id on every answer: health checks, the console, the management API, wrong paths, calls", async () => {
    const answers = await Promise.all([
      fetch(`${gateway.url}/healthz`),
      fetch(`${gateway.url}/readyz`),
      fetch(`${gateway.url}/console/`),
      fetch(`${gateway.url}/api/auth/session`),
      fetch(`${gateway.url}/no/such/path`),
      fetch(`${gateway.url}/v1/models`, { headers: { authorization: `Bearer ${KEY}` } }),
      fetch(`${gateway.url}/api/me`, { headers: { authorization: `Bearer ${KEY}` } }),
      openai({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] })
    ])
    const ids = answers.map((answer) => answer.headers.get("x-request-id") ?? "")
    for (const [i, id] of ids.entries()) {
      assert.match(id, /^req_[0-9a-f]{24}$/, `${answers[i]!.url}: ${answers[i]!.status}`)
    }
    assert.strictEqual(new Set(ids).size, ids.length, "each answer has its own id")
    await Promise.all(answers.map((answer) => answer.arrayBuffer()))
  })

  it("accepts the models/ prefix in the model path", async () => {
    assert.strictEqual((await gemini("models%2Fgemini-2.5-flash", "generateContent")).status, 200)
  })
})
