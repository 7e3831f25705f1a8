/**
 * Billing: the ledger table (rendering, empty states, paging), custom dates,
 * and the redeem form (validation, result, refusals in both languages). The
 * request log's tests are in Requests.test.tsx.
 */
import { screen, within } from "@testing-library/react"
import userEvent from "@testing-library/user-event"
import { Route, Routes } from "react-router"
import { assert, describe, it } from "vitest"
import { periodBounds } from "../src/components/Period.tsx"
import { type Contract } from "../src/lib/api.ts"
import { LedgerTable, RedeemForm, UsagePage } from "../src/pages/Usage.tsx"
import { fakeApi, page, queryOf, refusal, renderWithProviders, session } from "./render.tsx"

const DAY = 86_400_000

const entry = (over: Partial<Contract.LedgerItem> = {}): Contract.LedgerItem => ({
  id: "led_1",
  createdAt: Date.UTC(2026, 0, 15, 10, 30),
  kind: "redemption",
  amount: "7.5",
  reason: "code mgr-AbC…",
  requestId: null,
  ...over
})

describe("LedgerTable", () => {
  it("names each kind of change in the chosen language and signs the amounts", () => {
    renderWithProviders(
      <LedgerTable
        entries={[
          entry(),
          entry({ id: "led_2", kind: "charge", amount: "-0.000387", reason: null, requestId: "req_9" })
        ]}
      />,
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
  it("sends an old link to its requests tab on to the Requests page", async () => {
    fakeApi({ "GET /api/auth/session": session() })
    renderWithProviders(
      <Routes>
        <Route path="/usage" element={<UsagePage />} />
        <Route path="/requests" element={<p>the request log</p>} />
      </Routes>,
      { path: "/usage?tab=records" }
    )
    await screen.findByText("the request log")
  })

  it("pages through the balance history", async () => {
    fakeApi({
      "GET /api/auth/session": session(),
      "GET /api/ledger": (request) =>
        queryOf(request)["cursor"] === "n"
          ? page([entry({ id: "led_9", kind: "topup", amount: "20" })])
          : page([entry()], "n")
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
    assert.deepStrictEqual(periodBounds({ range: "1", fromDay: "", toDay: "" }, now), {
      from: Date.UTC(2026, 0, 15),
      to: undefined
    })
    assert.deepStrictEqual(periodBounds({ range: "7", fromDay: "", toDay: "" }, now), {
      from: Date.UTC(2026, 0, 9),
      to: undefined
    })
    assert.deepStrictEqual(periodBounds({ range: "all", fromDay: "", toDay: "" }, now), {
      from: undefined,
      to: undefined
    })
  })

  it("takes custom days inclusive, either end optional", () => {
    assert.deepStrictEqual(periodBounds({ range: "custom", fromDay: "2026-01-01", toDay: "2026-01-01" }, now), {
      from: Date.UTC(2026, 0, 1),
      to: Date.UTC(2026, 0, 1) + DAY
    })
    assert.deepStrictEqual(periodBounds({ range: "custom", fromDay: "", toDay: "2026-01-03" }, now), {
      from: undefined,
      to: Date.UTC(2026, 0, 4)
    })
    assert.strictEqual(
      periodBounds({ range: "custom", fromDay: "2026-01-05", toDay: "2026-01-03" }, now).problem,
      "usage.rangeInvalid"
    )
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
    const seen = fakeApi({
      "GET /api/auth/session": session(),
      "POST /api/redeem": { body: { amount: "7.5", balance: "20" } }
    })
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
