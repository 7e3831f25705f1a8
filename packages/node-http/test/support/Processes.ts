/**
 * Real gateway processes for end-to-end tests: `modelgate serve` (and CLI
 * commands) spawned with Node, a free port each, waiting for `/healthz`, and
 * stopped with SIGTERM.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { join } from "node:path"
import type { ConfigFile } from "../../src/ConfigFile.ts"

const bin = join(import.meta.dirname, "..", "..", "src", "bin.ts")

/** The server secret every test process shares (nodes of one cluster need the same). */
export const SECRET = "cluster-test-secret-0123456789abcdef"

export const freePort = (): Promise<number> =>
  new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port
      server.close(() => resolve(port))
    })
  })

/** Writes `config` as JSON (a YAML subset) to `dir/name.json`. */
export const writeConfig = (dir: string, name: string, config: ConfigFile): string => {
  const file = join(dir, `${name}.json`)
  writeFileSync(file, JSON.stringify(config))
  return file
}

/** A running `modelgate` process and what it wrote to stderr so far. */
export interface GatewayProcess {
  readonly child: ChildProcess
  readonly url: string
  readonly errors: () => string
  /** Sends `signal` (SIGTERM unless given) unless the process already ended, and waits for its exit. */
  readonly stop: (signal?: NodeJS.Signals) => Promise<void>
}

const exited = (child: ChildProcess): Promise<void> =>
  new Promise((resolve) =>
    child.exitCode !== null || child.signalCode !== null ? resolve() : child.once("exit", () => resolve())
  )

/**
 * Starts `modelgate serve --config file` listening on `port` and waits until
 * `/healthz` answers. `entry` is what runs (default the sources' `src/bin.ts`;
 * the bundle's test gives `dist/modelgate.mjs`'s place).
 */
export const startGatewayProcess = async (file: string, port: number, entry: string = bin): Promise<GatewayProcess> => {
  const child = spawn(process.execPath, [entry, "serve", "--config", file], {
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, MODELGATE_SECRET: SECRET }
  })
  let errors = ""
  child.stderr!.on("data", (d) => errors += d)
  const url = `http://127.0.0.1:${port}`
  const stop = async (signal: NodeJS.Signals = "SIGTERM") => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal)
    await exited(child)
  }
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`the gateway exited with ${child.exitCode}: ${errors}`)
    try {
      if ((await fetch(`${url}/healthz`)).ok) return { child, url, errors: () => errors, stop }
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100))
  }
  await stop()
  throw new Error(`the gateway did not become healthy: ${errors}`)
}

/** Runs a `modelgate` CLI command to its end. */
export const runCli = (
  args: ReadonlyArray<string>
): Promise<{ readonly code: number | null; readonly stdout: string; readonly stderr: string }> =>
  new Promise((resolve) => {
    const child = spawn(process.execPath, [bin, ...args], { env: { ...process.env, MODELGATE_SECRET: SECRET } })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d) => stdout += d)
    child.stderr.on("data", (d) => stderr += d)
    child.on("exit", (code) => resolve({ code, stdout, stderr }))
  })
