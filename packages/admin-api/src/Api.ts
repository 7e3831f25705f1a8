/**
 * The management API as one `HttpApi` contract: every endpoint under `/api/`
 * with its method, path, query, body, answer and errors, grouped by what it
 * manages, and the middleware that guards it. The server implements it
 * (`AdminApi.ts`), the console calls it through a client derived from it
 * (`HttpApiClient`), and `GET /api/openapi.json` serves it as OpenAPI.
 *
 * Who may call what, enforced by the middleware named on each endpoint:
 *
 * - `Authentication`: a console session (the `mg_session` cookie) or an API
 *   key (`Authorization: Bearer`); it provides the `Principal`.
 * - `Csrf`: a state-changing request made with a session carries the
 *   session's CSRF token in `x-csrf-token`.
 * - `SessionOnly`: the endpoint changes what the caller's keys may do (or
 *   spends their account), so an API key may not call it: a leaked key
 *   can never create keys or loosen its limits. Keys read.
 * - `AdminOnly`: administrators only (a session, or an admin's key).
 * - `Requests` (every endpoint): a body is JSON, and a request the contract
 *   cannot decode is a 400 naming the field.
 *
 * Browser-safe: depends on `effect` (and types of core) only.
 *
 * @since 0.1.0
 */
import type { Domain } from "@modelgate/core"
import { Context, Schema } from "effect"
import {
  HttpApi,
  HttpApiEndpoint,
  HttpApiGroup,
  HttpApiMiddleware,
  HttpApiSchema,
  HttpApiSecurity,
  OpenApi
} from "effect/http-api"
import * as ApiError from "./ApiError.ts"
import * as C from "./Contract.ts"

// ---------------------------------------------------------------------------
// Who is calling
// ---------------------------------------------------------------------------

/** The session cookie's name. @category constants */
export const COOKIE = "mg_session"

/** The CSRF header's name. @category constants */
export const CSRF_HEADER = "x-csrf-token"

/**
 * Who is calling, and how they proved it.
 *
 * @category principal
 */
export interface PrincipalShape {
  readonly userId: string
  readonly userName: string
  readonly role: Domain.Role
  readonly via: "session" | "key"
  /** The API key that authenticated the call (keys only). */
  readonly key: Domain.ApiKey | undefined
  /** The session's cookie token, CSRF token and end (sessions only). */
  readonly session: { readonly token: string; readonly csrfToken: string; readonly expiresAt: number } | undefined
}

/**
 * The caller of an authenticated endpoint, provided by `Authentication`.
 *
 * @category principal
 */
export class Principal extends Context.Service<Principal, PrincipalShape>()("modelgate/admin-api/Principal") {}

// ---------------------------------------------------------------------------
// Middleware
// ---------------------------------------------------------------------------

const sessionScheme = HttpApiSecurity.apiKey({ in: "cookie", key: COOKIE }).pipe(
  HttpApiSecurity.annotate(
    OpenApi.Description,
    "A console session: the cookie POST /api/auth/login sets. State-changing requests (POST, PATCH, DELETE) also send " +
      `the session's csrfToken in the '${CSRF_HEADER}' header.`
  )
)

const bearerScheme = HttpApiSecurity.bearer.pipe(
  HttpApiSecurity.annotate(
    OpenApi.Description,
    "An API key (sk-...). Keys may read; creating keys, changing limits and other changes to one's own account need a session. " +
      "An admin's key may call the admin endpoints, but never change its own key or user."
  )
)

/**
 * A console session or an API key; provides the `Principal`. A valid session
 * cookie wins; otherwise the bearer key decides (and its refusal is the answer).
 *
 * @category middleware
 */
export class Authentication extends HttpApiMiddleware.Service<Authentication, { provides: Principal }>()(
  "modelgate/admin-api/Authentication",
  { security: { session: sessionScheme, bearer: bearerScheme }, error: ApiError.responses }
) {}

/**
 * State-changing requests made with a session carry its CSRF token.
 *
 * @category middleware
 */
export class Csrf extends HttpApiMiddleware.Service<Csrf, { requires: Principal }>()("modelgate/admin-api/Csrf", {
  error: ApiError.responses
}) {}

/**
 * An API key may not call the endpoint (403 `session_required`).
 *
 * @category middleware
 */
