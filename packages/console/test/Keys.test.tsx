/**
 * The create-key form and the keys table: validation next to the field with
 * the shared Schema, the server's field errors, the request sent (with the
 * CSRF token), the secret shown once, and the table's contents.
 */
import { screen, waitFor, within } from "@testing-library/react"
import userEvent from "@testing-library/user-event"
import { afterEach, assert, describe, it, vi } from "vitest"
import { setCsrfToken } from "../src/lib/api.ts"
import { KeysPage, KeysTable } from "../src/pages/Keys.tsx"
import { fakeApi, renderWithProviders, session } from "./render.tsx"

const groups = {
  groups: [
    {
      name: "default",
      ratio: "1",
      limits: { rpm: null, tpm: null, concurrency: null },
      models: [{ id: "gpt-4o-mini", displayName: "GPT-4o mini", prices: { input: "0.15", output: "0.60", cachedInput: null, perRequest: null, free: false }, inputTokenLimit: 128000, outputTokenLimit: 16384 }]
    }
  ]
}

const key = (over: Record<string, unknown> = {}) => ({
  id: "key_1",
  name: "laptop",
  prefix: "sk-AbCdEfG",
  group: "default",
  models: [],
  expiresAt: null,
  enabled: true,
  quota: "20.00",
  spent: "1.25",
  lastUsedAt: null,
  createdAt: 1_700_000_000_000,
  ...over
})

afterEach(() => {
  vi.unstubAllGlobals()
  setCsrfToken(null)
})

describe("KeysTable", () => {
  it("shows prefix, group, models, last use and spend of each key", () => {
    renderWithProviders(<KeysTable keys={[key(), key({ id: "key_2", name: "ci", models: ["gpt-4o-mini"], enabled: false, quota: null, spent: "0.000125" })]} />)
    const rows = screen.getAllByRole("row")
    assert.strictEqual(rows.length, 3)
    const first = within(rows[1]!)
    first.getByText("laptop")
    first.getByText("sk-AbCdEfG…")
    first.getByText("$1.25")
    first.getByText("/ $20.00")
    first.getByText("Never")
    const second = within(rows[2]!)
    second.getByText("gpt-4o-mini")
    second.getByText("$0.000125")
    second.getByText("Disabled")
  })

  it("speaks Chinese when switched", () => {
    renderWithProviders(<KeysTable keys={[key()]} />, { language: "zh" })
    screen.getByText("最近使用")
    screen.getByText("从未")
  })
})

describe("create key", () => {
  it("validates the name next to the field before sending anything", async () => {
    const seen = fakeApi({ "GET /api/auth/session": session(), "GET /api/keys": { body: { data: [] } }, "GET /api/models": { body: groups } })
    renderWithProviders(<KeysPage />)
    const user = userEvent.setup()
    await waitFor(() => assert.isFalse(screen.getAllByRole("button", { name: "Create key" })[0]!.hasAttribute("disabled")))
    await user.click(screen.getAllByRole("button", { name: "Create key" })[0]!)
    const dialog = await screen.findByRole("dialog")
    await user.type(within(dialog).getByLabelText("Spending cap (USD)"), "lots")
    await user.click(within(dialog).getByRole("button", { name: "Create" }))
    await within(dialog).findByText("Required")
    within(dialog).getByText(/Enter a non-negative amount in USD/)
    assert.isFalse(seen.some((r) => r.method === "POST"), "nothing was sent")
  })

  it("sends the request with the CSRF token, then shows the secret once", async () => {
    const seen = fakeApi({
      "GET /api/auth/session": session(),
      "GET /api/keys": { body: { data: [] } },
      "GET /api/models": { body: groups },
      "POST /api/keys": { status: 201, body: { key: key({ name: "desk" }), secret: "sk-THE-SECRET-VALUE-1234567890" } }
    })
    setCsrfToken("csrf-123")
    renderWithProviders(<KeysPage />)
    const user = userEvent.setup()
    await waitFor(() => assert.isFalse(screen.getAllByRole("button", { name: "Create key" })[0]!.hasAttribute("disabled")))
    await user.click(screen.getAllByRole("button", { name: "Create key" })[0]!)
    const dialog = await screen.findByRole("dialog")
    await user.type(within(dialog).getByLabelText("Name"), "desk")
    await user.type(within(dialog).getByLabelText("Spending cap (USD)"), "5")
    await user.click(within(dialog).getByRole("button", { name: "Create" }))
    const secret = await screen.findByTestId("new-secret")
    assert.strictEqual(secret.textContent, "sk-THE-SECRET-VALUE-1234567890")
    screen.getByText(/only time it is shown/)
    const post = seen.find((r) => r.method === "POST")!
    assert.deepStrictEqual(post.body, { name: "desk", group: "default", quota: "5" })
    assert.strictEqual(post.headers["x-csrf-token"], "csrf-123")
  })

  it("puts the server's refusal next to the field it names", async () => {
    fakeApi({
      "GET /api/auth/session": session(),
      "GET /api/keys": { body: { data: [] } },
      "GET /api/models": { body: groups },
      "POST /api/keys": { status: 409, body: { error: { message: "name: you already have a key named 'desk'", type: "conflict_error", param: "name", code: "conflict" } } }
    })
    renderWithProviders(<KeysPage />)
    const user = userEvent.setup()
    await waitFor(() => assert.isFalse(screen.getAllByRole("button", { name: "Create key" })[0]!.hasAttribute("disabled")))
    await user.click(screen.getAllByRole("button", { name: "Create key" })[0]!)
    const dialog = await screen.findByRole("dialog")
    await user.type(within(dialog).getByLabelText("Name"), "desk")
    await user.click(within(dialog).getByRole("button", { name: "Create" }))
    await within(dialog).findByText("you already have a key named 'desk'")
  })

  it("shows an empty state with a call to action when there are no keys", async () => {
    fakeApi({ "GET /api/auth/session": session(), "GET /api/keys": { body: { data: [] } }, "GET /api/models": { body: groups } })
    renderWithProviders(<KeysPage />)
    await screen.findByText("No API keys yet")
  })

  it("shows an error state with retry when the list fails", async () => {
    fakeApi({
      "GET /api/auth/session": session(),
      "GET /api/keys": { status: 403, body: { error: { message: "Your account may not list keys.", type: "permission_error", param: null, code: null } } },
      "GET /api/models": { body: groups }
    })
    renderWithProviders(<KeysPage />)
    await screen.findByText("Your account may not list keys.")
    screen.getByRole("button", { name: "Try again" })
  })

  it("says why keys cannot be created when the models fail to load", async () => {
    fakeApi({
      "GET /api/auth/session": session(),
      "GET /api/keys": { body: { data: [] } },
      "GET /api/models": { status: 403, body: { error: { message: "Your account is disabled.", type: "permission_error", param: null, code: "forbidden" } } }
    })
    renderWithProviders(<KeysPage />)
    await screen.findByText("Your account is disabled.")
    screen.getByRole("button", { name: "Try again" })
    assert.isTrue(screen.getAllByRole("button", { name: "Create key" })[0]!.hasAttribute("disabled"))
  })
})
