/**
 * The server side of the management API: `handle`, one Effect function for
 * every request under `/api/` except the gateway's own `/api/me`. node-http
 * calls it for those paths and writes the response it returns; it never fails
 * (every failure is already a JSON error response).
 *
 * Who is calling:
 *
 * - `Authorization: Bearer <API key>`: the key's owner, authenticated through
 *   core's `Admission.authenticate` (so a disabled, expired or unknown key is
 *   refused with the same messages as on `/v1`). No CSRF token is needed: a
 *   browser never sends that header by itself.
 * - otherwise the `mg_session` cookie; every state-changing request made with
 *   a session must carry the session's CSRF token in `x-csrf-token`.
 *
 * What they may do: everything under `/api/admin/` needs the admin role; all
 * other endpoints act on the caller's own records only. A key, usage record or
 * ledger entry of someone else reads as "not found", never as "forbidden", so
 * ids cannot be probed.
 *
 * @since 0.1.0
 */
import { Admission, type ChannelHealth, ChannelProbe, Invalidation, Money } from "@modelgate/core"
import type { Catalog as CatalogModule, KeyStore } from "@modelgate/core"
import { Catalog } from "@modelgate/core/Catalog"
import { Accounts } from "@modelgate/store/Accounts"
import { Keys, type KeyRecord } from "@modelgate/store/Keys"
import { Redemption } from "@modelgate/store/Redemption"
import type { Secrets } from "@modelgate/store/Secrets"
import { Users, type User } from "@modelgate/store/Users"
import { Clock, Context, Effect, Layer, Option, Redacted, Schema } from "effect"
import { HttpServerResponse } from "effect/http"
import type { HttpServerRequest } from "effect/http/HttpServerRequest"
import { SqlClient } from "effect/sql"
import * as ApiError from "./ApiError.ts"
import * as CatalogAdmin from "./CatalogAdmin.ts"
import type * as C from "./Contract.ts"
import * as E from "./Endpoints.ts"
import { LoginLimiter, type Options as LimiterOptions } from "./LoginLimiter.ts"
import * as Queries from "./Queries.ts"
import { COOKIE, CSRF_HEADER, safeEqual, Sessions } from "./Sessions.ts"
import * as TrustedProxies from "./TrustedProxies.ts"

// ---------------------------------------------------------------------------
// Configuration and requirements
// ---------------------------------------------------------------------------

/**
 * Settings of the management API.
 *
 * - `publicUrl`: the gateway's address as clients reach it (`https://llm.example.com`),
 *   shown on "Connect a client"; when unset it is derived from the request's
 *   `host` header (and a trusted proxy's `x-forwarded-proto`/`x-forwarded-host`).
 * - `sessionTtlMs`: the cookie's lifetime (should match `Sessions.layer`).
 * - `trustedProxies`: the peers whose `x-forwarded-for` and `x-forwarded-*`
 *   headers are believed (default: loopback only; see `TrustedProxies`).
 *
 * @category configuration
 */
export const AdminApiConfig = Context.Reference<{
  readonly publicUrl: string | undefined
  readonly sessionTtlMs: number
  readonly trustedProxies: TrustedProxies.TrustedProxies
}>("modelgate/admin-api/AdminApiConfig", {
  defaultValue: () => ({
    publicUrl: undefined,
    sessionTtlMs: 7 * 24 * 60 * 60 * 1000,
    trustedProxies: TrustedProxies.unsafeMake(TrustedProxies.loopback)
  })
})

/**
 * The services `handle` needs: the store's repositories (`Users`, `Keys`,
 * `Accounts`, `Redemption`, `Secrets`), `SqlClient`, core's `KeyStore`,
 * `Catalog`, `Invalidation`, `ChannelProbe` and `ChannelHealth`, and this package's `Sessions`
 * and `LoginLimiter`.
 *
 * @category models
 */
export type Requirements =
  | SqlClient.SqlClient
  | Users
  | Keys
  | Accounts
  | Redemption
  | Secrets
  | KeyStore.KeyStore
  | Catalog
  | Invalidation.Invalidation
  | ChannelProbe.ChannelProbe
  | ChannelHealth.ChannelHealth
  | Sessions
  | LoginLimiter

// ---------------------------------------------------------------------------
// Callers
// ---------------------------------------------------------------------------

/**
 * Who is calling, and how they proved it.
 *
 * @category models
 */
export interface Principal {
  readonly userId: string
  readonly userName: string
  readonly role: "user" | "admin"
  readonly via: "session" | "key"
  /** The session's cookie token and CSRF token (sessions only). */
  readonly session: { readonly token: string; readonly csrfToken: string; readonly expiresAt: number } | undefined
}

const bearer = (request: HttpServerRequest): string | undefined => {
  const value = request.headers["authorization"]
  if (value === undefined) return undefined
  const match = /^\s*bearer\s+(.+?)\s*$/i.exec(value)
  return match === null ? undefined : match[1]
}

const authenticate = Effect.fnUntraced(function*(request: HttpServerRequest) {
  const secret = bearer(request)
  if (secret !== undefined) {
    const key = yield* Admission.authenticate(secret).pipe(
      Effect.catch((error) => Effect.flatMap(ApiError.fromUnknown(error), Effect.fail))
    )
    return {
      userId: key.userId,
      userName: key.userName,
      role: key.userRole,
      via: "key",
      session: undefined
    } satisfies Principal as Principal
  }
  const token = request.cookies[COOKIE]
  if (token === undefined || token.length === 0) return yield* ApiError.unauthenticated()
  const sessions = yield* Sessions
  const session = yield* sessions.find(token)
  if (session === undefined) return yield* ApiError.unauthenticated("Your session has ended. Sign in again.")
  const user = yield* (yield* Users).findById(session.userId)
  if (user === undefined || !user.enabled) {
    yield* sessions.remove(token)
    return yield* ApiError.unauthenticated("Your account is disabled or no longer exists.")
  }
  return {
    userId: user.id,
    userName: user.name,
    role: user.role,
    via: "session",
    session: { token, csrfToken: session.csrfToken, expiresAt: session.expiresAt }
  } satisfies Principal as Principal
})

