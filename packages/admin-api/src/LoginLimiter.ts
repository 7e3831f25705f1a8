/**
 * Sign-in rate limiting that an attacker cannot turn against the account's
 * owner.
 *
 * Failed attempts count against three subjects, each of which locks with
 * back-off (a first lock of `lockMs`, doubling with every further lock up to
 * `maxLockMs`; a subject that stayed quiet for `maxLockMs` starts over):
 *
 * - the (account, client address) pair: `maxFailures` wrong passwords for an
 *   account from one address lock that address out of that account only;
 * - the client address: `maxFailures` failures from one address, across
 *   accounts, lock the address (guessing many names from one place);
 * - the account: `accountMaxFailures` failures from addresses the account has
 *   never signed in from lock the account against such addresses only. The
 *   addresses its owner signs in from (remembered for `rememberMs` after each
 *   success) and the machine itself (loopback) are never locked by guesses
 *   from elsewhere, so rotating addresses cannot keep the owner out.
 *
 * A successful sign-in clears the pair's failures (not the address's or the
 * account's, so one known password cannot launder guesses at other accounts).
 *
 * Counters live in memory, per process: a deliberate trade-off for the
 * single-node default; behind a load balancer each node limits on its own.
 * Idle entries are dropped, so guesses from many addresses or at many names
 * cannot grow the memory without bound.
 *
 * @since 0.1.0
 */
import { Clock, Context, Effect, Layer } from "effect"

/** Limiter settings. @category models */
export interface Options {
  /** Failures per window that lock a pair or an address (default 5). */
  readonly maxFailures: number
  /** Failures per window, from unfamiliar addresses, that lock an account for them (default 20). */
  readonly accountMaxFailures: number
  /** The window failures are counted in (default 5 minutes). */
  readonly windowMs: number
  /** The first lock (default 1 minute); each further lock doubles it. */
  readonly lockMs: number
  /** The longest lock (default 1 hour); also how long a quiet subject keeps its back-off. */
  readonly maxLockMs: number
  /** How long an address an account signed in from stays familiar (default 30 days). */
  readonly rememberMs: number
}

/** The defaults. @category constants */
export const defaults: Options = {
  maxFailures: 5,
  accountMaxFailures: 20,
  windowMs: 5 * 60 * 1000,
  lockMs: 60 * 1000,
  maxLockMs: 60 * 60 * 1000,
  rememberMs: 30 * 24 * 60 * 60 * 1000
}

/** How many familiar addresses an account keeps (the most recent). */
const MAX_FAMILIAR = 16

/** Whether an address is the machine itself. @category addresses */
export const isLoopback = (address: string): boolean =>
  address === "::1" || address.startsWith("127.") || address.startsWith("::ffff:127.")

/** @category services */
export class LoginLimiter extends Context.Service<LoginLimiter, {
  /** Seconds to wait before `address` may try `account` again, or 0 when it may try now. */
  readonly retryAfter: (account: string, address: string) => Effect.Effect<number>
  /** Records a wrong password for `account` from `address`. */
  readonly fail: (account: string, address: string) => Effect.Effect<void>
  /** Records a successful sign-in: the pair's failures go, and the address becomes familiar to the account. */
  readonly succeed: (account: string, address: string) => Effect.Effect<void>
  /** How many subjects have failures or locks on record (for monitoring and tests). */
  readonly tracked: Effect.Effect<number>
}>()("modelgate/admin-api/LoginLimiter") {
  /** An in-memory limiter. @category layers */
  static readonly layer = (options: Partial<Options> = {}): Layer.Layer<LoginLimiter> =>
    Layer.sync(LoginLimiter, () => make({ ...defaults, ...options }))
}

interface Entry {
  /** Failures within the window, oldest first. */
  failures: Array<number>
  /** Locks so far (the next one lasts `lockMs * 2^strikes`). */
  strikes: number
  lockedUntil: number
  lastFailure: number
}

const make = (options: Options): LoginLimiter["Service"] => {
  const { maxFailures, accountMaxFailures, windowMs, lockMs, maxLockMs, rememberMs } = options
  const entries = new Map<string, Entry>()
  const familiar = new Map<string, Map<string, number>>()
  let sweptAt = 0

  const pairKey = (account: string, address: string) => `pair\u0000${account.toLowerCase()}\u0000${address}`
  const addressKey = (address: string) => `address\u0000${address}`
  const accountKey = (account: string) => `account\u0000${account.toLowerCase()}`

  const waitOf = (key: string, now: number): number => {
    const entry = entries.get(key)
    return entry === undefined ? 0 : Math.max(0, entry.lockedUntil - now)
  }

  const isFamiliar = (account: string, address: string, now: number): boolean => {
    if (isLoopback(address)) return true
    const seen = familiar.get(account.toLowerCase())?.get(address)
    return seen !== undefined && now - seen < rememberMs
  }

  const strike = (key: string, limit: number, now: number) => {
    let entry = entries.get(key)
    if (entry === undefined || now - entry.lastFailure > maxLockMs) {
      entry = { failures: [], strikes: 0, lockedUntil: 0, lastFailure: now }
      entries.set(key, entry)
    }
    entry.lastFailure = now
    entry.failures = entry.failures.filter((at) => at > now - windowMs)
    entry.failures.push(now)
    // Once locked, every further failure locks again (for twice as long) without waiting for a full window.
    if (entry.strikes > 0 || entry.failures.length >= limit) {
      entry.lockedUntil = now + Math.min(lockMs * 2 ** entry.strikes, maxLockMs)
      entry.strikes++
      entry.failures = []
    }
  }

  const sweep = (now: number) => {
    if (now - sweptAt < windowMs) return
    sweptAt = now
    for (const [key, entry] of entries) {
      if (entry.lockedUntil <= now && now - entry.lastFailure > maxLockMs) entries.delete(key)
    }
    for (const [account, addresses] of familiar) {
      for (const [address, at] of addresses) if (now - at >= rememberMs) addresses.delete(address)
      if (addresses.size === 0) familiar.delete(account)
    }
  }

  return {
    retryAfter: (account, address) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const waits = [waitOf(pairKey(account, address), now), waitOf(addressKey(address), now)]
        if (!isFamiliar(account, address, now)) waits.push(waitOf(accountKey(account), now))
        return Math.ceil(Math.max(...waits) / 1000)
      }),
    fail: (account, address) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        sweep(now)
        strike(pairKey(account, address), maxFailures, now)
        strike(addressKey(address), maxFailures, now)
        if (!isFamiliar(account, address, now)) strike(accountKey(account), accountMaxFailures, now)
      }),
    succeed: (account, address) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        entries.delete(pairKey(account, address))
        if (isLoopback(address)) return
        const name = account.toLowerCase()
        const addresses = familiar.get(name) ?? new Map<string, number>()
        addresses.delete(address)
        addresses.set(address, now)
        if (addresses.size > MAX_FAMILIAR) addresses.delete(addresses.keys().next().value!)
        familiar.set(name, addresses)
      }),
    tracked: Effect.sync(() => entries.size)
  }
}
