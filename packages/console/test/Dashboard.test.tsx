/**
 * The dashboard and the usage overview: the header's balance agrees with the
 * balance card, the overview's filters reach the API, its charts take every
 * day of the period, and chart amounts stay readable.
 */
import { screen, waitFor } from "@testing-library/react"
import userEvent from "@testing-library/user-event"
import { Route, Routes } from "react-router"
import { assert, describe, it } from "vitest"
import { Layout } from "../src/components/Layout.tsx"
import { AdminOverviewPage } from "../src/pages/admin/Overview.tsx"
import { DashboardPage, money, pivotRange } from "../src/pages/Dashboard.tsx"
import { fakeApi, page, queryOf, renderWithProviders, session } from "./render.tsx"

const DAY = 86_400_000

const point = (day: string, model: string, cost: string, tokens = 100) => ({
  day,
  model,
  requests: 1,
  promptTokens: tokens,
  completionTokens: tokens,
  cost
})

describe("dashboard", () => {
  it("puts the balance it reads into the header, so both show the same", async () => {
    fakeApi({
      // The session was read before a call spent some of the balance.
      "GET /api/auth/session": session(),
      "GET /api/dashboard": {
        body: {
          balance: "4.98",
          spentToday: "0.02",
          spentThisMonth: "0.02",
          requestsToday: 3,
          tokensToday: 57,
          activeKeys: 1,
          daily: []
        }
      }
    })
    renderWithProviders(
      <Routes>
        <Route element={<Layout />}>
          <Route index element={<DashboardPage />} />
        </Route>
      </Routes>
    )
    assert.strictEqual((await screen.findByTestId("balance")).textContent, "$4.98")
    await waitFor(() => assert.strictEqual(screen.getByTestId("header-balance").textContent, "$4.98"))
    screen.getByText("No usage yet")
  })

  it("shows a small balance with four decimals, every digit on hover, and warns when it is below what a call holds", async () => {
    const groups = [{
      name: "default",
      ratio: "1",
      limits: { rpm: null, tpm: null, concurrency: null },
      models: [
        {
          id: "gpt-4o",
          displayName: "GPT-4o",
          prices: { input: "2.50", output: "10", cachedInput: null, perRequest: null, free: false },
          inputTokenLimit: 128000,
          outputTokenLimit: 16384,
          holdAtMaxOutput: "0.16384"
        },
        {
          id: "gpt-4o-mini",
          displayName: "GPT-4o mini",
          prices: { input: "0.15", output: "0.60", cachedInput: null, perRequest: null, free: false },
          inputTokenLimit: 128000,
          outputTokenLimit: 16384,
          holdAtMaxOutput: "0.0098304"
        }
      ]
    }]
    fakeApi({
      "GET /api/auth/session": session(),
      "GET /api/models": { body: { groups } },
      "GET /api/dashboard": {
        body: {
          balance: "0.01002",
          spentToday: "0.0002",
          spentThisMonth: "0.0002",
          requestsToday: 1,
          tokensToday: 5,
          activeKeys: 1,
          daily: []
        }
      }
    })
    renderWithProviders(<DashboardPage />)
    const balance = await screen.findByTestId("balance")
    assert.strictEqual(balance.textContent, "$0.0100")
    assert.strictEqual(balance.querySelector("[data-exact]")!.getAttribute("title"), "$0.01002")
    const warning = await screen.findByTestId("hold-warning")
    assert.strictEqual(
      warning.textContent,
      "Your balance ($0.0100) is less than what a call to gpt-4o holds when it does not set max_tokens (from $0.1638). " +
        "Such calls are refused: set max_tokens, or top up."
    )
  })
})

describe("a balance below zero", () => {
  it("is shown as it is, in the header and the dashboard, and says calls are refused until a top-up", async () => {
    fakeApi({
      "GET /api/auth/session": { body: { ...session().body, user: { ...session().body.user, balance: "-0.95" } } },
      "GET /api/models": {
        body: {
          groups: [{
            name: "default",
            ratio: "1",
            limits: { rpm: null, tpm: null, concurrency: null },
            models: [{
              id: "gpt-4o-mini",
              displayName: "GPT-4o mini",
              prices: { input: "0.15", output: "0.60", cachedInput: null, perRequest: null, free: false },
              inputTokenLimit: 128000,
              outputTokenLimit: 16384,
              holdAtMaxOutput: "0.0098304"
            }]
          }]
        }
      },
      "GET /api/dashboard": {
        body: {
          balance: "-1234.5",
          spentToday: "1235",
          spentThisMonth: "1235",
          requestsToday: 2,
          tokensToday: 5,
          activeKeys: 1,
          daily: []
        }
      }
    })
    renderWithProviders(
      <Routes>
        <Route element={<Layout />}>
          <Route index element={<DashboardPage />} />
        </Route>
      </Routes>
    )
    assert.strictEqual((await screen.findByTestId("balance")).textContent, "-$1,234.50")
    await waitFor(() => assert.strictEqual(screen.getByTestId("header-balance").textContent, "-$1,234.50"))
    const warning = await screen.findByTestId("hold-warning")
    assert.strictEqual(
      warning.textContent,
      "Your balance is below zero (-$1,234.50): calls cost more than they held. Calls are refused until you top up."
    )
  })
})

