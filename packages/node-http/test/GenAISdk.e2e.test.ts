/**
 * End to end with Google's official `@google/genai` SDK (API version v1beta)
 * against the real server: the models list, generateContent, streaming,
 * countTokens and embeddings, through a Gemini channel (relayed as is) and
 * through an OpenAI channel (translated), and errors in Google's envelope.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { GoogleGenAI } from "@google/genai"
import OpenAI from "openai"
import { KEY, NARROW_KEY, startGateway, type TestGateway } from "./support/Gateway.ts"

let gateway: TestGateway
const genai = (apiKey: string) =>
  new GoogleGenAI({ apiKey, httpOptions: { baseUrl: gateway.url, apiVersion: "v1beta" } })

beforeAll(async () => {
  gateway = await startGateway()
})
afterAll(async () => {
  await gateway.close()
})

const contents = "Hello from a Gemini client"

describe("@google/genai SDK", () => {
  it("lists the key's models as models/<id> with metadata", async () => {
    const pager = await genai(KEY).models.list({ config: { pageSize: 3 } })
    const names: Array<string> = []
    for await (const model of pager) {
      names.push(model.name ?? "")
      assert.isNumber(model.inputTokenLimit)
      assert.isNumber(model.outputTokenLimit)
      assert.include(model.supportedActions ?? [], "generateContent")
    }
    assert.include(names, "models/gemini-2.5-flash")
    assert.include(names, "models/gpt-4o-mini")
    const narrow: Array<string> = []
    for await (const model of await genai(NARROW_KEY).models.list()) narrow.push(model.name ?? "")
    assert.deepStrictEqual(narrow, ["models/gpt-4o-mini"])
    const one = await genai(KEY).models.get({ model: "gemini-2.5-flash" })
    assert.strictEqual(one.name, "models/gemini-2.5-flash")
  })

  for (
    const [label, model] of [["a Gemini channel", "gemini-2.5-flash"], ["an OpenAI channel", "gpt-4o-mini"]] as const
  ) {
    describe(`through ${label}`, () => {
      it("generateContent", async () => {
        const response = await genai(KEY).models.generateContent({ model, contents })
        assert.match(response.text ?? "", /Hello from fake-upstream|fake/i)
        assert.isAbove(response.usageMetadata?.totalTokenCount ?? 0, 0)
        assert.strictEqual(response.candidates?.[0]?.finishReason, "STOP")
      })

      it("generateContentStream", async () => {
        const stream = await genai(KEY).models.generateContentStream({ model, contents })
        let text = ""
        let finish: string | undefined
        let usage = 0
        for await (const chunk of stream) {
          text += chunk.text ?? ""
          finish = chunk.candidates?.[0]?.finishReason ?? finish
          usage = chunk.usageMetadata?.totalTokenCount ?? usage
        }
        assert.match(text, /fake/i)
        assert.strictEqual(finish, "STOP")
        assert.isAbove(usage, 0)
      })

      it("countTokens", async () => {
        const counted = await genai(KEY).models.countTokens({ model, contents })
        assert.isAbove(counted.totalTokens ?? 0, 0)
      })

      it("embedContent", async () => {
        const embedded = await genai(KEY).models.embedContent({ model, contents: ["one", "two"] })
        assert.strictEqual(embedded.embeddings?.length, 2)
        assert.isAbove(embedded.embeddings?.[0]?.values?.length ?? 0, 0)
      })
    })
  }

  it("answers a tool call through an OpenAI channel with a complete functionCall with an id", async () => {
    const response = await genai(KEY).models.generateContent({
      model: "tool-model",
      contents: "What is the weather in Paris?",
      config: {
        tools: [{
          functionDeclarations: [{
            name: "get_weather",
            parametersJsonSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
          }]
        }]
      }
    })
    const call = response.functionCalls?.[0]
    assert.strictEqual(call?.name, "get_weather")
    assert.isString(call?.id)
    assert.isObject(call?.args)
  })

  it("reports errors in Google's envelope", async () => {
    const raw = await fetch(`${gateway.url}/v1beta/models/gemini-2.5-flash:generateContent?key=wrong-key-123456`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hi" }] }] })
    })
    const body = await raw.json() as {
      error: { code: number; status: string; message: string; details: Array<{ reason?: string }> }
    }
    // Google answers a key it does not know with 400 INVALID_ARGUMENT and ErrorInfo API_KEY_INVALID (not 401).
    assert.strictEqual(raw.status, 400)
    assert.strictEqual(body.error.code, 400)
    assert.strictEqual(body.error.status, "INVALID_ARGUMENT")
    assert.strictEqual(body.error.details[0]?.reason, "API_KEY_INVALID")
    try {
      await genai(NARROW_KEY).models.generateContent({ model: "gemini-2.5-flash", contents })
      assert.fail("expected a refusal")
    } catch (error) {
      assert.match(String(error), /PERMISSION_DENIED/)
    }
  })

  it("answers a Gemini client on API version v1 with a 404 naming v1beta", async () => {
    const response = await fetch(`${gateway.url}/v1/models/gemini-2.5-flash:generateContent`, {
      method: "POST",
      headers: { "x-goog-api-key": KEY, "content-type": "application/json" },
      body: "{}"
    })
    assert.strictEqual(response.status, 404)
    const body = await response.json() as { error: { status: string; message: string } }
    assert.strictEqual(body.error.status, "NOT_FOUND")
    assert.match(body.error.message, /v1beta/)
  })
})

describe("openai SDK calling a model served by a Gemini channel", () => {
  const client = () => new OpenAI({ apiKey: KEY, baseURL: `${gateway.url}/v1`, maxRetries: 0 })

  it("non-stream and stream", async () => {
    const completion = await client().chat.completions.create({
      model: "gemini-2.5-flash",
      messages: [{ role: "user", content: "hi" }]
    })
    assert.match(completion.choices[0]!.message.content ?? "", /fake/i)
    assert.strictEqual(completion.choices[0]!.finish_reason, "stop")
    assert.strictEqual(completion.model, "gemini-2.5-flash")
    const stream = await client().chat.completions.create({
      model: "gemini-2.5-flash",
      messages: [{ role: "user", content: "hi" }],
      stream: true,
      stream_options: { include_usage: true }
    })
    let text = ""
    let usage: OpenAI.CompletionUsage | undefined
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? ""
      usage = chunk.usage ?? usage
    }
    assert.match(text, /fake/i)
    assert.isAbove(usage?.total_tokens ?? 0, 0)
  })

  const tools = [{
    type: "function" as const,
    function: {
      name: "get_weather",
      parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
    }
  }]

  it("with a tool call, its result, and the answer that uses it", async () => {
    const first = await client().chat.completions.create({
      model: "gemini-tool-model",
      messages: [{ role: "user", content: "weather in Paris?" }],
      tools
    })
    const call = first.choices[0]!.message.tool_calls?.[0]
    assert.strictEqual(first.choices[0]!.finish_reason, "tool_calls")
    assert.strictEqual(call?.type === "function" ? call.function.name : undefined, "get_weather")
    assert.isString(call?.id)
    const args = JSON.parse(call?.type === "function" ? call.function.arguments : "null") as unknown
    assert.isObject(args)
    const second = await client().chat.completions.create({
      model: "gemini-tool-model",
      tools,
      messages: [
        { role: "user", content: "weather in Paris?" },
        first.choices[0]!.message,
        { role: "tool", tool_call_id: call!.id, content: "{\"temperature\": 21}" }
      ]
    })
    assert.strictEqual(second.choices[0]!.finish_reason, "stop")
    assert.include(second.choices[0]!.message.content ?? "", "21")
    // The Gemini upstream got a functionResponse paired with the call's name.
    const sent = gateway.upstream.requests.at(-1)!.body as {
      contents: Array<{ parts: Array<{ functionResponse?: { name: string } }> }>
    }
    const response = sent.contents.flatMap((c) => c.parts).find((p) => p.functionResponse !== undefined)
    assert.strictEqual(response?.functionResponse?.name, "get_weather")
  })

  it("with a streamed tool call", async () => {
    const stream = await client().chat.completions.create({
      model: "gemini-tool-model",
      messages: [{ role: "user", content: "weather?" }],
      tools,
      stream: true
    })
    let name = ""
    let args = ""
    let finish: string | null = null
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta.tool_calls?.[0]
      name += delta?.function?.name ?? ""
      args += delta?.function?.arguments ?? ""
      finish = chunk.choices[0]?.finish_reason ?? finish
    }
    assert.strictEqual(name, "get_weather")
    assert.isObject(JSON.parse(args))
    assert.strictEqual(finish, "tool_calls")
  })
})
