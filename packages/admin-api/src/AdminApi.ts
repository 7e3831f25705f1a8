/**
 * The management API, served: the contract of `Api.ts` with the handlers of
 * `handlers/` and the middleware of `Middleware.ts`, as one service with one
 * function, `handle(request)`, that node-http calls for every path under
 * `/api/` and whose answer it writes. `handle` never fails: every refusal is
 * a JSON error in the API's envelope (`ApiError`), and so are unknown paths
 * (404), wrong methods (405), bodies over 1 MB (413) and defects (500, the
 * cause logged). `GET /api/openapi.json` serves the contract as OpenAPI.
 *
 * @since 0.1.0
 */
import type { Accounts as AccountsPort, ChannelHealth, ChannelProbe, Invalidation, KeyStore } from "@modelgate/core"
import type { Catalog } from "@modelgate/core/domain/Catalog"
import type { Accounts } from "@modelgate/store/Accounts"
import type { CatalogRepo } from "@modelgate/store/CatalogRepo"
import type { Keys } from "@modelgate/store/Keys"
import type { Redemption } from "@modelgate/store/Redemption"
import { Reports } from "@modelgate/store/Reports"
import { Sessions } from "@modelgate/store/Sessions"
import type { Users } from "@modelgate/store/Users"
import { ByteSize, Cause, Context, Effect, Layer } from "effect"
import {
  HttpIncomingMessage,
  HttpRouter,
  HttpServer,
  HttpServerError,
  HttpServerRequest,
  HttpServerResponse
} from "effect/http"
import { HttpApi, HttpApiBuilder } from "effect/http-api"
import type { SqlClient } from "effect/sql"
import { Api, OPENAPI_PATH } from "./Api.ts"
import * as ApiError from "./ApiError.ts"
import * as Account from "./handlers/Account.ts"
import * as Catalog_ from "./handlers/Catalog.ts"
import * as Codes from "./handlers/Codes.ts"
import * as Keys_ from "./handlers/Keys.ts"
import * as Playground from "./handlers/Playground.ts"
import * as Session from "./handlers/Session.ts"
import * as Sso from "./handlers/Sso.ts"
import * as Usage from "./handlers/Usage.ts"
import * as Users_ from "./handlers/Users.ts"
import { LoginLimiter, type Options as LimiterOptions } from "./LoginLimiter.ts"
import * as Middleware from "./Middleware.ts"

/**
 * What the API needs from its host: the store's repositories and core's
 * ports the server implements (`KeyStore`, `Catalog`, `Accounts`,
 * `Invalidation`, `ChannelProbe`, `ChannelHealth`), and the SQL client its
 * sessions and reports run on.
 *
 * @category models
 */
export type Requirements =
  | SqlClient.SqlClient
  | Users
  | Keys
  | Accounts
  | Redemption
  | CatalogRepo
  | KeyStore.KeyStore
  | Catalog
  | AccountsPort.Accounts
  | Invalidation.Invalidation
  | ChannelProbe.ChannelProbe
  | ChannelHealth.ChannelHealth

/** The largest request body the API reads. @category constants */
export const MAX_BODY_BYTES = 1024 * 1024

/**
 * Whether a path belongs to this API (everything under `/api/`).
 *
 * @category routing
 */
export const owns = (path: string): boolean => path.startsWith("/api/")

/** Every (method, path template) of the contract, for telling a wrong method (405) from an unknown path (404). */
const routeTable = (): ReadonlyArray<{ readonly method: string; readonly segments: ReadonlyArray<string> }> => {
  const routes: Array<{ method: string; segments: ReadonlyArray<string> }> = [{
    method: "GET",
    segments: OPENAPI_PATH.split("/")
  }]
  HttpApi.reflect(Api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => routes.push({ method: endpoint.method, segments: endpoint.path.split("/") })
  })
  return routes
}

