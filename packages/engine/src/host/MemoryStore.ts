/**
 * The embedded store: core's ports (`KeyStore`, `Catalog`, `Accounts`,
 * `UsageLog`, `ChannelKeyStates`) in this process's memory, built from a
 * `Declaration` (what a configuration declares). It is what a gateway
 * embedded in another program runs on by default (`WebHandler.toWebHandler`),
 * at the edge and in tests: nothing survives the process, and keys, balances,
 * holds and usage records are this process's alone, so it fits one process
 * serving its own users, not a fleet (run node-http on PostgreSQL for that).
 *
 * Money keeps the same rules as the database: a hold is taken whole or
 * refused (the event loop runs one hold at a time, so concurrent calls are
 * never admitted beyond the balance), a settlement charges all the call cost,
 * above its hold too (the balance then goes below zero, down to at most
 * `-MAX_NANOS`, and every call that may cost anything is refused until a
 * top-up), and keys with spending caps (lifetime quota, daily and monthly
 * budgets, by UTC day and month) are checked against what they spent and
 * hold. The host tops balances up, changes caps and revokes keys through
 * `MemoryAdmin`.
 *
 * Keys are looked up by their secret, which is in the configuration object
 * the host passed anyway; nothing is written anywhere.
 *
 * @since 0.1.0
 */
import {
  Accounts,
  Catalog,
  ChannelKeyStates,
  type Declaration,
  type Domain,
  GatewayError,
  KeyStore,
  Money,
  UsageLog
} from "@modelgate/core"
import { Clock, Context, Effect, Layer, Redacted } from "effect"

/** How many usage records the store keeps (the oldest go first). @category constants */
export const USAGE_RECORDS_KEPT = 10_000

/** What the store holds, for the host and tests: the recent usage records and each user's balance. @category models */
export interface Inspect {
  /** The usage records written, oldest first (at most `USAGE_RECORDS_KEPT`). */
  readonly usage: () => ReadonlyArray<UsageLog.UsageRecord>
  /** A user's balance by name (nano-dollars), not counting holds of calls in progress. */
  readonly balance: (userName: string) => bigint | undefined
  /** What a user may still spend (nano-dollars): the balance less what calls in progress hold. */
  readonly spendable: (userName: string) => bigint | undefined
}

/**
 * The store's view for the host: usage records and balances.
 *
 * @category services
 */
export class MemoryInspect
  extends Context.Service<MemoryInspect, Inspect>()("modelgate/engine/MemoryStore/MemoryInspect")
{}

/** A key's spending caps in nano-dollars: a field left out is kept, `null` removes the cap. @category models */
export interface KeyCaps {
  readonly quotaNanos?: bigint | null | undefined
  readonly dailyBudgetNanos?: bigint | null | undefined
  readonly monthlyBudgetNanos?: bigint | null | undefined
}

/**
 * What the host may change in the store: balances (a credit of a balance
 * below zero pays its debt first), keys' spending caps, and keys (revoking
 * one is final: its secret never authenticates again in this process).
 * Users and keys are named as the configuration names them.
 *
 * @category models
 */
export interface Admin {
  /** Credits (or with a negative amount, debits, never below zero) a user's balance; the new balance, or undefined for an unknown user or a refused debit. */
  readonly credit: (userName: string, amountNanos: bigint) => bigint | undefined
  /** Changes a key's caps; false for an unknown key. Calls in progress keep their holds. */
  readonly setCaps: (userName: string, keyName: string, caps: KeyCaps) => boolean
  /** Revokes a key for good; false for an unknown (or already revoked) key. */
  readonly revoke: (userName: string, keyName: string) => boolean
}

/**
 * The host's means to change the store (`Admin`).
 *
 * @category services
 */
export class MemoryAdmin extends Context.Service<MemoryAdmin, Admin>()("modelgate/engine/MemoryStore/MemoryAdmin") {}

/** Limits with every unset field as "no limit". */
const limitsOf = (limits: Partial<Domain.Limits> | undefined): Domain.Limits => ({
  rpm: limits?.rpm ?? null,
  tpm: limits?.tpm ?? null,
  concurrency: limits?.concurrency ?? null
})

