/**
 * Money through the real server: holds that never overspend under
 * concurrency (SQLite, PostgreSQL, and two gateway processes on one
 * PostgreSQL), the insufficient-quota answer, per-key spending caps, charging
 * for what a cut stream delivered, nothing charged for a failed call, and the
 * balance always equal to the ledger's sum.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import type { FakeUpstreamServer } from "@modelgate/fake-upstream"
import { startFakeUpstream } from "@modelgate/fake-upstream"
import OpenAI from "openai"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { ConfigFile } from "../src/ConfigFile.ts"
import { books, freshPostgres, postgresUrl } from "./support/Databases.ts"
import { startGateway, type TestGateway } from "./support/Gateway.ts"

const FLAT_KEY = "sk-money-carol-flat-0000000000000000000000000"
const CAPPED_KEY = "sk-money-carol-capped-00000000000000000000000"
const DAILY_KEY = "sk-money-carol-daily-000000000000000000000000"
const TOKEN_KEY = "sk-money-dave-tokens-000000000000000000000000"
const ADMIN_KEY = "sk-money-root-admin-0000000000000000000000000"

/** carol can pay for exactly 10 calls of a 0.01 USD flat-priced model. */
const moneyConfig = (upstream: string): ConfigFile => ({
  listen: "127.0.0.1:0",
  log_level: "error",
  channels: [
    {
      name: "up",
      type: "openai",
      base_url: `${upstream}/v1`,
      api_key: "sk-up",
      models: ["flat-model", "token-model", "cut-model", "broken-model"],
      model_map: { "cut-model": "gpt-cut-5", "broken-model": "gpt-fail-500" }
    }
  ],
  models: {
    "flat-model": { per_request: 0.01 },
    "token-model": { input: 1, output: 2 },
    "cut-model": { input: 1, output: 2 },
    "broken-model": { input: 1, output: 2 }
  },
  users: [
    { name: "carol", balance: 0.1, keys: [{ name: "flat", secret: FLAT_KEY }] },
    {
      name: "erin",
      balance: 5,
      keys: [
        { name: "capped", secret: CAPPED_KEY, quota: 0.03 },
        { name: "daily", secret: DAILY_KEY, daily_budget: 0.02 }
      ]
    },
    { name: "dave", balance: 5, keys: [{ name: "tokens", secret: TOKEN_KEY }] },
    { name: "root", role: "admin", keys: [{ name: "ops", secret: ADMIN_KEY }] }
  ]
})

const call = (url: string, key: string, body: unknown) =>
  fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body)
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

const assertBooks = async (database: string, user: string, balance?: bigint) => {
  const b = await books(database, user)
  assert.strictEqual(b.balance, b.ledger, "the balance equals the ledger's sum")
  assert.isAtLeast(Number(b.balance), 0)
  if (balance !== undefined) assert.strictEqual(b.balance, balance)
  return b
}

