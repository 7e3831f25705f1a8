/**
 * Statistics for the benchmark: an HDR-like latency histogram with
 * microsecond buckets, percentile summaries, "added" figures (target minus
 * baseline) and memory-growth math over sampled series.
 *
 * The histogram is log-linear: values below 2,048 µs get one bucket per
 * microsecond; above that every power of two is split into 1,024 buckets, so
 * any recorded value is reproduced within 0.1 % (1/1024). Values are clamped
 * to [0, 2^32 - 1] µs (about 71 minutes). Recording is one `Math.clz32`, a
 * shift and an array increment: no allocation.
 *
 * @since 0.1.0
 */

const SUB_BITS = 10
const SUB_COUNT = 1 << SUB_BITS // 1024 buckets per power of two
const LINEAR_LIMIT = SUB_COUNT * 2 // exact buckets below 2048 µs
const MAX_SHIFT = 31 - SUB_BITS // values < 2^32
const BUCKETS = LINEAR_LIMIT + MAX_SHIFT * SUB_COUNT
/** The largest value a histogram can hold, in microseconds. @category constants */
export const MAX_TRACKABLE_US = 0xffff_ffff

/** Bucket index of a non-negative integer value (µs). @category internals */
export const bucketIndex = (value: number): number => {
  if (value < LINEAR_LIMIT) return value
  const shift = 31 - Math.clz32(value) - SUB_BITS
  return LINEAR_LIMIT + (shift - 1) * SUB_COUNT + ((value >>> shift) - SUB_COUNT)
}

/** Smallest value that falls in bucket `index`. @category internals */
export const bucketLow = (index: number): number => {
  if (index < LINEAR_LIMIT) return index
  const k = index - LINEAR_LIMIT
  const shift = Math.floor(k / SUB_COUNT) + 1
  return ((k % SUB_COUNT) + SUB_COUNT) * 2 ** shift
}

/** Largest value that falls in bucket `index`. @category internals */
export const bucketHigh = (index: number): number => {
  if (index < LINEAR_LIMIT) return index
  const shift = Math.floor((index - LINEAR_LIMIT) / SUB_COUNT) + 1
  return bucketLow(index) + 2 ** shift - 1
}

/** A histogram's sparse serialised form: `[bucketIndex, count]` pairs plus exact extremes. @category models */
export interface HistogramJson {
  readonly count: number
  readonly sumUs: number
  readonly minUs: number
  readonly maxUs: number
  readonly buckets: ReadonlyArray<readonly [number, number]>
}

/** Percentile summary of one histogram, in microseconds. @category models */
export interface Summary {
  readonly count: number
  readonly minUs: number
  readonly meanUs: number
  readonly p50Us: number
  readonly p90Us: number
  readonly p99Us: number
  readonly p999Us: number
  readonly maxUs: number
}

/**
 * A latency histogram over microseconds (HDR-like, 0.1 % precision).
 *
 * @category models
 */
export class Histogram {
  private readonly counts = new Float64Array(BUCKETS)
  /** Number of recorded values. */
  count = 0
  /** Exact sum of the recorded (rounded, clamped) values, µs. */
  sumUs = 0
  /** Exact smallest recorded value, µs (0 when empty). */
  minUs = Number.POSITIVE_INFINITY
  /** Exact largest recorded value, µs (0 when empty). */
  maxUs = 0

  /** Records one value in microseconds; fractions are rounded, negatives count as 0. */
  record(us: number): void {
    const v = us <= 0 || Number.isNaN(us) ? 0 : us >= MAX_TRACKABLE_US ? MAX_TRACKABLE_US : Math.round(us)
    this.counts[bucketIndex(v)]++
    this.count++
    this.sumUs += v
    if (v < this.minUs) this.minUs = v
    if (v > this.maxUs) this.maxUs = v
  }

  /** Records a duration given in milliseconds (e.g. a `performance.now()` difference). */
  recordMs(ms: number): void {
    this.record(ms * 1000)
  }

  /** Adds every value of `other` into this histogram. */
  merge(other: Histogram): this {
    if (other.count === 0) return this
    for (let i = 0; i < BUCKETS; i++) {
      const c = other.counts[i]
      if (c !== 0) this.counts[i] += c
    }
    this.count += other.count
    this.sumUs += other.sumUs
    if (other.minUs < this.minUs) this.minUs = other.minUs
    if (other.maxUs > this.maxUs) this.maxUs = other.maxUs
    return this
  }

