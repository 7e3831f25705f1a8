/**
 * Circuit breakers and key health, driven by `TestClock`: opening on failures
 * in a row and on a failure rate over the window, cool-down, limited half-open
 * trials, closing on success; keys disabled on refused credentials, kept in
 * the store (and so across a restart), synced from other nodes, re-enabled by
 * the prober, which also tries open breakers; the report the console shows.
 */
import { assert, describe, it } from "@effect/vitest"
import { Catalog, ChannelKeyStates, ChannelProbe, Domain } from "@modelgate/core"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { defaults, Settings } from "../src/config/Settings.ts"
import { Breaker } from "../src/routing/Breakers.ts"
import { Health } from "../src/routing/Health.ts"

const breaker: Domain.BreakerSettings = {
  consecutiveFailures: 3,
  failureRate: 0.5,
  minimumCalls: 10,
  windowMs: 60_000,
  cooldownMs: 10_000,
  halfOpenCalls: 1
}

const channel = (over: Partial<Domain.Channel> = {}): Domain.Channel => ({
  id: "chn_a",
  name: "a",
  type: "openai",
  baseUrl: "http://a.test/v1",
  apiKeys: ["sk-key-one-1111", "sk-key-two-2222"],
  models: ["m"],
  modelMap: {},
  groups: ["default"],
  priority: 0,
  weight: 1,
  enabled: true,
  headers: {},
  timeouts: Domain.defaultTimeouts,
  apiVersion: null,
  breaker,
  params: Domain.noParams,
  streamOptions: true,
  ...over
})

const A = channel()
const [ONE, TWO] = A.apiKeys as [string, string]

/** The store's table, in memory; `fingerprint` is a stand-in that is not the key. */
const rows = new Map<string, ChannelKeyStates.DisabledKey>()
const fingerprint = (key: string) => `fp-${key.length}-${[...key].reverse().join("").slice(0, 4)}`
const storeLayer = Layer.succeed(ChannelKeyStates.ChannelKeyStates)({
  fingerprint,
  list: Effect.sync(() => [...rows.values()]),
  disable: (key) => Effect.sync(() => void rows.set(`${key.channelId}/${key.fingerprint}`, key)),
  enable: (channelId, fp) => Effect.sync(() => void rows.delete(`${channelId}/${fp}`)),
  enableChannel: (channelId) =>
    Effect.sync(() => [...rows.keys()].filter((k) => k.startsWith(`${channelId}/`)).forEach((k) => rows.delete(k)))
})

/**
 * What the probe answers, per key (a model probe and the key's check alike, but for `forbidden`: the model is
 * refused with a 403 while the key's model list works); probes are counted, and the models they asked for kept
 * (undefined: the key's check, which asks for no model).
 */
const probeAnswers = new Map<string, "ok" | "refused" | "down" | "unreachable" | "rejected" | "forbidden">()
const probed: Array<string> = []
const probedModels: Array<string | undefined> = []
const answerOf = (apiKey: string, model: string | undefined, check: boolean): ChannelProbe.ProbeResult => {
  probed.push(apiKey)
  probedModels.push(check ? undefined : model)
  const given = probeAnswers.get(apiKey) ?? "ok"
  const answer = given === "forbidden" ? (check ? "ok" : "forbidden") : given
  return answer === "forbidden"
    ? {
      ok: false,
      latencyMs: 1,
      status: 403,
      message: "The upstream refused the request (HTTP 403).",
      upstreamMessage: "Your organization must be verified to use the model",
      credentialsRefused: false
    }
    : answer === "ok"
    ? { ok: true, latencyMs: 1, status: 200, message: "ok", upstreamMessage: null, credentialsRefused: false }
    : answer === "refused"
    ? {
      ok: false,
      latencyMs: 1,
      status: 401,
      message: "refused",
      upstreamMessage: "Incorrect API key provided",
      credentialsRefused: true
    }
    : answer === "down"
    ? {
      ok: false,
      latencyMs: 1,
      status: 503,
      message: "down",
      upstreamMessage: "overloaded",
      credentialsRefused: false
    }
    : answer === "unreachable"
    ? {
      ok: false,
      latencyMs: 1,
      status: null,
      message: "The upstream 'a' could not be reached (ECONNREFUSED).",
      upstreamMessage: null,
      credentialsRefused: false
    }
    : {
      ok: false,
      latencyMs: 1,
      status: 404,
      message: "The model 'm' does not exist",
      upstreamMessage: "The model 'm' does not exist",
      credentialsRefused: false
    }
}
const probeLayer = Layer.succeed(ChannelProbe.ChannelProbe)({
  probe: (_channel, model, apiKey) => Effect.sync(() => answerOf(apiKey!, model, false)),
  checkKey: (_channel, apiKey) => Effect.sync(() => answerOf(apiKey!, undefined, true)),
  listModels: () => Effect.succeed([])
})

