import { assert, describe, it } from "@effect/vitest"
import { Location, ServiceAccount, Token, TokenCache } from "@modelgate/vertex"
import { Deferred, Effect, Fiber, Result } from "effect"
import { TestClock } from "effect/testing"
import { generateKeyPairSync, verify } from "node:crypto"

// A key made for this test run only: no private key is committed.
const pair = generateKeyPairSync("rsa", { modulusLength: 2048 })
const keyFile = {
  type: "service_account",
  project_id: "test-project",
  private_key_id: "key-1",
  private_key: pair.privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
  client_email: "gateway@test-project.iam.gserviceaccount.com",
  client_id: "1",
  token_uri: "http://127.0.0.1:1/token"
}
const key = Result.getOrThrow(ServiceAccount.parseKey(JSON.stringify(keyFile)))

const failureOf = <A, E>(result: Result.Result<A, E>): E => {
  if (Result.isFailure(result)) return result.failure
  throw new Error("expected a failure")
}

const part = (jwt: string, i: number) => JSON.parse(Buffer.from(jwt.split(".")[i]!, "base64url").toString("utf8"))

describe("service-account keys", () => {
  it("reads a key file; refuses what is not one, naming what is wrong", () => {
    assert.strictEqual(key.clientEmail, keyFile.client_email)
    assert.strictEqual(key.tokenUri, keyFile.token_uri)
    const error = (file: unknown) => {
      const result = ServiceAccount.parseKey(file)
      return Result.isFailure(result) ? result.failure.message : "accepted"
    }
    assert.match(error("not json"), /not JSON/)
    assert.match(error({ ...keyFile, client_email: undefined }), /no 'client_email'/)
    assert.match(error({ ...keyFile, type: "authorized_user" }), /not 'service_account'/)
    assert.match(error({ ...keyFile, private_key: "secret" }), /not a PEM private key/)
    const { token_uri: _, ...noUri } = keyFile
    assert.strictEqual(Result.getOrThrow(ServiceAccount.parseKey(noUri)).tokenUri, ServiceAccount.GOOGLE_TOKEN_URI)
  })

  it.effect("signs an RS256 assertion the key's public half verifies, with Google's claims", () =>
    Effect.gen(function*() {
      const privateKey = yield* ServiceAccount.importPrivateKey(key)
      const jwt = yield* ServiceAccount.signAssertion(key, privateKey, 1_800_000_000)
      const [header, claims, signature] = jwt.split(".")
      assert.deepStrictEqual(part(jwt, 0), { alg: "RS256", typ: "JWT", kid: "key-1" })
      assert.deepStrictEqual(part(jwt, 1), {
        iss: keyFile.client_email,
        scope: "https://www.googleapis.com/auth/cloud-platform",
        aud: keyFile.token_uri,
        iat: 1_800_000_000,
        exp: 1_800_003_600
      })
      const ok = verify(
        "sha256",
        Buffer.from(`${header}.${claims}`),
        pair.publicKey,
        Buffer.from(signature!, "base64url")
      )
      assert.isTrue(ok)
    }))

  it.effect("a private key WebCrypto cannot use fails once, with a KeyError", () =>
    Effect.gen(function*() {
      const ec = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ type: "pkcs8", format: "pem" })
      const error = yield* Effect.flip(ServiceAccount.importPrivateKey({ ...key, privateKey: ec.toString() }))
      assert.strictEqual(error._tag, "KeyError")
    }))
})

describe("the token exchange", () => {
  it("writes the JWT bearer grant, form-encoded, to the key's token_uri", () => {
    const request = Token.tokenRequest(key, "a.b.c")
    assert.strictEqual(request.url, keyFile.token_uri)
    assert.strictEqual(request.headers["content-type"], "application/x-www-form-urlencoded")
    assert.strictEqual(request.body, "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=a.b.c")
  })

  it("reads a token, and Google's refusals as credential refusals that quote its reason", () => {
    assert.deepStrictEqual(
      Result.getOrThrow(
        Token.decodeTokenResponse(200, "{\"access_token\":\"ya29.x\",\"expires_in\":3599,\"token_type\":\"Bearer\"}")
      ),
      { accessToken: "ya29.x", expiresInSeconds: 3599 }
    )
    const refused = Token.decodeTokenResponse(
      400,
      "{\"error\":\"invalid_grant\",\"error_description\":\"Invalid JWT Signature.\"}"
    )
    assert.isTrue(Result.isFailure(refused))
    const error = failureOf(refused)
    assert.isTrue((error as { credentialsRefused?: boolean }).credentialsRefused)
    assert.include(error.message, "invalid_grant: Invalid JWT Signature.")
    assert.strictEqual(
      failureOf(Token.decodeTokenResponse(503, "unavailable"))._tag,
      "UpstreamUnavailable"
    )
    assert.strictEqual(
      failureOf(Token.decodeTokenResponse(200, "{}"))._tag,
      "UpstreamUnavailable"
    )
  })

  it("knows Vertex's refusal of a token", () => {
    assert.isTrue(Token.tokenRefused(401, "{}"))
    assert.isTrue(
      Token.tokenRefused(
        403,
        "{\"error\":{\"code\":403,\"status\":\"PERMISSION_DENIED\",\"details\":[{\"@type\":\"type.googleapis.com/google.rpc.ErrorInfo\",\"reason\":\"ACCESS_TOKEN_EXPIRED\"}]}}"
      )
    )
    assert.isFalse(
      Token.tokenRefused(403, "{\"error\":{\"code\":403,\"status\":\"PERMISSION_DENIED\",\"message\":\"IAM\"}}")
    )
    assert.isFalse(Token.tokenRefused(429, "{}"))
  })
})

