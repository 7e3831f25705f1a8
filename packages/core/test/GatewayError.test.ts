/**
 * What an error may show: `mapText` rewrites an error's words keeping every
 * other field, and `bounded` cuts what an error echoes back (quoted values,
 * the whole message, `param`) so a huge field of a request never returns.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Tokens from "../src/dialect/Tokens.ts"
import * as GatewayError from "../src/errors/GatewayError.ts"

describe("GatewayError", () => {
  it("mapText rewrites message and param, keeps the class and every other field, and returns an unchanged error as is", () => {
    const error = new GatewayError.UpstreamRejected({
      message: "bad sk-secret",
      status: 403,
      code: "PERMISSION_DENIED",
      param: "x.sk-secret"
    })
    const mapped = GatewayError.mapText(error, (text) => text.replaceAll("sk-secret", "[redacted]"))
    assert.instanceOf(mapped, GatewayError.UpstreamRejected)
    assert.deepStrictEqual({ ...mapped, message: mapped.message }, {
      _tag: "UpstreamRejected",
      message: "bad [redacted]",
      status: 403,
      code: "PERMISSION_DENIED",
      param: "x.[redacted]"
    })
    assert.strictEqual(GatewayError.mapText(error, (text) => text), error)
    const unavailable = new GatewayError.UpstreamUnavailable({ message: "m", status: 401, credentialsRefused: true })
    assert.isTrue(GatewayError.mapText(unavailable, (text) => `${text}!`).credentialsRefused)
  })

  it("echo cuts a value at ECHO_LIMIT characters with an ellipsis", () => {
    assert.strictEqual(GatewayError.echo("gpt-4o"), "gpt-4o")
    const echoed = GatewayError.echo("m".repeat(200_000))
    assert.strictEqual(echoed, `${"m".repeat(GatewayError.ECHO_LIMIT)}…`)
  })

  it("bounded cuts long quoted values, then the message, and param; short errors are returned as they are", () => {
    const huge = "x".repeat(200_000)
    const model = GatewayError.bounded(
      new GatewayError.ModelNotFound({
        model: huge,
        message: `The model '${huge}' does not exist on this gateway. GET /v1/models lists the models your key can use.`
      })
    )
    assert.strictEqual(
      model.message,
      `The model '${
        "x".repeat(GatewayError.ECHO_LIMIT)
      }…' does not exist on this gateway. GET /v1/models lists the models your key can use.`
    )
    const schema = GatewayError.bounded(
      new GatewayError.InvalidRequest({
        message: `Invalid 'messages[0].role': Expected "user", got "${huge}"`,
        param: `messages[0].${huge}`
      })
    )
    assert.isBelow(schema.message.length, 300)
    assert.include(schema.message, "Expected \"user\", got \"xxx")
    assert.strictEqual(schema.param, `messages[0].${"x".repeat(GatewayError.ECHO_LIMIT - "messages[0].".length)}…`)
    const unquoted = GatewayError.bounded(new GatewayError.InvalidRequest({ message: `Unknown field ${huge}` }))
    assert.strictEqual(unquoted.message.length, GatewayError.MESSAGE_LIMIT + 1)
    const short = new GatewayError.InvalidRequest({ message: "'model' is required", param: "model" })
    assert.strictEqual(GatewayError.bounded(short), short)
  })
})

describe("Tokens.isCount and badCount", () => {
  it("a count is a non-negative safe integer; badCount names the first present figure that is not one", () => {
    for (const good of [0, 1, 123_456, Number.MAX_SAFE_INTEGER]) assert.isTrue(Tokens.isCount(good), String(good))
    for (const bad of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, "5", null, undefined, {}]) {
      assert.isFalse(Tokens.isCount(bad), String(bad))
    }
    assert.isUndefined(Tokens.badCount({ prompt_tokens: 3, completion_tokens: 0, cached: undefined, reasoning: null }))
    assert.strictEqual(
      Tokens.badCount({ prompt_tokens: 3, completion_tokens: -5_000_000 }),
      "completion_tokens: -5000000"
    )
    assert.strictEqual(Tokens.badCount({ promptTokenCount: 1.5 }), "promptTokenCount: 1.5")
    assert.strictEqual(Tokens.badCount({ input_tokens: "12" }), "input_tokens: \"12\"")
    assert.strictEqual(Tokens.badCount({ output_tokens: "9".repeat(100) }), `output_tokens: "${"9".repeat(39)}…`)
  })
})
