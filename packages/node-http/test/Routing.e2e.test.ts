/**
 * Routing and resilience through the real server with three fake upstreams
 * (and a few deliberately broken servers): one channel failing in each way
 * (refused connection, a connection that never completes, reset, slow first
 * byte, a body that stalls after its headers, a stream whose first chunk
 * never comes, a stalled stream, 429 with retry-after, 500, 401) while
 * calls that had not started keep succeeding through another; one hold per
 * call across failover; every attempt on the usage record; a caller that
 * hangs up before the answer; a stream cut after its first byte (or past its total
 * deadline) ends with an in-band error and is charged for what was
 * delivered; breakers that open and keep calls away; a 401 whose probe
 * disables the key until a probe finds it working; max_attempts; sticky selection;
 * request parameters and the stream_options switch; an `azure` channel
 * through the openai SDK.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { type FakeUpstreamServer, startFakeUpstream } from "@modelgate/fake-upstream"
import { Effect } from "effect"
import { createServer as createHttpServer, type Server as HttpServer } from "node:http"
import { createServer as createNetServer, type Server as NetServer, type Socket } from "node:net"
import OpenAI from "openai"
import type { ConfigFile } from "../src/ConfigFile.ts"
import { books, runSql } from "./support/Databases.ts"
import { startGateway, type TestGateway } from "./support/Gateway.ts"

const KEY = "sk-routing-ops-00000000000000000000000000000"

let gateway: TestGateway
let upstreamA: FakeUpstreamServer
let upstreamB: FakeUpstreamServer
let upstreamC: FakeUpstreamServer
let closedPort: number
let tlsStall: NetServer
let bodyStall: HttpServer
let headersOnly: HttpServer
/** Requests `headersOnly` got, and those whose caller went away. */
let headersOnlyRequests = 0
let headersOnlyClosed = 0
const held: Array<Socket> = []

const FAILOVER_MODELS = [
  "refused-model",
  "connect-model",
  "reset-model",
  "slow-model",
  "body-stall-model",
  "limited-model",
  "broken-model",
  "cut-model",
  "stall-model",
  "auth-model",
  "embed-model"
]

