import { assert, describe, it } from "@effect/vitest"
import { EventStream, Response, Stream } from "@modelgate/bedrock-adapter"
import { StreamAssembly } from "@modelgate/core"
import * as Cuts from "@modelgate/core/testing/Cuts"

const facts = { id: "chatcmpl-1", model: "amazon.nova-pro-v1:0", created: 7 }
const frame = (type: string, payload: unknown) => EventStream.encodeMessage(EventStream.eventMessage(type, payload))

describe("ConverseStream bytes", () => {
  it("decodes text, a tool call and usage, the text before an exception first, then the exception", () => {
    const bytes = Cuts.joinBytes([
      frame("messageStart", { role: "assistant", p: "abc" }),
      frame("contentBlockDelta", { contentBlockIndex: 0, delta: { text: "Hi" } }),
      frame("contentBlockStop", { contentBlockIndex: 0 }),
      frame("contentBlockStart", { contentBlockIndex: 1, start: { toolUse: { toolUseId: "tooluse_1", name: "f" } } }),
      frame("contentBlockDelta", { contentBlockIndex: 1, delta: { toolUse: { input: "{\"a\":" } } }),
      frame("contentBlockDelta", { contentBlockIndex: 1, delta: { toolUse: { input: "1}" } } }),
      frame("contentBlockStop", { contentBlockIndex: 1 }),
      frame("messageStop", { stopReason: "tool_use" }),
      frame("metadata", {
        usage: { inputTokens: 5, outputTokens: 3, totalTokens: 8, cacheReadInputTokens: 2 },
        metrics: { latencyMs: 1 }
      })
    ])
    const decoder = new Stream.ByteDecoder(facts)
    const events = [...decoder.push(bytes), ...decoder.end()]
    assert.deepStrictEqual(StreamAssembly.assemble(events), {
      id: "chatcmpl-1",
      model: "amazon.nova-pro-v1:0",
      created: 7,
      choices: [{
        index: 0,
        content: [{ type: "text", text: "Hi" }, {
          type: "tool_call",
          id: "tooluse_1",
          name: "f",
          arguments: "{\"a\":1}"
        }],
        finishReason: "tool_calls"
      }],
      usage: { promptTokens: 7, completionTokens: 3, totalTokens: 10, cachedTokens: 2 }
    })
  })

  it("an exception message after text gives the text first, then throws the classified error", () => {
    const bytes = Cuts.joinBytes([
      frame("messageStart", { role: "assistant" }),
      frame("contentBlockDelta", { contentBlockIndex: 0, delta: { text: "partial" } }),
      EventStream.encodeMessage(EventStream.exceptionMessage("throttlingException", "Too many tokens, please wait."))
    ])
    const decoder = new Stream.ByteDecoder(facts)
    const events = decoder.push(bytes)
    assert.deepStrictEqual(events.filter((e) => e.type === "text"), [{ type: "text", index: 0, text: "partial" }])
    assert.throws(() => decoder.end(), /rate-limiting/)
  })

  it("a stream cut inside a frame is the upstream failing", () => {
    const bytes = frame("contentBlockDelta", { contentBlockIndex: 0, delta: { text: "Hi" } })
    const decoder = new Stream.ByteDecoder(facts)
    assert.deepStrictEqual(decoder.push(bytes.subarray(0, bytes.length - 3)), [])
    assert.throws(() => decoder.end(), /ended inside a message/)
  })

  it("a frame whose prelude announces more than max_event_bytes fails the stream from its first four bytes", () => {
    const bound = { maxEventBytes: 1024, channel: "bedrock" }
    const decoder = new Stream.ByteDecoder(facts, bound)
    const first = frame("contentBlockDelta", { contentBlockIndex: 0, delta: { text: "Hi" } })
    assert.isAbove(decoder.push(Cuts.joinBytes([frame("messageStart", { role: "assistant" }), first])).length, 0)
    // Four bytes of a 5 MB frame: refused there, nothing of it kept.
    const prelude = new Uint8Array(4)
    new DataView(prelude.buffer).setUint32(0, 5_000_000, false)
    assert.throws(
      () => decoder.push(prelude),
      /sent a stream event larger than 1024 bytes \(max_event_bytes\): its frame announced 5000000 bytes/
    )
    // A frame within the bound is taken; the bound is the operator's, not AWS's 16 MiB.
    const within = new Stream.ByteDecoder(facts, { maxEventBytes: first.length, channel: "bedrock" })
    assert.isAbove(within.push(first).length, 0)
    const opening = Stream.opening(prelude, false, "bedrock", 1024)
    assert.notStrictEqual(opening, "incomplete")
    assert.match((opening as { message: string }).message, /larger than 1024 bytes \(max_event_bytes\)/)
    assert.strictEqual(Stream.opening(prelude, false, "bedrock"), "incomplete")
  })

  it("a toolUse delta for a block no start opened is refused", () => {
    const decoder = new Stream.StreamDecoder(facts)
    const result = decoder.push({
      type: "contentBlockDelta",
      payload: { contentBlockIndex: 3, delta: { toolUse: { input: "{}" } } }
    })
    assert.strictEqual(result._tag, "Failure")
  })

  it("judges a stream's opening: an event, not yet a whole message, an exception, nothing", () => {
    const start = frame("messageStart", { role: "assistant" })
    assert.strictEqual(Stream.opening(start, false, "bedrock"), "answer")
    assert.strictEqual(Stream.opening(start.subarray(0, 10), false, "bedrock"), "incomplete")
    const throttled = EventStream.encodeMessage(EventStream.exceptionMessage("throttlingException", "slow down"))
    const judged = Stream.opening(throttled, false, "bedrock")
    assert.strictEqual(typeof judged === "string" ? judged : judged._tag, "UpstreamRateLimited")
    const empty = Stream.opening(new Uint8Array(0), true, "bedrock")
    assert.strictEqual(typeof empty === "string" ? empty : empty._tag, "UpstreamUnavailable")
    const corrupt = start.slice()
    corrupt[corrupt.length - 1]! ^= 1
    const broken = Stream.opening(corrupt, false, "bedrock")
    assert.strictEqual(typeof broken === "string" ? broken : broken._tag, "UpstreamUnavailable")
  })

  it("tells a Converse answer from a 200 that is not one", () => {
    assert.isUndefined(
      Response.notAnAnswer({ output: { message: { role: "assistant", content: [] } }, stopReason: "end_turn" }, "b")
    )
    assert.include(
      Response.notAnAnswer({ Message: "Unknown operation" }, "b")!.message,
      "with an error instead of an answer"
    )
    assert.include(Response.notAnAnswer([], "b")!.message, "not a Converse answer")
  })
})
