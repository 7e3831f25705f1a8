/**
 * Google Vertex AI and AWS Bedrock channels through the real server, with
 * the real SDKs (openai: chat completions and Responses; @google/genai;
 * @anthropic-ai/sdk), against the fake upstream's strict clouds (Vertex's
 * token endpoint checks the JWT's RS256 signature and claims, its model
 * endpoints only tokens it issued; Bedrock recomputes every SigV4 signature
 * and streams real event-stream frames): Gemini and Claude on Vertex, Claude
 * and Nova on Bedrock (signed, and with a Bedrock API key), from every front
 * door, stream and not, a tool call and its result each time; embeddings
 * (Gemini's embedding model on Vertex, Titan and Cohere on Bedrock) from the
 * openai and genai SDKs; token counts on Bedrock from the Anthropic and genai
 * SDKs. The books:
 * one usage record per call, each charged its tokens at the operator's
 * prices, and the balance down by exactly their sum.
 */
import Anthropic from "@anthropic-ai/sdk"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { GoogleGenAI } from "@google/genai"
import { TEST_API_KEY, TEST_CREDENTIALS } from "@modelgate/fake-upstream"
import { Effect } from "effect"
import OpenAI from "openai"
import type { ConfigFile } from "../src/ConfigFile.ts"
import { runSql, settledBooks } from "./support/Databases.ts"
import { startGateway, type TestGateway } from "./support/Gateway.ts"

const KEY = "sk-clouds-e2e-0000000000000000000000000000"

/** USD per million tokens, every kind of prompt token alike: a call costs prompt × 1 + completion × 2 micro-USD. */
const PRICE = { input: 1, output: 2, cached_input: 1, cache_write: 1 }

const MODELS = ["gemini-vertex", "claude-vertex", "claude-bedrock", "nova-bedrock"] as const
/** Embedding models: Gemini's on Vertex (`:predict`), Titan and Cohere on Bedrock (`InvokeModel`). */
const EMBEDDERS = ["embed-vertex", "titan-bedrock", "cohere-bedrock"] as const

/** Titan on Bedrock, whose third request (of three texts) fails: alone (`titan-parts`), or failing over to another channel. */
const PARTS = ["titan-parts", "titan-failover"] as const
const FAIL = "zzfailpartzz"
const PART_TEXTS = ["The quick brown fox", "jumps over the lazy dog", `and ${FAIL}`]
/** The tokens Bedrock (the fake: a quarter of the characters, rounded up) counts for the texts. */
const tokensOf = (texts: ReadonlyArray<string>) => texts.reduce((n, text) => n + Math.ceil(text.length / 4), 0)

let gateway: TestGateway
let calls = 0

beforeAll(async () => {
  gateway = await startGateway((upstream, fake): ConfigFile => ({
    listen: "127.0.0.1:0",
    log_level: "error",
    usage: { flush_interval_ms: 20 },
    channels: [
      {
        name: "vertex",
        type: "vertex",
        base_url: upstream,
        // The fake calls a tool whenever tools are offered (and answers their results).
        headers: { "x-fake-tool-call": "1" },
        project: "fake-project",
        location: "us-east5",
        credentials: fake.vertexKeyFile(),
        models: ["gemini-vertex", "claude-vertex", "embed-vertex"],
        model_map: {
          "gemini-vertex": "gemini-2.5-flash",
          "claude-vertex": "claude-sonnet-4-5@20250929",
          "embed-vertex": "gemini-embedding-001"
        }
      },
      {
        name: "bedrock",
        type: "bedrock",
        base_url: upstream,
        headers: { "x-fake-tool-call": "1" },
        region: "us-east-1",
        access_key_id: TEST_CREDENTIALS.accessKeyId,
        secret_access_key: TEST_CREDENTIALS.secretAccessKey,
        models: ["claude-bedrock", "titan-bedrock", "titan-failover"],
        model_map: {
          "claude-bedrock": "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
          "titan-bedrock": "amazon.titan-embed-text-v2:0",
          "titan-failover": "amazon.titan-embed-text-v2:0"
        }
      },
      {
        // Fails the one request (of the several an embeddings call is sent in) whose text holds `FAIL`.
        name: "bedrock-failing",
        type: "bedrock",
        base_url: upstream,
        headers: { "x-fake-fail-on": FAIL },
        priority: 10,
        breaker: { consecutive_failures: 1000 },
        region: "us-east-1",
        access_key_id: TEST_CREDENTIALS.accessKeyId,
        secret_access_key: TEST_CREDENTIALS.secretAccessKey,
        models: ["titan-parts", "titan-failover"],
        model_map: { "titan-parts": "amazon.titan-embed-text-v2:0", "titan-failover": "amazon.titan-embed-text-v2:0" }
      },
      {
        name: "bedrock-api-key",
        type: "bedrock",
        base_url: upstream,
        headers: { "x-fake-tool-call": "1" },
        region: "us-east-1",
        api_key: TEST_API_KEY,
        models: ["nova-bedrock", "cohere-bedrock"],
        model_map: { "nova-bedrock": "amazon.nova-pro-v1:0", "cohere-bedrock": "cohere.embed-english-v3" }
      }
    ],
    models: {
      ...Object.fromEntries(MODELS.map((model) => [model, PRICE])),
      ...Object.fromEntries([...EMBEDDERS, ...PARTS].map((model) => [model, { ...PRICE, embedding: true }]))
    },
    users: [{ name: "cloe", balance: 100, keys: [{ name: "k", secret: KEY }] }]
  }))
})
afterAll(async () => {
  await gateway?.close()
})

