import { assert, describe, it } from "@effect/vitest"
import { Result, Schema } from "effect"
import * as fc from "fast-check"
import * as ChatCompletions from "../src/chat/ChatCompletions.ts"
import { parseChunk, StreamDecoder } from "../src/chat/Stream.ts"
import * as Arbitraries from "../src/testing/Arbitraries.ts"

// `readCommonChunk` is the hand-written reader of the usual upstream chunk; the schema is the reference.
// The hand reader leaves fields the schema does not know in place, so the two are compared by what the
// stream decoder makes of them: the same canonical events.
const viaSchema = Schema.decodeUnknownResult(ChatCompletions.UpstreamChatCompletionChunk)

type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }

/** Every path to a value inside `value` (the root included). */
const paths = (value: Json, at: ReadonlyArray<string | number> = []): Array<ReadonlyArray<string | number>> => {
  const out: Array<ReadonlyArray<string | number>> = [at]
  if (Array.isArray(value)) value.forEach((item, i) => out.push(...paths(item, [...at, i])))
  else if (value !== null && typeof value === "object") {
    for (const key of Object.keys(value)) out.push(...paths((value as Record<string, Json>)[key]!, [...at, key]))
  }
  return out
}

/** `value` with the value at `path` replaced by `other`. */
const edit = (value: Json, path: ReadonlyArray<string | number>, other: Json): Json => {
  if (path.length === 0) return other
  const [head, ...rest] = path
  if (Array.isArray(value)) return value.map((item, i) => (i === head ? edit(item, rest, other) : item))
  const record = value as Record<string, Json>
  return { ...record, [head!]: edit(record[head!]!, rest, other) }
}

/** A stream's chunks as OpenAI writes them: with `system_fingerprint`, `service_tier`, `obfuscation`, `logprobs: null`, `usage: null`. */
const realistic = fc.tuple(Arbitraries.wireChunks, fc.boolean()).map(([chunks, extras]) =>
  chunks.map((chunk) =>
    JSON.parse(JSON.stringify(
      extras
        ? {
          ...chunk,
          service_tier: "default",
          system_fingerprint: "fp_1",
          choices: chunk.choices.map((choice) => ({ ...choice, logprobs: null })),
          usage: chunk.usage ?? null,
          obfuscation: "x1"
        }
        : chunk
    )) as Json
  )
)

const events = (chunks: ReadonlyArray<ChatCompletions.UpstreamChatCompletionChunk>) => {
  const decoder = new StreamDecoder()
  return chunks.flatMap((chunk) => decoder.push(chunk))
}

describe("readCommonChunk", () => {
  it("reads every chunk of a stream in OpenAI's usual shape, and the decoder makes the schema's events of it", () => {
    fc.assert(
      fc.property(realistic, (chunks) => {
        const read = chunks.map((chunk) => ChatCompletions.readCommonChunk(chunk))
        read.forEach((chunk, i) => assert.strictEqual(chunk as unknown, chunks[i], "the usual shape is read by hand"))
        const reference = chunks.map((chunk) => {
          const decoded = viaSchema(chunk)
          if (Result.isFailure(decoded)) throw new Error(`the schema refused a valid chunk: ${JSON.stringify(chunk)}`)
          return decoded.success
        })
        assert.deepStrictEqual(events(read as Array<ChatCompletions.UpstreamChatCompletionChunk>), events(reference))
      }),
      { numRuns: 300 }
    )
  })

  it("on anything else, agrees with the schema or leaves the chunk to it", () => {
    let readByHand = 0
    let leftToSchema = 0
    const nearMiss = fc.oneof(
      fc.tuple(realistic, fc.nat(), fc.nat(), fc.jsonValue()).map(([chunks, c, n, other]) => {
        const chunk = chunks[c % chunks.length]!
        const all = paths(chunk)
        return edit(chunk, all[n % all.length]!, other as Json)
      }),
      // A field's value swapped for one of another type (or a near value): the likeliest way an upstream goes wrong.
      fc.tuple(realistic, fc.nat(), fc.nat(), fc.constantFrom<Json>(null, 7, 1.5, -1, "x", "", true, [], {})).map(
        ([chunks, c, n, other]) => {
          const withCalls = chunks.filter((chunk) => JSON.stringify(chunk).includes("tool_calls"))
          const pool = withCalls.length > 0 && n % 2 === 0 ? withCalls : chunks
          const chunk = pool[c % pool.length]!
          const leaves = paths(chunk).filter((path) => path.length > 0)
          return edit(chunk, leaves[n % leaves.length]!, other)
        }
      ),
      fc.jsonValue().map((value) => value as Json)
    )
    fc.assert(
      fc.property(nearMiss, (generated) => {
        // As an upstream sends it: through JSON text (a generated -0 is 0 there, as the parsed chunk has it).
        const wire = JSON.stringify(generated)
        const chunk = JSON.parse(wire) as Json
        const read = ChatCompletions.readCommonChunk(chunk)
        const reference = viaSchema(chunk)
        const parsed = parseChunk(wire)
        if (read === undefined) {
          leftToSchema++
          // parseChunk then answers as the schema does (a failure names the field, or the in-band error).
          if (Result.isSuccess(reference)) {
            assert.isTrue(Result.isSuccess(parsed))
            if (Result.isSuccess(parsed)) assert.deepStrictEqual(parsed.success, reference.success)
          } else assert.isTrue(Result.isFailure(parsed))
        } else {
          readByHand++
          assert.isTrue(
            Result.isSuccess(reference),
            `read by hand, so the schema must accept it too: ${JSON.stringify(chunk)}`
          )
          if (Result.isSuccess(reference)) assert.deepStrictEqual(events([read]), events([reference.success]))
          assert.isTrue(Result.isSuccess(parsed))
          if (Result.isSuccess(parsed)) assert.deepStrictEqual(events([parsed.success]), events([read]))
        }
      }),
      // The -0 index of a generated chunk compared the JSON text's 0 with it (seed 1036730663 found it).
      {
        numRuns: 2000,
        examples: [[{
          id: "chatcmpl-a",
          object: "chat.completion.chunk",
          created: 0,
          model: "a",
          choices: [{ index: -0, delta: {}, finish_reason: "stop" }]
        }]]
      }
    )
    assert.isAbove(readByHand, 0)
    assert.isAbove(leftToSchema, 0)
  })

  it("leaves a chunk with a wrong type to the schema, whose error names the field", () => {
    const data = "{\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":7},\"finish_reason\":null}]}"
    assert.strictEqual(ChatCompletions.readCommonChunk(JSON.parse(data)), undefined)
    const parsed = parseChunk(data)
    assert.isTrue(Result.isFailure(parsed))
    if (Result.isFailure(parsed)) assert.include(parsed.failure.message, "choices[0].delta.content")
  })

  it("leaves an in-band error event to the error path", () => {
    const parsed = parseChunk("{\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\",\"code\":503}}")
    assert.isTrue(Result.isFailure(parsed))
    if (Result.isFailure(parsed)) assert.include(parsed.failure.message, "HTTP 503")
  })
})
