/**
 * The management API's request and response Schemas, for every endpoint under
 * `/api/` (`Api.ts` puts them together into the endpoints). The server decodes
 * requests and encodes responses with these Schemas; the console decodes
 * responses and validates its forms with the very same ones, so no shape is
 * written twice.
 *
 * Browser-safe: depends on `effect` (and core's `Domain`) only, no Node built-ins.
 *
 * Wire conventions:
 *
 * - field names are camelCase;
 * - money is an exact decimal USD string (`"12.50"`, `"0.000125"`), never a float;
 * - times are epoch milliseconds (numbers); days are `YYYY-MM-DD` (UTC);
 * - lists are `{ data, nextCursor }`, paged with `?limit=&cursor=`;
 * - errors are `{"error":{"message","type","param","code"}}` (the OpenAI envelope),
 *   with `param` naming the offending field (`models[2]`, `amount`).
 *
 * @since 0.1.0
 */
import * as Domain from "@modelgate/core/Domain"
import { Schema } from "effect"
import * as ApiError from "./ApiError.ts"

// ---------------------------------------------------------------------------
// Scalars
// ---------------------------------------------------------------------------

const usdPattern = /^-?\d{1,10}(\.\d{1,9})?$/

/**
 * An exact USD amount as a decimal string, at most 9 fractional digits
 * (nano-dollars): `"10"`, `"0.15"`, `"-3.000000001"`.
 *
 * @category scalars
 */
export const Usd = Schema.String.check(
  Schema.isPattern(usdPattern, {
    expected: "a USD amount such as \"10\" or \"0.15\"",
    message: "Enter an amount in USD, like 10 or 0.15 (at most 9 decimal places)"
  })
)
export type Usd = typeof Usd.Type

/**
 * A non-negative USD amount (caps, prices, code values).
 *
 * @category scalars
 */
export const NonNegativeUsd = Schema.String.check(
  Schema.isPattern(/^\d{1,10}(\.\d{1,9})?$/, {
    expected: "a non-negative USD amount such as \"10\" or \"0.15\"",
    message: "Enter a non-negative amount in USD, like 10 or 0.15 (at most 9 decimal places)"
  })
)
export type NonNegativeUsd = typeof NonNegativeUsd.Type

/**
 * A strictly positive USD amount.
 *
 * @category scalars
 */
export const PositiveUsd = NonNegativeUsd.check(
  Schema.makeFilter((s: string) => /[1-9]/.test(s), { message: "The amount must be greater than 0" })
)
export type PositiveUsd = typeof PositiveUsd.Type

/** Epoch milliseconds. @category scalars */
export const EpochMs = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))
export type EpochMs = typeof EpochMs.Type

/** A UTC calendar day, `YYYY-MM-DD`. @category scalars */
export const Day = Schema.String.check(
  Schema.isPattern(/^\d{4}-\d{2}-\d{2}$/, { expected: "a day as YYYY-MM-DD", message: "Expected a day as YYYY-MM-DD" })
)
export type Day = typeof Day.Type

/** A display name for a key, channel or group: 1 to 64 characters, no surrounding spaces. @category scalars */
export const Name = Schema.String.check(
  Schema.isMinLength(1, { message: "Required" }),
  Schema.isMaxLength(64, { message: "At most 64 characters" }),
  Schema.isTrimmed({ message: "Remove the spaces at the start and end" })
)
export type Name = typeof Name.Type

// oxlint-disable-next-line no-control-regex -- control characters are what it looks for
const hasControl = (name: string) => /[\u0000-\u001f\u007f-\u009f]/.test(name)

/**
 * A model name as a channel or a key lists it: not empty, no control
 * characters (NUL, line breaks, tabs, DEL), which calls are refused for too.
 *
 * @category scalars
 */
export const ModelNameText = Schema.String.check(
  Schema.isMinLength(1, { message: "Required" }),
  // oxlint-disable-next-line no-control-regex -- control characters are what it looks for
  Schema.isPattern(/^[^\u0000-\u001f\u007f-\u009f]*$/, {
    expected: "a model name without control characters",
    message: "A model name may not contain control characters (NUL, line breaks, tabs, DEL)"
  })
)

/** A user name: letters, digits, `.`, `_`, `@`, `-`; 1 to 64 characters, starting with a letter or digit. @category scalars */
export const UserName = Schema.String.check(
  Schema.isPattern(/^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/, {
    expected: "a user name",
    message: "1-64 letters, digits, '.', '_', '@' or '-', starting with a letter or digit"
  })
)
export type UserName = typeof UserName.Type

/** A new password: 8 to 256 characters. @category scalars */
export const NewPassword = Schema.String.check(
  Schema.isMinLength(8, { message: "At least 8 characters" }),
  Schema.isMaxLength(256, { message: "At most 256 characters" })
)
export type NewPassword = typeof NewPassword.Type

/** A price ratio as a decimal string with at most 6 fractional digits (`"1"`, `"0.8"`). @category scalars */
export const Ratio = Schema.String.check(
  Schema.isPattern(/^\d{1,6}(\.\d{1,6})?$/, {
    expected: "a ratio such as \"1\" or \"0.8\"",
    message: "Enter a ratio like 1 or 0.8 (at most 6 decimal places)"
  })
)
export type Ratio = typeof Ratio.Type

/** A positive whole number limit, or null for none. @category scalars */
export const LimitValue = Schema.NullOr(
  Schema.Int.check(Schema.isGreaterThan(0, { message: "Must be a whole number above 0, or empty for no limit" }))
)
export type LimitValue = typeof LimitValue.Type

/** User roles. @category scalars */
export const Role = Schema.Literals(["user", "admin"])
export type Role = typeof Role.Type

/** Upstream channel types. @category scalars */
export const ChannelType = Domain.ChannelType
export type ChannelType = typeof ChannelType.Type

// ---------------------------------------------------------------------------
// Envelopes
// ---------------------------------------------------------------------------

/** The error body, `{"error":{"message","type","param","code"}}` (see `ApiError`). @category envelopes */
export const ErrorBody = ApiError.ErrorBody
export type ErrorBody = ApiError.ErrorBody

/** A page of results; `nextCursor` is null on the last page. @category envelopes */
export const Page = <S extends Schema.Top>(item: S) =>
  Schema.Struct({ data: Schema.Array(item), nextCursor: Schema.NullOr(Schema.String) })

/** A whole list (no paging). @category envelopes */
export const List = <S extends Schema.Top>(item: S) => Schema.Struct({ data: Schema.Array(item) })

