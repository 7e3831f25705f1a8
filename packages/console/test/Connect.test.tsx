/**
 * The "Connect a client" page: Claude Code's environment variables and
 * settings.json env block and Codex CLI's config.toml provider, with this
 * server's addresses, and the key the user created last in this tab filled
 * in (a placeholder otherwise, and again after signing out).
 */
import { act, screen, waitFor } from "@testing-library/react"
import { afterEach, assert, describe, it } from "vitest"
import { rememberNewKey } from "../src/lib/newKey.ts"
import { ConnectPage, KEY_PLACEHOLDER, snippets } from "../src/pages/Connect.tsx"
import { fakeApi, renderWithProviders, session } from "./render.tsx"

const info = {
  baseUrl: "https://llm.example.com",
  openaiBaseUrl: "https://llm.example.com/v1",
  geminiBaseUrl: "https://llm.example.com",
  geminiApiVersion: "v1beta" as const,
  exampleModel: "claude-sonnet-4-5"
}

afterEach(() => rememberNewKey(undefined))

describe("connect page", () => {
  it("gives Claude Code the server's root and Codex the /v1 address with the Responses wire", () => {
    const s = snippets(info, "sk-abc")
    assert.include(s.claudeCodeEnv, "export ANTHROPIC_BASE_URL=\"https://llm.example.com\"")
    assert.include(s.claudeCodeEnv, "export ANTHROPIC_AUTH_TOKEN=\"sk-abc\"")
    assert.deepStrictEqual(JSON.parse(s.claudeCodeSettings), {
      env: {
        ANTHROPIC_BASE_URL: "https://llm.example.com",
        ANTHROPIC_AUTH_TOKEN: "sk-abc",
        ANTHROPIC_MODEL: "claude-sonnet-4-5",
        ANTHROPIC_DEFAULT_HAIKU_MODEL: "claude-sonnet-4-5",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1"
      }
    })
    assert.include(s.codexConfig, "base_url = \"https://llm.example.com/v1\"")
    assert.include(s.codexConfig, "wire_api = \"responses\"")
    assert.include(s.codexConfig, "env_key = \"MODELGATE_API_KEY\"")
    assert.include(s.codexEnv, "export MODELGATE_API_KEY=\"sk-abc\"")
    // gemini-cli is started with the model (its own default may be one the key cannot use).
    assert.include(s.geminiCliEnv, "export GEMINI_API_KEY=\"sk-abc\"")
    assert.include(s.geminiCliEnv, "\ngemini --model claude-sonnet-4-5")
    assert.include(snippets(info).claudeCodeEnv, KEY_PLACEHOLDER)
  })

  it("fills in the key created last in this tab, and shows the placeholder otherwise", async () => {
    const laptop = {
      id: "key_1",
      name: "laptop",
      prefix: "sk-new-sec",
      group: "default",
      models: ["gpt-4o-mini"],
      expiresAt: null,
      enabled: true,
      quota: null,
      dailyBudget: null,
      monthlyBudget: null,
      spent: "0.00",
      rpm: null,
      tpm: null,
      concurrency: null,
      lastUsedAt: null,
      createdAt: 1_700_000_000_000
    }
    fakeApi({
      "GET /api/auth/session": session(),
      "GET /api/connect": { body: info },
      "GET /api/keys": { body: { data: [laptop] } },
      "GET /api/models": { body: { groups: [] } }
    })
    renderWithProviders(<ConnectPage />)
    await screen.findByTestId("claude-base")
    assert.strictEqual(screen.getByTestId("claude-base").textContent, "https://llm.example.com")
    assert.strictEqual(screen.getByTestId("codex-base").textContent, "https://llm.example.com/v1")
    // The key is picked by name, but its secret is not known here: a placeholder stands for it.
    await waitFor(() => assert.include(screen.getByTestId("connect-key").textContent ?? "", "was shown once"))
    assert.isAbove(screen.getAllByText(/YOUR_MODELGATE_KEY/).length, 3)
    // The snippets use a model the key may call, and nothing names the server's example model it may not.
    assert.isAbove(screen.getAllByText(/gpt-4o-mini/).length, 3)
    assert.include(screen.getByText(/^Model: /).textContent ?? "", "gpt-4o-mini")
    assert.strictEqual(screen.queryAllByText(/claude-sonnet-4-5/).length, 0)
    act(() => rememberNewKey({ name: "laptop", secret: "sk-new-secret-123" }))
    assert.include(screen.getByTestId("connect-key").textContent ?? "", "laptop")
    assert.isAbove(screen.getAllByText(/sk-new-secret-123/).length, 3)
    assert.strictEqual(screen.queryAllByText(/YOUR_MODELGATE_KEY/).length, 0)
  })
})
