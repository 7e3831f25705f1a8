import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import * as Inspection from "../src/dialect/Inspection.ts"
import type { InvalidRequest } from "../src/errors/GatewayError.ts"

const options = {
  notObject: "The request body must be a JSON object with 'model'.",
  media: { in: ["messages"], types: [["image_url", "image"], ["input_audio", "audio"]] as const }
}

/** A body past `EAGER_CHECK_BYTES`, with one image and one audio part among the messages. */
const large = (extra = "") =>
  `{"model":"m","messages":[{"content":[{"type":"image_url"},{"type":"input_audio"},{"type":"text","text":"${
    "x".repeat(Inspection.EAGER_CHECK_BYTES)
  }"}]}]${extra}}`

const failureOf = <A>(result: Result.Result<A, InvalidRequest>): InvalidRequest => {
  if (Result.isSuccess(result)) throw new Error("expected a failure")
  return result.failure
}

describe("Inspection", () => {
  it("parses a small body whole at once and counts no media while scanning it", () => {
    const scanned = Result.getOrThrow(
      Inspection.scan(`{"model":"m","messages":[{"content":[{"type":"image_url"}]}]}`, options)
    )
    assert.isTrue(scanned.eager)
    assert.strictEqual(scanned.mediaParts, 0)
    assert.deepStrictEqual(scanned.media, {})
    assert.strictEqual(scanned.field("model"), "m")
    assert.isUndefined(scanned.field("stream"))
  })

  it("scans a large body without parsing it, counting the media parts of the named fields by kind", () => {
    const scanned = Result.getOrThrow(Inspection.scan(large(`,"other":[{"type":"image_url"}]`), options))
    assert.isFalse(scanned.eager)
    assert.strictEqual(scanned.mediaParts, 2)
    assert.deepStrictEqual(scanned.media, { image: 1, audio: 1 })
  })

  it("answers `invalid` for a top-level value of a large body that JSON refuses", () => {
    const scanned = Result.getOrThrow(Inspection.scan(large(`,"max_tokens":1e`), options))
    assert.strictEqual(scanned.field("max_tokens"), Inspection.invalid)
  })

  it("refuses JSON that is not an object in the dialect's words, and what is not JSON in the parser's", () => {
    assert.strictEqual(failureOf(Inspection.scan("[1]", options)).message, options.notObject)
    assert.match(failureOf(Inspection.scan("[1,", options)).message, /not valid JSON/)
  })

  it("checkKept leaves a checked body alone, refuses JSON the scan let through, and else runs the dialect's check", () => {
    const refuse = (json: Record<string, unknown>) =>
      json.model === "bad" ? failureOf(Inspection.scan("[1]", options)) : undefined
    const kept = (text: string, checked: boolean) => ({
      bytes: new TextEncoder().encode(text),
      get json() {
        return JSON.parse(text) as Record<string, unknown>
      },
      checked
    })
    assert.isUndefined(Inspection.checkKept(kept(`{"model":"bad"}`, true), refuse))
    assert.strictEqual(Inspection.checkKept(kept(`{"model":"bad"}`, false), refuse)?.message, options.notObject)
    assert.isUndefined(Inspection.checkKept(kept(`{"model":"good"}`, false), refuse))
    assert.match(Inspection.checkKept(kept(`{"model":tru}`, false), refuse)?.message ?? "", /not valid JSON/)
  })
})
