/**
 * The engine's transport on Node (Undici) under the engine's upstream
 * helpers: error bodies that really stop at their limit, answers larger than
 * the gateway reads, and the deadlines the connection pool keeps (first byte,
 * idle, total) against a local server that stalls.
 */
import { assert, describe, it } from "@effect/vitest"
import { Domain } from "@modelgate/core"
import * as Dialects from "@modelgate/engine/call/Dialects"
import * as Upstream from "@modelgate/engine/wire/Upstream"
import { Effect, Exit, Fiber } from "effect"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import * as UndiciTransport from "../src/UndiciTransport.ts"

const channel = (over: Partial<Domain.Channel> = {}): Domain.Channel => ({
  id: "c",
  name: "c",
  type: "openai",
  baseUrl: "https://up.test/v1/",
  apiKeys: ["k"],
  models: ["m"],
  modelMap: {},
  groups: ["default"],
  priority: 0,
  weight: 1,
  enabled: true,
  ...Domain.channelDefaults,
  ...over
})

/**
 * A local server: `/whole` answers `{"id":1}`; `/stall` sends its headers and
 * part of a body, then nothing more; `/endless` sends 16 KB chunks until the
 * reader goes away (`endlessClosed`); `/headers-only` sends a stream's
 * headers and no body (`headersOnlyClosed` counts the readers that went
 * away); `/no-headers` never answers.
 */
const stallingServer = Effect.acquireRelease(
  Effect.callback<{
    readonly url: string
    readonly server: Server
    readonly endlessClosed: Promise<void>
    readonly headersOnlyClosed: () => number
  }>((resume) => {
    let closed: () => void = () => {}
    const endlessClosed = new Promise<void>((resolve) => closed = resolve)
    let headersOnlyClosed = 0
    const server = createServer((req, res) => {
      if (req.url === "/headers-only") {
        res.writeHead(200, { "content-type": "text/event-stream" })
        res.flushHeaders()
        res.on("close", () => headersOnlyClosed++)
      } else if (req.url === "/endless") {
        res.writeHead(500, { "content-type": "text/plain" })
        const kb = Buffer.alloc(16 * 1024, 120)
        const more = () => {
          while (!res.destroyed && res.write(kb));
        }
        res.on("drain", more)
        res.on("close", closed)
        more()
      } else if (req.url === "/whole") {
        res.writeHead(200, { "content-type": "application/json" })
        res.end("{\"id\":1}")
      } else if (req.url === "/stall") {
        res.writeHead(200, { "content-type": "application/json" })
        res.write("{\"id\":")
      }
    })
    server.listen(0, "127.0.0.1", () => {
      const address = server.address() as AddressInfo
      resume(
        Effect.succeed({
          url: `http://127.0.0.1:${address.port}`,
          server,
          endlessClosed,
          headersOnlyClosed: () => headersOnlyClosed
        })
      )
    })
  }),
  ({ server }) =>
    Effect.callback<void>((resume) => {
      server.closeAllConnections()
      server.close(() => resume(Effect.void))
    })
)

/** Polls `check` every 10 ms until it holds (the test's own timeout bounds the wait). */
const waitFor = (check: () => boolean): Effect.Effect<void> =>
  Effect.suspend(() => check() ? Effect.void : Effect.andThen(Effect.sleep(10), waitFor(check)))

const now = () => Upstream.deadlines(channel(), Date.now(), Date.now())

