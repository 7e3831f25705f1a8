/**
 * Redemption codes: the generate form (validation next to the field, the
 * request, the codes shown once with their download's content), the codes
 * table (rendering, who redeemed, empty state) and its CSV export link.
 */
import { screen, waitFor, within } from "@testing-library/react"
import userEvent from "@testing-library/user-event"
import { assert, describe, it } from "vitest"
import { AdminCodesPage } from "../src/pages/admin/Codes.tsx"
import { fakeApi, page, queryOf, renderWithProviders, session } from "./render.tsx"

const code = (over: Record<string, unknown> = {}) => ({
  prefix: "mgr-AbCd",
  amount: "7.5",
  batch: "rdb_1",
  createdAt: Date.UTC(2026, 0, 10),
  createdBy: "admin",
  redeemedAt: null,
  redeemedBy: null,
  ...over
})

describe("redemption codes", () => {
  it("lists codes by prefix with their value, and who redeemed them", async () => {
    fakeApi({
      "GET /api/auth/session": session("admin"),
      "GET /api/admin/codes": page([
        code(),
        code({ prefix: "mgr-ZyXw", redeemedBy: "alice", redeemedAt: Date.UTC(2026, 0, 11, 9) })
      ])
    })
    renderWithProviders(<AdminCodesPage />)
    const rows = within(await screen.findByTestId("codes-table")).getAllByRole("row")
    const unused = within(rows[1]!)
    unused.getByText("mgr-AbCd…")
    unused.getByText("$7.50")
    unused.getByText("Unused")
    within(rows[2]!).getByText(/^alice · /)
  })

  it("shows an empty state, and filters and exports by status", async () => {
    const seen = fakeApi({ "GET /api/auth/session": session("admin"), "GET /api/admin/codes": page([]) })
    renderWithProviders(<AdminCodesPage />)
    await screen.findByText("No codes yet")
    const user = userEvent.setup()
    await user.click(screen.getByText("Redeemed"))
    await waitFor(() => assert.strictEqual(queryOf(seen.at(-1)!)["status"], "redeemed"))
    const csv = screen.getByRole("link", { name: "Export CSV" })
    const exported = new URL(csv.getAttribute("href")!, "http://console.test")
    assert.strictEqual(exported.pathname, "/api/admin/codes.csv")
    assert.strictEqual(exported.searchParams.get("status"), "redeemed")
  })

  it("checks the count and value next to their fields", async () => {
    const seen = fakeApi({ "GET /api/auth/session": session("admin"), "GET /api/admin/codes": page([]) })
    renderWithProviders(<AdminCodesPage />, { language: "zh" })
    const user = userEvent.setup()
    const count = await screen.findByLabelText("数量")
    // The field clamps what is typed to 1-1000; an empty one is what can still be wrong.
    await user.clear(count)
    await user.type(screen.getByLabelText("每个面额（美元）"), "0")
    await user.click(screen.getByRole("button", { name: "生成兑换码" }))
    await screen.findByText("数量须在 1 到 1000 之间")
    screen.getByText("金额必须大于 0")
    assert.isFalse(seen.some((r) => r.method === "POST"))
  })

  it("generates a batch and shows the codes once, with a download of exactly them", async () => {
    const codes = ["mgr-AAAA1111BBBB2222", "mgr-CCCC3333DDDD4444"]
    const seen = fakeApi({
      "GET /api/auth/session": session("admin"),
      "GET /api/admin/codes": page([]),
      "POST /api/admin/codes": { status: 201, body: { batch: "rdb_9", amount: "5", codes } }
    })
    renderWithProviders(<AdminCodesPage />)
    const user = userEvent.setup()
    const count = await screen.findByLabelText("How many")
    await user.clear(count)
    await user.type(count, "2")
    await user.type(screen.getByLabelText("Value of each (USD)"), "5")
    await user.click(screen.getByRole("button", { name: "Generate codes" }))
    const shown = await screen.findByTestId("generated-codes")
    assert.strictEqual(shown.querySelector("pre, code")!.textContent, codes.join("\n"))
    screen.getByText("2 codes worth $5.00 each")
    assert.deepStrictEqual(seen.find((r) => r.method === "POST")!.body, { count: 2, amount: "5" })
    const download = screen.getByRole("link", { name: "Download .txt" })
    assert.strictEqual(download.getAttribute("download"), "rdb_9.txt")
    const href = download.getAttribute("href")!
    assert.strictEqual(decodeURIComponent(href.slice(href.indexOf(",") + 1)), `${codes.join("\n")}\n`)
  })
})
