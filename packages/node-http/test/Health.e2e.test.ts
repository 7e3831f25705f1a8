/**
 * `/readyz` follows the database: the gateway reaches PostgreSQL through a TCP
 * proxy that the test can cut, so the database really becomes unreachable
 * (503) and reachable again (200), while `/healthz` stays 200 throughout.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { connect, createServer, type Server, type Socket } from "node:net"
import { freshPostgres, postgresUrl } from "./support/Databases.ts"
import { startGateway, type TestGateway } from "./support/Gateway.ts"

/** A TCP proxy to `target` that can be cut (refusing and dropping every connection) and restored. */
const tcpProxy = async (target: { readonly host: string; readonly port: number }) => {
  const sockets = new Set<Socket>()
  let server: Server | undefined
  let port = 0
  const open = () =>
    new Promise<void>((resolve) => {
      server = createServer((client) => {
        const upstream = connect(target.port, target.host)
        for (const socket of [client, upstream]) {
          sockets.add(socket)
          socket.on("close", () => sockets.delete(socket))
          socket.on("error", () => socket.destroy())
        }
        client.pipe(upstream).pipe(client)
      })
      server.listen(port, "127.0.0.1", () => {
        port = (server!.address() as { port: number }).port
        resolve()
      })
    })
  await open()
  return {
    port: () => port,
    cut: () =>
      new Promise<void>((resolve) => {
        server!.close(() => resolve())
        for (const socket of sockets) socket.destroy()
      }),
    restore: open
  }
}

const readiness = async (url: string) => {
  const response = await fetch(`${url}/readyz`)
  return { status: response.status, body: await response.json() as Record<string, unknown> }
}

/** Polls `/readyz` until it answers `status` (the pool notices a dead or revived connection on its next use). */
const waitReadiness = async (url: string, status: number) => {
  let last = await readiness(url)
  for (let i = 0; i < 40 && last.status !== status; i++) {
    await new Promise((r) => setTimeout(r, 250))
    last = await readiness(url)
  }
  return last
}

describe.skipIf(postgresUrl === undefined)("readiness on PostgreSQL (set MODELGATE_TEST_POSTGRES to run)", () => {
  let gateway: TestGateway
  let proxy: Awaited<ReturnType<typeof tcpProxy>>
  let drop: () => Promise<void>

  beforeAll(async () => {
    const db = await freshPostgres(postgresUrl!)
    drop = db.drop
    const url = new URL(db.url)
    proxy = await tcpProxy({ host: url.hostname, port: Number(url.port || 5432) })
    url.host = `127.0.0.1:${proxy.port()}`
    gateway = await startGateway(undefined, url.toString())
  })
  afterAll(async () => {
    await gateway?.close()
    await drop?.()
  })

  it("answers 503 while the database is unreachable and 200 again once it is back; /healthz stays 200", async () => {
    assert.deepStrictEqual(await readiness(gateway.url), { status: 200, body: { status: "ready" } })

    await proxy.cut()
    const down = await waitReadiness(gateway.url, 503)
    assert.deepStrictEqual(down, {
      status: 503,
      body: { status: "not ready", reason: "the database is not reachable" }
    })
    assert.strictEqual((await fetch(`${gateway.url}/healthz`)).status, 200)

    await proxy.restore()
    assert.deepStrictEqual(await waitReadiness(gateway.url, 200), { status: 200, body: { status: "ready" } })
  })
})
