/**
 * Money through the real server, on SQLite and on PostgreSQL (the same
 * scenarios on both, with every user's balance checked against the ledger's
 * sum after each): holds that never overspend under concurrency (and send
 * nothing upstream for refused calls), the insufficient-quota answer, a hold
 * that covers every answer asked for, per-key spending caps (lifetime, daily,
 * monthly), free models, redemption codes, charging exactly for what a stream
 * delivered when the upstream or the client cut it, nothing charged for a failed
 * call; then real processes: kill -9 with calls in flight and a restart, and two
 * gateway processes on one PostgreSQL.
 */
import { afterAll, afterEach, assert, beforeAll, describe, it } from "@effect/vitest"
import { Money } from "@modelgate/core"
import type { FakeUpstreamServer } from "@modelgate/fake-upstream"
import { startFakeUpstream } from "@modelgate/fake-upstream"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import OpenAI from "openai"
import type { ConfigFile } from "../src/ConfigFile.ts"
import { allBooks, books, freshPostgres, postgresUrl, settledBooks } from "./support/Databases.ts"
import { startGateway, type TestGateway } from "./support/Gateway.ts"
import { freePort, startGatewayProcess, writeConfig } from "./support/Processes.ts"

const FLAT_KEY = "sk-money-carol-flat-0000000000000000000000000"
const CAPPED_KEY = "sk-money-carol-capped-00000000000000000000000"
const DAILY_KEY = "sk-money-carol-daily-000000000000000000000000"
const MONTHLY_KEY = "sk-money-erin-monthly-00000000000000000000000"
const TOKEN_KEY = "sk-money-dave-tokens-000000000000000000000000"
const NINA_KEY = "sk-money-nina-choices-00000000000000000000000"
const FREE_KEY = "sk-money-fred-free-0000000000000000000000000"
const GREEDY_KEY = "sk-money-gary-greedy-000000000000000000000000"
const GREEDY_CAPPED_KEY = "sk-money-hank-greedy-capped-0000000000000000"
const ADMIN_KEY = "sk-money-root-admin-0000000000000000000000000"

/** Content chunks of the drip model: 40 ASCII characters each (10 tokens by the four-characters rule), 1.5 s apart. */
const DRIP_CHUNK_CHARS = 40
const DRIP_INTERVAL_MS = 1500

/**
 * carol can pay for exactly 10 calls of a 0.01 USD flat-priced model; the
 * token-priced models cost 1000 nano-dollars per prompt token and 2000 per
 * completion token.
 */
const moneyConfig = (upstream: string): ConfigFile => ({
  listen: "127.0.0.1:0",
  log_level: "error",
  // Idle balance leases go back at once (no outage cover) and charges are written quickly, so the books settle fast.
  billing: { lease_idle_ms: 20, lease_cover_seconds: 0 },
  usage: { flush_interval_ms: 20 },
  channels: [
    {
      name: "up",
      type: "openai",
      base_url: `${upstream}/v1`,
      api_key: "sk-up",
      models: ["flat-model", "token-model", "cut-model", "broken-model", "drip-model", "free-model", "greedy-model"],
      model_map: {
        // Ignores max_tokens: 1,000 chunks, reported as 1,000 completion tokens.
        "greedy-model": "gpt-chunks-1000x4",
        "cut-model": "gpt-cut-5",
        "broken-model": "gpt-fail-500",
        "drip-model": `gpt-drip-chunks-20x${DRIP_CHUNK_CHARS}-interval-${DRIP_INTERVAL_MS}`
      }
    }
  ],
  models: {
    "flat-model": { per_request: 0.01 },
    "token-model": { input: 1, output: 2, output_token_limit: 1000 },
    "cut-model": { input: 1, output: 2 },
    "broken-model": { input: 1, output: 2 },
    "drip-model": { input: 1, output: 2 },
    "free-model": { free: true },
    "greedy-model": { input: 1, output: 2 }
  },
  users: [
    { name: "carol", balance: 0.1, keys: [{ name: "flat", secret: FLAT_KEY }] },
    {
      name: "erin",
      balance: 5,
      keys: [
        { name: "capped", secret: CAPPED_KEY, quota: 0.03 },
        { name: "daily", secret: DAILY_KEY, daily_budget: 0.02 },
        { name: "monthly", secret: MONTHLY_KEY, monthly_budget: 0.02 }
      ]
    },
    { name: "dave", balance: 5, password: "dave's password", keys: [{ name: "tokens", secret: TOKEN_KEY }] },
    { name: "nina", balance: 0.001, keys: [{ name: "choices", secret: NINA_KEY }] },
    { name: "fred", balance: 0, keys: [{ name: "free", secret: FREE_KEY }] },
    // 0.0002 USD each: enough for a greedy call's hold, not for what it reports (a lease, and the database path).
    { name: "gary", balance: 0.0002, keys: [{ name: "greedy", secret: GREEDY_KEY }] },
    { name: "hank", balance: 0.0002, keys: [{ name: "greedy-capped", secret: GREEDY_CAPPED_KEY, quota: 1 }] },
    { name: "root", role: "admin", keys: [{ name: "ops", secret: ADMIN_KEY }] }
  ]
})

