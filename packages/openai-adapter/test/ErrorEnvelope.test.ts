import { assert, describe, it } from "@effect/vitest"
import { GatewayError } from "@modelgate/core"
import { classifyUpstream, streamError, toResponse, toResponsesResponse } from "../src/ErrorEnvelope.ts"

const json = { "content-type": "application/json" }

// [error, status, type, code, extra headers, param]
const table: Array<[GatewayError.GatewayError, number, string, string, Record<string, string>, string | null]> = [
  [new GatewayError.MissingApiKey({ message: "m" }), 401, "authentication_error", "missing_api_key", {}, null],
  [new GatewayError.InvalidApiKey({ message: "m" }), 401, "authentication_error", "invalid_api_key", {}, null],
  [new GatewayError.KeyDisabled({ message: "m" }), 401, "authentication_error", "key_disabled", {}, null],
  [new GatewayError.KeyExpired({ message: "m" }), 401, "authentication_error", "key_expired", {}, null],
  [
    new GatewayError.InvalidRequest({ message: "m", param: "messages[0].role" }),
    400,
    "invalid_request_error",
    "invalid_request",
    {},
    "messages[0].role"
  ],
  [
    new GatewayError.UnsupportedFeature({ message: "m", param: "functions" }),
    400,
    "invalid_request_error",
    "unsupported_feature",
    {},
    "functions"
  ],
  [
    new GatewayError.ModelNotFound({ message: "m", model: "x" }),
    404,
    "invalid_request_error",
    "model_not_found",
    {},
    null
  ],
  [
    new GatewayError.ModelNotAllowed({ message: "m", model: "x" }),
    403,
    "permission_error",
    "model_not_allowed",
    {},
    null
  ],
  [
    new GatewayError.ModelNotInGroup({ message: "m", model: "x", group: "g" }),
    403,
    "permission_error",
    "model_not_in_group",
    {},
    null
  ],
  [new GatewayError.ModelUnpriced({ message: "m", model: "x" }), 403, "permission_error", "model_unpriced", {}, null],
  [
    new GatewayError.RequestTooLarge({ message: "m", limitBytes: 10 }),
    413,
    "invalid_request_error",
    "request_too_large",
    {},
    null
  ],
  [new GatewayError.InsufficientBalance({ message: "m" }), 429, "insufficient_quota", "insufficient_quota", {
    "x-should-retry": "false"
  }, null],
  [
    new GatewayError.SpendingCapReached({ message: "m", cap: "daily" }),
    429,
    "insufficient_quota",
    "insufficient_quota",
    { "x-should-retry": "false" },
    null
  ],
  [
    new GatewayError.RateLimited({ message: "m", retryAfterSeconds: 1.2, limit: "rpm" }),
    429,
    "rate_limit_error",
    "rate_limit_exceeded",
    { "retry-after": "2", "x-should-retry": "true" },
    null
  ],
  [new GatewayError.UpstreamUnavailable({ message: "m" }), 502, "api_error", "upstream_error", {
    "x-should-retry": "false"
  }, null],
  [new GatewayError.UpstreamTimeout({ message: "m" }), 504, "api_error", "upstream_timeout", {
    "x-should-retry": "false"
  }, null],
  [
    new GatewayError.UpstreamRejected({ message: "m", status: 422, code: "bad_schema", param: "tools" }),
    422,
    "invalid_request_error",
    "bad_schema",
    {},
    "tools"
  ],
  [
    new GatewayError.UpstreamRejected({ message: "m", status: 400 }),
    400,
    "invalid_request_error",
    "upstream_rejected",
    {},
    null
  ],
  [
    new GatewayError.UpstreamRateLimited({ message: "m", retryAfterSeconds: 30 }),
    429,
    "rate_limit_error",
    "upstream_rate_limited",
    { "retry-after": "30", "x-should-retry": "true" },
    null
  ],
  [new GatewayError.UpstreamRateLimited({ message: "m" }), 429, "rate_limit_error", "upstream_rate_limited", {
    "x-should-retry": "true"
  }, null],
  [new GatewayError.RouteNotFound({ message: "m" }), 404, "invalid_request_error", "not_found", {}, null],
  [
    new GatewayError.MethodNotAllowed({ message: "m", allow: ["GET", "POST"] }),
    405,
    "invalid_request_error",
    "method_not_allowed",
    { allow: "GET, POST" },
    null
  ],
  [new GatewayError.Forbidden({ message: "m" }), 403, "permission_error", "forbidden", {}, null],
  [new GatewayError.ResourceNotFound({ message: "m" }), 404, "invalid_request_error", "not_found", {}, null],
  [new GatewayError.InternalError({ message: "m" }), 500, "api_error", "internal_error", {}, null],
  [new GatewayError.ServiceUnavailable({ message: "m" }), 503, "api_error", "service_unavailable", {}, null],
  [
    new GatewayError.DatabaseUnavailable({ message: "m", retryAfterSeconds: 4.2 }),
    503,
    "api_error",
    "database_unavailable",
    { "retry-after": "5", "x-should-retry": "true" },
    null
  ]
]

