/**
 * Administration of channels: the channel form (validation next to the
 * fields, keys write-only: never shown, kept unless replaced), the channels
 * table (rendering, empty state, Test results), and failures of the enable
 * switch and of delete shown instead of swallowed.
 */
import { screen, waitFor, within } from "@testing-library/react"
import userEvent from "@testing-library/user-event"
import { assert, describe, it, vi } from "vitest"
import { type Contract } from "../src/lib/api.ts"
import { AdminChannelsPage, ChannelForm, parseModelMap } from "../src/pages/admin/Channels.tsx"
import { fakeApi, fill, refusal, renderWithProviders, session } from "./render.tsx"

const channel = (over: Partial<Contract.AdminChannel> = {}): Contract.AdminChannel => ({
  id: "chn_1",
  name: "openai-main",
  type: "openai",
  baseUrl: "https://api.openai.com/v1",
  keyCount: 2,
  keyHints: ["…7f3a", "…91c2"],
  models: ["gpt-4o-mini", "gpt-4o"],
  modelMap: { "gpt-4o": "gpt-4o-2024-08-06" },
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
  health: { state: "healthy", keys: [], refusedModels: [] },
  source: "console",
  createdAt: 1,
  ...over
})

const base = { "GET /api/auth/session": session("admin"), "GET /api/admin/groups": { body: { data: [] } } }

describe("parseModelMap", () => {
  it("reads public=upstream lines and skips the rest", () => {
    assert.deepStrictEqual(parseModelMap("gpt-4o = gpt-4o-2024-08-06\n\nnot a mapping\n a=b=c "), {
      "gpt-4o": "gpt-4o-2024-08-06",
      a: "b=c"
    })
  })
})

