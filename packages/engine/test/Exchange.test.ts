/**
 * `Exchange.BodyBuffer`, which every host reads request bodies with: a body
 * is refused by its declared length before any of it is read, or as soon as
 * its chunks pass the limit, in the same words whatever the host; else its
 * chunks are joined as they came.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Exchange from "../src/wire/Exchange.ts"

const bytes = (text: string) => new TextEncoder().encode(text)

describe("Exchange.BodyBuffer", () => {
  it("refuses a declared length past the limit, and takes one at it or none", () => {
    const buffer = new Exchange.BodyBuffer(10)
    const refused = buffer.declared("11")
    assert.strictEqual(refused?._tag, "RequestTooLarge")
    assert.strictEqual(refused?.limitBytes, 10)
    assert.strictEqual(
      refused?.message,
      "The request body is larger than this gateway accepts (10 bytes). Send a smaller request."
    )
    assert.isUndefined(buffer.declared("10"))
    assert.isUndefined(buffer.declared(undefined))
    assert.isUndefined(buffer.declared(null))
    assert.isUndefined(buffer.declared("not a number"))
  })

  it("refuses the chunk that passes the limit, and keeps none of it", () => {
    const buffer = new Exchange.BodyBuffer(8)
    assert.isUndefined(buffer.add(bytes("12345")))
    assert.isUndefined(buffer.add(bytes("678")))
    assert.strictEqual(buffer.add(bytes("9"))?._tag, "RequestTooLarge")
  })

  it("joins the chunks as they came: none is empty, one is itself", () => {
    assert.strictEqual(new Exchange.BodyBuffer(8).body().length, 0)
    const one = bytes("abc")
    const single = new Exchange.BodyBuffer(8)
    single.add(one)
    assert.strictEqual(single.body(), one)
    const several = new Exchange.BodyBuffer(8)
    several.add(bytes("ab"))
    several.add(bytes("cd"))
    several.add(bytes("e"))
    assert.strictEqual(new TextDecoder().decode(several.body()), "abcde")
  })
})
