/**
 * The HTTP application of the host routes: one Effect per request for the
 * health checks, `/metrics`, the management API and the console's files. The
 * API surface (`/v1`, `/v1beta`, ...) never reaches it: the listener
 * (`Listener.ts`) hands those requests to the engine (`Gateway.serve`)
 * itself. `toResponse` writes an engine answer as an Effect HTTP response
 * (text, or the stream relay piped to the socket through `NodeRelay`). Every
 * answer carries the request's `x-request-id`.
 * The access log is one structured line per request (`access_log`, at level
 * info, health checks left out), written here when the response starts.
 *
 * @since 0.1.0
 */
import { GatewayError } from "@modelgate/core"
import * as Dialects from "@modelgate/engine/call/Dialects"
import * as Ids from "@modelgate/engine/call/Ids"
import * as EngineGateway from "@modelgate/engine/host/Gateway"
import { Draining } from "@modelgate/engine/routing/Draining"
import type * as Exchange from "@modelgate/engine/wire/Exchange"
import * as Routes from "@modelgate/engine/wire/Routes"
import { Context, Effect } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import * as AccessLog from "./AccessLog.ts"
import { NodeRelay } from "./NodeRelay.ts"
import { ServerSettings } from "./Settings.ts"

/** Optional handlers mounted by the server: the management API, the console's static files and the metrics. @category services */
export class Extensions extends Context.Service<Extensions, {
  readonly api:
    | ((request: HttpServerRequest.HttpServerRequest) => Effect.Effect<HttpServerResponse.HttpServerResponse>)
    | undefined
  readonly console: ((path: string) => Effect.Effect<HttpServerResponse.HttpServerResponse>) | undefined
  /** `/metrics`, when a metrics token is configured. */
  readonly metrics:
    | ((request: HttpServerRequest.HttpServerRequest) => Effect.Effect<HttpServerResponse.HttpServerResponse>)
    | undefined
  /** Null when ready, else why not. */
  readonly ready: Effect.Effect<string | null>
}>()("modelgate/node-http/Extensions") {}

/** Whether the server is shutting down (see `Draining.ts`). @category services */
export { Draining } from "@modelgate/engine/routing/Draining"

/** An engine answer as the HTTP server's response. @category answers */
export const toResponse = (answer: Exchange.Answer): HttpServerResponse.HttpServerResponse => {
  const { "content-type": contentType, ...headers } = answer.headers
  return answer._tag === "Text"
    ? HttpServerResponse.text(answer.body, {
      status: answer.status,
      headers,
      contentType: contentType ?? "application/json"
    })
    : HttpServerResponse.raw(new NodeRelay(answer.relay), {
      status: answer.status,
      headers,
      contentType: contentType ?? "text/event-stream"
    })
}

/** The routes this server answers itself: health checks, the management API, the console. */
const host = (route: Routes.HostRoute, request: HttpServerRequest.HttpServerRequest, path: string, requestId: string) =>
  Effect.gen(function*() {
    switch (route._tag) {
      case "Health":
        return HttpServerResponse.jsonUnsafe({ status: "ok" })
      case "Ready": {
        if (yield* (yield* Draining).draining) {
          return HttpServerResponse.jsonUnsafe({ status: "draining", reason: "the server is shutting down" }, {
            status: 503
          })
        }
        const extensions = yield* Extensions
        const reason = yield* extensions.ready
        return reason === null
          ? HttpServerResponse.jsonUnsafe({ status: "ready" })
          : HttpServerResponse.jsonUnsafe({ status: "not ready", reason }, { status: 503 })
      }
      case "Metrics": {
        const extensions = yield* Extensions
        if (extensions.metrics === undefined) {
          return toResponse(EngineGateway.errorAnswer(
            Dialects.client("openai"),
            new GatewayError.RouteNotFound({
              message:
                "No route for /metrics: metrics are off (set metrics.token in the configuration, or MODELGATE_METRICS_TOKEN)."
            }),
            requestId
          ))
        }
        return yield* extensions.metrics(request)
      }
      case "Console": {
        const extensions = yield* Extensions
        if (extensions.console === undefined) {
          return HttpServerResponse.text(
            "The web console is not built. Run `pnpm build` (or use the API: see docs/api.md).\n",
            { status: 404 }
          )
        }
        return yield* extensions.console(path)
      }
      case "Api": {
        const extensions = yield* Extensions
        if (extensions.api === undefined) {
          return toResponse(EngineGateway.errorAnswer(
            Dialects.client("openai"),
            new GatewayError.RouteNotFound({ message: `No route for ${path}. See docs/api.md.` }),
            requestId
          ))
        }
        return yield* extensions.api(request)
      }
    }
  })

/**
 * The application effect served for every request.
 *
 * @category app
 */
export const app = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const requestId = Ids.requestId()
  const queryAt = request.url.indexOf("?")
  const path = queryAt === -1 ? request.url : request.url.slice(0, queryAt)
  const matched = Routes.match(request.method, path, request.headers)
  // The listener sends every other route to the engine before this application sees it.
  const served: Effect.Effect<HttpServerResponse.HttpServerResponse, never, EngineGateway.Requirements | Extensions> =
    Routes.isHostRoute(matched)
      ? host(matched, request, path, requestId)
      : Effect.succeed(toResponse(EngineGateway.errorAnswer(
        EngineGateway.clientOf(matched),
        new GatewayError.RouteNotFound({
          message: `${path} is served by the listener (Listener.ts), not this application.`
        }),
        requestId
      )))
  // An answer that carries its own request id (a playground call the engine served) keeps it: it names the call
  // in the request log.
  const answered = Effect.map(
    served,
    (response) =>
      response.headers["x-request-id"] !== undefined
        ? response
        : HttpServerResponse.setHeader(response, "x-request-id", requestId)
  )
  const settings = yield* ServerSettings
  // Nothing to do (not even a clock read) when the line would be filtered out anyway.
  if (
    !AccessLog.enabled(settings) || matched._tag === "Health" || matched._tag === "Ready" || matched._tag === "Metrics"
  ) {
    return yield* answered
  }
  return yield* AccessLog.logged(answered, { requestId, method: request.method, path }, (response) => response.status)
})