const catalogLayer = Layer.succeed(Catalog.Catalog)({
  current: Effect.sync(() => Catalog.makeSnapshot({ models: [], groups: [], channels: [A], aliases: [] }))
})

const settingsLayer = Layer.succeed(Settings)({ ...defaults, nodeId: "node-a" })

/** A fresh health service (a "process") over the shared store. */
const withHealth = <A, E>(f: (health: Health["Service"]) => Effect.Effect<A, E>) =>
  Effect.flatMap(Effect.service(Health), f).pipe(
    Effect.provide(
      Health.layerNoLoops.pipe(
        Layer.provide(Layer.mergeAll(storeLayer, probeLayer, catalogLayer, settingsLayer)),
        Layer.fresh
      )
    )
  )

const reset = () => {
  rows.clear()
  probeAnswers.clear()
  probed.length = 0
  probedModels.length = 0
}

/** Ends one call on `key` with `outcome`. */
const call = (health: Health["Service"], key: string, outcome: "success" | "failure" | "neutral") =>
  Effect.gen(function*() {
    const ticket = yield* health.begin(A, key, false)
    assert.isDefined(ticket, "the key should admit the call")
    yield* health.end(ticket!, outcome, outcome === "failure" ? "HTTP 500" : undefined)
  })

const now = () => Effect.clockWith((clock) => clock.currentTimeMillis)

