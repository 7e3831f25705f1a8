/**
 * Line and grouped-bar charts drawn on a `Canvas`: title, axes with "nice"
 * ticks (1, 2, 5 x 10^k), grid lines, axis titles and a legend, in the 5x7
 * font. Output is a `Canvas`; call `toPng()` to write it.
 *
 * @since 0.1.0
 */
import { Canvas, type Rgb } from "./Canvas.ts"
import { GLYPH_HEIGHT, textWidth } from "./Font.ts"

/** Series colours, in order (colour-blind-friendly "Okabe-Ito" palette). @category constants */
export const PALETTE: ReadonlyArray<Rgb> = [
  [0, 114, 178],
  [213, 94, 0],
  [0, 158, 115],
  [204, 121, 167],
  [230, 159, 0],
  [86, 180, 233],
  [0, 0, 0]
]

const INK: Rgb = [30, 30, 30]
const GRID: Rgb = [225, 225, 225]
const AXIS: Rgb = [90, 90, 90]

/**
 * About `count` round tick values covering [min, max] (steps of 1, 2 or 5 x 10^k).
 *
 * @category axes
 */
export const niceTicks = (min: number, max: number, count = 5): Array<number> => {
  if (!Number.isFinite(min) || !Number.isFinite(max)) {
    throw new RangeError(`niceTicks: min and max must be finite, got ${min}, ${max}`)
  }
  if (max < min) [min, max] = [max, min]
  if (max === min) max = min === 0 ? 1 : min + Math.abs(min)
  const raw = (max - min) / Math.max(1, count)
  const power = 10 ** Math.floor(Math.log10(raw))
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw) ?? 10 * power
  const ticks: Array<number> = []
  for (let v = Math.floor(min / step) * step; v <= max + step * 1e-9; v += step) ticks.push(Number(v.toPrecision(12)))
  if (ticks[ticks.length - 1] < max) ticks.push(Number((ticks[ticks.length - 1] + step).toPrecision(12)))
  return ticks
}

/** Short tick label: 1500 -> "1.5k", 2000000 -> "2M", 0.25 -> "0.25". @category axes */
export const formatTick = (value: number): string => {
  const abs = Math.abs(value)
  const trim = (n: number): string => String(Number(n.toPrecision(3)))
  if (abs >= 1e9) return `${trim(value / 1e9)}G`
  if (abs >= 1e6) return `${trim(value / 1e6)}M`
  if (abs >= 1e4) return `${trim(value / 1e3)}k`
  return trim(value)
}

/** One line of a line chart: (x, y) points in x order. @category models */
export interface LineSeries {
  readonly name: string
  readonly points: ReadonlyArray<readonly [number, number]>
}

/** Options of `lineChart`. @category models */
export interface LineChartOptions {
  readonly title: string
  readonly xLabel: string
  readonly yLabel: string
  readonly series: ReadonlyArray<LineSeries>
  readonly width?: number
  readonly height?: number
  /** Lowest y shown (default: 0, or the smallest value when it is negative). */
  readonly yMin?: number
  /** A dashed horizontal line, e.g. a target threshold. */
  readonly threshold?: { readonly y: number; readonly label: string }
}

/** One group of bars per category, one bar per series; null values leave a gap. @category models */
export interface BarChartOptions {
  readonly title: string
  readonly yLabel: string
  readonly categories: ReadonlyArray<string>
  readonly series: ReadonlyArray<{ readonly name: string; readonly values: ReadonlyArray<number | null> }>
  readonly width?: number
  readonly height?: number
}

interface Frame {
  readonly canvas: Canvas
  readonly left: number
  readonly top: number
  readonly right: number
  readonly bottom: number
  readonly yMin: number
  readonly yMax: number
  readonly y: (value: number) => number
}

const frame = (title: string, yLabel: string, width: number, height: number, yLo: number, yHi: number): Frame => {
  const canvas = new Canvas(width, height)
  const ticks = niceTicks(yLo, yHi, 6)
  const yMin = ticks[0]
  const yMax = ticks[ticks.length - 1]
  const labelWidth = Math.max(...ticks.map((t) => textWidth(formatTick(t))))
  const left = 24 + labelWidth + 8
  const top = 36
  const right = width - 16
  const bottom = height - 44
  const y = (value: number): number => bottom - ((value - yMin) / (yMax - yMin || 1)) * (bottom - top)
  canvas.text(Math.max(4, (width - textWidth(title, 2)) / 2), 8, title, INK, 2)
  for (const t of ticks) {
    const py = Math.round(y(t))
    canvas.line(left, py, right, py, GRID)
    const label = formatTick(t)
    canvas.text(left - 6 - textWidth(label), py - 3, label, INK)
  }
  canvas.text(6, (top + bottom) / 2 + textWidth(yLabel) / 2, yLabel, INK, 1, true)
  return { canvas, left, top, right, bottom, yMin, yMax, y }
}