describe("ErrorEnvelope.toResponse", () => {
  it("maps every GatewayError tag", () => {
    const covered = new Set(table.map(([error]) => error._tag))
    const all = GatewayError.GatewayError.members.map((member) => member.identifier)
    assert.deepStrictEqual([...covered].sort(), [...all].sort())
  })
  for (const [error, status, type, code, headers, param] of table) {
    it(`${error._tag} -> ${status} ${code}`, () => {
      assert.deepStrictEqual(toResponse(error), {
        status,
        headers: { ...json, ...headers },
        body: { error: { message: "m", type, param, code } }
      })
    })
  }
  it("streamError is one in-band SSE event", () => {
    assert.strictEqual(
      streamError(new GatewayError.UpstreamTimeout({ message: "slow" })),
      "data: {\"error\":{\"message\":\"slow\",\"type\":\"api_error\",\"param\":null,\"code\":\"upstream_timeout\"}}\n\n"
    )
  })
})

describe("ErrorEnvelope.toResponsesResponse (the Responses API, Codex's door)", () => {
  const final = { "x-should-retry": "false", "retry-after": "0" }
  it("refuses a balance or a spending cap with 402 insufficient_quota, never a 429 Codex words for itself", () => {
    for (
      const error of [
        new GatewayError.InsufficientBalance({ message: "Your balance is 0.00 USD" }),
        new GatewayError.SpendingCapReached({ message: "Your balance is 0.00 USD", cap: "daily" })
      ]
    ) {
      assert.deepStrictEqual(toResponsesResponse(error), {
        status: 402,
        headers: { ...json, ...final },
        body: {
          error: {
            message: "Your balance is 0.00 USD",
            type: "insufficient_quota",
            param: null,
            code: "insufficient_quota"
          }
        }
      })
    }
  })
  it("gives the refusals a retry cannot change, and failures already failed over, retry-after 0 (Codex's delay) and x-should-retry false", () => {
    const finals = table.filter(([error]) =>
      [
        "MissingApiKey",
        "InvalidApiKey",
        "KeyDisabled",
        "KeyExpired",
        "ModelNotAllowed",
        "ModelNotInGroup",
        "ModelUnpriced",
        "Forbidden",
        "UpstreamUnavailable",
        "UpstreamTimeout"
      ].includes(error._tag)
    )
    assert.strictEqual(finals.length, 10)
    for (const [error, status, type, code, headers, param] of finals) {
      assert.deepStrictEqual(toResponsesResponse(error), {
        status,
        headers: { ...json, ...headers, ...final },
        body: { error: { message: "m", type, param, code } }
      }, error._tag)
    }
  })
  it("answers everything else as chat completions do", () => {
    for (const [error] of table) {
      if (["InsufficientBalance", "SpendingCapReached"].includes(error._tag)) continue
      if (toResponsesResponse(error).headers["retry-after"] === "0") continue
      assert.deepStrictEqual(toResponsesResponse(error), toResponse(error), error._tag)
    }
  })
})

