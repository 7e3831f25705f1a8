/**
 * The endpoint table of the management API: method, path template, and the
 * Schemas of the query, body and response of each endpoint. The server routes
 * and decodes with it; the console's client builds URLs and decodes answers
 * with it, so a renamed field or path breaks the type check on both sides.
 *
 * Browser-safe: depends on `effect` only.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import * as C from "./Contract.ts"

/**
 * One endpoint. `path` may hold `:name` parameters; `body` is present for
 * endpoints that take a JSON body, `query` for those with query filters, and
 * `response` is `"csv"` for CSV downloads.
 *
 * @category models
 */
export interface Endpoint<
  Method extends "GET" | "POST" | "PATCH" | "DELETE" = "GET" | "POST" | "PATCH" | "DELETE",
  Query extends Schema.Top | undefined = Schema.Top | undefined,
  Body extends Schema.Top | undefined = Schema.Top | undefined,
  Response extends Schema.Top | "csv" = Schema.Top | "csv"
> {
  readonly method: Method
  readonly path: string
  readonly query: Query
  readonly body: Body
  readonly response: Response
  /** Only admins may call it. */
  readonly admin: boolean
  /** Callable without being signed in. */
  readonly public: boolean
}

const make = <
  Method extends "GET" | "POST" | "PATCH" | "DELETE",
  Response extends Schema.Top | "csv",
  Query extends Schema.Top | undefined = undefined,
  Body extends Schema.Top | undefined = undefined
>(
  method: Method,
  path: string,
  response: Response,
  options: { readonly query?: Query; readonly body?: Body; readonly admin?: boolean; readonly public?: boolean } = {}
): Endpoint<Method, Query, Body, Response> => ({
  method,
  path,
  query: options.query as Query,
  body: options.body as Body,
  response,
  admin: options.admin ?? path.startsWith("/api/admin/"),
  public: options.public ?? false
})

/** Sign in with user name and password; sets the `mg_session` cookie. @category auth */
export const login = make("POST", "/api/auth/login", C.SessionInfo, { body: C.LoginRequest, public: true })
/** Sign out: ends the session and clears the cookie. @category auth */
export const logout = make("POST", "/api/auth/logout", C.Ok, { public: true })
/** The current session (401 when not signed in). @category auth */
export const session = make("GET", "/api/auth/session", C.SessionInfo)
/** Change one's own password (ends one's other sessions). @category auth */
export const changePassword = make("POST", "/api/auth/password", C.Ok, { body: C.ChangePasswordRequest })

/** Balance, spend today and this month, and 30 days of spend per model. @category user */
export const dashboard = make("GET", "/api/dashboard", C.Dashboard)
/** One's own keys. @category user */
export const listKeys = make("GET", "/api/keys", C.KeyList)
/** Create a key; the answer carries the secret, shown once. @category user */
export const createKey = make("POST", "/api/keys", C.CreatedKey, { body: C.CreateKeyRequest })
/** Rename, enable/disable, re-permission, re-cap a key. @category user */
export const updateKey = make("PATCH", "/api/keys/:id", C.ApiKey, { body: C.UpdateKeyRequest })
/** Delete a key for good. @category user */
export const deleteKey = make("DELETE", "/api/keys/:id", C.Ok)
/** The models one's groups reach, with prices after each group's ratio. @category user */
export const myModels = make("GET", "/api/models", C.MyModels)
/** One's usage records, newest first. @category user */
export const usage = make("GET", "/api/usage", C.UsagePage, { query: C.UsageQuery })
/** One's usage records as CSV (same filters; no paging, at most 100 000 rows). @category user */
export const usageCsv = make("GET", "/api/usage.csv", "csv", { query: C.UsageQuery })
/** One's spend and tokens per day and model. @category user */
export const usageDaily = make("GET", "/api/usage/daily", C.DailyUsage, { query: C.UsageQuery })
/** One's ledger, newest first. @category user */
export const ledger = make("GET", "/api/ledger", C.LedgerPage, { query: C.PageQuery })
/** Redeem a code onto one's balance. @category user */
export const redeem = make("POST", "/api/redeem", C.RedeemResult, { body: C.RedeemRequest })
/** This server's addresses, for the "Connect a client" page. @category user */
export const connect = make("GET", "/api/connect", C.ConnectInfo)

/** All users. @category admin */
export const adminListUsers = make("GET", "/api/admin/users", C.UserList)
/** Create a user. @category admin */
export const adminCreateUser = make("POST", "/api/admin/users", C.AdminUser, { body: C.CreateUserRequest })
/** One user. @category admin */
export const adminGetUser = make("GET", "/api/admin/users/:id", C.AdminUser)
/** Change a user's role, groups, password; enable or disable them. @category admin */
export const adminUpdateUser = make("PATCH", "/api/admin/users/:id", C.AdminUser, { body: C.UpdateUserRequest })
/** Credit or debit a user's balance, with a reason in the ledger. @category admin */
export const adminAdjustBalance = make("POST", "/api/admin/users/:id/adjust", C.BalanceResult, { body: C.AdjustBalanceRequest })
/** A user's keys. @category admin */
export const adminUserKeys = make("GET", "/api/admin/users/:id/keys", C.KeyList)
/** `PATCH /api/admin/keys/:id`: an admin edits any user's key (same fields as `PATCH /api/keys/:id`). @category admin */
export const adminUpdateKey = make("PATCH", "/api/admin/keys/:id", C.ApiKey, { body: C.UpdateKeyRequest })
/** A user's usage records. @category admin */
export const adminUserUsage = make("GET", "/api/admin/users/:id/usage", C.UsagePage, { query: C.UsageQuery })
/** A user's ledger. @category admin */
export const adminUserLedger = make("GET", "/api/admin/users/:id/ledger", C.LedgerPage, { query: C.PageQuery })

