/**
 * Summarises V8 CPU profiles (`node --cpu-prof` writes `.cpuprofile` JSON):
 * the functions with the most self time, with their package, file and line,
 * and the share of time by package or kind (effect, undici, node internals,
 * each modelgate package, other npm packages, V8 builtins, GC, idle).
 *
 * Self time is taken from the samples: sample `i` lasts until the next
 * sample (`timeDeltas[i + 1]`), the last one until the profile's `endTime`,
 * which is how Chrome DevTools attributes it. A function that appears at
 * several places in the call tree (one node per call path) is one row.
 *
 * @since 0.1.0
 */
import { readdirSync, readFileSync } from "node:fs"
import { join, relative } from "node:path"
import { fileURLToPath } from "node:url"

/** A profile's call-site. @category models */
export interface CallFrame {
  readonly functionName: string
  readonly url: string
  /** 0-based. */
  readonly lineNumber: number
  readonly columnNumber: number
}

/** One node of a profile's call tree. @category models */
export interface ProfileNode {
  readonly id: number
  readonly callFrame: CallFrame
  readonly children?: ReadonlyArray<number>
}

/** The parts of a `.cpuprofile` the summary uses. @category models */
export interface CpuProfile {
  readonly nodes: ReadonlyArray<ProfileNode>
  /** µs. */
  readonly startTime: number
  /** µs. */
  readonly endTime: number
  /** Node id of each sample. */
  readonly samples: ReadonlyArray<number>
  /** µs between consecutive samples (the first from `startTime`). */
  readonly timeDeltas: ReadonlyArray<number>
}

const fail = (source: string, what: string): never => {
  throw new Error(`${source}: not a V8 CPU profile: ${what}`)
}

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/**
 * Parses `.cpuprofile` text; throws naming the file (`source`) and the field
 * that is missing or wrong.
 *
 * @category parse
 */
export const parseCpuProfile = (text: string, source: string): CpuProfile => {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    return fail(source, `invalid JSON (${error instanceof Error ? error.message : String(error)})`)
  }
  if (!isObject(json)) return fail(source, "the top level is not an object")
  const { nodes, startTime, endTime, samples, timeDeltas } = json
  if (!Array.isArray(nodes) || nodes.length === 0) return fail(source, "\"nodes\" is not a non-empty array")
  if (typeof startTime !== "number" || typeof endTime !== "number") {
    return fail(source, "\"startTime\"/\"endTime\" are not numbers")
  }
  if (!Array.isArray(samples) || !Array.isArray(timeDeltas)) {
    return fail(source, "\"samples\"/\"timeDeltas\" are not arrays")
  }
  if (samples.length !== timeDeltas.length) {
    return fail(source, `${samples.length} samples but ${timeDeltas.length} timeDeltas`)
  }
  const ids = new Set<number>()
  nodes.forEach((n: unknown, i) => {
    if (!isObject(n) || typeof n.id !== "number" || !isObject(n.callFrame)) {
      return fail(source, `nodes[${i}] has no numeric "id" and "callFrame"`)
    }
    const f = n.callFrame
    if (typeof f.functionName !== "string" || typeof f.url !== "string" || typeof f.lineNumber !== "number") {
      return fail(source, `nodes[${i}].callFrame needs "functionName", "url" and "lineNumber"`)
    }
    ids.add(n.id)
  })
  samples.forEach((id: unknown, i) => {
    if (typeof id !== "number" || !ids.has(id)) fail(source, `samples[${i}] (${String(id)}) is not a node id`)
  })
  timeDeltas.forEach((d: unknown, i) => {
    if (typeof d !== "number" || !Number.isFinite(d)) fail(source, `timeDeltas[${i}] is not a number`)
  })
  return json as unknown as CpuProfile
}

/** A span of a profile's clock (µs of CLOCK_MONOTONIC, as `process.hrtime.bigint() / 1000n` reads it on Linux). @category models */
export interface Window {
  readonly startUs: number
  readonly endUs: number
}

/** Options of `summarise`. @category models */
export interface SummaryOptions {
  /** Rows in the top-functions table (default 25). */
  readonly top?: number
  /** Repository root: files under it are shown relative to it. */
  readonly root?: string
  /**
   * Count only the samples inside this span (e.g. the measured scenarios,
   * leaving out start-up and shutdown). V8 stamps samples with the same
   * monotonic clock as `process.hrtime`, so another process can name the
   * span. When no sample falls inside it, the whole profile is used and
   * the summary says so (`window` null).
   */
  readonly window?: Window
}

