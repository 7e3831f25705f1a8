/**
 * End to end with Anthropic's official `@anthropic-ai/sdk` against the real
 * server's Anthropic Messages surface (`/v1/messages`, `?beta=true`,
 * `/v1/messages/count_tokens`), through an OpenAI, a Gemini and an Anthropic
 * channel of the fake upstream: answers, the exact stream event sequence,
 * tool loops, token counts, the thinking budget on each kind of channel,
 * Anthropic's error envelope, rate limits, the relay to an Anthropic channel
 * (the body as the client wrote it, `anthropic-beta` passed on), and money:
 * cache writes charged at the model's `cache_write` price, a cut stream
 * charged for what it delivered.
 */
import Anthropic from "@anthropic-ai/sdk"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { createServer, type IncomingHttpHeaders, type Server } from "node:http"
import type { ConfigFile } from "../src/ConfigFile.ts"
import { runSql, settledBooks } from "./support/Databases.ts"
import { startGateway, type TestGateway } from "./support/Gateway.ts"

const KEY = "sk-anthropic-sdk-alice-0000000000000000000000"
const SLOW_KEY = "sk-anthropic-sdk-slow-00000000000000000000000"
const UPSTREAM_KEY = "sk-ant-upstream"

/** Claude Sonnet's list prices (USD per 1M tokens), cache writes included. */
const SONNET = { input: 3, output: 15, cached_input: 0.3, cache_write: 3.75 }

const config = (cacheUpstream: string) => (upstream: string): ConfigFile => ({
  listen: "127.0.0.1:0",
  log_level: "error",
  channels: [
    {
      name: "openai",
      type: "openai",
      base_url: `${upstream}/v1`,
      api_key: "sk-up",
      models: ["gpt-4o-mini", "gpt-tools", "o3-mini"],
      model_map: { "gpt-tools": "gpt-4o-mini-tools" }
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
      api_key: UPSTREAM_KEY,
      models: ["claude-sonnet-4-5", "claude-tools", "claude-cut"],
      model_map: { "claude-tools": "claude-sonnet-4-5-tools", "claude-cut": "claude-sonnet-4-5-cut-3" }
    },
    {
      name: "claude-cache",
      type: "anthropic",
      base_url: cacheUpstream,
      api_key: UPSTREAM_KEY,
      models: ["claude-cached"]
    }
  ],
  models: {
    "gpt-4o-mini": { input: 0.15, output: 0.6 },
    "gpt-tools": { input: 0.15, output: 0.6 },
    "o3-mini": { input: 1.1, output: 4.4, reasoning: true },
    "gemini-2.5-flash": { input: 0.3, output: 2.5 },
    "gemini-tools": { input: 0.3, output: 2.5 },
    "gemini-3-tools": { input: 2, output: 12 },
    "claude-sonnet-4-5": SONNET,
    "claude-tools": SONNET,
    "claude-cut": SONNET,
    "claude-cached": SONNET
  },
  users: [
    {
      name: "alice",
      balance: 10,
      keys: [{ name: "main", secret: KEY }, { name: "slow", secret: SLOW_KEY, rpm: 1 }]
    }
  ]
})

// ---------------------------------------------------------------------------
// An Anthropic imitation that reports cache reads and writes (the fake upstream reports none)
// ---------------------------------------------------------------------------

/** 10 fresh input tokens, 20 written to the cache, 1000 read from it, 5 output. */
const CACHE_USAGE = {
  input_tokens: 10,
  cache_creation_input_tokens: 20,
  cache_read_input_tokens: 1000,
  output_tokens: 5
}

