import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import * as fc from "fast-check"
import type { ChatResponse, StreamEvent } from "../src/dialect/Canonical.ts"
import { assemble, assembleStream, toEvents } from "../src/dialect/StreamAssembly.ts"

const textArb = fc.string({ maxLength: 20 })
const partArb = fc.oneof(
  textArb.filter((t) => t.length > 0).map((text) => ({ type: "text" as const, text })),
  fc.record({
    id: fc.string({ minLength: 1, maxLength: 8 }),
    name: fc.string({ minLength: 1, maxLength: 8 }),
    arguments: fc.json()
  })
    .map((c) => ({ type: "tool_call" as const, ...c }))
)

// Responses whose adjacent text parts are merged (a stream cannot tell two adjacent text parts apart).
const responseArb: fc.Arbitrary<ChatResponse> = fc.record({
  id: fc.string(),
  model: fc.string(),
  created: fc.nat(),
  choices: fc.array(fc.array(partArb, { maxLength: 5 }), { minLength: 1, maxLength: 3 }).map((choices) =>
    choices.map((parts, index) => ({
      index,
      content: parts.reduce<Array<(typeof parts)[number]>>((acc, part) => {
        const last = acc[acc.length - 1]
        if (last?.type === "text" && part.type === "text") {
          acc[acc.length - 1] = { type: "text", text: last.text + part.text }
        } else acc.push(part)
        return acc
      }, []),
      finishReason: "stop" as const
    }))
  )
})

/** Splits every text and argument event at random points: a re-chunked stream. */
const rechunk = (events: Array<StreamEvent>, cuts: Array<number>): Array<StreamEvent> => {
  let c = 0
  return events.flatMap((event): Array<StreamEvent> => {
    const cut = cuts[c++ % cuts.length] ?? 0
    if (event.type === "text" && event.text.length > 1) {
      const at = 1 + (cut % (event.text.length - 1))
      return [{ ...event, text: event.text.slice(0, at) }, { ...event, text: event.text.slice(at) }]
    }
    if (event.type === "tool_call_delta" && event.arguments.length > 1) {
      const at = 1 + (cut % (event.arguments.length - 1))
      return [{ ...event, arguments: event.arguments.slice(0, at) }, { ...event, arguments: event.arguments.slice(at) }]
    }
    return [event]
  })
}

describe("StreamAssembly", () => {
  it("assemble(toEvents(r)) == r", () => {
    fc.assert(fc.property(responseArb, (response) => {
      assert.deepStrictEqual(assemble(toEvents(response)), response)
    }))
  })

  it("re-chunking a stream never changes the assembled response", () => {
    fc.assert(fc.property(responseArb, fc.array(fc.nat(), { minLength: 1 }), (response, cuts) => {
      assert.deepStrictEqual(assemble(rechunk(toEvents(response), cuts)), assemble(toEvents(response)))
    }))
  })

  it("assembleStream over an Effect Stream, however its chunks are grouped, equals assemble", async () => {
    await fc.assert(
      fc.asyncProperty(responseArb, fc.array(fc.nat(), { minLength: 1 }), async (response, cuts) => {
        const events = rechunk(toEvents(response), cuts)
        // Group the events into chunk arrays at the same cut points.
        const groups: Array<Array<StreamEvent>> = []
        for (let i = 0, c = 0; i < events.length; c++) {
          const size = 1 + (cuts[c % cuts.length]! % 4)
          groups.push(events.slice(i, i + size))
          i += size
        }
        const assembled = await Effect.runPromise(assembleStream(Stream.fromArrays(...groups)))
        assert.deepStrictEqual(assembled, assemble(toEvents(response)))
      }),
      { numRuns: 100 }
    )
  })

  it.effect("assembleStream fails with the stream's failure", () =>
    Effect.gen(function*() {
      const cut = Stream.concat(
        Stream.make<Array<StreamEvent>>({ type: "start", id: "r", model: "m", created: 1 }, {
          type: "text",
          index: 0,
          text: "Hel"
        }),
        Stream.fail("upstream broke off" as const)
      )
      assert.strictEqual(yield* Effect.flip(assembleStream(cut)), "upstream broke off")
    }))

  it("usage the upstream reported with figures that are not counts is kept out of the response, which says why; the last word wins", () => {
    const rejected = assemble([
      { type: "start", id: "r", model: "m", created: 1 },
      { type: "text", index: 0, text: "hi" },
      { type: "usage", usage: { promptTokens: 3, completionTokens: 1, totalTokens: 4 } },
      { type: "usage_rejected", reason: "completion_tokens: -5" }
    ])
    assert.isUndefined(rejected.usage)
    assert.strictEqual(rejected.usageRejected, "completion_tokens: -5")
    assert.deepStrictEqual(toEvents(rejected).at(-1), { type: "usage_rejected", reason: "completion_tokens: -5" })
    const later = assemble([{ type: "usage_rejected", reason: "x: 1.5" }, {
      type: "usage",
      usage: { promptTokens: 3, completionTokens: 1, totalTokens: 4 }
    }])
    assert.isUndefined(later.usageRejected)
    assert.strictEqual(later.usage?.completionTokens, 1)
  })

  it("a cut stream assembles to what was generated so far", () => {
    const events: Array<StreamEvent> = [
      { type: "start", id: "r", model: "m", created: 1 },
      { type: "text", index: 0, text: "Hel" },
      { type: "text", index: 0, text: "lo" }
    ]
    const response = assemble(events)
    assert.deepStrictEqual(response.choices, [{
      index: 0,
      content: [{ type: "text", text: "Hello" }],
      finishReason: null
    }])
  })
})