const call = (url: string, key: string, body: unknown, signal?: AbortSignal) =>
  fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
    ...(signal !== undefined ? { signal } : {})
  })

const flat = { model: "flat-model", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }

/** Fires `n` concurrent calls spread over `urls` and counts the answers by status and code. */
const storm = async (urls: ReadonlyArray<string>, n: number) => {
  const answers = await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const response = await call(urls[i % urls.length]!, FLAT_KEY, flat)
      const body = await response.json() as { error?: { code: string } }
      return { status: response.status, code: body.error?.code, retry: response.headers.get("x-should-retry") }
    })
  )
  return {
    ok: answers.filter((a) => a.status === 200).length,
    refused: answers.filter((a) => a.status === 429 && a.code === "insufficient_quota" && a.retry === "false").length,
    other: answers.filter((a) => a.status !== 200 && a.code !== "insufficient_quota")
  }
}

/** The chat completions the upstream received for `model`. */
const upstreamCalls = (upstream: FakeUpstreamServer, model: string) =>
  upstream.requests.filter((r) => r.path === "/v1/chat/completions" && r.model === model).length

/** The books once every hold and lease is closed (charges written, idle leases released), checked. */
const assertBooks = async (database: string, user: string, balance?: bigint) => {
  const b = await settledBooks(database, user)
  assert.strictEqual(b.balance, b.ledger, "the balance equals the ledger's sum")
  if (balance !== undefined) assert.strictEqual(b.balance, balance)
  else assert.isAtLeast(Number(b.balance), 0)
  return b
}

/** Every user's balance equals the sum of their ledger entries, and is not negative but where a call cost more than the balance (gary, hank). */
const assertAllBooks = async (database: string) => {
  const all = await allBooks(database)
  assert.isAtLeast(all.length, 6)
  for (const user of all) {
    assert.strictEqual(user.balance, user.ledger, `${user.name}: the balance equals the ledger's sum`)
    if (user.name !== "gary" && user.name !== "hank") {
      assert.isTrue(user.balance >= 0n, `${user.name}: the balance is not negative`)
    }
  }
}

/**
 * Waits until no hold or balance lease is open (a settlement runs in a finaliser, just after the
 * client saw the end; its charge is written by the batch writer, and the idle lease then returns).
 */
const settled = async (database: string) => {
  await settledBooks(database, "dave", 5_000)
}

/** The text of the `content` deltas of OpenAI stream events. */
const contentOf = (events: ReadonlyArray<string>): Array<string> =>
  events.flatMap((event) => {
    const data = event.startsWith("data: ") ? event.slice(6) : ""
    if (data === "" || data === "[DONE]") return []
    // (an in-band error event has no choices)
    const chunk = JSON.parse(data) as { choices?: Array<{ delta?: { content?: string | null } }> }
    const content = chunk.choices?.[0]?.delta?.content
    return typeof content === "string" && content.length > 0 ? [content] : []
  })

