/**
 * A process's own accounting, read from Linux `/proc`: CPU time (utime +
 * stime of all its threads, from `/proc/<pid>/stat`) and memory (VmRSS and
 * VmHWM from `/proc/<pid>/status`), plus a sampler that records RSS over time.
 *
 * @since 0.1.0
 */
import { execFileSync } from "node:child_process"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { performance } from "node:perf_hooks"
import type { Sample } from "./Stats.ts"

let ticks: number | undefined

/** Clock ticks per second (`getconf CLK_TCK`, 100 when it cannot be read). @category cpu */
export const clockTicks = (): number => {
  if (ticks === undefined) {
    try {
      const n = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim())
      ticks = Number.isInteger(n) && n > 0 ? n : 100
    } catch {
      ticks = 100
    }
  }
  return ticks
}

/**
 * Parses the text of `/proc/<pid>/stat` into user + system CPU milliseconds.
 * The command name (field 2) may hold spaces and parentheses, so fields are
 * counted from the last ")".
 *
 * @category cpu
 */
export const parseStatCpuMs = (text: string, ticksPerSecond: number): number => {
  const close = text.lastIndexOf(")")
  if (close < 0) throw new Error(`/proc stat: no ")" after the command name in ${JSON.stringify(text.slice(0, 80))}`)
  const fields = text.slice(close + 2).split(" ")
  // fields[0] is field 3 (state); utime is field 14, stime field 15.
  const utime = Number(fields[11])
  const stime = Number(fields[12])
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) {
    throw new Error(`/proc stat: utime/stime (fields 14/15) are not numbers in ${JSON.stringify(text.slice(0, 120))}`)
  }
  return ((utime + stime) * 1000) / ticksPerSecond
}

/** CPU time used so far by process `pid` (all threads), ms; 10 ms resolution on most kernels. @category cpu */
export const cpuTimeMs = (pid: number): number =>
  parseStatCpuMs(readFileSync(`/proc/${pid}/stat`, "utf8"), clockTicks())

/** Resident memory of a process, bytes. @category memory */
export interface Memory {
  /** VmRSS: resident set size now. */
  readonly rssBytes: number
  /** VmHWM: the highest RSS since the process started. */
  readonly hwmBytes: number
}

/** Parses `/proc/<pid>/status` text for VmRSS and VmHWM. @category memory */
export const parseStatusMemory = (text: string): Memory => {
  const kb = (name: string): number => {
    const match = new RegExp(`^${name}:\\s+(\\d+) kB$`, "m").exec(text)
    if (match === null) throw new Error(`/proc status: no "${name}:" line`)
    return Number(match[1]) * 1024
  }
  return { rssBytes: kb("VmRSS"), hwmBytes: kb("VmHWM") }
}

/** Current VmRSS/VmHWM of process `pid`. @category memory */
export const memory = (pid: number): Memory => parseStatusMemory(readFileSync(`/proc/${pid}/status`, "utf8"))

/**
 * Resets the process's VmHWM to its current RSS (writes "5" to
 * `/proc/<pid>/clear_refs`, Linux 4.0+), so a later `memory(pid).hwmBytes`
 * is the exact peak since the reset, spikes between samples included.
 * Returns false when the kernel or permissions do not allow it (then only
 * sampled peaks are available).
 *
 * @category memory
 */
export const resetPeak = (pid: number): boolean => {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, "5")
    return true
  } catch {
    return false
  }
}

/** True while process `pid` exists (has a `/proc` entry). @category lifecycle */
export const alive = (pid: number): boolean => existsSync(`/proc/${pid}`)

/** A running RSS sampler; `stop` ends it and returns the samples (bytes, ms since start). @category memory */
export interface RssSampler {
  readonly samples: ReadonlyArray<Sample>
  readonly stop: () => ReadonlyArray<Sample>
}

/**
 * Samples the RSS of `pid` every `intervalMs` until stopped. A process that
 * has gone away ends the sampling quietly (its last samples stay).
 *
 * @category memory
 */
export const sampleRss = (pid: number, intervalMs: number): RssSampler => {
  if (!(intervalMs > 0)) throw new RangeError(`sampleRss: intervalMs must be > 0, got ${intervalMs}`)
  const samples: Array<Sample> = []
  const start = performance.now()
  const take = (): boolean => {
    try {
      samples.push({ tMs: performance.now() - start, value: memory(pid).rssBytes })
      return true
    } catch {
      return false
    }
  }
  take()
  const timer = setInterval(() => {
    if (!take()) clearInterval(timer)
  }, intervalMs)
  return {
    samples,
    stop: () => {
      clearInterval(timer)
      take()
      return samples
    }
  }
}