const peerOf = (request: HttpServerRequest): string => Option.getOrElse(request.remoteAddress, () => "unknown")

/** Whether the client uses HTTPS: to us directly, or to a trusted proxy that says so in `x-forwarded-proto`. */
const isHttps = (request: HttpServerRequest, trusted: TrustedProxies.TrustedProxies): boolean =>
  request.protocol === "https" ||
  request.originalUrl.startsWith("https:") ||
  TrustedProxies.forwardedHttps(trusted, peerOf(request), request.headers["x-forwarded-proto"]) === true

/** The client's address: the peer's, or the one a trusted proxy names in `x-forwarded-for`. */
const clientAddress = (request: HttpServerRequest, trusted: TrustedProxies.TrustedProxies): string =>
  TrustedProxies.clientAddress(trusted, peerOf(request), request.headers["x-forwarded-for"])

const sessionCookie = (request: HttpServerRequest, trusted: TrustedProxies.TrustedProxies, token: string, maxAgeSeconds: number): string =>
  `${COOKIE}=${token}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSeconds}${isHttps(request, trusted) ? "; Secure" : ""}`

const publicBaseUrl = (request: HttpServerRequest, config: typeof AdminApiConfig.Service): string => {
  if (config.publicUrl !== undefined && config.publicUrl.length > 0) return config.publicUrl.replace(/\/+$/, "")
  const proto = isHttps(request, config.trustedProxies) ? "https" : "http"
  const forwardedHost = config.trustedProxies.contains(peerOf(request)) ? request.headers["x-forwarded-host"] : undefined
  const host = (forwardedHost ?? request.headers["host"] ?? "localhost").split(",")[0]!.trim()
  return `${proto}://${host}`
}

// ---------------------------------------------------------------------------
// Responses
// ---------------------------------------------------------------------------

type Out = { readonly _tag: "json"; readonly value: unknown; readonly status?: number; readonly cookie?: string } | {
  readonly _tag: "csv"
  readonly text: string
  readonly filename: string
}

const json = (value: unknown, extra: { readonly status?: number; readonly cookie?: string } = {}): Out => ({
  _tag: "json",
  value,
  ...extra
})

const csv = (text: string, filename: string): Out => ({ _tag: "csv", text, filename })

const ok: C.Ok = { ok: true }

// ---------------------------------------------------------------------------
// Routing
// ---------------------------------------------------------------------------

type TypeOf<S> = S extends Schema.Top ? S["Type"] : undefined

interface Context<Q, B> {
  readonly request: HttpServerRequest
  readonly principal: Principal
  readonly params: Readonly<Record<string, string>>
  readonly query: Q
  readonly body: B
}

interface PublicContext<B> {
  readonly request: HttpServerRequest
  readonly body: B
}

interface Route {
  readonly endpoint: E.Endpoint
  readonly run: (ctx: Context<any, any>) => Effect.Effect<Out, unknown, Requirements>
}

const route = <M extends E.Endpoint>(
  endpoint: M,
  run: (ctx: Context<TypeOf<M["query"]>, TypeOf<M["body"]>>) => Effect.Effect<Out, unknown, Requirements>
): Route => ({ endpoint, run })

const decodeQuery = (schema: Schema.Top | undefined, request: HttpServerRequest) => {
  if (schema === undefined) return Effect.succeed(undefined)
  const question = request.url.indexOf("?")
  const raw: Record<string, string> = {}
  if (question !== -1) {
    for (const [key, value] of new URLSearchParams(request.url.slice(question + 1))) if (value !== "") raw[key] = value
  }
  return Schema.decodeUnknownEffect(schema as Schema.Codec<unknown, unknown>)(raw, { errors: "all", onExcessProperty: "error" }).pipe(
    Effect.mapError((error) => ApiError.fromSchemaIssue(error.issue, "query"))
  )
}

const decodeBody = (schema: Schema.Top | undefined, request: HttpServerRequest) => {
  if (schema === undefined) return Effect.succeed(undefined)
  return request.text.pipe(
    Effect.mapError(() => ApiError.invalid("The request body could not be read.")),
    Effect.flatMap((text) =>
      Effect.try({
        try: () => (text.trim().length === 0 ? {} : JSON.parse(text)) as unknown,
        catch: () => ApiError.invalid("The request body is not valid JSON.", null, "invalid_json")
      })
    ),
    Effect.flatMap((value) =>
      Schema.decodeUnknownEffect(schema as Schema.Codec<unknown, unknown>)(value, { errors: "all", onExcessProperty: "error" }).pipe(
        Effect.mapError((error) => ApiError.fromSchemaIssue(error.issue, "body"))
      )
    )
  )
}

const requireCsrf = (request: HttpServerRequest, principal: Principal) => {
  if (principal.via !== "session" || request.method === "GET" || request.method === "HEAD") return Effect.void
  const sent = request.headers[CSRF_HEADER]
  return sent !== undefined && principal.session !== undefined && safeEqual(sent, principal.session.csrfToken)
    ? Effect.void
    : Effect.fail(
      ApiError.forbidden(
        `Missing or wrong CSRF token: send the csrfToken from sign-in in the '${CSRF_HEADER}' header on every state-changing request.`,
        "csrf_failed"
      )
    )
}

// ---------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------

const nowMs = Clock.currentTimeMillis

