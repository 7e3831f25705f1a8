import { assert, describe, it } from "@effect/vitest"
import { ErrorEnvelope } from "@modelgate/bedrock-adapter"

const header = (type: string) => ({
  "x-amzn-errortype": `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`
})

describe("Bedrock errors", () => {
  it("ThrottlingException is the upstream rate-limiting the gateway", () => {
    const error = ErrorEnvelope.classifyUpstream(
      429,
      "{\"message\":\"Too many requests, please wait before trying again.\"}",
      {
        ...header("ThrottlingException"),
        "retry-after": "3"
      }
    )
    assert.strictEqual(error._tag, "UpstreamRateLimited")
    assert.strictEqual((error as { retryAfterSeconds?: number }).retryAfterSeconds, 3)
  })

  for (
    const [type, message] of [
      ["AccessDeniedException", "You don't have access to the model with the specified model ID."],
      ["UnrecognizedClientException", "The security token included in the request is invalid."],
      ["InvalidSignatureException", "The request signature we calculated does not match the signature you provided."],
      ["ExpiredTokenException", "The security token included in the request is expired"]
    ] as const
  ) {
    it(`${type} refuses the channel's credentials, quoting nothing of AWS's words`, () => {
      const error = ErrorEnvelope.classifyUpstream(403, JSON.stringify({ message }), { "x-amzn-errortype": type })
      assert.strictEqual(error._tag, "UpstreamUnavailable")
      assert.isTrue((error as { credentialsRefused?: boolean }).credentialsRefused)
      assert.notInclude(error.message, message)
    })
  }

  it("reads the type from the body's __type when the header is missing", () => {
    const error = ErrorEnvelope.classifyUpstream(
      403,
      "{\"__type\":\"com.amazon.coral.service#UnrecognizedClientException\",\"message\":\"The security token included in the request is invalid.\"}"
    )
    assert.isTrue((error as { credentialsRefused?: boolean }).credentialsRefused)
  })

  it("a 403 of a Bedrock API key refused (capital Message, no type) is a credential refusal", () => {
    const error = ErrorEnvelope.classifyUpstream(
      403,
      "{\"Message\":\"Authentication failed: Please make sure your API Key is valid.\"}"
    )
    assert.isTrue((error as { credentialsRefused?: boolean }).credentialsRefused)
  })

  it("ValidationException is the caller's, with AWS's words and the type as code", () => {
    const error = ErrorEnvelope.classifyUpstream(
      400,
      "{\"message\":\"The model returned the following errors: max_tokens: 0 < 1\"}",
      header("ValidationException")
    )
    assert.strictEqual(error._tag, "UpstreamRejected")
    assert.strictEqual(error.message, "The model returned the following errors: max_tokens: 0 < 1")
    assert.strictEqual((error as { code?: string }).code, "ValidationException")
    assert.strictEqual((error as { status?: number }).status, 400)
  })

  it("ModelNotReadyException (429) is the upstream failing, not a rate limit", () => {
    const error = ErrorEnvelope.classifyUpstream(
      429,
      "{\"message\":\"Model is not ready\"}",
      header("ModelNotReadyException")
    )
    assert.strictEqual(error._tag, "UpstreamUnavailable")
    assert.notOk((error as { credentialsRefused?: boolean }).credentialsRefused)
  })

  it("ModelTimeoutException is a timeout; InternalServerException and ServiceUnavailableException are failures", () => {
    assert.strictEqual(
      ErrorEnvelope.classifyUpstream(408, "{}", header("ModelTimeoutException"))._tag,
      "UpstreamTimeout"
    )
    assert.strictEqual(
      ErrorEnvelope.classifyUpstream(500, "{}", header("InternalServerException"))._tag,
      "UpstreamUnavailable"
    )
    assert.strictEqual(
      ErrorEnvelope.classifyUpstream(503, "{}", header("ServiceUnavailableException"))._tag,
      "UpstreamUnavailable"
    )
    assert.strictEqual(ErrorEnvelope.classifyUpstream(502, "<html>bad gateway</html>")._tag, "UpstreamUnavailable")
  })

  it("in-stream exceptions are classified by their :exception-type", () => {
    assert.strictEqual(
      ErrorEnvelope.classifyException("throttlingException", { message: "slow down" })._tag,
      "UpstreamRateLimited"
    )
    assert.strictEqual(
      ErrorEnvelope.classifyException("validationException", { message: "bad" })._tag,
      "UpstreamRejected"
    )
    const stream = ErrorEnvelope.classifyException("modelStreamErrorException", { message: "boom" })
    assert.strictEqual(stream._tag, "UpstreamUnavailable")
    assert.strictEqual((stream as { status?: number }).status, 424)
  })
})