/** The key's prefix shown in messages (`sk-demo…`). */
const prefixOf = (secret: string): string => secret.slice(0, 8)

interface Account {
  readonly userId: string
  readonly name: string
  balance: bigint
  held: bigint
}

interface KeySpend {
  total: bigint
  held: bigint
  day: string
  daySpent: bigint
  month: string
  monthSpent: bigint
}

interface Hold {
  readonly userId: string
  readonly key: Domain.ApiKey
  readonly amount: bigint
}

const dayOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10)
const monthOf = (ms: number): string => new Date(ms).toISOString().slice(0, 7)

/**
 * The ports over a declaration. Keys declared without a secret cannot be
 * used here (there is nowhere to show a generated one): the declaration is
 * refused, naming them.
 *
 * @category layers
 */
export const layer = (
  declaration: Declaration.Declaration
): Layer.Layer<
  | KeyStore.KeyStore
  | Catalog.Catalog
  | Accounts.Accounts
  | UsageLog.UsageLog
  | ChannelKeyStates.ChannelKeyStates
  | MemoryInspect
  | MemoryAdmin,
  GatewayError.InvalidRequest
> =>
  Layer.effectContext(Effect.gen(function*() {
    const users = new Map<string, { readonly id: string; readonly user: Declaration.User }>()
    const accounts = new Map<string, Account>()
    for (const [i, user] of (declaration.users ?? []).entries()) {
      const id = `usr_${i + 1}`
      users.set(user.name, { id, user })
      accounts.set(id, { userId: id, name: user.name, balance: user.balanceNanos ?? 0n, held: 0n })
    }
    const keysBySecret = new Map<string, Domain.ApiKey>()
    /** Each key's secret by `user/key` name, for the host's changes. */
    const secrets = new Map<string, string>()
    const missing: Array<string> = []
    for (const [i, key] of (declaration.keys ?? []).entries()) {
      const owner = users.get(key.user)
      if (owner === undefined) {
        return yield* new GatewayError.InvalidRequest({
          message: `The key '${key.name}' belongs to '${key.user}', who is not a declared user.`
        })
      }
      if (key.secret === undefined) {
        missing.push(`${key.user}/${key.name}`)
        continue
      }
      const secret = Redacted.value(key.secret)
      secrets.set(`${key.user}/${key.name}`, secret)
      keysBySecret.set(secret, {
        id: `key_${i + 1}`,
        name: key.name,
        prefix: prefixOf(secret),
        userId: owner.id,
        userName: owner.user.name,
        userRole: owner.user.role ?? "user",
        userEnabled: owner.user.enabled ?? true,
        group: key.group,
        models: key.models ?? [],
        expiresAt: key.expiresAt ?? null,
        enabled: key.enabled ?? true,
        quotaNanos: key.quotaNanos ?? null,
        dailyBudgetNanos: key.dailyBudgetNanos ?? null,
        monthlyBudgetNanos: key.monthlyBudgetNanos ?? null,
        limits: limitsOf(key.limits),
        userLimits: limitsOf(owner.user.limits)
      })
    }
    if (missing.length > 0) {
      return yield* new GatewayError.InvalidRequest({
        message: `These keys have no secret, and an embedded gateway cannot show a generated one: ${
          missing.join(", ")
        }. Give each a 'secret' ('sk-' and at least 17 more characters).`
      })
    }

    const snapshot = Catalog.makeSnapshot({
      models: declaration.models ?? [],
      groups: (declaration.groups ?? []).map((group) => ({
        name: group.name,
        ratioMicros: group.ratioMicros,
        limits: limitsOf(group.limits)
      })),
      channels: (declaration.channels ?? []).map((channel, i) => ({ ...channel, id: `chn_${i + 1}` })),
      aliases: declaration.aliases ?? []
    })

    const spends = new Map<string, KeySpend>()
    const spendOf = (keyId: string, now: number): KeySpend => {
      let spend = spends.get(keyId)
      if (spend === undefined) {
        spend = { total: 0n, held: 0n, day: dayOf(now), daySpent: 0n, month: monthOf(now), monthSpent: 0n }
        spends.set(keyId, spend)
      }
      if (spend.day !== dayOf(now)) {
        spend.day = dayOf(now)
        spend.daySpent = 0n
      }
      if (spend.month !== monthOf(now)) {
        spend.month = monthOf(now)
        spend.monthSpent = 0n
      }
      return spend
    }

    const holds = new Map<string, Hold>()
    let holdSequence = 0
    const unknownUser = () =>
      new GatewayError.InternalError({ message: "The account of this key is not known to the gateway." })

    const capRefusal = (key: Domain.ApiKey, spend: KeySpend, request: Accounts.HoldRequest) => {
      const caps: ReadonlyArray<readonly ["quota" | "daily" | "monthly", bigint | null, bigint]> = [
        ["quota", key.quotaNanos, spend.total],
        ["daily", key.dailyBudgetNanos, spend.daySpent],
        ["monthly", key.monthlyBudgetNanos, spend.monthSpent]
      ]
      for (const [cap, limit, spent] of caps) {
        if (limit !== null && spent + spend.held + request.amountNanos > limit) {
          return Accounts.spendingCapReached({
            keyName: key.name,
            cap,
            limitNanos: limit,
            spentNanos: spent,
            heldNanos: spend.held,
            request
          })
        }
      }
      return undefined
    }

    const keysById = new Map([...keysBySecret.values()].map((key) => [key.id, key]))

    const hold = (request: Accounts.HoldRequest) =>
      Effect.flatMap(Clock.currentTimeMillis, (now): Effect.Effect<
        string,
        GatewayError.InsufficientBalance | GatewayError.SpendingCapReached | GatewayError.InternalError
      > => {
        const account = accounts.get(request.userId)
        const key = keysById.get(request.keyId)
        if (account === undefined || key === undefined) return Effect.fail(unknownUser())
        // A hold of nothing (a free model) costs nothing: served whatever the balance and the caps, as the leases do.
        if (request.amountNanos <= 0n) {
          const id = `hold_${++holdSequence}`
          holds.set(id, { userId: account.userId, key, amount: 0n })
          return Effect.succeed(id)
        }
        const spend = spendOf(key.id, now)
        const capped = capRefusal(key, spend, request)
        if (capped !== undefined) return Effect.fail(capped)
        if (account.balance - account.held < request.amountNanos) {
          return Effect.fail(Accounts.insufficientBalance(account.balance - account.held, request))
        }
        account.held += request.amountNanos
        spend.held += request.amountNanos
        const id = `hold_${++holdSequence}`
        holds.set(id, { userId: account.userId, key, amount: request.amountNanos })
        return Effect.succeed(id)
      })

    const settle = (holdId: string, chargeNanos: bigint) =>
      Effect.map(Clock.currentTimeMillis, (now): Accounts.Settled => {
        const held = holds.get(holdId)
        if (held === undefined) return Accounts.nothingSettled
        holds.delete(holdId)
        const account = accounts.get(held.userId)!
        const spend = spendOf(held.key.id, now)
        account.held -= held.amount
        spend.held -= held.amount
        const want = chargeNanos < 0n ? 0n : chargeNanos
        // All of it, from the hold and the rest of the balance, below zero if need be (down to the floor).
        const available = account.balance - account.held
        const room = available + Money.MAX_NANOS
        const charged = want <= room ? want : room > 0n ? room : 0n
        account.balance -= charged
        spend.total += charged
        spend.daySpent += charged
        spend.monthSpent += charged
        const key = keysById.get(held.key.id) ?? held.key
        const overCap = charged === 0n ? undefined : Accounts.capOverrun([
          ["quota", key.quotaNanos, spend.total],
          ["daily", key.dailyBudgetNanos, spend.daySpent],
          ["monthly", key.monthlyBudgetNanos, spend.monthSpent]
        ])
        return {
          chargedNanos: charged,
          overdrawnNanos: Accounts.overdrawn(available, charged),
          ...(overCap === undefined ? {} : { overCap })
        }
      })

    const records: Array<UsageLog.UsageRecord> = []
    const record = (usage: UsageLog.UsageRecord) =>
      Effect.sync(() => {
        records.push(usage)
        if (records.length > USAGE_RECORDS_KEPT) records.splice(0, records.length - USAGE_RECORDS_KEPT)
      })

    const spentBetween = (userId: string, fromMs: number, toMs: number) =>
      Effect.sync(() => {
        let total = 0n
        for (const usage of records) {
          if (usage.userId === userId && usage.createdAt >= fromMs && usage.createdAt < toMs) total += usage.costNanos
        }
        return total
      })

    const disabled = new Map<string, ChannelKeyStates.DisabledKey>()

    const keyNamed = (userName: string, keyName: string) => {
      const secret = secrets.get(`${userName}/${keyName}`)
      return secret === undefined ? undefined : { secret, key: keysBySecret.get(secret) }
    }
    const admin: Admin = {
      credit: (userName, amountNanos) => {
        const account = accounts.get(users.get(userName)?.id ?? "")
        if (account === undefined) return undefined
        const balance = account.balance + amountNanos
        if (balance > Money.MAX_NANOS || (amountNanos < 0n && balance < 0n)) return undefined
        account.balance = balance
        return balance
      },
      setCaps: (userName, keyName, caps) => {
        const found = keyNamed(userName, keyName)
        if (found?.key === undefined) return false
        const key: Domain.ApiKey = {
          ...found.key,
          ...(caps.quotaNanos === undefined ? {} : { quotaNanos: caps.quotaNanos }),
          ...(caps.dailyBudgetNanos === undefined ? {} : { dailyBudgetNanos: caps.dailyBudgetNanos }),
          ...(caps.monthlyBudgetNanos === undefined ? {} : { monthlyBudgetNanos: caps.monthlyBudgetNanos })
        }
        keysBySecret.set(found.secret, key)
        keysById.set(key.id, key)
        return true
      },
      revoke: (userName, keyName) => {
        const found = keyNamed(userName, keyName)
        if (found?.key === undefined) return false
        keysBySecret.delete(found.secret)
        return true
      }
    }

    return Context.make(KeyStore.KeyStore, { lookup: (secret) => Effect.succeed(keysBySecret.get(secret)) }).pipe(
      Context.add(Catalog.Catalog, { current: Effect.succeed(snapshot) }),
      Context.add(Accounts.Accounts, {
        hold,
        settle,
        balance: (userId) => {
          const account = accounts.get(userId)
          return account === undefined ? Effect.fail(unknownUser()) : Effect.succeed(account.balance - account.held)
        },
        spent: spentBetween
      }),
      Context.add(UsageLog.UsageLog, { record }),
      Context.add(ChannelKeyStates.ChannelKeyStates, {
        // The secret never leaves this process: its fingerprint can be itself.
        fingerprint: (apiKey) => apiKey,
        list: Effect.sync(() => [...disabled.values()]),
        disable: (key) => Effect.sync(() => void disabled.set(`${key.channelId}\u0000${key.fingerprint}`, key)),
        enable: (channelId, fingerprint) => Effect.sync(() => void disabled.delete(`${channelId}\u0000${fingerprint}`)),
        enableChannel: (channelId) =>
          Effect.sync(() => {
            for (const [id, key] of disabled) if (key.channelId === channelId) disabled.delete(id)
          })
      }),
      Context.add(MemoryAdmin, admin),
      Context.add(MemoryInspect, {
        usage: () => records.slice(),
        balance: (name) => {
          const user = users.get(name)
          return user === undefined ? undefined : accounts.get(user.id)?.balance
        },
        spendable: (name) => {
          const account = accounts.get(users.get(name)?.id ?? "")
          return account === undefined ? undefined : account.balance - account.held
        }
      })
    )
  }))
