/**
 * An embeddings attempt sent in several requests (Titan on Bedrock and
 * Gemini's embedding model on Vertex take one text a request) whose later
 * part fails: the parts its upstream answered before were billed by that
 * upstream, and the call is charged them at the operator's prices, whatever
 * happens next (the call fails, or another channel serves it). The fake
 * upstream fails only the request whose body holds the text a channel's
 * `x-fake-fail-on` header names.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import type { UsageLog } from "@modelgate/core"
import { FakeUpstream, TEST_CREDENTIALS } from "@modelgate/fake-upstream"
import { Effect } from "effect"
import { toWebHandler, type WebHandler } from "../src/host/WebHandler.ts"

const KEY = "sk-embedded-parts-000000000000000"
const FAIL = "zzfailpartzz"
const TITAN = "amazon.titan-embed-text-v2:0"

/** The fake's token count of a text (a quarter of its characters, rounded up), which is also the gateway's local count. */
const tokensOf = (text: string) => Math.ceil(text.length / 4)
const FIRST = "the first text to embed"
const SECOND = "a second one"
const TEXTS = [FIRST, SECOND, `and a third: ${FAIL}`]
/** What the two parts answered before the third failed count. */
const ANSWERED = tokensOf(FIRST) + tokensOf(SECOND)

const signed = { region: "us-east-1", access_key_id: TEST_CREDENTIALS.accessKeyId } as const
/** A Bedrock channel that fails the part holding `FAIL` (its breaker never opens in these tests). */
const bedrock = (name: string, models: Record<string, string>, extra: Record<string, unknown> = {}) => ({
  name,
  type: "bedrock",
  ...signed,
  secret_access_key: TEST_CREDENTIALS.secretAccessKey,
  models: Object.keys(models),
  model_map: models,
  breaker: { consecutive_failures: 1000 },
  ...extra
})

