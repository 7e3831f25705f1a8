/**
 * A channel's secrets (its keys, its custom headers' values and the tokens in
 * them) are cut out of upstream text before it is passed on or logged, as
 * written and JSON-escaped; headers that carry no secret, and short values,
 * are left alone.
 */
import { assert, describe, it } from "@effect/vitest"
import { Domain, GatewayError } from "@modelgate/core"
import * as Redaction from "../src/Redaction.ts"

const channel: Domain.Channel = {
  id: "c",
  name: "c",
  type: "openai",
  baseUrl: "https://up.test/v1",
  apiKeys: ["sk-live-0123456789abcdef", "sk-backup-\"quoted\"-key"],
  models: ["m"],
  modelMap: {},
  groups: ["default"],
  priority: 0,
  weight: 1,
  enabled: true,
  ...Domain.channelDefaults,
  headers: {
    "X-Org-Token": "Bearer org-secret-token-42",
    cookie: "session=cookie-value-777; theme=dark",
    "anthropic-version": "2023-06-01",
    "x-fake-fail": "500"
  }
}

describe("Redaction", () => {
  it("cuts every key and custom header value (and the tokens in them) out of text", () => {
    const echoed =
      "headers: authorization: Bearer sk-live-0123456789abcdef; x-org-token: Bearer org-secret-token-42; " +
      "cookie: session=cookie-value-777; theme=dark; anthropic-version: 2023-06-01; x-fake-fail: 500"
    const redacted = Redaction.text(channel, echoed)
    for (const secret of ["sk-live-0123456789abcdef", "org-secret-token-42", "cookie-value-777"]) {
      assert.notInclude(redacted, secret)
    }
    assert.include(redacted, "Bearer [redacted]")
    assert.include(redacted, "anthropic-version: 2023-06-01", "a header that carries no secret is left")
    assert.include(redacted, "x-fake-fail: 500", "a value too short to be a secret is left")
    assert.include(Redaction.text(channel, JSON.stringify({ key: "sk-backup-\"quoted\"-key" })), "[redacted]")
    assert.strictEqual(Redaction.text(channel, "nothing to hide"), "nothing to hide")
  })

  it("redacts an error's message and param, keeping everything else", () => {
    const error = new GatewayError.UpstreamRejected({
      status: 400,
      message: "bad key sk-live-0123456789abcdef",
      param: "sk-live-0123456789abcdef"
    })
    const redacted = Redaction.error(channel, error)
    assert.deepStrictEqual([redacted._tag, redacted.status, redacted.message, redacted.param], [
      "UpstreamRejected",
      400,
      "bad key [redacted]",
      "[redacted]"
    ])
    const clean = new GatewayError.UpstreamTimeout({ message: "slow" })
    assert.strictEqual(Redaction.error(channel, clean), clean)
  })
})

describe("Redaction of cloud channels' keys", () => {
  it("cuts the secrets inside a service-account key and an access key pair, on their own and JSON-escaped", () => {
    const pem =
      "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----\n"
    const cloud: Domain.Channel = {
      ...channel,
      type: "vertex",
      headers: {},
      apiKeys: [
        JSON.stringify({
          type: "service_account",
          private_key_id: "5f3c0e1d2b4a69788c7b",
          private_key: pem,
          client_email: "gateway@p.iam.gserviceaccount.com"
        }),
        JSON.stringify({
          access_key_id: "AKIAIOSFODNN7EXAMPLE",
          secret_access_key: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
          session_token: "FwoGZXIvYXdzEBYaDEXAMPLETOKEN"
        })
      ]
    }
    const echoed =
      `key ${JSON.stringify(pem)} id 5f3c0e1d2b4a69788c7b secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY ` +
      `token FwoGZXIvYXdzEBYaDEXAMPLETOKEN raw ${pem}`
    const redacted = Redaction.text(cloud, echoed)
    for (const secret of ["MIIEvQIBADAN", "5f3c0e1d2b4a69788c7b", "wJalrXUtnFEMI", "FwoGZXIvYXdzEBYaDEXAMPLETOKEN"]) {
      assert.notInclude(redacted, secret)
    }
  })
})
