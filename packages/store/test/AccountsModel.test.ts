/**
 * Model-based property tests of the money path, through the store's public
 * `Accounts` API, on SQLite always and on PostgreSQL when
 * MODELGATE_TEST_POSTGRES is set.
 *
 * A pure reference implementation (`step` below) says what every operation
 * must do to a balance: a hold succeeds exactly when the balance (and the
 * key's lifetime quota) covers it, so a balance below zero refuses every
 * hold; a settlement charges the whole charge, once, and releases what is
 * left of the hold: beyond the hold it takes the balance below zero, never
 * below the floor of `-MAX_NANOS`; a top-up credits (a balance below zero
 * pays its debt first); a debit never takes the balance below zero or
 * further below. Random sequences are run against the store and the model
 * side by side, and after every step the balance, the ledger's sum, the
 * key's spend and every returned value must agree with the model.
 *
 * Concurrent batches (several holds, settlements, top-ups in flight at once)
 * must be linearisable: the results and the final state equal those of the
 * model applying the same operations one at a time in SOME order.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Accounts as AccountsPort, Money } from "@modelgate/core"
import { Effect } from "effect"
import fc from "fast-check"
import { Accounts } from "../src/Accounts.ts"
import { Keys } from "../src/Keys.ts"
import { Users } from "../src/Users.ts"
import { makePostgres, makeSqlite, postgresUrl, storeLayer, type TestDatabase } from "./harness.ts"

// ---------------------------------------------------------------------------
// The reference model
// ---------------------------------------------------------------------------

/** Which key a hold is for: the capped key (lifetime quota) or a key without caps. */
type KeyRef = "capped" | "plain"

type Op =
  | { readonly op: "hold"; readonly amount: bigint; readonly key: KeyRef }
  | { readonly op: "settle"; readonly hold: number; readonly charge: bigint }
  | { readonly op: "release"; readonly hold: number }
  | { readonly op: "topup"; readonly amount: bigint }
  | { readonly op: "adjust"; readonly amount: bigint }

/**
 * An operation as generated: amounts may be given relative to the state when
 * it runs (the balance, what the quota leaves, what a settlement can take),
 * one below, at or one above, so the boundaries are hit on every run, not by luck.
 */
type Boundary = { readonly at: "balance" | "quota" | "available"; readonly delta: -1n | 0n | 1n }
type GeneratedOp = Op & { readonly boundary?: Boundary | undefined }

interface State {
  readonly balance: bigint
  /** What the capped key was charged so far. */
  readonly spent: bigint
  /** Open holds by id. */
  readonly open: ReadonlyMap<string, { readonly amount: bigint; readonly key: KeyRef }>
}

/** What an operation returned, as compared with the model. */
type Outcome =
  | { readonly _tag: "held"; readonly id: string }
  | { readonly _tag: "refused"; readonly error: string }
  | {
    readonly _tag: "settlement"
    readonly settled: boolean
    readonly charged: bigint
    readonly overdrawn: bigint
    readonly shortfall: bigint
  }
  | { readonly _tag: "balance"; readonly balance: bigint }

/** What the model expects: an outcome, or for a refused hold the errors that are right (either check may come first). */
type Expected =
  | Outcome
  | { readonly _tag: "refused-one-of"; readonly errors: ReadonlyArray<string> }

const sumKey = (state: State, key: KeyRef) => {
  let total = 0n
  for (const hold of state.open.values()) if (hold.key === key) total += hold.amount
  return total
}

/**
 * One operation applied to the model. `holdIds` names every hold opened so
 * far (settlements refer to them by index); `newId` is the id the store gave
 * a hold that succeeded.
 */
