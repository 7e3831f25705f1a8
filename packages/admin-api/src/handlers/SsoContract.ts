/**
 * The `sso` group of the management API: the sign-in methods. Its request and
 * response Schemas and its endpoints (`SsoGroup`); `Contract.ts` states the
 * wire conventions and `Api.ts` composes the groups.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import { describe } from "../internal/endpoints.ts"

/**
 * `GET /api/auth/methods`: how one may sign in here, for the sign-in page:
 * with a password (unless `auth.password_login` is off), and through single
 * sign-on (`auth.oidc`: the button's label and where it starts).
 *
 * @category auth
 */
export const AuthMethods = Schema.Struct({
  password: Schema.Boolean,
  sso: Schema.NullOr(Schema.Struct({ name: Schema.String, startUrl: Schema.String }))
})
export type AuthMethods = typeof AuthMethods.Type

/**
 * How one may sign in, and single sign-on with OpenID Connect (`auth.oidc`):
 * `start` sends the browser to the provider (authorization code with PKCE,
 * `state` and `nonce`), `callback` is where it comes back; a verified ID token
 * opens the same session (cookie) a password sign-in does, and any refusal
 * sends the browser back to the sign-in page with the reason.
 *
 * @category groups
 */
export class SsoGroup extends HttpApiGroup.make("sso")
  .add(
    HttpApiEndpoint.get("methods", "/api/auth/methods", { success: AuthMethods })
      .annotateMerge(describe("How one may sign in here: with a password, and through single sign-on (its name).")),
    HttpApiEndpoint.get("oidcStart", "/api/auth/oidc/start", { success: HttpApiSchema.Empty(302) })
      .annotateMerge(describe("Starts single sign-on: redirects to the OpenID provider (auth.oidc).")),
    HttpApiEndpoint.get("oidcCallback", "/api/auth/oidc/callback", { success: HttpApiSchema.Empty(302) })
      .annotateMerge(
        describe(
          "Where the OpenID provider sends the browser back: checks state, PKCE and the ID token (signature from the " +
            "issuer's keys, iss, aud, exp, nonce), signs in (sets mg_session) and redirects to the console; a refusal " +
            "redirects to the sign-in page with ?sso_error=."
        )
      )
  )
{}