const config = (a: string): ConfigFile => ({
  listen: "127.0.0.1:0",
  log_level: "error",
  // Each call holds and settles in the database, so the ledger shows every call's hold by its request
  // id: that is how these tests see one hold per call however many attempts it made. (Balance leases,
  // the default, take holds in memory; Money.e2e and Purses.test cover them.)
  billing: { leases: false },
  routing: { max_attempts: 3, sticky_header: "X-Session-Id", probe_interval_ms: 200 },
  channels: [
    // The fallback for every failing channel below: another upstream, lower priority.
    {
      name: "fallback",
      type: "openai",
      base_url: `${upstreamB.url}/v1`,
      api_key: "kb",
      models: [...FAILOVER_MODELS, "first-chunk-model"]
    },
    {
      name: "refused",
      type: "openai",
      base_url: `http://127.0.0.1:${closedPort}/v1`,
      api_key: "k",
      models: ["refused-model", "embed-model"],
      priority: 10
    },
    // Gemini methods outside chat (countTokens, embedContent): a dead channel and a refused key, each before a live one.
    {
      name: "gemini-dead",
      type: "gemini",
      base_url: `http://127.0.0.1:${closedPort}`,
      api_key: "k",
      models: ["count-model", "gembed-model"],
      priority: 10
    },
    {
      name: "gemini-badkey",
      type: "gemini",
      base_url: upstreamC.url,
      api_key: "sk-not-upstream-c",
      models: ["count-auth-model"],
      priority: 10
    },
    {
      name: "gemini-live",
      type: "gemini",
      base_url: upstreamB.url,
      api_key: "kb",
      models: ["count-model", "count-auth-model", "gembed-model"]
    },
    {
      name: "tls-stall",
      type: "openai",
      base_url: `https://127.0.0.1:${(tlsStall.address() as { port: number }).port}/v1`,
      api_key: "k",
      models: ["connect-model", "connect-only-model"],
      priority: 10,
      timeouts: { connect_ms: 300 }
    },
    {
      // Non-stream: the connection is reset before any answer.
      name: "resetting",
      type: "openai",
      base_url: `${a}/v1`,
      api_key: "k",
      models: ["reset-model"],
      priority: 10,
      headers: { "x-fake-cut-after": "0", "x-fake-cut-mode": "reset" }
    },
    {
      name: "slow",
      type: "openai",
      base_url: `${a}/v1`,
      api_key: "k",
      models: ["slow-model"],
      model_map: { "slow-model": "gpt-slow-5000" },
      priority: 10,
      timeouts: { first_byte_ms: 300 }
    },
    {
      name: "body-stall",
      type: "openai",
      base_url: `http://127.0.0.1:${(bodyStall.address() as { port: number }).port}/v1`,
      api_key: "k",
      models: ["body-stall-model"],
      priority: 10,
      timeouts: { idle_ms: 300 }
    },
    {
      // Streams: the headers of an event stream, then nothing.
      name: "headers-only",
      type: "openai",
      base_url: `http://127.0.0.1:${(headersOnly.address() as { port: number }).port}/v1`,
      api_key: "k",
      models: ["first-chunk-model"],
      priority: 10,
      timeouts: { first_byte_ms: 300 }
    },
    {
      // The same with the default first-byte timeout (a minute): the caller gives up first.
      name: "headers-only-patient",
      type: "openai",
      base_url: `http://127.0.0.1:${(headersOnly.address() as { port: number }).port}/v1`,
      api_key: "k",
      models: ["first-chunk-wait-model"]
    },
    {
      // No answer at all (under /silent) within a first-byte timeout of 1.5 s.
      name: "silent",
      type: "openai",
      base_url: `http://127.0.0.1:${(headersOnly.address() as { port: number }).port}/silent/v1`,
      api_key: "k",
      models: ["silent-model"],
      timeouts: { first_byte_ms: 1500 }
    },
    {
      name: "limited",
      type: "openai",
      base_url: `${a}/v1`,
      api_keys: ["sk-limited-one", "sk-limited-two"],
      models: ["limited-model"],
      priority: 10,
      headers: { "x-fake-fail": "429" }
    },
    {
      name: "broken",
      type: "openai",
      base_url: `${a}/v1`,
      api_key: "k",
      models: ["broken-model"],
      priority: 10,
      headers: { "x-fake-fail": "500" }
    },
    {
      // Streams: reset after 3 chunks. One failure opens its breaker.
      name: "cutting",
      type: "openai",
      base_url: `${a}/v1`,
      api_key: "k",
      models: ["cut-model"],
      priority: 10,
      headers: { "x-fake-cut-after": "3", "x-fake-cut-mode": "reset" },
      breaker: { consecutive_failures: 1 }
    },
    {
      name: "stalling",
      type: "openai",
      base_url: `${a}/v1`,
      api_key: "k",
      models: ["stall-model"],
      model_map: { "stall-model": "gpt-stall-2" },
      priority: 10,
      timeouts: { idle_ms: 300 },
      breaker: { consecutive_failures: 1 }
    },
    {
      name: "auth",
      type: "openai",
      base_url: `${upstreamC.url}/v1`,
      api_key: "sk-upstream-c-good",
      models: ["auth-model"],
      priority: 10
    },
    {
      name: "overtime",
      type: "openai",
      base_url: `${a}/v1`,
      api_key: "k",
      models: ["overtime-model"],
      model_map: { "overtime-model": "gpt-chunks-60-interval-50" },
      timeouts: { total_ms: 800 }
    },
    ...[1, 2, 3, 4].map((i) => ({
      name: `exhaust-${i}`,
      type: "openai" as const,
      base_url: `${a}/v1`,
      api_key: "k",
      models: ["exhaust-model"],
      headers: { "x-fake-fail": "503" }
    })),
    { name: "sticky-a", type: "openai", base_url: `${a}/v1`, api_key: "ka", models: ["sticky-model"] },
    { name: "sticky-b", type: "openai", base_url: `${upstreamB.url}/v1`, api_key: "kb", models: ["sticky-model"] },
    {
      name: "tuned",
      type: "openai",
      base_url: `${a}/v1`,
      api_key: "k",
      models: ["tuned-model"],
      params: { defaults: { temperature: 0.3 }, overrides: { max_tokens: 7, user: null } },
      stream_options: false
    },
    {
      name: "azure",
      type: "azure",
      base_url: a,
      api_key: "az-key",
      models: ["azure-model"],
      model_map: { "azure-model": "my-deployment" }
    }
  ],
  models: Object.fromEntries(
    [
      ...FAILOVER_MODELS,
      "first-chunk-model",
      "first-chunk-wait-model",
      "silent-model",
      "connect-only-model",
      "overtime-model",
      "exhaust-model",
      "sticky-model",
      "tuned-model",
      "azure-model",
      "count-model",
      "count-auth-model",
      "gembed-model"
    ].map((m) => [m, { input: 1, output: 2 }])
  ),
  users: [{ name: "ops", role: "admin", balance: 100, keys: [{ name: "ops", secret: KEY }] }]
})