const openai = () => new OpenAI({ apiKey: KEY, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
const genai = () => new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl: gateway.url, apiVersion: "v1beta" } })
const anthropic = () => new Anthropic({ apiKey: KEY, baseURL: gateway.url, maxRetries: 0 })

const CITY = { type: "object", properties: { city: { type: "string" } }, required: ["city"] } as const

describe.each(MODELS)("%s", (model) => {
  it("OpenAI chat completions: a tool call, then its result answered in a stream", async () => {
    const tools = [{ type: "function" as const, function: { name: "get_weather", parameters: CITY } }]
    const messages: Array<OpenAI.ChatCompletionMessageParam> = [{ role: "user", content: "Weather in Paris?" }]
    const first = await openai().chat.completions.create({ model, messages, tools })
    calls++
    const call = first.choices[0]!.message.tool_calls?.[0]
    assert.strictEqual(first.choices[0]!.finish_reason, "tool_calls")
    assert.strictEqual(call?.type === "function" ? call.function.name : undefined, "get_weather")
    assert.isAbove(first.usage!.prompt_tokens, 0)
    const stream = await openai().chat.completions.create({
      model,
      tools,
      stream: true,
      stream_options: { include_usage: true },
      messages: [...messages, first.choices[0]!.message, {
        role: "tool",
        tool_call_id: call!.id,
        content: "21 degrees"
      }]
    })
    let text = ""
    let usage: OpenAI.CompletionUsage | undefined | null
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? ""
      if (chunk.usage !== undefined && chunk.usage !== null) usage = chunk.usage
    }
    calls++
    assert.strictEqual(text, "The tool get_weather returned: 21 degrees")
    assert.isAbove(usage!.completion_tokens, 0)
  })

  it("OpenAI Responses: a function call, then its result answered in a stream", async () => {
    const tools = [{ type: "function" as const, name: "get_weather", parameters: CITY, strict: false }]
    const first = await openai().responses.create({ model, input: "Weather in Paris?", tools })
    calls++
    const call = first.output.find((item) => item.type === "function_call")
    assert.strictEqual(call?.type === "function_call" ? call.name : undefined, "get_weather")
    const stream = await openai().responses.create({
      model,
      tools,
      stream: true,
      input: [
        { role: "user", content: "Weather in Paris?" },
        call as OpenAI.Responses.ResponseFunctionToolCall,
        {
          type: "function_call_output",
          call_id: (call as OpenAI.Responses.ResponseFunctionToolCall).call_id,
          output: "21 degrees"
        }
      ]
    })
    let completed: OpenAI.Responses.Response | undefined
    let text = ""
    for await (const event of stream) {
      if (event.type === "response.output_text.delta") text += event.delta
      if (event.type === "response.completed") completed = event.response
    }
    calls++
    assert.strictEqual(text, "The tool get_weather returned: 21 degrees")
    assert.strictEqual(completed?.status, "completed")
    assert.isAbove(completed?.usage?.output_tokens ?? 0, 0)
  })

  it("@google/genai: a function call, then its result answered in a stream", async () => {
    const config = { tools: [{ functionDeclarations: [{ name: "get_weather", parametersJsonSchema: CITY }] }] }
    const first = await genai().models.generateContent({ model, contents: "Weather in Paris?", config })
    calls++
    const call = first.functionCalls?.[0]
    assert.strictEqual(call?.name, "get_weather")
    const stream = await genai().models.generateContentStream({
      model,
      config,
      contents: [
        { role: "user", parts: [{ text: "Weather in Paris?" }] },
        { role: "model", parts: first.candidates![0]!.content!.parts! },
        {
          role: "user",
          parts: [{
            functionResponse: {
              ...(call!.id === undefined ? {} : { id: call!.id }),
              name: "get_weather",
              response: { output: "21 degrees" }
            }
          }]
        }
      ]
    })
    let text = ""
    let tokens = 0
    for await (const chunk of stream) {
      text += chunk.text ?? ""
      tokens = chunk.usageMetadata?.totalTokenCount ?? tokens
    }
    calls++
    assert.include(text, "The tool get_weather returned:")
    assert.isAbove(tokens, 0)
  })

  it("@anthropic-ai/sdk: a tool_use, then its tool_result answered in a stream", async () => {
    const tools: Array<Anthropic.Tool> = [{
      name: "get_weather",
      input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
    }]
    const first = await anthropic().messages.create({
      model,
      max_tokens: 256,
      tools,
      messages: [{ role: "user", content: "Weather in Paris?" }]
    })
    calls++
    assert.strictEqual(first.stop_reason, "tool_use")
    const call = first.content.find((block): block is Anthropic.ToolUseBlock => block.type === "tool_use")!
    assert.strictEqual(call.name, "get_weather")
    const stream = anthropic().messages.stream({
      model,
      max_tokens: 256,
      tools,
      messages: [
        { role: "user", content: "Weather in Paris?" },
        { role: "assistant", content: first.content },
        { role: "user", content: [{ type: "tool_result", tool_use_id: call.id, content: "21 degrees" }] }
      ]
    })
    const answer = await stream.finalMessage()
    calls++
    assert.strictEqual(answer.stop_reason, "end_turn")
    assert.strictEqual(
      answer.content.map((block) => block.type === "text" ? block.text : "").join(""),
      "The tool get_weather returned: 21 degrees"
    )
    assert.isAbove(answer.usage.output_tokens, 0)
  })
})