/** The answer of an action with nothing else to say. @category envelopes */
export const Ok = Schema.Struct({ ok: Schema.Literal(true) })
export type Ok = typeof Ok.Type

/** Paging query: `limit` (1..500, default 50) and an opaque `cursor`. @category envelopes */
export const PageQuery = Schema.Struct({
  limit: Schema.optional(Schema.NumberFromString.check(Schema.isInt(), Schema.isBetween({ minimum: 1, maximum: 500 }))),
  cursor: Schema.optional(Schema.String)
})
export type PageQuery = typeof PageQuery.Type

// ---------------------------------------------------------------------------
// Auth
// ---------------------------------------------------------------------------

/** `POST /api/auth/login`. @category auth */
export const LoginRequest = Schema.Struct({
  username: Schema.String.check(Schema.isMinLength(1, { message: "Enter your user name" })),
  password: Schema.String.check(Schema.isMinLength(1, { message: "Enter your password" }))
})
export type LoginRequest = typeof LoginRequest.Type

/** The signed-in user. @category auth */
export const Me = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  role: Role,
  balance: Usd
})
export type Me = typeof Me.Type

/**
 * A session: who is signed in, the CSRF token to send as `x-csrf-token` on
 * every state-changing request, and when the session ends. (`csrfToken` is
 * null when the caller authenticated with an API key.)
 *
 * @category auth
 */
export const SessionInfo = Schema.Struct({
  user: Me,
  csrfToken: Schema.NullOr(Schema.String),
  expiresAt: Schema.NullOr(EpochMs)
})
export type SessionInfo = typeof SessionInfo.Type

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

/** One message of a playground conversation. @category playground */
export const PlaygroundMessage = Schema.Struct({
  role: Schema.Literals(["user", "assistant"]),
  content: Schema.String.check(Schema.isMinLength(1, { message: "a message cannot be empty" }))
})
export type PlaygroundMessage = typeof PlaygroundMessage.Type

/**
 * `POST /api/playground/chat`: one turn of the console's playground, run
 * through the gateway's engine as the caller's own key `keyId` (its
 * permissions, limits, caps and balance), streamed back as OpenAI chat
 * completion chunks (server-sent events) with the call's `x-request-id`.
 *
 * @category playground
 */
export const PlaygroundChatRequest = Schema.Struct({
  keyId: Schema.String.check(Schema.isMinLength(1, { message: "Pick a key" })),
  model: Schema.String.check(Schema.isMinLength(1, { message: "Pick a model" })),
  system: Schema.optional(Schema.String),
  messages: Schema.Array(PlaygroundMessage).check(Schema.isMinLength(1, { message: "Write a message" })),
  temperature: Schema.optional(Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 2 }))),
  maxTokens: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 1_000_000 }))),
  topP: Schema.optional(Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 1 })))
})
export type PlaygroundChatRequest = typeof PlaygroundChatRequest.Type

/**
 * `GET /api/me`: who is calling and what they may spend, in the snake_case
 * shape the gateway has always answered with. With an API key: the key, its
 * group and the models it may call; with a console session: no key or group,
 * and the models of every group the user may pick.
 *
 * @category auth
 */
export const GatewayMe = Schema.Struct({
  user: Schema.String,
  role: Role,
  group: Schema.NullOr(Schema.String),
  key: Schema.NullOr(Schema.Struct({
    id: Schema.String,
    name: Schema.String,
    prefix: Schema.String,
    /** ISO 8601, or null for never. */
    expires_at: Schema.NullOr(Schema.String)
  })),
  models: Schema.Array(Schema.String),
  balance_usd: Usd,
  /**
   * Present (true) when the database could not be read in time: the balance
   * is as this node last read it, less what its calls spent since, so it may
   * be stale; `balance_read_at` (ISO 8601) says when it was read.
   */
  balance_stale: Schema.optionalKey(Schema.Boolean),
  balance_read_at: Schema.optionalKey(Schema.String)
})
export type GatewayMe = typeof GatewayMe.Type

/** `POST /api/auth/password`. @category auth */
export const ChangePasswordRequest = Schema.Struct({
  currentPassword: Schema.String.check(Schema.isMinLength(1, { message: "Enter your current password" })),
  newPassword: NewPassword
})
export type ChangePasswordRequest = typeof ChangePasswordRequest.Type

// ---------------------------------------------------------------------------
// Dashboard and usage
// ---------------------------------------------------------------------------

/** Spend and tokens of one model on one day. @category usage */
export const DailyPoint = Schema.Struct({
  day: Day,
  model: Schema.String,
  requests: Schema.Int,
  promptTokens: Schema.Int,
  completionTokens: Schema.Int,
  cost: Usd
})
export type DailyPoint = typeof DailyPoint.Type

/** `GET /api/dashboard`. @category usage */
export const Dashboard = Schema.Struct({
  balance: Usd,
  spentToday: Usd,
  spentThisMonth: Usd,
  requestsToday: Schema.Int,
  tokensToday: Schema.Int,
  activeKeys: Schema.Int,
  /** The last 30 days, per day and model. */
  daily: Schema.Array(DailyPoint)
})
export type Dashboard = typeof Dashboard.Type

/** One upstream attempt of a call (admins only): channel, key hint, outcome, duration. @category usage */
export const UsageAttempt = Schema.Struct({
  channel: Schema.String,
  /** The upstream key's last 4 characters, as `…abcd`. */
  keyHint: Schema.String,
  /** The upstream's HTTP status, when it answered. */
  status: Schema.NullOr(Schema.Int),
  /** What went wrong (`UpstreamTimeout`, `UpstreamUnavailable`, `ClientClosed`, ...), null when the attempt served the call. */
  errorCode: Schema.NullOr(Schema.String),
  /** What went wrong, in the gateway's words with the upstream's (secrets redacted); null when it served the call or was not kept. */
  errorMessage: Schema.NullOr(Schema.String),
  durationMs: Schema.Int
})

/** The dialects a client speaks to the gateway, and channels speak to it (core's). @category usage */
export const Dialect = Domain.Dialect
export type Dialect = typeof Dialect.Type
export type UsageAttempt = typeof UsageAttempt.Type

/**
 * One call, as billed and logged (the request log): every call made with a
 * valid key, those refused before any upstream was tried included (no
 * channel, no attempts, no cost, and the message their caller got).
 *
 * @category usage
 */
