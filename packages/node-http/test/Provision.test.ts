/**
 * Amounts and ratios from the YAML file: numbers are read exactly from their
 * shortest text, and values finer than the unit (a nano-dollar, a millionth of
 * a ratio) are refused with an error naming the field, never rounded.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as ConfigFile from "../src/ConfigFile.ts"
import * as Provision from "../src/Provision.ts"

const provision = (yaml: string) =>
  ConfigFile.parse(yaml, "test.yaml").pipe(Effect.flatMap((file) => Provision.toInput(file, "test.yaml")))

const toInput = (yaml: string) => Effect.runPromise(provision(yaml))

const refusal = (yaml: string) => Effect.runPromise(Effect.flip(provision(yaml)))

describe("Provision: amounts and ratios from YAML", () => {
  it("reads YAML numbers exactly", async () => {
    const input = await toInput([
      "users:",
      "  - {name: a, balance: 65536.01}",
      "  - {name: b, balance: 0.000000001}",
      "  - {name: c, balance: 1e-9}",
      "groups:",
      "  cheap: {ratio: 0.000001}",
      "  thirds: {ratio: 0.333333}",
      "models:",
      "  m: {input: 0.15, output: 1.000000001, cached_input: 2.5e-8}"
    ].join("\n"))
    assert.deepStrictEqual(input.users!.map((u) => u.balanceNanos), [65_536_010_000_000n, 1n, 1n])
    assert.deepStrictEqual(input.groups!.filter((g) => g.name !== "default").map((g) => [g.name, g.ratioMicros]), [
      ["cheap", 1n],
      ["thirds", 333_333n]
    ])
    const model = input.models!.find((m) => m.id === "m")!
    assert.strictEqual(model.inputNanosPerMillion, 150_000_000n)
    assert.strictEqual(model.outputNanosPerMillion, 1_000_000_001n)
    assert.strictEqual(model.cachedInputNanosPerMillion, 25n)
  })

  it("refuses amounts finer than a nano-dollar and ratios finer than a millionth, naming each field", async () => {
    const error = await refusal([
      "users:",
      "  - {name: a, balance: 1e-12}",
      "  - {name: b, balance: 1.000000000001}",
      "  - {name: c, balance: 2000000000}",
      "groups:",
      "  tiny: {ratio: 1e-9}",
      "  long: {ratio: 0.3333333}",
      "models:",
      "  m: {input: 0.0000000001}"
    ].join("\n"))
    assert.strictEqual(error._tag, "ConfigError")
    for (
      const line of [
        "at users[0].balance: Expected a non-negative USD amount of at most 1000000000 with at most 9 decimal places, got 1e-12",
        "at users[1].balance:",
        "got 1.000000000001",
        "at users[2].balance:",
        "at groups.tiny.ratio: Expected a positive number with at most 6 decimal places, got 1e-9",
        "at groups.long.ratio:",
        "at models.m.input:"
      ]
    ) assert.include(error.message, line)
  })
})
