/**
 * Single sign-on in a real browser against a real OpenID provider
 * (`oidc-provider`, run here on loopback with its development sign-in pages):
 * the gateway is configured as docs/operations.md shows (`auth.oidc` with a
 * groups claim, a group map and an admin group; password sign-in off).
 *
 * - the sign-in page offers only the provider's button, and a password
 *   sign-in is refused;
 * - a first sign-in creates the user in the mapped group with the initial
 *   balance, and opens the same session a password user gets (CSRF and all);
 * - a member of the admin group is an administrator;
 * - ID tokens with a wrong audience, an expiry in the past or a signature by
 *   another key are refused with a message that says which, and create no one.
 *
 * The refused tokens are the provider's own, re-signed on their way out of
 * its token endpoint (with its key for the audience and expiry, with a
 * stranger's key of the same id for the signature).
 */
import { decodeJwt, exportJWK, generateKeyPair, type JWTPayload, SignJWT } from "jose"
import { createServer, type Server } from "node:http"
import Provider from "oidc-provider"
import type { Browser, Page } from "playwright-core"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { browserMissing, type E2EGateway, freePort, launchBrowser, startGateway } from "./support.ts"

const missing = browserMissing()

const CLIENT_ID = "modelgate-console"
const CLIENT_SECRET = "oidc-client-secret-for-the-browser-test"
const KID = "provider-key-1"

/** The provider's people: their groups and e-mail. */
const PEOPLE: Readonly<Record<string, { readonly email: string; readonly groups: ReadonlyArray<string> }>> = {
  carol: { email: "carol@example.com", groups: ["engineering"] },
  dave: { email: "dave@example.com", groups: ["engineering", "gateway-admins"] },
  mallory: { email: "mallory@example.com", groups: ["engineering"] }
}

let gateway: E2EGateway
let browser: Browser
let closeBrowser: () => Promise<void>
let providerServer: Server
/** How the next ID token is spoilt on its way out of the token endpoint (undefined: it is not). */
let tamper: "audience" | "expired" | "signature" | undefined

const signInThroughProvider = async (page: Page, login: string) => {
  await page.goto(`${gateway.url}/console/`)
  await page.getByRole("link", { name: "Sign in with Company SSO" }).click()
  await page.locator("input[name=login]").fill(login)
  await page.locator("input[name=password]").fill("any password will do")
  await page.locator("button[type=submit]").click()
  await page.locator("button[type=submit]", { hasText: "Continue" }).click()
}

const newPage = async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, locale: "en-US" })
  return { context, page: await context.newPage() }
}

