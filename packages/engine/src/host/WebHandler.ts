/**
 * The gateway as a web handler: `(request: Request) => Promise<Response>`,
 * serving `/v1` and `/v1beta` exactly as the node-http server does (the same
 * engine: keys, models, limits, balances, routing, failover, translation,
 * streams), in any runtime with web-standard `Request`, `Response`,
 * `ReadableStream` and `fetch`: Bun, Deno, Cloudflare-style workers, Node.
 *
 * ```ts
 * import { toWebHandler } from "@modelgate/engine/host/WebHandler"
 *
 * const { handler, dispose } = await toWebHandler({
 *   channels: [{ name: "openai", type: "openai", base_url: "https://api.openai.com/v1", api_key: "sk-...", models: ["gpt-4o-mini"] }],
 *   models: { "gpt-4o-mini": { input: 0.15, output: 0.6 } },
 *   users: [{ name: "alice", balance: 10, keys: [{ name: "laptop", secret: "sk-alice-0123456789abcdef" }] }]
 * })
 * Bun.serve({ fetch: handler })      // or Deno.serve(handler), or `export default { fetch: handler }`
 * ```
 *
 * `config` has the shape of the YAML configuration file (docs/configuration.md;
 * the server-only fields such as `listen` and `database` are accepted and
 * ignored). Keys, balances, holds and usage records live in memory by default
 * (`MemoryStore`: the embedded/edge/test store); a host may pass its own store
 * layer, transport (default: the runtime's `fetch`) and rate limiter (default:
 * in memory). Health checks answer at `/healthz` and `/readyz`; the
 * management API and the console are node-http's, and are not served here.
 *
 * @since 0.1.0
 */
import {
  type Accounts,
  type Catalog,
  type ChannelKeyStates,
  GatewayError,
  type KeyStore,
  MemoryLimiter,
  type RateLimiter,
  type UsageLog
} from "@modelgate/core"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import type * as HttpClient from "effect/http/HttpClient"
import { ClientAbort } from "effect/http/HttpServerError"
import * as Dialects from "../call/Dialects.ts"
import * as Ids from "../call/Ids.ts"
import * as Probe from "../call/Probe.ts"
import * as Config from "../config/Config.ts"
import { defaults, type EngineSettings, Settings } from "../config/Settings.ts"
import * as TelemetryConfig from "../config/TelemetryConfig.ts"
import * as Settlement from "../money/Settlement.ts"
import * as Health from "../routing/Health.ts"
import * as Metrics from "../telemetry/Metrics.ts"
import * as Telemetry from "../telemetry/Telemetry.ts"
import * as Exchange from "../wire/Exchange.ts"
import * as FetchTransport from "../wire/FetchTransport.ts"
import * as Routes from "../wire/Routes.ts"
import type { Transport } from "../wire/Transport.ts"
import * as Gateway from "./Gateway.ts"
import * as MemoryStore from "./MemoryStore.ts"

/** Core's ports a store provides. @category models */
export type StorePorts =
  | KeyStore.KeyStore
  | Catalog.Catalog
  | Accounts.Accounts
  | UsageLog.UsageLog
  | ChannelKeyStates.ChannelKeyStates

/** What a host may give instead of the defaults. @category models */
export interface WebHandlerOptions {
  /** The store (default: `MemoryStore` over the configuration). */
  readonly store?: Layer.Layer<StorePorts> | undefined
  /** How upstreams are reached (default: the runtime's `fetch`). */
  readonly transport?: Layer.Layer<Transport> | undefined
  /** The rate limiter (default: in memory). */
  readonly limiter?: Layer.Layer<RateLimiter.RateLimiter> | undefined
  /** This process's name in records of refused upstream keys (default `embedded`). */
  readonly nodeId?: string | undefined
  /** Where calls are counted, for a host that exports metrics (default: nowhere; see `Metrics`). */
  readonly metrics?: Metrics.CallMetrics | undefined
  /**
   * Tracing (docs/operations.md, "Tracing"): the configuration's `telemetry:`
   * section applies as it is; pass the runtime's environment (`process.env`,
   * `Deno.env.toObject()`) for the standard `OTEL_*` variables to apply too
   * (they win). Spans go out with `fetch` unless `httpClient` is given.
   */
  readonly telemetry?: {
    readonly env?: TelemetryConfig.Environment | undefined
    readonly httpClient?: Layer.Layer<HttpClient.HttpClient> | undefined
  } | undefined
}