describe("circuit breaker", () => {
  it.effect("opens after failures in a row, cools down, admits one trial at a time, closes on a successful trial", () =>
    withHealth((health) =>
      Effect.gen(function*() {
        reset()
        for (let i = 0; i < 2; i++) yield* call(health, ONE, "failure")
        assert.strictEqual(health.availability(A, ONE, yield* now()), "available", "two failures are not enough")
        yield* call(health, ONE, "failure")
        const openedAt = yield* now()
        assert.strictEqual(health.availability(A, ONE, openedAt), "open")
        assert.isUndefined(yield* health.begin(A, ONE, false), "an open breaker refuses calls")
        assert.strictEqual(
          health.availability(A, TWO, openedAt),
          "available",
          "the channel's other key is not affected"
        )
        assert.strictEqual(health.retryAt(A, ONE), openedAt + 10_000)
        const report = yield* health.report(A)
        assert.strictEqual(report.state, "degraded")
        assert.deepStrictEqual(
          {
            state: report.keys[0]!.state,
            since: report.keys[0]!.since,
            retryAt: report.keys[0]!.retryAt,
            consecutive: report.keys[0]!.consecutiveFailures
          },
          { state: "open", since: openedAt, retryAt: openedAt + 10_000, consecutive: 3 }
        )
        assert.match(report.keys[0]!.reason!, /3 failures in a row \(last: HTTP 500\)/)
        assert.strictEqual(report.keys[0]!.hint, "…1111")

        yield* TestClock.adjust("9999 millis")
        assert.strictEqual(health.availability(A, ONE, yield* now()), "open", "still cooling down")
        yield* TestClock.adjust("1 millis")
        assert.strictEqual(health.availability(A, ONE, yield* now()), "trial")
        assert.strictEqual((yield* health.report(A)).keys[0]!.state, "half_open")
        const trial = yield* health.begin(A, ONE, false)
        assert.strictEqual(trial?.permit, "trial")
        assert.isUndefined(yield* health.begin(A, ONE, false), "one trial at a time (half_open_calls: 1)")
        yield* health.end(trial!, "success")
        assert.strictEqual(health.availability(A, ONE, yield* now()), "available")
        const healed = (yield* health.report(A)).keys[0]!
        assert.strictEqual(healed.state, "healthy")
        assert.strictEqual(healed.consecutiveFailures, 0)
      })
    ))

  it.effect("a failed trial opens it again for a full cool-down; a neutral end only frees the slot", () =>
    withHealth((health) =>
      Effect.gen(function*() {
        reset()
        for (let i = 0; i < 3; i++) yield* call(health, ONE, "failure")
        yield* TestClock.adjust("10 seconds")
        const neutral = yield* health.begin(A, ONE, false)
        yield* health.end(neutral!, "neutral")
        assert.strictEqual(
          health.availability(A, ONE, yield* now()),
          "trial",
          "a client that went away decides nothing"
        )
        const trial = yield* health.begin(A, ONE, false)
        yield* health.end(trial!, "failure", "HTTP 502")
        const reopened = yield* now()
        assert.strictEqual(health.availability(A, ONE, reopened), "open")
        assert.strictEqual(health.retryAt(A, ONE), reopened + 10_000)
        assert.match((yield* health.report(A)).keys[0]!.reason!, /a trial call failed: HTTP 502/)
      })
    ))

  it.effect("opens on the failure rate over the window, counting only calls within it", () =>
    withHealth((health) =>
      Effect.gen(function*() {
        reset()
        // Alternating: never 3 failures in a row. After 9 calls (4 failures) the minimum of 10 is not reached.
        for (let i = 0; i < 9; i++) yield* call(health, ONE, i % 2 === 0 ? "success" : "failure")
        assert.strictEqual(health.availability(A, ONE, yield* now()), "available")
        const before = (yield* health.report(A)).keys[0]!
        assert.deepStrictEqual([before.recentCalls, before.recentFailures], [9, 4])
        yield* call(health, ONE, "failure")
        assert.strictEqual(health.availability(A, ONE, yield* now()), "open", "5 of 10 failed: the rate is reached")
        assert.match((yield* health.report(A)).keys[0]!.reason!, /5 of 10 calls failed in the last 60 s/)

        // On the other key, old failures leave the window before the rate is judged.
        for (let i = 0; i < 8; i++) yield* call(health, TWO, i % 2 === 0 ? "failure" : "success")
        yield* TestClock.adjust("61 seconds")
        assert.deepStrictEqual((yield* health.report(A)).keys[1]!.recentCalls, 0)
        for (let i = 0; i < 9; i++) yield* call(health, TWO, "success")
        yield* call(health, TWO, "failure")
        assert.strictEqual(health.availability(A, TWO, yield* now()), "available", "1 of 10 in the window")
      })
    ))

  it.effect("force admits an open key as a trial; a call that began while closed does not close a breaker opened meanwhile", () =>
    withHealth((health) =>
      Effect.gen(function*() {
        reset()
        const early = yield* health.begin(A, ONE, false)
        for (let i = 0; i < 3; i++) yield* call(health, ONE, "failure")
        yield* health.end(early!, "success")
        assert.strictEqual(health.availability(A, ONE, yield* now()), "open")
        const forced = yield* health.begin(A, ONE, true)
        assert.strictEqual(forced?.permit, "trial")
        yield* health.end(forced!, "success")
        assert.strictEqual(health.availability(A, ONE, yield* now()), "available")
        // Ending a ticket twice changes nothing.
        yield* health.end(forced!, "failure")
        assert.strictEqual((yield* health.report(A)).keys[0]!.consecutiveFailures, 0)
      })
    ))

  it("pure: the window forgets old buckets and restarts when its length changes", () => {
    const b = new Breaker()
    for (let i = 0; i < 4; i++) b.release("closed", "failure", 1_000 + i, { ...breaker, consecutiveFailures: 100 })
    assert.deepStrictEqual(b.recent(2_000, breaker.windowMs), { calls: 4, failures: 4 })
    assert.deepStrictEqual(b.recent(1_000 + 61_000, breaker.windowMs), { calls: 0, failures: 0 })
    b.release("closed", "success", 3_000, { ...breaker, windowMs: 10_000 })
    assert.deepStrictEqual(b.recent(3_000, 10_000), { calls: 1, failures: 0 })
  })
})