describe("channel form", () => {
  it("puts each problem next to its field before sending", async () => {
    const seen = fakeApi(base)
    renderWithProviders(<ChannelForm channel={undefined} groups={["default"]} onDone={() => {}} />)
    const user = userEvent.setup()
    await fill(user, screen.getByLabelText("Base address"), "api.openai.com")
    await user.click(screen.getByRole("button", { name: "Create" }))
    await screen.findByText("Required")
    screen.getByText("Enter an address starting with http:// or https://")
    screen.getByText("List at least one model")
    assert.isFalse(seen.some((r) => r.method === "POST"))
  })

  it("says the same in Chinese", async () => {
    fakeApi(base)
    renderWithProviders(<ChannelForm channel={undefined} groups={["default"]} onDone={() => {}} />, { language: "zh" })
    const user = userEvent.setup()
    await user.click(screen.getByRole("button", { name: "创建" }))
    await screen.findByText("必填")
    screen.getByText("请输入以 http:// 或 https:// 开头的地址")
    screen.getByText("至少填写一个模型")
  })

  it("creates a channel with its keys, models, map and groups", async () => {
    const seen = fakeApi({ ...base, "POST /api/admin/channels": { status: 201, body: channel() } })
    const onDone = vi.fn()
    renderWithProviders(<ChannelForm channel={undefined} groups={["default", "vip"]} onDone={onDone} />)
    const user = userEvent.setup()
    await fill(user, screen.getByLabelText("Name"), "openai-backup")
    await fill(user, screen.getByLabelText("Base address"), "https://api.example.com/v1")
    await fill(user, screen.getByLabelText("Upstream API keys (one per line)"), "sk-one\n  \nsk-two")
    await user.type(
      screen.getAllByLabelText("Models").find((e) =>
        e.tagName === "INPUT" && (e as HTMLInputElement).type !== "hidden"
      )!,
      "gpt-4o{enter}"
    )
    await fill(user, screen.getByLabelText("Model map (public=upstream, one per line)"), "gpt-4o=gpt-4o-2024-08-06")
    await user.click(screen.getByRole("button", { name: "Create" }))
    await waitFor(() => assert.strictEqual(onDone.mock.calls.length, 1))
    assert.deepStrictEqual(seen.find((r) => r.method === "POST")!.body, {
      name: "openai-backup",
      type: "openai",
      baseUrl: "https://api.example.com/v1",
      models: ["gpt-4o"],
      modelMap: { "gpt-4o": "gpt-4o-2024-08-06" },
      groups: ["default"],
      priority: 0,
      weight: 1,
      enabled: true,
      apiKeys: ["sk-one", "sk-two"],
      // the routing settings left at their defaults
      headers: {},
      timeouts: {},
      breaker: {},
      params: { defaults: {}, overrides: {} },
      streamOptions: true,
      responses: false
    })
  })

  it("creates a Vertex AI channel from its vendor: project, location, key file, publishers, no address", async () => {
    const seen = fakeApi({ ...base, "POST /api/admin/channels": { status: 201, body: channel({ type: "vertex" }) } })
    const onDone = vi.fn()
    renderWithProviders(<ChannelForm channel={undefined} groups={["default"]} onDone={onDone} />)
    const user = userEvent.setup()
    await user.click(screen.getAllByLabelText("Vendor").find((e) => e.tagName === "INPUT")!)
    await user.click(await screen.findByRole("option", { name: "Google Vertex AI", hidden: true }))
    assert.strictEqual((screen.getByLabelText("Base address") as HTMLInputElement).value, "", "it follows the location")
    // Nothing typed yet: each missing field is named next to it, nothing is sent.
    await user.click(screen.getByRole("button", { name: "Create" }))
    await screen.findByText("Enter the Google Cloud project id")
    screen.getByText("Enter the Vertex AI location, such as us-east5 or global")
    screen.getByText("Paste the service account's key file (JSON)")
    const file = screen.getByLabelText("Service account key (JSON)")
    await user.click(file)
    await user.paste("{\"client_email\": \"x\"")
    await user.click(screen.getByRole("button", { name: "Create" }))
    await screen.findByText("This is not JSON: paste the whole key file Google issues")
    assert.isFalse(seen.some((r) => r.method === "POST"))

    await fill(user, screen.getByLabelText("Google Cloud project"), "my-project")
    await fill(user, screen.getByLabelText("Location"), "us-east5")
    screen.getByText(
      "Optional: left empty, the gateway uses the location's endpoint (https://us-east5-aiplatform.googleapis.com)."
    )
    const key = JSON.stringify({
      type: "service_account",
      client_email: "gate@my-project.iam.gserviceaccount.com",
      private_key: "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n",
      token_uri: "https://oauth2.googleapis.com/token"
    })
    await user.clear(file)
    await user.click(file)
    await user.paste(key)
    await user.click(screen.getByLabelText("Publishers (model=google or model=anthropic, one per line)"))
    await user.paste("my-tuned=anthropic")
    await user.type(
      screen.getAllByLabelText("Models").find((e) =>
        e.tagName === "INPUT" && (e as HTMLInputElement).type !== "hidden"
      )!,
      "gemini-2.5-flash{enter}"
    )
    await user.click(screen.getByRole("button", { name: "Create" }))
    await waitFor(() => assert.strictEqual(onDone.mock.calls.length, 1))
    const body = seen.find((r) => r.method === "POST")!.body as Record<string, unknown>
    assert.notProperty(body, "baseUrl", "an empty address is the location's endpoint")
    assert.deepInclude(body, {
      name: "vertex",
      type: "vertex",
      project: "my-project",
      location: "us-east5",
      publishers: { "my-tuned": "anthropic" },
      models: ["gemini-2.5-flash"],
      apiKeys: [key]
    })
    assert.notProperty(body, "region")
  })

  it("creates a Bedrock channel with an access key pair, or a Bedrock API key", async () => {
    const seen = fakeApi({ ...base, "POST /api/admin/channels": { status: 201, body: channel({ type: "bedrock" }) } })
    const onDone = vi.fn()
    renderWithProviders(<ChannelForm channel={undefined} groups={["default"]} onDone={onDone} />)
    const user = userEvent.setup()
    await user.click(screen.getAllByLabelText("Vendor").find((e) => e.tagName === "INPUT")!)
    await user.click(await screen.findByRole("option", { name: "AWS Bedrock", hidden: true }))
    await user.click(screen.getByRole("button", { name: "Create" }))
    await screen.findByText("Enter the AWS region, such as us-east-1")
    screen.getByText("Enter the access key id (AKIA…)")
    screen.getByText("Enter the secret access key that goes with the key id")
    await fill(user, screen.getByLabelText("Access key id"), "akia-lower")
    await user.click(screen.getByRole("button", { name: "Create" }))
    await screen.findByText("An access key id is 16 or more capital letters and digits, such as AKIA…")
    assert.isFalse(seen.some((r) => r.method === "POST"))

    await fill(user, screen.getByLabelText("AWS region"), "eu-west-1")
    screen.getByText(
      "Optional: left empty, the gateway uses the region's endpoint (https://bedrock-runtime.eu-west-1.amazonaws.com)."
    )
    await user.clear(screen.getByLabelText("Access key id"))
    await user.click(screen.getByLabelText("Access key id"))
    await user.paste("AKIAIOSFODNN7EXAMPLE")
    await user.click(screen.getByLabelText("Secret access key"))
    await user.paste("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    await user.click(screen.getByLabelText("Session token (temporary credentials only)"))
    await user.paste("FwoGZXIvYXdzEJr")
    await user.type(
      screen.getAllByLabelText("Models").find((e) =>
        e.tagName === "INPUT" && (e as HTMLInputElement).type !== "hidden"
      )!,
      "nova-pro{enter}"
    )
    await fill(
      user,
      screen.getByLabelText("Model map (public=upstream, one per line)"),
      "nova-pro=amazon.nova-pro-v1:0"
    )
    await user.click(screen.getByRole("button", { name: "Create" }))
    await waitFor(() => assert.strictEqual(onDone.mock.calls.length, 1))
    const body = seen.find((r) => r.method === "POST")!.body as Record<string, unknown>
    assert.notProperty(body, "baseUrl")
    assert.notProperty(body, "project")
    assert.deepInclude(body, {
      name: "bedrock",
      type: "bedrock",
      region: "eu-west-1",
      models: ["nova-pro"],
      modelMap: { "nova-pro": "amazon.nova-pro-v1:0" },
      apiKeys: [
        JSON.stringify({
          access_key_id: "AKIAIOSFODNN7EXAMPLE",
          secret_access_key: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
          session_token: "FwoGZXIvYXdzEJr"
        })
      ]
    })

    // A Bedrock API key instead of the pair is sent as it is.
    await user.click(screen.getByRole("radio", { name: "Bedrock API key" }))
    await user.click(screen.getByRole("button", { name: "Create" }))
    await screen.findByText("Enter the Bedrock API key")
    await user.click(screen.getByLabelText("Bedrock API key (ABSK…)"))
    await user.paste("ABSKQmVkcm9ja0FQSUtleQ")
    await user.click(screen.getByRole("button", { name: "Create" }))
    await waitFor(() => assert.strictEqual(onDone.mock.calls.length, 2))
    const second = seen.filter((r) => r.method === "POST")[1]!.body as Record<string, unknown>
    assert.deepStrictEqual(second["apiKeys"], ["ABSKQmVkcm9ja0FQSUtleQ"])
  })

  it("shows the Responses switch for an OpenAI channel only, and sends it", async () => {
    const seen = fakeApi({ ...base, "PATCH /api/admin/channels/chn_1": { body: channel({ responses: true }) } })
    const onDone = vi.fn()
    renderWithProviders(<ChannelForm channel={channel()} groups={["default"]} onDone={onDone} />)
    const user = userEvent.setup()
    const relay = screen.getByRole("switch", { name: /Relay Responses API calls/ }) as HTMLInputElement
    assert.isFalse(relay.checked)
    await user.click(relay)
    await user.click(screen.getByRole("button", { name: "Save" }))
    await waitFor(() => assert.strictEqual(onDone.mock.calls.length, 1))
    assert.isTrue((seen.find((r) => r.method === "PATCH")!.body as Record<string, unknown>)["responses"])
  })

  it("turns the Responses switch off for a channel that is not OpenAI's", async () => {
    const seen = fakeApi({ ...base, "PATCH /api/admin/channels/chn_1": { body: channel({ type: "gemini" }) } })
    const onDone = vi.fn()
    renderWithProviders(
      <ChannelForm channel={channel({ type: "gemini", responses: true })} groups={["default"]} onDone={onDone} />
    )
    assert.isNull(screen.queryByRole("switch", { name: /Relay Responses API calls/ }))
    await userEvent.setup().click(screen.getByRole("button", { name: "Save" }))
    await waitFor(() => assert.strictEqual(onDone.mock.calls.length, 1))
    assert.isFalse((seen.find((r) => r.method === "PATCH")!.body as Record<string, unknown>)["responses"])
  })

  it("never shows saved keys, and keeps them unless new ones are typed", async () => {
    const seen = fakeApi({ ...base, "PATCH /api/admin/channels/chn_1": { body: channel({ priority: 5 }) } })
    renderWithProviders(<ChannelForm channel={channel()} groups={["default"]} onDone={() => {}} />)
    const user = userEvent.setup()
    const keys = screen.getByLabelText("Upstream API keys (one per line)") as HTMLTextAreaElement
    assert.strictEqual(keys.value, "", "the saved keys are not filled in")
    screen.getByText("Leave empty to keep the 2 saved keys")
    const priority = screen.getByLabelText("Priority")
    await user.clear(priority)
    await user.type(priority, "5")
    await user.click(screen.getByRole("button", { name: "Save" }))
    await waitFor(() => assert.isDefined(seen.find((r) => r.method === "PATCH")))
    const body = seen.find((r) => r.method === "PATCH")!.body as Record<string, unknown>
    assert.notProperty(body, "apiKeys", "empty means keep")
    assert.strictEqual(body["priority"], 5)
  })

  it("puts a server refusal naming a field next to it", async () => {
    fakeApi({
      ...base,
      "PATCH /api/admin/channels/chn_1": refusal(
        400,
        "invalid_request",
        "apiVersion: an Azure channel needs its api-version (for example 2024-10-21)",
        "apiVersion"
      )
    })
    renderWithProviders(<ChannelForm channel={channel({ type: "azure" })} groups={[]} onDone={() => {}} />)
    const user = userEvent.setup()
    await user.click(screen.getByRole("button", { name: "Save" }))
    const message = await screen.findByText("an Azure channel needs its api-version (for example 2024-10-21)")
    // It sits with the api-version field (shown for Azure channels), not in a banner.
    assert.isNull(screen.queryByRole("alert"))
    assert.isTrue(
      screen.getByLabelText("Azure api-version").getAttribute("aria-invalid") === "true",
      message.textContent ?? ""
    )
  })
})

describe("fetch models", () => {
  const listed = {
    body: {
      data: [
        {
          id: "gpt-4.1-mini",
          displayName: null,
          inputTokenLimit: null,
          outputTokenLimit: null,
          embedding: false,
          priced: false,
          preset: true
        },
        {
          id: "gpt-4o",
          displayName: null,
          inputTokenLimit: null,
          outputTokenLimit: null,
          embedding: false,
          priced: true,
          preset: true
        },
        {
          id: "my-finetune",
          displayName: null,
          inputTokenLimit: 32000,
          outputTokenLimit: null,
          embedding: false,
          priced: false,
          preset: false
        },
        {
          id: "text-embedding-3-small",
          displayName: null,
          inputTokenLimit: null,
          outputTokenLimit: null,
          embedding: true,
          priced: false,
          preset: true
        }
      ]
    }
  }

  it("lists a new channel's upstream models with the address and key typed, and adds the ones picked", async () => {
    const seen = fakeApi({ ...base, "POST /api/admin/channels/models": listed })
    renderWithProviders(<ChannelForm channel={undefined} groups={["default"]} onDone={() => {}} />)
    const user = userEvent.setup()
    const fetchButton = screen.getByRole("button", { name: "Fetch models" })
    assert.isTrue((fetchButton as HTMLButtonElement).disabled, "nothing to list with yet")
    await fill(user, screen.getByLabelText("Base address"), "https://api.example.com/v1")
    await fill(user, screen.getByLabelText("Upstream API keys (one per line)"), "  \nsk-first\nsk-second")
    await user.click(fetchButton)
    const picker = await screen.findByTestId("model-picker")
    await within(picker).findByText("my-finetune")
    assert.deepStrictEqual(seen.find((r) => r.url === "/api/admin/channels/models")!.body, {
      type: "openai",
      baseUrl: "https://api.example.com/v1",
      apiKey: "sk-first",
      headers: {}
    })
    within(picker.querySelector("[data-upstream-model='gpt-4.1-mini']") as HTMLElement).getByText("price table")
    within(picker.querySelector("[data-upstream-model='my-finetune']") as HTMLElement).getByText("no price yet")
    within(picker.querySelector("[data-upstream-model='gpt-4o']") as HTMLElement).getByText("priced")
    within(picker.querySelector("[data-upstream-model='text-embedding-3-small']") as HTMLElement).getByText("embedding")
    await user.type(within(picker).getByPlaceholderText("Filter"), "gpt")
    await waitFor(() => assert.isNull(within(picker).queryByText("my-finetune")))
    await user.click(within(picker).getByRole("button", { name: "Select all shown" }))
    await user.click(within(picker).getByRole("button", { name: "Add 2 models" }))
    await waitFor(() => assert.isNull(screen.queryByTestId("model-picker")))
    const tags = [...document.querySelectorAll(".mantine-Pill-label")].map((e) => e.textContent)
    assert.includeMembers(tags, ["gpt-4.1-mini", "gpt-4o"])
    assert.notInclude(tags, "my-finetune")
  })

  it("lists a saved channel's with its own key, and shows the upstream's refusal", async () => {
    const seen = fakeApi({
      ...base,
      "POST /api/admin/channels/models": {
        status: 502,
        body: {
          error: {
            message: "The upstream 'openai-main' refused the key. The upstream said: Incorrect API key provided",
            type: "upstream_error",
            param: null,
            code: "upstream_error"
          }
        }
      }
    })
    renderWithProviders(<ChannelForm channel={channel()} groups={["default"]} onDone={() => {}} />)
    const user = userEvent.setup()
    await user.click(screen.getByRole("button", { name: "Fetch models" }))
    await waitFor(() =>
      assert.include(screen.getByTestId("model-picker").textContent, "The upstream said: Incorrect API key provided")
    )
    const body = seen.find((r) => r.url === "/api/admin/channels/models")!.body as Record<string, unknown>
    assert.strictEqual(body["channelId"], "chn_1")
    assert.notProperty(body, "apiKey", "the saved key is used")
  })
})

describe("channels table", () => {
  it("lists channels with their models, map, groups and key hints only", async () => {
    fakeApi({
      ...base,
      "GET /api/admin/channels": {
        body: {
          data: [
            channel(),
            channel({
              id: "chn_2",
              name: "gemini-main",
              type: "gemini",
              enabled: false,
              keyCount: 1,
              keyHints: ["…aa11"],
              models: ["gemini-2.5-flash"],
              modelMap: {}
            })
          ]
        }
      }
    })
    renderWithProviders(<AdminChannelsPage />)
    const table = await screen.findByTestId("channels-table")
    const main = within(table.querySelector("tr[data-channel='openai-main']") as HTMLElement)
    main.getByText("gpt-4o → gpt-4o-2024-08-06")
    main.getByText("gpt-4o-mini")
    main.getByText("2 keys")
    main.getByText("…7f3a …91c2")
    assert.isTrue((main.getByRole("switch") as HTMLInputElement).checked)
    const gemini = within(table.querySelector("tr[data-channel='gemini-main']") as HTMLElement)
    assert.isFalse((gemini.getByRole("switch") as HTMLInputElement).checked)
  })

  it("shows an empty state with a way to add one", async () => {
    fakeApi({ ...base, "GET /api/admin/channels": { body: { data: [] } } })
    renderWithProviders(<AdminChannelsPage />)
    await screen.findByText("No channels yet")
    assert.isAtLeast(screen.getAllByRole("button", { name: "New channel" }).length, 2)
  })

  it("shows the Test result with the latency once, an upstream's error and how many keys failed, and the health the test left", async () => {
    let calls = 0
    const key = (index: number, ok: boolean) => ({
      index,
      hint: index === 0 ? "…7f3a" : "…91c2",
      ok,
      latencyMs: ok ? 6.4 : 31,
      status: ok ? 200 : 401,
      message: ok ? "gpt-4o-mini answered" : "Incorrect API key provided"
    })
    const seen = fakeApi({
      ...base,
      "GET /api/admin/channels": () => ({
        body: {
          data: [
            calls < 2 ? channel() : channel({
              health: {
                state: "degraded",
                keys: [{
                  index: 1,
                  hint: "…91c2",
                  state: "disabled",
                  since: 1,
                  reason: "HTTP 401: Incorrect API key provided",
                  status: 401,
                  retryAt: null,
                  recentCalls: 0,
                  recentFailures: 0,
                  consecutiveFailures: 0,
                  lastFailureAt: null,
                  lastError: null,
                  lastProbeAt: 1,
                  lastProbeOk: false
                }],
                refusedModels: []
              }
            })
          ]
        }
      }),
      "POST /api/admin/channels/chn_1/test": () =>
        ++calls === 1
          ? {
            body: {
              ok: true,
              latencyMs: 6.4,
              status: 200,
              message: "gpt-4o-mini answered",
              model: "gpt-4o-mini",
              keys: [key(0, true), key(1, true)]
            }
          }
          : {
            body: {
              ok: false,
              latencyMs: 31,
              status: 401,
              message: "Incorrect API key provided",
              model: "gpt-4o-mini",
              keys: [key(0, true), key(1, false)]
            }
          }
    })
    renderWithProviders(<AdminChannelsPage />)
    const user = userEvent.setup()
    await user.click(await screen.findByRole("button", { name: "Test openai-main" }))
    assert.strictEqual((await screen.findByTestId("test-result")).textContent, "OK in 6 ms: gpt-4o-mini answered")
    await user.click(screen.getByRole("button", { name: "Test openai-main" }))
    await waitFor(() =>
      assert.strictEqual(
        screen.getByTestId("test-result").textContent,
        "Failed (401) after 31 ms: Incorrect API key provided"
      )
    )
    screen.getByText(/1 of 2 keys failed/)
    // The test went into the keys' health: the list is read again and shows it.
    await screen.findByText("Degraded")
    assert.isAtLeast(seen.filter((r) => r.url === "/api/admin/channels").length, 3)
  })

  it("shows a failed enable switch instead of swallowing it", async () => {
    fakeApi({
      ...base,
      "GET /api/admin/channels": { body: { data: [channel()] } },
      "PATCH /api/admin/channels/chn_1": refusal(404, "not_found", "No channel with id 'chn_1'.")
    })
    renderWithProviders(<AdminChannelsPage />)
    const user = userEvent.setup()
    await user.click(await screen.findByRole("switch"))
    await screen.findByText("No channel with id 'chn_1'.")
  })

  it("shows a failed delete and keeps the dialog open", async () => {
    fakeApi({
      ...base,
      "GET /api/admin/channels": { body: { data: [channel()] } },
      "DELETE /api/admin/channels/chn_1": refusal(403, "admin_only", "This endpoint is for administrators only.")
    })
    renderWithProviders(<AdminChannelsPage />, { language: "zh" })
    const user = userEvent.setup()
    await user.click(await screen.findByRole("button", { name: "删除" }))
    const dialog = await screen.findByRole("dialog")
    await user.click(within(dialog).getByRole("button", { name: "删除" }))
    await screen.findByText("此操作仅限管理员。")
    within(screen.getByRole("dialog")).getByText("删除渠道 openai-main？")
  })
})
