/**
 * Every endpoint of the management API against the real store on SQLite, and
 * the isolation rules: a user never reads or changes another user's keys,
 * usage or balance; admin endpoints refuse users; sessions need CSRF tokens;
 * sign-in is rate limited.
 */
import { assert, layer } from "@effect/vitest"
import { Catalog } from "@modelgate/core/domain/Catalog"
import { Effect } from "effect"
import { AdminApiConfig } from "../src/Config.ts"
import * as TrustedProxies from "../src/TrustedProxies.ts"
import {
  Client,
  HealthBoard,
  insertUsage,
  InvalidationLog,
  listedBy,
  makeUser,
  seedCatalog,
  send,
  signedIn,
  testLayer
} from "./harness.ts"

const USD = 1_000_000_000n

/** The API's settings with these trusted proxies. */
const config = (trustedProxies: ReadonlyArray<string>) => ({
  publicUrl: undefined,
  sessionTtlMs: 3_600_000,
  trustedProxies: TrustedProxies.unsafeMake(trustedProxies)
})

layer(testLayer({ loginLimits: { maxFailures: 5, windowMs: 60_000 } }), {
  excludeTestServices: true,
  timeout: "120 seconds"
})(
  "admin-api",
  (it) => {
    it.effect("seeds the catalog", () => seedCatalog)

    // ---- auth ---------------------------------------------------------------

    it.effect("signs in with a HttpOnly SameSite cookie, reports the session, signs out", () =>
      Effect.gen(function*() {
        const user = yield* makeUser({ balanceNanos: 5n * USD })
        const client = new Client()
        const login = yield* client.login(user.name, user.password)
        assert.strictEqual(login.status, 200)
        assert.strictEqual(login.body.user.name, user.name)
        assert.strictEqual(login.body.user.balance, "5.00")
        assert.isString(login.body.csrfToken)
        const cookie = login.headers.get("set-cookie")!
        assert.match(cookie, /mg_session=[A-Za-z0-9_-]{40,}/)
        assert.match(cookie, /HttpOnly/)
        assert.match(cookie, /SameSite=Lax/)
        assert.notMatch(cookie, /Secure/, "no Secure flag over plain http")

        const session = yield* client.get("/api/auth/session")
        assert.strictEqual(session.status, 200)
        assert.strictEqual(session.body.user.id, user.id)
        assert.strictEqual(session.body.csrfToken, login.body.csrfToken)

        const logout = yield* client.post("/api/auth/logout")
        assert.strictEqual(logout.status, 200)
        assert.match(logout.headers.get("set-cookie")!, /Max-Age=0/)
        const after = yield* new Client().request("GET", "/api/auth/session", undefined, {
          cookie: `mg_session=${/mg_session=([^;]*)/.exec(cookie)![1]}`
        })
        assert.strictEqual(after.status, 401, "the old cookie no longer works")
      }))

    it.effect("marks the cookie Secure behind an HTTPS proxy", () =>
      Effect.gen(function*() {
        const user = yield* makeUser()
        const client = new Client()
        client.address = "127.0.0.1"
        const reply = yield* client.request(
          "POST",
          "/api/auth/login",
          { username: user.name, password: user.password },
          {
            "x-forwarded-proto": "https"
          }
        )
        assert.strictEqual(reply.status, 200)
        assert.match(reply.headers.get("set-cookie")!, /; Secure/)
      }))

    it.effect("believes X-Forwarded-Proto only from a trusted proxy", () =>
      Effect.gen(function*() {
        const user = yield* makeUser()
        const outsider = new Client()
        outsider.address = "203.0.113.50"
        const forged = yield* outsider.request("POST", "/api/auth/login", {
          username: user.name,
          password: user.password
        }, {
          "x-forwarded-proto": "https"
        })
        assert.strictEqual(forged.status, 200)
        assert.notInclude(forged.headers.get("set-cookie")!, "Secure", "a client cannot claim HTTPS for itself")
        const proxied = new Client()
        proxied.address = "10.20.0.5"
        const configured = yield* proxied.request("POST", "/api/auth/login", {
          username: user.name,
          password: user.password
        }, {
          "x-forwarded-proto": "https"
        }).pipe(Effect.provideService(AdminApiConfig, config(["10.20.0.0/16"])))
        assert.match(configured.headers.get("set-cookie")!, /; Secure/, "a configured proxy is believed")
      }))

    it.effect("limits sign-in per forwarded client address behind a trusted proxy", () =>
      Effect.gen(function*() {
        const victim = yield* makeUser()
        const proxy = new Client()
        proxy.address = "127.0.0.1"
        const via = (address: string, username: string, password: string) =>
          proxy.request("POST", "/api/auth/login", { username, password }, { "x-forwarded-for": address })
        for (let i = 0; i < 5; i++) assert.strictEqual((yield* via("198.51.100.1", `nobody${i}`, "guess")).status, 401)
        assert.strictEqual(
          (yield* via("198.51.100.1", victim.name, victim.password)).status,
          429,
          "the guessing client is limited"
        )
        // A client that writes its own X-Forwarded-For gets the address the proxy saw, not the one it wrote.
        assert.strictEqual((yield* via("10.9.9.9, 198.51.100.1", victim.name, victim.password)).status, 429)
        assert.strictEqual(
          (yield* via("198.51.100.2", victim.name, victim.password)).status,
          200,
          "other clients of the proxy are not"
        )
      }))

    it.effect("ignores X-Forwarded-For from a peer it does not trust", () =>
      Effect.gen(function*() {
        const victim = yield* makeUser()
        const client = new Client()
        client.address = "203.0.113.60"
        for (let i = 0; i < 5; i++) {
          const reply = yield* client.request(
            "POST",
            "/api/auth/login",
            { username: `nobody${i}`, password: "guess" },
            {
              "x-forwarded-for": `192.0.2.${i}`
            }
          )
          assert.strictEqual(reply.status, 401)
        }
        const next = yield* client.request("POST", "/api/auth/login", {
          username: victim.name,
          password: victim.password
        }, {
          "x-forwarded-for": "192.0.2.200"
        })
        assert.strictEqual(next.status, 429, "a new X-Forwarded-For each time does not reset the limit")
        const behindConfigured = yield* client.request("POST", "/api/auth/login", {
          username: victim.name,
          password: victim.password
        }, {
          "x-forwarded-for": "192.0.2.201"
        }).pipe(Effect.provideService(AdminApiConfig, config(["203.0.113.0/24"])))
        assert.strictEqual(
          behindConfigured.status,
          200,
          "once the peer is a configured proxy, the forwarded address counts"
        )
      }))

    it.effect("refuses wrong passwords with one message for unknown users and wrong passwords", () =>
      Effect.gen(function*() {
        const user = yield* makeUser()
        const client = new Client()
        client.address = "10.0.0.1"
        const wrong = yield* client.login(user.name, "not the password")
        const unknown = yield* client.login("nobody-here", "whatever")
        assert.strictEqual(wrong.status, 401)
        assert.strictEqual(unknown.status, 401)
        assert.strictEqual(wrong.body.error.message, unknown.body.error.message)
        assert.strictEqual(wrong.body.error.code, "invalid_credentials")
      }))

    it.effect("locks an account out of one address after its wrong passwords there, even with the right password, with retry-after", () =>
      Effect.gen(function*() {
        const user = yield* makeUser()
        const guesser = new Client()
        guesser.address = "10.1.0.1"
        for (let i = 0; i < 5; i++) assert.strictEqual((yield* guesser.login(user.name, "guess " + i)).status, 401)
        const blocked = yield* guesser.login(user.name, user.password)
        assert.strictEqual(blocked.status, 429)
        assert.strictEqual(blocked.body.error.type, "rate_limit_error")
        const retry = Number(blocked.headers.get("retry-after"))
        assert.isTrue(retry > 0 && retry <= 60, `retry-after ${retry}`)
        const elsewhere = new Client()
        elsewhere.address = "10.1.0.2"
        assert.strictEqual(
          (yield* elsewhere.login(user.name, user.password)).status,
          200,
          "the account is not locked for other addresses"
        )
      }))

    it.effect("guesses from rotating addresses never lock the owner out of their own address or the machine", () =>
      Effect.gen(function*() {
        const admin = yield* makeUser({ role: "admin" })
        const owner = new Client()
        owner.address = "10.3.0.1"
        assert.strictEqual((yield* owner.login(admin.name, admin.password)).status, 200)
        // The attack: one wrong password from each of 30 addresses (no address and no pair reaches its limit).
        const refused: Array<number> = []
        for (let i = 0; i < 30; i++) {
          const attacker = new Client()
          attacker.address = `10.4.0.${i}`
          refused.push((yield* attacker.login(admin.name, "guess")).status)
        }
        assert.deepStrictEqual(
          [...new Set(refused)],
          [401, 429],
          "after 20 failures the account is locked for strangers"
        )
        const stranger = new Client()
        stranger.address = "10.5.0.1"
        assert.strictEqual(
          (yield* stranger.login(admin.name, admin.password)).status,
          429,
          "new addresses are held back"
        )
        const local = new Client()
        local.address = "127.0.0.1"
        assert.strictEqual((yield* local.login(admin.name, admin.password)).status, 200, "the machine itself is not")
        const again = new Client()
        again.address = "10.3.0.1"
        assert.strictEqual((yield* again.login(admin.name, admin.password)).status, 200, "nor the owner's address")
      }))

    it.effect("signs in with JSON only: a form or text/plain body (login CSRF) is refused", () =>
      Effect.gen(function*() {
        const user = yield* makeUser()
        const body = JSON.stringify({ username: user.name, password: user.password })
        for (
          const contentType of [
            "text/plain",
            "text/plain;charset=UTF-8",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x"
          ]
        ) {
          const reply = yield* send(
            new Request("http://gateway.test/api/auth/login", {
              method: "POST",
              body,
              headers: { "content-type": contentType }
            })
          )
          assert.strictEqual(reply.status, 415, contentType)
          assert.strictEqual(reply.body.error.code, "unsupported_media_type")
          assert.isNull(reply.headers.get("set-cookie"), "no session")
        }
        // A body with no content type at all (a Blob sent cross-site) is refused too.
        const untyped = yield* send(
          new Request("http://gateway.test/api/auth/login", {
            method: "POST",
            body: new Blob([body]),
            headers: { "content-length": String(body.length) }
          })
        )
        assert.strictEqual(untyped.status, 415)
        const json = yield* new Client().login(user.name, user.password)
        assert.strictEqual(json.status, 200)
      }))

    it.effect("rate-limits sign-in per client address across accounts", () =>
      Effect.gen(function*() {
        const victim = yield* makeUser()
        const client = new Client()
        client.address = "10.2.0.1"
        for (let i = 0; i < 5; i++) assert.strictEqual((yield* client.login(`someone${i}`, "guess")).status, 401)
        assert.strictEqual((yield* client.login(victim.name, victim.password)).status, 429)
        const elsewhere = new Client()
        elsewhere.address = "10.2.0.2"
        assert.strictEqual((yield* elsewhere.login(victim.name, victim.password)).status, 200)
      }))

    it.effect("requires the CSRF token on state-changing requests made with a session", () =>
      Effect.gen(function*() {
        const { client } = yield* signedIn()
        const noToken = yield* client.request("POST", "/api/keys", { name: "x" }, { "x-csrf-token": "" })
        assert.strictEqual(noToken.status, 403)
        assert.strictEqual(noToken.body.error.code, "csrf_failed")
        const wrong = yield* client.request("POST", "/api/keys", { name: "x" }, { "x-csrf-token": "forged" })
        assert.strictEqual(wrong.status, 403)
        const right = yield* client.post("/api/keys", { name: "x" })
        assert.strictEqual(right.status, 201)
        const reads = yield* client.request("GET", "/api/keys", undefined, { "x-csrf-token": "" })
        assert.strictEqual(reads.status, 200, "reads need no token")
      }))

    it.effect("changes the password: the old one stops working, other sessions end", () =>
      Effect.gen(function*() {
        const { client, user } = yield* signedIn()
        const other = new Client()
        yield* other.login(user.name, user.password)
        const wrong = yield* client.post("/api/auth/password", {
          currentPassword: "nope",
          newPassword: "a new password"
        })
        assert.strictEqual(wrong.status, 400)
        assert.strictEqual(wrong.body.error.param, "currentPassword")
        const short = yield* client.post("/api/auth/password", { currentPassword: user.password, newPassword: "short" })
        assert.strictEqual(short.status, 400)
        assert.strictEqual(short.body.error.param, "newPassword")
        const changed = yield* client.post("/api/auth/password", {
          currentPassword: user.password,
          newPassword: "a new password"
        })
        assert.strictEqual(changed.status, 200)
        assert.strictEqual((yield* client.get("/api/auth/session")).status, 200, "this session stays")
        assert.strictEqual((yield* other.get("/api/auth/session")).status, 401, "the other session ended")
        assert.strictEqual((yield* new Client().login(user.name, user.password)).status, 401)
        assert.strictEqual((yield* new Client().login(user.name, "a new password")).status, 200)
      }))

    it.effect("refuses unauthenticated calls and unknown bearer keys", () =>
      Effect.gen(function*() {
        const anonymous = yield* new Client().get("/api/keys")
        assert.strictEqual(anonymous.status, 401)
        assert.strictEqual(anonymous.body.error.type, "authentication_error")
        const script = new Client()
        script.bearer = "sk-not-a-real-key-at-all-000000"
        const bad = yield* script.get("/api/keys")
        assert.strictEqual(bad.status, 401)
        assert.strictEqual(bad.body.error.code, "invalid_api_key")
      }))

    // ---- keys ---------------------------------------------------------------

    it.effect("an admin creates, edits and revokes a user's key; a key's models stay within its group", () =>
      Effect.gen(function*() {
        const admin = yield* signedIn({ role: "admin" })
        const owner = yield* signedIn()
        const offered = yield* admin.client.get(`/api/admin/users/${owner.user.id}/models`)
        assert.strictEqual(offered.status, 200)
        assert.include(
          offered.body.groups.find((g: any) => g.name === "default").models.map((m: any) => m.id),
          "gpt-test"
        )
        const created = yield* admin.client.post(`/api/admin/users/${owner.user.id}/keys`, {
          name: "made-by-admin",
          models: ["gpt-test"],
          quota: "3"
        })
        assert.strictEqual(created.status, 201)
        assert.match(created.body.secret, /^sk-/)
        const id = created.body.key.id
        // The owner sees it as their own and changes its models and expiry.
        const mine = yield* owner.client.get("/api/keys")
        assert.deepStrictEqual(mine.body.data.map((k: any) => k.name), ["made-by-admin"])
        const expiresAt = Date.now() + 7 * 86_400_000
        const changed = yield* owner.client.patch(`/api/keys/${id}`, { models: ["gemini-test"], expiresAt })
        assert.strictEqual(changed.status, 200)
        assert.deepStrictEqual(changed.body.models, ["gemini-test"])
        assert.strictEqual(changed.body.expiresAt, expiresAt)
        // A model the key's group is not served is refused, naming what it is served.
        yield* admin.client.post("/api/admin/models", {
          id: "unserved-model",
          prices: { input: "1", output: "1", cachedInput: null, perRequest: null, free: false }
        })
        const outside = yield* owner.client.patch(`/api/keys/${id}`, { models: ["unserved-model"] })
        assert.strictEqual(outside.status, 400)
        assert.strictEqual(outside.body.error.param, "models[0]")
        assert.include(outside.body.error.message, "its models are: ")
        // The admin edits the lifetime cap, then revokes it.
        const capped = yield* admin.client.patch(`/api/admin/keys/${id}`, { quota: "5" })
        assert.strictEqual(capped.body.quota, "5.00")
        assert.strictEqual((yield* admin.client.delete(`/api/admin/keys/${id}`)).status, 200)
        assert.strictEqual((yield* owner.client.get("/api/keys")).body.data.length, 0)
        assert.strictEqual((yield* admin.client.delete(`/api/admin/keys/${id}`)).status, 404)
        // Users cannot reach these.
        assert.strictEqual(
          (yield* owner.client.post(`/api/admin/users/${owner.user.id}/keys`, { name: "x" })).status,
          403
        )
        yield* admin.client.delete("/api/admin/models/unserved-model")
      }))

    it.effect("creates a key (secret once), lists, updates, disables, deletes", () =>
      Effect.gen(function*() {
        const { client } = yield* signedIn()
        const created = yield* client.post("/api/keys", {
          name: "laptop",
          models: ["gpt-test"],
          quota: "12.5",
          expiresAt: Date.now() + 86_400_000
        })
        assert.strictEqual(created.status, 201)
        assert.match(created.body.secret, /^sk-/)
        assert.strictEqual(created.body.key.group, "default")
        assert.deepStrictEqual(created.body.key.models, ["gpt-test"])
        assert.strictEqual(created.body.key.quota, "12.50")
        assert.strictEqual(created.body.key.spent, "0.00")
        const id = created.body.key.id

        const list = yield* client.get("/api/keys")
        assert.strictEqual(list.body.data.length, 1)
        assert.notProperty(list.body.data[0], "secret")
        assert.notInclude(list.text, created.body.secret, "the secret is never shown again")
        assert.strictEqual(list.body.data[0].prefix, created.body.secret.slice(0, 10))

        const renamed = yield* client.patch(`/api/keys/${id}`, { name: "desktop", models: [], quota: null })
        assert.strictEqual(renamed.status, 200)
        assert.strictEqual(renamed.body.name, "desktop")
        assert.deepStrictEqual(renamed.body.models, [])
        assert.isNull(renamed.body.quota)

        const disabled = yield* client.patch(`/api/keys/${id}`, { enabled: false })
        assert.isFalse(disabled.body.enabled)
        const enabled = yield* client.patch(`/api/keys/${id}`, { enabled: true })
        assert.isTrue(enabled.body.enabled)

        const log = yield* InvalidationLog
        assert.include(log.topics, "keys")

        assert.strictEqual((yield* client.delete(`/api/keys/${id}`)).status, 200)
        assert.strictEqual((yield* client.get("/api/keys")).body.data.length, 0)
        assert.strictEqual((yield* client.delete(`/api/keys/${id}`)).status, 404)
      }))

    it.effect("validates key input and names the field", () =>
      Effect.gen(function*() {
        const { client } = yield* signedIn()
        const noName = yield* client.post("/api/keys", { name: "" })
        assert.strictEqual(noName.status, 400)
        assert.strictEqual(noName.body.error.param, "name")
        const badModel = yield* client.post("/api/keys", { name: "k", models: ["gpt-test", "no-such-model"] })
        assert.strictEqual(badModel.status, 400)
        assert.strictEqual(badModel.body.error.param, "models[1]")
        assert.include(badModel.body.error.message, "no-such-model")
        const control = yield* client.post("/api/keys", { name: "k", models: ["gpt-test\u0000"] })
        assert.deepStrictEqual([control.status, control.body.error.param], [400, "models[0]"])
        assert.include(control.body.error.message, "control characters")
        const badQuota = yield* client.post("/api/keys", { name: "k", quota: "1.2.3" })
        assert.strictEqual(badQuota.body.error.param, "quota")
        const past = yield* client.post("/api/keys", { name: "k", expiresAt: 1000 })
        assert.strictEqual(past.body.error.param, "expiresAt")
        const extra = yield* client.post("/api/keys", { name: "k", color: "red" })
        assert.strictEqual(extra.status, 400)
        assert.strictEqual(extra.body.error.param, "color")
        const notJson = yield* client.post("/api/keys", "{not json")
        assert.strictEqual(notJson.body.error.code, "invalid_json")
        const group = yield* client.post("/api/keys", { name: "k", group: "vip" })
        assert.strictEqual(group.status, 400, "vip is neither selectable nor assigned")
        assert.strictEqual(group.body.error.param, "group")
        const duplicate1 = yield* client.post("/api/keys", { name: "same" })
        assert.strictEqual(duplicate1.status, 201)
        const duplicate2 = yield* client.post("/api/keys", { name: "same" })
        assert.strictEqual(duplicate2.status, 409)
      }))

    it.effect("keys take their own rate limits and daily/monthly spending caps, never above their group's limits", () =>
      Effect.gen(function*() {
        const admin = yield* signedIn({ role: "admin" })
        const groupName = `limited${Date.now()}`
        const group = yield* admin.client.post("/api/admin/groups", {
          name: groupName,
          ratio: "1",
          limits: { rpm: 30, tpm: 10000, concurrency: null }
        })
        assert.strictEqual(group.status, 201)
        const { client, user } = yield* signedIn()
        assert.strictEqual(
          (yield* admin.client.patch(`/api/admin/groups/${groupName}`, { userIds: [user.id] })).status,
          200
        )
        const created = yield* client.post("/api/keys", {
          name: "limited",
          group: groupName,
          rpm: 10,
          concurrency: 8,
          dailyBudget: "1.5",
          monthlyBudget: "20"
        })
        assert.strictEqual(created.status, 201, created.text)
        const key = created.body.key
        assert.strictEqual(key.rpm, 10)
        assert.isNull(key.tpm)
        assert.strictEqual(key.concurrency, 8, "the group sets no concurrency limit, so any is allowed")
        assert.strictEqual(key.dailyBudget, "1.50")
        assert.strictEqual(key.monthlyBudget, "20.00")
        assert.deepStrictEqual((yield* InvalidationLog).changes.at(-1), { topic: "keys", ids: [key.id] })

        const tooHigh = yield* client.post("/api/keys", { name: "greedy", group: groupName, rpm: 31 })
        assert.strictEqual(tooHigh.status, 400)
        assert.strictEqual(tooHigh.body.error.param, "rpm")
        assert.include(tooHigh.body.error.message, "a key's limit may not exceed its group's")
        assert.include(tooHigh.body.error.message, `group '${groupName}' allows 30 requests per minute`)
        const tooManyTokens = yield* client.patch(`/api/keys/${key.id}`, { tpm: 20000 })
        assert.strictEqual(tooManyTokens.status, 400)
        assert.strictEqual(tooManyTokens.body.error.param, "tpm")
        assert.include(tooManyTokens.body.error.message, "10000 tokens per minute")

        const lowered = yield* client.patch(`/api/keys/${key.id}`, { rpm: null, tpm: 10000, dailyBudget: null })
        assert.strictEqual(lowered.status, 200)
        assert.isNull(lowered.body.rpm)
        assert.strictEqual(lowered.body.tpm, 10000)
        assert.isNull(lowered.body.dailyBudget)
        assert.strictEqual(lowered.body.monthlyBudget, "20.00")
        assert.strictEqual((yield* client.get("/api/keys")).body.data[0].tpm, 10000)

        const zero = yield* client.patch(`/api/keys/${key.id}`, { rpm: 0 })
        assert.strictEqual(zero.status, 400)
        assert.strictEqual(zero.body.error.param, "rpm")
        const fraction = yield* client.patch(`/api/keys/${key.id}`, { concurrency: 1.5 })
        assert.strictEqual(fraction.body.error.param, "concurrency")
        const negative = yield* client.patch(`/api/keys/${key.id}`, { monthlyBudget: "-3" })
        assert.strictEqual(negative.body.error.param, "monthlyBudget")
      }))

    it.effect("admins set users' limits and any user's key limits; users cannot", () =>
      Effect.gen(function*() {
        const admin = yield* signedIn({ role: "admin" })
        const name = `dora${Date.now()}`
        const created = yield* admin.client.post("/api/admin/users", { name, password: "doras password", rpm: 100 })
        assert.strictEqual(created.status, 201)
        assert.strictEqual(created.body.rpm, 100)
        assert.isNull(created.body.tpm)
        const id = created.body.id
        assert.deepStrictEqual((yield* InvalidationLog).changes.at(-1), { topic: "users", ids: [id] })
        const updated = yield* admin.client.patch(`/api/admin/users/${id}`, { tpm: 50000, concurrency: 3, rpm: null })
        assert.strictEqual(updated.status, 200)
        assert.deepStrictEqual([updated.body.rpm, updated.body.tpm, updated.body.concurrency], [null, 50000, 3])
        assert.deepStrictEqual((yield* InvalidationLog).changes.at(-1), { topic: "users", ids: [id] })
        assert.strictEqual((yield* admin.client.get(`/api/admin/users/${id}`)).body.tpm, 50000)
        assert.isTrue(
          (yield* admin.client.get("/api/admin/users")).body.data.some((u: any) => u.id === id && u.concurrency === 3)
        )
        const bad = yield* admin.client.patch(`/api/admin/users/${id}`, { rpm: -1 })
        assert.strictEqual(bad.status, 400)
        assert.strictEqual(bad.body.error.param, "rpm")

        const dora = new Client()
        assert.strictEqual((yield* dora.login(name, "doras password")).status, 200)
        const key = (yield* dora.post("/api/keys", { name: "main" })).body.key
        // A user cannot touch their own user limits, nor reach the admin key endpoint.
        assert.strictEqual((yield* dora.patch(`/api/admin/users/${id}`, { rpm: 1000 })).status, 403)
        assert.strictEqual((yield* dora.patch(`/api/admin/keys/${key.id}`, { rpm: 5 })).status, 403)
        // An admin may set any user's key limits (within the key's group, as anyone).
        const throttled = yield* admin.client.patch(`/api/admin/keys/${key.id}`, { rpm: 5, dailyBudget: "2" })
        assert.strictEqual(throttled.status, 200)
        assert.strictEqual(throttled.body.rpm, 5)
        assert.strictEqual((yield* dora.get("/api/keys")).body.data[0].rpm, 5)
        assert.strictEqual((yield* dora.get("/api/keys")).body.data[0].dailyBudget, "2.00")
        assert.deepStrictEqual((yield* InvalidationLog).changes.at(-1), { topic: "keys", ids: [key.id] })
        assert.strictEqual((yield* admin.client.patch("/api/admin/keys/key_missing", { rpm: 5 })).status, 404)
      }))

    it.effect("a user can never read or change another user's keys", () =>
      Effect.gen(function*() {
        const alice = yield* signedIn()
        const bob = yield* signedIn()
        const key = (yield* alice.client.post("/api/keys", { name: "alice key" })).body.key
        assert.strictEqual((yield* bob.client.patch(`/api/keys/${key.id}`, { enabled: false })).status, 404)
        assert.strictEqual((yield* bob.client.patch(`/api/keys/${key.id}`, { name: "mine now" })).status, 404)
        assert.strictEqual((yield* bob.client.delete(`/api/keys/${key.id}`)).status, 404)
        assert.strictEqual((yield* bob.client.get("/api/keys")).body.data.length, 0)
        const still = (yield* alice.client.get("/api/keys")).body.data[0]
        assert.strictEqual(still.name, "alice key")
        assert.isTrue(still.enabled)
        // Users cannot reach the admin view of Alice's keys either.
        const adminPath = yield* bob.client.get(`/api/admin/users/${alice.user.id}/keys`)
        assert.strictEqual(adminPath.status, 403)
      }))

    it.effect("an API key reads without CSRF: its owner's session, usage, ledger and its own key", () =>
      Effect.gen(function*() {
        const { client, user } = yield* signedIn()
        const secret = (yield* client.post("/api/keys", { name: "script" })).body.secret
        yield* client.post("/api/keys", { name: "sibling" })
        const script = new Client()
        script.bearer = secret
        const session = yield* script.get("/api/auth/session")
        assert.strictEqual(session.body.user.id, user.id)
        assert.isNull(session.body.csrfToken)
        assert.strictEqual((yield* script.get("/api/usage")).status, 200)
        assert.strictEqual((yield* script.get("/api/ledger")).status, 200)
        const keys = yield* script.get("/api/keys")
        assert.deepStrictEqual(
          keys.body.data.map((k: any) => k.name),
          ["script"],
          "a key sees itself, not its siblings"
        )
      }))

    it.effect("an API key can never create keys or loosen a key's limits: that needs a console session", () =>
      Effect.gen(function*() {
        const { client } = yield* signedIn()
        // A key capped at $5 and restricted to one model, as a leaked key would be.
        const capped = (yield* client.post("/api/keys", { name: "capped", quota: "5", models: ["gpt-test"] })).body
        const script = new Client()
        script.bearer = capped.secret
        const lift = yield* script.patch(`/api/keys/${capped.key.id}`, { quota: null, models: [], expiresAt: null })
        assert.strictEqual(lift.status, 403)
        assert.strictEqual(lift.body.error.code, "session_required")
        const wider = yield* script.post("/api/keys", { name: "unrestricted" })
        assert.strictEqual(wider.status, 403)
        assert.strictEqual(wider.body.error.code, "session_required")
        assert.strictEqual((yield* script.delete(`/api/keys/${capped.key.id}`)).status, 403)
        assert.strictEqual((yield* script.post("/api/redeem", { code: "mgr-x" })).status, 403)
        assert.strictEqual(
          (yield* script.post("/api/auth/password", { currentPassword: "x", newPassword: "long enough" })).status,
          403
        )
        const after = (yield* client.get("/api/keys")).body.data.find((k: any) => k.id === capped.key.id)
        assert.strictEqual(after.quota, "5.00")
        assert.deepStrictEqual(after.models, ["gpt-test"])
        assert.strictEqual((yield* client.get("/api/keys")).body.data.length, 1, "no key was created")
      }))

    it.effect("an admin's key may use the admin endpoints but never change itself or its own user", () =>
      Effect.gen(function*() {
        const admin = yield* signedIn({ role: "admin" })
        const created = (yield* admin.client.post("/api/keys", { name: "ops", quota: "1" })).body
        const script = new Client()
        script.bearer = created.secret
        const self = yield* script.patch(`/api/admin/keys/${created.key.id}`, { quota: null })
        assert.strictEqual(self.status, 403)
        assert.strictEqual(self.body.error.code, "self_change")
        const ownUser = yield* script.patch(`/api/admin/users/${admin.user.id}`, { rpm: null })
        assert.strictEqual(ownUser.status, 403)
        const ownBalance = yield* script.post(`/api/admin/users/${admin.user.id}/adjust`, {
          amount: "100",
          reason: "free money"
        })
        assert.strictEqual(ownBalance.status, 403)
        const other = yield* signedIn()
        const otherKey = (yield* other.client.post("/api/keys", { name: "theirs" })).body.key
        assert.strictEqual(
          (yield* script.patch(`/api/admin/keys/${otherKey.id}`, { rpm: 5 })).status,
          200,
          "other keys it may change"
        )
      }))

    // ---- models, connect -----------------------------------------------------

    it.effect("lists my models per group with prices after the group ratio", () =>
      Effect.gen(function*() {
        const { client, user } = yield* signedIn()
        const mine = yield* client.get("/api/models")
        assert.deepStrictEqual(mine.body.groups.map((g: any) => g.name), ["default"])
        const gpt = mine.body.groups[0].models.find((m: any) => m.id === "gpt-test")
        assert.deepStrictEqual(gpt.prices, {
          input: "2.00",
          output: "8.00",
          cachedInput: null,
          cacheWrite: null,
          perRequest: null,
          free: false
        })
        assert.strictEqual(gpt.outputTokenLimit, 4096)

        const admin = yield* signedIn({ role: "admin" })
        yield* admin.client.patch(`/api/admin/groups/vip`, { userIds: [user.id] })
        const both = yield* client.get("/api/models")
        const vip = both.body.groups.find((g: any) => g.name === "vip")
        assert.strictEqual(vip.ratio, "0.5")
        assert.deepStrictEqual(vip.limits, { rpm: 600, tpm: null, concurrency: 4 })
        assert.strictEqual(vip.models.find((m: any) => m.id === "gpt-test").prices.input, "1.00")
        const vipKey = yield* client.post("/api/keys", { name: "vip key", group: "vip" })
        assert.strictEqual(vipKey.status, 201, "an assigned group may be picked")
      }))

    it.effect("tells the client settings from the request's address", () =>
      Effect.gen(function*() {
        const { client } = yield* signedIn()
        client.address = "127.0.0.1"
        const info = yield* client.request("GET", "/api/connect", undefined, {
          host: "llm.example.com",
          "x-forwarded-proto": "https"
        })
        assert.strictEqual(info.body.baseUrl, "https://llm.example.com")
        assert.strictEqual(info.body.openaiBaseUrl, "https://llm.example.com/v1")
        assert.strictEqual(info.body.geminiBaseUrl, "https://llm.example.com")
        assert.strictEqual(info.body.geminiApiVersion, "v1beta")
        assert.strictEqual(info.body.exampleModel, "gemini-test")
      }))

    // ---- usage, dashboard, ledger, redeem -----------------------------------------

    it.effect("shows only my usage, filtered, paged, as CSV and per day; dashboard sums it", () =>
      Effect.gen(function*() {
        const alice = yield* signedIn({ balanceNanos: 10n * USD })
        const bob = yield* signedIn()
        const keyA = (yield* alice.client.post("/api/keys", { name: "a" })).body.key.id
        const keyB = (yield* bob.client.post("/api/keys", { name: "b" })).body.key.id
        const now = Date.now()
        for (let i = 0; i < 5; i++) {
          yield* insertUsage({
            userId: alice.user.id,
            keyId: keyA,
            model: i % 2 === 0 ? "gpt-test" : "gemini-test",
            costNanos: 1_500_000n,
            createdAt: now - i * 1000
          })
        }
        yield* insertUsage({
          userId: alice.user.id,
          keyId: keyA,
          model: "gpt-test",
          costNanos: 7n * USD,
          createdAt: now - 40 * 86_400_000
        })
        yield* insertUsage({
          userId: bob.user.id,
          keyId: keyB,
          model: "gpt-test",
          costNanos: 99n * USD,
          createdAt: now
        })
        // A coding agent's call: cache writes, and the hosted tool its translation left out.
        yield* insertUsage({
          userId: alice.user.id,
          keyId: keyA,
          model: "gemini-test",
          costNanos: 1n,
          createdAt: now - 10 * 86_400_000,
          cacheWriteTokens: 20,
          note: "tools left out: web_search (cannot run on this model)"
        })

        const page1 = yield* alice.client.get("/api/usage?limit=2")
        assert.strictEqual(page1.body.data.length, 2)
        assert.isString(page1.body.nextCursor)
        assert.strictEqual(page1.body.data[0].keyName, "a")
        const page2 = yield* alice.client.get(`/api/usage?limit=2&cursor=${page1.body.nextCursor}`)
        assert.strictEqual(page2.body.data.length, 2)
        assert.notStrictEqual(page2.body.data[0].id, page1.body.data[1].id)
        const all = yield* alice.client.get("/api/usage")
        assert.strictEqual(all.body.data.length, 7)
        assert.isTrue(all.body.data.every((r: any) => r.userId === alice.user.id))
        const agent = all.body.data.find((r: any) => r.note !== null)
        assert.deepStrictEqual([agent.cacheWriteTokens, agent.note], [
          20,
          "tools left out: web_search (cannot run on this model)"
        ])
        assert.deepStrictEqual([all.body.data[0].cacheWriteTokens, all.body.data[0].note], [0, null])
        const gemini = yield* alice.client.get("/api/usage?model=gemini-test")
        assert.strictEqual(gemini.body.data.length, 3)
        const recent = yield* alice.client.get(`/api/usage?from=${now - 86_400_000}`)
        assert.strictEqual(recent.body.data.length, 5)
        const bad = yield* alice.client.get("/api/usage?limit=abc")
        assert.strictEqual(bad.status, 400)
        assert.strictEqual(bad.body.error.param, "limit")

        // Another user's key id filters to nothing, never to their records.
        const spy = yield* alice.client.get(`/api/usage?keyId=${keyB}`)
        assert.strictEqual(spy.body.data.length, 0)

        const csv = yield* alice.client.get("/api/usage.csv")
        assert.strictEqual(csv.status, 200)
        assert.match(csv.headers.get("content-type")!, /text\/csv/)
        const lines = csv.text.trim().split("\n")
        assert.strictEqual(lines.length, 8)
        assert.strictEqual(
          lines[0],
          "time,request_id,user,key,model,stream,prompt_tokens,completion_tokens,cached_tokens,cost_usd,latency_ms,status,error_code,dialect,reasoning_tokens,ttfb_ms,error_message,cache_write_tokens,note"
        )
        assert.match(
          csv.text,
          /,0\.000000001,120,200,,[a-z]+,0,[0-9]*,,20,tools left out: web_search \(cannot run on this model\)/
        )
        assert.notInclude(csv.text, "99.00")

        const daily = yield* alice.client.get("/api/usage/daily")
        const today = new Date(now).toISOString().slice(0, 10)
        const gptToday = daily.body.data.find((p: any) => p.day === today && p.model === "gpt-test")
        assert.strictEqual(gptToday.requests, 3)
        assert.strictEqual(gptToday.cost, "0.0045")

        const dashboard = yield* alice.client.get("/api/dashboard")
        assert.strictEqual(dashboard.body.balance, "10.00")
        assert.strictEqual(dashboard.body.spentToday, "0.0075")
        assert.strictEqual(dashboard.body.requestsToday, 5)
        assert.strictEqual(dashboard.body.tokensToday, 750)
        assert.strictEqual(dashboard.body.activeKeys, 1)
        assert.isTrue(dashboard.body.daily.length >= 2)
      }))

    it.effect("redeems a code once; the ledger shows it; another user cannot reuse it", () =>
      Effect.gen(function*() {
        const admin = yield* signedIn({ role: "admin" })
        const alice = yield* signedIn()
        const bob = yield* signedIn()
        const batch = yield* admin.client.post("/api/admin/codes", { count: 2, amount: "2.5" })
        assert.strictEqual(batch.status, 201)
        assert.strictEqual(batch.body.codes.length, 2)
        const code = batch.body.codes[0]
        const redeemed = yield* alice.client.post("/api/redeem", { code })
        assert.strictEqual(redeemed.status, 200)
        assert.deepStrictEqual(redeemed.body, { amount: "2.50", balance: "2.50" })
        const again = yield* bob.client.post("/api/redeem", { code })
        assert.strictEqual(again.status, 400)
        assert.strictEqual(again.body.error.code, "code_already_redeemed")
        const unknown = yield* bob.client.post("/api/redeem", { code: "mgr-nonsense" })
        assert.strictEqual(unknown.body.error.code, "code_unknown")
        const empty = yield* bob.client.post("/api/redeem", { code: "" })
        assert.strictEqual(empty.body.error.param, "code")

        const ledger = yield* alice.client.get("/api/ledger")
        assert.strictEqual(ledger.body.data.length, 1)
        assert.strictEqual(ledger.body.data[0].kind, "redemption")
        assert.strictEqual(ledger.body.data[0].amount, "2.50")
        assert.strictEqual((yield* bob.client.get("/api/ledger")).body.data.length, 0)

        const codes = yield* admin.client.get(`/api/admin/codes?batch=${batch.body.batch}`)
        assert.strictEqual(codes.body.data.length, 2)
        const used = codes.body.data.find((c: any) => c.redeemedBy !== null)
        assert.strictEqual(used.redeemedBy, alice.user.name)
        assert.notInclude(codes.text, code, "listings show prefixes only")
        const unused = yield* admin.client.get(`/api/admin/codes?batch=${batch.body.batch}&status=unused`)
        assert.strictEqual(unused.body.data.length, 1)
        const csv = yield* admin.client.get(`/api/admin/codes.csv?batch=${batch.body.batch}`)
        assert.strictEqual(csv.text.trim().split("\n").length, 3)
        assert.include(csv.text, alice.user.name)
      }))

    // ---- admin ----------------------------------------------------------------------

    it.effect("admin endpoints refuse users, with a session or an API key", () =>
      Effect.gen(function*() {
        const { client } = yield* signedIn()
        const paths = [
          "/api/admin/users",
          "/api/admin/groups",
          "/api/admin/channels",
          "/api/admin/models",
          "/api/admin/codes",
          "/api/admin/codes.csv",
          "/api/admin/usage/daily",
          "/api/admin/usage"
        ]
        for (const path of paths) {
          const reply = yield* client.get(path)
          assert.strictEqual(reply.status, 403, path)
          assert.strictEqual(reply.body.error.code, "admin_only")
        }
        assert.strictEqual((yield* client.post("/api/admin/codes", { count: 1, amount: "100" })).status, 403)
        assert.strictEqual((yield* client.post("/api/admin/users", { name: "evil", password: "12345678" })).status, 403)
        const secret = (yield* client.post("/api/keys", { name: "k" })).body.secret
        const script = new Client()
        script.bearer = secret
        assert.strictEqual((yield* script.get("/api/admin/users")).status, 403)
      }))

    it.effect("a user cannot change another user's balance", () =>
      Effect.gen(function*() {
        const alice = yield* signedIn({ balanceNanos: 3n * USD })
        const bob = yield* signedIn()
        const steal = yield* bob.client.post(`/api/admin/users/${alice.user.id}/adjust`, {
          amount: "-3",
          reason: "mine"
        })
        assert.strictEqual(steal.status, 403)
        assert.strictEqual((yield* alice.client.get("/api/dashboard")).body.balance, "3.00")
      }))

    it.effect("an admin's API key can script the admin API", () =>
      Effect.gen(function*() {
        const admin = yield* signedIn({ role: "admin" })
        const secret = (yield* admin.client.post("/api/keys", { name: "ops" })).body.secret
        const script = new Client()
        script.bearer = secret
        const users = yield* script.get("/api/admin/users")
        assert.strictEqual(users.status, 200)
        const created = yield* script.post("/api/admin/users", {
          name: `scripted${Date.now()}`,
          password: "long password"
        })
        assert.strictEqual(created.status, 201)
      }))

    it.effect("manages users: create with groups and balance, role, disable, adjust, keys, usage", () =>
      Effect.gen(function*() {
        const admin = yield* signedIn({ role: "admin" })
        const name = `carol${Date.now()}`
        const created = yield* admin.client.post("/api/admin/users", {
          name,
          password: "carols password",
          groups: ["vip"],
          balance: "20"
        })
        assert.strictEqual(created.status, 201)
        assert.strictEqual(created.body.balance, "20.00")
        assert.deepStrictEqual(created.body.groups, ["vip"])
        const id = created.body.id
        const dup = yield* admin.client.post("/api/admin/users", { name, password: "carols password" })
        assert.strictEqual(dup.status, 409)
        const badName = yield* admin.client.post("/api/admin/users", {
          name: "no spaces allowed",
          password: "carols password"
        })
        assert.strictEqual(badName.body.error.param, "name")
        const badGroup = yield* admin.client.post("/api/admin/users", {
          name: `${name}x`,
          password: "carols password",
          groups: ["nope"]
        })
        assert.strictEqual(badGroup.body.error.param, "groups[0]")

        const carol = new Client()
        assert.strictEqual((yield* carol.login(name, "carols password")).status, 200)
        yield* carol.post("/api/keys", { name: "c1", group: "vip" })

        const adjusted = yield* admin.client.post(`/api/admin/users/${id}/adjust`, {
          amount: "-5.25",
          reason: "refund reversal"
        })
        assert.strictEqual(adjusted.status, 200)
        assert.strictEqual(adjusted.body.balance, "14.75")
        const tooMuch = yield* admin.client.post(`/api/admin/users/${id}/adjust`, { amount: "-100", reason: "oops" })
        assert.strictEqual(tooMuch.status, 400)
        assert.strictEqual(tooMuch.body.error.param, "amount")
        const noReason = yield* admin.client.post(`/api/admin/users/${id}/adjust`, { amount: "1", reason: "" })
        assert.strictEqual(noReason.body.error.param, "reason")
        const zero = yield* admin.client.post(`/api/admin/users/${id}/adjust`, { amount: "0", reason: "nothing" })
        assert.strictEqual(zero.body.error.param, "amount")

        const ledger = yield* admin.client.get(`/api/admin/users/${id}/ledger`)
        assert.deepStrictEqual(ledger.body.data.map((e: any) => e.kind), ["adjustment", "topup"])
        assert.strictEqual(ledger.body.data[0].reason, "refund reversal")

        const keys = yield* admin.client.get(`/api/admin/users/${id}/keys`)
        assert.strictEqual(keys.body.data.length, 1)
        assert.strictEqual(keys.body.data[0].group, "vip")
        const usage = yield* admin.client.get(`/api/admin/users/${id}/usage`)
        assert.strictEqual(usage.body.data.length, 0)

        const promoted = yield* admin.client.patch(`/api/admin/users/${id}`, { role: "admin" })
        assert.strictEqual(promoted.body.role, "admin")
        const disabled = yield* admin.client.patch(`/api/admin/users/${id}`, { enabled: false })
        assert.isFalse(disabled.body.enabled)
        assert.strictEqual((yield* carol.get("/api/auth/session")).status, 401, "disabling ends the user's sessions")
        assert.strictEqual((yield* new Client().login(name, "carols password")).status, 401)
        const self = yield* admin.client.patch(`/api/admin/users/${admin.user.id}`, { enabled: false })
        assert.strictEqual(self.status, 400)

        const one = yield* admin.client.get(`/api/admin/users/${id}`)
        assert.strictEqual(one.body.keyCount, 1)
        const all = yield* admin.client.get("/api/admin/users")
        assert.isTrue(all.body.data.some((u: any) => u.id === id))
        assert.strictEqual((yield* admin.client.get("/api/admin/users/usr_missing")).status, 404)
      }))

    it.effect("manages groups", () =>
      Effect.gen(function*() {
        const admin = yield* signedIn({ role: "admin" })
        const created = yield* admin.client.post("/api/admin/groups", {
          name: "team-a",
          ratio: "0.8",
          limits: { rpm: 60, tpm: null, concurrency: null }
        })
        assert.strictEqual(created.status, 201)
        assert.strictEqual(created.body.ratio, "0.8")
        assert.isFalse(created.body.selectable)
        assert.strictEqual((yield* admin.client.post("/api/admin/groups", { name: "team-a", ratio: "1" })).status, 409)
        const badRatio = yield* admin.client.post("/api/admin/groups", { name: "team-b", ratio: "-1" })
        assert.strictEqual(badRatio.body.error.param, "ratio")
        // 0 is refused as the configuration file refuses it
        const zeroRatio = yield* admin.client.post("/api/admin/groups", { name: "team-b", ratio: "0" })
        assert.strictEqual(zeroRatio.status, 400)
        assert.strictEqual(zeroRatio.body.error.param, "ratio")
        assert.include(zeroRatio.body.error.message, "positive ratio")
        const zeroUpdate = yield* admin.client.patch("/api/admin/groups/team-a", { ratio: "0.000000" })
        assert.strictEqual(zeroUpdate.status, 400)
        const updated = yield* admin.client.patch("/api/admin/groups/team-a", { selectable: true, ratio: "1.25" })
        assert.isTrue(updated.body.selectable)
        assert.strictEqual(updated.body.ratio, "1.25")
        const badUser = yield* admin.client.patch("/api/admin/groups/team-a", { userIds: ["usr_nobody"] })
        assert.strictEqual(badUser.body.error.param, "userIds[0]")
        const list = yield* admin.client.get("/api/admin/groups")
        assert.isTrue(list.body.data.some((g: any) => g.name === "team-a"))
        assert.include((yield* InvalidationLog).topics, "catalog")
        assert.strictEqual((yield* admin.client.delete("/api/admin/groups/team-a")).status, 200)
        assert.strictEqual((yield* admin.client.delete("/api/admin/groups/team-a")).status, 404)
        const inUse = yield* admin.client.delete("/api/admin/groups/default")
        assert.strictEqual(inUse.status, 409, "the default group is never deleted")
        assert.include(inUse.body.error.message, "'default' cannot be deleted")
        // A group that channels serve or users hold does not vanish: the refusal names them and where to change it.
        yield* admin.client.post("/api/admin/groups", { name: "team-c", ratio: "1" })
        const channel = yield* admin.client.post("/api/admin/channels", {
          name: "serves-team-c",
          type: "openai",
          baseUrl: "http://team-c.example.test/v1",
          apiKeys: ["sk-upstream-team-c-0001"],
          models: ["gpt-4o-mini"],
          groups: ["team-c"]
        })
        assert.strictEqual(channel.status, 201)
        const served = yield* admin.client.delete("/api/admin/groups/team-c")
        assert.strictEqual(served.status, 409)
        assert.include(served.body.error.message, "serves-team-c")
        assert.include(served.body.error.message, "Channels → Edit")
        yield* admin.client.patch(`/api/admin/channels/${channel.body.id}`, { groups: ["default"] })
        yield* admin.client.patch("/api/admin/groups/team-c", { userIds: [admin.user.id] })
        const held = yield* admin.client.delete("/api/admin/groups/team-c")
        assert.strictEqual(held.status, 409)
        assert.include(held.body.error.message, "Assigned users")
        yield* admin.client.patch("/api/admin/groups/team-c", { userIds: [] })
        assert.strictEqual((yield* admin.client.delete("/api/admin/groups/team-c")).status, 200)
        assert.strictEqual((yield* admin.client.delete(`/api/admin/channels/${channel.body.id}`)).status, 200)
      }))

    it.effect("manages Vertex AI and Bedrock channels: where they are served, their credentials write-only, refusals by field", () =>
      Effect.gen(function*() {
        const admin = yield* signedIn({ role: "admin" })
        const keyFile = JSON.stringify({
          type: "service_account",
          private_key: "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n",
          client_email: "gateway@my-project.iam.gserviceaccount.com",
          token_uri: "https://oauth2.googleapis.com/token"
        })
        const vertex = yield* admin.client.post("/api/admin/channels", {
          name: "vertex",
          type: "vertex",
          project: "my-project",
          location: "us-east5",
          apiKeys: [keyFile],
          models: ["gemini-2.5-flash", "claude-sonnet-4-5"],
          modelMap: { "claude-sonnet-4-5": "claude-sonnet-4-5@20250929" }
        })
        assert.strictEqual(vertex.status, 201, vertex.text)
        assert.strictEqual(vertex.body.baseUrl, "https://us-east5-aiplatform.googleapis.com")
        assert.strictEqual(vertex.body.project, "my-project")
        assert.strictEqual(vertex.body.location, "us-east5")
        // A service account is named by its email; its private key never shows.
        assert.deepStrictEqual(vertex.body.keyHints, ["gateway@my-project.iam.gserviceaccount.com"])
        assert.notInclude(vertex.text, "BEGIN PRIVATE KEY")

        const pair = JSON.stringify({
          access_key_id: "AKIAIOSFODNN7EXAMPLE",
          secret_access_key: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
        })
        const bedrock = yield* admin.client.post("/api/admin/channels", {
          name: "bedrock",
          type: "bedrock",
          region: "eu-west-1",
          apiKeys: [pair, "ABSKexampleBedrockApiKey0000"],
          models: ["nova-pro"]
        })
        assert.strictEqual(bedrock.status, 201, bedrock.text)
        assert.strictEqual(bedrock.body.baseUrl, "https://bedrock-runtime.eu-west-1.amazonaws.com")
        assert.strictEqual(bedrock.body.region, "eu-west-1")
        assert.deepStrictEqual(bedrock.body.keyHints, ["…MPLE", "…0000"])
        assert.notInclude(bedrock.text, "wJalrXUtnFEMI")

        const moved = yield* admin.client.patch(`/api/admin/channels/${bedrock.body.id}`, { region: "us-west-2" })
        assert.strictEqual(moved.body.region, "us-west-2")
        // The base URL was the old region's default: it follows the region.
        assert.strictEqual(moved.body.baseUrl, "https://bedrock-runtime.us-west-2.amazonaws.com")
        const rebased = yield* admin.client.patch(`/api/admin/channels/${bedrock.body.id}`, {
          baseUrl: "https://bedrock.proxy.test/"
        })
        assert.strictEqual(rebased.body.baseUrl, "https://bedrock.proxy.test")
        // One the operator gave (a proxy, a private endpoint) stays where it is.
        const again = yield* admin.client.patch(`/api/admin/channels/${bedrock.body.id}`, { region: "us-east-1" })
        assert.strictEqual(again.body.baseUrl, "https://bedrock.proxy.test")

        const refused = (body: Record<string, unknown>) =>
          Effect.map(
            admin.client.post("/api/admin/channels", { name: "x", models: ["m"], ...body }),
            (response) => [response.status, response.body.error.param, response.body.error.message]
          )
        const noProject = yield* refused({ type: "vertex", location: "us-east5", apiKeys: [keyFile] })
        assert.deepStrictEqual(noProject.slice(0, 2), [400, "project"])
        assert.include(noProject[2], "a vertex channel needs project")
        const noRegion = yield* refused({ type: "bedrock", apiKeys: [pair] })
        assert.deepStrictEqual(noRegion.slice(0, 2), [400, "region"])
        const badKey = yield* refused({ type: "vertex", project: "my-project", location: "us-east5", apiKeys: ["{}"] })
        assert.deepStrictEqual(badKey.slice(0, 2), [400, "apiKeys[0]"])
        assert.include(badKey[2], "client_email")
        const badPair = yield* refused({
          type: "bedrock",
          region: "us-east-1",
          apiKeys: [JSON.stringify({ access_key_id: "AKIAIOSFODNN7EXAMPLE" })]
        })
        assert.deepStrictEqual(badPair.slice(0, 2), [400, "apiKeys[0]"])
        assert.include(badPair[2], "secret_access_key")
        const misplaced = yield* refused({ type: "openai", baseUrl: "http://x", region: "us-east-1", apiKeys: ["k"] })
        assert.deepStrictEqual(misplaced.slice(0, 2), [400, "region"])
        const noUrl = yield* refused({ type: "openai", apiKeys: ["k"] })
        assert.deepStrictEqual(noUrl.slice(0, 2), [400, "baseUrl"])
        for (const id of [vertex.body.id, bedrock.body.id]) {
          assert.strictEqual((yield* admin.client.delete(`/api/admin/channels/${id}`)).status, 200)
        }
      }))

    it.effect("manages channels: upstream keys are write-only; Test reports latency or the upstream's error", () =>
      Effect.gen(function*() {
        const admin = yield* signedIn({ role: "admin" })
        const created = yield* admin.client.post("/api/admin/channels", {
          name: "good-one",
          type: "openai",
          baseUrl: "http://good.example.test/v1/",
          apiKeys: ["sk-upstream-AAAA-1111", "sk-upstream-BBBB-2222"],
          models: ["gpt-test"],
          modelMap: { "gpt-test": "gpt-4o-mini" },
          groups: ["default"],
          priority: 5
        })
        assert.strictEqual(created.status, 201)
        assert.strictEqual(created.body.keyCount, 2)
        assert.deepStrictEqual(created.body.keyHints, ["…1111", "…2222"])
        assert.strictEqual(created.body.baseUrl, "http://good.example.test/v1")
        assert.notInclude(created.text, "sk-upstream-AAAA")
        const id = created.body.id

        const list = yield* admin.client.get("/api/admin/channels")
        assert.notInclude(list.text, "sk-upstream")
        assert.isTrue(list.body.data.some((c: any) => c.id === id))

        const test = yield* admin.client.post(`/api/admin/channels/${id}/test`, {})
        // Every key is tried.
        assert.deepStrictEqual(test.body, {
          ok: true,
          latencyMs: 42,
          status: 200,
          message: "Hello from gpt-test",
          model: "gpt-test",
          keys: [
            { index: 0, hint: "…1111", ok: true, latencyMs: 42, status: 200, message: "Hello from gpt-test" },
            { index: 1, hint: "…2222", ok: true, latencyMs: 42, status: 200, message: "Hello from gpt-test" }
          ]
        })
        const wrongModel = yield* admin.client.post(`/api/admin/channels/${id}/test`, { model: "gemini-test" })
        assert.strictEqual(wrongModel.body.error.param, "model")

        const moved = yield* admin.client.patch(`/api/admin/channels/${id}`, {
          baseUrl: "http://bad.example.test",
          apiKeys: ["sk-new-9999"],
          enabled: false
        })
        assert.strictEqual(moved.body.keyCount, 1)
        assert.deepStrictEqual(moved.body.keyHints, ["…9999"])
        assert.isFalse(moved.body.enabled)
        const failing = yield* admin.client.post(`/api/admin/channels/${id}/test`, {})
        assert.strictEqual(failing.status, 200)
        assert.isFalse(failing.body.ok)
        assert.strictEqual(failing.body.status, 401)
        assert.include(failing.body.message, "Incorrect API key")
        assert.deepStrictEqual(failing.body.keys.map((k: any) => [k.hint, k.ok]), [["…9999", false]])
        // The outcome went into the key's health (the health service decides what: see the engine's Health tests).
        assert.strictEqual((yield* admin.client.get(`/api/admin/channels/${id}`)).body.health.state, "disabled")

        const badMap = yield* admin.client.patch(`/api/admin/channels/${id}`, { modelMap: { "other": "x" } })
        assert.strictEqual(badMap.body.error.param, "modelMap.other")
        const badUrl = yield* admin.client.post("/api/admin/channels", {
          name: "x",
          type: "openai",
          baseUrl: "ftp://x",
          apiKeys: [],
          models: ["m"]
        })
        assert.strictEqual(badUrl.body.error.param, "baseUrl")
        const noModels = yield* admin.client.post("/api/admin/channels", {
          name: "x",
          type: "openai",
          baseUrl: "http://x",
          apiKeys: [],
          models: []
        })
        assert.strictEqual(noModels.body.error.param, "models")
        const badType = yield* admin.client.post("/api/admin/channels", {
          name: "x",
          type: "bard",
          baseUrl: "http://x",
          apiKeys: [],
          models: ["m"]
        })
        assert.strictEqual(badType.body.error.param, "type")
        // An Azure channel without an api-version uses the default, as in the configuration file.
        const azure = yield* admin.client.post("/api/admin/channels", {
          name: "az",
          type: "azure",
          baseUrl: "https://x.openai.azure.com",
          apiKeys: ["k"],
          models: ["m"]
        })
        assert.strictEqual(azure.status, 201)
        assert.isNull(azure.body.apiVersion)
        assert.strictEqual((yield* admin.client.delete(`/api/admin/channels/${azure.body.id}`)).status, 200)

        assert.strictEqual((yield* admin.client.get(`/api/admin/channels/${id}`)).body.name, "good-one")
        assert.strictEqual((yield* admin.client.delete(`/api/admin/channels/${id}`)).status, 200)
        assert.strictEqual((yield* admin.client.get(`/api/admin/channels/${id}`)).status, 404)
      }))

    it.effect("fetches a channel's models from its upstream, saved or not, saying which have a price and which the price table knows", () =>
      Effect.gen(function*() {
        const admin = yield* signedIn({ role: "admin" })
        const user = yield* signedIn()
        const fresh = yield* admin.client.post("/api/admin/channels/models", {
          type: "openai",
          baseUrl: "http://good.example.test/v1/",
          apiKey: "  sk-probe-key-7777 "
        })
        assert.strictEqual(fresh.status, 200)
        assert.deepStrictEqual(fresh.body.data.map((m: any) => [m.id, m.priced, m.preset, m.embedding]), [
          ["brand-new-model", false, false, false],
          ["gpt-4.1-mini", false, true, false],
          ["gpt-test", true, false, false],
          ["text-embed-test", false, false, true]
        ])
        assert.deepStrictEqual([
          fresh.body.data[0].displayName,
          fresh.body.data[0].inputTokenLimit,
          fresh.body.data[0].outputTokenLimit
        ], ["Brand New", 32_000, null])
        assert.strictEqual(
          listedBy.get("http://good.example.test/v1"),
          "sk-probe-key-7777",
          "the key given, trimmed, at the address given, without its slash"
        )

        // Model names with control characters are refused at the door, in the list and in the map.
        for (
          const [models, modelMap] of [
            [["gpt-test\nevil"], undefined],
            [["gpt-test"], { "gpt-test": "up\r\nstream" }],
            [["gpt-test"], { "x\u0000": "y" }]
          ] as const
        ) {
          const bad = yield* admin.client.post("/api/admin/channels", {
            name: "control",
            type: "openai",
            baseUrl: "http://good.example.test/v1",
            apiKeys: ["sk-k"],
            models,
            ...(modelMap === undefined ? {} : { modelMap })
          })
          assert.strictEqual(bad.status, 400, JSON.stringify([models, modelMap]))
          assert.include(bad.body.error.message, "control characters")
        }

        // A saved channel lists with its own key; a new address in the edit form replaces its address only.
        const saved = yield* admin.client.post("/api/admin/channels", {
          name: "to-list",
          type: "openai",
          baseUrl: "http://bad.example.test/v1",
          apiKeys: ["sk-saved-key-1234"],
          models: ["gpt-test"]
        })
        const refused = yield* admin.client.post("/api/admin/channels/models", { channelId: saved.body.id })
        assert.deepStrictEqual([refused.status, refused.body.error.code, refused.body.error.type], [
          502,
          "upstream_error",
          "upstream_error"
        ])
        assert.include(refused.body.error.message, "The upstream said: Incorrect API key provided")
        // Another address needs its key in the same request: the saved key only goes to the saved address.
        const elsewhere = yield* admin.client.post("/api/admin/channels/models", {
          channelId: saved.body.id,
          baseUrl: "http://good.example.test/v2"
        })
        assert.deepStrictEqual([elsewhere.status, elsewhere.body.error.param], [400, "apiKey"])
        assert.include(elsewhere.body.error.message, "not the channel's saved address")
        assert.isFalse(listedBy.has("http://good.example.test/v2"), "nothing was sent there")
        const moved = yield* admin.client.post("/api/admin/channels/models", {
          channelId: saved.body.id,
          baseUrl: "http://good.example.test/v2",
          apiKey: "sk-given-key-5678"
        })
        assert.strictEqual(moved.status, 200)
        assert.strictEqual(listedBy.get("http://good.example.test/v2"), "sk-given-key-5678")
        // The saved address (a trailing slash is the same address) still lists with the saved key.
        yield* admin.client.post("/api/admin/channels/models", {
          channelId: saved.body.id,
          baseUrl: "http://bad.example.test/v1/"
        })
        assert.strictEqual(listedBy.get("http://bad.example.test/v1"), "sk-saved-key-1234")

        const missing = yield* admin.client.post("/api/admin/channels/models", {
          type: "openai",
          baseUrl: "http://good.example.test"
        })
        assert.deepStrictEqual([missing.status, missing.body.error.param], [400, "apiKey"])
        const azure = yield* admin.client.post("/api/admin/channels/models", {
          type: "azure",
          baseUrl: "https://x.openai.azure.com",
          apiKey: "k"
        })
        assert.deepStrictEqual([azure.status, azure.body.error.code, azure.body.error.param], [
          400,
          "models_not_listed",
          "type"
        ])
        assert.strictEqual(
          (yield* admin.client.post("/api/admin/channels/models", { channelId: "chn_nope" })).status,
          404
        )
        assert.strictEqual(
          (yield* user.client.post("/api/admin/channels/models", {
            type: "openai",
            baseUrl: "http://good.example.test",
            apiKey: "k"
          })).status,
          403
        )
      }))

    it.effect("edits channel headers, timeouts, breaker, parameters and the stream_options switch like the config file", () =>
      Effect.gen(function*() {
        const admin = yield* signedIn({ role: "admin" })
        const created = yield* admin.client.post("/api/admin/channels", {
          name: "tuned",
          type: "openai",
          baseUrl: "http://good.example.test/v1",
          apiKeys: ["sk-tuned-key-0001"],
          models: ["gpt-test"],
          headers: { "HTTP-Referer": "https://app.example", "X-Proxy-Token": "proxy-secret-7777" },
          timeouts: { firstByteMs: 5000 },
          breaker: { consecutiveFailures: 3, failureRate: 0.25 },
          params: { defaults: { temperature: 0.2 }, overrides: { user: null } },
          streamOptions: false
        })
        assert.strictEqual(created.status, 201)
        const id = created.body.id
        // Defaults fill what was not given; one source of defaults (core's).
        assert.deepStrictEqual(created.body.timeouts, {
          connectMs: 10_000,
          firstByteMs: 5000,
          idleMs: 120_000,
          totalMs: 600_000
        })
        assert.deepStrictEqual(created.body.breaker, {
          consecutiveFailures: 3,
          failureRate: 0.25,
          minimumCalls: 20,
          windowMs: 60_000,
          cooldownMs: 30_000,
          halfOpenCalls: 1
        })
        assert.deepStrictEqual(created.body.params, { defaults: { temperature: 0.2 }, overrides: { user: null } })
        assert.isFalse(created.body.streamOptions)
        // A credential-looking header value is shown as a hint, never in full.
        assert.deepStrictEqual(created.body.headers, {
          "HTTP-Referer": "https://app.example",
          "X-Proxy-Token": "…7777"
        })
        assert.notInclude(created.text, "proxy-secret")

        // Partial changes keep the rest; sending the masked value back keeps the stored secret.
        const changed = yield* admin.client.patch(`/api/admin/channels/${id}`, {
          headers: { "X-Proxy-Token": "…7777", "X-Title": "modelgate" },
          timeouts: { idleMs: 30_000 },
          breaker: { cooldownMs: 5000 },
          params: { overrides: { max_tokens: 100 } },
          streamOptions: true
        })
        assert.strictEqual(changed.status, 200)
        assert.deepStrictEqual(changed.body.timeouts, {
          connectMs: 10_000,
          firstByteMs: 5000,
          idleMs: 30_000,
          totalMs: 600_000
        })
        assert.strictEqual(changed.body.breaker.cooldownMs, 5000)
        assert.strictEqual(changed.body.breaker.consecutiveFailures, 3)
        assert.deepStrictEqual(changed.body.params, { defaults: { temperature: 0.2 }, overrides: { max_tokens: 100 } })
        assert.isTrue(changed.body.streamOptions)
        const gateway = (yield* (yield* Catalog).current).channels.find((c) => c.id === id)!
        assert.deepStrictEqual(gateway.headers, { "X-Proxy-Token": "proxy-secret-7777", "X-Title": "modelgate" })
        assert.strictEqual(gateway.timeouts.idleMs, 30_000)

        // The same rules as the configuration file, with the field named.
        const reserved = yield* admin.client.patch(`/api/admin/channels/${id}`, {
          params: { defaults: { model: "x" } }
        })
        assert.strictEqual(reserved.status, 400)
        assert.strictEqual(reserved.body.error.param, "params.defaults.model")
        const hostHeader = yield* admin.client.patch(`/api/admin/channels/${id}`, { headers: { Host: "evil" } })
        assert.strictEqual(hostHeader.body.error.param, "headers.Host")
        const badRate = yield* admin.client.patch(`/api/admin/channels/${id}`, { breaker: { failureRate: 2 } })
        assert.strictEqual(badRate.status, 400)
        assert.strictEqual(badRate.body.error.param, "breaker.failureRate")
        const badTimeout = yield* admin.client.patch(`/api/admin/channels/${id}`, { timeouts: { totalMs: 0 } })
        assert.strictEqual(badTimeout.body.error.param, "timeouts.totalMs")

        // The Responses switch: shown, changed alone, and refused for a channel that is not OpenAI's.
        assert.isFalse(created.body.responses)
        const relaying = yield* admin.client.patch(`/api/admin/channels/${id}`, { responses: true })
        assert.isTrue(relaying.body.responses)
        assert.isTrue((yield* (yield* Catalog).current).channels.find((c) => c.id === id)!.responses)
        const notOpenAi = yield* admin.client.patch(`/api/admin/channels/${id}`, { type: "gemini" })
        assert.strictEqual(notOpenAi.status, 400)
        assert.strictEqual(notOpenAi.body.error.param, "responses")
        assert.strictEqual((yield* admin.client.delete(`/api/admin/channels/${id}`)).status, 200)
      }))

    it.effect("shows each upstream key's health (never the key) and resets it", () =>
      Effect.gen(function*() {
        const admin = yield* signedIn({ role: "admin" })
        const created = yield* admin.client.post("/api/admin/channels", {
          name: "watched",
          type: "openai",
          baseUrl: "http://good.example.test/v1",
          apiKeys: ["sk-watched-AAAA", "sk-watched-BBBB"],
          models: ["gpt-test"]
        })
        const id = created.body.id
        assert.strictEqual(created.body.health.state, "healthy")
        const board = yield* HealthBoard
        board.states.set("sk-watched-BBBB", {
          state: "disabled",
          since: 1_700_000_000_000,
          reason: "HTTP 401: Incorrect API key provided",
          status: 401,
          retryAt: null,
          recentCalls: 3,
          recentFailures: 1,
          consecutiveFailures: 1,
          lastFailureAt: 1_700_000_000_000,
          lastError: "refused",
          lastProbeAt: null,
          lastProbeOk: null
        })
        const listed = (yield* admin.client.get("/api/admin/channels")).body.data.find((c: any) => c.id === id)
        assert.strictEqual(listed.health.state, "degraded")
        assert.deepStrictEqual(listed.health.keys.map((k: any) => [k.index, k.hint, k.state]), [
          [0, "…AAAA", "healthy"],
          [1, "…BBBB", "disabled"]
        ])
        assert.strictEqual(listed.health.keys[1].reason, "HTTP 401: Incorrect API key provided")
        assert.strictEqual(listed.health.keys[1].since, 1_700_000_000_000)
        const text = (yield* admin.client.get(`/api/admin/channels/${id}`)).text
        assert.notInclude(text, "sk-watched")
        assert.deepStrictEqual(listed.health.refusedModels, [])
        // A model the upstream refused with a 403 about the model is kept off the channel: the health says which.
        const kept = {
          model: "gpt-test",
          since: 1_700_000_000_000,
          until: 1_700_000_600_000,
          status: 403,
          reason: "HTTP 403: Your organization must be verified to use the model"
        }
        board.refused.set("watched", [kept])
        const withModel = (yield* admin.client.get(`/api/admin/channels/${id}`)).body
        assert.deepStrictEqual(withModel.health.refusedModels, [kept])

        const reset = yield* admin.client.post(`/api/admin/channels/${id}/reset`)
        assert.strictEqual(reset.status, 200)
        assert.strictEqual(reset.body.health.state, "healthy")
        assert.deepStrictEqual(reset.body.health.refusedModels, [])
        const user = yield* signedIn()
        assert.strictEqual((yield* user.client.post(`/api/admin/channels/${id}/reset`)).status, 403)
        assert.strictEqual((yield* admin.client.post("/api/admin/channels/chn_missing/reset")).status, 404)
        yield* admin.client.delete(`/api/admin/channels/${id}`)
      }))

    it.effect("manages models and prices", () =>
      Effect.gen(function*() {
        const admin = yield* signedIn({ role: "admin" })
        const created = yield* admin.client.post("/api/admin/models", {
          id: "claude-test",
          displayName: "Claude Test",
          prices: { input: "3", output: "15", cachedInput: "0.3", cacheWrite: "3.75", perRequest: null, free: false },
          outputTokenLimit: 8192
        })
        assert.strictEqual(created.status, 200)
        assert.deepStrictEqual(created.body.prices, {
          input: "3.00",
          output: "15.00",
          cachedInput: "0.30",
          cacheWrite: "3.75",
          perRequest: null,
          free: false
        })
        assert.strictEqual(created.body.inputTokenLimit, 128000)
        const replaced = yield* admin.client.post("/api/admin/models", {
          id: "claude-test",
          prices: { input: "0.000001", output: null, cachedInput: null, perRequest: null, free: true }
        })
        assert.isTrue(replaced.body.prices.free)
        assert.strictEqual(replaced.body.prices.input, "0.000001")
        // The cache-write price was left out: it stays as it was.
        assert.strictEqual(replaced.body.prices.cacheWrite, "3.75")
        assert.strictEqual(replaced.body.description, null)
        assert.isFalse(replaced.body.embedding)
        const described = yield* admin.client.post("/api/admin/models", {
          id: "claude-test",
          prices: { input: null, output: null, cachedInput: null, perRequest: null, free: true },
          description: "Embeds text",
          embedding: true,
          reasoning: false,
          reasoningContent: true
        })
        assert.strictEqual(described.body.description, "Embeds text")
        assert.isTrue(described.body.embedding)
        assert.isFalse(described.body.reasoning)
        assert.isTrue(described.body.reasoningContent)
        // Fields left out keep their values.
        const kept = yield* admin.client.post("/api/admin/models", {
          id: "claude-test",
          prices: { input: null, output: null, cachedInput: null, perRequest: null, free: true }
        })
        assert.strictEqual(kept.body.description, "Embeds text")
        assert.isTrue(kept.body.embedding)
        const badPrice = yield* admin.client.post("/api/admin/models", {
          id: "x",
          prices: { input: "-1", output: null, cachedInput: null, perRequest: null, free: false }
        })
        assert.strictEqual(badPrice.body.error.param, "prices.input")
        const list = yield* admin.client.get("/api/admin/models")
        assert.isTrue(list.body.data.some((m: any) => m.id === "claude-test"))
        assert.strictEqual((yield* admin.client.delete("/api/admin/models/claude-test")).status, 200)
        assert.strictEqual((yield* admin.client.delete("/api/admin/models/claude-test")).status, 404)
      }))

    it.effect("sets what a hold counts per media part of each kind on a model", () =>
      Effect.gen(function*() {
        const admin = yield* signedIn({ role: "admin" })
        const prices = { input: "1", output: "2", cachedInput: null, perRequest: null, free: false }
        const plain = yield* admin.client.post("/api/admin/models", {
          id: "media-test",
          prices,
          inputTokenLimit: 200_000
        })
        // Nothing set: an image counts 2,000 tokens, any other kind the model's input token limit.
        assert.deepStrictEqual(plain.body.mediaPartTokens, {
          image: null,
          audio: null,
          video: null,
          document: null,
          file: null
        })
        assert.deepStrictEqual(plain.body.mediaHoldTokens, {
          image: 2000,
          audio: 200_000,
          video: 200_000,
          document: 200_000,
          file: 200_000
        })
        const set = yield* admin.client.post("/api/admin/models", {
          id: "media-test",
          prices,
          mediaPartTokens: { image: 25_000, video: 60_000, document: null }
        })
        assert.strictEqual(set.status, 200)
        assert.deepStrictEqual(set.body.mediaHoldTokens, {
          image: 25_000,
          audio: 200_000,
          video: 60_000,
          document: 200_000,
          file: 200_000
        })
        // Left out: kept (and what the catalog stores is what a hold uses).
        const kept = yield* admin.client.post("/api/admin/models", { id: "media-test", prices })
        assert.strictEqual(kept.body.mediaPartTokens.image, 25_000)
        const listed = (yield* admin.client.get("/api/admin/models")).body.data.find((m: any) => m.id === "media-test")
        assert.strictEqual(listed.mediaHoldTokens.video, 60_000)
        const bad = yield* admin.client.post("/api/admin/models", {
          id: "media-test",
          prices,
          mediaPartTokens: { image: -1 }
        })
        assert.strictEqual(bad.status, 400)
        const unknownKind = yield* admin.client.post("/api/admin/models", {
          id: "media-test",
          prices,
          mediaPartTokens: { pdf: 5 }
        })
        assert.strictEqual(unknownKind.status, 400)
        // null: every kind back to its default.
        const cleared = yield* admin.client.post("/api/admin/models", {
          id: "media-test",
          prices,
          mediaPartTokens: null
        })
        assert.strictEqual(cleared.body.mediaHoldTokens.image, 2000)
        assert.strictEqual(cleared.body.mediaPartTokens.image, null)
        yield* admin.client.delete("/api/admin/models/media-test")
      }))

    it.effect("shows the usage overview across users", () =>
      Effect.gen(function*() {
        const admin = yield* signedIn({ role: "admin" })
        const dave = yield* signedIn()
        const key = (yield* dave.client.post("/api/keys", { name: "d" })).body.key.id
        yield* insertUsage({
          userId: dave.user.id,
          keyId: key,
          model: "gpt-test",
          costNanos: 123n * USD,
          createdAt: Date.now()
        })
        const overview = yield* admin.client.get("/api/admin/usage/daily")
        assert.strictEqual(overview.status, 200)
        assert.strictEqual(overview.body.users[0].userName, dave.user.name, "the biggest spender comes first")
        assert.strictEqual(overview.body.users[0].cost, "123.00")
        assert.isTrue(overview.body.totalRequests >= 1)
        const forDave = yield* admin.client.get(`/api/admin/usage?userId=${dave.user.id}`)
        assert.strictEqual(forDave.body.data.length, 1)
        assert.strictEqual(forDave.body.data[0].userName, dave.user.name)
      }))

    it.effect("lists each upstream attempt of a call to admins, and not to its user", () =>
      Effect.gen(function*() {
        const admin = yield* signedIn({ role: "admin" })
        const erin = yield* signedIn()
        const key = (yield* erin.client.post("/api/keys", { name: "e" })).body.key.id
        const attemptLog = [
          {
            channel: "dead",
            keyHint: "…dead",
            status: null,
            errorCode: "UpstreamUnavailable",
            errorMessage: "The upstream 'dead' could not be reached (ECONNREFUSED).",
            durationMs: 3
          },
          { channel: "alive", keyHint: "…live", status: 200, errorCode: null, errorMessage: null, durationMs: 40 }
        ]
        yield* insertUsage({
          userId: erin.user.id,
          keyId: key,
          model: "gpt-test",
          costNanos: 1n,
          createdAt: Date.now(),
          attemptLog
        })
        const detail = (yield* admin.client.get(`/api/admin/usage?userId=${erin.user.id}`)).body.data[0]
        assert.strictEqual(detail.attempts, 2)
        assert.deepStrictEqual(detail.attemptLog, attemptLog)
        assert.strictEqual(detail.channel, "seed-openai")
        const viaUser = (yield* admin.client.get(`/api/admin/users/${erin.user.id}/usage`)).body.data[0]
        assert.deepStrictEqual(viaUser.attemptLog, attemptLog)
        // A user sees their own call, not the operator's channels and keys.
        const own = (yield* erin.client.get("/api/usage")).body.data[0]
        assert.isUndefined(own.attemptLog)
        assert.isUndefined(own.channel)
      }))

    it.effect("the request log: filters by status class, error code, request id and (admins) channel; users see messages, admins where calls went", () =>
      Effect.gen(function*() {
        const admin = yield* signedIn({ role: "admin" })
        const fay = yield* signedIn()
        const key = (yield* fay.client.post("/api/keys", { name: "f" })).body.key.id
        const now = Date.now()
        const served = yield* insertUsage({
          userId: fay.user.id,
          keyId: key,
          model: "gpt-test",
          upstreamModel: "gpt-test-2026",
          costNanos: 10n,
          createdAt: now - 3000,
          reasoningTokens: 12,
          ttfbMs: 80,
          dialectIn: "gemini",
          stream: true
        })
        const failed = yield* insertUsage({
          userId: fay.user.id,
          keyId: key,
          model: "gpt-test",
          channel: "flaky",
          costNanos: 0n,
          createdAt: now - 2000,
          status: 502,
          errorCode: "UpstreamUnavailable",
          errorMessage: "The upstream 'flaky' could not be reached (ECONNREFUSED).",
          attemptLog: [{
            channel: "flaky",
            keyHint: "…aaaa",
            status: null,
            errorCode: "UpstreamUnavailable",
            errorMessage: "The upstream 'flaky' could not be reached (ECONNREFUSED).",
            durationMs: 2
          }]
        })
        const refused = yield* insertUsage({
          userId: fay.user.id,
          keyId: key,
          model: "gpt-test",
          channel: "",
          costNanos: 0n,
          createdAt: now - 1000,
          status: 429,
          errorCode: "InsufficientBalance",
          errorMessage: "Your balance is 0.01 USD but this call may cost up to 0.25 USD.",
          attemptLog: []
        })
        const ids = (body: any) => body.data.map((r: any) => r.requestId)
        const mine = (query: string) => Effect.map(fay.client.get(`/api/usage?${query}`), (r) => r.body)
        assert.deepStrictEqual(ids(yield* mine("")), [refused, failed, served])
        assert.deepStrictEqual(ids(yield* mine("status=ok")), [served])
        assert.deepStrictEqual(ids(yield* mine("status=error")), [refused, failed])
        assert.deepStrictEqual(ids(yield* mine("status=4xx")), [refused])
        assert.deepStrictEqual(ids(yield* mine("status=5xx")), [failed])
        assert.deepStrictEqual(ids(yield* mine("errorCode=InsufficientBalance")), [refused])
        assert.deepStrictEqual(ids(yield* mine(`requestId=${encodeURIComponent(`  ${failed} `)}`)), [failed])
        const badStatus = yield* fay.client.get("/api/usage?status=teapot")
        assert.deepStrictEqual([badStatus.status, badStatus.body.error.param], [400, "status"])
        // A user filters by nothing they cannot see: the channel is the operator's.
        assert.strictEqual((yield* fay.client.get("/api/usage?channel=flaky")).status, 400)

        const [ownRefused, ownFailed, ownServed] = (yield* mine("")).data
        assert.strictEqual(ownRefused.errorMessage, "Your balance is 0.01 USD but this call may cost up to 0.25 USD.")
        assert.deepStrictEqual(
          [
            ownServed.dialect,
            ownServed.stream,
            ownServed.reasoningTokens,
            ownServed.ttfbMs,
            ownServed.usageReported,
            ownServed.errorMessage
          ],
          ["gemini", true, 12, 80, true, null]
        )
        for (const own of [ownRefused, ownFailed, ownServed]) {
          assert.isUndefined(own.channel)
          assert.isUndefined(own.upstreamModel)
          assert.isUndefined(own.attemptLog)
        }

        // Admins: every user's calls, by channel too, with where each went.
        const everyone = (query: string) =>
          Effect.map(admin.client.get(`/api/admin/usage?userId=${fay.user.id}&${query}`), (r) => r.body)
        assert.deepStrictEqual(ids(yield* everyone("channel=flaky")), [failed])
        assert.deepStrictEqual(ids(yield* everyone(`requestId=${refused}`)), [refused])
        const detail = (yield* everyone("")).data
        assert.deepStrictEqual([detail[0].channel, detail[0].attempts], ["", 0])
        assert.deepStrictEqual([detail[2].channel, detail[2].upstreamModel, detail[2].upstreamDialect], [
          "seed-openai",
          "gpt-test-2026",
          "openai"
        ])
        assert.strictEqual(
          detail[1].attemptLog[0].errorMessage,
          "The upstream 'flaky' could not be reached (ECONNREFUSED)."
        )

        // CSV: the user's columns end with the new ones; the admin's add where each call went.
        const csv = (yield* fay.client.get("/api/usage.csv?status=error")).text.trim().split("\n")
        assert.strictEqual(
          csv[0],
          "time,request_id,user,key,model,stream,prompt_tokens,completion_tokens,cached_tokens,cost_usd,latency_ms,status,error_code,dialect,reasoning_tokens,ttfb_ms,error_message,cache_write_tokens,note"
        )
        assert.strictEqual(csv.length, 3)
        assert.include(csv[1]!, "Your balance is 0.01 USD but this call may cost up to 0.25 USD.")
        const adminCsv = yield* admin.client.get(`/api/admin/usage.csv?userId=${fay.user.id}&channel=flaky`)
        assert.strictEqual(adminCsv.status, 200)
        const rows = adminCsv.text.trim().split("\n")
        assert.isTrue(rows[0]!.endsWith(",error_message,cache_write_tokens,note,channel,upstream_model,attempts"))
        assert.deepStrictEqual(rows.length, 2)
        assert.isTrue(rows[1]!.startsWith(new Date(now - 2000).toISOString()))
        assert.isTrue(rows[1]!.endsWith(",flaky,gpt-test,1"))
        assert.strictEqual((yield* fay.client.get("/api/admin/usage.csv")).status, 403)
      }))

    it.effect("answers unknown endpoints with 404 and wrong methods with 405", () =>
      Effect.gen(function*() {
        const { client } = yield* signedIn()
        const missing = yield* client.get("/api/nothing")
        assert.strictEqual(missing.status, 404)
        assert.strictEqual(missing.body.error.code, "unknown_endpoint")
        const method = yield* client.request("PUT", "/api/keys", {})
        assert.strictEqual(method.status, 405)
        const login = yield* client.get("/api/auth/login")
        assert.strictEqual(login.status, 405)
      }))

    // ---- the contract ------------------------------------------------------------------

    it.effect("serves its OpenAPI document to anyone", () =>
      Effect.gen(function*() {
        const reply = yield* new Client().get("/api/openapi.json")
        assert.strictEqual(reply.status, 200)
        assert.strictEqual(reply.body.openapi, "3.1.0")
        assert.property(reply.body.paths, "/api/keys/{id}")
        assert.property(reply.body.paths["/api/admin/users/{id}"], "delete")
      }))

    it.effect("refuses a body over 1 MB with 413, and cuts echoed values in error messages", () =>
      Effect.gen(function*() {
        const { client } = yield* signedIn()
        const huge = yield* client.post("/api/keys", { name: "x", models: ["m".repeat(2 * 1024 * 1024)] })
        assert.strictEqual(huge.status, 413)
        assert.strictEqual(huge.body.error.code, "request_too_large")
        const long = "z".repeat(200_000)
        const model = yield* client.post("/api/keys", { name: "x", models: [long] })
        assert.strictEqual(model.status, 400)
        assert.strictEqual(model.body.error.param, "models[0]")
        assert.isBelow(model.text.length, 2_000, "the 200 KB name is not echoed back")
        assert.include(model.body.error.message, "more characters")
        const group = yield* client.post("/api/keys", { name: "x", group: long })
        assert.isBelow(group.text.length, 2_000)
        const badType = yield* client.post("/api/keys", { name: "x", quota: long })
        assert.strictEqual(badType.body.error.param, "quota")
        assert.isBelow(badType.text.length, 2_000)
      }))

    // ---- /api/me -----------------------------------------------------------------------

    it.effect("answers /api/me in the gateway's shape, with a key or a session", () =>
      Effect.gen(function*() {
        const { client, user } = yield* signedIn({ balanceNanos: 3n * USD })
        const created = (yield* client.post("/api/keys", { name: "laptop", models: ["gpt-test"] })).body
        const script = new Client()
        script.bearer = created.secret
        const viaKey = yield* script.get("/api/me")
        assert.strictEqual(viaKey.status, 200)
        assert.deepStrictEqual(viaKey.body, {
          user: user.name,
          role: "user",
          group: "default",
          key: { id: created.key.id, name: "laptop", prefix: created.key.prefix, expires_at: null },
          models: ["gpt-test"],
          balance_usd: "3.00"
        })
        const viaSession = yield* client.get("/api/me")
        assert.strictEqual(viaSession.body.user, user.name)
        assert.isNull(viaSession.body.key)
        assert.isNull(viaSession.body.group)
        assert.includeMembers(viaSession.body.models, ["gpt-test", "gemini-test"])
        assert.strictEqual((yield* new Client().get("/api/me")).status, 401)
      }))

    // ---- accounts ----------------------------------------------------------------------

    it.effect("an admin resets a user's password: the old one stops working and the user's sessions end", () =>
      Effect.gen(function*() {
        const admin = yield* signedIn({ role: "admin" })
        const { client, user } = yield* signedIn()
        const reset = yield* admin.client.patch(`/api/admin/users/${user.id}`, { password: "a brand new password" })
        assert.strictEqual(reset.status, 200)
        assert.strictEqual((yield* client.get("/api/auth/session")).status, 401, "the user's session ended")
        assert.strictEqual((yield* new Client().login(user.name, user.password)).status, 401)
        assert.strictEqual((yield* new Client().login(user.name, "a brand new password")).status, 200)
        const short = yield* admin.client.patch(`/api/admin/users/${user.id}`, { password: "short" })
        assert.strictEqual(short.status, 400)
        assert.strictEqual(short.body.error.param, "password")
        assert.strictEqual((yield* admin.client.get("/api/auth/session")).status, 200, "the admin's own session stays")
      }))

    it.effect("deletes a user: hidden from the list, keys revoked and dropped from the caches, ledger and usage kept anonymised", () =>
      Effect.gen(function*() {
        const admin = yield* signedIn({ role: "admin" })
        const { client, user } = yield* signedIn({ balanceNanos: 2n * USD })
        const key = (yield* client.post("/api/keys", { name: "k" })).body
        yield* insertUsage({
          userId: user.id,
          keyId: key.key.id,
          model: "gpt-test",
          costNanos: 5n,
          createdAt: Date.now()
        })
        const deleted = yield* admin.client.delete(`/api/admin/users/${user.id}`)
        assert.strictEqual(deleted.status, 200)
        const log = yield* InvalidationLog
        assert.deepStrictEqual(log.changes.slice(-2), [{ topic: "users", ids: [user.id] }, {
          topic: "keys",
          ids: [key.key.id]
        }])
        assert.isFalse((yield* admin.client.get("/api/admin/users")).body.data.some((u: any) => u.id === user.id))
        assert.strictEqual((yield* admin.client.get(`/api/admin/users/${user.id}`)).status, 404)
        assert.strictEqual((yield* client.get("/api/auth/session")).status, 401, "the user's sessions ended")
        assert.strictEqual((yield* new Client().login(user.name, user.password)).status, 401)
        const script = new Client()
        script.bearer = key.secret
        assert.strictEqual((yield* script.get("/api/me")).status, 401, "the key is revoked")
        const usage = (yield* admin.client.get(`/api/admin/usage?userId=${user.id}`)).body.data
        assert.strictEqual(usage.length, 1, "the usage stays")
        assert.strictEqual(usage[0].userName, `deleted-${user.id}`)
        assert.strictEqual((yield* admin.client.delete(`/api/admin/users/${admin.user.id}`)).status, 400, "not oneself")
        assert.strictEqual((yield* admin.client.delete(`/api/admin/users/${user.id}`)).status, 404, "once")
      }))

    it.effect("refuses a balance adjustment past the largest balance with 400 naming the amount, not a 500", () =>
      Effect.gen(function*() {
        const admin = yield* signedIn({ role: "admin" })
        const user = yield* makeUser()
        // Ten steps of almost a billion dollars would pass 2^63 nano-dollars.
        const first = yield* admin.client.post(`/api/admin/users/${user.id}/adjust`, {
          amount: "999999999",
          reason: "big"
        })
        assert.strictEqual(first.status, 200)
        for (let i = 0; i < 10; i++) {
          const next = yield* admin.client.post(`/api/admin/users/${user.id}/adjust`, {
            amount: "999999999",
            reason: "bigger"
          })
          assert.strictEqual(next.status, 400, `step ${i}`)
          assert.strictEqual(next.body.error.param, "amount")
          assert.include(next.body.error.message, "largest balance")
        }
        const beyond = yield* admin.client.post(`/api/admin/users/${user.id}/adjust`, {
          amount: "9999999999.999999999",
          reason: "way beyond"
        })
        assert.strictEqual(beyond.status, 400)
        assert.strictEqual(beyond.body.error.param, "amount")
        assert.strictEqual((yield* admin.client.get(`/api/admin/users/${user.id}`)).body.balance, "999999999.00")
      }))

    // ---- CSV -----------------------------------------------------------------------------

    it.effect("prefixes formula-like cells in CSV exports so spreadsheets do not run them", () =>
      Effect.gen(function*() {
        const { client, user } = yield* signedIn()
        const key = (yield* client.post("/api/keys", { name: "=HYPERLINK(\"http://evil.example\",\"x\")" })).body.key
        yield* insertUsage({ userId: user.id, keyId: key.id, model: "gpt-test", costNanos: 5n, createdAt: Date.now() })
        const csv = (yield* client.get("/api/usage.csv")).text
        const row = csv.trim().split("\n")[1]!
        assert.include(row, `"'=HYPERLINK(""http://evil.example"",""x"")"`)
        assert.notMatch(row, /,=HYPERLINK/)
        assert.include(row, ",0.000000005,", "amounts stay numbers")
      }))

    // ---- catalog -------------------------------------------------------------------------

    it.effect("lists a channel model without a price as unpriced until it gets one", () =>
      Effect.gen(function*() {
        const admin = yield* signedIn({ role: "admin" })
        const channel = (yield* admin.client.post("/api/admin/channels", {
          name: "fresh-models",
          type: "openai",
          baseUrl: "http://good.example.test/v1",
          apiKeys: ["sk-fresh-0001"],
          models: ["gpt-test", "brand-new-model"]
        })).body
        const before = (yield* admin.client.get("/api/admin/models")).body
        assert.deepStrictEqual(before.unpriced.find((m: any) => m.id === "brand-new-model"), {
          id: "brand-new-model",
          channels: ["fresh-models"]
        })
        assert.isFalse(before.unpriced.some((m: any) => m.id === "gpt-test"))
        // A model row without a price (as the configuration file makes for a channel model it does not price) is unpriced too.
        yield* admin.client.post("/api/admin/models", {
          id: "row-no-price",
          prices: { input: null, output: null, cachedInput: null, perRequest: null, free: false }
        })
        yield* admin.client.patch(`/api/admin/channels/${channel.id}`, {
          models: ["gpt-test", "brand-new-model", "row-no-price"]
        })
        assert.deepStrictEqual(
          (yield* admin.client.get("/api/admin/models")).body.unpriced.map((m: any) => m.id).filter((id: string) =>
            id !== "gpt-test"
          ),
          ["brand-new-model", "row-no-price"]
        )
        yield* admin.client.patch(`/api/admin/channels/${channel.id}`, { models: ["gpt-test", "brand-new-model"] })
        yield* admin.client.delete("/api/admin/models/row-no-price")
        const priced = yield* admin.client.post("/api/admin/models", {
          id: "brand-new-model",
          prices: { input: "1", output: "2", cachedInput: null, perRequest: null, free: false }
        })
        assert.strictEqual(priced.status, 200)
        assert.strictEqual(priced.body.outputTokenLimit, 16_384, "core's default output limit")
        const after = (yield* admin.client.get("/api/admin/models")).body
        assert.isFalse(after.unpriced.some((m: any) => m.id === "brand-new-model"))
        yield* admin.client.delete(`/api/admin/channels/${channel.id}`)
        yield* admin.client.delete("/api/admin/models/brand-new-model")
      }))

    it.effect("serves the shipped price table with its sources and date", () =>
      Effect.gen(function*() {
        const admin = yield* signedIn({ role: "admin" })
        const table = (yield* admin.client.get("/api/admin/models/presets")).body
        assert.match(table.asOf, /^\d{4}-\d{2}-\d{2}$/)
        assert.isAbove(table.sources.length, 0)
        const mini = table.data.find((m: any) => m.id === "gpt-4o-mini")
        assert.deepStrictEqual(mini.prices, {
          input: "0.15",
          output: "0.60",
          cachedInput: "0.075",
          cacheWrite: null,
          perRequest: null,
          free: false
        })
        const sonnet = table.data.find((m: any) => m.id === "claude-sonnet-4-0")
        assert.deepStrictEqual(sonnet.prices, {
          input: "3",
          output: "15",
          cachedInput: "0.30",
          cacheWrite: "3.75",
          perRequest: null,
          free: false
        })
        assert.strictEqual((yield* (yield* signedIn()).client.get("/api/admin/models/presets")).status, 403)
      }))

    it.effect("lists, sets and deletes aliases; an alias must point at a model", () =>
      Effect.gen(function*() {
        const admin = yield* signedIn({ role: "admin" })
        const set = yield* admin.client.post("/api/admin/aliases", { pattern: "gpt-test-*", target: "gpt-test" })
        assert.strictEqual(set.status, 200)
        assert.deepStrictEqual(set.body, { pattern: "gpt-test-*", target: "gpt-test", position: 0 })
        assert.deepStrictEqual((yield* InvalidationLog).topics.at(-1), "catalog")
        const gateway = yield* (yield* Catalog).current
        assert.strictEqual(gateway.resolveModel("gpt-test-2025"), "gpt-test")
        const nowhere = yield* admin.client.post("/api/admin/aliases", { pattern: "x-*", target: "no-such-model" })
        assert.strictEqual(nowhere.status, 400)
        assert.strictEqual(nowhere.body.error.param, "target")
        assert.deepStrictEqual((yield* admin.client.get("/api/admin/aliases")).body.data.map((a: any) => a.pattern), [
          "gpt-test-*"
        ])
        assert.strictEqual((yield* admin.client.delete("/api/admin/aliases?pattern=gpt-test-*")).status, 200)
        assert.strictEqual((yield* admin.client.delete("/api/admin/aliases?pattern=gpt-test-*")).status, 404)
      }))

    it.effect("masks channel headers whose value looks like a secret, whatever their name", () =>
      Effect.gen(function*() {
        const admin = yield* signedIn({ role: "admin" })
        const created = yield* admin.client.post("/api/admin/channels", {
          name: "masked-headers",
          type: "openai",
          baseUrl: "http://good.example.test/v1",
          apiKeys: ["sk-masked-0001"],
          models: ["gpt-test"],
          headers: {
            "X-Upstream": "Bearer live-credential-9876",
            "X-Opaque": "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6",
            "HTTP-Referer": "https://app.example.com/path",
            "X-Title": "modelgate"
          }
        })
        assert.strictEqual(created.status, 201)
        assert.deepStrictEqual(created.body.headers, {
          "X-Upstream": "…9876",
          "X-Opaque": "…c5d6",
          "HTTP-Referer": "https://app.example.com/path",
          "X-Title": "modelgate"
        })
        assert.notInclude(created.text, "live-credential")
        // Sending the masked values back keeps the secrets.
        yield* admin.client.patch(`/api/admin/channels/${created.body.id}`, { headers: created.body.headers })
        const gateway = (yield* (yield* Catalog).current).channels.find((c) => c.id === created.body.id)!
        assert.strictEqual(gateway.headers["X-Upstream"], "Bearer live-credential-9876")
        assert.strictEqual(gateway.headers["X-Opaque"], "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6")
        yield* admin.client.delete(`/api/admin/channels/${created.body.id}`)
      }))
  }
)