describe("disabled keys", () => {
  it.effect("a refused key is disabled with its reason, kept in the store by fingerprint, and still disabled after a restart", () =>
    Effect.gen(function*() {
      reset()
      const disabledAt = yield* withHealth((health) =>
        Effect.gen(function*() {
          yield* health.disable(A, ONE, 401, "HTTP 401: Incorrect API key provided")
          const at = yield* now()
          assert.strictEqual(health.availability(A, ONE, at), "disabled")
          assert.isUndefined(yield* health.begin(A, ONE, true), "a disabled key is never admitted, even forced")
          const key = (yield* health.report(A)).keys[0]!
          assert.deepStrictEqual([key.state, key.status, key.reason, key.since], [
            "disabled",
            401,
            "HTTP 401: Incorrect API key provided",
            at
          ])
          return at
        })
      )
      assert.deepStrictEqual([...rows.values()], [{
        channelId: "chn_a",
        fingerprint: fingerprint(ONE),
        status: 401,
        reason: "HTTP 401: Incorrect API key provided",
        disabledAt,
        nodeId: "node-a"
      }])
      assert.notInclude(JSON.stringify([...rows.values()]), ONE)
      // A new process over the same database.
      yield* withHealth((health) =>
        Effect.gen(function*() {
          assert.strictEqual(health.availability(A, ONE, yield* now()), "disabled")
          assert.strictEqual((yield* health.report(A)).keys[0]!.since, disabledAt)
        })
      )
    }))

  it.effect("sync applies what other nodes changed in the store", () =>
    withHealth((health) =>
      Effect.gen(function*() {
        reset()
        rows.set(`chn_a/${fingerprint(TWO)}`, {
          channelId: "chn_a",
          fingerprint: fingerprint(TWO),
          status: 403,
          reason: "HTTP 403: forbidden",
          disabledAt: 5,
          nodeId: "node-b"
        })
        yield* health.sync
        assert.strictEqual(health.availability(A, TWO, yield* now()), "disabled")
        rows.clear()
        yield* health.sync
        assert.strictEqual(health.availability(A, TWO, yield* now()), "available")
      })
    ))

  it.effect("the prober re-enables a key that works again and leaves a refused one disabled", () =>
    withHealth((health) =>
      Effect.gen(function*() {
        reset()
        yield* health.disable(A, ONE, 401, "HTTP 401: revoked")
        yield* health.disable(A, TWO, 401, "HTTP 401: revoked")
        probeAnswers.set(ONE, "refused")
        yield* TestClock.adjust("30 seconds")
        yield* health.probeRound
        assert.sameMembers(probed, [ONE, TWO])
        const at = yield* now()
        assert.strictEqual(health.availability(A, ONE, at), "disabled")
        assert.strictEqual(health.availability(A, TWO, at), "available")
        assert.strictEqual(rows.size, 1)
        const report = (yield* health.report(A)).keys
        assert.deepStrictEqual([report[0]!.lastProbeAt, report[0]!.lastProbeOk, report[0]!.reason], [
          at,
          false,
          "HTTP 401: Incorrect API key provided"
        ])
        assert.strictEqual(report[1]!.lastProbeOk, true)
        probeAnswers.set(ONE, "ok")
        yield* health.probeRound
        assert.strictEqual(health.availability(A, ONE, yield* now()), "available")
        assert.strictEqual(rows.size, 0)
      })
    ))

  it.effect("the prober tries open breakers once their cool-down is over: success closes, failure reopens", () =>
    withHealth((health) =>
      Effect.gen(function*() {
        reset()
        for (let i = 0; i < 3; i++) yield* call(health, ONE, "failure")
        for (let i = 0; i < 3; i++) yield* call(health, TWO, "failure")
        yield* health.probeRound
        assert.deepStrictEqual(probed, [], "still cooling down: no probe")
        yield* TestClock.adjust("10 seconds")
        probeAnswers.set(TWO, "down")
        yield* health.probeRound
        assert.sameMembers(probed, [ONE, TWO])
        const at = yield* now()
        assert.strictEqual(health.availability(A, ONE, at), "available")
        assert.strictEqual(health.availability(A, TWO, at), "open")
        assert.strictEqual(health.retryAt(A, TWO), at + 10_000)
        assert.match((yield* health.report(A)).keys[1]!.reason!, /trial call failed: probe/)
      })
    ))

  it.effect("reset closes the channel's breakers and re-enables its keys", () =>
    withHealth((health) =>
      Effect.gen(function*() {
        reset()
        for (let i = 0; i < 3; i++) yield* call(health, ONE, "failure")
        yield* health.disable(A, TWO, 403, "HTTP 403: forbidden")
        assert.strictEqual((yield* health.report(A)).state, "open")
        yield* health.reset(A)
        const report = yield* health.report(A)
        assert.strictEqual(report.state, "healthy")
        assert.strictEqual(rows.size, 0)
      })
    ))
})

