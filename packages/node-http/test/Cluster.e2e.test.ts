/**
 * Two real gateway processes sharing one PostgreSQL and one Redis behave as
 * one gateway: a request limit is global (a 10 rpm key admits exactly 10 calls
 * between them), and a change made on one node is in force on the other
 * within a second: a key revoked through the admin API or the CLI, a price
 * edited, a channel disabled, a key's limit set through the admin API.
 *
 * With Redis stopped (a private redis-server), a revocation still reaches the
 * other node within a second, through the change log every node reads.
 *
 * Needs MODELGATE_TEST_POSTGRES (a fresh schema per run, dropped afterwards)
 * and MODELGATE_TEST_REDIS (keys and channel under a prefix unique to the run).
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { type FakeUpstreamServer, startFakeUpstream } from "@modelgate/fake-upstream"
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { ConfigFile } from "../src/ConfigFile.ts"
import { freshPostgres, postgresUrl } from "./support/Databases.ts"
import { freePort, type GatewayProcess, runCli, startGatewayProcess, writeConfig } from "./support/Processes.ts"
import { hasRedisServer, needsRedisServer, startRedis, stopRedis } from "./support/Redis.ts"

const redisUrl = process.env["MODELGATE_TEST_REDIS"]

const secret = (name: string) => `sk-cluster-${name}-`.padEnd(44, "0")
const KEYS = {
  limited: secret("limited"),
  main: secret("main"),
  doomed: secret("doomed"),
  cliDoomed: secret("clidoomed"),
  throttled: secret("throttled"),
  ops: secret("ops")
} as const

const clusterConfig = (upstream: string, database: string, redis: string, prefix: string): ConfigFile => ({
  log_level: "error",
  database,
  redis,
  redis_key_prefix: prefix,
  channels: [{ name: "up", type: "openai", base_url: `${upstream}/v1`, api_key: "sk-up", models: ["flat-model"] }],
  models: { "flat-model": { per_request: 0.01 } },
  users: [
    {
      name: "alice",
      balance: 100,
      password: "alice's password",
      keys: [
        { name: "limited", secret: KEYS.limited, rpm: 10 },
        { name: "main", secret: KEYS.main },
        { name: "doomed", secret: KEYS.doomed },
        { name: "cli-doomed", secret: KEYS.cliDoomed },
        { name: "throttled", secret: KEYS.throttled }
      ]
    },
    { name: "root", role: "admin", keys: [{ name: "ops", secret: KEYS.ops }] }
  ]
})

const chat = (url: string, key: string) =>
  fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "flat-model", max_tokens: 5, messages: [{ role: "user", content: "hi" }] })
  })

/** The management API, with an API key (a string) or a console session's headers. */
const api = async (
  url: string,
  auth: string | Record<string, string>,
  method: string,
  path: string,
  body?: unknown
) => {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: {
      ...(typeof auth === "string" ? { authorization: `Bearer ${auth}` } : auth),
      ...(body === undefined ? {} : { "content-type": "application/json" })
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  return { status: response.status, body: (await response.json()) as any }
}

/** Alice's console session on a node: what changing her keys needs (an API key only reads). */
const aliceSession = async (url: string): Promise<Record<string, string>> => {
  const login = await fetch(`${url}/api/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ username: "alice", password: "alice's password" })
  })
  const { csrfToken } = await login.json() as { csrfToken: string }
  return { cookie: login.headers.get("set-cookie")!.split(";")[0]!, "x-csrf-token": csrfToken }
}

/**
 * Milliseconds from now until `check` holds, polling every 20 ms; fails after
 * 5 s (the assertion on the time is the caller's).
 */
const timeUntil = async (check: () => Promise<boolean>): Promise<number> => {
  const started = performance.now()
  while (!(await check())) {
    if (performance.now() - started > 5_000) throw new Error("the change never took effect on the other node")
    await new Promise((r) => setTimeout(r, 20))
  }
  return performance.now() - started
}

const statusOf = async (response: Response): Promise<number> => {
  await response.arrayBuffer()
  return response.status
}

describe.skipIf(postgresUrl === undefined || redisUrl === undefined)(
  "two gateway processes on one PostgreSQL and one Redis (set MODELGATE_TEST_POSTGRES and MODELGATE_TEST_REDIS to run)",
  () => {
    const postgres = postgresUrl!
    const redis = redisUrl!
    let upstream: FakeUpstreamServer
    let dir: string
    let drop: () => Promise<void>
    let a: GatewayProcess
    let b: GatewayProcess

    beforeAll(async () => {
      upstream = await startFakeUpstream({ port: 0 })
      dir = mkdtempSync(join(tmpdir(), "modelgate-cluster-"))
      const db = await freshPostgres(postgres)
      drop = db.drop
      const prefix = `modelgate-test-${randomBytes(6).toString("hex")}:`
      const base = clusterConfig(upstream.url, db.url, redis, prefix)
      const ports = [await freePort(), await freePort()] // Both start at once: migrations and provisioning run once between them.
      ;[a, b] = await Promise.all(
        ports.map((port, i) =>
          startGatewayProcess(
            writeConfig(dir, `node${i}`, { ...base, listen: `127.0.0.1:${port}`, node_id: `node-${i}` }),
            port
          )
        )
      ) as [GatewayProcess, GatewayProcess]
    }, 120_000)

    afterAll(async () => {
      await Promise.all([a?.stop(), b?.stop()])
      await drop?.()
      await upstream?.close()
      rmSync(dir, { recursive: true, force: true })
    })

    it("a 10 requests-per-minute key admits exactly 10 calls between the two processes", async () => {
      const statuses = await Promise.all(
        Array.from({ length: 24 }, (_, i) => chat(i % 2 === 0 ? a.url : b.url, KEYS.limited).then(statusOf))
      )
      assert.strictEqual(statuses.filter((s) => s === 200).length, 10)
      assert.strictEqual(statuses.filter((s) => s === 429).length, 14)
      // Both nodes refuse it now.
      const onA = await chat(a.url, KEYS.limited)
      const onB = await chat(b.url, KEYS.limited)
      assert.strictEqual(onA.status, 429)
      assert.strictEqual(onB.status, 429)
      assert.strictEqual(onB.headers.get("x-ratelimit-limit-requests"), "10")
      assert.strictEqual(onB.headers.get("x-ratelimit-remaining-requests"), "0")
      assert.match(
        ((await onB.json()) as { error: { message: string } }).error.message,
        /your API key 'limited': 10 requests per minute/
      )
      await onA.arrayBuffer()
    })

    it("a key deleted through the admin API on node A is refused by node B within a second", async () => {
      assert.strictEqual(await statusOf(await chat(b.url, KEYS.doomed)), 200, "node B knows the key")
      const session = await aliceSession(a.url)
      const listed = await api(a.url, session, "GET", "/api/keys")
      const doomed = listed.body.data.find((k: { name: string }) => k.name === "doomed")
      assert.strictEqual((await api(a.url, session, "DELETE", `/api/keys/${doomed.id}`)).status, 200)
      const elapsed = await timeUntil(async () => await statusOf(await chat(b.url, KEYS.doomed)) === 401)
      assert.isBelow(elapsed, 1_000)
    })

    it("a key revoked with the CLI is refused by both nodes within a second", async () => {
      assert.strictEqual(await statusOf(await chat(a.url, KEYS.cliDoomed)), 200)
      assert.strictEqual(await statusOf(await chat(b.url, KEYS.cliDoomed)), 200)
      const listed = await api(a.url, await aliceSession(a.url), "GET", "/api/keys")
      const id = listed.body.data.find((k: { name: string }) => k.name === "cli-doomed").id
      const revoked = await runCli(["keys", "revoke", id, "--config", join(dir, "node0.json")])
      assert.strictEqual(revoked.code, 0, revoked.stderr)
      const elapsed = await timeUntil(async () =>
        await statusOf(await chat(a.url, KEYS.cliDoomed)) === 401 &&
        await statusOf(await chat(b.url, KEYS.cliDoomed)) === 401
      )
      assert.isBelow(elapsed, 1_000)
    })

    it("a price edited on node A is charged by node B within a second", async () => {
      const prices = { input: null, output: null, cachedInput: null, perRequest: "0.05", free: false }
      assert.strictEqual(
        (await api(a.url, KEYS.ops, "POST", "/api/admin/models", { id: "flat-model", prices })).status,
        200
      )
      const elapsed = await timeUntil(async () => {
        const models = await api(b.url, KEYS.main, "GET", "/api/models")
        return models.body.groups[0].models.find((m: { id: string }) => m.id === "flat-model")?.prices.perRequest ===
          "0.05"
      })
      assert.isBelow(elapsed, 1_000)
      // And B bills it: one call costs the new price. (Its usage record says so; the balance would also move
      // with the earlier tests' calls whose charges node A's writer has not written yet.)
      const call = await chat(b.url, KEYS.main)
      assert.strictEqual(await statusOf(call), 200)
      const requestId = call.headers.get("x-request-id")
      let record: { requestId: string; cost: string } | undefined
      await timeUntil(async () => {
        const usage = await api(b.url, KEYS.main, "GET", "/api/usage?limit=5")
        record = usage.body.data.find((r: { requestId: string }) => r.requestId === requestId)
        return record !== undefined
      })
      assert.strictEqual(record!.cost, "0.05")
    })

    it("a channel disabled on node A stops serving on node B within a second, and serves again once enabled", async () => {
      const channels = await api(a.url, KEYS.ops, "GET", "/api/admin/channels")
      const id = channels.body.data.find((c: { name: string }) => c.name === "up").id
      assert.strictEqual(
        (await api(a.url, KEYS.ops, "PATCH", `/api/admin/channels/${id}`, { enabled: false })).status,
        200
      )
      const off = await timeUntil(async () => await statusOf(await chat(b.url, KEYS.main)) !== 200)
      assert.isBelow(off, 1_000)
      assert.strictEqual(
        (await api(a.url, KEYS.ops, "PATCH", `/api/admin/channels/${id}`, { enabled: true })).status,
        200
      )
      const on = await timeUntil(async () => await statusOf(await chat(b.url, KEYS.main)) === 200)
      assert.isBelow(on, 1_000)
    })

    it("a key limit set through the admin API on node A holds on node B within a second", async () => {
      const listed = await api(a.url, await aliceSession(a.url), "GET", "/api/keys")
      const id = listed.body.data.find((k: { name: string }) => k.name === "throttled").id
      const set = await api(a.url, KEYS.ops, "PATCH", `/api/admin/keys/${id}`, { rpm: 1 })
      assert.strictEqual(set.status, 200)
      assert.strictEqual(set.body.rpm, 1)
      const elapsed = await timeUntil(async () =>
        (await chat(b.url, KEYS.throttled)).headers.get("x-ratelimit-limit-requests") === "1"
      )
      assert.isBelow(elapsed, 1_000)
      assert.strictEqual(await statusOf(await chat(a.url, KEYS.throttled)), 429)
    })
  }
)

describe.skipIf(postgresUrl === undefined || !hasRedisServer)(
  `two gateway processes while Redis is down (set MODELGATE_TEST_POSTGRES to run; ${needsRedisServer})`,
  () => {
    const postgres = postgresUrl!
    it("a key deleted on node A is refused by node B within a second, through the change log", async () => {
      const upstream = await startFakeUpstream({ port: 0 })
      const dir = mkdtempSync(join(tmpdir(), "modelgate-cluster-down-"))
      const db = await freshPostgres(postgres)
      const redisPort = await freePort()
      const redisServer = await startRedis(redisPort)
      const nodes: Array<GatewayProcess> = []
      try {
        const base = clusterConfig(upstream.url, db.url, `redis://127.0.0.1:${redisPort}`, "modelgate-down:")
        const ports = [await freePort(), await freePort()]
        nodes.push(
          ...await Promise.all(ports.map((port, i) =>
            startGatewayProcess(
              writeConfig(dir, `node${i}`, { ...base, listen: `127.0.0.1:${port}`, node_id: `node-${i}` }),
              port
            )
          ))
        )
        const [a, b] = nodes as [GatewayProcess, GatewayProcess]
        assert.strictEqual(await statusOf(await chat(b.url, KEYS.doomed)), 200)
        await stopRedis(redisServer)
        const session = await aliceSession(a.url)
        const listed = await api(a.url, session, "GET", "/api/keys")
        const doomed = listed.body.data.find((k: { name: string }) => k.name === "doomed")
        assert.strictEqual((await api(a.url, session, "DELETE", `/api/keys/${doomed.id}`)).status, 200)
        const elapsed = await timeUntil(async () => await statusOf(await chat(b.url, KEYS.doomed)) === 401)
        assert.isBelow(elapsed, 1_000)
        // Calls go on meanwhile (redis_failure: local limits per process).
        assert.strictEqual(await statusOf(await chat(b.url, KEYS.main)), 200)
      } finally {
        await Promise.all(nodes.map((node) => node.stop()))
        await stopRedis(redisServer)
        await db.drop()
        await upstream.close()
        rmSync(dir, { recursive: true, force: true })
      }
    }, 120_000)
  }
)