const me = Effect.fnUntraced(function*(userId: string) {
  const user = yield* (yield* Users).findById(userId)
  if (user === undefined) return yield* ApiError.notFound(`No user with id '${userId}'.`)
  return user
})

const meView = (user: User): C.Me => ({ id: user.id, name: user.name, role: user.role, balance: Money.formatUsd(user.balanceNanos) })

const keyView = (key: KeyRecord): C.ApiKey => ({
  id: key.id,
  name: key.name,
  prefix: key.prefix,
  group: key.group,
  models: key.models,
  expiresAt: key.expiresAt,
  enabled: key.enabled,
  quota: key.quotaNanos === null ? null : Money.formatUsd(key.quotaNanos),
  dailyBudget: key.dailyBudgetNanos === null ? null : Money.formatUsd(key.dailyBudgetNanos),
  monthlyBudget: key.monthlyBudgetNanos === null ? null : Money.formatUsd(key.monthlyBudgetNanos),
  spent: Money.formatUsd(key.spentNanos),
  rpm: key.limits.rpm,
  tpm: key.limits.tpm,
  concurrency: key.limits.concurrency,
  lastUsedAt: key.lastUsedAt,
  createdAt: key.createdAt
})

/** The caller's own key, or 404 (also for someone else's key). */
const ownKey = Effect.fnUntraced(function*(principal: Principal, id: string) {
  const key = yield* (yield* Keys).findById(id)
  if (key === undefined || key.userId !== principal.userId) return yield* ApiError.notFound(`No API key with id '${id}'.`)
  return key
})

/** The groups a user may pick for keys: those assigned to them plus the selectable ones; admins may pick any. */
const groupsOf = Effect.fnUntraced(function*(userId: string, role: "user" | "admin") {
  const sql = yield* SqlClient.SqlClient
  const rows = role === "admin"
    ? yield* sql`SELECT name FROM groups ORDER BY name`
    : yield* sql`SELECT name FROM groups WHERE selectable = ${true}
        UNION SELECT group_name AS name FROM user_groups WHERE user_id = ${userId} ORDER BY name`
  const names = rows.map((row) => String(row.name))
  if (role === "admin") {
    const snapshot = yield* (yield* Catalog).current
    for (const name of snapshot.groups.keys()) if (!names.includes(name)) names.push(name)
  }
  return names.length === 0 ? ["default"] : names
})

const parseNanos = (value: string | null | undefined, param: string) => {
  if (value === undefined) return Effect.succeed(undefined)
  if (value === null) return Effect.succeed(null)
  const nanos = Money.usdToNanos(value)
  return nanos === undefined || nanos > Money.MAX_NANOS || nanos < -Money.MAX_NANOS
    ? Effect.fail(ApiError.invalid(`${param}: '${value}' is not a USD amount`, param))
    : Effect.succeed(nanos)
}

const checkModels = Effect.fnUntraced(function*(models: ReadonlyArray<string> | undefined, snapshot: CatalogModule.Snapshot) {
  if (models === undefined) return
  for (let i = 0; i < models.length; i++) {
    if (snapshot.resolveModel(models[i]!) === undefined) {
      return yield* ApiError.invalid(`models[${i}]: no model named '${models[i]}' exists on this gateway`, `models[${i}]`)
    }
  }
})

const checkExpiry = Effect.fnUntraced(function*(expiresAt: number | null | undefined) {
  if (expiresAt === undefined || expiresAt === null) return
  if (expiresAt <= (yield* nowMs)) return yield* ApiError.invalid("expiresAt: the expiry must be in the future", "expiresAt")
})

const limitWording = { rpm: "requests per minute", tpm: "tokens per minute", concurrency: "concurrent calls" } as const

/** The rate limits of a group, as the gateway applies them (the catalog, else the table). */
const groupLimits = Effect.fnUntraced(function*(name: string) {
  const known = (yield* (yield* Catalog).current).groups.get(name)
  if (known !== undefined) return known.limits
  const sql = yield* SqlClient.SqlClient
  const row = (yield* sql`SELECT rpm, tpm, concurrency FROM groups WHERE name = ${name}`)[0]
  const limitOf = (value: unknown) => value === null || value === undefined ? null : Number(value)
  return { rpm: limitOf(row?.rpm), tpm: limitOf(row?.tpm), concurrency: limitOf(row?.concurrency) }
})

/**
 * A key's limits may only narrow its group's: where the group sets a limit,
 * the key's must not be higher (the lower of the two applies anyway, so a
 * higher one would silently do nothing). This holds for admins too; to allow
 * a key more, put it in a group with a higher limit.
 */
const checkKeyLimits = Effect.fnUntraced(function*(body: C.UpdateKeyRequest, group: string) {
  const limits = yield* groupLimits(group)
  for (const field of ["rpm", "tpm", "concurrency"] as const) {
    const value = body[field]
    const ceiling = limits[field]
    if (value === undefined || value === null || ceiling === null || value <= ceiling) continue
    return yield* ApiError.invalid(
      `${field}: a key's limit may not exceed its group's: group '${group}' allows ${ceiling} ${limitWording[field]}, ` +
        `so this key may have at most ${ceiling} (leave it empty to use the group's; for more, use a group with a higher limit)`,
      field
    )
  }
})

/** The columns a key's request changes for its limits and spending caps. */
const keyLimitColumns = Effect.fnUntraced(function*(body: C.UpdateKeyRequest) {
  const columns: Record<string, unknown> = {}
  if (body.rpm !== undefined) columns.rpm = body.rpm
  if (body.tpm !== undefined) columns.tpm = body.tpm
  if (body.concurrency !== undefined) columns.concurrency = body.concurrency
  if (body.dailyBudget !== undefined) columns.daily_budget_nanos = yield* parseNanos(body.dailyBudget, "dailyBudget")
  if (body.monthlyBudget !== undefined) columns.monthly_budget_nanos = yield* parseNanos(body.monthlyBudget, "monthlyBudget")
  return columns
})

