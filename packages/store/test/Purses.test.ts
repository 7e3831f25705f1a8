/**
 * Balance leases (`Purses`): calls hold and settle in memory against a lease
 * taken atomically in the database, charges are written in batches, and the
 * books agree at every commit. On SQLite always, on PostgreSQL when
 * MODELGATE_TEST_POSTGRES is set.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Accounts as AccountsPort, Money } from "@modelgate/core"
import { Duration, Effect, Exit, Fiber, Layer, Logger, Redacted, Scope } from "effect"
import { SqlClient, SqlError } from "effect/sql"
import { TestClock } from "effect/testing"
import fc from "fast-check"
import { Accounts } from "../src/Accounts.ts"
import { Keys } from "../src/Keys.ts"
import { migrate } from "../src/Migrations.ts"
import * as Purses from "../src/Purses.ts"
import * as Secrets from "../src/Secrets.ts"
import { UsageWriter } from "../src/UsageWriter.ts"
import { Users } from "../src/Users.ts"
import { databaseLayer, makePostgres, makeSqlite, postgresUrl, type TestDatabase } from "./harness.ts"

describe("leaseGrant", () => {
  const base = { holdNanos: 100n, prefetchNanos: 1_600n, minCalls: 64, shareDivisor: 4 }
  it("refuses what the balance cannot cover", () => {
    assert.strictEqual(Purses.leaseGrant({ ...base, availableNanos: 99n, deficitNanos: 100n }), 0n)
  })
  it("takes only the deficit near the end of a balance", () => {
    assert.strictEqual(Purses.leaseGrant({ ...base, availableNanos: 6_399n, deficitNanos: 100n }), 100n)
    assert.strictEqual(Purses.leaseGrant({ ...base, availableNanos: 100n, deficitNanos: 100n }), 100n)
    assert.strictEqual(Purses.leaseGrant({ ...base, availableNanos: 5_000n, deficitNanos: 40n }), 40n)
  })
  it("prefetches above the threshold, but at most a share of the balance", () => {
    assert.strictEqual(Purses.leaseGrant({ ...base, availableNanos: 6_400n, deficitNanos: 100n }), 1_600n)
    assert.strictEqual(Purses.leaseGrant({ ...base, availableNanos: 1_000_000n, deficitNanos: 100n }), 1_700n)
    assert.strictEqual(
      Purses.leaseGrant({ ...base, availableNanos: 10_000n, deficitNanos: 60n, prefetchNanos: 9_000n }),
      2_500n
    )
  })
  it("never grants less than the deficit nor more than the balance", () => {
    fc.assert(fc.property(
      fc.bigInt({ min: 0n, max: 10n ** 15n }),
      fc.bigInt({ min: 1n, max: 10n ** 12n }),
      fc.bigInt({ min: 0n, max: 10n ** 13n }),
      fc.integer({ min: 1, max: 256 }),
      fc.integer({ min: 1, max: 16 }),
      (available, hold, prefetch, minCalls, shareDivisor) => {
        const deficit = hold / 2n + 1n
        const grant = Purses.leaseGrant({
          availableNanos: available,
          deficitNanos: deficit,
          holdNanos: hold,
          prefetchNanos: prefetch,
          minCalls,
          shareDivisor
        })
        if (available < deficit) return grant === 0n
        return grant >= deficit && grant <= available
      }
    ))
  })
})

const baseLayer = (make: () => Promise<TestDatabase>) =>
  Layer.unwrap(Effect.map(
    Effect.acquireRelease(Effect.promise(make), (db) => Effect.promise(db.cleanup)),
    (db) => {
      const database = Layer.effectDiscard(migrate).pipe(Layer.provideMerge(databaseLayer(db)))
      return Layer.mergeAll(Users.layer, Accounts.layer, Keys.layer).pipe(
        Layer.provideMerge(
          Secrets.layer({ secret: Redacted.make("test secret of sufficient length") }).pipe(Layer.orDie)
        ),
        Layer.provideMerge(database)
      )
    }
  ))

/** A user with a balance (through a top-up, so the ledger agrees). */
const userWith = Effect.fnUntraced(function*(balance: bigint) {
  const user = yield* (yield* Users).create({ name: `u${Math.random().toString(36).slice(2, 12)}` })
  if (balance > 0n) yield* (yield* Accounts).topUp(user.id, balance, "test", "tester")
  return user.id
})

/** One node's purses and its batch writer (flushed only when the test says so), in their own scope. */
const node = Effect.fnUntraced(function*(
  options: Omit<Purses.PurseOptions, "nodeId"> & { readonly nodeId?: string } = {},
  wrap: (accounts: Accounts["Service"]) => Accounts["Service"] = (accounts) => accounts
) {
  const scope = yield* Scope.make()
  const sql = yield* SqlClient.SqlClient
  const accounts = wrap(yield* Accounts)
  const writer = yield* Layer.buildWithScope(
    UsageWriter.layerWith({ flushIntervalMs: 3_600_000, maxBatch: 100_000 }),
    scope
  ).pipe(
    Effect.provideService(SqlClient.SqlClient, sql),
    Effect.map((context) => context.mapUnsafe.get(UsageWriter.key) as UsageWriter["Service"])
  )
  const purses = yield* Layer.buildWithScope(
    Purses.layer({ nodeId: "node-a", leaseIdleMs: 3_600_000, ...options }),
    scope
  ).pipe(
    Effect.provideService(Accounts, accounts),
    Effect.provideService(UsageWriter, writer),
    Effect.map((context) => context.mapUnsafe.get(AccountsPort.Accounts.key) as AccountsPort.Accounts["Service"])
  )
  return { purses, writer, close: Scope.close(scope, Exit.void) }
})

