/**
 * The scalars and envelopes every group's Schemas of the management API are
 * made of (`Contract.ts` states the wire conventions).
 *
 * @since 0.1.0
 */
import * as Domain from "@modelgate/core/domain/Domain"
import { Schema } from "effect"
import * as ApiError from "../ApiError.ts"

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
