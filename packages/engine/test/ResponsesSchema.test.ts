/**
 * Every Responses object and stream event the gateway writes validates
 * against OpenAI's published schema (`Response`, `ResponseStreamEvent`),
 * whether translated from another dialect (OpenAI chat, Gemini, Anthropic
 * channels) or relayed from a Responses upstream; and the relay records every
 * usage figure its upstream reports (reasoning and cached tokens).
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import type { UsageLog } from "@modelgate/core"
import { type FakeUpstreamServer, startFakeUpstream } from "@modelgate/fake-upstream"
import { toWebHandler, type WebHandler } from "../src/host/WebHandler.ts"
import * as OpenAISchema from "./support/OpenAISchema.ts"

const KEY = "sk-responses-schema-0000000000000000"

let fake: FakeUpstreamServer
let gateway: WebHandler

beforeAll(async () => {
  fake = await startFakeUpstream()
  gateway = await toWebHandler({
    routing: { probe_interval_ms: 600_000 },
    channels: [
      { name: "openai", type: "openai", base_url: `${fake.url}/v1`, api_key: "sk-up-1111", models: ["gpt-4o-mini"] },
      { name: "gemini", type: "gemini", base_url: fake.url, api_key: "g-up-2222", models: ["gemini-2.5-flash"] },
      {
        name: "claude",
        type: "anthropic",
        base_url: fake.url,
        api_key: "a-up-3333",
        models: ["claude-sonnet-4-5"]
      },
      {
        name: "relay",
        type: "openai",
        base_url: `${fake.url}/v1`,
        api_key: "sk-up-4444",
        responses: true,
        models: ["gpt-5"],
        model_map: { "gpt-5": "gpt-5-thinking" }
      }
    ],
    models: Object.fromEntries(
      ["gpt-4o-mini", "gemini-2.5-flash", "claude-sonnet-4-5", "gpt-5"].map((id) => [id, { input: 1, output: 2 }])
    ),
    users: [{ name: "alice", balance: 100, keys: [{ name: "main", secret: KEY }] }]
  })
})

afterAll(async () => {
  await gateway?.dispose()
  await fake?.close()
})

const respond = (model: string, stream: boolean) =>
  gateway.handler(
    new Request("http://gateway.test/v1/responses", {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ model, stream, input: "Think, then say hello", reasoning: { effort: "low" } })
    })
  )

const recordOf = async (requestId: string): Promise<UsageLog.UsageRecord> => {
  for (let i = 0; i < 200; i++) {
    const record = gateway.inspect!.usage().find((r) => r.requestId === requestId)
    if (record !== undefined) return record
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  throw new Error(`no usage record for ${requestId}`)
}

const events = (text: string): Array<Record<string, unknown>> =>
  text.split("\n\n").flatMap((frame) => {
    const data = frame.split("\n").find((line) => line.startsWith("data: "))
    return data === undefined || data === "data: [DONE]" ? [] : [JSON.parse(data.slice(6))]
  })

describe.skipIf(!OpenAISchema.available())("Responses answers against OpenAI's published schema", () => {
  const response = OpenAISchema.validator("Response")
  const event = OpenAISchema.validator("ResponseStreamEvent")

  for (const model of ["gpt-4o-mini", "gemini-2.5-flash", "claude-sonnet-4-5", "gpt-5"]) {
    it(`${model}: the response object and every stream event validate`, async () => {
      const plain = await respond(model, false)
      assert.strictEqual(plain.status, 200)
      const body = await plain.json()
      assert.deepStrictEqual(response(body), [], JSON.stringify(body))

      const streamed = await respond(model, true)
      assert.strictEqual(streamed.status, 200)
      const all = events(await streamed.text())
      assert.isAbove(all.length, 2)
      for (const one of all) assert.deepStrictEqual(event(one), [], JSON.stringify(one))
      const created = all.find((e) => e["type"] === "response.created")!["response"] as Record<string, unknown>
      assert.notProperty(created, "usage", "no usage (and no null) before the end")
    })
  }

  it("the Responses relay records the reasoning and cached tokens its upstream reports, streamed or not", async () => {
    for (const stream of [false, true]) {
      const answer = await respond("gpt-5", stream)
      const text = await answer.text()
      const reported = stream
        ? (events(text).find((e) => e["type"] === "response.completed")!["response"] as { usage: any }).usage
        : (JSON.parse(text) as { usage: any }).usage
      assert.isAbove(reported.output_tokens_details.reasoning_tokens, 0)
      const record = await recordOf(answer.headers.get("x-request-id")!)
      assert.strictEqual(record.reasoningTokens, reported.output_tokens_details.reasoning_tokens, `stream ${stream}`)
      assert.strictEqual(record.cachedTokens, reported.input_tokens_details.cached_tokens)
      assert.strictEqual(record.promptTokens, reported.input_tokens)
      assert.strictEqual(record.completionTokens, reported.output_tokens)
    }
  })
})
