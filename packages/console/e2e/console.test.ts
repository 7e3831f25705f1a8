/**
 * The console in a real browser against the real server: sign in; create a
 * key and see its secret once; call the gateway with it through the openai
 * SDK; see the usage and the balance change; as admin create a channel and
 * press Test; generate a code and redeem it as a user; a user is refused an
 * admin page and another user's key. Screenshots of the main pages go to
 * docs/screenshots/.
 */
import OpenAI from "openai"
import type { Browser, BrowserContext, Page } from "playwright-core"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { ADMIN, ALICE, type E2EGateway, launchBrowser, screenshot, signIn, startGateway } from "./support.ts"

let gateway: E2EGateway
let browser: Browser
let closeBrowser: () => Promise<void>
let alice: { context: BrowserContext; page: Page }
let aliceSecret = ""

const newPage = async (viewport = { width: 1366, height: 860 }) => {
  const context = await browser.newContext({ viewport, locale: "en-US" })
  const page = await context.newPage()
  return { context, page }
}

beforeAll(async () => {
  gateway = await startGateway()
  const launched = await launchBrowser()
  browser = launched.browser
  closeBrowser = launched.close
  alice = await newPage()
})

afterAll(async () => {
  await closeBrowser?.()
  await gateway?.close()
})

describe("console", () => {
  it("signs in and shows the dashboard", async () => {
    const { page } = alice
    await page.goto(`${gateway.url}/console/`)
    await page.getByRole("button", { name: "Sign in" }).waitFor()
    await screenshot(page, "login")
    await page.getByLabel("User name").fill(ALICE.name)
    await page.getByLabel(/^Password/).fill("wrong password")
    await page.getByRole("button", { name: "Sign in" }).click()
    await page.getByText("Wrong user name or password.").waitFor()
    await page.getByLabel(/^Password/).fill(ALICE.password)
    await page.getByRole("button", { name: "Sign in" }).click()
    await page.getByTestId("balance").waitFor()
    assert.strictEqual(await page.getByTestId("balance").textContent(), "$5.00")
  })

  it("creates a key and shows its secret once", async () => {
    const { page } = alice
    await page.getByRole("link", { name: "API keys" }).click()
    await page.getByText("No API keys yet").waitFor()
    await page.getByRole("button", { name: "Create key" }).first().click()
    const dialog = page.getByRole("dialog")
    await dialog.getByRole("button", { name: "Create" }).click()
    await dialog.getByText("Required").waitFor()
    await dialog.getByLabel("Name").fill("laptop")
    await dialog.getByLabel("Spending cap (USD)").fill("3")
    await dialog.getByRole("button", { name: "Create" }).click()
    const secret = page.getByTestId("new-secret")
    await secret.waitFor()
    aliceSecret = (await secret.textContent()) ?? ""
    assert.match(aliceSecret, /^sk-[A-Za-z0-9]{40,}$/)
    await screenshot(page, "key-created")
    await page.getByRole("button", { name: "I have copied it" }).click()
    await page.getByTestId("keys-table").waitFor()
    const html = await page.content()
    assert.notInclude(html, aliceSecret, "the secret is not shown again")
    assert.include(html, aliceSecret.slice(0, 10))
    await screenshot(page, "keys")
  })

  it("calls the gateway with the key through the openai SDK and sees usage and balance change", async () => {
    const client = new OpenAI({ apiKey: aliceSecret, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
    for (const model of ["gpt-4o-mini", "gpt-4o", "gemini-2.5-flash"]) {
      const reply = await client.chat.completions.create({ model, messages: [{ role: "user", content: "Hello from the browser test" }] })
      assert.isAbove(reply.usage?.total_tokens ?? 0, 0)
    }
    const { page } = alice
    await page.waitForTimeout(800)
    await page.getByRole("link", { name: "Usage & billing" }).click()
    await page.getByTestId("usage-table").waitFor()
    assert.strictEqual(await page.getByTestId("usage-table").locator("tbody tr").count(), 3)
    await screenshot(page, "usage")
    await page.getByRole("link", { name: "Dashboard" }).click()
    await page.getByTestId("balance").waitFor()
    // The cached dashboard shows first; the refetch brings the new balance.
    await page.waitForFunction(() => document.querySelector("[data-testid=balance]")?.textContent !== "$5.00", undefined, { timeout: 10_000 })
    const balance = (await page.getByTestId("balance").textContent()) ?? ""
    assert.notStrictEqual(balance, "$5.00", "the balance went down")
    assert.match(balance, /^\$4\.9\d+/)
    assert.strictEqual(await page.getByTestId("requests-today").textContent(), "3")
    await screenshot(page, "dashboard")
  })

  it("shows models and the connect-a-client settings", async () => {
    const { page } = alice
    await page.getByRole("link", { name: "Models" }).click()
    await page.getByText("gemini-2.5-flash").first().waitFor()
    await screenshot(page, "models")
    await page.getByRole("link", { name: "Connect a client" }).click()
    await page.getByTestId("openai-base").waitFor()
    assert.strictEqual(await page.getByTestId("openai-base").textContent(), `${gateway.url}/v1`)
    assert.strictEqual(await page.getByTestId("gemini-base").textContent(), gateway.url)
    await page.getByText("GOOGLE_GEMINI_BASE_URL").first().waitFor()
    await screenshot(page, "connect")
  })

  it("refuses a user the admin pages and other users' keys", async () => {
    const { page } = alice
    await page.goto(`${gateway.url}/console/admin/users`)
    await page.getByText("This page is for administrators").waitFor()
    const results = await page.evaluate(async () => {
      const session = await (await fetch("/api/auth/session")).json() as { csrfToken: string }
      const headers = { "content-type": "application/json", "x-csrf-token": session.csrfToken }
      const users = await fetch("/api/admin/users")
      const keys = await fetch("/api/admin/users/usr_anyone/keys")
      return { users: users.status, keys: keys.status, csrf: session.csrfToken.length > 0, headers: Object.keys(headers).length }
    })
    assert.strictEqual(results.users, 403)
    assert.strictEqual(results.keys, 403)
    // Bob's key id, found by an admin, is not Alice's to read or change.
    const admin = await newPage()
    await signIn(admin.page, gateway.url, ADMIN)
    const bobKeyId = await admin.page.evaluate(async () => {
      const users = await (await fetch("/api/admin/users")).json() as { data: Array<{ id: string; name: string }> }
      const bob = users.data.find((u) => u.name === "bob")!
      const keys = await (await fetch(`/api/admin/users/${bob.id}/keys`)).json() as { data: Array<{ id: string }> }
      return keys.data[0]!.id
    })
    await admin.context.close()
    const tries = await page.evaluate(async (id) => {
      const session = await (await fetch("/api/auth/session")).json() as { csrfToken: string }
      const headers = { "content-type": "application/json", "x-csrf-token": session.csrfToken }
      const patch = await fetch(`/api/keys/${id}`, { method: "PATCH", headers, body: JSON.stringify({ enabled: false }) })
      const del = await fetch(`/api/keys/${id}`, { method: "DELETE", headers })
      const usage = await (await fetch(`/api/usage?keyId=${id}`)).json() as { data: Array<unknown> }
      return { patch: patch.status, del: del.status, usage: usage.data.length }
    }, bobKeyId)
    assert.deepStrictEqual(tries, { patch: 404, del: 404, usage: 0 })
  })

  it("as admin creates a channel and presses Test", async () => {
    const { page, context } = await newPage()
    await signIn(page, gateway.url, ADMIN)
    await page.getByRole("link", { name: "Channels" }).click()
    await page.getByTestId("channels-table").waitFor()
    await page.getByRole("button", { name: "New channel" }).click()
    const dialog = page.getByRole("dialog")
    await dialog.getByLabel("Name").fill("openai-backup")
    await dialog.getByLabel("Base address").fill(`${gateway.upstream.url}/v1`)
    await dialog.getByLabel(/Upstream API keys/).fill("sk-upstream-backup-1234")
    const models = dialog.getByLabel("Models")
    await models.fill("gpt-4o-mini")
    await models.press("Enter")
    await dialog.getByRole("button", { name: "Create" }).click()
    const row = page.locator("tr[data-channel='openai-backup']")
    await row.waitFor()
    assert.include(await row.textContent(), "…1234")
    assert.notInclude(await page.content(), "sk-upstream-backup-1234")
    await row.getByRole("button", { name: /^Test/ }).click()
    const result = row.getByTestId("test-result")
    await result.waitFor()
    assert.match((await result.textContent()) ?? "", /^OK in \d+ ms/)
    await screenshot(page, "admin-channels")
    await page.getByRole("link", { name: "Users" }).click()
    await page.getByTestId("users-table").waitFor()
    await screenshot(page, "admin-users")
    await page.getByRole("link", { name: "Usage overview" }).click()
    await page.getByText("Top users").waitFor()
    await screenshot(page, "admin-usage")
    await context.close()
  })

  it("generates a code as admin and redeems it as a user", async () => {
    const { page, context } = await newPage()
    await signIn(page, gateway.url, ADMIN)
    await page.getByRole("link", { name: "Redemption codes" }).click()
    await page.getByLabel("How many").fill("3")
    await page.getByLabel("Value of each (USD)").fill("7.5")
    await page.getByRole("button", { name: "Generate codes" }).click()
    const codesBlock = page.getByTestId("generated-codes")
    await codesBlock.waitFor()
    const codes = ((await codesBlock.locator("pre, code").first().textContent()) ?? "").trim().split("\n")
    assert.strictEqual(codes.length, 3)
    await page.getByRole("button", { name: "I have copied it" }).click()
    await page.getByTestId("codes-table").waitFor()
    await screenshot(page, "admin-codes")

    const user = alice.page
    await user.goto(`${gateway.url}/console/usage?tab=redeem`)
    await user.getByLabel("Redemption code").fill(codes[0]!)
    await user.getByRole("button", { name: "Redeem" }).click()
    await user.getByTestId("redeem-result").waitFor()
    assert.match((await user.getByTestId("redeem-result").textContent()) ?? "", /\$7\.50 added/)
    await user.getByRole("tab", { name: "Balance history" }).click()
    await user.getByTestId("ledger-table").getByText("Redemption").first().waitFor()
    await screenshot(user, "ledger")

    await page.reload()
    await page.getByTestId("codes-table").getByText(ALICE.name).waitFor()
    await context.close()
  })

  it("works at phone width and in Chinese", async () => {
    const { page, context } = await newPage({ width: 390, height: 844 })
    await signIn(page, gateway.url, ALICE)
    await page.getByTestId("balance").waitFor()
    await screenshot(page, "dashboard-phone")
    await page.getByText("中文", { exact: true }).click()
    await page.getByText("余额").first().waitFor()
    await screenshot(page, "dashboard-phone-zh")
    await context.close()
  })
})
