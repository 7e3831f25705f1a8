import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { type FakeUpstreamServer, startFakeUpstream } from "../src/index.ts"
import { namedEvents, postJson } from "./helpers.ts"

const KEY = "sk-ant-test"
const headers = { "x-api-key": KEY, "anthropic-version": "2023-06-01" }
const messages = [{ role: "user", content: "Say something nice" }]

describe("Anthropic dialect", () => {
  let server: FakeUpstreamServer
  beforeAll(async () => {
    server = await startFakeUpstream({ apiKey: KEY })
  })
  afterAll(() => server.close())

  it("answers a non-stream message with text, end_turn and usage", async () => {
    const res = await postJson(`${server.url}/v1/messages`, {
      model: "claude-sonnet-4-5",
      max_tokens: 100,
      system: [{ type: "text", text: "Be kind." }],
      messages
    }, headers)
    assert.strictEqual(res.status, 200)
    assert.match(res.headers.get("request-id")!, /^req_fake\d+$/)
    const body = await res.json()
    assert.strictEqual(body.type, "message")
    assert.strictEqual(body.role, "assistant")
    assert.strictEqual(body.stop_reason, "end_turn")
    assert.strictEqual(body.stop_sequence, null)
    assert.strictEqual(body.content.length, 1)
    assert.strictEqual(body.content[0].type, "text")
    const text = body.content[0].text
    assert.strictEqual(text, "Hello from fake-upstream (model claude-sonnet-4-5). You said: Say something nice")
    assert.strictEqual(body.usage.input_tokens, Math.ceil(("Be kind.".length + "Say something nice".length) / 4))
    assert.strictEqual(body.usage.output_tokens, text.split(" ").length)
  })

  it("streams the full event sequence with text deltas", async () => {
    const res = await postJson(`${server.url}/v1/messages`, {
      model: "claude-sonnet-4-5",
      max_tokens: 100,
      stream: true,
      messages
    }, headers)
    assert.match(res.headers.get("content-type")!, /^text\/event-stream/)
    const events = namedEvents(await res.text())
    for (const e of events) assert.strictEqual(e.event, e.data.type)
    const names = events.map((e) => e.event)
    const deltas = events.filter((e) => e.event === "content_block_delta")
    assert.deepStrictEqual(names, [
      "message_start",
      "content_block_start",
      "ping",
      ...deltas.map(() => "content_block_delta"),
      "content_block_stop",
      "message_delta",
      "message_stop"
    ])
    const start = events[0].data.message
    assert.deepStrictEqual(start.content, [])
    assert.strictEqual(start.stop_reason, null)
    assert.strictEqual(start.usage.input_tokens, Math.ceil("Say something nice".length / 4))
    assert.deepStrictEqual(events[1].data.content_block, { type: "text", text: "" })
    assert.isTrue(deltas.every((d) => d.data.index === 0 && d.data.delta.type === "text_delta"))
    assert.strictEqual(
      deltas.map((d) => d.data.delta.text).join(""),
      "Hello from fake-upstream (model claude-sonnet-4-5). You said: Say something nice"
    )
    const messageDelta = events[events.length - 2].data
    assert.strictEqual(messageDelta.delta.stop_reason, "end_turn")
    assert.strictEqual(messageDelta.usage.output_tokens, deltas.length)
  })

  it("streams a tool_use block as input_json_delta fragments", async () => {
    const res = await postJson(`${server.url}/v1/messages`, {
      model: "claude-sonnet-4-5",
      max_tokens: 100,
      stream: true,
      tools: [{
        name: "get_time",
        input_schema: { type: "object", properties: { zone: { type: "string" } }, required: ["zone"] }
      }],
      messages
    }, { ...headers, "x-fake-tool-call": "1" })
    const events = namedEvents(await res.text())
    const block = events.find((e) => e.event === "content_block_start")!.data.content_block
    assert.strictEqual(block.type, "tool_use")
    assert.strictEqual(block.name, "get_time")
    assert.match(block.id, /^toolu_/)
    assert.deepStrictEqual(block.input, {})
    const fragments = events.filter((e) => e.event === "content_block_delta").map((e) => e.data.delta)
    assert.isAtLeast(fragments.length, 2)
    assert.isTrue(fragments.every((d) => d.type === "input_json_delta"))
    assert.deepStrictEqual(JSON.parse(fragments.map((d) => d.partial_json).join("")), { zone: "Say something nice" })
    assert.strictEqual(events.find((e) => e.event === "message_delta")!.data.delta.stop_reason, "tool_use")
  })

  it("calls the tool a model's call-NAME token names, not the first declared one", async () => {
    const tools = [{ name: "get_time", input_schema: { type: "object" } }, {
      name: "exec_command",
      input_schema: { type: "object" }
    }]
    const answer = await (await postJson(`${server.url}/v1/messages`, {
      model: "claude-sonnet-4-5-call-exec_command",
      max_tokens: 100,
      tools,
      messages
    }, headers)).json()
    assert.deepStrictEqual([answer.stop_reason, answer.content[0].name], ["tool_use", "exec_command"])
  })

  it("answers non-stream tool_use, then text from the tool_result", async () => {
    const tools = [{ name: "get_time", input_schema: { type: "object" } }]
    const first = await (await postJson(`${server.url}/v1/messages`, {
      model: "claude-tools",
      max_tokens: 100,
      tools,
      messages
    }, headers)).json()
    assert.strictEqual(first.stop_reason, "tool_use")
    const use = first.content[0]
    assert.deepStrictEqual([use.type, use.name, use.input], ["tool_use", "get_time", { query: "Say something nice" }])

    const second = await (await postJson(`${server.url}/v1/messages`, {
      model: "claude-tools",
      max_tokens: 100,
      tools,
      messages: [
        ...messages,
        { role: "assistant", content: first.content },
        {
          role: "user",
          content: [{ type: "tool_result", tool_use_id: use.id, content: [{ type: "text", text: "12:00 UTC" }] }]
        }
      ]
    }, headers)).json()
    assert.strictEqual(second.stop_reason, "end_turn")
    assert.strictEqual(second.content[0].text, "The tool get_time returned: 12:00 UTC")
  })

  it("rejects bad and missing keys with authentication_error", async () => {
    const bad = await postJson(`${server.url}/v1/messages`, { model: "c", max_tokens: 1, messages }, {
      "x-api-key": "wrong",
      "anthropic-version": "2023-06-01"
    })
    assert.strictEqual(bad.status, 401)
    const body = await bad.json()
    assert.deepStrictEqual([body.type, body.error], ["error", {
      type: "authentication_error",
      message: "invalid x-api-key"
    }])
    const missing = await postJson(`${server.url}/v1/messages`, { model: "c", max_tokens: 1, messages })
    assert.strictEqual(missing.status, 401)
    assert.strictEqual((await missing.json()).error.type, "authentication_error")
  })

  it("lists models in Anthropic's shape when anthropic-version is sent, counts tokens", async () => {
    const list = await (await fetch(`${server.url}/v1/models`, { headers })).json()
    assert.isFalse(list.has_more)
    assert.strictEqual(list.first_id, list.data[0].id)
    assert.isTrue(list.data.every((m: any) => m.type === "model" && typeof m.display_name === "string"))
    // Without the header the same path is OpenAI's list.
    const openai = await (await fetch(`${server.url}/v1/models`, { headers: { authorization: `Bearer ${KEY}` } }))
      .json()
    assert.strictEqual(openai.object, "list")

    const count = await (await postJson(`${server.url}/v1/messages/count_tokens`, { model: "c", messages }, headers))
      .json()
    assert.deepStrictEqual(count, { input_tokens: Math.ceil("Say something nice".length / 4) })
  })

  it("fails with the Anthropic envelope (overloaded 529, 429 with retry-after)", async () => {
    const overloaded = await postJson(`${server.url}/v1/messages`, {
      model: "claude-fail-529",
      max_tokens: 1,
      messages
    }, headers)
    assert.strictEqual(overloaded.status, 529)
    assert.deepStrictEqual((await overloaded.json()).error, { type: "overloaded_error", message: "Overloaded" })
    const limited = await postJson(`${server.url}/v1/messages`, { model: "c", max_tokens: 1, messages }, {
      ...headers,
      "x-fake-fail": "429"
    })
    assert.strictEqual(limited.status, 429)
    assert.strictEqual(limited.headers.get("retry-after"), "1")
    assert.strictEqual((await limited.json()).error.type, "rate_limit_error")
  })
})
