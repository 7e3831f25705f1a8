/**
 * End to end with the official `openai` SDK's Responses API
 * (`client.responses.create`, streamed and not, with function tools) against
 * the real server's `/v1/responses`, through an OpenAI channel that speaks
 * only chat completions, a Gemini and an Anthropic channel (translated
 * through the canonical model), and an OpenAI channel marked `responses`
 * (relayed as it is): answers, the stream's event sequence, tool loops,
 * reasoning summaries, hosted tools left out and noted on the usage record,
 * the 400s for response state, `response.failed` on a cut stream, and money.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import OpenAI from "openai"
import type { ConfigFile } from "../src/ConfigFile.ts"
import { runSql, settledBooks } from "./support/Databases.ts"
import { startGateway, type TestGateway } from "./support/Gateway.ts"

const KEY = "sk-responses-alice-000000000000000000000000"
/** A key of a user whose balance is empty. */
const POOR_KEY = "sk-responses-poor-0000000000000000000000000"

/** gpt-5's list prices (USD per 1M tokens). */
const GPT5 = { input: 1.25, output: 10, cached_input: 0.125 }

const config = (upstream: string): ConfigFile => ({
  listen: "127.0.0.1:0",
  log_level: "error",
  channels: [
    {
      name: "chat-only",
      type: "openai",
      base_url: `${upstream}/v1`,
      api_key: "sk-up",
      models: ["gpt-4o-mini", "gpt-tools", "gpt-cut"],
      model_map: { "gpt-tools": "gpt-4o-mini-tools", "gpt-cut": "gpt-4o-mini-cut-3" }
    },
    {
      name: "gemini",
      type: "gemini",
      base_url: upstream,
      api_key: "g-up",
      models: ["gemini-2.5-flash", "gemini-tools", "gemini-3-tools"],
      model_map: { "gemini-tools": "gemini-2.5-flash-tools", "gemini-3-tools": "gemini-3-pro-tools" }
    },
    {
      name: "claude",
      type: "anthropic",
      base_url: upstream,
      api_key: "a-up",
      models: ["claude-sonnet-4-5", "claude-tools"],
      model_map: { "claude-tools": "claude-sonnet-4-5-tools" }
    },
    {
      name: "responses",
      type: "openai",
      base_url: `${upstream}/v1`,
      api_key: "sk-up",
      responses: true,
      models: ["gpt-5", "gpt-5-tools", "gpt-5-cut"],
      model_map: { "gpt-5-cut": "gpt-5-cut-4" }
    }
  ],
  models: {
    "gpt-4o-mini": { input: 0.15, output: 0.6 },
    "gpt-tools": { input: 0.15, output: 0.6 },
    "gpt-cut": { input: 0.15, output: 0.6 },
    "gemini-2.5-flash": { input: 0.3, output: 2.5 },
    "gemini-tools": { input: 0.3, output: 2.5 },
    "gemini-3-tools": { input: 2, output: 12 },
    "claude-sonnet-4-5": { input: 3, output: 15 },
    "claude-tools": { input: 3, output: 15 },
    "gpt-5": GPT5,
    "gpt-5-tools": GPT5,
    "gpt-5-cut": GPT5
  },
  users: [
    { name: "alice", balance: 10, keys: [{ name: "main", secret: KEY }] },
    { name: "poor", balance: 0, keys: [{ name: "empty", secret: POOR_KEY }] }
  ]
})

let gateway: TestGateway

beforeAll(async () => {
  gateway = await startGateway(config)
})
afterAll(async () => {
  await gateway?.close()
})

const openai = (base = "/v1") => new OpenAI({ apiKey: KEY, baseURL: `${gateway.url}${base}`, maxRetries: 0 })
const since = (from: number) => gateway.upstream.requests.slice(from)

