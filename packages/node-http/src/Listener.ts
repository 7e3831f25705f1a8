/**
 * The listener: one `node:http` server whose request handler splits the
 * traffic in two.
 *
 * - The API surface (`/v1`, `/v1beta`, ...: every route the engine serves)
 *   goes straight from Node's request to the engine's program
 *   (`Gateway.serve`), run as one fiber in the server's long-lived context,
 *   and its answer straight to Node's response: a text body, or the stream
 *   relay writing its frames to the response itself. No per-request Effect HTTP
 *   objects, router or middleware sit on this path, which every model call
 *   takes.
 * - The rest (health checks, the management API, the console's files) goes to
 *   the Effect HTTP application registered through the `HttpServer` service
 *   this layer provides (`HttpServer.serve(Gateway.app)`).
 *
 * A client that goes away before its answer started interrupts the call's
 * fiber with effect's `ClientAbort` annotation (settled as `499
 * ClientClosed`); one that goes away mid-stream cancels the relay.
 *
 * With tracing on (`Telemetry.Current`, read once here), each API call gets
 * its server span (`Telemetry.startCall`, continuing the caller's
 * `traceparent`), the call's program runs under it, and it ends when the
 * response closes: after a stream's last byte, or when the client left.
 *
 * Shutdown (the layer released): the server stops accepting, closes idle
 * keep-alive connections as they become idle (`drainingServer`), and waits up
 * to `shutdown_grace_seconds` for the calls in flight; then it interrupts
 * those still running and cuts the streams still open (both settled as `503
 * ShuttingDown`), and closes what remains.
 *
 * @since 0.1.0
 */
import { NodeHttpServer } from "@effect/platform-node"
import { GatewayError } from "@modelgate/core"
import * as Ids from "@modelgate/engine/call/Ids"
import * as EngineGateway from "@modelgate/engine/host/Gateway"
import * as Telemetry from "@modelgate/engine/telemetry/Telemetry"
import * as Exchange from "@modelgate/engine/wire/Exchange"
import type { Relay } from "@modelgate/engine/wire/Relay"
import * as Routes from "@modelgate/engine/wire/Routes"
import { type Context, Duration, Effect, Exit, type Fiber, Layer, Scope } from "effect"
import { HttpServer } from "effect/http"
import { ClientAbort, ServeError } from "effect/http/HttpServerError"
import * as NetAddress from "effect/net/NetAddress"
import type { IncomingMessage, Server as HttpNodeServer, ServerResponse } from "node:http"
import * as AccessLog from "./AccessLog.ts"
import type { Settings } from "./Settings.ts"

/** What the engine path needs from the server's context. @category models */
export type Requirements = EngineGateway.Requirements

/**
 * A Node HTTP server whose `close` also closes keep-alive connections as they
 * become idle: Node closes only those idle at the moment `close` is called, so a
 * connection whose stream finishes during the grace period would otherwise hold
 * the shutdown open until its keep-alive timeout.
 *
 * @category servers
 */
export const drainingServer = (): HttpNodeServer => {
  // Not a static `import { createServer } from "node:http"`: an ES module import of a built-in reads every
  // export, and node:http's `WebSocket` loads Node's own undici (3 MB at idle, never used here).
  const server = process.getBuiltinModule("node:http").createServer({ keepAliveTimeout: 65_000 })
  const close = server.close.bind(server)
  server.close = (callback?: (error?: Error) => void) => {
    const timer = setInterval(() => server.closeIdleConnections(), 50)
    return close((error) => {
      clearInterval(timer)
      callback?.(error)
    })
  }
  return server
}

/**
 * Reads a request's body as it came (its bytes, never decoded here), at most
 * `maxBytes` (`Exchange.BodyBuffer`): a larger one (by its `content-length`,
 * or as it arrives) fails with `RequestTooLarge` and the connection is closed
 * after the answer rather than read to its end.
 */
