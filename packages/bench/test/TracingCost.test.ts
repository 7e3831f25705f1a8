/**
 * The tracing step of `pnpm bench` (`TracingCost`): its rounds alternate the
 * modes, each mode's figure is the median of its rounds with the spread kept,
 * the headline says how much more CPU a call costs with every call sampled,
 * and the report judges it against the tenth; `--only tracing`
 * selects it, and the plan counts it.
 */
import { assert, describe, it } from "@effect/vitest"
import { parseOptions, planLine, planTargets } from "../src/main.ts"
import { verdicts } from "../src/Report.ts"
import {
  FULL_TRACING,
  roundOrder,
  summarise,
  TRACING_TARGET,
  tracingHeadline,
  tracingMarkdown,
  type TracingRound
} from "../src/TracingCost.ts"

const round = (mode: TracingRound["mode"], cpuUsPerCall: number): TracingRound => ({
  mode,
  cpuUsPerCall,
  allocKbPerCall: mode === "off" ? 110 : 140,
  exports: mode === "off" ? 0 : 30,
  exportedBytes: mode === "off" ? 0 : 3_000_000
})

describe("the tracing step", () => {
  it("alternates the order of the modes from round to round", () => {
    assert.deepStrictEqual(roundOrder(["off", "sampled"], 3), ["off", "sampled", "sampled", "off", "off", "sampled"])
  })

  it("takes each mode's median, keeps the spread, and says how much more CPU sampling everything costs", () => {
    const result = summarise({ calls: 2000, warmup: 500, concurrency: 4 }, [
      round("off", 600),
      round("sampled", 640),
      round("sampled", 700),
      round("off", 700),
      round("off", 650),
      round("sampled", 690)
    ])
    const off = result.modes.find((m) => m.mode === "off")!
    const sampled = result.modes.find((m) => m.mode === "sampled")!
    assert.deepStrictEqual([off.cpuUsPerCall, off.cpuUsLow, off.cpuUsHigh], [650, 600, 700])
    assert.strictEqual(sampled.cpuUsPerCall, 690)
    assert.closeTo(result.sampledPercent!, (690 / 650 - 1) * 100, 1e-9)
    // Round by round: 640/600, 700/700, 690/650.
    assert.closeTo(result.sampledPercentLow!, 0, 1e-9)
    assert.closeTo(result.sampledPercentHigh!, (640 / 600 - 1) * 100, 1e-9)
    assert.match(
      tracingHeadline(result)!,
      /^tracing on, all sampled: 6\.2% more CPU per call \(rounds: 0\.0% to 6\.7%\)/
    )
    assert.include(tracingMarkdown(result).join("\n"), "| sampled | 690 µs | 640 µs | 700 µs | 140.0 KB | 30 | 2930 |")
  })

  it("is judged against a tenth more CPU per call, and says so when it was not run", () => {
    const judge = (sampled: number) =>
      verdicts(
        [],
        [],
        null,
        summarise({ calls: 1, warmup: 0, concurrency: 1 }, [round("off", 100), round("sampled", sampled)])
      )
        .find((v) => v.target === TRACING_TARGET)!
    assert.strictEqual(judge(108).status, "met")
    const missed = judge(125)
    assert.strictEqual(missed.status, "missed")
    assert.match(missed.shortfall!, /25\.0 % against 10 %/)
    assert.strictEqual(verdicts([], [], null).find((v) => v.target === TRACING_TARGET)!.status, "not measured")
  })

  it("runs alone with --only tracing, in the full run by default, and is in the plan", () => {
    const only = parseOptions(["--only", "tracing"], "/repo")
    if (only === "help") throw new Error("unexpected help")
    assert.deepStrictEqual([...only.only!], ["tracing"])
    assert.deepStrictEqual(only.tracing, FULL_TRACING)
    assert.match(planLine(only, planTargets(only, true, true), "modelgate"), /: tracing 24 s; about 44 s in all/)
    const full = parseOptions([], "/repo")
    if (full === "help") throw new Error("unexpected help")
    assert.match(planLine(full, planTargets(full, true, true), "modelgate"), /, tracing 24 s, soak 10 min 0 s;/)
    // No gateway the run starts itself (an external one): no tracing step.
    const external = parseOptions(["--gateway-url", "http://127.0.0.1:9"], "/repo")
    if (external === "help") throw new Error("unexpected help")
    assert.notInclude(planLine(external, planTargets(external, true, true), "modelgate"), "tracing")
  })
})
