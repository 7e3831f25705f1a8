/**
 * The sign-in form and the change-password dialog: problems next to their
 * fields before anything is sent, the server's refusals in the chosen
 * language, the requests sent, and the signed-in app afterwards.
 */
import { screen, waitFor, within } from "@testing-library/react"
import userEvent from "@testing-library/user-event"
import { assert, describe, it, vi } from "vitest"
import { App } from "../src/App.tsx"
import { setCsrfToken } from "../src/lib/api.ts"
import { ChangePasswordModal } from "../src/pages/ChangePassword.tsx"
import { fakeApi, refusal, renderWithProviders, session } from "./render.tsx"

const signedOut = refusal(401, "unauthenticated", "Sign in first.")

const dashboard = {
  body: {
    balance: "12.50",
    spentToday: "0",
    spentThisMonth: "0",
    requestsToday: 0,
    tokensToday: 0,
    activeKeys: 0,
    daily: []
  }
}

describe("sign-in", () => {
  it("says what is missing next to each field and sends nothing", async () => {
    const seen = fakeApi({ "GET /api/auth/session": signedOut })
    renderWithProviders(<App />)
    const user = userEvent.setup()
    await user.click(await screen.findByRole("button", { name: "Sign in" }))
    await screen.findByText("Enter your user name")
    screen.getByText("Enter your password")
    assert.isFalse(seen.some((r) => r.method === "POST"))
  })

  it("shows a wrong password as the server says it, and signs in with the right one", async () => {
    let attempts = 0
    const seen = fakeApi({
      "GET /api/auth/session": signedOut,
      "POST /api/auth/login": () =>
        ++attempts === 1
          ? refusal(401, "invalid_credentials", "Wrong user name or password.")
          : { body: session().body },
      "GET /api/dashboard": dashboard
    })
    renderWithProviders(<App />)
    const user = userEvent.setup()
    await user.type(await screen.findByLabelText("User name"), "alice")
    await user.type(screen.getByLabelText("Password"), "nope")
    await user.click(screen.getByRole("button", { name: "Sign in" }))
    const alert = await screen.findByRole("alert")
    within(alert).getByText("Wrong user name or password.")
    await user.clear(screen.getByLabelText("Password"))
    await user.type(screen.getByLabelText("Password"), "alice-password-1")
    await user.click(screen.getByRole("button", { name: "Sign in" }))
    await screen.findByTestId("balance")
    const posts = seen.filter((r) => r.method === "POST")
    assert.deepStrictEqual(posts.map((r) => r.body), [
      { username: "alice", password: "nope" },
      { username: "alice", password: "alice-password-1" }
    ])
  })

  it("speaks Chinese: field problems and refusals, with the wait of a 429", async () => {
    fakeApi({
      "GET /api/auth/session": signedOut,
      "POST /api/auth/login": refusal(
        429,
        "rate_limited",
        "Too many failed sign-in attempts. Try again in 42 seconds.",
        null,
        { "retry-after": "42" }
      )
    })
    renderWithProviders(<App />, { language: "zh" })
    const user = userEvent.setup()
    await user.click(await screen.findByRole("button", { name: "登录" }))
    await screen.findByText("请输入用户名")
    screen.getByText("请输入密码")
    await user.type(screen.getByLabelText("用户名"), "alice")
    await user.type(screen.getByLabelText("密码"), "guess")
    await user.click(screen.getByRole("button", { name: "登录" }))
    await screen.findByText("尝试次数过多，请在 42 秒后重试。")
    assert.isNull(screen.queryByText(/Too many/))
  })

  it("tells a network failure apart from a refusal", async () => {
    vi.stubGlobal("fetch", async (input: string | URL) => {
      if (new URL(String(input), "http://console.test").pathname === "/api/auth/session") {
        return new Response(JSON.stringify(signedOut.body), {
          status: 401,
          headers: { "content-type": "application/json" }
        })
      }
      throw new TypeError("Failed to fetch")
    })
    renderWithProviders(<App />)
    const user = userEvent.setup()
    await user.type(await screen.findByLabelText("User name"), "alice")
    await user.type(screen.getByLabelText("Password"), "x")
    await user.click(screen.getByRole("button", { name: "Sign in" }))
    await screen.findByText(/Cannot reach the server/)
  })
})

describe("change password", () => {
  const open = (language: "en" | "zh" = "en") => {
    const onClose = vi.fn()
    renderWithProviders(<ChangePasswordModal opened onClose={onClose} />, { language })
    return onClose
  }

  it("checks the new password and its repetition before sending", async () => {
    const seen = fakeApi({ "GET /api/auth/session": session() })
    open()
    const user = userEvent.setup()
    const dialog = await screen.findByRole("dialog")
    await user.type(within(dialog).getByLabelText("New password"), "short")
    await user.type(within(dialog).getByLabelText("Repeat the new password"), "shorter")
    await user.click(within(dialog).getByRole("button", { name: "Save" }))
    await within(dialog).findByText("Enter your current password")
    within(dialog).getByText("At least 8 characters")
    within(dialog).getByText("The passwords do not match")
    assert.isFalse(seen.some((r) => r.method === "POST"))
  })

  it("puts a wrong current password next to that field, in Chinese too", async () => {
    fakeApi({
      "GET /api/auth/session": session(),
      "POST /api/auth/password": refusal(
        400,
        "wrong_password",
        "currentPassword: the current password is wrong",
        "currentPassword"
      )
    })
    open("zh")
    const user = userEvent.setup()
    const dialog = await screen.findByRole("dialog")
    await user.type(within(dialog).getByLabelText("当前密码"), "not it")
    await user.type(within(dialog).getByLabelText("新密码"), "a new password")
    await user.type(within(dialog).getByLabelText("再次输入新密码"), "a new password")
    await user.click(within(dialog).getByRole("button", { name: "保存" }))
    await within(dialog).findByText("当前密码不正确")
  })

  it("sends the current and new password only, then closes", async () => {
    const seen = fakeApi({ "GET /api/auth/session": session(), "POST /api/auth/password": { body: { ok: true } } })
    setCsrfToken("csrf-123")
    const onClose = open()
    const user = userEvent.setup()
    const dialog = await screen.findByRole("dialog")
    await user.type(within(dialog).getByLabelText("Current password"), "old password")
    await user.type(within(dialog).getByLabelText("New password"), "a new password")
    await user.type(within(dialog).getByLabelText("Repeat the new password"), "a new password")
    await user.click(within(dialog).getByRole("button", { name: "Save" }))
    await waitFor(() => assert.strictEqual(onClose.mock.calls.length, 1))
    const post = seen.find((r) => r.method === "POST")!
    assert.deepStrictEqual(post.body, { currentPassword: "old password", newPassword: "a new password" })
    assert.strictEqual(post.headers["x-csrf-token"], "csrf-123")
    await screen.findByText(/Password changed/)
  })
})