beforeAll(async () => {
  upstreamB = await startFakeUpstream()
  upstreamC = await startFakeUpstream({ apiKey: "sk-upstream-c-good" })
  const closed = await startFakeUpstream()
  closedPort = closed.port
  await closed.close()
  // Accepts TCP connections and says nothing: a TLS handshake there never completes.
  tlsStall = createNetServer((socket) => void held.push(socket))
  // Sends the headers of a JSON answer and the start of its body, then nothing.
  bodyStall = createHttpServer((request, response) => {
    request.resume()
    response.writeHead(200, { "content-type": "application/json" })
    response.write("{\"id\":\"chatcmpl-1\",")
  })
  bodyStall.on("connection", (socket) => void held.push(socket))
  headersOnly = createHttpServer((request, response) => {
    request.resume()
    headersOnlyRequests++
    response.on("close", () => void headersOnlyClosed++)
    if (request.url?.startsWith("/silent/") === true) return
    response.writeHead(200, { "content-type": "text/event-stream" })
    response.flushHeaders()
  })
  headersOnly.on("connection", (socket) => void held.push(socket))
  await Promise.all([
    new Promise<void>((resolve) => headersOnly.listen(0, "127.0.0.1", resolve)),
    new Promise<void>((resolve) => tlsStall.listen(0, "127.0.0.1", resolve)),
    new Promise<void>((resolve) => bodyStall.listen(0, "127.0.0.1", resolve))
  ])
  gateway = await startGateway(config)
  upstreamA = gateway.upstream
})

afterAll(async () => {
  await gateway?.close()
  for (const socket of held) socket.destroy()
  await Promise.all([
    upstreamB?.close(),
    upstreamC?.close(),
    new Promise((r) => tlsStall?.close(r)),
    new Promise((r) => bodyStall?.close(r)),
    new Promise((r) => headersOnly?.close(r))
  ])
})