const NANOS_PER_USD = 1_000_000_000n
const parseUsd = (text: string): bigint => {
  const [whole, fraction = ""] = text.split(".")
  return BigInt(whole!) * NANOS_PER_USD + BigInt(fraction.padEnd(9, "0"))
}
const balance = async (): Promise<bigint> => {
  const me = await (await fetch(`${gateway.url}/api/me`, { headers: { authorization: `Bearer ${KEY}` } })).json() as {
    balance_usd: string
  }
  return parseUsd(me.balance_usd)
}
const balanceSettledAt = async (expected: bigint): Promise<bigint> => {
  let now = await balance()
  for (let i = 0; i < 40 && now !== expected; i++) {
    await new Promise((r) => setTimeout(r, 50))
    now = await balance()
  }
  return now
}
const usdNanos = (usd: number): bigint => BigInt(Math.round(usd * 1e9))

/** The notes on the usage records of a model, once `count` of them have one (records are written in batches). */
const notesOf = async (model: string, count: number): Promise<Array<string>> => {
  const read = () =>
    runSql(
      gateway.database,
      (sql) =>
        Effect.map(
          sql`SELECT note FROM usage_records WHERE model = ${model} AND note IS NOT NULL ORDER BY created_at`,
          (rows) => rows.map((r) => r.note as string)
        )
    )
  let rows = await read()
  for (let i = 0; i < 100 && rows.length < count; i++) {
    await new Promise((r) => setTimeout(r, 50))
    rows = await read()
  }
  return rows
}

const weather: OpenAI.Responses.FunctionTool = {
  type: "function",
  name: "get_weather",
  description: "The weather in a city.",
  parameters: {
    type: "object",
    properties: { city: { type: "string" } },
    required: ["city"],
    additionalProperties: false
  },
  strict: false
}

const channels = [
  {
    label: "an OpenAI channel that speaks only chat completions",
    model: "gpt-4o-mini",
    tools: "gpt-tools",
    path: "/v1/chat/completions"
  },
  {
    label: "a Gemini channel",
    model: "gemini-2.5-flash",
    tools: "gemini-tools",
    path: "/v1beta/models/gemini-2.5-flash:generateContent"
  },
  { label: "an Anthropic channel", model: "claude-sonnet-4-5", tools: "claude-tools", path: "/v1/messages" },
  { label: "an OpenAI channel marked responses (relayed)", model: "gpt-5", tools: "gpt-5-tools", path: "/v1/responses" }
] as const

