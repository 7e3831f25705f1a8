/**
 * The books match the upstream's bill (issue 20), through the embedded
 * gateway (the web handler over the fake upstream), on each front door:
 *
 * - a call whose upstream reports more usage than its hold covered is charged
 *   all of it: the balance goes below zero, the record says so
 *   (`BalanceOverdrawn`), the user's next calls are refused in each dialect's
 *   envelope until a top-up, and then served again;
 * - a key's cap: calls in flight when it is reached are charged in full, the
 *   overrun is shown (`SpendingCapOverrun`), and the key's next calls are
 *   refused;
 * - a call that never reached an upstream (connection refused), and one whose
 *   upstream only failed, cost nothing, `per_request` included; a served call
 *   with zero usage pays `per_request`.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Money, type UsageLog } from "@modelgate/core"
import { type FakeUpstreamServer, startFakeUpstream } from "@modelgate/fake-upstream"
import { createServer } from "node:net"
import { toWebHandler, type WebHandler } from "../src/host/WebHandler.ts"

const UPSTREAM_KEY = "sk-upstream-books-0123456789"
const KEYS = {
  poor: "sk-books-poor-000000000000000",
  capped: "sk-books-capped-0000000000000",
  flat: "sk-books-flat-000000000000000",
  media: "sk-books-media-00000000000000"
} as const

type Client = "openai" | "gemini" | "anthropic" | "responses"
const clients: ReadonlyArray<Client> = ["openai", "gemini", "anthropic", "responses"]

/** A port nothing listens on: connections to it are refused. */
const closedPort = () =>
  new Promise<number>((resolve) => {
    const server = createServer()
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })

let fake: FakeUpstreamServer
let gateway: WebHandler

/** Each front door's own dialect upstream (Responses: an OpenAI channel that relays it), reporting `usage` as `P,C`. */
const channels = (upstream: string, suffix: string, models: ReadonlyArray<string>, usage: string) => [
  {
    name: `openai-${suffix}`,
    type: "openai" as const,
    base_url: `${upstream}/v1`,
    api_key: UPSTREAM_KEY,
    models: models.map((m) => `openai-${m}`),
    headers: { "x-fake-usage-values": usage }
  },
  {
    name: `gemini-${suffix}`,
    type: "gemini" as const,
    base_url: upstream,
    api_key: UPSTREAM_KEY,
    models: models.map((m) => `gemini-${m}`),
    headers: { "x-fake-usage-values": usage }
  },
  {
    name: `anthropic-${suffix}`,
    type: "anthropic" as const,
    base_url: upstream,
    api_key: UPSTREAM_KEY,
    models: models.map((m) => `anthropic-${m}`),
    headers: { "x-fake-usage-values": usage }
  },
  {
    name: `responses-${suffix}`,
    type: "openai" as const,
    base_url: `${upstream}/v1`,
    api_key: UPSTREAM_KEY,
    responses: true,
    models: models.map((m) => `responses-${m}`),
    headers: { "x-fake-usage-values": usage }
  }
]

const priced = (ids: ReadonlyArray<string>, price: Record<string, number | Record<string, number>>) =>
  Object.fromEntries(clients.flatMap((client) => ids.map((id) => [`${client}-${id}`, price])))

beforeAll(async () => {
  fake = await startFakeUpstream()
  const refused = await closedPort()
  gateway = await toWebHandler({
    routing: { probe_interval_ms: 600_000, max_attempts: 2 },
    channels: [
      // A million prompt tokens per call, whatever the hold: $1 at $1 per million.
      ...channels(fake.url, "million", ["million", "free"], "1000000,0"),
      // 100,000 prompt tokens: $0.10.
      ...channels(fake.url, "tenth", ["tenth", "mediaheavy", "shortclips"], "100000,0"),
      // Zero usage, on a model priced per request only.
      ...channels(fake.url, "zero", ["flat-served"], "0,0"),
      {
        name: "refusing",
        type: "openai",
        base_url: `http://127.0.0.1:${refused}/v1`,
        api_key: UPSTREAM_KEY,
        models: ["flat-unreachable"],
        breaker: { consecutive_failures: 1000 }
      },
      {
        name: "failing",
        type: "openai",
        base_url: `${fake.url}/v1`,
        api_key: UPSTREAM_KEY,
        models: ["flat-failing"],
        headers: { "x-fake-fail": "500" },
        breaker: { consecutive_failures: 1000 }
      }
    ],
    models: {
      ...priced(["million", "tenth"], { input: 1, output: 1 }),
      ...Object.fromEntries(clients.map((client) => [`${client}-free`, { free: true }])),
      ...priced(["flat-served"], { per_request: 0.01 }),
      // An image counts 100,000 tokens on this model's holds ($0.10 at $1 per million).
      "openai-mediaheavy": { input: 1, output: 1, media_part_tokens: { image: 100_000 } },
      // Short clips: a video counts 1,000 tokens here (the default is the model's input token limit).
      ...priced(["shortclips"], { input: 1, output: 1, media_part_tokens: { video: 1_000 } }),
      "flat-unreachable": { per_request: 0.01 },
      "flat-failing": { per_request: 0.01 }
    },
    users: [
      { name: "poor", balance: 0.05, keys: [{ name: "main", secret: KEYS.poor }] },
      { name: "rich", balance: 100, keys: [{ name: "capped", secret: KEYS.capped, quota: 0.01 }] },
      { name: "flat", balance: 1, keys: [{ name: "main", secret: KEYS.flat }] },
      { name: "media", balance: 0.05, keys: [{ name: "main", secret: KEYS.media }] }
    ]
  })
})