/** A running embedded gateway. @category models */
export interface WebHandler {
  readonly handler: (request: Request) => Promise<Response>
  /** Stops background work (health probes), waits for streams being settled, and releases everything. */
  readonly dispose: () => Promise<void>
  /** The in-memory store's view (usage records, balances); undefined when the host gave its own store. */
  readonly inspect: MemoryStore.Inspect | undefined
  /** The in-memory store's changes (top-ups, key caps, revocations); undefined when the host gave its own store. */
  readonly admin: MemoryStore.Admin | undefined
  /** Tracing, when the configuration or the environment turned it on (its export's figures, `flush`). */
  readonly telemetry: Telemetry.Telemetry | undefined
}

/** The engine's settings from a configuration. @category settings */
export const settingsOf = (file: Config.ConfigFile, nodeId: string): EngineSettings => ({
  ...defaults,
  nodeId,
  maxBodyBytes: file.max_body_bytes ?? defaults.maxBodyBytes,
  maxAnswerBytes: file.max_answer_bytes ?? defaults.maxAnswerBytes,
  maxEventBytes: file.max_event_bytes ?? defaults.maxEventBytes,
  maxAttempts: file.routing?.max_attempts ?? defaults.maxAttempts,
  stickyHeader: file.routing?.sticky_header?.toLowerCase() ?? null,
  rateLimitsPerModel: file.rate_limits?.per_model ?? defaults.rateLimitsPerModel,
  probeIntervalMs: file.routing?.probe_interval_ms ?? defaults.probeIntervalMs
})

const encoder = new TextEncoder()

/** A request's body, at most `maxBytes` of it, its chunks joined as they came (`Exchange.BodyBuffer`). */
const readBody = (request: Request) => (maxBytes: number) =>
  Effect.tryPromise({
    try: async () => {
      const buffer = new Exchange.BodyBuffer(maxBytes)
      const declared = buffer.declared(request.headers.get("content-length"))
      if (declared !== undefined) throw declared
      if (request.body === null) return buffer.body()
      const reader = request.body.getReader()
      for (;;) {
        const read = await reader.read()
        if (read.done) break
        const refused = buffer.add(read.value)
        if (refused !== undefined) {
          await reader.cancel().catch(() => {})
          throw refused
        }
      }
      return buffer.body()
    },
    catch: (error) => error instanceof GatewayError.RequestTooLarge ? error : Exchange.unreadable()
  })

/** An engine answer as a web `Response`; a stream's relay writes into a `ReadableStream`. */
const toResponse = (
  answer: Exchange.Answer,
  requestId: string,
  method: string,
  trace: Telemetry.CallTrace | undefined
): Response => {
  const headers = { ...answer.headers, "x-request-id": requestId }
  if (answer._tag === "Text") {
    trace?.end(answer.status)
    return new Response(method === "HEAD" ? null : answer.body, { status: answer.status, headers })
  }
  const { relay } = answer
  let open = true
  const body = new ReadableStream<Uint8Array>({
    start: (controller) =>
      relay.start({
        write: (frames) => {
          if (!open) return false
          controller.enqueue(typeof frames === "string" ? encoder.encode(frames) : frames)
          return (controller.desiredSize ?? 0) > 0
        },
        close: () => {
          if (!open) return
          open = false
          controller.close()
          trace?.end(answer.status)
        }
      }),
    pull: () => relay.pull(),
    cancel: () => {
      open = false
      relay.cancel()
      trace?.end(answer.status, true)
    }
  }, { highWaterMark: 64 * 1024, size: (chunk) => chunk.byteLength })
  return new Response(body, { status: answer.status, headers })
}

/** The routes a node-http host serves itself, answered here as far as they make sense. */
const hostAnswer = (route: Routes.HostRoute, requestId: string): Exchange.Answer => {
  switch (route._tag) {
    case "Health":
      return { _tag: "Text", status: 200, headers: { "content-type": "application/json" }, body: "{\"status\":\"ok\"}" }
    case "Ready":
      return {
        _tag: "Text",
        status: 200,
        headers: { "content-type": "application/json" },
        body: "{\"status\":\"ready\"}"
      }
    case "Metrics":
    case "Api":
    case "Console":
      return Gateway.errorAnswer(
        Dialects.client("openai"),
        new GatewayError.RouteNotFound({
          message:
            "This is an embedded modelgate: it serves /v1 and /v1beta; the management API, the console and /metrics are served by the modelgate server."
        }),
        requestId
      )
  }
}

/**
 * Builds the gateway for a configuration and returns its web handler. Fails
 * (the promise rejects) with a message naming every bad field when the
 * configuration does not decode.
 *
 * @category constructors
 */
