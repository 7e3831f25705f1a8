/**
 * End to end with gemini-cli (npm `@google/gemini-cli`), headless
 * (`gemini -p`), with auth type `gemini-api-key`, `GEMINI_API_KEY` and
 * `GOOGLE_GEMINI_BASE_URL` pointed at the gateway: a plain answer and a turn
 * where the model calls a tool and gets its result, once through a Gemini
 * channel and once through an OpenAI channel.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { baseConfig, KEY, startGateway, type TestGateway } from "./support/Gateway.ts"

/** A key of a user whose balance is empty. */
const POOR_KEY = "sk-test-poor-gemini-cli-0000000000000000000"

const gemini = join(import.meta.dirname, "..", "node_modules", ".bin", "gemini")
let gateway: TestGateway
let home: string

beforeAll(async () => {
  gateway = await startGateway((upstream) => {
    const config = baseConfig(upstream)
    return {
      ...config,
      users: [...(config.users ?? []), { name: "poor", balance: 0, keys: [{ name: "empty", secret: POOR_KEY }] }]
    }
  })
  home = mkdtempSync(join(tmpdir(), "modelgate-gemini-cli-"))
  mkdirSync(join(home, ".gemini"))
  writeFileSync(
    join(home, ".gemini", "settings.json"),
    JSON.stringify({
      security: { auth: { selectedType: "gemini-api-key" } },
      privacy: { usageStatisticsEnabled: false },
      general: { disableAutoUpdate: true, disableUpdateNag: true },
      telemetry: { enabled: false }
    })
  )
  writeFileSync(join(home, "notes.txt"), "The secret word is pineapple.\n")
})
afterAll(async () => {
  await gateway.close()
  rmSync(home, { recursive: true, force: true })
})

const ask = (prompt: string, model: string, key: string = KEY) =>
  new Promise<{ readonly code: number; readonly out: string }>((resolve) => {
    execFile(
      gemini,
      ["-p", prompt, "--model", model, "--output-format", "json"],
      {
        cwd: home,
        timeout: 90_000,
        env: {
          PATH: process.env.PATH,
          HOME: home,
          GEMINI_CLI_TRUST_WORKSPACE: "true",
          GEMINI_API_KEY: key,
          GOOGLE_GEMINI_BASE_URL: gateway.url,
          NO_COLOR: "1"
        }
      },
      (error, stdout, stderr) =>
        resolve({ code: error === null ? 0 : (error as { code?: number }).code ?? 1, out: `${stdout}\n${stderr}` })
    )
  })

const responseOf = (out: string): string => {
  const start = out.indexOf("{")
  const parsed = JSON.parse(out.slice(start, out.lastIndexOf("}") + 1)) as { response?: string }
  return parsed.response ?? ""
}

describe("gemini-cli", () => {
  for (
    const [label, plain, tools] of [
      ["a Gemini channel", "gemini-2.5-flash", "gemini-tool-model"],
      ["an OpenAI channel", "gpt-4o-mini", "tool-model"]
    ] as const
  ) {
    it(`answers a plain prompt through ${label}`, async () => {
      const result = await ask("Say hello", plain)
      assert.strictEqual(result.code, 0, result.out)
      assert.match(responseOf(result.out), /Hello from fake-upstream/)
    })

    it(`runs a tool and answers with its result through ${label}`, async () => {
      const before = gateway.upstream.requests.length
      const result = await ask("Use a tool, then answer.", tools)
      assert.strictEqual(result.code, 0, result.out)
      const sent = gateway.upstream.requests.slice(before)
      // The model's tool call reached the CLI, the CLI ran the tool, and the follow-up carried its result.
      const followUp = sent.find((r) =>
        JSON.stringify(r.body).includes(plain === "gpt-4o-mini" ? "\"role\":\"tool\"" : "\"functionResponse\"")
      )
      assert.isDefined(followUp, "the CLI sent the tool's result back")
      // The fake upstream answers a tool result by quoting it.
      assert.match(responseOf(result.out), /The tool \w+ returned/)
    })
  }
})

describe("gemini-cli refused by the gateway", () => {
  it(
    "with an empty balance stops at once and prints the gateway's words (the balance, the amount needed)",
    async () => {
      const started = Date.now()
      const result = await ask("Say hello", "gemini-2.5-flash", POOR_KEY)
      const seconds = (Date.now() - started) / 1000
      assert.notStrictEqual(result.code, 0, result.out)
      assert.notInclude(result.out, "exhausted your daily quota", "gemini-cli's own words replace the gateway's")
      assert.match(result.out, /Your balance is 0\.00 USD/, result.out)
      assert.match(result.out, /up to \d+\.\d+ USD/, result.out)
      assert.isBelow(seconds, 60, `it took ${seconds} s`)
    },
    90_000
  )

  it("with a wrong key stops within seconds and prints the gateway's words (which key)", async () => {
    const started = Date.now()
    const result = await ask("Say hello", "gemini-2.5-flash", "sk-test-wrong-gemini-cli-00000000000000000")
    const seconds = (Date.now() - started) / 1000
    assert.notStrictEqual(result.code, 0, result.out)
    assert.include(result.out, "The API key 'sk-tes...' is not valid", result.out)
    assert.isBelow(seconds, 60, `it took ${seconds} s`)
  }, 90_000)
})
