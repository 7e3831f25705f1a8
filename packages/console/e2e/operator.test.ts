/**
 * What a first day with the console tripped over (issue 25), each in a real
 * browser against the real server: groups that reach no models, the default
 * group, keys an admin manages for a user, the Connect page's pickers and
 * snippets, the Channels table at 1400 px and at a
 * phone's width, balances, Chinese, and the channel form with its vendor list.
 */
import { execFile } from "node:child_process"
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { promisify } from "node:util"
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
  startGateway
} from "./support.ts"

const missing = browserMissing()

let gateway: E2EGateway
let browser: Browser
let closeBrowser: () => Promise<void>

const DESKTOP = { width: 1400, height: 900 }
const PHONE = { width: 390, height: 844 }

/** Texts cut short with an ellipsis (or clipped) inside `selector`: what a crushed table shows. */
const truncated = (page: Page, selector: string) =>
  page.evaluate((selector) => {
    const root = document.querySelector(selector)
    if (root === null) throw new Error(`nothing matches ${selector}`)
    return [...root.querySelectorAll("th, .mantine-Badge-label, td > p, td p")]
      .filter((e) => e.scrollWidth > e.clientWidth + 1)
      .map((e) => e.textContent ?? "")
  }, selector)

const violations: Array<string> = []

const newPage = async (viewport: { width: number; height: number } = DESKTOP): Promise<
  { context: BrowserContext; page: Page }
> => {
  const context = await browser.newContext({ viewport, locale: "en-US", reducedMotion: "reduce" })
  const page = await context.newPage()
  page.on("console", (message) => {
    if (/Content Security Policy|Content-Security-Policy/i.test(message.text())) {
      violations.push(`${page.url()}: ${message.text()}`)
    }
  })
  return { context, page }
}

/** A screenshot (see `screenshot`), after which notifications show again for the test to read. */
const shot = async (page: Page, name: string) => {
  await screenshot(page, name)
  await page.evaluate(() => {
    for (const style of document.querySelectorAll("style")) {
      if (style.textContent?.includes(".mantine-Notifications-root { display: none")) style.remove()
    }
  })
}

/**
 * Creates a key named `name` for `models` from the API keys page, as its
 * owner would, and opens the Connect page with it picked: the key's secret,
 * shown once.
 */
const createKeyAndConnect = async (page: Page, name: string, models: ReadonlyArray<string>): Promise<string> => {
  await page.getByRole("link", { name: "API keys" }).click()
  await page.getByRole("button", { name: "Create key" }).first().click()
  const dialog = page.getByRole("dialog")
  await dialog.getByLabel("Name").fill(name)
  await dialog.getByLabel("Models").click()
  for (const model of models) await page.getByRole("option", { name: model }).click()
  await dialog.getByLabel("Name").click()
  await dialog.getByRole("button", { name: "Create" }).click()
  const secret = (await page.getByTestId("new-secret").textContent()) ?? ""
  await page.getByRole("button", { name: "I have copied it" }).click()
  await page.getByRole("link", { name: "Connect a client" }).click()
  await page.getByTestId("connect-key-picker").waitFor()
  return secret
}

