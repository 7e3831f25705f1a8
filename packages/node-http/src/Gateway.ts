/**
 * The HTTP application: one Effect per request that routes, authenticates,
 * runs the handler and writes every error in the dialect of the route. Every
 * answer carries the request's `x-request-id`. Proxy routes do no logging of
 * their own beyond failures; the access log is one structured line per request
 * (`access_log`, at level info, health checks left out), written here when the
 * response starts.
 *
 * @since 0.1.0
 */
import { Admission, Catalog, Domain, GatewayError } from "@modelgate/core"
import { ByteSize, Cause, Clock, Context, Effect, Exit } from "effect"
import { HttpIncomingMessage, type HttpServerError, HttpServerRequest, HttpServerResponse } from "effect/http"
import { randomFillSync } from "node:crypto"
import * as Chat from "./Chat.ts"
import type { ClientCodec } from "./Codecs.ts"
import { presentedKey } from "./Credentials.ts"
import * as Dialects from "./Dialects.ts"
import * as LegacyBilling from "./LegacyBilling.ts"
import * as RateLimits from "./RateLimits.ts"
import * as Routes from "./Routes.ts"
import { Draining } from "./Draining.ts"
import { ServerSettings } from "./Settings.ts"

/** Optional handlers mounted by the server: the management API and the console's static files. @category services */
export class Extensions extends Context.Service<Extensions, {
  readonly api: ((request: HttpServerRequest.HttpServerRequest) => Effect.Effect<HttpServerResponse.HttpServerResponse>) | undefined
  readonly console: ((path: string) => Effect.Effect<HttpServerResponse.HttpServerResponse>) | undefined
  readonly ready: Effect.Effect<boolean>
}>()("modelgate/node-http/Extensions") {}

/** Whether the server is shutting down (see `Draining.ts`). @category services */
export { Draining } from "./Draining.ts"

// Request ids: 12 random bytes as hex, taken from a pool filled 4 KB at a time (one call into the
// random source per request cost more than the rest of making the id).
const idPool = Buffer.allocUnsafe(4096)
let idPoolAt = idPool.length
const requestIdOf = (): string => {
  if (idPoolAt + 12 > idPool.length) {
    randomFillSync(idPool)
    idPoolAt = 0
  }
  const id = `req_${idPool.toString("hex", idPoolAt, idPoolAt + 12)}`
  idPoolAt += 12
  return id
}

const errorResponse = (client: ClientCodec, error: GatewayError.GatewayError, requestId: string) => {
  const rendered = client.renderError(error)
  // OpenAI's 429 for a rate limit also carries the x-ratelimit-* headers of the limit that refused it.
  const limits = error._tag === "RateLimited" && client.dialect === "openai" ? RateLimits.refusalHeaders(error) : undefined
  return HttpServerResponse.jsonUnsafe(rendered.body, {
    status: rendered.status,
    headers: limits === undefined
      ? { ...rendered.headers, "x-request-id": requestId }
      : { ...limits, ...rendered.headers, "x-request-id": requestId }
  })
}

const readBody = Effect.fnUntraced(function*(request: HttpServerRequest.HttpServerRequest, maxBytes: number) {
  const declared = Number(request.headers["content-length"] ?? "")
  // Made only when needed: an error captures a stack trace, which is not free on every request.
  const tooLarge = () =>
    new GatewayError.RequestTooLarge({
      limitBytes: maxBytes,
      message: `The request body is larger than this gateway accepts (${maxBytes} bytes). Send a smaller request.`
    })
  if (Number.isFinite(declared) && declared > maxBytes) return yield* tooLarge()
  return yield* request.text.pipe(
    Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(BigInt(maxBytes))),
    Effect.catch((error: HttpServerError.HttpServerError) =>
      Effect.fail(
        error.reason._tag === "RequestParseError" && error.reason.reason === "BodyTooLarge"
          ? tooLarge()
          : new GatewayError.InvalidRequest({ message: "The request body could not be read." })
      )
    )
  )
})

/**
 * The application effect served for every request.
 *
 * @category app
 */