/** Pseudo-frames V8 puts in every profile. @category constants */
export const SPECIAL_CATEGORIES = {
  "(idle)": "idle",
  "(garbage collector)": "GC",
  "(program)": "V8 (program)",
  "(root)": "V8 (program)"
} as const

/** Frames without a script: V8 builtins and Node's C++ bindings (e.g. `writev`). @category constants */
export const NATIVE = "native (V8 builtins, Node bindings)"

const filePath = (url: string): string => {
  if (url.startsWith("file://")) {
    try {
      return fileURLToPath(url)
    } catch {
      return url
    }
  }
  return url
}

/**
 * The category a frame's self time counts towards: "idle", "GC",
 * "V8 (program)", `NATIVE` (no script), "undici" (npm or Node's bundled
 * copy), "node internals", "effect" (effect and @effect/*), "@modelgate/<package>"
 * (a `packages/<name>/` directory outside node_modules), another npm
 * package's name, or "other".
 *
 * @category summary
 */
export const categorize = (frame: Pick<CallFrame, "functionName" | "url">): string => {
  const special = SPECIAL_CATEGORIES[frame.functionName as keyof typeof SPECIAL_CATEGORIES]
  if (frame.url === "" && special !== undefined) return special
  if (frame.url === "") return NATIVE
  const url = frame.url
  if (url.startsWith("node:internal/deps/undici") || /\/node_modules\/undici\//.test(url)) return "undici"
  if (url.startsWith("node:")) return "node internals"
  const path = filePath(url)
  const at = path.lastIndexOf("/node_modules/")
  if (at >= 0) {
    const rest = path.slice(at + "/node_modules/".length).split("/")
    const name = rest[0].startsWith("@") ? `${rest[0]}/${rest[1] ?? ""}` : rest[0]
    return name === "effect" || name.startsWith("@effect/") ? "effect" : name
  }
  const pkg = /\/packages\/([^/]+)\/(?:src|dist)\//.exec(path)
  if (pkg !== null) return `@modelgate/${pkg[1]}`
  return "other"
}

/** A frame's file for display: relative to the root, or from `node_modules/` on. */
const displayFile = (url: string, root: string | undefined): string => {
  if (url === "") return ""
  if (url.startsWith("node:")) return url
  const path = filePath(url)
  const at = path.lastIndexOf("/node_modules/")
  if (at >= 0) return path.slice(at + "/node_modules/".length)
  if (root !== undefined && path.startsWith(root)) return relative(root, path)
  return path
}

/** One function's self time. @category models */
export interface FunctionRow {
  readonly functionName: string
  readonly category: string
  /** File relative to the repository (or from `node_modules/` on, or a `node:` URL); "" for V8's own frames. */
  readonly file: string
  /** 1-based; 0 when unknown. */
  readonly line: number
  readonly selfMs: number
  /** Share of the profiled time that was not idle, %. */
  readonly busyShare: number
}

/** One category's self time. @category models */
export interface CategoryRow {
  readonly category: string
  readonly selfMs: number
  /** Of all profiled time, %. */
  readonly share: number
  /** Of the time that was not idle, %; null for "idle" itself. */
  readonly busyShare: number | null
}

/** What `summarise` returns. @category models */
export interface ProfileSummary {
  readonly profiles: number
  /** The span the samples were taken from, or null for whole profiles. */
  readonly window: Window | null
  /** Profiled time left out because it was outside the window, ms. */
  readonly excludedMs: number
  readonly samples: number
  readonly totalMs: number
  readonly idleMs: number
  readonly busyMs: number
  readonly functions: ReadonlyArray<FunctionRow>
  readonly categories: ReadonlyArray<CategoryRow>
}

const round = (n: number, digits = 1): number => Math.round(n * 10 ** digits) / 10 ** digits

/**
 * Self time by function and by category over one or more profiles (several
 * files, e.g. one per cluster worker, are added up).
 *
 * @category summary
 */
export const summarise = (profiles: ReadonlyArray<CpuProfile>, options: SummaryOptions = {}): ProfileSummary => {
  const top = options.top ?? 25
  const byFunction = new Map<string, { frame: CallFrame; category: string; selfUs: number }>()
  const byCategory = new Map<string, number>()
  let totalUs = 0
  let excludedUs = 0
  let samples = 0
  const window = options.window
  const inside = window === undefined
    ? () => true
    : (t: number) => t >= window.startUs && t <= window.endUs
  for (const profile of profiles) {
    const nodes = new Map<number, ProfileNode>()
    for (const n of profile.nodes) nodes.set(n.id, n)
    const self = new Map<number, number>()
    let t = profile.startTime
    const times = profile.timeDeltas.map((d) => (t += d))
    for (let i = 0; i < profile.samples.length; i++) {
      const next = i + 1 < times.length ? times[i + 1] : profile.endTime
      const dt = Math.max(0, next - times[i])
      if (!inside(times[i])) {
        excludedUs += dt
        continue
      }
      const id = profile.samples[i]
      self.set(id, (self.get(id) ?? 0) + dt)
      totalUs += dt
      samples++
    }
    for (const [id, us] of self) {
      const frame = (nodes.get(id) as ProfileNode).callFrame
      const category = categorize(frame)
      byCategory.set(category, (byCategory.get(category) ?? 0) + us)
      const key = `${frame.functionName}\u0000${frame.url}\u0000${frame.lineNumber}\u0000${frame.columnNumber}`
      const row = byFunction.get(key)
      if (row === undefined) byFunction.set(key, { frame, category, selfUs: us })
      else row.selfUs += us
    }
  }
  if (window !== undefined && samples === 0) {
    const { window: _, ...whole } = options
    return summarise(profiles, whole)
  }
  const idleUs = byCategory.get("idle") ?? 0
  const busyUs = totalUs - idleUs
  const busyShare = (us: number): number => (busyUs > 0 ? round((us / busyUs) * 100, 2) : 0)
  const functions = [...byFunction.values()]
    .filter((r) => r.category !== "idle")
    .sort((a, b) => b.selfUs - a.selfUs)
    .slice(0, top)
    .map((r): FunctionRow => ({
      functionName: r.frame.functionName === "" ? "(anonymous)" : r.frame.functionName,
      category: r.category,
      file: displayFile(r.frame.url, options.root),
      line: r.frame.url === "" ? 0 : r.frame.lineNumber + 1,
      selfMs: round(r.selfUs / 1000),
      busyShare: busyShare(r.selfUs)
    }))
  const categories = [...byCategory.entries()]
    .sort((a, b) => b[1] - a[1])
    .map(([category, us]): CategoryRow => ({
      category,
      selfMs: round(us / 1000),
      share: totalUs > 0 ? round((us / totalUs) * 100, 2) : 0,
      busyShare: category === "idle" ? null : busyShare(us)
    }))
  return {
    profiles: profiles.length,
    window: window ?? null,
    excludedMs: round(excludedUs / 1000),
    samples,
    totalMs: round(totalUs / 1000),
    idleMs: round(idleUs / 1000),
    busyMs: round(busyUs / 1000),
    functions,
    categories
  }
}

/**
 * Reads and summarises every `.cpuprofile` in `dir`; null when there is none.
 *
 * @category summary
 */
export const summariseDir = (dir: string, options: SummaryOptions = {}): ProfileSummary | null => {
  const files = readdirSync(dir).filter((f) => f.endsWith(".cpuprofile")).sort()
  if (files.length === 0) return null
  return summarise(files.map((f) => parseCpuProfile(readFileSync(join(dir, f), "utf8"), join(dir, f))), options)
}

const ms = (n: number): string => (n >= 1000 ? `${(n / 1000).toFixed(2)} s` : `${n.toFixed(1)} ms`)

/**
 * The summary as Markdown: the time by category, then the top functions.
 *
 * @category summary
 */
export const profileMarkdown = (s: ProfileSummary): Array<string> => [
  `${s.profiles} profile${s.profiles === 1 ? "" : "s"}, ${s.samples} samples over ${ms(s.totalMs)}, of which ${
    ms(s.busyMs)
  } busy (not idle)${
    s.window === null
      ? ""
      : `; ${ms(s.excludedMs)} before and after the measured scenarios (start-up, shutdown) left out`
  }.`,
  "",
  "| where | self time | of busy time | of all time |",
  "|---|---:|---:|---:|",
  ...s.categories.map((c) =>
    `| ${c.category} | ${ms(c.selfMs)} | ${c.busyShare === null ? "" : `${c.busyShare.toFixed(1)} %`} | ${
      c.share.toFixed(1)
    } % |`
  ),
  "",
  `Top ${s.functions.length} functions by self time:`,
  "",
  "| # | function | where | file:line | self time | of busy time |",
  "|---:|---|---|---|---:|---:|",
  ...s.functions.map((f, i) =>
    `| ${i + 1} | \`${f.functionName.replaceAll("|", "\\|")}\` | ${f.category} | ${
      f.file === "" ? "" : `\`${f.file}:${f.line}\``
    } | ${ms(f.selfMs)} | ${f.busyShare.toFixed(1)} % |`
  )
]