describe("an administrator's Test", () => {
  it.effect("tries every key with the model asked for; a failure shows as failing, a success clears it", () =>
    withHealth((health) =>
      Effect.gen(function*() {
        reset()
        probeAnswers.set(ONE, "unreachable")
        const results = yield* health.test(A, "m")
        assert.sameMembers(probed, [ONE, TWO])
        assert.deepStrictEqual(probedModels, ["m", "m"])
        assert.deepStrictEqual(results.map((r) => [r.index, r.hint, r.ok]), [[0, "…1111", false], [1, "…2222", true]])
        // A dead key is failing at once (its breaker open, the Test's words as the reason), not "healthy" beside a failure.
        const failed = yield* health.report(A)
        assert.strictEqual(failed.state, "degraded")
        assert.strictEqual(failed.keys[0]!.state, "open")
        assert.match(failed.keys[0]!.reason!, /a Test failed: .*ECONNREFUSED/)
        assert.strictEqual(failed.keys[0]!.lastProbeOk, false)
        assert.strictEqual(health.availability(A, ONE, yield* now()), "open", "calls avoid it")
        // Fixed: the next Test clears the failure.
        probeAnswers.set(ONE, "ok")
        yield* health.test(A, "m")
        const fixed = yield* health.report(A)
        assert.deepStrictEqual([
          fixed.state,
          fixed.keys[0]!.state,
          fixed.keys[0]!.consecutiveFailures,
          fixed.keys[0]!.lastProbeOk
        ], ["healthy", "healthy", 0, true])
      })
    ))

  it.effect("a refused key is disabled (a Test is a probe), a working one enabled again, and a refusal of the request changes nothing", () =>
    withHealth((health) =>
      Effect.gen(function*() {
        reset()
        yield* health.disable(A, TWO, 401, "HTTP 401: revoked")
        probeAnswers.set(ONE, "refused")
        yield* health.test(A, "m")
        const at = yield* now()
        assert.strictEqual(health.availability(A, ONE, at), "disabled")
        assert.strictEqual(health.availability(A, TWO, at), "available", "it worked: enabled again")
        assert.deepStrictEqual([...rows.keys()], [`chn_a/${fingerprint(ONE)}`], "and the store says so")
        assert.match((yield* health.report(A)).keys[0]!.reason!, /HTTP 401: Incorrect API key provided/)

        probeAnswers.set(ONE, "ok")
        probeAnswers.set(TWO, "rejected")
        const results = yield* health.test(A, "m")
        assert.isFalse(results[1]!.ok)
        const report = yield* health.report(A)
        assert.deepStrictEqual(
          report.keys.map((k) => k.state),
          ["healthy", "healthy"],
          "a 404 about the model is not the key's failure"
        )
        // A 5xx is the key's failure too.
        probeAnswers.set(TWO, "down")
        yield* health.test(A, "m")
        assert.strictEqual((yield* health.report(A)).keys[1]!.state, "open")
      })
    ))
})