describe.skipIf(missing !== undefined)(
  missing === undefined ? "single sign-on" : `single sign-on (skipped: ${missing})`,
  () => {
    beforeAll(async () => {
      const port = await freePort()
      const issuer = `http://127.0.0.1:${port}`
      gateway = await startGateway({
        auth: {
          password_login: false,
          oidc: {
            name: "Company SSO",
            issuer,
            client_id: CLIENT_ID,
            client_secret: CLIENT_SECRET,
            scopes: ["openid", "email", "profile", "groups"],
            groups_claim: "groups",
            group_map: { engineering: "vip" },
            admin_groups: ["gateway-admins"],
            auto_create: true,
            initial_balance: 1.5
          }
        }
      })
      const { privateKey } = await generateKeyPair("RS256", { extractable: true })
      const stranger = (await generateKeyPair("RS256")).privateKey
      const jwk = { ...(await exportJWK(privateKey)), kid: KID, alg: "RS256", use: "sig" }
      const provider = new Provider(issuer, {
        clients: [{
          client_id: CLIENT_ID,
          client_secret: CLIENT_SECRET,
          redirect_uris: [`${gateway.url}/api/auth/oidc/callback`],
          grant_types: ["authorization_code"],
          response_types: ["code"],
          token_endpoint_auth_method: "client_secret_post"
        }],
        jwks: { keys: [jwk] },
        cookies: { keys: ["cookie-key-for-the-browser-test-only"] },
        scopes: ["openid", "email", "profile", "groups"],
        claims: { email: ["email"], profile: ["preferred_username"], groups: ["groups"] },
        // The claims go into the ID token itself (modelgate reads only the ID token).
        conformIdTokenClaims: false,
        findAccount: (_ctx: unknown, id: string) => ({
          accountId: id,
          claims: () => ({
            sub: id,
            preferred_username: id,
            email: PEOPLE[id]?.email ?? `${id}@example.com`,
            groups: PEOPLE[id]?.groups ?? []
          })
        })
      })
      provider.use(async (ctx, next) => {
        await next()
        if (tamper === undefined || ctx.path !== "/token" || ctx.method !== "POST") return
        const body = ctx.body as { id_token?: string }
        if (typeof body?.id_token !== "string") return
        const claims: JWTPayload = decodeJwt(body.id_token)
        const now = Math.floor(Date.now() / 1000)
        const spoilt = tamper === "audience"
          ? { ...claims, aud: "some-other-client" }
          : tamper === "expired"
          ? { ...claims, iat: now - 7200, exp: now - 3600 }
          : claims
        body.id_token = await new SignJWT(spoilt)
          .setProtectedHeader({ alg: "RS256", kid: KID, typ: "JWT" })
          .sign(tamper === "signature" ? stranger : privateKey)
      })
      providerServer = createServer(provider.callback())
      await new Promise<void>((resolve) => providerServer.listen(port, "127.0.0.1", resolve))
      const launched = await launchBrowser()
      browser = launched.browser
      closeBrowser = launched.close
    })

    afterAll(async () => {
      await closeBrowser?.()
      await new Promise((resolve) => providerServer?.close(resolve))
      await gateway?.close()
    })

    it("offers only single sign-on when password sign-in is off", async () => {
      const { context, page } = await newPage()
      await page.goto(`${gateway.url}/console/`)
      await page.getByRole("link", { name: "Sign in with Company SSO" }).waitFor()
      assert.strictEqual(await page.getByLabel("Password").count(), 0)
      const methods = await (await fetch(`${gateway.url}/api/auth/methods`)).json()
      assert.deepStrictEqual(methods, {
        password: false,
        sso: { name: "Company SSO", startUrl: "/api/auth/oidc/start" }
      })
      const login = await fetch(`${gateway.url}/api/auth/login`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ username: "admin", password: "admin-password-1" })
      })
      assert.strictEqual(login.status, 403)
      assert.strictEqual((await login.json()).error.code, "password_login_disabled")
      await context.close()
    })

    it("creates the user at first sign-in, in the mapped group, with the same session as a password user", async () => {
      const { context, page } = await newPage()
      await signInThroughProvider(page, "carol")
      await page.getByTestId("user-menu").waitFor()
      const session = await (await page.request.get(`${gateway.url}/api/auth/session`)).json()
      assert.strictEqual(session.user.name, "carol")
      assert.strictEqual(session.user.role, "user")
      assert.strictEqual(Number(session.user.balance), 1.5)
      assert.isString(session.csrfToken)
      const cookie = (await context.cookies(gateway.url)).find((c) => c.name === "mg_session")
      assert.isDefined(cookie)
      assert.isTrue(cookie!.httpOnly)
      assert.strictEqual(cookie!.sameSite, "Lax")
      // The flow's own cookie is gone once it is used.
      assert.isUndefined((await context.cookies(`${gateway.url}/api/auth/oidc/`)).find((c) => c.name === "mg_oidc"))

      // CSRF guards a single sign-on session like any other.
      const noCsrf = await page.request.post(`${gateway.url}/api/keys`, { data: { name: "k" } })
      assert.strictEqual(noCsrf.status(), 403)
      const created = await page.request.post(`${gateway.url}/api/keys`, {
        data: { name: "carol-key", group: "vip" },
        headers: { "x-csrf-token": session.csrfToken }
      })
      assert.strictEqual(created.status(), 201)
      // The mapped group (not selectable by everyone) is hers to use.
      assert.strictEqual((await created.json()).key.group, "vip")
      // No administration for a user.
      assert.strictEqual(await page.getByRole("link", { name: "Users" }).count(), 0)
      await context.close()
    })

    it("makes a member of an admin group an administrator", async () => {
      const { context, page } = await newPage()
      await signInThroughProvider(page, "dave")
      await page.getByTestId("user-menu").waitFor()
      const session = await (await page.request.get(`${gateway.url}/api/auth/session`)).json()
      assert.strictEqual(session.user.role, "admin")
      await page.getByRole("link", { name: "Users" }).click()
      await page.getByText("carol", { exact: true }).first().waitFor()
      await context.close()
    })

    for (
      const [kind, expected] of [
        ["audience", /audience \(aud\) is not this gateway's client_id/],
        ["expired", /ID token has expired/],
        ["signature", /signature does not verify with the issuer's published keys/]
      ] as const
    ) {
      it(`refuses an ID token with ${kind === "audience" ? "a wrong audience" : kind === "expired" ? "an expiry in the past" : "a bad signature"}`, async () => {
        const { context, page } = await newPage()
        tamper = kind
        try {
          await signInThroughProvider(page, "mallory")
          const alert = page.getByTestId("sso-error")
          await alert.waitFor()
          const text = (await alert.textContent()) ?? ""
          assert.match(text, /Single sign-on failed/)
          assert.match(text, expected, text)
        } finally {
          tamper = undefined
        }
        assert.strictEqual((await page.request.get(`${gateway.url}/api/auth/session`)).status(), 401)
        assert.strictEqual(await page.getByTestId("user-menu").count(), 0)
        await context.close()
      })
    }

    it("refuses a user name the gateway does not take, saying why", async () => {
      const { context, page } = await newPage()
      await signInThroughProvider(page, "eve+tag")
      const alert = page.getByTestId("sso-error")
      await alert.waitFor()
      assert.match((await alert.textContent()) ?? "", /'eve\+tag' is not a valid user name/)
      assert.strictEqual((await page.request.get(`${gateway.url}/api/auth/session`)).status(), 401)
      await context.close()
    })

    it("created no one for the refused tokens", async () => {
      const { context, page } = await newPage()
      await signInThroughProvider(page, "dave")
      await page.getByTestId("user-menu").waitFor()
      const users = await (await page.request.get(`${gateway.url}/api/admin/users`)).json()
      const names = users.data.map((u: { name: string }) => u.name)
      assert.include(names, "carol")
      assert.notInclude(names, "mallory")
      const carol = users.data.find((u: { name: string }) => u.name === "carol")
      assert.deepStrictEqual(carol.groups, ["vip"])
      assert.strictEqual(carol.role, "user")
      await context.close()
    })
  }
)