describe.each(EMBEDDERS)("%s", (model) => {
  it("embeddings from the openai SDK and @google/genai, several texts each", async () => {
    const texts = ["The quick brown fox", "jumps over the lazy dog", "and runs away"]
    const made = await openai().embeddings.create({ model, input: texts, encoding_format: "float" })
    calls++
    assert.strictEqual(made.data.length, 3)
    assert.isAbove(made.usage.prompt_tokens, 0)
    assert.notDeepEqual(made.data[0]!.embedding, made.data[1]!.embedding)
    const embedded = await genai().models.embedContent({ model, contents: texts.slice(0, 2) })
    calls++
    assert.strictEqual(embedded.embeddings?.length, 2)
    assert.isAbove(embedded.embeddings![0]!.values!.length, 0)
  })
})

describe("token counts on Bedrock, from the SDKs", () => {
  it("Anthropic's countTokens and Gemini's countTokens are Bedrock's CountTokens, never billed", async () => {
    const counted = await anthropic().messages.countTokens({
      model: "claude-bedrock",
      messages: [{ role: "user", content: "How many tokens is this?" }]
    })
    assert.strictEqual(counted.input_tokens, Math.ceil(24 / 4))
    const total = await genai().models.countTokens({ model: "nova-bedrock", contents: "Count these words for me" })
    assert.strictEqual(total.totalTokens, Math.ceil("Count these words for me".length / 4))
  })
})

