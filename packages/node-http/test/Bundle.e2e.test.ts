/**
 * The production bundle (`bundle.ts`: what `pnpm build`, `pnpm start`,
 * `pnpm modelgate` and the benchmarks run) works on its own, not only the
 * sources: built into a temporary directory, it serves chat in both dialects,
 * the console's files, the management API with the price table it carries
 * inside (a file read beside a source module is not there once bundled),
 * `/metrics` (prom-client bundled), and runs a CLI command. It also holds
 * what the idle memory work took out of a gateway that serves only chat
 * (docs/design/performance.md): a probe preloaded into the server reports the
 * Node built-ins it loaded.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { type FakeUpstreamServer, startFakeUpstream } from "@modelgate/fake-upstream"
import { type ChildProcess, execFile, spawn } from "node:child_process"
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { freePort } from "./support/Processes.ts"

const KEY = "sk-bundle-test-000000000000000000000000000"
const PASSWORD = "bundle-admin-password"
const packageDir = join(import.meta.dirname, "..")
const consoleDir = join(packageDir, "..", "console", "dist")
const consoleBuilt = existsSync(join(consoleDir, "index.html"))

let upstream: FakeUpstreamServer
let dir: string
let bundle: string
let server: ChildProcess | undefined
let url: string
let config: string
let output = ""
let probeOut: string

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "modelgate-bundle-"))
  bundle = join(dir, "modelgate.mjs")
  await promisify(execFile)(process.execPath, [join(packageDir, "bundle.ts"), "--out", bundle], { cwd: packageDir })
  upstream = await startFakeUpstream({ port: 0 })
  const port = await freePort()
  url = `http://127.0.0.1:${port}`
  config = join(dir, "modelgate.yaml")
  writeFileSync(
    config,
    [
      `listen: 127.0.0.1:${port}`,
      `database: sqlite:${join(dir, "gateway.db")}`,
      "log_level: warning",
      "metrics: {token: bundle-metrics-token-0123456789}",
      "channels:",
      `  - {name: openai, type: openai, base_url: ${upstream.url}/v1, api_key: sk-up, models: [gpt-4o-mini]}`,
      `  - {name: gemini, type: gemini, base_url: ${upstream.url}, api_key: g-up, models: [gemini-2.5-flash]}`,
      "models:",
      "  gpt-4o-mini: {input: 0.15, output: 0.6}",
      "  gemini-2.5-flash: {input: 0.3, output: 2.5}",
      "users:",
      `  - {name: root, role: admin, password: ${PASSWORD}, balance: 10, keys: [{name: k, secret: ${KEY}}]}`,
      ""
    ].join("\n")
  )
  // On SIGUSR2 the server writes the Node built-ins it has loaded (`process.moduleLoadList`) and how many
  // `Intl.Segmenter`s it made (each maps part of ICU's data into memory).
  const probe = join(dir, "probe.mjs")
  probeOut = join(dir, "probe.json")
  writeFileSync(
    probe,
    `import { writeFileSync } from "node:fs"
let segmenters = 0
const Segmenter = Intl.Segmenter
Intl.Segmenter = class extends Segmenter {
  constructor(...args) {
    super(...args)
    segmenters++
  }
}
process.on("SIGUSR2", () =>
  writeFileSync(${JSON.stringify(probeOut)}, JSON.stringify({ builtins: process.moduleLoadList, segmenters })))
`
  )
  server = spawn(process.execPath, ["--import", probe, bundle, "serve", "--config", config], {
    stdio: ["ignore", "pipe", "pipe"],
    // Copied away from the checkout, the bundle is told where the console's files are.
    env: {
      ...process.env,
      MODELGATE_SECRET: "bundle-test-secret-0123456789abcdef",
      ...(consoleBuilt ? { MODELGATE_CONSOLE_DIR: consoleDir } : {})
    }
  })
  server.stdout!.on("data", (d) => output += d)
  server.stderr!.on("data", (d) => output += d)
  for (let i = 0; i < 150; i++) {
    if (server.exitCode !== null) throw new Error(`the bundle exited:\n${output}`)
    try {
      if ((await fetch(`${url}/readyz`)).ok) return
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`the bundle did not become ready:\n${output}`)
}, 120_000)

afterAll(async () => {
  if (server !== undefined && server.exitCode === null) {
    const exited = new Promise((resolve) => server!.once("exit", resolve))
    server.kill("SIGTERM")
    await exited
  }
  await upstream?.close()
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
})

/** What the server's probe reports: the Node built-ins it has loaded, the `Intl.Segmenter`s it made. */
const probed = async (): Promise<{ readonly builtins: Array<string>; readonly segmenters: number }> => {
  rmSync(probeOut, { force: true })
  server!.kill("SIGUSR2")
  for (let i = 0; i < 100 && !existsSync(probeOut); i++) await new Promise((r) => setTimeout(r, 20))
  await new Promise((r) => setTimeout(r, 50))
  return JSON.parse(readFileSync(probeOut, "utf8")) as { builtins: Array<string>; segmenters: number }
}

