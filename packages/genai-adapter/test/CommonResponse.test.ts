import { assert, describe, it } from "@effect/vitest"
import { Issues } from "@modelgate/core"
import { GenerateContent } from "@modelgate/genai-adapter"
import * as Arbitraries from "@modelgate/genai-adapter/testing/Arbitraries"
import { Result, Schema } from "effect"
import * as fc from "fast-check"

// `readCommonResponse` is the hand-written reader of the usual Gemini answer;
// the schema (after the same snake_case rewrite) is the reference it must agree with.
const viaSchema = Schema.decodeUnknownResult(GenerateContent.GenerateContentResponse)
const reference = (body: unknown) => viaSchema(GenerateContent.normalizeKeys(body))

type Json = Arbitraries.Json

/** Every path to a value inside `value` (the root included). */
const paths = (value: Json, at: ReadonlyArray<string | number> = []): Array<ReadonlyArray<string | number>> => {
  const out: Array<ReadonlyArray<string | number>> = [at]
  if (Array.isArray(value)) value.forEach((item, i) => out.push(...paths(item, [...at, i])))
  else if (value !== null && typeof value === "object") {
    for (const key of Object.keys(value)) out.push(...paths((value as Record<string, Json>)[key]!, [...at, key]))
  }
  return out
}

/** `value` with the value at `path` replaced by `replace(old)`. */
const edit = (value: Json, path: ReadonlyArray<string | number>, replace: (old: Json) => Json): Json => {
  if (path.length === 0) return replace(value)
  const [head, ...rest] = path
  if (Array.isArray(value)) return value.map((item, i) => (i === head ? edit(item, rest, replace) : item))
  const record = value as Record<string, Json>
  return { ...record, [head!]: edit(record[head!]!, rest, replace) }
}

/** Answers and chunks in the shapes Gemini sends. */
const common: fc.Arbitrary<Json> = fc.oneof(
  Arbitraries.geminiResponse,
  fc.tuple(Arbitraries.geminiResponse, Arbitraries.cuts, fc.nat()).map(([response, cuts, n]) => {
    const chunks = Arbitraries.toChunks(response, cuts)
    return chunks.length === 0 ? response : chunks[n % chunks.length]!
  })
)

/** Near misses: one value anywhere replaced by other JSON, an extra key, another part kind, snake_case, a blocked prompt. */
const nearMiss: fc.Arbitrary<Json> = fc.oneof(
  fc.tuple(common, fc.nat(), fc.jsonValue()).map(([body, n, other]) => {
    const all = paths(body)
    return edit(body, all[n % all.length]!, () => other as Json)
  }),
  fc.tuple(
    common,
    fc.nat(),
    fc.constantFrom("citationMetadata", "avg_logprobs", "groundingMetadata", "__proto__", "inlineData", "index"),
    fc.jsonValue()
  )
    .map(([body, n, key, other]) => {
      const objects = paths(body).filter((path) => {
        let value: Json = body
        for (const step of path) value = (value as Record<string, Json>)[step as string]!
        return value !== null && typeof value === "object" && !Array.isArray(value)
      })
      return edit(body, objects[n % objects.length]!, (old) => {
        const out = { ...(old as Record<string, Json>) }
        Object.defineProperty(out, key, { value: other, enumerable: true, configurable: true, writable: true })
        return out
      })
    }),
  common.map((body) => Arbitraries.toSnakeCase(body)),
  common.map((body) => ({ ...(body as Record<string, Json>), promptFeedback: { blockReason: "SAFETY" } })),
  fc.jsonValue().map((value) => value as Json)
)

describe("readCommonResponse", () => {
  it("reads every answer and chunk in Gemini's usual shape, as the schema does", () => {
    fc.assert(
      fc.property(common, (body) => {
        const read = GenerateContent.readCommonResponse(body)
        assert.strictEqual(read as unknown, body, "the usual shape is read by hand")
        const expected = reference(body)
        assert.isTrue(Result.isSuccess(expected))
        if (Result.isSuccess(expected)) assert.deepStrictEqual(read, expected.success)
      }),
      { numRuns: 300 }
    )
  })

  it("on anything else, either agrees with the schema or leaves the body to it", () => {
    let readByHand = 0
    let leftToSchema = 0
    fc.assert(
      fc.property(nearMiss, (body) => {
        const read = GenerateContent.readCommonResponse(body)
        const expected = reference(body)
        const decoded = GenerateContent.decodeResponseBody(body)
        if (read === undefined) {
          leftToSchema++
          assert.strictEqual(Result.isSuccess(decoded), Result.isSuccess(expected))
          if (Result.isFailure(decoded) && Result.isFailure(expected)) {
            assert.strictEqual(decoded.failure.message, Issues.invalidRequest(expected.failure.issue).message)
          }
          if (Result.isSuccess(decoded) && Result.isSuccess(expected)) {
            assert.deepStrictEqual(decoded.success, expected.success)
          }
        } else {
          readByHand++
          assert.isTrue(Result.isSuccess(expected), "read by hand, so the schema must accept it too")
          if (Result.isSuccess(expected)) assert.deepStrictEqual(read, expected.success)
          assert.isTrue(Result.isSuccess(decoded) && decoded.success === read)
        }
      }),
      { numRuns: 1000 }
    )
    // Both branches ran: the near misses include values the hand reader still takes (a text replaced by another string) and ones it refuses.
    assert.isAbove(readByHand, 0)
    assert.isAbove(leftToSchema, 0)
  })

  it("leaves a body with a wrong type to the schema, whose error names the field", () => {
    const body = { candidates: [{ content: { role: "model", parts: [{ text: 7 }] }, index: 0 }], responseId: "r" }
    assert.strictEqual(GenerateContent.readCommonResponse(body), undefined)
    const decoded = GenerateContent.decodeResponseBody(body)
    assert.isTrue(Result.isFailure(decoded))
    if (Result.isFailure(decoded)) assert.include(decoded.failure.message, "candidates[0].content.parts[0].text")
  })

  it("leaves snake_case names and dropped fields to the schema", () => {
    const snake = { candidates: [{ content: { parts: [{ text: "hi" }] }, finish_reason: "STOP" }] }
    assert.strictEqual(GenerateContent.readCommonResponse(snake), undefined)
    const decoded = GenerateContent.decodeResponseBody(snake)
    assert.deepStrictEqual(Result.isSuccess(decoded) ? decoded.success : undefined, {
      candidates: [{ content: { parts: [{ text: "hi" }] }, finishReason: "STOP" }]
    })
    const extra = { candidates: [{ content: { parts: [{ text: "hi" }] }, citationMetadata: {} }], modelVersion: "m" }
    assert.strictEqual(GenerateContent.readCommonResponse(extra), undefined)
    const dropped = GenerateContent.decodeResponseBody(extra)
    assert.deepStrictEqual(Result.isSuccess(dropped) ? dropped.success : undefined, {
      candidates: [{ content: { parts: [{ text: "hi" }] } }],
      modelVersion: "m"
    })
  })
})