const bodyOf = (req: IncomingMessage, res: ServerResponse) => (maxBytes: number) =>
  Effect.callback<Uint8Array, GatewayError.RequestTooLarge | GatewayError.InvalidRequest>((resume) => {
    const buffer = new Exchange.BodyBuffer(maxBytes)
    const declared = buffer.declared(req.headers["content-length"])
    if (declared !== undefined) {
      res.shouldKeepAlive = false
      return resume(Effect.fail(declared))
    }
    const onData = (chunk: Buffer) => {
      const refused = buffer.add(chunk)
      if (refused === undefined) return
      cleanup()
      res.shouldKeepAlive = false
      req.pause()
      resume(Effect.fail(refused))
    }
    const onEnd = () => {
      cleanup()
      resume(Effect.succeed(buffer.body()))
    }
    const onError = () => {
      cleanup()
      resume(Effect.fail(Exchange.unreadable()))
    }
    const cleanup = () => {
      req.off("data", onData)
      req.off("end", onEnd)
      req.off("error", onError)
    }
    req.on("data", onData)
    req.once("end", onEnd)
    req.once("error", onError)
    return Effect.sync(cleanup)
  })

/** The API surface's calls in flight: their fibers and their open streams, cut at the end of a shutdown's grace period. */
class InFlight {
  readonly fibers = new Set<Fiber.Fiber<Exchange.Answer>>()
  readonly streams = new Set<Relay>()

  /** Interrupts the calls still running (settled as `503 ShuttingDown`) and cuts the streams still open. */
  cut(): void {
    for (const fiber of this.fibers) fiber.interruptUnsafe()
    for (const stream of this.streams) stream.cancel()
  }
}

/** Writes an engine answer to Node's response. */
const write = (
  answer: Exchange.Answer,
  requestId: string,
  req: IncomingMessage,
  res: ServerResponse,
  inFlight: InFlight
): void => {
  if (res.destroyed) {
    if (answer._tag === "Stream") answer.relay.cancel()
    return
  }
  // An engine answer names its request already (every call's does): its headers go out as they are, not copied.
  const headers = answer.headers["x-request-id"] === requestId
    ? answer.headers
    : { ...answer.headers, "x-request-id": requestId }
  if (answer._tag === "Text") {
    res.writeHead(answer.status, headers)
    res.end(req.method === "HEAD" ? undefined : answer.body)
    return
  }
  // The headers go out with the first frames (already primed: the relay writes them as it starts), in one write:
  // flushing them alone would cost a socket write of its own on every stream.
  res.writeHead(answer.status, headers)
  const relay = answer.relay
  inFlight.streams.add(relay)
  // The relay writes its frames straight to the response (no `Readable` piped to it: a stream object, its
  // state and the pipe's listeners per stream, and two more hops per chunk), waits for `drain` when the socket
  // is full, and is cancelled when the response closes first (a client that went away; once it ended, the
  // relay has already reported how, and the cancel is nothing).
  res.on("drain", () => relay.pull())
  res.once("close", () => {
    inFlight.streams.delete(relay)
    relay.cancel()
  })
  relay.start({
    write: (frames) => res.write(frames),
    close: () => {
      res.end()
    }
  })
}

/**
 * The request handler of the API surface: runs the engine's program for one
 * request and writes its answer.
 */
const apiHandler = (
  context: Context.Context<Requirements>,
  settings: Settings,
  inFlight: InFlight,
  telemetry: Telemetry.Telemetry | undefined
) => {
  const run = Effect.runForkWith(Telemetry.withTracer(context, telemetry))
  const logged = AccessLog.enabled(settings)
  return (
    req: IncomingMessage,
    res: ServerResponse,
    route: Routes.ApiRoute | Routes.Miss,
    path: string,
    search: string
  ): void => {
    const requestId = Ids.requestId()
    // Tracing (off: `telemetry` and `trace` are undefined and nothing below costs a thing): the call's server span
    // continues the caller's traceparent, the program runs under it, and it ends when the response has gone out.
    const trace = telemetry?.startCall({
      method: req.method ?? "GET",
      path,
      route,
      headers: req.headers,
      requestId,
      scheme: "http"
    })
    const request: Exchange.GatewayRequest = {
      method: req.method ?? "GET",
      path,
      search,
      headers: req.headers,
      body: bodyOf(req, res),
      trace
    }
    const served = EngineGateway.serve(request, route, requestId)
    const program = logged
      ? AccessLog.logged(served, { requestId, method: request.method, path }, (answer) => answer.status)
      : served
    const fiber = run(trace === undefined ? program : trace.run(program))
    if (trace !== undefined) {
      res.once("close", () => trace.end(res.headersSent ? res.statusCode : 499, !res.writableEnded))
    }
    inFlight.fibers.add(fiber)
    res.once("close", () => {
      if (!res.writableEnded) fiber.interruptUnsafe(undefined, ClientAbort.annotation)
    })
    fiber.addObserver((exit) => {
      inFlight.fibers.delete(fiber)
      if (Exit.isSuccess(exit)) write(exit.value, requestId, req, res, inFlight)
      else if (!res.headersSent && !res.destroyed) {
        // Interrupted at the end of the shutdown's grace period (a client that went away reads nothing).
        const answer = EngineGateway.errorAnswer(
          EngineGateway.clientOf(route),
          new GatewayError.ServiceUnavailable({ message: "The gateway is shutting down; retry the call." }),
          requestId
        )
        write(answer, requestId, req, res, inFlight)
      }
    })
  }
}