const step = (
  state: State,
  op: Op,
  quota: bigint | null,
  holdIds: ReadonlyArray<string>,
  newId: string | undefined
): { readonly state: State; readonly expected: Expected } => {
  switch (op.op) {
    case "hold": {
      const errors: Array<string> = []
      if (state.balance < op.amount) errors.push("InsufficientBalance")
      if (op.key === "capped" && quota !== null && state.spent + sumKey(state, "capped") + op.amount > quota) {
        errors.push("SpendingCapReached")
      }
      if (errors.length > 0) return { state, expected: { _tag: "refused-one-of", errors } }
      const id = newId ?? "(a new hold)"
      const open = new Map(state.open)
      open.set(id, { amount: op.amount, key: op.key })
      return { state: { ...state, balance: state.balance - op.amount, open }, expected: { _tag: "held", id } }
    }
    case "settle":
    case "release": {
      const id = holdIds[op.hold % Math.max(1, holdIds.length)]
      const charge = op.op === "settle" ? op.charge : 0n
      const hold = id === undefined ? undefined : state.open.get(id)
      if (hold === undefined) {
        return { state, expected: { _tag: "settlement", settled: false, charged: 0n, overdrawn: 0n, shortfall: 0n } }
      }
      const room = hold.amount + state.balance + Money.MAX_NANOS
      const charged = charge <= room ? charge : room
      const open = new Map(state.open)
      open.delete(id!)
      return {
        state: {
          balance: state.balance + hold.amount - charged,
          spent: hold.key === "capped" ? state.spent + charged : state.spent,
          open
        },
        expected: {
          _tag: "settlement",
          settled: true,
          charged,
          overdrawn: AccountsPort.overdrawn(hold.amount + state.balance, charged),
          shortfall: charge - charged
        }
      }
    }
    case "topup": {
      const balance = state.balance + op.amount
      return { state: { ...state, balance }, expected: { _tag: "balance", balance } }
    }
    case "adjust": {
      if (op.amount < 0n && state.balance + op.amount < 0n) {
        return { state, expected: { _tag: "refused", error: "InvalidInput" } }
      }
      const balance = state.balance + op.amount
      return { state: { ...state, balance }, expected: { _tag: "balance", balance } }
    }
  }
}

/** A generated operation with its amount resolved against the state it starts from. */
const resolve = (op: GeneratedOp, state: State, quota: bigint | null, holdIds: ReadonlyArray<string>): Op => {
  const boundary = op.boundary
  if (boundary === undefined) return op
  const nonNegative = (n: bigint) => n < 0n ? 0n : n
  switch (op.op) {
    case "hold": {
      const base = boundary.at === "quota" && quota !== null
        ? quota - state.spent - sumKey(state, "capped")
        : state.balance
      return {
        op: "hold",
        key: boundary.at === "quota" ? "capped" : op.key,
        amount: nonNegative(base + boundary.delta)
      }
    }
    case "settle": {
      const id = holdIds[op.hold % Math.max(1, holdIds.length)]
      const held = id === undefined ? 0n : state.open.get(id)?.amount ?? 0n
      return { op: "settle", hold: op.hold, charge: nonNegative(held + state.balance + boundary.delta) }
    }
    case "adjust": {
      // take the whole balance, one less, or one more than there is
      const amount = -state.balance + boundary.delta
      return { op: "adjust", amount: amount === 0n ? -1n : amount }
    }
    default:
      return op
  }
}

const matches = (expected: Expected, outcome: Outcome): boolean => {
  if (expected._tag === "refused-one-of") return outcome._tag === "refused" && expected.errors.includes(outcome.error)
  if (expected._tag === "held") return outcome._tag === "held"
  if (expected._tag === "settlement" && outcome._tag === "settlement") {
    return outcome.settled === expected.settled &&
      (!expected.settled ||
        (outcome.charged === expected.charged && outcome.overdrawn === expected.overdrawn &&
          outcome.shortfall === expected.shortfall))
  }
  return JSON.stringify(expected, big) === JSON.stringify(outcome, big)
}

const big = (_: string, value: unknown) => typeof value === "bigint" ? value.toString() : value

const permutations = <A>(items: ReadonlyArray<A>): Array<Array<A>> =>
  items.length <= 1
    ? [[...items]]
    : items.flatMap((item, i) =>
      permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest])
    )

// ---------------------------------------------------------------------------
// Random operations
// ---------------------------------------------------------------------------

const boundaryArbitrary = (at: ReadonlyArray<Boundary["at"]>) =>
  fc.option(fc.record({ at: fc.constantFrom(...at), delta: fc.constantFrom<Boundary["delta"]>(-1n, 0n, 1n) }), {
    nil: undefined,
    freq: 3
  })

