/**
 * The gateway's API surface in any runtime: one Effect per request that
 * routes it (`Routes.match`), authenticates its key in the route's dialect,
 * runs the call (chat in every dialect: OpenAI chat completions and Responses,
 * Gemini generateContent, Anthropic Messages; embeddings, token counts,
 * models, the legacy billing endpoints) and renders every error in that
 * dialect's envelope. Every answer
 * carries the request's `x-request-id`.
 *
 * The host keeps the routes that are its own business (`Routes.isHostRoute`:
 * health checks, the management API, the console's files) and hands the rest
 * to `serve`.
 *
 * A request runs uninterruptibly up to the upstream attempts (`serve` makes it
 * so, whatever the host): admission never takes a rate-limit permit or a
 * balance hold without the finaliser that gives it back. The attempts can be
 * interrupted: a host interrupts the request's fiber when its client goes
 * away (with effect's `ClientAbort` annotation, as Effect's HTTP server does)
 * or when the shutdown's grace period ends, which aborts the upstream request
 * and settles the call (`Settlement.interruption`).
 *
 * @since 0.1.0
 */
import {
  type Accounts,
  Admission,
  Catalog,
  type Dialect,
  type Domain,
  GatewayError,
  JsonScan,
  type KeyStore,
  type RateLimiter,
  type UsageLog
} from "@modelgate/core"
import { Passthrough as GeminiPassthrough } from "@modelgate/genai-adapter"
import { Cause, Clock, Effect } from "effect"
import * as Chat from "../call/Chat.ts"
import * as CountTokens from "../call/CountTokens.ts"
import * as Dialects from "../call/Dialects.ts"
import * as Embeddings from "../call/Embeddings.ts"
import { Settings } from "../config/Settings.ts"
import * as LegacyBilling from "../money/LegacyBilling.ts"
import type * as Settlement from "../money/Settlement.ts"
import type * as Health from "../routing/Health.ts"
import * as CallSpans from "../telemetry/CallSpans.ts"
import * as Telemetry from "../telemetry/Telemetry.ts"
import * as Exchange from "../wire/Exchange.ts"
import type * as Routes from "../wire/Routes.ts"
import type { Transport } from "../wire/Transport.ts"

/**
 * The services a host provides for `serve`: the key store, catalog, accounts,
 * usage log and rate limiter (core's ports), key health, the settlements
 * tracker, the settings, and the upstream transport.
 *
 * @category models
 */
export type Requirements =
  | KeyStore.KeyStore
  | Catalog.Catalog
  | Accounts.Accounts
  | UsageLog.UsageLog
  | RateLimiter.RateLimiter
  | Health.Health
  | Settlement.Settlements
  | Settings
  | Transport

/**
 * An error as an answer in a client's dialect; `nowMs`, when known, is when
 * it happened (Anthropic's rate-limit resets are dates).
 *
 * @category answers
 */
export const errorAnswer = (
  client: Dialect.ClientDialect,
  error: GatewayError.GatewayError,
  requestId: string,
  nowMs?: number
): Exchange.TextAnswer => {
  // However an error came about, it echoes at most a short part of any value it quotes.
  const rendered = client.renderError(GatewayError.forCaller(error), nowMs)
  return Exchange.json(rendered.body, rendered.status, { ...rendered.headers, "x-request-id": requestId })
}

/**
 * The answer to a request the route table found no route for (or a method
 * the route does not take), in the dialect the path suggests.
 *
 * @category answers
 */
export const missAnswer = (miss: Routes.Miss, requestId: string): Exchange.TextAnswer =>
  errorAnswer(
    Dialects.client(miss.dialect),
    miss._tag === "NotFound"
      ? new GatewayError.RouteNotFound({ message: miss.message })
      : new GatewayError.MethodNotAllowed({ message: miss.message, allow: miss.allow }),
    requestId
  )

/**
 * The client side of the dialect a route (or a miss) is answered in.
 *
 * @category answers
 */
export const clientOf = (route: Routes.ApiRoute | Routes.Miss): Dialect.ClientDialect => Dialects.client(route.dialect)

const internalError = (requestId: string) =>
  new GatewayError.InternalError({
    message:
      `The gateway failed to handle the request (request id ${requestId}). The operator can find the cause in the log.`
  })

/**
 * Reads a chat request's body within `max_body_bytes`, as bytes: the client
 * dialect's inspection scans it, refusing JSON nested more than
 * `JsonDepth.MAX_DEPTH` levels in the same pass, before anything parses or
 * translates it (which would overflow the stack).
 */
const readBytes = (request: Exchange.GatewayRequest) =>
  Effect.flatMap(Settings, (settings) => request.body(settings.maxBodyBytes))

/**
 * Reads a request's body within `max_body_bytes` as text, refusing one that
 * nests JSON more than `JsonDepth.MAX_DEPTH` levels deep or sets a top-level
 * key twice (`JsonScan.checkWhole`; for Gemini, two spellings of one field
 * count as twice): embeddings and token counts, which parse it whole.
 */