const startCacheUpstream = async () => {
  const seen: Array<{ readonly headers: IncomingHttpHeaders; readonly body: string }> = []
  const event = (name: string, data: unknown) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`
  const server: Server = createServer((req, res) => {
    let text = ""
    req.setEncoding("utf8")
    req.on("data", (piece: string) => text += piece)
    req.on("end", () => {
      seen.push({ headers: req.headers, body: text })
      const body = JSON.parse(text) as { model: string; stream?: boolean }
      const message = {
        id: "msg_cache1",
        type: "message",
        role: "assistant",
        model: body.model,
        content: [],
        stop_reason: null,
        stop_sequence: null
      }
      if (body.stream !== true) {
        res.writeHead(200, { "content-type": "application/json" })
        res.end(
          JSON.stringify({
            ...message,
            content: [{ type: "text", text: "cached answer" }],
            stop_reason: "end_turn",
            usage: CACHE_USAGE
          })
        )
        return
      }
      res.writeHead(200, { "content-type": "text/event-stream" })
      res.write(
        event("message_start", {
          type: "message_start",
          message: { ...message, usage: { ...CACHE_USAGE, output_tokens: 1 } }
        })
      )
      res.write(
        event("content_block_start", {
          type: "content_block_start",
          index: 0,
          content_block: { type: "text", text: "" }
        })
      )
      res.write(
        event("content_block_delta", {
          type: "content_block_delta",
          index: 0,
          delta: { type: "text_delta", text: "cached answer" }
        })
      )
      res.write(event("content_block_stop", { type: "content_block_stop", index: 0 }))
      res.write(
        event("message_delta", {
          type: "message_delta",
          delta: { stop_reason: "end_turn", stop_sequence: null },
          usage: { output_tokens: 5 }
        })
      )
      res.end(event("message_stop", { type: "message_stop" }))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}

let gateway: TestGateway
let cacheUpstream: Awaited<ReturnType<typeof startCacheUpstream>>

beforeAll(async () => {
  cacheUpstream = await startCacheUpstream()
  gateway = await startGateway(config(cacheUpstream.url))
})
afterAll(async () => {
  await gateway?.close()
  await cacheUpstream?.close()
})

const client = (apiKey = KEY) => new Anthropic({ apiKey, baseURL: gateway.url, maxRetries: 0 })

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
/** The balance once the last call settled (a stream settles just after its last byte). */
const balanceSettledAt = async (expected: bigint): Promise<bigint> => {
  let now = await balance()
  for (let i = 0; i < 40 && now !== expected; i++) {
    await new Promise((r) => setTimeout(r, 50))
    now = await balance()
  }
  return now
}
const usdNanos = (usd: number): bigint => BigInt(Math.round(usd * 1e9))
/** Sonnet's cost of a usage, rounded up once to a nano-dollar as the gateway charges. */
const sonnetCost = (u: { fresh: number; read: number; written: number; output: number }): bigint =>
  (BigInt(u.fresh) * usdNanos(SONNET.input) + BigInt(u.read) * usdNanos(SONNET.cached_input) +
    BigInt(u.written) * usdNanos(SONNET.cache_write) + BigInt(u.output) * usdNanos(SONNET.output) + 999_999n) /
  1_000_000n

/** The usage records of a model (prompt, cached, cache-write tokens, cost), once `count` were written (records are written in batches). */
const usageRecords = async (model: string, count: number) => {
  const read = () =>
    runSql(
      gateway.database,
      (sql) =>
        Effect.map(
          sql`SELECT prompt_tokens, cached_tokens, cache_write_tokens, cost_nanos FROM usage_records WHERE model = ${model} ORDER BY created_at`,
          (rows) =>
            rows.map((
              r
            ) => [
              Number(r.prompt_tokens),
              Number(r.cached_tokens),
              Number(r.cache_write_tokens),
              BigInt(r.cost_nanos as bigint)
            ])
        )
    )
  let rows = await read()
  for (let i = 0; i < 100 && rows.length < count; i++) {
    await new Promise((r) => setTimeout(r, 50))
    rows = await read()
  }
  return rows
}

/** The upstream requests made since `from` (an index into the fake upstream's log). */
const since = (from: number) => gateway.upstream.requests.slice(from)

const weather: Anthropic.Tool = {
  name: "get_weather",
  description: "The weather in a city.",
  input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
}

const channels = [
  { label: "an OpenAI channel", model: "gpt-4o-mini", tools: "gpt-tools", dialect: "openai" },
  { label: "a Gemini channel", model: "gemini-2.5-flash", tools: "gemini-tools", dialect: "gemini" },
  { label: "an Anthropic channel (relayed)", model: "claude-sonnet-4-5", tools: "claude-tools", dialect: "anthropic" }
] as const

for (const channel of channels) {
  describe(`@anthropic-ai/sdk through ${channel.label}`, () => {
    it("messages.create: a system prompt as blocks, an answer in Anthropic's shape with usage", async () => {
      const from = gateway.upstream.requests.length
      const message = await client().messages.create({
        model: channel.model,
        max_tokens: 256,
        system: [{ type: "text", text: "Be brief." }],
        messages: [{ role: "user", content: "Hello from an Anthropic client" }],
        metadata: { user_id: "u-1" },
        stop_sequences: ["STOP"]
      })
      assert.strictEqual(message.type, "message")
      assert.strictEqual(message.role, "assistant")
      assert.strictEqual(message.model, channel.model)
      assert.strictEqual(message.stop_reason, "end_turn")
      const text = message.content.map((b) => b.type === "text" ? b.text : "").join("")
      assert.strictEqual(
        text,
        `Hello from fake-upstream (model ${channel.model}). You said: Hello from an Anthropic client`
      )
      assert.isAbove(message.usage.input_tokens, 0)
      assert.isAbove(message.usage.output_tokens, 0)
      const sent = since(from)
      assert.strictEqual(sent.length, 1)
      assert.strictEqual(sent[0]!.dialect, channel.dialect)
      const body = sent[0]!.body as Record<string, unknown>
      if (channel.dialect === "openai") {
        assert.deepStrictEqual((body.messages as Array<unknown>)[0], { role: "system", content: "Be brief." })
        assert.deepStrictEqual(body.stop, ["STOP"])
        assert.strictEqual(body.user, "u-1")
      } else if (channel.dialect === "gemini") {
        assert.deepStrictEqual(body.systemInstruction, { parts: [{ text: "Be brief." }] })
        assert.deepStrictEqual((body.generationConfig as Record<string, unknown>).stopSequences, ["STOP"])
      }
    })

    it("messages.stream: Anthropic's exact event sequence, and the final message", async () => {
      const stream = client().messages.stream({
        model: channel.model,
        max_tokens: 256,
        messages: [{ role: "user", content: "stream this" }]
      })
      const types: Array<string> = []
      let started: number | undefined
      stream.on("streamEvent", (event) => {
        types.push(event.type)
        if (event.type === "message_start") started = event.message.usage.input_tokens
      })
      const message = await stream.finalMessage()
      assert.strictEqual(types[0], "message_start")
      // message_start states the prompt's tokens before the answer, as Anthropic's own streams do (an estimate when translated).
      assert.isAbove(started!, 0)
      assert.deepStrictEqual(types.slice(-2), ["message_delta", "message_stop"])
      const blocks = types.filter((t) => t.startsWith("content_block"))
      assert.strictEqual(blocks[0], "content_block_start")
      assert.strictEqual(blocks.at(-1), "content_block_stop")
      assert.isAbove(blocks.filter((t) => t === "content_block_delta").length, 1)
      const text = message.content.map((b) => b.type === "text" ? b.text : "").join("")
      assert.strictEqual(text, `Hello from fake-upstream (model ${channel.model}). You said: stream this`)
      assert.strictEqual(message.stop_reason, "end_turn")
      // message_delta carries the cumulative output, counted one token per streamed word by the fake upstream.
      assert.strictEqual(message.usage.output_tokens, text.split(" ").length)
      assert.isAbove(message.usage.input_tokens, 0)
    })

    it("a tool loop: tool_use (streamed as input_json_delta), then the tool_result answered", async () => {
      const question = "weather in Paris?"
      const stream = client().messages.stream({
        model: channel.tools,
        max_tokens: 256,
        tools: [weather],
        messages: [{ role: "user", content: question }]
      })
      const deltas: Array<string> = []
      stream.on("streamEvent", (event) => {
        if (event.type === "content_block_delta" && event.delta.type === "input_json_delta") {
          deltas.push(event.delta.partial_json)
        }
      })
      const first = await stream.finalMessage()
      assert.strictEqual(first.stop_reason, "tool_use")
      const call = first.content.find((b): b is Anthropic.ToolUseBlock => b.type === "tool_use")!
      assert.strictEqual(call.name, "get_weather")
      assert.deepStrictEqual(call.input, { city: question })
      assert.match(call.id, /^[a-zA-Z0-9_-]+$/)
      assert.deepStrictEqual(JSON.parse(deltas.join("")), { city: question })

      const answer = await client().messages.create({
        model: channel.tools,
        max_tokens: 256,
        tools: [weather],
        tool_choice: { type: "auto" },
        messages: [
          { role: "user", content: question },
          { role: "assistant", content: first.content },
          { role: "user", content: [{ type: "tool_result", tool_use_id: call.id, content: "21 degrees" }] }
        ]
      })
      assert.strictEqual(answer.stop_reason, "end_turn")
      assert.deepStrictEqual(answer.content.map((b) => b.type === "text" ? b.text : ""), [
        "The tool get_weather returned: 21 degrees"
      ])
    })

    it("countTokens: a count for the prompt, never billed", async () => {
      const before = await balance()
      const from = gateway.upstream.requests.length
      const counted = await client().messages.countTokens({
        model: channel.model,
        system: "Be brief.",
        tools: [weather],
        messages: [{ role: "user", content: "How many tokens is this?" }]
      })
      assert.isAbove(counted.input_tokens, 0)
      // An Anthropic channel counts; other channels' models are counted locally.
      assert.deepStrictEqual(
        since(from).map((r) => r.path),
        channel.dialect === "anthropic" ? ["/v1/messages/count_tokens"] : []
      )
      assert.strictEqual(await balance(), before)
    })

    it("the beta surface (messages?beta=true), as Claude Code calls it", async () => {
      const message = await client().beta.messages.create({
        model: channel.model,
        max_tokens: 64,
        betas: ["interleaved-thinking-2025-05-14"],
        messages: [{ role: "user", content: "beta hello" }]
      })
      assert.strictEqual(message.content[0]?.type, "text")
    })
  })
}

describe("Gemini 3 thought signatures", () => {
  it("a function call's signature rides in its tool_use id, and the next turn gives Gemini the real one back", async () => {
    const question = "weather in Rome?"
    const first = await client().messages.create({
      model: "gemini-3-tools",
      max_tokens: 256,
      tools: [weather],
      messages: [{ role: "user", content: question }]
    })
    const call = first.content.find((b): b is Anthropic.ToolUseBlock => b.type === "tool_use")!
    assert.match(call.id, /^mgsg_[A-Za-z0-9_-]+$/)
    const issued = gateway.upstream.requests.at(-1)!.seq
    const from = gateway.upstream.requests.length
    const answer = await client().messages.create({
      model: "gemini-3-tools",
      max_tokens: 256,
      tools: [weather],
      messages: [
        { role: "user", content: question },
        { role: "assistant", content: first.content },
        { role: "user", content: [{ type: "tool_result", tool_use_id: call.id, content: "sunny" }] }
      ]
    })
    assert.deepStrictEqual(answer.content.map((b) => b.type === "text" ? b.text : ""), [
      "The tool get_weather returned: sunny"
    ])
    const contents =
      (since(from)[0]!.body as { contents: Array<{ role: string; parts: Array<Record<string, unknown>> }> }).contents
    const call0 = contents.find((c) => c.role === "model")!.parts[0]!
    // The signature the fake upstream issued for that call (not Google's skip placeholder) went back.
    assert.strictEqual(call0.thoughtSignature, Buffer.from(`fake-thought:${issued}:get_weather`).toString("base64"))
  })
})

describe("the relay to an Anthropic channel", () => {
  it("forwards the client's body with only the model changed, the client's anthropic-beta header, and the channel's own key", async () => {
    const from = gateway.upstream.requests.length
    const body = {
      model: "claude-tools",
      max_tokens: 64,
      messages: [{ role: "user", content: [{ type: "text", text: "hi", cache_control: { type: "ephemeral" } }] }],
      context_management: { edits: [{ type: "clear_thinking_20251015", keep: "all" }] },
      tools: [{ ...weather, defer_loading: true }]
    }
    const response = await fetch(`${gateway.url}/v1/messages?beta=true`, {
      method: "POST",
      headers: {
        "x-api-key": KEY,
        "anthropic-version": "2023-06-01",
        "anthropic-beta": "context-management-2025-06-27",
        "content-type": "application/json"
      },
      body: JSON.stringify(body)
    })
    assert.strictEqual(response.status, 200)
    const sent = since(from)[0]!
    assert.deepStrictEqual(sent.body, { ...body, model: "claude-sonnet-4-5-tools" })
    assert.strictEqual(sent.headers["anthropic-beta"], "context-management-2025-06-27")
    assert.strictEqual(sent.headers["x-api-key"], UPSTREAM_KEY)
    // The answer names the public model, not the channel's.
    assert.strictEqual((await response.json() as { model: string }).model, "claude-tools")
  })
})

describe("thinking budgets on other channels", () => {
  it("a budget becomes an OpenAI reasoning model's effort, and Gemini's thinkingConfig with thoughts", async () => {
    const from = gateway.upstream.requests.length
    await client().messages.create({
      model: "o3-mini",
      max_tokens: 16_000,
      thinking: { type: "enabled", budget_tokens: 8_000 },
      messages: [{ role: "user", content: "think" }]
    })
    await client().messages.create({
      model: "gemini-2.5-flash",
      max_tokens: 16_000,
      thinking: { type: "enabled", budget_tokens: 8_000 },
      messages: [{ role: "user", content: "think" }]
    })
    const [openai, gemini] = since(from).map((r) => r.body as Record<string, unknown>)
    assert.strictEqual(openai!.reasoning_effort, "medium")
    assert.deepStrictEqual((gemini!.generationConfig as Record<string, unknown>).thinkingConfig, {
      thinkingBudget: 8000,
      includeThoughts: true
    })
  })

  it("a base64 image reaches a Gemini model as inlineData", async () => {
    const from = gateway.upstream.requests.length
    await client().messages.create({
      model: "gemini-2.5-flash",
      max_tokens: 64,
      messages: [{
        role: "user",
        content: [{ type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } }, {
          type: "text",
          text: "what is it?"
        }]
      }]
    })
    const parts = ((since(from)[0]!.body as { contents: Array<{ parts: Array<unknown> }> }).contents[0]!).parts
    assert.deepStrictEqual(parts[0], { inlineData: { mimeType: "image/png", data: "iVBORw0KGgo=" } })
  })
})

describe("errors in Anthropic's envelope", () => {
  it("a wrong key is 401 authentication_error; an unknown model 404 not_found_error naming it", async () => {
    const wrong = await client("sk-nope-0000000000000000000000000000").messages.create({
      model: "gpt-4o-mini",
      max_tokens: 8,
      messages: [{ role: "user", content: "x" }]
    })
      .then(() => undefined, (e: unknown) => e)
    assert.instanceOf(wrong, Anthropic.AuthenticationError)
    assert.strictEqual(
      ((wrong as InstanceType<typeof Anthropic.AuthenticationError>).error as { error: { type: string } }).error.type,
      "authentication_error"
    )
    const unknown = await client().messages.create({
      model: "claude-9",
      max_tokens: 8,
      messages: [{ role: "user", content: "x" }]
    }).then(() => undefined, (e: unknown) => e)
    assert.instanceOf(unknown, Anthropic.NotFoundError)
    const body = (unknown as InstanceType<typeof Anthropic.NotFoundError>).error as {
      type: string
      error: { type: string; message: string }
    }
    assert.strictEqual(body.type, "error")
    assert.strictEqual(body.error.type, "not_found_error")
    assert.include(body.error.message, "claude-9")
  })

  it("a bad body names the field; a key over its rate limit gets 429 rate_limit_error with retry-after", async () => {
    const bad = await fetch(`${gateway.url}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": KEY, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "x" }] })
    })
    assert.strictEqual(bad.status, 400)
    assert.deepStrictEqual(await bad.json(), {
      type: "error",
      error: {
        type: "invalid_request_error",
        message: "'max_tokens' is required: a positive integer (the most tokens the answer may have)."
      }
    })
    await client(SLOW_KEY).messages.create({
      model: "gpt-4o-mini",
      max_tokens: 8,
      messages: [{ role: "user", content: "x" }]
    })
    const limited = await client(SLOW_KEY).messages.create({
      model: "gpt-4o-mini",
      max_tokens: 8,
      messages: [{ role: "user", content: "x" }]
    })
      .then(() => undefined, (e: unknown) => e)
    assert.instanceOf(limited, Anthropic.RateLimitError)
    const error = limited as InstanceType<typeof Anthropic.RateLimitError>
    assert.strictEqual((error.error as { error: { type: string } }).error.type, "rate_limit_error")
    assert.isNotNull(error.headers.get("retry-after"))
  })
})