const opArbitrary: fc.Arbitrary<GeneratedOp> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant("hold" as const),
      amount: fc.bigInt({ min: 0n, max: 5_000n }),
      key: fc.constantFrom<KeyRef>("capped", "plain"),
      boundary: boundaryArbitrary(["balance", "quota"])
    })
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant("settle" as const),
      hold: fc.nat(40),
      charge: fc.bigInt({ min: 0n, max: 8_000n }),
      boundary: boundaryArbitrary(["available"])
    })
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("release" as const), hold: fc.nat(40) }) },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant("topup" as const), amount: fc.bigInt({ min: 1n, max: 3_000n }) })
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant("adjust" as const),
      amount: fc.bigInt({ min: -3_000n, max: 3_000n }).filter((a) => a !== 0n),
      boundary: boundaryArbitrary(["balance"])
    })
  }
)

const startArbitrary = fc.record({
  initial: fc.bigInt({ min: 0n, max: 10_000n }),
  quota: fc.option(fc.bigInt({ min: 0n, max: 20_000n }), { nil: null })
})

// ---------------------------------------------------------------------------
// Running operations against the store
// ---------------------------------------------------------------------------

interface Account {
  readonly userId: string
  readonly cappedKeyId: string
}

const setUp = Effect.fnUntraced(function*(initial: bigint, quota: bigint | null) {
  const users = yield* Users
  const keys = yield* Keys
  const accounts = yield* Accounts
  const user = yield* users.create({ name: `m${Math.random().toString(36).slice(2, 12)}` })
  if (initial > 0n) yield* accounts.topUp(user.id, initial, "initial", "test")
  const { key } = yield* keys.create({ userId: user.id, name: "capped", group: "default", quotaNanos: quota })
  return { userId: user.id, cappedKeyId: key.id } satisfies Account
})

const refusal = (error: { readonly _tag: string }): Outcome => ({ _tag: "refused", error: error._tag })

let requests = 0

const run = Effect.fnUntraced(function*(account: Account, op: Op, holdIds: ReadonlyArray<string>) {
  const accounts = yield* Accounts
  switch (op.op) {
    case "hold": {
      const result = yield* Effect.result(accounts.hold({
        userId: account.userId,
        keyId: op.key === "capped" ? account.cappedKeyId : "key-without-caps",
        amountNanos: op.amount,
        // Every call has its own request id, as the gateway's calls do (a request has one charge).
        requestId: `model-${++requests}`,
        nodeId: "model-node"
      }))
      return result._tag === "Success"
        ? { _tag: "held", id: result.success } satisfies Outcome
        : refusal(result.failure)
    }
    case "settle":
    case "release": {
      const id = holdIds[op.hold % Math.max(1, holdIds.length)] ?? "hld_never_opened"
      const result = op.op === "settle" ? yield* accounts.settle(id, op.charge) : yield* accounts.release(id)
      return {
        _tag: "settlement",
        settled: result.settled,
        charged: result.chargedNanos,
        overdrawn: result.overdrawnNanos,
        shortfall: result.shortfallNanos
      } satisfies Outcome
    }
    case "topup":
      return {
        _tag: "balance",
        balance: yield* accounts.topUp(account.userId, op.amount, "model", "test")
      } satisfies Outcome
    case "adjust": {
      const result = yield* Effect.result(accounts.adjust(account.userId, op.amount, "model", "test"))
      return result._tag === "Success"
        ? { _tag: "balance", balance: result.success } satisfies Outcome
        : refusal(result.failure)
    }
  }
})

/** The store's state agrees with the model's: balance, ledger sum, the key's spend; and the balance is not negative. */
const assertAgrees = Effect.fnUntraced(function*(account: Account, state: State, context: string) {
  const accounts = yield* Accounts
  const keys = yield* Keys
  const balance = yield* accounts.balance(account.userId)
  const ledger = yield* accounts.ledgerSum(account.userId)
  const key = yield* keys.findById(account.cappedKeyId)
  assert.strictEqual(balance, state.balance, `balance after ${context}`)
  assert.strictEqual(ledger, balance, `the ledger's sum equals the balance after ${context}`)
  assert.isTrue(balance >= -Money.MAX_NANOS, `the balance is not below the floor after ${context}`)
  assert.strictEqual(key!.spentNanos, state.spent, `the key's spend after ${context}`)
})

const describeOp = (op: Op) => JSON.stringify(op, big)

// ---------------------------------------------------------------------------
// The properties
// ---------------------------------------------------------------------------