describe("retry-after", () => {
  it.effect("a 429's retry-after keeps the key out of rotation until then, then it is half-open", () =>
    withHealth((health) =>
      Effect.gen(function*() {
        reset()
        const ticket = yield* health.begin(A, ONE, false)
        yield* health.end(ticket!, "failure", "rate limited", 20_000)
        const at = yield* now()
        assert.strictEqual(health.availability(A, ONE, at), "open", "one 429 with retry-after is enough")
        assert.strictEqual(health.retryAt(A, ONE), at + 20_000)
        assert.match((yield* health.report(A)).keys[0]!.reason!, /asked to retry after 20 s/)
        yield* TestClock.adjust("20 seconds")
        assert.strictEqual(health.availability(A, ONE, yield* now()), "trial")
        // Absurd waits are capped.
        const other = yield* health.begin(A, TWO, false)
        yield* health.end(other!, "failure", "rate limited", 86_400_000)
        assert.strictEqual(health.retryAt(A, TWO), (yield* now()) + 10 * 60 * 1000)
      })
    ))
})

describe("refused keys: only a probe disables", () => {
  const clear = { status: 401, reason: "HTTP 401: Incorrect API key provided", clear: true }
  const permission = {
    status: 403,
    reason: "HTTP 403: You do not have permission to access the File abc",
    clear: false
  }

  it.effect("a key a call's upstream clearly refused is kept out of calls but not disabled; the probe's refusal disables it, its answer clears it", () =>
    withHealth((health) =>
      Effect.gen(function*() {
        reset()
        yield* health.suspect(A, ONE, clear)
        yield* health.suspect(A, TWO, clear)
        const at = yield* now()
        assert.strictEqual(health.availability(A, ONE, at), "open", "no call is sent to it while it is checked")
        assert.strictEqual(rows.size, 0, "nothing is disabled on a call's word")
        const key = (yield* health.report(A)).keys[0]!
        assert.deepStrictEqual([key.state, key.reason], [
          "open",
          "HTTP 401: Incorrect API key provided (a health probe is checking the key)"
        ])
        probeAnswers.set(ONE, "refused")
        yield* health.probeRound
        assert.sameMembers(probed, [ONE, TWO])
        assert.strictEqual(health.availability(A, ONE, yield* now()), "disabled")
        assert.deepStrictEqual([...rows.values()].map((row) => [row.fingerprint, row.status]), [[
          fingerprint(ONE),
          401
        ]])
        assert.strictEqual(
          health.availability(A, TWO, yield* now()),
          "available",
          "the probe found the other key working"
        )
        probed.length = 0
        yield* health.probeRound
        assert.deepStrictEqual(probed, [ONE], "the working key is no longer a suspect")
      })
    ))

  it.effect("a probe that gets no answer leaves the suspicion for the next round", () =>
    withHealth((health) =>
      Effect.gen(function*() {
        reset()
        yield* health.suspect(A, ONE, clear)
        probeAnswers.set(ONE, "down")
        yield* health.probeRound
        assert.strictEqual(rows.size, 0)
        probeAnswers.set(ONE, "refused")
        yield* health.probeRound
        assert.strictEqual(health.availability(A, ONE, yield* now()), "disabled")
      })
    ))

  it.effect("a 403 about the request, however often, leaves the key in use, is probed at most once per probe interval, and disables nothing that works", () =>
    withHealth((health) =>
      Effect.gen(function*() {
        reset()
        for (let i = 0; i < 50; i++) {
          yield* health.suspect(A, ONE, permission)
          yield* health.suspect(A, TWO, permission)
          assert.strictEqual(health.availability(A, ONE, yield* now()), "available")
          yield* health.probeRound
        }
        assert.sameMembers(probed, [ONE, TWO], "one probe per key for 50 refusals each")
        yield* TestClock.adjust("30 seconds")
        yield* health.suspect(A, ONE, permission)
        yield* health.probeRound
        assert.sameMembers(probed, [ONE, TWO, ONE], "checked again after a probe interval")
        assert.strictEqual(rows.size, 0)
        assert.strictEqual((yield* health.report(A)).state, "healthy")
        // A revoked key that Google refuses with a 403 is found out by the probe, which carries nothing of the caller's.
        yield* TestClock.adjust("30 seconds")
        probeAnswers.set(TWO, "refused")
        yield* health.suspect(A, TWO, permission)
        yield* health.probeRound
        assert.strictEqual(health.availability(A, TWO, yield* now()), "disabled")
      })
    ))

  it.effect("a model the upstream refuses with a 403 is that model's problem on that channel, never the key's", () =>
    withHealth((health) =>
      Effect.gen(function*() {
        reset()
        // The organisation is not verified for the model: its requests get 403, the key's model list works.
        probeAnswers.set(ONE, "forbidden")
        yield* health.suspect(A, ONE, permission)
        yield* health.suspectModel(A, ONE, "m")
        yield* health.probeRound
        assert.strictEqual(health.availability(A, ONE, yield* now()), "available", "the key stays in use")
        assert.strictEqual(rows.size, 0, "nothing disabled")
        assert.includeMembers(probedModels, [undefined, "m"], "the key checked with no model, the model probed")
        assert.isTrue(health.modelRefused(A, "m", yield* now()), "the model is kept off the channel")
        assert.isFalse(health.modelRefused(A, "other", yield* now()))
        // The health report shows it: which model, since when, until when and why; the channel is degraded.
        const refusedAt = yield* now()
        const report = yield* health.report(A)
        assert.strictEqual(report.state, "degraded")
        assert.isTrue(report.keys.every((key) => key.state === "healthy"))
        assert.strictEqual(report.refusedModels.length, 1)
        const [kept] = report.refusedModels
        assert.deepStrictEqual([kept!.model, kept!.status, kept!.since], ["m", 403, refusedAt])
        assert.strictEqual(kept!.until, refusedAt + 10 * 60_000)
        assert.match(kept!.reason, /403/)
        // An administrator's Test of the model says the same: the key is not disabled.
        const [one] = yield* health.test(A, "m")
        assert.deepStrictEqual([one!.ok, one!.status, one!.credentialsRefused], [false, 403, false])
        assert.notStrictEqual(health.availability(A, ONE, yield* now()), "disabled")
        // The refusal lasts a while, and a reset forgets it.
        yield* TestClock.adjust("11 minutes")
        assert.isFalse(health.modelRefused(A, "m", yield* now()))
        assert.deepStrictEqual((yield* health.report(A)).refusedModels, [])
        assert.strictEqual((yield* health.report(A)).state, "healthy")
        yield* health.refuseModel(A, "m", 403, "HTTP 403: not verified")
        assert.deepStrictEqual((yield* health.report(A)).refusedModels.map((r) => r.reason), ["HTTP 403: not verified"])
        yield* health.reset(A)
        assert.isFalse(health.modelRefused(A, "m", yield* now()))
        assert.deepStrictEqual((yield* health.report(A)).refusedModels, [])
      })
    ))
})
