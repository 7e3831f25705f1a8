/**
 * The gateway as a web handler (`toWebHandler`), against the fake upstream:
 * an OpenAI request to a Gemini channel, a Gemini `:streamGenerateContent?alt=sse`
 * request to an OpenAI channel, Claude on Vertex AI (a service account's
 * token, exchanged with WebCrypto's RS256) and Bedrock's Converse (signed
 * with SigV4 over WebCrypto, its binary event stream decoded), stream and
 * not, a bad key (401), an empty balance (429
 * `insufficient_quota`), and the embedded store's books. The same checks run
 * on the handler in this Node process, and on the handler served by Bun and
 * by Deno (the npm packages' binaries, `test/fixtures/serve.ts`).
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { FakeUpstream, TEST_CREDENTIALS } from "@modelgate/fake-upstream"
import { Effect } from "effect"
import { toWebHandler, type WebHandler } from "../src/host/WebHandler.ts"
import { type Served, serveOn } from "./support/Runtimes.ts"

const KEY = "sk-embedded-alice-0000000000000000"
const BROKE = "sk-embedded-broke-0000000000000000"

const config = (upstream: string, keyFile: Record<string, string>) => ({
  routing: { probe_interval_ms: 600_000 },
  channels: [
    { name: "gemini", type: "gemini", base_url: upstream, api_key: "g", models: ["gemini-2.5-flash"] },
    { name: "openai", type: "openai", base_url: `${upstream}/v1`, api_key: "k", models: ["gpt-4o-mini"] },
    {
      name: "vertex",
      type: "vertex",
      base_url: upstream,
      project: "fake-project",
      location: "us-east5",
      credentials: keyFile,
      models: ["claude-vertex"],
      model_map: { "claude-vertex": "claude-sonnet-4-5@20250929" }
    },
    {
      name: "bedrock",
      type: "bedrock",
      base_url: upstream,
      region: "us-east-1",
      access_key_id: TEST_CREDENTIALS.accessKeyId,
      secret_access_key: TEST_CREDENTIALS.secretAccessKey,
      models: ["nova-pro", "cohere-embed"],
      model_map: { "nova-pro": "amazon.nova-pro-v1:0", "cohere-embed": "cohere.embed-english-v3" }
    }
  ],
  models: {
    "gemini-2.5-flash": { input: 1, output: 2 },
    "gpt-4o-mini": { input: 1, output: 2 },
    "claude-vertex": { input: 3, output: 15 },
    "nova-pro": { input: 0.8, output: 3.2 },
    "cohere-embed": { input: 0.1, embedding: true }
  },
  users: [
    { name: "alice", balance: 10, keys: [{ name: "laptop", secret: KEY }] },
    { name: "broke", balance: 0, keys: [{ name: "empty", secret: BROKE }] }
  ]
})

/** Something that answers requests: a handler in this process, or a server in another runtime. */
type Fetch = (path: string, init?: RequestInit) => Promise<Response>