/**
 * The listener as the `HttpServer` service: listening once built; the Effect
 * application it is asked to serve answers the host's routes, the engine the
 * rest.
 *
 * @category layers
 */
export const layer = (settings: Settings): Layer.Layer<HttpServer.HttpServer, ServeError, Requirements> =>
  Layer.effect(
    HttpServer.HttpServer,
    Effect.gen(function*() {
      const context = yield* Effect.context<Requirements>()
      const inFlight = new InFlight()
      const api = apiHandler(context, settings, inFlight, yield* Telemetry.Current)
      let host: ((req: IncomingMessage, res: ServerResponse) => void) | undefined
      const server = drainingServer()
      server.on("request", (req: IncomingMessage, res: ServerResponse) => {
        const url = req.url ?? "/"
        const queryAt = url.indexOf("?")
        const path = queryAt === -1 ? url : url.slice(0, queryAt)
        const route = Routes.match(req.method ?? "GET", path, req.headers)
        if (!Routes.isHostRoute(route)) return api(req, res, route, path, queryAt === -1 ? "" : url.slice(queryAt + 1))
        if (host !== undefined) return host(req, res)
        res.writeHead(503, { "content-type": "application/json" })
        res.end("{\"status\":\"unavailable\",\"reason\":\"the server is starting or stopping\"}")
      })
      yield* Effect.callback<void, ServeError>((resume) => {
        const onError = (cause: unknown) => resume(Effect.fail(new ServeError({ cause })))
        server.once("error", onError)
        server.listen({ host: settings.host, port: settings.port }, () => {
          server.off("error", onError)
          resume(Effect.void)
        })
      })
      const bound = server.address()
      const address = typeof bound === "object" && bound !== null
        ? NetAddress.inetAddressFromIpString(bound.address, bound.port)
        : undefined
      if (address === undefined || address._tag === "Failure") {
        return yield* new ServeError({ cause: new Error(`the server bound an unexpected address: ${String(bound)}`) })
      }
      const closed = Effect.callback<void>((resume) => {
        if (!server.listening) return resume(Effect.void)
        server.close(() => resume(Effect.void))
      }).pipe(Effect.cached)
      const close = yield* closed
      // Stop accepting and let the calls in flight finish for up to the grace period (the server closes
      // each connection once it is idle), then cut what is left. Run when the application stops being
      // served, so the host's routes get the same grace; and again, doing nothing more, when this layer goes.
      const drain = yield* Effect.cached(Effect.gen(function*() {
        yield* close.pipe(Effect.timeoutOrElse({
          duration: Duration.seconds(settings.shutdownGraceSeconds),
          orElse: () => Effect.void
        }))
        inFlight.cut()
        server.closeAllConnections()
        yield* close
      }))
      yield* Effect.addFinalizer(() => drain)
      return HttpServer.make({
        address: address.success,
        serve: (app, middleware) =>
          Effect.gen(function*() {
            const serving = yield* Effect.scope
            const scope = Scope.forkUnsafe(serving, "parallel")
            host = yield* NodeHttpServer.makeHandler(app, { middleware: middleware as never, scope })
            // Added after the fork, so it runs before the host's requests are interrupted.
            yield* Scope.addFinalizer(serving, drain)
          })
      })
    })
  )
