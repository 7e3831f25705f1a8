/**
 * Usage and billing: the usage and ledger tables (rendering, empty states,
 * paging), the filters and the CSV export they feed, custom dates, and the
 * redeem form (validation, result, refusals in both languages).
 */
import { screen, waitFor, within } from "@testing-library/react"
import userEvent from "@testing-library/user-event"
import { assert, describe, it } from "vitest"
import { periodBounds } from "../src/components/Period.tsx"
import { type Contract } from "../src/lib/api.ts"
import { LedgerTable, RedeemForm, UsagePage, UsageTable } from "../src/pages/Usage.tsx"
import { fakeApi, page, queryOf, refusal, renderWithProviders, session } from "./render.tsx"

const DAY = 86_400_000

const record = (over: Partial<Contract.UsageItem> = {}): Contract.UsageItem => ({
  id: "use_1",
  createdAt: Date.UTC(2026, 0, 15, 10, 30),
  requestId: "req_1",
  userId: "usr_1",
  userName: "alice",
  keyId: "key_1",
  keyName: "laptop",
  model: "gpt-4o-mini",
  dialect: "openai",
  stream: false,
  promptTokens: 1200,
  completionTokens: 345,
  cachedTokens: 0,
  reasoningTokens: 0,
  usageReported: true,
  cost: "0.000387",
  latencyMs: 812,
  ttfbMs: null,
  status: 200,
  errorCode: null,
  errorMessage: null,
  ...over
})

const entry = (over: Partial<Contract.LedgerItem> = {}): Contract.LedgerItem => ({
  id: "led_1",
  createdAt: Date.UTC(2026, 0, 15, 10, 30),
  kind: "redemption",
  amount: "7.5",
  reason: "code mgr-AbC…",
  requestId: null,
  ...over
})

const models = {
  body: {
    groups: [{
      name: "default",
      ratio: "1",
      limits: { rpm: null, tpm: null, concurrency: null },
      models: [{ id: "gpt-4o-mini", displayName: "GPT-4o mini", prices: { input: "0.15", output: "0.6", cachedInput: null, perRequest: null, free: false }, inputTokenLimit: 128000, outputTokenLimit: 16384, holdAtMaxOutput: "0.0098304" }]
    }]
  }
}

const keys = { body: { data: [{ id: "key_1", name: "laptop", prefix: "sk-AbCdEfG", group: "default", models: [], expiresAt: null, enabled: true, quota: null, dailyBudget: null, monthlyBudget: null, spent: "1", rpm: null, tpm: null, concurrency: null, lastUsedAt: null, createdAt: 1 }] } }

describe("UsageTable", () => {
  it("shows time, key, model, tokens, cost, latency and status of each call", () => {
    renderWithProviders(
      <UsageTable
        records={[
          record(),
          record({ id: "use_2", keyName: null, keyId: "key_gone", stream: true, cost: "1.5", status: 429, errorCode: "rate_limited", model: "gemini-2.5-flash" })
        ]}
      />
    )
    const rows = within(screen.getByTestId("usage-table")).getAllByRole("row")
    assert.strictEqual(rows.length, 3)
    const first = within(rows[1]!)
    first.getByText("laptop")
    first.getByText("gpt-4o-mini")
    first.getByText("1,200 / 345")
    first.getByText("$0.000387")
    first.getByText("812 ms")
    first.getByText("200")
    const second = within(rows[2]!)
    second.getByText("key_gone")
    second.getByText("stream")
    second.getByText("$1.50")
    second.getByText("rate_limited")
    assert.isNull(screen.queryByText("User"), "no user column unless asked")
  })

  it("adds the user column for admins", () => {
    renderWithProviders(<UsageTable records={[record()]} showUser />)
    screen.getByText("User")
    screen.getByText("alice")
  })
})

