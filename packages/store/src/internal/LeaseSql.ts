/**
 * The statements behind leases, shared by `Accounts` (taking and sweeping
 * leases) and the batch writer (charging calls against leases, releasing them).
 * Each function runs its statements in the caller's transaction.
 *
 * Ledger bookkeeping: a lease's 'hold' entry took its amount from the balance.
 * When a batch charges calls against the lease, the lease shrinks by their
 * total and the ledger gets one 'release' of that total (the reserved money
 * that became charges) and one 'charge' per call, so the balance stays equal
 * to the sum of the ledger at every commit. Releasing a lease returns what is
 * left of it to the balance with a final 'release'.
 *
 * A call is charged what it cost, in full, even above its hold. The node
 * normally takes such an overrun from the balance at once (an overdrawing
 * `lease`); when it could not (the database was unreachable), the lease's
 * charges exceed it and the lease goes below zero: it owes that much, which
 * its release takes from the balance (a negative 'release'), and which holds
 * and other nodes' leases count against the balance until then. No balance
 * and no lease goes below `-MAX_NANOS`, so the 64-bit columns never
 * overflow: what a charge would take beyond that floor is not taken, and its
 * entry says so.
 *
 * @since 0.1.0
 */
import { Accounts, Money } from "@modelgate/core"
import { Array as Arr, Effect } from "effect"
import type { SqlClient, SqlError } from "effect/sql"
import * as MultiInsert from "./MultiInsert.ts"
import { newSortableId } from "./random.ts"
import * as Row from "./row.ts"

/**
 * One call's charge, taken from a lease (or, when `leaseId` is null or the
 * lease is gone, from the balance directly), in full.
 */
export interface Charge {
  readonly leaseId: string | null
  readonly userId: string
  readonly keyId: string
  readonly requestId: string
  readonly chargedNanos: bigint
  /**
   * What the call cost beyond `chargedNanos` and is not charged: only what the
   * floor of a balance (`-MAX_NANOS`) left out. (In journals written by
   * earlier versions, what a lease that ran out did not cover, then never charged.)
   */
  readonly shortfallNanos: bigint
  readonly at: number
}

/** The lowest a balance or a lease may go: `-MAX_NANOS`. */
export const FLOOR: bigint = -Money.MAX_NANOS

/** The UTC day of a time, as a `key_spend` period: `d:2026-11-22`. */
export const dayPeriod = (ms: number): string => `d:${new Date(ms).toISOString().slice(0, 10)}`

/** The UTC month of a time, as a `key_spend` period: `m:2026-11`. */
export const monthPeriod = (ms: number): string => `m:${new Date(ms).toISOString().slice(0, 7)}`

const DAY_MS = 86_400_000

/** The day (days since the epoch, UTC) `periodsOf` last named, and its periods. */
let lastDay = Number.NaN
let lastPeriods: readonly [string, string] = ["", ""]

/**
 * The UTC day and month of a time, as `key_spend` periods. Every charge asks
 * for them, nearly always for the day asked last: that day's pair is kept
 * (two dates formatted once a day, not on every charge).
 */
export const periodsOf = (ms: number): readonly [string, string] => {
  const day = Math.floor(ms / DAY_MS)
  if (day !== lastDay) {
    lastPeriods = [dayPeriod(ms), monthPeriod(ms)]
    lastDay = day
  }
  return lastPeriods
}

/**
 * The reason on a 'charge' entry: by how much it took the balance below zero,
 * and what it could not take at the floor of a balance (null: neither).
 */
export const chargeReason = (overdrawn: bigint, shortfall: bigint): string | null => {
  const parts: Array<string> = []
  if (overdrawn > 0n) {
    parts.push(
      `the call cost more than it held: ${Money.formatUsd(overdrawn)} USD of it was more than the balance had, ` +
        "which went below zero"
    )
  }
  if (shortfall > 0n) {
    parts.push(
      `shortfall of ${Money.formatUsd(shortfall)} USD: not charged, the balance reached the lowest the gateway keeps ` +
        `(${Money.formatUsd(FLOOR)} USD)`
    )
  }
  return parts.length === 0 ? null : parts.join("; ")
}

/** Adds to a key's spending: its lifetime counter and its `key_spend` row of one period. */
export const addKeySpend = (
  sql: SqlClient.SqlClient,
  keyId: string,
  amountNanos: bigint,
  periods: ReadonlyArray<string>
): Effect.Effect<void, SqlError.SqlError> =>
  Effect.gen(function*() {
    if (amountNanos !== 0n) {
      yield* sql`UPDATE api_keys SET spent_nanos = spent_nanos + ${amountNanos} WHERE id = ${keyId}`
    }
    for (const period of periods) yield* addPeriodSpend(sql, keyId, period, amountNanos)
  })

