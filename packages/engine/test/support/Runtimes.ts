/**
 * The engine's web handler served by Bun or Deno (`test/fixtures/serve.ts`),
 * from the npm packages' binaries, for the tests that call it over HTTP.
 *
 * The binaries in `node_modules/.bin` are launchers (a shell or Node script)
 * that start the runtime as a child of their own, so a plain `kill()` of the
 * launcher left the runtime serving after the tests: each one is started in a
 * process group of its own and stopped as a group.
 */
import { spawn } from "node:child_process"
import { existsSync } from "node:fs"
import { join } from "node:path"

/** A runtime serving the web handler at `base`. */
export interface Served {
  readonly base: string
  /** Stops the launcher and the runtime it started, and waits for the launcher's exit. */
  readonly stop: () => Promise<void>
}

/** Starts `runtime` on `test/fixtures/serve.ts` with `env` added to this process's, and waits for its port. */
export const serveOn = async (runtime: "bun" | "deno", env: Record<string, string>): Promise<Served> => {
  const binary = join(import.meta.dirname, "..", "..", "node_modules", ".bin", runtime)
  if (!existsSync(binary)) throw new Error(`${binary} is missing: run pnpm install`)
  const args = runtime === "bun"
    ? ["test/fixtures/serve.ts"]
    : ["run", "--allow-net", "--allow-env", "--allow-read", "test/fixtures/serve.ts"]
  const child = spawn(binary, args, {
    cwd: join(import.meta.dirname, "..", ".."),
    env: { ...process.env, ...env, NO_COLOR: "1" },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true
  })
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(-child.pid!, "SIGTERM")
      } catch {
        // the group is already gone
      }
      await exited
    }
  }
  let errors = ""
  child.stderr!.on("data", (chunk) => errors += String(chunk))
  try {
    const base = await new Promise<string>((resolve, reject) => {
      let out = ""
      child.stdout!.on("data", (chunk) => {
        out += String(chunk)
        const port = /listening (\d+)/.exec(out)?.[1]
        if (port !== undefined) resolve(`http://127.0.0.1:${port}`)
      })
      child.once("exit", (code) => reject(new Error(`${runtime} exited with ${code}: ${errors}`)))
    })
    return { base, stop }
  } catch (error) {
    await stop()
    throw error
  }
}
