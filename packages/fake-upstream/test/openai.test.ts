import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { type FakeUpstreamServer, startFakeUpstream } from "../src/index.ts"
import { dataEvents, postJson } from "./helpers.ts"

const KEY = "sk-test"
const auth = { authorization: `Bearer ${KEY}` }

const weatherTool = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Weather for a city",
    parameters: {
      type: "object",
      properties: { city: { type: "string" }, days: { type: "integer" }, unit: { type: "string", enum: ["c", "f"] } },
      required: ["city", "days", "unit"]
    }
  }
}

describe("OpenAI dialect", () => {
  let server: FakeUpstreamServer
  let open: FakeUpstreamServer
  beforeAll(async () => {
    server = await startFakeUpstream({ apiKey: KEY })
    open = await startFakeUpstream()
  })
  afterAll(async () => {
    await server.close()
    await open.close()
  })

  it("lists models in OpenAI's list shape", async () => {
    const res = await fetch(`${server.url}/v1/models`, { headers: auth })
    assert.strictEqual(res.status, 200)
    const body = await res.json()
    assert.strictEqual(body.object, "list")
    assert.isAbove(body.data.length, 0)
    for (const m of body.data) {
      assert.deepStrictEqual(Object.keys(m).sort(), ["created", "id", "object", "owned_by"])
      assert.strictEqual(m.object, "model")
      assert.isNumber(m.created)
    }
  })

  it("answers a non-stream chat completion with echo text and consistent usage", async () => {
    const messages = [
      { role: "system", content: "Be brief." },
      { role: "user", content: [{ type: "text", text: "What is the capital of France?" }] }
    ]
    const res = await postJson(`${server.url}/v1/chat/completions`, { model: "gpt-4o-mini", messages }, auth)
    assert.strictEqual(res.status, 200)
    assert.match(res.headers.get("content-type")!, /application\/json/)
    assert.match(res.headers.get("x-request-id")!, /^req_fake\d+$/)
    const body = await res.json()
    assert.strictEqual(body.object, "chat.completion")
    assert.strictEqual(body.model, "gpt-4o-mini")
    const choice = body.choices[0]
    assert.strictEqual(choice.finish_reason, "stop")
    assert.strictEqual(choice.message.role, "assistant")
    assert.strictEqual(
      choice.message.content,
      "Hello from fake-upstream (model gpt-4o-mini). You said: What is the capital of France?"
    )
    // prompt: ceil(chars / 4) over all message text
    const chars = "Be brief.".length + "What is the capital of France?".length
    assert.strictEqual(body.usage.prompt_tokens, Math.ceil(chars / 4))
    // completion: one token per word chunk
    assert.strictEqual(body.usage.completion_tokens, choice.message.content.split(" ").length)
    assert.strictEqual(body.usage.total_tokens, body.usage.prompt_tokens + body.usage.completion_tokens)
  })

  it("streams role chunk, word deltas, finish chunk, usage chunk and [DONE]", async () => {
    const request = {
      model: "gpt-4o-mini",
      messages: [{ role: "user", content: "stream me please" }],
      stream: true,
      stream_options: { include_usage: true }
    }
    const res = await postJson(`${server.url}/v1/chat/completions`, request, auth)
    assert.strictEqual(res.status, 200)
    assert.match(res.headers.get("content-type")!, /^text\/event-stream/)
    const events = dataEvents(await res.text())
    assert.strictEqual(events[events.length - 1], "[DONE]")
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e))
    assert.strictEqual(new Set(chunks.map((c) => c.id)).size, 1)
    assert.deepStrictEqual(chunks[0].choices[0].delta, { role: "assistant", content: "", refusal: null })
    const usageChunk = chunks[chunks.length - 1]
    assert.deepStrictEqual(usageChunk.choices, [])
    const finish = chunks[chunks.length - 2]
    assert.strictEqual(finish.choices[0].finish_reason, "stop")
    const deltas = chunks.slice(1, -2)
    for (const c of deltas) {
      assert.strictEqual(c.object, "chat.completion.chunk")
      assert.strictEqual(c.choices[0].finish_reason, null)
      assert.strictEqual(c.usage, null)
    }
    const text = deltas.map((c) => c.choices[0].delta.content).join("")
    assert.strictEqual(text, "Hello from fake-upstream (model gpt-4o-mini). You said: stream me please")
    assert.strictEqual(usageChunk.usage.completion_tokens, deltas.length)
    assert.strictEqual(usageChunk.usage.prompt_tokens, Math.ceil("stream me please".length / 4))
    assert.strictEqual(usageChunk.usage.total_tokens, usageChunk.usage.prompt_tokens + deltas.length)
  })

  it("sends no usage chunk without include_usage", async () => {
    const res = await postJson(
      `${server.url}/v1/chat/completions`,
      { model: "m", messages: [{ role: "user", content: "hi" }], stream: true },
      auth
    )
    const events = dataEvents(await res.text())
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e))
    assert.isTrue(chunks.every((c) => c.choices.length === 1 && !("usage" in c)))
    assert.strictEqual(chunks[chunks.length - 1].choices[0].finish_reason, "stop")
  })

  it("calls the declared tool (model name contains 'tools'), non-stream", async () => {
    const res = await postJson(`${server.url}/v1/chat/completions`, {
      model: "gpt-tools",
      messages: [{ role: "user", content: "weather in Paris" }],
      tools: [weatherTool]
    }, auth)
    const body = await res.json()
    const choice = body.choices[0]
    assert.strictEqual(choice.finish_reason, "tool_calls")
    assert.strictEqual(choice.message.content, null)
    const call = choice.message.tool_calls[0]
    assert.strictEqual(call.type, "function")
    assert.match(call.id, /^call_/)
    assert.strictEqual(call.function.name, "get_weather")
    assert.deepStrictEqual(JSON.parse(call.function.arguments), { city: "weather in Paris", days: 1, unit: "c" })
  })

  it("streams a tool call (header x-fake-tool-call) as several argument fragments", async () => {
    const res = await postJson(`${server.url}/v1/chat/completions`, {
      model: "gpt-4o-mini",
      stream: true,
      messages: [{ role: "user", content: "look it up" }],
      tools: [{ type: "function", function: { name: "search", parameters: { type: "object" } } }, weatherTool]
    }, { ...auth, "x-fake-tool-call": "search" })
    const events = dataEvents(await res.text())
    assert.strictEqual(events.pop(), "[DONE]")
    const chunks = events.map((e) => JSON.parse(e))
    const first = chunks[0].choices[0].delta
    assert.strictEqual(first.role, "assistant")
    assert.deepStrictEqual(first.tool_calls[0].function, { name: "search", arguments: "" })
    assert.strictEqual(first.tool_calls[0].index, 0)
    assert.strictEqual(first.tool_calls[0].type, "function")
    assert.isString(first.tool_calls[0].id)
    const fragments = chunks.slice(1, -1).map((c) => c.choices[0].delta.tool_calls[0])
    assert.isAtLeast(fragments.length, 2)
    for (const f of fragments) {
      assert.strictEqual(f.index, 0)
      assert.notProperty(f, "id")
    }
    assert.deepStrictEqual(JSON.parse(fragments.map((f) => f.function.arguments).join("")), { query: "look it up" })
    assert.strictEqual(chunks[chunks.length - 1].choices[0].finish_reason, "tool_calls")
  })

  it("answers with the tool result text when the last message is a tool result", async () => {
    const res = await postJson(`${server.url}/v1/chat/completions`, {
      model: "gpt-tools",
      tools: [weatherTool],
      messages: [
        { role: "user", content: "weather?" },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: "{}" } }]
        },
        { role: "tool", tool_call_id: "call_1", content: "sunny, 21C" }
      ]
    }, auth)
    const body = await res.json()
    assert.strictEqual(body.choices[0].finish_reason, "stop")
    assert.strictEqual(body.choices[0].message.content, "The tool get_weather returned: sunny, 21C")
  })

  it("rejects a wrong key with OpenAI's exact 401 body and a missing key with 401", async () => {
    const bad = await postJson(`${server.url}/v1/chat/completions`, { model: "m", messages: [] }, {
      authorization: "Bearer nope"
    })
    assert.strictEqual(bad.status, 401)
    assert.strictEqual(
      await bad.text(),
      `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`
    )
    const missing = await postJson(`${server.url}/v1/chat/completions`, { model: "m", messages: [] })
    assert.strictEqual(missing.status, 401)
    const body = await missing.json()
    assert.strictEqual(body.error.type, "invalid_request_error")
    assert.strictEqual(body.error.code, null)
  })

  it("without a configured key accepts any key but still requires one", async () => {
    const ok = await postJson(`${open.url}/v1/chat/completions`, { model: "m", messages: [] }, {
      authorization: "Bearer anything"
    })
    assert.strictEqual(ok.status, 200)
    const missing = await postJson(`${open.url}/v1/chat/completions`, { model: "m", messages: [] })
    assert.strictEqual(missing.status, 401)
  })

  it("returns deterministic embeddings, as floats or base64 float32", async () => {
    const request = { model: "text-embedding-3-small", input: ["alpha", "beta"], dimensions: 8 }
    const a = await (await postJson(`${server.url}/v1/embeddings`, request, auth)).json()
    const b = await (await postJson(`${server.url}/v1/embeddings`, request, auth)).json()
    assert.deepStrictEqual(a, b)
    assert.strictEqual(a.object, "list")
    assert.strictEqual(a.data.length, 2)
    assert.strictEqual(a.data[0].embedding.length, 8)
    assert.notDeepEqual(a.data[0].embedding, a.data[1].embedding)
    const norm = Math.sqrt(a.data[0].embedding.reduce((s: number, v: number) => s + v * v, 0))
    assert.closeTo(norm, 1, 1e-5)
    // ceil(5/4) + ceil(4/4): the estimate is per input
    assert.deepStrictEqual(a.usage, { prompt_tokens: 3, total_tokens: 3 })

    const c = await (await postJson(`${server.url}/v1/embeddings`, { ...request, encoding_format: "base64" }, auth))
      .json()
    const bytes = Buffer.from(c.data[0].embedding, "base64")
    const floats = Array.from({ length: bytes.length / 4 }, (_, i) => bytes.readFloatLE(i * 4))
    assert.deepStrictEqual(floats, a.data[0].embedding)
  })

  it("serves Azure deployments with the api-key header", async () => {
    const url = `${server.url}/openai/deployments/my-gpt/chat/completions?api-version=2024-10-21`
    const ok = await postJson(url, { messages: [{ role: "user", content: "hi" }] }, { "api-key": KEY })
    assert.strictEqual(ok.status, 200)
    const body = await ok.json()
    assert.strictEqual(body.model, "my-gpt")
    assert.strictEqual(body.choices[0].message.content, "Hello from fake-upstream (model my-gpt). You said: hi")
    const bad = await postJson(url, { messages: [] }, { "api-key": "wrong" })
    assert.strictEqual(bad.status, 401)
    assert.strictEqual((await bad.json()).error.code, "401")
    const last = server.requests[server.requests.length - 1]
    assert.strictEqual(last.dialect, "azure")
    assert.strictEqual(last.query["api-version"], "2024-10-21")
  })

  it("refuses what OpenAI refuses, with OpenAI's messages", async () => {
    const url = `${server.url}/v1/chat/completions`
    const hi = [{ role: "user", content: "hi" }]
    const refusals: ReadonlyArray<readonly [Record<string, unknown>, string | null, RegExp]> = [
      [
        { model: "gpt-4o", messages: hi, tools: [{ type: "function", function: { name: "github.get_issue" } }] },
        "tools[0].function.name",
        /does not match pattern/
      ],
      [
        { model: "gpt-4o", messages: hi, tools: [{ type: "function", function: { name: "x".repeat(65) } }] },
        "tools[0].function.name",
        /string too long/
      ],
      [
        { model: "gpt-4o", messages: hi, response_format: { type: "json_object" } },
        "messages",
        /must contain the word 'json'/
      ],
      [{ model: "gpt-4o", messages: hi, reasoning_effort: "low" }, "reasoning_effort", /not supported with this model/],
      [
        { model: "gpt-4o", messages: [...hi, { role: "assistant", content: "a", reasoning_content: "r" }] },
        "messages[1]",
        /reasoning_content/
      ]
    ]
    for (const [body, param, message] of refusals) {
      const res = await postJson(url, body, auth)
      assert.strictEqual(res.status, 400, JSON.stringify(body))
      const error = (await res.json()).error
      assert.strictEqual(error.type, "invalid_request_error")
      assert.strictEqual(error.param, param)
      assert.match(error.message, message)
    }
    const accepted: ReadonlyArray<Record<string, unknown>> = [
      {
        model: "gpt-4o",
        messages: [{ role: "user", content: "answer in JSON" }],
        response_format: { type: "json_object" }
      },
      { model: "o3-mini", messages: hi, reasoning_effort: "low" },
      { model: "my-vllm-model", messages: [...hi, { role: "assistant", content: "a", reasoning_content: "r" }] }
    ]
    for (const body of accepted) assert.strictEqual((await postJson(url, body, auth)).status, 200, JSON.stringify(body))
  })

  it("answers unknown paths with OpenAI's invalid URL 404", async () => {
    const res = await fetch(`${server.url}/v1/nothing`, { headers: auth })
    assert.strictEqual(res.status, 404)
    assert.strictEqual((await res.json()).error.message, "Invalid URL (GET /v1/nothing)")
  })
})