describe("LedgerTable", () => {
  it("names each kind of change in the chosen language and signs the amounts", () => {
    renderWithProviders(
      <LedgerTable entries={[entry(), entry({ id: "led_2", kind: "charge", amount: "-0.000387", reason: null, requestId: "req_9" })]} />,
      { language: "zh" }
    )
    const rows = within(screen.getByTestId("ledger-table")).getAllByRole("row")
    const first = within(rows[1]!)
    first.getByText("兑换")
    first.getByText("+$7.50")
    first.getByText("code mgr-AbC…")
    const second = within(rows[2]!)
    second.getByText("扣费")
    second.getByText("-$0.000387")
    second.getByText("req_9")
  })
})

describe("usage page", () => {
  it("shows an empty state when no call matches", async () => {
    fakeApi({ "GET /api/auth/session": session(), "GET /api/keys": keys, "GET /api/models": models, "GET /api/usage": page([]) })
    renderWithProviders(<UsagePage />, { path: "/usage" })
    await screen.findByText("No requests match")
    screen.getByText(/show up here within seconds/)
  })

  it("loads the next page after the cursor when asked", async () => {
    const seen = fakeApi({
      "GET /api/auth/session": session(),
      "GET /api/keys": keys,
      "GET /api/models": models,
      "GET /api/usage": (request) =>
        queryOf(request)["cursor"] === "c2" ? page([record({ id: "use_3", model: "gpt-4o" })]) : page([record(), record({ id: "use_2" })], "c2")
    })
    renderWithProviders(<UsagePage />, { path: "/usage" })
    const user = userEvent.setup()
    await user.click(await screen.findByRole("button", { name: "Load more" }))
    await screen.findByText("gpt-4o")
    assert.strictEqual(within(screen.getByTestId("usage-table")).getAllByRole("row").length, 4)
    assert.isNull(screen.queryByRole("button", { name: "Load more" }), "no more pages")
    const usage = seen.filter((r) => r.url.startsWith("/api/usage?"))
    assert.strictEqual(queryOf(usage[0]!)["limit"], "50")
    assert.strictEqual(queryOf(usage[1]!)["cursor"], "c2")
  })

  it("filters by key and custom dates, and exports the same filter as CSV", async () => {
    const seen = fakeApi({
      "GET /api/auth/session": session(),
      "GET /api/keys": keys,
      "GET /api/models": models,
      "GET /api/usage": page([record()])
    })
    renderWithProviders(<UsagePage />, { path: "/usage" })
    const user = userEvent.setup()
    await screen.findByTestId("usage-table")
    await user.click(screen.getByRole("combobox", { name: "Key" }))
    await user.click(await screen.findByRole("option", { name: "laptop", hidden: true }))
    await user.click(screen.getByRole("combobox", { name: "Period" }))
    await user.click(await screen.findByRole("option", { name: "Custom dates", hidden: true }))
    await user.type(screen.getByLabelText("From (UTC)"), "2026-01-10")
    await user.type(screen.getByLabelText("To (UTC, inclusive)"), "2026-01-20")
    await waitFor(() => {
      const last = queryOf(seen.filter((r) => r.url.startsWith("/api/usage?")).at(-1)!)
      assert.deepStrictEqual({ keyId: last["keyId"], from: last["from"], to: last["to"] }, {
        keyId: "key_1",
        from: String(Date.UTC(2026, 0, 10)),
        to: String(Date.UTC(2026, 0, 21))
      })
    })
    const csv = screen.getByRole("link", { name: "Export CSV" })
    const exported = new URL(csv.getAttribute("href")!, "http://console.test")
    assert.strictEqual(exported.pathname, "/api/usage.csv")
    assert.deepStrictEqual(Object.fromEntries(exported.searchParams), {
      keyId: "key_1",
      from: String(Date.UTC(2026, 0, 10)),
      to: String(Date.UTC(2026, 0, 21))
    })
    assert.strictEqual(csv.getAttribute("download"), "usage.csv")
  })

  it("says so next to the end date when it comes before the start", async () => {
    fakeApi({ "GET /api/auth/session": session(), "GET /api/keys": keys, "GET /api/models": models, "GET /api/usage": page([]) })
    renderWithProviders(<UsagePage />, { path: "/usage" })
    const user = userEvent.setup()
    await user.click(await screen.findByRole("combobox", { name: "Period" }))
    await user.click(await screen.findByRole("option", { name: "Custom dates", hidden: true }))
    await user.type(screen.getByLabelText("From (UTC)"), "2026-01-20")
    await user.type(screen.getByLabelText("To (UTC, inclusive)"), "2026-01-10")
    await screen.findByText("The end is before the start")
  })

  it("pages through the balance history", async () => {
    fakeApi({
      "GET /api/auth/session": session(),
      "GET /api/ledger": (request) => queryOf(request)["cursor"] === "n" ? page([entry({ id: "led_9", kind: "topup", amount: "20" })]) : page([entry()], "n")
    })
    renderWithProviders(<UsagePage />, { path: "/usage?tab=ledger" })
    const user = userEvent.setup()
    await user.click(await screen.findByRole("button", { name: "Load more" }))
    await screen.findByText("Top-up")
    screen.getByText("+$20.00")
  })

  it("shows an empty balance history", async () => {
    fakeApi({ "GET /api/auth/session": session(), "GET /api/ledger": page([]) })
    renderWithProviders(<UsagePage />, { path: "/usage?tab=ledger" })
    await screen.findByText("No balance changes yet")
  })
})