/** The user's balance column, the ledger's sum, and what leases and holds still reserve. */
const books = Effect.fnUntraced(function*(userId: string) {
  const sql = yield* SqlClient.SqlClient
  const accounts = yield* Accounts
  const leases =
    yield* sql`SELECT COALESCE(SUM(amount_nanos), 0) AS total, COUNT(*) AS n FROM leases WHERE user_id = ${userId}`
  const holds = yield* sql`SELECT COUNT(*) AS n FROM holds WHERE user_id = ${userId}`
  const balance = yield* accounts.balance(userId)
  const ledger = yield* accounts.ledgerSum(userId)
  assert.strictEqual(balance, ledger, "the balance equals the ledger's sum")
  assert.isTrue(balance >= -Money.MAX_NANOS, "a balance never goes below the floor of -10^9 USD")
  return {
    balance,
    reserved: BigInt(leases[0]!.total as bigint | number),
    leases: Number(leases[0]!.n),
    holds: Number(holds[0]!.n)
  }
})

/**
 * A database that can be taken down: `wrap` makes the repository's leases, holds and balance reads
 * fail as an unreachable database does while `down` is set, and counts the leases asked for.
 */
const makeOutage = Effect.sync(() => {
  const state = {
    down: false,
    leaseCalls: 0,
    wrap: (accounts: Accounts["Service"]): Accounts["Service"] => {
      const unreachable = () =>
        new SqlError.SqlError({
          reason: new SqlError.ConnectionError({
            cause: new Error("the database is down for this test"),
            message: "Failed to connect",
            operation: "connect"
          })
        })
      return {
        ...accounts,
        lease: (lease) =>
          Effect.suspend(() => {
            state.leaseCalls++
            return state.down ? Effect.fail(unreachable()) : accounts.lease(lease)
          }),
        hold: (hold) => Effect.suspend(() => state.down ? Effect.fail(unreachable()) : accounts.hold(hold)),
        spendable: (userId, except) =>
          Effect.suspend(() => state.down ? Effect.fail(unreachable()) : accounts.spendable(userId, except))
      }
    }
  }
  return state
})

/** A logger that records every line (level and message) in `lines`. */
const recorder = (lines: Array<{ readonly level: string; readonly message: string }>) =>
  Logger.make(({ logLevel, message }) => {
    lines.push({ level: logLevel, message: (Array.isArray(message) ? message : [message]).map(String).join(" ") })
  })

const request = (
  userId: string,
  amountNanos: bigint,
  extra: Partial<AccountsPort.HoldRequest> = {}
): AccountsPort.HoldRequest => ({
  userId,
  keyId: "key-1",
  amountNanos,
  requestId: `req-${Math.random().toString(36).slice(2, 10)}`,
  ...extra
})

