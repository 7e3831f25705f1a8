/**
 * One suite, run on SQLite always and on PostgreSQL when MODELGATE_TEST_POSTGRES is set.
 * The model-based property tests of holds and settlements are in AccountsModel.test.ts.
 */
import { describe, layer } from "@effect/vitest"
import { assert } from "@effect/vitest"
import { Domain, KeyStore, Money } from "@modelgate/core"
import { Effect, Exit, Layer, Redacted, Scope } from "effect"
import { SqlClient } from "effect/sql"
import { Accounts } from "../src/Accounts.ts"
import { CatalogRepo } from "../src/CatalogRepo.ts"
import { type ChannelInput, validateChannel } from "../src/CatalogRepo.ts"
import { ChannelKeyStates } from "../src/ChannelKeyStates.ts"
import { Keys } from "../src/Keys.ts"
import { migrate, migrations } from "../src/Migrations.ts"
import { Provisioning, type ProvisionInput } from "../src/Provisioning.ts"
import { Redemption } from "../src/Redemption.ts"
import { KeyHasher } from "../src/Secrets.ts"
import { UsageWriter } from "../src/UsageWriter.ts"
import { Users } from "../src/Users.ts"
import { databaseLayer, makePostgres, makeSqlite, postgresUrl, storeLayer, type TestDatabase } from "./harness.ts"

const USD = 1_000_000_000n

/** Creates a user with the given balance (through a top-up, so the ledger agrees). */
const userWith = Effect.fnUntraced(function*(balance: bigint) {
  const users = yield* Users
  const accounts = yield* Accounts
  const user = yield* users.create({ name: `u${Math.random().toString(36).slice(2, 12)}` })
  if (balance > 0n) yield* accounts.topUp(user.id, balance, "test", "tester")
  return user
})

/** Asserts the invariant: balance == ledger sum, and never negative. */
const assertLedger = Effect.fnUntraced(function*(userId: string) {
  const accounts = yield* Accounts
  const balance = yield* accounts.balance(userId)
  const sum = yield* accounts.ledgerSum(userId)
  assert.strictEqual(balance, sum, "balance equals the ledger sum")
  assert.isTrue(balance >= -Money.MAX_NANOS, "a balance never goes below the floor of -10^9 USD")
  return balance
})

