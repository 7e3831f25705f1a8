/**
 * Channel selection as tables: priority tiers, the weight distribution within
 * a tier (over many seeded draws, within a statistical tolerance), skipping
 * open breakers and disabled keys, the forced trial when everything is open,
 * failover between keys and channels, and sticky selection.
 */
import { assert, describe, it } from "@effect/vitest"
import { Domain } from "@modelgate/core"
import { Effect, Random } from "effect"
import type { Availability } from "../src/routing/Health.ts"
import * as Selection from "../src/routing/Selection.ts"

const channel = (
  name: string,
  options: { priority?: number; weight?: number; keys?: ReadonlyArray<string> } = {}
): Domain.Channel => ({
  id: `chn_${name}`,
  name,
  type: "openai",
  baseUrl: `http://${name}.test/v1`,
  apiKeys: options.keys ?? [`sk-${name}`],
  models: ["m"],
  modelMap: {},
  groups: ["default"],
  priority: options.priority ?? 0,
  weight: options.weight ?? 1,
  enabled: true,
  ...Domain.channelDefaults
})

/** Candidates as the catalog gives them: best priority first. */
const sorted = (channels: ReadonlyArray<Domain.Channel>) => [...channels].sort((a, b) => b.priority - a.priority)

/** A view from a table of key states (keys not listed are available) and retry times. */
const view = (states: Record<string, Availability> = {}, retryAt: Record<string, number> = {}): Selection.View => ({
  availability: (_, key) => states[key] ?? "available",
  retryAt: (_, key) => retryAt[key] ?? 0
})

/** Every target a plan hands out, with `failure` as the kind of each failure. */
const drain = (plan: Selection.Plan, failure?: Selection.Failure) => {
  const out: Array<string> = []
  for (let target = plan.next(); target !== undefined; target = plan.next(failure)) {
    out.push(`${target.channel.name}/${target.key}${target.force ? "!" : ""}`)
  }
  return out
}

const firstChoices = (channels: ReadonlyArray<Domain.Channel>, draws: number, sticky?: (i: number) => string) =>
  Effect.gen(function*() {
    const counts = new Map<string, number>()
    for (let i = 0; i < draws; i++) {
      const plan = yield* Selection.plan(sorted(channels), Selection.allHealthy, sticky?.(i))
      const name = plan.next()!.channel.name
      counts.set(name, (counts.get(name) ?? 0) + 1)
    }
    return counts
  }).pipe(Random.withSeed("selection-test"))