export class SessionOnly
  extends HttpApiMiddleware.Service<SessionOnly, { requires: Principal }>()("modelgate/admin-api/SessionOnly", {
    error: ApiError.responses
  })
{}

/**
 * Administrators only (403 `admin_only`).
 *
 * @category middleware
 */
export class AdminOnly
  extends HttpApiMiddleware.Service<AdminOnly, { requires: Principal }>()("modelgate/admin-api/AdminOnly", {
    error: ApiError.responses
  })
{}

/**
 * Every request: a body is JSON (415 otherwise), and one the contract cannot
 * decode is a 400 naming the field. It declares every error response.
 *
 * @category middleware
 */
export class Requests extends HttpApiMiddleware.Service<Requests>()("modelgate/admin-api/Requests", {
  error: ApiError.responses
}) {}

// ---------------------------------------------------------------------------
// Endpoints
// ---------------------------------------------------------------------------

const Csv = Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/csv" }))
const Created = <S extends Schema.Top>(schema: S) => schema.pipe(HttpApiSchema.status(201))
const IdParams = { id: Schema.String }

const describe = (description: string) => OpenApi.annotations({ description })

/** Sign-in, sign-out, the current session, one's password. @category groups */
export class SessionGroup extends HttpApiGroup.make("session")
  .add(
    HttpApiEndpoint.post("login", "/api/auth/login", { payload: C.LoginRequest, success: C.SessionInfo })
      .annotateMerge(
        describe("Sign in with user name and password; sets the mg_session cookie. JSON only (login CSRF).")
      ),
    HttpApiEndpoint.post("logout", "/api/auth/logout", { success: C.Ok })
      .annotateMerge(
        describe("Sign out: ends the session and clears the cookie (needs the CSRF token while a session is live).")
      )
  )
  .add(
    HttpApiEndpoint.get("session", "/api/auth/session", { success: C.SessionInfo })
      .annotateMerge(describe("The current session (csrfToken is null for API keys).")).middleware(Csrf).middleware(
        Authentication
      ),
    HttpApiEndpoint.post("changePassword", "/api/auth/password", { payload: C.ChangePasswordRequest, success: C.Ok })
      .annotateMerge(describe("Change one's own password; ends one's other sessions."))
      .middleware(SessionOnly).middleware(Csrf).middleware(Authentication)
  )
{}

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
    HttpApiEndpoint.get("methods", "/api/auth/methods", { success: C.AuthMethods })
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

/** The console's playground: chat through the engine as one of one's own keys. @category groups */
export class PlaygroundGroup extends HttpApiGroup.make("playground")
  .add(
    HttpApiEndpoint.post("chat", "/api/playground/chat", {
      payload: C.PlaygroundChatRequest,
      success: Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/event-stream" }))
    })
      .annotateMerge(
        describe(
          "One streamed chat turn as one of one's own keys (never its secret): the same engine, permissions, limits, " +
            "caps and billing as a call to /v1/chat/completions with that key; the answer is OpenAI chat completion " +
            "chunks as server-sent events, with the call's x-request-id. Needs a console session and its CSRF token."
        )
      )
  )
  .middleware(SessionOnly)
  .middleware(Csrf)
  .middleware(Authentication)
{}

/** What the caller is, may call and spends. @category groups */
export class AccountGroup extends HttpApiGroup.make("account")
  .add(
    HttpApiEndpoint.get("me", "/api/me", { success: C.GatewayMe })
      .annotateMerge(
        describe(
          "Who is calling, the models they may call and the balance (snake_case, as the gateway always answered)."
        )
      ),
    HttpApiEndpoint.get("dashboard", "/api/dashboard", { success: C.Dashboard })
      .annotateMerge(describe("Balance, spend today and this month, and 30 days of spend per model.")),
    HttpApiEndpoint.get("models", "/api/models", { success: C.MyModels })
      .annotateMerge(describe("The models one's groups reach, with prices after each group's ratio.")),
    HttpApiEndpoint.get("connect", "/api/connect", { success: C.ConnectInfo })
      .annotateMerge(describe("This server's addresses, for the Connect a client page.")),
    HttpApiEndpoint.post("redeem", "/api/redeem", { payload: C.RedeemRequest, success: C.RedeemResult })
      .annotateMerge(describe("Redeem a code onto one's balance.")).middleware(SessionOnly)
  )
  .middleware(Csrf)
  .middleware(Authentication)
{}

