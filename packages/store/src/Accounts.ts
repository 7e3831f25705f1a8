/**
 * Money: balances, holds, settlement and the ledger.
 *
 * Invariant, kept by every operation and checked by the tests: for every user,
 * `users.balance_nanos == SUM(ledger.amount_nanos)`. Every change of a balance
 * is one conditional UPDATE plus its ledger entries in the same transaction:
 *
 * - `hold`: `balance -= amount` only `WHERE balance >= amount` (one atomic
 *   step, so 1,000 concurrent holds against a balance that covers 10 spend
 *   exactly 10), a `holds` row and a negative 'hold' entry; the key's caps are
 *   checked in the same transaction;
 * - `settle`: deletes the hold (a second settle finds nothing and does
 *   nothing), writes a 'release' of `+held` and a 'charge' of `-charge`: the
 *   whole charge, whatever the hold. Beyond the hold it is taken from the
 *   balance, which may go below zero (the charge's reason says by how much,
 *   and the settlement returns it as `overdrawnNanos`); a balance below zero
 *   refuses every hold until a top-up. The charge is added to the key's
 *   `spent_nanos`, and a cap it took the key past is returned (`overCap`).
 *   The one limit: no balance goes below `-MAX_NANOS` (-10^9 USD), so the
 *   64-bit columns never overflow; what a charge would take beyond it is not
 *   taken (`shortfallNanos`, named in the charge's reason);
 * - `topUp` / `adjust`: a 'topup' or 'adjustment' entry; a top-up of a
 *   balance below zero pays the debt first; an adjustment that would take the
 *   balance below zero (or further below) is refused;
 * - `sweepHolds`: releases holds a dead process left behind.
 *
 * Core's `Accounts` port is implemented over this repository by `Purses.ts`
 * (balance leases: no database on a call's path).
 *
 * @since 0.1.0
 */
import { Accounts as AccountsPort, GatewayError, Money } from "@modelgate/core"
import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql"
import * as LeaseSql from "./internal/LeaseSql.ts"
import { newId, newSortableId } from "./internal/random.ts"
import * as Row from "./internal/row.ts"
import { InvalidInput } from "./StoreError.ts"

/**
 * The kinds of ledger entries.
 *
 * @category models
 */
export type LedgerKind = "topup" | "redemption" | "adjustment" | "hold" | "charge" | "release"

/**
 * One ledger entry: positive amounts credit the balance, negative ones debit it.
 *
 * @category models
 */
export interface LedgerEntry {
  readonly id: string
  readonly userId: string
  readonly kind: LedgerKind
  readonly amountNanos: bigint
  readonly holdId: string | null
  readonly requestId: string | null
  readonly reason: string | null
  readonly actor: string | null
  readonly createdAt: number
}

/**
 * What `hold` needs; `nodeId` names the process, so its holds can be swept
 * after a crash.
 *
 * @category models
 */
export interface HoldRequest {
  readonly userId: string
  readonly keyId: string
  readonly amountNanos: bigint
  readonly requestId: string
  readonly nodeId: string
  /** How many answers the call asks for, for the refusal's advice (default 1). */
  readonly choices?: number | undefined
  /**
   * What the node's lease of the user owes beyond what it reserved (charges
   * above their holds not yet taken from the balance): the balance must cover
   * it too. Default 0.
   */
  readonly owedNanos?: bigint | undefined
  /**
   * What the key's calls in flight hold outside the database (from the
   * node's leases, held before the key had a cap): its caps count them too.
   * Default 0.
   */
  readonly keyHeldElsewhereNanos?: bigint | undefined
}

/**
 * The outcome of a settlement. `settled` is false when the hold was already gone.
 *
 * @category models
 */
