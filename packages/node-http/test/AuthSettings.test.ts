/**
 * The `auth` block of the configuration: password sign-in on by default,
 * `auth.oidc` with its defaults, `MODELGATE_OIDC_CLIENT_SECRET` over the
 * file's secret, and the mistakes an operator can make refused with a
 * message that names the field.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { decode } from "../src/ConfigFile.ts"
import { resolveSettings } from "../src/Settings.ts"

const resolve = (document: unknown, env: Record<string, string> = {}) =>
  Effect.flatMap(
    decode(document, "test.yaml"),
    (file) => resolveSettings(file, env, { consoleDir: null, source: "test.yaml" })
  )

const oidc = { issuer: "https://sso.example.com/realms/main", client_id: "modelgate" }

describe("auth", () => {
  it.effect("signs in with passwords only by default", () =>
    Effect.gen(function*() {
      const settings = yield* resolve({})
      assert.isTrue(settings.passwordLogin)
      assert.isNull(settings.oidc)
    }))

  it.effect("reads auth.oidc with its defaults", () =>
    Effect.gen(function*() {
      const settings = yield* resolve({ auth: { oidc } })
      assert.deepStrictEqual(settings.oidc, {
        name: "Single sign-on",
        issuer: oidc.issuer,
        clientId: "modelgate",
        clientSecret: undefined,
        scopes: ["openid", "email", "profile"],
        usernameClaim: undefined,
        groupsClaim: undefined,
        groupMap: {},
        adminGroups: [],
        autoCreate: false,
        initialBalanceNanos: 0n,
        redirectUri: undefined
      })
    }))

  it.effect("takes every field of the issue's example, and the secret from the environment over the file", () =>
    Effect.gen(function*() {
      const settings = yield* resolve({
        auth: {
          password_login: false,
          oidc: {
            ...oidc,
            name: "Company SSO",
            client_secret: "from-the-file",
            scopes: ["openid", "email"],
            username_claim: "email",
            groups_claim: "groups",
            group_map: { engineering: "default" },
            admin_groups: ["gateway-admins"],
            auto_create: true,
            initial_balance: 2.5,
            redirect_uri: "https://llm.example.com/api/auth/oidc/callback"
          }
        }
      }, { MODELGATE_OIDC_CLIENT_SECRET: "from-the-environment" })
      assert.isFalse(settings.passwordLogin)
      const o = settings.oidc!
      assert.strictEqual(o.name, "Company SSO")
      assert.strictEqual(Redacted.value(o.clientSecret!), "from-the-environment")
      assert.deepStrictEqual(o.groupMap, { engineering: "default" })
      assert.deepStrictEqual(o.adminGroups, ["gateway-admins"])
      assert.strictEqual(o.usernameClaim, "email")
      assert.isTrue(o.autoCreate)
      assert.strictEqual(o.initialBalanceNanos, 2_500_000_000n)
      assert.strictEqual(o.redirectUri, "https://llm.example.com/api/auth/oidc/callback")
    }))

  it.effect("refuses turning passwords off without single sign-on, so someone can still sign in", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(resolve({ auth: { password_login: false } }))
      assert.include(error.message, "at auth.password_login")
      assert.include(error.message, "auth.oidc")
    }))

  it.effect("refuses a bad issuer, a missing client id and a negative balance, naming each", () =>
    Effect.gen(function*() {
      const issuer = yield* Effect.flip(resolve({ auth: { oidc: { ...oidc, issuer: "sso.example.com" } } }))
      assert.include(issuer.message, "at auth.oidc.issuer")
      const client = yield* Effect.flip(resolve({ auth: { oidc: { issuer: oidc.issuer } } }))
      assert.include(client.message, "at auth.oidc.client_id")
      const balance = yield* Effect.flip(resolve({ auth: { oidc: { ...oidc, initial_balance: -1 } } }))
      assert.include(balance.message, "at auth.oidc.initial_balance")
      const unknown = yield* Effect.flip(resolve({ auth: { oidc: { ...oidc, client_sceret: "x" } } }))
      assert.include(unknown.message, "auth.oidc.client_sceret")
    }))
})
