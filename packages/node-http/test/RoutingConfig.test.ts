/**
 * The routing parts of the configuration file: `routing.*` and the channel's
 * breaker, params and stream_options, decoded strictly (bad values named by
 * path), mapped with core's defaults, and validated like the admin API does.
 */
import { assert, describe, it } from "@effect/vitest"
import { Domain } from "@modelgate/core"
import { Effect } from "effect"
import * as ConfigFile from "../src/ConfigFile.ts"
import * as Provision from "../src/Provision.ts"
import { resolveSettings } from "../src/Settings.ts"

const channel = (extra: string) => `
channels:
  - name: up
    type: openai
    base_url: https://up.test/v1
    api_key: k
    models: [m]
${extra}`

const parse = (yaml: string) => ConfigFile.parse(yaml, "test.yaml")

describe("routing configuration", () => {
  it.effect("routing.* resolves with defaults; the sticky header is matched in lower case", () =>
    Effect.gen(function*() {
      const none = yield* resolveSettings(yield* parse(""), {}, { consoleDir: null, source: "test" })
      assert.deepStrictEqual([none.maxAttempts, none.stickyHeader, none.probeIntervalMs], [3, null, 30_000])
      const file = yield* parse(
        "routing:\n  max_attempts: 5\n  sticky_header: X-Session-Id\n  probe_interval_ms: 1000\n"
      )
      const set = yield* resolveSettings(file, {}, { consoleDir: null, source: "test" })
      assert.deepStrictEqual([set.maxAttempts, set.stickyHeader, set.probeIntervalMs], [5, "x-session-id", 1000])
    }))

  it.effect("a channel's breaker, params and stream_options map onto core's defaults", () =>
    Effect.gen(function*() {
      const plain = yield* Provision.toInput(yield* parse(channel("")), "test.yaml")
      const p = plain.channels![0]!
      assert.deepStrictEqual(p.breaker, Domain.defaultBreaker)
      assert.deepStrictEqual(p.timeouts, Domain.defaultTimeouts)
      assert.deepStrictEqual(p.params, Domain.noParams)
      assert.isTrue(p.streamOptions)
      const tuned = yield* Provision.toInput(
        yield* parse(channel(`    breaker: {consecutive_failures: 2, failure_rate: 0.25, cooldown_ms: 5000}
    params: {defaults: {temperature: 0.2, generationConfig: {topK: 3}}, overrides: {user: null}}
    stream_options: false
    timeouts: {idle_ms: 3000}`)),
        "test.yaml"
      )
      const t = tuned.channels![0]!
      assert.deepStrictEqual(t.breaker, {
        ...Domain.defaultBreaker,
        consecutiveFailures: 2,
        failureRate: 0.25,
        cooldownMs: 5000
      })
      assert.deepStrictEqual(t.params, {
        defaults: { temperature: 0.2, generationConfig: { topK: 3 } },
        overrides: { user: null }
      })
      assert.isFalse(t.streamOptions)
      assert.strictEqual(t.timeouts.idleMs, 3000)
      assert.strictEqual(t.timeouts.totalMs, Domain.defaultTimeouts.totalMs)
    }))

  it.effect("bad routing values stop the start, naming each field", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [string, RegExp]> = [
        ["routing:\n  max_attempts: 0\n", /at routing\.max_attempts: Expected a whole number from 1 to 20/],
        ["routing:\n  sticky_header: \"bad header\"\n", /at routing\.sticky_header: Expected a header name/],
        [
          channel("    breaker: {failure_rate: 1.5}"),
          /at channels\[0\]\.breaker\.failure_rate: Expected a fraction above 0 and at most 1/
        ],
        [channel("    breaker: {half_open_calls: 0}"), /at channels\[0\]\.breaker\.half_open_calls/],
        [channel("    breaker: {bogus: 1}"), /at channels\[0\]\.breaker\.bogus/],
        [channel("    params: {defaults: [1]}"), /at channels\[0\]\.params\.defaults/],
        [channel("    stream_options: maybe"), /at channels\[0\]\.stream_options/]
      ]
      for (const [yaml, message] of cases) {
        const error = yield* Effect.flip(parse(yaml))
        assert.match(error.message, message, yaml)
      }
    }))
})
