/**
 * The playground in a real browser against the real server and the fake
 * upstream: a signed-in user picks their key and a model, sets a system
 * prompt and parameters, and chats; the answer streams in, the turn shows the
 * request log's tokens, cost, latency and time to first byte, the call is in
 * the request log under that key, and the balance paid for it. The upstream
 * got the system prompt and parameters. The endpoint keeps the console's
 * guards: no CSRF token, another user's key, or an API key instead of a
 * session are refused.
 *
 * Without Chromium the tests are skipped with the reason in their name.
 */
import type { Browser, Page } from "playwright-core"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import {
  ALICE,
  BOB,
  BOB_KEY,
  browserMissing,
  config,
  type E2EGateway,
  launchBrowser,
  overflowX,
  screenshot,
  signIn,
  startGateway
} from "./support.ts"

const missing = browserMissing()

let gateway: E2EGateway
let browser: Browser
let closeBrowser: () => Promise<void>

const apiJson = async (page: Page, path: string) => {
  const response = await page.request.get(`${gateway.url}${path}`)
  assert.strictEqual(response.status(), 200, `${path}: ${await response.text()}`)
  return response.json()
}

describe.skipIf(missing !== undefined)(
  missing === undefined ? "playground" : `playground (skipped: ${missing})`,
  () => {
    beforeAll(async () => {
      // One more channel whose answer stalls after three pieces (the fake upstream's `stall-3`), for Stop.
      gateway = await startGateway((upstream) => {
        const base = config(upstream)
        return {
          channels: [...(base.channels ?? []), {
            name: "openai-stalling",
            type: "openai",
            base_url: `${upstream}/v1`,
            api_key: "sk-upstream-stalling-5d1e",
            models: ["gpt-stalling"],
            model_map: { "gpt-stalling": "gpt-fake-stall-3" },
            groups: ["default"]
          }],
          models: { ...base.models, "gpt-stalling": { input: 1, output: 2, display_name: "Stalling" } }
        }
      })
      const launched = await launchBrowser()
      browser = launched.browser
      closeBrowser = launched.close
    })

    afterAll(async () => {
      await closeBrowser?.()
      await gateway?.close()
    })

    it("chats with streaming as the user's key, billed and in the request log", async () => {
      const context = await browser.newContext({ viewport: { width: 1366, height: 900 }, locale: "en-US" })
      const page = await context.newPage()
      const csp: Array<string> = []
      page.on("console", (m) => {
        if (/Content Security Policy/i.test(m.text())) csp.push(m.text())
      })
      await signIn(page, gateway.url, BOB)
      const before = await apiJson(page, "/api/dashboard")
      const keys = await apiJson(page, "/api/keys")
      const bobKey = keys.data.find((k: { name: string }) => k.name === "bob-laptop")
      assert.isDefined(bobKey)

      await page.getByRole("link", { name: "Playground" }).first().click()
      await page.getByRole("heading", { name: "Playground" }).waitFor()
      // The key is picked already (Bob's only key); pick the model.
      assert.match(await page.getByTestId("playground-key").inputValue(), /bob-laptop/)
      await page.getByTestId("playground-model").click()
      await page.getByRole("option", { name: "gpt-4o", exact: true }).click()
      await page.getByLabel("System prompt").fill("You are terse.")
      await page.getByLabel("Temperature").fill("0.3")
      await page.getByLabel("Max tokens").fill("200")
      await page.getByLabel("Top p").fill("0.9")
      await page.getByLabel("Message").fill("Say hello to the playground")
      const streamed = page.waitForResponse((r) => r.url().endsWith("/api/playground/chat"))
      await page.getByRole("button", { name: "Send" }).click()
      const response = await streamed
      assert.strictEqual(response.status(), 200)
      assert.include(response.headers()["content-type"] ?? "", "text/event-stream")
      const requestId = response.headers()["x-request-id"]
      assert.match(requestId ?? "", /^req_/)

      const answer = page.getByTestId("turn-assistant").last()
      await answer.getByTestId("turn-cost").waitFor({ timeout: 15_000 }).catch(async (e) => {
        throw new Error(`${e}\n${await page.getByTestId("playground-turns").innerText()}`)
      })
      const text = (await answer.getByTestId("turn-text").textContent()) ?? ""
      assert.include(text, "Say hello to the playground")
      assert.match((await answer.getByTestId("turn-tokens").textContent()) ?? "", /\d+ in · \d+ out/)
      assert.match((await answer.getByTestId("turn-latency").textContent()) ?? "", /Latency \d+ ms/)
      assert.match((await answer.getByTestId("turn-ttfb").textContent()) ?? "", /First byte \d+ ms/)
      assert.include((await answer.getByTestId("turn-request-id").textContent()) ?? "", requestId!)

      // The request log has the call, under Bob's key, streamed, with its cost; the balance paid exactly that.
      const log = await apiJson(page, `/api/usage?requestId=${requestId}`)
      assert.strictEqual(log.data.length, 1)
      const record = log.data[0]
      assert.strictEqual(record.keyId, bobKey.id)
      assert.strictEqual(record.model, "gpt-4o")
      assert.strictEqual(record.stream, true)
      assert.isTrue(Number(record.cost) >= 0.02, `cost ${record.cost} includes the per-request price`)
      const after = await apiJson(page, "/api/dashboard")
      const spent = Number(before.balance) - Number(after.balance)
      assert.closeTo(spent, Number(record.cost), 1e-9)

      // The upstream got the system prompt and the parameters.
      const sent = gateway.upstream.requests.filter((r) => r.model.startsWith("gpt-4o")).at(-1)
      const body = sent?.body as Record<string, unknown>
      assert.deepStrictEqual((body.messages as Array<unknown>)[0], { role: "system", content: "You are terse." })
      assert.strictEqual(body.temperature, 0.3)
      assert.strictEqual(body.top_p, 0.9)
      assert.strictEqual(body.stream, true)
      assert.deepStrictEqual(csp, [])

      // A second turn carries the conversation.
      await page.getByLabel("Message").fill("And again")
      await page.getByRole("button", { name: "Send" }).click()
      await page.getByTestId("turn-assistant").nth(1).getByTestId("turn-cost").waitFor({ timeout: 15_000 })
      const second = gateway.upstream.requests.filter((r) => r.model.startsWith("gpt-4o")).at(-1)
      assert.isDefined(second)
      assert.strictEqual(((second!.body as Record<string, unknown>).messages as Array<unknown>).length, 4)
      await screenshot(page, "playground")
      await context.close()
    })

    it("keeps the console's guards: CSRF, the key's owner, sessions only", async () => {
      const context = await browser.newContext({ locale: "en-US" })
      const page = await context.newPage()
      await signIn(page, gateway.url, ALICE)
      const session = await apiJson(page, "/api/auth/session")
      const bobKeyId =
        (await (await fetch(`${gateway.url}/api/keys`, { headers: { authorization: `Bearer ${BOB_KEY}` } }))
          .json()).data[0].id as string
      const body = { keyId: bobKeyId, model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }

      const noCsrf = await page.request.post(`${gateway.url}/api/playground/chat`, { data: body })
      assert.strictEqual(noCsrf.status(), 403)
      assert.strictEqual((await noCsrf.json()).error.code, "csrf_failed")

      const othersKey = await page.request.post(`${gateway.url}/api/playground/chat`, {
        data: body,
        headers: { "x-csrf-token": session.csrfToken }
      })
      assert.strictEqual(othersKey.status(), 400)
      assert.strictEqual((await othersKey.json()).error.code, "key_not_found")

      const byKey = await fetch(`${gateway.url}/api/playground/chat`, {
        method: "POST",
        headers: { authorization: `Bearer ${BOB_KEY}`, "content-type": "application/json" },
        body: JSON.stringify(body)
      })
      assert.strictEqual(byKey.status, 403)
      assert.strictEqual((await byKey.json()).error.code, "session_required")

      // A model outside what the key may use is the engine's own refusal, in the OpenAI envelope.
      const keys = await apiJson(page, "/api/keys")
      let aliceKeyId: string | undefined = keys.data[0]?.id
      if (aliceKeyId === undefined) {
        const created = await page.request.post(`${gateway.url}/api/keys`, {
          data: { name: "alice-playground", models: ["gpt-4o-mini"] },
          headers: { "x-csrf-token": session.csrfToken }
        })
        assert.strictEqual(created.status(), 201, await created.text())
        aliceKeyId = (await created.json()).key.id
      }
      const refused = await page.request.post(`${gateway.url}/api/playground/chat`, {
        data: { ...body, keyId: aliceKeyId, model: "no-such-model" },
        headers: { "x-csrf-token": session.csrfToken }
      })
      assert.isTrue(refused.status() >= 400 && refused.status() < 500)
      assert.isString((await refused.json()).error.message)
      await context.close()
    })

    it("stops an answer mid-stream, keeps what came and bills it", async () => {
      const context = await browser.newContext({ viewport: { width: 1366, height: 900 }, locale: "en-US" })
      const page = await context.newPage()
      await signIn(page, gateway.url, BOB)
      await page.goto(`${gateway.url}/console/playground`)
      await page.getByTestId("playground-model").click()
      await page.getByRole("option", { name: "gpt-stalling", exact: true }).click()
      await page.getByLabel("Message").fill("Tell me a long story")
      const streamed = page.waitForResponse((r) => r.url().endsWith("/api/playground/chat"))
      await page.getByRole("button", { name: "Send" }).click()
      const requestId = (await streamed).headers()["x-request-id"]!
      const answer = page.getByTestId("turn-assistant").last()
      await page.waitForFunction(() =>
        (document.querySelector("[data-testid=turn-assistant]:last-of-type [data-testid=turn-text]")?.textContent
          ?.length ?? 0) > 0
      )
      await page.getByRole("button", { name: "Stop" }).click()
      await answer.getByTestId("turn-error").waitFor()
      assert.match((await answer.getByTestId("turn-error").textContent()) ?? "", /Stopped/)
      assert.isAbove(((await answer.getByTestId("turn-text").textContent()) ?? "").length, 0)
      // The cut call is in the request log under this id, charged for what was generated.
      await answer.getByTestId("turn-cost").waitFor({ timeout: 15_000 })
      const log = await apiJson(page, `/api/usage?requestId=${requestId}`)
      assert.strictEqual(log.data.length, 1)
      assert.strictEqual(log.data[0].model, "gpt-stalling")
      assert.isAbove(log.data[0].completionTokens, 0)
      assert.isAbove(Number(log.data[0].cost), 0)
      // Send works again.
      await page.getByLabel("Message").fill("next")
      assert.isTrue(await page.getByRole("button", { name: "Send" }).isEnabled())
      await context.close()
    })

    it("fits a phone's width", async () => {
      const context = await browser.newContext({ viewport: { width: 390, height: 844 }, locale: "en-US" })
      const page = await context.newPage()
      await signIn(page, gateway.url, BOB)
      await page.goto(`${gateway.url}/console/playground`)
      await page.getByRole("heading", { name: "Playground" }).waitFor()
      await page.getByRole("button", { name: "Send" }).waitFor()
      assert.strictEqual(await overflowX(page), 0)
      await context.close()
    })
  }
)
