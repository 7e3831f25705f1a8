/**
 * Redemption codes: prepaid credit handed out as text. A code is shown once
 * when generated; the database keeps only its `KeyHasher` hash and a short
 * prefix for display. `redeem` credits exactly once even when the same code is
 * redeemed concurrently: the claim is a conditional
 * `UPDATE ... WHERE redeemed_by IS NULL`, and the credit happens in the same
 * transaction only when that claim changed a row.
 *
 * @since 0.1.0
 */
import { GatewayError, Money } from "@modelgate/core"
import { Clock, Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql"
import { base62, newId } from "./internal/random.ts"
import * as Row from "./internal/row.ts"
import { KeyHasher } from "./Secrets.ts"
import { InvalidInput } from "./StoreError.ts"

/**
 * A code could not be redeemed: unknown, or already used.
 *
 * @category errors
 */
export class RedemptionFailed extends Schema.TaggedError<RedemptionFailed>()("RedemptionFailed", {
  reason: Schema.Literals(["unknown", "already-redeemed"]),
  message: Schema.String
}) {}

/**
 * A code as listed (never the code itself).
 *
 * @category models
 */
export interface CodeRecord {
  readonly codePrefix: string
  readonly amountNanos: bigint
  readonly createdBy: string
  readonly createdAt: number
  readonly redeemedBy: string | null
  readonly redeemedAt: number | null
  readonly batch: string
}

/**
 * A generated batch: the codes (shown once) and the batch id.
 *
 * @category models
 */
export interface GeneratedBatch {
  readonly batch: string
  readonly codes: ReadonlyArray<string>
}

const decode = (row: Record<string, unknown>): CodeRecord => ({
  codePrefix: Row.str(row.code_prefix, "redemption_codes.code_prefix"),
  amountNanos: Row.big(row.amount_nanos, "redemption_codes.amount_nanos"),
  createdBy: Row.str(row.created_by, "redemption_codes.created_by"),
  createdAt: Row.int(row.created_at, "redemption_codes.created_at"),
  redeemedBy: Row.strOrNull(row.redeemed_by, "redemption_codes.redeemed_by"),
  redeemedAt: Row.intOrNull(row.redeemed_at, "redemption_codes.redeemed_at"),
  batch: Row.str(row.batch, "redemption_codes.batch")
})

/** Codes look like `mgr-` + 24 base62 characters (~143 bits). */
const newCode = () => `mgr-${base62(24)}`

/**
 * The redemption repository.
 *
 * @category services
 */
export class Redemption extends Context.Service<Redemption, {
  /** Generates `count` codes worth `amountNanos` each (1 to 10,000 per batch). */
  readonly generate: (
    count: number,
    amountNanos: bigint,
    actor: string
  ) => Effect.Effect<GeneratedBatch, InvalidInput | SqlError.SqlError>
  /** Credits the code's amount to the user, once. Returns the amount. */
  readonly redeem: (
    code: string,
    userId: string
  ) => Effect.Effect<bigint, RedemptionFailed | GatewayError.ResourceNotFound | SqlError.SqlError>
  /** Codes, newest first; optionally of one batch. */
  readonly list: (
    options?: { readonly batch?: string | undefined }
  ) => Effect.Effect<ReadonlyArray<CodeRecord>, SqlError.SqlError>
  /** The listing as CSV text (`code_prefix,amount_usd,created_by,created_at,redeemed_by,redeemed_at,batch`). */
  readonly exportCsv: (options?: { readonly batch?: string | undefined }) => Effect.Effect<string, SqlError.SqlError>
}>()("modelgate/store/Redemption") {
  /** @category layers */
  static readonly layer = Layer.effect(
    Redemption,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const hasher = yield* KeyHasher

      const generate = Effect.fn("Redemption.generate")(function*(count: number, amountNanos: bigint, actor: string) {
        if (!Number.isSafeInteger(count) || count < 1 || count > 10_000) {
          return yield* new InvalidInput({ path: "count", message: `count: expected 1 to 10000 codes, got ${count}` })
        }
        if (amountNanos <= 0n || amountNanos > Money.MAX_NANOS) {
          return yield* new InvalidInput({
            path: "amountNanos",
            message: `amountNanos: expected a positive amount, got ${amountNanos}`
          })
        }
        const batch = newId("rdb")
        const now = yield* Clock.currentTimeMillis
        const codes = Array.from({ length: count }, newCode)
        yield* sql.withTransaction(Effect.forEach(
          codes,
          (code) =>
            sql`INSERT INTO redemption_codes ${
              sql.insert({
                code_hash: hasher.hash(code),
                code_prefix: code.slice(0, 10),
                amount_nanos: amountNanos,
                created_by: actor,
                created_at: now,
                redeemed_by: null,
                redeemed_at: null,
                batch
              })
            }`,
          { discard: true }
        ))
        return { batch, codes }
      })

      const redeem = Effect.fn("Redemption.redeem")(function*(code: string, userId: string) {
        const hash = hasher.hash(code.trim())
        const credited = yield* sql.withTransaction(Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          const users = yield* sql`SELECT id FROM users WHERE id = ${userId}`
          if (users.length === 0) {
            return yield* new GatewayError.ResourceNotFound({ message: `No user with id '${userId}'.` })
          }
          const claimed = yield* sql`UPDATE redemption_codes SET redeemed_by = ${userId}, redeemed_at = ${now}
            WHERE code_hash = ${hash} AND redeemed_by IS NULL RETURNING amount_nanos`
          if (claimed.length === 0) return undefined
          const amount = Row.big(claimed[0]!.amount_nanos, "redemption_codes.amount_nanos")
          yield* sql`UPDATE users SET balance_nanos = balance_nanos + ${amount}, updated_at = ${now} WHERE id = ${userId}`
          yield* sql`INSERT INTO ledger ${
            sql.insert({
              id: newId("led"),
              user_id: userId,
              kind: "redemption",
              amount_nanos: amount,
              hold_id: null,
              request_id: null,
              reason: `redemption code ${code.trim().slice(0, 10)}...`,
              actor: userId,
              created_at: now
            })
          }`
          return amount
        }))
        if (credited !== undefined) return credited
        const rows = yield* sql`SELECT redeemed_by FROM redemption_codes WHERE code_hash = ${hash}`
        return yield* rows.length === 0
          ? new RedemptionFailed({
            reason: "unknown",
            message: "This redemption code is not valid. Check that you copied all of it."
          })
          : new RedemptionFailed({ reason: "already-redeemed", message: "This redemption code has already been used." })
      })

      const list = (options?: { readonly batch?: string | undefined }) =>
        Effect.map(
          options?.batch === undefined
            ? sql`SELECT * FROM redemption_codes ORDER BY created_at DESC, code_prefix`
            : sql`SELECT * FROM redemption_codes WHERE batch = ${options.batch} ORDER BY created_at DESC, code_prefix`,
          (rows) => rows.map(decode)
        )

      const csvField = (value: string) => /[",\n]/.test(value) ? `"${value.replaceAll("\"", "\"\"")}"` : value

      return Redemption.of({
        generate,
        redeem,
        list,
        exportCsv: (options) =>
          Effect.map(list(options), (codes) =>
            [
              "code_prefix,amount_usd,created_by,created_at,redeemed_by,redeemed_at,batch",
              ...codes.map((c) =>
                [
                  c.codePrefix,
                  Money.formatUsd(c.amountNanos),
                  c.createdBy,
                  new Date(c.createdAt).toISOString(),
                  c.redeemedBy ?? "",
                  c.redeemedAt === null ? "" : new Date(c.redeemedAt).toISOString(),
                  c.batch
                ].map(csvField).join(",")
              )
            ].join("\n") + "\n")
      })
    })
  )
}
