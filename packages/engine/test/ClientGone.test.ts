/**
 * A client that leaves before the first byte (issue 20, item 7), through the
 * web handler over the fake upstream: the request's signal aborts while the
 * upstream is still working.
 *
 * - not a stream: the upstream's answer is still read and the call charged
 *   its usage, recorded as client-closed (499), relayed or translated;
 * - a stream whose upstream had answered (headers, no event yet): cut, and
 *   charged its prompt (the call's estimate), as a stream cut after its
 *   first byte is;
 * - a stream whose upstream had not answered yet: nothing is charged.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import type { UsageLog } from "@modelgate/core"
import { type FakeUpstreamServer, startFakeUpstream } from "@modelgate/fake-upstream"
import { toWebHandler, type WebHandler } from "../src/host/WebHandler.ts"

const KEY = "sk-client-gone-alice-000000000000"
/** Nano-dollars per prompt token and per completion token ($1 and $2 per million). */
const INPUT = 1_000n
const OUTPUT = 2_000n

let fake: FakeUpstreamServer
let gateway: WebHandler

beforeAll(async () => {
  fake = await startFakeUpstream()
  const priced = { input: 1, output: 2 }
  gateway = await toWebHandler({
    routing: { probe_interval_ms: 600_000 },
    channels: [
      {
        name: "openai",
        type: "openai",
        base_url: `${fake.url}/v1`,
        api_key: "sk-up",
        models: ["late", "late-stream", "late-embed"],
        // The answer comes 600 ms after the request (a stream's headers too).
        model_map: {
          late: "gpt-4o-mini-slow-600",
          "late-stream": "gpt-4o-mini-slow-3000",
          "late-embed": "text-embedding-3-small-slow-600"
        },
        headers: { "x-fake-usage-values": "1000,500" }
      },
      {
        name: "gemini",
        type: "gemini",
        base_url: fake.url,
        api_key: "g-up",
        models: ["late-gemini", "stalled"],
        // A stalled Gemini stream answers (200, headers) and then sends no event.
        model_map: { "late-gemini": "gemini-2.5-flash-slow-600", stalled: "gemini-2.5-flash-stall-0" },
        headers: { "x-fake-usage-values": "1000,500" }
      }
    ],
    models: {
      ...Object.fromEntries(["late", "stalled", "late-stream", "late-gemini"].map((m) => [m, priced])),
      "late-embed": { input: 1, embedding: true }
    },
    users: [{ name: "alice", balance: 100, keys: [{ name: "main", secret: KEY }] }]
  })
})

afterAll(async () => {
  await gateway?.dispose()
  await fake?.close()
})

/** Sends a chat call and hangs up after `afterMs`; the request id is read from the usage log afterwards. */
const leave = async (body: Record<string, unknown>, afterMs: number) => {
  const controller = new AbortController()
  const known = new Set(gateway.inspect!.usage().map((record) => record.requestId))
  const text = JSON.stringify(body)
  const answered = gateway.handler(
    new Request("http://gateway.test/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: text,
      signal: controller.signal
    })
  )
  setTimeout(() => controller.abort(), afterMs)
  const response = await answered
  assert.strictEqual(response.status, 499, "the client was gone before any answer")
  return { known, bytes: new TextEncoder().encode(text).length }
}

