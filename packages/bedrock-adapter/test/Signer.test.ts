import { assert, describe, it } from "@effect/vitest"
import { Endpoint, Signer } from "@modelgate/bedrock-adapter"
import { Effect } from "effect"
import { TestClock } from "effect/testing"

// AWS's Signature Version 4 test suite: its example credentials, region, service and time.
const suite = {
  credentials: { accessKeyId: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY" },
  region: "us-east-1",
  service: "service",
  now: new Date(Date.UTC(2015, 7, 30, 12, 36, 0))
}

describe("Signature Version 4", () => {
  it("signs the test suite's get-vanilla request as AWS does", async () => {
    const headers = await Signer.sign(
      { method: "GET", url: "https://example.amazonaws.com/", headers: {}, body: "" },
      suite
    )
    assert.strictEqual(
      headers.authorization,
      "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
    )
    assert.strictEqual(headers["x-amz-date"], "20150830T123600Z")
    assert.strictEqual(headers.host, "example.amazonaws.com")
  })

  it("signs the test suite's post-vanilla request as AWS does", async () => {
    const headers = await Signer.sign(
      { method: "POST", url: "https://example.amazonaws.com/", headers: {}, body: "" },
      suite
    )
    assert.match(headers.authorization!, /Signature=5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b$/)
  })

  it("signs the session token of temporary credentials and sends it", async () => {
    const headers = await Signer.sign(
      {
        method: "POST",
        url: "https://example.amazonaws.com/",
        headers: { "content-type": "application/json" },
        body: "{}"
      },
      { ...suite, credentials: { ...suite.credentials, sessionToken: "FQoGZXIvYXdzE" } }
    )
    assert.strictEqual(headers["x-amz-security-token"], "FQoGZXIvYXdzE")
    assert.include(headers.authorization!, "SignedHeaders=content-type;host;x-amz-date;x-amz-security-token,")
  })

  it("covers the body: another body gives another signature", async () => {
    const request = {
      method: "POST",
      url: "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse",
      headers: {}
    }
    const options = { ...suite, service: Endpoint.SIGNING_SERVICE }
    const a = await Signer.sign({ ...request, body: "{\"messages\":[]}" }, options)
    const b = await Signer.sign({ ...request, body: "{\"messages\":[1]}" }, options)
    assert.notStrictEqual(a.authorization, b.authorization)
  })

  it("signs with the port in host when the URL has one (a private endpoint, a fake)", async () => {
    const headers = await Signer.sign({
      method: "POST",
      url: "http://127.0.0.1:4100/model/m/converse",
      headers: {},
      body: ""
    }, suite)
    assert.strictEqual(headers.host, "127.0.0.1:4100")
  })

  it.effect("signs as of the Effect clock's time", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(suite.now.getTime())
      const headers = yield* Signer.signEffect(
        { method: "GET", url: "https://example.amazonaws.com/", headers: {}, body: "" },
        { credentials: suite.credentials, region: suite.region, service: suite.service }
      )
      assert.match(
        headers.authorization!,
        /Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31$/
      )
    }))

  it("a Bedrock API key is a bearer token, nothing signed", () => {
    assert.deepStrictEqual(Signer.bearer({ "Content-Type": "application/json" }, "ABSK-key"), {
      "content-type": "application/json",
      authorization: "Bearer ABSK-key"
    })
  })
})

describe("endpoints", () => {
  it("percent-encodes the model id as one path segment", () => {
    assert.strictEqual(
      Endpoint.converseUrl(Endpoint.runtimeBaseUrl("us-east-1"), "us.anthropic.claude-sonnet-4-5-20250929-v1:0", false),
      "https://bedrock-runtime.us-east-1.amazonaws.com/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse"
    )
    assert.strictEqual(
      Endpoint.converseUrl("http://proxy/bedrock/", "arn:aws:bedrock:us-east-1:123456789012:inference-profile/x", true),
      "http://proxy/bedrock/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fx/converse-stream"
    )
  })

  it.effect("reads the foundation model list, chat and embedding models only", () =>
    Effect.gen(function*() {
      const page = yield* Endpoint.decodeFoundationModels(
        JSON.stringify({
          modelSummaries: [
            { modelId: "amazon.nova-pro-v1:0", modelName: "Nova Pro", outputModalities: ["TEXT"] },
            { modelId: "amazon.titan-embed-text-v2:0", modelName: "Titan Embeddings", outputModalities: ["EMBEDDING"] },
            { modelId: "amazon.nova-canvas-v1:0", modelName: "Nova Canvas", outputModalities: ["IMAGE"] }
          ]
        }),
        "bedrock"
      )
      assert.deepStrictEqual(page.models, [
        { id: "amazon.nova-pro-v1:0", displayName: "Nova Pro" },
        { id: "amazon.titan-embed-text-v2:0", displayName: "Titan Embeddings", embedding: true }
      ])
      const error = yield* Effect.flip(Endpoint.decodeFoundationModels("<html>", "bedrock"))
      assert.strictEqual(error._tag, "UpstreamUnavailable")
    }))
})
