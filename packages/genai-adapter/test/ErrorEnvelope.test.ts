import { assert, describe, it } from "@effect/vitest"
import { GatewayError } from "@modelgate/core"
import { ErrorEnvelope } from "@modelgate/genai-adapter"

const rpc = "type.googleapis.com/google.rpc."

/** Every GatewayError tag with an instance and the exact Gemini answer expected for it. */
const table: ReadonlyArray<
  readonly [GatewayError.GatewayError, number, string, Record<string, string>, ReadonlyArray<unknown> | undefined]
> = [
  [new GatewayError.MissingApiKey({ message: "No API key." }), 403, "PERMISSION_DENIED", {}, [{
    "@type": `${rpc}ErrorInfo`,
    reason: "API_KEY_MISSING",
    domain: "modelgate"
  }]],
  [new GatewayError.InvalidApiKey({ message: "API key not valid." }), 400, "INVALID_ARGUMENT", {}, [{
    "@type": `${rpc}ErrorInfo`,
    reason: "API_KEY_INVALID",
    domain: "googleapis.com",
    metadata: { service: "generativelanguage.googleapis.com" }
  }]],
  [new GatewayError.KeyDisabled({ message: "Disabled." }), 403, "PERMISSION_DENIED", {}, [{
    "@type": `${rpc}ErrorInfo`,
    reason: "API_KEY_DISABLED",
    domain: "modelgate"
  }]],
  [new GatewayError.KeyExpired({ message: "Expired." }), 400, "INVALID_ARGUMENT", {}, [{
    "@type": `${rpc}ErrorInfo`,
    reason: "API_KEY_EXPIRED",
    domain: "googleapis.com",
    metadata: { service: "generativelanguage.googleapis.com" }
  }]],
  [
    new GatewayError.InvalidRequest({ message: "Bad topK.", param: "generationConfig.topK" }),
    400,
    "INVALID_ARGUMENT",
    {},
    [{ "@type": `${rpc}BadRequest`, fieldViolations: [{ field: "generationConfig.topK", description: "Bad topK." }] }]
  ],
  [new GatewayError.UnsupportedFeature({ message: "No search." }), 400, "INVALID_ARGUMENT", {}, undefined],
  [new GatewayError.ModelNotFound({ message: "No model.", model: "x" }), 404, "NOT_FOUND", {}, undefined],
  [new GatewayError.ModelNotAllowed({ message: "Not allowed.", model: "x" }), 403, "PERMISSION_DENIED", {}, [{
    "@type": `${rpc}ErrorInfo`,
    reason: "MODEL_NOT_ALLOWED",
    domain: "modelgate",
    metadata: { model: "x" }
  }]],
  [
    new GatewayError.ModelNotInGroup({ message: "Not in group.", model: "x", group: "g" }),
    403,
    "PERMISSION_DENIED",
    {},
    [{
      "@type": `${rpc}ErrorInfo`,
      reason: "MODEL_NOT_IN_GROUP",
      domain: "modelgate",
      metadata: { model: "x", group: "g" }
    }]
  ],
  [new GatewayError.ModelUnpriced({ message: "Unpriced.", model: "x" }), 403, "PERMISSION_DENIED", {}, [{
    "@type": `${rpc}ErrorInfo`,
    reason: "MODEL_UNPRICED",
    domain: "modelgate",
    metadata: { model: "x" }
  }]],
  [new GatewayError.RequestTooLarge({ message: "Too large.", limitBytes: 1024 }), 400, "INVALID_ARGUMENT", {}, [{
    "@type": `${rpc}ErrorInfo`,
    reason: "REQUEST_TOO_LARGE",
    domain: "modelgate",
    metadata: { limitBytes: "1024" }
  }]],
  [new GatewayError.InsufficientBalance({ message: "Broke." }), 429, "RESOURCE_EXHAUSTED", {}, [
    {
      "@type": `${rpc}ErrorInfo`,
      reason: "INSUFFICIENT_G1_CREDITS_BALANCE",
      domain: "modelgate",
      metadata: { reason: "INSUFFICIENT_BALANCE" }
    },
    {
      "@type": `${rpc}QuotaFailure`,
      violations: [{
        quotaMetric: "modelgate/balance",
        quotaId: "BalanceExhausted",
        description: "The balance is exhausted; retrying will not help until it is topped up."
      }]
    }
  ]],
  [new GatewayError.SpendingCapReached({ message: "Cap.", cap: "daily" }), 429, "RESOURCE_EXHAUSTED", {}, [
    {
      "@type": `${rpc}ErrorInfo`,
      reason: "INSUFFICIENT_G1_CREDITS_BALANCE",
      domain: "modelgate",
      metadata: { reason: "SPENDING_CAP_REACHED", cap: "daily" }
    },
    {
      "@type": `${rpc}QuotaFailure`,
      violations: [{
        quotaMetric: "modelgate/spending_cap_daily",
        quotaId: "SpendingCapDayBudget",
        description:
          "The daily budget of this API key is spent; retrying will not help until it is raised or the UTC day ends."
      }]
    }
  ]],
  [
    new GatewayError.RateLimited({ message: "Slow down.", retryAfterSeconds: 12, limit: "rpm" }),
    429,
    "RESOURCE_EXHAUSTED",
    { "retry-after": "12" },
    [{ "@type": `${rpc}RetryInfo`, retryDelay: "12s" }]
  ],
  [new GatewayError.UpstreamUnavailable({ message: "Down." }), 502, "UNAVAILABLE", {}, undefined],
  [new GatewayError.UpstreamTimeout({ message: "Slow." }), 504, "DEADLINE_EXCEEDED", {}, undefined],
  [new GatewayError.UpstreamRejected({ message: "Bad.", status: 400 }), 400, "INVALID_ARGUMENT", {}, undefined],
  [new GatewayError.UpstreamRateLimited({ message: "Busy.", retryAfterSeconds: 0.8 }), 429, "RESOURCE_EXHAUSTED", {
    "retry-after": "1"
  }, [{ "@type": `${rpc}RetryInfo`, retryDelay: "0.8s" }]],
  [new GatewayError.RouteNotFound({ message: "No route." }), 404, "NOT_FOUND", {}, undefined],
  [new GatewayError.MethodNotAllowed({ message: "Use POST.", allow: ["POST"] }), 405, "UNIMPLEMENTED", {
    allow: "POST"
  }, undefined],
  [new GatewayError.Forbidden({ message: "Admins only." }), 403, "PERMISSION_DENIED", {}, [{
    "@type": `${rpc}ErrorInfo`,
    reason: "FORBIDDEN",
    domain: "modelgate"
  }]],
  [new GatewayError.ResourceNotFound({ message: "No such key." }), 404, "NOT_FOUND", {}, undefined],
  [new GatewayError.InternalError({ message: "Oops." }), 500, "INTERNAL", {}, undefined],
  [new GatewayError.ServiceUnavailable({ message: "Shutting down." }), 503, "UNAVAILABLE", {}, undefined],
  [new GatewayError.DatabaseUnavailable({ message: "No database.", retryAfterSeconds: 5 }), 503, "UNAVAILABLE", {
    "retry-after": "5"
  }, [{ "@type": `${rpc}RetryInfo`, retryDelay: "5s" }]]
]