export const UsageItem = Schema.Struct({
  id: Schema.String,
  createdAt: EpochMs,
  requestId: Schema.String,
  userId: Schema.String,
  userName: Schema.String,
  keyId: Schema.String,
  keyName: Schema.NullOr(Schema.String),
  /** The model as the catalog names it (as asked, for a call refused before its model was known). */
  model: Schema.String,
  /** The dialect the client spoke. */
  dialect: Dialect,
  stream: Schema.Boolean,
  promptTokens: Schema.Int,
  completionTokens: Schema.Int,
  /** Of the prompt, tokens read from the upstream's cache. */
  cachedTokens: Schema.Int,
  /** Prompt tokens written to the provider's cache (part of `promptTokens`, billed at the model's cacheWrite price). */
  cacheWriteTokens: Schema.optionalKey(Schema.Int),
  /** Of the completion, tokens the model spent reasoning (when the upstream said). */
  reasoningTokens: Schema.Int,
  /** The token counts are the upstream's own (false: counted by the gateway). */
  usageReported: Schema.Boolean,
  cost: Usd,
  latencyMs: Schema.Int,
  /** Time to the first byte of the answer, null when none came. */
  ttfbMs: Schema.NullOr(Schema.Int),
  status: Schema.Int,
  errorCode: Schema.NullOr(Schema.String),
  /** What a translation left out of the request by decision (a Responses client's hosted tools on another dialect's model), or null. */
  note: Schema.optionalKey(Schema.NullOr(Schema.String)),
  /** Admin views only: the channel that served (or last tried) the call, time to first byte, and every attempt. */
  /** What the caller was told went wrong; null when nothing did (or for calls logged before messages were kept). */
  errorMessage: Schema.NullOr(Schema.String),
  /** Admin views only: the channel that served (or last tried) the call, its name for the model and dialect, and every attempt. */
  channel: Schema.optionalKey(Schema.String),
  upstreamModel: Schema.optionalKey(Schema.String),
  upstreamDialect: Schema.optionalKey(Domain.WireDialect),
  attempts: Schema.optionalKey(Schema.Int),
  attemptLog: Schema.optionalKey(Schema.Array(UsageAttempt))
})
export type UsageItem = typeof UsageItem.Type

/** Which calls a status filter keeps: succeeded (below 400), failed (400 and above), 4xx, 5xx. @category usage */
export const StatusClass = Schema.Literals(["ok", "error", "4xx", "5xx"])
export type StatusClass = typeof StatusClass.Type

/** `GET /api/usage`, `/api/usage.csv` and `/api/usage/daily` filters (query strings). @category usage */
export const UsageQuery = Schema.Struct({
  ...PageQuery.fields,
  keyId: Schema.optional(Schema.String),
  model: Schema.optional(Schema.String),
  /** `ok`, `error`, `4xx` or `5xx`. */
  status: Schema.optional(StatusClass),
  /** An error code (`RateLimited`, `UpstreamTimeout`, ...). */
  errorCode: Schema.optional(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(64))),
  /** One call, by the `x-request-id` its caller got (spaces around it are ignored). */
  requestId: Schema.optional(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(200))),
  /** Inclusive lower bound, epoch ms. */
  from: Schema.optional(Schema.NumberFromString.check(Schema.isInt(), Schema.isGreaterThanOrEqualTo(0))),
  /** Exclusive upper bound, epoch ms. */
  to: Schema.optional(Schema.NumberFromString.check(Schema.isInt(), Schema.isGreaterThanOrEqualTo(0)))
})
export type UsageQuery = typeof UsageQuery.Type

/** Admin usage filters add a user and a channel. @category usage */
export const AdminUsageQuery = Schema.Struct({
  ...UsageQuery.fields,
  userId: Schema.optional(Schema.String),
  /** The channel that served the call (or was tried last). */
  channel: Schema.optional(Schema.String)
})
export type AdminUsageQuery = typeof AdminUsageQuery.Type

/** `GET /api/usage`. @category usage */
export const UsagePage = Page(UsageItem)
export type UsagePage = typeof UsagePage.Type

/** `GET /api/usage/daily`. @category usage */
export const DailyUsage = List(DailyPoint)
export type DailyUsage = typeof DailyUsage.Type

/** Ledger entry kinds. @category usage */
export const LedgerKind = Schema.Literals(["topup", "redemption", "adjustment", "hold", "charge", "release"])
export type LedgerKind = typeof LedgerKind.Type

/** One change of a balance. @category usage */
export const LedgerItem = Schema.Struct({
  id: Schema.String,
  createdAt: EpochMs,
  kind: LedgerKind,
  amount: Usd,
  reason: Schema.NullOr(Schema.String),
  requestId: Schema.NullOr(Schema.String)
})
export type LedgerItem = typeof LedgerItem.Type

/** `GET /api/ledger`. @category usage */
export const LedgerPage = Page(LedgerItem)
export type LedgerPage = typeof LedgerPage.Type

/** `POST /api/redeem`. @category usage */
export const RedeemRequest = Schema.Struct({
  code: Schema.String.check(Schema.isMinLength(1, { message: "Enter a code" }), Schema.isMaxLength(128))
})
export type RedeemRequest = typeof RedeemRequest.Type

/** What a redemption credited and the balance after it. @category usage */
export const RedeemResult = Schema.Struct({ amount: Usd, balance: Usd })
export type RedeemResult = typeof RedeemResult.Type

// ---------------------------------------------------------------------------
// Keys
// ---------------------------------------------------------------------------

/** An API key as its owner sees it: never its secret. @category keys */
export const ApiKey = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  prefix: Schema.String,
  group: Schema.String,
  /** Empty: every model the group reaches. */
  models: Schema.Array(Schema.String),
  expiresAt: Schema.NullOr(EpochMs),
  enabled: Schema.Boolean,
  /** Lifetime spending cap, or null. */
  quota: Schema.NullOr(Usd),
  /** Spending cap per UTC day, or null. */
  dailyBudget: Schema.NullOr(Usd),
  /** Spending cap per UTC month, or null. */
  monthlyBudget: Schema.NullOr(Usd),
  spent: Usd,
  /** The key's own requests per minute, or null (its group's limit applies). */
  rpm: LimitValue,
  /** The key's own tokens per minute, or null (its group's limit applies). */
  tpm: LimitValue,
  /** The key's own concurrent calls, or null (its group's limit applies). */
  concurrency: LimitValue,
  lastUsedAt: Schema.NullOr(EpochMs),
  createdAt: EpochMs
})
export type ApiKey = typeof ApiKey.Type

/**
 * A key's own limits and spending caps, as requests set them. A limit may
 * only narrow the key's group's (where the group sets one, the key's must not
 * be higher); `null` removes it.
 *
 * @category keys
 */
