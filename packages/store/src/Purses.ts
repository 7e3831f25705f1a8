/**
 * Core's `Accounts` port with no database on a call's path: balance leases.
 *
 * A gateway process (a node) reserves part of a user's balance in the
 * database, a *lease* (`Accounts.lease`: one conditional update and a 'hold'
 * ledger entry, so it is atomic across every node sharing the database). The
 * holds of that user's calls are then taken from the lease in memory, and
 * their charges are queued to the batch writer (`UsageWriter.charge`), which
 * commits them with the usage records in one transaction per batch. Whatever
 * a call does not spend goes back to the lease at once. A lease that no call
 * has used for `leaseIdleMs` is released (after the charges queued before it).
 *
 * Never overspent: the sum of a user's leases never exceeds their balance
 * (each was taken by a conditional update), and a node never holds more than
 * its lease. Near the end of a balance the policy (`leaseGrant`) reserves only
 * what each call needs, so a balance that pays for exactly N calls admits
 * exactly N, as one database hold per call would.
 *
 * Two exceptions take the database path of `Accounts.hold`/`settle`: keys
 * with a spending cap (the cap is checked against the key's spending as every
 * node sees it) and zero-amount holds (free models) take no lease at all.
 *
 * What a crash costs: charges still queued (at most one flush interval of
 * calls) are lost, and the node's leases return whole to the balance when
 * they are swept (at the node's next start on SQLite, by the other nodes once
 * its heartbeat stops on PostgreSQL). No balance is ever stuck or overdrawn.
 *
 * @since 0.1.0
 */
import { Accounts as AccountsPort, GatewayError } from "@modelgate/core"
import { Clock, Duration, Effect, Layer, Schedule, Semaphore } from "effect"
import { Accounts } from "./Accounts.ts"
import { UsageWriter } from "./UsageWriter.ts"

/**
 * Options of the purses.
 *
 * @category models
 */
export interface PurseOptions {
  /** This process's id (leases and database holds are tagged with it). */
  readonly nodeId: string
  /** false: every call holds in the database (`Accounts.hold`), as keys with spending caps always do (default true). */
  readonly leases?: boolean | undefined
  /** A lease prefetches beyond a call's need only while the available balance covers this many of its holds (default 64). */
  readonly leaseMinCalls?: number | undefined
  /** How many holds of the call a lease prefetches (default 16); doubled while leases run out within a second. */
  readonly leasePrefetchCalls?: number | undefined
  /** One lease takes at most the available balance divided by this (default 4), leaving room for other nodes. */
  readonly leaseShareDivisor?: number | undefined
  /** A lease no call has used for this long goes back to the balance (default 1,000 ms). */
  readonly leaseIdleMs?: number | undefined
}

/**
 * The lease policy: how much of the available balance to reserve when a call
 * needs `deficitNanos` more than its node's lease holds.
 *
 * - nothing, if the balance cannot cover the deficit (the call is refused);
 * - exactly the deficit while the balance covers fewer than `minCalls` holds
 *   of the call (near the end of a balance, so nothing sits reserved on one
 *   node that a call on another could use);
 * - otherwise the deficit plus `prefetchNanos`, but no more than the
 *   balance divided by `shareDivisor` (and never less than the deficit).
 *
 * @category policy
 */
export const leaseGrant = (options: {
  readonly availableNanos: bigint
  readonly deficitNanos: bigint
  readonly holdNanos: bigint
  readonly prefetchNanos: bigint
  readonly minCalls: number
  readonly shareDivisor: number
}): bigint => {
  const { availableNanos: available, deficitNanos: deficit } = options
  if (available < deficit) return 0n
  if (available < options.holdNanos * BigInt(options.minCalls)) return deficit
  const cap = available / BigInt(options.shareDivisor)
  const want = deficit + options.prefetchNanos
  const grant = want < cap ? want : cap
  return grant > deficit ? grant : deficit
}

interface Purse {
  readonly userId: string
  readonly lock: Semaphore.Semaphore
  leaseId: string | null
  /** Reserved by the lease and not held by a call in progress. */
  remaining: bigint
  inFlight: number
  /** Calls waiting for the lease to be extended. */
  waiting: number
  lastUsedAt: number
  lastGrantAt: number
  /** Multiplies the prefetch; doubles while leases run out within a second, halves back when they last. */
  scale: number
}

