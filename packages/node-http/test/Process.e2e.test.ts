/**
 * The real binary as operators run it: `modelgate serve --config FILE` starts,
 * answers health checks, refuses an invalid configuration with a message that
 * names the file and field, and on SIGTERM lets an in-flight stream finish
 * before exiting 0 and writes every queued usage record before it exits;
 * `/readyz` turns 503 while it drains, the grace period cuts a stream that
 * outlives it (which is still settled), the demo run works as printed on its
 * own database and refuses to run anywhere else, and the CLI's
 * balance adjustments name the operating-system user in the ledger.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { type FakeUpstreamServer, startFakeUpstream } from "@modelgate/fake-upstream"
import * as UsageJournal from "@modelgate/store/UsageJournal"
import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createServer, type Socket } from "node:net"
import { tmpdir, userInfo } from "node:os"
import { join } from "node:path"
import { DatabaseSync } from "node:sqlite"
import { startPgProxy } from "../../store/test/support/PgProxy.ts"
import { runSql } from "./support/Databases.ts"
import { freePort } from "./support/Processes.ts"

const bin = join(import.meta.dirname, "..", "src", "bin.ts")
const KEY = "sk-process-test-00000000000000000000000000000"
let upstream: FakeUpstreamServer
let dir: string

const runToEnd = (args: Array<string>) =>
  new Promise<{ readonly code: number | null; readonly stdout: string; readonly stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [bin, ...args], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, MODELGATE_SECRET: "process-test-secret-0123456789abcdef" }
    })
    let stdout = ""
    let stderr = ""
    child.stdout!.on("data", (d) => stdout += d)
    child.stderr!.on("data", (d) => stderr += d)
    child.on("exit", (code) => resolve({ code, stdout, stderr }))
  })

const run = (args: Array<string>, options: { readonly cwd?: string; readonly env?: Record<string, string> } = {}) => {
  const env: Record<string, string | undefined> = {
    ...process.env,
    MODELGATE_SECRET: "process-test-secret-0123456789abcdef"
  }
  for (const variable of ["MODELGATE_CONFIG", "MODELGATE_DATABASE", "MODELGATE_LISTEN", "MODELGATE_REDIS"]) {
    delete env[variable]
  }
  Object.assign(env, options.env)
  const child = spawn(process.execPath, [bin, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    env,
    ...(options.cwd !== undefined ? { cwd: options.cwd } : {})
  })
  let output = ""
  child.stdout!.on("data", (d) => output += d)
  child.stderr!.on("data", (d) => output += d)
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
  return { child, exited, output: () => output }
}

const chat = (url: string, body: unknown, key = KEY) =>
  fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body)
  })

/** A key of the same user with a spending cap: its calls hold and settle in the database, not from a lease. */
const CAPPED_KEY = "sk-process-capped-key-0000000000000000000000"

/** A configuration with one key (KEY) whose user has 5 USD, and models steering the fake upstream. */
const gatewayYaml = (port: number, database: string, extra: Array<string>) =>
  [
    `listen: 127.0.0.1:${port}`,
    `database: sqlite:${database}`,
    ...extra,
    "channels:",
    "  - name: up",
    "    type: openai",
    `    base_url: ${upstream.url}/v1`,
    "    api_key: sk-up",
    "    models: [gpt-4o-mini, stalling]",
    "    model_map: {stalling: gpt-stall-3}",
    "models:",
    "  gpt-4o-mini: {input: 1, output: 1}",
    "  stalling: {input: 1, output: 1}",
    "users:",
    "  - name: ops",
    "    balance: 5",
    "    keys:",
    `      - {name: k, secret: ${KEY}}`,
    `      - {name: capped, secret: ${CAPPED_KEY}, quota: 1}`,
    ""
  ].join("\n")