const addPeriodSpend = (sql: SqlClient.SqlClient, keyId: string, period: string, amountNanos: bigint) =>
  sql`INSERT INTO key_spend (key_id, period, spent_nanos) VALUES (${keyId}, ${period}, ${amountNanos})
    ON CONFLICT (key_id, period) DO UPDATE SET spent_nanos = key_spend.spent_nanos + excluded.spent_nanos`

const ledgerRow = (
  userId: string,
  kind: "charge" | "release",
  amountNanos: bigint,
  holdId: string | null,
  requestId: string | null,
  reason: string | null,
  createdAt: number
) => ({
  id: newSortableId("led"),
  user_id: userId,
  kind,
  amount_nanos: amountNanos,
  hold_id: holdId,
  request_id: requestId,
  reason,
  actor: null,
  created_at: createdAt
})

/**
 * Locks the users' rows (PostgreSQL; SQLite transactions are serial anyway),
 * in id order. Every transaction that moves money takes these locks first, so
 * they never deadlock on each other.
 */
export const lockUsers = (
  sql: SqlClient.SqlClient,
  userIds: ReadonlyArray<string>
): Effect.Effect<void, SqlError.SqlError> => {
  if (userIds.length === 0) return Effect.void
  return sql.onDialectOrElse({
    pg: () =>
      Effect.asVoid(sql`SELECT id FROM users WHERE id IN ${sql.in([...userIds].sort())} ORDER BY id FOR UPDATE`),
    orElse: () => Effect.void
  })
}

/**
 * Writes a batch of charges, each at most once: a batch written again after
 * its COMMIT's answer was lost finds its charges already there and changes
 * nothing.
 *
 * 1. Each charge is claimed by inserting its 'charge' ledger entry, keyed by
 *    the call's request id (unique among charges): insert or nothing. Only the
 *    charges whose entry was inserted go on.
 * 2. Per lease, one decrement of their total (the lease may go below zero:
 *    charges above their holds the node could not take from the balance at
 *    once) and one 'release' (the reserved money that became charges).
 * 3. When the lease is gone (swept while this node could not reach the
 *    database, or charged after its release at a forced shutdown), or the
 *    decrement would take it below the floor, the charges are taken from the
 *    balance directly, in full, below zero if need be: an entry that reached
 *    the floor of the balance is corrected to what was taken, its reason
 *    naming the rest.
 * 4. The keys' spending counters, summed per key and per period.
 */