export const keyLimitFields = {
  rpm: Schema.optionalKey(LimitValue),
  tpm: Schema.optionalKey(LimitValue),
  concurrency: Schema.optionalKey(LimitValue),
  dailyBudget: Schema.optionalKey(Schema.NullOr(NonNegativeUsd)),
  monthlyBudget: Schema.optionalKey(Schema.NullOr(NonNegativeUsd))
}

/** `POST /api/keys`. @category keys */
export const CreateKeyRequest = Schema.Struct({
  name: Name,
  /** Defaults to the user's first selectable group. */
  group: Schema.optionalKey(Schema.String),
  models: Schema.optionalKey(Schema.Array(ModelNameText)),
  expiresAt: Schema.optionalKey(Schema.NullOr(EpochMs)),
  quota: Schema.optionalKey(Schema.NullOr(NonNegativeUsd)),
  ...keyLimitFields
})
export type CreateKeyRequest = typeof CreateKeyRequest.Type

/** The new key and its secret, shown this once. @category keys */
export const CreatedKey = Schema.Struct({ key: ApiKey, secret: Schema.String })
export type CreatedKey = typeof CreatedKey.Type

/** `PATCH /api/keys/:id`: only the fields given change. @category keys */
export const UpdateKeyRequest = Schema.Struct({
  name: Schema.optionalKey(Name),
  enabled: Schema.optionalKey(Schema.Boolean),
  models: Schema.optionalKey(Schema.Array(ModelNameText)),
  expiresAt: Schema.optionalKey(Schema.NullOr(EpochMs)),
  quota: Schema.optionalKey(Schema.NullOr(NonNegativeUsd)),
  ...keyLimitFields
})
export type UpdateKeyRequest = typeof UpdateKeyRequest.Type

/** `GET /api/keys`. @category keys */
export const KeyList = List(ApiKey)
export type KeyList = typeof KeyList.Type

// ---------------------------------------------------------------------------
// Models and groups (user view)
// ---------------------------------------------------------------------------

/** Request limits; null means none. @category models */
export const Limits = Schema.Struct({ rpm: LimitValue, tpm: LimitValue, concurrency: LimitValue })
export type Limits = typeof Limits.Type

/**
 * A model's prices in USD per one million tokens (`perRequest`: USD per call),
 * after the group's ratio when shown to a user. `cacheWrite` prices prompt
 * tokens written to the provider's cache (null: the input price); answers
 * always carry it, requests may leave it out.
 *
 * @category models
 */
export const Prices = Schema.Struct({
  input: Schema.NullOr(NonNegativeUsd),
  output: Schema.NullOr(NonNegativeUsd),
  cachedInput: Schema.NullOr(NonNegativeUsd),
  cacheWrite: Schema.optionalKey(Schema.NullOr(NonNegativeUsd)),
  perRequest: Schema.NullOr(NonNegativeUsd),
  free: Schema.Boolean
})
export type Prices = typeof Prices.Type

/** A model as a user sees it in one group. @category models */
export const ModelInfo = Schema.Struct({
  id: Schema.String,
  displayName: Schema.String,
  prices: Prices,
  inputTokenLimit: Schema.Int,
  outputTokenLimit: Schema.Int,
  /**
   * What a call that does not limit its answer holds from the balance before
   * it runs, besides its prompt: the model's whole output at the group's
   * prices. A balance below this refuses such calls; setting `max_tokens`
   * lowers the hold.
   */
  holdAtMaxOutput: Usd
})
export type ModelInfo = typeof ModelInfo.Type

/** A group the user may pick, and the models it reaches. @category models */
export const GroupModels = Schema.Struct({
  name: Schema.String,
  ratio: Ratio,
  limits: Limits,
  models: Schema.Array(ModelInfo)
})
export type GroupModels = typeof GroupModels.Type

/** `GET /api/models`: per group the user may pick. @category models */
export const MyModels = Schema.Struct({ groups: Schema.Array(GroupModels) })
export type MyModels = typeof MyModels.Type

/** `GET /api/connect`: this server's addresses for client settings. @category models */
export const ConnectInfo = Schema.Struct({
  /** The gateway's public address without a trailing slash, e.g. `https://llm.example.com`. */
  baseUrl: Schema.String,
  /** For OpenAI-style apps: `{baseUrl}/v1`. */
  openaiBaseUrl: Schema.String,
  /** For Gemini clients: `{baseUrl}` with API version `v1beta`. */
  geminiBaseUrl: Schema.String,
  geminiApiVersion: Schema.Literal("v1beta"),
  /** A model the user can reach, for filled-in examples (null when none). */
  exampleModel: Schema.NullOr(Schema.String)
})
export type ConnectInfo = typeof ConnectInfo.Type

// ---------------------------------------------------------------------------
// Admin: users
// ---------------------------------------------------------------------------

/** A user as an admin sees them. @category admin */
export const AdminUser = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  role: Role,
  enabled: Schema.Boolean,
  balance: Usd,
  groups: Schema.Array(Schema.String),
  keyCount: Schema.Int,
  spentThisMonth: Usd,
  /** Requests per minute across all the user's keys, or null. */
  rpm: LimitValue,
  /** Tokens per minute across all the user's keys, or null. */
  tpm: LimitValue,
  /** Concurrent calls across all the user's keys, or null. */
  concurrency: LimitValue,
  source: Schema.Literals(["config", "console"]),
  createdAt: EpochMs
})
export type AdminUser = typeof AdminUser.Type

/** A user's rate limits, shared by all their keys (admins only); `null` removes one. @category admin */
export const userLimitFields = {
  rpm: Schema.optionalKey(LimitValue),
  tpm: Schema.optionalKey(LimitValue),
  concurrency: Schema.optionalKey(LimitValue)
}

/** `POST /api/admin/users`. @category admin */
export const CreateUserRequest = Schema.Struct({
  name: UserName,
  password: NewPassword,
  role: Schema.optionalKey(Role),
  groups: Schema.optionalKey(Schema.Array(Schema.String.check(Schema.isMinLength(1)))),
  /** An opening credit, recorded in the ledger as a top-up. */
  balance: Schema.optionalKey(NonNegativeUsd),
  ...userLimitFields
})
export type CreateUserRequest = typeof CreateUserRequest.Type

/** `PATCH /api/admin/users/:id`. @category admin */
export const UpdateUserRequest = Schema.Struct({
  role: Schema.optionalKey(Role),
  enabled: Schema.optionalKey(Schema.Boolean),
  groups: Schema.optionalKey(Schema.Array(Schema.String.check(Schema.isMinLength(1)))),
  password: Schema.optionalKey(NewPassword),
  ...userLimitFields
})
export type UpdateUserRequest = typeof UpdateUserRequest.Type

