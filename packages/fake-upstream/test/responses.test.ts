import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { type FakeUpstreamServer, startFakeUpstream } from "../src/index.ts"
import { namedEvents, postJson, readAll } from "./helpers.ts"

const KEY = "sk-test"
const auth = { authorization: `Bearer ${KEY}` }

const weather = {
  type: "function",
  name: "get_weather",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
}

describe("OpenAI Responses API", () => {
  let server: FakeUpstreamServer
  beforeAll(async () => {
    server = await startFakeUpstream({ apiKey: KEY })
  })
  afterAll(async () => {
    await server.close()
  })

  it("answers a non-stream response with a message item and usage", async () => {
    const res = await postJson(`${server.url}/v1/responses`, {
      model: "gpt-4o-mini",
      instructions: "Be brief.",
      input: [{ role: "user", content: "Hi there" }]
    }, auth)
    assert.strictEqual(res.status, 200)
    const body = await res.json()
    assert.strictEqual(body.object, "response")
    assert.strictEqual(body.status, "completed")
    assert.strictEqual(body.instructions, "Be brief.")
    assert.deepStrictEqual(body.output.map((i: any) => i.type), ["message"])
    assert.strictEqual(
      body.output[0].content[0].text,
      "Hello from fake-upstream (model gpt-4o-mini). You said: Hi there"
    )
    assert.strictEqual(body.usage.total_tokens, body.usage.input_tokens + body.usage.output_tokens)
    assert.strictEqual(body.usage.input_tokens_details.cached_tokens, 0)
  })

  it("streams the full event sequence with sequence numbers, ending in response.completed", async () => {
    const res = await postJson(
      `${server.url}/v1/responses`,
      { model: "gpt-4o-mini", input: "stream it", stream: true },
      auth
    )
    const events = namedEvents(await res.text())
    assert.deepStrictEqual(events.map((e) => e.event), events.map((e) => e.data.type))
    assert.deepStrictEqual(events.map((e) => e.data.sequence_number), events.map((_, i) => i))
    const types = events.map((e) => e.event)
    assert.deepStrictEqual(types.slice(0, 4), [
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added"
    ])
    assert.deepStrictEqual(types.slice(-4), [
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed"
    ])
    const text = events.filter((e) => e.event === "response.output_text.delta").map((e) => e.data.delta).join("")
    assert.strictEqual(text, "Hello from fake-upstream (model gpt-4o-mini). You said: stream it")
    assert.strictEqual(events.at(-1)!.data.response.output[0].content[0].text, text)
  })

  it("calls a function (streamed arguments), then answers its output", async () => {
    const res = await postJson(`${server.url}/v1/responses`, {
      model: "gpt-tools",
      input: "Paris",
      tools: [weather],
      stream: true
    }, auth)
    const events = namedEvents(await res.text())
    const args = events.filter((e) => e.event === "response.function_call_arguments.delta").map((e) => e.data.delta)
      .join("")
    assert.deepStrictEqual(JSON.parse(args), { city: "Paris" })
    const done = events.find((e) => e.event === "response.output_item.done")!.data.item
    assert.deepStrictEqual([done.type, done.name, done.call_id], ["function_call", "get_weather", done.call_id])
    const answer = await (await postJson(`${server.url}/v1/responses`, {
      model: "gpt-tools",
      tools: [weather],
      input: [{ role: "user", content: "Paris" }, {
        type: "function_call",
        call_id: done.call_id,
        name: "get_weather",
        arguments: args
      }, { type: "function_call_output", call_id: done.call_id, output: "sunny" }]
    }, auth)).json()
    assert.strictEqual(answer.output[0].content[0].text, "The tool get_weather returned: sunny")
  })

  it("reasons for reasoning models: summary events, encrypted content, reasoning and cached tokens", async () => {
    const res = await postJson(`${server.url}/v1/responses`, {
      model: "gpt-5",
      input: "why is the sky blue",
      reasoning: { summary: "auto" },
      include: ["reasoning.encrypted_content"],
      prompt_cache_key: "k",
      stream: true
    }, auth)
    const events = namedEvents(await res.text())
    const summary = events.filter((e) => e.event === "response.reasoning_summary_text.delta").map((e) => e.data.delta)
      .join("")
    assert.strictEqual(summary, "Thinking about: why is the sky blue")
    const completed = events.at(-1)!.data.response
    assert.strictEqual(completed.output[0].type, "reasoning")
    assert.isString(completed.output[0].encrypted_content)
    assert.strictEqual(completed.usage.output_tokens_details.reasoning_tokens, 7)
    assert.isAbove(completed.usage.input_tokens_details.cached_tokens, 0)
  })

  it("refuses an unknown previous_response_id and a bad function name as OpenAI does", async () => {
    const previous = await postJson(`${server.url}/v1/responses`, {
      model: "gpt-5",
      input: "x",
      previous_response_id: "resp_nope"
    }, auth)
    assert.strictEqual(previous.status, 400)
    assert.strictEqual((await previous.json()).error.code, "previous_response_not_found")
    const named = await postJson(`${server.url}/v1/responses`, {
      model: "gpt-5",
      input: "x",
      tools: [{ ...weather, name: "a.b" }]
    }, auth)
    assert.strictEqual(named.status, 400)
    assert.strictEqual((await named.json()).error.param, "tools[0].name")
  })

  it("cuts a stream after N deltas without response.completed", async () => {
    const res = await postJson(`${server.url}/v1/responses`, {
      model: "gpt-cut-2",
      input: "one two three four",
      stream: true
    }, auth)
    const { text } = await readAll(res)
    // Each delta names its type twice: in its event: line and in its data.
    assert.strictEqual((text.match(/response\.output_text\.delta/g) ?? []).length, 4)
    assert.notInclude(text, "response.completed")
  })
})
