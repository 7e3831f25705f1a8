/**
 * The console playground's engine (admin-api's `PlaygroundEngine` port): a
 * playground turn is handed to the engine's public entry, `Gateway.serve`, as
 * a `POST /v1/chat/completions` of the chosen key, so it goes through exactly
 * what any call with that key goes through (admission, the key's models,
 * limits, caps and budgets, the user's balance, routing, failover, metering,
 * settlement and the request log).
 *
 * Keys are stored hashed, so the console cannot present a key's secret.
 * Instead the call presents a one-time random credential, and for this call
 * alone the engine's key store answers it with the key the management API
 * loaded for its owner (after checking the session, its CSRF token and that
 * the key is the caller's). Any other credential finds nothing.
 *
 * @since 0.1.0
 */
import type { PlaygroundCall, PlaygroundEngine } from "@modelgate/admin-api/PlaygroundEngine"
import { GatewayError, KeyStore } from "@modelgate/core"
import * as Ids from "@modelgate/engine/call/Ids"
import * as EngineGateway from "@modelgate/engine/host/Gateway"
import type * as Exchange from "@modelgate/engine/wire/Exchange"
import * as Routes from "@modelgate/engine/wire/Routes"
import { type Context, Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { randomBytes } from "node:crypto"
import * as Gateway from "./Gateway.ts"

/** The path a playground turn is served as. @category constants */
export const PATH = "/v1/chat/completions"

/**
 * The playground's engine over the engine's services.
 *
 * @category constructors
 */
export const make = (
  context: Context.Context<EngineGateway.Requirements>
): typeof PlaygroundEngine.Service => ({
  chat: (call: PlaygroundCall) => {
    const requestId = Ids.requestId()
    const credential = `mg-playground-${randomBytes(24).toString("base64url")}`
    const headers = {
      authorization: `Bearer ${credential}`,
      "content-type": "application/json",
      "user-agent": "modelgate-console-playground"
    }
    const request: Exchange.GatewayRequest = {
      method: "POST",
      path: PATH,
      search: "",
      headers,
      body: (maxBytes) =>
        call.body.byteLength > maxBytes
          ? Effect.fail(
            new GatewayError.RequestTooLarge({
              message: `The request body is larger than ${maxBytes} bytes.`,
              limitBytes: maxBytes
            })
          )
          : Effect.succeed(call.body)
    }
    const route = Routes.match("POST", PATH, headers)
    if (Routes.isHostRoute(route)) return Effect.die(new Error(`${PATH} is not a route of the engine`))
    const keys = KeyStore.KeyStore.of({
      lookup: (secret) => Effect.succeed(secret === credential ? call.key : undefined)
    })
    return EngineGateway.serve(request, route, requestId).pipe(
      // Inside the engine's services, so this call's key store is the one its admission reads.
      Effect.provideService(KeyStore.KeyStore, keys),
      Effect.provideContext(context),
      Effect.map((answer) => HttpServerResponse.setHeader(Gateway.toResponse(answer), "x-request-id", requestId))
    )
  }
})
