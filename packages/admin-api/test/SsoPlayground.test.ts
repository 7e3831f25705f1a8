/**
 * The playground endpoint and the sign-in methods, through `AdminApi.handle`
 * with the real store: the playground hands the engine the caller's own key
 * (never another's, never a revoked one) and the OpenAI request its form
 * describes, behind the session, CSRF and session-only guards; without an
 * engine it says so. Sign-in methods follow the configuration; password
 * sign-in can be turned off; single sign-on refuses a callback it did not
 * start and a provider it cannot discover, sending the browser back to the
 * sign-in page with the reason. (The whole single sign-on, against a real
 * OpenID provider, is the console's browser test `e2e/sso.test.ts`.)
 */
import { assert, layer } from "@effect/vitest"
import type { Domain } from "@modelgate/core"
import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { AdminApiConfig, type OidcSettings } from "../src/Config.ts"
import { type PlaygroundCall, PlaygroundEngine } from "../src/PlaygroundEngine.ts"
import * as TrustedProxies from "../src/TrustedProxies.ts"
import { Client, makeUser, seedCatalog, signedIn, testLayer } from "./harness.ts"

const baseConfig = {
  publicUrl: "https://llm.example.com",
  sessionTtlMs: 3_600_000,
  trustedProxies: TrustedProxies.unsafeMake(TrustedProxies.loopback)
}

const oidc: OidcSettings = {
  name: "Company SSO",
  // Nothing listens there: discovery fails at once.
  issuer: "http://127.0.0.1:9",
  clientId: "modelgate",
  clientSecret: undefined,
  scopes: ["openid"],
  usernameClaim: undefined,
  groupsClaim: undefined,
  groupMap: {},
  adminGroups: [],
  autoCreate: false,
  initialBalanceNanos: 0n,
  redirectUri: undefined
}

/** An engine that records what it was handed and answers a fixed stream. */
const recordingEngine = () => {
  const calls: Array<{ key: Domain.ApiKey; body: Record<string, unknown> }> = []
  const engine: typeof PlaygroundEngine.Service = {
    chat: (call: PlaygroundCall) =>
      Effect.sync(() => {
        calls.push({ key: call.key, body: JSON.parse(new TextDecoder().decode(call.body)) })
        return HttpServerResponse.text("data: [DONE]\n\n", {
          contentType: "text/event-stream",
          headers: { "x-request-id": "req_test" }
        })
      })
  }
  return { calls, engine }
}

