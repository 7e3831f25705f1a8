/**
 * The sign-in limiter: locks per (account, address) pair and per address with
 * back-off, an account-wide lock that never shuts out the addresses its owner
 * signs in from (nor the machine itself), and memory that does not grow with
 * guesses from many places.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { LoginLimiter } from "../src/LoginLimiter.ts"

const options = { maxFailures: 5, accountMaxFailures: 20, windowMs: 60_000, lockMs: 60_000, maxLockMs: 3_600_000 }

const failTimes = (limiter: LoginLimiter["Service"], n: number, account: string, address: (i: number) => string) =>
  Effect.forEach(Array.from({ length: n }, (_, i) => i), (i) => limiter.fail(account, address(i)), { discard: true })

describe("LoginLimiter", () => {
  it.effect("locks a pair after maxFailures, doubling the lock with every further failure", () =>
    Effect.gen(function*() {
      const limiter = yield* LoginLimiter
      yield* failTimes(limiter, 4, "alice", () => "198.51.100.7")
      assert.strictEqual(yield* limiter.retryAfter("alice", "198.51.100.7"), 0, "four failures do not lock")
      yield* limiter.fail("alice", "198.51.100.7")
      assert.strictEqual(yield* limiter.retryAfter("alice", "198.51.100.7"), 60)
      yield* TestClock.adjust(60_000)
      assert.strictEqual(yield* limiter.retryAfter("alice", "198.51.100.7"), 0, "the first lock is over")
      yield* limiter.fail("alice", "198.51.100.7")
      assert.strictEqual(
        yield* limiter.retryAfter("alice", "198.51.100.7"),
        120,
        "one more failure locks again, twice as long"
      )
      yield* TestClock.adjust(120_000)
      yield* limiter.fail("alice", "198.51.100.7")
      assert.strictEqual(yield* limiter.retryAfter("alice", "198.51.100.7"), 240)
      // Other addresses are not locked out of alice by this one's guesses.
      assert.strictEqual(yield* limiter.retryAfter("alice", "203.0.113.9"), 0)
    }).pipe(Effect.provide(LoginLimiter.layer(options))))

  it.effect("caps the back-off, and forgets it after a quiet spell", () =>
    Effect.gen(function*() {
      const limiter = yield* LoginLimiter
      yield* failTimes(limiter, 5, "bob", () => "198.51.100.8")
      for (let i = 0; i < 10; i++) {
        yield* TestClock.adjust(3_600_000)
        yield* limiter.fail("bob", "198.51.100.8")
      }
      assert.strictEqual(yield* limiter.retryAfter("bob", "198.51.100.8"), 3600, "never longer than maxLockMs")
      yield* TestClock.adjust(2 * 3_600_000 + 1)
      yield* limiter.fail("bob", "198.51.100.8")
      assert.strictEqual(yield* limiter.retryAfter("bob", "198.51.100.8"), 0, "after a quiet maxLockMs it starts over")
    }).pipe(Effect.provide(LoginLimiter.layer(options))))

  it.effect("locks an address guessing many accounts", () =>
    Effect.gen(function*() {
      const limiter = yield* LoginLimiter
      for (let i = 0; i < 5; i++) yield* limiter.fail(`someone${i}`, "192.0.2.50")
      assert.strictEqual(yield* limiter.retryAfter("victim", "192.0.2.50"), 60)
      assert.strictEqual(yield* limiter.retryAfter("victim", "192.0.2.51"), 0)
    }).pipe(Effect.provide(LoginLimiter.layer(options))))

  it.effect("rotating addresses lock the account for strangers only, never for its owner's addresses or the machine itself", () =>
    Effect.gen(function*() {
      const limiter = yield* LoginLimiter
      yield* limiter.succeed("admin", "192.0.2.10")
      yield* failTimes(limiter, 100, "admin", (i) => `203.0.113.${i}`)
      assert.isAbove(yield* limiter.retryAfter("admin", "198.51.100.99"), 0, "a new address is held back")
      assert.strictEqual(yield* limiter.retryAfter("admin", "192.0.2.10"), 0, "the owner's address is not")
      assert.strictEqual(yield* limiter.retryAfter("admin", "127.0.0.1"), 0, "nor the machine itself")
      assert.strictEqual(yield* limiter.retryAfter("admin", "::1"), 0)
    }).pipe(Effect.provide(LoginLimiter.layer(options))))

  it.effect("the owner's own typos from a familiar address never lock the account for anyone else", () =>
    Effect.gen(function*() {
      const limiter = yield* LoginLimiter
      yield* limiter.succeed("erin", "192.0.2.20")
      yield* failTimes(limiter, 30, "erin", () => "192.0.2.20")
      assert.strictEqual(yield* limiter.retryAfter("erin", "198.51.100.20"), 0)
    }).pipe(Effect.provide(LoginLimiter.layer(options))))

  it.effect("a success clears the pair, not the address or the account", () =>
    Effect.gen(function*() {
      const limiter = yield* LoginLimiter
      for (let i = 0; i < 4; i++) yield* limiter.fail(`guess${i}`, "192.0.2.60")
      yield* limiter.fail("carol", "192.0.2.60")
      assert.strictEqual(yield* limiter.retryAfter("carol", "192.0.2.60"), 60, "the address is locked")
      yield* limiter.succeed("carol", "192.0.2.60")
      assert.strictEqual(
        yield* limiter.retryAfter("dave", "192.0.2.60"),
        60,
        "one known password does not launder guesses"
      )
    }).pipe(Effect.provide(LoginLimiter.layer(options))))

  it.effect("drops entries that stayed quiet, so guesses from many places do not grow the memory", () =>
    Effect.gen(function*() {
      const limiter = yield* LoginLimiter
      for (let i = 0; i < 200; i++) yield* limiter.fail(`guess${i}`, `10.0.${i >> 8}.${i & 255}`)
      // Each failure counts for its pair, its address and (from a stranger) its account.
      assert.strictEqual(yield* limiter.tracked, 600)
      yield* TestClock.adjust(3_600_000 + 1)
      yield* limiter.fail("someone", "10.9.9.9")
      assert.strictEqual(yield* limiter.tracked, 3, "only the new failure is remembered")
    }).pipe(Effect.provide(LoginLimiter.layer(options))))
})