describe("the token cache", () => {
  const counted = (expiresIn: number) => {
    const requests: Array<Token.HttpRequest> = []
    const fetch: TokenCache.Fetch = (request) =>
      Effect.sync(() => {
        requests.push(request)
        return {
          status: 200,
          headers: {},
          text: JSON.stringify({ access_token: `token-${requests.length}`, expires_in: expiresIn })
        }
      })
    return { requests, fetch }
  }

  it.effect("fetches once, reuses the token, and refreshes it shortly before it expires", () =>
    Effect.gen(function*() {
      const { fetch, requests } = counted(3600)
      const source = yield* TokenCache.make(key, fetch)
      assert.strictEqual(yield* source.token, "token-1")
      assert.strictEqual(yield* source.token, "token-1")
      assert.strictEqual(requests.length, 1)
      yield* TestClock.adjust("54 minutes")
      assert.strictEqual(yield* source.token, "token-1")
      yield* TestClock.adjust("2 minutes")
      assert.strictEqual(yield* source.token, "token-2")
      assert.strictEqual(requests.length, 2)
    }))

  it.effect("a short-lived token is refreshed at half its life, not on every call", () =>
    Effect.gen(function*() {
      const { fetch, requests } = counted(4)
      const source = yield* TokenCache.make(key, fetch)
      yield* source.token
      yield* TestClock.adjust("1 second")
      yield* source.token
      assert.strictEqual(requests.length, 1)
      yield* TestClock.adjust("1 second")
      assert.strictEqual(yield* source.token, "token-2")
    }))

  it.effect("a token the upstream refused is dropped; another caller's newer token is kept", () =>
    Effect.gen(function*() {
      const { fetch } = counted(3600)
      const source = yield* TokenCache.make(key, fetch)
      const first = yield* source.token
      yield* source.invalidate(first)
      const second = yield* source.token
      assert.strictEqual(second, "token-2")
      yield* source.invalidate(first)
      assert.strictEqual(yield* source.token, "token-2")
    }))

  it.effect("concurrent callers share one fetch", () =>
    Effect.gen(function*() {
      // Signing runs on WebCrypto (real promises), so the test waits for the
      // fetch to have started rather than moving a clock it may not yet wait on.
      const requests: Array<Token.HttpRequest> = []
      const started = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const fetch: TokenCache.Fetch = (request) =>
        Effect.gen(function*() {
          requests.push(request)
          yield* Deferred.succeed(started, undefined)
          yield* Deferred.await(release)
          return { status: 200, headers: {}, text: "{\"access_token\":\"shared\",\"expires_in\":3600}" }
        })
      const source = yield* TokenCache.make(key, fetch)
      const fiber = yield* Effect.forkChild(
        Effect.all(Array.from({ length: 5 }, () => source.token), { concurrency: "unbounded" })
      )
      yield* Deferred.await(started)
      yield* Deferred.succeed(release, undefined)
      assert.deepStrictEqual(yield* Fiber.join(fiber), ["shared", "shared", "shared", "shared", "shared"])
      assert.strictEqual(requests.length, 1)
    }))

  it.effect("a refused key fails the call with a credential refusal, and nothing is cached", () =>
    Effect.gen(function*() {
      const fetch: TokenCache.Fetch = () =>
        Effect.succeed({
          status: 400,
          headers: {},
          text: "{\"error\":\"invalid_grant\",\"error_description\":\"Invalid JWT Signature.\"}"
        })
      const source = yield* TokenCache.make(key, fetch)
      const error = yield* Effect.flip(source.token)
      assert.isTrue((error as { credentialsRefused?: boolean }).credentialsRefused)
      assert.isUndefined(yield* source.current)
    }))
})

describe("locations and publishers", () => {
  it("defaults the base URL from the location", () => {
    assert.strictEqual(Location.defaultBaseUrl("us-east5"), "https://us-east5-aiplatform.googleapis.com")
    assert.strictEqual(Location.defaultBaseUrl("global"), "https://aiplatform.googleapis.com")
    assert.strictEqual(Location.defaultBaseUrl("eu"), "https://aiplatform.eu.rep.googleapis.com")
  })
  it("reads the publisher from the upstream name, overridable", () => {
    assert.strictEqual(Location.publisherOf("claude-sonnet-4-5@20250929"), "anthropic")
    assert.strictEqual(Location.publisherOf("gemini-2.5-flash"), "google")
    assert.strictEqual(Location.publisherOf("my-tuned-claude", "anthropic"), "anthropic")
  })
})
