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
 * has used for `leaseIdleMs` is released (after the charges queued before it),
 * or, when its calls were charged, for `leaseCoverSeconds`: a user who called
 * within that time finds the lease still there when an outage starts, whatever
 * their rate.
 *
 * Never admitted beyond the balance: the sum of a user's leases never exceeds
 * their balance (each was taken by a conditional update), and a node never
 * holds more than its lease. Near the end of a balance the policy
 * (`leaseGrant`) reserves only what each call needs, so a balance that pays
 * for exactly N calls admits exactly N, as one database hold per call would.
 *
 * A call is charged what it cost, all of it: a charge above the call's hold
 * is taken from the lease, and what the lease does not cover is taken from
 * the balance at once (an overdrawing `Accounts.lease`, one transaction, only
 * for such calls), which may take it below zero; the user's next calls are
 * then refused until a top-up. While the database cannot be reached the lease
 * owes it instead (its remainder goes below zero, and so does the lease when
 * its charges are written), and every hold counts that debt against the
 * balance until it is paid.
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
 * When the database cannot be reached, calls go on from what the leases hold
 * (their charges queue in the writer), so a lease is sized to cover
 * `leaseCoverSeconds` of the user's recent spending: a short outage passes
 * unnoticed. A call that needs the database (a lease to extend, a capped key)
 * gets `DatabaseUnavailable` (503 with `retry-after`), at once for a second
 * after a failure rather than waiting on the database again; the balance shown
 * (`balance`) is the last one read. Failures are logged once per outage
 * (`OutageLog`), not per call.
 *
 * @since 0.1.0
 */
import { Accounts as AccountsPort, GatewayError } from "@modelgate/core"
import { OutageLog } from "@modelgate/core"
import { Cause, Clock, Duration, Effect, Layer, Schedule, Semaphore } from "effect"
import { SqlError } from "effect/sql"
import { Accounts } from "./Accounts.ts"
import * as Bounded from "./internal/bounded.ts"
import { newId } from "./internal/random.ts"
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
  /**
   * A lease no call has used for this long goes back to the balance (default
   * 1,000 ms); a lease whose calls were charged is kept at least
   * `leaseCoverSeconds` after its last call.
   */
  readonly leaseIdleMs?: number | undefined
  /**
   * A lease reserves at least this many seconds of the user's recent spending
   * on this node (default 30), so calls go on from memory while the database
   * is briefly unreachable; 0 sizes leases by calls only.
   */
  readonly leaseCoverSeconds?: number | undefined
  /**
   * How long a call waits for the database (a lease to extend, a capped key's
   * hold, a settlement, the balance shown) before it gets `DatabaseUnavailable`,
   * or the balance as last read (default 1,000 ms). The work goes on in the
   * background; what it took is kept (a lease) or given back (a hold).
   */
  readonly databaseWaitMs?: number | undefined
}

/** Default bound of a call's wait on the database. @category constants */
export const DATABASE_WAIT_MS = Bounded.CALL_WAIT_MS

/** How long `DatabaseUnavailable` tells a client to wait. @category constants */
export const DATABASE_RETRY_AFTER_SECONDS = 5

/** After a database failure, how long calls that need the database are refused at once rather than tried. @category constants */
export const DATABASE_BACKOFF_MS = 1_000

/** The window of "recent" spending a lease is sized by: its rate decays with this time constant. @category constants */
export const SPEND_RATE_WINDOW_MS = 10_000

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
  /**
   * The id of this purse's lease, chosen before the lease is first written: a
   * lease whose creation's answer was lost is found again by the next extension
   * (and released with the purse) rather than left behind.
   */
  leaseId: string | null
  /**
   * Reserved by the lease and not held by a call in progress. Below zero when
   * calls cost more than the lease had and the balance could not be reached
   * to take the rest: the lease owes that much.
   */
  remaining: bigint
  inFlight: number
  /** Calls waiting for the lease to be extended. */
  waiting: number
  lastUsedAt: number
  lastGrantAt: number
  /** Multiplies the prefetch; doubles while leases run out within a second, halves back when they last. */
  scale: number
  /** A top-up of the lease is running in the background. */
  refilling: boolean
  /** The node is shutting down: no more top-ups. */
  closing: boolean
  /** What this node's calls of the user spent recently, in nano-dollars per second (decaying over `SPEND_RATE_WINDOW_MS`), at `rateAt`. */
  spendRate: number
  rateAt: number
}