describe("the production bundle", () => {
  it("is ASCII, so V8 holds its source text at one byte a character, and has no comments", () => {
    const text = readFileSync(bundle, "utf8")
    const wide = /[^\t\n\r\x20-\x7e]/.exec(text)
    assert.isNull(
      wide,
      `a character above ASCII at ${wide?.index}: ${text.slice((wide?.index ?? 0) - 40, (wide?.index ?? 0) + 10)}`
    )
    assert.notInclude(text, "@since 0.1.0")
  })

  it("keeps node-redis, pg and prom-client out of the executable: chunks loaded only when configured", () => {
    const text = readFileSync(bundle, "utf8")
    assert.notInclude(text, "RedisSocket")
    assert.notInclude(text, "SCRAM-SHA-256")
    assert.notInclude(text, "process_cpu_user_seconds_total")
    const chunks = readdirSync(join(dir, "chunks")).filter((name) => name.endsWith(".mjs"))
    const inChunks = chunks.map((name) => readFileSync(join(dir, "chunks", name), "utf8")).join("\n")
    assert.include(inChunks, "RedisSocket")
    assert.include(inChunks, "SCRAM-SHA-256")
    assert.include(inChunks, "process_cpu_user_seconds_total")
  })

  it("serves chat in OpenAI's and Gemini's dialects, each through the other's channel too", async () => {
    for (const model of ["gpt-4o-mini", "gemini-2.5-flash"]) {
      const response = await fetch(`${url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
        body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] })
      })
      assert.strictEqual(response.status, 200, model)
      const body = await response.json() as { choices: Array<{ message: { content: string } }> }
      assert.isAbove(body.choices[0]!.message.content.length, 0)
      const gemini = await fetch(`${url}/v1beta/models/${model}:streamGenerateContent?alt=sse`, {
        method: "POST",
        headers: { "x-goog-api-key": KEY, "content-type": "application/json" },
        body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hi" }] }] })
      })
      assert.strictEqual(gemini.status, 200, model)
      assert.include(await gemini.text(), "\"usageMetadata\"")
    }
  })

  it("has not loaded Node's own fetch (its bundled undici, 3 MB at idle) after serving chat", async () => {
    // An ESM import of node:http reads all its exports, WebSocket among them, which loads Node's undici.
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] })
    })
    assert.strictEqual(response.status, 200)
    await response.text()
    const { builtins } = await probed()
    assert.include(builtins, "NativeModule http")
    assert.notInclude(builtins, "NativeModule internal/deps/undici/undici")
  })

  it("has made no Intl.Segmenter (ICU's break data, about 4 MB resident) after serving chat", async () => {
    // Effect's CLI builds one when it loads, to measure help text; bundle.ts defers it to first use.
    const { segmenters } = await probed()
    assert.strictEqual(segmenters, 0)
  })

  it("serves the management API, with the price table it carries, to a signed-in admin", async () => {
    const login = await fetch(`${url}/api/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: "root", password: PASSWORD })
    })
    assert.strictEqual(login.status, 200, await login.clone().text())
    const cookie = login.headers.get("set-cookie")!.split(";")[0]!
    const presets = await fetch(`${url}/api/admin/models/presets`, { headers: { cookie } })
    assert.strictEqual(presets.status, 200)
    const table = await presets.json() as { asOf: string; data: Array<{ id: string }> }
    assert.match(table.asOf, /^\d{4}-\d{2}-\d{2}$/)
    assert.isAbove(table.data.length, 10)
  })

  it("serves /metrics to its token", async () => {
    const metrics = await fetch(`${url}/metrics`, {
      headers: { authorization: "Bearer bundle-metrics-token-0123456789" }
    })
    assert.strictEqual(metrics.status, 200)
    assert.include(await metrics.text(), "# TYPE modelgate_requests_total counter")
  })

  it.skipIf(!consoleBuilt)("serves the console's files from MODELGATE_CONSOLE_DIR", async () => {
    const page = await fetch(`${url}/`)
    assert.strictEqual(page.status, 200)
    assert.include(await page.text(), "<html")
  })

  it("runs a CLI command against the same database", async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [
      bundle,
      "keys",
      "list",
      "--config",
      config,
      "--user",
      "root"
    ], {
      env: { ...process.env, MODELGATE_SECRET: "bundle-test-secret-0123456789abcdef" }
    })
    assert.include(stdout, "k")
  })

  it("stops at start when MODELGATE_CONSOLE_DIR has no console, naming it", async () => {
    const failed = await promisify(execFile)(process.execPath, [bundle, "serve", "--config", config], {
      env: { ...process.env, MODELGATE_SECRET: "bundle-test-secret-0123456789abcdef", MODELGATE_CONSOLE_DIR: dir }
    }).then(() => undefined, (error: { code: number; stderr: string }) => error)
    assert.isDefined(failed)
    assert.notStrictEqual(failed!.code, 0)
    assert.include(failed!.stderr, `MODELGATE_CONSOLE_DIR is ${dir}, which has no index.html`)
  })
})
