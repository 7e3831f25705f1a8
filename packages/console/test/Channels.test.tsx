/**
 * The admin Channels page: each key's health (state, why, since when; hints
 * only), the Reset button for an unhealthy channel, and the routing settings
 * in the channel form (timeouts, breaker, headers, parameters, the
 * stream_options switch) sent as the API expects them.
 */
import { unseenKey } from "@modelgate/core/health/ChannelHealth"
import { screen, waitFor, within } from "@testing-library/react"
import userEvent from "@testing-library/user-event"
import { assert, describe, it, vi } from "vitest"
import { setCsrfToken } from "../src/lib/api.ts"
import { AdminChannelsPage, ChannelForm, ChannelHealthCell } from "../src/pages/admin/Channels.tsx"
import { fakeApi, fill, renderWithProviders, session } from "./render.tsx"

const NOW = 1_700_000_600_000

const key = (index: number, hint: string, over: Record<string, unknown> = {}) => ({
  ...unseenKey(index, hint),
  ...over
})

const channel = (over: Record<string, unknown> = {}) => ({
  id: "chn_1",
  name: "main",
  type: "openai",
  baseUrl: "https://api.example.com/v1",
  keyCount: 2,
  keyHints: ["…aaaa", "…bbbb"],
  models: ["gpt-4o-mini"],
  modelMap: {},
  groups: ["default"],
  priority: 0,
  weight: 1,
  enabled: true,
  apiVersion: null,
  headers: {},
  timeouts: { connectMs: 10_000, firstByteMs: 60_000, idleMs: 120_000, totalMs: 600_000 },
  breaker: {
    consecutiveFailures: 5,
    failureRate: 0.5,
    minimumCalls: 20,
    windowMs: 60_000,
    cooldownMs: 30_000,
    halfOpenCalls: 1
  },
  params: { defaults: {}, overrides: {} },
  streamOptions: true,
  health: { state: "healthy", keys: [key(0, "…aaaa"), key(1, "…bbbb")], refusedModels: [] },
  source: "console",
  createdAt: 1_700_000_000_000,
  ...over
})

const unhealthy = {
  state: "degraded",
  keys: [
    key(0, "…aaaa", {
      state: "open",
      since: NOW - 120_000,
      retryAt: NOW + 20_000,
      reason: "5 failures in a row (last: HTTP 500)",
      recentCalls: 12,
      recentFailures: 6
    }),
    key(1, "…bbbb", {
      state: "disabled",
      since: NOW - 3_600_000,
      status: 401,
      reason: "HTTP 401: Incorrect API key provided",
      lastProbeAt: NOW - 10_000,
      lastProbeOk: false
    })
  ],
  refusedModels: [{
    model: "o3-pro",
    since: NOW - 60_000,
    until: NOW + 540_000,
    status: 403,
    reason: "HTTP 403: Your organization must be verified to use the model"
  }]
} as const

describe("channel health", () => {
  it("shows each key's state, why, since when, the next retry and the last probe", () => {
    renderWithProviders(<ChannelHealthCell health={unhealthy as never} now={NOW} />)
    const cell = screen.getByTestId("channel-health")
    within(cell).getByText("Degraded")
    within(cell).getByText("Breaker open")
    within(cell).getByText("6/12 failed recently")
    within(cell).getByText(/5 failures in a row \(last: HTTP 500\) · since 2 minutes ago · retry in 20 seconds/)
    within(cell).getByText("Disabled")
    within(cell).getByText(/HTTP 401: Incorrect API key provided · since 1 hour ago · probe failed 10 seconds ago/)
  })

  it("shows the models kept off the channel after a 403 about the model, why and until when", () => {
    renderWithProviders(<ChannelHealthCell health={unhealthy as never} now={NOW} />)
    const model = screen.getByTestId("refused-model")
    within(model).getByText("o3-pro")
    within(model).getByText("Model kept off")
    within(model).getByText(/must be verified to use the model · since 1 minute ago · back in 9 minutes/)
  })

  it("speaks Chinese", () => {
    renderWithProviders(<ChannelHealthCell health={unhealthy as never} now={NOW} />, { language: "zh" })
    screen.getByText("部分异常")
    screen.getByText("熔断中")
    screen.getByText("已停用")
    screen.getByText("模型暂避")
  })

  it("offers Reset for an unhealthy channel and sends it", async () => {
    let reset = false
    const seen = fakeApi({
      "GET /api/auth/session": session("admin"),
      "GET /api/admin/channels": () => ({
        body: { data: [channel({ health: reset ? channel().health : unhealthy })] }
      }),
      "GET /api/admin/groups": { body: { data: [] } },
      "POST /api/admin/channels/chn_1/reset": () => {
        reset = true
        return { body: channel() }
      }
    })
    setCsrfToken("csrf-123")
    renderWithProviders(<AdminChannelsPage />)
    const user = userEvent.setup()
    await user.click(await screen.findByRole("button", { name: "Reset main" }))
    await waitFor(() => assert.isNull(screen.queryByRole("button", { name: "Reset main" })))
    const post = seen.find((r) => r.method === "POST")!
    assert.strictEqual(post.url.endsWith("/api/admin/channels/chn_1/reset"), true)
    assert.strictEqual(post.headers["x-csrf-token"], "csrf-123")
  })
})

