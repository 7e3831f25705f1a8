/**
 * Administration of groups and of models and prices: the forms (validation
 * next to the field, requests sent, a model's description and kinds shown
 * and edited, in English and Chinese), the tables (rendering, every digit of
 * a price, a model's kinds and description, empty states), and a failed
 * delete shown instead of swallowed.
 */
import { screen, waitFor, within } from "@testing-library/react"
import userEvent from "@testing-library/user-event"
import { assert, describe, it } from "vitest"
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

describe("groups", () => {
  it("lists groups with ratio, limits and who may pick them", async () => {
    fakeApi({
      "GET /api/auth/session": session("admin"),
      "GET /api/admin/users": users,
      "GET /api/admin/groups": {
        body: {
          data: [
            group(),
            group({
              name: "default",
              ratio: "1",
              limits: { rpm: null, tpm: null, concurrency: null },
              selectable: true,
              users: []
            })
          ]
        }
      }
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

  const presets = {
    asOf: "2025-09-01",
    sources: ["https://platform.openai.com/docs/pricing"],
    data: [{
      id: "gpt-4.1-mini",
      displayName: "GPT-4.1 mini",
      provider: "openai",
      prices: { input: "0.40", output: "1.60", cachedInput: "0.10", cacheWrite: null, perRequest: null, free: false },
      inputTokenLimit: 1047576,
      outputTokenLimit: 32768,
      embedding: false,
      reasoning: false
    }, {
      id: "claude-sonnet-4-0",
      displayName: "Claude Sonnet 4",
      provider: "anthropic",
      prices: { input: "3", output: "15", cachedInput: "0.30", cacheWrite: "3.75", perRequest: null, free: false },
      inputTokenLimit: 200000,
      outputTokenLimit: 64000,
      embedding: false,
      reasoning: true
    }]
  }

  it("lists channel models without a price, and one click opens their form prefilled from the price table", async () => {
    const seen = fakeApi({
      "GET /api/auth/session": session("admin"),
      "GET /api/admin/models": {
        body: {
          data: [model()],
          unpriced: [{ id: "gpt-4.1-mini", channels: ["openai-main"] }, { id: "local-qwen", channels: ["vllm"] }]
        }
      },
      "GET /api/admin/models/presets": { body: presets },
      "GET /api/admin/aliases": { body: { data: [] } },
      "POST /api/admin/models": { body: model({ id: "gpt-4.1-mini" }) }
    })
    renderWithProviders(<AdminModelsPage />)
    const unpriced = await screen.findByTestId("unpriced-models")
    within(unpriced).getByText(
      "Calls to these models are refused (403 model_unpriced) until they have a price or are marked free."
    )
    within(unpriced).getByText("served by openai-main")
    const user = userEvent.setup()
    const row = unpriced.querySelector("[data-unpriced='gpt-4.1-mini']") as HTMLElement
    await user.click(within(row).getByRole("button", { name: "Set price" }))
    const dialog = await screen.findByRole("dialog")
    assert.strictEqual((within(dialog).getByLabelText("Model id") as HTMLInputElement).value, "gpt-4.1-mini")
    assert.strictEqual((within(dialog).getByLabelText("Input") as HTMLInputElement).value, "0.40")
    assert.strictEqual((within(dialog).getByLabelText("Cached input") as HTMLInputElement).value, "0.10")
    within(dialog).getByText("List prices as of 2025-09-01; check them before relying on them.")
    await user.click(within(dialog).getByRole("button", { name: "Save" }))
    await waitFor(() => assert.isDefined(seen.find((r) => r.method === "POST")))
    assert.deepStrictEqual(seen.find((r) => r.method === "POST")!.body, {
      id: "gpt-4.1-mini",
      displayName: "GPT-4.1 mini",
      prices: { input: "0.40", output: "1.60", cachedInput: "0.10", cacheWrite: null, perRequest: null, free: false },
      inputTokenLimit: 1047576,
      outputTokenLimit: 32768,
      description: null,
      embedding: false,
      reasoning: false,
      reasoningContent: false
    })
  })

  it("prefills an Anthropic model's cache-write price from the price table", async () => {
    const seen = fakeApi({
      "GET /api/auth/session": session("admin"),
      "GET /api/admin/models": {
        body: { data: [], unpriced: [{ id: "claude-sonnet-4-0", channels: ["anthropic-main"] }] }
      },
      "GET /api/admin/models/presets": { body: presets },
      "GET /api/admin/aliases": { body: { data: [] } },
      "POST /api/admin/models": { body: model({ id: "claude-sonnet-4-0" }) }
    })
    renderWithProviders(<AdminModelsPage />)
    const unpriced = await screen.findByTestId("unpriced-models")
    const user = userEvent.setup()
    await user.click(
      within(unpriced.querySelector("[data-unpriced='claude-sonnet-4-0']") as HTMLElement).getByRole("button", {
        name: "Set price"
      })
    )
    const dialog = await screen.findByRole("dialog")
    assert.strictEqual((within(dialog).getByLabelText("Cache write") as HTMLInputElement).value, "3.75")
    await user.click(within(dialog).getByRole("button", { name: "Save" }))
    await waitFor(() => assert.isDefined(seen.find((r) => r.method === "POST")))
    assert.deepInclude((seen.find((r) => r.method === "POST")!.body as { prices: unknown }).prices, {
      cachedInput: "0.30",
      cacheWrite: "3.75"
    })
  })

  it("lists aliases, adds one and deletes one", async () => {
    let aliases = [{ pattern: "gpt-4o-mini-*", target: "gpt-4o-mini", position: 0 }]
    const seen = fakeApi({
      "GET /api/auth/session": session("admin"),
      "GET /api/admin/models": { body: { data: [model()], unpriced: [] } },
      "GET /api/admin/models/presets": { body: presets },
      "GET /api/admin/aliases": () => ({ body: { data: aliases } }),
      "POST /api/admin/aliases": (request) => {
        const body = request.body as { pattern: string; target: string }
        aliases = [...aliases, { ...body, position: 1 }]
        return { body: { ...body, position: 1 } }
      },
      "DELETE /api/admin/aliases": () => {
        aliases = aliases.slice(1)
        return { body: { ok: true } }
      }
    })
    renderWithProviders(<AdminModelsPage />)
    const table = await screen.findByTestId("aliases-table")
    within(table).getByText("gpt-4o-mini-*")
    const user = userEvent.setup()
    await user.type(screen.getByLabelText("Alias"), "mini")
    await user.click(screen.getByTestId("alias-target"))
    await user.click(await screen.findByRole("option", { name: "gpt-4o-mini", hidden: true }))
    await user.click(screen.getByRole("button", { name: "Add alias" }))
    await within(screen.getByTestId("aliases-table")).findByText("mini")
    assert.deepStrictEqual(seen.find((r) => r.method === "POST")!.body, { pattern: "mini", target: "gpt-4o-mini" })
    await user.click(within(screen.getByTestId("aliases-table")).getAllByRole("button", { name: "Delete" })[0]!)
    await user.click(within(await screen.findByRole("dialog")).getByRole("button", { name: "Delete" }))
    await waitFor(() => assert.isDefined(seen.find((r) => r.method === "DELETE")))
    assert.strictEqual(seen.find((r) => r.method === "DELETE")!.url, "/api/admin/aliases?pattern=gpt-4o-mini-*")
  })

  it("shows an empty state", async () => {
    fakeApi({
      "GET /api/auth/session": session("admin"),
      "GET /api/admin/users": users,
      "GET /api/admin/groups": { body: { data: [] } }
    })
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
      "DELETE /api/admin/groups/vip": refusal(
        409,
        "conflict",
        "The group 'vip' is used by 2 API key(s); move or delete them first."
      )
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
      "GET /api/admin/models": {
        body: {
          data: [
            model(),
            model({
              id: "local-llama",
              displayName: "Llama",
              prices: { input: null, output: null, cachedInput: null, perRequest: null, free: true }
            })
          ],
          unpriced: []
        }
      }
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
    fakeApi({
      "GET /api/auth/session": session("admin"),
      "GET /api/admin/models": { body: { data: [], unpriced: [] } }
    })
    renderWithProviders(<AdminModelsPage />)
    await screen.findByText("No models yet")
  })

  it("checks the id and prices next to their fields, then saves the model", async () => {
    const seen = fakeApi({
      "GET /api/auth/session": session("admin"),
      "GET /api/admin/models": { body: { data: [], unpriced: [] } },
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
      prices: { input: "0.075", output: "0.3", cachedInput: null, cacheWrite: null, perRequest: null, free: false },
      // The one default of core, as in the configuration file.
      inputTokenLimit: 128000,
      outputTokenLimit: 16384,
      description: null,
      embedding: false,
      reasoning: false,
      reasoningContent: false
    })
  })

  it("shows each model's description and whether it embeds, reasons, or takes reasoning_content", async () => {
    fakeApi({
      "GET /api/auth/session": session("admin"),
      "GET /api/admin/models": {
        body: {
          data: [
            model({
              id: "text-embedding-3-small",
              displayName: "Embeddings",
              description: "OpenAI embeddings",
              embedding: true
            }),
            model({ id: "qwen3-vllm", displayName: "Qwen3", reasoning: true, reasoningContent: true }),
            model()
          ],
          unpriced: []
        }
      }
    })
    renderWithProviders(<AdminModelsPage />)
    const rows = within(await screen.findByTestId("admin-models-table")).getAllByRole("row")
    const embedder = within(rows[1]!)
    embedder.getByText("Embedding")
    embedder.getByText("OpenAI embeddings")
    assert.isNull(embedder.queryByText("Reasoning"))
    const qwen = within(rows[2]!)
    qwen.getByText("Reasoning")
    qwen.getByText("reasoning_content")
    assert.isNull(qwen.queryByText("Embedding"))
    const plain = within(rows[3]!)
    for (const badge of ["Embedding", "Reasoning", "reasoning_content"]) assert.isNull(plain.queryByText(badge), badge)
  })

  it("edits a model's description and kinds: what it has is shown, changes are sent, an emptied description is cleared", async () => {
    const existing = model({
      id: "o3-mini",
      displayName: "o3 mini",
      description: "Small reasoning model",
      reasoning: true
    })
    const seen = fakeApi({
      "GET /api/auth/session": session("admin"),
      "GET /api/admin/models": { body: { data: [existing], unpriced: [] } },
      "POST /api/admin/models": { body: existing }
    })
    renderWithProviders(<AdminModelsPage />)
    const user = userEvent.setup()
    await user.click(await screen.findByRole("button", { name: "Edit" }))
    const dialog = await screen.findByRole("dialog")
    const description = within(dialog).getByLabelText("Description")
    assert.strictEqual((description as HTMLTextAreaElement).value, "Small reasoning model")
    const embedding = within(dialog).getByRole("switch", { name: /^Embedding model/ }) as HTMLInputElement
    const reasoning = within(dialog).getByRole("switch", { name: /^Reasoning model/ }) as HTMLInputElement
    const reasoningContent = within(dialog).getByRole("switch", {
      name: /^Upstream accepts reasoning_content/
    }) as HTMLInputElement
    assert.deepStrictEqual([embedding.checked, reasoning.checked, reasoningContent.checked], [false, true, false])
    within(dialog).getByText(/reaches an OpenAI-style upstream as reasoning_effort/)

    await user.clear(description)
    await user.click(reasoningContent)
    await user.click(within(dialog).getByRole("button", { name: "Save" }))
    await waitFor(() => assert.isDefined(seen.find((r) => r.method === "POST")))
    assert.deepStrictEqual(seen.find((r) => r.method === "POST")!.body, {
      id: "o3-mini",
      displayName: "o3 mini",
      prices: { ...existing.prices, cacheWrite: null },
      inputTokenLimit: 128000,
      outputTokenLimit: 16384,
      description: null,
      embedding: false,
      reasoning: true,
      reasoningContent: true
    })
  })

  it("sends a new model's description and marks it as an embedding model", async () => {
    const seen = fakeApi({
      "GET /api/auth/session": session("admin"),
      "GET /api/admin/models": { body: { data: [], unpriced: [] } },
      "POST /api/admin/models": { body: model({ id: "embed-small", embedding: true }) }
    })
    renderWithProviders(<AdminModelsPage />)
    const user = userEvent.setup()
    await user.click((await screen.findAllByRole("button", { name: "New model" }))[0]!)
    const dialog = await screen.findByRole("dialog")
    await user.type(within(dialog).getByLabelText("Model id"), "embed-small")
    await user.type(within(dialog).getByLabelText("Input"), "0.02")
    await user.type(within(dialog).getByLabelText("Description"), "  Small embeddings  ")
    await user.click(within(dialog).getByRole("switch", { name: /^Embedding model/ }))
    await user.click(within(dialog).getByRole("button", { name: "Save" }))
    await waitFor(() => assert.isDefined(seen.find((r) => r.method === "POST")))
    const body = seen.find((r) => r.method === "POST")!.body as Record<string, unknown>
    assert.strictEqual(body.description, "Small embeddings")
    assert.deepStrictEqual([body.embedding, body.reasoning, body.reasoningContent], [true, false, false])
  })

  it("speaks Chinese in the model form and table", async () => {
    fakeApi({
      "GET /api/auth/session": session("admin"),
      "GET /api/admin/models": {
        body: { data: [model({ embedding: true, reasoning: true, description: "嵌入与推理" })], unpriced: [] }
      }
    })
    renderWithProviders(<AdminModelsPage />, { language: "zh" })
    const row = within(within(await screen.findByTestId("admin-models-table")).getAllByRole("row")[1]!)
    row.getByText("嵌入")
    row.getByText("推理")
    row.getByText("嵌入与推理")
    const user = userEvent.setup()
    await user.click(row.getByRole("button", { name: "编辑" }))
    const dialog = await screen.findByRole("dialog")
    within(dialog).getByLabelText("描述")
    // (a switch's name is its label followed by its description)
    for (const label of ["嵌入模型", "推理模型", "上游接受 reasoning_content"]) {
      within(dialog).getByRole("switch", { name: new RegExp(`^${label}`) })
    }
    within(dialog).getByText(/留空表示无描述/)
  })

  it("shows a failed delete instead of swallowing it", async () => {
    fakeApi({
      "GET /api/auth/session": session("admin"),
      "GET /api/admin/models": { body: { data: [model()], unpriced: [] } },
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