/** The usage record of the one call made since `known`, once written. */
const recordAfter = async (known: ReadonlySet<string>, model: string): Promise<UsageLog.UsageRecord> => {
  for (let i = 0; i < 400; i++) {
    const record = gateway.inspect!.usage().find((r) => !known.has(r.requestId) && r.model === model)
    if (record !== undefined) return record
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  throw new Error(`no usage record for ${model}`)
}

const balance = () => gateway.inspect!.balance("alice")!
const spendable = () => gateway.inspect!.spendable("alice")!

describe("a client that leaves before the first byte", () => {
  for (const model of ["late", "late-gemini"]) {
    it(`${model}: not a stream, the upstream's answer is still read and charged its usage, as client-closed`, async () => {
      const before = balance()
      const requests = fake.requests.length
      const { known } = await leave({ model, max_tokens: 600, messages: [{ role: "user", content: "hi" }] }, 100)
      const record = await recordAfter(known, model)
      assert.strictEqual(fake.requests.length, requests + 1, "one attempt, not retried for a client that is gone")
      assert.deepStrictEqual(
        [record.status, record.errorCode, record.promptTokens, record.completionTokens, record.usageReported],
        [499, "ClientClosed", 1000, 500, true]
      )
      assert.strictEqual(record.costNanos, 1000n * INPUT + 500n * OUTPUT)
      assert.strictEqual(record.attemptLog[0]?.status, 200)
      assert.strictEqual(balance(), before - record.costNanos)
      assert.strictEqual(spendable(), balance(), "no hold is left behind")
    })
  }

  it("embeddings: the upstream's answer is still read and charged its usage, as client-closed", async () => {
    const before = balance()
    const known = new Set(gateway.inspect!.usage().map((record) => record.requestId))
    const client = new AbortController()
    const answered = gateway.handler(
      new Request("http://gateway.test/v1/embeddings", {
        method: "POST",
        headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "late-embed", input: "hello" }),
        signal: client.signal
      })
    )
    setTimeout(() => client.abort(), 100)
    assert.strictEqual((await answered).status, 499)
    const record = await recordAfter(known, "late-embed")
    assert.deepStrictEqual(
      [record.status, record.errorCode, record.promptTokens, record.usageReported],
      [499, "ClientClosed", 1000, true]
    )
    assert.strictEqual(record.costNanos, 1000n * INPUT)
    assert.strictEqual(balance(), before - record.costNanos)
    assert.strictEqual(spendable(), balance(), "no hold is left behind")
  })

  it("a stream whose upstream had answered is cut and charged its prompt", async () => {
    const before = balance()
    const { bytes, known } = await leave({
      model: "stalled",
      stream: true,
      max_tokens: 600,
      messages: [{ role: "user", content: "hi" }]
    }, 300)
    const record = await recordAfter(known, "stalled")
    const prompt = Math.ceil(bytes / 4)
    assert.deepStrictEqual(
      [record.status, record.errorCode, record.promptTokens, record.completionTokens, record.usageReported],
      [499, "ClientClosed", prompt, 0, false]
    )
    assert.strictEqual(record.costNanos, BigInt(prompt) * INPUT)
    assert.strictEqual(record.attemptLog[0]?.errorCode, "ClientClosed")
    assert.strictEqual(balance(), before - record.costNanos)
    assert.strictEqual(spendable(), balance(), "no hold is left behind")
  })

  it("a stream whose upstream had not answered yet costs nothing", async () => {
    const before = balance()
    const { known } = await leave({
      model: "late-stream",
      stream: true,
      max_tokens: 600,
      messages: [{ role: "user", content: "hi" }]
    }, 150)
    const record = await recordAfter(known, "late-stream")
    assert.deepStrictEqual([record.status, record.errorCode, record.costNanos], [499, "ClientClosed", 0n])
    assert.strictEqual(balance(), before)
    assert.strictEqual(spendable(), balance(), "no hold is left behind")
  })
})

describe("a shutdown with an answer still read for a client that left", () => {
  it("cuts the attempt when the settlements close, and settles it for nothing", async () => {
    const own = await toWebHandler({
      routing: { probe_interval_ms: 600_000 },
      channels: [{
        name: "openai",
        type: "openai",
        base_url: `${fake.url}/v1`,
        api_key: "sk-up",
        models: ["later"],
        // The answer would come 20 s after the request.
        model_map: { later: "gpt-4o-mini-slow-20000" }
      }],
      models: { later: { input: 1, output: 2 } },
      users: [{ name: "bob", balance: 1, keys: [{ name: "main", secret: "sk-client-gone-bob-00000000000000" }] }]
    })
    const client = new AbortController()
    const answered = own.handler(
      new Request("http://gateway.test/v1/chat/completions", {
        method: "POST",
        headers: { authorization: "Bearer sk-client-gone-bob-00000000000000", "content-type": "application/json" },
        body: JSON.stringify({ model: "later", messages: [{ role: "user", content: "hi" }] }),
        signal: client.signal
      })
    )
    setTimeout(() => client.abort(), 100)
    assert.strictEqual((await answered).status, 499)
    const before = own.inspect!.balance("bob")
    const started = Date.now()
    await own.dispose()
    assert.isBelow(Date.now() - started, 10_000, "the shutdown did not wait for the upstream's answer")
    const record = own.inspect!.usage().find((r) => r.model === "later")!
    assert.deepStrictEqual([record.status, record.errorCode, record.costNanos], [499, "ClientClosed", 0n])
    assert.strictEqual(own.inspect!.balance("bob"), before)
  }, 30_000)
})
