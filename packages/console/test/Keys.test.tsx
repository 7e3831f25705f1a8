/**
 * The create-key form and the keys table: validation next to the field with
 * the shared Schema, the server's field errors, the request sent (with the
 * CSRF token), the secret shown once, and the table's contents.
 */
import { renderHook, screen, waitFor, within } from "@testing-library/react"
import userEvent from "@testing-library/user-event"
import { assert, describe, it } from "vitest"
import { setCsrfToken } from "../src/lib/api.ts"
import { rememberNewKey, useNewKey } from "../src/lib/newKey.ts"
import { KeysPage, KeysTable } from "../src/pages/Keys.tsx"
import { fakeApi, renderWithProviders, session } from "./render.tsx"

const groups = {
  groups: [
    {
      name: "default",
      ratio: "1",
      limits: { rpm: null, tpm: null, concurrency: null },
      models: [{
        id: "gpt-4o-mini",
        displayName: "GPT-4o mini",
        prices: { input: "0.15", output: "0.60", cachedInput: null, perRequest: null, free: false },
        inputTokenLimit: 128000,
        outputTokenLimit: 16384,
        holdAtMaxOutput: "0.0098304"
      }]
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
  dailyBudget: null,
  monthlyBudget: null,
  spent: "1.25",
  rpm: null,
  tpm: null,
  concurrency: null,
  lastUsedAt: null,
  createdAt: 1_700_000_000_000,
  ...over
})

describe("KeysTable", () => {
  it("shows prefix, group, models, last use and spend of each key", () => {
    renderWithProviders(
      <KeysTable
        keys={[
          key(),
          key({ id: "key_2", name: "ci", models: ["gpt-4o-mini"], enabled: false, quota: null, spent: "0.000125" })
        ]}
      />
    )
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

  it("shows each key's own limits and daily/monthly caps", () => {
    renderWithProviders(
      <KeysTable keys={[key({ rpm: 10, concurrency: 2, dailyBudget: "1.50", monthlyBudget: null })]} />
    )
    const row = within(screen.getAllByRole("row")[1]!)
    row.getByText("10 requests/min · 2 at once")
    row.getByText("Daily cap (USD): $1.50")
    assert.isNull(row.queryByText(/Monthly cap/))
  })

  it("speaks Chinese when switched", () => {
    renderWithProviders(<KeysTable keys={[key()]} />, { language: "zh" })
    screen.getByText("最近使用")
    screen.getByText("从未")
  })
})

/** Renders the keys page, waits until "Create key" is enabled, and opens its dialog. */
const openCreateDialog = async () => {
  renderWithProviders(<KeysPage />)
  const user = userEvent.setup()
  await waitFor(() =>
    assert.isFalse(screen.getAllByRole("button", { name: "Create key" })[0]!.hasAttribute("disabled"))
  )
  await user.click(screen.getAllByRole("button", { name: "Create key" })[0]!)
  return { user, dialog: await screen.findByRole("dialog") }
}

describe("create key", () => {
  it("validates the name next to the field before sending anything", async () => {
    const seen = fakeApi({
      "GET /api/auth/session": session(),
      "GET /api/keys": { body: { data: [] } },
      "GET /api/models": { body: groups }
    })
    const { user, dialog } = await openCreateDialog()
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
    const { user, dialog } = await openCreateDialog()
    await user.type(within(dialog).getByLabelText("Name"), "desk")
    await user.type(within(dialog).getByLabelText("Spending cap (USD)"), "5")
    await user.click(within(dialog).getByRole("button", { name: "Create" }))
    const secret = await screen.findByTestId("new-secret")
    assert.strictEqual(secret.textContent, "sk-THE-SECRET-VALUE-1234567890")
    screen.getByText(/only time it is shown/)
    const post = seen.find((r) => r.method === "POST")!
    assert.deepStrictEqual(post.body, { name: "desk", group: "default", quota: "5" })
    assert.strictEqual(post.headers["x-csrf-token"], "csrf-123")
    // The connect page of this tab can fill the new key into its settings.
    const remembered = renderHook(() => useNewKey()).result.current
    assert.deepStrictEqual(remembered, { name: "desk", secret: "sk-THE-SECRET-VALUE-1234567890" })
    rememberNewKey(undefined)
  })

  it("sends the key's own limits and caps, and shows the group's limits beside them", async () => {
    const limitedGroups = { groups: [{ ...groups.groups[0]!, limits: { rpm: 60, tpm: null, concurrency: null } }] }
    const seen = fakeApi({
      "GET /api/auth/session": session(),
      "GET /api/keys": { body: { data: [] } },
      "GET /api/models": { body: limitedGroups },
      "POST /api/keys": {
        status: 201,
        body: { key: key({ name: "ci", rpm: 10, monthlyBudget: "30.00" }), secret: "sk-THE-SECRET-VALUE-1234567890" }
      }
    })
    const { user, dialog } = await openCreateDialog()
    within(dialog).getByText("Empty: the group's limit. A key can only be set lower than its group (60 requests/min).")
    await user.type(within(dialog).getByLabelText("Name"), "ci")
    await user.type(within(dialog).getByLabelText("Requests / min"), "10")
    await user.type(within(dialog).getByLabelText("Monthly cap (USD)"), "30")
    await user.click(within(dialog).getByRole("button", { name: "Create" }))
    await screen.findByTestId("new-secret")
    const post = seen.find((r) => r.method === "POST")!
    assert.deepStrictEqual(post.body, { name: "ci", group: "default", rpm: 10, monthlyBudget: "30" })
  })

  it("refuses a limit that is not a whole number next to its field", async () => {
    const seen = fakeApi({
      "GET /api/auth/session": session(),
      "GET /api/keys": { body: { data: [] } },
      "GET /api/models": { body: groups }
    })
    const { user, dialog } = await openCreateDialog()
    await user.type(within(dialog).getByLabelText("Name"), "ci")
    await user.type(within(dialog).getByLabelText("Concurrent calls"), "0")
    await user.click(within(dialog).getByRole("button", { name: "Create" }))
    await within(dialog).findByText("Must be a whole number above 0, or empty for no limit")
    assert.isFalse(seen.some((r) => r.method === "POST"), "nothing was sent")
  })

  it("edits an existing key's limits: emptied fields are sent as null", async () => {
    const existing = key({ rpm: 10, dailyBudget: "2.00" })
    const seen = fakeApi({
      "GET /api/auth/session": session(),
      "GET /api/keys": { body: { data: [existing] } },
      "GET /api/models": { body: groups },
      "PATCH /api/keys/key_1": { body: { ...existing, rpm: 5, dailyBudget: null } }
    })
    renderWithProviders(<KeysPage />)
    const user = userEvent.setup()
    await user.click(await screen.findByRole("button", { name: "Edit: laptop" }))
    const dialog = await screen.findByRole("dialog")
    const rpm = within(dialog).getByLabelText("Requests / min")
    assert.strictEqual((rpm as HTMLInputElement).value, "10")
    await user.clear(rpm)
    await user.type(rpm, "5")
    await user.clear(within(dialog).getByLabelText("Daily cap (USD)"))
    await user.click(within(dialog).getByRole("button", { name: "Save" }))
    await waitFor(() => assert.isTrue(seen.some((r) => r.method === "PATCH")))
    const patch = seen.find((r) => r.method === "PATCH")!
    assert.deepStrictEqual(patch.body, { rpm: 5, tpm: null, concurrency: null, dailyBudget: null, monthlyBudget: null })
  })

  it("puts the server's refusal next to the field it names", async () => {
    fakeApi({
      "GET /api/auth/session": session(),
      "GET /api/keys": { body: { data: [] } },
      "GET /api/models": { body: groups },
      "POST /api/keys": {
        status: 409,
        body: {
          error: {
            message: "name: you already have a key named 'desk'",
            type: "conflict_error",
            param: "name",
            code: "conflict"
          }
        }
      }
    })
    const { user, dialog } = await openCreateDialog()
    await user.type(within(dialog).getByLabelText("Name"), "desk")
    await user.click(within(dialog).getByRole("button", { name: "Create" }))
    await within(dialog).findByText("you already have a key named 'desk'")
  })

  it("shows an empty state with a call to action when there are no keys", async () => {
    fakeApi({
      "GET /api/auth/session": session(),
      "GET /api/keys": { body: { data: [] } },
      "GET /api/models": { body: groups }
    })
    renderWithProviders(<KeysPage />)
    await screen.findByText("No API keys yet")
  })

  it("shows an error state with retry when the list fails", async () => {
    fakeApi({
      "GET /api/auth/session": session(),
      "GET /api/keys": {
        status: 403,
        body: {
          error: { message: "Your account may not list keys.", type: "permission_error", param: null, code: null }
        }
      },
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
      "GET /api/models": {
        status: 403,
        body: {
          error: { message: "Your account is disabled.", type: "permission_error", param: null, code: "forbidden" }
        }
      }
    })
    renderWithProviders(<KeysPage />)
    await screen.findByText("Your account is disabled.")
    screen.getByRole("button", { name: "Try again" })
    assert.isTrue(screen.getAllByRole("button", { name: "Create key" })[0]!.hasAttribute("disabled"))
  })
})
