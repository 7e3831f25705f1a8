import { assert, describe, it } from "@effect/vitest"
import { parseOptions, planLine, planTargets } from "../src/main.ts"
import {
  BUDGET_SECONDS,
  formatDuration,
  FULL_TIMING,
  planRun,
  POINT_OVERHEAD_MS,
  QUICK_TIMING,
  STARTUP_MS,
  TEARDOWN_MS
} from "../src/Plan.ts"
import { scenarios } from "../src/Scenarios.ts"

const options = (argv: ReadonlyArray<string>) => {
  const o = parseOptions(argv, "/repo")
  if (o === "help") throw new Error("unexpected help")
  return o
}

describe("the run's plan", () => {
  it("fits the full default run, Portkey included, in the 15-minute budget", () => {
    const o = options([])
    assert.isTrue(o.portkey, "Portkey is measured by default")
    const targets = planTargets(o, true, true)
    assert.deepStrictEqual(targets.map((t) => t.name), ["direct", "floor", "modelgate", "portkey"])
    const plan = planRun(scenarios(false), targets, FULL_TIMING, "modelgate")
    assert.isBelow(plan.totalMs, BUDGET_SECONDS * 1000)
    // The soak is the 10 minutes; the rest shares what is left.
    assert.strictEqual(plan.steps.find((s) => s.name === "soak")?.ms, 600_000 + POINT_OVERHEAD_MS)
    assert.deepStrictEqual(plan.steps.map((s) => s.name), [
      "startup",
      "streams-1000",
      "chat-small",
      "chat-10k",
      "chat-200k",
      "stream-200",
      "translate-gemini",
      "translate-gemini-stream",
      "soak",
      "teardown"
    ])
    // Portkey runs the same-dialect scenarios, and holds streams, but never translates.
    assert.deepStrictEqual(plan.steps.find((s) => s.name === "translate-gemini")?.targets, [
      "direct",
      "floor",
      "modelgate"
    ])
    assert.deepStrictEqual(plan.steps.find((s) => s.name === "streams-1000")?.targets, [
      "floor",
      "modelgate",
      "portkey"
    ])
    assert.deepStrictEqual(plan.steps.find((s) => s.name === "chat-small")?.targets, [
      "direct",
      "floor",
      "modelgate",
      "portkey"
    ])
  })

  it("adds up each step from the timing", () => {
    const only = scenarios(false).filter((s) => s.name === "chat-10k")
    const targets = planTargets(options(["--without-portkey"]), true, true)
    const plan = planRun(only, targets, FULL_TIMING, null)
    // 3 targets x (1 s warm-up + 2 rates x 3 s + 3 s closed loop + 3 x 250 ms)
    assert.strictEqual(plan.steps.find((s) => s.name === "chat-10k")?.ms, 3 * (1000 + 6000 + 3000 + 750))
    assert.strictEqual(plan.totalMs, STARTUP_MS + 3 * 10_750 + TEARDOWN_MS)
  })

  it("prints this run's plan, and in a quick run the full run's duration too", () => {
    const quick = options(["--quick", "--only", "chat-small,soak"])
    const line = planLine(quick, planTargets(quick, true, true), "modelgate")
    assert.match(
      line,
      /^plan \(openai dialect; direct, floor, modelgate, portkey\): chat-small \d+ s, soak 20 s; about (\d+ min )?\d+ s in all/
    )
    assert.match(line, /the full run of this selection: about 11 min \d+ s$/)
    assert.strictEqual(formatDuration(858_000), "14 min 18 s")
    assert.isBelow(QUICK_TIMING.pointMs, FULL_TIMING.pointMs)
  })

  it("leaves Portkey out when asked, when it is not installed, or in a Gemini-dialect run", () => {
    assert.deepStrictEqual(planTargets(options(["--without-portkey"]), true, true).map((t) => t.name), [
      "direct",
      "floor",
      "modelgate"
    ])
    assert.deepStrictEqual(planTargets(options([]), true, false).map((t) => t.name), ["direct", "floor", "modelgate"])
    assert.deepStrictEqual(planTargets(options(["--gateway-dialect", "gemini"]), true, true).map((t) => t.name), [
      "direct",
      "floor",
      "modelgate"
    ])
  })
})

describe("benchmark options", () => {
  it("reads the gateway's dialect, the profile switch and an external gateway", () => {
    const o = options([
      "--gateway-dialect",
      "gemini",
      "--gateway-url",
      "http://127.0.0.1:8080/",
      "--gateway-pid",
      "42",
      "--header",
      "X-A: 1",
      "--soak-ms",
      "5000"
    ])
    assert.strictEqual(o.dialect, "gemini")
    assert.strictEqual(o.gatewayUrl, "http://127.0.0.1:8080")
    assert.strictEqual(o.gatewayPid, 42)
    assert.deepStrictEqual(o.headers, { "x-a": "1" })
    assert.strictEqual(o.timing.soakMs, 5000)
    assert.strictEqual(o.timing.pointMs, FULL_TIMING.pointMs)
    // The gateway the run starts is profiled unless told not to; one already running cannot be.
    assert.isTrue(options([]).profile)
    assert.isFalse(options(["--without-profile"]).profile)
    assert.isFalse(o.profile)
    assert.isFalse(options([]).heapSnapshot)
    assert.isTrue(options(["--heap-snapshot"]).heapSnapshot)
    assert.isTrue(options(["--plan"]).planOnly)
  })

  it("names what is wrong", () => {
    assert.throws(
      () => options(["--gateway-dialect", "anthropic"]),
      /--gateway-dialect must be one of openai, gemini, got "anthropic"/
    )
    assert.throws(
      () => options(["--gateway-url", "http://10.0.0.1:8080"]),
      /--gateway-url: host "10.0.0.1" is not a loopback address/
    )
    assert.throws(() => options(["--gateway-pid", "3"]), /--gateway-pid needs --gateway-url/)
    assert.throws(
      () => options(["--gateway-url", "http://127.0.0.1:1", "--heap-snapshot"]),
      /--heap-snapshot needs the gateway the benchmark starts/
    )
    assert.throws(() => options(["--only", "nope"]), /--only: unknown scenario "nope"/)
    assert.throws(() => options(["--soak-ms", "10"]), /--soak-ms must be an integer >= 1000, got "10"/)
    assert.throws(() => options(["--with-portkey"]), /Unknown option '--with-portkey'/)
  })
})