describe("money on SQLite", () => {
  let gateway: TestGateway
  beforeAll(async () => {
    gateway = await startGateway(moneyConfig)
  })
  afterAll(async () => {
    await gateway.close()
  })

  it("1,000 concurrent calls against a balance that pays for 10: exactly 10 succeed, the balance ends at zero", async () => {
    const result = await storm([gateway.url], 1000)
    assert.deepStrictEqual(result.other, [])
    assert.strictEqual(result.ok, 10)
    assert.strictEqual(result.refused, 990)
    const b = await assertBooks(gateway.database, "carol", 0n)
    assert.strictEqual(b.openHolds, 0)
  }, 120_000)

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

  it("enforces a key's lifetime quota and daily budget, naming the cap", async () => {
    const statuses: Array<number> = []
    for (let i = 0; i < 4; i++) statuses.push((await call(gateway.url, CAPPED_KEY, flat)).status)
    assert.deepStrictEqual(statuses, [200, 200, 200, 429])
    const refused = await (await call(gateway.url, CAPPED_KEY, flat)).json() as { error: { code: string; message: string } }
    assert.strictEqual(refused.error.code, "insufficient_quota")
    assert.match(refused.error.message, /lifetime spending cap of 0\.03 USD/)
    assert.strictEqual((await call(gateway.url, DAILY_KEY, flat)).status, 200)
    assert.strictEqual((await call(gateway.url, DAILY_KEY, flat)).status, 200)
    const daily = await call(gateway.url, DAILY_KEY, flat)
    assert.strictEqual(daily.status, 429)
    assert.match((await daily.json() as { error: { message: string } }).error.message, /daily budget of 0\.02 USD/)
    await assertBooks(gateway.database, "erin", 5_000_000_000n - 5n * 10_000_000n)
  })

  it("credits a redemption code once when 50 connections redeem it at the same time", async () => {
    const generated = await fetch(`${gateway.url}/api/admin/codes`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN_KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ count: 1, amount: "1.25" })
    })
    assert.strictEqual(generated.status, 201)
    const [code] = (await generated.json() as { codes: Array<string> }).codes
    const before = await books(gateway.database, "dave")
    const statuses = await Promise.all(Array.from({ length: 50 }, () =>
      fetch(`${gateway.url}/api/redeem`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN_KEY}`, "content-type": "application/json" },
        body: JSON.stringify({ code })
      }).then((r) => r.status)))
    assert.strictEqual(statuses.filter((s) => s === 200).length, 1)
    assert.strictEqual(statuses.filter((s) => s === 400).length, 49)
    const after = await assertBooks(gateway.database, "dave")
    assert.strictEqual(after.balance - before.balance, 1_250_000_000n)
  })

  it("answers the legacy billing endpoints that chat apps read", async () => {
    const headers = { authorization: `Bearer ${TOKEN_KEY}` }
    const subscription = await (await fetch(`${gateway.url}/v1/dashboard/billing/subscription`, { headers })).json() as {
      hard_limit_usd: number
      access_until: number
    }
    const today = new Date().toISOString().slice(0, 10)
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10)
    const usage = await (await fetch(`${gateway.url}/v1/dashboard/billing/usage?start_date=${today}&end_date=${tomorrow}`, { headers }))
      .json() as { total_usage: number }
    const b = await books(gateway.database, "dave")
    // remaining = hard limit - used, and equals the balance
    assert.closeTo(subscription.hard_limit_usd - usage.total_usage / 100, Number(b.balance) / 1e9, 1e-6)
    assert.strictEqual(subscription.access_until, 0)
    const bad = await fetch(`${gateway.url}/v1/dashboard/billing/usage?start_date=yesterday`, { headers })
    assert.strictEqual(bad.status, 400)
  })

  it("charges the actual usage, not the hold, and nothing for a failed call", async () => {
    const before = await books(gateway.database, "dave")
    const response = await call(gateway.url, TOKEN_KEY, { model: "token-model", messages: [{ role: "user", content: "hi" }] })
    const body = await response.json() as { usage: { prompt_tokens: number; completion_tokens: number } }
    const after = await assertBooks(gateway.database, "dave")
    // input 1 USD and output 2 USD per million tokens: 1000 and 2000 nano-dollars per token
    const expected = BigInt(body.usage.prompt_tokens) * 1000n + BigInt(body.usage.completion_tokens) * 2000n
    assert.strictEqual(before.balance - after.balance, expected)
    const failed = await call(gateway.url, TOKEN_KEY, { model: "broken-model", messages: [{ role: "user", content: "hi" }] })
    assert.strictEqual(failed.status, 502)
    const afterFailure = await assertBooks(gateway.database, "dave")
    assert.strictEqual(afterFailure.balance, after.balance)
    assert.strictEqual(afterFailure.openHolds, 0)
  })

  it("charges a stream cut by the upstream for what it delivered", async () => {
    const before = await books(gateway.database, "dave")
    const response = await call(gateway.url, TOKEN_KEY, { model: "cut-model", stream: true, messages: [{ role: "user", content: "hi" }] })
    const text = await response.text()
    const delivered = [...text.matchAll(/"content":"((?:[^"\\]|\\.)*)"/g)].map((m) => JSON.parse(`"${m[1]}"`) as string).join("")
    assert.isAbove(delivered.length, 0)
    const after = await assertBooks(gateway.database, "dave")
    const charged = before.balance - after.balance
    // No usage came (the stream was cut): the charge is for the delivered text's estimate, at 2000 nano-dollars per token,
    // plus the prompt estimate at 1000 per token.
    assert.isTrue(charged >= BigInt(Math.ceil(delivered.length / 4)) * 2000n, `charged ${charged}`)
    assert.isTrue(charged < 1_000_000n, `charged ${charged}`)
    assert.strictEqual(after.openHolds, 0)
  })

  it("charges a stream the client abandons for what was generated", async () => {
    const before = await books(gateway.database, "dave")
    const controller = new AbortController()
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: "POST",
      signal: controller.signal,
      headers: { authorization: `Bearer ${TOKEN_KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "token-model", stream: true, messages: [{ role: "user", content: "hi" }] })
    })
    const reader = response.body!.getReader()
    await reader.read()
    controller.abort()
    await new Promise((r) => setTimeout(r, 300))
    const after = await assertBooks(gateway.database, "dave")
    assert.isTrue(before.balance - after.balance > 0n, "something was charged")
    assert.strictEqual(after.openHolds, 0)
  })
})