describe("an embeddings attempt whose later part fails", () => {
  let upstream: FakeUpstream.FakeUpstream
  let gateway: WebHandler
  let calls = 0
  beforeAll(async () => {
    upstream = await Effect.runPromise(FakeUpstream.start({ port: 0, vertex: { tokenTtlSeconds: 3600 } }))
    const failing = { base_url: upstream.url, headers: { "x-fake-fail-on": FAIL } }
    gateway = await toWebHandler({
      routing: { probe_interval_ms: 600_000 },
      channels: [
        bedrock("titan-failing", {
          "titan-alone": TITAN,
          "titan-failover": TITAN,
          "titan-flat": TITAN
        }, { ...failing, priority: 10 }),
        bedrock("titan-serving", { "titan-failover": TITAN }, { base_url: upstream.url }),
        // Each part answered 300 ms after its request.
        bedrock("titan-slow", { "titan-slow": TITAN }, {
          base_url: upstream.url,
          headers: { "x-fake-fail-on": FAIL, "x-fake-delay-first-ms": "300" }
        }),
        bedrock("titan-silent", { "titan-silent": TITAN }, {
          base_url: upstream.url,
          headers: { "x-fake-fail-on": FAIL, "x-fake-usage": "none" }
        }),
        {
          name: "vertex-failing",
          type: "vertex",
          ...failing,
          project: "fake-project",
          location: "us-east5",
          credentials: upstream.vertexKeyFile(),
          models: ["gemini-embed-alone"],
          model_map: { "gemini-embed-alone": "gemini-embedding-001" },
          breaker: { consecutive_failures: 1000 }
        }
      ],
      models: {
        // $0.02 a million tokens: 20 nano-dollars a token.
        "titan-alone": { input: 0.02, embedding: true },
        "titan-failover": { input: 0.02, embedding: true },
        "titan-silent": { input: 0.02, embedding: true },
        "titan-slow": { input: 0.02, embedding: true },
        // One cent a call on top of the tokens.
        "titan-flat": { input: 0.02, per_request: 0.01, embedding: true },
        // $0.15 a million: 150 nano-dollars a token.
        "gemini-embed-alone": { input: 0.15, embedding: true }
      },
      users: [{ name: "erin", balance: 100, keys: [{ name: "k", secret: KEY }] }]
    })
  })
  afterAll(async () => {
    await gateway?.dispose()
    await upstream?.close()
  })

  const embed = async (model: string, input: ReadonlyArray<string>) => {
    const before = gateway.inspect!.balance("erin")!
    const count = gateway.inspect!.usage().length
    const sent = upstream.requests.length
    const response = await gateway.handler(
      new Request("http://gateway.test/v1/embeddings", {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
        body: JSON.stringify({ model, input })
      })
    )
    calls++
    const body = await response.json() as {
      error?: { message: string }
      data?: Array<{ embedding: Array<number> }>
      usage?: { prompt_tokens: number }
    }
    for (let i = 0; i < 100 && gateway.inspect!.usage().length < count + 1; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    const records = gateway.inspect!.usage().slice(count)
    assert.strictEqual(records.length, 1, "one usage record a call")
    const record: UsageLog.UsageRecord = records[0]!
    const spent = before - gateway.inspect!.balance("erin")!
    assert.strictEqual(spent, record.costNanos, "the balance goes down by what the record says")
    return { status: response.status, body, record, spent, requests: upstream.requests.slice(sent) }
  }

  it("fails the call and charges the two parts Titan answered before the third failed, and says so", async () => {
    const { body, record, requests, spent, status } = await embed("titan-alone", TEXTS)
    assert.strictEqual(status, 502, JSON.stringify(body))
    // One request a text; the third failed, and no other channel serves the model.
    assert.strictEqual(requests.length, 3)
    const words =
      `2 of 3 texts were answered (and billed by the upstream) before attempt 1 failed: charged ${ANSWERED} tokens for them.`
    assert.include(body.error!.message, words)
    assert.strictEqual(record.status, 502)
    assert.strictEqual(record.errorCode, "UpstreamUnavailable")
    assert.include(record.errorMessage!, words)
    assert.include(record.note!, words)
    assert.strictEqual(record.promptTokens, ANSWERED)
    assert.isTrue(record.usageReported)
    assert.strictEqual(record.costNanos, BigInt(ANSWERED * 20))
    assert.strictEqual(spent, BigInt(ANSWERED * 20))
    assert.deepStrictEqual(record.attemptLog.map((a) => [a.channel, a.status]), [["titan-failing", 500]])
  })

  it("charges the serving attempt plus the first attempt's two parts when another channel serves the call", async () => {
    const { body, record, requests, spent, status } = await embed("titan-failover", TEXTS)
    assert.strictEqual(status, 200, JSON.stringify(body))
    assert.strictEqual(body.data!.length, 3)
    const served = TEXTS.reduce((n, text) => n + tokensOf(text), 0)
    // The answer reports what its own upstream counted.
    assert.strictEqual(body.usage!.prompt_tokens, served)
    assert.strictEqual(requests.length, 6)
    assert.strictEqual(record.status, 200)
    assert.isNull(record.errorCode)
    assert.strictEqual(record.channel, "titan-serving")
    assert.deepStrictEqual(record.attemptLog.map((a) => [a.channel, a.status]), [
      ["titan-failing", 500],
      ["titan-serving", 200]
    ])
    assert.strictEqual(record.promptTokens, served + ANSWERED)
    assert.isTrue(record.usageReported)
    assert.strictEqual(record.costNanos, BigInt((served + ANSWERED) * 20))
    assert.strictEqual(spent, record.costNanos)
    assert.include(
      record.note!,
      `2 of 3 texts were answered (and billed by the upstream) before attempt 1 failed: charged ${ANSWERED} tokens for them.`
    )
  })

  it("charges a Vertex gemini-embedding attempt's answered parts, one text a :predict", async () => {
    const { body, record, requests, spent, status } = await embed("gemini-embed-alone", TEXTS)
    assert.strictEqual(status, 502, JSON.stringify(body))
    assert.strictEqual(requests.filter((r) => r.path.endsWith(":predict")).length, 3)
    assert.strictEqual(record.promptTokens, ANSWERED)
    assert.strictEqual(record.costNanos, BigInt(ANSWERED * 150))
    assert.strictEqual(spent, BigInt(ANSWERED * 150))
    assert.include(body.error!.message, `2 of 3 texts were answered`)
  })

  it("counts the answered parts' texts locally when their upstream reported no tokens", async () => {
    const { body, record, status } = await embed("titan-silent", [FIRST, SECOND, `${FAIL}, a third`, "a fourth"])
    assert.strictEqual(status, 502, JSON.stringify(body))
    assert.isFalse(record.usageReported)
    // The two texts answered, not the four of the call.
    assert.strictEqual(record.promptTokens, ANSWERED)
    assert.strictEqual(record.costNanos, BigInt(ANSWERED * 20))
    assert.include(
      body.error!.message,
      `2 of 4 texts were answered (and billed by the upstream) before attempt 1 failed: charged ${ANSWERED} tokens for them (counted here: the upstream reported none).`
    )
  })

  it("charges per_request once with the answered parts, and nothing when the first part fails", async () => {
    const partly = await embed("titan-flat", TEXTS)
    assert.strictEqual(partly.status, 502)
    // 20 nano-dollars a token, and 10,000,000 for the call.
    assert.strictEqual(partly.record.costNanos, BigInt(ANSWERED * 20 + 10_000_000))
    const first = await embed("titan-flat", [`${FAIL} first`, SECOND])
    assert.strictEqual(first.status, 502)
    assert.strictEqual(first.requests.length, 1)
    assert.strictEqual(first.record.costNanos, 0n)
    assert.strictEqual(first.spent, 0n)
    assert.strictEqual(first.record.promptTokens, 0)
    assert.isNull(first.record.note ?? null)
    assert.notInclude(first.record.errorMessage!, "texts were answered")
  })

  it("charges the answered parts of an attempt that goes on after its client left, as client-closed", async () => {
    const before = gateway.inspect!.balance("erin")!
    const known = new Set(gateway.inspect!.usage().map((record) => record.requestId))
    const client = new AbortController()
    const answered = gateway.handler(
      new Request("http://gateway.test/v1/embeddings", {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
        body: JSON.stringify({ model: "titan-slow", input: TEXTS }),
        signal: client.signal
      })
    )
    calls++
    // Gone while the second part is under way: the attempt goes on, and its third part fails.
    setTimeout(() => client.abort(), 450)
    assert.strictEqual((await answered).status, 499)
    let record: UsageLog.UsageRecord | undefined
    for (let i = 0; i < 400 && record === undefined; i++) {
      record = gateway.inspect!.usage().find((r) => !known.has(r.requestId))
      if (record === undefined) await new Promise((resolve) => setTimeout(resolve, 10))
    }
    assert.deepStrictEqual(
      [record!.status, record!.errorCode, record!.promptTokens, record!.usageReported],
      [499, "ClientClosed", ANSWERED, true]
    )
    assert.strictEqual(record!.costNanos, BigInt(ANSWERED * 20))
    assert.include(record!.note!, "2 of 3 texts were answered (and billed by the upstream) before attempt 1 failed")
    assert.strictEqual(before - gateway.inspect!.balance("erin")!, record!.costNanos)
  })

  it("keeps the books: one record a call, the balance down by their charges", () => {
    const records = gateway.inspect!.usage()
    assert.strictEqual(records.length, calls)
    const charged = records.reduce((n, r) => n + r.costNanos, 0n)
    assert.strictEqual(100_000_000_000n - gateway.inspect!.balance("erin")!, charged)
    assert.strictEqual(gateway.inspect!.spendable("erin"), gateway.inspect!.balance("erin"))
  })
})
