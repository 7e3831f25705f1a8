import { assert, describe, it } from "@effect/vitest"
import {
  UpstreamRateLimited,
  UpstreamRejected,
  UpstreamTimeout,
  UpstreamUnavailable
} from "../src/errors/GatewayError.ts"
import * as UpstreamErrors from "../src/errors/UpstreamErrors.ts"

describe("UpstreamErrors", () => {
  it("header finds a name in any case, and the first value of a repeated header", () => {
    assert.strictEqual(UpstreamErrors.header({ "Retry-After": "3" }, "retry-after"), "3")
    assert.strictEqual(UpstreamErrors.header({ "retry-after": ["4", "5"] }, "Retry-After"), "4")
    assert.strictEqual(UpstreamErrors.header({}, "retry-after"), undefined)
  })

  it("retryAfterSeconds prefers retry-after-ms, then a numeric retry-after, and ignores what is no delay", () => {
    assert.strictEqual(UpstreamErrors.retryAfterSeconds({ "retry-after-ms": "1500", "retry-after": "9" }), 1.5)
    assert.strictEqual(UpstreamErrors.retryAfterSeconds({ "retry-after": "7" }), 7)
    assert.strictEqual(UpstreamErrors.retryAfterSeconds({ "retry-after-ms": "soon", "retry-after": "2.5" }), 2.5)
    assert.strictEqual(UpstreamErrors.retryAfterSeconds({ "retry-after": "Wed, 21 Oct 2026 07:28:00 GMT" }), undefined)
    assert.strictEqual(UpstreamErrors.retryAfterSeconds({ "retry-after": "-1" }), undefined)
    assert.strictEqual(UpstreamErrors.retryAfterSeconds({ "retry-after": " " }), undefined)
  })

  it("parseBody reads JSON and gives undefined for anything else", () => {
    assert.deepStrictEqual(UpstreamErrors.parseBody("{\"error\":{}}"), { error: {} })
    assert.strictEqual(UpstreamErrors.parseBody("<html>Bad Gateway</html>"), undefined)
  })

  it("says what failed in the gateway's words, passing on the upstream's own only for a rejected request", () => {
    assert.deepStrictEqual(
      UpstreamErrors.credentialsRefused(401),
      new UpstreamUnavailable({
        status: 401,
        message: "The upstream refused the gateway's credentials for this model's channel (HTTP 401). " +
          "This is a gateway configuration problem, not a problem with your request: an administrator must check the channel's API key."
      })
    )
    assert.include(
      UpstreamErrors.credentialsRefused(402, "account (billing)", "the channel's account").message,
      "gateway's account (billing)"
    )
    assert.deepStrictEqual(
      UpstreamErrors.timedOut(504),
      new UpstreamTimeout({ message: "The upstream timed out handling the request (HTTP 504). Retry later." })
    )
    assert.deepStrictEqual(
      UpstreamErrors.rateLimited(1.2),
      new UpstreamRateLimited({
        message: "The upstream is rate-limiting the gateway for this model. Retry after 2 seconds.",
        retryAfterSeconds: 1.2
      })
    )
    assert.deepStrictEqual(
      UpstreamErrors.rateLimited(undefined),
      new UpstreamRateLimited({ message: "The upstream is rate-limiting the gateway for this model. Retry later." })
    )
    assert.deepStrictEqual(
      UpstreamErrors.rejected(400, { message: "bad temperature", code: "invalid_value", param: "temperature" }),
      new UpstreamRejected({ status: 400, message: "bad temperature", code: "invalid_value", param: "temperature" })
    )
    assert.deepStrictEqual(
      UpstreamErrors.rejected(404, { message: undefined, code: undefined }),
      new UpstreamRejected({ status: 404, message: "The upstream refused the request (HTTP 404)." })
    )
    assert.deepStrictEqual(
      UpstreamErrors.failed(503),
      new UpstreamUnavailable({ status: 503, message: "The upstream failed (HTTP 503). Retry later." })
    )
    assert.deepStrictEqual(
      UpstreamErrors.failed(302),
      new UpstreamUnavailable({ status: 302, message: "The upstream answered with an unexpected HTTP status 302." })
    )
  })
})