export const applyCharges = (
  sql: SqlClient.SqlClient,
  charges: ReadonlyArray<Charge>,
  now: number
): Effect.Effect<void, SqlError.SqlError> =>
  Effect.gen(function*() {
    // Lock order, everywhere money moves: the users' rows first (sorted, so two
    // writers never wait on each other), then leases and holds, then keys.
    yield* lockUsers(sql, [...new Set(charges.map((charge) => charge.userId))])
    const entries = charges.map((charge) => ({
      charge,
      row: ledgerRow(
        charge.userId,
        "charge",
        -charge.chargedNanos,
        charge.leaseId,
        charge.requestId,
        chargeReason(0n, charge.shortfallNanos),
        charge.at
      )
    }))
    const rows: Array<Record<string, unknown>> = entries.map((entry) => entry.row)
    if (!Arr.isReadonlyArrayNonEmpty(rows)) return
    // Written by hand (`MultiInsert`): the batch's one statement per call kind, not compiled anew per batch.
    const [text, params] = MultiInsert.multiInsert(
      "ledger",
      rows,
      sql.onDialectOrElse({ pg: () => true, orElse: () => false }),
      "ON CONFLICT (request_id) WHERE kind = 'charge' DO NOTHING RETURNING request_id"
    )
    const inserted = yield* sql.unsafe<{ readonly request_id: string }>(text, params)
    const claimed = new Set(inserted.map((row) => row.request_id))
    const groups = new Map<string, Array<(typeof entries)[number]>>()
    for (const entry of entries) {
      // A request id claims its entry once, even if a batch held it twice.
      if (!claimed.delete(entry.charge.requestId)) continue
      const group = `${entry.charge.leaseId ?? ""}\u0000${entry.charge.userId}`
      const list = groups.get(group)
      if (list === undefined) groups.set(group, [entry])
      else list.push(entry)
    }
    const releases: Array<Record<string, unknown>> = []
    const spentByKey = new Map<string, bigint>()
    const spentByPeriod = new Map<string, { keyId: string; period: string; amount: bigint }>()
    const addSpend = (keyId: string, amount: bigint, at: number) => {
      if (amount === 0n) return
      spentByKey.set(keyId, (spentByKey.get(keyId) ?? 0n) + amount)
      for (const period of periodsOf(at)) {
        const id = `${keyId}\u0000${period}`
        const current = spentByPeriod.get(id)
        if (current === undefined) spentByPeriod.set(id, { keyId, period, amount })
        else spentByPeriod.set(id, { ...current, amount: current.amount + amount })
      }
    }
    for (const group of groups.values()) {
      const { leaseId, userId } = group[0]!.charge
      let total = 0n
      for (const { charge } of group) total += charge.chargedNanos
      // The lease may go below zero, not below the floor (compared against constants: nothing adds past 64 bits).
      const taken = leaseId === null || total === 0n || total > Money.MAX_NANOS
        ? []
        : yield* sql`UPDATE leases SET amount_nanos = amount_nanos - ${total}, updated_at = ${now}
            WHERE id = ${leaseId} AND amount_nanos >= ${FLOOR + total} RETURNING id`
      if (taken.length > 0 || total === 0n) {
        if (total > 0n) {
          releases.push(
            ledgerRow(
              userId,
              "release",
              total,
              leaseId,
              null,
              `${group.length} call(s) charged from this reservation`,
              now
            )
          )
        }
        for (const { charge } of group) addSpend(charge.keyId, charge.chargedNanos, charge.at)
        continue
      }
      const users = yield* sql`SELECT balance_nanos FROM users WHERE id = ${userId}`
      if (users[0] === undefined) continue
      let balance = Row.big(users[0].balance_nanos, "users.balance_nanos")
      let charged = 0n
      for (const { charge, row } of group) {
        // Whole, below zero if need be, down to the floor.
        const room = balance - FLOOR
        const take = charge.chargedNanos <= room ? charge.chargedNanos : room > 0n ? room : 0n
        const overdrawn = Accounts.overdrawn(balance, take)
        balance -= take
        charged += take
        addSpend(charge.keyId, take, charge.at)
        if (take === charge.chargedNanos && leaseId === null && overdrawn === 0n) continue
        // Taken from the balance, not the lease: the entry names no lease, and says what went below zero or was short.
        yield* sql`UPDATE ledger SET amount_nanos = ${-take}, hold_id = ${null},
            reason = ${
          chargeReason(overdrawn, charge.shortfallNanos + charge.chargedNanos - take)
        } WHERE id = ${row.id}`
      }
      yield* sql`UPDATE users SET balance_nanos = balance_nanos - ${charged} WHERE id = ${userId}`
    }
    if (Arr.isReadonlyArrayNonEmpty(releases)) yield* sql`INSERT INTO ledger ${sql.insert(releases)}`
    // Summed per key and per period first: a batch's charges may fall on both sides of midnight.
    for (const [keyId, amount] of spentByKey) yield* addKeySpend(sql, keyId, amount, [])
    for (const { keyId, period, amount } of spentByPeriod.values()) yield* addPeriodSpend(sql, keyId, period, amount)
  })

/**
 * Ends a lease: what is left of it goes back to the balance, with a 'release'
 * entry. Returns false when the lease was already gone.
 */
export const release = (
  sql: SqlClient.SqlClient,
  leaseId: string,
  now: number
): Effect.Effect<boolean, SqlError.SqlError> =>
  Effect.gen(function*() {
    const owner = yield* sql`SELECT user_id FROM leases WHERE id = ${leaseId}`
    if (owner[0] === undefined) return false
    yield* lockUsers(sql, [Row.str(owner[0].user_id, "leases.user_id")])
    const rows = yield* sql`DELETE FROM leases WHERE id = ${leaseId} RETURNING user_id, amount_nanos`
    const row = rows[0]
    if (row === undefined) return false
    const userId = Row.str(row.user_id, "leases.user_id")
    const amount = Row.big(row.amount_nanos, "leases.amount_nanos")
    if (amount > 0n) {
      yield* sql`UPDATE users SET balance_nanos = balance_nanos + ${amount} WHERE id = ${userId}`
      yield* sql`INSERT INTO ledger ${
        sql.insert(ledgerRow(userId, "release", amount, leaseId, null, "reservation ended", now))
      }`
    } else if (amount < 0n) {
      // A lease that owes (its calls cost more than it reserved): the balance pays, below zero if need be.
      const users = yield* sql`SELECT balance_nanos FROM users WHERE id = ${userId}`
      const balance = users[0] === undefined ? 0n : Row.big(users[0].balance_nanos, "users.balance_nanos")
      const room = balance - FLOOR
      const taken = -amount <= room ? -amount : room > 0n ? room : 0n
      if (taken > 0n) {
        yield* sql`UPDATE users SET balance_nanos = balance_nanos - ${taken} WHERE id = ${userId}`
        yield* sql`INSERT INTO ledger ${
          sql.insert(
            ledgerRow(
              userId,
              "release",
              -taken,
              leaseId,
              null,
              `reservation ended owing ${Money.formatUsd(-amount)} USD: its calls cost more than they held${
                taken < -amount ? `; ${Money.formatUsd(-amount - taken)} USD of it not taken (the balance's floor)` : ""
              }`,
              now
            )
          )
        }`
      }
    }
    return true
  })