const waitHealthy = async (url: string, child: ChildProcess) => {
  for (let i = 0; i < 100; i++) {
    if (child.exitCode !== null) throw new Error("the gateway exited")
    try {
      if ((await fetch(`${url}/healthz`)).ok) return
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error("the gateway did not become healthy")
}

beforeAll(async () => {
  upstream = await startFakeUpstream({ port: 0 })
  dir = mkdtempSync(join(tmpdir(), "modelgate-process-"))
})
afterAll(async () => {
  await upstream.close()
  rmSync(dir, { recursive: true, force: true })
})

describe("the modelgate process", () => {
  it("creates, lists and revokes keys and adjusts balances from the command line, in force on a running server", async () => {
    const port = await freePort()
    const file = join(dir, "cli.yaml")
    writeFileSync(
      file,
      [
        `listen: 127.0.0.1:${port}`,
        `database: sqlite:${join(dir, "cli.db")}`,
        "log_level: error",
        "channels:",
        "  - {name: up, type: openai, base_url: " + `${upstream.url}/v1` + ", api_key: k, models: [gpt-4o-mini]}",
        "models:",
        "  gpt-4o-mini: {input: 1, output: 1}",
        "users:",
        "  - {name: olga, balance: 1}",
        ""
      ].join("\n")
    )
    const server = run(["serve", "--config", file])
    const url = `http://127.0.0.1:${port}`
    try {
      await waitHealthy(url, server.child)
      const created = await runToEnd([
        "keys",
        "create",
        "--config",
        file,
        "--user",
        "olga",
        "--name",
        "laptop",
        "--models",
        "gpt-4o-mini"
      ])
      assert.strictEqual(created.code, 0, created.stderr)
      const secret = created.stdout.trim()
      assert.match(secret, /^sk-[0-9A-Za-z]{43}$/)
      assert.include(created.stderr, "shown only this once")
      const me = async () => fetch(`${url}/api/me`, { headers: { authorization: `Bearer ${secret}` } })
      assert.strictEqual((await me()).status, 200)

      const listed = await runToEnd(["keys", "list", "--config", file, "--user", "olga"])
      assert.strictEqual(listed.code, 0, listed.stderr)
      assert.notInclude(listed.stdout, secret)
      const id = /^(key_\S+)\s.*laptop/m.exec(listed.stdout)?.[1]
      assert.isString(id, listed.stdout)

      const adjusted = await runToEnd([
        "users",
        "adjust",
        "olga",
        "--config",
        file,
        "--amount",
        "2.5",
        "--reason",
        "top-up"
      ])
      assert.strictEqual(adjusted.code, 0, adjusted.stderr)
      assert.include(adjusted.stdout, "3.50 USD")
      const actors = await runSql(
        `sqlite:${join(dir, "cli.db")}`,
        (sql) => sql`SELECT actor, reason, amount_nanos FROM ledger WHERE kind = 'adjustment'`
      )
      assert.deepStrictEqual(
        actors.map((row) => [row.actor, row.reason, String(row.amount_nanos)]),
        [[`cli:${userInfo().username}`, "top-up", "2500000000"]],
        "the ledger names who adjusted the balance: the operating-system user of the CLI"
      )

      const revoked = await runToEnd(["keys", "revoke", id!, "--config", file])
      assert.strictEqual(revoked.code, 0, revoked.stderr)
      let status = 200
      for (let i = 0; i < 40 && status === 200; i++) {
        await new Promise((r) => setTimeout(r, 100))
        status = (await me()).status
      }
      assert.strictEqual(
        status,
        401,
        "the running server stops accepting the revoked key (it reads the change log every 500 ms)"
      )

      const unknown = await runToEnd(["keys", "create", "--config", file, "--user", "nobody"])
      assert.notStrictEqual(unknown.code, 0)
      assert.include(unknown.stderr, "No user named 'nobody'")

      const group = await runToEnd(["keys", "create", "--config", file, "--user", "olga", "--group", "gold"])
      assert.notStrictEqual(group.code, 0)
      assert.include(group.stderr, "--group: no group named 'gold'. Groups: 'default'.")
      const models = await runToEnd([
        "keys",
        "create",
        "--config",
        file,
        "--user",
        "olga",
        "--models",
        "gpt-4o-mini,gpt-5,o3"
      ])
      assert.notStrictEqual(models.code, 0)
      assert.include(models.stderr, "--models: unknown models 'gpt-5', 'o3'. Models: 'gpt-4o-mini'.")
      const listedAfter = await runToEnd(["keys", "list", "--config", file, "--user", "olga"])
      assert.strictEqual(listedAfter.stdout.trim().split("\n").length, 2, "no key was created by the refused commands")
    } finally {
      server.child.kill("SIGTERM")
      await server.exited
    }
  })

  it("a restart does not undo what was done since: a key revoked with the CLI stays revoked, and the log says the file disagrees", async () => {
    const port = await freePort()
    const file = join(dir, "restart.yaml")
    const key = "sk-restart-test-key-0000000000000000000000"
    writeFileSync(
      file,
      [
        `listen: 127.0.0.1:${port}`,
        `database: sqlite:${join(dir, "restart.db")}`,
        "log_format: json",
        "channels:",
        "  - {name: up, type: openai, base_url: " + `${upstream.url}/v1` + ", api_key: k, models: [gpt-4o-mini]}",
        "models:",
        "  gpt-4o-mini: {input: 1, output: 1}",
        "users:",
        `  - {name: pat, balance: 1, keys: [{name: laptop, secret: ${key}}]}`,
        ""
      ].join("\n")
    )
    const url = `http://127.0.0.1:${port}`
    const me = async () => (await fetch(`${url}/api/me`, { headers: { authorization: `Bearer ${key}` } })).status
    const first = run(["serve", "--config", file])
    try {
      await waitHealthy(url, first.child)
      assert.strictEqual(await me(), 200)
    } finally {
      first.child.kill("SIGTERM")
      await first.exited
    }
    const listed = await runToEnd(["keys", "list", "--config", file, "--user", "pat"])
    const id = /^(key_\S+)\s.*laptop/m.exec(listed.stdout)?.[1]
    assert.isString(id, listed.stdout)
    assert.strictEqual((await runToEnd(["keys", "revoke", id!, "--config", file])).code, 0)

    const second = run(["serve", "--config", file])
    try {
      await waitHealthy(url, second.child)
      assert.strictEqual(await me(), 401, "the revoked key stays revoked after the restart")
      // Log lines are written in batches every 100 ms.
      for (let i = 0; i < 50 && !second.output().includes("disagree"); i++) await new Promise((r) => setTimeout(r, 50))
      const warning = second.output().split("\n").find((line) => line.includes("disagree"))
      assert.isDefined(warning, second.output())
      const logged = JSON.parse(warning!) as { level: string; annotations: Record<string, string> }
      assert.strictEqual(logged.level, "WARN")
      assert.strictEqual(logged.annotations["entry"], "keys:pat/laptop")
      assert.include(logged.annotations["detail"], "revocation is final")
    } finally {
      second.child.kill("SIGTERM")
      await second.exited
    }
  })

  it("usage replay writes a journal a node left to the database once, and marks the file replayed", async () => {
    const port = await freePort()
    const database = join(dir, "replay.db")
    const file = join(dir, "replay.yaml")
    writeFileSync(
      file,
      [
        `listen: 127.0.0.1:${port}`,
        `database: sqlite:${database}`,
        "log_level: error",
        "users:",
        "  - {name: rita, balance: 1}",
        ""
      ].join("\n")
    )
    const server = run(["serve", "--config", file])
    try {
      await waitHealthy(`http://127.0.0.1:${port}`, server.child)
    } finally {
      server.child.kill("SIGTERM")
      await server.exited
    }
    const userId = String(
      (await runSql(`sqlite:${database}`, (sql) => sql`SELECT id FROM users WHERE name = 'rita'`))[0]!.id
    )
    // What a node on another machine kept on disk when the database would not answer.
    const journal = UsageJournal.make(join(dir, "copied-journal"), "node-elsewhere", 7)
    await Effect.runPromise(journal.append([0, 1, 2].flatMap((i) => [
      {
        _tag: "Usage" as const,
        record: {
          createdAt: 1_700_000_000_000,
          requestId: `req-elsewhere-${i}`,
          userId,
          keyId: "key-x",
          model: "m",
          upstreamModel: "m",
          channel: "c",
          dialectIn: "openai" as const,
          dialectOut: "openai" as const,
          stream: false,
          promptTokens: 1,
          completionTokens: 1,
          cachedTokens: 0,
          usageReported: true,
          costNanos: 250_000_000n,
          latencyMs: 1,
          ttfbMs: null,
          status: 200,
          errorCode: null,
          attempts: 1,
          attemptLog: []
        }
      },
      {
        _tag: "Charge" as const,
        charge: {
          leaseId: null,
          userId,
          keyId: "key-x",
          requestId: `req-elsewhere-${i}`,
          chargedNanos: 250_000_000n,
          shortfallNanos: 0n,
          at: 1_700_000_000_000
        }
      }
    ])))
    const replayed = await runToEnd(["usage", "replay", "--config", file, journal.path])
    assert.strictEqual(replayed.code, 0, replayed.stderr)
    assert.include(replayed.stdout, "6 usage record(s), charge(s) and lease release(s) written")
    assert.isTrue(existsSync(`${journal.path}.replayed`))
    // The same file again (a copy kept by mistake): nothing is written twice.
    copyFileSync(`${journal.path}.replayed`, journal.path)
    assert.strictEqual((await runToEnd(["usage", "replay", "--config", file, journal.path])).code, 0)
    const books = await runSql(
      `sqlite:${database}`,
      (sql) =>
        sql`SELECT u.balance_nanos AS balance, (SELECT SUM(amount_nanos) FROM ledger WHERE user_id = u.id) AS ledger,
          (SELECT COUNT(*) FROM usage_records) AS records FROM users u WHERE u.name = 'rita'`
    )
    assert.deepStrictEqual([String(books[0]!.balance), String(books[0]!.ledger), Number(books[0]!.records)], [
      "250000000",
      "250000000",
      3
    ])
  })

  it("opens a Redis connection only for commands that write (to announce them), not for `keys list`", async () => {
    // Stands in for Redis: counts the connections made to it (and answers nothing).
    const sockets: Array<Socket> = []
    const redis = createServer((socket) => void sockets.push(socket))
    await new Promise<void>((resolve) => redis.listen(0, "127.0.0.1", resolve))
    const file = join(dir, "redis-cli.yaml")
    writeFileSync(
      file,
      [
        `database: sqlite:${join(dir, "redis-cli.db")}`,
        `redis: redis://127.0.0.1:${(redis.address() as { port: number }).port}`,
        "log_level: error",
        ""
      ].join("\n")
    )
    try {
      const listed = await runToEnd(["keys", "list", "--config", file])
      assert.strictEqual(listed.code, 0, listed.stderr)
      assert.match(listed.stdout, /^ID\tPREFIX/)
      assert.strictEqual(sockets.length, 0, "keys list connected to Redis")
      // A command that writes announces its change there (the revocation of an unknown id still builds the announcer).
      await runToEnd(["keys", "revoke", "key_unknown", "--config", file])
      assert.isAbove(sockets.length, 0, "keys revoke did not connect to Redis")
    } finally {
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => redis.close(resolve))
    }
  })

  it("writes every queued usage record before exiting on SIGTERM", async () => {
    const port = await freePort()
    const database = `sqlite:${join(dir, "flush.db")}`
    const file = join(dir, "flush.yaml")
    writeFileSync(
      file,
      [
        `listen: 127.0.0.1:${port}`,
        `database: ${database}`,
        "log_level: error",
        // Nothing is written by the timer or by batch size within this test: only the shutdown flush writes.
        "usage: {flush_interval_ms: 600000, max_batch: 100000}",
        "channels:",
        "  - {name: up, type: openai, base_url: " + `${upstream.url}/v1` + ", api_key: k, models: [gpt-4o-mini]}",
        "models:",
        "  gpt-4o-mini: {input: 1, output: 1}",
        "users:",
        "  - name: uma",
        "    balance: 5",
        "    keys:",
        `      - {name: k, secret: ${KEY}}`,
        ""
      ].join("\n")
    )
    const server = run(["serve", "--config", file])
    const url = `http://127.0.0.1:${port}`
    const count = () =>
      runSql(database, (sql) => sql`SELECT COUNT(*) AS n FROM usage_records`).then((rows) => Number(rows[0]!.n))
    try {
      await waitHealthy(url, server.child)
      const calls = 7
      for (let i = 0; i < calls; i++) {
        const response = await fetch(`${url}/v1/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
          body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: `call ${i}` }] })
        })
        assert.strictEqual(response.status, 200)
        await response.json()
      }
      assert.strictEqual(await count(), 0, "the records wait in memory for the next flush")
      server.child.kill("SIGTERM")
      assert.strictEqual(await server.exited, 0)
      assert.strictEqual(await count(), calls, "SIGTERM flushed every record")
    } finally {
      server.child.kill("SIGKILL")
    }
  })

  it("refuses an invalid configuration naming the file and the field", async () => {
    const file = join(dir, "bad.yaml")
    writeFileSync(
      file,
      "listen: 127.0.0.1:0\nchannels:\n  - name: x\n    type: opneai\n    base_url: http://x/v1\n    models: [a]\n"
    )
    const proc = run(["serve", "--config", file])
    const code = await proc.exited
    assert.notStrictEqual(code, 0)
    assert.include(proc.output(), `Invalid configuration in ${file}:`)
    assert.include(proc.output(), "at channels[0].type: Expected \"openai\" | \"gemini\" | \"anthropic\" | \"azure\"")
  })

  it("refuses a configuration the store rejects, or a bad database, naming the file, the field and what was expected", async () => {
    const secret = join(dir, "bad-secret.yaml")
    writeFileSync(
      secret,
      `database: sqlite:${
        join(dir, "bad.db")
      }\nusers:\n  - name: u\n    keys:\n      - {name: k, secret: pk-not-a-modelgate-key-at-all}\n`
    )
    const first = run(["serve", "--config", secret])
    assert.notStrictEqual(await first.exited, 0)
    assert.include(
      first.output(),
      `Invalid configuration in ${secret}:\n  at users[0].keys[0].secret: Expected a key secret: 'sk-' followed by`
    )
    assert.notInclude(first.output(), "pk-not-a-modelgate-key-at-all")

    const twice = join(dir, "twice.yaml")
    writeFileSync(
      twice,
      `database: sqlite:${join(dir, "twice.db")}\nusers:\n  - name: u\n    keys: [{name: k}, {name: k}]\n`
    )
    const second = run(["serve", "--config", twice])
    assert.notStrictEqual(await second.exited, 0)
    assert.include(
      second.output(),
      `Invalid configuration in ${twice}:\n  at users[0].keys[1].name: 'u/k' is declared twice`
    )

    const database = join(dir, "bad-database.yaml")
    writeFileSync(database, "database: mysql://db/modelgate\n")
    const third = run(["serve", "--config", database])
    assert.notStrictEqual(await third.exited, 0)
    assert.include(third.output(), `Invalid configuration in ${database}:\n  at database: `)
    assert.include(third.output(), "Accepted forms: 'sqlite:PATH'")

    const unusable = join(dir, "unusable-database.yaml")
    writeFileSync(unusable, `database: sqlite:${unusable}/modelgate.db\n`)
    const fourth = run(["serve", "--config", unusable])
    assert.notStrictEqual(await fourth.exited, 0)
    assert.include(
      fourth.output(),
      `Cannot use the database 'sqlite:${unusable}/modelgate.db' (from database in ${unusable}): `
    )
  })

  it("serves, reports ready, and drains an in-flight stream on SIGTERM before exiting 0", async () => {
    const port = await freePort()
    const file = join(dir, "gateway.yaml")
    writeFileSync(
      file,
      [
        `listen: 127.0.0.1:${port}`,
        `database: sqlite:${join(dir, "gw.db")}`,
        "log_level: error",
        "shutdown_grace_seconds: 20",
        "channels:",
        "  - name: up",
        "    type: openai",
        `    base_url: ${upstream.url}/v1`,
        "    api_key: sk-up",
        "    models: [slow-stream]",
        "    model_map: {slow-stream: gpt-interval-100}",
        "models:",
        "  slow-stream: {input: 1, output: 1}",
        "users:",
        "  - name: ops",
        "    balance: 5",
        "    keys:",
        `      - {name: k, secret: ${KEY}}`,
        ""
      ].join("\n")
    )
    const proc = run(["serve", "--config", file])
    const url = `http://127.0.0.1:${port}`
    await waitHealthy(url, proc.child)
    assert.strictEqual((await fetch(`${url}/readyz`)).status, 200)

    const response = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: "slow-stream",
        stream: true,
        messages: [{ role: "user", content: "take your time" }]
      })
    })
    assert.strictEqual(response.status, 200)
    const reader = response.body!.getReader()
    await reader.read() // the stream is under way
    proc.child.kill("SIGTERM")
    let text = ""
    const decoder = new TextDecoder()
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      text += decoder.decode(value)
    }
    assert.include(text, "data: [DONE]")
    assert.strictEqual(await proc.exited, 0)
  })
  it("turns /readyz to 503 as soon as SIGTERM starts the drain, still serving during shutdown_delay_seconds, and logs one access line per call", async () => {
    const port = await freePort()
    const file = join(dir, "delay.yaml")
    writeFileSync(
      file,
      gatewayYaml(port, join(dir, "delay.db"), ["log_level: info", "log_format: logfmt", "shutdown_delay_seconds: 3"])
    )
    const proc = run(["serve", "--config", file])
    const url = `http://127.0.0.1:${port}`
    await waitHealthy(url, proc.child)
    const ready = await fetch(`${url}/readyz`)
    assert.strictEqual(ready.status, 200)
    assert.match(ready.headers.get("x-request-id") ?? "", /^req_[0-9a-f]{24}$/)
    assert.strictEqual(
      (await chat(url, { model: "gpt-4o-mini", messages: [{ role: "user", content: "before" }] })).status,
      200
    )

    proc.child.kill("SIGTERM")
    let draining: Response | undefined
    for (let i = 0; i < 50 && draining === undefined; i++) {
      const response = await fetch(`${url}/readyz`)
      if (response.status === 503) draining = response
      else await new Promise((r) => setTimeout(r, 20))
    }
    assert.isDefined(draining, "/readyz turned 503 after SIGTERM")
    assert.deepStrictEqual(await draining!.json(), { status: "draining", reason: "the server is shutting down" })
    assert.strictEqual((await fetch(`${url}/healthz`)).status, 200, "the process is alive while draining")
    const during = await chat(url, { model: "gpt-4o-mini", messages: [{ role: "user", content: "during the delay" }] })
    assert.strictEqual(during.status, 200, "calls are still served during the delay")
    assert.strictEqual(await proc.exited, 0)

    const lines = proc.output().split("\n").filter((line) => line.includes("message=request"))
    assert.strictEqual(lines.length, 2, proc.output())
    for (const line of lines) {
      assert.include(line, "level=INFO")
      assert.include(line, "method=POST path=/v1/chat/completions status=200")
      assert.match(line, /request_id=req_[0-9a-f]{24}/)
      assert.match(line, /duration_ms=\d+/)
    }
    assert.notInclude(proc.output(), "path=/readyz")
    assert.include(proc.output(), "shutting down")
  })

  it("cuts streams that outlive the grace period, exits 0, and still settles them, from a lease and from a database hold", async () => {
    const port = await freePort()
    const database = join(dir, "grace.db")
    const file = join(dir, "grace.yaml")
    writeFileSync(
      file,
      gatewayYaml(port, database, ["log_level: error", "shutdown_grace_seconds: 1", "access_log: false"])
    )
    const proc = run(["serve", "--config", file])
    const url = `http://127.0.0.1:${port}`
    await waitHealthy(url, proc.child)
    // The upstream sends three chunks, then never another byte. One stream holds from the process's
    // balance lease, the other (a key with a spending cap) holds in the database.
    const open = async (key: string) => {
      const response = await chat(url, {
        model: "stalling",
        stream: true,
        messages: [{ role: "user", content: "never finish" }]
      }, key)
      assert.strictEqual(response.status, 200)
      const reader = response.body!.getReader()
      const decoder = new TextDecoder()
      let text = ""
      while (!text.includes("\"content\"")) text += decoder.decode((await reader.read()).value)
      const rest = async () => {
        for (;;) {
          const { done, value } = await reader.read().catch(() => ({ done: true as const, value: undefined }))
          if (done) return text
          text += decoder.decode(value)
        }
      }
      return { requestId: response.headers.get("x-request-id")!, rest }
    }
    const streams = [await open(KEY), await open(CAPPED_KEY)]
    proc.child.kill("SIGTERM")
    for (const stream of streams) assert.notInclude(await stream.rest(), "[DONE]", "the stream was cut, not finished")
    assert.strictEqual(await proc.exited, 0)

    const db = new DatabaseSync(database, { readOnly: true })
    try {
      let cost = 0n
      for (const { requestId } of streams) {
        const usage = db.prepare(
          "SELECT status, error_code, completion_tokens, cost_nanos FROM usage_records WHERE request_id = ?"
        ).all(requestId)
        assert.strictEqual(usage.length, 1, "the cut stream has its usage record")
        assert.deepStrictEqual(
          [Number(usage[0]!.status), usage[0]!.error_code],
          [503, "ShuttingDown"],
          "cut by the server, not by the client"
        )
        assert.isAbove(Number(usage[0]!.completion_tokens), 0, "billed for what was generated")
        assert.isTrue(BigInt(usage[0]!.cost_nanos as number) > 0n)
        cost += BigInt(usage[0]!.cost_nanos as number)
      }
      assert.strictEqual(Number(db.prepare("SELECT COUNT(*) AS n FROM holds").get()!.n), 0, "no hold is left open")
      assert.strictEqual(
        Number(db.prepare("SELECT COUNT(*) AS n FROM leases").get()!.n),
        0,
        "every balance lease went back"
      )
      const balance = BigInt(
        db.prepare("SELECT balance_nanos FROM users WHERE name = 'ops'").get()!.balance_nanos as number
      )
      assert.strictEqual(balance, 5_000_000_000n - cost)
    } finally {
      db.close()
    }
  })

  it("a database that refuses the connection at start is reported with the server's own reason", async () => {
    const proxy = await startPgProxy({ host: "127.0.0.1", port: 9 })
    try {
      proxy.refuseStartups({ code: "53300", message: "sorry, too many clients already" })
      const file = join(dir, "crowded.yaml")
      writeFileSync(
        file,
        [
          `listen: 127.0.0.1:${await freePort()}`,
          `database: postgres://modelgate:secret@127.0.0.1:${proxy.port}/modelgate`,
          ""
        ].join("\n")
      )
      const result = await runToEnd(["serve", "--config", file])
      assert.strictEqual(result.code, 1)
      assert.include(
        result.stderr,
        `modelgate: Cannot use the database 'postgres://modelgate:***@127.0.0.1:${proxy.port}/modelgate' (from database in ${file})`
      )
      assert.include(result.stderr, "sorry, too many clients already")
      assert.notInclude(result.stderr, "secret")
    } finally {
      await proxy.close()
    }
  })

  it("refuses to serve the demo without its fake upstream, saying how to start the demo", async () => {
    const cwd = join(dir, "no-upstream")
    mkdirSync(cwd)
    const proc = run(["serve"], { cwd })
    assert.strictEqual(await proc.exited, 1)
    assert.include(proc.output(), "modelgate: No configuration was given")
    assert.include(proc.output(), "Run `pnpm start` for the demo")
    assert.isFalse(existsSync(join(cwd, "data")), "nothing was created")
    const remote = run(["serve"], { cwd, env: { MODELGATE_DEMO_UPSTREAM: "http://example.com:9" } })
    assert.strictEqual(await remote.exited, 1)
    assert.include(remote.output(), "MODELGATE_DEMO_UPSTREAM must be on this machine")
  })

  it("refuses to run the demo into a real database, a real Redis, an empty MODELGATE_CONFIG, a public address or a database it did not create, naming why", async () => {
    // A real gateway's database: its admin has a password of their own.
    const port = await freePort()
    const database = join(dir, "real.db")
    const file = join(dir, "real.yaml")
    writeFileSync(
      file,
      [
        `listen: 127.0.0.1:${port}`,
        `database: sqlite:${database}`,
        "users:",
        "  - {name: admin, role: admin, password: the-admins-own-password}",
        ""
      ].join("\n")
    )
    const real = run(["serve", "--config", file])
    try {
      await waitHealthy(`http://127.0.0.1:${port}`, real.child)
    } finally {
      real.child.kill("SIGTERM")
      await real.exited
    }
    const snapshot = () => {
      const db = new DatabaseSync(database, { readOnly: true })
      try {
        return JSON.stringify(db.prepare("SELECT name, role, password_hash, updated_at FROM users ORDER BY name").all())
      } finally {
        db.close()
      }
    }
    const before = snapshot()

    const cwd = join(dir, "refusals")
    mkdirSync(cwd)
    const refused = async (env: Record<string, string>) => {
      // As `pnpm start` runs it: with the demo's upstream named (nothing listens there; it is never reached).
      const proc = run(["serve"], { cwd, env: { MODELGATE_DEMO_UPSTREAM: "http://127.0.0.1:9", ...env } })
      const code = await proc.exited
      return { code, output: proc.output() }
    }
    const database_ = await refused({ MODELGATE_DATABASE: `sqlite:${database}` })
    assert.strictEqual(database_.code, 1)
    assert.include(database_.output, "modelgate: MODELGATE_DATABASE is set, but no configuration was given")
    assert.include(database_.output, "the demo runs only on its own database, never on yours")
    assert.strictEqual(snapshot(), before, "the admin's password and the users are untouched")

    const redis = await refused({ MODELGATE_REDIS: "redis://127.0.0.1:6379" })
    assert.strictEqual(redis.code, 1)
    assert.include(redis.output, "modelgate: MODELGATE_REDIS is set, but no configuration was given")

    const empty = await refused({ MODELGATE_CONFIG: "" })
    assert.strictEqual(empty.code, 1)
    assert.include(empty.output, "modelgate: MODELGATE_CONFIG is set but empty.")

    const listen = await refused({ MODELGATE_LISTEN: `0.0.0.0:${port}` })
    assert.strictEqual(listen.code, 1)
    assert.include(listen.output, `modelgate: MODELGATE_LISTEN asks for '0.0.0.0:${port}'`)
    assert.include(listen.output, "the demo listens only on a loopback address")
    assert.isFalse(existsSync(join(cwd, "data")), "nothing was created")

    // A database where the demo's would be, that the demo did not create.
    mkdirSync(join(cwd, "data", "demo"), { recursive: true })
    writeFileSync(join(cwd, "data", "demo", "modelgate.db"), "")
    const foreign = await refused({ MODELGATE_LISTEN: `127.0.0.1:${port}` })
    assert.strictEqual(foreign.code, 1)
    assert.include(foreign.output, "The demo setup runs only on a database it created")

    // The admin commands without a configuration refuse a real database the same way.
    const keys = run(["keys", "list"], { cwd, env: { MODELGATE_DATABASE: `sqlite:${database}` } })
    assert.strictEqual(await keys.exited, 1)
    assert.include(keys.output(), "MODELGATE_DATABASE is set, but no configuration was given")
  })
})
