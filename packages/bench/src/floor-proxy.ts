/**
 * The runtime's floor: the least a Node HTTP proxy can do per call. A bare
 * `node:http` server that reads the request body, forwards it with undici
 * (keep-alive pool) to one upstream, and pipes the answer back: no auth, no
 * billing, no parsing. Measured in the same run as the gateway, it tells how
 * much of the gateway's cost is Node itself ("CPU per call within 1.25x of
 * the floor").
 *
 * Run as its own process:
 *
 *   node packages/bench/src/floor-proxy.ts --upstream http://127.0.0.1:9001 [--listen 127.0.0.1:0]
 *
 * It prints `floor-proxy listening on http://127.0.0.1:PORT` when ready.
 *
 * @since 0.1.0
 */
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { parseArgs } from "node:util"
import { Pool } from "undici"
import { assertLoopback } from "./Loopback.ts"

/** A running floor proxy. @category models */
export interface FloorProxy {
  /** e.g. "http://127.0.0.1:34567". */
  readonly url: string
  readonly close: () => Promise<void>
}

/** Options of `startFloorProxy`. @category models */
export interface FloorProxyOptions {
  /** Upstream origin (loopback only), e.g. "http://127.0.0.1:9001". */
  readonly upstream: string
  readonly host?: string
  /** 0 (default) picks a free port. */
  readonly port?: number
  /** Upstream keep-alive connections (default 1024). */
  readonly connections?: number
}

const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "transfer-encoding",
  "host",
  "upgrade",
  "proxy-connection",
  "te",
  "trailer"
])

/**
 * Starts the floor proxy in this process.
 *
 * @category server
 */
export const startFloorProxy = (options: FloorProxyOptions): Promise<FloorProxy> => {
  const origin = assertLoopback(options.upstream, "floor-proxy: --upstream").origin
  const pool = new Pool(origin, {
    connections: options.connections ?? 1024,
    pipelining: 1,
    keepAliveTimeout: 60_000,
    headersTimeout: 0,
    bodyTimeout: 0
  })
  const server = http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      const headers: Record<string, string | Array<string>> = {}
      for (const name in req.headers) {
        const value = req.headers[name]
        if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value
      }
      pool
        .request({
          path: req.url ?? "/",
          method: (req.method ?? "GET") as "GET",
          headers,
          body: chunks.length === 0 ? null : chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)
        })
        .then(
          (up) => {
            const out: Record<string, string | Array<string>> = {}
            for (const name in up.headers) {
              const value = up.headers[name]
              if (value !== undefined && !HOP_BY_HOP.has(name)) out[name] = value
            }
            res.writeHead(up.statusCode, out)
            const resume = (): void => void up.body.resume()
            up.body.on("data", (chunk: Buffer) => {
              if (!res.write(chunk)) {
                up.body.pause()
                res.once("drain", resume)
              }
            })
            up.body.once("end", () => res.end())
            up.body.once("error", () => res.destroy())
            res.once("close", () => {
              if (!up.body.readableEnded) up.body.destroy()
            })
          },
          (error: unknown) => {
            if (res.headersSent) return void res.destroy()
            res.writeHead(502, { "content-type": "application/json" })
            res.end(
              JSON.stringify({
                error: { message: `floor-proxy: upstream failed: ${String(error)}`, type: "upstream_error" }
              })
            )
          }
        )
    })
  })
  server.keepAliveTimeout = 65_000
  server.headersTimeout = 66_000
  server.requestTimeout = 0
  return new Promise((resolve, reject) => {
    server.once("error", reject)
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => {
      server.off("error", reject)
      const { port } = server.address() as AddressInfo
      resolve({
        url: `http://${options.host ?? "127.0.0.1"}:${port}`,
        close: async () => {
          server.closeAllConnections()
          await new Promise<void>((done) => server.close(() => done()))
          await pool.close()
        }
      })
    })
  })
}

const USAGE = "usage: floor-proxy --upstream http://127.0.0.1:PORT [--listen 127.0.0.1:0]"

/** Command line entry (see the module comment). @category cli */
export const main = async (argv: ReadonlyArray<string>): Promise<void> => {
  const { values } = parseArgs({
    args: [...argv],
    options: { upstream: { type: "string" }, listen: { type: "string", default: "127.0.0.1:0" } },
    strict: true
  })
  if (values.upstream === undefined) throw new Error("--upstream is required")
  const match = /^([^:]+):(\d+)$/.exec(values.listen)
  if (match === null) throw new Error(`--listen must be HOST:PORT, got "${values.listen}"`)
  assertLoopback(`http://${match[1]}:${match[2]}/`, "floor-proxy: --listen")
  const proxy = await startFloorProxy({ upstream: values.upstream, host: match[1], port: Number(match[2]) })
  console.log(`floor-proxy listening on ${proxy.url}`)
  const stop = (): void => {
    void proxy.close().then(() => process.exit(0))
  }
  process.once("SIGINT", stop)
  process.once("SIGTERM", stop)
}

if (import.meta.main) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : String(error))
    console.error(USAGE)
    process.exit(1)
  })
}
