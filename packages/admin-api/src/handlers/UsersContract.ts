/**
 * The `users` group of the management API (admin): users and balances. Its
 * request and response Schemas and its endpoints (`UsersGroup`); `Contract.ts`
 * states the wire conventions and `Api.ts` composes the groups.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { AdminOnly, Authentication, Csrf } from "../Guards.ts"
import { Created, describe, IdParams } from "../internal/endpoints.ts"
import { EpochMs, LimitValue, List, NewPassword, NonNegativeUsd, Ok, Role, Usd, UserName } from "./SharedContract.ts"

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

/** Users (administrators only). @category groups */
export class UsersGroup extends HttpApiGroup.make("users")
  .add(
    HttpApiEndpoint.get("list", "/api/admin/users", { success: UserList })
      .annotateMerge(describe("All users (deleted ones are not listed).")),
    HttpApiEndpoint.post("create", "/api/admin/users", { payload: CreateUserRequest, success: Created(AdminUser) })
      .annotateMerge(describe("Create a user.")),
    HttpApiEndpoint.get("get", "/api/admin/users/:id", { params: IdParams, success: AdminUser })
      .annotateMerge(describe("One user.")),
    HttpApiEndpoint.patch("update", "/api/admin/users/:id", {
      params: IdParams,
      payload: UpdateUserRequest,
      success: AdminUser
    })
      .annotateMerge(describe("Change a user's role, groups, limits or password; enable or disable them.")),
    HttpApiEndpoint.delete("delete", "/api/admin/users/:id", { params: IdParams, success: Ok })
      .annotateMerge(
        describe("Delete a user: their keys are revoked, their ledger and usage stay under an anonymised name.")
      ),
    HttpApiEndpoint.post("adjust", "/api/admin/users/:id/adjust", {
      params: IdParams,
      payload: AdjustBalanceRequest,
      success: BalanceResult
    })
      .annotateMerge(describe("Credit or debit a user's balance, with a reason in the ledger."))
  )
  .middleware(AdminOnly)
  .middleware(Csrf)
  .middleware(Authentication)
{}