  /**
   * The value at percentile `p` (0..100): the highest value of the bucket
   * holding the ceil(p% x count)-th smallest value, clamped to the exact
   * min and max. 0 for an empty histogram.
   */
  percentile(p: number): number {
    if (!(p >= 0 && p <= 100)) throw new RangeError(`percentile: p must be within 0..100, got ${p}`)
    if (this.count === 0) return 0
    if (p === 0) return this.minUs
    if (p === 100) return this.maxUs
    // The epsilon keeps 99.9 x 1000 / 100 (= 999.0000000000001 in floats) at rank 999.
    return this.atRank(Math.max(1, Math.ceil((p * this.count) / 100 - 1e-9)))
  }

  /**
   * The `rank`-th smallest value (1-based, clamped to 1..count), as the
   * highest value of its bucket clamped to the exact min and max; 0 when empty.
   */
  atRank(rank: number): number {
    if (this.count === 0) return 0
    const r = Math.min(this.count, Math.max(1, Math.round(rank)))
    let seen = 0
    for (let i = 0; i < BUCKETS; i++) {
      seen += this.counts[i]
      if (seen >= r) return Math.max(this.minUs, Math.min(this.maxUs, bucketHigh(i)))
    }
    return this.maxUs
  }

  /**
   * A distribution-free confidence interval of percentile `p` (0 < p < 100)
   * from sampling alone: the values at ranks `n·q ∓ z·sqrt(n·q·(1-q))`
   * (the normal approximation of the binomial order-statistic bound; z 1.96
   * for about 95 %). With 3,000 calls the p99 interval spans about ±11 ranks.
   * It says how far the percentile could move if the same run were sampled
   * again, not how much the machine drifts between runs.
   */
  percentileBand(p: number, z = 1.96): Band {
    if (!(p > 0 && p < 100)) throw new RangeError(`percentileBand: p must be within (0, 100), got ${p}`)
    if (!(z >= 0)) throw new RangeError(`percentileBand: z must be >= 0, got ${z}`)
    if (this.count === 0) return { lowUs: 0, highUs: 0 }
    const q = p / 100
    const centre = this.count * q
    const spread = z * Math.sqrt(this.count * q * (1 - q))
    return { lowUs: this.atRank(Math.floor(centre - spread)), highUs: this.atRank(Math.ceil(centre + spread)) }
  }

  /** Mean of the recorded values, µs (0 when empty). */
  mean(): number {
    return this.count === 0 ? 0 : this.sumUs / this.count
  }

  /** p50/p90/p99/p99.9, min, max and mean. */
  summary(): Summary {
    return {
      count: this.count,
      minUs: this.count === 0 ? 0 : this.minUs,
      meanUs: Math.round(this.mean()),
      p50Us: this.percentile(50),
      p90Us: this.percentile(90),
      p99Us: this.percentile(99),
      p999Us: this.percentile(99.9),
      maxUs: this.maxUs
    }
  }

  /** Sparse form for JSON result files. */
  toJSON(): HistogramJson {
    const buckets: Array<readonly [number, number]> = []
    for (let i = 0; i < BUCKETS; i++) {
      if (this.counts[i] !== 0) buckets.push([i, this.counts[i]])
    }
    return {
      count: this.count,
      sumUs: this.sumUs,
      minUs: this.count === 0 ? 0 : this.minUs,
      maxUs: this.maxUs,
      buckets
    }
  }

  /** Rebuilds a histogram from `toJSON` output; throws naming the bad field. */
  static fromJSON(json: HistogramJson): Histogram {
    const h = new Histogram()
    let total = 0
    json.buckets.forEach(([index, count], i) => {
      if (!Number.isInteger(index) || index < 0 || index >= BUCKETS) {
        throw new RangeError(
          `Histogram.fromJSON: buckets[${i}][0] must be a bucket index in 0..${BUCKETS - 1}, got ${index}`
        )
      }
      if (!(count > 0)) {
        throw new RangeError(`Histogram.fromJSON: buckets[${i}][1] must be a positive count, got ${count}`)
      }
      h.counts[index] += count
      total += count
    })
    if (total !== json.count) {
      throw new RangeError(`Histogram.fromJSON: count is ${json.count} but the buckets hold ${total}`)
    }
    h.count = json.count
    h.sumUs = json.sumUs
    h.minUs = json.count === 0 ? Number.POSITIVE_INFINITY : json.minUs
    h.maxUs = json.maxUs
    return h
  }
}