/** Applies an update to a key, whoever owns it (the caller checked who may). */
const updateKeyWith = Effect.fnUntraced(function*(key: KeyRecord, body: C.UpdateKeyRequest, own: boolean) {
  const sql = yield* SqlClient.SqlClient
  const snapshot = yield* (yield* Catalog).current
  yield* checkModels(body.models, snapshot)
  yield* checkExpiry(body.expiresAt)
  yield* checkKeyLimits(body, key.group)
  const changes: Record<string, unknown> = yield* keyLimitColumns(body)
  if (body.name !== undefined) changes.name = body.name
  if (body.models !== undefined) changes.models = JSON.stringify(body.models.map((m) => snapshot.resolveModel(m)!))
  if (body.expiresAt !== undefined) changes.expires_at = body.expiresAt
  if (body.quota !== undefined) changes.quota_nanos = yield* parseNanos(body.quota, "quota")
  if (Object.keys(changes).length > 0) {
    yield* sql`UPDATE api_keys SET ${sql.update(changes)} WHERE id = ${key.id}`.pipe(
      Effect.catchIf(
        CatalogAdmin.isUniqueViolation,
        () =>
          Effect.fail(ApiError.conflict(own ? `You already have a key named '${body.name}'.` : `The user already has a key named '${body.name}'.`))
      )
    )
  }
  const keys = yield* Keys
  if (body.enabled !== undefined) yield* keys.setEnabled(key.id, body.enabled)
  yield* invalidate("keys", [key.id])
  return keyView((yield* keys.findById(key.id))!)
})

/** A user's rate limits from a request (only the fields it names). */
const userLimits = (body: { readonly rpm?: number | null; readonly tpm?: number | null; readonly concurrency?: number | null }) => {
  const limits: { rpm?: number | null; tpm?: number | null; concurrency?: number | null } = {}
  if (body.rpm !== undefined) limits.rpm = body.rpm
  if (body.tpm !== undefined) limits.tpm = body.tpm
  if (body.concurrency !== undefined) limits.concurrency = body.concurrency
  return Object.keys(limits).length === 0 ? undefined : limits
}

const invalidate = Effect.fnUntraced(function*(topic: Invalidation.Topic, ids?: ReadonlyArray<string>) {
  const invalidation = yield* Invalidation.Invalidation
  yield* invalidation.invalidate(topic, ids)
})

const pageLimit = (query: { readonly limit?: number | undefined }) => query.limit ?? 50

const adminUserView = Effect.fnUntraced(function*(user: User) {
  const stats = (yield* Queries.userStats()).get(user.id)
  return {
    id: user.id,
    name: user.name,
    role: user.role,
    enabled: user.enabled,
    balance: Money.formatUsd(user.balanceNanos),
    groups: stats?.groups ?? [],
    keyCount: stats?.keyCount ?? 0,
    spentThisMonth: Money.formatUsd(stats?.spentNanos ?? 0n),
    rpm: user.limits.rpm,
    tpm: user.limits.tpm,
    concurrency: user.limits.concurrency,
    source: user.source,
    createdAt: user.createdAt
  } satisfies C.AdminUser
})

const checkGroupsExist = Effect.fnUntraced(function*(groups: ReadonlyArray<string> | undefined) {
  if (groups === undefined) return
  const sql = yield* SqlClient.SqlClient
  const snapshot = yield* (yield* Catalog).current
  const rows = yield* sql`SELECT name FROM groups`
  const known = new Set([...rows.map((row) => String(row.name)), ...snapshot.groups.keys(), "default"])
  const index = groups.findIndex((g) => !known.has(g))
  if (index !== -1) return yield* ApiError.invalid(`groups[${index}]: no group named '${groups[index]}'`, `groups[${index}]`)
})

// ---------------------------------------------------------------------------
// Public endpoints: sign-in and sign-out
// ---------------------------------------------------------------------------

const login = Effect.fnUntraced(function*(ctx: PublicContext<C.LoginRequest>) {
  const limiter = yield* LoginLimiter
  const config = yield* AdminApiConfig
  const account = `account:${ctx.body.username.toLowerCase()}`
  const subjects = [account, `address:${clientAddress(ctx.request, config.trustedProxies)}`]
  const wait = yield* limiter.retryAfter(subjects)
  if (wait > 0) {
    return yield* ApiError.tooManyRequests(`Too many failed sign-in attempts. Try again in ${wait} seconds.`, wait)
  }
  const user = yield* (yield* Users).verifyLogin(ctx.body.username, Redacted.make(ctx.body.password))
  if (user === undefined) {
    yield* limiter.fail(subjects)
    return yield* new ApiError.ApiError({
      status: 401,
      type: "authentication_error",
      code: "invalid_credentials",
      message: "Wrong user name or password.",
      param: null
    })
  }
  yield* limiter.clear(account)
  const session = yield* (yield* Sessions).create(user.id)
  const info: C.SessionInfo = { user: meView(user), csrfToken: session.csrfToken, expiresAt: session.expiresAt }
  return json(info, { cookie: sessionCookie(ctx.request, config.trustedProxies, session.token, Math.floor(config.sessionTtlMs / 1000)) })
})

const logout = Effect.fnUntraced(function*(request: HttpServerRequest) {
  const token = request.cookies[COOKIE]
  if (token !== undefined && token.length > 0) {
    const sessions = yield* Sessions
    const session = yield* sessions.find(token)
    if (session !== undefined) {
      const sent = request.headers[CSRF_HEADER]
      if (sent === undefined || !safeEqual(sent, session.csrfToken)) {
        return yield* ApiError.forbidden(`Missing or wrong CSRF token in '${CSRF_HEADER}'.`, "csrf_failed")
      }
      yield* sessions.remove(token)
    }
  }
  const config = yield* AdminApiConfig
  return json(ok, { cookie: sessionCookie(request, config.trustedProxies, "", 0) })
})

