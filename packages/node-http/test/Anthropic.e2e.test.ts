/**
 * End to end through `anthropic` channels: the official `openai` and
 * `@google/genai` SDKs calling models an Anthropic Messages upstream serves
 * (translated through the canonical model), non-stream and stream, with a tool
 * call and its result; upstream errors re-expressed in each client's dialect;
 * the balance charged from the upstream's own usage, cache reads and cache
 * creation included; and the channel probe.
 *
 * Most calls go to the fake upstream's Anthropic surface. A tiny Anthropic
 * imitation of our own answers with cache counts and with an in-band `error`
 * event, which the fake upstream never sends.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { GoogleGenAI } from "@google/genai"
import { createServer, type IncomingHttpHeaders, type Server } from "node:http"
import OpenAI from "openai"
import type { ConfigFile } from "../src/ConfigFile.ts"
import { settledBooks } from "./support/Databases.ts"
import { startGateway, type TestGateway } from "./support/Gateway.ts"

const KEY = "sk-anthropic-alice-000000000000000000000000000"
const ADMIN_KEY = "sk-anthropic-root-admin-000000000000000000000"
const UPSTREAM_KEY = "sk-ant-upstream-key"

/** List prices of the models below, in USD per million tokens. */
const PRICES = { input: 3, output: 15, cached_input: 0.3 }

const config = (cacheUpstream: string) => (upstream: string): ConfigFile => ({
  listen: "127.0.0.1:0",
  log_level: "error",
  channels: [
    {
      name: "claude",
      type: "anthropic",
      base_url: upstream,
      api_key: UPSTREAM_KEY,
      models: ["claude-sonnet-4", "claude-tools", "claude-cut"],
      model_map: { "claude-tools": "claude-sonnet-4-tools", "claude-cut": "claude-sonnet-4-cut-3" }
    },
    {
      name: "claude-limited",
      type: "anthropic",
      base_url: upstream,
      api_key: UPSTREAM_KEY,
      models: ["claude-limited"],
      headers: { "x-fake-fail": "429" }
    },
    {
      name: "claude-broken",
      type: "anthropic",
      base_url: upstream,
      api_key: UPSTREAM_KEY,
      models: ["claude-broken"],
      headers: { "x-fake-fail": "500" }
    },
    {
      name: "claude-cache",
      type: "anthropic",
      base_url: cacheUpstream,
      api_key: UPSTREAM_KEY,
      models: ["claude-cached", "claude-overloaded"]
    }
  ],
  models: {
    "claude-sonnet-4": PRICES,
    "claude-tools": PRICES,
    "claude-cut": PRICES,
    "claude-limited": PRICES,
    "claude-broken": PRICES,
    "claude-cached": PRICES,
    "claude-overloaded": PRICES
  },
  users: [
    { name: "alice", balance: 10, keys: [{ name: "main", secret: KEY }] },
    { name: "root", role: "admin", keys: [{ name: "ops", secret: ADMIN_KEY }] }
  ]
})

// ---------------------------------------------------------------------------
// An Anthropic imitation for what the fake upstream does not do
// ---------------------------------------------------------------------------

/** What the imitation reports: 10 fresh input tokens, 20 written to the cache, 1000 read from it, 5 output. */
const CACHE_USAGE = {
  input_tokens: 10,
  cache_creation_input_tokens: 20,
  cache_read_input_tokens: 1000,
  output_tokens: 5
}

interface Seen {
  readonly path: string
  readonly headers: IncomingHttpHeaders
  readonly body: Record<string, unknown>
}