const chat = (model: string, body: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
  fetch(`${gateway.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json", ...headers },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "hello there" }], ...body })
  })

const admin = async (path: string, init: RequestInit = {}) => {
  const response = await fetch(`${gateway.url}/api/admin${path}`, {
    ...init,
    headers: { authorization: `Bearer ${KEY}`, ...init.headers }
  })
  return { status: response.status, body: await response.json() as any }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Waits (up to 10 s) until `check` returns a value. */
const eventually = async <A>(what: string, check: () => Promise<A | undefined>): Promise<A> => {
  for (let i = 0; i < 200; i++) {
    const value = await check()
    if (value !== undefined) return value
    await sleep(50)
  }
  throw new Error(`timed out waiting for ${what}`)
}

/** The usage record of a request (written in batches: waits for it). */
const usageOf = (requestId: string) =>
  eventually(`the usage record of ${requestId}`, async () => {
    const page = await admin("/usage?limit=200")
    return (page.body.data as Array<any>).find((r) => r.requestId === requestId)
  })

const channelHealth = async (name: string) =>
  (await admin("/channels")).body.data.find((c: any) => c.name === name).health

const attemptsOf = (record: any) => (record.attemptLog as Array<any>).map((a) => [a.channel, a.status, a.errorCode])

/** Ledger entries of one request, by kind. */
const ledgerOf = (requestId: string) =>
  runSql(
    gateway.database,
    (sql) =>
      Effect.map(sql`SELECT kind, COUNT(*) AS n FROM ledger WHERE request_id = ${requestId} GROUP BY kind`, (rows) =>
        Object.fromEntries(rows.map((row) => [String(row.kind), Number(row.n)])))
  )

const streamEvents = (text: string) =>
  text.split("\n\n").filter((e) => e.startsWith("data: ") && e !== "data: [DONE]").map((e) =>
    JSON.parse(e.slice(6)) as any
  )

describe("failover", () => {
  const cases: ReadonlyArray<readonly [string, string, number | null, string]> = [
    ["a refused connection", "refused-model", null, "UpstreamUnavailable"],
    ["a connection that never completes (connect_ms)", "connect-model", null, "UpstreamTimeout"],
    ["a connection reset before the answer", "reset-model", null, "UpstreamUnavailable"],
    ["a first byte slower than first_byte_ms", "slow-model", null, "UpstreamTimeout"],
    ["a body that stalls after its headers (idle_ms)", "body-stall-model", 200, "UpstreamTimeout"],
    ["500", "broken-model", 500, "UpstreamUnavailable"]
  ]
  for (const [name, model, status, code] of cases) {
    it(`${name}: the call fails over to another upstream, and so do calls that had not started`, async () => {
      const answers = await Promise.all(Array.from({ length: 4 }, () => chat(model)))
      for (const answer of answers) {
        assert.strictEqual(answer.status, 200, name)
        assert.match((await answer.json() as any).choices[0].message.content, /fake-upstream/)
      }
      const record = await usageOf(answers[0]!.headers.get("x-request-id")!)
      assert.strictEqual(record.status, 200)
      assert.strictEqual(record.channel, "fallback")
      assert.strictEqual(record.attempts, 2)
      assert.deepStrictEqual(attemptsOf(record), [[record.attemptLog[0].channel, status, code], [
        "fallback",
        200,
        null
      ]])
      for (const attempt of record.attemptLog) assert.isAtLeast(attempt.durationMs, 0)
      assert.strictEqual(record.attemptLog[1].keyHint, "…kb")
    })
  }

  it("a stream whose headers came but whose first chunk is later than first_byte_ms fails over, and its connection is closed", async () => {
    const closedBefore = headersOnlyClosed
    const answer = await chat("first-chunk-model", { stream: true })
    assert.strictEqual(answer.status, 200)
    assert.include(await answer.text(), "[DONE]")
    const record = await usageOf(answer.headers.get("x-request-id")!)
    assert.deepStrictEqual(attemptsOf(record), [["headers-only", 200, "UpstreamTimeout"], ["fallback", 200, null]])
    await eventually(
      "the stalled stream's connection to close",
      async () => headersOnlyClosed > closedBefore ? true : undefined
    )
  })

  // A client that goes away before the first byte (docs/billing.md): a non-stream attempt goes on, and ends
  // here at its first-byte timeout (the upstream never answers): nothing charged; a stream is cut at once,
  // and charged its prompt, since its upstream had answered (headers, no chunk for a minute).
  for (
    const [when, model, stream] of [["for the answer", "silent-model", false], [
      "for a stream's first chunk",
      "first-chunk-wait-model",
      true
    ]] as const
  ) {
    it(`a caller that hangs up while waiting ${when}: 499, charged what the upstream got`, async () => {
      const [requestsBefore, closedBefore] = [headersOnlyRequests, headersOnlyClosed]
      const before = await books(gateway.database, "ops")
      const controller = new AbortController()
      const body = JSON.stringify({ model, stream, messages: [{ role: "user", content: "hello" }] })
      const pending = fetch(`${gateway.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
        body,
        signal: controller.signal
      }).catch((error: unknown) => error)
      await eventually(
        "the upstream to get the call",
        async () => headersOnlyRequests > requestsBefore ? true : undefined
      )
      await sleep(100)
      controller.abort()
      assert.instanceOf(await pending, Error)
      await eventually(
        stream ? "the upstream request to be aborted" : "the upstream request to time out",
        async () => headersOnlyClosed > closedBefore ? true : undefined
      )
      const record = await eventually("the usage record of the abandoned call", async () => {
        const page = await admin(`/usage?model=${model}&limit=1`)
        return page.body.data[0]
      })
      assert.strictEqual(record.status, 499)
      assert.strictEqual(record.errorCode, "ClientClosed")
      // The stream's prompt, four body bytes per token at $1 per million; nothing for an answer that never came.
      const prompt = stream ? BigInt(Math.ceil(Buffer.byteLength(body) / 4)) : 0n
      assert.deepStrictEqual(
        attemptsOf(record),
        [[record.channel, stream ? 200 : null, stream ? "ClientClosed" : "UpstreamTimeout"]]
      )
      const after = await books(gateway.database, "ops")
      assert.strictEqual(before.balance - after.balance, prompt * 1000n)
      assert.strictEqual(after.balance, after.ledger)
    })
  }

  it("a connect timeout is a 504 naming connect_ms when no other channel serves the model", async () => {
    const answer = await chat("connect-only-model")
    assert.strictEqual(answer.status, 504)
    const error = (await answer.json() as any).error
    assert.strictEqual(error.code, "upstream_timeout")
    assert.match(error.message, /did not accept a connection within 300 ms/)
  })

  it("429 with retry-after: another key of the same channel first, then another channel", async () => {
    const answer = await chat("limited-model")
    assert.strictEqual(answer.status, 200)
    const record = await usageOf(answer.headers.get("x-request-id")!)
    assert.deepStrictEqual(attemptsOf(record), [
      ["limited", 429, "UpstreamRateLimited"],
      ["limited", 429, "UpstreamRateLimited"],
      ["fallback", 200, null]
    ])
    assert.sameMembers(record.attemptLog.slice(0, 2).map((a: any) => a.keyHint), ["…-one", "…-two"])
  })

  it("takes one hold per call, whatever the attempts, and charges once", async () => {
    const answer = await chat("broken-model")
    assert.strictEqual(answer.status, 200)
    const requestId = answer.headers.get("x-request-id")!
    await usageOf(requestId)
    const ledger = await ledgerOf(requestId)
    assert.strictEqual(ledger.hold, 1)
    assert.strictEqual(ledger.charge, 1)
    const b = await books(gateway.database, "ops")
    assert.strictEqual(b.balance, b.ledger)
  })

  it("stops at routing.max_attempts and answers with the last error, recording the status the client got", async () => {
    const answer = await chat("exhaust-model")
    assert.strictEqual(answer.status, 502)
    assert.strictEqual((await answer.json() as any).error.code, "upstream_error")
    const requestId = answer.headers.get("x-request-id")!
    const record = await usageOf(requestId)
    assert.strictEqual(record.status, 502)
    assert.strictEqual(record.errorCode, "UpstreamUnavailable")
    assert.isNull(record.ttfbMs)
    assert.strictEqual(record.attempts, 3)
    assert.deepStrictEqual(record.attemptLog.map((a: any) => a.status), [503, 503, 503])
    assert.strictEqual(record.cost, "0.00")
    assert.deepStrictEqual(await ledgerOf(requestId), { hold: 1, release: 1 })
  })
})

