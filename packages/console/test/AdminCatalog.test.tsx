/**
 * Administration of groups and of models and prices: the forms (validation
 * next to the field, requests sent), the tables (rendering, every digit of a
 * price, empty states), and a failed delete shown instead of swallowed.
 */
import { screen, waitFor, within } from "@testing-library/react"
import userEvent from "@testing-library/user-event"
import { afterEach, assert, describe, it, vi } from "vitest"
import { setCsrfToken } from "../src/lib/api.ts"
import { AdminGroupsPage } from "../src/pages/admin/Groups.tsx"
import { AdminModelsPage } from "../src/pages/admin/Models.tsx"
import { fakeApi, refusal, renderWithProviders, session } from "./render.tsx"

const group = (over: Record<string, unknown> = {}) => ({
  name: "vip",
  ratio: "0.8",
  limits: { rpm: 600, tpm: null, concurrency: 4 },
  selectable: false,
  users: ["bob"],
  source: "console",
  ...over
})

const model = (over: Record<string, unknown> = {}) => ({
  id: "gpt-4o-mini",
  displayName: "GPT-4o mini",
  prices: { input: "0.15", output: "0.6", cachedInput: "0.075", perRequest: null, free: false },
  inputTokenLimit: 128000,
  outputTokenLimit: 16384,
  description: null,
  embedding: false,
  reasoning: false,
  reasoningContent: false,
  source: "console",
  ...over
})

const users = { body: { data: [] } }

afterEach(() => {
  vi.unstubAllGlobals()
  setCsrfToken(null)
})

describe("groups", () => {
  it("lists groups with ratio, limits and who may pick them", async () => {
    fakeApi({
      "GET /api/auth/session": session("admin"),
      "GET /api/admin/users": users,
      "GET /api/admin/groups": { body: { data: [group(), group({ name: "default", ratio: "1", limits: { rpm: null, tpm: null, concurrency: null }, selectable: true, users: [] })] } }
    })
    renderWithProviders(<AdminGroupsPage />)
    const rows = within(await screen.findByTestId("groups-table")).getAllByRole("row")
    const vip = within(rows[1]!)
    vip.getByText("×0.8")
    vip.getByText("600 requests/min · 4 at once")
    vip.getByText("bob")
    const all = within(rows[2]!)
    all.getByText("No limits")
    all.getByText("Any user may pick it")
  })

  it("shows an empty state", async () => {
    fakeApi({ "GET /api/auth/session": session("admin"), "GET /api/admin/users": users, "GET /api/admin/groups": { body: { data: [] } } })
    renderWithProviders(<AdminGroupsPage />)
    await screen.findByText("No groups yet")
  })

  it("checks the name, ratio and limits next to their fields, then creates the group", async () => {
    const seen = fakeApi({
      "GET /api/auth/session": session("admin"),
      "GET /api/admin/users": users,
      "GET /api/admin/groups": { body: { data: [] } },
      "POST /api/admin/groups": { status: 201, body: group({ name: "team-a", ratio: "0.5", users: [] }) }
    })
    renderWithProviders(<AdminGroupsPage />)
    const user = userEvent.setup()
    await user.click((await screen.findAllByRole("button", { name: "New group" }))[0]!)
    const dialog = await screen.findByRole("dialog")
    await user.type(within(dialog).getByLabelText("Name"), "team a")
    const ratio = within(dialog).getByLabelText("Price ratio")
    await user.clear(ratio)
    await user.type(ratio, "half")
    await user.type(within(dialog).getByLabelText("Requests / min"), "0")
    await user.click(within(dialog).getByRole("button", { name: "Create" }))
    await within(dialog).findByText("1-64 letters, digits, '.', '_' or '-', starting with a letter or digit")
    within(dialog).getByText("Enter a ratio like 1 or 0.8 (at most 6 decimal places)")
    within(dialog).getByText("Must be a whole number above 0, or empty for no limit")
    assert.isFalse(seen.some((r) => r.method === "POST"))
    await user.clear(within(dialog).getByLabelText("Name"))
    await user.type(within(dialog).getByLabelText("Name"), "team-a")
    await user.clear(ratio)
    await user.type(ratio, "0.5")
    await user.clear(within(dialog).getByLabelText("Requests / min"))
    await user.type(within(dialog).getByLabelText("Concurrent calls"), "3")
    await user.click(within(dialog).getByRole("button", { name: "Create" }))
    await waitFor(() => assert.isDefined(seen.find((r) => r.method === "POST")))
    assert.deepStrictEqual(seen.find((r) => r.method === "POST")!.body, {
      name: "team-a",
      ratio: "0.5",
      limits: { rpm: null, tpm: null, concurrency: 3 },
      selectable: false
    })
  })

  it("shows why a group cannot be deleted", async () => {
    fakeApi({
      "GET /api/auth/session": session("admin"),
      "GET /api/admin/users": users,
      "GET /api/admin/groups": { body: { data: [group()] } },
      "DELETE /api/admin/groups/vip": refusal(409, "conflict", "The group 'vip' is used by 2 API key(s); move or delete them first.")
    })
    renderWithProviders(<AdminGroupsPage />)
    const user = userEvent.setup()
    await user.click(await screen.findByRole("button", { name: "Delete" }))
    await user.click(within(await screen.findByRole("dialog")).getByRole("button", { name: "Delete" }))
    await screen.findByText("The group 'vip' is used by 2 API key(s); move or delete them first.")
  })
})