/** API keys: one's own, and (admins) anyone's. @category groups */
export class KeysGroup extends HttpApiGroup.make("keys")
  .add(
    HttpApiEndpoint.get("list", "/api/keys", { success: C.KeyList })
      .annotateMerge(describe("One's own keys (with an API key: that key only).")),
    HttpApiEndpoint.post("create", "/api/keys", { payload: C.CreateKeyRequest, success: Created(C.CreatedKey) })
      .annotateMerge(describe("Create a key; the answer carries the secret, shown once.")).middleware(SessionOnly),
    HttpApiEndpoint.patch("update", "/api/keys/:id", {
      params: IdParams,
      payload: C.UpdateKeyRequest,
      success: C.ApiKey
    })
      .annotateMerge(describe("Rename, enable or disable, re-permission, re-cap one's key.")).middleware(SessionOnly),
    HttpApiEndpoint.delete("delete", "/api/keys/:id", { params: IdParams, success: C.Ok })
      .annotateMerge(describe("Delete one's key for good.")).middleware(SessionOnly)
  )
  .add(
    HttpApiEndpoint.get("userKeys", "/api/admin/users/:id/keys", { params: IdParams, success: C.KeyList })
      .annotateMerge(describe("A user's keys.")).middleware(AdminOnly),
    HttpApiEndpoint.patch("adminUpdate", "/api/admin/keys/:id", {
      params: IdParams,
      payload: C.UpdateKeyRequest,
      success: C.ApiKey
    })
      .annotateMerge(describe("An admin edits any user's key (not the key making the call).")).middleware(AdminOnly),
    HttpApiEndpoint.post("adminCreate", "/api/admin/users/:id/keys", {
      params: IdParams,
      payload: C.CreateKeyRequest,
      success: Created(C.CreatedKey)
    })
      .annotateMerge(
        describe("An admin creates a key for a user, in one of the user's groups; the secret is shown once.")
      )
      .middleware(AdminOnly),
    HttpApiEndpoint.delete("adminDelete", "/api/admin/keys/:id", { params: IdParams, success: C.Ok })
      .annotateMerge(describe("An admin revokes any user's key (not the key making the call).")).middleware(AdminOnly),
    HttpApiEndpoint.get("userModels", "/api/admin/users/:id/models", { params: IdParams, success: C.MyModels })
      .annotateMerge(describe("The groups a user may put keys in, with the models each reaches.")).middleware(AdminOnly)
  )
  .middleware(Csrf)
  .middleware(Authentication)
{}

/** Usage records (the request log), daily sums and the ledger. @category groups */
export class UsageGroup extends HttpApiGroup.make("usage")
  .add(
    HttpApiEndpoint.get("list", "/api/usage", { query: C.UsageQuery, success: C.UsagePage })
      .annotateMerge(describe(
        "One's calls (the request log), newest first, refused ones included: filter by key, model, status class, error code, request id and time; page with nextCursor."
      )),
    HttpApiEndpoint.get("csv", "/api/usage.csv", { query: C.UsageQuery, success: Csv })
      .annotateMerge(describe("One's usage records as CSV (same filters; at most 100 000 rows).")),
    HttpApiEndpoint.get("daily", "/api/usage/daily", { query: C.UsageQuery, success: C.DailyUsage })
      .annotateMerge(describe("One's spend and tokens per day and model.")),
    HttpApiEndpoint.get("ledger", "/api/ledger", { query: C.PageQuery, success: C.LedgerPage })
      .annotateMerge(describe("One's ledger, newest first."))
  )
  .add(
    HttpApiEndpoint.get("adminDaily", "/api/admin/usage/daily", { query: C.AdminUsageQuery, success: C.AdminOverview })
      .annotateMerge(describe("Usage across all users: per day and model, and totals per user.")).middleware(AdminOnly),
    HttpApiEndpoint.get("adminList", "/api/admin/usage", { query: C.AdminUsageQuery, success: C.UsagePage })
      .annotateMerge(describe(
        "Every user's calls (the request log), with their channel, upstream model and attempts; filters add user and channel."
      )).middleware(AdminOnly),
    HttpApiEndpoint.get("adminCsv", "/api/admin/usage.csv", { query: C.AdminUsageQuery, success: Csv })
      .annotateMerge(
        describe(
          "Every user's calls as CSV, with channel, upstream model and attempts (same filters; at most 100 000 rows)."
        )
      ).middleware(AdminOnly),
    HttpApiEndpoint.get("userUsage", "/api/admin/users/:id/usage", {
      params: IdParams,
      query: C.UsageQuery,
      success: C.UsagePage
    })
      .annotateMerge(describe("A user's usage records.")).middleware(AdminOnly),
    HttpApiEndpoint.get("userLedger", "/api/admin/users/:id/ledger", {
      params: IdParams,
      query: C.PageQuery,
      success: C.LedgerPage
    })
      .annotateMerge(describe("A user's ledger.")).middleware(AdminOnly)
  )
  .middleware(Csrf)
  .middleware(Authentication)
{}