export const toWebHandler = async (config: unknown, options: WebHandlerOptions = {}): Promise<WebHandler> => {
  const scope = Scope.makeUnsafe()
  const build = Effect.gen(function*() {
    const file = yield* Config.decode(config, "the configuration")
    const declaration = yield* Config.declaration(file, "the configuration")
    const settings = Layer.succeed(Settings)(settingsOf(file, options.nodeId ?? "embedded"))
    const memory = options.store === undefined ? MemoryStore.layer(declaration) : undefined
    // The store is built once: the engine's services and the host's view of it share it.
    const storeContext = yield* Layer.buildWithScope(options.store ?? memory!, scope)
    const store = Layer.succeedContext(storeContext as Context.Context<StorePorts>)
    const transport = options.transport ?? FetchTransport.layer
    const limiter = options.limiter ?? MemoryLimiter.layerWith({ windowMs: file.rate_limits?.window_ms ?? 60_000 })
    const upstream = Probe.layer.pipe(Layer.provideMerge(transport))
    const health = Health.Health.layer.pipe(
      Layer.provideMerge(upstream),
      Layer.provideMerge(store),
      Layer.provideMerge(settings)
    )
    const tracing = yield* TelemetryConfig.resolve(file.telemetry, options.telemetry?.env ?? {}, "the configuration")
    const all = Layer.mergeAll(
      health,
      limiter,
      Settlement.Settlements.layer,
      Layer.succeed(Metrics.Current)(options.metrics),
      Telemetry.layer(tracing, {
        instanceId: options.nodeId ?? "embedded",
        httpClient: options.telemetry?.httpClient
      })
    )
    const context = yield* Layer.buildWithScope(all, scope)
    const inspect = memory === undefined
      ? undefined
      : Context.get(storeContext as unknown as Context.Context<MemoryStore.MemoryInspect>, MemoryStore.MemoryInspect)
    const admin = memory === undefined
      ? undefined
      : Context.get(storeContext as unknown as Context.Context<MemoryStore.MemoryAdmin>, MemoryStore.MemoryAdmin)
    return { context, inspect, admin, telemetry: Context.get(context, Telemetry.Current) }
  })
  const built = await Effect.runPromise(build.pipe(
    Effect.mapError((error) => new Error(error.message)),
    Effect.onError(() => Scope.close(scope, Exit.void))
  ))
  const run = Effect.runForkWith(Telemetry.withTracer(built.context, built.telemetry))

  const handler = (request: Request): Promise<Response> =>
    new Promise((resolve) => {
      const url = new URL(request.url)
      const headers: Record<string, string> = {}
      request.headers.forEach((value, name) => {
        headers[name.toLowerCase()] = value
      })
      const requestId = Ids.requestId()
      const matched = Routes.match(request.method, url.pathname, headers)
      // Tracing, when on: the call's server span (continuing the caller's traceparent) ends with its response.
      const trace = Routes.isHostRoute(matched) ? undefined : built.telemetry?.startCall({
        method: request.method,
        path: url.pathname,
        route: matched,
        headers,
        requestId,
        scheme: url.protocol === "https:" ? "https" : "http"
      })
      const program: Effect.Effect<Exchange.Answer, never, Gateway.Requirements> = Routes.isHostRoute(matched)
        ? Effect.succeed(hostAnswer(matched, requestId))
        : Gateway.serve(
          {
            method: request.method,
            path: url.pathname,
            search: url.search.slice(1),
            headers,
            body: readBody(request),
            trace
          },
          matched,
          requestId
        )
      const fiber = run(trace === undefined ? program : trace.run(program))
      const signal = request.signal
      const onAbort = () => fiber.interruptUnsafe(undefined, ClientAbort.annotation)
      if (signal.aborted) onAbort()
      else signal.addEventListener("abort", onAbort, { once: true })
      fiber.addObserver((exit) => {
        signal.removeEventListener("abort", onAbort)
        // An interrupted call's client is gone: nobody reads this answer.
        if (Exit.isSuccess(exit)) return resolve(toResponse(exit.value, requestId, request.method, trace))
        trace?.end(499, true)
        resolve(new Response(null, { status: 499, headers: { "x-request-id": requestId } }))
      })
    })

  let disposing: Promise<void> | undefined
  return {
    handler,
    dispose: () => disposing ??= Effect.runPromise(Scope.close(scope, Exit.void)),
    inspect: built.inspect,
    admin: built.admin,
    telemetry: built.telemetry
  }
}