for (const channel of channels) {
  describe(`openai SDK responses.create through ${channel.label}`, () => {
    it("non-stream: instructions and input items in, a response object with output_text and usage out", async () => {
      const from = gateway.upstream.requests.length
      const response = await openai().responses.create({
        model: channel.model,
        instructions: "Be brief.",
        input: [{ role: "developer", content: "Answer in English." }, {
          role: "user",
          content: [{ type: "input_text", text: "Hello from a Responses client" }]
        }],
        max_output_tokens: 200,
        store: false
      })
      assert.strictEqual(response.object, "response")
      assert.strictEqual(response.status, "completed")
      assert.strictEqual(response.model, channel.model)
      assert.strictEqual(
        response.output_text,
        `Hello from fake-upstream (model ${channel.model}). You said: Hello from a Responses client`
      )
      assert.isAbove(response.usage?.input_tokens ?? 0, 0)
      assert.isAbove(response.usage?.output_tokens ?? 0, 0)
      assert.deepStrictEqual(since(from).map((r) => r.path), [channel.path])
    })

    it("stream: the full event sequence, with increasing sequence numbers, and usage in response.completed", async () => {
      const stream = await openai().responses.create({
        model: channel.model,
        input: "stream this",
        stream: true,
        store: false
      })
      const events: Array<OpenAI.Responses.ResponseStreamEvent> = []
      for await (const event of stream) events.push(event)
      const types = events.map((e) => e.type)
      assert.deepStrictEqual(types.slice(0, 2), ["response.created", "response.in_progress"])
      assert.strictEqual(types.at(-1), "response.completed")
      for (
        const type of [
          "response.output_item.added",
          "response.content_part.added",
          "response.output_text.delta",
          "response.output_text.done",
          "response.content_part.done",
          "response.output_item.done"
        ]
      ) {
        assert.include(types, type)
      }
      const numbers = events.map((e) => e.sequence_number)
      assert.deepStrictEqual(numbers, [...numbers].sort((a, b) => a - b))
      const text = events.flatMap((e) => e.type === "response.output_text.delta" ? [e.delta] : []).join("")
      assert.strictEqual(text, `Hello from fake-upstream (model ${channel.model}). You said: stream this`)
      const completed = events.at(-1) as OpenAI.Responses.ResponseCompletedEvent
      assert.strictEqual(
        completed.response.output_text ?? completed.response.output.flatMap((i) =>
          i.type === "message"
            ? i.content.map((c) => c.type === "output_text" ? c.text : "")
            : []
        ).join(""),
        text
      )
      assert.isAbove(completed.response.usage?.output_tokens ?? 0, 0)
    })

    it("a function tool loop: function_call (streamed arguments), then function_call_output answered", async () => {
      const question = "weather in Paris?"
      const stream = await openai().responses.create({
        model: channel.tools,
        input: question,
        tools: [weather],
        tool_choice: "auto",
        parallel_tool_calls: true,
        stream: true,
        store: false
      })
      let args = ""
      let call: OpenAI.Responses.ResponseFunctionToolCall | undefined
      for await (const event of stream) {
        if (event.type === "response.function_call_arguments.delta") args += event.delta
        if (event.type === "response.output_item.done" && event.item.type === "function_call") call = event.item
      }
      assert.isDefined(call)
      assert.strictEqual(call!.name, "get_weather")
      assert.deepStrictEqual(JSON.parse(args), { city: question })
      assert.deepStrictEqual(JSON.parse(call!.arguments), { city: question })

      const answer = await openai().responses.create({
        model: channel.tools,
        tools: [weather],
        store: false,
        input: [
          { role: "user", content: question },
          { type: "function_call", call_id: call!.call_id, name: call!.name, arguments: call!.arguments },
          { type: "function_call_output", call_id: call!.call_id, output: "21 degrees" }
        ]
      })
      assert.strictEqual(answer.output_text, "The tool get_weather returned: 21 degrees")
    })
  })
}

describe("Gemini 3 thought signatures", () => {
  it("a function call's signature rides in its call_id, and the next turn gives Gemini the real one back", async () => {
    const first = await openai().responses.create({
      model: "gemini-3-tools",
      input: "weather in Rome?",
      tools: [weather],
      store: false
    })
    const call = first.output.find((item): item is OpenAI.Responses.ResponseFunctionToolCall =>
      item.type === "function_call"
    )!
    assert.match(call.call_id, /^mgts_/)
    const issued = gateway.upstream.requests.at(-1)!.seq
    const from = gateway.upstream.requests.length
    const answer = await openai().responses.create({
      model: "gemini-3-tools",
      tools: [weather],
      store: false,
      input: [
        { role: "user", content: "weather in Rome?" },
        { type: "function_call", call_id: call.call_id, name: call.name, arguments: call.arguments },
        { type: "function_call_output", call_id: call.call_id, output: "sunny" }
      ]
    })
    assert.strictEqual(answer.output_text, "The tool get_weather returned: sunny")
    const contents =
      (since(from)[0]!.body as { contents: Array<{ role: string; parts: Array<Record<string, unknown>> }> }).contents
    const modelTurn = contents.find((c) => c.role === "model")!
    // The signature the fake upstream issued for that call (not Google's skip placeholder) went back.
    assert.strictEqual(
      modelTurn.parts[0]!.thoughtSignature,
      Buffer.from(`fake-thought:${issued}:get_weather`).toString("base64")
    )
  })
})

