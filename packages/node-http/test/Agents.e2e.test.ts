/**
 * End to end with the coding agents themselves, headless, offline, against
 * the real server and the fake upstream:
 *
 * - Claude Code (`@anthropic-ai/claude-code`, `claude -p "..." --model M`,
 *   run through the package's `cli-wrapper.cjs` on this repository's Node)
 *   with `ANTHROPIC_BASE_URL` set to the gateway and `HOME` in a temporary
 *   directory: it speaks Anthropic Messages (`/v1/messages?beta=true`);
 * - Codex CLI (`@openai/codex`, `codex exec`) with a provider block
 *   `wire_api = "responses"` and `CODEX_HOME` in a temporary directory: it
 *   speaks the Responses API (`/v1/responses`).
 *
 * Each answers a plain prompt and runs a tool the model asks for (the fake
 * upstream's channels are told which tool to call), through an OpenAI, a
 * Gemini and an Anthropic channel (and, for Codex, an OpenAI channel marked
 * `responses`).
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { ConfigFile } from "../src/ConfigFile.ts"
import { startGateway, type TestGateway } from "./support/Gateway.ts"

const KEY = "sk-agents-alice-00000000000000000000000000000"
/** A key of a user whose balance is empty. */
const POOR_KEY = "sk-agents-poor-000000000000000000000000000000"
/** A key the gateway does not know. */
const WRONG_KEY = "sk-agents-wrong-000000000000000000000000000"
const modules = join(import.meta.dirname, "..", "node_modules")
const claudeWrapper = join(modules, "@anthropic-ai", "claude-code", "cli-wrapper.cjs")
const codex = join(modules, ".bin", "codex")

/**
 * Channels of every kind, each also serving a model that always calls `tool`
 * (the fake upstream's `call-NAME` model token: a channel header would be
 * redacted from what the gateway relays, as every channel header value is).
 */
const channels = (upstream: string, tool: string, suffix: string): NonNullable<ConfigFile["channels"]> => [
  {
    name: `openai-${suffix}`,
    type: "openai",
    base_url: `${upstream}/v1`,
    api_key: "sk-up",
    models: [`gpt-${suffix}`],
    model_map: { [`gpt-${suffix}`]: `gpt-4o-mini-call-${tool}` }
  },
  {
    name: `gemini-${suffix}`,
    type: "gemini",
    base_url: upstream,
    api_key: "g-up",
    models: [`gemini-${suffix}`],
    model_map: { [`gemini-${suffix}`]: `gemini-2.5-flash-call-${tool}` }
  },
  {
    name: `claude-${suffix}`,
    type: "anthropic",
    base_url: upstream,
    api_key: "a-up",
    models: [`claude-${suffix}`],
    model_map: { [`claude-${suffix}`]: `claude-sonnet-4-5-call-${tool}` }
  },
  {
    name: `responses-${suffix}`,
    type: "openai",
    base_url: `${upstream}/v1`,
    api_key: "sk-up",
    responses: true,
    models: [`gpt-5-${suffix}`],
    model_map: { [`gpt-5-${suffix}`]: `gpt-5-call-${tool}` }
  }
]

const config = (upstream: string): ConfigFile => {
  const all: Array<NonNullable<ConfigFile["channels"]>[number]> = [
    { name: "openai", type: "openai" as const, base_url: `${upstream}/v1`, api_key: "sk-up", models: ["gpt-4o-mini"] },
    { name: "gemini", type: "gemini" as const, base_url: upstream, api_key: "g-up", models: ["gemini-2.5-flash"] },
    { name: "claude", type: "anthropic" as const, base_url: upstream, api_key: "a-up", models: ["claude-sonnet-4-5"] },
    {
      name: "responses",
      type: "openai" as const,
      base_url: `${upstream}/v1`,
      api_key: "sk-up",
      responses: true,
      models: ["gpt-5"]
    },
    ...channels(upstream, "Read", "read"),
    ...channels(upstream, "exec_command", "exec"),
    // Two channels whose upstream always fails with a 500: the gateway fails over from one to the other, then gives up.
    ...["a", "b"].map((name) => ({
      name: `broken-${name}`,
      type: "anthropic" as const,
      base_url: upstream,
      api_key: "a-up",
      models: ["claude-broken"],
      model_map: { "claude-broken": "claude-sonnet-4-5-fail-500" }
    }))
  ]
  return {
    listen: "127.0.0.1:0",
    log_level: "error",
    channels: all,
    models: Object.fromEntries(all.flatMap((c) => c.models).map((id) => [id, { input: 1, output: 2 }])),
    users: [
      { name: "alice", balance: 100, keys: [{ name: "agents", secret: KEY }] },
      { name: "poor", balance: 0, keys: [{ name: "empty", secret: POOR_KEY }] }
    ]
  }
}

let gateway: TestGateway
let dir: string

beforeAll(async () => {
  gateway = await startGateway(config)
  dir = mkdtempSync(join(tmpdir(), "modelgate-agents-"))
  for (const sub of ["home", "codex", "work"]) mkdirSync(join(dir, sub))
  writeFileSync(join(dir, "work", "notes.txt"), "The secret word is pineapple.\n")
})
afterAll(async () => {
  await gateway?.close()
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
})

