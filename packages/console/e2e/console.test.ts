/**
 * The console in a real browser against the real server: sign in; create a
 * key and see its secret once; call the gateway with it through the openai
 * SDK; see the usage and the balance change (header and dashboard alike); as
 * admin create a channel and press Test; generate a code and redeem it as a
 * user; a user is refused an admin page and another user's key; a failed
 * call found by its request id (the admin also reads each attempt, with what
 * the upstream said, redacted); every page fits a phone's width; Chinese; and
 * the one-time admin password printed at the first start of a server with no
 * admin signs in. Screenshots of the main pages go to docs/screenshots/ when
 * MODELGATE_SCREENSHOTS=1 (else a scratch folder).
 *
 * Without Chromium (`/usr/bin/chromium`, or `CHROMIUM_PATH`) the tests are
 * skipped with the reason in their name; .ci/run installs it.
 */
import { tmpdir } from "node:os"
import { join } from "node:path"
import OpenAI from "openai"
import type { Browser, BrowserContext, Page } from "playwright-core"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import {
  ADMIN,
  ALICE,
  BOB,
  browserMissing,
  type E2EGateway,
  eventually,
  launchBrowser,
  overflowX,
  screenshot,
  settled,
  signIn,
  startGateway,
  startProcess
} from "./support.ts"

const missing = browserMissing()
if (missing !== undefined) console.warn(`console browser tests skipped: ${missing}`)

let gateway: E2EGateway
let browser: Browser
let closeBrowser: () => Promise<void>
let alice: { context: BrowserContext; page: Page }
let aliceSecret = ""

const PHONE = { width: 390, height: 844 }

/** What the browser refused under the console's Content-Security-Policy, on any page of any test. */
const violations: Array<string> = []

const newPage = async (viewport = { width: 1366, height: 860 }) => {
  const context = await browser.newContext({ viewport, locale: "en-US", reducedMotion: "reduce" })
  const page = await context.newPage()
  page.on("console", (message) => {
    if (/Content Security Policy|Content-Security-Policy/i.test(message.text())) {
      violations.push(`${page.url()}: ${message.text()}`)
    }
  })
  return { context, page }
}

/** The header's balance (the user menu shows it beside the name at desktop width). */
const headerBalance = async (page: Page) => ((await page.getByTestId("header-balance").textContent()) ?? "").trim()

