/**
 * Translation between the dialects through the real server, against a fake
 * upstream that is strict where the real ones are: Gemini 3 thought
 * signatures kept across turns for OpenAI clients (the fake refuses a missing
 * or forged one), tool names, JSON mode, reasoning settings and earlier
 * reasoning that an OpenAI upstream would refuse, Google-shaped errors from an
 * OpenAI channel, what cannot be translated refused by name, and embeddings
 * through an OpenAI channel.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { GoogleGenAI } from "@google/genai"
import { Identifiers } from "@modelgate/openai-adapter"
import OpenAI from "openai"
import type { ConfigFile } from "../src/ConfigFile.ts"
import { startGateway, type TestGateway } from "./support/Gateway.ts"

const KEY = "sk-cross-dialect-000000000000000000000000000"

const config = (upstream: string): ConfigFile => ({
  listen: "127.0.0.1:0",
  log_level: "error",
  channels: [
    {
      name: "gemini",
      type: "gemini",
      base_url: upstream,
      api_key: "g",
      models: ["gemini-3-tools", "gemini-2.5-flash"],
      model_map: { "gemini-3-tools": "gemini-3-pro-preview-tools" }
    },
    {
      name: "openai",
      type: "openai",
      base_url: `${upstream}/v1`,
      api_key: "k",
      models: [
        "gpt-4o-mini",
        "o3-mini",
        "tool-model",
        "vllm-model",
        "rejecting-model",
        "broken-model",
        "limited-model",
        "text-embedding-3-small"
      ],
      model_map: {
        "tool-model": "gpt-tools",
        "vllm-model": "my-vllm-model",
        "rejecting-model": "gpt-fail-400",
        "broken-model": "gpt-fail-500",
        "limited-model": "gpt-fail-429"
      }
    }
  ],
  models: {
    "gemini-3-tools": { input: 1, output: 1, reasoning: true },
    "gemini-2.5-flash": { input: 1, output: 1 },
    "gpt-4o-mini": { input: 1, output: 1 },
    "o3-mini": { input: 1, output: 1, reasoning: true },
    "tool-model": { input: 1, output: 1 },
    "vllm-model": { input: 1, output: 1, reasoning_content: true },
    "rejecting-model": { input: 1, output: 1 },
    "broken-model": { input: 1, output: 1 },
    "limited-model": { input: 1, output: 1 },
    "text-embedding-3-small": { input: 0.02, embedding: true }
  },
  users: [{ name: "xena", balance: 10, keys: [{ name: "k", secret: KEY }] }]
})

let gateway: TestGateway
beforeAll(async () => {
  gateway = await startGateway(config)
})
afterAll(async () => {
  await gateway.close()
})

const openai = () => new OpenAI({ apiKey: KEY, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
const genai = () => new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl: gateway.url, apiVersion: "v1beta" } })

const gemini = (model: string, body: unknown, action = "generateContent") =>
  fetch(`${gateway.url}/v1beta/models/${model}:${action}`, {
    method: "POST",
    headers: { "x-goog-api-key": KEY, "content-type": "application/json" },
    body: JSON.stringify(body)
  })

interface GeminiError {
  readonly error: {
    readonly code: number
    readonly status: string
    readonly message: string
    readonly details?: Array<Record<string, unknown>>
  }
}

/** The body the fake upstream received last (the gateway's translation). */
const lastSent = () => gateway.upstream.requests.at(-1)!.body as Record<string, any>

const weather = [{
  type: "function" as const,
  function: {
    name: "get_weather",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
  }
}]