// ---------------------------------------------------------------------------
// Authenticated endpoints
// ---------------------------------------------------------------------------

const routes: ReadonlyArray<Route> = [
  route(E.session, ({ principal }) =>
    Effect.gen(function*() {
      const user = yield* me(principal.userId)
      return json({
        user: meView(user),
        csrfToken: principal.session?.csrfToken ?? null,
        expiresAt: principal.session?.expiresAt ?? null
      } satisfies C.SessionInfo)
    })),

  route(E.changePassword, ({ principal, body }) =>
    Effect.gen(function*() {
      const limiter = yield* LoginLimiter
      const account = `account:${principal.userName.toLowerCase()}`
      const wait = yield* limiter.retryAfter([account])
      if (wait > 0) return yield* ApiError.tooManyRequests(`Too many wrong passwords. Try again in ${wait} seconds.`, wait)
      const users = yield* Users
      const verified = yield* users.verifyLogin(principal.userName, Redacted.make(body.currentPassword))
      if (verified === undefined) {
        yield* limiter.fail([account])
        return yield* ApiError.invalid("currentPassword: the current password is wrong", "currentPassword", "wrong_password")
      }
      yield* users.setPassword(principal.userId, Redacted.make(body.newPassword))
      yield* (yield* Sessions).removeAllOf(principal.userId, principal.session?.token)
      return json(ok)
    })),

  route(E.dashboard, ({ principal }) =>
    Effect.gen(function*() {
      const now = yield* nowMs
      const user = yield* me(principal.userId)
      const today = yield* Queries.totals({ userId: user.id, from: Queries.startOfDay(now) })
      const month = yield* Queries.totals({ userId: user.id, from: Queries.startOfMonth(now) })
      const daily = yield* Queries.daily({ userId: user.id, from: Queries.startOfDay(now) - 29 * 86_400_000 })
      const keys = yield* (yield* Keys).list(user.id)
      return json({
        balance: Money.formatUsd(user.balanceNanos),
        spentToday: Money.formatUsd(today.costNanos),
        spentThisMonth: Money.formatUsd(month.costNanos),
        requestsToday: today.requests,
        tokensToday: today.tokens,
        activeKeys: keys.filter((k) => k.enabled && !k.revoked && (k.expiresAt === null || k.expiresAt > now)).length,
        daily
      } satisfies C.Dashboard)
    })),

  route(E.listKeys, ({ principal }) =>
    Effect.gen(function*() {
      const list = yield* (yield* Keys).list(principal.userId)
      return json({ data: list.filter((k) => !k.revoked).map(keyView) } satisfies C.KeyList)
    })),

  route(E.createKey, ({ principal, body }) =>
    Effect.gen(function*() {
      const allowed = yield* groupsOf(principal.userId, principal.role)
      const group = body.group ?? allowed[0]!
      if (!allowed.includes(group)) {
        return yield* ApiError.invalid(`group: you may not use the group '${group}'; choose one of: ${allowed.join(", ")}`, "group")
      }
      const snapshot = yield* (yield* Catalog).current
      yield* checkModels(body.models, snapshot)
      yield* checkExpiry(body.expiresAt)
      yield* checkKeyLimits(body, group)
      const quota = yield* parseNanos(body.quota, "quota")
      const dailyBudget = yield* parseNanos(body.dailyBudget, "dailyBudget")
      const monthlyBudget = yield* parseNanos(body.monthlyBudget, "monthlyBudget")
      const created = yield* (yield* Keys).create({
        userId: principal.userId,
        name: body.name,
        group,
        models: body.models?.map((m) => snapshot.resolveModel(m)!) ?? [],
        expiresAt: body.expiresAt ?? null,
        quotaNanos: quota ?? null,
        dailyBudgetNanos: dailyBudget ?? null,
        monthlyBudgetNanos: monthlyBudget ?? null,
        limits: { rpm: body.rpm ?? null, tpm: body.tpm ?? null, concurrency: body.concurrency ?? null }
      })
      yield* invalidate("keys", [created.key.id])
      return json({ key: keyView(created.key), secret: created.secret } satisfies C.CreatedKey, { status: 201 })
    })),

  route(E.updateKey, ({ principal, params, body }) =>
    Effect.gen(function*() {
      const key = yield* ownKey(principal, params.id!)
      return json(yield* updateKeyWith(key, body, true))
    })),

  route(E.deleteKey, ({ principal, params }) =>
    Effect.gen(function*() {
      const key = yield* ownKey(principal, params.id!)
      yield* (yield* Keys).remove(key.id)
      yield* invalidate("keys", [key.id])
      return json(ok)
    })),

  route(E.myModels, ({ principal }) =>
    Effect.gen(function*() {
      const names = yield* groupsOf(principal.userId, principal.role)
      const snapshot = yield* (yield* Catalog).current
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql`SELECT * FROM groups`
      const dbGroups = new Map(rows.map((row) => [String(row.name), row]))
      const groups = names.map((name): C.GroupModels => {
        const group = snapshot.groups.get(name)
        const row = dbGroups.get(name)
        const ratioMicros = group?.ratioMicros ?? (row === undefined ? 1_000_000n : BigInt(String(row.ratio_micros)))
        const limitOf = (value: unknown) => value === null || value === undefined ? null : Number(value)
        const limits = group?.limits ??
          { rpm: limitOf(row?.rpm), tpm: limitOf(row?.tpm), concurrency: limitOf(row?.concurrency) }
        const models = snapshot.modelsOfGroup(name).flatMap((id) => {
          const model = snapshot.models.get(id)
          return model === undefined ? [] : [{
            id: model.id,
            displayName: model.displayName,
            prices: CatalogAdmin.pricesOf(model, ratioMicros),
            inputTokenLimit: model.inputTokenLimit,
            outputTokenLimit: model.outputTokenLimit
          }]
        })
        return { name, ratio: CatalogAdmin.microsToRatio(ratioMicros), limits, models }
      })
      return json({ groups } satisfies C.MyModels)
    })),

  route(E.usage, ({ principal, query }) =>
    Effect.map(
      Queries.usagePage({ ...usageFilter(query), userId: principal.userId }, pageLimit(query), query.cursor),
      (page) => json(page)
    )),

  route(E.usageCsv, ({ principal, query }) =>
    Effect.map(Queries.usageCsv({ ...usageFilter(query), userId: principal.userId }), (text) => csv(text, "usage.csv"))),

  route(E.usageDaily, ({ principal, query }) =>
    Effect.gen(function*() {
      const now = yield* nowMs
      const filter = { ...usageFilter(query), userId: principal.userId }
      const data = yield* Queries.daily({ ...filter, from: filter.from ?? Queries.startOfDay(now) - 29 * 86_400_000 })
      return json({ data } satisfies C.DailyUsage)
    })),

  route(E.ledger, ({ principal, query }) =>
    Effect.map(Queries.ledgerPage(principal.userId, pageLimit(query), query.cursor), json)),

  route(E.redeem, ({ principal, body }) =>
    Effect.gen(function*() {
      const amount = yield* (yield* Redemption).redeem(body.code, principal.userId)
      const balance = yield* (yield* Accounts).spendable(principal.userId)
      return json({ amount: Money.formatUsd(amount), balance: Money.formatUsd(balance) } satisfies C.RedeemResult)
    })),

  route(E.connect, ({ principal, request }) =>
    Effect.gen(function*() {
      const config = yield* AdminApiConfig
      const baseUrl = publicBaseUrl(request, config)
      const snapshot = yield* (yield* Catalog).current
      const groups = yield* groupsOf(principal.userId, principal.role)
      const exampleModel = groups.flatMap((g) => snapshot.modelsOfGroup(g))[0] ?? null
      return json({
        baseUrl,
        openaiBaseUrl: `${baseUrl}/v1`,
        geminiBaseUrl: baseUrl,
        geminiApiVersion: "v1beta",
        exampleModel
      } satisfies C.ConnectInfo)
    })),

  // ---- admin: users ------------------------------------------------------

  route(E.adminListUsers, () =>
    Effect.gen(function*() {
      const users = yield* (yield* Users).list
      const stats = yield* Queries.userStats()
      return json({
        data: users.map((user): C.AdminUser => {
          const s = stats.get(user.id)
          return {
            id: user.id,
            name: user.name,
            role: user.role,
            enabled: user.enabled,
            balance: Money.formatUsd(user.balanceNanos),
            groups: s?.groups ?? [],
            keyCount: s?.keyCount ?? 0,
            spentThisMonth: Money.formatUsd(s?.spentNanos ?? 0n),
            rpm: user.limits.rpm,
            tpm: user.limits.tpm,
            concurrency: user.limits.concurrency,
            source: user.source,
            createdAt: user.createdAt
          }
        })
      } satisfies C.UserList)
    })),

  route(E.adminCreateUser, ({ principal, body }) =>
    Effect.gen(function*() {
      yield* checkGroupsExist(body.groups)
      const opening = yield* parseNanos(body.balance, "balance")
      const users = yield* Users
      const user = yield* users.create({ name: body.name, role: body.role ?? "user", password: Redacted.make(body.password) })
      if (body.groups !== undefined) yield* users.setGroups(user.id, body.groups)
      const limits = userLimits(body)
      if (limits !== undefined) yield* users.setLimits(user.id, limits)
      if (opening !== undefined && opening !== null && opening > 0n) {
        yield* (yield* Accounts).topUp(user.id, opening, "opening balance", principal.userId)
      }
      yield* invalidate("users", [user.id])
      return json(yield* adminUserView((yield* users.findById(user.id))!), { status: 201 })
    })),

  route(E.adminGetUser, ({ params }) => Effect.flatMap(me(params.id!), (user) => Effect.map(adminUserView(user), json))),

  route(E.adminUpdateUser, ({ principal, params, body }) =>
    Effect.gen(function*() {
      const user = yield* me(params.id!)
      if (user.id === principal.userId && (body.role === "user" || body.enabled === false)) {
        return yield* ApiError.invalid(
          body.role === "user" ? "role: you cannot remove your own admin role" : "enabled: you cannot disable yourself",
          body.role === "user" ? "role" : "enabled"
        )
      }
      yield* checkGroupsExist(body.groups)
      const users = yield* Users
      if (body.role !== undefined) yield* users.setRole(user.id, body.role)
      if (body.enabled !== undefined) yield* users.setEnabled(user.id, body.enabled)
      if (body.groups !== undefined) yield* users.setGroups(user.id, body.groups)
      const limits = userLimits(body)
      if (limits !== undefined) yield* users.setLimits(user.id, limits)
      if (body.password !== undefined) {
        yield* users.setPassword(user.id, Redacted.make(body.password))
        yield* (yield* Sessions).removeAllOf(user.id)
      }
      if (body.enabled === false) yield* (yield* Sessions).removeAllOf(user.id)
      yield* invalidate("users", [user.id])
      return json(yield* adminUserView((yield* users.findById(user.id))!))
    })),

  route(E.adminAdjustBalance, ({ principal, params, body }) =>
    Effect.gen(function*() {
      const user = yield* me(params.id!)
      const nanos = (yield* parseNanos(body.amount, "amount"))!
      const accounts = yield* Accounts
      const balance = yield* accounts.adjust(user.id, nanos, body.reason, principal.userId).pipe(
        Effect.catchTag("InvalidInput", (error) =>
          Effect.fail(
            ApiError.invalid(
              nanos < 0n && /below|negative|insufficient/i.test(error.message)
                ? `amount: the balance is ${Money.formatUsd(user.balanceNanos)}; it cannot go below zero`
                : `amount: ${error.message}`,
              "amount"
            )
          ))
      )
      return json({ balance: Money.formatUsd(balance) } satisfies C.BalanceResult)
    })),

  route(E.adminUserKeys, ({ params }) =>
    Effect.gen(function*() {
      const user = yield* me(params.id!)
      const list = yield* (yield* Keys).list(user.id)
      return json({ data: list.filter((k) => !k.revoked).map(keyView) } satisfies C.KeyList)
    })),

  route(E.adminUpdateKey, ({ params, body }) =>
    Effect.gen(function*() {
      const key = yield* (yield* Keys).findById(params.id!)
      if (key === undefined || key.revoked) return yield* ApiError.notFound(`No API key with id '${params.id}'.`)
      return json(yield* updateKeyWith(key, body, false))
    })),

  route(E.adminUserUsage, ({ params, query }) =>
    Effect.gen(function*() {
      const user = yield* me(params.id!)
      return json(yield* Queries.usagePage({ ...usageFilter(query), userId: user.id }, pageLimit(query), query.cursor, { detail: true }))
    })),

  route(E.adminUserLedger, ({ params, query }) =>
    Effect.gen(function*() {
      const user = yield* me(params.id!)
      return json(yield* Queries.ledgerPage(user.id, pageLimit(query), query.cursor))
    })),

  // ---- admin: groups -----------------------------------------------------

  route(E.adminListGroups, () => Effect.map(CatalogAdmin.listGroups, (data) => json({ data } satisfies C.GroupList))),
  route(E.adminCreateGroup, ({ body }) =>
    Effect.gen(function*() {
      const group = yield* CatalogAdmin.createGroup(body)
      yield* invalidate("catalog")
      return json(group, { status: 201 })
    })),
  route(E.adminUpdateGroup, ({ params, body }) =>
    Effect.gen(function*() {
      const group = yield* CatalogAdmin.updateGroup(params.name!, body)
      yield* invalidate("catalog")
      yield* invalidate("users")
      return json(group)
    })),
  route(E.adminDeleteGroup, ({ params }) =>
    Effect.gen(function*() {
      yield* CatalogAdmin.deleteGroup(params.name!)
      yield* invalidate("catalog")
      return json(ok)
    })),

  // ---- admin: channels ---------------------------------------------------

  route(E.adminListChannels, () => Effect.map(CatalogAdmin.listChannels, (data) => json({ data } satisfies C.ChannelList))),
  route(E.adminGetChannel, ({ params }) => Effect.map(CatalogAdmin.getChannel(params.id!), json)),
  route(E.adminCreateChannel, ({ body }) =>
    Effect.gen(function*() {
      const channel = yield* CatalogAdmin.createChannel(body)
      yield* invalidate("catalog")
      return json(channel, { status: 201 })
    })),
  route(E.adminUpdateChannel, ({ params, body }) =>
    Effect.gen(function*() {
      const channel = yield* CatalogAdmin.updateChannel(params.id!, body)
      yield* invalidate("catalog")
      return json(channel)
    })),
  route(E.adminDeleteChannel, ({ params }) =>
    Effect.gen(function*() {
      yield* CatalogAdmin.deleteChannel(params.id!)
      yield* invalidate("catalog")
      return json(ok)
    })),
  route(E.adminTestChannel, ({ params, body }) =>
    Effect.gen(function*() {
      const channel = yield* CatalogAdmin.channelForProbe(params.id!)
      const model = body.model ?? channel.models[0]
      if (model === undefined) return yield* ApiError.invalid("model: the channel lists no models to test", "model")
      if (!channel.models.includes(model)) {
        return yield* ApiError.invalid(`model: '${model}' is not one of the channel's models (${channel.models.join(", ")})`, "model")
      }
      const result = yield* (yield* ChannelProbe.ChannelProbe).probe(channel, model)
      return json({ ok: result.ok, latencyMs: result.latencyMs, status: result.status, message: result.message, model } satisfies C.TestChannelResult)
    })),
  route(E.adminResetChannel, ({ params }) => Effect.map(CatalogAdmin.resetChannel(params.id!), json)),

  // ---- admin: models -----------------------------------------------------

  route(E.adminListModels, () => Effect.map(CatalogAdmin.listModels, (data) => json({ data } satisfies C.ModelList))),
  route(E.adminUpsertModel, ({ body }) =>
    Effect.gen(function*() {
      const model = yield* CatalogAdmin.upsertModel(body)
      yield* invalidate("catalog")
      return json(model)
    })),
  route(E.adminDeleteModel, ({ params }) =>
    Effect.gen(function*() {
      yield* CatalogAdmin.deleteModel(params.id!)
      yield* invalidate("catalog")
      return json(ok)
    })),

  // ---- admin: codes ------------------------------------------------------

  route(E.adminGenerateCodes, ({ principal, body }) =>
    Effect.gen(function*() {
      const nanos = (yield* parseNanos(body.amount, "amount"))!
      const batch = yield* (yield* Redemption).generate(body.count, nanos, principal.userId)
      return json({ batch: batch.batch, amount: Money.formatUsd(nanos), codes: batch.codes } satisfies C.GeneratedCodes, {
        status: 201
      })
    })),
  route(E.adminListCodes, ({ query }) =>
    Effect.map(Queries.codesPage({ batch: query.batch, status: query.status }, pageLimit(query), query.cursor), json)),
  route(E.adminCodesCsv, ({ query }) =>
    Effect.map(Queries.codesCsv({ batch: query.batch, status: query.status }), (text) => csv(text, "codes.csv"))),

  // ---- admin: usage ------------------------------------------------------

  route(E.adminUsageDaily, ({ query }) =>
    Effect.gen(function*() {
      const now = yield* nowMs
      const filter = { ...usageFilter(query), userId: query.userId }
      const scoped = { ...filter, from: filter.from ?? Queries.startOfDay(now) - 29 * 86_400_000 }
      const daily = yield* Queries.daily(scoped)
      const users = yield* Queries.perUser(scoped)
      const total = yield* Queries.totals(scoped)
      return json({
        daily,
        users,
        totalCost: Money.formatUsd(total.costNanos),
        totalRequests: total.requests
      } satisfies C.AdminOverview)
    })),
  route(E.adminUsage, ({ query }) =>
    Effect.map(
      Queries.usagePage({ ...usageFilter(query), userId: query.userId }, pageLimit(query), query.cursor, { detail: true }),
      json
    ))
]

