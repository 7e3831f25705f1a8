import { assert, describe, it } from "@effect/vitest"
import { Counter, Histogram, MAX_SERIES } from "../src/health/PlainMetrics.ts"

describe("PlainMetrics", () => {
  it("counts per label set, in the order the sets first appeared", () => {
    const counter = new Counter("c_total", "help", ["a", "b"])
    counter.add(["x", "1"])
    counter.add(["y", "1"], 5)
    counter.add(["x", "1"], 2)
    counter.add(["x", "2"])
    assert.deepStrictEqual(counter.series.map((s) => [s.labels.join("|"), s.value]), [["x|1", 3], ["y|1", 5], [
      "x|2",
      1
    ]])
  })

  it("has the one series of a metric without labels from the start", () => {
    assert.deepStrictEqual(new Counter("c_total", "help", []).series.map((s) => s.value), [0])
    assert.deepStrictEqual(new Histogram("h", "help", [], [1]).series.map((s) => s.count), [0])
  })

  it("puts each observation in the first bucket whose bound holds it, above every bound in the last", () => {
    const histogram = new Histogram("h", "help", ["m"], [0.1, 1, 10])
    for (const value of [0.05, 0.1, 0.5, 1, 9, 11, 100]) histogram.observe(["m"], value)
    const [series] = histogram.series
    assert.deepStrictEqual(series!.buckets, [2, 2, 1, 2])
    assert.strictEqual(series!.count, 7)
    assert.closeTo(series!.sum, 121.65, 1e-9)
  })

  it("folds label sets past MAX_SERIES into 'other', so no input grows it without bound", () => {
    const counter = new Counter("c_total", "help", ["model", "kind"])
    for (let i = 0; i < MAX_SERIES + 500; i++) counter.add([`m${i}`, "prompt"])
    assert.strictEqual(counter.series.length, MAX_SERIES + 1)
    assert.deepStrictEqual(counter.series.at(-1), { labels: ["other", "other"], value: 500 })
    counter.add(["m0", "prompt"])
    assert.strictEqual(counter.series[0]!.value, 2, "known sets still count")
  })
})
