/**
 * A TCP proxy in front of PostgreSQL that misbehaves on demand, for the tests
 * of what a lost answer, an outage or a refused connection does to money:
 *
 * - `loseCommitAnswers(n)`: the next `n` COMMITs reach the server (which
 *   commits), but their answer (`CommandComplete "COMMIT"`) is dropped and the
 *   connection cut, as a TCP reset, a failover or a pooler restart does: the
 *   client cannot know whether its transaction committed;
 * - `setDown(true)`: open connections are cut and new ones are closed at once
 *   (the database is unreachable) until `setDown(false)`;
 * - `refuseStartups(message, code)`: new connections get the server's FATAL
 *   answer to their startup (`sorry, too many clients already`, 53300) without
 *   reaching the server;
 * - `swallow(true)`: every byte either way is dropped, with no error and no
 *   close, as a frozen server (SIGSTOP) or a network that black-holes packets
 *   does; new connections are accepted and swallowed too.
 *
 * The answer to a COMMIT is found on the server's side of the stream (the
 * client may send a COMMIT as a prepared statement, whose text it sends only
 * once per connection): `CommandComplete` is `'C'`, its length (11) and the
 * tag `COMMIT\0`.
 */
import { connect, createServer, type Server, type Socket } from "node:net"

export interface PgProxy {
  readonly port: number
  /** The same PostgreSQL URL, through the proxy. */
  readonly urlFor: (url: string) => string
  /** Drops the answers of the next `n` COMMITs and cuts their connections. */
  readonly loseCommitAnswers: (n: number) => void
  /** How many COMMIT answers were dropped so far. */
  readonly commitAnswersLost: () => number
  /** While down, connections are cut and refused. */
  readonly setDown: (down: boolean) => void
  /** Answers new connections' startup with this FATAL error, or (null) lets them through again. */
  readonly refuseStartups: (refusal: { readonly code: string; readonly message: string } | null) => void
  /** While swallowing, bytes either way are dropped without an error or a close. */
  readonly swallow: (swallowing: boolean) => void
  /** Connections opened through the proxy so far. */
  readonly connections: () => number
  readonly close: () => Promise<void>
}

const COMMIT_ANSWER = Buffer.concat([Buffer.from("C"), Buffer.from([0, 0, 0, 11]), Buffer.from("COMMIT\0")])
const SSL_REQUEST = 80877103

/** A FATAL `ErrorResponse` as the server sends it. */
const errorResponse = (code: string, message: string): Buffer => {
  const fields = Buffer.concat([
    Buffer.from(`SFATAL\0VFATAL\0C${code}\0M${message}\0`),
    Buffer.from([0])
  ])
  const length = Buffer.alloc(4)
  length.writeInt32BE(fields.length + 4)
  return Buffer.concat([Buffer.from("E"), length, fields])
}

/** Reads the client's SSLRequest (answered `N`) and startup message, then answers the startup with `answer`. */
const refuseStartup = (client: Socket, answer: Buffer): void => {
  let pending = Buffer.alloc(0)
  client.on("data", (chunk) => {
    pending = Buffer.concat([pending, chunk])
    while (pending.length >= 8) {
      const length = pending.readInt32BE(0)
      if (pending.length < length) return
      const code = pending.readInt32BE(4)
      pending = pending.subarray(length)
      if (code === SSL_REQUEST) {
        client.write("N")
        continue
      }
      client.end(answer)
      return
    }
  })
  client.on("error", () => {})
}

export const startPgProxy = (target: { readonly host: string; readonly port: number }): Promise<PgProxy> => {
  const open = new Set<Socket>()
  let lose = 0
  let lost = 0
  let down = false
  let refusal: Buffer | null = null
  let opened = 0
  let swallowing = false

  const server: Server = createServer((client) => {
    opened++
    if (down) return client.destroy()
    if (refusal !== null) return refuseStartup(client, refusal)
    const upstream = connect({ host: target.host, port: target.port })
    open.add(client)
    open.add(upstream)
    const cut = () => {
      client.destroy()
      upstream.destroy()
    }
    client.on("close", () => {
      open.delete(client)
      upstream.destroy()
    })
    upstream.on("close", () => {
      open.delete(upstream)
      client.destroy()
    })
    client.on("error", () => {})
    upstream.on("error", () => {})
    client.on("data", (chunk) => {
      if (!swallowing) upstream.write(chunk)
    })
    // The last bytes of the previous chunk, so an answer split over two chunks is still found.
    let tail = Buffer.alloc(0)
    upstream.on("data", (chunk: Buffer) => {
      if (swallowing) return
      if (lose > 0) {
        const seen = Buffer.concat([tail, chunk])
        if (seen.includes(COMMIT_ANSWER)) {
          lose--
          lost++
          return cut()
        }
        tail = seen.subarray(Math.max(0, seen.length - (COMMIT_ANSWER.length - 1)))
      }
      client.write(chunk)
    })
  })

  return new Promise((resolve, reject) => {
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port
      resolve({
        port,
        urlFor: (url) => {
          const parsed = new URL(url)
          parsed.hostname = "127.0.0.1"
          parsed.port = String(port)
          return parsed.toString()
        },
        loseCommitAnswers: (n) => {
          lose = n
        },
        commitAnswersLost: () => lost,
        setDown: (value) => {
          down = value
          if (down) { for (const socket of open) socket.destroy() }
        },
        refuseStartups: (value) => {
          refusal = value === null ? null : errorResponse(value.code, value.message)
        },
        swallow: (value) => {
          swallowing = value
        },
        connections: () => opened,
        close: () =>
          new Promise((done) => {
            for (const socket of open) socket.destroy()
            server.close(() => done())
          })
      })
    })
  })
}

/** The host and port of a PostgreSQL URL. */
export const targetOf = (url: string): { readonly host: string; readonly port: number } => {
  const parsed = new URL(url)
  return { host: parsed.hostname || "127.0.0.1", port: Number(parsed.port || 5432) }
}