/** The checks every host of the handler must pass. */
const contract = (name: string, fetchOf: () => Fetch) =>
  describe(name, () => {
    it("serves an OpenAI chat request with a model of a Gemini channel, translated", async () => {
      const response = await fetchOf()("/v1/chat/completions", {
        method: "POST",
        headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "gemini-2.5-flash", messages: [{ role: "user", content: "Hello" }] })
      })
      assert.strictEqual(response.status, 200)
      assert.match(response.headers.get("x-request-id") ?? "", /^req_[0-9a-f]{24}$/)
      const body = await response.json() as {
        object: string
        model: string
        choices: Array<{ message: { content: string } }>
        usage: { prompt_tokens: number }
      }
      assert.strictEqual(body.object, "chat.completion")
      assert.strictEqual(body.model, "gemini-2.5-flash")
      assert.isAbove(body.choices[0]!.message.content.length, 0)
      assert.isAbove(body.usage.prompt_tokens, 0)
    })

    it("streams a Gemini :streamGenerateContent?alt=sse request with a model of an OpenAI channel, translated", async () => {
      const response = await fetchOf()("/v1beta/models/gpt-4o-mini:streamGenerateContent?alt=sse", {
        method: "POST",
        headers: { "x-goog-api-key": KEY, "content-type": "application/json" },
        body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "Tell me a story" }] }] })
      })
      assert.strictEqual(response.status, 200)
      assert.strictEqual(response.headers.get("content-type"), "text/event-stream")
      const text = await response.text()
      const events = text.split(/\r?\n\r?\n/).filter((event) => event.startsWith("data: ")).map((event) =>
        JSON.parse(event.slice(6))
      )
      assert.isAbove(events.length, 1)
      const words = events.flatMap((event) => event.candidates?.[0]?.content?.parts ?? []).map((
        part: { text?: string }
      ) => part.text ?? "").join("")
      assert.isAbove(words.length, 0)
      const last = events.at(-1)
      assert.strictEqual(last.candidates[0].finishReason, "STOP")
      assert.isAbove(last.usageMetadata.totalTokenCount, 0)
    })

    it("answers an Anthropic Messages call from Claude on Vertex AI, and streams it", async () => {
      for (const stream of [false, true]) {
        const response = await fetchOf()("/v1/messages", {
          method: "POST",
          headers: { "x-api-key": KEY, "anthropic-version": "2023-06-01", "content-type": "application/json" },
          body: JSON.stringify({
            model: "claude-vertex",
            max_tokens: 64,
            stream,
            messages: [{ role: "user", content: "Hello" }]
          })
        })
        const text = await response.text()
        assert.strictEqual(response.status, 200, text)
        if (stream) assert.include(text, "event: message_stop")
        else assert.strictEqual((JSON.parse(text) as { model: string }).model, "claude-vertex")
      }
    })

    it("answers an OpenAI chat call from Bedrock's Converse, signed, and streams its event stream", async () => {
      const answer = await fetchOf()("/v1/chat/completions", {
        method: "POST",
        headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "nova-pro", messages: [{ role: "user", content: "Hello" }] })
      })
      const body = await answer.json() as { choices: Array<{ message: { content: string } }> }
      assert.strictEqual(answer.status, 200, JSON.stringify(body))
      assert.isAbove(body.choices[0]!.message.content.length, 0)
      const stream = await fetchOf()("/v1/chat/completions", {
        method: "POST",
        headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
        body: JSON.stringify({
          model: "nova-pro",
          stream: true,
          stream_options: { include_usage: true },
          messages: [{ role: "user", content: "Tell me a story" }]
        })
      })
      const text = await stream.text()
      assert.strictEqual(stream.status, 200, text)
      assert.include(text, "\"finish_reason\":\"stop\"")
      assert.include(text, "data: [DONE]")
    })

    it("makes embeddings with Cohere on Bedrock (InvokeModel), its tokens from Bedrock's header", async () => {
      const response = await fetchOf()("/v1/embeddings", {
        method: "POST",
        headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "cohere-embed", input: ["one two", "three"] })
      })
      const body = await response.json() as {
        data: Array<{ embedding: Array<number> }>
        usage: { prompt_tokens: number }
      }
      assert.strictEqual(response.status, 200, JSON.stringify(body))
      assert.deepStrictEqual(body.data.map((d) => d.embedding.length), [1024, 1024])
      // The fake's count, said in X-Amzn-Bedrock-Input-Token-Count: a quarter of each text's characters, rounded up.
      assert.strictEqual(body.usage.prompt_tokens, 2 + 2)
    })

    it("refuses a bad key in the client's dialect: OpenAI's 401, Google's 400 API_KEY_INVALID", async () => {
      const openai = await fetchOf()("/v1/chat/completions", {
        method: "POST",
        headers: { authorization: "Bearer sk-not-a-key-at-all-000000", "content-type": "application/json" },
        body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Hi" }] })
      })
      assert.strictEqual(openai.status, 401)
      const body = await openai.json() as { error: { code: string; message: string } }
      assert.strictEqual(body.error.code, "invalid_api_key")
      assert.match(body.error.message, /is not valid/)
      const gemini = await fetchOf()("/v1beta/models/gpt-4o-mini:generateContent", {
        method: "POST",
        headers: { "x-goog-api-key": "sk-not-a-key-at-all-000000", "content-type": "application/json" },
        body: JSON.stringify({ contents: [{ parts: [{ text: "Hi" }] }] })
      })
      // Google answers an unknown key with 400 INVALID_ARGUMENT and the reason API_KEY_INVALID, which its SDKs read.
      assert.strictEqual(gemini.status, 400)
      const error = (await gemini.json() as { error: { status: string; details: Array<{ reason?: string }> } }).error
      assert.strictEqual(error.status, "INVALID_ARGUMENT")
      assert.strictEqual(error.details[0]?.reason, "API_KEY_INVALID")
    })

    it("refuses a call an empty balance cannot pay with 429 insufficient_quota", async () => {
      const response = await fetchOf()("/v1/chat/completions", {
        method: "POST",
        headers: { authorization: `Bearer ${BROKE}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Hi" }] })
      })
      assert.strictEqual(response.status, 429)
      const body = await response.json() as { error: { code: string; message: string } }
      assert.strictEqual(body.error.code, "insufficient_quota")
      assert.match(body.error.message, /Your balance is 0\.00 USD/)
    })

    it("answers a wrong base address with the fix, in the dialect the path suggests", async () => {
      const response = await fetchOf()("/v1/v1/chat/completions", { method: "POST", body: "{}" })
      assert.strictEqual(response.status, 404)
      assert.match((await response.json() as { error: { message: string } }).error.message, /\/v1 twice/)
    })
  })

describe("the web handler", () => {
  let upstream: FakeUpstream.FakeUpstream
  let local: WebHandler
  beforeAll(async () => {
    upstream = await Effect.runPromise(FakeUpstream.start({ port: 0 }))
    local = await toWebHandler(config(upstream.url, upstream.vertexKeyFile()))
  })
  afterAll(async () => {
    await local?.dispose()
    await upstream?.close()
  })

  contract("in this Node process", () => (path, init) => local.handler(new Request(`http://gateway.test${path}`, init)))

  it("charges the balance what the usage records say, and records every call", async () => {
    const before = local.inspect!.balance("alice")!
    const response = await local.handler(
      new Request("http://gateway.test/v1/chat/completions", {
        method: "POST",
        headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
        body: JSON.stringify({
          model: "gpt-4o-mini",
          messages: [{ role: "user", content: "Count to three" }],
          stream: true,
          stream_options: { include_usage: true }
        })
      })
    )
    const text = await response.text()
    assert.include(text, "data: [DONE]")
    // A stream is settled when its relay ends, just after the last frame.
    await new Promise((resolve) => setTimeout(resolve, 50))
    const records = local.inspect!.usage()
    const last = records.at(-1)!
    assert.strictEqual(last.model, "gpt-4o-mini")
    assert.strictEqual(last.status, 200)
    assert.isTrue(last.usageReported)
    assert.isAbove(Number(last.costNanos), 0)
    assert.strictEqual(before - local.inspect!.balance("alice")!, last.costNanos)
  })

  it("refuses a configuration that does not decode, naming the field", async () => {
    const error = await toWebHandler({ channels: [{ name: "x", type: "carrier-pigeon" }] }).then(
      () => undefined,
      (e: Error) => e
    )
    assert.match(String(error?.message), /at channels\[0\]\.type/)
  })

  describe("a model one channel's upstream refuses with a 403", () => {
    let guarded: WebHandler
    beforeAll(async () => {
      // Two channels serve gpt-guarded; the preferred one's organisation may not use it (the fake upstream
      // answers its requests for the model with 403, and its model list, the key's check, with 200).
      guarded = await toWebHandler({
        routing: { probe_interval_ms: 600_000 },
        channels: [
          {
            name: "refusing",
            type: "openai",
            base_url: `${upstream.url}/v1`,
            api_key: "k-refusing",
            priority: 10,
            models: ["gpt-guarded"],
            model_map: { "gpt-guarded": "gpt-4o-mini-fail-403" }
          },
          {
            name: "serving",
            type: "openai",
            base_url: `${upstream.url}/v1`,
            api_key: "k-serving",
            models: ["gpt-guarded"],
            model_map: { "gpt-guarded": "gpt-4o-mini" }
          }
        ],
        models: { "gpt-guarded": { input: 1, output: 2 } },
        users: [{ name: "alice", balance: 10, keys: [{ name: "laptop", secret: KEY }] }]
      })
    })
    afterAll(async () => {
      await guarded?.dispose()
    })

    const ask = () =>
      guarded.handler(
        new Request("http://gateway.test/v1/chat/completions", {
          method: "POST",
          headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
          body: JSON.stringify({ model: "gpt-guarded", messages: [{ role: "user", content: "Hello" }] })
        })
      )

    it("serves the call from the other channel, then keeps the model off the refusing one", async () => {
      const first = await ask()
      assert.strictEqual(first.status, 200, await first.clone().text())
      const served = guarded.inspect!.usage().at(-1)!
      assert.deepStrictEqual(
        served.attemptLog.map((a) => [a.channel, a.status]),
        [["refusing", 403], ["serving", 200]],
        "the 403 moved the call to the other channel"
      )
      assert.strictEqual(served.channel, "serving")
      // A one-token probe of the model confirms the 403 is the model's (at once, in the background): the next
      // calls go straight to the other channel.
      let attempts: ReadonlyArray<string> = []
      for (let i = 0; i < 50; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100))
        const next = await ask()
        assert.strictEqual(next.status, 200)
        attempts = guarded.inspect!.usage().at(-1)!.attemptLog.map((a) => a.channel)
        if (attempts.length === 1) break
      }
      assert.deepStrictEqual(attempts, ["serving"])
    })
  })

  for (const runtime of ["bun", "deno"] as const) {
    describe(`served by ${runtime}`, () => {
      let served: Served | undefined
      let base = ""
      beforeAll(async () => {
        served = await serveOn(runtime, {
          MODELGATE_EMBED_CONFIG: JSON.stringify(config(upstream.url, upstream.vertexKeyFile()))
        })
        base = served.base
      }, 60_000)
      afterAll(() => served?.stop())
      contract(`the same checks over HTTP`, () => (path, init) => fetch(`${base}${path}`, init))
    })
  }
})