const suite = (make: () => Promise<TestDatabase>) =>
  layer(storeLayer(make), { excludeTestServices: true, timeout: "120 seconds" })((it) => {
    it.effect("migrations are idempotent", () =>
      Effect.gen(function*() {
        assert.deepStrictEqual(yield* migrate, [])
        assert.deepStrictEqual(yield* migrate, [])
      }))

    it.effect("concurrent migrations on a fresh database apply each migration once", () =>
      Effect.gen(function*() {
        const db = yield* Effect.acquireRelease(Effect.promise(make), (db) => Effect.promise(db.cleanup))
        const results = yield* Effect.all(Array.from({ length: 5 }, () => migrate), { concurrency: "unbounded" }).pipe(
          Effect.provide(databaseLayer(db, 10))
        )
        // Each migration ran in exactly one of the five, whichever won the lock.
        assert.deepStrictEqual(results.flat().sort(), migrations.map((m) => `${m.id}_${m.name}`).sort())
      }))

    it.effect("provisioning is idempotent and never touches console rows", () =>
      Effect.gen(function*() {
        const provisioning = yield* Provisioning
        const users = yield* Users
        const accounts = yield* Accounts
        const hasher = yield* KeyHasher
        const keys = yield* Keys
        yield* users.create({ name: "console-carol" })
        const input: ProvisionInput = {
          users: [
            {
              name: "alice",
              role: "admin",
              balanceNanos: 25n * USD,
              password: Redacted.make("alice password"),
              groups: ["vip"],
              limits: { tpm: 10_000, concurrency: 3 }
            },
            { name: "console-carol", balanceNanos: 99n * USD }
          ],
          groups: [{ name: "default", ratioMicros: 1_000_000n }, {
            name: "vip",
            ratioMicros: 800_000n,
            selectable: true,
            limits: { rpm: 60 }
          }],
          models: [{
            id: "gpt-4o-mini",
            displayName: "GPT-4o mini",
            inputNanosPerMillion: 150_000_000n,
            outputNanosPerMillion: 600_000_000n,
            cachedInputNanosPerMillion: null,
            perRequestNanos: null,
            free: false,
            inputTokenLimit: 128_000,
            outputTokenLimit: 16_384,
            description: "Small and fast",
            reasoning: true
          }],
          aliases: [{ pattern: "gpt-4o-mini-*", target: "gpt-4o-mini" }],
          channels: [{
            name: "openai-main",
            type: "openai",
            baseUrl: "https://api.openai.com/v1",
            apiKeys: ["sk-upstream-1", "sk-upstream-2"],
            models: ["gpt-4o-mini"],
            modelMap: {},
            groups: ["default", "vip"],
            priority: 0,
            weight: 1,
            enabled: true,
            headers: {},
            timeouts: { connectMs: 5000, firstByteMs: 30000, idleMs: 30000, totalMs: 600000 },
            apiVersion: null,
            breaker: { ...Domain.defaultBreaker, consecutiveFailures: 3 },
            params: { defaults: { temperature: 0.2 }, overrides: { user: null, metadata: { team: "a" } } },
            streamOptions: false
          }],
          keys: [
            {
              user: "alice",
              name: "fixed",
              group: "default",
              secret: Redacted.make("sk-fixed-secret-for-tests-0001"),
              limits: { rpm: 5 }
            },
            { user: "alice", name: "generated", group: "vip", models: ["gpt-4o-mini"] },
            { user: "console-carol", name: "nope", group: "default" }
          ]
        }
        const first = yield* provisioning.provision(input)
        assert.includeMembers([...first.created], [
          "users:alice",
          "groups:vip",
          "models:gpt-4o-mini",
          "channels:openai-main",
          "keys:alice/fixed"
        ])
        assert.includeMembers([...first.skipped], ["users:console-carol", "keys:console-carol/nope"])
        assert.strictEqual(first.createdSecrets.length, 1)
        const second = yield* provisioning.provision(input)
        assert.deepStrictEqual(second.created, [])
        assert.deepStrictEqual(second.updated, [])
        assert.deepStrictEqual(second.createdSecrets, [])

        const alice = (yield* users.findByName("alice"))!
        assert.strictEqual(alice.role, "admin")
        assert.strictEqual(alice.balanceNanos, 25n * USD)
        assert.strictEqual((yield* accounts.ledger(alice.id, { limit: 10 })).length, 1)
        yield* assertLedger(alice.id)
        assert.strictEqual((yield* users.findByName("console-carol"))!.balanceNanos, 0n)
        assert.deepStrictEqual(yield* users.groups(alice.id), ["vip"])
        assert.isDefined(yield* users.verifyLogin("alice", Redacted.make("alice password")))

        const fixed = yield* keys.findByHash(hasher.hash("sk-fixed-secret-for-tests-0001"))
        assert.strictEqual(fixed?.userName, "alice")
        assert.strictEqual(fixed?.userRole, "admin")
        // Rate limits travel with the cached key: its own and its user's.
        assert.deepStrictEqual(fixed?.limits, { rpm: 5, tpm: null, concurrency: null })
        assert.deepStrictEqual(fixed?.userLimits, { rpm: null, tpm: 10_000, concurrency: 3 })
        const cached = (yield* keys.loadAll).find((k) => k.key.id === fixed?.id)
        assert.deepStrictEqual(cached?.key.userLimits, { rpm: null, tpm: 10_000, concurrency: 3 })

        const catalog = yield* (yield* CatalogRepo).load
        assert.deepStrictEqual(catalog.channels[0]!.apiKeys, ["sk-upstream-1", "sk-upstream-2"])
        // Breaker settings, parameters and the stream_options switch survive the round trip.
        assert.strictEqual(catalog.channels[0]!.breaker.consecutiveFailures, 3)
        assert.deepStrictEqual(catalog.channels[0]!.params, {
          defaults: { temperature: 0.2 },
          overrides: { user: null, metadata: { team: "a" } }
        })
        assert.isFalse(catalog.channels[0]!.streamOptions)
        assert.strictEqual(catalog.models[0]!.outputNanosPerMillion, 600_000_000n)
        // The model's metadata (migration 5) round-trips; flags left out read as false.
        assert.strictEqual(catalog.models[0]!.description, "Small and fast")
        assert.strictEqual(catalog.models[0]!.reasoning, true)
        assert.strictEqual(catalog.models[0]!.embedding, false)
        assert.strictEqual(catalog.models[0]!.reasoningContent, false)
        assert.deepStrictEqual(catalog.groups.find((g) => g.name === "vip")!.limits, {
          rpm: 60,
          tpm: null,
          concurrency: null
        })
        assert.deepStrictEqual(catalog.aliases, [{ pattern: "gpt-4o-mini-*", target: "gpt-4o-mini" }])

        // A changed declaration is applied; the balance in config is only the initial one.
        const third = yield* provisioning.provision({
          ...input,
          users: [{ ...input.users![0]!, role: "user", balanceNanos: 1n }, input.users![1]!]
        })
        assert.deepStrictEqual(third.updated, ["users:alice"])
        assert.strictEqual((yield* users.findByName("alice"))!.balanceNanos, 25n * USD)
      }))

    it.effect("disabled upstream keys: recorded by fingerprint, replaced, re-enabled, gone with their channel", () =>
      Effect.gen(function*() {
        const states = yield* ChannelKeyStates
        const repo = yield* CatalogRepo
        const channel = {
          name: `keys-${Math.random().toString(36).slice(2, 8)}`,
          type: "openai" as const,
          baseUrl: "https://api.example.com/v1",
          apiKeys: ["sk-one", "sk-two"],
          models: ["m"],
          modelMap: {},
          groups: ["default"],
          priority: 0,
          weight: 1,
          enabled: true,
          ...Domain.channelDefaults
        }
        const channelId = yield* repo.upsertChannel(channel)
        const one = states.fingerprint("sk-one")
        assert.match(one, /^[0-9a-f]{32}$/)
        assert.notInclude(one, "sk-one")
        assert.notStrictEqual(one, states.fingerprint("sk-two"))
        const mine = Effect.map(states.list, (all) => all.filter((s) => s.channelId === channelId))
        yield* states.disable({
          channelId,
          fingerprint: one,
          status: 401,
          reason: "HTTP 401: bad key",
          disabledAt: 1,
          nodeId: "n1"
        })
        yield* states.disable({
          channelId,
          fingerprint: one,
          status: 403,
          reason: "HTTP 403: forbidden",
          disabledAt: 2,
          nodeId: "n2"
        })
        yield* states.disable({
          channelId,
          fingerprint: states.fingerprint("sk-two"),
          status: 401,
          reason: "HTTP 401",
          disabledAt: 3,
          nodeId: "n1"
        })
        const listed = yield* mine
        assert.strictEqual(listed.length, 2)
        assert.deepStrictEqual(listed.find((s) => s.fingerprint === one), {
          channelId,
          fingerprint: one,
          status: 403,
          reason: "HTTP 403: forbidden",
          disabledAt: 2,
          nodeId: "n2"
        })
        yield* states.enable(channelId, one)
        assert.strictEqual((yield* mine).length, 1)
        yield* states.enableChannel(channelId)
        assert.strictEqual((yield* mine).length, 0)
        yield* states.disable({
          channelId,
          fingerprint: one,
          status: 401,
          reason: "HTTP 401",
          disabledAt: 4,
          nodeId: "n1"
        })
        yield* repo.deleteChannel(channelId)
        assert.strictEqual((yield* states.list).filter((s) => s.channelId === channelId).length, 0)
      }))

    it.effect("channel validation names the field and why", () =>
      Effect.gen(function*() {
        const base: ChannelInput = {
          name: "v",
          type: "openai" as const,
          baseUrl: "https://api.example.com/v1",
          apiKeys: ["k"],
          models: ["m"],
          modelMap: {},
          groups: ["default"],
          priority: 0,
          weight: 0,
          enabled: true,
          headers: { "HTTP-Referer": "https://example.com" },
          timeouts: Domain.defaultTimeouts,
          apiVersion: null,
          breaker: Domain.defaultBreaker,
          params: { defaults: { temperature: 0 }, overrides: {} },
          streamOptions: true
        }
        // A weight of 0 is valid: the channel is a backup within its tier.
        yield* validateChannel(base, "channels[0]")
        const pathOf = (input: ChannelInput) =>
          Effect.map(Effect.flip(validateChannel(input, "")), (e) => [e.path, e.message])
        assert.deepStrictEqual(yield* pathOf({ ...base, headers: { Host: "x" } }), [
          "headers.Host",
          "headers.Host: this header is managed by the gateway's HTTP client"
        ])
        assert.strictEqual((yield* pathOf({ ...base, headers: { "x-a": "1\r\nx-b: 2" } }))[0], "headers.x-a")
        assert.strictEqual((yield* pathOf({ ...base, headers: { "bad name": "1" } }))[0], "headers.bad name")
        assert.deepStrictEqual(
          yield* pathOf({ ...base, params: { defaults: {}, overrides: { stream_options: {} } } }),
          [
            "params.overrides.stream_options",
            "params.overrides.stream_options: may not be set here: use the channel's stream_options switch"
          ]
        )
        assert.strictEqual(
          (yield* pathOf({ ...base, params: { defaults: { model: "x" }, overrides: {} } }))[0],
          "params.defaults.model"
        )
        assert.strictEqual(
          (yield* pathOf({ ...base, breaker: { ...base.breaker, failureRate: 0 } }))[0],
          "breaker.failureRate"
        )
        assert.strictEqual(
          (yield* pathOf({ ...base, breaker: { ...base.breaker, halfOpenCalls: 0 } }))[0],
          "breaker.halfOpenCalls"
        )
        assert.strictEqual(
          (yield* pathOf({ ...base, timeouts: { ...base.timeouts, idleMs: 1.5 } }))[0],
          "timeouts.idleMs"
        )
        assert.strictEqual((yield* pathOf({ ...base, weight: -1 }))[0], "weight")
      }))

    it.effect("provisioning errors name the field path", () =>
      Effect.gen(function*() {
        const provisioning = yield* Provisioning
        const error = yield* Effect.flip(
          provisioning.provision({ users: [{ name: "bob" }], keys: [{ user: "nobody", name: "k", group: "g" }] })
        )
        assert.strictEqual(error._tag, "InvalidInput")
        assert.strictEqual((error as { path: string }).path, "keys[0].user")
        const bad = yield* Effect.flip(provisioning.provision({ users: [{ name: "bob", balanceNanos: -1n }] }))
        assert.strictEqual((bad as { path: string }).path, "users[0].balanceNanos")
        const badLimit = yield* Effect.flip(provisioning.provision({ users: [{ name: "bob", limits: { rpm: 0 } }] }))
        assert.strictEqual((badLimit as { path: string }).path, "users[0].limits.rpm")
      }))

    it.effect("keys: create, look up by hash, disable, revoke, delete", () =>
      Effect.gen(function*() {
        const keys = yield* Keys
        const hasher = yield* KeyHasher
        const keyStore = yield* KeyStore.KeyStore
        const user = yield* userWith(0n)
        const { key, secret } = yield* keys.create({
          userId: user.id,
          name: "laptop",
          group: "default",
          models: ["a", "b"]
        })
        assert.match(secret, /^sk-[0-9A-Za-z]{43}$/)
        assert.strictEqual(key.prefix, secret.slice(0, 10))
        assert.match(key.id, /^key_/)
        const found = yield* keys.findByHash(hasher.hash(secret))
        assert.strictEqual(found?.id, key.id)
        assert.deepStrictEqual(found?.models, ["a", "b"])
        assert.strictEqual((yield* keyStore.lookup(secret))?.id, key.id)
        assert.isUndefined(yield* keyStore.lookup(secret + "x"))
        const duplicate = yield* Effect.flip(keys.create({ userId: user.id, name: "laptop", group: "default" }))
        assert.strictEqual(duplicate._tag, "Conflict")

        yield* keys.setEnabled(key.id, false)
        assert.isFalse((yield* keys.findByHash(hasher.hash(secret)))!.enabled)
        yield* keys.touchLastUsed([{ keyId: key.id, at: 5000 }, { keyId: key.id, at: 7000 }])
        assert.strictEqual((yield* keys.findById(key.id))!.lastUsedAt, 7000)
        assert.isTrue((yield* keys.loadAll).some((k) => k.key.id === key.id))

        yield* keys.revoke(key.id)
        assert.isUndefined(yield* keys.findByHash(hasher.hash(secret)))
        assert.isFalse((yield* keys.loadAll).some((k) => k.key.id === key.id))
        const reenable = yield* Effect.flip(keys.setEnabled(key.id, true))
        assert.strictEqual(reenable._tag, "InvalidInput")
        yield* keys.remove(key.id)
        assert.deepStrictEqual(yield* keys.list(user.id), [])
        const missing = yield* Effect.flip(keys.remove(key.id))
        assert.strictEqual(missing._tag, "ResourceNotFound")
      }))

    it.effect("hold, settle and release keep the ledger equal to the balance", () =>
      Effect.gen(function*() {
        const accounts = yield* Accounts
        const keys = yield* Keys
        const user = yield* userWith(10n * USD)
        const { key } = yield* keys.create({ userId: user.id, name: "k", group: "default" })
        const hold = yield* accounts.hold({
          userId: user.id,
          keyId: key.id,
          amountNanos: 3n * USD,
          requestId: "r1",
          nodeId: "n"
        })
        assert.strictEqual(yield* accounts.balance(user.id), 7n * USD)
        const settled = yield* accounts.settle(hold, 1n * USD)
        assert.deepStrictEqual(settled, {
          settled: true,
          userId: user.id,
          heldNanos: 3n * USD,
          chargedNanos: 1n * USD,
          overdrawnNanos: 0n,
          shortfallNanos: 0n
        })
        assert.strictEqual(yield* accounts.balance(user.id), 9n * USD)
        // Idempotent: the second settle does nothing.
        assert.isFalse((yield* accounts.settle(hold, 1n * USD)).settled)
        assert.strictEqual(yield* assertLedger(user.id), 9n * USD)
        assert.strictEqual((yield* keys.findById(key.id))!.spentNanos, 1n * USD)

        const released = yield* accounts.hold({
          userId: user.id,
          keyId: key.id,
          amountNanos: 2n * USD,
          requestId: "r2",
          nodeId: "n"
        })
        yield* accounts.release(released)
        assert.strictEqual(yield* assertLedger(user.id), 9n * USD)

        // A charge beyond hold + balance is taken whole: the balance goes below zero, and the charge says by how much.
        const big = yield* accounts.hold({
          userId: user.id,
          keyId: key.id,
          amountNanos: 1n * USD,
          requestId: "r3",
          nodeId: "n"
        })
        const over = yield* accounts.settle(big, 12n * USD)
        assert.deepStrictEqual(over, {
          settled: true,
          userId: user.id,
          heldNanos: 1n * USD,
          chargedNanos: 12n * USD,
          overdrawnNanos: 3n * USD,
          shortfallNanos: 0n
        })
        assert.strictEqual(yield* assertLedger(user.id), -3n * USD)
        assert.strictEqual((yield* keys.findById(key.id))!.spentNanos, 13n * USD)
        const overEntry = (yield* accounts.ledger(user.id, { limit: 10 })).find((e) =>
          e.requestId === "r3" && e.kind === "charge"
        )!
        assert.strictEqual(overEntry.amountNanos, -12n * USD)
        assert.include(overEntry.reason ?? "", "3.00 USD of it was more than the balance had, which went below zero")

        // Below zero, every hold is refused (a hold of nothing too), saying so.
        for (const amount of [1n, 0n]) {
          const inDebt = yield* Effect.flip(
            accounts.hold({ userId: user.id, keyId: key.id, amountNanos: amount, requestId: "r3c", nodeId: "n" })
          )
          assert.strictEqual(inDebt._tag, "InsufficientBalance")
          assert.include(inDebt.message, "Your balance is -3.00 USD, below zero")
        }
        // A debit cannot take it further below zero; a top-up pays the debt first.
        const further = yield* Effect.flip(accounts.adjust(user.id, -1n, "more", "admin"))
        assert.strictEqual(further._tag, "InvalidInput")
        assert.strictEqual(yield* accounts.topUp(user.id, 2n * USD, "refill", "admin"), -1n * USD)
        assert.strictEqual(yield* accounts.adjust(user.id, 3n * USD, "refill", "admin"), 2n * USD)

        // A charge beyond every amount (usage an upstream reported beyond every bound) is not refused: it is
        // taken whole down to the floor of a balance (-10^9 USD), and what lies beyond is the shortfall.
        const huge = yield* accounts.hold({
          userId: user.id,
          keyId: key.id,
          amountNanos: 1n * USD,
          requestId: "r3b",
          nodeId: "n"
        })
        const beyond = yield* accounts.settle(huge, Money.MAX_NANOS * 3n)
        assert.deepStrictEqual(beyond, {
          settled: true,
          userId: user.id,
          heldNanos: 1n * USD,
          chargedNanos: Money.MAX_NANOS + 2n * USD,
          overdrawnNanos: Money.MAX_NANOS,
          shortfallNanos: Money.MAX_NANOS * 2n - 2n * USD
        })
        assert.strictEqual(yield* assertLedger(user.id), -Money.MAX_NANOS)
        const negativeCharge = yield* Effect.flip(accounts.settle(huge, -1n))
        assert.strictEqual(negativeCharge._tag, "InvalidInput")

        yield* accounts.topUp(user.id, Money.MAX_NANOS, "pay the debt", "admin")
        assert.strictEqual(yield* assertLedger(user.id), 0n)
        const refused = yield* Effect.flip(
          accounts.hold({ userId: user.id, keyId: key.id, amountNanos: 1n, requestId: "r4", nodeId: "n" })
        )
        assert.strictEqual(refused._tag, "InsufficientBalance")
        assert.include(refused.message, "0.00 USD")
        assert.include(refused.message, "0.000000001 USD")
        assert.include(refused.message, "ask for fewer output tokens (max_tokens).")
        // A call that asks for several answers is told that each is held for.
        const several = yield* Effect.flip(
          accounts.hold({ userId: user.id, keyId: key.id, amountNanos: 3n, requestId: "r4b", nodeId: "n", choices: 3 })
        )
        assert.include(
          several.message,
          "ask for fewer output tokens (max_tokens) or fewer answers (n, candidateCount: 3 asked, each held for in full)."
        )

        yield* accounts.topUp(user.id, 5n * USD, "gift", "admin")
        yield* accounts.adjust(user.id, -2n * USD, "correction", "admin")
        const negative = yield* Effect.flip(accounts.adjust(user.id, -4n * USD, "too much", "admin"))
        assert.strictEqual(negative._tag, "InvalidInput")
        assert.include(negative.message, "below zero")
        assert.strictEqual(yield* assertLedger(user.id), 3n * USD)
      }))

    it.effect("1,000 concurrent holds against a balance for exactly 10: 10 succeed, balance 0", () =>
      Effect.gen(function*() {
        const accounts = yield* Accounts
        const user = yield* userWith(10n * 7_000n)
        const results = yield* Effect.all(
          Array.from(
            { length: 1000 },
            (_, i) =>
              Effect.exit(
                accounts.hold({ userId: user.id, keyId: "k", amountNanos: 7_000n, requestId: `r${i}`, nodeId: "n" })
              )
          ),
          { concurrency: "unbounded" }
        )
        const ok = results.filter(Exit.isSuccess)
        assert.strictEqual(ok.length, 10)
        for (const failure of results.filter(Exit.isFailure)) {
          assert.isTrue(Exit.hasFails(failure) && JSON.stringify(failure.cause).includes("InsufficientBalance"))
        }
        assert.strictEqual(yield* assertLedger(user.id), 0n)
      }))

    it.effect("a code redeemed from 50 fibers at once credits exactly once", () =>
      Effect.gen(function*() {
        const redemption = yield* Redemption
        const { codes } = yield* redemption.generate(1, 5n * USD, "admin")
        const user = yield* userWith(0n)
        const results = yield* Effect.all(
          Array.from({ length: 50 }, () => Effect.exit(redemption.redeem(codes[0]!, user.id))),
          { concurrency: "unbounded" }
        )
        assert.strictEqual(results.filter(Exit.isSuccess).length, 1)
        assert.strictEqual(yield* assertLedger(user.id), 5n * USD)
        const again = yield* Effect.flip(redemption.redeem(codes[0]!, user.id))
        assert.strictEqual(again._tag, "RedemptionFailed")
        const unknown = yield* Effect.flip(redemption.redeem("mgr-unknown", user.id))
        assert.strictEqual((unknown as { reason: string }).reason, "unknown")
        const listed = yield* redemption.list()
        assert.isTrue(listed.some((c) => c.redeemedBy === user.id))
        assert.include(yield* redemption.exportCsv(), "code_prefix,amount_usd")
      }))

    it.effect("the sweeper releases holds left by a dead node or older than the cutoff", () =>
      Effect.gen(function*() {
        const accounts = yield* Accounts
        const user = yield* userWith(100n)
        yield* accounts.hold({ userId: user.id, keyId: "k", amountNanos: 30n, requestId: "r", nodeId: "dead-node" })
        yield* accounts.hold({ userId: user.id, keyId: "k", amountNanos: 20n, requestId: "r", nodeId: "dead-node" })
        const live = yield* accounts.hold({
          userId: user.id,
          keyId: "k",
          amountNanos: 10n,
          requestId: "r",
          nodeId: "live-node"
        })
        assert.strictEqual(yield* accounts.balance(user.id), 40n)
        assert.strictEqual(yield* accounts.sweepHolds({ nodeId: "dead-node" }), 2)
        assert.strictEqual(yield* assertLedger(user.id), 90n)
        assert.strictEqual(yield* accounts.sweepHolds({ olderThanMs: 3_600_000 }), 0)
        yield* Effect.sleep("5 millis")
        assert.isTrue((yield* accounts.sweepHolds({ olderThanMs: 1 })) >= 1)
        assert.isFalse((yield* accounts.settle(live, 5n)).settled)
        assert.strictEqual(yield* assertLedger(user.id), 100n)
      }))

    it.effect("the usage writer batches in the background and flushes on shutdown", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const user = yield* userWith(0n)
        const record = (i: number) => ({
          createdAt: Date.UTC(2026, 0, 1 + (i % 2), 12),
          requestId: `req-${i}`,
          userId: user.id,
          keyId: i % 3 === 0 ? "key-a" : "key-b",
          model: i % 2 === 0 ? "m1" : "m2",
          upstreamModel: "up",
          channel: "ch",
          dialectIn: "openai" as const,
          dialectOut: "gemini" as const,
          stream: true,
          promptTokens: 10,
          completionTokens: 5,
          cachedTokens: 0,
          usageReported: true,
          costNanos: 1_000n,
          latencyMs: 100,
          ttfbMs: i % 2 === 0 ? 20 : null,
          status: 200,
          errorCode: null,
          attempts: i % 2 === 0 ? 1 : 2,
          attemptLog: i % 2 === 0
            ? [{ channel: "ch", keyHint: "…abcd", status: 200, errorCode: null, errorMessage: null, durationMs: 90 }]
            : [
              {
                channel: "down",
                keyHint: "…wxyz",
                status: 503,
                errorCode: "UpstreamUnavailable",
                errorMessage: "The upstream 'down' answered 503.",
                durationMs: 5
              },
              { channel: "ch", keyHint: "…abcd", status: 200, errorCode: null, errorMessage: null, durationMs: 90 }
            ]
        })
        // Batching: maxBatch 10 with a long interval; 25 records wake the writer at once.
        const scope1 = yield* Scope.make()
        const ctx1 = yield* Layer.buildWithScope(
          UsageWriter.layerWith({ flushIntervalMs: 60_000, maxBatch: 10 }),
          scope1
        ).pipe(
          Effect.provideService(SqlClient.SqlClient, sql)
        )
        const writer1 = ctx1.mapUnsafe.get(UsageWriter.key) as UsageWriter["Service"]
        for (let i = 0; i < 25; i++) yield* writer1.record(record(i))
        for (let i = 0; i < 200 && (yield* writer1.pending) > 0; i++) yield* Effect.sleep("10 millis")
        assert.strictEqual(yield* writer1.pending, 0)
        // `pending` no longer counts the batch being written; a flush waits for that write to end.
        yield* writer1.flush
        assert.strictEqual((yield* writer1.query({ userId: user.id, limit: 1000 })).length, 25)
        yield* Scope.close(scope1, Exit.void)

        // Shutdown: records still queued are written by the finalizer.
        const scope2 = yield* Scope.make()
        const ctx2 = yield* Layer.buildWithScope(
          UsageWriter.layerWith({ flushIntervalMs: 60_000, maxBatch: 1000 }),
          scope2
        ).pipe(
          Effect.provideService(SqlClient.SqlClient, sql)
        )
        const writer2 = ctx2.mapUnsafe.get(UsageWriter.key) as UsageWriter["Service"]
        for (let i = 25; i < 40; i++) yield* writer2.record(record(i))
        assert.strictEqual(yield* writer2.pending, 15)
        yield* Scope.close(scope2, Exit.void)

        const writer = yield* UsageWriter
        const all = yield* writer.query({ userId: user.id, limit: 1000 })
        assert.strictEqual(all.length, 40)
        assert.strictEqual(all[0]!.costNanos, 1_000n)
        // Attempts come back as they were recorded.
        const twoTries = all.find((r) => r.requestId === "req-1")!
        assert.strictEqual(twoTries.attempts, 2)
        assert.deepStrictEqual(twoTries.attemptLog, record(1).attemptLog)
        assert.strictEqual(
          (yield* writer.query({ userId: user.id, keyId: "key-a", model: "m1", limit: 1000 })).length,
          7
        )
        const page = yield* writer.query({ userId: user.id, limit: 10, offset: 35 })
        assert.strictEqual(page.length, 5)
        const totals = yield* writer.dailyTotals({ userId: user.id })
        assert.deepStrictEqual(totals.map((t) => [t.day, t.model, t.requests]), [["2026-01-01", "m1", 20], [
          "2026-01-02",
          "m2",
          20
        ]])
        assert.strictEqual(totals[0]!.costNanos, 20_000n)
      }))
  })

describe("sqlite", () => {
  suite(makeSqlite)
})

describe.skipIf(postgresUrl === undefined)("postgres (set MODELGATE_TEST_POSTGRES to run)", () => {
  suite(() => makePostgres(postgresUrl!))
})