describe("failover outside chat: embeddings and countTokens", () => {
  const gemini = (model: string, action: string, body: unknown) =>
    fetch(`${gateway.url}/v1beta/models/${model}:${action}`, {
      method: "POST",
      headers: { "x-goog-api-key": KEY, "content-type": "application/json" },
      body: JSON.stringify(body)
    })

  it("/v1/embeddings fails over from a dead channel to a live one: one hold, both attempts on the usage record", async () => {
    const answer = await fetch(`${gateway.url}/v1/embeddings`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "embed-model", input: ["one", "two"] })
    })
    assert.strictEqual(answer.status, 200)
    const body = await answer.json() as any
    assert.strictEqual(body.model, "embed-model")
    assert.strictEqual(body.data.length, 2)
    const requestId = answer.headers.get("x-request-id")!
    const record = await usageOf(requestId)
    assert.strictEqual(record.status, 200)
    assert.strictEqual(record.channel, "fallback")
    assert.deepStrictEqual(attemptsOf(record), [["refused", null, "UpstreamUnavailable"], ["fallback", 200, null]])
    assert.notStrictEqual(record.cost, "0.00")
    assert.deepStrictEqual(await ledgerOf(requestId), { hold: 1, release: 1, charge: 1 })
  })

  it("a Gemini embedContent fails over from a dead Gemini channel to a live one", async () => {
    const answer = await gemini("gembed-model", "embedContent", { content: { parts: [{ text: "embed me" }] } })
    assert.strictEqual(answer.status, 200)
    assert.isAbove(((await answer.json() as any).embedding.values as Array<number>).length, 0)
    const record = await usageOf(answer.headers.get("x-request-id")!)
    assert.strictEqual(record.channel, "gemini-live")
    assert.deepStrictEqual(attemptsOf(record), [["gemini-dead", null, "UpstreamUnavailable"], [
      "gemini-live",
      200,
      null
    ]])
    assert.isNotNull(record.ttfbMs)
  })

  it("countTokens fails over from a dead Gemini channel to a live one, whose count it relays; the dead key's breaker counts the failure", async () => {
    upstreamB.clearRequests()
    const before = (await channelHealth("gemini-dead")).keys[0].recentFailures as number
    const answer = await gemini("count-model", "countTokens", {
      contents: [{ role: "user", parts: [{ text: "how many tokens is this?" }] }]
    })
    assert.strictEqual(answer.status, 200)
    assert.isNumber((await answer.json() as any).totalTokens)
    const counted = upstreamB.requests.filter((r) => r.path.endsWith(":countTokens"))
    assert.deepStrictEqual(counted.map((r) => r.path), ["/v1beta/models/count-model:countTokens"])
    const health = await channelHealth("gemini-dead")
    assert.strictEqual(health.keys[0].recentFailures, before + 1)
    assert.match(health.keys[0].lastError, /could not be reached/)
  })

  it("countTokens with a key the upstream refuses (Gemini's 400 API_KEY_INVALID) is counted by the next channel, and a probe confirming it disables the key", async () => {
    upstreamB.clearRequests()
    const answer = await gemini("count-auth-model", "countTokens", {
      contents: [{ role: "user", parts: [{ text: "count me" }] }]
    })
    assert.strictEqual(answer.status, 200)
    assert.isNumber((await answer.json() as any).totalTokens)
    assert.strictEqual(
      upstreamB.requests.filter((r) => r.path === "/v1beta/models/count-auth-model:countTokens").length,
      1
    )
    const health = await eventually("the probe to disable the refused key", async () => {
      const now = await channelHealth("gemini-badkey")
      return now.state === "disabled" ? now : undefined
    })
    assert.strictEqual(health.state, "disabled")
    assert.strictEqual(health.keys[0].status, 400)
    assert.strictEqual(health.keys[0].reason, "HTTP 400: API key not valid. Please pass a valid API key.")
  })
})