const axes = (f: Frame): void => {
  f.canvas.line(f.left, f.top, f.left, f.bottom, AXIS)
  f.canvas.line(f.left, f.bottom, f.right, f.bottom, AXIS)
}

const legend = (f: Frame, names: ReadonlyArray<string>): void => {
  const rowHeight = GLYPH_HEIGHT + 6
  const boxWidth = Math.max(...names.map((n) => textWidth(n))) + 26
  const x = f.right - boxWidth - 4
  let y = f.top + 4
  f.canvas.fillRect(x - 4, y - 4, boxWidth + 8, names.length * rowHeight + 6, [250, 250, 250])
  names.forEach((name, i) => {
    const color = PALETTE[i % PALETTE.length]
    f.canvas.fillRect(x, y + 1, 14, 5, color)
    f.canvas.text(x + 20, y, name, INK)
    y += rowHeight
  })
}

/**
 * A line chart with one coloured line (and point markers) per series.
 *
 * @category charts
 */
export const lineChart = (options: LineChartOptions): Canvas => {
  const width = options.width ?? 760
  const height = options.height ?? 400
  const all = options.series.flatMap((s) => s.points)
  const xs = all.map((p) => p[0])
  const ys = all.map((p) => p[1])
  if (options.threshold !== undefined) ys.push(options.threshold.y)
  const yLo = options.yMin ?? Math.min(0, ...ys)
  const yHi = ys.length === 0 ? 1 : Math.max(...ys)
  const f = frame(options.title, options.yLabel, width, height, yLo, yHi)
  const xTicks = xs.length === 0 ? [0, 1] : niceTicks(Math.min(...xs), Math.max(...xs), 6)
  const xMin = xTicks[0]
  const xMax = xTicks[xTicks.length - 1]
  const x = (value: number): number => f.left + ((value - xMin) / (xMax - xMin || 1)) * (f.right - f.left)
  for (const t of xTicks) {
    const px = Math.round(x(t))
    f.canvas.line(px, f.top, px, f.bottom, GRID)
    f.canvas.line(px, f.bottom, px, f.bottom + 4, AXIS)
    const label = formatTick(t)
    f.canvas.text(px - textWidth(label) / 2, f.bottom + 8, label, INK)
  }
  f.canvas.text((f.left + f.right - textWidth(options.xLabel)) / 2, f.bottom + 24, options.xLabel, INK)
  axes(f)
  if (options.threshold !== undefined) {
    const py = f.y(options.threshold.y)
    f.canvas.line(f.left, py, f.right, py, [200, 0, 0], 1, 6)
    f.canvas.text(f.left + 6, py - 10, options.threshold.label, [200, 0, 0])
  }
  options.series.forEach((s, i) => {
    const color = PALETTE[i % PALETTE.length]
    for (let k = 1; k < s.points.length; k++) {
      f.canvas.line(x(s.points[k - 1][0]), f.y(s.points[k - 1][1]), x(s.points[k][0]), f.y(s.points[k][1]), color, 2)
    }
    if (s.points.length <= 40) {
      for (const [px, py] of s.points) f.canvas.fillRect(x(px) - 2, f.y(py) - 2, 5, 5, color)
    }
  })
  legend(f, options.series.map((s) => s.name))
  return f.canvas
}

/**
 * A grouped bar chart: categories along x, one bar per series in each group,
 * the value printed above each bar.
 *
 * @category charts
 */
export const barChart = (options: BarChartOptions): Canvas => {
  const width = options.width ?? 760
  const height = options.height ?? 400
  const values = options.series.flatMap((s) => s.values.filter((v): v is number => v !== null))
  const f = frame(
    options.title,
    options.yLabel,
    width,
    height,
    Math.min(0, ...values),
    values.length === 0 ? 1 : Math.max(...values) * 1.1
  )
  const groups = Math.max(1, options.categories.length)
  const groupWidth = (f.right - f.left) / groups
  const barWidth = Math.max(2, Math.floor((groupWidth * 0.8) / Math.max(1, options.series.length)))
  options.categories.forEach((category, g) => {
    const gx = f.left + g * groupWidth + groupWidth * 0.1
    options.series.forEach((s, i) => {
      const v = s.values[g]
      if (v === null || v === undefined) return
      const color = PALETTE[i % PALETTE.length]
      const y0 = f.y(Math.max(0, f.yMin))
      const y1 = f.y(v)
      f.canvas.fillRect(gx + i * barWidth, Math.min(y0, y1), barWidth - 1, Math.abs(y0 - y1), color)
      const label = formatTick(v)
      if (textWidth(label) <= barWidth + 8) {
        f.canvas.text(gx + i * barWidth + (barWidth - textWidth(label)) / 2, Math.min(y0, y1) - 10, label, INK)
      }
    })
    f.canvas.text(f.left + g * groupWidth + (groupWidth - textWidth(category)) / 2, f.bottom + 8, category, INK)
  })
  axes(f)
  legend(f, options.series.map((s) => s.name))
  return f.canvas
}