afterAll(async () => {
  await gateway?.dispose()
  await fake?.close()
})

const post = (path: string, headers: Record<string, string>, body: unknown) =>
  gateway.handler(
    new Request(`http://gateway.test${path}`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify(body)
    })
  )

/** A small chat call in a client's dialect (a few hundred nano-dollars' hold at $1 per million tokens). */
const call = (client: Client, key: string, model: string, stream = false) => {
  switch (client) {
    case "openai":
      return post("/v1/chat/completions", { authorization: `Bearer ${key}` }, {
        model,
        stream,
        max_tokens: 16,
        messages: [{ role: "user", content: "Hi" }]
      })
    case "gemini":
      return post(
        `/v1beta/models/${model}:${stream ? "streamGenerateContent?alt=sse" : "generateContent"}`,
        { "x-goog-api-key": key },
        { contents: [{ role: "user", parts: [{ text: "Hi" }] }], generationConfig: { maxOutputTokens: 16 } }
      )
    case "anthropic":
      return post("/v1/messages", { "x-api-key": key }, {
        model,
        stream,
        max_tokens: 16,
        messages: [{ role: "user", content: "Hi" }]
      })
    case "responses":
      return post("/v1/responses", { authorization: `Bearer ${key}` }, {
        model,
        stream,
        store: false,
        max_output_tokens: 16,
        input: "Hi"
      })
  }
}