describe("models and prices", () => {
  it("lists every significant digit of each price", async () => {
    fakeApi({
      "GET /api/auth/session": session("admin"),
      "GET /api/admin/models": { body: { data: [model(), model({ id: "local-llama", displayName: "Llama", prices: { input: null, output: null, cachedInput: null, perRequest: null, free: true } })] } }
    })
    renderWithProviders(<AdminModelsPage />)
    const rows = within(await screen.findByTestId("admin-models-table")).getAllByRole("row")
    const mini = within(rows[1]!)
    mini.getByText("$0.15")
    mini.getByText("$0.60")
    mini.getByText("$0.075")
    mini.getByText("128.0K / 16.4K")
    within(rows[2]!).getByText("Free")
  })

  it("shows an empty state", async () => {
    fakeApi({ "GET /api/auth/session": session("admin"), "GET /api/admin/models": { body: { data: [] } } })
    renderWithProviders(<AdminModelsPage />)
    await screen.findByText("No models yet")
  })

  it("checks the id and prices next to their fields, then saves the model", async () => {
    const seen = fakeApi({
      "GET /api/auth/session": session("admin"),
      "GET /api/admin/models": { body: { data: [] } },
      "POST /api/admin/models": { body: model({ id: "my/model" }) }
    })
    renderWithProviders(<AdminModelsPage />)
    const user = userEvent.setup()
    await user.click((await screen.findAllByRole("button", { name: "New model" }))[0]!)
    const dialog = await screen.findByRole("dialog")
    await user.type(within(dialog).getByLabelText("Model id"), "bad id!")
    await user.type(within(dialog).getByLabelText("Input"), "cheap")
    await user.click(within(dialog).getByRole("button", { name: "Save" }))
    await within(dialog).findByText("1-128 letters, digits or . _ : / @ -")
    within(dialog).getByText(/Enter a non-negative amount in USD/)
    assert.isFalse(seen.some((r) => r.method === "POST"))
    await user.clear(within(dialog).getByLabelText("Model id"))
    await user.type(within(dialog).getByLabelText("Model id"), "my/model")
    await user.clear(within(dialog).getByLabelText("Input"))
    await user.type(within(dialog).getByLabelText("Input"), "0.075")
    await user.type(within(dialog).getByLabelText("Output"), "0.3")
    await user.click(within(dialog).getByRole("button", { name: "Save" }))
    await waitFor(() => assert.isDefined(seen.find((r) => r.method === "POST")))
    assert.deepStrictEqual(seen.find((r) => r.method === "POST")!.body, {
      id: "my/model",
      prices: { input: "0.075", output: "0.3", cachedInput: null, perRequest: null, free: false },
      inputTokenLimit: 128000,
      outputTokenLimit: 8192
    })
  })

  it("shows a failed delete instead of swallowing it", async () => {
    fakeApi({
      "GET /api/auth/session": session("admin"),
      "GET /api/admin/models": { body: { data: [model()] } },
      "DELETE /api/admin/models/gpt-4o-mini": refusal(404, "not_found", "No model 'gpt-4o-mini'.")
    })
    renderWithProviders(<AdminModelsPage />)
    const user = userEvent.setup()
    await user.click(await screen.findByRole("button", { name: "Delete" }))
    await user.click(within(await screen.findByRole("dialog")).getByRole("button", { name: "Delete" }))
    await screen.findByText("No model 'gpt-4o-mini'.")
    screen.getByRole("dialog")
  })
})
