/**
 * Administration of users: the create-user and adjust-balance forms
 * (validation next to the field, requests sent), the users table (rendering,
 * search, empty state), and one user's page: disabling by the switch asks
 * first, and usage and ledger page past the first 50.
 */
import { screen, waitFor, within } from "@testing-library/react"
import userEvent from "@testing-library/user-event"
import { Route, Routes } from "react-router"
import { assert, describe, it, vi } from "vitest"
import {
  AdjustBalanceForm,
  AdminUserPage,
  AdminUsersPage,
  CreateUserForm,
  ResetPasswordForm
} from "../src/pages/admin/Users.tsx"
import { fakeApi, page, queryOf, refusal, renderWithProviders, session } from "./render.tsx"

const adminUser = (over: Record<string, unknown> = {}) => ({
  id: "usr_2",
  name: "bob",
  role: "user",
  enabled: true,
  balance: "2.5",
  groups: ["default"],
  keyCount: 1,
  spentThisMonth: "0.0421",
  rpm: null,
  tpm: null,
  concurrency: null,
  source: "console",
  createdAt: Date.UTC(2026, 0, 2),
  ...over
})

const usageRecord = (id: string, model: string) => ({
  id,
  createdAt: Date.UTC(2026, 0, 15),
  requestId: `req_${id}`,
  userId: "usr_2",
  userName: "bob",
  keyId: "key_1",
  keyName: "bob-laptop",
  model,
  dialect: "openai",
  stream: false,
  promptTokens: 10,
  completionTokens: 20,
  cachedTokens: 0,
  reasoningTokens: 0,
  usageReported: true,
  cost: "0.01",
  latencyMs: 100,
  ttfbMs: null,
  status: 200,
  errorCode: null,
  errorMessage: null
})

describe("create user", () => {
  it("checks the name and password next to their fields", async () => {
    const seen = fakeApi({ "GET /api/auth/session": session("admin") })
    renderWithProviders(<CreateUserForm groups={["default"]} onDone={() => {}} />)
    const user = userEvent.setup()
    await user.type(screen.getByLabelText("User name"), "-bad name")
    await user.type(screen.getByLabelText("Initial password"), "short")
    await user.type(screen.getByLabelText("Opening balance (USD)"), "-3")
    await user.click(screen.getByRole("button", { name: "Create" }))
    await screen.findByText("1-64 letters, digits, '.', '_', '@' or '-', starting with a letter or digit")
    screen.getByText("At least 8 characters")
    screen.getByText(/Enter a non-negative amount in USD/)
    assert.isFalse(seen.some((r) => r.method === "POST"))
  })

  it("sends the user with the opening balance and reports a taken name", async () => {
    const seen = fakeApi({
      "GET /api/auth/session": session("admin"),
      "POST /api/admin/users": refusal(409, "conflict", "A user named 'carol' already exists.")
    })
    const onDone = vi.fn()
    renderWithProviders(<CreateUserForm groups={["default"]} onDone={onDone} />)
    const user = userEvent.setup()
    await user.type(screen.getByLabelText("User name"), "carol")
    await user.type(screen.getByLabelText("Initial password"), "carol-password")
    await user.type(screen.getByLabelText("Opening balance (USD)"), "12.5")
    await user.click(screen.getByRole("button", { name: "Create" }))
    await screen.findByText("A user named 'carol' already exists.")
    assert.deepStrictEqual(seen.find((r) => r.method === "POST")!.body, {
      name: "carol",
      password: "carol-password",
      role: "user",
      balance: "12.5"
    })
    assert.strictEqual(onDone.mock.calls.length, 0)
  })
})