/** `POST /api/admin/users/:id/adjust`: a signed amount and why. @category admin */
export const AdjustBalanceRequest = Schema.Struct({
  amount: Usd.check(Schema.makeFilter((s: string) => /[1-9]/.test(s), { message: "The amount must not be 0" })),
  reason: Schema.String.check(
    Schema.isMinLength(1, { message: "Say why the balance changes" }),
    Schema.isMaxLength(500, { message: "At most 500 characters" })
  )
})
export type AdjustBalanceRequest = typeof AdjustBalanceRequest.Type

/** The balance after an adjustment. @category admin */
export const BalanceResult = Schema.Struct({ balance: Usd })
export type BalanceResult = typeof BalanceResult.Type

/** `GET /api/admin/users`. @category admin */
export const UserList = List(AdminUser)
export type UserList = typeof UserList.Type

// ---------------------------------------------------------------------------
// Admin: groups
// ---------------------------------------------------------------------------

/** A group as an admin edits it. @category admin */
export const AdminGroup = Schema.Struct({
  name: Schema.String,
  ratio: Ratio,
  limits: Limits,
  /** Every user may pick it for new keys (otherwise only users it is assigned to). */
  selectable: Schema.Boolean,
  /** Names of the users it is assigned to. */
  users: Schema.Array(Schema.String),
  source: Schema.Literals(["config", "console"])
})
export type AdminGroup = typeof AdminGroup.Type

/** `POST /api/admin/groups`. @category admin */
export const CreateGroupRequest = Schema.Struct({
  name: Schema.String.check(
    Schema.isPattern(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, {
      expected: "a group name",
      message: "1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
    })
  ),
  ratio: Ratio,
  limits: Schema.optionalKey(Limits),
  selectable: Schema.optionalKey(Schema.Boolean)
})
export type CreateGroupRequest = typeof CreateGroupRequest.Type

/** `PATCH /api/admin/groups/:name`. `users` replaces the assigned users (by user id). @category admin */
export const UpdateGroupRequest = Schema.Struct({
  ratio: Schema.optionalKey(Ratio),
  limits: Schema.optionalKey(Limits),
  selectable: Schema.optionalKey(Schema.Boolean),
  userIds: Schema.optionalKey(Schema.Array(Schema.String))
})
export type UpdateGroupRequest = typeof UpdateGroupRequest.Type

/** `GET /api/admin/groups`. @category admin */
export const GroupList = List(AdminGroup)
export type GroupList = typeof GroupList.Type

// ---------------------------------------------------------------------------
// Admin: channels
// ---------------------------------------------------------------------------

/** A channel's timeouts in milliseconds (docs/routing.md). @category admin */
export const ChannelTimeouts = Schema.Struct({
  connectMs: Schema.Int,
  firstByteMs: Schema.Int,
  idleMs: Schema.Int,
  totalMs: Schema.Int
})
export type ChannelTimeouts = typeof ChannelTimeouts.Type

/** A channel's circuit breaker settings (docs/routing.md). @category admin */
export const BreakerSettings = Schema.Struct({
  consecutiveFailures: Schema.Int,
  failureRate: Schema.Number,
  minimumCalls: Schema.Int,
  windowMs: Schema.Int,
  cooldownMs: Schema.Int,
  halfOpenCalls: Schema.Int
})
export type BreakerSettings = typeof BreakerSettings.Type

/** Request parameters a channel fills in (`defaults`) or forces (`overrides`), in its own wire format. @category admin */
export const ChannelParams = Schema.Struct({
  defaults: Schema.JsonObject,
  overrides: Schema.JsonObject
})
export type ChannelParams = typeof ChannelParams.Type

/** Key states (see core's `ChannelHealth`). @category admin */
export const KeyState = Schema.Literals(["healthy", "open", "half_open", "disabled"])
export type KeyState = typeof KeyState.Type

/** One upstream key's health, named by position and hint (never the key). @category admin */
export const KeyHealth = Schema.Struct({
  index: Schema.Int,
  hint: Schema.String,
  state: KeyState,
  since: Schema.NullOr(EpochMs),
  reason: Schema.NullOr(Schema.String),
  status: Schema.NullOr(Schema.Int),
  retryAt: Schema.NullOr(EpochMs),
  recentCalls: Schema.Int,
  recentFailures: Schema.Int,
  consecutiveFailures: Schema.Int,
  lastFailureAt: Schema.NullOr(EpochMs),
  lastError: Schema.NullOr(Schema.String),
  lastProbeAt: Schema.NullOr(EpochMs),
  lastProbeOk: Schema.NullOr(Schema.Boolean)
})
export type KeyHealth = typeof KeyHealth.Type

/**
 * A model kept off a channel: its upstream refused it with a 403 about the
 * model, confirmed by a probe; its other channels serve it until `until` or a
 * reset. @category admin
 */
export const RefusedModel = Schema.Struct({
  model: Schema.String,
  since: EpochMs,
  until: EpochMs,
  status: Schema.Int,
  reason: Schema.String
})
export type RefusedModel = typeof RefusedModel.Type

/**
 * A channel's health as the serving gateway process sees it: breakers and
 * models kept off are per process, disabled keys are shared. `healthy`,
 * `degraded` (some keys are not healthy, or a model is kept off), `open` (no
 * key is healthy), `disabled` (every key is disabled).
 *
 * @category admin
 */
export const ChannelHealth = Schema.Struct({
  state: Schema.Literals(["healthy", "degraded", "open", "disabled"]),
  keys: Schema.Array(KeyHealth),
  /** Models kept off the channel after the upstream refused them with a 403 about the model (core's `RefusedModel`). */
  refusedModels: Schema.Array(RefusedModel)
})
export type ChannelHealth = typeof ChannelHealth.Type

/**
 * A channel as an admin sees it: upstream keys are write-only, shown as a
 * count and their last 4 characters; header values that look like credentials
 * (authorization, cookies, names with key, token, secret or password) are
 * shown the same way.
 *
 * @category admin
 */