describe("after the first byte", () => {
  it("a stream reset after its first chunks ends with an in-band error, is charged for what was delivered, and opens the breaker", async () => {
    const before = await books(gateway.database, "ops")
    const answer = await chat("cut-model", { stream: true })
    assert.strictEqual(answer.status, 200)
    const events = streamEvents(await answer.text())
    const content = events.filter((e) => e.choices?.[0]?.delta?.content).map((e) => e.choices[0].delta.content).join("")
    assert.isAbove(content.length, 0)
    assert.strictEqual(events.at(-1).error.code, "upstream_error")
    const record = await usageOf(answer.headers.get("x-request-id")!)
    assert.strictEqual(record.status, 502)
    assert.strictEqual(record.errorCode, "UpstreamUnavailable")
    assert.deepStrictEqual(attemptsOf(record), [["cutting", 200, "UpstreamUnavailable"]])
    assert.isAbove(record.completionTokens, 0)
    assert.notStrictEqual(record.cost, "0.00")
    const after = await books(gateway.database, "ops")
    assert.isTrue(after.balance < before.balance, "charged for what was delivered")
    assert.strictEqual(after.balance, after.ledger)

    // The breaker opened (consecutive_failures: 1): the next calls go straight to the fallback.
    const health = await channelHealth("cutting")
    assert.strictEqual(health.state, "open")
    assert.strictEqual(health.keys[0].state, "open")
    assert.match(health.keys[0].reason, /1 failures in a row/)
    const next = await chat("cut-model", { stream: true })
    assert.strictEqual(next.status, 200)
    assert.include(await next.text(), "[DONE]")
    const nextRecord = await usageOf(next.headers.get("x-request-id")!)
    assert.deepStrictEqual(attemptsOf(nextRecord), [["fallback", 200, null]])
  })

  it("a stalled stream ends after idle_ms with an in-band timeout error", async () => {
    const answer = await chat("stall-model", { stream: true })
    const events = streamEvents(await answer.text())
    assert.strictEqual(events.at(-1).error.code, "upstream_timeout")
    assert.match(events.at(-1).error.message, /sent nothing for 300 ms/)
    const record = await usageOf(answer.headers.get("x-request-id")!)
    assert.strictEqual(record.status, 504)
    assert.deepStrictEqual(attemptsOf(record), [["stalling", 200, "UpstreamTimeout"]])
    assert.isAbove(record.completionTokens, 0)
  })

  it("a stream past total_ms ends with an in-band timeout error and is charged for what was delivered", async () => {
    const answer = await chat("overtime-model", { stream: true })
    const events = streamEvents(await answer.text())
    const last = events.at(-1)
    assert.strictEqual(last.error.code, "upstream_timeout")
    assert.match(last.error.message, /did not finish the answer within 800 ms/)
    const chunks = events.filter((e) => e.choices?.[0]?.delta?.content).length
    assert.isAbove(chunks, 0)
    assert.isBelow(chunks, 60)
    const record = await usageOf(answer.headers.get("x-request-id")!)
    assert.strictEqual(record.status, 504)
    assert.isAbove(record.completionTokens, 0)
    assert.isNotNull(record.ttfbMs)
  })
})