/** Users (administrators only). @category groups */
export class UsersGroup extends HttpApiGroup.make("users")
  .add(
    HttpApiEndpoint.get("list", "/api/admin/users", { success: C.UserList })
      .annotateMerge(describe("All users (deleted ones are not listed).")),
    HttpApiEndpoint.post("create", "/api/admin/users", { payload: C.CreateUserRequest, success: Created(C.AdminUser) })
      .annotateMerge(describe("Create a user.")),
    HttpApiEndpoint.get("get", "/api/admin/users/:id", { params: IdParams, success: C.AdminUser })
      .annotateMerge(describe("One user.")),
    HttpApiEndpoint.patch("update", "/api/admin/users/:id", {
      params: IdParams,
      payload: C.UpdateUserRequest,
      success: C.AdminUser
    })
      .annotateMerge(describe("Change a user's role, groups, limits or password; enable or disable them.")),
    HttpApiEndpoint.delete("delete", "/api/admin/users/:id", { params: IdParams, success: C.Ok })
      .annotateMerge(
        describe("Delete a user: their keys are revoked, their ledger and usage stay under an anonymised name.")
      ),
    HttpApiEndpoint.post("adjust", "/api/admin/users/:id/adjust", {
      params: IdParams,
      payload: C.AdjustBalanceRequest,
      success: C.BalanceResult
    })
      .annotateMerge(describe("Credit or debit a user's balance, with a reason in the ledger."))
  )
  .middleware(AdminOnly)
  .middleware(Csrf)
  .middleware(Authentication)
{}

