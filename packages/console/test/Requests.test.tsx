/**
 * The request log: the table (a user's and an admin's), the details of a call
 * (its message, a refusal before any upstream, an admin's attempts), the
 * filters and the CSV export they feed, the request id search, paging, and
 * new calls appearing without a reload.
 */
import { act, screen, waitFor, within } from "@testing-library/react"
import userEvent from "@testing-library/user-event"
import { assert, describe, it, vi } from "vitest"
import { type Contract } from "../src/lib/api.ts"
import { ModelsPage } from "../src/pages/Models.tsx"
import { LIVE_INTERVAL_MS, RequestsPage, RequestTable } from "../src/pages/Requests.tsx"
import { fakeApi, fill, page, queryOf, renderWithProviders, session } from "./render.tsx"

const record = (over: Partial<Contract.UsageItem> = {}): Contract.UsageItem => ({
  id: "use_1",
  createdAt: Date.UTC(2026, 0, 15, 10, 30),
  requestId: "req_aaaaaaaaaaaaaaaaaaaaaaaa",
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
  ttfbMs: 640,
  status: 200,
  errorCode: null,
  errorMessage: null,
  ...over
})

const failed = record({
  id: "use_2",
  requestId: "req_bbbbbbbbbbbbbbbbbbbbbbbb",
  status: 502,
  errorCode: "UpstreamUnavailable",
  errorMessage: "The upstream 'openai-main' could not be reached (ECONNREFUSED).",
  cost: "0",
  promptTokens: 0,
  completionTokens: 0,
  ttfbMs: null
})

const refused = record({
  id: "use_3",
  requestId: "req_cccccccccccccccccccccccc",
  status: 429,
  errorCode: "InsufficientBalance",
  errorMessage: "Your balance is 0.000001 USD but this call may cost up to 0.0098304 USD.",
  cost: "0",
  promptTokens: 0,
  completionTokens: 0,
  ttfbMs: null
})

const models = {
  body: {
    groups: [{
      name: "default",
      ratio: "1",
      limits: { rpm: null, tpm: null, concurrency: null },
      models: [{
        id: "gpt-4o-mini",
        displayName: "GPT-4o mini",
        prices: { input: "0.15", output: "0.6", cachedInput: null, perRequest: null, free: false },
        inputTokenLimit: 128000,
        outputTokenLimit: 16384,
        holdAtMaxOutput: "0.0098304"
      }]
    }]
  }
}

const keys = {
  body: {
    data: [{
      id: "key_1",
      name: "laptop",
      prefix: "sk-AbCdEfG",
      group: "default",
      models: [],
      expiresAt: null,
      enabled: true,
      quota: null,
      dailyBudget: null,
      monthlyBudget: null,
      spent: "1",
      rpm: null,
      tpm: null,
      concurrency: null,
      lastUsedAt: null,
      createdAt: 1
    }]
  }
}

const userRoutes = (usage: Parameters<typeof fakeApi>[0][string]) => ({
  "GET /api/auth/session": session(),
  "GET /api/keys": keys,
  "GET /api/models": models,
  "GET /api/usage": usage
})

const usageRequests = (seen: ReturnType<typeof fakeApi>) => seen.filter((r) => r.url.startsWith("/api/usage?"))

describe("RequestTable", () => {
  it("shows each call's time and request id, key, model, tokens, cost, latency and status with its code", () => {
    renderWithProviders(<RequestTable records={[record({ stream: true }), failed]} admin={false} onOpen={() => {}} />)
    const rows = within(screen.getByTestId("requests-table")).getAllByRole("row")
    assert.strictEqual(rows.length, 3)
    const first = within(rows[1]!)
    first.getByText("req_aaaaaaaaaaaaaaaaaaaaaaaa")
    first.getByText("laptop")
    first.getByText("gpt-4o-mini")
    first.getByText("stream")
    first.getByText("1,200 / 345")
    first.getByText("$0.000387")
    first.getByText("812 ms")
    first.getByText("first byte 640 ms")
    first.getByText("200")
    within(rows[2]!).getByText("502 UpstreamUnavailable")
    assert.isNull(screen.queryByText("User"), "a user's own calls have no user column")
  })

  it("adds the user and where each call went for admins", () => {
    renderWithProviders(
      <RequestTable
        records={[
          record({ channel: "openai-main", upstreamModel: "gpt-4o-mini-2024-07-18", attempts: 1, attemptLog: [] })
        ]}
        admin
        onOpen={() => {}}
      />
    )
    screen.getByText("User")
    screen.getByText("alice")
    screen.getByText("→ openai-main · gpt-4o-mini-2024-07-18")
  })
})