const suite = (name: TestDatabase["name"], make: () => Promise<TestDatabase>) => {
  // SQLite runs an operation in well under a millisecond; PostgreSQL round trips cost more.
  const runs = name === "sqlite" ? { sequential: 500, concurrent: 300 } : { sequential: 100, concurrent: 60 }

  layer(storeLayer(make), { excludeTestServices: true, timeout: "300 seconds" })((it) => {
    it.effect(`any sequence of holds, charges, releases, top-ups and adjustments does what the model says (${runs.sequential} runs)`, () =>
      Effect.gen(function*() {
        const context = yield* Effect.context<Accounts | Users | Keys>()
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(startArbitrary, fc.array(opArbitrary, { maxLength: 30 }), ({ initial, quota }, ops) =>
              Effect.runPromise(
                Effect.gen(function*() {
                  const account = yield* setUp(initial, quota)
                  let state: State = { balance: initial, spent: 0n, open: new Map() }
                  const holdIds: Array<string> = []
                  yield* assertAgrees(account, state, "the start")
                  for (const [i, generated] of ops.entries()) {
                    const op = resolve(generated, state, quota, holdIds)
                    const outcome = yield* run(account, op, holdIds)
                    const next = step(state, op, quota, holdIds, outcome._tag === "held" ? outcome.id : undefined)
                    assert.isTrue(
                      matches(next.expected, outcome),
                      `step ${i} ${describeOp(op)}: expected ${JSON.stringify(next.expected, big)}, got ${
                        JSON.stringify(outcome, big)
                      }`
                    )
                    if (outcome._tag === "held") {
                      holdIds.push(outcome.id)
                    }
                    state = next.state
                    yield* assertAgrees(account, state, `step ${i} ${describeOp(op)}`)
                  }
                  // Every hold settled or released: nothing stays held.
                  // oxlint-disable-next-line unicorn/no-useless-spread -- `state` is replaced inside the loop
                  for (const id of [...state.open.keys()]) {
                    const released = yield* Effect.flatMap(Accounts, (accounts) =>
                      accounts.release(id))
                    assert.isTrue(released.settled)
                    state = step(state, { op: "release", hold: holdIds.indexOf(id) }, quota, holdIds, undefined).state
                  }
                  assert.strictEqual(state.open.size, 0)
                  yield* assertAgrees(account, state, "releasing every hold")
                }).pipe(Effect.provide(context))
              )),
            { numRuns: runs.sequential }
          )
        )
      }))

    it.effect(`operations in flight at once are linearisable: results and balance equal the model's in some order (${runs.concurrent} runs)`, () =>
      Effect.gen(function*() {
        const context = yield* Effect.context<Accounts | Users | Keys>()
        const batches = fc.array(fc.array(opArbitrary, { minLength: 2, maxLength: 5 }), { minLength: 1, maxLength: 8 })
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(startArbitrary, batches, ({ initial, quota }, batchList) =>
              Effect.runPromise(
                Effect.gen(function*() {
                  const account = yield* setUp(initial, quota)
                  let state: State = { balance: initial, spent: 0n, open: new Map() }
                  const holdIds: Array<string> = []
                  for (const [b, generated] of batchList.entries()) {
                    // All at once: every settlement refers to holds opened by earlier batches.
                    const frozen = [...holdIds]
                    const batch = generated.map((op) => resolve(op, state, quota, frozen))
                    const outcomes = yield* Effect.all(
                      batch.map((op) => run(account, op, frozen)),
                      { concurrency: "unbounded" }
                    )
                    const accounts = yield* Accounts
                    const balance = yield* accounts.balance(account.userId)
                    const spent = (yield* (yield* Keys).findById(account.cappedKeyId))!.spentNanos
                    // Some order of the batch must explain every result and the final balance and spend.
                    let explained: State | undefined
                    for (
                      const order of permutations(batch.map((_, i) => i))
                    ) {
                      let candidate = state
                      let ok = true
                      for (const i of order) {
                        const outcome = outcomes[i]!
                        const next = step(
                          candidate,
                          batch[i]!,
                          quota,
                          frozen,
                          outcome._tag === "held" ? outcome.id : undefined
                        )
                        if (!matches(next.expected, outcome)) {
                          ok = false
                          break
                        }
                        candidate = next.state
                      }
                      if (ok && candidate.balance === balance && candidate.spent === spent) {
                        explained = candidate
                        break
                      }
                    }
                    assert.isDefined(
                      explained,
                      `batch ${b} ${
                        batch.map(describeOp).join(", ")
                      } from balance ${state.balance}: no order of the operations explains ` +
                        `the results ${JSON.stringify(outcomes, big)} with balance ${balance} and spend ${spent}`
                    )
                    state = explained!
                    for (const outcome of outcomes) if (outcome._tag === "held") holdIds.push(outcome.id)
                    yield* assertAgrees(account, state, `batch ${b}`)
                  }
                  // Release what is still held, all at once.
                  const accounts = yield* Accounts
                  const released = yield* Effect.all([...state.open.keys()].map((id) => accounts.release(id)), {
                    concurrency: "unbounded"
                  })
                  assert.isTrue(released.every((r) => r.settled))
                  yield* assertAgrees(account, {
                    ...state,
                    balance: state.balance + [...state.open.values()].reduce((a, h) => a + h.amount, 0n),
                    open: new Map()
                  }, "releasing every hold")
                }).pipe(Effect.provide(context))
              )),
            { numRuns: runs.concurrent }
          )
        )
      }))

    it.effect("the model itself: a refusal leaves everything as it was, a charge beyond the hold is taken whole", () =>
      Effect.sync(() => {
        const empty: State = { balance: 100n, spent: 0n, open: new Map() }
        const refused = step(empty, { op: "hold", amount: 101n, key: "plain" }, null, [], undefined)
        assert.strictEqual(refused.state, empty)
        assert.deepStrictEqual(refused.expected, { _tag: "refused-one-of", errors: ["InsufficientBalance"] })
        const capped = step(empty, { op: "hold", amount: 60n, key: "capped" }, 50n, [], undefined)
        assert.deepStrictEqual(capped.expected, { _tag: "refused-one-of", errors: ["SpendingCapReached"] })
        const held = step(empty, { op: "hold", amount: 40n, key: "capped" }, null, [], "h1")
        assert.strictEqual(held.state.balance, 60n)
        const over = step(held.state, { op: "settle", hold: 0, charge: 500n }, null, ["h1"], undefined)
        assert.deepStrictEqual(over.expected, {
          _tag: "settlement",
          settled: true,
          charged: 500n,
          overdrawn: 400n,
          shortfall: 0n
        })
        assert.strictEqual(over.state.balance, -400n)
        assert.strictEqual(over.state.spent, 500n)
        const again = step(over.state, { op: "release", hold: 0 }, null, ["h1"], undefined)
        assert.deepStrictEqual(again.expected, {
          _tag: "settlement",
          settled: false,
          charged: 0n,
          overdrawn: 0n,
          shortfall: 0n
        })
        // Below zero, every hold is refused, one of nothing too; a debit is refused, a credit pays the debt.
        const inDebt = step(over.state, { op: "hold", amount: 0n, key: "plain" }, null, ["h1"], undefined)
        assert.deepStrictEqual(inDebt.expected, { _tag: "refused-one-of", errors: ["InsufficientBalance"] })
        const debit = step(over.state, { op: "adjust", amount: -1n }, null, ["h1"], undefined)
        assert.deepStrictEqual(debit.expected, { _tag: "refused", error: "InvalidInput" })
        const credit = step(over.state, { op: "adjust", amount: 100n }, null, ["h1"], undefined)
        assert.deepStrictEqual(credit.expected, { _tag: "balance", balance: -300n })
        // At the floor, the rest is the shortfall.
        const deep: State = {
          balance: 10n - Money.MAX_NANOS,
          spent: 0n,
          open: new Map([["h2", { amount: 5n, key: "plain" }]])
        }
        const floor = step(deep, { op: "settle", hold: 0, charge: 50n }, null, ["h2"], undefined)
        assert.deepStrictEqual(floor.expected, {
          _tag: "settlement",
          settled: true,
          charged: 15n,
          overdrawn: 15n,
          shortfall: 35n
        })
        assert.strictEqual(floor.state.balance, -Money.MAX_NANOS)
      }))
  })
}

describe("sqlite", () => {
  suite("sqlite", makeSqlite)
})

describe.skipIf(postgresUrl === undefined)("postgres (set MODELGATE_TEST_POSTGRES to run)", () => {
  suite("postgres", () => makePostgres(postgresUrl!))
})