const readText = (request: Exchange.GatewayRequest, dialect: Domain.Dialect) =>
  Effect.flatMap(readBytes(request), (bytes) => {
    const refused = JsonScan.checkWhole(bytes, dialect === "gemini" ? GeminiPassthrough.sameField : undefined)
    return refused === undefined ? Effect.succeed(JsonScan.decode(bytes)) : Effect.fail(refused)
  })

/**
 * Serves one request on a route of the API surface: never fails (every error
 * is rendered in the route's dialect), and is uninterruptible up to the
 * upstream attempts.
 *
 * @category serving
 */
export const serve = (
  request: Exchange.GatewayRequest,
  route: Routes.ApiRoute | Routes.Miss,
  requestId: string
): Effect.Effect<Exchange.Answer, never, Requirements> => {
  if (route._tag === "NotFound" || route._tag === "MethodNotAllowed") {
    return Effect.succeed<Exchange.Answer>(missAnswer(route, requestId))
  }
  const dialect: Domain.Dialect = route.dialect
  const client = Dialects.client(dialect)
  const trace = request.trace
  const handled = Effect.gen(function*() {
    const key = yield* Telemetry.span(trace, "authenticate", true)(
      Admission.authenticate(client.presentedKey(request.headers, request.search))
    )
    CallSpans.caller(trace, key)
    switch (route._tag) {
      case "OpenAIModels":
      case "GeminiModels":
      case "AnthropicModels": {
        const snapshot = yield* (yield* Catalog.Catalog).current
        const models = Admission.allowedModels(snapshot, key)
        return Exchange.json(yield* client.modelsList(models, request.search), 200, { "x-request-id": requestId })
      }
      case "OpenAIModel":
      case "GeminiModel":
      case "AnthropicModel": {
        const snapshot = yield* (yield* Catalog.Catalog).current
        const id = snapshot.resolveModel(route.model)
        const model = Admission.allowedModels(snapshot, key).find((m) => m.id === id)
        if (model === undefined) {
          return yield* new GatewayError.ModelNotFound({
            model: GatewayError.echo(route.model),
            message: `The model '${
              GatewayError.echo(route.model)
            }' does not exist or your key may not use it. List your models at ${
              client.modelsListPath.replace(/^GET /, "")
            }.`
          })
        }
        return Exchange.json(client.modelObject(model), 200, { "x-request-id": requestId })
      }
      case "BillingSubscription":
        return yield* LegacyBilling.subscription(key, requestId)
      case "BillingUsage":
        return yield* LegacyBilling.usage(key, requestId, request.search)
      case "OpenAIChat":
      case "Responses":
      case "AnthropicMessages":
        return yield* Chat.handle({
          requestId,
          trace,
          startedAt: yield* Clock.currentTimeMillis,
          key,
          client,
          body: yield* readBytes(request),
          headers: request.headers,
          hints: {}
        })
      case "AnthropicCountTokens":
        return yield* CountTokens.handle({
          requestId,
          trace,
          key,
          client,
          counter: client.countTokens!,
          body: yield* readText(request, dialect),
          hints: {},
          headers: request.headers
        })
      case "OpenAIEmbeddings":
        return yield* Embeddings.handle({
          requestId,
          trace,
          key,
          client,
          embeddings: client.embeddings!,
          body: yield* readText(request, dialect),
          hints: {}
        })
      case "GeminiAction": {
        switch (route.action) {
          case "generateContent":
          case "streamGenerateContent":
            return yield* Chat.handle({
              requestId,
              trace,
              startedAt: yield* Clock.currentTimeMillis,
              key,
              client,
              body: yield* readBytes(request),
              headers: request.headers,
              hints: {
                model: route.model,
                stream: route.action === "streamGenerateContent",
                sse: new URLSearchParams(request.search).get("alt") === "sse"
              }
            })
          case "countTokens":
            return yield* CountTokens.handle({
              requestId,
              trace,
              key,
              client,
              counter: client.countTokens!,
              body: yield* readText(request, dialect),
              hints: { model: route.model },
              headers: request.headers
            })
          case "embedContent":
          case "batchEmbedContents":
            return yield* Embeddings.handle({
              requestId,
              trace,
              key,
              client,
              embeddings: client.embeddings!,
              body: yield* readText(request, dialect),
              hints: { model: route.model, operation: route.action }
            })
        }
      }
    }
  })
  return handled.pipe(
    Effect.provideService(Admission.ClientDialect, dialect),
    Effect.catchCause((cause): Effect.Effect<Exchange.Answer> => {
      if (Cause.hasInterruptsOnly(cause)) return Effect.interrupt
      for (const reason of cause.reasons) {
        if (reason._tag === "Fail" && GatewayError.isGatewayError(reason.error)) {
          CallSpans.refused(trace, reason.error)
          const error = reason.error
          return Effect.map(Clock.currentTimeMillis, (now) => errorAnswer(client, error, requestId, now))
        }
      }
      trace?.span.attribute("modelgate.error_code", "InternalError")
      return Effect.logError("request failed", Cause.pretty(cause)).pipe(
        Effect.annotateLogs({ requestId, path: request.path }),
        Effect.as(errorAnswer(client, internalError(requestId), requestId))
      )
    }),
    Effect.uninterruptible
  )
}
