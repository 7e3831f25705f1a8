/**
 * A private redis-server for tests that stop and start Redis mid-test: a free
 * port, started and stopped (SIGKILL) on demand, removed with the scope.
 */
import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync } from "node:fs"
import { Socket } from "node:net"
import { freePort } from "./Processes.ts"

export const redisServer = "/usr/bin/redis-server"

/** Whether redis-server is installed (tests that need a private one are skipped otherwise). */
export const hasRedisServer: boolean = existsSync(redisServer)

/** What the tests on a private redis-server need, for their names (they are skipped without it). */
export const needsRedisServer = `needs ${redisServer}; on Debian: apt-get install redis-server`

/** Whether something answers PONG on the port. */
const ping = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = new Socket()
    const done = (ok: boolean) => {
      socket.destroy()
      resolve(ok)
    }
    socket.setTimeout(500, () => done(false))
    socket.once("error", () => done(false))
    socket.connect(port, "127.0.0.1", () => socket.write("PING\r\n"))
    socket.once("data", (data) => done(data.toString().startsWith("+PONG")))
  })

export const startRedis = async (port: number): Promise<ChildProcess> => {
  const child = spawn(
    redisServer,
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
    {
      stdio: "ignore"
    }
  )
  const deadline = Date.now() + 10_000
  while (!(await ping(port))) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`redis-server did not start on port ${port}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return child
}

export const stopRedis = (child: ChildProcess): Promise<void> =>
  new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    child.once("exit", () => resolve())
    child.kill("SIGKILL")
  })

/** A private redis-server for the test's scope, with `stop` and `start` (same port). */
export const privateRedis = Effect.gen(function*() {
  const port = yield* Effect.promise(freePort)
  let child = yield* Effect.promise(() => startRedis(port))
  yield* Effect.addFinalizer(() => Effect.promise(() => stopRedis(child)))
  return {
    url: `redis://127.0.0.1:${port}`,
    stop: Effect.promise(() => stopRedis(child)),
    start: Effect.promise(async () => {
      child = await startRedis(port)
    })
  }
})