/** An interval of values, µs. @category models */
export interface Band {
  readonly lowUs: number
  readonly highUs: number
}

/**
 * The sampling interval of `percentile(target, p) - percentile(baseline, p)`:
 * the lowest target value against the highest baseline value and the other
 * way round (both `percentileBand`s at `z`).
 *
 * @category math
 */
export const addedBand = (target: Histogram, baseline: Histogram, p: number, z = 1.96): Band => {
  const t = target.percentileBand(p, z)
  const b = baseline.percentileBand(p, z)
  return { lowUs: t.lowUs - b.highUs, highUs: t.highUs - b.lowUs }
}

/** Per-percentile difference `target - baseline` (µs; may be negative: noise). @category models */
export interface Added {
  readonly p50Us: number
  readonly p90Us: number
  readonly p99Us: number
  readonly maxUs: number
  readonly meanUs: number
}

/**
 * What a target adds over a baseline, percentile by percentile. This is the
 * usual "added latency" of a proxy: p99(through proxy) - p99(direct).
 *
 * @category math
 */
export const added = (target: Summary, baseline: Summary): Added => ({
  p50Us: target.p50Us - baseline.p50Us,
  p90Us: target.p90Us - baseline.p90Us,
  p99Us: target.p99Us - baseline.p99Us,
  maxUs: target.maxUs - baseline.maxUs,
  meanUs: target.meanUs - baseline.meanUs
})

/** One sample of a series: time since start (ms) and a value. @category models */
export interface Sample {
  readonly tMs: number
  readonly value: number
}

/** Least-squares slope of `value` over `tMs` (units per ms); 0 with fewer than 2 distinct times. @category math */
export const slope = (samples: ReadonlyArray<Sample>): number => {
  const n = samples.length
  if (n < 2) return 0
  let sx = 0
  let sy = 0
  for (const s of samples) {
    sx += s.tMs
    sy += s.value
  }
  const mx = sx / n
  const my = sy / n
  let num = 0
  let den = 0
  for (const s of samples) {
    num += (s.tMs - mx) * (s.value - my)
    den += (s.tMs - mx) ** 2
  }
  return den === 0 ? 0 : num / den
}

/** Median of a list of numbers (0 for an empty list). @category math */
export const median = (values: ReadonlyArray<number>): number => {
  if (values.length === 0) return 0
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/** Result of `growth`. @category models */
export interface Growth {
  /** Median of the first window (after warm-up). */
  readonly start: number
  /** Median of the last window. */
  readonly end: number
  /** (end - start) / start x 100; 0 when start is 0. */
  readonly percent: number
  /** Least-squares slope over the measured part, units per minute. */
  readonly perMinute: number
  readonly peak: number
}

/**
 * Growth of a sampled series (e.g. RSS during a soak): the median of the
 * first `window` fraction after skipping `warmup`, against the median of the
 * last `window` fraction. Medians keep one GC spike from deciding the verdict.
 *
 * @category math
 */
export const growth = (
  samples: ReadonlyArray<Sample>,
  options: { readonly warmup?: number; readonly window?: number } = {}
): Growth => {
  const warmup = options.warmup ?? 0.1
  const window = options.window ?? 0.1
  if (!(warmup >= 0 && warmup < 1)) throw new RangeError(`growth: warmup must be within [0, 1), got ${warmup}`)
  if (!(window > 0 && window <= 1)) throw new RangeError(`growth: window must be within (0, 1], got ${window}`)
  const measured = samples.slice(Math.floor(samples.length * warmup))
  if (measured.length === 0) return { start: 0, end: 0, percent: 0, perMinute: 0, peak: 0 }
  const w = Math.max(1, Math.floor(measured.length * window))
  const start = median(measured.slice(0, w).map((s) => s.value))
  const end = median(measured.slice(-w).map((s) => s.value))
  let peak = 0
  for (const s of samples) if (s.value > peak) peak = s.value
  return {
    start,
    end,
    percent: start === 0 ? 0 : ((end - start) / start) * 100,
    perMinute: slope(measured) * 60_000,
    peak
  }
}