describe("ErrorEnvelope.classifyUpstream", () => {
  const body = (message: string, extra: Record<string, unknown> = {}) =>
    JSON.stringify({ error: { message, type: "invalid_request_error", param: null, code: null, ...extra } })

  it("401 refuses the key itself: UpstreamUnavailable with credentialsRefused, without the upstream's message", () => {
    const error = classifyUpstream(401, body("Incorrect API key provided: sk-abc***xyz"), {})
    assert.strictEqual(error._tag, "UpstreamUnavailable")
    assert.isTrue(error._tag === "UpstreamUnavailable" && error.credentialsRefused)
    assert.notInclude(error.message, "sk-")
    assert.include(error.message, "credentials")
  })
  it("403 is a permission about what the request asked for: the caller's, with the upstream's words; a region refusal is the channel's", () => {
    const error = classifyUpstream(
      403,
      body("You are not allowed to sample from this model", { code: "model_not_allowed" }),
      {}
    )
    assert.deepStrictEqual(
      [error._tag, error.message, error._tag === "UpstreamRejected" ? error.status : 0],
      ["UpstreamRejected", "You are not allowed to sample from this model", 403]
    )
    const region = classifyUpstream(
      403,
      body("Country, region, or territory not supported", { code: "unsupported_country_region_territory" }),
      {}
    )
    assert.strictEqual(region._tag, "UpstreamUnavailable")
    assert.isUndefined(region._tag === "UpstreamUnavailable" ? region.credentialsRefused : true)
  })
  it("429 becomes UpstreamRateLimited with retry-after (seconds or -ms)", () => {
    const a = classifyUpstream(429, body("Rate limit reached for org-123"), { "Retry-After": "7" })
    assert.deepStrictEqual([a._tag, a._tag === "UpstreamRateLimited" ? a.retryAfterSeconds : -1], [
      "UpstreamRateLimited",
      7
    ])
    assert.notInclude(a.message, "org-123")
    const b = classifyUpstream(429, "", { "retry-after-ms": "1500" })
    assert.strictEqual(b._tag === "UpstreamRateLimited" ? b.retryAfterSeconds : -1, 1.5)
    const c = classifyUpstream(429, "not json", {})
    assert.isTrue(c._tag === "UpstreamRateLimited" && c.retryAfterSeconds === undefined)
  })
  it("429 insufficient_quota is the channel's account, not a retry", () => {
    assert.strictEqual(
      classifyUpstream(429, body("quota", { code: "insufficient_quota" }), {})._tag,
      "UpstreamUnavailable"
    )
  })
  it("other 4xx become UpstreamRejected with message, param and code", () => {
    const error = classifyUpstream(400, body("bad temperature", { param: "temperature", code: "invalid_value" }), {})
    assert.deepStrictEqual(
      error,
      new GatewayError.UpstreamRejected({
        status: 400,
        message: "bad temperature",
        param: "temperature",
        code: "invalid_value"
      })
    )
    const html = classifyUpstream(404, "<html>nope</html>", {})
    assert.deepStrictEqual(
      html,
      new GatewayError.UpstreamRejected({ status: 404, message: "The upstream refused the request (HTTP 404)." })
    )
  })
  it("5xx become UpstreamUnavailable with the status; 408 UpstreamTimeout", () => {
    const error = classifyUpstream(503, body("overloaded"), {})
    assert.isTrue(error._tag === "UpstreamUnavailable" && error.status === 503)
    assert.strictEqual(classifyUpstream(408, "", {})._tag, "UpstreamTimeout")
  })
})
