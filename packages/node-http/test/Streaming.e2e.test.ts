/**
 * Streams through the real server: a long answer is relayed as it comes and
 * never held whole, a stream the upstream cuts ends with an in-band error, and
 * tool calls stream through unchanged.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import OpenAI from "openai"
import { KEY, startGateway, type TestGateway } from "./support/Gateway.ts"

let gateway: TestGateway
beforeAll(async () => {
  gateway = await startGateway()
})
afterAll(async () => {
  await gateway.close()
})

const post = (body: unknown) =>
  fetch(`${gateway.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
    body: JSON.stringify(body)
  })

describe("streaming", () => {
  it("relays a 32 MB answer without holding it (retained heap stays flat)", async () => {
    // Retained memory, after a full collection at each sample: garbage in flight does not count.
    const gc = globalThis.gc
    assert.isFunction(gc, "run with --expose-gc (the root vitest config does)")
    const retained = () => {
      gc!()
      return process.memoryUsage().heapUsed
    }
    const before = retained()
    let peak = before
    const response = await post({
      model: "big-stream",
      stream: true,
      messages: [{ role: "user", content: "long please" }]
    })
    assert.strictEqual(response.status, 200)
    const reader = response.body!.getReader()
    let bytes = 0
    let reads = 0
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      bytes += value.byteLength
      if (++reads % 500 === 0) peak = Math.max(peak, retained())
    }
    assert.isAbove(bytes, 32 * 1024 * 1024)
    // The whole answer is 32 MB of text (64 MB as JS strings); holding it would show up here.
    assert.isBelow(peak - before, 8 * 1024 * 1024, `retained heap grew by ${((peak - before) / 1e6).toFixed(1)} MB`)
  })

  it("ends a stream the upstream cuts with an in-band error event", async () => {
    const response = await post({ model: "cut-stream", stream: true, messages: [{ role: "user", content: "hi" }] })
    const text = await response.text()
    const events = text.split("\n\n").filter((e) => e.startsWith("data: "))
    const contentEvents = events.filter((e) => e.includes("\"content\""))
    assert.isAtLeast(contentEvents.length, 5)
    const last = JSON.parse(events.at(-1)!.slice(6)) as { error?: { code: string; message: string } }
    assert.strictEqual(last.error?.code, "upstream_error")
    assert.notInclude(text, "[DONE]")
  })

  it("streams tool calls through unchanged", async () => {
    const client = new OpenAI({ apiKey: KEY, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
    const stream = await client.chat.completions.create({
      model: "tool-model",
      stream: true,
      messages: [{ role: "user", content: "What's the weather in Paris?" }],
      tools: [{
        type: "function",
        function: {
          name: "get_weather",
          parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
        }
      }]
    })
    let name = ""
    let args = ""
    let finish: string | null = null
    for await (const chunk of stream) {
      const call = chunk.choices[0]?.delta.tool_calls?.[0]
      if (call?.function?.name) name += call.function.name
      if (call?.function?.arguments) args += call.function.arguments
      finish = chunk.choices[0]?.finish_reason ?? finish
    }
    assert.strictEqual(name, "get_weather")
    assert.isObject(JSON.parse(args))
    assert.strictEqual(finish, "tool_calls")
  })
})
