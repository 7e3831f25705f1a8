/**
 * The real binary as operators run it: `modelgate serve --config FILE` starts,
 * answers health checks, refuses an invalid configuration with a message that
 * names the file and field, and on SIGTERM lets an in-flight stream finish
 * before exiting 0.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { type FakeUpstreamServer, startFakeUpstream } from "@modelgate/fake-upstream"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"

const bin = join(import.meta.dirname, "..", "src", "bin.ts")
const KEY = "sk-process-test-00000000000000000000000000000"
let upstream: FakeUpstreamServer
let dir: string

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port
      server.close(() => resolve(port))
    })
  })

const runToEnd = (args: Array<string>) =>
  new Promise<{ readonly code: number | null; readonly stdout: string; readonly stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [bin, ...args], { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, MODELGATE_SECRET: "process-test-secret-0123456789abcdef" } })
    let stdout = ""
    let stderr = ""
    child.stdout!.on("data", (d) => stdout += d)
    child.stderr!.on("data", (d) => stderr += d)
    child.on("exit", (code) => resolve({ code, stdout, stderr }))
  })

const run = (args: Array<string>) => {
  const child = spawn(process.execPath, [bin, ...args], { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, MODELGATE_SECRET: "process-test-secret-0123456789abcdef" } })
  let output = ""
  child.stdout!.on("data", (d) => output += d)
  child.stderr!.on("data", (d) => output += d)
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
  return { child, exited, output: () => output }
}

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
    writeFileSync(file, [
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
    ].join("\n"))
    const server = run(["serve", "--config", file])
    const url = `http://127.0.0.1:${port}`
    try {
      await waitHealthy(url, server.child)
      const created = await runToEnd(["keys", "create", "--config", file, "--user", "olga", "--name", "laptop", "--models", "gpt-4o-mini"])
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

      const adjusted = await runToEnd(["users", "adjust", "olga", "--config", file, "--amount", "2.5", "--reason", "top-up"])
      assert.strictEqual(adjusted.code, 0, adjusted.stderr)
      assert.include(adjusted.stdout, "3.50 USD")

      const revoked = await runToEnd(["keys", "revoke", id!, "--config", file])
      assert.strictEqual(revoked.code, 0, revoked.stderr)
      let status = 200
      for (let i = 0; i < 40 && status === 200; i++) {
        await new Promise((r) => setTimeout(r, 100))
        status = (await me()).status
      }
      assert.strictEqual(status, 401, "the running server stops accepting the revoked key within 4 s")

      const unknown = await runToEnd(["keys", "create", "--config", file, "--user", "nobody"])
      assert.notStrictEqual(unknown.code, 0)
      assert.include(unknown.stderr, "No user named 'nobody'")

      const group = await runToEnd(["keys", "create", "--config", file, "--user", "olga", "--group", "gold"])
      assert.notStrictEqual(group.code, 0)
      assert.include(group.stderr, "--group: no group named 'gold'. Groups: 'default'.")
      const models = await runToEnd(["keys", "create", "--config", file, "--user", "olga", "--models", "gpt-4o-mini,gpt-5,o3"])
      assert.notStrictEqual(models.code, 0)
      assert.include(models.stderr, "--models: unknown models 'gpt-5', 'o3'. Models: 'gpt-4o-mini'.")
      const listedAfter = await runToEnd(["keys", "list", "--config", file, "--user", "olga"])
      assert.strictEqual(listedAfter.stdout.trim().split("\n").length, 2, "no key was created by the refused commands")
    } finally {
      server.child.kill("SIGTERM")
      await server.exited
    }
  })

  it("refuses an invalid configuration naming the file and the field", async () => {
    const file = join(dir, "bad.yaml")
    writeFileSync(file, "listen: 127.0.0.1:0\nchannels:\n  - name: x\n    type: opneai\n    base_url: http://x/v1\n    models: [a]\n")
    const proc = run(["serve", "--config", file])
    const code = await proc.exited
    assert.notStrictEqual(code, 0)
    assert.include(proc.output(), `Invalid configuration in ${file}:`)
    assert.include(proc.output(), "at channels[0].type: Expected \"openai\" | \"gemini\" | \"anthropic\" | \"azure\"")
  })

  it("refuses a configuration the store rejects, or a bad database, naming the file, the field and what was expected", async () => {
    const secret = join(dir, "bad-secret.yaml")
    writeFileSync(secret, `database: sqlite:${join(dir, "bad.db")}\nusers:\n  - name: u\n    keys:\n      - {name: k, secret: pk-not-a-modelgate-key-at-all}\n`)
    const first = run(["serve", "--config", secret])
    assert.notStrictEqual(await first.exited, 0)
    assert.include(first.output(), `Invalid configuration in ${secret}:\n  at users[0].keys[0].secret: Expected a key secret: 'sk-' followed by`)
    assert.notInclude(first.output(), "pk-not-a-modelgate-key-at-all")

    const twice = join(dir, "twice.yaml")
    writeFileSync(twice, `database: sqlite:${join(dir, "twice.db")}\nusers:\n  - name: u\n    keys: [{name: k}, {name: k}]\n`)
    const second = run(["serve", "--config", twice])
    assert.notStrictEqual(await second.exited, 0)
    assert.include(second.output(), `Invalid configuration in ${twice}:\n  at users[0].keys[1].name: 'u/k' is declared twice`)

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
    assert.include(fourth.output(), `Cannot use the database 'sqlite:${unusable}/modelgate.db' (from database in ${unusable}): `)
  })

  it("serves, reports ready, and drains an in-flight stream on SIGTERM before exiting 0", async () => {
    const port = await freePort()
    const file = join(dir, "gateway.yaml")
    writeFileSync(file, [
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
    ].join("\n"))
    const proc = run(["serve", "--config", file])
    const url = `http://127.0.0.1:${port}`
    await waitHealthy(url, proc.child)
    assert.strictEqual((await fetch(`${url}/readyz`)).status, 200)

    const response = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "slow-stream", stream: true, messages: [{ role: "user", content: "take your time" }] })
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
})
