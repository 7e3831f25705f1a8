/**
 * Talking to upstreams: auth headers per channel type (the
 * `anthropic-version` a channel sets in any letter case wins), Azure's
 * default api-version, error bodies that really stop at their limit, the
 * upstream's own message for operators, and the deadlines the connection
 * pool keeps (first byte, idle, total) against a local server that stalls.
 */
import { assert, describe, it } from "@effect/vitest"
import { Domain } from "@modelgate/core"
import { Effect, Exit, Fiber } from "effect"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import * as Upstream from "../src/Upstream.ts"

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
      resume(Effect.succeed({ url: `http://127.0.0.1:${address.port}`, server, endlessClosed, headersOnlyClosed: () => headersOnlyClosed }))
    })
  }),
  ({ server }) => Effect.callback<void>((resume) => {
    server.closeAllConnections()
    server.close(() => resume(Effect.void))
  })
)

/** Polls `check` every 10 ms until it holds (the test's own timeout bounds the wait). */
const waitFor = (check: () => boolean): Effect.Effect<void> =>
  Effect.suspend(() => check() ? Effect.void : Effect.andThen(Effect.sleep(10), waitFor(check)))

describe("Upstream", () => {
  it("puts each channel type's key where the upstream expects it", () => {
    assert.deepStrictEqual(Upstream.channelHeaders(channel({ headers: { "X-Title": "gw" } }), "sk-1"), {
      "content-type": "application/json",
      "X-Title": "gw",
      authorization: "Bearer sk-1"
    })
    assert.strictEqual(Upstream.channelHeaders(channel({ type: "azure" }), "az")["api-key"], "az")
    assert.strictEqual(Upstream.channelHeaders(channel({ type: "gemini" }), "g")["x-goog-api-key"], "g")
    const anthropic = Upstream.channelHeaders(channel({ type: "anthropic" }), "a")
    assert.strictEqual(anthropic["x-api-key"], "a")
    assert.strictEqual(anthropic["anthropic-version"], "2023-06-01")
  })

  it("keeps the anthropic-version a channel sets, in any letter case, and adds no second one", () => {
    for (const name of ["anthropic-version", "Anthropic-Version", "ANTHROPIC-VERSION"]) {
      const headers = Upstream.channelHeaders(channel({ type: "anthropic", headers: { [name]: "2024-01-01" } }), "a")
      const versions = Object.entries(headers).filter(([k]) => k.toLowerCase() === "anthropic-version")
      assert.deepStrictEqual(versions, [[name, "2024-01-01"]], name)
    }
  })

  it("builds chat URLs; Azure without an api_version uses the default", () => {
    assert.strictEqual(Upstream.chatUrl(channel(), "m", false), "https://up.test/v1/chat/completions")
    assert.strictEqual(
      Upstream.chatUrl(channel({ type: "azure", baseUrl: "https://r.openai.azure.com" }), "my dep", true),
      `https://r.openai.azure.com/openai/deployments/my%20dep/chat/completions?api-version=${Domain.DEFAULT_AZURE_API_VERSION}`
    )
    assert.include(Upstream.chatUrl(channel({ type: "azure", apiVersion: "2025-01-01-preview" }), "d", false), "api-version=2025-01-01-preview")
  })

  it.live("reads at most the limit of an error body and never the rest; one that stalls ends after idle_ms with what was read", () =>
    Effect.gen(function*() {
      const server = yield* stallingServer
      const c = channel({ baseUrl: server.url, timeouts: { ...Domain.defaultTimeouts, idleMs: 300 } })
      // An endless body: reading it all would never finish.
      const endless = yield* Upstream.send(c, `${server.url}/endless`, {}, "{}")
      const text = yield* Upstream.errorBody(endless, 40 * 1024)
      assert.strictEqual(text.length, 40 * 1024)
      yield* Effect.promise(() => server.endlessClosed)
      const stalled = yield* Upstream.send(c, `${server.url}/stall`, {}, "{}")
      assert.strictEqual(yield* Upstream.errorBody(stalled), "{\"id\":")
    }).pipe(Effect.provide(Upstream.UpstreamClients.layer)))

  // The idle, first-byte and total deadlines are kept by the connection pool (Undici's own timers), so
  // they are tested against a real local server that answers, then stalls.
  it.live("a non-stream body that stalls after its headers fails after idle_ms; one within it is read whole", () =>
    Effect.gen(function*() {
      const server = yield* stallingServer
      const c = channel({ baseUrl: server.url, timeouts: { ...Domain.defaultTimeouts, idleMs: 300 } })
      const at = Upstream.deadlines(c, Date.now(), Date.now())
      const stalled = yield* Upstream.send(c, `${server.url}/stall`, {}, "{}", at)
      const exit = yield* Effect.exit(Upstream.readText(stalled))
      assert.isTrue(Exit.isFailure(exit))
      assert.match(JSON.stringify(exit), /sent nothing for 300 ms/)
      const whole = yield* Upstream.send(c, `${server.url}/whole`, {}, "{}", at)
      assert.strictEqual(yield* Upstream.readText(whole), "{\"id\":1}")
    }).pipe(Effect.provide(Upstream.UpstreamClients.layer)))

  it.live("a body still arriving at the call's total deadline fails with the total timeout", () =>
    Effect.gen(function*() {
      const server = yield* stallingServer
      const c = channel({ baseUrl: server.url, timeouts: { ...Domain.defaultTimeouts, totalMs: 400, idleMs: 60_000 } })
      const at = Upstream.deadlines(c, Date.now(), Date.now())
      const response = yield* Upstream.send(c, `${server.url}/stall`, {}, "{}", at)
      assert.match(JSON.stringify(yield* Effect.exit(Upstream.readText(response))), /did not finish the answer within 400 ms/)
    }).pipe(Effect.provide(Upstream.UpstreamClients.layer)))

  it.live("headers later than first_byte_ms are a first-byte timeout; a connection refused is unavailable", () =>
    Effect.gen(function*() {
      const server = yield* stallingServer
      const c = channel({ baseUrl: server.url, timeouts: { ...Domain.defaultTimeouts, firstByteMs: 300 } })
      const slow = yield* Effect.flip(Upstream.send(c, `${server.url}/no-headers`, {}, "{}", Upstream.deadlines(c, Date.now(), Date.now())))
      assert.strictEqual(slow._tag, "UpstreamTimeout")
      assert.match(slow.message, /did not answer within 300 ms/)
      const dead = channel({ baseUrl: "http://127.0.0.1:9" })
      const refused = yield* Effect.flip(Upstream.send(dead, "http://127.0.0.1:9/v1/chat/completions", {}, "{}"))
      assert.strictEqual(refused._tag, "UpstreamUnavailable")
      assert.match(refused.message, /could not be reached \(ECONNREFUSED\)/)
    }).pipe(Effect.provide(Upstream.UpstreamClients.layer)))

  // Undici fails a body destroyed before its end with an 'error' event: one nobody listened to would be
  // an uncaught exception, which ends the gateway's process (and fails this run).
  it.live("a stream whose first chunk is later than first_byte_ms fails with the first-byte timeout and is closed", () =>
    Effect.gen(function*() {
      const server = yield* stallingServer
      const c = channel({ baseUrl: server.url, timeouts: { ...Domain.defaultTimeouts, firstByteMs: 300 } })
      const at = Upstream.deadlines(c, Date.now(), Date.now())
      const response = yield* Upstream.send(c, `${server.url}/headers-only`, {}, "{}", at)
      const error = yield* Effect.flip(Upstream.firstChunk(response))
      assert.strictEqual(error._tag, "UpstreamTimeout")
      assert.match(error.message, /did not answer within 300 ms/)
      yield* waitFor(() => server.headersOnlyClosed() === 1)
    }).pipe(Effect.provide(Upstream.UpstreamClients.layer)))

  it.live("interrupting the wait for a stream's first chunk closes the upstream connection", () =>
    Effect.gen(function*() {
      const server = yield* stallingServer
      const c = channel({ baseUrl: server.url })
      const at = Upstream.deadlines(c, Date.now(), Date.now())
      const response = yield* Upstream.send(c, `${server.url}/headers-only`, {}, "{}", at)
      const waiting = yield* Effect.forkChild(Upstream.firstChunk(response))
      yield* Effect.sleep(50)
      yield* Fiber.interrupt(waiting)
      yield* waitFor(() => server.headersOnlyClosed() === 1)
      // Nothing is left to fire later: the body is closed, so its total-deadline timer is cleared.
      assert.isTrue(response.body.destroyed)
    }).pipe(Effect.provide(Upstream.UpstreamClients.layer)))

  it.live("timeouts longer than a Node timer can wait (about 24.8 days) wait, rather than firing at once", () =>
    Effect.gen(function*() {
      const server = yield* stallingServer
      const month = 30 * 86_400_000
      const c = channel({ baseUrl: server.url, timeouts: { connectMs: month, firstByteMs: month, idleMs: month, totalMs: month } })
      const at = Upstream.deadlines(c, Date.now(), Date.now())
      const whole = yield* Upstream.send(c, `${server.url}/whole`, {}, "{}", at)
      assert.strictEqual(yield* Upstream.readText(whole), "{\"id\":1}")
      const stream = yield* Upstream.send(c, `${server.url}/whole`, {}, "{}", at)
      const opened = yield* Upstream.firstChunk(stream)
      assert.strictEqual(new TextDecoder().decode(opened.first), "{\"id\":1}")
      yield* opened.close
    }).pipe(Effect.provide(Upstream.UpstreamClients.layer)))

  it("finds the upstream's own message in every envelope, for operators", () => {
    const cases: ReadonlyArray<readonly [string, string]> = [
      ["{\"error\":{\"message\":\"Incorrect API key provided: sk-ab***cd\",\"type\":\"invalid_request_error\"}}", "Incorrect API key provided: sk-ab***cd"],
      ["{\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key\"}}", "invalid x-api-key"],
      ["{\"error\":{\"code\":400,\"message\":\"API key not valid. Please pass a valid API key.\",\"status\":\"INVALID_ARGUMENT\"}}", "API key not valid. Please pass a valid API key."],
      ["{\"error\":\"quota exceeded\"}", "quota exceeded"],
      ["{\"message\":\"Unauthorized\"}", "Unauthorized"],
      ["<html>Bad gateway</html>\nmore", "<html>Bad gateway</html>"],
      ["", "(no message)"]
    ]
    for (const [body, message] of cases) assert.strictEqual(Upstream.upstreamMessage(body), message)
    assert.strictEqual(Upstream.upstreamMessage(`{"error":{"message":"${"x".repeat(400)}"}}`).length, 301)
  })
})
