/**
 * The processes a benchmark run starts: the fake upstream, the floor proxy,
 * the gateway and (optionally) Portkey, each as its own child process so its
 * CPU time and memory can be read from `/proc/<pid>` and it does not share an
 * event loop with the load generator.
 *
 * @since 0.1.0
 */
import { type ChildProcess, spawn } from "node:child_process"
import { createServer } from "node:net"
import { setTimeout as sleep } from "node:timers/promises"
import { assertLoopback } from "./Loopback.ts"

/** A child process serving HTTP on a loopback URL. @category models */
export interface Service {
  readonly name: string
  readonly url: string
  readonly pid: number
  /** The last lines the process wrote (stdout and stderr), for error messages. */
  readonly output: () => string
  /**
   * The bytes the process's JavaScript heap allocated so far, summed from V8's
   * GC trace (`allocated=` of each collection): only for a process started
   * with `--trace-gc-nvp` (see `ServiceSpec.gcTrace`), else null. It counts
   * what was allocated up to the last collection.
   */
  readonly allocatedBytes: () => number | null
  /**
   * SIGTERM, then SIGKILL after `graceMs` (default 5 s); resolves once the
   * process has exited, with how: "exited" (on its own after SIGTERM, or
   * before), or "killed".
   */
  readonly stop: (graceMs?: number) => Promise<"exited" | "killed">
}

/** How to start a service. @category models */
export interface ServiceSpec {
  readonly name: string
  readonly command: string
  readonly args: ReadonlyArray<string>
  readonly env?: Readonly<Record<string, string>>
  readonly cwd?: string
  /** How the service says it is ready: a line matching `pattern` whose first group is the URL, or a URL to poll until it answers 2xx. */
  readonly ready:
    | { readonly kind: "line"; readonly pattern: RegExp }
    | { readonly kind: "poll"; readonly url: string; readonly baseUrl: string }
  readonly timeoutMs?: number
  /** The command runs Node with `--trace-gc-nvp`: its GC lines are summed into `allocatedBytes`, not kept as output. */
  readonly gcTrace?: boolean
}

const running = new Set<ChildProcess>()

/** Kills every service still running (used on exit and on Ctrl-C). @category lifecycle */
export const killAll = (): void => {
  for (const child of running) child.kill("SIGKILL")
  running.clear()
}

/** A free TCP port on 127.0.0.1 (bound, then released). @category lifecycle */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

const poll = async (url: string, deadline: number, exited: () => boolean): Promise<void> => {
  while (Date.now() < deadline && !exited()) {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(1000) })
      await res.arrayBuffer()
      if (res.ok) return
    } catch {
      // not listening yet
    }
    await sleep(100)
  }
  throw new Error(exited() ? "the process exited" : `no 2xx answer from ${url}`)
}

/**
 * Spawns a service and waits until it is ready; throws with the process's
 * last output when it exits first or does not get ready in time.
 *
 * @category lifecycle
 */
export const startService = async (spec: ServiceSpec): Promise<Service> => {
  const child = spawn(spec.command, [...spec.args], {
    cwd: spec.cwd,
    env: { ...process.env, ...spec.env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  running.add(child)
  const lines: Array<string> = []
  let exitCode: number | null | undefined
  const exited = new Promise<void>((resolve) => {
    child.once("exit", (code) => {
      exitCode = code
      running.delete(child)
      resolve()
    })
  })
  let found: ((url: string) => void) | undefined
  let allocated = 0
  let partial = ""
  const onText = (text: string): void => {
    const all = partial + text
    const cut = all.lastIndexOf("\n")
    partial = cut === -1 ? all : all.slice(cut + 1)
    for (const line of (cut === -1 ? "" : all.slice(0, cut)).split("\n")) {
      if (line.trim() === "") continue
      if (spec.gcTrace === true && line.includes(" gc=")) {
        const match = / allocated=(\d+)/.exec(line)
        if (match !== null) allocated += Number(match[1])
        continue
      }
      lines.push(line)
      if (lines.length > 40) lines.shift()
      if (found !== undefined && spec.ready.kind === "line") {
        const match = spec.ready.pattern.exec(line)
        if (match !== null && match[1] !== undefined) found(match[1])
      }
    }
  }
  child.stdout?.setEncoding("utf8").on("data", onText)
  child.stderr?.setEncoding("utf8").on("data", onText)
  const output = (): string => lines.join("\n")
  const allocatedBytes = (): number | null => spec.gcTrace === true ? allocated : null
  const timeoutMs = spec.timeoutMs ?? 60_000
  const fail = (why: string): Error => {
    child.kill("SIGKILL")
    return new Error(
      `${spec.name} did not start (${why}). Command: ${spec.command} ${
        spec.args.join(" ")
      }\n--- its output ---\n${output()}`
    )
  }
  let url: string
  if (spec.ready.kind === "line") {
    const line = new Promise<string>((resolve) => {
      found = resolve
    })
    const result = await Promise.race([
      line,
      exited.then(() => undefined),
      sleep(timeoutMs).then(() => null)
    ])
    found = undefined
    if (typeof result !== "string") {
      throw fail(result === undefined ? `exited with code ${String(exitCode)}` : `no ready line in ${timeoutMs} ms`)
    }
    url = result
  } else {
    try {
      await poll(spec.ready.url, Date.now() + timeoutMs, () => exitCode !== undefined)
    } catch (error) {
      throw fail(error instanceof Error ? error.message : String(error))
    }
    url = spec.ready.baseUrl
  }
  assertLoopback(url, `${spec.name} URL`)
  const pid = child.pid
  if (pid === undefined) throw fail("no pid")
  return {
    name: spec.name,
    url: url.replace(/\/$/, ""),
    pid,
    output,
    allocatedBytes,
    stop: async (graceMs = 5000) => {
      if (exitCode !== undefined) return "exited"
      child.kill("SIGTERM")
      const gone = await Promise.race([exited.then(() => true), sleep(graceMs).then(() => false)])
      if (gone) return "exited"
      child.kill("SIGKILL")
      await exited
      return "killed"
    }
  }
}
