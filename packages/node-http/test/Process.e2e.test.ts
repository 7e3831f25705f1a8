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
  it("refuses an invalid configuration naming the file and the field", async () => {
    const file = join(dir, "bad.yaml")
    writeFileSync(file, "listen: 127.0.0.1:0\nchannels:\n  - name: x\n    type: opneai\n    base_url: http://x/v1\n    models: [a]\n")
    const proc = run(["serve", "--config", file])
    const code = await proc.exited
    assert.notStrictEqual(code, 0)
    assert.include(proc.output(), file)
    assert.include(proc.output(), "channels[0].type")
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