/** All groups. @category admin */
export const adminListGroups = make("GET", "/api/admin/groups", C.GroupList)
/** Create a group. @category admin */
export const adminCreateGroup = make("POST", "/api/admin/groups", C.AdminGroup, { body: C.CreateGroupRequest })
/** Change a group's ratio, limits, selectability or assigned users. @category admin */
export const adminUpdateGroup = make("PATCH", "/api/admin/groups/:name", C.AdminGroup, { body: C.UpdateGroupRequest })
/** Delete a group no key uses. @category admin */
export const adminDeleteGroup = make("DELETE", "/api/admin/groups/:name", C.Ok)

/** All channels (upstream keys never included). @category admin */
export const adminListChannels = make("GET", "/api/admin/channels", C.ChannelList)
/** Create a channel. @category admin */
export const adminCreateChannel = make("POST", "/api/admin/channels", C.AdminChannel, { body: C.CreateChannelRequest })
/** One channel. @category admin */
export const adminGetChannel = make("GET", "/api/admin/channels/:id", C.AdminChannel)
/** Change a channel. @category admin */
export const adminUpdateChannel = make("PATCH", "/api/admin/channels/:id", C.AdminChannel, { body: C.UpdateChannelRequest })
/** Delete a channel. @category admin */
export const adminDeleteChannel = make("DELETE", "/api/admin/channels/:id", C.Ok)
/** Send one real request through a channel and report latency or the upstream's error. @category admin */
export const adminTestChannel = make("POST", "/api/admin/channels/:id/test", C.TestChannelResult, { body: C.TestChannelRequest })
/** Close the channel's circuit breakers and re-enable its disabled keys (after fixing them). @category admin */
export const adminResetChannel = make("POST", "/api/admin/channels/:id/reset", C.AdminChannel)

/** All models with list prices. @category admin */
export const adminListModels = make("GET", "/api/admin/models", C.ModelList)
/** Create or replace a model and its prices. @category admin */
export const adminUpsertModel = make("POST", "/api/admin/models", C.AdminModel, { body: C.UpsertModelRequest })
/** Delete a model. @category admin */
export const adminDeleteModel = make("DELETE", "/api/admin/models/:id", C.Ok)

/** Generate a batch of redemption codes (returned in full only here). @category admin */
export const adminGenerateCodes = make("POST", "/api/admin/codes", C.GeneratedCodes, { body: C.GenerateCodesRequest })
/** Codes, newest first. @category admin */
export const adminListCodes = make("GET", "/api/admin/codes", C.CodePage, { query: C.CodesQuery })
/** Codes as CSV (prefixes only; same filters). @category admin */
export const adminCodesCsv = make("GET", "/api/admin/codes.csv", "csv", { query: C.CodesQuery })

/** Usage across all users: per day and model, and totals per user. @category admin */
export const adminUsageDaily = make("GET", "/api/admin/usage/daily", C.AdminOverview, { query: C.AdminUsageQuery })
/** Usage records across all users. @category admin */
export const adminUsage = make("GET", "/api/admin/usage", C.UsagePage, { query: C.AdminUsageQuery })

/**
 * Fills a path template: `fill("/api/keys/:id", { id: "k 1" })` is
 * `/api/keys/k%201`. A missing parameter throws, since it is a programming error.
 *
 * @category paths
 */
export const fill = (path: string, params: Readonly<Record<string, string>> = {}): string =>
  path.replace(/:([A-Za-z]+)/g, (_, name: string) => {
    const value = params[name]
    if (value === undefined) throw new Error(`Missing path parameter '${name}' for ${path}`)
    return encodeURIComponent(value)
  })

/**
 * Matches a concrete path against a template, returning its parameters or
 * `undefined`.
 *
 * @category paths
 */
export const matchPath = (template: string, path: string): Record<string, string> | undefined => {
  const want = template.split("/")
  const got = path.split("/")
  if (want.length !== got.length) return undefined
  const params: Record<string, string> = {}
  for (let i = 0; i < want.length; i++) {
    const segment = want[i]!
    const actual = got[i]!
    if (segment.startsWith(":")) {
      if (actual.length === 0) return undefined
      try {
        params[segment.slice(1)] = decodeURIComponent(actual)
      } catch {
        return undefined
      }
    } else if (segment !== actual) return undefined
  }
  return params
}
