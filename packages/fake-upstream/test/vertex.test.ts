/**
 * The Vertex fake, held to Google's rules by the gateway's own pieces: the
 * service-account key read, the JWT assertion signed and exchanged, and the
 * token cached and refreshed by `@modelgate/vertex`.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { type FakeUpstreamServer, startFakeUpstream } from "@modelgate/fake-upstream"
import { ServiceAccount, Token, TokenCache } from "@modelgate/vertex"
import { Effect, Result } from "effect"
import { generateKeyPairSync } from "node:crypto"

let upstream: FakeUpstreamServer
let now = Date.now()

beforeAll(async () => {
  upstream = await startFakeUpstream({ clock: () => now, vertex: { project: "my-project", tokenTtlSeconds: 60 } })
})
afterAll(() => upstream.close())

const fetchToken: TokenCache.Fetch = (request) =>
  Effect.promise(async () => {
    const response = await fetch(request.url, { method: request.method, headers: request.headers, body: request.body })
    return { status: response.status, headers: Object.fromEntries(response.headers), text: await response.text() }
  })

const key = () => Result.getOrThrow(ServiceAccount.parseKey(upstream.vertexKeyFile()))

const exchange = async (assertion: string) => {
  const request = Token.tokenRequest(key(), assertion)
  const response = await fetch(request.url, { method: "POST", headers: request.headers, body: request.body })
  return { status: response.status, body: await response.json() as Record<string, unknown> }
}

const google = (model: string, method: string, project = "my-project") =>
  `${upstream.url}/v1/projects/${project}/locations/us-central1/publishers/google/models/${model}:${method}`
const anthropic = (model: string, method: string) =>
  `${upstream.url}/v1/projects/my-project/locations/us-east5/publishers/anthropic/models/${model}:${method}`

const call = (url: string, token: string | undefined, body: unknown) =>
  fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` })
    },
    body: JSON.stringify(body)
  })

const hello = { contents: [{ role: "user", parts: [{ text: "Hello Vertex" }] }] }

// The token source reads the Effect clock: these run on the live one, as the fake checks `iat` and `exp` against real time.
describe("the Vertex token endpoint", () => {
  it.live("issues a token for an assertion signed with the service account's key", () =>
    Effect.gen(function*() {
      const source = yield* TokenCache.make(key(), fetchToken)
      const token = yield* source.token
      assert.match(token, /^ya29\.fake-/)
      const response = yield* Effect.promise(() => call(google("gemini-2.5-flash", "generateContent"), token, hello))
      assert.strictEqual(response.status, 200)
      const answer = (yield* Effect.promise(() => response.json())) as {
        candidates: Array<{ content: { parts: Array<{ text: string }> } }>
      }
      assert.include(answer.candidates[0]!.content.parts[0]!.text, "You said: Hello Vertex")
    }))

  it.effect("refuses an assertion signed with another key, naming Google's reason", () =>
    Effect.gen(function*() {
      const other = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({
        type: "pkcs8",
        format: "pem"
      })
      const forged = { ...key(), privateKey: other.toString() }
      const privateKey = yield* ServiceAccount.importPrivateKey(forged)
      const assertion = yield* ServiceAccount.signAssertion(forged, privateKey, now / 1000)
      const { body, status } = yield* Effect.promise(() => exchange(assertion))
      assert.deepStrictEqual({ status, body }, {
        status: 400,
        body: { error: "invalid_grant", error_description: "Invalid JWT Signature." }
      })
      const error = Token.decodeTokenResponse(status, JSON.stringify(body))
      assert.isTrue(
        Result.isFailure(error) && "credentialsRefused" in error.failure && error.failure.credentialsRefused === true
      )
    }))

  it.effect("refuses an assertion out of its time, or for another audience or scope", () =>
    Effect.gen(function*() {
      const k = key()
      const privateKey = yield* ServiceAccount.importPrivateKey(k)
      const stale = yield* ServiceAccount.signAssertion(k, privateKey, now / 1000 - 7200)
      assert.match(String((yield* Effect.promise(() => exchange(stale))).body.error_description), /short-lived token/)
      const elsewhere = yield* ServiceAccount.signAssertion(
        { ...k, tokenUri: "https://oauth2.googleapis.com/token" },
        privateKey,
        now / 1000
      )
      const request = Token.tokenRequest(k, elsewhere)
      const answer = yield* Effect.promise(() =>
        fetch(request.url, { method: "POST", headers: request.headers, body: request.body }).then((r) => r.json())
      )
      assert.deepStrictEqual(answer, {
        error: "invalid_grant",
        error_description: "Invalid JWT: Failed audience check."
      })
      const narrow = yield* ServiceAccount.signAssertion(k, privateKey, now / 1000, {
        scope: "https://www.googleapis.com/auth/userinfo.email"
      })
      assert.strictEqual((yield* Effect.promise(() => exchange(narrow))).body.error, "invalid_scope")
    }))

  it.live("an expired token is refused with ACCESS_TOKEN_EXPIRED; the source drops it and gets another", () =>
    Effect.gen(function*() {
      const source = yield* TokenCache.make(key(), fetchToken)
      const first = yield* source.token
      const saved = now
      now += 61_000
      try {
        const refused = yield* Effect.promise(() => call(google("gemini-2.5-flash", "generateContent"), first, hello))
        const text = yield* Effect.promise(() => refused.text())
        assert.strictEqual(refused.status, 401)
        assert.include(text, "ACCESS_TOKEN_EXPIRED")
        assert.isTrue(Token.tokenRefused(refused.status, text))
        yield* source.invalidate(first)
        const second = yield* source.token
        assert.notStrictEqual(second, first)
        const ok = yield* Effect.promise(() => call(google("gemini-2.5-flash", "generateContent"), second, hello))
        assert.strictEqual(ok.status, 200)
      } finally {
        now = saved
      }
    }))
})

describe("the Vertex publisher endpoints", () => {
  const token = () => Effect.runPromise(Effect.flatMap(TokenCache.make(key(), fetchToken), (s) => s.token))

  it("refuse a call without a token, and a project the service account has no role on", async () => {
    const missing = await call(google("gemini-2.5-flash", "generateContent"), undefined, hello)
    assert.strictEqual(missing.status, 401)
    assert.include(await missing.text(), "CREDENTIALS_MISSING")
    const other = await call(google("gemini-2.5-flash", "generateContent", "another-project"), await token(), hello)
    assert.strictEqual(other.status, 403)
    assert.include(await other.text(), "IAM_PERMISSION_DENIED")
  })

  it("stream Gemini as SSE, count tokens, and embed with :predict", async () => {
    const t = await token()
    const stream = await call(google("gemini-2.5-flash", "streamGenerateContent?alt=sse"), t, hello)
    assert.strictEqual(stream.status, 200)
    assert.include(await stream.text(), "data: ")
    const count = await (await call(google("gemini-2.5-flash", "countTokens"), t, hello)).json() as {
      totalTokens: number
    }
    assert.isAbove(count.totalTokens, 0)
    const embeddings = await (await call(google("text-embedding-005", "predict"), t, {
      instances: [{ content: "one" }, { content: "two" }],
      parameters: { outputDimensionality: 8 }
    })).json() as { predictions: Array<{ embeddings: { values: Array<number>; statistics: { token_count: number } } }> }
    assert.strictEqual(embeddings.predictions.length, 2)
    assert.strictEqual(embeddings.predictions[0]!.embeddings.values.length, 8)
    const roleless = await call(google("gemini-2.5-flash", "generateContent"), t, {
      contents: [{ parts: [{ text: "hi" }] }]
    })
    assert.strictEqual(roleless.status, 400)
  })

  it("serve Claude through rawPredict and streamRawPredict, Vertex's body only", async () => {
    const t = await token()
    const body = {
      anthropic_version: "vertex-2023-10-16",
      max_tokens: 64,
      messages: [{ role: "user", content: "Hello Claude" }]
    }
    const answer = await (await call(anthropic("claude-sonnet-4-5@20250929", "rawPredict"), t, body)).json() as {
      model: string
      content: Array<{ text: string }>
    }
    assert.strictEqual(answer.model, "claude-sonnet-4-5@20250929")
    assert.include(answer.content[0]!.text, "You said: Hello Claude")
    const stream = await call(anthropic("claude-sonnet-4-5@20250929", "streamRawPredict"), t, { ...body, stream: true })
    assert.include(await stream.text(), "event: message_stop")
    const withModel = await call(anthropic("claude-sonnet-4-5@20250929", "rawPredict"), t, { ...body, model: "claude" })
    assert.strictEqual(withModel.status, 400)
    assert.include(await withModel.text(), "model: Extra inputs are not permitted")
    const { anthropic_version: _, ...versionless } = body
    const noVersion = await call(anthropic("claude-sonnet-4-5@20250929", "rawPredict"), t, versionless)
    assert.strictEqual(noVersion.status, 400)
    const counted =
      await (await call(anthropic("count-tokens", "rawPredict"), t, { ...body, model: "claude-sonnet-4-5" }))
        .json() as {
          input_tokens: number
        }
    assert.isAbove(counted.input_tokens, 0)
  })
})