describe("Titan embeddings whose third request fails", () => {
  it("a 502 charged the two texts answered before it; failover charged both upstreams' bills", async () => {
    const failed = await openai().embeddings.create({ model: "titan-parts", input: PART_TEXTS }).catch((e) => e)
    calls++
    assert.instanceOf(failed, OpenAI.APIError)
    assert.strictEqual((failed as InstanceType<typeof OpenAI.APIError>).status, 502)
    const words = `2 of 3 texts were answered (and billed by the upstream) before attempt 1 failed: charged ${
      tokensOf(PART_TEXTS.slice(0, 2))
    } tokens for them.`
    assert.include((failed as Error).message, words)
    const served = await openai().embeddings.create({
      model: "titan-failover",
      input: PART_TEXTS,
      encoding_format: "float"
    })
    calls++
    assert.strictEqual(served.data.length, 3)
    assert.strictEqual(served.usage.prompt_tokens, tokensOf(PART_TEXTS))
    let notes: ReadonlyArray<unknown> = []
    for (let i = 0; i < 200 && notes.length < PARTS.length; i++) {
      notes = await runSql(gateway.database, (sql) =>
        Effect.map(
          sql`SELECT note FROM usage_records WHERE model IN ('titan-parts', 'titan-failover')`,
          (rows) => rows.map((row) => row.note)
        ))
      if (notes.length < PARTS.length) await new Promise((resolve) => setTimeout(resolve, 50))
    }
    assert.strictEqual(notes.length, PARTS.length)
    for (const note of notes) assert.include(note as string, words)
  })
})

describe("the books", () => {
  it("one usage record per call, each charged its tokens at the operator's prices, the balance down by their sum", async () => {
    assert.strictEqual(calls, MODELS.length * 8 + EMBEDDERS.length * 2 + PARTS.length)
    const books = await settledBooks(gateway.database, "cloe")
    interface Row {
      readonly model: string
      readonly channel: string
      readonly status: number
      readonly prompt: number
      readonly completion: number
      readonly cost: bigint
      readonly reported: boolean
    }
    let records: ReadonlyArray<Row> = []
    for (let i = 0; i < 200 && records.length < calls; i++) {
      records = await runSql(gateway.database, (sql) =>
        Effect.map(
          sql`SELECT model, channel, status, prompt_tokens, completion_tokens, cost_nanos, usage_reported
            FROM usage_records ORDER BY created_at`,
          (rows) =>
            rows.map((row): Row => ({
              model: row.model as string,
              channel: row.channel as string,
              status: Number(row.status),
              prompt: Number(row.prompt_tokens),
              completion: Number(row.completion_tokens),
              cost: BigInt(row.cost_nanos as bigint),
              reported: Boolean(row.usage_reported)
            }))
        ))
      if (records.length < calls) await new Promise((resolve) => setTimeout(resolve, 50))
    }
    assert.strictEqual(records.length, calls)
    let spent = 0n
    for (const record of records) {
      assert.strictEqual(
        record.status,
        record.model === "titan-parts" ? 502 : 200,
        `${record.model} on ${record.channel}`
      )
      assert.isTrue(record.reported, `${record.model}: the upstream's own usage`)
      assert.isAbove(record.prompt, 0)
      assert.strictEqual(record.cost, BigInt(record.prompt) * 1_000n + BigInt(record.completion) * 2_000n)
      spent += record.cost
    }
    for (const model of MODELS) assert.strictEqual(records.filter((r) => r.model === model).length, 8, model)
    for (const model of EMBEDDERS) {
      const made = records.filter((r) => r.model === model)
      assert.strictEqual(made.length, 2, model)
      for (const record of made) assert.strictEqual(record.completion, 0, model)
    }
    // The texts answered before the third failed are charged: alone, and with the serving attempt's.
    const answered = tokensOf(PART_TEXTS.slice(0, 2))
    assert.deepStrictEqual(records.filter((r) => r.model === "titan-parts").map((r) => r.prompt), [answered])
    assert.deepStrictEqual(
      records.filter((r) => r.model === "titan-failover").map((r) => [r.channel, r.prompt]),
      [["bedrock", tokensOf(PART_TEXTS) + answered]]
    )
    assert.strictEqual(books.balance, 100_000_000_000n - spent)
    assert.strictEqual(books.balance, books.ledger)
  })
})