export const app = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const requestId = requestIdOf()
  const queryAt = request.url.indexOf("?")
  const path = queryAt === -1 ? request.url : request.url.slice(0, queryAt)
  const search = queryAt === -1 ? "" : request.url.slice(queryAt + 1)
  const matched = Routes.match(request.method, path, request.headers)
  const dialect: Domain.Dialect = "dialect" in matched ? matched.dialect : "openai"
  const client = Dialects.client(dialect)

  const handled = Effect.gen(function*() {
    switch (matched._tag) {
      case "NotFound":
        return yield* new GatewayError.RouteNotFound({ message: matched.message })
      case "MethodNotAllowed":
        return yield* new GatewayError.MethodNotAllowed({ message: matched.message, allow: matched.allow })
      case "Health":
        return HttpServerResponse.jsonUnsafe({ status: "ok" })
      case "Ready": {
        if (yield* (yield* Draining).draining) {
          return HttpServerResponse.jsonUnsafe({ status: "draining", reason: "the server is shutting down" }, { status: 503 })
        }
        const extensions = yield* Extensions
        return (yield* extensions.ready)
          ? HttpServerResponse.jsonUnsafe({ status: "ready" })
          : HttpServerResponse.jsonUnsafe({ status: "not ready", reason: "the database is not reachable" }, { status: 503 })
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
          return yield* new GatewayError.RouteNotFound({ message: `No route for ${path}. See docs/api.md.` })
        }
        return yield* extensions.api(request)
      }
      default:
        break
    }
    const key = yield* Admission.authenticate(presentedKey(dialect, request.headers, search))
    switch (matched._tag) {
      case "OpenAIModels":
      case "GeminiModels": {
        const snapshot = yield* (yield* Catalog.Catalog).current
        const models = Admission.allowedModels(snapshot, key)
        return HttpServerResponse.jsonUnsafe(yield* Dialects.modelsList(dialect, models, search))
      }
      case "OpenAIModel":
      case "GeminiModel": {
        const snapshot = yield* (yield* Catalog.Catalog).current
        const id = snapshot.resolveModel(matched.model)
        const model = Admission.allowedModels(snapshot, key).find((m) => m.id === id)
        if (model === undefined) {
          return yield* new GatewayError.ModelNotFound({
            model: matched.model,
            message: `The model '${matched.model}' does not exist or your key may not use it. List your models at ${
              dialect === "gemini" ? "/v1beta/models" : "/v1/models"
            }.`
          })
        }
        return HttpServerResponse.jsonUnsafe(Dialects.modelObject(dialect, model))
      }
      case "BillingSubscription":
        return yield* LegacyBilling.subscription(key, requestId)
      case "BillingUsage":
        return yield* LegacyBilling.usage(key, requestId, search)
      case "OpenAIChat":
      case "GeminiAction": {
        const settings = yield* ServerSettings
        const body = yield* readBody(request, settings.maxBodyBytes)
        const startedAt = yield* Clock.currentTimeMillis
        if (matched._tag === "GeminiAction" && matched.action !== "generateContent" && matched.action !== "streamGenerateContent") {
          return yield* Dialects.geminiMethod(matched.action, { requestId, key, body, model: matched.model, search })
        }
        return yield* Chat.handle({
          requestId,
          startedAt,
          key,
          client,
          upstreams: Dialects.upstream,
          body,
          headers: request.headers,
          hints: matched._tag === "GeminiAction"
            ? { model: matched.model, stream: matched.action === "streamGenerateContent", sse: new URLSearchParams(search).get("alt") === "sse" }
            : {}
        })
      }
      case "OpenAIEmbeddings": {
        const settings = yield* ServerSettings
        const body = yield* readBody(request, settings.maxBodyBytes)
        return yield* Dialects.openAIEmbeddings({ requestId, key, body })
      }
    }
  })

  const answered = handled.pipe(
    Effect.provideService(Admission.ClientDialect, dialect),
    Effect.catchCause((cause) => {
      if (Cause.hasInterruptsOnly(cause)) return Effect.interrupt
      for (const reason of cause.reasons) {
        if (reason._tag === "Fail" && GatewayError.isGatewayError(reason.error)) {
          return Effect.succeed(errorResponse(client, reason.error, requestId))
        }
      }
      return Effect.logError("request failed", Cause.pretty(cause)).pipe(
        Effect.annotateLogs({ requestId, path }),
        Effect.as(errorResponse(
          client,
          new GatewayError.InternalError({ message: `The gateway failed to handle the request (request id ${requestId}). The operator can find the cause in the log.` }),
          requestId
        ))
      )
    }),
    Effect.map((response) => HttpServerResponse.setHeader(response, "x-request-id", requestId))
  )
  const settings = yield* ServerSettings
  // Nothing to do (not even a clock read) when the line would be filtered out anyway.
  const logged = settings.accessLog && (settings.logLevel === "info" || settings.logLevel === "debug")
  if (!logged || matched._tag === "Health" || matched._tag === "Ready") return yield* answered
  const started = yield* Clock.currentTimeMillis
  return yield* answered.pipe(
    Effect.onExit((exit) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.logInfo("request").pipe(
          Effect.annotateLogs({
            request_id: requestId,
            method: request.method,
            path,
            // A client that went away before the answer started: nginx's 499.
            status: Exit.isSuccess(exit) ? exit.value.status : 499,
            duration_ms: now - started
          })
        ))
    )
  )
})