describe("money", () => {
  it("cache reads at cached_input and cache writes at cache_write, stream or not, and the usage record keeps both", async () => {
    const cost = sonnetCost({ fresh: 10, read: 1000, written: 20, output: 5 })
    // 30 + 300 + 75 + 75 USD per 1M tokens.
    assert.strictEqual(cost, 480_000n)
    let expected = await balance()
    for (const stream of [false, true]) {
      const request = { model: "claude-cached", max_tokens: 64, messages: [{ role: "user" as const, content: "hi" }] }
      const message = stream
        ? await client().messages.stream(request).finalMessage()
        : await client().messages.create(request)
      assert.strictEqual(message.usage.cache_creation_input_tokens, 20)
      assert.strictEqual(message.usage.cache_read_input_tokens, 1000)
      expected -= cost
      assert.strictEqual(await balanceSettledAt(expected), expected, stream ? "stream" : "non-stream")
    }
    assert.deepStrictEqual(await usageRecords("claude-cached", 2), [[1030, 1000, 20, cost], [1030, 1000, 20, cost]])
  })

  it("a stream the Anthropic channel cuts ends with an in-band error event, charged for the text it delivered", async () => {
    const before = await balance()
    const response = await fetch(`${gateway.url}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": KEY, "content-type": "application/json" },
      body: JSON.stringify({
        model: "claude-cut",
        max_tokens: 64,
        stream: true,
        messages: [{ role: "user", content: "one two three four five" }]
      })
    })
    assert.strictEqual(response.status, 200)
    const text = await response.text()
    assert.include(text, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\"")
    assert.notInclude(text, "message_stop")
    const delivered = [...text.matchAll(/"text_delta","text":"([^"]*)"/g)].map((m) => m[1]).join("")
    assert.strictEqual(delivered, "Hello from fake-upstream ")
    const input = Number(/"input_tokens":(\d+)/.exec(text)![1])
    // message_start reported the input and one output token; three words went out: about ceil(25 / 4) = 7 tokens.
    const expected = before - sonnetCost({ fresh: input, read: 0, written: 0, output: Math.ceil(delivered.length / 4) })
    assert.strictEqual(await balanceSettledAt(expected), expected)
    const books = await settledBooks(gateway.database, "alice")
    assert.strictEqual(books.balance, books.ledger)
  })
})
