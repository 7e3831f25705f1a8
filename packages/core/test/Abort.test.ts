import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import * as Abort from "../src/errors/Abort.ts"
import * as Issues from "../src/errors/Issues.ts"

describe("Abort", () => {
  it("run returns what the function returns", () => {
    assert.deepStrictEqual(Abort.run(() => 42), Result.succeed(42))
  })

  it("an abort deep inside becomes the failure of run", () => {
    const error = Issues.invalid("contents[0].role", "'contents[0].role' is required")
    const nested = (depth: number): number => depth === 0 ? Abort.abort(error) : nested(depth - 1) + 1
    assert.deepStrictEqual(Abort.run(() => nested(5)), Result.fail(error))
  })

  it("anything else thrown passes through run as a defect", () => {
    assert.throws(() => Abort.run(() => JSON.parse("{")), SyntaxError)
  })
})