layer(testLayer(), { excludeTestServices: true, timeout: "120 seconds" })("playground and sign-in methods", (it) => {
  it.effect("seeds the catalog", () => seedCatalog)

  it.effect("hands the engine the owner's key and the turn as an OpenAI streamed request", () =>
    Effect.gen(function*() {
      const { user, client } = yield* signedIn({ balanceNanos: 5_000_000_000n })
      const created = yield* client.post("/api/keys", { name: "laptop" })
      assert.strictEqual(created.status, 201, created.text)
      const keyId = created.body.key.id as string
      const { calls, engine } = recordingEngine()
      const reply = yield* client.post("/api/playground/chat", {
        keyId,
        model: "gpt-test",
        system: "Be brief.",
        messages: [{ role: "user", content: "hi" }, { role: "assistant", content: "hello" }, {
          role: "user",
          content: "again"
        }],
        temperature: 0.5,
        maxTokens: 64,
        topP: 0.9
      }).pipe(Effect.provideService(PlaygroundEngine, engine))
      assert.strictEqual(reply.status, 200, reply.text)
      assert.strictEqual(reply.headers.get("x-request-id"), "req_test")
      assert.strictEqual(calls.length, 1)
      assert.strictEqual(calls[0]!.key.id, keyId)
      assert.strictEqual(calls[0]!.key.userId, user.id)
      assert.deepStrictEqual(calls[0]!.body, {
        model: "gpt-test",
        messages: [
          { role: "system", content: "Be brief." },
          { role: "user", content: "hi" },
          { role: "assistant", content: "hello" },
          { role: "user", content: "again" }
        ],
        stream: true,
        stream_options: { include_usage: true },
        temperature: 0.5,
        max_tokens: 64,
        top_p: 0.9
      })
    }))

  it.effect("refuses another user's key, a revoked key, and bad parameters, without calling the engine", () =>
    Effect.gen(function*() {
      const owner = yield* signedIn()
      const key = (yield* owner.client.post("/api/keys", { name: "mine" })).body.key.id as string
      const other = yield* signedIn()
      const { calls, engine } = recordingEngine()
      const chat = (client: Client, body: Record<string, unknown>) =>
        client.post("/api/playground/chat", {
          keyId: key,
          model: "gpt-test",
          messages: [{ role: "user", content: "hi" }],
          ...body
        }).pipe(Effect.provideService(PlaygroundEngine, engine))

      const foreign = yield* chat(other.client, {})
      assert.strictEqual(foreign.status, 400)
      assert.strictEqual(foreign.body.error.code, "key_not_found")
      assert.strictEqual(foreign.body.error.param, "keyId")

      const hot = yield* chat(owner.client, { temperature: 3 })
      assert.strictEqual(hot.status, 400)
      assert.include(hot.body.error.param, "temperature")
      const empty = yield* chat(owner.client, { messages: [] })
      assert.strictEqual(empty.status, 400)
      assert.include(empty.body.error.param, "messages")

      assert.strictEqual((yield* owner.client.delete(`/api/keys/${key}`)).status, 200)
      const revoked = yield* chat(owner.client, {})
      assert.strictEqual(revoked.status, 400)
      assert.strictEqual(revoked.body.error.code, "key_not_found")
      assert.strictEqual(calls.length, 0)
    }))

  it.effect("keeps the session guards: CSRF, and no API keys", () =>
    Effect.gen(function*() {
      const { client } = yield* signedIn()
      const created = yield* client.post("/api/keys", { name: "guarded" })
      const { calls, engine } = recordingEngine()
      const body = { keyId: created.body.key.id, model: "gpt-test", messages: [{ role: "user", content: "hi" }] }
      const noCsrf = yield* client.request("POST", "/api/playground/chat", body, { "x-csrf-token": "wrong" }).pipe(
        Effect.provideService(PlaygroundEngine, engine)
      )
      assert.strictEqual(noCsrf.status, 403)
      assert.strictEqual(noCsrf.body.error.code, "csrf_failed")
      const script = new Client()
      script.bearer = created.body.secret
      const byKey = yield* script.post("/api/playground/chat", body).pipe(
        Effect.provideService(PlaygroundEngine, engine)
      )
      assert.strictEqual(byKey.status, 403)
      assert.strictEqual(byKey.body.error.code, "session_required")
      assert.strictEqual(calls.length, 0)
    }))

  it.effect("says so when the server runs no engine", () =>
    Effect.gen(function*() {
      const { client } = yield* signedIn()
      const created = yield* client.post("/api/keys", { name: "lonely" })
      const reply = yield* client.post("/api/playground/chat", {
        keyId: created.body.key.id,
        model: "gpt-test",
        messages: [{ role: "user", content: "hi" }]
      })
      assert.strictEqual(reply.status, 503)
      assert.strictEqual(reply.body.error.code, "playground_unavailable")
    }))

  it.effect("lists the sign-in methods the configuration allows", () =>
    Effect.gen(function*() {
      const client = new Client()
      const plain = yield* client.get("/api/auth/methods")
      assert.deepStrictEqual(plain.body, { password: true, sso: null })
      const sso = yield* client.get("/api/auth/methods").pipe(
        Effect.provideService(AdminApiConfig, { ...baseConfig, passwordLogin: false, oidc })
      )
      assert.deepStrictEqual(sso.body, {
        password: false,
        sso: { name: "Company SSO", startUrl: "/api/auth/oidc/start" }
      })
      const start = yield* client.get("/api/auth/oidc/start")
      assert.strictEqual(start.status, 404)
      assert.include(start.body.error.message, "auth.oidc")
    }))

  it.effect("refuses password sign-in when it is turned off", () =>
    Effect.gen(function*() {
      const user = yield* makeUser()
      const reply = yield* new Client().login(user.name, user.password).pipe(
        Effect.provideService(AdminApiConfig, { ...baseConfig, passwordLogin: false, oidc })
      )
      assert.strictEqual(reply.status, 403)
      assert.strictEqual(reply.body.error.code, "password_login_disabled")
      assert.isNull(reply.headers.get("set-cookie"))
    }))

  it.effect("sends the browser back with the reason: a callback it did not start, a provider it cannot reach", () =>
    Effect.gen(function*() {
      const client = new Client()
      const withOidc = Effect.provideService(AdminApiConfig, { ...baseConfig, oidc })
      const callback = yield* client.get("/api/auth/oidc/callback?code=abc&state=xyz").pipe(withOidc)
      assert.strictEqual(callback.status, 302)
      const location = new URL(callback.headers.get("location")!, "https://llm.example.com")
      assert.strictEqual(location.pathname, "/console/")
      assert.match(location.searchParams.get("sso_error")!, /Single sign-on failed: this sign-in was not started here/)
      assert.isUndefined(client.cookie, "no session")

      const start = yield* client.get("/api/auth/oidc/start").pipe(withOidc)
      assert.strictEqual(start.status, 302)
      const back = new URL(start.headers.get("location")!, "https://llm.example.com")
      assert.match(back.searchParams.get("sso_error")!, /could not be discovered/)
    }))
})

layer(testLayer({ loginLimits: { maxFailures: 3, windowMs: 60_000 } }), {
  excludeTestServices: true,
  timeout: "60 seconds"
})("single sign-on lockout", (it) => {
  it.effect("locks an address out after repeated refused callbacks, as for wrong passwords", () =>
    Effect.gen(function*() {
      const client = new Client()
      const withOidc = Effect.provideService(AdminApiConfig, { ...baseConfig, oidc })
      const reason = (reply: { readonly headers: Headers }) =>
        new URL(reply.headers.get("location")!, "https://llm.example.com").searchParams.get("sso_error")!
      for (let i = 0; i < 3; i++) {
        assert.match(reason(yield* client.get("/api/auth/oidc/callback?code=a&state=b").pipe(withOidc)), /not started/)
      }
      assert.match(
        reason(yield* client.get("/api/auth/oidc/callback?code=a&state=b").pipe(withOidc)),
        /too many failed sign-ins\. Try again in \d+ seconds/
      )
      // Another address is not locked.
      const other = new Client()
      assert.match(reason(yield* other.get("/api/auth/oidc/callback?code=a&state=b").pipe(withOidc)), /not started/)
    }))
})