describe("an OpenAI client of a Gemini 3 model keeps its thought signatures across turns", () => {
  const upstreamCall = () => {
    const sent = lastSent() as {
      contents: Array<
        { role: string; parts: Array<{ functionCall?: { id?: string; name: string }; thoughtSignature?: string }> }
      >
    }
    return sent.contents.filter((c) => c.role === "model").flatMap((c) => c.parts).find((p) =>
      p.functionCall !== undefined
    )
  }

  it("non-stream: the signature rides in the tool-call id and is sent back to Gemini, not the placeholder", async () => {
    const question = [{ role: "user" as const, content: "Weather in Paris?" }]
    const first = await openai().chat.completions.create({
      model: "gemini-3-tools",
      messages: question,
      tools: weather
    })
    const message = first.choices[0]!.message
    const call = message.tool_calls![0]!
    assert.strictEqual(first.choices[0]!.finish_reason, "tool_calls")
    const { id, signature } = Identifiers.unsignCallId(call.id)
    assert.isString(signature, "the id carries the signature")
    const second = await openai().chat.completions.create({
      model: "gemini-3-tools",
      tools: weather,
      messages: [...question, message, { role: "tool", tool_call_id: call.id, content: "{\"temperature\":21}" }]
    })
    assert.strictEqual(second.choices[0]!.finish_reason, "stop")
    assert.include(second.choices[0]!.message.content ?? "", "21")
    const sentCall = upstreamCall()!
    assert.strictEqual(sentCall.thoughtSignature, signature)
    assert.notStrictEqual(sentCall.thoughtSignature, "skip_thought_signature_validator")
    assert.strictEqual(sentCall.functionCall!.id, id)
  })

  it("stream: the streamed call's id carries the signature too", async () => {
    const question = [{ role: "user" as const, content: "Weather in Rome?" }]
    const stream = await openai().chat.completions.create({
      model: "gemini-3-tools",
      messages: question,
      tools: weather,
      stream: true
    })
    let callId = ""
    let name = ""
    let args = ""
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta.tool_calls?.[0]
      callId += delta?.id ?? ""
      name += delta?.function?.name ?? ""
      args += delta?.function?.arguments ?? ""
    }
    const signature = Identifiers.unsignCallId(callId).signature
    assert.isString(signature)
    const answer = await openai().chat.completions.create({
      model: "gemini-3-tools",
      tools: weather,
      stream: true,
      messages: [
        ...question,
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: callId, type: "function", function: { name, arguments: args } }]
        },
        { role: "tool", tool_call_id: callId, content: "sunny" }
      ]
    })
    let text = ""
    for await (const chunk of answer) text += chunk.choices[0]?.delta.content ?? ""
    assert.include(text, "sunny")
    assert.strictEqual(upstreamCall()!.thoughtSignature, signature)
  })

  it("a call whose id carries no signature (made up by the client) gets Google's documented placeholder", async () => {
    const answer = await openai().chat.completions.create({
      model: "gemini-3-tools",
      tools: weather,
      messages: [
        { role: "user", content: "Weather?" },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "call_mine", type: "function", function: { name: "get_weather", arguments: "{}" } }]
        },
        { role: "tool", tool_call_id: "call_mine", content: "rain" }
      ]
    })
    assert.include(answer.choices[0]!.message.content ?? "", "rain")
    assert.strictEqual(upstreamCall()!.thoughtSignature, "skip_thought_signature_validator")
  })
})

describe("a Gemini client of an OpenAI model gets what OpenAI would refuse translated", () => {
  it("tool names with '.' and ':' are escaped for OpenAI and given back as they were", async () => {
    const response = await genai().models.generateContent({
      model: "tool-model",
      contents: "Find issue 12",
      config: {
        tools: [{
          functionDeclarations: [{
            name: "github.get_issue",
            parametersJsonSchema: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] }
          }]
        }]
      }
    })
    assert.strictEqual(response.functionCalls?.[0]?.name, "github.get_issue")
    const sent = lastSent() as { tools: Array<{ function: { name: string } }> }
    assert.match(sent.tools[0]!.function.name, /^[a-zA-Z0-9_-]{1,64}$/)
  })

  it("JSON mode tells OpenAI to answer in JSON", async () => {
    const response = await gemini("gpt-4o-mini", {
      contents: [{ role: "user", parts: [{ text: "List three colours" }] }],
      generationConfig: { responseMimeType: "application/json" }
    })
    assert.strictEqual(response.status, 200)
    const sent = lastSent() as { response_format: unknown; messages: Array<{ role: string; content: string }> }
    assert.deepStrictEqual(sent.response_format, { type: "json_object" })
    assert.isTrue(sent.messages.some((m) => m.role === "system" && /json/i.test(m.content)))
  })

  it("a thinking budget reaches only reasoning models; topK and includeThoughts are hints OpenAI has no field for", async () => {
    const body = {
      contents: [{ role: "user", parts: [{ text: "Think." }] }],
      generationConfig: { topK: 64, thinkingConfig: { thinkingBudget: 8192, includeThoughts: true } }
    }
    assert.strictEqual((await gemini("gpt-4o-mini", body)).status, 200)
    assert.notProperty(lastSent(), "reasoning_effort")
    assert.notProperty(lastSent(), "top_k")
    assert.strictEqual((await gemini("o3-mini", body)).status, 200)
    assert.strictEqual(lastSent().reasoning_effort, "medium")
  })

  it("earlier thoughts are sent back only to an upstream that takes reasoning_content", async () => {
    const body = {
      contents: [
        { role: "user", parts: [{ text: "Hi" }] },
        { role: "model", parts: [{ text: "Let me think.", thought: true }, { text: "Hello!" }] },
        { role: "user", parts: [{ text: "Again" }] }
      ]
    }
    assert.strictEqual((await gemini("gpt-4o-mini", body)).status, 200)
    assert.isFalse((lastSent().messages as Array<Record<string, unknown>>).some((m) => "reasoning_content" in m))
    assert.strictEqual((await gemini("vllm-model", body)).status, 200)
    assert.isTrue(
      (lastSent().messages as Array<Record<string, unknown>>).some((m) => m.reasoning_content === "Let me think.")
    )
  })

  it("a failed tool's result keeps its error", async () => {
    const response = await gemini("gpt-4o-mini", {
      contents: [
        { role: "user", parts: [{ text: "Weather?" }] },
        { role: "model", parts: [{ functionCall: { name: "get_weather", args: {} } }] },
        { role: "user", parts: [{ functionResponse: { name: "get_weather", response: { error: "service down" } } }] }
      ]
    })
    assert.strictEqual(response.status, 200)
    const tool = (lastSent().messages as Array<{ role: string; content: string }>).find((m) => m.role === "tool")!
    assert.deepStrictEqual(JSON.parse(tool.content), { error: "service down" })
  })

  it("a field Google does not define is answered as Google would, naming it", async () => {
    const response = await gemini("gpt-4o-mini", {
      contents: [{ role: "user", parts: [{ text: "x" }] }],
      generationConfig: { temprature: 1 }
    })
    assert.strictEqual(response.status, 400)
    const body = await response.json() as GeminiError
    assert.strictEqual(body.error.status, "INVALID_ARGUMENT")
    assert.match(body.error.message, /Unknown name "temprature"/)
    assert.deepStrictEqual(body.error.details?.[0]?.fieldViolations, [{
      field: "generationConfig.temprature",
      description: body.error.message
    }])
  })

  it("upstream errors come back in Google's envelope", async () => {
    const contents = [{ role: "user", parts: [{ text: "x" }] }]
    const rejected = await gemini("rejecting-model", { contents })
    assert.strictEqual(rejected.status, 400)
    const rejection = await rejected.json() as GeminiError
    assert.strictEqual(rejection.error.code, 400)
    assert.strictEqual(rejection.error.status, "INVALID_ARGUMENT")
    assert.match(rejection.error.message, /simulated HTTP 400/)
    const broken = await gemini("broken-model", { contents })
    assert.strictEqual(broken.status, 502)
    assert.strictEqual((await broken.json() as GeminiError).error.status, "UNAVAILABLE")
    const limited = await gemini("limited-model", { contents })
    assert.strictEqual(limited.status, 429)
    const limit = await limited.json() as GeminiError
    assert.strictEqual(limit.error.status, "RESOURCE_EXHAUSTED")
    assert.deepStrictEqual(limit.error.details, [{
      "@type": "type.googleapis.com/google.rpc.RetryInfo",
      retryDelay: "1s"
    }])
    assert.strictEqual(limited.headers.get("retry-after"), "1")
    // The same through the SDK, streaming.
    try {
      const stream = await genai().models.generateContentStream({ model: "rejecting-model", contents: "x" })
      for await (const _ of stream) void _
      assert.fail("expected a rejection")
    } catch (error) {
      assert.match(String(error), /INVALID_ARGUMENT/)
    }
  })
})