describe("Selection", () => {
  it.effect("tries the highest priority tier first, then the next", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [string, ReadonlyArray<Domain.Channel>, ReadonlyArray<string>]> = [
        ["one channel", [channel("a")], ["a"]],
        ["larger priority first", [channel("low", { priority: 0 }), channel("high", { priority: 10 })], [
          "high",
          "low"
        ]],
        ["negative priorities last", [
          channel("neg", { priority: -5 }),
          channel("zero"),
          channel("top", { priority: 3 })
        ], ["top", "zero", "neg"]],
        ["weight 0 after the others of its tier", [channel("backup", { weight: 0 }), channel("main", { weight: 1 })], [
          "main",
          "backup"
        ]]
      ]
      for (const [name, channels, expected] of cases) {
        const plan = yield* Selection.plan(sorted(channels), Selection.allHealthy)
        assert.deepStrictEqual(drain(plan, "server").map((t) => t.split("/")[0]), expected, name)
      }
    }))

  it.effect("spreads the first choice within a tier by weight (20 000 seeded draws, within 1.5 points)", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [ReadonlyArray<Domain.Channel>, Record<string, number>]> = [
        [[channel("a", { weight: 1 }), channel("b", { weight: 1 })], { a: 0.5, b: 0.5 }],
        [[channel("a", { weight: 3 }), channel("b", { weight: 1 })], { a: 0.75, b: 0.25 }],
        [[channel("a", { weight: 5 }), channel("b", { weight: 3 }), channel("c", { weight: 2 })], {
          a: 0.5,
          b: 0.3,
          c: 0.2
        }],
        [[channel("a", { weight: 1 }), channel("b", { weight: 0 })], { a: 1, b: 0 }],
        // A lower tier never gets a first choice while the top tier has a channel.
        [[channel("a", { weight: 1, priority: 1 }), channel("b", { weight: 100 })], { a: 1, b: 0 }]
      ]
      for (const [channels, shares] of cases) {
        const draws = 20_000
        const counts = yield* firstChoices(channels, draws)
        for (const [name, share] of Object.entries(shares)) {
          const got = (counts.get(name) ?? 0) / draws
          assert.approximately(
            got,
            share,
            0.015,
            `${name} in ${channels.map((c) => `${c.name}:${c.weight}`).join(",")}`
          )
        }
      }
    }))

  it.effect("skips open breakers and disabled keys, and channels none of whose keys can take a call", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [string, Record<string, Availability>, ReadonlyArray<string>]> = [
        ["all healthy", {}, ["top/sk-top", "mid/sk-mid", "low/sk-low"]],
        ["open top", { "sk-top": "open" }, ["mid/sk-mid", "low/sk-low"]],
        ["disabled mid", { "sk-mid": "disabled" }, ["top/sk-top", "low/sk-low"]],
        ["half-open with a free trial slot is tried", { "sk-top": "trial" }, [
          "top/sk-top",
          "mid/sk-mid",
          "low/sk-low"
        ]],
        ["only the last is left", { "sk-top": "open", "sk-mid": "disabled" }, ["low/sk-low"]]
      ]
      const channels = [channel("top", { priority: 2 }), channel("mid", { priority: 1 }), channel("low")]
      for (const [name, states, expected] of cases) {
        assert.deepStrictEqual(drain(yield* Selection.plan(channels, view(states)), "server"), expected, name)
      }
    }))

  it.effect("when every key is open, forces the one whose breaker lets calls through soonest; disabled keys are never forced", () =>
    Effect.gen(function*() {
      const channels = [channel("a", { priority: 1 }), channel("b"), channel("c")]
      const allOpen = view({ "sk-a": "open", "sk-b": "open", "sk-c": "open" }, {
        "sk-a": 3_000,
        "sk-b": 1_000,
        "sk-c": 2_000
      })
      assert.deepStrictEqual(drain(yield* Selection.plan(channels, allOpen), "server"), ["b/sk-b!"])
      const openAndDisabled = view({ "sk-a": "disabled", "sk-b": "disabled", "sk-c": "open" }, { "sk-c": 9_000 })
      assert.deepStrictEqual(drain(yield* Selection.plan(channels, openAndDisabled), "server"), ["c/sk-c!"])
      const allDisabled = view({ "sk-a": "disabled", "sk-b": "disabled", "sk-c": "disabled" })
      assert.deepStrictEqual(drain(yield* Selection.plan(channels, allDisabled), "server"), [])
    }))

  it.effect("retries a key's own failure with another key of the channel, a server's failure on the next channel", () =>
    Effect.gen(function*() {
      const channels = [channel("multi", { priority: 1, keys: ["k1", "k2", "k3"] }), channel("other", { keys: ["o1"] })]
      const keyFailures = drain(yield* Selection.plan(channels, Selection.allHealthy), "key")
      assert.deepStrictEqual(keyFailures.slice(0, 3).map((t) => t.split("/")[0]), ["multi", "multi", "multi"])
      assert.deepStrictEqual(new Set(keyFailures.slice(0, 3)), new Set(["multi/k1", "multi/k2", "multi/k3"]))
      assert.strictEqual(keyFailures[3], "other/o1")
      const serverFailures = drain(yield* Selection.plan(channels, Selection.allHealthy), "server")
      assert.deepStrictEqual(
        serverFailures.slice(0, 2).map((t) => t.split("/")[0]),
        ["multi", "other"],
        "the next channel before the same server's other keys"
      )
      assert.strictEqual(serverFailures.length, 4, "then the first channel's other keys")
      // An open key is left out of its channel's keys.
      const withOpen = drain(yield* Selection.plan(channels, view({ k2: "open" })), "key")
      assert.notInclude(withOpen, "multi/k2")
      assert.strictEqual(withOpen.length, 3)
    }))

  it.effect("moves a channel's refusal of the model (a 403) to the next channel, never back to that one", () =>
    Effect.gen(function*() {
      const channels = [channel("multi", { priority: 1, keys: ["k1", "k2", "k3"] }), channel("other", { keys: ["o1"] })]
      const modelFailures = drain(yield* Selection.plan(channels, Selection.allHealthy), "model")
      assert.strictEqual(modelFailures.length, 2, modelFailures.join(", "))
      assert.deepStrictEqual(modelFailures.map((t) => t.split("/")[0]), ["multi", "other"])
    }))

  it.effect("spreads calls over a channel's keys", () =>
    Effect.gen(function*() {
      const counts = new Map<string, number>()
      for (let i = 0; i < 9_000; i++) {
        const key =
          (yield* Selection.plan([channel("multi", { keys: ["k1", "k2", "k3"] })], Selection.allHealthy)).next()!.key
        counts.set(key, (counts.get(key) ?? 0) + 1)
      }
      for (const key of ["k1", "k2", "k3"]) assert.approximately(counts.get(key)! / 9_000, 1 / 3, 0.02, key)
    }).pipe(Random.withSeed("keys")))

  it.effect("sticky: the same value gets the same channel and key while it is healthy; values spread by weight", () =>
    Effect.gen(function*() {
      const channels = [
        channel("a", { weight: 3, keys: ["a1", "a2"] }),
        channel("b", { weight: 1, keys: ["b1"] }),
        channel("z", { priority: -1 })
      ]
      const chosen = new Map<string, string>()
      for (let i = 0; i < 200; i++) {
        const value = `session-${i}`
        const first = drain(yield* Selection.plan(channels, Selection.allHealthy, value), "server")
        const again = drain(yield* Selection.plan(channels, Selection.allHealthy, value), "server")
        assert.deepStrictEqual(first, again, value)
        chosen.set(value, first[0]!)
      }
      // When a session's key opens it moves: to the channel's other key when there is one, else to the
      // other channel. A key it does not use opening changes nothing for it. Healthy again, it is back.
      for (const [value, target] of chosen) {
        const key = target.split("/")[1]!
        const moved = (yield* Selection.plan(channels, view({ [key]: "open" }), value)).next()!
        const expected = key === "a1" ? "a/a2" : key === "a2" ? "a/a1" : "a/"
        assert.isTrue(
          `${moved.channel.name}/${moved.key}`.startsWith(expected),
          `${value}: ${target} -> ${moved.channel.name}/${moved.key}`
        )
        const otherKey = key === "b1" ? "a1" : "b1"
        const stays = (yield* Selection.plan(channels, view({ [otherKey]: "open" }), value)).next()!
        assert.strictEqual(`${stays.channel.name}/${stays.key}`, target, `${value} stays`)
        const back = (yield* Selection.plan(channels, Selection.allHealthy, value)).next()!
        assert.strictEqual(`${back.channel.name}/${back.key}`, target)
      }
      // Over many values the shares follow the weights.
      const counts = yield* firstChoices(channels, 20_000, (i) => `user-${i}`)
      assert.approximately(counts.get("a")! / 20_000, 0.75, 0.015)
      assert.approximately(counts.get("b")! / 20_000, 0.25, 0.015)
      assert.isUndefined(counts.get("z"))
    }))

  it("hashes to the unit interval, evenly", () => {
    const buckets = new Array(10).fill(0)
    for (let i = 0; i < 50_000; i++) {
      const u = Selection.hashUnit(`value-${i}`)
      assert.isTrue(u > 0 && u < 1)
      buckets[Math.floor(u * 10)]++
    }
    for (const count of buckets) assert.approximately(count / 50_000, 0.1, 0.01)
  })
})