interface Run {
  readonly code: number
  readonly out: string
}

/**
 * Runs a client with its standard input closed (codex exec would otherwise wait to read more of the prompt from
 * it), in a process group of its own: a client still running after 85 s is killed with everything it started
 * (Claude Code's wrapper starts the platform binary, which killing the wrapper alone would leave running).
 */
const run = (file: string, args: ReadonlyArray<string>, env: Record<string, string>) =>
  new Promise<Run>((resolve) => {
    const child = spawn(file, args, {
      cwd: join(dir, "work"),
      env: { PATH: process.env.PATH ?? "", NO_COLOR: "1", ...env },
      detached: true,
      stdio: ["pipe", "pipe", "pipe"]
    })
    let out = ""
    child.stdout.on("data", (chunk) => out += String(chunk))
    child.stderr.on("data", (chunk) => out += String(chunk))
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, "SIGKILL")
      } catch {
        // Already gone.
      }
    }, 85_000)
    child.on("close", (code, signal) => {
      clearTimeout(timer)
      resolve({ code: code ?? (signal === null ? 1 : 128), out })
    })
    child.stdin.end()
  })

/** `claude -p prompt --model model`, on this repository's Node, with only the gateway to talk to. */
const claude = (prompt: string, model: string, extra: ReadonlyArray<string> = []) =>
  run(process.execPath, [claudeWrapper, "-p", prompt, "--model", model, ...extra], {
    HOME: join(dir, "home"),
    ANTHROPIC_BASE_URL: gateway.url,
    ANTHROPIC_API_KEY: KEY,
    DISABLE_TELEMETRY: "1",
    DISABLE_AUTOUPDATER: "1",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1"
  })

/** `claude -p` with another key than the one that works. */
const claudeWithKey = (key: string, prompt: string, model: string) =>
  run(process.execPath, [claudeWrapper, "-p", prompt, "--model", model], {
    HOME: join(dir, "home"),
    ANTHROPIC_BASE_URL: gateway.url,
    ANTHROPIC_API_KEY: key,
    DISABLE_TELEMETRY: "1",
    DISABLE_AUTOUPDATER: "1",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1"
  })

/** `codex exec` with the gateway as a Responses provider. */
const codexExec = (prompt: string, model: string, key: string = KEY) =>
  run(codex, [
    "exec",
    "--skip-git-repo-check",
    "-c",
    `model_providers.mg={name="mg",base_url="${gateway.url}/v1",env_key="MG_KEY",wire_api="responses"}`,
    "-c",
    "model_provider=mg",
    "-m",
    model,
    prompt
  ], { CODEX_HOME: join(dir, "codex"), HOME: join(dir, "home"), MG_KEY: key })

const since = (from: number) => gateway.upstream.requests.slice(from)

const kinds = [
  { label: "an OpenAI channel", plain: "gpt-4o-mini", suffix: "gpt", result: "\"role\":\"tool\"" },
  { label: "a Gemini channel", plain: "gemini-2.5-flash", suffix: "gemini", result: "\"functionResponse\"" },
  { label: "an Anthropic channel", plain: "claude-sonnet-4-5", suffix: "claude", result: "\"tool_result\"" }
] as const

describe("Claude Code (claude -p) through the gateway", () => {
  for (const kind of kinds) {
    it(`answers a prompt through ${kind.label}`, async () => {
      const from = gateway.upstream.requests.length
      const result = await claude("Say hello", kind.plain)
      assert.strictEqual(result.code, 0, result.out)
      assert.include(result.out, `Hello from fake-upstream (model ${kind.plain})`)
      assert.isAbove(since(from).length, 0)
    })

    it(`runs the Read tool the model asks for, and answers with its result, through ${kind.label}`, async () => {
      const from = gateway.upstream.requests.length
      const model = `${kind.suffix}-read`
      const result = await claude("Read notes.txt", model, ["--allowedTools", "Read"])
      assert.strictEqual(result.code, 0, result.out)
      // The fake upstream answers a tool result by quoting it: Claude Code ran Read and sent its result back.
      assert.include(result.out, "The tool Read returned")
      assert.isDefined(
        since(from).find((r) => JSON.stringify(r.body).includes(kind.result)),
        "the tool's result went upstream"
      )
    })
  }
})

