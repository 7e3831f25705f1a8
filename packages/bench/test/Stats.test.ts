import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { added, addedBand, bucketHigh, bucketIndex, bucketLow, growth, Histogram, median, slope } from "../src/Stats.ts"

describe("Histogram buckets", () => {
  it("are exact below 2048 us and within 0.1 % above", () => {
    for (const v of [0, 1, 2047]) {
      assert.strictEqual(bucketLow(bucketIndex(v)), v)
      assert.strictEqual(bucketHigh(bucketIndex(v)), v)
    }
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0xffff_ffff }), (v) => {
        const i = bucketIndex(v)
        const lo = bucketLow(i)
        const hi = bucketHigh(i)
        return lo <= v && v <= hi && (hi - lo) / Math.max(1, lo) <= 1 / 1024
      })
    )
  })

  it("are contiguous and ordered", () => {
    for (const i of [0, 2046, 2047, 2048, 3071, 3072, 10_000]) {
      assert.strictEqual(bucketLow(i + 1), bucketHigh(i) + 1, `between bucket ${i} and ${i + 1}`)
    }
  })
})

describe("Histogram percentiles", () => {
  it("match a sorted array within the bucket precision", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 50_000_000 }), { minLength: 1, maxLength: 400 }),
        fc.constantFrom(1, 50, 90, 99, 99.9),
        (values, p) => {
          const h = new Histogram()
          for (const v of values) h.record(v)
          const sorted = [...values].sort((a, b) => a - b)
          const exact = sorted[Math.max(1, Math.ceil((p * values.length) / 100 - 1e-9)) - 1]
          const got = h.percentile(p)
          return got >= exact && got - exact <= Math.max(0, exact / 1024)
        }
      )
    )
  })

  it("gives exact extremes, mean and count for 1..1000", () => {
    const h = new Histogram()
    for (let v = 1; v <= 1000; v++) h.record(v)
    const s = h.summary()
    assert.deepStrictEqual(
      {
        count: s.count,
        min: s.minUs,
        max: s.maxUs,
        mean: s.meanUs,
        p50: s.p50Us,
        p90: s.p90Us,
        p99: s.p99Us,
        p999: s.p999Us
      },
      { count: 1000, min: 1, max: 1000, mean: 501, p50: 500, p90: 900, p99: 990, p999: 999 }
    )
  })

  it("rounds, clamps negatives to 0 and records milliseconds", () => {
    const h = new Histogram()
    h.record(-5)
    h.recordMs(1.2345)
    assert.strictEqual(h.minUs, 0)
    assert.strictEqual(h.maxUs, 1235)
    assert.strictEqual(h.percentile(100), 1235)
  })

  it("is empty-safe and rejects bad percentiles", () => {
    const h = new Histogram()
    assert.strictEqual(h.percentile(99), 0)
    assert.strictEqual(h.summary().minUs, 0)
    assert.throws(() => h.percentile(101), /within 0..100/)
  })

  it("merges and survives a JSON round trip", () => {
    const a = new Histogram()
    const b = new Histogram()
    for (let v = 0; v < 5000; v += 7) a.record(v * 13)
    for (let v = 0; v < 300; v++) b.record(1_000_000 + v)
    const both = new Histogram().merge(a).merge(b)
    assert.strictEqual(both.count, a.count + b.count)
    assert.strictEqual(both.maxUs, b.maxUs)
    const back = Histogram.fromJSON(JSON.parse(JSON.stringify(both)))
    assert.deepStrictEqual(back.summary(), both.summary())
  })

  it("fromJSON names the bad field", () => {
    assert.throws(
      () => Histogram.fromJSON({ count: 1, sumUs: 1, minUs: 1, maxUs: 1, buckets: [[-1, 1]] }),
      /buckets\[0\]\[0\]/
    )
    assert.throws(() => Histogram.fromJSON({ count: 2, sumUs: 1, minUs: 1, maxUs: 1, buckets: [[1, 1]] }), /count is 2/)
  })
})

describe("percentile bands", () => {
  it("bracket the percentile by the order-statistic ranks", () => {
    const h = new Histogram()
    for (let v = 1; v <= 1000; v++) h.record(v)
    // n = 1000, q = 0.99: centre rank 990, spread 1.96 x sqrt(9.9) = 6.17 -> ranks 983 and 997.
    assert.deepStrictEqual(h.percentileBand(99), { lowUs: 983, highUs: 997 })
    // z = 0 collapses to the percentile's own rank.
    assert.deepStrictEqual(h.percentileBand(99, 0), { lowUs: 990, highUs: 990 })
    assert.strictEqual(h.atRank(0), 1)
    assert.strictEqual(h.atRank(5000), 1000)
    assert.deepStrictEqual(new Histogram().percentileBand(50), { lowUs: 0, highUs: 0 })
    assert.throws(() => h.percentileBand(100), /p must be within \(0, 100\)/)
  })

  it("always contain the percentile, and the added band contains the difference", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 2000 }), { minLength: 1, maxLength: 300 }),
        fc.array(fc.integer({ min: 0, max: 2000 }), { minLength: 1, maxLength: 300 }),
        fc.constantFrom(50, 90, 99),
        (xs, ys, p) => {
          const a = new Histogram()
          const b = new Histogram()
          for (const x of xs) a.record(x)
          for (const y of ys) b.record(y)
          const band = a.percentileBand(p)
          const diff = a.percentile(p) - b.percentile(p)
          const added = addedBand(a, b, p)
          return band.lowUs <= a.percentile(p) && a.percentile(p) <= band.highUs && added.lowUs <= diff &&
            diff <= added.highUs
        }
      )
    )
  })
})

describe("series math", () => {
  it("added subtracts percentile by percentile", () => {
    const base = { count: 1, minUs: 0, meanUs: 100, p50Us: 100, p90Us: 200, p99Us: 300, p999Us: 400, maxUs: 500 }
    const target = { ...base, meanUs: 150, p50Us: 130, p90Us: 260, p99Us: 700, maxUs: 400 }
    assert.deepStrictEqual(added(target, base), { p50Us: 30, p90Us: 60, p99Us: 400, maxUs: -100, meanUs: 50 })
  })

  it("slope and median", () => {
    assert.strictEqual(slope([{ tMs: 0, value: 10 }, { tMs: 1000, value: 20 }, { tMs: 2000, value: 30 }]), 0.01)
    assert.strictEqual(slope([{ tMs: 5, value: 1 }]), 0)
    assert.strictEqual(median([3, 1, 2]), 2)
    assert.strictEqual(median([4, 1, 2, 3]), 2.5)
  })

  it("growth compares the first and last windows after warm-up", () => {
    const flat = Array.from({ length: 100 }, (_, i) => ({ tMs: i * 1000, value: 100 + (i % 2) }))
    assert.isBelow(Math.abs(growth(flat).percent), 1.5)
    const rising = Array.from({ length: 100 }, (_, i) => ({ tMs: i * 1000, value: 100 + i }))
    const g = growth(rising)
    assert.isAbove(g.percent, 50)
    assert.strictEqual(Math.round(g.perMinute), 60)
    assert.strictEqual(g.peak, 199)
    assert.throws(() => growth(rising, { warmup: 1 }), /warmup/)
  })
})