function usageFilter(query: C.UsageQuery): Queries.UsageFilter {
  return { keyId: query.keyId, model: query.model, from: query.from, to: query.to }
}

// ---------------------------------------------------------------------------
// handle
// ---------------------------------------------------------------------------

const render = (endpoint: E.Endpoint, out: Out) => {
  if (out._tag === "csv") {
    return Effect.succeed(
      HttpServerResponse.text(out.text, {
        contentType: "text/csv; charset=utf-8",
        headers: { "content-disposition": `attachment; filename="${out.filename}"`, "cache-control": "no-store" }
      })
    )
  }
  const encode = endpoint.response === "csv"
    ? Effect.succeed(out.value)
    : Schema.encodeUnknownEffect(endpoint.response as Schema.Codec<unknown, unknown>)(out.value).pipe(
      Effect.catch((error) => Effect.andThen(Effect.logError("admin-api response does not match its schema", error), Effect.fail(ApiError.internal())))
    )
  return Effect.map(encode, (body) => {
    const headers: Record<string, string> = { "cache-control": "no-store" }
    if (out.cookie !== undefined) headers["set-cookie"] = out.cookie
    return HttpServerResponse.text(JSON.stringify(body), { status: out.status ?? 200, contentType: "application/json", headers })
  })
}

const pathOf = (url: string): string => {
  const question = url.indexOf("?")
  const path = question === -1 ? url : url.slice(0, question)
  return path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path
}