describe.skipIf(missing !== undefined)(missing === undefined ? "console" : `console (skipped: ${missing})`, () => {
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

  it("signs in and shows the dashboard", async () => {
    const { page } = alice
    await page.goto(`${gateway.url}/console/`)
    await page.getByRole("button", { name: "Sign in" }).waitFor()
    await screenshot(page, "login")
    await page.getByRole("button", { name: "Sign in" }).click()
    await page.getByText("Enter your user name").waitFor()
    await page.getByLabel("User name").fill(ALICE.name)
    await page.getByLabel(/^Password/).fill("wrong password")
    await page.getByRole("button", { name: "Sign in" }).click()
    await page.getByText("Wrong user name or password.").waitFor()
    await page.getByLabel(/^Password/).fill(ALICE.password)
    await page.getByRole("button", { name: "Sign in" }).click()
    await page.getByTestId("balance").waitFor()
    assert.strictEqual(await page.getByTestId("balance").textContent(), "$5.00")
    assert.strictEqual(await headerBalance(page), "$5.00")
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
      const reply = await client.chat.completions.create({
        model,
        messages: [{ role: "user", content: "Hello from the browser test" }]
      })
      assert.isAbove(reply.usage?.total_tokens ?? 0, 0)
    }
    const { page } = alice
    // Usage records are written in batches: wait until the API lists all three calls.
    await eventually(
      "the API lists the three calls",
      () =>
        page.evaluate(async () =>
          ((await (await fetch("/api/usage")).json()) as { data: Array<unknown> }).data.length === 3
        )
    )
    await page.getByRole("link", { name: "Requests" }).click()
    await page.getByTestId("requests-table").waitFor()
    assert.strictEqual(await page.getByTestId("requests-table").locator("tbody tr").count(), 3)
    // Fresh usage brings a fresh balance into the header.
    await page.waitForFunction(
      () => document.querySelector("[data-testid=header-balance]")?.textContent !== "$5.00",
      undefined,
      { timeout: 10_000 }
    )
    await screenshot(page, "requests")

    // A new call shows on the open page without a reload.
    await client.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "One more, live" }] })
    await page.waitForFunction(
      () => document.querySelectorAll("[data-testid=requests-table] tbody tr").length === 4,
      undefined,
      { timeout: 15_000 }
    )
    await page.getByRole("link", { name: "Dashboard" }).click()
    await page.getByTestId("balance").waitFor()
    // The cached dashboard shows first; the refetch brings the new balance.
    await page.waitForFunction(
      () => document.querySelector("[data-testid=balance]")?.textContent !== "$5.00",
      undefined,
      { timeout: 10_000 }
    )
    const balance = (await page.getByTestId("balance").textContent()) ?? ""
    assert.match(balance, /^\$4\.9\d+/, "the balance went down")
    assert.strictEqual(await headerBalance(page), balance, "the header and the balance card agree")
    assert.strictEqual(await page.getByTestId("requests-today").textContent(), "4")
    await screenshot(page, "dashboard")
  })

  it("shows models with exact prices and the connect-a-client settings", async () => {
    const { page } = alice
    await page.getByRole("link", { name: "Models" }).click()
    await page.getByText("gemini-2.5-flash").first().waitFor()
    // gpt-4o-mini's cached input costs $0.075 per 1M tokens: every digit is shown.
    await page.getByText("$0.075", { exact: true }).first().waitFor()
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
      const users = await fetch("/api/admin/users")
      const keys = await fetch("/api/admin/users/usr_anyone/keys")
      return { users: users.status, keys: keys.status }
    })
    assert.deepStrictEqual(results, { users: 403, keys: 403 })
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
      const patch = await fetch(`/api/keys/${id}`, {
        method: "PATCH",
        headers,
        body: JSON.stringify({ enabled: false })
      })
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
    const text = (await result.textContent()) ?? ""
    assert.match(text, /^OK in \d+ ms: gpt-4o-mini answered$/)
    // The result sits below the buttons: Edit and Delete stay inside the row's cell.
    const cell = await row.locator("td").last().boundingBox()
    const remove = await row.getByRole("button", { name: "Delete" }).boundingBox()
    assert.isAtMost(remove!.x + remove!.width, cell!.x + cell!.width + 1)
    // Model ids are case-sensitive: shown as they are, not upper-cased.
    assert.strictEqual(
      await row.getByText("gpt-4o-mini", { exact: true }).evaluate((el) => getComputedStyle(el).textTransform),
      "none"
    )
    await screenshot(page, "admin-channels")
    await page.getByRole("link", { name: "Users" }).click()
    await page.getByTestId("users-table").waitFor()
    await screenshot(page, "admin-users")
    await page.getByRole("link", { name: "Usage overview" }).click()
    await page.getByTestId("top-users").waitFor()
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
    const before = await headerBalance(user)
    await user.goto(`${gateway.url}/console/usage?tab=redeem`)
    await user.getByLabel("Redemption code").fill(codes[0]!)
    await user.getByRole("button", { name: "Redeem" }).click()
    await user.getByTestId("redeem-result").waitFor()
    assert.match((await user.getByTestId("redeem-result").textContent()) ?? "", /\$7\.50 added/)
    await user.waitForFunction(
      (old) => document.querySelector("[data-testid=header-balance]")?.textContent !== old,
      before
    )
    await user.getByRole("tab", { name: "Balance history" }).click()
    await user.getByTestId("ledger-table").getByText("Redemption").first().waitFor()
    await screenshot(user, "ledger")

    await page.reload()
    await page.getByTestId("codes-table").getByText(ALICE.name).waitFor()
    await context.close()
  })

  it("fits every page into a phone's width, and speaks Chinese", async () => {
    const { page, context } = await newPage(PHONE)
    await signIn(page, gateway.url, ADMIN)
    const review = join(tmpdir(), "modelgate-console-phone")
    const pages: ReadonlyArray<readonly [string, string | RegExp]> = [
      ["", "balance"],
      ["keys", /^(keys-table|empty)$/],
      ["models", "models-page"],
      ["connect", "openai-base"],
      ["requests", /^(requests-table|empty)$/],
      ["usage?tab=ledger", /^(ledger-table|empty)$/],
      ["usage?tab=redeem", "redeem-form"],
      ["admin/users", "users-table"],
      ["admin/groups", "groups-table"],
      ["admin/channels", "channels-table"],
      ["admin/models", "admin-models-table"],
      ["admin/codes", "codes-table"],
      ["admin/usage", "top-users"]
    ]
    for (const [path, testId] of pages) {
      await page.goto(`${gateway.url}/console/${path}`)
      await page.getByTestId(testId).first().waitFor()
      await settled(page)
      // Wide tables scroll inside their own box; the page itself never scrolls sideways.
      assert.strictEqual(await overflowX(page), 0, `/console/${path} is wider than the phone`)
      await screenshot(page, path === "" ? "dashboard" : path.replaceAll(/[/?=]/g, "-"), review)
    }
    await page.goto(`${gateway.url}/console/admin/users`)
    await page.getByRole("link", { name: ALICE.name }).click()
    await page.getByTestId("user-balance").waitFor()
    assert.strictEqual(await overflowX(page), 0, "a user's page is wider than the phone")
    await screenshot(page, "admin-user", review)
    await context.close()

    const phone = await newPage(PHONE)
    await signIn(phone.page, gateway.url, ALICE)
    await phone.page.getByTestId("balance").waitFor()
    await screenshot(phone.page, "dashboard-phone")
    await phone.page.goto(`${gateway.url}/console/keys`)
    await phone.page.getByTestId("keys-table").waitFor()
    await screenshot(phone.page, "keys-phone")
    await phone.page.goto(`${gateway.url}/console/requests`)
    await phone.page.getByTestId("requests-table").waitFor()
    await screenshot(phone.page, "requests-phone")
    await phone.page.goto(`${gateway.url}/console/`)
    await phone.page.getByText("中文", { exact: true }).click()
    await phone.page.getByText("余额").first().waitFor()
    await screenshot(phone.page, "dashboard-phone-zh")
    await phone.page.goto(`${gateway.url}/console/keys`)
    await phone.page.getByRole("button", { name: "创建密钥" }).first().click()
    const dialog = phone.page.getByRole("dialog")
    await dialog.getByRole("button", { name: "创建" }).click()
    await dialog.getByText("必填").waitFor()
    await screenshot(phone.page, "key-create-zh")
    await phone.context.close()

    const desk = await newPage()
    await signIn(desk.page, gateway.url, ALICE)
    await desk.page.getByText("中文", { exact: true }).click()
    await desk.page.goto(`${gateway.url}/console/models`)
    await desk.page.getByText("价格倍率").first().waitFor()
    await screenshot(desk.page, "models-zh")
    await desk.context.close()
  })

  it("as admin resets a user's password: the old one no longer signs in, the new one does", async () => {
    const { page, context } = await newPage()
    await signIn(page, gateway.url, ADMIN)
    await page.getByRole("link", { name: "Users" }).click()
    await page.getByTestId("users-table").getByRole("link", { name: BOB.name }).click()
    await page.getByTestId("user-balance").waitFor()
    const form = page.getByTestId("reset-password")
    await form.getByLabel("New password").fill("bobs-brand-new-password")
    await form.getByLabel("The same password again").fill("bobs-brand-new-password")
    await form.getByRole("button", { name: "Set a new password" }).click()
    await page.getByText(`Password changed; ${BOB.name} was signed out everywhere`).waitFor()
    await screenshot(page, "admin-user")
    await context.close()

    const bob = await newPage()
    await bob.page.goto(`${gateway.url}/console/`)
    await bob.page.getByLabel("User name").fill(BOB.name)
    await bob.page.getByLabel(/^Password/).fill(BOB.password)
    await bob.page.getByRole("button", { name: "Sign in" }).click()
    await bob.page.getByText("Wrong user name or password.").waitFor()
    await bob.page.getByLabel(/^Password/).fill("bobs-brand-new-password")
    await bob.page.getByRole("button", { name: "Sign in" }).click()
    await bob.page.getByTestId("balance").waitFor()
    await bob.context.close()
  })

  it("refuses a channel's model that has no price, lists it as unpriced, and one click with the price table prices it", async () => {
    const { page, context } = await newPage()
    await signIn(page, gateway.url, ADMIN)
    // A channel serving a model the gateway has no price for (as when it is added in the console).
    const created = await page.evaluate(async (upstream) => {
      const session = await (await fetch("/api/auth/session")).json() as { csrfToken: string }
      const response = await fetch("/api/admin/channels", {
        method: "POST",
        headers: { "content-type": "application/json", "x-csrf-token": session.csrfToken },
        body: JSON.stringify({
          name: "openai-new",
          type: "openai",
          baseUrl: `${upstream}/v1`,
          apiKeys: ["sk-upstream-new-5678"],
          models: ["gpt-4.1-mini"]
        })
      })
      return response.status
    }, gateway.upstream.url)
    assert.strictEqual(created, 201)
    const client = new OpenAI({ apiKey: aliceSecret, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
    const refused = await client.chat.completions.create({
      model: "gpt-4.1-mini",
      messages: [{ role: "user", content: "hi" }]
    }).catch((e: unknown) => e)
    assert.instanceOf(refused, OpenAI.PermissionDeniedError)
    assert.strictEqual((refused as InstanceType<typeof OpenAI.PermissionDeniedError>).code, "model_unpriced")

    await page.getByRole("link", { name: "Models & prices" }).click()
    const unpriced = page.getByTestId("unpriced-models")
    await unpriced.getByText("served by openai-new").waitFor()
    await screenshot(page, "admin-models")
    await unpriced.locator("[data-unpriced='gpt-4.1-mini']").getByRole("button", { name: "Set price" }).click()
    const dialog = page.getByRole("dialog")
    assert.strictEqual(
      await dialog.getByLabel("Input", { exact: true }).inputValue(),
      "0.40",
      "prefilled from the price table"
    )
    assert.strictEqual(await dialog.getByLabel("Output", { exact: true }).inputValue(), "1.60")
    await dialog.getByRole("button", { name: "Save" }).click()
    await page.getByTestId("admin-models-table").getByText("gpt-4.1-mini", { exact: true }).waitFor()
    await unpriced.waitFor({ state: "detached" })
    await eventually("the gateway serves the newly priced model", async () => {
      const answer = await client.chat.completions.create({
        model: "gpt-4.1-mini",
        messages: [{ role: "user", content: "hi" }]
      }).catch(() => undefined)
      return answer !== undefined
    })
    await context.close()
  })

  it("at a phone's width shows keys as cards and keeps every action of the admin tables in view", async () => {
    const phone = await newPage(PHONE)
    await signIn(phone.page, gateway.url, ALICE)
    await phone.page.goto(`${gateway.url}/console/keys`)
    const cards = phone.page.getByTestId("keys-table")
    await cards.waitFor()
    assert.strictEqual(await cards.getAttribute("data-layout"), "cards")
    const card = cards.locator("[data-key-id]").first()
    for (
      const control of [
        card.getByRole("switch"),
        card.getByRole("button", { name: /^Edit:/ }),
        card.getByRole("button", { name: /^Delete/ })
      ]
    ) {
      const box = await control.boundingBox()
      assert.isNotNull(box)
      assert.isAtMost(box!.x + box!.width, PHONE.width, "within the screen")
    }
    assert.strictEqual(await overflowX(phone.page), 0)
    await screenshot(phone.page, "keys-phone")
    await phone.context.close()

    const admin = await newPage(PHONE)
    await signIn(admin.page, gateway.url, ADMIN)
    await admin.page.goto(`${gateway.url}/console/admin/channels`)
    const table = admin.page.getByTestId("channels-table")
    await table.waitFor()
    // Channels are cards at a phone's width: every action on screen without scrolling.
    assert.strictEqual(await table.getAttribute("data-layout"), "cards")
    const row = admin.page.locator("[data-channel='openai-main']")
    for (const name of [/^Test/, "Edit", "Delete"]) {
      const box = await row.getByRole("button", { name }).boundingBox()
      assert.isNotNull(box)
      assert.isAtMost(box!.x + box!.width, PHONE.width, `${String(name)} is within the screen`)
    }
    assert.strictEqual(await overflowX(admin.page), 0)
    await screenshot(admin.page, "admin-channels-phone")
    await admin.context.close()
  })

  it("finds a failed call by its request id: the user sees its error, the admin also the channel and each attempt, with what the upstream said", async () => {
    const admin = await newPage()
    await signIn(admin.page, gateway.url, ADMIN)
    // A priced model served only by a channel whose upstream fails.
    const setup = await admin.page.evaluate(async (upstream) => {
      const session = await (await fetch("/api/auth/session")).json() as { csrfToken: string }
      const headers = { "content-type": "application/json", "x-csrf-token": session.csrfToken }
      const model = await fetch("/api/admin/models", {
        method: "POST",
        headers,
        body: JSON.stringify({
          id: "flaky-model",
          prices: { input: "1", output: "2", cachedInput: null, perRequest: null, free: false }
        })
      })
      const channel = await fetch("/api/admin/channels", {
        method: "POST",
        headers,
        body: JSON.stringify({
          name: "flaky-upstream",
          type: "openai",
          baseUrl: `${upstream}/v1`,
          apiKeys: ["sk-upstream-flaky-5150"],
          models: ["flaky-model"],
          // A 503 whose message quotes the request's headers, the channel's key among them.
          headers: { "x-fake-echo-headers": "503" }
        })
      })
      return [model.status, channel.status]
    }, gateway.upstream.url)
    assert.deepStrictEqual(setup, [200, 201])
    const call = () =>
      fetch(`${gateway.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${aliceSecret}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "flaky-model", messages: [{ role: "user", content: "Will this work?" }] })
      })
    let response = await call()
    for (let i = 0; i < 50 && response.status === 404; i++) {
      // The catalog reaches the gateway through its change log within a second.
      await new Promise((r) => setTimeout(r, 100))
      response = await call()
    }
    assert.strictEqual(response.status, 502)
    const requestId = response.headers.get("x-request-id")!
    const message = ((await response.json()) as { error: { message: string } }).error.message

    // The user finds it by the id their client got, and reads why.
    const { page } = alice
    await page.goto(`${gateway.url}/console/requests`)
    await page.getByPlaceholder("Search by request id (req_…)").fill(requestId)
    // The search keeps only that call.
    await page.waitForFunction(
      (id) => {
        const rows = [...document.querySelectorAll("[data-testid=requests-table] tbody tr")]
        return rows.length === 1 && rows[0]!.getAttribute("data-request") === id
      },
      requestId,
      { timeout: 15_000 }
    )
    await page.locator(`tr[data-request='${requestId}']`).click()
    const detail = page.getByTestId("request-detail")
    await detail.getByTestId("detail-error").waitFor()
    assert.strictEqual(message, "The upstream failed (HTTP 503). Retry later.")
    assert.include(await detail.getByTestId("detail-error").textContent(), message)
    assert.strictEqual(
      await detail.getByTestId("detail-channel").count(),
      0,
      "a user does not see the operator's channels"
    )
    assert.strictEqual(await detail.getByTestId("detail-attempts").count(), 0, "nor their attempts")
    assert.notInclude(await detail.textContent(), "The upstream said", "nor what the upstream said")

    // The admin sees the channel that failed and each attempt.
    await admin.page.getByRole("link", { name: "Requests" }).click()
    await admin.page.getByPlaceholder("Search by request id (req_…)").fill(requestId)
    await admin.page.waitForFunction(
      () => document.querySelectorAll("[data-testid=requests-table] tbody tr").length === 1,
      undefined,
      { timeout: 15_000 }
    )
    await admin.page.locator(`tr[data-request='${requestId}']`).click()
    const adminDetail = admin.page.getByTestId("request-detail")
    await adminDetail.getByTestId("detail-attempts").waitFor()
    assert.include(await adminDetail.getByTestId("detail-channel").textContent(), "flaky-upstream")
    assert.include(await adminDetail.getByTestId("detail-attempts").textContent(), "flaky-upstream")
    assert.include(await adminDetail.getByTestId("detail-attempts").textContent(), "…5150")
    const attempts = (await adminDetail.getByTestId("detail-attempts").textContent()) ?? ""
    assert.include(attempts, "UpstreamUnavailable")
    // What the upstream said, as a failed channel Test quotes it, with the channel's key redacted.
    assert.include(
      attempts,
      "The upstream failed (HTTP 503). Retry later. The upstream said: The request could not be processed."
    )
    assert.include(attempts, "authorization: Bearer [redacted]")
    assert.notInclude(attempts, "sk-upstream-flaky-5150")
    await screenshot(admin.page, "request-detail")
    await admin.page.keyboard.press("Escape")
    await admin.page.getByPlaceholder("Search by request id (req_…)").fill("")
    await admin.page.getByTestId("requests-table").waitFor()
    await screenshot(admin.page, "requests-admin")
    await admin.context.close()
  })

  it("as admin fetches a new channel's models from its upstream and picks from them", async () => {
    const { page, context } = await newPage()
    await signIn(page, gateway.url, ADMIN)
    await page.getByRole("link", { name: "Channels" }).click()
    await page.getByRole("button", { name: "New channel" }).click()
    const dialog = page.getByRole("dialog")
    await dialog.getByLabel("Name").fill("openai-picked")
    await dialog.getByLabel("Base address").fill(`${gateway.upstream.url}/v1`)
    await dialog.getByLabel(/Upstream API keys/).fill("sk-upstream-picked-4321")
    await dialog.getByRole("button", { name: "Fetch models" }).click()
    const picker = page.getByTestId("model-picker")
    // The fake upstream's own list, each model with what the gateway knows of it.
    await picker.locator("[data-upstream-model='gpt-4.1-mini']").waitFor()
    assert.include(await picker.locator("[data-upstream-model='gpt-4o-mini']").textContent(), "priced")
    assert.include(await picker.locator("[data-upstream-model='text-embedding-3-small']").textContent(), "embedding")
    await screenshot(page, "fetch-models")
    await picker.getByLabel("gpt-4.1-mini").check()
    await picker.getByLabel("fake-tools").check()
    await picker.getByRole("button", { name: "Add 2 models" }).click()
    await picker.waitFor({ state: "detached" })
    await dialog.getByRole("button", { name: "Create" }).click()
    const row = page.locator("tr[data-channel='openai-picked']")
    await row.waitFor()
    assert.include(await row.textContent(), "gpt-4.1-mini")
    assert.include(await row.textContent(), "fake-tools")
    await context.close()
  })

  it("runs every page under its Content-Security-Policy, which forbids framing, without a refusal", async () => {
    const page = await fetch(`${gateway.url}/console/`)
    assert.include(page.headers.get("content-security-policy") ?? "", "frame-ancestors 'none'")
    await page.arrayBuffer()
    // Every page the tests above opened (Mantine's injected styles, charts, downloads) ran without a CSP refusal.
    assert.deepStrictEqual(violations, [])
  })
})

describe.skipIf(missing !== undefined)(
  missing === undefined ? "first start" : `first start (skipped: ${missing})`,
  () => {
    it("prints a one-time admin password when no admin is configured, and it signs in", async () => {
      const server = await startProcess(() => ({
        log_level: "error",
        users: [{ name: "carol", role: "user", password: "carol-password-1" }]
      }))
      const launched = await launchBrowser()
      try {
        const printed = /user:\s+(\S+)\s+password:\s+(\S+)/.exec(server.output())
        assert.isNotNull(printed, `no one-time password in the output:\n${server.output()}`)
        const [, name, password] = printed!
        assert.strictEqual(name, "admin")
        const context = await launched.browser.newContext({
          viewport: { width: 1366, height: 860 },
          locale: "en-US",
          reducedMotion: "reduce"
        })
        const page = await context.newPage()
        await signIn(page, server.url, { name: name!, password: password! })
        await page.getByRole("link", { name: "Users" }).waitFor()
        assert.strictEqual(
          await page.evaluate(async () =>
            (await (await fetch("/api/auth/session")).json() as { user: { role: string } }).user.role
          ),
          "admin"
        )
        await context.close()
      } finally {
        await launched.close()
        await server.close()
      }
    })
  }
)