/** Groups, channels, models and prices, aliases (administrators only). @category groups */
export class CatalogGroup extends HttpApiGroup.make("catalog")
  .add(
    HttpApiEndpoint.get("listGroups", "/api/admin/groups", { success: C.GroupList }).annotateMerge(
      describe("All groups.")
    ),
    HttpApiEndpoint.post("createGroup", "/api/admin/groups", {
      payload: C.CreateGroupRequest,
      success: Created(C.AdminGroup)
    })
      .annotateMerge(describe("Create a group.")),
    HttpApiEndpoint.patch("updateGroup", "/api/admin/groups/:name", {
      params: { name: Schema.String },
      payload: C.UpdateGroupRequest,
      success: C.AdminGroup
    }).annotateMerge(describe("Change a group's ratio, limits, selectability or assigned users.")),
    HttpApiEndpoint.delete("deleteGroup", "/api/admin/groups/:name", { params: { name: Schema.String }, success: C.Ok })
      .annotateMerge(describe("Delete a group no key uses.")),
    HttpApiEndpoint.get("listChannels", "/api/admin/channels", { success: C.ChannelList })
      .annotateMerge(describe("All channels (upstream keys never included).")),
    HttpApiEndpoint.post("createChannel", "/api/admin/channels", {
      payload: C.CreateChannelRequest,
      success: Created(C.AdminChannel)
    })
      .annotateMerge(describe("Create a channel.")),
    HttpApiEndpoint.get("getChannel", "/api/admin/channels/:id", { params: IdParams, success: C.AdminChannel })
      .annotateMerge(describe("One channel.")),
    HttpApiEndpoint.patch("updateChannel", "/api/admin/channels/:id", {
      params: IdParams,
      payload: C.UpdateChannelRequest,
      success: C.AdminChannel
    })
      .annotateMerge(describe("Change a channel.")),
    HttpApiEndpoint.delete("deleteChannel", "/api/admin/channels/:id", { params: IdParams, success: C.Ok })
      .annotateMerge(describe("Delete a channel.")),
    HttpApiEndpoint.post("testChannel", "/api/admin/channels/:id/test", {
      params: IdParams,
      payload: C.TestChannelRequest,
      success: C.TestChannelResult
    })
      .annotateMerge(describe(
        "Send one real request through each of a channel's keys, report latency or the upstream's error, and update each key's health with the outcome."
      )),
    HttpApiEndpoint.post("fetchModels", "/api/admin/channels/models", {
      payload: C.FetchModelsRequest,
      success: C.FetchedModels
    })
      .annotateMerge(
        describe(
          "The upstream's own model list, for a saved channel (channelId) or one being made (type, baseUrl, apiKey)."
        )
      ),
    HttpApiEndpoint.post("resetChannel", "/api/admin/channels/:id/reset", { params: IdParams, success: C.AdminChannel })
      .annotateMerge(describe("Close the channel's circuit breakers and re-enable its disabled keys."))
  )
  .add(
    HttpApiEndpoint.get("listModels", "/api/admin/models", { success: C.ModelList })
      .annotateMerge(describe("All models with list prices, and the channel models that have no price yet.")),
    HttpApiEndpoint.get("pricePresets", "/api/admin/models/presets", { success: C.PricePresets })
      .annotateMerge(
        describe("The price table of well-known models that ships with modelgate (with its sources and date).")
      ),
    HttpApiEndpoint.post("upsertModel", "/api/admin/models", { payload: C.UpsertModelRequest, success: C.AdminModel })
      .annotateMerge(describe("Create or replace a model and its prices.")),
    HttpApiEndpoint.delete("deleteModel", "/api/admin/models/:id", { params: IdParams, success: C.Ok })
      .annotateMerge(describe("Delete a model.")),
    HttpApiEndpoint.get("listAliases", "/api/admin/aliases", { success: C.AliasList })
      .annotateMerge(describe("Model-name aliases, in matching order.")),
    HttpApiEndpoint.post("setAlias", "/api/admin/aliases", { payload: C.SetAliasRequest, success: C.Alias })
      .annotateMerge(describe("Create or change an alias.")),
    HttpApiEndpoint.delete("deleteAlias", "/api/admin/aliases", { query: C.AliasQuery, success: C.Ok })
      .annotateMerge(describe("Delete an alias (?pattern=)."))
  )
  .middleware(AdminOnly)
  .middleware(Csrf)
  .middleware(Authentication)
{}

/** Redemption codes (administrators only). @category groups */
export class CodesGroup extends HttpApiGroup.make("codes")
  .add(
    HttpApiEndpoint.post("generate", "/api/admin/codes", {
      payload: C.GenerateCodesRequest,
      success: Created(C.GeneratedCodes)
    })
      .annotateMerge(describe("Generate a batch of redemption codes (returned in full only here).")),
    HttpApiEndpoint.get("list", "/api/admin/codes", { query: C.CodesQuery, success: C.CodePage })
      .annotateMerge(describe("Codes, newest first.")),
    HttpApiEndpoint.get("csv", "/api/admin/codes.csv", { query: C.CodesQuery, success: Csv })
      .annotateMerge(describe("Codes as CSV (prefixes only; same filters)."))
  )
  .middleware(AdminOnly)
  .middleware(Csrf)
  .middleware(Authentication)
{}

/**
 * The management API.
 *
 * @category api
 */
export class Api extends HttpApi.make("modelgate")
  .add(SessionGroup, AccountGroup, KeysGroup, UsageGroup, UsersGroup, CatalogGroup, CodesGroup)
  .add(SsoGroup, PlaygroundGroup)
  .middleware(Requests)
  .annotate(HttpApi.PayloadParseOptions, { errors: "all", onExcessProperty: "error" })
  .annotate(HttpApi.QueryParseOptions, { errors: "all", onExcessProperty: "error" })
  .annotate(HttpApi.HeadersParseOptions, {})
  .annotateMerge(OpenApi.annotations({
    title: "modelgate management API",
    version: "1",
    description: "Sessions, API keys, usage, billing and administration of a modelgate gateway. " +
      "Errors are {\"error\":{\"message\",\"type\",\"param\",\"code\"}} with the HTTP status; see docs/api.md."
  }))
{}

/** Where the OpenAPI document is served. @category constants */
export const OPENAPI_PATH = "/api/openapi.json"
