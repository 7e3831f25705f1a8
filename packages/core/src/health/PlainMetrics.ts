/**
 * Counters and histograms kept as plain numbers, for metrics counted on a hot
 * path and read by an exporter when it is scraped (the Node server formats
 * them for Prometheus at `/metrics`). Adding to one costs a string join, a
 * map lookup and an addition: no registry, no label validation, no Effect.
 *
 * A metric keeps at most `MAX_SERIES` label sets; observations of further
 * ones are counted under the label values `other`, so no input can make an
 * exposition grow without bound.
 *
 * @since 0.1.0
 */

/** The most label sets one metric keeps; further ones are counted under `other`. @category constants */
export const MAX_SERIES = 2_000

/** One label set of a counter and its value. @category models */
export interface CounterSeries {
  readonly labels: ReadonlyArray<string>
  value: number
}

/** One label set of a histogram: how many observations fell in each bucket (not cumulative), their sum and count. @category models */
export interface HistogramSeries {
  readonly labels: ReadonlyArray<string>
  /** One count per bucket bound, and the last for observations above every bound. */
  readonly buckets: Array<number>
  sum: number
  count: number
}

/**
 * Where the series of each label set is kept: nested maps, one level per
 * label, so finding a series builds no string. Past `MAX_SERIES` series, a new
 * label set is counted under `other` for every label.
 */
class SeriesIndex<S> {
  readonly all: Array<S> = []
  private readonly root = new Map<string, unknown>()
  private readonly make: (labels: ReadonlyArray<string>) => S
  constructor(make: (labels: ReadonlyArray<string>) => S) {
    this.make = make
  }

  find(labels: ReadonlyArray<string>): S {
    const found = this.walk(labels, this.all.length < MAX_SERIES)
    return found ?? this.walk(labels.map(() => "other"), true)!
  }

  private walk(labels: ReadonlyArray<string>, create: boolean): S | undefined {
    let level = this.root
    const last = labels.length - 1
    for (let i = 0; i < last; i++) {
      let next = level.get(labels[i]!) as Map<string, unknown> | undefined
      if (next === undefined) {
        if (!create) return undefined
        next = new Map()
        level.set(labels[i]!, next)
      }
      level = next
    }
    const key = last < 0 ? "" : labels[last]!
    let series = level.get(key) as S | undefined
    if (series === undefined) {
      if (!create) return undefined
      series = this.make(labels)
      level.set(key, series)
      this.all.push(series)
    }
    return series
  }
}

/**
 * A counter with named labels: a plain number per label set.
 *
 * @category models
 */
export class Counter {
  readonly name: string
  readonly help: string
  readonly labelNames: ReadonlyArray<string>
  private readonly index = new SeriesIndex<CounterSeries>((labels) => ({ labels, value: 0 }))
  constructor(name: string, help: string, labelNames: ReadonlyArray<string>) {
    this.name = name
    this.help = help
    this.labelNames = labelNames
    // A counter without labels has its one series from the start (exported as 0).
    if (labelNames.length === 0) this.index.find(labelNames)
  }

  /** Every label set counted so far, in the order they first appeared. */
  get series(): ReadonlyArray<CounterSeries> {
    return this.index.all
  }

  /** Adds `value` to the series of `labels` (in `labelNames` order). */
  add(labels: ReadonlyArray<string>, value = 1): void {
    this.index.find(labels).value += value
  }
}

/**
 * A histogram with named labels and fixed bucket bounds.
 *
 * @category models
 */
export class Histogram {
  readonly name: string
  readonly help: string
  readonly labelNames: ReadonlyArray<string>
  readonly bounds: ReadonlyArray<number>
  private readonly index: SeriesIndex<HistogramSeries>
  constructor(name: string, help: string, labelNames: ReadonlyArray<string>, bounds: ReadonlyArray<number>) {
    this.name = name
    this.help = help
    this.labelNames = labelNames
    this.bounds = bounds
    this.index = new SeriesIndex((labels) => ({
      labels,
      buckets: new Array<number>(bounds.length + 1).fill(0),
      sum: 0,
      count: 0
    }))
    if (labelNames.length === 0) this.index.find(labelNames)
  }

  /** Every label set observed so far, in the order they first appeared. */
  get series(): ReadonlyArray<HistogramSeries> {
    return this.index.all
  }

  /** Records one observation of `value` in the series of `labels`. */
  observe(labels: ReadonlyArray<string>, value: number): void {
    const entry = this.index.find(labels)
    let bucket = 0
    while (bucket < this.bounds.length && value > this.bounds[bucket]!) bucket++
    entry.buckets[bucket]!++
    entry.sum += value
    entry.count++
  }
}