describe("refusals", () => {
  it("an empty balance is a 402 insufficient_quota APIError with the gateway's words, not retried by the SDK", async () => {
    let requests = 0
    // The SDK's default retries are on: x-should-retry: false keeps it to one request.
    const client = new OpenAI({
      apiKey: POOR_KEY,
      baseURL: `${gateway.url}/v1`,
      fetch: (input, init) => {
        requests++
        return fetch(input, init)
      }
    })
    const refused = await client.responses.create({ model: "gpt-4o-mini", input: "hi" }).then(
      () => undefined,
      (e: unknown) => e
    )
    assert.instanceOf(refused, OpenAI.APIError)
    const error = refused as InstanceType<typeof OpenAI.APIError>
    assert.strictEqual(error.status, 402)
    assert.strictEqual(error.code, "insufficient_quota")
    assert.match(error.message, /Your balance is 0\.00 USD but this call may cost up to \d+\.\d+ USD/)
    assert.strictEqual(requests, 1)
  })
})

describe("Responses state and hosted tools", () => {
  it("store: true and previous_response_id are refused with a 400 that says no response state is kept; store: false works", async () => {
    for (const extra of [{ store: true }, { previous_response_id: "resp_123", store: false }]) {
      const refused = await openai().responses.create({ model: "gpt-4o-mini", input: "hi", ...extra }).then(
        () => undefined,
        (e: unknown) => e
      )
      assert.instanceOf(refused, OpenAI.BadRequestError)
      const error = refused as InstanceType<typeof OpenAI.BadRequestError>
      assert.include(error.message, "keeps no response state")
      assert.strictEqual(error.param, Object.keys(extra)[0])
    }
    // A relayed call is refused the same way: the next call may reach another channel or key.
    const relayed = await openai().responses.create({ model: "gpt-5", input: "hi", store: true }).then(
      () => undefined,
      (e: unknown) => e
    )
    assert.instanceOf(relayed, OpenAI.BadRequestError)
    const lookup = await fetch(`${gateway.url}/v1/responses/resp_123`, { headers: { authorization: `Bearer ${KEY}` } })
    assert.strictEqual(lookup.status, 404)
    assert.include((await lookup.json() as { error: { message: string } }).error.message, "keeps no response state")
  })

  it("tools a model cannot run (web_search, a namespace) are left out, the call succeeds, and the usage record says so", async () => {
    const from = gateway.upstream.requests.length
    const response = await openai().responses.create({
      model: "claude-sonnet-4-5",
      input: "hi",
      store: false,
      tools: [
        weather,
        { type: "web_search" },
        // A namespace of tools, as Codex declares its sub-agent tools.
        {
          type: "namespace",
          name: "multi_agent_v1",
          description: "Sub-agents.",
          tools: []
        } as unknown as OpenAI.Responses.Tool
      ]
    })
    assert.strictEqual(response.status, "completed")
    const sent = since(from)[0]!.body as { tools: Array<{ name: string }> }
    assert.deepStrictEqual(sent.tools.map((t) => t.name), ["get_weather"])
    assert.deepStrictEqual(await notesOf("claude-sonnet-4-5", 1), [
      "tools left out: web_search, namespace 'multi_agent_v1' (cannot run on this model)"
    ])
  })

  it("the same body is relayed whole to a channel marked responses, hosted tools included", async () => {
    const from = gateway.upstream.requests.length
    const body = {
      model: "gpt-5",
      input: "hi",
      store: false,
      tools: [{ type: "web_search" }],
      include: ["reasoning.encrypted_content"],
      prompt_cache_key: "k"
    }
    const response = await fetch(`${gateway.url}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: JSON.stringify(body)
    })
    assert.strictEqual(response.status, 200)
    assert.deepStrictEqual(since(from)[0]!.body, body)
  })

  it("works under Google's OpenAI-compatible base too", async () => {
    const response = await openai("/v1beta/openai").responses.create({
      model: "gemini-2.5-flash",
      input: "hi",
      store: false
    })
    assert.strictEqual(response.status, "completed")
  })
})

describe("reasoning and money on a channel marked responses", () => {
  it("reasoning summary events reach the client, and usage with cached and reasoning tokens is charged at the cached price", async () => {
    const before = await balance()
    const stream = await openai().responses.create({
      model: "gpt-5",
      input: "think about it",
      reasoning: { effort: "low", summary: "auto" },
      include: ["reasoning.encrypted_content"],
      prompt_cache_key: "session-1",
      stream: true,
      store: false
    })
    const types: Array<string> = []
    let summary = ""
    let completed: OpenAI.Responses.Response | undefined
    for await (const event of stream) {
      types.push(event.type)
      if (event.type === "response.reasoning_summary_text.delta") summary += event.delta
      if (event.type === "response.completed") completed = event.response
    }
    assert.includeMembers(types, [
      "response.reasoning_summary_part.added",
      "response.reasoning_summary_text.done",
      "response.reasoning_summary_part.done"
    ])
    assert.strictEqual(summary, "Thinking about: think about it")
    const reasoning = completed!.output.find((item) =>
      item.type === "reasoning"
    ) as OpenAI.Responses.ResponseReasoningItem
    assert.isString(reasoning.encrypted_content)
    const usage = completed!.usage!
    assert.isAbove(usage.input_tokens_details.cached_tokens, 0)
    assert.isAbove(usage.output_tokens_details.reasoning_tokens, 0)
    const cached = BigInt(usage.input_tokens_details.cached_tokens)
    const cost = ((BigInt(usage.input_tokens) - cached) * usdNanos(GPT5.input) + cached * usdNanos(GPT5.cached_input) +
      BigInt(usage.output_tokens) * usdNanos(GPT5.output) + 999_999n) / 1_000_000n
    assert.strictEqual(await balanceSettledAt(before - cost), before - cost)
  })

  it("translated: reasoning from an Anthropic model comes back as a reasoning item whose encrypted_content restores its signature next turn", async () => {
    // The fake Anthropic upstream signs no thinking; a signed item as Codex keeps it goes back as Anthropic thinking.
    const from = gateway.upstream.requests.length
    const signed = {
      type: "reasoning",
      id: "rs_1",
      summary: [{ type: "summary_text", text: "I thought." }],
      encrypted_content: `mgrs_${Buffer.from("anthropic:sig-1").toString("base64url")}`
    }
    await openai().responses.create({
      model: "claude-sonnet-4-5",
      store: false,
      input: [{ role: "user", content: "first" }, signed as unknown as OpenAI.Responses.ResponseInputItem, {
        role: "assistant",
        content: "answer"
      }, { role: "user", content: "second" }]
    })
    const messages =
      (since(from)[0]!.body as { messages: Array<{ role: string; content: Array<Record<string, unknown>> }> }).messages
    assert.deepStrictEqual(messages[1]!.content[0], { type: "thinking", thinking: "I thought.", signature: "sig-1" })
  })

  for (const [label, model] of [["relayed", "gpt-5-cut"], ["translated", "gpt-cut"]] as const) {
    it(`a stream the upstream cuts ends with response.failed (${label}), charged for what it delivered, nothing left held`, async () => {
      const response = await fetch(`${gateway.url}/v1/responses`, {
        method: "POST",
        headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
        body: JSON.stringify({ model, input: "one two three four five six", stream: true, store: false })
      })
      assert.strictEqual(response.status, 200)
      const text = await response.text()
      assert.include(text, "\"output_text.delta\"".slice(1, -1))
      assert.match(
        text,
        /event: response\.failed\ndata: \{"type":"response\.failed","sequence_number":\d+,"response":\{[^\n]*"status":"failed"/
      )
      assert.notInclude(text, "response.completed")
      const numbers = [...text.matchAll(/"sequence_number":(\d+)/g)].map((m) => Number(m[1]))
      assert.deepStrictEqual(
        numbers,
        numbers.map((_, i) => numbers[0]! + i),
        "sequence numbers run on into response.failed"
      )
      const books = await settledBooks(gateway.database, "alice")
      assert.strictEqual(books.balance, books.ledger)
    })
  }
})