const suite = (make: () => Promise<TestDatabase>) =>
  layer(baseLayer(make), { excludeTestServices: true, timeout: "120 seconds" })((it) => {
    it.effect("calls hold and settle in memory; one lease and one batch reach the database", () =>
      Effect.gen(function*() {
        const user = yield* userWith(1_000_000_000n)
        const { purses, writer, close } = yield* node()
        const first = yield* purses.hold(request(user, 1_000n))
        // The first hold reserved the call plus 16 more of its size: 17,000 nano-dollars.
        assert.deepStrictEqual(yield* books(user), {
          balance: 1_000_000_000n - 17_000n,
          reserved: 17_000n,
          leases: 1,
          holds: 0
        })
        const more = yield* Effect.forEach(Array.from({ length: 10 }), () => purses.hold(request(user, 1_000n)))
        assert.strictEqual((yield* books(user)).leases, 1, "no new lease for calls the lease covers")
        for (const id of [first, ...more]) yield* purses.settle(id, 300n)
        assert.strictEqual(yield* writer.pending, 11)
        // What the user sees is exact before the batch is written.
        assert.strictEqual(yield* purses.balance(user), 1_000_000_000n - 3_300n)
        yield* writer.flush
        assert.deepStrictEqual(yield* books(user), {
          balance: 1_000_000_000n - 17_000n,
          reserved: 17_000n - 3_300n,
          leases: 1,
          holds: 0
        })
        const sql = yield* SqlClient.SqlClient
        const charges =
          yield* sql`SELECT COUNT(*) AS n, COALESCE(SUM(amount_nanos), 0) AS total FROM ledger WHERE user_id = ${user} AND kind = 'charge'`
        assert.strictEqual(Number(charges[0]!.n), 11)
        assert.strictEqual(BigInt(charges[0]!.total as bigint | number), -3_300n)
        const spent = yield* sql`SELECT spent_nanos FROM key_spend WHERE key_id = 'key-1'`
        assert.isTrue(spent.length === 2, "the key's daily and monthly spending are counted")
        // Closing the node releases its lease after the queued charges.
        yield* close
        yield* writer.flush
        assert.deepStrictEqual(yield* books(user), {
          balance: 1_000_000_000n - 3_300n,
          reserved: 0n,
          leases: 0,
          holds: 0
        })
      }))

    it.effect("a hold interrupted once its lease is committed: the lease is kept for the next calls, and released with the node", () =>
      Effect.gen(function*() {
        const user = yield* userWith(1_000_000_000n)
        // The lease commits at once, and its answer comes 50 ms later: the hold is interrupted in between.
        const { purses, writer, close } = yield* node({}, (accounts) => ({
          ...accounts,
          lease: (lease) => Effect.delay(accounts.lease(lease), "50 millis")
        }))
        const holding = yield* Effect.forkChild(purses.hold(request(user, 1_000n)))
        yield* Effect.sleep("10 millis")
        yield* Fiber.interrupt(holding)
        // The caller stopped waiting; the lease's write goes on in the background and is kept.
        yield* Effect.sleep("100 millis")
        assert.deepStrictEqual(yield* books(user), {
          balance: 1_000_000_000n - 17_000n,
          reserved: 17_000n,
          leases: 1,
          holds: 0
        })
        // The next call holds from that lease rather than taking another.
        const id = yield* purses.hold(request(user, 1_000n))
        assert.strictEqual((yield* books(user)).leases, 1)
        yield* purses.settle(id, 100n)
        yield* close
        yield* writer.flush
        assert.deepStrictEqual(yield* books(user), {
          balance: 1_000_000_000n - 100n,
          reserved: 0n,
          leases: 0,
          holds: 0
        })
      }))

    it.effect("an idle lease goes back to the balance", () =>
      Effect.gen(function*() {
        const user = yield* userWith(1_000_000_000n)
        const { purses, writer, close } = yield* node({ leaseIdleMs: 0, leaseCoverSeconds: 0 })
        const id = yield* purses.hold(request(user, 1_000n))
        yield* purses.settle(id, 250n)
        for (let i = 0; i < 100 && (yield* books(user)).leases > 0; i++) {
          yield* writer.flush
          yield* Effect.sleep("20 millis")
        }
        assert.deepStrictEqual(yield* books(user), {
          balance: 1_000_000_000n - 250n,
          reserved: 0n,
          leases: 0,
          holds: 0
        })
        yield* close
      }))

    it.effect("near the end of a balance, 1,000 concurrent calls of a balance that pays for 10: exactly 10 are held", () =>
      Effect.gen(function*() {
        const user = yield* userWith(10_000n)
        const { purses, writer, close } = yield* node()
        const results = yield* Effect.forEach(
          Array.from({ length: 1_000 }),
          () => Effect.result(purses.hold(request(user, 1_000n))),
          { concurrency: "unbounded" }
        )
        const held = results.filter((r) => r._tag === "Success").map((r) => r.success)
        const refused = results.filter((r) => r._tag === "Failure")
        assert.strictEqual(held.length, 10)
        assert.isTrue(refused.every((r) => r.failure._tag === "InsufficientBalance"))
        assert.deepStrictEqual(yield* books(user), { balance: 0n, reserved: 10_000n, leases: 1, holds: 0 })
        for (const id of held) yield* purses.settle(id, 1_000n)
        yield* close
        yield* writer.flush
        assert.deepStrictEqual(yield* books(user), { balance: 0n, reserved: 0n, leases: 0, holds: 0 })
      }))

    it.effect("two nodes on one database never hold more than the balance between them", () =>
      Effect.gen(function*() {
        const user = yield* userWith(10_000n)
        const a = yield* node({ nodeId: "node-a" })
        const b = yield* node({ nodeId: "node-b" })
        const results = yield* Effect.forEach(
          Array.from({ length: 400 }),
          (_, i) => Effect.result((i % 2 === 0 ? a : b).purses.hold(request(user, 1_000n))),
          { concurrency: "unbounded" }
        )
        assert.strictEqual(results.filter((r) => r._tag === "Success").length, 10)
        assert.strictEqual((yield* books(user)).balance, 0n)
        yield* a.close
        yield* b.close
        yield* a.writer.flush
        yield* b.writer.flush
        assert.deepStrictEqual(yield* books(user), { balance: 10_000n, reserved: 0n, leases: 0, holds: 0 })
      }))

    it.effect("keys with a spending cap, and leases turned off, hold each call in the database", () =>
      Effect.gen(function*() {
        const user = yield* userWith(1_000_000n)
        const { purses, close } = yield* node()
        const capped = yield* purses.hold(request(user, 5_000n, { capped: true }))
        assert.deepStrictEqual(yield* books(user), { balance: 995_000n, reserved: 0n, leases: 0, holds: 1 })
        assert.deepStrictEqual(yield* purses.settle(capped, 1_200n), { chargedNanos: 1_200n, overdrawnNanos: 0n })
        assert.deepStrictEqual(yield* books(user), { balance: 998_800n, reserved: 0n, leases: 0, holds: 0 })
        // Settled twice: nothing more is charged.
        assert.deepStrictEqual(yield* purses.settle(capped, 1_200n), AccountsPort.nothingSettled)
        yield* close
        const off = yield* node({ leases: false })
        const id = yield* off.purses.hold(request(user, 5_000n))
        assert.strictEqual((yield* books(user)).holds, 1)
        assert.deepStrictEqual(yield* off.purses.settle(id, 800n), { chargedNanos: 800n, overdrawnNanos: 0n })
        assert.deepStrictEqual(yield* books(user), { balance: 998_000n, reserved: 0n, leases: 0, holds: 0 })
        yield* off.close
      }))

    it.effect("a cap set on a key counts what its earlier calls were charged, even those the batch writer has not written yet", () =>
      Effect.gen(function*() {
        const user = yield* userWith(1_000_000n)
        const { key } = yield* (yield* Keys).create({ userId: user, name: "k", group: "default", quotaNanos: 10_000n })
        const { purses, writer, close } = yield* node()
        // Calls made while the key had no cap (the lease path): 8,000 charged, queued in the writer.
        const earlier = yield* purses.hold(request(user, 9_000n, { keyId: key.id }))
        yield* purses.settle(earlier, 8_000n)
        assert.isAbove(yield* writer.pending, 0, "the charge is not written yet")
        // Now capped: a call that would take the key past its cap of 10,000 is refused, counting those 8,000.
        const refused = yield* Effect.flip(purses.hold(request(user, 3_000n, { keyId: key.id, capped: true })))
        assert.strictEqual(refused._tag, "SpendingCapReached")
        assert.include(refused.message, "0.000008 USD spent")
        const fits = yield* purses.hold(request(user, 2_000n, { keyId: key.id, capped: true }))
        yield* purses.settle(fits, 2_000n)
        yield* close
        yield* writer.flush
        assert.strictEqual((yield* (yield* Keys).findById(key.id))!.spentNanos, 10_000n)
      }))

    it.effect("a capped key's call that takes the balance below zero: the lease's unused reserve pays toward the debt, and no call is admitted from it", () =>
      Effect.gen(function*() {
        const user = yield* userWith(1_000_000n)
        const { purses, writer, close } = yield* node()
        // A call of a key without a cap takes a lease of 17,000 and leaves 16,000 of it unused.
        yield* purses.settle(yield* purses.hold(request(user, 1_000n)), 1_000n)
        // A capped key's call costs far more than its hold and the balance: 1,500,000.
        const capped = yield* purses.hold(request(user, 5_000n, { capped: true }))
        assert.deepStrictEqual(yield* purses.settle(capped, 1_500_000n), {
          chargedNanos: 1_500_000n,
          overdrawnNanos: 501_000n
        })
        assert.strictEqual(yield* purses.balance(user), -501_000n)
        // The lease's reserve does not admit calls of a balance below zero.
        const refused = yield* Effect.flip(purses.hold(request(user, 1_000n)))
        assert.strictEqual(refused._tag, "InsufficientBalance")
        assert.include(refused.message, "below zero")
        yield* close
        yield* writer.flush
        assert.deepStrictEqual(yield* books(user), { balance: -501_000n, reserved: 0n, leases: 0, holds: 0 })
      }))

    it.effect("a capped key's hold sees the whole balance: the node's lease gives back its unused reserve when the column alone cannot cover it", () =>
      Effect.gen(function*() {
        const user = yield* userWith(10_000n)
        const { purses, writer, close } = yield* node()
        // A key without a cap: near the end of the balance its lease takes it all, and 9,000 stay unused in it.
        yield* purses.settle(yield* purses.hold(request(user, 10_000n)), 1_000n)
        assert.strictEqual(yield* purses.balance(user), 9_000n)
        // A capped key's call holds in the database, whose balance column is 0: the lease's reserve comes back first.
        const capped = yield* purses.hold(request(user, 5_000n, { capped: true }))
        yield* purses.settle(capped, 5_000n)
        assert.strictEqual(yield* purses.balance(user), 4_000n)
        assert.strictEqual(
          (yield* Effect.flip(purses.hold(request(user, 4_001n, { capped: true }))))._tag,
          "InsufficientBalance"
        )
        yield* close
        yield* writer.flush
        assert.deepStrictEqual(yield* books(user), { balance: 4_000n, reserved: 0n, leases: 0, holds: 0 })
      }))

    it.effect("a cap set on a key counts what its calls in flight on the lease path hold", () =>
      Effect.gen(function*() {
        const user = yield* userWith(1_000_000n)
        const { key } = yield* (yield* Keys).create({ userId: user, name: "k", group: "default", quotaNanos: 10_000n })
        const { purses, writer, close } = yield* node()
        // A call held while the key had no cap (the lease path), still in flight when the cap is set.
        const inFlight = yield* purses.hold(request(user, 6_000n, { keyId: key.id }))
        const refused = yield* Effect.flip(purses.hold(request(user, 5_000n, { keyId: key.id, capped: true })))
        assert.strictEqual(refused._tag, "SpendingCapReached")
        assert.include(refused.message, "0.000006 USD held by calls in progress")
        yield* purses.settle(yield* purses.hold(request(user, 4_000n, { keyId: key.id, capped: true })), 4_000n)
        yield* purses.settle(inFlight, 6_000n)
        yield* close
        yield* writer.flush
        assert.strictEqual((yield* (yield* Keys).findById(key.id))!.spentNanos, 10_000n)
      }))

    it.effect("a free call (a hold of nothing) takes no lease and writes nothing", () =>
      Effect.gen(function*() {
        const user = yield* userWith(1_000n)
        const { purses, writer, close } = yield* node()
        const id = yield* purses.hold(request(user, 0n))
        yield* purses.settle(id, 0n)
        assert.strictEqual(yield* writer.pending, 0)
        assert.deepStrictEqual(yield* books(user), { balance: 1_000n, reserved: 0n, leases: 0, holds: 0 })
        yield* close
      }))

    it.effect("a charge above the hold is charged in full: what the lease lacks is taken from the balance at once", () =>
      Effect.gen(function*() {
        const user = yield* userWith(5_000n)
        const { purses, writer, close } = yield* node()
        const id = yield* purses.hold(request(user, 1_000n))
        // Near the end of the balance the lease took exactly the hold: an upstream that reports more usage
        // than the worst case is charged all of it, the 600 beyond the lease from the balance.
        assert.deepStrictEqual(yield* purses.settle(id, 1_600n), { chargedNanos: 1_600n, overdrawnNanos: 0n })
        assert.strictEqual(yield* purses.balance(user), 3_400n)
        yield* writer.flush
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql`SELECT amount_nanos, reason FROM ledger WHERE user_id = ${user} AND kind = 'charge'`
        assert.strictEqual(BigInt(rows[0]!.amount_nanos as bigint | number), -1_600n)
        assert.isNull(rows[0]!.reason)
        yield* close
        yield* writer.flush
        assert.deepStrictEqual(yield* books(user), { balance: 3_400n, reserved: 0n, leases: 0, holds: 0 })
      }))

    it.effect("a charge beyond the hold and the balance takes the balance below zero; calls are refused until a top-up", () =>
      Effect.gen(function*() {
        const user = yield* userWith(1_000n)
        for (const leases of [true, false]) {
          const { purses, writer, close } = yield* node({ leases })
          const id = yield* purses.hold(request(user, 1_000n))
          assert.deepStrictEqual(yield* purses.settle(id, 1_600n), { chargedNanos: 1_600n, overdrawnNanos: 600n })
          assert.strictEqual(yield* purses.balance(user), -600n)
          for (const amount of [1n, 1_000n]) {
            const refused = yield* Effect.flip(purses.hold(request(user, amount)))
            assert.strictEqual(refused._tag, "InsufficientBalance")
            assert.include(refused.message, "Your balance is -0.0000006 USD, below zero")
          }
          yield* writer.flush
          yield* close
          yield* writer.flush
          assert.deepStrictEqual(yield* books(user), { balance: -600n, reserved: 0n, leases: 0, holds: 0 })
          const sql = yield* SqlClient.SqlClient
          const charge = yield* sql`SELECT amount_nanos FROM ledger WHERE user_id = ${user} AND kind = 'charge'
            ORDER BY created_at DESC, id DESC`
          assert.strictEqual(BigInt(charge[0]!.amount_nanos as bigint | number), -1_600n)
          // A top-up pays the debt first; then the balance holds calls again.
          assert.strictEqual(yield* (yield* Accounts).topUp(user, 1_600n, "pay", "tester"), 1_000n)
        }
      }))

    it.effect("a charge above the hold while the database cannot be reached: the lease owes it, and pays it when it can", () =>
      Effect.gen(function*() {
        const user = yield* userWith(10_000n)
        const outage = yield* makeOutage
        const { purses, writer, close } = yield* node({}, outage.wrap)
        const id = yield* purses.hold(request(user, 1_000n))
        // Lease: 1,000 (near the end of the balance, exactly the hold). The balance cannot be reached to take the rest.
        outage.down = true
        assert.deepStrictEqual(yield* purses.settle(id, 3_000n), { chargedNanos: 3_000n, overdrawnNanos: 0n })
        assert.strictEqual((yield* Effect.flip(purses.hold(request(user, 1_000n))))._tag, "DatabaseUnavailable")
        outage.down = false
        yield* Effect.sleep(Duration.millis(Purses.DATABASE_BACKOFF_MS + 50))
        // The lease's charge is written: the lease goes below zero, and holds count what it owes against the balance.
        yield* writer.flush
        const sql = yield* SqlClient.SqlClient
        const lease = yield* sql`SELECT amount_nanos FROM leases WHERE user_id = ${user}`
        assert.strictEqual(BigInt(lease[0]!.amount_nanos as bigint | number), -2_000n)
        assert.strictEqual(yield* purses.balance(user), 7_000n)
        // The next extension pays the debt first.
        const next = yield* purses.hold(request(user, 1_000n))
        yield* purses.settle(next, 500n)
        yield* close
        yield* writer.flush
        assert.deepStrictEqual(yield* books(user), { balance: 6_500n, reserved: 0n, leases: 0, holds: 0 })
      }))

    it.effect("a negative charge charges nothing and releases the hold, on the lease and the database path alike", () =>
      Effect.gen(function*() {
        const user = yield* userWith(5_000n)
        for (const leases of [true, false]) {
          const { purses, writer, close } = yield* node({ leases })
          const id = yield* purses.hold(request(user, 1_000n))
          // Usage of -1,000,000 prompt and -5,000,000 completion tokens once credited the lease with its cost.
          assert.deepStrictEqual(yield* purses.settle(id, -3_150_000_000n), AccountsPort.nothingSettled)
          assert.strictEqual(yield* purses.balance(user), 5_000n, "nothing was credited")
          const held = yield* Effect.forEach(Array.from({ length: 5 }), () => purses.hold(request(user, 1_000n)))
          assert.strictEqual((yield* Effect.flip(purses.hold(request(user, 1_000n))))._tag, "InsufficientBalance")
          for (const hold of held) yield* purses.settle(hold, 0n)
          yield* close
          yield* writer.flush
          assert.deepStrictEqual(yield* books(user), { balance: 5_000n, reserved: 0n, leases: 0, holds: 0 })
        }
      }))

    it.effect("on the database path a charge beyond the largest amount is taken whole, the balance going below zero", () =>
      Effect.gen(function*() {
        const user = yield* userWith(5_000n)
        const off = yield* node({ leases: false })
        const id = yield* off.purses.hold(request(user, 1_000n))
        // Once refused as invalid (and so charged nothing), then cut at the balance: now charged whole.
        const settled = yield* off.purses.settle(id, Money.MAX_NANOS + 1n)
        assert.deepStrictEqual(settled, {
          chargedNanos: Money.MAX_NANOS + 1n,
          overdrawnNanos: Money.MAX_NANOS + 1n - 5_000n
        })
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql`SELECT amount_nanos, reason FROM ledger WHERE user_id = ${user} AND kind = 'charge'`
        assert.strictEqual(BigInt(rows[0]!.amount_nanos as bigint | number), -(Money.MAX_NANOS + 1n))
        assert.include(String(rows[0]!.reason), "below zero")
        assert.deepStrictEqual(yield* books(user), {
          balance: 5_000n - Money.MAX_NANOS - 1n,
          reserved: 0n,
          leases: 0,
          holds: 0
        })
        yield* off.close
      }))

    it.effect("a refused hold names the balance, the amount, and each answer asked for", () =>
      Effect.gen(function*() {
        const user = yield* userWith(500n)
        for (const leases of [true, false]) {
          const { purses, close } = yield* node({ leases })
          const one = yield* Effect.flip(purses.hold(request(user, 1_000n)))
          assert.strictEqual(one._tag, "InsufficientBalance")
          assert.strictEqual(
            one.message,
            "Your balance is 0.0000005 USD but this call may cost up to 0.000001 USD. Top up your balance, or ask for fewer output tokens (max_tokens)."
          )
          const three = yield* Effect.flip(purses.hold(request(user, 3_000n, { choices: 3 })))
          assert.include(three.message, "or fewer answers (n, candidateCount: 3 asked, each held for in full).")
          yield* close
        }
      }))

    it.effect("a lease swept while its node still runs: later charges come from the balance, in full", () =>
      Effect.gen(function*() {
        const user = yield* userWith(1_000_000_000n)
        const { purses, writer, close } = yield* node({ nodeId: "node-paused" })
        const id = yield* purses.hold(request(user, 1_000n))
        yield* purses.settle(id, 700n)
        // Another node declares this one dead (its heartbeat stopped) and releases its lease, charges unwritten.
        assert.strictEqual(yield* (yield* Accounts).sweepHolds({ nodeId: "node-paused" }), 1)
        assert.deepStrictEqual(yield* books(user), { balance: 1_000_000_000n, reserved: 0n, leases: 0, holds: 0 })
        yield* writer.flush
        assert.deepStrictEqual(yield* books(user), {
          balance: 1_000_000_000n - 700n,
          reserved: 0n,
          leases: 0,
          holds: 0
        })
        yield* close
      }))

    it.effect("holds and leases of a node whose heartbeat stopped are released by the others; a live node's are not", () =>
      Effect.gen(function*() {
        const accounts = yield* Accounts
        const sql = yield* SqlClient.SqlClient
        const user = yield* userWith(1_000_000n)
        const live = yield* node({ nodeId: "node-live" })
        const dead = yield* node({ nodeId: "node-dead" })
        yield* accounts.heartbeat("node-live")
        yield* accounts.heartbeat("node-dead")
        yield* live.purses.hold(request(user, 1_000n))
        yield* dead.purses.hold(request(user, 1_000n))
        yield* accounts.hold({
          userId: user,
          keyId: "key-1",
          amountNanos: 500n,
          requestId: "r-db",
          nodeId: "node-dead"
        })
        // Both heartbeats are fresh: nothing is swept.
        assert.strictEqual(yield* accounts.sweepHolds({ deadAfterMs: 60_000, except: "node-live" }), 0)
        // node-dead's heartbeat is an hour old: its lease and its hold go back; node-live's lease stays.
        yield* sql`UPDATE nodes SET seen_at = seen_at - 3600000 WHERE id = 'node-dead'`
        assert.strictEqual(yield* accounts.sweepHolds({ deadAfterMs: 60_000, except: "node-live" }), 2)
        const left = yield* sql`SELECT node_id FROM leases WHERE user_id = ${user}`
        assert.deepStrictEqual(left.map((row) => row.node_id), ["node-live"])
        assert.strictEqual((yield* books(user)).holds, 0)
        const nodes = yield* sql`SELECT id FROM nodes WHERE id IN ('node-live', 'node-dead')`
        assert.deepStrictEqual(nodes.map((row) => row.id), ["node-live"], "the dead node's heartbeat row is gone")
        yield* live.close
        yield* dead.close
        yield* live.writer.flush
        yield* dead.writer.flush
        assert.deepStrictEqual(yield* books(user), { balance: 1_000_000n, reserved: 0n, leases: 0, holds: 0 })
      }))

    it.effect("while the database cannot be reached: calls the lease covers go on, the others get DatabaseUnavailable at once, the balance shown is the last read, and one line is logged", () => {
      const log: Array<{ readonly level: string; readonly message: string }> = []
      return Effect.gen(function*() {
        const user = yield* userWith(1_000_000_000n)
        const other = yield* userWith(1_000_000_000n)
        const outage = yield* makeOutage
        const { purses, writer, close } = yield* node({}, outage.wrap)
        const first = yield* purses.hold(request(user, 1_000n))
        yield* purses.settle(first, 400n)
        assert.strictEqual(yield* purses.balance(user), 1_000_000_000n - 400n)
        outage.down = true
        // The lease (17 holds of 1,000, less the first call's 400) goes on paying for calls from memory
        // while it has 1,000 left for the next hold: 40 calls of 400.
        let served = 0
        for (; served < 100; served++) {
          const held = yield* Effect.result(purses.hold(request(user, 1_000n)))
          if (held._tag === "Failure") break
          yield* purses.settle(held.success, 400n)
        }
        assert.strictEqual(served, 40)
        const refused = yield* Effect.flip(purses.hold(request(user, 1_000n)))
        assert.strictEqual(refused._tag, "DatabaseUnavailable")
        assert.include(refused.message, "cannot reach its database")
        assert.strictEqual(
          (refused as { retryAfterSeconds?: number }).retryAfterSeconds,
          Purses.DATABASE_RETRY_AFTER_SECONDS
        )
        const calls = outage.leaseCalls
        // A user without a lease, many times: refused at once, without trying the database each time.
        for (let i = 0; i < 50; i++) {
          assert.strictEqual((yield* Effect.flip(purses.hold(request(other, 1_000n))))._tag, "DatabaseUnavailable")
        }
        assert.strictEqual(outage.leaseCalls, calls, "the database is left alone for a moment after a failure")
        // The balance the user sees: as last read, less what this node's calls spent since.
        assert.strictEqual(yield* purses.balance(user), 1_000_000_000n - 41n * 400n)
        // A user whose balance was never read here cannot be shown one.
        assert.strictEqual((yield* Effect.flip(purses.balance(other)))._tag, "DatabaseUnavailable")
        const errors = log.filter((line) => line.level === "Error")
        assert.strictEqual(errors.length, 1, JSON.stringify(log))
        assert.include(errors[0]!.message, "the database is down for this test")
        outage.down = false
        yield* Effect.sleep(Duration.millis(Purses.DATABASE_BACKOFF_MS + 50))
        yield* purses.settle(yield* purses.hold(request(other, 1_000n)), 400n)
        assert.isTrue(
          log.some((line) => line.level === "Info" && line.message.includes("works again")),
          JSON.stringify(log)
        )
        yield* close
        yield* writer.flush
        assert.deepStrictEqual(yield* books(user), {
          balance: 1_000_000_000n - 41n * 400n,
          reserved: 0n,
          leases: 0,
          holds: 0
        })
        assert.deepStrictEqual(yield* books(other), {
          balance: 1_000_000_000n - 400n,
          reserved: 0n,
          leases: 0,
          holds: 0
        })
      }).pipe(Effect.provide(Logger.layer([recorder(log)])))
    })

    it.effect("property: any interleaving of holds and charges keeps the books, and charges what a reference model says", () =>
      Effect.gen(function*() {
        const context = yield* Effect.context<Accounts | Users | SqlClient.SqlClient>()
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(
              fc.bigInt({ min: 0n, max: 200_000n }),
              fc.array(
                fc.record({ hold: fc.bigInt({ min: 1n, max: 20_000n }), charge: fc.bigInt({ min: 0n, max: 25_000n }) }),
                {
                  minLength: 1,
                  maxLength: 40
                }
              ),
              (initial, calls) =>
                Effect.runPromise(
                  Effect.gen(function*() {
                    const user = yield* userWith(initial)
                    const { purses, writer, close } = yield* node()
                    // Every call holds concurrently, then the ones admitted settle in order.
                    const held = yield* Effect.forEach(
                      calls,
                      (call) => Effect.result(purses.hold(request(user, call.hold))),
                      { concurrency: "unbounded" }
                    )
                    // Reference: holds admitted never exceed the balance; each call is charged all it cost,
                    // beyond its hold and the balance too (the balance then goes below zero).
                    let admitted = 0n
                    let charged = 0n
                    for (let i = 0; i < calls.length; i++) {
                      const result = held[i]!
                      if (result._tag === "Failure") continue
                      admitted += calls[i]!.hold
                      yield* purses.settle(result.success, calls[i]!.charge)
                    }
                    assert.isTrue(admitted <= initial, "holds never exceed the balance")
                    yield* close
                    yield* writer.flush
                    const b = yield* books(user)
                    assert.deepStrictEqual({ reserved: b.reserved, leases: b.leases, holds: b.holds }, {
                      reserved: 0n,
                      leases: 0,
                      holds: 0
                    })
                    const sql = yield* SqlClient.SqlClient
                    const rows =
                      yield* sql`SELECT COALESCE(SUM(amount_nanos), 0) AS total FROM ledger WHERE user_id = ${user} AND kind = 'charge'`
                    charged = -BigInt(rows[0]!.total as bigint | number)
                    assert.strictEqual(b.balance, initial - charged)
                    let wanted = 0n
                    for (let i = 0; i < calls.length; i++) if (held[i]!._tag === "Success") wanted += calls[i]!.charge
                    assert.strictEqual(charged, wanted, "charged exactly what the calls cost")
                  }).pipe(Effect.provideContext(context), Effect.scoped)
                ).then(() => true)
            ),
            { numRuns: 25 }
          )
        )
      }))
  })

