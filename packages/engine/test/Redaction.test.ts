/**
 * A channel's secrets (its keys, its custom headers' values and the tokens in
 * them) are cut out of upstream text before it is passed on or logged, as
 * written and JSON-escaped; headers that carry no secret, and short values,
 * are left alone.
 */
import { assert, describe, it } from "@effect/vitest"
import { Domain, GatewayError } from "@modelgate/core"
import * as Redaction from "../src/telemetry/Redaction.ts"

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

  it("cuts encoded forms too: base64 and base64url (alone, after Bearer, inside a blob), URL-encoded, any case, JSON-escaped, split", () => {
    const key = "sk-live-0123456789abcdef"
    const b64 = (text: string) => Buffer.from(text).toString("base64")
    const b64url = (text: string) => Buffer.from(text).toString("base64url")
    const forms = {
      base64: b64(key),
      bearerBase64: b64(`Bearer ${key}`),
      base64url: b64url(`Bearer ${key}`),
      blob: b64(JSON.stringify({ headers: { authorization: `Bearer ${key}` } })),
      blobUrl: b64url(`xx{"authorization":"Bearer ${key}"}`),
      urlEncodedBase64: encodeURIComponent(b64(`??Bearer ${key}`)),
      urlEncoded: encodeURIComponent(`Bearer ${key}`),
      header: encodeURIComponent("Bearer org-secret-token-42"),
      lower: key.toLowerCase(),
      upper: key.toUpperCase(),
      jsonEscaped: JSON.stringify(JSON.stringify({ key: "sk-backup-\"quoted\"-key" })),
      splitLine: `${key.slice(0, 10)}\n${key.slice(10)}`,
      splitEscaped: `${key.slice(0, 10)}\\r\\n${key.slice(10)}`,
      wrappedBase64: b64(`Bearer ${key}`).replace(/(.{12})/g, "$1\r\n"),
      cookieBase64: b64("session=cookie-value-777")
    }
    const secrets = [key, "org-secret-token-42", "cookie-value-777", "sk-backup-\"quoted\"-key"]
    for (const [name, form] of Object.entries(forms)) {
      const redacted = Redaction.text(channel, `the upstream said: ${form} (end)`)
      assert.include(redacted, "[redacted]", name)
      assert.isTrue(Redaction.quotes(channel, form), name)
      // Nothing left that decodes back to a secret, or shows one.
      const decoded = [
        redacted,
        ...redacted.split(/[^A-Za-z0-9+/_=-]+/).flatMap((part) => {
          const text = part.replace(/-/g, "+").replace(/_/g, "/")
          return [Buffer.from(text, "base64").toString("latin1")]
        })
      ].join(" ").toLowerCase()
      for (const secret of secrets) assert.notInclude(decoded, secret.toLowerCase(), name)
      assert.isTrue(redacted.startsWith("the upstream said: ") && redacted.endsWith(" (end)"), name)
    }
    // Ordinary base64 and text are left alone.
    const plain = `image ${b64("a picture of a cat, nothing more")} ok`
    assert.strictEqual(Redaction.text(channel, plain), plain)
    assert.isFalse(Redaction.quotes(channel, plain))
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