export interface Settlement {
  readonly settled: boolean
  /** Whose balance it was ("" when the hold was already gone). */
  readonly userId: string
  readonly heldNanos: bigint
  /** What was charged: the whole charge (but see `shortfallNanos`). */
  readonly chargedNanos: bigint
  /** The part of the charge the balance (with the hold back) did not cover: it is now that much below zero, or further. */
  readonly overdrawnNanos: bigint
  /** A cap of the key that the charge took its spending past. */
  readonly overCap?: AccountsPort.CapOverrun | undefined
  /** What was not charged because the balance reached its floor (`-MAX_NANOS`, -10^9 USD). */
  readonly shortfallNanos: bigint
}

/**
 * Which holds and leases `sweepHolds` releases: all of a node (at its start,
 * after a crash), those of every node whose heartbeat is older than
 * `deadAfterMs` (periodically, by the live nodes; a node that never wrote a
 * heartbeat counts as dead), or per-call holds older than a cutoff.
 *
 * @category models
 */
export type SweepSelector =
  | { readonly nodeId: string }
  | { readonly olderThanMs: number }
  | { readonly deadAfterMs: number; readonly except: string }

/**
 * What `lease` asks for. `grant` is the lease policy: given the user's
 * available balance (read inside the transaction, with the row locked on
 * PostgreSQL), how much to reserve; 0 reserves nothing.
 *
 * The lease's id is chosen by the caller before anything is written, so a
 * request whose outcome is unknown (its COMMIT's answer lost) is retried
 * under the same id and finds the lease if it was created, and the node can
 * release it by that id whether or not it was.
 *
 * @category models
 */
export interface LeaseRequest {
  readonly userId: string
  readonly nodeId: string
  /** The node's lease of this user: extended if it exists, else created with this id. */
  readonly leaseId: string
  /**
   * How much to reserve given the available balance; below zero, how much of
   * the lease's reserve to give back to the balance (at most what it has).
   */
  readonly grant: (availableNanos: bigint) => bigint
  /**
   * Reserve what `grant` chooses even beyond the balance, which then goes
   * below zero (down to `-MAX_NANOS`): how a charge above its hold that the
   * lease could not cover is taken from the balance. Default false.
   */
  readonly overdraw?: boolean | undefined
}

/**
 * The outcome of `lease`: the lease (new or extended), what was reserved (below
 * zero: what was given back), and the available balance before it.
 *
 * @category models
 */
export interface LeaseGrant {
  readonly leaseId: string
  readonly grantedNanos: bigint
  readonly availableNanos: bigint
}

/**
 * A page of the ledger, newest first.
 *
 * @category models
 */
export interface Page {
  readonly limit: number
  readonly offset?: number | undefined
}

const noSettlement: Settlement = {
  settled: false,
  userId: "",
  heldNanos: 0n,
  chargedNanos: 0n,
  overdrawnNanos: 0n,
  shortfallNanos: 0n
}

const decodeEntry = (row: Record<string, unknown>): LedgerEntry => ({
  id: Row.str(row.id, "ledger.id"),
  userId: Row.str(row.user_id, "ledger.user_id"),
  kind: Row.str(row.kind, "ledger.kind") as LedgerKind,
  amountNanos: Row.big(row.amount_nanos, "ledger.amount_nanos"),
  holdId: Row.strOrNull(row.hold_id, "ledger.hold_id"),
  requestId: Row.strOrNull(row.request_id, "ledger.request_id"),
  reason: Row.strOrNull(row.reason, "ledger.reason"),
  actor: Row.strOrNull(row.actor, "ledger.actor"),
  createdAt: Row.int(row.created_at, "ledger.created_at")
})

const userNotFound = (userId: string) => new GatewayError.ResourceNotFound({ message: `No user with id '${userId}'.` })