interface LocalHold {
  /** Null for a hold of nothing (a free model): no lease is involved. */
  readonly purse: Purse | null
  readonly userId: string
  readonly keyId: string
  readonly requestId: string
  readonly amount: bigint
}

const MAX_SCALE = 1024

/**
 * The purses as core's `Accounts` port. Releases every lease when the layer
 * closes (before the writer's final flush, which it depends on).
 *
 * @category layers
 */
export const layer = (options: PurseOptions): Layer.Layer<AccountsPort.Accounts, never, Accounts | UsageWriter> =>
  Layer.effect(
    AccountsPort.Accounts,
    Effect.gen(function*() {
      const accounts = yield* Accounts
      const writer = yield* UsageWriter
      const minCalls = Math.max(1, options.leaseMinCalls ?? 64)
      const prefetchCalls = Math.max(0, options.leasePrefetchCalls ?? 16)
      const shareDivisor = Math.max(1, options.leaseShareDivisor ?? 4)
      const idleMs = Math.max(0, options.leaseIdleMs ?? 1_000)
      const useLeases = options.leases ?? true

      const purses = new Map<string, Purse>()
      const localHolds = new Map<string, LocalHold>()
      const databaseHolds = new Set<string>()
      let sequence = 0

      const internal = (what: string) => (cause: unknown) =>
        Effect.logError(`${what} failed`, cause).pipe(
          Effect.andThen(Effect.fail(new GatewayError.InternalError({ message: "The gateway could not update your balance. Please retry." })))
        )

      const purseOf = (userId: string, now: number): Purse => {
        let purse = purses.get(userId)
        if (purse === undefined) {
          purse = {
            userId,
            lock: Semaphore.makeUnsafe(1),
            leaseId: null,
            remaining: 0n,
            inFlight: 0,
            waiting: 0,
            lastUsedAt: now,
            lastGrantAt: 0,
            scale: 1
          }
          purses.set(userId, purse)
        }
        return purse
      }

      const take = (purse: Purse | null, request: AccountsPort.HoldRequest, now: number): string => {
        if (purse !== null) {
          purse.remaining -= request.amountNanos
          purse.inFlight++
          purse.lastUsedAt = now
        }
        const id = `lh_${++sequence}`
        localHolds.set(id, { purse, userId: request.userId, keyId: request.keyId, requestId: request.requestId, amount: request.amountNanos })
        return id
      }

      const databaseHold = (request: AccountsPort.HoldRequest) =>
        accounts.hold({ ...request, nodeId: options.nodeId }).pipe(
          Effect.tap((id) => Effect.sync(() => databaseHolds.add(id))),
          Effect.catchTag(["ResourceNotFound", "InvalidInput", "SqlError"], internal("balance hold"))
        )

      const extendAndTake = (purse: Purse, request: AccountsPort.HoldRequest) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          // Another call may have extended the lease while this one waited.
          if (purse.remaining >= request.amountNanos) return take(purse, request, now)
          if (now - purse.lastGrantAt < 1_000) purse.scale = Math.min(MAX_SCALE, purse.scale * 2)
          else if (purse.scale > 1) purse.scale = Math.max(1, purse.scale / 2)
          const deficit = request.amountNanos - purse.remaining
          const prefetch = request.amountNanos * BigInt(Math.max(prefetchCalls, purse.inFlight) * purse.scale)
          // Taken and recorded uninterruptibly: a lease committed but not recorded would stay
          // reserved, unused, until the node restarts. An interruption lands after it, before the hold.
          const grant = yield* accounts.lease({
            userId: purse.userId,
            nodeId: options.nodeId,
            leaseId: purse.leaseId,
            grant: (availableNanos) =>
              leaseGrant({
                availableNanos,
                deficitNanos: deficit,
                holdNanos: request.amountNanos,
                prefetchNanos: prefetch,
                minCalls,
                shareDivisor
              })
          }).pipe(
            Effect.tap((grant) =>
              Effect.sync(() => {
                if (grant.grantedNanos === 0n) return
                purse.leaseId = grant.leaseId
                purse.remaining += grant.grantedNanos
                purse.lastGrantAt = now
              })
            ),
            Effect.uninterruptible,
            Effect.catchTag(["ResourceNotFound", "SqlError"], internal("balance lease"))
          )
          if (grant.grantedNanos === 0n) return yield* AccountsPort.insufficientBalance(grant.availableNanos + purse.remaining, request)
          return take(purse, request, now)
        })

      const hold = (
        request: AccountsPort.HoldRequest
      ): Effect.Effect<string, GatewayError.InsufficientBalance | GatewayError.SpendingCapReached | GatewayError.InternalError> =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          if (request.amountNanos <= 0n) return Effect.succeed(take(null, request, now))
          if (request.capped === true || !useLeases) return databaseHold(request)
          const purse = purseOf(request.userId, now)
          if (purse.remaining >= request.amountNanos) return Effect.succeed(take(purse, request, now))
          purse.waiting++
          return purse.lock.withPermit(extendAndTake(purse, request)).pipe(
            Effect.ensuring(Effect.sync(() => purse.waiting--))
          )
        })

      const settle = (holdId: string, charge: bigint): Effect.Effect<AccountsPort.Settled, GatewayError.InternalError> => {
        // A negative charge would add money to the lease (or be refused by the database path, stranding
        // the hold): it charges nothing and releases the hold.
        const chargeNanos = charge < 0n ? 0n : charge
        if (databaseHolds.has(holdId)) {
          databaseHolds.delete(holdId)
          return accounts.settle(holdId, chargeNanos).pipe(
            Effect.map((settled): AccountsPort.Settled => ({ chargedNanos: settled.chargedNanos, shortfallNanos: settled.shortfallNanos })),
            Effect.catch(internal("settlement"))
          )
        }
        const local = localHolds.get(holdId)
        if (local === undefined) return Effect.succeed(AccountsPort.nothingSettled)
        localHolds.delete(holdId)
        return Effect.flatMap(Clock.currentTimeMillis, (now) => {
          const { purse } = local
          let charged = chargeNanos
          if (purse !== null) {
            purse.inFlight--
            purse.lastUsedAt = now
            purse.remaining += local.amount
            if (charged > purse.remaining) charged = purse.remaining
            purse.remaining -= charged
          }
          if (chargeNanos <= 0n) return Effect.succeed(AccountsPort.nothingSettled)
          const settled: AccountsPort.Settled = { chargedNanos: charged, shortfallNanos: chargeNanos - charged }
          return Effect.as(
            writer.charge({
              leaseId: purse?.leaseId ?? null,
              userId: purse?.userId ?? local.userId,
              keyId: local.keyId,
              requestId: local.requestId,
              chargedNanos: charged,
              shortfallNanos: settled.shortfallNanos,
              at: now
            }),
            settled
          )
        })
      }

      /**
       * Releases the leases no call has used for `leaseIdleMs` (all of them with `force`). The
       * purses are chosen and dropped in one synchronous step, so no call can take a hold from a
       * purse between the check that it is idle and its release.
       */
      const releaseIdle = (force: boolean) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          const released: Array<string> = []
          for (const purse of purses.values()) {
            if (!force && (purse.inFlight > 0 || purse.waiting > 0 || now - purse.lastUsedAt < idleMs)) continue
            purses.delete(purse.userId)
            if (purse.leaseId !== null) released.push(purse.leaseId)
          }
          return Effect.forEach(released, writer.releaseLease, { discard: true })
        })

      yield* releaseIdle(false).pipe(
        Effect.repeat(Schedule.spaced(Duration.millis(Math.max(50, Math.min(idleMs, 250))))),
        Effect.forkScoped
      )
      yield* Effect.addFinalizer(() => releaseIdle(true))

      const balance = (userId: string) => {
        // This node's lease is counted from memory (what calls in progress here do not hold,
        // with charges not yet written already taken off); other nodes' from the database.
        const purse = purses.get(userId)
        return accounts.spendable(userId, purse === undefined ? undefined : options.nodeId).pipe(
          Effect.map((spendable) => purse === undefined ? spendable : spendable + purse.remaining),
          Effect.catchTag(["ResourceNotFound", "SqlError"], internal("balance read"))
        )
      }

      const spent = (userId: string, fromMs: number, toMs: number) =>
        accounts.spent(userId, fromMs, toMs).pipe(Effect.catchTag("SqlError", internal("spending read")))

      return AccountsPort.Accounts.of({ hold, settle, balance, spent })
    })
  )