describe("ErrorEnvelope.toResponse", () => {
  it("covers every GatewayError tag", () => {
    const tags = new Set<string>(table.map(([error]) => error._tag))
    for (const member of GatewayError.GatewayError.members) {
      assert.isTrue(tags.has(member.identifier), member.identifier)
    }
  })

  for (const [error, status, name, headers, details] of table) {
    it(`${error._tag} -> ${status} ${name}`, () => {
      const response = ErrorEnvelope.toResponse(error)
      assert.strictEqual(response.status, status)
      assert.deepStrictEqual(response.headers, { "content-type": "application/json", ...headers })
      assert.strictEqual(response.body.error.code, status)
      assert.strictEqual(response.body.error.status, name)
      assert.deepStrictEqual(response.body.error.details, details)
      assert.isTrue(response.body.error.message.startsWith(error.message))
    })
  }

  it("adds Google's retry hint to rate-limit messages", () => {
    const response = ErrorEnvelope.toResponse(
      new GatewayError.RateLimited({ message: "Slow down.", retryAfterSeconds: 12, limit: "rpm" })
    )
    assert.strictEqual(response.body.error.message, "Slow down. Please retry in 12s.")
  })

  it("terminal quota errors carry no RetryInfo and no retry-after, a reason gemini-cli takes as terminal, and no quotaId it rewrites", () => {
    const errors = [
      new GatewayError.InsufficientBalance({ message: "x" }),
      new GatewayError.SpendingCapReached({ message: "x", cap: "daily" }),
      new GatewayError.SpendingCapReached({ message: "x", cap: "monthly" }),
      new GatewayError.SpendingCapReached({ message: "x", cap: "quota" })
    ]
    for (const error of errors) {
      const response = ErrorEnvelope.toResponse(error)
      assert.isUndefined(response.headers["retry-after"])
      assert.isFalse(JSON.stringify(response.body).includes("RetryInfo"))
      const quotaIds = (response.body.error.details ?? []).flatMap((d) =>
        "violations" in d ? (d.violations as ReadonlyArray<{ quotaId: string }>).map((v) => v.quotaId) : []
      )
      // gemini-cli replaces the message of a 429 whose quotaId contains PerDay or Daily with its own words
      assert.isFalse(quotaIds.some((id) => id.includes("PerDay") || id.includes("Daily")), quotaIds.join())
      // and stops at once, showing the message as it is, on this ErrorInfo reason (the first ErrorInfo)
      const info = (response.body.error.details ?? []).find((d) => "reason" in d) as { reason: string }
      assert.strictEqual(info.reason, "INSUFFICIENT_G1_CREDITS_BALANCE")
    }
  })

  it("a spending cap's quotaId and description name the cap", () => {
    const violation = (cap: "daily" | "monthly" | "quota") => {
      const details =
        ErrorEnvelope.toResponse(new GatewayError.SpendingCapReached({ message: "x", cap })).body.error.details ?? []
      return (details.find((d) => "violations" in d) as {
        violations: ReadonlyArray<{ quotaMetric: string; quotaId: string; description: string }>
      })
        .violations[0]!
    }
    assert.deepStrictEqual(violation("daily").quotaId, "SpendingCapDayBudget")
    assert.deepStrictEqual(violation("monthly").quotaId, "SpendingCapMonthBudget")
    assert.include(violation("monthly").description, "monthly budget")
    assert.deepStrictEqual(violation("quota").quotaId, "SpendingCapLifetime")
    assert.include(violation("quota").description, "lifetime spending cap")
    assert.strictEqual(violation("quota").quotaMetric, "modelgate/spending_cap_quota")
  })

  it("UpstreamUnavailable keeps 503, and UpstreamRejected keeps an upstream rpc status", () => {
    assert.strictEqual(
      ErrorEnvelope.toResponse(new GatewayError.UpstreamUnavailable({ message: "x", status: 503 })).status,
      503
    )
    const rejected = ErrorEnvelope.toResponse(
      new GatewayError.UpstreamRejected({ message: "x", status: 400, code: "FAILED_PRECONDITION" })
    )
    assert.strictEqual(rejected.body.error.status, "FAILED_PRECONDITION")
    assert.strictEqual(
      ErrorEnvelope.toResponse(new GatewayError.UpstreamRejected({ message: "x", status: 409, code: "conflict" })).body
        .error.status,
      "ABORTED"
    )
  })

  it("streamError is one exact SSE event", () => {
    assert.strictEqual(
      ErrorEnvelope.streamError(new GatewayError.UpstreamTimeout({ message: "Slow." })),
      "data: {\"error\":{\"code\":504,\"message\":\"Slow.\",\"status\":\"DEADLINE_EXCEEDED\"}}\r\n\r\n"
    )
  })
})