describe("the request log", () => {
  it("opens a failed call with its message, and a refused one says nothing was charged", async () => {
    fakeApi(userRoutes(page([refused, failed, record()])))
    renderWithProviders(<RequestsPage />, { path: "/requests" })
    const user = userEvent.setup()
    await user.click(await screen.findByRole("button", { name: `Open request ${failed.requestId}` }))
    const detail = await screen.findByTestId("request-detail")
    within(detail).getByText(failed.errorMessage!)
    assert.isNull(within(detail).queryByTestId("detail-refused"), "it reached an upstream")
    assert.isNull(within(detail).queryByTestId("detail-attempts"), "users never see the operator's channels")
    await user.click(screen.getByRole("button", { name: `Open request ${refused.requestId}` }))
    await waitFor(() => within(screen.getByTestId("request-detail")).getByText(refused.errorMessage!))
    within(screen.getByTestId("request-detail")).getByText(
      "Refused before any upstream was tried: nothing was charged."
    )
  })

  it("shows admins every attempt with its error, the channel and the upstream model", async () => {
    const withAttempts = {
      ...failed,
      channel: "backup",
      upstreamModel: "gpt-4o-mini",
      upstreamDialect: "openai" as const,
      attempts: 2,
      attemptLog: [
        {
          channel: "openai-main",
          keyHint: "…7f3a",
          status: 503,
          errorCode: "UpstreamUnavailable",
          errorMessage: "The upstream failed (HTTP 503).",
          durationMs: 12
        },
        {
          channel: "backup",
          keyHint: "…1234",
          status: null,
          errorCode: "UpstreamUnavailable",
          errorMessage: "The upstream 'backup' could not be reached (ECONNREFUSED).",
          durationMs: 3
        }
      ]
    }
    fakeApi({
      "GET /api/auth/session": session("admin"),
      "GET /api/admin/usage": page([withAttempts]),
      "GET /api/admin/users": { body: { data: [] } },
      "GET /api/admin/channels": { body: { data: [] } },
      "GET /api/admin/models": { body: { data: [], unpriced: [] } }
    })
    renderWithProviders(<RequestsPage />, { path: "/requests" })
    const user = userEvent.setup()
    await user.click(await screen.findByRole("button", { name: `Open request ${failed.requestId}` }))
    const attempts = await screen.findByTestId("detail-attempts")
    within(attempts).getByText("UpstreamUnavailable: The upstream failed (HTTP 503).")
    within(attempts).getByText("UpstreamUnavailable: The upstream 'backup' could not be reached (ECONNREFUSED).")
    within(attempts).getByText("…7f3a")
    assert.include(screen.getByTestId("detail-channel").textContent, "backup (OpenAI)")
  })

  it("finds a call by its request id at any time, and says so when there is none", async () => {
    const seen = fakeApi(
      userRoutes((request) =>
        queryOf(request)["requestId"] === failed.requestId
          ? page([failed])
          : queryOf(request)["requestId"] === undefined
          ? page([record(), failed])
          : page([])
      )
    )
    renderWithProviders(<RequestsPage />, { path: "/requests" })
    const user = userEvent.setup()
    await screen.findByTestId("requests-table")
    const search = screen.getByPlaceholderText("Search by request id (req_…)")
    // Pasted, as request ids are (typed key by key on a loaded machine, each prefix is searched in turn).
    await fill(user, search, `  ${failed.requestId} `)
    // Only the call searched for is listed.
    await waitFor(() =>
      assert.deepStrictEqual(
        [...screen.getByTestId("requests-table").querySelectorAll("tbody tr")].map((r) =>
          r.getAttribute("data-request")
        ),
        [failed.requestId]
      )
    )
    const last = queryOf(usageRequests(seen).at(-1)!)
    assert.strictEqual(last["requestId"], failed.requestId, "trimmed")
    assert.isUndefined(last["from"], "the period does not hide it")
    await user.clear(search)
    await fill(user, search, "req_nothing")
    await screen.findByText(/No request with the id req_nothing/)
  })

  it("filters by key, status, error code and custom dates, and exports the same filter as CSV", async () => {
    const seen = fakeApi(userRoutes(page([record()])))
    renderWithProviders(<RequestsPage />, { path: "/requests" })
    const user = userEvent.setup()
    await screen.findByTestId("requests-table")
    await user.click(screen.getByRole("combobox", { name: "Key" }))
    await user.click(await screen.findByRole("option", { name: "laptop", hidden: true }))
    await user.click(screen.getByRole("combobox", { name: "Status" }))
    await user.click(await screen.findByRole("option", { name: "Upstream or gateway error (5xx)", hidden: true }))
    await user.click(screen.getByRole("combobox", { name: "Error code" }))
    await user.click(await screen.findByRole("option", { name: "UpstreamTimeout", hidden: true }))
    await user.click(screen.getByRole("combobox", { name: "Period" }))
    await user.click(await screen.findByRole("option", { name: "Custom dates", hidden: true }))
    await user.type(screen.getByLabelText("From (UTC)"), "2026-01-10")
    await user.type(screen.getByLabelText("To (UTC, inclusive)"), "2026-01-20")
    const expected = {
      keyId: "key_1",
      status: "5xx",
      errorCode: "UpstreamTimeout",
      from: String(Date.UTC(2026, 0, 10)),
      to: String(Date.UTC(2026, 0, 21))
    }
    await waitFor(() => {
      const last = queryOf(usageRequests(seen).at(-1)!)
      assert.deepStrictEqual({
        keyId: last["keyId"],
        status: last["status"],
        errorCode: last["errorCode"],
        from: last["from"],
        to: last["to"]
      }, expected)
    })
    const csv = screen.getByRole("link", { name: "Export CSV" })
    const exported = new URL(csv.getAttribute("href")!, "http://console.test")
    assert.strictEqual(exported.pathname, "/api/usage.csv")
    assert.deepStrictEqual(Object.fromEntries(exported.searchParams), expected)
  })

  it("shares the models query with the other pages (the same answer in the cache) and offers its ids as the model filter", async () => {
    fakeApi(userRoutes(page([record()])))
    // The Models page reads the same query: one shape in the cache serves both.
    renderWithProviders(
      <>
        <ModelsPage />
        <RequestsPage />
      </>,
      { path: "/requests" }
    )
    const user = userEvent.setup()
    await screen.findByTestId("models-page")
    await screen.findByTestId("requests-table")
    await user.click(screen.getByRole("combobox", { name: "Model" }))
    await screen.findByRole("option", { name: "gpt-4o-mini", hidden: true })
  })

  it("loads the next page after the cursor when asked", async () => {
    const seen = fakeApi(
      userRoutes((request) =>
        queryOf(request)["cursor"] === "c2"
          ? page([record({ id: "use_9", requestId: "req_999999999999999999999999", model: "gpt-4o" })])
          : page([record(), failed], "c2")
      )
    )
    renderWithProviders(<RequestsPage />, { path: "/requests" })
    const user = userEvent.setup()
    await user.click(await screen.findByRole("button", { name: "Load more" }))
    await screen.findByText("gpt-4o")
    assert.strictEqual(within(screen.getByTestId("requests-table")).getAllByRole("row").length, 4)
    assert.isNull(screen.queryByRole("button", { name: "Load more" }), "no more pages")
    assert.strictEqual(queryOf(usageRequests(seen)[0]!)["limit"], "50")
    assert.isTrue(usageRequests(seen).some((r) => queryOf(r)["cursor"] === "c2"))
  })

  it("shows a new call without a reload, by reading the first page again every second; switched off, it does not", async () => {
    // The page's clock is the test's: a second passes when the test says so, however loaded the machine.
    vi.useFakeTimers({
      shouldAdvanceTime: true,
      toFake: ["setInterval", "clearInterval", "setTimeout", "clearTimeout"]
    })
    try {
      let calls = [record()]
      const seen = fakeApi(userRoutes(() => page(calls)))
      renderWithProviders(<RequestsPage />, { path: "/requests" })
      await screen.findByTestId("requests-table")
      assert.strictEqual(LIVE_INTERVAL_MS, 1_000)
      calls = [failed, record()]
      const read = usageRequests(seen).length
      await act(() => vi.advanceTimersByTimeAsync(LIVE_INTERVAL_MS))
      await waitFor(() => assert.isAbove(usageRequests(seen).length, read, "read again after a second"))
      await screen.findByText("502 UpstreamUnavailable")

      const user = userEvent.setup({ advanceTimers: vi.advanceTimersByTime })
      await user.click(screen.getByRole("switch", { name: "Live" }))
      const before = usageRequests(seen).length
      calls = [refused, failed, record()]
      await act(() => vi.advanceTimersByTimeAsync(3 * LIVE_INTERVAL_MS))
      assert.strictEqual(usageRequests(seen).length, before, "nothing read while live is off")
      assert.isNull(screen.queryByText("429 InsufficientBalance"))
    } finally {
      vi.useRealTimers()
    }
  })
})
