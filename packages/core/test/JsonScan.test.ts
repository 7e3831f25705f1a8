/**
 * The structural scan agrees with `JSON.parse` on every top-level value of
 * any object (whitespace, escapes, nesting, repeated keys), refuses what is
 * not one well-formed object (naming why), and lets a visitor see the strings
 * inside one field.
 */
import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import * as fc from "fast-check"
import * as Issues from "../src/errors/Issues.ts"
import * as JsonDepth from "../src/wire/JsonDepth.ts"
import * as JsonScan from "../src/wire/JsonScan.ts"

const bytes = (text: string) => new TextEncoder().encode(text)

/** Every top-level value, as the scan finds it, parsed on its own. */
const fieldsOf = (text: string): Record<string, unknown> => {
  const b = bytes(text)
  const fields = Result.getOrThrow(JsonScan.topLevel(b))
  const out: Record<string, unknown> = {}
  for (const key of fields.keys()) out[key] = JsonScan.valueOf(b, fields.get(key))
  return out
}

/** JSON objects with text that stresses a scanner: quotes, backslashes, brackets and multi-byte characters. */
const tricky = fc.string({
  unit: fc.constantFrom("a", "\"", "\\", "{", "}", "[", "]", ":", ",", " ", "é", "😀", "\n", "\u0000")
})
const value: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  json: fc.oneof(
    { depthSize: "small" },
    tricky,
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie("json"), { maxLength: 4 }),
    fc.dictionary(tricky, tie("json"), { maxKeys: 4 })
  )
})).json
const spaced = (text: string, space: number) =>
  space === 0 ? text : text.replace(/([{[,:])/g, `$1${" \n\t\r".slice(0, space)}`)

describe("JsonScan", () => {
  it("finds every top-level value JSON.parse finds, however it is written", () => {
    fc.assert(
      fc.property(fc.dictionary(tricky, value, { maxKeys: 8 }), fc.integer({ min: 0, max: 4 }), (object, space) => {
        const text = space === 0 ? JSON.stringify(object) : JSON.stringify(object, null, space)
        assert.deepStrictEqual(fieldsOf(text), JSON.parse(text))
      })
    )
  })

  it("reads keys written with escapes as JSON does, and the last of a repeated key", () => {
    assert.deepStrictEqual(fieldsOf(`{"mod\\u0065l":"a","x":1,"x":[2]}`), { model: "a", x: [2] })
    assert.deepStrictEqual(fieldsOf(spaced(`{"a":{"b":[1,{"c":"}]"}]},"d":"\\\\"}`, 3)), {
      a: { b: [1, { c: "}]" }] },
      d: "\\"
    })
    assert.deepStrictEqual(fieldsOf("{}"), {})
    assert.deepStrictEqual(fieldsOf(" \n{ } \n"), {})
  })

  it("refuses what is not one well-formed object, saying why", () => {
    const reason = (text: string) => {
      const scanned = JsonScan.topLevel(bytes(text))
      return Result.isFailure(scanned) ? scanned.failure.reason : "accepted"
    }
    assert.strictEqual(reason("[1]"), "the body is not a JSON object")
    assert.strictEqual(reason(""), "the body is not a JSON object")
    assert.strictEqual(reason(`{"a":"b`), "a string is not closed")
    assert.strictEqual(reason(`{"a":[1,2}`), "brackets do not match")
    assert.strictEqual(reason(`{"a":{"b":1}`), "',' or '}' was expected")
    assert.strictEqual(reason(`{"a":[1`), "an object or array is not closed")
    assert.strictEqual(reason(`{"a" 1}`), "':' was expected after a key")
    assert.strictEqual(reason(`{a:1}`), "a key was expected")
    assert.strictEqual(reason(`{"a":}`), "a value is missing")
    assert.strictEqual(reason(`{"a":1} {}`), "there is more after the object")
    assert.strictEqual(reason(`{"a":"\\"}`), "a string is not closed")
  })

  it("refuses nesting deeper than JsonDepth.MAX_DEPTH, the top-level object counted", () => {
    const nested = (depth: number) => bytes("{\"a\":".repeat(depth) + "1" + "}".repeat(depth))
    assert.isTrue(Result.isSuccess(JsonScan.topLevel(nested(JsonDepth.MAX_DEPTH))))
    const deep = JsonScan.topLevel(nested(JsonDepth.MAX_DEPTH + 1))
    assert.isTrue(Result.isFailure(deep) && deep.failure.kind === "too-deep")
    const brackets = JsonScan.topLevel(bytes(`{"a":${"[".repeat(100_000)}`))
    assert.isTrue(
      Result.isFailure(brackets) && brackets.failure.kind === "too-deep",
      "stops at the first level too deep"
    )
  })

  it("never throws on arbitrary bytes: it answers with fields or a reason", () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 64 }), (b) => {
      const scanned = JsonScan.topLevel(b)
      assert.isTrue(Result.isSuccess(scanned) || typeof scanned.failure.reason === "string")
    }))
    // Whatever JSON.parse reads as an object, the scan accepts, with the same keys.
    fc.assert(
      fc.property(
        fc.oneof(
          fc.json(),
          fc.string({ unit: fc.constantFrom("{", "}", "[", "]", "\"", "\\", ":", ",", "a", "1", " ") })
        ),
        (text) => {
          let parsed: unknown
          try {
            parsed = JSON.parse(text)
          } catch {
            return
          }
          const scanned = JsonScan.topLevel(bytes(text))
          if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
            return assert.isTrue(
              Result.isFailure(scanned),
              text
            )
          }
          assert.isTrue(Result.isSuccess(scanned), text)
          if (Result.isSuccess(scanned)) {
            assert.deepStrictEqual(
              new Set(scanned.success.keys()),
              new Set(Object.keys(parsed))
            )
          }
        }
      )
    )
  })

  it("lets a visitor see every string inside one field, and helpers compare and follow them", () => {
    const text =
      `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a \\"type\\": \\"image_url\\""},{"type": "image_url","image_url":{"url":"x"}}]}],"type":"image_url"}`
    const b = bytes(text)
    let images = 0
    const scanned = JsonScan.topLevel(b, {
      messages: (bytes, start, end) => {
        if (!JsonScan.stringIs(bytes, start, end, "type")) return
        const value = JsonScan.stringValueAfter(bytes, end)
        if (value !== undefined && JsonScan.stringIs(bytes, value.start, value.end, "image_url")) images++
      }
    })
    assert.isTrue(Result.isSuccess(scanned))
    // The one in text is inside a string, and the top-level one is outside `messages`.
    assert.strictEqual(images, 1)
  })

  it("scanBody: a small body is parsed at once, a large one only when asked; each failure is the client's 400", () => {
    const notObject = () => Issues.invalid("", "not an object, in the dialect's words")
    // A misspelt literal deep inside passes the scan, not the parser.
    const body = JsonScan.encode("{\"model\":\"m\",\"messages\":[{\"x\":tru}]}")
    const eager = JsonScan.scanBody(body, { eager: true, notObject })
    assert.isTrue(Result.isFailure(eager))
    if (Result.isFailure(eager)) assert.strictEqual(eager.failure.message, Issues.notJson(body).message)
    const lazy = JsonScan.scanBody(body, { eager: false, notObject })
    assert.isTrue(Result.isSuccess(lazy))
    if (Result.isSuccess(lazy)) {
      assert.deepStrictEqual(JsonScan.valueOf(body, lazy.success.fields.get("model")), "m")
      assert.throws(() => lazy.success.json())
    }
    const good = JsonScan.scanBody(JsonScan.encode("{\"a\":[1]}"), { eager: false, notObject })
    assert.isTrue(Result.isSuccess(good) && good.success.json() === good.success.json(), "parsed once")
    const array = JsonScan.scanBody(JsonScan.encode("[1]"), { eager: true, notObject })
    assert.isTrue(Result.isFailure(array) && array.failure.message === "not an object, in the dialect's words")
    const deep = JsonScan.scanBody(JsonScan.encode("{\"a\":" + "[".repeat(300) + "]".repeat(300) + "}"), {
      eager: false,
      notObject
    })
    assert.isTrue(Result.isFailure(deep) && deep.failure.message === JsonDepth.tooDeep().message)
  })

  it("duplicateKey: names the first top-level key set twice (escaped spellings and twins included), never a nested one", () => {
    const duplicate = (text: string, sameKey?: (key: string) => string) =>
      JsonScan.duplicateKey(Result.getOrThrow(JsonScan.topLevel(bytes(text))), sameKey)
    assert.strictEqual(duplicate(`{"model":"o1-pro","messages":[],"model":"vip-model"}`), "model")
    assert.strictEqual(duplicate(`{"mod\\u0065l":"a","model":"b"}`), "model")
    assert.strictEqual(duplicate(`{"a":1,"b":2,"b":3,"a":4}`), "b")
    assert.isUndefined(duplicate(`{"a":{"x":1,"x":2},"b":[{"y":1,"y":2}]}`), "nested objects are the upstream's")
    const camel = (key: string) => key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())
    assert.isUndefined(duplicate(`{"generationConfig":{},"contents":[]}`, camel))
    assert.strictEqual(
      duplicate(`{"generationConfig":{},"contents":[],"generation_config":{}}`, camel),
      "generation_config"
    )
  })

  it("scanBody and checkWhole refuse a repeated top-level key with a 400 naming it", () => {
    const notObject = () => Issues.invalid("", "not an object")
    const body = JsonScan.encode(`{"store":true,"input":"hi","store":false}`)
    for (const eager of [true, false]) {
      const scanned = JsonScan.scanBody(body, { eager, notObject })
      assert.isTrue(Result.isFailure(scanned))
      if (Result.isFailure(scanned)) {
        assert.strictEqual(scanned.failure.param, "store")
        assert.include(scanned.failure.message, "sets 'store' more than once")
      }
    }
    assert.strictEqual(JsonScan.checkWhole(body)?.param, "store")
    assert.isUndefined(JsonScan.checkWhole(JsonScan.encode(`{"input":["a","a"],"model":"m"}`)))
    // Malformed JSON is left for the parser to name; depth is still refused.
    assert.isUndefined(JsonScan.checkWhole(JsonScan.encode(`{"a":tru`)))
    assert.strictEqual(
      JsonScan.checkWhole(JsonScan.encode("[".repeat(300) + "]".repeat(300)))?.message,
      JsonDepth.tooDeep().message
    )
  })
})
