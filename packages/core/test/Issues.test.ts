import { assert, describe, it } from "@effect/vitest"
import { Result, Schema } from "effect"
import { InvalidRequest, UnsupportedFeature, UpstreamTimeout } from "../src/errors/GatewayError.ts"
import * as Issues from "../src/errors/Issues.ts"

const Body = Schema.Struct({
  model: Schema.String,
  n: Schema.optionalKey(Schema.Int),
  messages: Schema.Array(
    Schema.Struct({ role: Schema.String, content: Schema.Array(Schema.Struct({ text: Schema.String })) })
  )
})

const issueOf = (body: unknown) => {
  const decoded = Schema.decodeUnknownResult(Body)(body)
  if (Result.isSuccess(decoded)) throw new Error("expected a failure")
  return decoded.failure.issue
}

describe("Issues", () => {
  it("pathToParam writes a path the way clients read it", () => {
    assert.strictEqual(
      Issues.pathToParam(["messages", 2, "content", 0, "image_url"]),
      "messages[2].content[0].image_url"
    )
    assert.strictEqual(Issues.pathToParam([]), "")
    assert.strictEqual(Issues.pathToParam([{ key: "contents" }, { key: 1 }]), "contents[1]")
  })

  it("invalidRequest names the first offending field and says what is wrong", () => {
    assert.deepStrictEqual(
      Issues.invalidRequest(issueOf({ messages: [] })),
      new InvalidRequest({ message: "'model' is required", param: "model" })
    )
    assert.deepStrictEqual(
      Issues.invalidRequest(issueOf({ model: "m", messages: [{ role: "user", content: [{ text: 1 }] }] })),
      new InvalidRequest({
        message: "Invalid 'messages[0].content[0].text': Expected string",
        param: "messages[0].content[0].text"
      })
    )
    assert.deepStrictEqual(Issues.firstIssue(issueOf({ model: "m", n: 1.5, messages: [] })).param, "n")
  })

  it("invalidRequest on a body that is no object says so, without a param", () => {
    for (const body of [null, 5, "text", []]) {
      assert.deepStrictEqual(
        Issues.invalidRequest(issueOf(body)),
        new InvalidRequest({ message: "The request body must be a JSON object" })
      )
    }
  })

  it("invalid and unsupported build the errors; an empty param means the body as a whole", () => {
    assert.deepStrictEqual(Issues.invalid("messages", "bad"), new InvalidRequest({ message: "bad", param: "messages" }))
    assert.deepStrictEqual(Issues.invalid("", "not JSON"), new InvalidRequest({ message: "not JSON" }))
    assert.isFalse("param" in Issues.invalid("", "not JSON"))
    assert.deepStrictEqual(
      Issues.unsupported("logprobs", "no"),
      new UnsupportedFeature({ message: "no", param: "logprobs" })
    )
  })

  it("isRequestError tells the errors a request is refused with by their tag", () => {
    assert.isTrue(Issues.isRequestError(Issues.invalid("n", "bad")))
    assert.isTrue(Issues.isRequestError({ _tag: "UnsupportedFeature", message: "no" }))
    assert.isFalse(Issues.isRequestError(new UpstreamTimeout({ message: "late" })))
    assert.isFalse(Issues.isRequestError(new Error("InvalidRequest")))
    assert.isFalse(Issues.isRequestError(undefined))
  })

  it("notJson tells a body JSON refuses in the parser's own words, from bytes or text", () => {
    const text = "{\"model\": \"m\", \"messages\": [}"
    let parser = ""
    try {
      JSON.parse(text)
    } catch (error) {
      parser = (error as Error).message
    }
    assert.isAbove(parser.length, 0)
    const fromBytes = Issues.notJson(new TextEncoder().encode(text))
    assert.instanceOf(fromBytes, InvalidRequest)
    assert.strictEqual(fromBytes.message, `The request body is not valid JSON: ${parser}`)
    assert.isFalse("param" in fromBytes)
    assert.strictEqual(Issues.notJson(text).message, fromBytes.message)
  })
})
