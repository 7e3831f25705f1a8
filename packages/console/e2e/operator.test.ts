/**
 * What a first day with the console tripped over (issue 25), each in a real
 * browser against the real server: groups that reach no models, the default
 * group, keys an admin manages for a user, the Connect page's pickers, the
 * upstream's own words on a 5xx, the Channels table at 1400 px and at a
 * phone's width, balances, Chinese, and the channel form with its vendor list.
 */
import type { Browser, BrowserContext, Page } from "playwright-core"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { ADMIN, browserMissing, type E2EGateway, launchBrowser, screenshot, signIn, startGateway } from "./support.ts"

const missing = browserMissing()

let gateway: E2EGateway
let browser: Browser
let closeBrowser: () => Promise<void>

const DESKTOP = { width: 1400, height: 900 }

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
    await screenshot(page, "admin-groups")

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
    // (The screenshot above hid notifications from view: look for it in the page.)
    await page.getByText("served by the channel(s) openai-main").waitFor({ state: "attached" })
    await context.close()
  })
})
