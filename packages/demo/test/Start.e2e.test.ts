/**
 * `pnpm start` as a newcomer runs it: the launcher starts the fake upstream
 * and the gateway with the demo setup on its own database, prints an address,
 * a key and a curl line that works, and starts again on the same database.
 */
import { assert, describe, it } from "@effect/vitest"
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { freePort } from "../src/Gateway.ts"

const start = join(import.meta.dirname, "..", "src", "start.ts")

const launch = (cwd: string, port: number, options: { readonly group?: boolean } = {}) => {
  const env: Record<string, string | undefined> = { ...process.env, MODELGATE_LISTEN: `127.0.0.1:${port}` }
  for (const variable of ["MODELGATE_CONFIG", "MODELGATE_DATABASE", "MODELGATE_REDIS", "MODELGATE_DEMO_UPSTREAM"]) {
    delete env[variable]
  }
  // `group`: in a process group of its own, as a terminal runs it, so Ctrl-C can reach every process at once.
  const child: ChildProcess = spawn(process.execPath, [start], {
    cwd,
    env,
    stdio: ["ignore", "pipe", "pipe"],
    detached: options.group === true
  })
  let output = ""
  child.stdout!.on("data", (d) => output += d)
  child.stderr!.on("data", (d) => output += d)
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
  const ready = async () => {
    for (let i = 0; i < 300 && !output.includes("-d '{"); i++) {
      if (child.exitCode !== null) break
      await new Promise((r) => setTimeout(r, 100))
    }
    return output
  }
  return { child, exited, ready }
}

describe("pnpm start", () => {
  it(
    "serves the demo with its fake upstream, on its own database, printing an address, a key and a curl line that works",
    async () => {
      const dir = mkdtempSync(join(tmpdir(), "modelgate-start-"))
      const port = await freePort()
      try {
        const demo = launch(dir, port)
        try {
          const output = await demo.ready()
          assert.include(output, `modelgate listening on http://127.0.0.1:${port}`)
          assert.match(output, /API key: +sk-demo-modelgate-0+/)
          const at = output.indexOf("curl ")
          assert.isAbove(at, -1, output)
          // The two printed lines, joined as a shell joins a backslash-continued line.
          const curl = output.slice(at).split("\n").slice(0, 2).join("\n")
          const result = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
            const child = spawn("sh", ["-c", curl], { stdio: ["ignore", "pipe", "ignore"] })
            let stdout = ""
            child.stdout!.on("data", (d) => stdout += d)
            child.on("exit", (code) => resolve({ code, stdout }))
          })
          assert.strictEqual(result.code, 0)
          const completion = JSON.parse(result.stdout) as { choices: Array<{ message: { content: string } }> }
          assert.match(completion.choices[0]!.message.content, /fake-upstream/)
          assert.isTrue(existsSync(join(dir, "data", "demo", "modelgate.db")), "the demo's own database")
          assert.isTrue(existsSync(join(dir, "data", "demo", "created-by-the-modelgate-demo")), "marked as the demo's")
          assert.isFalse(existsSync(join(dir, "data", "modelgate.db")), "not the default database of a configuration")
        } finally {
          demo.child.kill("SIGINT")
          assert.strictEqual(await demo.exited, 0, "Ctrl-C stops the gateway and the upstream, cleanly")
        }
        // Started again, it finds its own database and serves it.
        mkdirSync(join(dir, "again"), { recursive: true })
        const again = launch(dir, port)
        try {
          assert.include(await again.ready(), `modelgate listening on http://127.0.0.1:${port}`)
        } finally {
          again.child.kill("SIGTERM")
          await again.exited
        }
        // Ctrl-C in a terminal signals the launcher and the gateway together: still a clean exit (0), so
        // `pnpm start` ends without pnpm's "ELIFECYCLE Command failed".
        const terminal = launch(dir, port, { group: true })
        assert.include(await terminal.ready(), `modelgate listening on http://127.0.0.1:${port}`)
        process.kill(-terminal.child.pid!, "SIGINT")
        assert.strictEqual(await terminal.exited, 0, "Ctrl-C to the whole process group exits cleanly")
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    },
    90_000
  )

  it(
    "stops on Ctrl-C without pnpm's alarming ELIFECYCLE: the start script's shell exits as cleanly as the launcher",
    async () => {
      // The root `start` script as pnpm runs it (through `sh -c`), with the build left out.
      const root = join(import.meta.dirname, "..", "..", "..")
      const script = (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { scripts: { start: string } })
        .scripts.start.replace("pnpm build", "true")
      const dir = mkdtempSync(join(tmpdir(), "modelgate-start-sigint-"))
      const port = await freePort()
      const env: Record<string, string | undefined> = { ...process.env, MODELGATE_LISTEN: `127.0.0.1:${port}` }
      for (const variable of ["MODELGATE_CONFIG", "MODELGATE_DATABASE", "MODELGATE_REDIS", "MODELGATE_DEMO_UPSTREAM"]) {
        delete env[variable]
      }
      try {
        const shell = spawn("sh", ["-c", script.replace("packages/demo/src/start.ts", start)], {
          cwd: dir,
          env,
          stdio: ["ignore", "pipe", "pipe"],
          detached: true
        })
        let output = ""
        shell.stdout!.on("data", (d) => output += d)
        shell.stderr!.on("data", (d) => output += d)
        const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
          shell.on("exit", (code, signal) => resolve({ code, signal }))
        )
        for (let i = 0; i < 300 && !output.includes("-d '{"); i++) await new Promise((r) => setTimeout(r, 100))
        assert.include(output, `modelgate listening on http://127.0.0.1:${port}`)
        // A terminal's Ctrl-C: SIGINT to every process of the group (the shell, the launcher, the gateway).
        process.kill(-shell.pid!, "SIGINT")
        // pnpm says "ELIFECYCLE Command failed" when the shell dies of the signal or exits non-zero.
        assert.deepStrictEqual(await exited, { code: 0, signal: null })
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    },
    90_000
  )
})
