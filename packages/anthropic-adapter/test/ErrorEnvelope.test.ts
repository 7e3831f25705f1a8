import { assert, describe, it } from "@effect/vitest"
import { Dialect, ErrorEnvelope } from "@modelgate/anthropic-adapter"
import { GatewayError } from "@modelgate/core"

const every: ReadonlyArray<[GatewayError.GatewayError, number, string]> = [
  [new GatewayError.MissingApiKey({ message: "m" }), 401, "authentication_error"],
  [new GatewayError.InvalidApiKey({ message: "m" }), 401, "authentication_error"],
  [new GatewayError.KeyDisabled({ message: "m" }), 403, "permission_error"],
  [new GatewayError.KeyExpired({ message: "m" }), 401, "authentication_error"],
  [new GatewayError.InvalidRequest({ message: "m", param: "messages" }), 400, "invalid_request_error"],
  [new GatewayError.UnsupportedFeature({ message: "m" }), 400, "invalid_request_error"],
  [new GatewayError.ModelNotFound({ message: "m", model: "x" }), 404, "not_found_error"],
  [new GatewayError.ModelNotAllowed({ message: "m", model: "x" }), 403, "permission_error"],
  [new GatewayError.ModelNotInGroup({ message: "m", model: "x", group: "g" }), 403, "permission_error"],
  [new GatewayError.ModelUnpriced({ message: "m", model: "x" }), 403, "permission_error"],
  [new GatewayError.RequestTooLarge({ message: "m", limitBytes: 1 }), 413, "request_too_large"],
  [new GatewayError.InsufficientBalance({ message: "m" }), 402, "billing_error"],
  [new GatewayError.SpendingCapReached({ message: "m", cap: "daily" }), 402, "billing_error"],
  [new GatewayError.RateLimited({ message: "m", retryAfterSeconds: 2.5, limit: "rpm" }), 429, "rate_limit_error"],
  [new GatewayError.UpstreamUnavailable({ message: "m", status: 529 }), 529, "overloaded_error"],
  [new GatewayError.UpstreamUnavailable({ message: "m" }), 502, "api_error"],
  [new GatewayError.UpstreamTimeout({ message: "m" }), 504, "timeout_error"],
  [
    new GatewayError.UpstreamRejected({ message: "m", status: 422, code: "invalid_request_error" }),
    422,
    "invalid_request_error"
  ],
  [new GatewayError.UpstreamRejected({ message: "m", status: 404, code: "NOT_FOUND" }), 404, "not_found_error"],
  [new GatewayError.UpstreamRateLimited({ message: "m" }), 429, "rate_limit_error"],
  [new GatewayError.RouteNotFound({ message: "m" }), 404, "not_found_error"],
  [new GatewayError.MethodNotAllowed({ message: "m", allow: ["POST"] }), 405, "invalid_request_error"],
  [new GatewayError.Forbidden({ message: "m" }), 403, "permission_error"],
  [new GatewayError.ResourceNotFound({ message: "m" }), 404, "not_found_error"],
  [new GatewayError.InternalError({ message: "m" }), 500, "api_error"],
  [new GatewayError.ServiceUnavailable({ message: "m" }), 503, "api_error"],
  [new GatewayError.DatabaseUnavailable({ message: "m", retryAfterSeconds: 5 }), 529, "overloaded_error"]
]