describe("what cannot be translated is refused by name", () => {
  it("an OpenAI client asking a Gemini model for log probabilities, audio or web search", async () => {
    for (
      const [extra, param] of [
        [{ logprobs: true, top_logprobs: 2 }, "logprobs"],
        [{ modalities: ["text", "audio"], audio: { voice: "alloy", format: "wav" } }, "modalities"],
        [{ web_search_options: {} }, "web_search_options"]
      ] as const
    ) {
      try {
        await openai().chat.completions.create(
          { model: "gemini-2.5-flash", messages: [{ role: "user", content: "hi" }], ...extra } as never
        )
        assert.fail(`expected a refusal of ${param}`)
      } catch (error) {
        assert.instanceOf(error, OpenAI.BadRequestError)
        assert.strictEqual((error as InstanceType<typeof OpenAI.BadRequestError>).param, param)
      }
    }
    // What Gemini can carry is carried: n -> candidateCount.
    await openai().chat.completions.create({
      model: "gemini-2.5-flash",
      messages: [{ role: "user", content: "hi" }],
      n: 2
    })
    assert.strictEqual(lastSent().generationConfig.candidateCount, 2)
  })
})

describe("embeddings through an OpenAI channel", () => {
  it("outputDimensionality becomes dimensions, and a part that is not text is refused by name", async () => {
    const embedded = await genai().models.embedContent({
      model: "text-embedding-3-small",
      contents: ["one", "two"],
      config: { outputDimensionality: 8 }
    })
    assert.deepStrictEqual(embedded.embeddings?.map((e) => e.values?.length), [8, 8])
    assert.strictEqual(lastSent().dimensions, 8)
    const image = await gemini("text-embedding-3-small", {
      content: { parts: [{ text: "a cat" }, { inlineData: { mimeType: "image/png", data: "iVBORw0KGgo=" } }] }
    }, "embedContent")
    assert.strictEqual(image.status, 400)
    const refusal = await image.json() as GeminiError
    assert.strictEqual(refusal.error.status, "INVALID_ARGUMENT")
    assert.include(refusal.error.message, "content.parts[1]")
    const mixed = await gemini("text-embedding-3-small", {
      requests: [
        { model: "models/text-embedding-3-small", content: { parts: [{ text: "a" }] }, outputDimensionality: 8 },
        { model: "models/text-embedding-3-small", content: { parts: [{ text: "b" }] }, outputDimensionality: 16 }
      ]
    }, "batchEmbedContents")
    assert.strictEqual(mixed.status, 400)
    assert.include((await mixed.json() as GeminiError).error.message, "requests[1].outputDimensionality")
  })
})