describe("periodBounds", () => {
  const now = Date.UTC(2026, 0, 15, 13, 0)
  it("starts presets at a UTC midnight and leaves them open-ended", () => {
    assert.deepStrictEqual(periodBounds({ range: "1", fromDay: "", toDay: "" }, now), { from: Date.UTC(2026, 0, 15), to: undefined })
    assert.deepStrictEqual(periodBounds({ range: "7", fromDay: "", toDay: "" }, now), { from: Date.UTC(2026, 0, 9), to: undefined })
    assert.deepStrictEqual(periodBounds({ range: "all", fromDay: "", toDay: "" }, now), { from: undefined, to: undefined })
  })

  it("takes custom days inclusive, either end optional", () => {
    assert.deepStrictEqual(periodBounds({ range: "custom", fromDay: "2026-01-01", toDay: "2026-01-01" }, now), {
      from: Date.UTC(2026, 0, 1),
      to: Date.UTC(2026, 0, 1) + DAY
    })
    assert.deepStrictEqual(periodBounds({ range: "custom", fromDay: "", toDay: "2026-01-03" }, now), { from: undefined, to: Date.UTC(2026, 0, 4) })
    assert.strictEqual(periodBounds({ range: "custom", fromDay: "2026-01-05", toDay: "2026-01-03" }, now).problem, "usage.rangeInvalid")
  })
})

describe("redeem", () => {
  it("asks for a code before sending", async () => {
    const seen = fakeApi({ "GET /api/auth/session": session() })
    renderWithProviders(<RedeemForm />)
    const user = userEvent.setup()
    await user.click(screen.getByRole("button", { name: "Redeem" }))
    await screen.findByText("Enter a code")
    assert.isFalse(seen.some((r) => r.method === "POST"))
  })

  it("redeems a code and says what it added", async () => {
    const seen = fakeApi({ "GET /api/auth/session": session(), "POST /api/redeem": { body: { amount: "7.5", balance: "20" } } })
    renderWithProviders(<RedeemForm />)
    const user = userEvent.setup()
    await user.type(screen.getByLabelText("Redemption code"), "  mgr-ABCDEF123  ")
    await user.click(screen.getByRole("button", { name: "Redeem" }))
    const result = await screen.findByTestId("redeem-result")
    assert.strictEqual(result.textContent, "$7.50 added. Your balance is now $20.00.")
    assert.deepStrictEqual(seen.find((r) => r.method === "POST")!.body, { code: "mgr-ABCDEF123" })
  })

  it("puts a used code's refusal next to the field, in Chinese", async () => {
    fakeApi({
      "GET /api/auth/session": session(),
      "POST /api/redeem": refusal(400, "code_already_redeemed", "code: this code was already redeemed", "code")
    })
    renderWithProviders(<RedeemForm />, { language: "zh" })
    const user = userEvent.setup()
    await user.type(screen.getByLabelText("兑换码"), "mgr-USED")
    await user.click(screen.getByRole("button", { name: "兑换" }))
    await screen.findByText("此兑换码已被使用。")
  })
})