const dispatch = Effect.fnUntraced(function*(request: HttpServerRequest) {
  const path = pathOf(request.url)
  const method = request.method === "HEAD" ? "GET" : request.method
  if (path === E.login.path || path === E.logout.path) {
    if (method !== "POST") return yield* ApiError.methodNotAllowed(request.method, path, ["POST"])
    if (path === E.logout.path) return yield* Effect.flatMap(logout(request), (out) => render(E.logout, out))
    const body = (yield* decodeBody(E.login.body, request)) as C.LoginRequest
    return yield* Effect.flatMap(login({ request, body }), (out) => render(E.login, out))
  }
  const candidates: Array<{ readonly route: Route; readonly params: Record<string, string> }> = []
  for (const r of routes) {
    const params = E.matchPath(r.endpoint.path, path)
    if (params !== undefined) candidates.push({ route: r, params })
  }
  if (candidates.length === 0) return yield* ApiError.noRoute(request.method, path)
  const found = candidates.find((c) => c.route.endpoint.method === method)
  if (found === undefined) {
    return yield* ApiError.methodNotAllowed(request.method, path, [...new Set(candidates.map((c) => c.route.endpoint.method))])
  }
  const { route: matched, params } = found
  const principal = yield* authenticate(request)
  if (matched.endpoint.admin && principal.role !== "admin") {
    return yield* ApiError.forbidden("This endpoint is for administrators only.", "admin_only")
  }
  yield* requireCsrf(request, principal)
  const query = yield* decodeQuery(matched.endpoint.query, request)
  const body = yield* decodeBody(matched.endpoint.body, request)
  const out = yield* matched.run({ request, principal, params, query, body })
  return yield* render(matched.endpoint, out)
})