export const AdminChannel = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  type: ChannelType,
  baseUrl: Schema.String,
  keyCount: Schema.Int,
  keyHints: Schema.Array(Schema.String),
  models: Schema.Array(Schema.String),
  modelMap: Schema.Record(Schema.String, Schema.String),
  groups: Schema.Array(Schema.String),
  priority: Schema.Int,
  weight: Schema.Int,
  enabled: Schema.Boolean,
  /** Azure: the `api-version` (null: the default, 2024-10-21). */
  apiVersion: Schema.NullOr(Schema.String),
  headers: Schema.Record(Schema.String, Schema.String),
  timeouts: ChannelTimeouts,
  breaker: BreakerSettings,
  params: ChannelParams,
  /** Whether `stream_options` is sent to this (OpenAI-format) upstream. */
  streamOptions: Schema.Boolean,
  /** OpenAI channels: Responses API calls are relayed to the upstream's own `/responses` (absent: false). */
  responses: Schema.optionalKey(Schema.Boolean),
  /** Vertex AI channels: the Google Cloud project. */
  project: Schema.optionalKey(Schema.String),
  /** Vertex AI channels: the location (`us-east5`, `global`). */
  location: Schema.optionalKey(Schema.String),
  /** AWS Bedrock channels: the region. */
  region: Schema.optionalKey(Schema.String),
  /** Vertex AI channels: the publisher of models whose name does not say (`claude-…` is Anthropic's). */
  publishers: Schema.optionalKey(Schema.Record(Schema.String, Schema.Literals(["google", "anthropic"]))),
  health: ChannelHealth,
  source: Schema.Literals(["config", "console"]),
  createdAt: EpochMs
})
export type AdminChannel = typeof AdminChannel.Type

const BaseUrl = Schema.String.check(
  Schema.isPattern(/^https?:\/\/[^\s/]+(\/[^\s]*)?$/, {
    expected: "an http(s) URL",
    message: "Enter an address starting with http:// or https://"
  })
)

const Millis = Schema.Int.check(Schema.isGreaterThan(0, { message: "Must be a whole number of milliseconds above 0" }))
const Count = Schema.Int.check(Schema.isGreaterThan(0, { message: "Must be a whole number above 0" }))

const CloudName = Schema.String.check(Schema.isMinLength(1, { message: "Must not be empty" }))

const channelFields = {
  name: Name,
  type: ChannelType,
  /** Optional for vertex and bedrock channels (their region's endpoint). */
  baseUrl: Schema.optionalKey(BaseUrl),
  /** Vertex AI: the Google Cloud project (required there; refused on other types). */
  project: Schema.optionalKey(CloudName),
  /** Vertex AI: the location (required there). */
  location: Schema.optionalKey(CloudName),
  /** AWS Bedrock: the region (required there). */
  region: Schema.optionalKey(CloudName),
  /** Vertex AI: the publisher of models whose name does not say. */
  publishers: Schema.optionalKey(Schema.Record(Schema.String, Schema.Literals(["google", "anthropic"]))),
  models: Schema.Array(ModelNameText).check(
    Schema.isMinLength(1, { message: "List at least one model" })
  ),
  modelMap: Schema.optionalKey(
    Schema.Record(Schema.String, ModelNameText).check(
      Schema.makeFilter((map: Readonly<Record<string, string>>) => !Object.keys(map).some(hasControl), {
        message: "A model name may not contain control characters (NUL, line breaks, tabs, DEL)"
      })
    )
  ),
  groups: Schema.optionalKey(Schema.Array(Schema.String.check(Schema.isMinLength(1)))),
  priority: Schema.optionalKey(Schema.Int),
  weight: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0, { message: "Must be 0 or more" }))),
  enabled: Schema.optionalKey(Schema.Boolean),
  apiVersion: Schema.optionalKey(Schema.NullOr(Schema.String)),
  /** Extra headers sent upstream; replaces them all. A masked value as read back keeps the stored one. */
  headers: Schema.optionalKey(Schema.Record(Schema.String, Schema.String)),
  /** Timeouts to change (the others keep their value, or the default). */
  timeouts: Schema.optionalKey(Schema.Struct({
    connectMs: Schema.optionalKey(Millis),
    firstByteMs: Schema.optionalKey(Millis),
    idleMs: Schema.optionalKey(Millis),
    totalMs: Schema.optionalKey(Millis)
  })),
  /** Breaker settings to change (the others keep their value, or the default). */
  breaker: Schema.optionalKey(Schema.Struct({
    consecutiveFailures: Schema.optionalKey(Count),
    failureRate: Schema.optionalKey(Schema.Number.check(
      Schema.isGreaterThan(0, { message: "Must be above 0" }),
      Schema.isLessThanOrEqualTo(1, { message: "Must be at most 1" })
    )),
    minimumCalls: Schema.optionalKey(Count),
    windowMs: Schema.optionalKey(Millis),
    cooldownMs: Schema.optionalKey(Millis),
    halfOpenCalls: Schema.optionalKey(Count)
  })),
  /** Parameter defaults and overrides; each part given replaces that part. */
  params: Schema.optionalKey(Schema.Struct({
    defaults: Schema.optionalKey(Schema.JsonObject),
    overrides: Schema.optionalKey(Schema.JsonObject)
  })),
  streamOptions: Schema.optionalKey(Schema.Boolean),
  responses: Schema.optionalKey(Schema.Boolean)
}

/**
 * `POST /api/admin/channels`. A cloud channel's `apiKeys` are its
 * credentials: a Vertex AI channel's are service-account key files (their
 * JSON), a Bedrock channel's Bedrock API keys or access key pairs as JSON
 * (`{"access_key_id", "secret_access_key", "session_token"}`).
 *
 * @category admin
 */
export const CreateChannelRequest = Schema.Struct({
  ...channelFields,
  apiKeys: Schema.Array(Schema.String.check(Schema.isMinLength(1)))
})
export type CreateChannelRequest = typeof CreateChannelRequest.Type

/** `PATCH /api/admin/channels/:id`. `apiKeys`, when given, replaces all upstream keys. @category admin */
export const UpdateChannelRequest = Schema.Struct({
  name: Schema.optionalKey(channelFields.name),
  type: Schema.optionalKey(channelFields.type),
  baseUrl: channelFields.baseUrl,
  project: channelFields.project,
  location: channelFields.location,
  region: channelFields.region,
  publishers: channelFields.publishers,
  models: Schema.optionalKey(channelFields.models),
  modelMap: channelFields.modelMap,
  groups: channelFields.groups,
  priority: channelFields.priority,
  weight: channelFields.weight,
  enabled: channelFields.enabled,
  apiVersion: channelFields.apiVersion,
  headers: channelFields.headers,
  timeouts: channelFields.timeouts,
  breaker: channelFields.breaker,
  params: channelFields.params,
  streamOptions: channelFields.streamOptions,
  responses: channelFields.responses,
  apiKeys: Schema.optionalKey(Schema.Array(Schema.String.check(Schema.isMinLength(1))))
})
export type UpdateChannelRequest = typeof UpdateChannelRequest.Type