/** The prompt estimate the gateway bills when the upstream reports no usage: four bytes of body per token. */
const promptEstimate = (body: unknown) => Math.ceil(Buffer.byteLength(JSON.stringify(body)) / 4)

interface UsageItem {
  readonly requestId: string
  readonly model: string
  readonly promptTokens: number
  readonly completionTokens: number
  readonly cost: string
  readonly status: number
  readonly errorCode: string | null
}

/** The caller's newest usage record of `model`, once the usage writer has flushed it. */
const lastUsage = async (url: string, key: string, model: string): Promise<UsageItem> => {
  for (let i = 0; i < 100; i++) {
    const page =
      await (await fetch(`${url}/api/usage?model=${model}&limit=1`, { headers: { authorization: `Bearer ${key}` } }))
        .json() as {
          data: Array<UsageItem>
        }
    if (page.data[0] !== undefined) return page.data[0]
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error(`no usage record of ${model}`)
}

/** Every money scenario on one database; with `skip` they are listed as skipped (the run has no such database). */
const suite = (
  name: string,
  database: () => Promise<{ readonly url: string | undefined; readonly drop: () => Promise<void> }>,
  skip = false
) => {
  describe.skipIf(skip)(name, () => {
    let gateway: TestGateway
    let drop: () => Promise<void> = async () => undefined
    beforeAll(async () => {
      const db = await database()
      drop = db.drop
      gateway = await startGateway(moneyConfig, db.url)
    })
    afterAll(async () => {
      await gateway?.close()
      await drop()
    })
    afterEach(async () => {
      await assertAllBooks(gateway.database)
    })

    it(
      "1,000 concurrent calls against a balance that pays for 10: exactly 10 succeed, the balance ends at zero, the upstream sees 10",
      async () => {
        gateway.upstream.clearRequests()
        const result = await storm([gateway.url], 1000)
        assert.deepStrictEqual(result.other, [])
        assert.strictEqual(result.ok, 10)
        assert.strictEqual(result.refused, 990)
        // nothing is sent upstream for a refused call
        assert.strictEqual(upstreamCalls(gateway.upstream, "flat-model"), 10)
        const b = await assertBooks(gateway.database, "carol", 0n)
        assert.strictEqual(b.openHolds, 0)
      },
      120_000
    )

    it("refuses with insufficient_quota stating the balance and the amount needed", async () => {
      const client = new OpenAI({ apiKey: FLAT_KEY, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
      try {
        await client.chat.completions.create(flat as never)
        assert.fail("expected a refusal")
      } catch (error) {
        assert.instanceOf(error, OpenAI.RateLimitError)
        const e = error as InstanceType<typeof OpenAI.RateLimitError>
        assert.strictEqual(e.code, "insufficient_quota")
        assert.match(e.message, /balance is 0\.00 USD/)
        assert.match(e.message, /0\.01 USD/)
      }
    })

    it("holds the output once per answer asked for (n), and each media part at its bound", async () => {
      // nina has 0.001 USD = 1,000,000 nano-dollars; prompt tokens cost 1000, output tokens 2000.
      const bound = (body: unknown, media = 0) => BigInt(Buffer.byteLength(JSON.stringify(body)) + 8 + 2000 * media)
      const one = { model: "token-model", max_tokens: 200, messages: [{ role: "user", content: "count to three" }] }
      // one answer: (bytes + 8) * 1000 + 200 * 2000, about 0.0005 USD: held, then charged what it used
      const answered = await call(gateway.url, NINA_KEY, one)
      assert.strictEqual(answered.status, 200)
      await answered.json()
      const three = { ...one, n: 3 }
      const refused = await call(gateway.url, NINA_KEY, three)
      assert.strictEqual(refused.status, 429)
      const message = (await refused.json() as { error: { code: string; message: string } }).error
      assert.strictEqual(message.code, "insufficient_quota")
      // three answers: the output bound three times
      const heldForThree = bound(three) * 1000n + 3n * 200n * 2000n
      assert.include(message.message, `may cost up to ${Money.formatUsd(heldForThree)} USD`)
      assert.include(message.message, "or fewer answers (n, candidateCount: 3 asked, each held for in full)")
      const image = {
        model: "token-model",
        max_tokens: 200,
        messages: [{
          role: "user",
          content: [{ type: "text", text: "what is this?" }, {
            type: "image_url",
            image_url: { url: "https://example.com/cat.png" }
          }]
        }]
      }
      const refusedImage = await call(gateway.url, NINA_KEY, image)
      assert.strictEqual(refusedImage.status, 429)
      const imageMessage = (await refusedImage.json() as { error: { message: string } }).error.message
      assert.include(imageMessage, `may cost up to ${Money.formatUsd(bound(image, 1) * 1000n + 200n * 2000n)} USD`)
      // a worst case beyond the largest amount (10^9 USD) is refused the same way, not answered with a server error
      const absurd = await call(gateway.url, NINA_KEY, { ...one, n: 1_000_000_000_000_000 })
      assert.strictEqual(absurd.status, 429)
      const absurdError = (await absurd.json() as { error: { code: string; message: string } }).error
      assert.strictEqual(absurdError.code, "insufficient_quota")
      assert.include(absurdError.message, "fewer answers")
      const b = await assertBooks(gateway.database, "nina")
      assert.strictEqual(b.openHolds, 0)
    })

    it("enforces a key's lifetime quota, daily and monthly budgets, naming the cap", async () => {
      const statuses: Array<number> = []
      for (let i = 0; i < 4; i++) statuses.push((await call(gateway.url, CAPPED_KEY, flat)).status)
      assert.deepStrictEqual(statuses, [200, 200, 200, 429])
      const refused = await (await call(gateway.url, CAPPED_KEY, flat)).json() as {
        error: { code: string; message: string }
      }
      assert.strictEqual(refused.error.code, "insufficient_quota")
      assert.match(refused.error.message, /lifetime spending cap of 0\.03 USD/)
      for (const [key, what] of [[DAILY_KEY, "daily budget"], [MONTHLY_KEY, "monthly budget"]] as const) {
        assert.strictEqual((await call(gateway.url, key, flat)).status, 200)
        assert.strictEqual((await call(gateway.url, key, flat)).status, 200)
        const over = await call(gateway.url, key, flat)
        assert.strictEqual(over.status, 429)
        assert.strictEqual(over.headers.get("x-should-retry"), "false")
        const error = (await over.json() as { error: { code: string; message: string } }).error
        assert.strictEqual(error.code, "insufficient_quota")
        assert.include(error.message, `${what} of 0.02 USD`)
      }
      // In the Gemini dialect: 429 RESOURCE_EXHAUSTED whose QuotaFailure names the monthly cap.
      const gemini = await fetch(`${gateway.url}/v1beta/models/flat-model:generateContent`, {
        method: "POST",
        headers: { "x-goog-api-key": MONTHLY_KEY, "content-type": "application/json" },
        body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hi" }] }] })
      })
      assert.strictEqual(gemini.status, 429)
      const geminiError =
        (await gemini.json() as { error: { status: string; message: string; details: Array<Record<string, unknown>> } })
          .error
      assert.strictEqual(geminiError.status, "RESOURCE_EXHAUSTED")
      assert.include(geminiError.message, "monthly budget of 0.02 USD")
      assert.include(JSON.stringify(geminiError.details), "\"quotaId\":\"SpendingCapMonthBudget\"")
      // seven calls at 0.01 USD were charged: three on the capped key, two on each budget
      await assertBooks(gateway.database, "erin", 5_000_000_000n - 7n * 10_000_000n)
    })

    it("serves a free model to an empty balance and charges nothing", async () => {
      const before = await assertBooks(gateway.database, "fred", 0n)
      const response = await call(gateway.url, FREE_KEY, {
        model: "free-model",
        messages: [{ role: "user", content: "hi" }]
      })
      assert.strictEqual(response.status, 200)
      const body = await response.json() as { usage: { completion_tokens: number } }
      assert.isAbove(body.usage.completion_tokens, 0)
      const after = await assertBooks(gateway.database, "fred", 0n)
      assert.strictEqual(after.openHolds, before.openHolds)
      const ledger =
        await (await fetch(`${gateway.url}/api/ledger`, { headers: { authorization: `Bearer ${FREE_KEY}` } }))
          .json() as {
            data: Array<{ kind: string; amount: string }>
          }
      // nothing charged, nothing moved
      assert.deepStrictEqual(ledger.data.filter((e) => e.kind === "charge" || /[1-9]/.test(e.amount)), [])
      const usage = await lastUsage(gateway.url, FREE_KEY, "free-model")
      assert.strictEqual(usage.status, 200)
      assert.strictEqual(Number(usage.cost), 0)
    })

    it("credits a redemption code once when 50 connections redeem it at the same time", async () => {
      const generated = await fetch(`${gateway.url}/api/admin/codes`, {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN_KEY}`, "content-type": "application/json" },
        body: JSON.stringify({ count: 1, amount: "1.25" })
      })
      assert.strictEqual(generated.status, 201)
      const [code] = (await generated.json() as { codes: Array<string> }).codes
      const before = await settledBooks(gateway.database, "dave")
      // Redeeming changes the account: it needs a console session (an API key only reads).
      const login = await fetch(`${gateway.url}/api/auth/login`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ username: "dave", password: "dave's password" })
      })
      const cookie = login.headers.get("set-cookie")!.split(";")[0]!
      const { csrfToken } = await login.json() as { csrfToken: string }
      const statuses = await Promise.all(Array.from({ length: 50 }, () =>
        fetch(`${gateway.url}/api/redeem`, {
          method: "POST",
          headers: { cookie, "x-csrf-token": csrfToken, "content-type": "application/json" },
          body: JSON.stringify({ code })
        }).then((r) => r.status)))
      assert.strictEqual(statuses.filter((s) => s === 200).length, 1)
      assert.strictEqual(statuses.filter((s) => s === 400).length, 49)
      const after = await assertBooks(gateway.database, "dave")
      assert.strictEqual(after.balance - before.balance, 1_250_000_000n)
    })

    it("answers the legacy billing endpoints that chat apps read", async () => {
      const headers = { authorization: `Bearer ${TOKEN_KEY}` }
      const subscription = await (await fetch(`${gateway.url}/v1/dashboard/billing/subscription`, { headers }))
        .json() as {
          hard_limit_usd: number
          access_until: number
        }
      const today = new Date().toISOString().slice(0, 10)
      const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10)
      const usage =
        await (await fetch(`${gateway.url}/v1/dashboard/billing/usage?start_date=${today}&end_date=${tomorrow}`, {
          headers
        }))
          .json() as { total_usage: number }
      const b = await settledBooks(gateway.database, "dave")
      // remaining = hard limit - used, and equals the balance
      assert.closeTo(subscription.hard_limit_usd - usage.total_usage / 100, Number(b.balance) / 1e9, 1e-6)
      assert.strictEqual(subscription.access_until, 0)
      const bad = await fetch(`${gateway.url}/v1/dashboard/billing/usage?start_date=yesterday`, { headers })
      assert.strictEqual(bad.status, 400)
    })

    it("charges the actual usage, not the hold, and nothing for an upstream that fails before the first byte", async () => {
      const before = await settledBooks(gateway.database, "dave")
      const response = await call(gateway.url, TOKEN_KEY, {
        model: "token-model",
        messages: [{ role: "user", content: "hi" }]
      })
      const body = await response.json() as { usage: { prompt_tokens: number; completion_tokens: number } }
      const after = await assertBooks(gateway.database, "dave")
      // input 1 USD and output 2 USD per million tokens: 1000 and 2000 nano-dollars per token
      const expected = BigInt(body.usage.prompt_tokens) * 1000n + BigInt(body.usage.completion_tokens) * 2000n
      assert.strictEqual(before.balance - after.balance, expected)
      gateway.upstream.clearRequests()
      const failed = await call(gateway.url, TOKEN_KEY, {
        model: "broken-model",
        messages: [{ role: "user", content: "hi" }]
      })
      assert.strictEqual(failed.status, 502)
      await failed.text()
      assert.strictEqual(upstreamCalls(gateway.upstream, "gpt-fail-500"), 1)
      await settled(gateway.database)
      const afterFailure = await assertBooks(gateway.database, "dave")
      assert.strictEqual(afterFailure.balance, after.balance)
      assert.strictEqual(afterFailure.openHolds, 0)
      const usage = await lastUsage(gateway.url, TOKEN_KEY, "broken-model")
      assert.strictEqual(usage.status, 502)
      assert.strictEqual(Number(usage.cost), 0)
    })

    it("charges a call that reports more than the hold and the balance cover all it cost: the balance goes below zero, and the next call is refused", async () => {
      // The hold covers the prompt bound and 1 output token; the upstream reports 1,000 (2,000,000 nano-dollars).
      const request = { model: "greedy-model", max_tokens: 1, messages: [{ role: "user", content: "hi" }] }
      // Balance leases (gary), and the database path (hank, a key with a cap): the same books.
      for (const [user, key] of [["gary", GREEDY_KEY], ["hank", GREEDY_CAPPED_KEY]] as const) {
        const response = await call(gateway.url, key, request)
        assert.strictEqual(response.status, 200, user)
        const body = await response.json() as { usage: { prompt_tokens: number; completion_tokens: number } }
        const cost = BigInt(body.usage.prompt_tokens) * 1000n + BigInt(body.usage.completion_tokens) * 2000n
        assert.isTrue(cost > 200_000n, "the reported usage costs more than the balance")
        const usage = await lastUsage(gateway.url, key, "greedy-model")
        assert.strictEqual(usage.status, 200)
        assert.strictEqual(usage.cost, Money.formatUsd(cost), `${user}: charged what the upstream billed`)
        assert.strictEqual(usage.errorCode, "BalanceOverdrawn", `${user}: the overdraft is visible`)
        await assertBooks(gateway.database, user, 200_000n - cost)
        const refused = await call(gateway.url, key, request)
        assert.strictEqual(refused.status, 429, `${user}: refused until a top-up`)
        const error = await refused.json() as { error: { code: string; message: string } }
        assert.strictEqual(error.error.code, "insufficient_quota")
        assert.include(error.error.message, `Your balance is ${Money.formatUsd(200_000n - cost)} USD, below zero`)
      }
    })

    it("charges a stream cut by the upstream for exactly what it delivered", async () => {
      const before = await settledBooks(gateway.database, "dave")
      const request = { model: "cut-model", stream: true, messages: [{ role: "user", content: "hi" }] }
      const response = await call(gateway.url, TOKEN_KEY, request)
      const text = await response.text()
      const delivered = contentOf(text.split("\n\n")).join("")
      assert.isAbove(delivered.length, 0)
      await settled(gateway.database)
      const after = await assertBooks(gateway.database, "dave")
      // The upstream sent no usage (the stream was cut): the documented estimates are charged, the
      // completion at four delivered characters per token, the prompt at four body bytes per token.
      const completion = Math.ceil(delivered.length / 4)
      assert.strictEqual(
        before.balance - after.balance,
        BigInt(promptEstimate(request)) * 1000n + BigInt(completion) * 2000n
      )
      assert.strictEqual(after.openHolds, 0)
    })

    it("charges a stream the client abandons after N chunks for exactly those N chunks", async () => {
      const N = 3
      const before = await settledBooks(gateway.database, "dave")
      const controller = new AbortController()
      const request = {
        model: "drip-model",
        stream: true,
        messages: [{ role: "user", content: "tell me a long story" }]
      }
      const response = await call(gateway.url, TOKEN_KEY, request, controller.signal)
      assert.strictEqual(response.status, 200)
      const reader = response.body!.getReader()
      const decoder = new TextDecoder()
      let buffered = ""
      const chunks: Array<string> = []
      // The upstream sends a chunk every 1.5 s; read until exactly N content chunks arrived, then hang up.
      while (chunks.length < N) {
        const { done, value } = await reader.read()
        assert.isFalse(done, "the stream ended before N chunks")
        buffered += decoder.decode(value, { stream: true })
        const events = buffered.split("\n\n")
        buffered = events.pop()!
        chunks.push(...contentOf(events))
      }
      controller.abort()
      assert.strictEqual(chunks.length, N, "the N-th chunk came alone (the next is 1.5 s away)")
      for (const chunk of chunks) assert.strictEqual(chunk.length, DRIP_CHUNK_CHARS)
      await settled(gateway.database)
      const after = await assertBooks(gateway.database, "dave")
      // No usage came (the upstream reports it at the end): N chunks of 40 characters are N * 10 tokens
      // at 2000 nano-dollars, the prompt estimate at 1000. Nothing else is rounded.
      const completion = N * DRIP_CHUNK_CHARS / 4
      const expected = BigInt(promptEstimate(request)) * 1000n + BigInt(completion) * 2000n
      assert.strictEqual(before.balance - after.balance, expected)
      const usage = await lastUsage(gateway.url, TOKEN_KEY, "drip-model")
      assert.strictEqual(usage.completionTokens, completion)
      assert.strictEqual(usage.promptTokens, promptEstimate(request))
      assert.strictEqual(usage.status, 499)
      assert.strictEqual(usage.errorCode, "ClientClosed")
    }, 30_000)
  })
}

suite("money on SQLite", async () => ({ url: undefined, drop: async () => undefined }))

suite(
  "money on PostgreSQL (set MODELGATE_TEST_POSTGRES to run)",
  () => freshPostgres(postgresUrl!),
  postgresUrl === undefined
)

// ---------------------------------------------------------------------------
// Real processes
// ---------------------------------------------------------------------------

/** A process's configuration: the money setup, listening on `port`, on `database`, as node `nodeId`. */
const processConfig = (upstream: string, port: number, database: string, nodeId: string): ConfigFile => ({
  ...moneyConfig(upstream),
  listen: `127.0.0.1:${port}`,
  database,
  node_id: nodeId
})

describe("money across real processes", () => {
  let upstream: FakeUpstreamServer
  let dir: string
  beforeAll(async () => {
    upstream = await startFakeUpstream({ port: 0 })
    dir = mkdtempSync(join(tmpdir(), "modelgate-money-"))
  })
  afterAll(async () => {
    await upstream.close()
    rmSync(dir, { recursive: true, force: true })
  })

  /**
   * Starts a gateway, completes a few calls, opens slow streams whose holds are
   * provably open, kills the process with SIGKILL, and restarts it: no hold
   * remains, every balance equals its ledger, and the killed calls cost nothing.
   */
  const killAndRestart = async (database: string, name: string, options: { readonly defaultNodeId?: boolean } = {}) => {
    const port = await freePort()
    const { node_id: _, ...withoutNodeId } = processConfig(upstream.url, port, database, name)
    const config = writeConfig(
      dir,
      name,
      options.defaultNodeId === true
        // No node_id: the default, kept beside the key file.
        ? { ...withoutNodeId, secret_file: join(dir, name, "modelgate.key") }
        : processConfig(upstream.url, port, database, name)
    )
    const first = await startGatewayProcess(config, port)
    const url = first.url
    const streams: Array<AbortController> = []
    try {
      // Completed calls: charged, settled.
      for (let i = 0; i < 3; i++) {
        const done = await call(url, TOKEN_KEY, {
          model: "token-model",
          messages: [{ role: "user", content: `call ${i}` }]
        })
        assert.strictEqual(done.status, 200)
        await done.json()
      }
      const before = await assertBooks(database, "dave")
      assert.strictEqual(before.openHolds, 0)
      // In flight: five slow streams (a chunk every 1.5 s), each past its first chunk.
      const inFlight = Array.from({ length: 5 }, async () => {
        const controller = new AbortController()
        streams.push(controller)
        const response = await call(url, TOKEN_KEY, {
          model: "drip-model",
          stream: true,
          messages: [{ role: "user", content: "go on" }]
        }, controller.signal)
        assert.strictEqual(response.status, 200)
        await response.body!.getReader().read()
      })
      await Promise.all(inFlight)
      const during = await books(database, "dave")
      assert.strictEqual(during.balance, during.ledger, "the balance equals the ledger's sum")
      // The five calls hold from the process's balance lease, which is in the database.
      assert.isAtLeast(during.openHolds, 1, "a lease is open when the process dies")
      assert.isTrue(during.reserved > 0n && during.balance < before.balance, "the lease took money from the balance")
      await first.stop("SIGKILL")
      for (const controller of streams) controller.abort()
      const second = await startGatewayProcess(config, port)
      try {
        const after = await assertBooks(database, "dave")
        assert.strictEqual(after.openHolds, 0, "no hold remains after the restart")
        assert.strictEqual(after.balance, before.balance, "the calls that died with the process cost nothing")
        await assertAllBooks(database)
      } finally {
        await second.stop()
      }
    } finally {
      await first.stop("SIGKILL")
    }
  }

  it(
    "SQLite: kill -9 with calls in flight, then a restart: no hold remains and the balance equals the ledger",
    async () => {
      await killAndRestart(`sqlite:${join(dir, "killed.db")}`, "killed-sqlite")
    },
    60_000
  )

  it.skipIf(postgresUrl === undefined)(
    "PostgreSQL (set MODELGATE_TEST_POSTGRES to run): kill -9 with calls in flight, then a restart: no hold remains and the balance equals the ledger",
    async () => {
      const db = await freshPostgres(postgresUrl!)
      try {
        // The restarted process has the same node_id: at start it releases what its earlier run left.
        await killAndRestart(db.url, "killed-pg")
      } finally {
        await db.drop()
      }
    },
    60_000
  )

  it.skipIf(postgresUrl === undefined)(
    "PostgreSQL: kill -9, then a restart with the default node_id: the restarted process has the same id and releases what the killed one left (set MODELGATE_TEST_POSTGRES to run)",
    async () => {
      const db = await freshPostgres(postgresUrl!)
      try {
        // The killed process's heartbeat is seconds old: only its own id lets the restart release its lease at once.
        await killAndRestart(db.url, "killed-pg-default-id", { defaultNodeId: true })
      } finally {
        await db.drop()
      }
    },
    60_000
  )

  it.skipIf(postgresUrl === undefined)(
    "two gateway processes on one PostgreSQL never overspend one balance (set MODELGATE_TEST_POSTGRES to run)",
    async () => {
      const db = await freshPostgres(postgresUrl!)
      const ports = [await freePort(), await freePort()]
      const processes = await Promise.all(
        ports.map((port, i) =>
          startGatewayProcess(
            // The storm tests the books, not the bound on a silent database: a shared server that stalls
            // a COMMIT past 1 s (a checkpoint while other tests drop databases) 503s the calls queued
            // behind it, as it should (DatabaseOutage.e2e tests that bound).
            writeConfig(dir, `node${i}`, {
              ...processConfig(upstream.url, port, db.url, `node-${i}`),
              database_call_wait_ms: 15_000
            }),
            port
          )
        )
      )
      try {
        const urls = processes.map((p) => p.url)
        // One call per process first (another user's): the storm tests the books, not a cold start. A
        // process that has not yet heard its database answer cuts a first wait at 1 s (503, nothing
        // charged), and connecting its pool under a loaded shared server can take that long.
        for (const url of urls) {
          const warm = await call(url, TOKEN_KEY, { model: "token-model", messages: [{ role: "user", content: "hi" }] })
          assert.strictEqual(warm.status, 200)
          await warm.arrayBuffer()
        }
        upstream.clearRequests()
        const result = await storm(urls, 1000)
        assert.deepStrictEqual(result.other, [])
        assert.strictEqual(result.ok, 10)
        assert.strictEqual(result.refused, 990)
        assert.strictEqual(upstreamCalls(upstream, "flat-model"), 10)
        const b = await assertBooks(db.url, "carol", 0n)
        assert.strictEqual(b.openHolds, 0)
        await assertAllBooks(db.url)
      } finally {
        await Promise.all(processes.map((p) => p.stop()))
        await db.drop()
      }
    },
    120_000
  )
})