describe("toResponse", () => {
  it("maps every gateway error to Anthropic's status, type and envelope", () => {
    for (const [error, status, type] of every) {
      const response = ErrorEnvelope.toResponse(error)
      assert.strictEqual(response.status, status, error._tag)
      assert.strictEqual(response.body.type, "error")
      assert.strictEqual(response.body.error.type, type, error._tag)
      assert.strictEqual(response.headers["content-type"], "application/json")
    }
    assert.strictEqual(ErrorEnvelope.toResponse(every[13]![0]).headers["retry-after"], "3")
    assert.strictEqual(ErrorEnvelope.toResponse(every[11]![0]).headers["x-should-retry"], "false")
    assert.strictEqual(ErrorEnvelope.toResponse(every[21]![0]).headers.allow, "POST")
    assert.strictEqual(ErrorEnvelope.toResponse(every[4]![0]).body.error.message, "messages: m")
    assert.strictEqual(ErrorEnvelope.toResponse(every[every.length - 1]![0]).headers["retry-after"], "5")
  })

  it("tells the client not to retry refusals and failures the gateway already failed over from", () => {
    const terminal = [
      new GatewayError.InvalidApiKey({ message: "m" }),
      new GatewayError.MissingApiKey({ message: "m" }),
      new GatewayError.KeyExpired({ message: "m" }),
      new GatewayError.KeyDisabled({ message: "m" }),
      new GatewayError.ModelNotAllowed({ message: "m", model: "x" }),
      new GatewayError.InsufficientBalance({ message: "m" }),
      new GatewayError.UpstreamUnavailable({ message: "m" }),
      new GatewayError.UpstreamUnavailable({ message: "m", status: 529 }),
      new GatewayError.UpstreamTimeout({ message: "m" })
    ]
    for (const error of terminal) {
      assert.strictEqual(ErrorEnvelope.toResponse(error).headers["x-should-retry"], "false", error._tag)
    }
    assert.isUndefined(
      ErrorEnvelope.toResponse(new GatewayError.DatabaseUnavailable({ message: "m", retryAfterSeconds: 5 }))
        .headers["x-should-retry"],
      "a database outage is worth retrying"
    )
  })

  it("a 429 of the gateway's limits carries the anthropic-ratelimit-* headers", () => {
    const response = ErrorEnvelope.toResponse(
      new GatewayError.RateLimited({
        message: "m",
        retryAfterSeconds: 12,
        limit: "rpm",
        snapshot: {
          limitRequests: 30,
          remainingRequests: 0,
          resetRequestsMs: 12_000,
          limitTokens: 10_000,
          remainingTokens: 9_000,
          resetTokensMs: 1_000
        }
      })
    )
    assert.deepStrictEqual(
      [
        response.headers["retry-after"],
        response.headers["anthropic-ratelimit-requests-limit"],
        response.headers["anthropic-ratelimit-requests-remaining"],
        response.headers["anthropic-ratelimit-tokens-limit"],
        response.headers["anthropic-ratelimit-tokens-remaining"]
      ],
      ["12", "30", "0", "10000", "9000"]
    )
  })

  it("an answered call carries the same anthropic-ratelimit-* headers, with reset dates, without retry-after or unknown limits", () => {
    const snapshot = {
      limitRequests: 30,
      remainingRequests: 29,
      resetRequestsMs: 2_000,
      limitTokens: null,
      remainingTokens: null,
      resetTokensMs: null
    }
    const now = Date.UTC(2026, 10, 29, 0, 0, 0, 500)
    assert.deepStrictEqual(Dialect.client.rateLimitHeaders(snapshot, now), {
      "anthropic-ratelimit-requests-limit": "30",
      "anthropic-ratelimit-requests-remaining": "29",
      // 2.5 s after the whole second, rounded up.
      "anthropic-ratelimit-requests-reset": "2026-11-29T00:00:03Z"
    })
    const error = new GatewayError.RateLimited({ message: "m", retryAfterSeconds: 2, limit: "rpm", snapshot })
    const refused = ErrorEnvelope.toResponse(error).headers
    const { ["anthropic-ratelimit-requests-reset"]: _reset, ...withoutReset } = Dialect.client.rateLimitHeaders(
      snapshot,
      now
    )
    assert.deepStrictEqual(refused, { ...refused, ...withoutReset })
    // The dialect's refusal, the time known, says when the limit resets too.
    assert.deepStrictEqual(Dialect.client.renderError(error, now).headers, {
      ...refused,
      ...Dialect.client.rateLimitHeaders(snapshot, now)
    })
  })

  it("writes an error event for a started stream", () => {
    assert.strictEqual(
      ErrorEnvelope.streamError(new GatewayError.UpstreamTimeout({ message: "late" })),
      "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"timeout_error\",\"message\":\"late\"}}\n\n"
    )
  })
})

describe("classifyUpstream", () => {
  const body = (type: string, message: string) =>
    JSON.stringify({ type: "error", error: { type, message }, request_id: "req_1" })

  it("a refusal of the key or its account counts against the key, never passing on the upstream's words", () => {
    for (
      const [status, type] of [[401, "authentication_error"], [402, "billing_error"], [
        400,
        "authentication_error"
      ]] as const
    ) {
      const error = ErrorEnvelope.classifyUpstream(status, body(type, "invalid x-api-key sk-ant-secret"))
      assert.strictEqual(error._tag, "UpstreamUnavailable")
      assert.isTrue((error as GatewayError.UpstreamUnavailable).credentialsRefused)
      assert.notInclude(error.message, "sk-ant")
    }
  })

  it("a 403 permission_error is about what the request named: the caller's", () => {
    const error = ErrorEnvelope.classifyUpstream(
      403,
      body("permission_error", "The file file_123 does not belong to this workspace.")
    )
    assert.strictEqual(error._tag, "UpstreamRejected")
    assert.deepStrictEqual([(error as GatewayError.UpstreamRejected).status, error.message], [
      403,
      "The file file_123 does not belong to this workspace."
    ])
  })

  it("rate limits with retry-after, overload, timeouts, rejections and server errors", () => {
    const limited = ErrorEnvelope.classifyUpstream(429, body("rate_limit_error", "slow"), { "retry-after": "7" })
    assert.strictEqual(limited._tag, "UpstreamRateLimited")
    assert.strictEqual((limited as GatewayError.UpstreamRateLimited).retryAfterSeconds, 7)
    const ms = ErrorEnvelope.classifyUpstream(429, "", { "retry-after-ms": "1500" })
    assert.strictEqual((ms as GatewayError.UpstreamRateLimited).retryAfterSeconds, 1.5)
    const overloaded = ErrorEnvelope.classifyUpstream(529, body("overloaded_error", "Overloaded"))
    assert.deepStrictEqual([overloaded._tag, (overloaded as GatewayError.UpstreamUnavailable).status], [
      "UpstreamUnavailable",
      529
    ])
    assert.strictEqual(ErrorEnvelope.classifyUpstream(504, "")._tag, "UpstreamTimeout")
    const rejected = ErrorEnvelope.classifyUpstream(
      400,
      body("invalid_request_error", "messages.0.content.0.tool_use.id: String should match pattern")
    )
    assert.strictEqual(rejected._tag, "UpstreamRejected")
    assert.strictEqual(rejected.message, "messages.0.content.0.tool_use.id: String should match pattern")
    assert.strictEqual((rejected as GatewayError.UpstreamRejected).code, "invalid_request_error")
    const server = ErrorEnvelope.classifyUpstream(500, "<html>oops</html>")
    assert.deepStrictEqual([server._tag, (server as GatewayError.UpstreamUnavailable).status], [
      "UpstreamUnavailable",
      500
    ])
  })
})