const event = (name: string, data: unknown) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`

/** `claude-cached` answers "cached answer" with `CACHE_USAGE`; `claude-overloaded` streams one word, then an `overloaded_error` event. */
const startCacheUpstream = async () => {
  const seen: Array<Seen> = []
  const server: Server = createServer((req, res) => {
    let text = ""
    req.setEncoding("utf8")
    req.on("data", (piece: string) => text += piece)
    req.on("end", () => {
      const body = JSON.parse(text) as Record<string, unknown>
      seen.push({ path: req.url ?? "", headers: req.headers, body })
      const model = String(body.model)
      const message = {
        id: "msg_cache1",
        type: "message",
        role: "assistant",
        model,
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
          delta: { type: "text_delta", text: "cached " }
        })
      )
      if (model === "claude-overloaded") {
        res.end(event("error", { type: "error", error: { type: "overloaded_error", message: "Overloaded" } }))
        return
      }
      res.write(
        event("content_block_delta", {
          type: "content_block_delta",
          index: 0,
          delta: { type: "text_delta", text: "answer" }
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
  const port = (server.address() as { port: number }).port
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}

// ---------------------------------------------------------------------------
// Money helpers
// ---------------------------------------------------------------------------

const NANOS_PER_USD = 1_000_000_000n

/** `"9.998123"` -> nano-dollars, exactly. */
const parseUsd = (text: string): bigint => {
  const [whole, fraction = ""] = text.split(".")
  return BigInt(whole!) * NANOS_PER_USD + BigInt(fraction.padEnd(9, "0"))
}

const usdNanos = (usd: number): bigint => BigInt(Math.round(usd * 1e9))

/** The list cost (group ratio 1) of a usage, rounded up to a whole nano-dollar as the gateway charges. */
const expectedCost = (
  usage: { readonly prompt: number; readonly completion: number; readonly cached: number }
): bigint => {
  const uncached = BigInt(usage.prompt - usage.cached)
  const exact = uncached * usdNanos(PRICES.input) + BigInt(usage.cached) * usdNanos(PRICES.cached_input) +
    BigInt(usage.completion) * usdNanos(PRICES.output)
  return (exact + 999_999n) / 1_000_000n
}

// ---------------------------------------------------------------------------

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

const balance = async (): Promise<bigint> => {
  const me = await (await fetch(`${gateway.url}/api/me`, { headers: { authorization: `Bearer ${KEY}` } })).json() as {
    balance_usd: string
  }
  return parseUsd(me.balance_usd)
}

/**
 * The balance once the call before settled: a stream is settled when it ends,
 * which can be just after the client read its last byte, so this waits for the
 * expected figure (or returns whatever the balance is after two seconds).
 */
const balanceSettledAt = async (expected: bigint): Promise<bigint> => {
  let now = await balance()
  for (let i = 0; i < 40 && now !== expected; i++) {
    await new Promise((r) => setTimeout(r, 50))
    now = await balance()
  }
  return now
}

const openai = () => new OpenAI({ apiKey: KEY, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
const genai = () => new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl: gateway.url, apiVersion: "v1beta" } })

/** The last request the fake upstream recorded, which must have been an Anthropic Messages call. */
const lastAnthropicRequest = () => {
  const request = gateway.upstream.requests.at(-1)!
  assert.strictEqual(request.dialect, "anthropic")
  assert.strictEqual(request.path, "/v1/messages")
  return request
}

const tools = [{
  type: "function" as const,
  function: {
    name: "get_weather",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
  }
}]

describe("openai SDK calling a model served by an anthropic channel", () => {
  it("non-stream: the upstream gets a Messages request with x-api-key and anthropic-version; the balance pays the upstream's usage", async () => {
    const before = await balance()
    const completion = await openai().chat.completions.create({
      model: "claude-sonnet-4",
      messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Hello from an OpenAI client" }],
      max_tokens: 100
    })
    assert.include(completion.choices[0]!.message.content ?? "", "Hello from fake-upstream (model claude-sonnet-4)")
    assert.strictEqual(completion.choices[0]!.finish_reason, "stop")
    assert.strictEqual(completion.model, "claude-sonnet-4")
    assert.isAbove(completion.created, 1_600_000_000)

    const sent = lastAnthropicRequest()
    assert.strictEqual(sent.headers["x-api-key"], UPSTREAM_KEY)
    assert.strictEqual(sent.headers["anthropic-version"], "2023-06-01")
    assert.isUndefined(sent.headers["authorization"])
    const body = sent.body as { model: string; max_tokens: number; system: unknown; messages: Array<{ role: string }> }
    assert.strictEqual(body.model, "claude-sonnet-4")
    assert.strictEqual(body.max_tokens, 100)
    assert.deepStrictEqual(body.system, [{ type: "text", text: "Be brief." }])
    assert.deepStrictEqual(body.messages.map((m) => m.role), ["user"])

    const usage = completion.usage!
    assert.isAbove(usage.prompt_tokens, 0)
    assert.isAbove(usage.completion_tokens, 0)
    const expected = before -
      expectedCost({ prompt: usage.prompt_tokens, completion: usage.completion_tokens, cached: 0 })
    assert.strictEqual(await balanceSettledAt(expected), expected)
  })

  it("stream with include_usage: text, finish reason, and usage from message_start and message_delta, charged exactly", async () => {
    const before = await balance()
    const stream = await openai().chat.completions.create({
      model: "claude-sonnet-4",
      messages: [{ role: "user", content: "stream this please" }],
      stream: true,
      stream_options: { include_usage: true }
    })
    let text = ""
    let finish: string | null = null
    let usage: OpenAI.CompletionUsage | undefined
    let model = ""
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? ""
      finish = chunk.choices[0]?.finish_reason ?? finish
      usage = chunk.usage ?? usage
      model = chunk.model
    }
    assert.strictEqual(text, "Hello from fake-upstream (model claude-sonnet-4). You said: stream this please")
    assert.strictEqual(finish, "stop")
    assert.strictEqual(model, "claude-sonnet-4")
    assert.strictEqual((lastAnthropicRequest().body as { stream: boolean }).stream, true)
    // The fake upstream counts one completion token per streamed word; the final count comes from message_delta.
    assert.strictEqual(usage?.completion_tokens, text.split(" ").length)
    assert.isAbove(usage?.prompt_tokens ?? 0, 0)
    const expected = before -
      expectedCost({ prompt: usage!.prompt_tokens, completion: usage!.completion_tokens, cached: 0 })
    assert.strictEqual(await balanceSettledAt(expected), expected)
  })

  it("a tool call, its result, and the answer that uses it", async () => {
    const first = await openai().chat.completions.create({
      model: "claude-tools",
      messages: [{ role: "user", content: "weather in Paris?" }],
      tools
    })
    const call = first.choices[0]!.message.tool_calls?.[0]
    assert.strictEqual(first.choices[0]!.finish_reason, "tool_calls")
    assert.strictEqual(call?.type, "function")
    if (call?.type !== "function") return
    assert.strictEqual(call.function.name, "get_weather")
    assert.match(call.id, /^toolu_fake\d+$/)
    assert.deepStrictEqual(JSON.parse(call.function.arguments), { city: "weather in Paris?" })
    const declared = (lastAnthropicRequest().body as { tools: Array<{ name: string; input_schema: unknown }> }).tools
    assert.deepStrictEqual(declared.map((t) => t.name), ["get_weather"])

    const second = await openai().chat.completions.create({
      model: "claude-tools",
      tools,
      messages: [
        { role: "user", content: "weather in Paris?" },
        first.choices[0]!.message,
        { role: "tool", tool_call_id: call.id, content: "{\"temperature\": 21}" }
      ]
    })
    assert.strictEqual(second.choices[0]!.finish_reason, "stop")
    assert.strictEqual(second.choices[0]!.message.content, "The tool get_weather returned: {\"temperature\": 21}")
    // The upstream got the call as a tool_use block and the result as a tool_result with the same id.
    const messages =
      (lastAnthropicRequest().body as { messages: Array<{ role: string; content: Array<Record<string, unknown>> }> })
        .messages
    assert.deepStrictEqual(messages.map((m) => m.role), ["user", "assistant", "user"])
    assert.deepStrictEqual(messages[1]!.content, [{
      type: "tool_use",
      id: call.id,
      name: "get_weather",
      input: { city: "weather in Paris?" }
    }])
    assert.strictEqual(messages[2]!.content[0]!.type, "tool_result")
    assert.strictEqual(messages[2]!.content[0]!.tool_use_id, call.id)
  })

  it("a streamed tool call", async () => {
    const stream = await openai().chat.completions.create({
      model: "claude-tools",
      messages: [{ role: "user", content: "weather?" }],
      tools,
      stream: true,
      stream_options: { include_usage: true }
    })
    let id = ""
    let name = ""
    let args = ""
    let finish: string | null = null
    let usage: OpenAI.CompletionUsage | undefined
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta.tool_calls?.[0]
      id += delta?.id ?? ""
      name += delta?.function?.name ?? ""
      args += delta?.function?.arguments ?? ""
      finish = chunk.choices[0]?.finish_reason ?? finish
      usage = chunk.usage ?? usage
    }
    assert.match(id, /^toolu_fake\d+$/)
    assert.strictEqual(name, "get_weather")
    assert.deepStrictEqual(JSON.parse(args), { city: "weather?" })
    assert.strictEqual(finish, "tool_calls")
    assert.isAbove(usage?.completion_tokens ?? 0, 0)
  })

  it("upstream 429 and 500 come back as OpenAI errors, stream or not", async () => {
    for (const stream of [false, true]) {
      try {
        await openai().chat.completions.create({
          model: "claude-limited",
          messages: [{ role: "user", content: "hi" }],
          stream
        })
        assert.fail("expected a rate limit")
      } catch (error) {
        assert.instanceOf(error, OpenAI.RateLimitError)
        const e = error as InstanceType<typeof OpenAI.RateLimitError>
        assert.strictEqual(e.code, "upstream_rate_limited")
        assert.match(e.message, /rate-limiting the gateway/)
        assert.strictEqual(e.headers.get("retry-after"), "1")
      }
      try {
        await openai().chat.completions.create({
          model: "claude-broken",
          messages: [{ role: "user", content: "hi" }],
          stream
        })
        assert.fail("expected an upstream failure")
      } catch (error) {
        assert.instanceOf(error, OpenAI.InternalServerError)
        const e = error as InstanceType<typeof OpenAI.InternalServerError>
        assert.strictEqual(e.status, 502)
        assert.strictEqual(e.code, "upstream_error")
        assert.match(e.message, /HTTP 500/)
      }
    }
  })

  it("a failed call costs nothing", async () => {
    const before = await balance()
    await openai().chat.completions.create({ model: "claude-broken", messages: [{ role: "user", content: "hi" }] })
      .catch(() => undefined)
    assert.strictEqual(await balance(), before)
  })

  it("bills cache reads at the cached price and cache writes as input: prompt tokens include both", async () => {
    const before = await balance()
    const completion = await openai().chat.completions.create({
      model: "claude-cached",
      messages: [{ role: "user", content: "hi" }]
    })
    assert.strictEqual(completion.choices[0]!.message.content, "cached answer")
    const usage = completion.usage!
    assert.strictEqual(usage.prompt_tokens, 10 + 20 + 1000)
    assert.strictEqual(usage.prompt_tokens_details?.cached_tokens, 1000)
    assert.strictEqual(usage.completion_tokens, 5)
    const seen = cacheUpstream.seen.at(-1)!
    assert.strictEqual(seen.path, "/v1/messages")
    assert.strictEqual(seen.headers["x-api-key"], UPSTREAM_KEY)
    assert.strictEqual(seen.headers["anthropic-version"], "2023-06-01")
    const cost = expectedCost({ prompt: 1030, completion: 5, cached: 1000 })
    // 30 * 3 + 1000 * 0.3 + 5 * 15 = 465 USD per million tokens -> 465,000 nano-dollars.
    assert.strictEqual(cost, 465_000n)
    assert.strictEqual(await balanceSettledAt(before - cost), before - cost)

    const streamBefore = before - cost
    const stream = await openai().chat.completions.create({
      model: "claude-cached",
      messages: [{ role: "user", content: "hi" }],
      stream: true,
      stream_options: { include_usage: true }
    })
    let text = ""
    let streamed: OpenAI.CompletionUsage | undefined
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? ""
      streamed = chunk.usage ?? streamed
    }
    assert.strictEqual(text, "cached answer")
    assert.deepStrictEqual(
      {
        prompt: streamed?.prompt_tokens,
        cached: streamed?.prompt_tokens_details?.cached_tokens,
        completion: streamed?.completion_tokens
      },
      { prompt: 1030, cached: 1000, completion: 5 }
    )
    assert.strictEqual(await balanceSettledAt(streamBefore - cost), streamBefore - cost)
  })

  it("an in-band error event mid-stream reaches the client as an error after the text already sent, which is billed", async () => {
    const before = await balance()
    const stream = await openai().chat.completions.create({
      model: "claude-overloaded",
      messages: [{ role: "user", content: "hi" }],
      stream: true
    })
    let text = ""
    try {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ""
      assert.fail("expected the stream to fail")
    } catch (error) {
      assert.instanceOf(error, OpenAI.APIError)
      assert.match((error as Error).message, /overloaded/i)
    }
    assert.strictEqual(text, "cached ")
    // message_start reported the input (with its cache counts) and one output token so far, but "cached " went out:
    // a cut stream is charged for the text it delivered (about four characters per token: 2), the larger of the two.
    const expected = before - expectedCost({ prompt: 1030, completion: 2, cached: 1000 })
    assert.strictEqual(await balanceSettledAt(expected), expected)
  })

  it("a stream the upstream cuts ends with an in-band error, and nothing is left held", async () => {
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: "claude-cut",
        stream: true,
        messages: [{ role: "user", content: "one two three four five" }]
      })
    })
    assert.strictEqual(response.status, 200)
    const text = await response.text()
    assert.include(text, "\"content\":\"Hello \"")
    assert.match(text, /"code":"upstream_error"/)
    assert.notInclude(text, "[DONE]")
    const b = await settledBooks(gateway.database, "alice")
    assert.strictEqual(b.openHolds, 0)
    assert.strictEqual(b.balance, b.ledger, "the balance equals the ledger's sum")
  })
})

describe("@google/genai SDK calling a model served by an anthropic channel", () => {
  const contents = "Hello from a Gemini client"

  it("generateContent, charged from the upstream's usage", async () => {
    const before = await balance()
    const response = await genai().models.generateContent({
      model: "claude-sonnet-4",
      contents,
      config: { systemInstruction: "Be brief." }
    })
    assert.strictEqual(
      response.text,
      "Hello from fake-upstream (model claude-sonnet-4). You said: Hello from a Gemini client"
    )
    assert.strictEqual(response.candidates?.[0]?.finishReason, "STOP")
    const sent = lastAnthropicRequest().body as { system: unknown }
    assert.deepStrictEqual(sent.system, [{ type: "text", text: "Be brief." }])
    const usage = response.usageMetadata!
    assert.isAbove(usage.promptTokenCount ?? 0, 0)
    assert.isAbove(usage.candidatesTokenCount ?? 0, 0)
    const expected = before -
      expectedCost({ prompt: usage.promptTokenCount!, completion: usage.candidatesTokenCount!, cached: 0 })
    assert.strictEqual(await balanceSettledAt(expected), expected)
  })

  it("generateContentStream, charged from the upstream's usage", async () => {
    const before = await balance()
    const stream = await genai().models.generateContentStream({ model: "claude-sonnet-4", contents })
    let text = ""
    let finish: string | undefined
    let prompt = 0
    let completion = 0
    for await (const chunk of stream) {
      text += chunk.text ?? ""
      finish = chunk.candidates?.[0]?.finishReason ?? finish
      prompt = chunk.usageMetadata?.promptTokenCount ?? prompt
      completion = chunk.usageMetadata?.candidatesTokenCount ?? completion
    }
    assert.strictEqual(text, "Hello from fake-upstream (model claude-sonnet-4). You said: Hello from a Gemini client")
    assert.strictEqual(finish, "STOP")
    assert.strictEqual(completion, text.split(" ").length)
    const expected = before - expectedCost({ prompt, completion, cached: 0 })
    assert.strictEqual(await balanceSettledAt(expected), expected)
  })

  const weather = {
    tools: [{
      functionDeclarations: [{
        name: "get_weather",
        parametersJsonSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
      }]
    }]
  }

  it("a functionCall with an id, and its functionResponse sent back as the matching tool_result", async () => {
    const question = "What is the weather in Paris?"
    const response = await genai().models.generateContent({
      model: "claude-tools",
      contents: question,
      config: weather
    })
    const call = response.functionCalls?.[0]
    assert.strictEqual(call?.name, "get_weather")
    assert.match(call?.id ?? "", /^toolu_fake\d+$/)
    assert.deepStrictEqual(call?.args, { city: question })

    const answer = await genai().models.generateContent({
      model: "claude-tools",
      config: weather,
      contents: [
        { role: "user", parts: [{ text: question }] },
        { role: "model", parts: [{ functionCall: call! }] },
        {
          role: "user",
          parts: [{ functionResponse: { id: call!.id!, name: "get_weather", response: { temperature: 21 } } }]
        }
      ]
    })
    assert.match(answer.text ?? "", /^The tool get_weather returned: .*21/)
    const messages =
      (lastAnthropicRequest().body as { messages: Array<{ role: string; content: Array<Record<string, unknown>> }> })
        .messages
    assert.deepStrictEqual(messages.map((m) => m.role), ["user", "assistant", "user"])
    assert.strictEqual(messages[1]!.content[0]!.id, call!.id)
    assert.strictEqual(messages[2]!.content[0]!.type, "tool_result")
    assert.strictEqual(messages[2]!.content[0]!.tool_use_id, call!.id)
  })

  it("a streamed functionCall with an id", async () => {
    const stream = await genai().models.generateContentStream({
      model: "claude-tools",
      contents: "weather?",
      config: weather
    })
    const calls: Array<
      { id?: string | undefined; name?: string | undefined; args?: Record<string, unknown> | undefined }
    > = []
    for await (const chunk of stream) calls.push(...(chunk.functionCalls ?? []))
    assert.strictEqual(calls.length, 1)
    assert.strictEqual(calls[0]!.name, "get_weather")
    assert.match(calls[0]!.id ?? "", /^toolu_fake\d+$/)
    assert.deepStrictEqual(calls[0]!.args, { city: "weather?" })
  })

  it("upstream 429 and 500 come back in Google's envelope", async () => {
    const post = (model: string, action: string) =>
      fetch(`${gateway.url}/v1beta/models/${model}:${action}`, {
        method: "POST",
        headers: { "x-goog-api-key": KEY, "content-type": "application/json" },
        body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hi" }] }] })
      })
    for (const action of ["generateContent", "streamGenerateContent?alt=sse"]) {
      const limited = await post("claude-limited", action)
      assert.strictEqual(limited.status, 429)
      const limitedBody = await limited.json() as { error: { code: number; status: string; message: string } }
      assert.strictEqual(limitedBody.error.code, 429)
      assert.strictEqual(limitedBody.error.status, "RESOURCE_EXHAUSTED")
      assert.match(limitedBody.error.message, /rate-limiting the gateway/)

      const broken = await post("claude-broken", action)
      assert.strictEqual(broken.status, 502)
      const brokenBody = await broken.json() as { error: { code: number; status: string; message: string } }
      assert.strictEqual(brokenBody.error.code, 502)
      assert.strictEqual(brokenBody.error.status, "UNAVAILABLE")
      assert.match(brokenBody.error.message, /HTTP 500/)
    }
    try {
      await genai().models.generateContent({ model: "claude-limited", contents })
      assert.fail("expected a rate limit")
    } catch (error) {
      assert.match(String(error), /RESOURCE_EXHAUSTED/)
    }
  })
})

describe("the channel probe on an anthropic channel", () => {
  const probe = async (name: string, model?: string) => {
    const channels =
      await (await fetch(`${gateway.url}/api/admin/channels`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } }))
        .json() as {
          data: Array<{ id: string; name: string }>
        }
    const id = channels.data.find((c) => c.name === name)!.id
    const response = await fetch(`${gateway.url}/api/admin/channels/${id}/test`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN_KEY}`, "content-type": "application/json" },
      body: JSON.stringify(model === undefined ? {} : { model })
    })
    assert.strictEqual(response.status, 200)
    return await response.json() as { ok: boolean; status: number | null; message: string }
  }

  it("sends one Messages request with max_tokens 1 and reports the answer", async () => {
    const result = await probe("claude", "claude-tools")
    assert.isTrue(result.ok)
    assert.strictEqual(result.status, 200)
    assert.match(result.message, /^claude-sonnet-4-tools answered/)
    const sent = lastAnthropicRequest()
    assert.strictEqual(sent.headers["x-api-key"], UPSTREAM_KEY)
    assert.deepStrictEqual(sent.body, {
      model: "claude-sonnet-4-tools",
      max_tokens: 1,
      messages: [{ role: "user", content: [{ type: "text", text: "ping" }] }]
    })
  })

  it("reports an upstream failure with the classified message", async () => {
    const result = await probe("claude-limited")
    assert.isFalse(result.ok)
    assert.strictEqual(result.status, 429)
    assert.match(result.message, /rate-limiting the gateway/)
  })
})