const recordOf = async (response: Response): Promise<UsageLog.UsageRecord> => {
  const id = response.headers.get("x-request-id")!
  for (let i = 0; i < 300; i++) {
    const record = gateway.inspect!.usage().find((r) => r.requestId === id)
    if (record !== undefined) return record
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  throw new Error(`no usage record for ${id}`)
}

const USD = 1_000_000_000n

/** What each dialect's refusal of an empty balance looks like. */
const refusedForMoney = async (client: Client, response: Response): Promise<string> => {
  const body = await response.json() as Record<string, any>
  switch (client) {
    case "openai":
    case "responses":
      // The Responses API answers 402 (what Codex shows), chat completions 429 (what OpenAI answers).
      assert.strictEqual(response.status, client === "responses" ? 402 : 429)
      assert.strictEqual(body.error.code, "insufficient_quota")
      return body.error.message
    case "gemini":
      assert.strictEqual(response.status, 429)
      assert.strictEqual(body.error.status, "RESOURCE_EXHAUSTED")
      return body.error.message
    case "anthropic":
      assert.isAtLeast(response.status, 400)
      assert.strictEqual(body.type, "error")
      return body.error.message
  }
}

describe("a cost above the call's hold", () => {
  for (const client of clients) {
    for (const stream of [false, true]) {
      it(`${client}${stream ? ", streamed" : ""}: is charged in full, the balance goes below zero, and calls are refused until a top-up`, async () => {
        // Each case starts at $0.05: a call holds a few hundred nano-dollars, so it is admitted.
        gateway.admin!.credit("poor", USD / 20n - gateway.inspect!.balance("poor")!)
        const start = gateway.inspect!.balance("poor")!
        assert.strictEqual(start, USD / 20n)
        const response = await call(client, KEYS.poor, `${client}-million`, stream)
        assert.strictEqual(response.status, 200)
        await response.text()
        const record = await recordOf(response)
        // A million prompt tokens at $1 per million: $1, far above the hold and the balance.
        assert.strictEqual(record.promptTokens, 1_000_000)
        assert.strictEqual(record.costNanos, 1n * USD, "charged what the upstream billed")
        assert.strictEqual(record.errorCode, "BalanceOverdrawn")
        assert.include(record.errorMessage ?? "", "below zero")
        const after = gateway.inspect!.balance("poor")!
        assert.strictEqual(after, start - 1n * USD, "the balance went below zero by the rest")
        assert.isTrue(after < 0n)

        for (const other of clients) {
          const refused = await call(other, KEYS.poor, `${other}-million`)
          const message = await refusedForMoney(other, refused)
          assert.include(message, `Your balance is ${Money.formatUsd(after)} USD, below zero`)
          assert.strictEqual((await recordOf(refused)).costNanos, 0n)
        }
        assert.strictEqual(gateway.inspect!.balance("poor"), after, "refused calls cost nothing")
        // A free model holds and costs nothing: served whatever the balance, as on the lease path.
        const free = await call(client, KEYS.poor, `${client}-free`)
        assert.strictEqual(free.status, 200)
        await free.text()
        assert.strictEqual((await recordOf(free)).costNanos, 0n)

        // A top-up pays the debt first; once the balance covers a call's hold, calls are served again.
        gateway.admin!.credit("poor", 1n * USD)
        assert.strictEqual(gateway.inspect!.balance("poor"), after + 1n * USD)
        const served = await call(client, KEYS.poor, `${client}-tenth`, stream)
        assert.strictEqual(served.status, 200)
        await served.text()
        assert.strictEqual((await recordOf(served)).costNanos, USD / 10n)
      })
    }
  }
})

describe("a key's spending cap", () => {
  it("calls in flight when it is reached are charged in full, the overrun is shown, and the key is refused after", async () => {
    // Five calls at once: each holds a few hundred nano-dollars (they fit under the $0.01 cap together) and costs $0.10.
    const responses = await Promise.all(
      clients.concat(["openai"]).map((client) => call(client, KEYS.capped, `${client}-tenth`))
    )
    const records = await Promise.all(responses.map(async (response) => {
      assert.strictEqual(response.status, 200)
      await response.text()
      return recordOf(response)
    }))
    for (const record of records) assert.strictEqual(record.costNanos, USD / 10n, "charged in full")
    const shown = records.filter((record) => record.errorCode === "SpendingCapOverrun")
    assert.strictEqual(shown.length, records.length, "each call past the cap says so")
    assert.include(shown.at(-1)!.errorMessage ?? "", "lifetime spending cap of 0.01 USD is exceeded (0.50 USD spent)")
    for (const client of clients) {
      const refused = await call(client, KEYS.capped, `${client}-tenth`)
      // Anthropic has no quota status of its own: 402, as its billing errors; the Responses API 402, what Codex shows.
      assert.strictEqual(refused.status, client === "anthropic" || client === "responses" ? 402 : 429)
      const record = await recordOf(refused)
      assert.strictEqual(record.errorCode, "SpendingCapReached")
      assert.include(record.errorMessage ?? "", "has spent 0.50 USD of it")
      assert.strictEqual(record.costNanos, 0n)
    }
    assert.strictEqual(gateway.inspect!.balance("rich"), 100n * USD - USD / 2n, "the balance paid what was charged")
  })
})

describe("flat prices", () => {
  it("a call that never reached an upstream (connection refused) costs nothing, per_request included", async () => {
    const before = gateway.inspect!.balance("flat")!
    const response = await call("openai", KEYS.flat, "flat-unreachable")
    assert.strictEqual(response.status, 502)
    const record = await recordOf(response)
    assert.strictEqual(record.errorCode, "UpstreamUnavailable")
    assert.isTrue(record.attemptLog.every((attempt) => attempt.status === null), "no upstream answered")
    assert.strictEqual(record.costNanos, 0n)
    assert.strictEqual(gateway.inspect!.balance("flat"), before)
  })

  it("a call whose upstream only failed (500 before the first byte) costs nothing, per_request included", async () => {
    const before = gateway.inspect!.balance("flat")!
    const response = await call("openai", KEYS.flat, "flat-failing")
    assert.strictEqual(response.status, 502)
    const record = await recordOf(response)
    assert.strictEqual(record.attemptLog[0]?.status, 500)
    assert.strictEqual(record.costNanos, 0n)
    assert.strictEqual(gateway.inspect!.balance("flat"), before)
  })

  for (const client of clients) {
    it(`${client}: a served call whose upstream reported zero usage pays per_request`, async () => {
      const before = gateway.inspect!.balance("flat")!
      const response = await call(client, KEYS.flat, `${client}-flat-served`)
      assert.strictEqual(response.status, 200)
      await response.text()
      const record = await recordOf(response)
      assert.strictEqual(record.costNanos, USD / 100n)
      assert.strictEqual(gateway.inspect!.balance("flat"), before - USD / 100n)
    })
  }
})

describe("honest holds", () => {
  const withImage = (model: string) =>
    post("/v1/chat/completions", { authorization: `Bearer ${KEYS.media}` }, {
      model,
      max_tokens: 16,
      messages: [{
        role: "user",
        content: [{ type: "text", text: "What is this?" }, {
          type: "image_url",
          image_url: { url: "https://example.com/a.png" }
        }]
      }]
    })

  it("a model's media_part_tokens sizes the hold of each media part, and a hold the balance cannot cover is refused before the call", async () => {
    const before = gateway.inspect!.balance("media")!
    const requests = fake.requests.length
    const refused = await withImage("openai-mediaheavy")
    const message = await refusedForMoney("openai", refused)
    // 100,000 tokens for the image at $1 per million, besides the text and the output.
    assert.match(message, /this call may cost up to 0\.100\d* USD/)
    assert.strictEqual(fake.requests.length, requests, "the upstream never saw the call")
    assert.strictEqual(gateway.inspect!.balance("media"), before)
    // The same call on a model with the default (2,000 tokens an image) holds little and is served.
    const served = await withImage("openai-tenth")
    assert.strictEqual(served.status, 200)
    await served.text()
  })

  /** A call whose prompt carries one media part that is not an image (a video, a PDF, audio), in each dialect. */
  const withMedia = (client: Client, model: string) => {
    switch (client) {
      case "openai":
        return post("/v1/chat/completions", { authorization: `Bearer ${KEYS.media}` }, {
          model,
          max_tokens: 16,
          messages: [{
            role: "user",
            content: [{ type: "text", text: "Summarise." }, { type: "file", file: { file_id: "file-abc" } }]
          }]
        })
      case "gemini":
        return post(`/v1beta/models/${model}:generateContent`, { "x-goog-api-key": KEYS.media }, {
          contents: [{
            role: "user",
            parts: [{ text: "Summarise." }, {
              fileData: { mimeType: "video/mp4", fileUri: "https://example.com/v.mp4" }
            }]
          }],
          generationConfig: { maxOutputTokens: 16 }
        })
      case "anthropic":
        return post("/v1/messages", { "x-api-key": KEYS.media }, {
          model,
          max_tokens: 16,
          messages: [{
            role: "user",
            content: [{ type: "text", text: "Summarise." }, {
              type: "document",
              source: { type: "url", url: "https://example.com/a.pdf" }
            }]
          }]
        })
      case "responses":
        return post("/v1/responses", { authorization: `Bearer ${KEYS.media}` }, {
          model,
          max_output_tokens: 16,
          store: false,
          input: [{
            role: "user",
            content: [{ type: "input_text", text: "Summarise." }, {
              type: "input_file",
              file_url: "https://example.com/a.pdf"
            }]
          }]
        })
    }
  }

  for (const client of clients) {
    it(`${client}: a video, PDF or file part is held at its kind's figure, not an image's`, async () => {
      const before = gateway.inspect!.balance("media")!
      const requests = fake.requests.length
      // The default for a kind that is not an image: the model's input token limit (128,000: $0.128 here).
      const message = await refusedForMoney(client, await withMedia(client, `${client}-tenth`))
      assert.match(message, /this call may cost up to 0\.128\d* USD/)
      assert.strictEqual(fake.requests.length, requests, "the upstream never saw the call")
      assert.strictEqual(gateway.inspect!.balance("media"), before)
    })
  }

  it("a model's media_part_tokens for a kind sizes that kind's hold", async () => {
    // 1,000 tokens for the video, besides the text and the output: about $0.0012 at $1 per million. (The
    // balance is below zero after the image call above, so it is refused, but for a hold of that size.)
    const response = await withMedia("gemini", "gemini-shortclips")
    const message = await refusedForMoney("gemini", response)
    assert.match(message, /this call may cost up to 0\.0012\d* USD/)
  })
})
