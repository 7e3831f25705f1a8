/**
 * `trusted_proxies` in the configuration: loopback by default, a list of
 * addresses and CIDR ranges when set, and a bad entry refused with a message
 * that names the file and the entry.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { decode } from "../src/ConfigFile.ts"
import { resolveSettings } from "../src/Settings.ts"

const resolve = (document: unknown) =>
  Effect.flatMap(decode(document, "test.yaml"), (file) => resolveSettings(file, {}, { consoleDir: null, source: "test.yaml" }))

describe("trusted_proxies", () => {
  it.effect("defaults to proxies on the same machine", () =>
    Effect.gen(function*() {
      const settings = yield* resolve({})
      assert.deepStrictEqual(settings.trustedProxies, ["127.0.0.0/8", "::1/128"])
    }))

  it.effect("takes addresses and CIDR ranges, or none", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual((yield* resolve({ trusted_proxies: ["10.0.0.0/8", "192.168.1.2", "fd00::/8"] })).trustedProxies, [
        "10.0.0.0/8",
        "192.168.1.2",
        "fd00::/8"
      ])
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