describe("channel form", () => {
  it("sends the routing settings: changed timeouts, breaker, headers, parameters and the stream_options switch", async () => {
    const seen = fakeApi({ "PATCH /api/admin/channels/chn_1": { body: channel() } })
    const done = vi.fn()
    renderWithProviders(
      <ChannelForm
        channel={channel({ headers: { "X-Api-Token": "…9999" } }) as never}
        groups={["default"]}
        onDone={done}
      />
    )
    const user = userEvent.setup()
    await user.click(screen.getByRole("button", { name: /Routing: timeouts/ }))
    const firstByte = screen.getByLabelText("First byte")
    await user.clear(firstByte)
    await user.type(firstByte, "5000")
    const failures = screen.getByLabelText("Failures in a row")
    await user.clear(failures)
    await user.type(failures, "3")
    const headers = screen.getByLabelText("Extra headers (one per line, as Header: value)")
    assert.strictEqual((headers as HTMLTextAreaElement).value, "X-Api-Token: …9999")
    await fill(user, headers, "\nHTTP-Referer: https://app.example")
    await user.click(screen.getByLabelText("Parameter defaults (JSON)"))
    await user.paste("{\"temperature\": 0.2}")
    await user.click(screen.getByRole("switch", { name: /Send stream_options/ }))
    await user.click(screen.getByRole("button", { name: "Save" }))
    await waitFor(() => assert.strictEqual(done.mock.calls.length, 1))
    const body = seen.find((r) => r.method === "PATCH")!.body as Record<string, any>
    assert.strictEqual(body.timeouts.firstByteMs, 5000)
    assert.strictEqual(body.timeouts.connectMs, 10_000)
    assert.strictEqual(body.breaker.consecutiveFailures, 3)
    assert.deepStrictEqual(body.headers, { "X-Api-Token": "…9999", "HTTP-Referer": "https://app.example" })
    assert.deepStrictEqual(body.params, { defaults: { temperature: 0.2 }, overrides: {} })
    assert.isFalse(body.streamOptions)
    assert.notProperty(body, "apiKeys", "keys are kept when none are typed")
  })

  it("refuses parameters that are not a JSON object before sending", async () => {
    const seen = fakeApi({})
    renderWithProviders(<ChannelForm channel={channel() as never} groups={["default"]} onDone={() => {}} />)
    const user = userEvent.setup()
    await user.click(screen.getByRole("button", { name: /Routing: timeouts/ }))
    await user.click(screen.getByLabelText("Parameter overrides (JSON)"))
    await user.paste("max_tokens=5")
    await user.click(screen.getByRole("button", { name: "Save" }))
    await screen.findByText(/Expected/)
    assert.isFalse(seen.some((r) => r.method === "PATCH"), "nothing was sent")
  })
})

describe("channel health, quietly", () => {
  it("lists no key lines for a healthy channel without recent failures", () => {
    renderWithProviders(
      <ChannelHealthCell
        health={{ state: "healthy", keys: [key(0, "…aaaa", { recentCalls: 40 })], refusedModels: [] } as never}
        now={NOW}
      />
    )
    const cell = screen.getByTestId("channel-health")
    within(cell).getByText("Healthy")
    assert.isNull(within(cell).queryByText("…aaaa"))
  })
})