/**
 * Adds a charge to a decaying spending rate (per second): the rate an
 * exponentially weighted window of `SPEND_RATE_WINDOW_MS` gives, so a steady
 * spend of `c` nano-dollars per second reads as `c`.
 *
 * @category policy
 */
export const addSpend = (rate: number, rateAt: number, chargedNanos: bigint, now: number): number =>
  spendRateAt(rate, rateAt, now) + Number(chargedNanos) / (SPEND_RATE_WINDOW_MS / 1000)

/** A decaying spending rate read at `now`. @category policy */
export const spendRateAt = (rate: number, rateAt: number, now: number): number =>
  rate === 0 ? 0 : rate * Math.exp(-Math.max(0, now - rateAt) / SPEND_RATE_WINDOW_MS)

interface LocalHold {
  /** Null for a hold of nothing (a free model): no lease is involved. */
  readonly purse: Purse | null
  readonly userId: string
  readonly keyId: string
  readonly requestId: string
  readonly amount: bigint
}

const MAX_SCALE = 1024

/** The last balance read from the database per user (what other nodes' leases and the balance hold), for display during an outage. */
const MAX_REMEMBERED_BALANCES = 100_000

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
      const coverSeconds = Math.max(0, options.leaseCoverSeconds ?? 30)
      const useLeases = options.leases ?? true
      const waitMs = Math.max(1, options.databaseWaitMs ?? DATABASE_WAIT_MS)

      const purses = new Map<string, Purse>()
      const localHolds = new Map<string, LocalHold>()
      const databaseHolds = new Set<string>()
      /**
       * Keys whose calls were charged on the lease path since the batch writer
       * was last seen empty: their charges may not be in the database yet.
       * A capped hold of such a key (a cap set since) flushes the writer first,
       * so the cap counts every charge this node made.
       */
      const leaseChargedKeys = new Set<string>()
      /** What each key's calls in flight hold from leases here: a cap set on the key meanwhile counts it. */
      const leaseHeldByKey = new Map<string, bigint>()
      const holdByKey = (keyId: string, amount: bigint) => {
        const held = (leaseHeldByKey.get(keyId) ?? 0n) + amount
        if (held === 0n) leaseHeldByKey.delete(keyId)
        else leaseHeldByKey.set(keyId, held)
      }
      /** What the user can spend beyond this node's lease, as last read (and when): shown while the database is down. */
      const lastBalance = new Map<string, { readonly nanos: bigint; readonly at: number }>()
      let sequence = 0
      const outage = OutageLog.make("balance holds and leases (the database)")
      /** Until when calls that need the database are refused at once, after a failure. */
      let downUntil = 0
      // Background top-ups run in the layer's scope; the shutdown waits for those in progress.
      const scope = yield* Effect.scope

      const remember = (userId: string, nanos: bigint) => {
        lastBalance.delete(userId)
        if (lastBalance.size >= MAX_REMEMBERED_BALANCES) lastBalance.delete(lastBalance.keys().next().value!)
        lastBalance.set(userId, { nanos, at: Date.now() })
      }

      /**
       * A call's wait on the database, bounded by `waitMs` (see `Bounded.within`): past it the
       * call fails as if the database were unreachable, and the work goes on in the background.
       */
      const bounded = <A, E>(
        work: Effect.Effect<A, E>,
        what: string,
        extra: { readonly abandoned?: () => void; readonly late?: (value: A) => Effect.Effect<unknown, unknown> } = {}
      ) => Bounded.within(work, { ms: waitMs, what, scope, answeredAt: () => answeredAt, ...extra })

      const unavailable = (what: string) =>
        new GatewayError.DatabaseUnavailable({
          message: `The gateway cannot reach its database right now, so it cannot ${what} (nothing was charged). ` +
            `Retry in ${DATABASE_RETRY_AFTER_SECONDS} s.`,
          retryAfterSeconds: DATABASE_RETRY_AFTER_SECONDS
        })

      /** A database failure: counted in the outage log, and the database left alone for a moment. */
      const databaseFailed = (cause: Cause.Cause<unknown>) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          downUntil = now + DATABASE_BACKOFF_MS
          return outage.failed(cause)
        })

      /** When the database last answered one of these calls (effect clock): a wait on it is cut only when it is silent. */
      let answeredAt = 0
      const databaseAnswered = Effect.flatMap(Clock.currentTimeMillis, (now) => {
        downUntil = 0
        answeredAt = now
        return outage.succeeded
      })

      /** Fails fast while a recent failure is being waited out. */
      const databaseGate = (what: string) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => now < downUntil ? Effect.fail(unavailable(what)) : Effect.void)

      /** Maps the store's failures to the port's: an unreachable database to 503, anything else to a logged 500. */
      const failure =
        (what: string) =>
        (error: unknown): Effect.Effect<never, GatewayError.DatabaseUnavailable | GatewayError.InternalError> =>
          SqlError.isSqlError(error)
            ? Effect.andThen(databaseFailed(Cause.fail(error)), Effect.fail(unavailable(what)))
            : Effect.andThen(
              Effect.logError(`${what}: unexpected failure`, error),
              Effect.fail(
                new GatewayError.InternalError({ message: "The gateway could not update your balance. Please retry." })
              )
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
            scale: 1,
            refilling: false,
            closing: false,
            spendRate: 0,
            rateAt: now
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
          holdByKey(request.keyId, request.amountNanos)
        }
        const id = `lh_${++sequence}`
        localHolds.set(id, {
          purse,
          userId: request.userId,
          keyId: request.keyId,
          requestId: request.requestId,
          amount: request.amountNanos
        })
        return id
      }

      /** Before a capped hold: the key's lease-path charges this node queued are written, so its cap sees them. */
      const chargesWritten = (keyId: string) =>
        Effect.suspend(() => {
          if (!leaseChargedKeys.has(keyId)) return Effect.void
          const written = [...leaseChargedKeys]
          leaseChargedKeys.clear()
          return writer.flush.pipe(
            Effect.tapCause(() => Effect.sync(() => written.forEach((key) => leaseChargedKeys.add(key))))
          )
        })

      /** A hold in the database; what this node's lease of the user owes (charges above their holds not yet taken) counts too. */
      const holdInDatabase = (request: AccountsPort.HoldRequest) =>
        Effect.suspend(() => {
          const remaining = purses.get(request.userId)?.remaining ?? 0n
          return accounts.hold({
            ...request,
            nodeId: options.nodeId,
            owedNanos: remaining < 0n ? -remaining : 0n,
            keyHeldElsewhereNanos: leaseHeldByKey.get(request.keyId) ?? 0n
          })
        })

      const databaseHold = (request: AccountsPort.HoldRequest) =>
        databaseGate("hold your balance for this call").pipe(
          Effect.andThen(bounded(
            Effect.andThen(
              request.capped === true ? chargesWritten(request.keyId) : Effect.void,
              holdInDatabase(request).pipe(
                // The balance column leaves out what this node's lease reserves: its unused part comes back, once.
                Effect.catchTag("InsufficientBalance", (refused) =>
                  Effect.flatMap(
                    Effect.suspend(() => giveBack(request.userId, purses.get(request.userId)?.remaining ?? 0n)),
                    (given) => given > 0n ? holdInDatabase(request) : Effect.fail(refused)
                  ))
              )
            ),
            "holding a balance in the database",
            // A hold taken after the call gave up waiting is nobody's: released at once.
            { late: (id) => accounts.settle(id, 0n) }
          )),
          Effect.tap((id) => Effect.andThen(Effect.sync(() => databaseHolds.add(id)), databaseAnswered)),
          Effect.catchTag(
            ["ResourceNotFound", "InvalidInput", "SqlError", "JournalError"],
            failure("hold your balance for this call")
          )
        )

      /** What the purse should keep on hand: `coverSeconds` of the user's recent spending on this node. */
      const reserveOf = (purse: Purse, now: number): bigint =>
        coverSeconds === 0 ? 0n : BigInt(Math.ceil(spendRateAt(purse.spendRate, purse.rateAt, now) * coverSeconds))

      /**
       * Extends the purse's lease by what the policy grants for `deficit` plus
       * `prefetch`. Taken and recorded uninterruptibly: a lease committed but
       * not recorded would stay reserved, unused, until the node restarts. An
       * interruption lands after it.
       */
      const extend = (purse: Purse, holdNanos: bigint, deficit: bigint, prefetch: bigint, now: number) => {
        purse.leaseId ??= newId("lea")
        return accounts.lease({
          userId: purse.userId,
          nodeId: options.nodeId,
          leaseId: purse.leaseId,
          grant: (availableNanos) =>
            leaseGrant({
              availableNanos,
              deficitNanos: deficit,
              holdNanos,
              prefetchNanos: prefetch,
              minCalls,
              shareDivisor
            })
        }).pipe(
          Effect.tap((grant) =>
            Effect.sync(() => {
              remember(purse.userId, grant.availableNanos - grant.grantedNanos)
              if (grant.grantedNanos === 0n) return
              purse.remaining += grant.grantedNanos
              purse.lastGrantAt = now
            })
          ),
          Effect.uninterruptible,
          Effect.tap(() => databaseAnswered)
        )
      }

      const extendAndTake = (purse: Purse, request: AccountsPort.HoldRequest, abandoned: () => boolean) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          // A call that gave up waiting takes nothing (what the lease got is kept for the next one).
          if (abandoned()) return yield* Effect.fail(unavailable("hold your balance for this call"))
          // Another call may have extended the lease while this one waited.
          if (purse.remaining >= request.amountNanos) return take(purse, request, now)
          if (now - purse.lastGrantAt < 1_000) purse.scale = Math.min(MAX_SCALE, purse.scale * 2)
          else if (purse.scale > 1) purse.scale = Math.max(1, purse.scale / 2)
          yield* databaseGate("hold your balance for this call")
          // Enough holds of this call for the calls in flight (scaled while leases run out fast), and
          // twice the reserve of recent spending (the lease is topped up when it falls below one).
          const byCalls = request.amountNanos * BigInt(Math.max(prefetchCalls, purse.inFlight) * purse.scale)
          const bySpend = 2n * reserveOf(purse, now)
          const grant = yield* extend(
            purse,
            request.amountNanos,
            request.amountNanos - purse.remaining,
            byCalls > bySpend ? byCalls : bySpend,
            now
          ).pipe(
            Effect.catchTag(["ResourceNotFound", "SqlError"], failure("hold your balance for this call"))
          )
          if (grant.grantedNanos === 0n) {
            return yield* AccountsPort.insufficientBalance(grant.availableNanos + purse.remaining, request)
          }
          if (abandoned()) return yield* Effect.fail(unavailable("hold your balance for this call"))
          return take(purse, request, now)
        })

      /**
       * Takes from the balance what the lease owes (its remainder below zero,
       * after a charge above its hold), at once: one overdrawing lease
       * extension, under the purse's lock, which may take the balance below
       * zero. Returns the balance before it (what other nodes and the
       * balance's holds had not taken) and what it took; undefined when the
       * lease owed nothing by the time the lock was had.
       */
      const cover = (purse: Purse) =>
        Effect.gen(function*() {
          const owed = -purse.remaining
          if (owed <= 0n) return undefined
          yield* databaseGate("charge this call")
          const now = yield* Clock.currentTimeMillis
          purse.leaseId ??= newId("lea")
          const grant = yield* accounts.lease({
            userId: purse.userId,
            nodeId: options.nodeId,
            leaseId: purse.leaseId,
            overdraw: true,
            grant: () => owed
          }).pipe(
            Effect.tap((grant) =>
              Effect.sync(() => {
                purse.remaining += grant.grantedNanos
                remember(purse.userId, grant.availableNanos - grant.grantedNanos)
                if (grant.grantedNanos > 0n) purse.lastGrantAt = now
              })
            ),
            Effect.uninterruptible
          )
          yield* databaseAnswered
          return grant
        }).pipe(purse.lock.withPermit)

      /**
       * After a call on the database path took the balance below zero: the
       * user's lease on this node gives what it has unused toward the debt (up
       * to the debt), so no call is admitted from a reserve of a balance that
       * is below zero. The reserve leaves the purse at once (no hold takes it
       * meanwhile), and comes back if the database could not take it. Returns
       * what was given.
       */
      const giveBack = (userId: string, debt: bigint): Effect.Effect<bigint> =>
        Effect.suspend(() => {
          const purse = purses.get(userId)
          if (purse === undefined || purse.leaseId === null || purse.remaining <= 0n) return Effect.succeed(0n)
          const give = purse.remaining < debt ? purse.remaining : debt
          purse.remaining -= give
          const leaseId = purse.leaseId
          return accounts.lease({ userId, nodeId: options.nodeId, leaseId, grant: () => -give }).pipe(
            Effect.map((grant) => {
              // The lease had less than the purse thought only if it was swept: give what it had.
              purse.remaining += give + grant.grantedNanos
              return -grant.grantedNanos
            }),
            Effect.uninterruptible,
            purse.lock.withPermit,
            Effect.catchCause((cause) =>
              Effect.as(
                Effect.andThen(
                  Effect.sync(() => {
                    purse.remaining += give
                  }),
                  Effect.logWarning("giving a lease's reserve back toward a debt failed; it stays reserved", cause)
                ),
                0n
              )
            )
          )
        })

      /**
       * Tops the lease up, off the call's path, when what it has left falls
       * below the reserve of recent spending: so at any moment the node holds
       * `coverSeconds` of the user's spending, and a database outage that
       * starts then passes unnoticed for that long. Near the end of a balance
       * the policy grants nothing beyond a call's need, so nothing is topped up.
       */
      const refillIfLow = (purse: Purse, holdNanos: bigint, now: number): Effect.Effect<void> => {
        if (purse.refilling || now < downUntil || purse.remaining >= reserveOf(purse, now)) return Effect.void
        const refill = Effect.gen(function*() {
          const at = yield* Clock.currentTimeMillis
          const wanted = 2n * reserveOf(purse, at) - purse.remaining
          if (purse.closing || wanted <= 0n || at < downUntil) return
          yield* extend(purse, holdNanos, 0n, wanted, at)
        }).pipe(
          purse.lock.withPermit,
          Effect.catchTag("SqlError", (error) => databaseFailed(Cause.fail(error))),
          Effect.catchCause((cause) => Effect.logWarning("topping up a balance lease failed", cause)),
          Effect.ensuring(Effect.sync(() => {
            purse.refilling = false
            purse.waiting--
          }))
        )
        // Marked and forked in one step: a purse marked busy always has its top-up running.
        return Effect.uninterruptible(Effect.suspend(() => {
          if (purse.refilling) return Effect.void
          purse.refilling = true
          purse.waiting++
          return Effect.asVoid(Effect.forkIn(Effect.interruptible(refill), scope))
        }))
      }

      const hold = (
        request: AccountsPort.HoldRequest
      ): Effect.Effect<
        string,
        | GatewayError.InsufficientBalance
        | GatewayError.SpendingCapReached
        | GatewayError.InternalError
        | GatewayError.DatabaseUnavailable
      > =>
        // Memory work on the usual path (a hold from the lease): one step, the clock read directly.
        Effect.clockWith((clock) => {
          const now = clock.currentTimeMillisUnsafe()
          if (request.amountNanos <= 0n) return Effect.succeed(take(null, request, now))
          // Neither the database nor the journal takes usage records and charges, and memory is
          // nearly full: no priced call is admitted until one of them does (nothing is ever dropped).
          if (!writer.admitting()) {
            return Effect.fail(
              new GatewayError.DatabaseUnavailable({
                message: "The gateway cannot record calls right now (its database and its usage journal both fail), " +
                  `so it takes no priced calls (nothing was charged). Retry in ${DATABASE_RETRY_AFTER_SECONDS} s.`,
                retryAfterSeconds: DATABASE_RETRY_AFTER_SECONDS
              })
            )
          }
          if (request.capped === true || !useLeases) return databaseHold(request)
          const purse = purseOf(request.userId, now)
          if (purse.remaining >= request.amountNanos) {
            const id = take(purse, request, now)
            const refill = refillIfLow(purse, request.amountNanos, now)
            return refill === Effect.void ? Effect.succeed(id) : Effect.as(refill, id)
          }
          purse.waiting++
          let abandoned = false
          return bounded(
            purse.lock.withPermit(extendAndTake(purse, request, () => abandoned)).pipe(
              Effect.ensuring(Effect.sync(() => purse.waiting--))
            ),
            "extending a balance lease",
            {
              abandoned: () => {
                abandoned = true
              }
            }
          ).pipe(Effect.catchTag("SqlError", failure("hold your balance for this call")))
        })

      const settle = (
        holdId: string,
        charge: bigint
      ): Effect.Effect<AccountsPort.Settled, GatewayError.InternalError | GatewayError.DatabaseUnavailable> => {
        // A negative charge would add money to the lease (or be refused by the database path, stranding
        // the hold): it charges nothing and releases the hold.
        const chargeNanos = charge < 0n ? 0n : charge
        if (databaseHolds.has(holdId)) {
          databaseHolds.delete(holdId)
          return bounded(accounts.settle(holdId, chargeNanos), "settling a call's hold").pipe(
            Effect.tap(() => databaseAnswered),
            Effect.flatMap((settled) =>
              Effect.map(
                settled.overdrawnNanos > 0n ? giveBack(settled.userId, settled.overdrawnNanos) : Effect.succeed(0n),
                (given): AccountsPort.Settled => ({
                  chargedNanos: settled.chargedNanos,
                  overdrawnNanos: settled.overdrawnNanos - given,
                  ...(settled.overCap === undefined ? {} : { overCap: settled.overCap })
                })
              )
            ),
            Effect.catch(failure("settle this call"))
          )
        }
        const local = localHolds.get(holdId)
        if (local === undefined) return Effect.succeed(AccountsPort.nothingSettled)
        localHolds.delete(holdId)
        return Effect.clockWith((clock) => {
          const now = clock.currentTimeMillisUnsafe()
          const { purse } = local
          if (purse !== null) {
            purse.inFlight--
            purse.lastUsedAt = now
            holdByKey(local.keyId, -local.amount)
            // The whole charge: what the lease does not have, it owes, and the balance pays at once.
            purse.remaining += local.amount - chargeNanos
            if (chargeNanos > 0n) {
              purse.spendRate = addSpend(purse.spendRate, purse.rateAt, chargeNanos, now)
              purse.rateAt = now
            }
          }
          if (chargeNanos <= 0n) return Effect.succeed(AccountsPort.nothingSettled)
          leaseChargedKeys.add(local.keyId)
          if (purse !== null && purse.remaining < 0n) purse.waiting++
          const covered = purse === null || purse.remaining >= 0n
            ? Effect.succeed({ overdrawnNanos: 0n, shortfallNanos: 0n })
            : bounded(cover(purse), "taking what a lease owes from the balance").pipe(
              // Counted as waiting from the charge on: the purse (and its lease) is not released as idle meanwhile.
              Effect.ensuring(Effect.sync(() => {
                purse.waiting--
              })),
              Effect.map((grant) => {
                if (grant === undefined) return { overdrawnNanos: 0n, shortfallNanos: 0n }
                // Only at the floor of a balance (-10^9 USD) is anything left owing: that part is not charged.
                const cut = purse.remaining < 0n
                  ? (-purse.remaining < chargeNanos ? -purse.remaining : chargeNanos)
                  : 0n
                purse.remaining += cut
                return {
                  overdrawnNanos: AccountsPort.overdrawn(grant.availableNanos, grant.grantedNanos),
                  shortfallNanos: cut
                }
              }),
              // The database cannot be reached: the lease owes the rest, taken when its charges are written or it ends.
              Effect.catchTag("SqlError", (error) => databaseFailed(Cause.fail(error))),
              Effect.catchCause((cause) =>
                Effect.logWarning(
                  "a call cost more than its lease had, and the balance could not be reached to take the rest; " +
                    "the lease owes it until then",
                  cause
                )
              ),
              Effect.map((covered) => covered ?? { overdrawnNanos: 0n, shortfallNanos: 0n })
            )
          return Effect.flatMap(covered, ({ overdrawnNanos, shortfallNanos }) => {
            const charged = chargeNanos - shortfallNanos
            return Effect.as(
              writer.charge({
                leaseId: purse?.leaseId ?? null,
                userId: purse?.userId ?? local.userId,
                keyId: local.keyId,
                requestId: local.requestId,
                chargedNanos: charged,
                shortfallNanos,
                at: now
              }),
              { chargedNanos: charged, overdrawnNanos } satisfies AccountsPort.Settled
            )
          })
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
            // A user whose calls were charged keeps the lease for `coverSeconds` after their last call,
            // whatever their rate: an outage that starts meanwhile finds it there.
            const keepMs = purse.spendRate > 0 ? Math.max(idleMs, coverSeconds * 1000) : idleMs
            if (!force && (purse.inFlight > 0 || purse.waiting > 0 || now - purse.lastUsedAt < keepMs)) continue
            purses.delete(purse.userId)
            if (purse.leaseId !== null) released.push(purse.leaseId)
          }
          return Effect.forEach(released, writer.releaseLease, { discard: true })
        })

      // With nothing queued, every charge is written: no key's cap waits on the writer.
      const forgetWritten = Effect.flatMap(
        writer.pending,
        (pending) => pending === 0 ? Effect.sync(() => leaseChargedKeys.clear()) : Effect.void
      )
      yield* releaseIdle(false).pipe(
        Effect.andThen(forgetWritten),
        Effect.repeat(Schedule.spaced(Duration.millis(Math.max(50, Math.min(idleMs, 250))))),
        Effect.forkScoped
      )
      // At shutdown no top-up starts any more, those in progress finish (each holds its purse's lock),
      // and only then is every lease released: a top-up never recreates a lease after its release.
      yield* Effect.addFinalizer(() =>
        Effect.forEach(
          [...purses.values()],
          (purse) => {
            purse.closing = true
            return purse.lock.withPermit(Effect.void)
          },
          { discard: true }
        ).pipe(Effect.andThen(releaseIdle(true)))
      )

      const balanceAsKnown = (userId: string): Effect.Effect<
        AccountsPort.BalanceReading,
        GatewayError.InternalError | GatewayError.DatabaseUnavailable
      > => {
        // This node's lease is counted from memory (what calls in progress here do not hold,
        // with charges not yet written already taken off); other nodes' from the database,
        // or, while it cannot be reached (or does not answer within the bound), as last read.
        const purse = () => purses.get(userId)
        const read = bounded(
          accounts.spendable(userId, purse() === undefined ? undefined : options.nodeId),
          "reading a balance"
        ).pipe(
          Effect.tap((spendable) => Effect.andThen(Effect.sync(() => remember(userId, spendable)), databaseAnswered)),
          Effect.map((spendable): AccountsPort.BalanceReading => ({
            nanos: spendable + (purse()?.remaining ?? 0n),
            readAt: null
          }))
        )
        return databaseGate("read your balance").pipe(
          Effect.andThen(read),
          Effect.catchTag(["DatabaseUnavailable", "SqlError"], (error) => {
            const known = lastBalance.get(userId)
            const failed = error._tag === "SqlError" ? databaseFailed(Cause.fail(error)) : Effect.void
            return known === undefined
              ? Effect.andThen(failed, Effect.fail(unavailable("read your balance")))
              : Effect.as(failed, { nanos: known.nanos + (purse()?.remaining ?? 0n), readAt: known.at })
          }),
          Effect.catchTag("ResourceNotFound", failure("read your balance"))
        )
      }
      const balance = (userId: string) => Effect.map(balanceAsKnown(userId), (reading) => reading.nanos)

      const spent = (userId: string, fromMs: number, toMs: number) =>
        databaseGate("read your spending").pipe(
          Effect.andThen(bounded(accounts.spent(userId, fromMs, toMs), "reading a user's spending")),
          Effect.catchTag("SqlError", failure("read your spending"))
        )

      return AccountsPort.Accounts.of({ hold, settle, balance, balanceAsKnown, spent })
    })
  )