describe("key health", () => {
  it("a 401 keeps the key out of calls; a probe confirming it disables it with the upstream's reason; the probe brings it back", async () => {
    upstreamC.setApiKey("sk-upstream-c-rotated")
    const refused = await chat("auth-model")
    assert.strictEqual(refused.status, 200, "the call fails over")
    const record = await usageOf(refused.headers.get("x-request-id")!)
    assert.deepStrictEqual(attemptsOf(record), [["auth", 401, "UpstreamUnavailable"], ["fallback", 200, null]])
    const health = await eventually("the probe to disable the refused key", async () => {
      const now = await channelHealth("auth")
      return now.state === "disabled" ? now : undefined
    })
    assert.strictEqual(health.state, "disabled")
    assert.strictEqual(health.keys[0].state, "disabled")
    assert.strictEqual(health.keys[0].status, 401)
    assert.match(health.keys[0].reason, /^HTTP 401: Incorrect API key provided/)
    assert.isNumber(health.keys[0].since)
    assert.strictEqual(health.keys[0].hint, "…good")
    assert.notInclude(JSON.stringify(health), "sk-upstream-c-good")

    // While disabled, calls do not try it (only the prober does).
    const served = await chat("auth-model")
    assert.deepStrictEqual(attemptsOf(await usageOf(served.headers.get("x-request-id")!)), [["fallback", 200, null]])
    // The state is in the database (it survives a restart).
    const authId = (await admin("/channels")).body.data.find((c: any) => c.name === "auth").id as string
    const stored = await runSql(
      gateway.database,
      (sql) => sql`SELECT status, reason FROM channel_key_states WHERE channel_id = ${authId}`
    )
    assert.strictEqual(stored.length, 1)
    assert.strictEqual(Number(stored[0]!.status), 401)

    // The upstream accepts the key again: the probe finds out and re-enables it.
    upstreamC.setApiKey("sk-upstream-c-good")
    await eventually("the key to be enabled again", async () => {
      const now = await channelHealth("auth")
      return now.state === "healthy" ? now : undefined
    })
    const back = await chat("auth-model")
    assert.deepStrictEqual(attemptsOf(await usageOf(back.headers.get("x-request-id")!)), [["auth", 200, null]])
    assert.strictEqual(
      (await runSql(gateway.database, (sql) => sql`SELECT * FROM channel_key_states WHERE channel_id = ${authId}`))
        .length,
      0
    )
  })

  it("the console's Test reports how long a failed probe took and why", async () => {
    const channel = (await admin("/channels")).body.data.find((c: any) => c.name === "tls-stall")
    const result = await admin(`/channels/${channel.id}/test`, {
      method: "POST",
      body: "{}",
      headers: { "content-type": "application/json" }
    })
    assert.strictEqual(result.status, 200)
    assert.isFalse(result.body.ok)
    assert.isNull(result.body.status)
    assert.match(result.body.message, /did not accept a connection within 300 ms/)
    // The probe waited out connect_ms before failing: its latency says so (it used to be 0).
    assert.isAtLeast(result.body.latencyMs, 300)
  })

  it("an administrator can reset a channel's breakers", async () => {
    const channel = (await admin("/channels")).body.data.find((c: any) => c.name === "stalling")
    assert.notStrictEqual(channel.health.state, "healthy")
    const reset = await admin(`/channels/${channel.id}/reset`, { method: "POST" })
    assert.strictEqual(reset.status, 200)
    assert.strictEqual(reset.body.health.state, "healthy")
  })
})