/** A JSON request with the session's CSRF token, from inside the page. */
const api = (page: Page, method: string, path: string, body?: unknown) =>
  page.evaluate(async ({ method, path, body }) => {
    const session = await (await fetch("/api/auth/session")).json() as { csrfToken: string }
    const response = await fetch(path, {
      method,
      headers: { "content-type": "application/json", "x-csrf-token": session.csrfToken },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    return { status: response.status, body: await response.json().catch(() => null) as any }
  }, { method, path, body })

describe.skipIf(missing !== undefined)(missing === undefined ? "operator" : `operator (skipped: ${missing})`, () => {
  beforeAll(async () => {
    gateway = await startGateway()
    const launched = await launchBrowser()
    browser = launched.browser
    closeBrowser = launched.close
  })

  afterAll(async () => {
    await closeBrowser?.()
    await gateway?.close()
  })

  it("shows what each group reaches, warns of one that reaches nothing, attaches channels, keeps default", async () => {
    const { page, context } = await newPage()
    await signIn(page, gateway.url, ADMIN)
    await page.getByRole("link", { name: "Groups" }).click()
    const table = page.getByTestId("groups-table")
    await table.waitFor()
    const vip = table.locator("tr[data-group='vip']")
    await vip.getByTestId("group-reach").waitFor()
    assert.include(await vip.textContent(), "openai-main")
    assert.include(await vip.textContent(), "gemini-2.5-flash")

    await page.getByRole("button", { name: "New group" }).click()
    let dialog = page.getByRole("dialog")
    await dialog.getByLabel("Name").fill("team-x")
    await dialog.getByRole("button", { name: "Create" }).click()
    const teamX = table.locator("tr[data-group='team-x']")
    await teamX.getByTestId("group-unreached").waitFor()
    assert.include(await teamX.textContent(), "Reaches no models")
    await shot(page, "admin-groups")

    await teamX.getByRole("button", { name: "Edit" }).click()
    dialog = page.getByRole("dialog")
    await dialog.getByLabel("Channels serving it").click()
    await page.getByRole("option", { name: "openai-main" }).click()
    await dialog.getByRole("button", { name: "Save" }).click()
    await teamX.getByTestId("group-reach").waitFor()
    assert.include(await teamX.textContent(), "2 models")
    assert.include(await teamX.textContent(), "gpt-4o-mini")
    const channels = await api(page, "GET", "/api/admin/channels")
    const main = channels.body.data.find((c: any) => c.name === "openai-main")
    assert.deepStrictEqual(main.groups, ["default", "vip", "team-x"])

    // The default group offers no Delete that works, and the server refuses it in words.
    await table.locator("tr[data-group='default'] button[data-disabled]").waitFor()
    const refused = await api(page, "DELETE", "/api/admin/groups/default")
    assert.strictEqual(refused.status, 409)
    assert.include(refused.body.error.message, "'default' cannot be deleted")
    // A group channels serve stays: deleting it is refused, naming the channel.
    await teamX.getByRole("button", { name: "Delete" }).click()
    await page.getByRole("dialog").getByRole("button", { name: "Delete" }).click()
    await page.getByText("served by the channel(s) openai-main").waitFor()
    await context.close()
  })

  it("keeps the Channels table readable at 1400 px, and Test results across a reload", async () => {
    const { page, context } = await newPage()
    await signIn(page, gateway.url, ADMIN)
    await page.getByRole("link", { name: "Channels" }).click()
    const table = page.getByTestId("channels-table")
    await table.waitFor()
    const row = page.locator("tr[data-channel='openai-main']")
    await row.getByRole("button", { name: /^Test/ }).click()
    await row.getByTestId("test-result").waitFor()
    await settled(page)
    // No sideways scroll, no group, header or model name cut short.
    const box = await page.evaluate(() => {
      const viewport = document.querySelector("[data-testid=channels-table]")!.closest(
        ".mantine-ScrollArea-viewport"
      )!
      return viewport.scrollWidth - viewport.clientWidth
    })
    assert.isAtMost(box, 1, "the table fits without a sideways scroll")
    assert.deepStrictEqual(await truncated(page, "[data-testid=channels-table]"), [])
    assert.strictEqual(await page.getByTestId("scroll-hint").count(), 0)
    await shot(page, "admin-channels")
    await page.reload()
    await row.getByTestId("test-result").waitFor()
    assert.match((await row.getByTestId("test-result").textContent()) ?? "", /^OK in \d+ ms: gpt-4o-mini answered/)
    await context.close()
  })

  it("at a phone's width shows channel health and status without scrolling, and prices beside the actions", async () => {
    const { page, context } = await newPage(PHONE)
    await signIn(page, gateway.url, ADMIN)
    await page.goto(`${gateway.url}/console/admin/channels`)
    const row = page.locator("tr[data-channel='openai-main'], [data-channel='openai-main']").first()
    await row.waitFor()
    for (const testId of ["channel-health", "channel-enabled"]) {
      const box = await row.getByTestId(testId).first().boundingBox()
      assert.isNotNull(box, testId)
      assert.isAtMost(box!.x + box!.width, PHONE.width, `${testId} is on screen`)
    }
    assert.strictEqual(await overflowX(page), 0)
    await shot(page, "admin-channels-phone")
    await page.goto(`${gateway.url}/console/admin/models`)
    const model = page.locator("[data-model='gpt-4o-mini']").first()
    await model.waitFor()
    // The price is not covered by the actions: nothing else is drawn on top of its centre.
    const price = model.getByTestId("model-price").first()
    const covered = await price.evaluate((el) => {
      const r = el.getBoundingClientRect()
      const top = document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2)
      return top === null || !(el === top || el.contains(top))
    })
    assert.isFalse(covered, "the price is visible, not under the pinned actions")
    assert.strictEqual(await overflowX(page), 0)
    await shot(page, "admin-models-phone")
    await context.close()
  })

  it("starts a channel from a vendor, keeps the form on Esc in the model picker, fixes a /v1beta address, tests a chosen model and all", async () => {
    const { page, context } = await newPage()
    await signIn(page, gateway.url, ADMIN)
    await page.getByRole("link", { name: "Channels" }).click()
    await page.getByTestId("channels-table").waitFor()
    await page.getByRole("button", { name: "New channel" }).click()
    const dialog = page.getByRole("dialog")
    // The vendor list fills in the address and the settings the vendor needs.
    await dialog.getByLabel("Vendor").click()
    await page.getByRole("option", { name: "Mistral" }).click()
    assert.strictEqual(await dialog.getByLabel("Base address").inputValue(), "https://api.mistral.ai/v1")
    await dialog.getByText("Routing: timeouts, breaker, headers, parameters").click()
    assert.isFalse(await dialog.getByLabel("Send stream_options").isChecked(), "Mistral refuses stream_options")
    await dialog.getByLabel("Vendor").click()
    await page.getByRole("option", { name: "Google Gemini" }).click()
    assert.strictEqual(
      await dialog.getByLabel("Base address").inputValue(),
      "https://generativelanguage.googleapis.com"
    )
    await dialog.getByLabel("Vendor").click()
    await page.getByRole("option", { name: /Vertex AI/ }).waitFor()
    await page.getByRole("option", { name: /AWS Bedrock/ }).waitFor()
    await shot(page, "channel-vendors")
    await page.keyboard.press("Escape")
    // The hint follows the type, and an address with /v1beta is warned of and fixed.
    assert.strictEqual(
      await dialog.getByLabel("Base address").getAttribute("placeholder"),
      "https://generativelanguage.googleapis.com"
    )
    await dialog.getByLabel("Name").fill("gemini-typed")
    await dialog.getByLabel("Base address").fill(`${gateway.upstream.url}/v1beta`)
    await dialog.getByTestId("base-url-warning").waitFor()
    assert.include(await dialog.getByTestId("base-url-warning").textContent(), "/v1beta")
    await dialog.getByLabel(/Upstream API keys/).fill("gemini-upstream-key-typed-1")
    await dialog.getByRole("button", { name: "Fetch models" }).click()
    const picker = page.getByTestId("model-picker")
    await picker.locator("[data-upstream-model]").first().waitFor()
    // Esc closes the picker only: the new channel is still there.
    await page.keyboard.press("Escape")
    await picker.waitFor({ state: "detached" })
    assert.strictEqual(await dialog.getByLabel("Name").inputValue(), "gemini-typed")
    await dialog.getByRole("button", { name: "Fetch models" }).click()
    await picker.getByLabel("gemini-2.5-flash").check()
    await picker.getByRole("button", { name: "Add 1 model" }).click()
    await page.getByText("1 model added").waitFor()
    const notice = await page.locator(".mantine-Notification-root").first().boundingBox()
    const menu = await page.getByTestId("user-menu").boundingBox()
    assert.isTrue(
      notice!.y >= menu!.y + menu!.height || notice!.x + notice!.width <= menu!.x,
      "the notice does not cover the header's controls"
    )
    const models = dialog.getByLabel("Models")
    await models.fill("gemini-2.0-flash")
    await models.press("Enter")
    await dialog.getByRole("button", { name: "Create" }).click()
    const row = page.locator("tr[data-channel='gemini-typed']")
    await row.waitFor()
    const saved = (await api(page, "GET", "/api/admin/channels")).body.data.find((c: any) => c.name === "gemini-typed")
    assert.strictEqual(saved.baseUrl, gateway.upstream.url, "/v1beta left off, as the gateway adds it")
    // Test one model of the admin's choosing, then all of them.
    await row.getByRole("button", { name: "Choose what to test on gemini-typed" }).click()
    await page.getByRole("menuitem", { name: "gemini-2.0-flash" }).click()
    await row.getByTestId("test-result").filter({ hasText: "gemini-2.0-flash" }).waitFor()
    await row.getByRole("button", { name: "Choose what to test on gemini-typed" }).click()
    await page.getByRole("menuitem", { name: "Test all models" }).click()
    await page.waitForFunction(
      () => document.querySelectorAll("tr[data-channel='gemini-typed'] [data-testid=test-result]").length === 2
    )
    const results = await row.getByTestId("test-result").allTextContents()
    assert.isTrue(
      results.some((r) => r.includes("gemini-2.5-flash")) && results.some((r) => r.includes("gemini-2.0-flash"))
    )
    await context.close()
  })

  it("shows a balance exactly, sets it to an amount, refuses a result below zero, and shows the server's own refusal", async () => {
    const { page, context } = await newPage()
    await signIn(page, gateway.url, ADMIN)
    const users = await api(page, "GET", "/api/admin/users")
    const alice = users.body.data.find((u: any) => u.name === "alice")
    // Spend a fraction of a cent, as calls do.
    const spent = await api(page, "POST", `/api/admin/users/${alice.id}/adjust`, {
      amount: "-0.00003105",
      reason: "calls"
    })
    assert.strictEqual(spent.body.balance, "4.99996895")
    await page.goto(`${gateway.url}/console/admin/users/${alice.id}`)
    const balance = page.getByTestId("user-balance")
    await balance.waitFor()
    assert.strictEqual(await balance.textContent(), "$4.99996895", "every digit, not $5.00")

    // Deducting more than the balance is refused before asking.
    const form = page.locator("form").filter({ has: page.getByTestId("balance-mode") })
    await form.getByLabel(/^Amount/).fill("-6")
    await form.getByLabel(/^Reason/).fill("too much")
    await form.getByRole("button", { name: "Adjust balance" }).click()
    await form.getByText("it cannot go below zero").waitFor()
    assert.strictEqual(await page.getByRole("dialog").count(), 0, "no confirmation of a negative result")

    // Set the balance to $10: the dialog says exactly what changes.
    await form.getByText("Set to").click()
    await form.getByLabel("New balance (USD)").fill("10")
    await form.getByLabel(/^Reason/).fill("top-up to 10")
    await form.getByRole("button", { name: "Set balance" }).click()
    const dialog = page.getByRole("dialog")
    await dialog.getByText("Add $5.00003105 to the balance of $4.99996895 (now: $10.00)").waitFor()
    await shot(page, "admin-user-balance")
    await dialog.getByRole("button", { name: "Change the balance" }).click()
    await page.waitForFunction(() => document.querySelector("[data-testid=user-balance]")?.textContent === "$10.00")

    // The balance changed elsewhere after the dialog opened: the server's refusal is shown in its words.
    await form.getByText("Add or deduct").click()
    await form.getByLabel(/^Amount/).fill("-10")
    await form.getByLabel(/^Reason/).fill("all of it")
    await form.getByRole("button", { name: "Adjust balance" }).click()
    await dialog.getByText("Take $10.00").waitFor()
    await api(page, "POST", `/api/admin/users/${alice.id}/adjust`, { amount: "-1", reason: "meanwhile" })
    await dialog.getByRole("button", { name: "Change the balance" }).click()
    await dialog.getByTestId("confirm-error").getByText("the balance is $9.00; it cannot go below zero").waitFor()
    assert.notInclude((await dialog.textContent()) ?? "", "Something went wrong")
    await context.close()
  })

  it("lets an admin create, edit and revoke a user's key, and an owner change their key's models and expiry", async () => {
    const { page, context } = await newPage()
    await signIn(page, gateway.url, ADMIN)
    const users = await api(page, "GET", "/api/admin/users")
    const bob = users.body.data.find((u: any) => u.name === "bob")
    await page.goto(`${gateway.url}/console/admin/users/${bob.id}`)
    await page.getByRole("button", { name: "Create a key for this user" }).click()
    let dialog = page.getByRole("dialog")
    await dialog.getByLabel("Name").fill("made-for-bob")
    await dialog.getByLabel("Models").click()
    await page.getByRole("option", { name: "gpt-4o-mini" }).click()
    await dialog.getByText("A new key for bob").click()
    await dialog.getByRole("button", { name: "Create" }).click()
    const secret = (await page.getByTestId("new-secret").textContent()) ?? ""
    assert.match(secret, /^sk-/)
    await page.getByRole("button", { name: "I have copied it" }).click()
    const made = page.locator("[data-key-id]").filter({ hasText: "made-for-bob" })
    await made.waitFor()

    // Edit its models, expiry and lifetime cap.
    await made.getByRole("button", { name: "Edit: made-for-bob" }).click()
    dialog = page.getByRole("dialog")
    await dialog.getByLabel("Models").click()
    await page.getByRole("option", { name: "gemini-2.5-flash" }).click()
    // Close the list of models (a click outside it, on the dialog's title).
    await dialog.getByText("Edit made-for-bob: models").click()
    await dialog.getByLabel("Expires").click()
    await page.getByRole("option", { name: "In 30 days" }).click()
    await dialog.getByLabel("Spending cap (USD)").fill("2")
    await dialog.getByRole("button", { name: "Save" }).click()
    await dialog.waitFor({ state: "detached" })
    const keys = (await api(page, "GET", `/api/admin/users/${bob.id}/keys`)).body.data
    const edited = keys.find((k: any) => k.name === "made-for-bob")
    assert.deepStrictEqual(edited.models, ["gpt-4o-mini", "gemini-2.5-flash"])
    assert.strictEqual(edited.quota, "2.00")
    assert.isAbove(edited.expiresAt, Date.now() + 29 * 86_400_000)
    // The key works as made, then is revoked.
    const call = (model: string) =>
      fetch(`${gateway.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
        body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] })
      })
    assert.strictEqual((await call("gpt-4o-mini")).status, 200)
    const refused = await call("gpt-4o")
    assert.strictEqual(refused.status, 403)
    assert.include(((await refused.json()) as any).error.message, "change the key's models in the console")
    await made.getByRole("button", { name: /^Delete/ }).click()
    await page.getByRole("dialog").getByRole("button", { name: "Delete" }).click()
    await made.waitFor({ state: "detached" })
    assert.strictEqual((await call("gpt-4o-mini")).status, 401)
    await context.close()

    // The owner changes their own key's models, as the refusal above says.
    const owner = await newPage()
    await signIn(owner.page, gateway.url, BOB)
    await owner.page.getByRole("link", { name: "API keys" }).click()
    await owner.page.getByRole("button", { name: "Edit: bob-laptop" }).click()
    const form = owner.page.getByRole("dialog")
    await form.getByLabel("Models").click()
    await owner.page.getByRole("option", { name: "gpt-4o", exact: true }).click()
    await form.getByText("Edit bob-laptop: models").click()
    await form.getByRole("button", { name: "Save" }).click()
    await form.waitFor({ state: "detached" })
    const mine = (await api(owner.page, "GET", "/api/keys")).body.data[0]
    assert.deepStrictEqual(mine.models, ["gpt-4o"])
    await owner.context.close()
  })

  it("connects a client with a key and a model it may use: the pasted curl and openai snippets work", async () => {
    const { page, context } = await newPage()
    await signIn(page, gateway.url, ALICE)
    const secret = await createKeyAndConnect(page, "connect-only-mini", ["gpt-4o-mini"])
    assert.strictEqual(
      await page.getByTestId("connect-key-picker").inputValue(),
      `connect-only-mini (${secret.slice(0, 10)}…)`
    )
    // Only the model this key may use is offered, and the snippets use it (not gemini-2.5-flash).
    assert.strictEqual(await page.getByTestId("connect-model-picker").inputValue(), "gpt-4o-mini")
    await page.getByTestId("connect-model-picker").click()
    assert.strictEqual(await page.getByRole("option").count(), 1)
    await page.keyboard.press("Escape")
    const curl = (await page.locator("pre").filter({ hasText: "curl " }).first().textContent()) ?? ""
    assert.include(curl, secret)
    assert.include(curl, "gpt-4o-mini")
    await shot(page, "connect")
    // Pasted into a shell, the curl line answers.
    // (Asynchronously: the gateway answers from this very process.)
    const { execFile } = await import("node:child_process")
    const { promisify } = await import("node:util")
    const answer = JSON.parse(
      (await promisify(execFile)("sh", ["-c", `${curl} -sS`], { encoding: "utf8" })).stdout
    ) as any
    assert.strictEqual(answer.object, "chat.completion")
    // The openai SDK with the page's base address, key and model.
    const OpenAI = (await import("openai")).default
    const base = (await page.getByTestId("openai-base").textContent()) ?? ""
    const model = /model="([^"]+)"/.exec(
      (await page.locator("pre").filter({ hasText: "from openai import OpenAI" }).first().textContent()) ?? ""
    )![1]!
    const reply = await new OpenAI({ apiKey: secret, baseURL: base, maxRetries: 0 }).chat.completions.create({
      model,
      messages: [{ role: "user", content: "hi" }]
    })
    assert.isAbove(reply.usage?.total_tokens ?? 0, 0)
    // After a reload the secret is gone from the page: the key is still picked by name, the secret a placeholder.
    await page.reload()
    await page.getByTestId("connect-key").getByText("was shown once").waitFor()
    assert.notInclude(await page.content(), secret)
    await context.close()
  })

  describe("every snippet of the Connect page, pasted as the page shows it for a picked key and model", () => {
    /** What the page showed, read from its blocks of code, and what it was shown for. */
    let shown: {
      readonly secret: string
      readonly keyId: string
      readonly model: string
      readonly code: (marker: string) => string
    }
    let dir: string
    let page: Page
    let context: BrowserContext

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), "modelgate-connect-"))
      ;({ page, context } = await newPage())
      await signIn(page, gateway.url, ALICE)
      const secret = await createKeyAndConnect(page, "connect-clients", ["gpt-4o-mini", "gemini-2.5-flash"])
      assert.strictEqual(await page.getByTestId("connect-model-picker").inputValue(), "gpt-4o-mini")
      // The second model the key may use, picked: every snippet follows.
      await page.getByTestId("connect-model-picker").click()
      await page.getByRole("option", { name: "gemini-2.5-flash" }).click()
      await page.locator("pre").filter({ hasText: "claude --model gemini-2.5-flash" }).waitFor()
      const blocks = await page.locator("pre").allTextContents()
      const keys = await api(page, "GET", "/api/keys")
      shown = {
        secret,
        keyId: keys.body.data.find((k: any) => k.name === "connect-clients").id,
        model: "gemini-2.5-flash",
        code: (marker) => {
          const found = blocks.filter((b) => b.includes(marker))
          assert.lengthOf(found, 1, `one block of code shows '${marker}'`)
          return found[0]!
        }
      }
    })

    afterAll(async () => {
      await context?.close()
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
    })

    /** The key's calls in the request log, newest first. */
    const calls = async () =>
      (await api(page, "GET", `/api/usage?keyId=${shown.keyId}&limit=100`)).body.data as Array<
        { requestId: string; status: number; model: string; errorMessage: string | null }
      >

    /**
     * A call of our own with the key, once it is in the request log: records are written in the
     * order calls end, so every call that ended before it is there too.
     */
    const mark = async () => {
      const response = await fetch(`${gateway.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${shown.secret}`, "content-type": "application/json" },
        body: JSON.stringify({ model: shown.model, messages: [{ role: "user", content: "mark" }] })
      })
      await response.text()
      const id = response.headers.get("x-request-id")!
      await eventually("the mark is in the request log", async () => (await calls()).some((c) => c.requestId === id))
      return id
    }

    /** `run`, and the calls it made with the key, as the request log has them. */
    const logged = async <A>(run: () => Promise<A>) => {
      const before = await mark()
      const result = await run()
      const after = await mark()
      const log = await calls()
      const made = log.slice(
        log.findIndex((c) => c.requestId === after) + 1,
        log.findIndex((c) => c.requestId === before)
      )
      return { result, made }
    }

    /** Calls that all went through, with the picked model. */
    const answered = (made: ReadonlyArray<{ status: number; model: string; errorMessage: string | null }>) => {
      assert.isAbove(made.length, 0, "the client called the gateway")
      for (const c of made) assert.deepStrictEqual([c.model, c.status, c.errorMessage], [shown.model, 200, null])
    }

    /**
     * A shell snippet run with `sh` in a fresh home, as pasted into a terminal, the command it ends
     * with given `headless` (the clients' non-interactive mode) in place of a person at the keyboard;
     * `files` are written into that home first, as the page says to.
     */
    const paste = async (snippet: string, headless: string, files: Record<string, string> = {}) => {
      const home = mkdtempSync(join(dir, "home-"))
      const work = join(home, "work")
      mkdirSync(work)
      for (const [path, content] of Object.entries(files)) {
        mkdirSync(dirname(join(home, path)), { recursive: true })
        writeFileSync(join(home, path), content)
      }
      return logged(() =>
        new Promise<{ code: number; out: string }>((resolve) => {
          const child = execFile("sh", ["-c", `${snippet.trimEnd()} ${headless}`], {
            cwd: work,
            timeout: 100_000,
            env: { PATH: `${bin}:${dirname(process.execPath)}:/usr/bin:/bin`, HOME: home, NO_COLOR: "1" }
          }, (error, stdout, stderr) =>
            resolve({ code: error === null ? 0 : (error as { code?: number }).code ?? 1, out: `${stdout}\n${stderr}` }))
          child.stdin?.end()
        })
      )
    }

    /** The clients as installed from npm, on `PATH` under their own names. */
    let bin: string

    beforeAll(() => {
      bin = join(dir, "bin")
      mkdirSync(bin)
      const modules = join(import.meta.dirname, "..", "node_modules")
      // Claude Code's launcher finds the platform binary its optional dependency installed (its postinstall stays off).
      writeFileSync(
        join(bin, "claude"),
        `#!/bin/sh\nexec "${process.execPath}" "${
          join(modules, "@anthropic-ai", "claude-code", "cli-wrapper.cjs")
        }" "$@"\n`
      )
      chmodSync(join(bin, "claude"), 0o755)
      for (const name of ["gemini", "codex"]) {
        writeFileSync(join(bin, name), `#!/bin/sh\nexec "${join(modules, ".bin", name)}" "$@"\n`)
        chmodSync(join(bin, name), 0o755)
      }
    })

    const hello = (model: string) => `Hello from fake-upstream (model ${model})`

    it("the Google genai SDK for JavaScript, as a module", async () => {
      const project = mkdtempSync(join(dir, "genai-"))
      symlinkSync(join(import.meta.dirname, "..", "node_modules"), join(project, "node_modules"))
      writeFileSync(join(project, "hello.mjs"), shown.code("new GoogleGenAI("))
      const { result, made } = await logged(() =>
        promisify(execFile)(process.execPath, ["hello.mjs"], { cwd: project, encoding: "utf8" })
      )
      assert.include(result.stdout, hello(shown.model))
      answered(made)
    })

    it("gemini-cli, with its environment and settings.json", async () => {
      // Headless, gemini-cli asks for the folder's trust on the command line (a person answers its prompt).
      const { result: { code, out }, made } = await paste(
        shown.code("export GEMINI_API_KEY="),
        "--skip-trust -p \"Say hello\"",
        {
          ".gemini/settings.json": shown.code("\"selectedType\"")
        }
      )
      assert.strictEqual(code, 0, out)
      assert.include(out, hello(shown.model))
      answered(made)
    })

    it("Claude Code, with its environment", async () => {
      const { result: { code, out }, made } = await paste(
        shown.code("export ANTHROPIC_AUTH_TOKEN="),
        "-p \"Say hello\""
      )
      assert.strictEqual(code, 0, out)
      assert.include(out, hello(shown.model))
      answered(made)
    })

    it("Claude Code, with its settings.json", async () => {
      const { result: { code, out }, made } = await paste("claude", "-p \"Say hello\"", {
        ".claude/settings.json": shown.code("\"ANTHROPIC_MODEL\"")
      })
      assert.strictEqual(code, 0, out)
      assert.include(out, hello(shown.model))
      answered(made)
    })

    it("Codex CLI, with its config.toml and environment", async () => {
      const { result: { code, out }, made } = await paste(
        shown.code("export MODELGATE_API_KEY="),
        "exec --skip-git-repo-check \"Say hello\"",
        { ".codex/config.toml": shown.code("[model_providers.modelgate]") }
      )
      assert.strictEqual(code, 0, out)
      assert.include(out, hello(shown.model))
      answered(made)
    })
  })

  it("explains a refused call in Chinese, with a status badge in Chinese that is not cut short", async () => {
    const { page, context } = await newPage()
    await signIn(page, gateway.url, ALICE)
    const made = await api(page, "POST", "/api/keys", { name: "zh-mini-only", models: ["gpt-4o-mini"] })
    const refused = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${made.body.secret}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-4o", messages: [{ role: "user", content: "hi" }] })
    })
    assert.strictEqual(refused.status, 403)
    const requestId = refused.headers.get("x-request-id")!
    await page.getByText("中文", { exact: true }).click()
    await page.goto(`${gateway.url}/console/requests`)
    const row = page.locator(`tr[data-request='${requestId}']`)
    await row.waitFor({ timeout: 15_000 })
    const badge = row.getByTestId("status-badge")
    assert.strictEqual(await badge.textContent(), "403 密钥不可用此模型")
    assert.isTrue(
      await badge.evaluate((el) => [el, ...el.querySelectorAll("*")].every((e) => e.scrollWidth <= e.clientWidth + 1)),
      "the badge is not cut short"
    )
    await row.click()
    const explained = page.getByTestId("detail-error-zh")
    await explained.waitFor()
    assert.include(await explained.textContent(), "该密钥不允许调用此模型")
    await shot(page, "request-detail-zh")
    await context.close()
  })
})