describe("ErrorEnvelope.classifyUpstream", () => {
  it("a clear refusal of the key (401, API_KEY_INVALID, API_KEY_EXPIRED, SERVICE_DISABLED) counts against it, without the upstream's words", () => {
    const info = (code: number, status: string, reason: string) =>
      JSON.stringify({
        error: {
          code,
          message: `API key refused. key=AIza123 (${reason})`,
          status,
          details: [{ "@type": `${rpc}ErrorInfo`, reason }]
        }
      })
    for (
      const [status, body] of [
        [400, info(400, "INVALID_ARGUMENT", "API_KEY_INVALID")],
        [400, info(400, "INVALID_ARGUMENT", "API_KEY_EXPIRED")],
        [403, info(403, "PERMISSION_DENIED", "SERVICE_DISABLED")],
        [401, "{}"]
      ] as const
    ) {
      const error = ErrorEnvelope.classifyUpstream(status, body)
      assert.strictEqual(error._tag, "UpstreamUnavailable", body)
      assert.isTrue(error._tag === "UpstreamUnavailable" && error.credentialsRefused, body)
      assert.isFalse(error.message.includes("AIza"))
    }
  })

  it("a 403 about the request's own content, and a message that merely mentions an API key, are the caller's", () => {
    const file = ErrorEnvelope.classifyUpstream(
      403,
      JSON.stringify({
        error: {
          code: 403,
          message: "You do not have permission to access the File abc or it may not exist.",
          status: "PERMISSION_DENIED"
        }
      })
    )
    assert.deepStrictEqual(
      [file._tag, file._tag === "UpstreamRejected" ? [file.status, file.code] : [], file.message],
      [
        "UpstreamRejected",
        [403, "PERMISSION_DENIED"],
        "You do not have permission to access the File abc or it may not exist."
      ]
    )
    const mentions = ErrorEnvelope.classifyUpstream(
      400,
      JSON.stringify({
        error: { code: 400, message: "Tool 'search' needs an api key parameter", status: "INVALID_ARGUMENT" }
      })
    )
    assert.strictEqual(mentions._tag, "UpstreamRejected")
  })

  it("429 reads RetryInfo, else retry-after, else the message hint", () => {
    const withInfo = JSON.stringify({
      error: {
        code: 429,
        message: "Quota",
        status: "RESOURCE_EXHAUSTED",
        details: [{ "@type": `${rpc}RetryInfo`, retryDelay: "37s" }]
      }
    })
    const a = ErrorEnvelope.classifyUpstream(429, withInfo, { "retry-after": "5" })
    assert.strictEqual(a._tag, "UpstreamRateLimited")
    assert.strictEqual(a._tag === "UpstreamRateLimited" ? a.retryAfterSeconds : -1, 37)
    const b = ErrorEnvelope.classifyUpstream(429, "{}", { "retry-after": "5" })
    assert.strictEqual(b._tag === "UpstreamRateLimited" ? b.retryAfterSeconds : -1, 5)
    const c = ErrorEnvelope.classifyUpstream(
      429,
      JSON.stringify({ error: { code: 429, message: "Please retry in 39.3s.", status: "RESOURCE_EXHAUSTED" } })
    )
    assert.strictEqual(c._tag === "UpstreamRateLimited" ? c.retryAfterSeconds : -1, 39.3)
    const d = ErrorEnvelope.classifyUpstream(429, "not json")
    assert.strictEqual(d._tag, "UpstreamRateLimited")
    assert.isUndefined(d._tag === "UpstreamRateLimited" ? d.retryAfterSeconds : 0)
  })

  it("5xx -> UpstreamUnavailable, 504 -> UpstreamTimeout, other 4xx -> UpstreamRejected with the upstream's message", () => {
    assert.deepStrictEqual(ErrorEnvelope.classifyUpstream(503, "overloaded")._tag, "UpstreamUnavailable")
    assert.deepStrictEqual(ErrorEnvelope.classifyUpstream(504, "")._tag, "UpstreamTimeout")
    const rejected = ErrorEnvelope.classifyUpstream(
      400,
      JSON.stringify({ error: { code: 400, message: "Invalid value at 'contents[0]'", status: "INVALID_ARGUMENT" } })
    )
    assert.strictEqual(rejected._tag, "UpstreamRejected")
    if (rejected._tag === "UpstreamRejected") {
      assert.strictEqual(rejected.message, "Invalid value at 'contents[0]'")
      assert.strictEqual(rejected.code, "INVALID_ARGUMENT")
      assert.strictEqual(rejected.status, 400)
    }
    const array = ErrorEnvelope.classifyUpstream(
      404,
      JSON.stringify([{ error: { code: 404, message: "models/x is not found", status: "NOT_FOUND" } }])
    )
    assert.strictEqual(array.message, "models/x is not found")
  })

  it("parses protobuf durations", () => {
    assert.strictEqual(ErrorEnvelope.parseDuration("37s"), 37)
    assert.strictEqual(ErrorEnvelope.parseDuration("800ms"), 0.8)
    assert.isUndefined(ErrorEnvelope.parseDuration("soon"))
    assert.strictEqual(ErrorEnvelope.formatDuration(1.5), "1.5s")
  })
})