describe("selection", () => {
  it("sticky: the same X-Session-Id stays on one channel; sessions spread over both", async () => {
    const calls: Array<{ readonly session: string; readonly requestId: string }> = []
    for (let s = 0; s < 12; s++) {
      for (let i = 0; i < 3; i++) {
        const answer = await chat("sticky-model", {}, { "x-session-id": `session-${s}` })
        assert.strictEqual(answer.status, 200)
        await answer.text()
        calls.push({ session: `session-${s}`, requestId: answer.headers.get("x-request-id")! })
      }
    }
    const channels = await eventually("the usage records", async () => {
      const records = (await admin("/usage?limit=500")).body.data as Array<any>
      const byId = new Map(records.map((r) => [r.requestId, r.channel as string]))
      return calls.every((c) => byId.has(c.requestId)) ? byId : undefined
    })
    const bySession = new Map<string, Set<string>>()
    for (const c of calls) {
      bySession.set(c.session, (bySession.get(c.session) ?? new Set()).add(channels.get(c.requestId)!))
    }
    for (const [session, used] of bySession) assert.strictEqual(used.size, 1, `${session} used ${[...used].join(", ")}`)
    assert.deepStrictEqual([...new Set([...bySession.values()].map((used) => [...used][0]))].sort(), [
      "sticky-a",
      "sticky-b"
    ])
  })
})

describe("request parameters", () => {
  it("defaults fill, overrides replace, and stream_options is not sent to an upstream that rejects it (usage counted locally)", async () => {
    upstreamA.clearRequests()
    const answer = await chat("tuned-model", {
      stream: true,
      user: "alice",
      max_tokens: 500,
      stream_options: { include_usage: true }
    })
    assert.strictEqual(answer.status, 200)
    assert.include(await answer.text(), "[DONE]")
    const sent = upstreamA.requests.find((r) => r.path === "/v1/chat/completions")!.body as Record<string, unknown>
    assert.strictEqual(sent.temperature, 0.3)
    assert.strictEqual(sent.max_tokens, 7)
    assert.notProperty(sent, "user")
    assert.notProperty(sent, "stream_options")
    const requestId = answer.headers.get("x-request-id")!
    await usageOf(requestId)
    const rows = await runSql(
      gateway.database,
      (sql) => sql`SELECT usage_reported, completion_tokens FROM usage_records WHERE request_id = ${requestId}`
    )
    assert.isFalse(Boolean(Number(rows[0]!.usage_reported)))
    assert.isAbove(Number(rows[0]!.completion_tokens), 0)
    // A client temperature is kept (only a default).
    upstreamA.clearRequests()
    await (await chat("tuned-model", { temperature: 1 })).text()
    assert.strictEqual((upstreamA.requests[0]!.body as Record<string, unknown>).temperature, 1)
  })
})

describe("azure", () => {
  it("an azure channel through the openai SDK: deployment path, api-version, api-key header; stream and not", async () => {
    const client = new OpenAI({ apiKey: KEY, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
    upstreamA.clearRequests()
    const completion = await client.chat.completions.create({
      model: "azure-model",
      messages: [{ role: "user", content: "hi azure" }]
    })
    assert.strictEqual(completion.model, "azure-model")
    assert.match(completion.choices[0]!.message.content!, /hi azure/)
    const request = upstreamA.requests.at(-1)!
    assert.strictEqual(request.path, "/openai/deployments/my-deployment/chat/completions")
    assert.strictEqual(request.query["api-version"], "2024-10-21")
    assert.strictEqual(request.headers["api-key"], "az-key")
    assert.isUndefined(request.headers.authorization)
    assert.strictEqual(request.dialect, "azure")

    const stream = await client.chat.completions.create({
      model: "azure-model",
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: "user", content: "stream please" }]
    })
    let text = ""
    let usage: unknown
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? ""
      usage = chunk.usage ?? usage
      assert.strictEqual(chunk.model, "azure-model")
    }
    assert.match(text, /stream please/)
    assert.isObject(usage)
  })
})