describe.skipIf(postgresUrl === undefined)("money on PostgreSQL (set MODELGATE_TEST_POSTGRES to run)", () => {
  let gateway: TestGateway
  let drop: () => Promise<void>
  beforeAll(async () => {
    const db = await freshPostgres(postgresUrl!)
    drop = db.drop
    gateway = await startGateway(moneyConfig, db.url)
  })
  afterAll(async () => {
    await gateway?.close()
    await drop?.()
  })

  it("1,000 concurrent calls against a balance that pays for 10: exactly 10 succeed", async () => {
    const result = await storm([gateway.url], 1000)
    assert.deepStrictEqual(result.other, [])
    assert.strictEqual(result.ok, 10)
    assert.strictEqual(result.refused, 990)
    const b = await assertBooks(gateway.database, "carol", 0n)
    assert.strictEqual(b.openHolds, 0)
  }, 120_000)
})

// ---------------------------------------------------------------------------
// Real processes
// ---------------------------------------------------------------------------

const bin = join(import.meta.dirname, "..", "src", "bin.ts")
const SECRET = "money-test-secret-0123456789abcdef"

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port
      server.close(() => resolve(port))
    })
  })

const startProcess = async (config: string) => {
  const child = spawn(process.execPath, [bin, "serve", "--config", config], {
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, MODELGATE_SECRET: SECRET }
  })
  let errors = ""
  child.stderr!.on("data", (d) => errors += d)
  return { child, errors: () => errors }
}

const waitHealthy = async (url: string, child: ChildProcess) => {
  for (let i = 0; i < 150; i++) {
    if (child.exitCode !== null) throw new Error("the gateway exited")
    try {
      if ((await fetch(`${url}/healthz`)).ok) return
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error("the gateway did not become healthy")
}

const writeConfig = (dir: string, name: string, port: number, database: string, upstream: string, nodeId: string) => {
  const file = join(dir, `${name}.json`)
  writeFileSync(file, JSON.stringify({ ...moneyConfig(upstream), listen: `127.0.0.1:${port}`, database, node_id: nodeId }))
  return file
}

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

  it("kill -9 during calls, then a restart: no hold remains and the balance equals the ledger", async () => {
    const port = await freePort()
    const database = `sqlite:${join(dir, "killed.db")}`
    const config = writeConfig(dir, "killed", port, database, upstream.url, "killed")
    const first = await startProcess(config)
    const url = `http://127.0.0.1:${port}`
    await waitHealthy(url, first.child)
    // Slow streams keep their holds open while the process dies.
    const slow = Array.from({ length: 5 }, () =>
      call(url, TOKEN_KEY, { model: "token-model", stream: true, messages: [{ role: "user", content: "hi" }] })
        .then((r) => r.body?.getReader().read())
        .catch(() => undefined))
    await Promise.all(slow)
    first.child.kill("SIGKILL")
    await new Promise((r) => first.child.on("exit", r))
    const second = await startProcess(config)
    await waitHealthy(url, second.child)
    const b = await assertBooks(database, "dave")
    assert.strictEqual(b.openHolds, 0)
    second.child.kill("SIGTERM")
    await new Promise((r) => second.child.on("exit", r))
  }, 60_000)

  it.skipIf(postgresUrl === undefined)("two gateway processes on one PostgreSQL never overspend one balance", async () => {
    const db = await freshPostgres(postgresUrl!)
    const ports = [await freePort(), await freePort()]
    const processes = await Promise.all(
      ports.map((port, i) => startProcess(writeConfig(dir, `node${i}`, port, db.url, upstream.url, `node-${i}`)))
    )
    try {
      const urls = ports.map((port) => `http://127.0.0.1:${port}`)
      await Promise.all(urls.map((url, i) => waitHealthy(url, processes[i]!.child)))
      const result = await storm(urls, 1000)
      assert.deepStrictEqual(result.other, [])
      assert.strictEqual(result.ok, 10)
      assert.strictEqual(result.refused, 990)
      const b = await assertBooks(db.url, "carol", 0n)
      assert.strictEqual(b.openHolds, 0)
    } finally {
      for (const p of processes) p.child.kill("SIGTERM")
      await Promise.all(processes.map((p) => new Promise((r) => p.child.exitCode !== null ? r(null) : p.child.on("exit", r))))
      await db.drop()
    }
  }, 120_000)
})