/** `GET /api/admin/channels`. @category admin */
export const ChannelList = List(AdminChannel)
export type ChannelList = typeof ChannelList.Type

/** `POST /api/admin/channels/:id/test` body: which model to try (default: the channel's first). @category admin */
export const TestChannelRequest = Schema.Struct({ model: Schema.optionalKey(Schema.String) })
export type TestChannelRequest = typeof TestChannelRequest.Type

/** One key's result of a channel test. @category admin */
export const KeyTestResult = Schema.Struct({
  index: Schema.Int,
  /** The key's last 4 characters, as `…abcd`. */
  hint: Schema.String,
  ok: Schema.Boolean,
  latencyMs: Schema.Number,
  status: Schema.NullOr(Schema.Int),
  message: Schema.String
})
export type KeyTestResult = typeof KeyTestResult.Type

/**
 * The outcome of a channel test: every key was tried, and its health updated
 * (see `POST /api/admin/channels/:id/test`). `ok` when every key worked; the
 * other top-level fields are those of the first key that failed (else the
 * first key's).
 *
 * @category admin
 */
export const TestChannelResult = Schema.Struct({
  ok: Schema.Boolean,
  latencyMs: Schema.Number,
  status: Schema.NullOr(Schema.Int),
  message: Schema.String,
  model: Schema.String,
  keys: Schema.Array(KeyTestResult)
})
export type TestChannelResult = typeof TestChannelResult.Type

/**
 * `POST /api/admin/channels/models`: the upstream's own model list, for a
 * saved channel (`channelId`: its address, keys and headers) or one being
 * made (`type`, `baseUrl`, `apiKey`). Fields given replace the saved
 * channel's (a changed address in the edit form, a masked header sent back as
 * read keeps its secret).
 *
 * @category admin
 */
export const FetchModelsRequest = Schema.Struct({
  channelId: Schema.optionalKey(Schema.String),
  type: Schema.optionalKey(ChannelType),
  baseUrl: Schema.optionalKey(BaseUrl),
  project: Schema.optionalKey(CloudName),
  location: Schema.optionalKey(CloudName),
  region: Schema.optionalKey(CloudName),
  /** The key to list with (default: the saved channel's first). */
  apiKey: Schema.optionalKey(Schema.String.check(Schema.isMinLength(1))),
  apiVersion: Schema.optionalKey(Schema.NullOr(Schema.String)),
  headers: Schema.optionalKey(Schema.Record(Schema.String, Schema.String))
})
export type FetchModelsRequest = typeof FetchModelsRequest.Type

/** A model an upstream lists, and what the gateway knows of it. @category admin */
export const UpstreamModel = Schema.Struct({
  id: Schema.String,
  displayName: Schema.NullOr(Schema.String),
  inputTokenLimit: Schema.NullOr(Schema.Int),
  outputTokenLimit: Schema.NullOr(Schema.Int),
  /** It makes embeddings, not chat answers. */
  embedding: Schema.Boolean,
  /** The gateway has a price for it (calls to it can be billed). */
  priced: Schema.Boolean,
  /** The price table that ships with modelgate knows it (one click prices it). */
  preset: Schema.Boolean
})
export type UpstreamModel = typeof UpstreamModel.Type

/** `POST /api/admin/channels/models`: the upstream's models, by id. @category admin */
export const FetchedModels = List(UpstreamModel)
export type FetchedModels = typeof FetchedModels.Type

// ---------------------------------------------------------------------------
// Admin: models
// ---------------------------------------------------------------------------

const MediaTokens = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0, { message: "Must be a whole number, 0 or more" }))

/**
 * Tokens a call's hold counts for one media part of each kind (an image,
 * audio, video, a document such as a PDF, any other file; inline or by URL),
 * as set on a model: null (or left out) is the kind's default (2,000 for an
 * image, the model's input token limit for the others).
 *
 * @category admin
 */
export const MediaPartTokens = Schema.Struct({
  image: Schema.optionalKey(Schema.NullOr(MediaTokens)),
  audio: Schema.optionalKey(Schema.NullOr(MediaTokens)),
  video: Schema.optionalKey(Schema.NullOr(MediaTokens)),
  document: Schema.optionalKey(Schema.NullOr(MediaTokens)),
  file: Schema.optionalKey(Schema.NullOr(MediaTokens))
})
export type MediaPartTokens = typeof MediaPartTokens.Type

/** What a hold counts per media part of each kind on a model: the figure set, or the kind's default. @category admin */
export const MediaHoldTokens = Schema.Struct({
  image: Schema.Int,
  audio: Schema.Int,
  video: Schema.Int,
  document: Schema.Int,
  file: Schema.Int
})
export type MediaHoldTokens = typeof MediaHoldTokens.Type

/** A model and its list prices (before any group ratio). @category admin */
export const AdminModel = Schema.Struct({
  id: Schema.String,
  displayName: Schema.String,
  prices: Prices,
  inputTokenLimit: Schema.Int,
  outputTokenLimit: Schema.Int,
  /** Shown in model lists (Gemini's `description`); null for none. */
  description: Schema.NullOr(Schema.String),
  /** An embedding model (Gemini lists `embedContent`/`batchEmbedContents` for it). */
  embedding: Schema.Boolean,
  /** A reasoning model: it takes a reasoning effort. */
  reasoning: Schema.Boolean,
  /** Its upstream accepts `reasoning_content` in assistant history. */
  reasoningContent: Schema.Boolean,
  /** Tokens per media part as set on the model (null: the kind's default); answers always carry it. */
  mediaPartTokens: Schema.optionalKey(MediaPartTokens),
  /** What a hold counts per media part of each kind (what is set, or the default); answers always carry it. */
  mediaHoldTokens: Schema.optionalKey(MediaHoldTokens),
  source: Schema.Literals(["config", "console"])
})
export type AdminModel = typeof AdminModel.Type

const TokenLimit = Schema.Int.check(Schema.isGreaterThan(0, { message: "Must be a whole number above 0" }))

/**
 * The token limits of a model created without them (core's, the one default
 * the configuration file, the API and the console share).
 *
 * @category admin
 */
export const modelDefaults: { readonly inputTokenLimit: number; readonly outputTokenLimit: number } =
  Domain.modelDefaults