describe("sqlite", () => {
  suite(makeSqlite)
})

describe("leases sized by recent spending", () => {
  it.effect("a lease keeps lease_cover_seconds of the user's recent spending on hand: a 20 s database outage at 10 calls/s passes unnoticed", () =>
    Effect.gen(function*() {
      const user = yield* userWith(1_000_000_000_000n)
      const outage = yield* makeOutage
      const { purses, writer, close } = yield* node({ leaseCoverSeconds: 30 }, outage.wrap)
      const call = Effect.gen(function*() {
        const id = yield* purses.hold(request(user, 2_000_000n))
        yield* purses.settle(id, 1_000_000n)
        yield* TestClock.adjust(Duration.millis(100))
        // Let a top-up forked by the hold run.
        yield* Effect.yieldNow
      })
      // A minute of traffic at 10 calls/s, 0.001 USD each: the node learns the user's rate.
      for (let i = 0; i < 600; i++) yield* call
      outage.down = true
      let served = 0
      for (let i = 0; i < 200; i++) {
        const result = yield* Effect.result(call)
        if (result._tag === "Failure") break
        served++
      }
      assert.strictEqual(served, 200, "every call of the outage was served from the lease")
      outage.down = false
      yield* TestClock.adjust(Duration.millis(Purses.DATABASE_BACKOFF_MS))
      yield* close
      yield* writer.flush
      assert.deepStrictEqual(yield* books(user), {
        balance: 1_000_000_000_000n - 800n * 1_000_000n,
        reserved: 0n,
        leases: 0,
        holds: 0
      })
    }).pipe(Effect.provide(baseLayer(makeSqlite))))

  it.effect("a user calling once a second keeps their lease through a 15 s outage: it lasts lease_cover_seconds after their last call", () =>
    Effect.gen(function*() {
      const user = yield* userWith(1_000_000_000_000n)
      const outage = yield* makeOutage
      const { purses, writer, close } = yield* node({ leaseCoverSeconds: 30, leaseIdleMs: 1_000 }, outage.wrap)
      const call = Effect.gen(function*() {
        const id = yield* purses.hold(request(user, 2_000_000n))
        yield* purses.settle(id, 1_000_000n)
        yield* Effect.yieldNow
        // A second between calls: longer than lease_idle_ms.
        yield* TestClock.adjust(Duration.seconds(1))
        yield* Effect.yieldNow
      })
      for (let i = 0; i < 60; i++) yield* call
      outage.down = true
      let served = 0
      for (let i = 0; i < 15; i++) {
        const result = yield* Effect.result(call)
        if (result._tag === "Failure") break
        served++
      }
      assert.strictEqual(served, 15, "every call of the outage was served from the lease")
      outage.down = false
      // Once the user stops calling, the lease goes back after lease_cover_seconds.
      yield* TestClock.adjust(Duration.seconds(31))
      yield* Effect.yieldNow
      yield* writer.flush
      assert.strictEqual((yield* books(user)).leases, 0, "released 30 s after the last call")
      yield* close
      yield* writer.flush
      assert.deepStrictEqual(yield* books(user), {
        balance: 1_000_000_000_000n - 75n * 1_000_000n,
        reserved: 0n,
        leases: 0,
        holds: 0
      })
    }).pipe(Effect.provide(baseLayer(makeSqlite))))

  it.effect("while the usage writer is not admitting (database and journal both fail, memory nearly full), priced calls get DatabaseUnavailable and free ones go on", () =>
    Effect.gen(function*() {
      const user = yield* userWith(1_000_000_000n)
      const scope = yield* Scope.make()
      const sql = yield* SqlClient.SqlClient
      const writer = yield* Layer.buildWithScope(UsageWriter.layerWith({ flushIntervalMs: 3_600_000 }), scope).pipe(
        Effect.provideService(SqlClient.SqlClient, sql),
        Effect.map((context) => context.mapUnsafe.get(UsageWriter.key) as UsageWriter["Service"])
      )
      let admitting = false
      const purses = yield* Layer.buildWithScope(Purses.layer({ nodeId: "node-full" }), scope).pipe(
        Effect.provideService(Accounts, yield* Accounts),
        Effect.provideService(UsageWriter, { ...writer, admitting: () => admitting }),
        Effect.map((context) => context.mapUnsafe.get(AccountsPort.Accounts.key) as AccountsPort.Accounts["Service"])
      )
      const refused = yield* Effect.flip(purses.hold(request(user, 1_000n)))
      assert.strictEqual(refused._tag, "DatabaseUnavailable")
      assert.include(refused.message, "cannot record calls")
      yield* purses.hold(request(user, 0n))
      admitting = true
      const id = yield* purses.hold(request(user, 1_000n))
      yield* purses.settle(id, 100n)
      yield* Scope.close(scope, Exit.void)
    }).pipe(Effect.provide(baseLayer(makeSqlite))))

  it("the spending rate reads as what is spent per second, and decays when spending stops", () => {
    let rate = 0
    let at = 0
    for (let second = 1; second <= 120; second++) {
      rate = Purses.addSpend(rate, at, 5_000n, second * 1000)
      at = second * 1000
    }
    // Read just after a charge the window holds it whole: a steady spend reads within 6% of itself.
    assert.closeTo(Purses.spendRateAt(rate, at, at), 5_000, 300)
    assert.closeTo(
      Purses.spendRateAt(rate, at, at + Purses.SPEND_RATE_WINDOW_MS),
      Purses.spendRateAt(rate, at, at) / Math.E,
      1
    )
    assert.strictEqual(Purses.spendRateAt(0, 0, 1_000_000), 0)
  })
})

describe.skipIf(postgresUrl === undefined)("postgres (set MODELGATE_TEST_POSTGRES to run)", () => {
  suite(() => makePostgres(postgresUrl!))
})