describe("Codex CLI (codex exec, wire_api = responses) through the gateway", () => {
  for (
    const kind of [...kinds, {
      label: "an OpenAI channel marked responses (relayed)",
      plain: "gpt-5",
      suffix: "gpt-5",
      result: "\"function_call_output\""
    }]
  ) {
    it(`answers a prompt through ${kind.label}`, async () => {
      const result = await codexExec("Say hello", kind.plain)
      assert.strictEqual(result.code, 0, result.out)
      assert.include(result.out, `Hello from fake-upstream (model ${kind.plain})`)
    })

    it(`runs exec_command the model asks for, and answers with its output, through ${kind.label}`, async () => {
      const from = gateway.upstream.requests.length
      const result = await codexExec("cat notes.txt", `${kind.suffix}-exec`)
      assert.strictEqual(result.code, 0, result.out)
      // Codex ran the command and sent its output back ("Chunk ID: ..." is how Codex reports a command's run).
      assert.include(result.out, "The tool exec_command returned: Chunk ID", result.out)
      // The fake upstream makes the command of the last user text it sees. Gemini and Anthropic merge Codex's
      // environment message and the prompt into one user turn, whose text then starts with the environment: the
      // command is not the prompt there, but it ran and its output came back all the same.
      if (kind.suffix === "gpt" || kind.suffix === "gpt-5") assert.include(result.out, "pineapple", result.out)
      assert.isDefined(
        since(from).find((r) => JSON.stringify(r.body).includes(kind.result)),
        "the command's output went upstream"
      )
    })
  }
})

describe("refusals reach the person at the terminal", () => {
  it("Claude Code with a wrong key stops within seconds and prints the gateway's words", async () => {
    const started = Date.now()
    const result = await claudeWithKey(WRONG_KEY, "Say hello", "claude-sonnet-4-5")
    const seconds = (Date.now() - started) / 1000
    assert.notStrictEqual(result.code, 0, result.out)
    // The gateway's own words, which key included (cut to its first characters).
    assert.include(result.out, "The API key 'sk-age...' is not valid", result.out)
    // Without x-should-retry: false it retried silently for minutes; now one refusal ends it (about 20 s here,
    // most of it Claude Code starting on a busy machine).
    assert.isBelow(seconds, 60, `it took ${seconds} s`)
  }, 90_000)

  it("Claude Code with an empty balance stops within seconds and prints the gateway's words", async () => {
    const started = Date.now()
    const result = await claudeWithKey(POOR_KEY, "Say hello", "claude-sonnet-4-5")
    const seconds = (Date.now() - started) / 1000
    assert.notStrictEqual(result.code, 0, result.out)
    // The balance and the amount the call may cost, as the gateway says them.
    assert.match(result.out, /Your balance is 0\.00 USD/, result.out)
    assert.match(result.out, /up to \d+\.\d+ USD/, result.out)
    assert.isBelow(seconds, 60, `it took ${seconds} s`)
  }, 90_000)

  it("Claude Code stops on the gateway's 502 once every channel failed, without retrying it", async () => {
    const from = gateway.upstream.requests.length
    const started = Date.now()
    const result = await claude("Say hello", "claude-broken")
    const seconds = (Date.now() - started) / 1000
    assert.notStrictEqual(result.code, 0, result.out)
    assert.include(result.out, "502", result.out)
    // One call from Claude Code: the gateway tried each of the two channels once (a retry would have tried them again).
    const upstreamCalls = since(from).filter((r) => JSON.stringify(r.body).includes("fail-500")).length
    assert.isAtMost(upstreamCalls, 2, `the upstream was called ${upstreamCalls} times`)
    assert.isBelow(seconds, 60, `it took ${seconds} s`)
  }, 90_000)

  it(
    "Codex with an empty balance stops within seconds and prints the gateway's words, not its own quota text",
    async () => {
      const started = Date.now()
      const result = await codexExec("Say hello", "gpt-4o-mini", POOR_KEY)
      const seconds = (Date.now() - started) / 1000
      assert.notStrictEqual(result.code, 0, result.out)
      assert.notInclude(result.out, "Quota exceeded. Check your plan", "Codex's own words replace the gateway's")
      assert.match(result.out, /Your balance is 0\.00 USD/, result.out)
      assert.match(result.out, /up to \d+\.\d+ USD/, result.out)
      // Codex reconnects 5 times on a 4xx other than 400, after the delay retry-after says (0 s), else backing off
      // from 0.2 s to 3.2 s (about 7 s in all).
      assert.isBelow(seconds, 5, `it took ${seconds} s`)
    },
    90_000
  )

  it(
    "Codex stops within seconds on the gateway's 502 once every channel failed, printing the gateway's words",
    async () => {
      const started = Date.now()
      const result = await codexExec("Say hello", "claude-broken")
      const seconds = (Date.now() - started) / 1000
      assert.notStrictEqual(result.code, 0, result.out)
      assert.include(result.out, "unexpected status 502", result.out)
      assert.include(result.out, "The upstream failed (HTTP 500)", result.out)
      // Codex retries a 5xx 30 times whatever x-should-retry says: with retry-after 0 in about a second, else with
      // back-off for about 25 s.
      assert.isBelow(seconds, 10, `it took ${seconds} s`)
    },
    90_000
  )

  it("Codex with a wrong key stops within seconds and prints the gateway's words (which key)", async () => {
    const started = Date.now()
    const result = await codexExec("Say hello", "gpt-4o-mini", WRONG_KEY)
    const seconds = (Date.now() - started) / 1000
    assert.notStrictEqual(result.code, 0, result.out)
    assert.include(result.out, "The API key 'sk-age...' is not valid", result.out)
    assert.isBelow(seconds, 5, `it took ${seconds} s`)
  }, 90_000)
})