describe("usage overview", () => {
  const overview = {
    body: {
      daily: [point("2026-01-14", "gpt-4o", "0.02"), point("2026-01-15", "gemini-2.5-flash", "0.0003", 50)],
      users: [{ userId: "usr_1", userName: "alice", requests: 2, tokens: 300, cost: "0.0203" }],
      totalCost: "0.0203",
      totalRequests: 2
    }
  }

  it("sends the period, user and model filters, to the totals and the requests alike", async () => {
    const seen = fakeApi({
      "GET /api/auth/session": session("admin"),
      "GET /api/admin/users": {
        body: {
          data: [{
            id: "usr_1",
            name: "alice",
            role: "user",
            enabled: true,
            balance: "1",
            groups: [],
            keyCount: 1,
            spentThisMonth: "0",
            rpm: null,
            tpm: null,
            concurrency: null,
            source: "console",
            createdAt: 1
          }]
        }
      },
      "GET /api/admin/models": { body: { data: [] } },
      "GET /api/admin/usage/daily": overview,
      "GET /api/admin/usage": page([])
    })
    renderWithProviders(<AdminOverviewPage />)
    await screen.findByTestId("top-users")
    screen.getByText("Tokens per day by model")
    assert.strictEqual(screen.getByTestId("overview-tokens").textContent, "300")
    const user = userEvent.setup()
    await user.click(screen.getByRole("combobox", { name: "User" }))
    await user.click(await screen.findByRole("option", { name: "alice", hidden: true }))
    await user.click(screen.getByRole("combobox", { name: "Period" }))
    await user.click(await screen.findByRole("option", { name: "All time", hidden: true }))
    await waitFor(() => {
      const daily = queryOf(seen.filter((r) => r.url.startsWith("/api/admin/usage/daily")).at(-1)!)
      assert.deepStrictEqual(daily, { from: "0", userId: "usr_1" })
      const recent = queryOf(seen.filter((r) => r.url.startsWith("/api/admin/usage?")).at(-1)!)
      assert.deepStrictEqual(recent, { from: "0", userId: "usr_1", limit: "20" })
    })
  })

  it("shows an empty state for a period without usage", async () => {
    fakeApi({
      "GET /api/auth/session": session("admin"),
      "GET /api/admin/users": { body: { data: [] } },
      "GET /api/admin/models": { body: { data: [] } },
      "GET /api/admin/usage/daily": { body: { daily: [], users: [], totalCost: "0", totalRequests: 0 } },
      "GET /api/admin/usage": page([])
    })
    renderWithProviders(<AdminOverviewPage />)
    await screen.findByText("No usage yet")
    await screen.findByText("No requests match")
    assert.isNull(screen.queryByTestId("top-users"))
  })
})

describe("charts", () => {
  it("fill every day of the period with a column per model", () => {
    const from = Date.UTC(2026, 0, 13)
    const { rows, models } = pivotRange(
      [point("2026-01-14", "gpt-4o", "0.02"), point("2026-01-14", "gemini-2.5-flash", "0.5")],
      (p) => Number(p.cost),
      from,
      from + 3 * DAY
    )
    assert.deepStrictEqual(models, ["gemini-2_5-flash", "gpt-4o"])
    assert.deepStrictEqual(rows, [
      { day: "01-13", "gemini-2_5-flash": 0, "gpt-4o": 0 },
      { day: "01-14", "gemini-2_5-flash": 0.5, "gpt-4o": 0.02 },
      { day: "01-15", "gemini-2_5-flash": 0, "gpt-4o": 0 }
    ])
  })

  it("leave out a model that only refused calls named (nothing spent, no tokens)", () => {
    const from = Date.UTC(2026, 0, 13)
    const { rows, models } = pivotRange(
      [point("2026-01-14", "gpt-4o", "0.02"), point("2026-01-14", "gpt-4.1-mini", "0")],
      (p) => Number(p.cost),
      from,
      from + 2 * DAY
    )
    assert.deepStrictEqual(models, ["gpt-4o"])
    assert.deepStrictEqual(rows, [{ day: "01-13", "gpt-4o": 0 }, { day: "01-14", "gpt-4o": 0.02 }])
  })

  it("write whole dates when the period spans years", () => {
    const { rows } = pivotRange([], () => 0, Date.UTC(2025, 11, 31), Date.UTC(2026, 0, 2))
    assert.deepStrictEqual(rows.map((r) => r["day"]), ["2025-12-31", "2026-01-01"])
  })

  it("label amounts so that ticks below a dollar stay apart", () => {
    assert.deepStrictEqual([0, 0.005, 0.01, 0.015, 0.0000049, 12.345].map(money), [
      "$0",
      "$0.005",
      "$0.01",
      "$0.015",
      "$0.0000049",
      "$12.35"
    ])
  })
})