const matches = (segments: ReadonlyArray<string>, path: string): boolean => {
  const got = path.split("/")
  return got.length === segments.length &&
    segments.every((segment, i) => segment.startsWith(":") ? got[i]!.length > 0 : segment === got[i])
}

const pathOf = (url: string): string => {
  const question = url.indexOf("?")
  const path = question === -1 ? url : url.slice(0, question)
  return path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path
}

const noStore = (response: HttpServerResponse.HttpServerResponse) =>
  HttpServerResponse.setHeader(response, "cache-control", "no-store")

/**
 * The served API.
 *
 * @category services
 */
export class AdminApi extends Context.Service<AdminApi, {
  /** Answers one request under `/api/`; never fails. */
  readonly handle: (
    request: HttpServerRequest.HttpServerRequest
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
}>()("modelgate/admin-api/AdminApi") {
  /**
   * The API over its host's services, with its own sessions (in SQL, lasting
   * `sessionTtlMs`, default 7 days), reports and in-memory sign-in limiter.
   * Its settings (`AdminApiConfig`) are read per request, so the host may
   * provide them around `handle`.
   *
   * @category layers
   */
  static readonly layer = (options: {
    readonly sessionTtlMs?: number | undefined
    readonly loginLimits?: Partial<LimiterOptions> | undefined
  } = {}): Layer.Layer<AdminApi, never, Requirements> =>
    Layer.effect(
      AdminApi,
      Effect.gen(function*() {
        const context = yield* Effect.context<Requirements | Sessions | Reports | LoginLimiter>()
        const routes = HttpApiBuilder.layer(Api, { openapiPath: OPENAPI_PATH }).pipe(
          Layer.provide([
            Session.layer,
            Account.layer,
            Keys_.layer,
            Usage.layer,
            Users_.layer,
            Catalog_.layer,
            Codes.layer,
            Sso.layer,
            Playground.layer
          ]),
          Layer.provide(Middleware.layer),
          Layer.provide(HttpServer.layerServices),
          Layer.provide(Layer.succeedContext(context))
        )
        const app = yield* HttpRouter.toHttpEffect(routes)
        const table = routeTable()

        const refusal = (request: HttpServerRequest.HttpServerRequest, cause: Cause.Cause<unknown>) => {
          for (const reason of cause.reasons) {
            const error = Cause.isFailReason(reason)
              ? reason.error
              : Cause.isDieReason(reason)
              ? reason.defect
              : undefined
            if (error instanceof ApiError.ApiError) return Effect.succeed(error)
            if (HttpServerError.isHttpServerError(error)) {
              if (error.reason._tag === "RouteNotFound") {
                const path = pathOf(request.url)
                const allow = [
                  ...new Set(table.filter((route) => matches(route.segments, path)).map((route) => route.method))
                ]
                return Effect.succeed(
                  allow.length === 0
                    ? ApiError.noRoute(request.method, path)
                    : ApiError.methodNotAllowed(request.method, path, allow)
                )
              }
              if (error.reason._tag === "RequestParseError" && error.reason.reason === "BodyTooLarge") {
                return Effect.succeed(ApiError.tooLarge(MAX_BODY_BYTES))
              }
            }
          }
          return Effect.as(Effect.logError("admin-api defect", cause), ApiError.internal())
        }

        return AdminApi.of({
          handle: (request) =>
            app.pipe(
              Effect.provideService(HttpServerRequest.HttpServerRequest, request),
              Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(BigInt(MAX_BODY_BYTES))),
              Effect.scoped,
              Effect.provideContext(context),
              Effect.catchCause((cause) => Effect.map(refusal(request, cause), ApiError.toResponse)),
              Effect.map(noStore)
            )
        })
      })
    ).pipe(
      Layer.provide(Layer.mergeAll(
        Sessions.layer(options.sessionTtlMs),
        Reports.layer,
        LoginLimiter.layer(options.loginLimits)
      ))
    )
}
