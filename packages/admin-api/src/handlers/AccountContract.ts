/**
 * The `account` group of the management API: the caller's dashboard, models,
 * connection details and redemptions. Its request and response Schemas and its
 * endpoints (`AccountGroup`); `Contract.ts` states the wire conventions and
 * `Api.ts` composes the groups.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { Authentication, Csrf, SessionOnly } from "../Guards.ts"
import { describe } from "../internal/endpoints.ts"
import { LimitValue, NonNegativeUsd, Ratio, Role, Usd } from "./SharedContract.ts"
import { DailyPoint } from "./UsageContract.ts"

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

/** `POST /api/redeem`. @category usage */
export const RedeemRequest = Schema.Struct({
  code: Schema.String.check(Schema.isMinLength(1, { message: "Enter a code" }), Schema.isMaxLength(128))
})
export type RedeemRequest = typeof RedeemRequest.Type

/** What a redemption credited and the balance after it. @category usage */
export const RedeemResult = Schema.Struct({ amount: Usd, balance: Usd })
export type RedeemResult = typeof RedeemResult.Type

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

/** What the caller is, may call and spends. @category groups */
export class AccountGroup extends HttpApiGroup.make("account")
  .add(
    HttpApiEndpoint.get("me", "/api/me", { success: GatewayMe })
      .annotateMerge(
        describe(
          "Who is calling, the models they may call and the balance (snake_case, as the gateway always answered)."
        )
      ),
    HttpApiEndpoint.get("dashboard", "/api/dashboard", { success: Dashboard })
      .annotateMerge(describe("Balance, spend today and this month, and 30 days of spend per model.")),
    HttpApiEndpoint.get("models", "/api/models", { success: MyModels })
      .annotateMerge(describe("The models one's groups reach, with prices after each group's ratio.")),
    HttpApiEndpoint.get("connect", "/api/connect", { success: ConnectInfo })
      .annotateMerge(describe("This server's addresses, for the Connect a client page.")),
    HttpApiEndpoint.post("redeem", "/api/redeem", { payload: RedeemRequest, success: RedeemResult })
      .annotateMerge(describe("Redeem a code onto one's balance.")).middleware(SessionOnly)
  )
  .middleware(Csrf)
  .middleware(Authentication)
{}
