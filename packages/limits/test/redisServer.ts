/**
 * Redis for the limits tests: a client for a quick command, a wait for a
 * condition, and a private redis-server that tests stop, freeze and start
 * again mid-test.
 */
import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { createClient } from "redis"

export const clientFor = (url: string) => createClient({ url })

export const withClient = async <A>(
  url: string,
  f: (client: ReturnType<typeof clientFor>) => Promise<A>
): Promise<A> => {
  const client = clientFor(url)
  client.on("error", () => {})
  await client.connect()
  try {
    return await f(client)
  } finally {
    client.destroy()
  }
}

/** Polls `condition` every 25 ms; dies when it is not met within `timeoutMs`. */
export const waitUntil = (condition: Effect.Effect<boolean>, timeoutMs: number) =>
  Effect.gen(function*() {
    const deadline = Date.now() + timeoutMs
    while (!(yield* condition)) {
      if (Date.now() > deadline) return yield* Effect.die(new Error(`condition not met within ${timeoutMs} ms`))
      yield* Effect.sleep(25)
    }
  })

// ---------------------------------------------------------------------------
// A private redis-server for the outage tests
// ---------------------------------------------------------------------------

export const redisServer = "/usr/bin/redis-server"

export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() =>
        typeof address === "object" && address !== null ? resolve(address.port) : reject(new Error("no port"))
      )
    })
  })

const ping = async (port: number): Promise<boolean> => {
  const client = createClient({
    url: `redis://127.0.0.1:${port}`,
    socket: { reconnectStrategy: false, connectTimeout: 500 }
  })
  client.on("error", () => {})
  try {
    await client.connect()
    return (await client.ping()) === "PONG"
  } catch {
    return false
  } finally {
    if (client.isOpen) client.destroy()
  }
}

const startRedis = async (port: number, dir: string): Promise<ChildProcess> => {
  const child = spawn(redisServer, [
    "--port",
    String(port),
    "--bind",
    "127.0.0.1",
    "--save",
    "",
    "--appendonly",
    "no",
    "--dir",
    dir
  ], {
    stdio: "ignore"
  })
  const deadline = Date.now() + 10_000
  while (!(await ping(port))) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`redis-server did not start on port ${port}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return child
}

const stopRedis = (child: ChildProcess): Promise<void> =>
  new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    child.once("exit", () => resolve())
    child.kill("SIGKILL")
  })

/**
 * A private redis-server for the test's scope, with `stop` and `start` (same
 * port). It keeps no data across a restart unless `save` wrote a snapshot first.
 */
export const privateRedis = Effect.gen(function*() {
  const port = yield* Effect.promise(freePort)
  const dir = mkdtempSync(join(tmpdir(), "modelgate-redis-"))
  let child = yield* Effect.promise(() => startRedis(port, dir))
  yield* Effect.addFinalizer(() =>
    Effect.promise(() => stopRedis(child)).pipe(
      Effect.ensuring(Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
    )
  )
  const url = `redis://127.0.0.1:${port}`
  return {
    url,
    /** Writes a snapshot that the next `start` loads. */
    save: Effect.promise(() => withClient(url, (client) => client.sendCommand(["SAVE"]))),
    /** Freezes the server (SIGSTOP): it keeps the connection but answers nothing. */
    pause: Effect.sync(() => void child.kill("SIGSTOP")),
    stop: Effect.promise(() => stopRedis(child)),
    start: Effect.promise(async () => {
      child = await startRedis(port, dir)
    })
  }
})

/** Whether redis-server is installed (the private-server tests are skipped otherwise). */
export const hasRedisServer: boolean = existsSync(redisServer)

/** What the private-server tests need, for their names (they are skipped without it). */
export const needsRedisServer = `needs ${redisServer}; on Debian: apt-get install redis-server`
