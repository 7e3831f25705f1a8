/**
 * `trusted_proxies` in the configuration: loopback by default, a list of
 * addresses and CIDR ranges when set, and a bad entry refused with a message
 * that names the file and the entry. The limits on what is read from an
 * upstream (`max_answer_bytes`, `max_event_bytes`). SQLite's busy timeout.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { decode } from "../src/ConfigFile.ts"
import { resolveSettings } from "../src/Settings.ts"

const resolve = (document: unknown) =>
  Effect.flatMap(
    decode(document, "test.yaml"),
    (file) => resolveSettings(file, {}, { consoleDir: null, source: "test.yaml" })
  )

describe("trusted_proxies", () => {
  it.effect("defaults to proxies on the same machine", () =>
    Effect.gen(function*() {
      const settings = yield* resolve({})
      assert.deepStrictEqual(settings.trustedProxies, ["127.0.0.0/8", "::1/128"])
    }))

  it.effect("takes addresses and CIDR ranges, or none", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(
        (yield* resolve({ trusted_proxies: ["10.0.0.0/8", "192.168.1.2", "fd00::/8"] })).trustedProxies,
        [
          "10.0.0.0/8",
          "192.168.1.2",
          "fd00::/8"
        ]
      )
      assert.deepStrictEqual((yield* resolve({ trusted_proxies: [] })).trustedProxies, [])
    }))

  it.effect("refuses an entry that is not an address or a range, naming it and the file", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(resolve({ trusted_proxies: ["10.0.0.0/8", "proxy.internal"] }))
      assert.include(error.message, "trusted_proxies")
      assert.include(error.message, "test.yaml")
      assert.include(error.message, "'proxy.internal'")
    }))
})

describe("what is read from an upstream", () => {
  it.effect("max_answer_bytes and max_event_bytes default to 32 MiB and 4 MiB, are taken from the file, and must be positive whole numbers", () =>
    Effect.gen(function*() {
      const defaults = yield* resolve({})
      assert.deepStrictEqual([defaults.maxAnswerBytes, defaults.maxEventBytes], [32 * 1024 * 1024, 4 * 1024 * 1024])
      const set = yield* resolve({ max_answer_bytes: 1_000_000, max_event_bytes: 65_536 })
      assert.deepStrictEqual([set.maxAnswerBytes, set.maxEventBytes], [1_000_000, 65_536])
      const error = yield* Effect.flip(resolve({ max_event_bytes: 0 }))
      assert.include(error.message, "at max_event_bytes")
    }))
})

describe("the database's bounds", () => {
  it.effect("database_busy_timeout_ms (SQLite) defaults to 5 s, is taken from the file, and may be 0", () =>
    Effect.gen(function*() {
      assert.strictEqual((yield* resolve({})).databaseBusyTimeoutMs, 5_000)
      assert.strictEqual((yield* resolve({ database_busy_timeout_ms: 250 })).databaseBusyTimeoutMs, 250)
      assert.strictEqual((yield* resolve({ database_busy_timeout_ms: 0 })).databaseBusyTimeoutMs, 0)
      const error = yield* Effect.flip(resolve({ database_busy_timeout_ms: -1 }))
      assert.include(error.message, "at database_busy_timeout_ms")
    }))

  it.effect("database_call_wait_ms defaults to 1 s, is taken from the file, and must be positive", () =>
    Effect.gen(function*() {
      assert.strictEqual((yield* resolve({})).databaseCallWaitMs, 1_000)
      assert.strictEqual((yield* resolve({ database_call_wait_ms: 2_500 })).databaseCallWaitMs, 2_500)
      const error = yield* Effect.flip(resolve({ database_call_wait_ms: 0 }))
      assert.include(error.message, "at database_call_wait_ms")
    }))
})