describe("adjust balance", () => {
  it("refuses a zero amount and a missing reason, in Chinese too", async () => {
    fakeApi({ "GET /api/auth/session": session("admin") })
    renderWithProviders(<AdjustBalanceForm user={{ id: "usr_2", name: "bob", balance: "2.5" }} onDone={() => {}} />, {
      language: "zh"
    })
    const user = userEvent.setup()
    await user.type(screen.getByLabelText("金额（美元，负数表示扣除）"), "0")
    await user.click(screen.getByRole("button", { name: "调整余额" }))
    await screen.findByText("金额不能为 0")
    screen.getByText("请说明余额变动的原因")
  })

  it("asks before changing the balance, saying what it becomes, and sends a signed amount with its reason", async () => {
    const seen = fakeApi({
      "GET /api/auth/session": session("admin"),
      "POST /api/admin/users/usr_2/adjust": { body: { balance: "0.5" } }
    })
    const onDone = vi.fn()
    renderWithProviders(<AdjustBalanceForm user={{ id: "usr_2", name: "bob", balance: "2.5" }} onDone={onDone} />)
    const user = userEvent.setup()
    await user.type(screen.getByLabelText("Amount (USD, negative to deduct)"), "-2")
    await user.type(screen.getByLabelText("Reason (shown in the user's history)"), " refund reversed ")
    await user.click(screen.getByRole("button", { name: "Adjust balance" }))
    const dialog = await screen.findByRole("dialog", { name: "Change bob's balance?" })
    within(dialog).getByText("Take $2.00 from the balance of $2.50 (now: $0.50). Reason: refund reversed")
    assert.isUndefined(seen.find((r) => r.method === "POST"), "nothing is sent before the confirmation")
    await user.click(within(dialog).getByRole("button", { name: "Cancel" }))
    assert.isUndefined(seen.find((r) => r.method === "POST"), "nor after a cancel")
    await user.click(screen.getByRole("button", { name: "Adjust balance" }))
    await user.click(within(await screen.findByRole("dialog")).getByRole("button", { name: "Change the balance" }))
    await waitFor(() => assert.deepStrictEqual(onDone.mock.calls, [["0.5"]]))
    assert.deepStrictEqual(seen.find((r) => r.method === "POST")!.body, { amount: "-2", reason: "refund reversed" })
    assert.strictEqual(
      (screen.getByLabelText("Amount (USD, negative to deduct)") as HTMLInputElement).value,
      "",
      "the form is cleared"
    )
  })
})

describe("reset password", () => {
  it("checks the new password and its repetition, then sends it", async () => {
    const seen = fakeApi({
      "GET /api/auth/session": session("admin"),
      "PATCH /api/admin/users/usr_2": { body: adminUser({ id: "usr_2", name: "bob" }) }
    })
    const onDone = vi.fn()
    renderWithProviders(<ResetPasswordForm user={{ id: "usr_2", name: "bob" }} onDone={onDone} />)
    const user = userEvent.setup()
    await user.type(screen.getByLabelText("New password"), "short")
    await user.click(screen.getByRole("button", { name: "Set a new password" }))
    await screen.findByText("At least 8 characters")
    await user.clear(screen.getByLabelText("New password"))
    await user.type(screen.getByLabelText("New password"), "a long new password")
    await user.type(screen.getByLabelText("The same password again"), "a long new passwort")
    await user.click(screen.getByRole("button", { name: "Set a new password" }))
    await screen.findByText("The two passwords differ")
    assert.isUndefined(seen.find((r) => r.method === "PATCH"))
    await user.clear(screen.getByLabelText("The same password again"))
    await user.type(screen.getByLabelText("The same password again"), "a long new password")
    await user.click(screen.getByRole("button", { name: "Set a new password" }))
    await waitFor(() => assert.strictEqual(onDone.mock.calls.length, 1))
    assert.deepStrictEqual(seen.find((r) => r.method === "PATCH")!.body, { password: "a long new password" })
  })
})