const requireAmount = (amount: bigint, path: string, allowNegative: boolean, allowZero: boolean) => {
  if (amount > Money.MAX_NANOS || amount < -Money.MAX_NANOS) {
    return Effect.fail(
      new InvalidInput({ path, message: `${path}: ${amount} nano-dollars is beyond the largest accepted amount` })
    )
  }
  if ((!allowNegative && amount < 0n) || (!allowZero && amount === 0n)) {
    return Effect.fail(
      new InvalidInput({
        path,
        message: `${path}: expected a ${allowZero ? "non-negative" : "positive"} amount, got ${amount}`
      })
    )
  }
  return Effect.void
}

/** The UTC day of a time, as a `key_spend` period: `d:2026-11-22`. @category periods */
export const dayPeriod: (ms: number) => string = LeaseSql.dayPeriod

/** The UTC month of a time, as a `key_spend` period: `m:2026-11`. @category periods */
export const monthPeriod: (ms: number) => string = LeaseSql.monthPeriod

/**
 * The accounts repository.
 *
 * @category services
 */
export class Accounts extends Context.Service<Accounts, {
  readonly balance: (userId: string) => Effect.Effect<bigint, GatewayError.ResourceNotFound | SqlError.SqlError>
  /** Holds `amountNanos` in one atomic step and returns the hold id. */
  readonly hold: (
    request: HoldRequest
  ) => Effect.Effect<
    string,
    | GatewayError.InsufficientBalance
    | GatewayError.SpendingCapReached
    | GatewayError.ResourceNotFound
    | InvalidInput
    | SqlError.SqlError
  >
  /**
   * Charges `chargeNanos` (any non-negative amount) against the hold, all of
   * it: beyond the hold it is taken from the balance, which may go below zero
   * (never below `-MAX_NANOS`). Releases what is left of the hold. Idempotent.
   */
  readonly settle: (holdId: string, chargeNanos: bigint) => Effect.Effect<Settlement, InvalidInput | SqlError.SqlError>
  /** `settle(holdId, 0)`. */
  readonly release: (holdId: string) => Effect.Effect<Settlement, SqlError.SqlError>
  /** Credits a positive amount ('topup'). Returns the new balance. */
  readonly topUp: (
    userId: string,
    amountNanos: bigint,
    reason: string,
    actor: string
  ) => Effect.Effect<bigint, GatewayError.ResourceNotFound | InvalidInput | SqlError.SqlError>
  /**
   * Adds a signed amount ('adjustment'); a debit is refused when the balance
   * would go below zero (or, already below, further below). Returns the new balance.
   */
  readonly adjust: (
    userId: string,
    amountNanos: bigint,
    reason: string,
    actor: string
  ) => Effect.Effect<bigint, GatewayError.ResourceNotFound | InvalidInput | SqlError.SqlError>
  /**
   * Reserves part of the user's balance for this node (a lease; see
   * `Purses.ts`): one conditional update, a 'hold' ledger entry, and the
   * lease row created or extended. Returns what `request.grant` chose (0 when
   * it chose nothing, and then nothing changed). The available balance it is
   * given is the balance less what other nodes' leases owe beyond what they
   * reserved (a negative lease: charges above their holds not yet taken).
   */
  readonly lease: (
    request: LeaseRequest
  ) => Effect.Effect<LeaseGrant, GatewayError.ResourceNotFound | SqlError.SqlError>
  /** Records that the node is alive (its holds and leases are not swept while it is). */
  readonly heartbeat: (nodeId: string) => Effect.Effect<void, SqlError.SqlError>
  /**
   * What the user can spend, for display: the balance plus what leases still
   * reserve (which includes calls in progress on other nodes, and charges not
   * yet written by their batch writers); without `exceptNodeId`'s leases when given.
   */
  readonly spendable: (
    userId: string,
    exceptNodeId?: string | undefined
  ) => Effect.Effect<bigint, GatewayError.ResourceNotFound | SqlError.SqlError>
  /** Releases the selected open holds and leases; returns how many. */
  readonly sweepHolds: (selector: SweepSelector) => Effect.Effect<number, SqlError.SqlError>
  /** The sum of the user's ledger entries (equal to the balance, always). */
  readonly ledgerSum: (userId: string) => Effect.Effect<bigint, SqlError.SqlError>
  /** What the user was charged in `[fromMs, toMs)`, in nano-dollars. */
  readonly spent: (userId: string, fromMs: number, toMs: number) => Effect.Effect<bigint, SqlError.SqlError>
  readonly ledger: (userId: string, page: Page) => Effect.Effect<ReadonlyArray<LedgerEntry>, SqlError.SqlError>
}>()("modelgate/store/Accounts") {
  /** @category layers */
  static readonly layer = Layer.effect(
    Accounts,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const forUpdate = sql.onDialectOrElse({ pg: () => " FOR UPDATE", orElse: () => "" })

      const entry = (e: Omit<LedgerEntry, "id">) =>
        sql`INSERT INTO ledger ${
          sql.insert({
            id: newSortableId("led"),
            user_id: e.userId,
            kind: e.kind,
            amount_nanos: e.amountNanos,
            hold_id: e.holdId,
            request_id: e.requestId,
            reason: e.reason,
            actor: e.actor,
            created_at: e.createdAt
          })
        }`

      const balance = (userId: string) =>
        Effect.flatMap(
          sql`SELECT balance_nanos FROM users WHERE id = ${userId}`,
          (rows) =>
            rows[0] === undefined
              ? Effect.fail(userNotFound(userId))
              : Effect.succeed(Row.big(rows[0].balance_nanos, "users.balance_nanos"))
        )

      /** The key's caps and what it spent against each (this UTC day and month for the budgets); empty without caps. */
      const capsOf = Effect.fnUntraced(function*(keyId: string, now: number) {
        const keys = yield* sql`SELECT name, quota_nanos, daily_budget_nanos, monthly_budget_nanos, spent_nanos
          FROM api_keys WHERE id = ${keyId}`
        const key = keys[0]
        if (key === undefined) return undefined
        const quota = Row.bigOrNull(key.quota_nanos, "api_keys.quota_nanos")
        const daily = Row.bigOrNull(key.daily_budget_nanos, "api_keys.daily_budget_nanos")
        const monthly = Row.bigOrNull(key.monthly_budget_nanos, "api_keys.monthly_budget_nanos")
        if (quota === null && daily === null && monthly === null) return undefined
        const periodSpent = (limit: bigint | null, period: string) =>
          limit === null
            ? Effect.succeed(0n)
            : Effect.map(
              sql`SELECT spent_nanos FROM key_spend WHERE key_id = ${keyId} AND period = ${period}`,
              (rows) => rows[0] === undefined ? 0n : Row.big(rows[0].spent_nanos, "key_spend.spent_nanos")
            )
        const caps: ReadonlyArray<readonly ["quota" | "daily" | "monthly", bigint | null, bigint]> = [
          ["quota", quota, Row.big(key.spent_nanos, "api_keys.spent_nanos")],
          ["daily", daily, yield* periodSpent(daily, dayPeriod(now))],
          ["monthly", monthly, yield* periodSpent(monthly, monthPeriod(now))]
        ]
        return { name: Row.str(key.name, "api_keys.name"), caps }
      })

      /**
       * The key's spending caps, checked inside the hold's transaction after the
       * user's row was updated (and so locked on PostgreSQL): every concurrent
       * hold of the same key waits for this one, and sees its hold row. Spending
       * is what the key was charged (all of each charge, above its hold too) plus
       * what its calls in progress hold; once it reaches a cap, every call that
       * may cost anything is refused.
       */
      const checkCaps = Effect.fnUntraced(function*(request: HoldRequest, now: number) {
        const key = yield* capsOf(request.keyId, now)
        if (key === undefined) return
        const heldRows =
          yield* sql`SELECT COALESCE(SUM(amount_nanos), 0) AS held FROM holds WHERE key_id = ${request.keyId}`
        const held = Row.big(heldRows[0]?.held ?? 0, "holds.held") + (request.keyHeldElsewhereNanos ?? 0n)
        for (const [cap, limit, spent] of key.caps) {
          if (limit === null || spent + held + request.amountNanos <= limit) continue
          return yield* AccountsPort.spendingCapReached({
            keyName: key.name,
            cap,
            limitNanos: limit,
            spentNanos: spent,
            heldNanos: held,
            request
          })
        }
      })

      /** What other nodes' leases of the user owe beyond what they reserved (a sum of negative leases, as a negative number). */
      const leaseDebts = (userId: string, nodeId: string) =>
        Effect.map(
          sql`SELECT COALESCE(SUM(amount_nanos), 0) AS owed FROM leases
            WHERE user_id = ${userId} AND amount_nanos < 0 AND node_id <> ${nodeId}`,
          (rows) => Row.big(rows[0]?.owed ?? 0, "leases.owed")
        )

      const hold = Effect.fn("Accounts.hold")(function*(request: HoldRequest) {
        yield* requireAmount(request.amountNanos, "amountNanos", false, true)
        const owed = request.owedNanos !== undefined && request.owedNanos > 0n ? request.owedNanos : 0n
        const id = newId("hld")
        const taken = yield* sql.withTransaction(Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          // The balance less what this node's lease owes and what other nodes' leases owe must cover the hold.
          const rows = yield* sql`UPDATE users SET balance_nanos = balance_nanos - ${request.amountNanos}
            WHERE id = ${request.userId} AND balance_nanos - ${owed} + COALESCE((SELECT SUM(amount_nanos) FROM leases
              WHERE user_id = ${request.userId} AND amount_nanos < 0 AND node_id <> ${request.nodeId}), 0)
              >= ${request.amountNanos} RETURNING id`
          if (rows.length === 0) return false
          yield* checkCaps(request, now)
          yield* sql`INSERT INTO holds ${
            sql.insert({
              id,
              user_id: request.userId,
              key_id: request.keyId,
              amount_nanos: request.amountNanos,
              request_id: request.requestId,
              created_at: now,
              node_id: request.nodeId
            })
          }`
          yield* entry({
            userId: request.userId,
            kind: "hold",
            amountNanos: -request.amountNanos,
            holdId: id,
            requestId: request.requestId,
            reason: null,
            actor: null,
            createdAt: now
          })
          return true
        }))
        if (taken) return id
        const available = (yield* balance(request.userId)) - owed + (yield* leaseDebts(request.userId, request.nodeId))
        return yield* AccountsPort.insufficientBalance(available, request)
      })

      const settleUnchecked = (holdId: string, chargeNanos: bigint) =>
        sql.withTransaction(Effect.gen(function*() {
          const owner = yield* sql`SELECT user_id FROM holds WHERE id = ${holdId}`
          if (owner[0] === undefined) return noSettlement
          yield* LeaseSql.lockUsers(sql, [Row.str(owner[0].user_id, "holds.user_id")])
          const deleted =
            yield* sql`DELETE FROM holds WHERE id = ${holdId} RETURNING user_id, key_id, amount_nanos, request_id`
          const row = deleted[0]
          if (row === undefined) return noSettlement
          const userId = Row.str(row.user_id, "holds.user_id")
          const keyId = Row.str(row.key_id, "holds.key_id")
          const held = Row.big(row.amount_nanos, "holds.amount_nanos")
          const requestId = Row.strOrNull(row.request_id, "holds.request_id")
          const users = yield* sql`SELECT balance_nanos FROM users WHERE id = ${userId}`
          const balanceNow = Row.big(users[0]!.balance_nanos, "users.balance_nanos")
          // The balance with the hold back: the charge is taken from it whole, below zero if need be, down to the floor.
          const available = held + balanceNow
          const room = available + Money.MAX_NANOS
          const charged = chargeNanos <= room ? chargeNanos : room > 0n ? room : 0n
          const shortfall = chargeNanos - charged
          const overdrawn = AccountsPort.overdrawn(available, charged)
          const now = yield* Clock.currentTimeMillis
          yield* sql`UPDATE users SET balance_nanos = balance_nanos + ${held - charged} WHERE id = ${userId}`
          if (held > 0n) {
            yield* entry({
              userId,
              kind: "release",
              amountNanos: held,
              holdId,
              requestId,
              reason: null,
              actor: null,
              createdAt: now
            })
          }
          let overCap: AccountsPort.CapOverrun | undefined
          if (chargeNanos > 0n) {
            yield* entry({
              userId,
              kind: "charge",
              amountNanos: -charged,
              holdId,
              requestId,
              reason: LeaseSql.chargeReason(overdrawn, shortfall),
              actor: null,
              createdAt: now
            })
            yield* LeaseSql.addKeySpend(sql, keyId, charged, LeaseSql.periodsOf(now))
            const key = yield* capsOf(keyId, now)
            overCap = key === undefined ? undefined : AccountsPort.capOverrun(key.caps)
          }
          const settlement: Settlement = {
            settled: true,
            userId,
            heldNanos: held,
            chargedNanos: charged,
            overdrawnNanos: overdrawn,
            shortfallNanos: shortfall,
            ...(overCap === undefined ? {} : { overCap })
          }
          return settlement
        }))

      // Any charge is accepted, however large (usage an upstream reported beyond every bound): it is taken
      // whole, the balance going below zero if need be, down to the floor of `-MAX_NANOS`.
      const settle = Effect.fn("Accounts.settle")(function*(holdId: string, chargeNanos: bigint) {
        if (chargeNanos < 0n) {
          return yield* new InvalidInput({
            path: "chargeNanos",
            message: `chargeNanos: expected a non-negative amount, got ${chargeNanos}`
          })
        }
        return yield* settleUnchecked(holdId, chargeNanos)
      })

      const credit = (kind: "topup" | "adjustment", allowNegative: boolean) =>
        Effect.fnUntraced(function*(userId: string, amountNanos: bigint, reason: string, actor: string) {
          yield* requireAmount(amountNanos, "amountNanos", allowNegative, false)
          const changed = yield* sql.withTransaction(Effect.gen(function*() {
            const now = yield* Clock.currentTimeMillis
            // The bound is compared against a constant computed here, so the database never adds past 64 bits. A
            // credit is bounded above only (on a balance below zero it pays the debt first); a debit never takes
            // the balance below zero, nor one already below further down.
            const rows = amountNanos > 0n
              ? yield* sql`UPDATE users SET balance_nanos = balance_nanos + ${amountNanos}, updated_at = ${now}
                WHERE id = ${userId} AND balance_nanos <= ${Money.MAX_NANOS - amountNanos} RETURNING balance_nanos`
              : yield* sql`UPDATE users SET balance_nanos = balance_nanos + ${amountNanos}, updated_at = ${now}
                WHERE id = ${userId} AND balance_nanos >= ${-amountNanos} RETURNING balance_nanos`
            if (rows.length === 0) return undefined
            yield* entry({ userId, kind, amountNanos, holdId: null, requestId: null, reason, actor, createdAt: now })
            return Row.big(rows[0]!.balance_nanos, "users.balance_nanos")
          }))
          if (changed !== undefined) return changed
          const current = yield* balance(userId)
          return yield* new InvalidInput({
            path: "amountNanos",
            message: `amountNanos: an adjustment of ${Money.formatUsd(amountNanos)} USD would take the balance ` +
              `of ${Money.formatUsd(current)} USD ` +
              (amountNanos < 0n
                ? "below zero"
                : `above the largest balance the gateway keeps (${Money.formatUsd(Money.MAX_NANOS)} USD)`)
          })
        })

      /**
       * A lease's unused reserve given back to the balance (a negative grant):
       * at most what the lease still has, with a 'release' entry. How a
       * node's lease pays toward a debt its capped calls made.
       */
      const giveBack = Effect.fnUntraced(function*(request: LeaseRequest, wanted: bigint, balanceNow: bigint) {
        const rows =
          yield* sql`SELECT amount_nanos FROM leases WHERE id = ${request.leaseId} AND node_id = ${request.nodeId}`
        const amount = rows[0] === undefined ? 0n : Row.big(rows[0].amount_nanos, "leases.amount_nanos")
        const back = wanted < amount ? wanted : amount > 0n ? amount : 0n
        if (back === 0n) return { leaseId: request.leaseId, grantedNanos: 0n, availableNanos: balanceNow }
        const now = yield* Clock.currentTimeMillis
        yield* sql`UPDATE leases SET amount_nanos = amount_nanos - ${back}, updated_at = ${now} WHERE id = ${request.leaseId}`
        yield* sql`UPDATE users SET balance_nanos = balance_nanos + ${back} WHERE id = ${request.userId}`
        yield* entry({
          userId: request.userId,
          kind: "release",
          amountNanos: back,
          holdId: request.leaseId,
          requestId: null,
          reason: `given back by gateway node ${request.nodeId}: the balance went below zero`,
          actor: null,
          createdAt: now
        })
        return { leaseId: request.leaseId, grantedNanos: -back, availableNanos: balanceNow }
      })

      const lease = Effect.fn("Accounts.lease")(function*(request: LeaseRequest) {
        return yield* sql.withTransaction(Effect.gen(function*() {
          const users = yield* sql`SELECT balance_nanos FROM users WHERE id = ${request.userId}${
            sql.literal(forUpdate)
          }`
          if (users[0] === undefined) return yield* userNotFound(request.userId)
          const balanceNow = Row.big(users[0].balance_nanos, "users.balance_nanos")
          // An overdraft takes what it must whatever the balance (down to the floor); a lease takes what the
          // balance has, less what other nodes' leases owe.
          const available = request.overdraw === true
            ? balanceNow
            : balanceNow + (yield* leaseDebts(request.userId, request.nodeId))
          const wanted = request.grant(available)
          if (wanted < 0n) return yield* giveBack(request, -wanted, balanceNow)
          const limit = request.overdraw === true ? balanceNow + Money.MAX_NANOS : available
          const granted = wanted <= 0n || limit <= 0n ? 0n : wanted > limit ? limit : wanted
          const leaseId = request.leaseId
          if (granted === 0n) return { leaseId, grantedNanos: 0n, availableNanos: available }
          const now = yield* Clock.currentTimeMillis
          yield* sql`UPDATE users SET balance_nanos = balance_nanos - ${granted} WHERE id = ${request.userId}`
          const extended = yield* sql`UPDATE leases SET amount_nanos = amount_nanos + ${granted}, updated_at = ${now}
            WHERE id = ${leaseId} AND node_id = ${request.nodeId} RETURNING id`
          if (extended.length === 0) {
            yield* sql`INSERT INTO leases ${
              sql.insert({
                id: leaseId,
                user_id: request.userId,
                node_id: request.nodeId,
                amount_nanos: granted,
                created_at: now,
                updated_at: now
              })
            }`
          }
          yield* entry({
            userId: request.userId,
            kind: "hold",
            amountNanos: -granted,
            holdId: leaseId,
            requestId: null,
            reason: request.overdraw === true
              ? `taken by gateway node ${request.nodeId} for calls that cost more than they held`
              : `reserved by gateway node ${request.nodeId} for calls in progress`,
            actor: null,
            createdAt: now
          })
          return { leaseId, grantedNanos: granted, availableNanos: available }
        }))
      })

      const heartbeat = (nodeId: string) =>
        Effect.flatMap(
          Clock.currentTimeMillis,
          (now) =>
            sql`INSERT INTO nodes (id, started_at, seen_at) VALUES (${nodeId}, ${now}, ${now})
            ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at`.pipe(Effect.asVoid)
        )

      const spendable = (userId: string, exceptNodeId?: string) =>
        Effect.flatMap(
          sql`SELECT balance_nanos + COALESCE((SELECT SUM(amount_nanos) FROM leases WHERE user_id = ${userId}
              AND node_id <> ${exceptNodeId ?? ""}), 0) AS total
            FROM users WHERE id = ${userId}`,
          (rows) =>
            rows[0] === undefined
              ? Effect.fail(userNotFound(userId))
              : Effect.succeed(Row.big(rows[0].total, "users.balance_nanos + leases"))
        )

      const sweepHolds = Effect.fn("Accounts.sweepHolds")(function*(selector: SweepSelector) {
        let holds: ReadonlyArray<Record<string, unknown>>
        let leased: ReadonlyArray<Record<string, unknown>> = []
        if ("nodeId" in selector) {
          holds = yield* sql`SELECT id FROM holds WHERE node_id = ${selector.nodeId}`
          leased = yield* sql`SELECT id FROM leases WHERE node_id = ${selector.nodeId}`
        } else if ("olderThanMs" in selector) {
          const cutoff = (yield* Clock.currentTimeMillis) - selector.olderThanMs
          holds = yield* sql`SELECT id FROM holds WHERE created_at < ${cutoff}`
        } else {
          const cutoff = (yield* Clock.currentTimeMillis) - selector.deadAfterMs
          const alive = sql`SELECT id FROM nodes WHERE seen_at >= ${cutoff}`
          holds = yield* sql`SELECT id FROM holds WHERE node_id <> ${selector.except} AND node_id NOT IN (${alive})`
          leased = yield* sql`SELECT id FROM leases WHERE node_id <> ${selector.except} AND node_id NOT IN (${alive})`
          yield* sql`DELETE FROM nodes WHERE seen_at < ${cutoff} AND id <> ${selector.except}`
        }
        let released = 0
        for (const row of holds) {
          const result = yield* settleUnchecked(Row.str(row.id, "holds.id"), 0n)
          if (result.settled) released++
        }
        for (const row of leased) {
          const now = yield* Clock.currentTimeMillis
          if (yield* sql.withTransaction(LeaseSql.release(sql, Row.str(row.id, "leases.id"), now))) released++
        }
        if (released > 0) yield* Effect.logWarning(`Released ${released} orphaned balance hold(s) and lease(s)`)
        return released
      })

      const spent = (userId: string, fromMs: number, toMs: number) =>
        Effect.map(
          sql`SELECT COALESCE(SUM(amount_nanos), 0) AS total FROM ledger
            WHERE user_id = ${userId} AND kind = 'charge' AND created_at >= ${fromMs} AND created_at < ${toMs}`,
          (rows) => -Row.big(rows[0]?.total ?? 0, "ledger.total")
        )

      return Accounts.of({
        spent,
        balance,
        hold,
        settle,
        release: (holdId) => settleUnchecked(holdId, 0n),
        lease,
        heartbeat,
        spendable,
        topUp: credit("topup", false),
        adjust: credit("adjustment", true),
        sweepHolds,
        ledgerSum: (userId) =>
          Effect.map(
            sql`SELECT COALESCE(SUM(amount_nanos), 0) AS total FROM ledger WHERE user_id = ${userId}`,
            (rows) => Row.big(rows[0]!.total, "SUM(ledger.amount_nanos)")
          ),
        ledger: (userId, page) =>
          Effect.map(
            sql`SELECT * FROM ledger WHERE user_id = ${userId} ORDER BY created_at DESC, id DESC
              LIMIT ${Math.max(1, Math.min(1000, page.limit))} OFFSET ${Math.max(0, page.offset ?? 0)}`,
            (rows) => rows.map(decodeEntry)
          )
      })
    })
  )
}