/** `POST /api/admin/models` (creates or replaces by id). @category admin */
export const UpsertModelRequest = Schema.Struct({
  id: Schema.String.check(
    Schema.isPattern(/^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,127}$/, {
      expected: "a model id",
      message: "1-128 letters, digits or . _ : / @ -"
    })
  ),
  displayName: Schema.optionalKey(Schema.String),
  prices: Prices,
  inputTokenLimit: Schema.optionalKey(TokenLimit),
  outputTokenLimit: Schema.optionalKey(TokenLimit),
  /** Left as it is when absent; null clears it. */
  description: Schema.optionalKey(Schema.NullOr(Schema.String)),
  /** Left as it is when absent (false for a new model); likewise `reasoning` and `reasoningContent`. */
  embedding: Schema.optionalKey(Schema.Boolean),
  reasoning: Schema.optionalKey(Schema.Boolean),
  reasoningContent: Schema.optionalKey(Schema.Boolean),
  /**
   * Tokens a hold counts per media part, per kind: the kinds given (a null
   * kind: its default) replace what was set. Left as it is when absent; null
   * puts every kind back to its default.
   */
  mediaPartTokens: Schema.optionalKey(Schema.NullOr(MediaPartTokens))
})
export type UpsertModelRequest = typeof UpsertModelRequest.Type

/**
 * A model some channel serves that has no price (no row under Models &
 * prices, or a row with no price that is not free): the gateway refuses calls
 * to it with 403 `model_unpriced` until an admin sets its price (or marks it
 * free).
 *
 * @category admin
 */
export const UnpricedModel = Schema.Struct({
  id: Schema.String,
  /** The names of the channels that serve it. */
  channels: Schema.Array(Schema.String)
})
export type UnpricedModel = typeof UnpricedModel.Type

/** `GET /api/admin/models`: the priced models, and the channel models without a price. @category admin */
export const ModelList = Schema.Struct({
  data: Schema.Array(AdminModel),
  unpriced: Schema.Array(UnpricedModel)
})
export type ModelList = typeof ModelList.Type

/** A well-known model's list prices from the price table that ships with modelgate. @category admin */
export const PricePreset = Schema.Struct({
  id: Schema.String,
  displayName: Schema.String,
  /** Who sells it (`openai`, `anthropic`, `google`, ...). */
  provider: Schema.String,
  prices: Prices,
  inputTokenLimit: Schema.Int,
  outputTokenLimit: Schema.Int,
  embedding: Schema.Boolean,
  reasoning: Schema.Boolean
})
export type PricePreset = typeof PricePreset.Type

/**
 * `GET /api/admin/models/presets`: the price table and where its figures come
 * from. The table is a file in the repository, updated by hand; prices change,
 * so check them before relying on them.
 *
 * @category admin
 */
export const PricePresets = Schema.Struct({
  /** The day the figures were taken from the providers' price pages (YYYY-MM-DD). */
  asOf: Day,
  /** The pages they were taken from. */
  sources: Schema.Array(Schema.String),
  data: Schema.Array(PricePreset)
})
export type PricePresets = typeof PricePresets.Type

// ---------------------------------------------------------------------------
// Admin: aliases
// ---------------------------------------------------------------------------

/** A model-name alias: a glob (`*` matches any run of characters) and the model it stands for. @category admin */
export const Alias = Schema.Struct({
  pattern: Schema.String,
  target: Schema.String,
  /** Matching order: lower first. */
  position: Schema.Int
})
export type Alias = typeof Alias.Type

/** `GET /api/admin/aliases`, in matching order. @category admin */
export const AliasList = List(Alias)
export type AliasList = typeof AliasList.Type

/** `POST /api/admin/aliases`: creates or changes the alias of `pattern`. @category admin */
export const SetAliasRequest = Schema.Struct({
  pattern: Schema.String.check(
    Schema.isPattern(/^[A-Za-z0-9*][A-Za-z0-9._:/@*-]{0,127}$/, {
      expected: "an alias pattern",
      message: "1-128 letters, digits or . _ : / @ - and * (any characters)"
    })
  ),
  target: Schema.String.check(Schema.isMinLength(1, { message: "Required" }), Schema.isMaxLength(128)),
  /** Default: after the last alias. */
  position: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0, { message: "Must be 0 or more" })))
})
export type SetAliasRequest = typeof SetAliasRequest.Type

/** `DELETE /api/admin/aliases?pattern=`. @category admin */
export const AliasQuery = Schema.Struct({ pattern: Schema.String })
export type AliasQuery = typeof AliasQuery.Type

// ---------------------------------------------------------------------------
// Admin: redemption codes
// ---------------------------------------------------------------------------

/** `POST /api/admin/codes`: a batch of codes of one value. @category admin */
export const GenerateCodesRequest = Schema.Struct({
  count: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 1000 }, { message: "Between 1 and 1000 codes" })),
  amount: PositiveUsd
})
export type GenerateCodesRequest = typeof GenerateCodesRequest.Type

/** The new codes, in full, this once. @category admin */
export const GeneratedCodes = Schema.Struct({
  batch: Schema.String,
  amount: Usd,
  codes: Schema.Array(Schema.String)
})
export type GeneratedCodes = typeof GeneratedCodes.Type

/** A code as listed: only its prefix, its value and who redeemed it. @category admin */
export const AdminCode = Schema.Struct({
  prefix: Schema.String,
  amount: Usd,
  batch: Schema.String,
  createdAt: EpochMs,
  createdBy: Schema.String,
  redeemedAt: Schema.NullOr(EpochMs),
  redeemedBy: Schema.NullOr(Schema.String)
})
export type AdminCode = typeof AdminCode.Type

/** `GET /api/admin/codes` filters. @category admin */
export const CodesQuery = Schema.Struct({
  ...PageQuery.fields,
  batch: Schema.optional(Schema.String),
  status: Schema.optional(Schema.Literals(["redeemed", "unused"]))
})
export type CodesQuery = typeof CodesQuery.Type

/** `GET /api/admin/codes`. @category admin */
export const CodePage = Page(AdminCode)
export type CodePage = typeof CodePage.Type

// ---------------------------------------------------------------------------
// Admin: usage overview
// ---------------------------------------------------------------------------

/** One user's total in the overview. @category admin */
export const UserSpend = Schema.Struct({
  userId: Schema.String,
  userName: Schema.String,
  requests: Schema.Int,
  tokens: Schema.Int,
  cost: Usd
})
export type UserSpend = typeof UserSpend.Type

/** `GET /api/admin/usage/daily`: per day and model, and the top users, over the period. @category admin */
export const AdminOverview = Schema.Struct({
  daily: Schema.Array(DailyPoint),
  users: Schema.Array(UserSpend),
  totalCost: Usd,
  totalRequests: Schema.Int
})
export type AdminOverview = typeof AdminOverview.Type