describe("users table", () => {
  it("lists users with role, groups, balance, spend and status, and searches by name", async () => {
    fakeApi({
      "GET /api/auth/session": session("admin"),
      "GET /api/admin/groups": { body: { data: [] } },
      "GET /api/admin/users": {
        body: {
          data: [
            adminUser(),
            adminUser({ id: "usr_3", name: "carol", role: "admin", enabled: false, groups: [], balance: "100" })
          ]
        }
      }
    })
    renderWithProviders(<AdminUsersPage />)
    const table = await screen.findByTestId("users-table")
    const rows = within(table).getAllByRole("row")
    assert.strictEqual(rows.length, 3)
    const bob = within(rows[1]!)
    bob.getByRole("link", { name: "bob" })
    bob.getByText("$2.50")
    // Under a dollar, at least four decimals; every digit on hover.
    assert.strictEqual(bob.getByText("$0.0421").getAttribute("data-exact"), "$0.0421")
    bob.getByText("default")
    bob.getByText("Enabled")
    const carol = within(rows[2]!)
    carol.getByText("Admin")
    carol.getByText("$100.00")
    carol.getByText("Disabled")
    const user = userEvent.setup()
    await user.type(screen.getByPlaceholderText("Search"), "car")
    await waitFor(() => assert.strictEqual(within(table).getAllByRole("row").length, 2))
    within(table).getByText("carol")
  })

  it("shows an empty state", async () => {
    fakeApi({
      "GET /api/auth/session": session("admin"),
      "GET /api/admin/groups": { body: { data: [] } },
      "GET /api/admin/users": { body: { data: [] } }
    })
    renderWithProviders(<AdminUsersPage />)
    await screen.findByText("No users")
  })
})

describe("one user's page", () => {
  const routes = (over: Record<string, unknown> = {}) => ({
    "GET /api/auth/session": session("admin"),
    "GET /api/admin/groups": { body: { data: [] } },
    "GET /api/admin/users/usr_2": { body: adminUser() },
    "GET /api/admin/users/usr_2/keys": { body: { data: [] } },
    "GET /api/admin/users/usr_2/ledger": page([]),
    "GET /api/admin/users/usr_2/usage": page([]),
    ...over
  })
  const show = () =>
    renderWithProviders(
      <Routes>
        <Route path="/admin/users/:id" element={<AdminUserPage />} />
        <Route path="/admin/users" element={<p>the users list</p>} />
      </Routes>,
      { path: "/admin/users/usr_2" }
    )

  it("deletes the user after saying what happens to their keys and history, then goes back to the list", async () => {
    const seen = fakeApi({ ...routes(), "DELETE /api/admin/users/usr_2": { body: { ok: true } } })
    show()
    const user = userEvent.setup()
    await user.click(await screen.findByRole("button", { name: "Delete user" }))
    const dialog = await screen.findByRole("dialog", { name: "Delete bob?" })
    within(dialog).getByText(/keys are revoked at once/)
    await user.click(within(dialog).getByRole("button", { name: "Delete user" }))
    await screen.findByText("the users list")
    assert.strictEqual(seen.filter((r) => r.method === "DELETE").length, 1)
  })

  it("asks before disabling by the switch, and sends nothing when cancelled", async () => {
    const seen = fakeApi({ ...routes(), "PATCH /api/admin/users/usr_2": { body: adminUser({ enabled: false }) } })
    show()
    const user = userEvent.setup()
    const toggle = await screen.findByRole("switch", { name: "Enabled" })
    await user.click(toggle)
    const dialog = await screen.findByRole("dialog")
    within(dialog).getByText("Disable bob?")
    await user.click(within(dialog).getByRole("button", { name: "Cancel" }))
    assert.isFalse(seen.some((r) => r.method === "PATCH"), "cancelling changes nothing")
    await user.click(toggle)
    await user.click(within(await screen.findByRole("dialog")).getByRole("button", { name: "Disable" }))
    await waitFor(() =>
      assert.deepStrictEqual(seen.filter((r) => r.method === "PATCH").map((r) => r.body), [{ enabled: false }])
    )
  })

  it("pages through the user's requests past the first page", async () => {
    const seen = fakeApi(routes({
      "GET /api/admin/users/usr_2/usage": (request: { url: string }) =>
        new URL(request.url, "http://x").searchParams.get("cursor") === "p2"
          ? page([usageRecord("u3", "gemini-2.5-flash")])
          : page([usageRecord("u1", "gpt-4o"), usageRecord("u2", "gpt-4o-mini")], "p2")
    }))
    show()
    const user = userEvent.setup()
    await user.click(await screen.findByRole("tab", { name: "Recent requests" }))
    await user.click(await screen.findByRole("button", { name: "Load more" }))
    await screen.findByText("gemini-2.5-flash")
    const calls = seen.filter((r) => r.url.startsWith("/api/admin/users/usr_2/usage"))
    assert.deepStrictEqual(calls.map((r) => queryOf(r)["cursor"] ?? null), [null, "p2"])
  })
})