/**
 * Answers one request under `/api/` (except `/api/me`). Never fails: every
 * error becomes a JSON error response with its status.
 *
 * @category handlers
 */
export const handle = (request: HttpServerRequest): Effect.Effect<HttpServerResponse.HttpServerResponse, never, Requirements> =>
  dispatch(request).pipe(
    Effect.catch((error) => Effect.map(ApiError.fromUnknown(error), ApiError.toResponse)),
    Effect.catchDefect((defect) =>
      Effect.as(Effect.logError("admin-api defect", defect), ApiError.toResponse(ApiError.internal()))
    )
  )

/**
 * Whether a path belongs to this API (everything under `/api/` except the
 * gateway's own `/api/me`).
 *
 * @category handlers
 */
export const owns = (path: string): boolean => path.startsWith("/api/") && path !== "/api/me"

/**
 * This package's own services for `handle`: `Sessions` (in SQL, lasting
 * `sessionTtlMs`, default 7 days) and the in-memory `LoginLimiter` (default 5
 * failures per 5 minutes). node-http merges it with the store's layer and the
 * core ports it implements itself (`Catalog`, `Invalidation`, `ChannelProbe`).
 *
 * @category layers
 */
export const layer = (options: {
  readonly sessionTtlMs?: number | undefined
  readonly loginLimits?: Partial<LimiterOptions> | undefined
} = {}): Layer.Layer<Sessions | LoginLimiter, never, SqlClient.SqlClient> =>
  Layer.merge(Sessions.layer(options.sessionTtlMs), LoginLimiter.layer(options.loginLimits))