describe("UndiciTransport", () => {
  it.live("reads at most the limit of an error body and never the rest; one that stalls ends after idle_ms with what was read", () =>
    Effect.gen(function*() {
      const server = yield* stallingServer
      const c = channel({ baseUrl: server.url, timeouts: { ...Domain.defaultTimeouts, idleMs: 300 } })
      // An endless body: reading it all would never finish.
      const endless = yield* Upstream.send(
        c,
        `${server.url}/endless`,
        {},
        "{}",
        Upstream.deadlines(c, Date.now(), Date.now())
      )
      const text = yield* endless.body.prefix(40 * 1024)
      assert.strictEqual(text.length, 40 * 1024)
      yield* Effect.promise(() => server.endlessClosed)
      const stalled = yield* Upstream.send(
        c,
        `${server.url}/stall`,
        {},
        "{}",
        Upstream.deadlines(c, Date.now(), Date.now())
      )
      assert.strictEqual(yield* Upstream.errorBody(stalled), "{\"id\":")
    }).pipe(Effect.provide(UndiciTransport.layer)))

  // The idle, first-byte and total deadlines are kept by the connection pool (Undici's own timers), so
  // they are tested against a real local server that answers, then stalls.
  it.live("a non-stream body that stalls after its headers fails after idle_ms; one within it is read whole", () =>
    Effect.gen(function*() {
      const server = yield* stallingServer
      const c = channel({ baseUrl: server.url, timeouts: { ...Domain.defaultTimeouts, idleMs: 300 } })
      const at = Upstream.deadlines(c, Date.now(), Date.now())
      const stalled = yield* Upstream.send(c, `${server.url}/stall`, {}, "{}", at)
      const exit = yield* Effect.exit(Upstream.readText(stalled, 1024))
      assert.isTrue(Exit.isFailure(exit))
      assert.match(JSON.stringify(exit), /sent nothing for 300 ms/)
      const whole = yield* Upstream.send(c, `${server.url}/whole`, {}, "{}", at)
      assert.strictEqual(yield* Upstream.readText(whole, 1024), "{\"id\":1}")
    }).pipe(Effect.provide(UndiciTransport.layer)))

  it.live("a body still arriving at the call's total deadline fails with the total timeout", () =>
    Effect.gen(function*() {
      const server = yield* stallingServer
      const c = channel({ baseUrl: server.url, timeouts: { ...Domain.defaultTimeouts, totalMs: 400, idleMs: 60_000 } })
      const at = Upstream.deadlines(c, Date.now(), Date.now())
      const response = yield* Upstream.send(c, `${server.url}/stall`, {}, "{}", at)
      assert.match(
        JSON.stringify(yield* Effect.exit(Upstream.readText(response, 1024))),
        /did not finish the answer within 400 ms/
      )
    }).pipe(Effect.provide(UndiciTransport.layer)))

  it.live("headers later than first_byte_ms are a first-byte timeout; a connection refused is unavailable", () =>
    Effect.gen(function*() {
      const server = yield* stallingServer
      const c = channel({ baseUrl: server.url, timeouts: { ...Domain.defaultTimeouts, firstByteMs: 300 } })
      const slow = yield* Effect.flip(
        Upstream.send(c, `${server.url}/no-headers`, {}, "{}", Upstream.deadlines(c, Date.now(), Date.now()))
      )
      assert.strictEqual(slow._tag, "UpstreamTimeout")
      assert.match(slow.message, /did not answer within 300 ms/)
      const dead = channel({ baseUrl: "http://127.0.0.1:9" })
      const refused = yield* Effect.flip(Upstream.send(dead, "http://127.0.0.1:9/v1/chat/completions", {}, "{}", now()))
      assert.strictEqual(refused._tag, "UpstreamUnavailable")
      assert.match(refused.message, /could not be reached \(ECONNREFUSED\)/)
    }).pipe(Effect.provide(UndiciTransport.layer)))

  it.live("an answer larger than the reader allows fails the attempt, naming the limit, without reading the rest", () =>
    Effect.gen(function*() {
      const server = yield* stallingServer
      const c = channel({ baseUrl: server.url })
      const endless = yield* Upstream.send(
        c,
        `${server.url}/endless`,
        {},
        "{}",
        Upstream.deadlines(c, Date.now(), Date.now())
      )
      const error = yield* Effect.flip(Upstream.readText(endless, 64 * 1024))
      assert.strictEqual(error._tag, "UpstreamUnavailable")
      assert.match(error.message, /answered with more than this gateway reads \(over 65536 bytes\)/)
      yield* Effect.promise(() => server.endlessClosed)
    }).pipe(Effect.provide(UndiciTransport.layer)))

  // Undici fails a body destroyed before its end with an 'error' event: one nobody listened to would be
  // an uncaught exception, which ends the gateway's process (and fails this run).
  it.live("a stream whose first event is later than first_byte_ms fails with the first-byte timeout and is closed", () =>
    Effect.gen(function*() {
      const server = yield* stallingServer
      const c = channel({ baseUrl: server.url, timeouts: { ...Domain.defaultTimeouts, firstByteMs: 300 } })
      const at = Upstream.deadlines(c, Date.now(), Date.now())
      const response = yield* Upstream.send(c, `${server.url}/headers-only`, {}, "{}", at)
      const error = yield* Effect.flip(Upstream.opening(response, Dialects.upstream("openai"), 1 << 20))
      assert.strictEqual(error._tag, "UpstreamTimeout")
      assert.match(error.message, /did not answer within 300 ms/)
      yield* waitFor(() => server.headersOnlyClosed() === 1)
    }).pipe(Effect.provide(UndiciTransport.layer)))

  it.live("interrupting the wait for a stream's opening closes the upstream connection", () =>
    Effect.gen(function*() {
      const server = yield* stallingServer
      const c = channel({ baseUrl: server.url })
      const at = Upstream.deadlines(c, Date.now(), Date.now())
      const response = yield* Upstream.send(c, `${server.url}/headers-only`, {}, "{}", at)
      const waiting = yield* Effect.forkChild(Upstream.opening(response, Dialects.upstream("openai"), 1 << 20))
      yield* Effect.sleep(50)
      yield* Fiber.interrupt(waiting)
      yield* waitFor(() => server.headersOnlyClosed() === 1)
    }).pipe(Effect.provide(UndiciTransport.layer)))

  it.live("timeouts longer than a Node timer can wait (about 24.8 days) wait, rather than firing at once", () =>
    Effect.gen(function*() {
      const server = yield* stallingServer
      const month = 30 * 86_400_000
      const c = channel({
        baseUrl: server.url,
        timeouts: { connectMs: month, firstByteMs: month, idleMs: month, totalMs: month }
      })
      const at = Upstream.deadlines(c, Date.now(), Date.now())
      const whole = yield* Upstream.send(c, `${server.url}/whole`, {}, "{}", at)
      assert.strictEqual(yield* Upstream.readText(whole, 1024), "{\"id\":1}")
      const stream = yield* Upstream.send(c, `${server.url}/whole`, {}, "{}", at)
      const first = yield* stream.body.next
      assert.strictEqual(new TextDecoder().decode(first), "{\"id\":1}")
      stream.body.discard()
    }).pipe(Effect.provide(UndiciTransport.layer)))
})
