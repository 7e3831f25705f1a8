import { assert, describe, it } from "@effect/vitest"
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import * as Bench from "../src/index.ts"

describe("@modelgate/bench", () => {
  it("exports the file its package.json names, with the library modules", () => {
    const pkg = JSON.parse(readFileSync(join(import.meta.dirname, "../package.json"), "utf8")) as {
      exports: Record<string, string | null>
    }
    const main = pkg.exports["."]
    assert.strictEqual(main, "./src/index.ts")
    assert.isTrue(existsSync(join(import.meta.dirname, "..", main ?? "")))
    assert.strictEqual(typeof Bench.openLoop, "function")
    assert.strictEqual(typeof Bench.closedLoop, "function")
    assert.strictEqual(typeof Bench.Histogram, "function")
    assert.strictEqual(typeof Bench.Billing.judgeBilling, "function")
    assert.strictEqual(typeof Bench.ProfileSummary.summarise, "function")
    assert.strictEqual(typeof Bench.Loadgen.parseLoadgenArgs, "function")
    assert.strictEqual(typeof Bench.FloorProxy.startFloorProxy, "function")
    assert.strictEqual(typeof Bench.Png.encodePng, "function")
    assert.strictEqual(typeof Bench.Plan.planRun, "function")
  })
})
