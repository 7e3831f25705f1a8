/**
 * `ChannelProbe`: one real, one-token request through a channel, with the
 * same codecs, HTTP clients and timeouts as calls use. The console's Test
 * button and the health prober (`Health.ts`) use it. Also the upstream's own
 * model list (`listModels`, the console's Fetch models), every page of it,
 * through the same transport and timeouts.
 *
 * The health prober checks a key with `checkKey`: the provider's model list,
 * which depends on no model, so its 401 or 403 is the key's
 * (`credentialsRefused`: the prober disables the key on it). A one-token
 * `probe` of a model counts only a clear refusal of the key: its 403 may be
 * about that model alone (an organisation not verified for it). It works only
 * when the upstream answers with an answer of its dialect, not any 200.
 * The upstream's words it reports are redacted of the channel's secrets.
 *
 * @since 0.1.0
 */
import { ChannelProbe, type Dialect, Domain, GatewayError } from "@modelgate/core"
import { Clock, Effect, Layer } from "effect"
import * as Redaction from "../telemetry/Redaction.ts"
import * as CloudAuth from "../wire/CloudAuth.ts"
import { Transport } from "../wire/Transport.ts"
import * as Upstream from "../wire/Upstream.ts"
import * as Dialects from "./Dialects.ts"
import { isCredentialRefusal } from "./Failover.ts"

/** A probe asks for one token: its answer is small, and a larger one is read no further than this. */
const PROBE_ANSWER_LIMIT = 1024 * 1024

/**
 * Whether a classified upstream error is a refusal of the key's credentials
 * (defined with the rest of the failure classification in `Failover.ts`).
 *
 * @category probing
 */
export { isCredentialRefusal }

const probe = (channel: Domain.Channel, model: string | undefined, apiKey: string | undefined) =>
  model === undefined && CloudAuth.isCloud(channel)
    ? cloudProbe(channel, apiKey ?? channel.apiKeys[0] ?? "")
    : chatProbe(channel, model, apiKey)

const chatProbe = (channel: Domain.Channel, model: string | undefined, apiKey: string | undefined) =>
  Effect.gen(function*() {
    const started = yield* Clock.currentTimeMillis
    const elapsed = Effect.map(Clock.currentTimeMillis, (now) => now - started)
    const publicModel = model ?? channel.models[0] ?? ""
    const upstreamModel = Domain.upstreamModel(channel, publicModel)
    const codec = Dialects.ofChannel(channel, upstreamModel)
    const attempt = Effect.gen(function*() {
      const body = yield* codec.encodeRequest({
        model: publicModel,
        messages: [{ role: "user", content: [{ type: "text", text: "ping" }] }],
        maxOutputTokens: 1,
        stream: false
      }, upstreamModel)
      const at = Upstream.deadlines(channel, started, started)
      const response = yield* Upstream.send(
        channel,
        codec.chatUrl(channel, upstreamModel, false),
        codec.headers(channel, apiKey ?? channel.apiKeys[0] ?? ""),
        body,
        at,
        "POST",
        apiKey ?? channel.apiKeys[0]
      )
      if (response.status >= 400) {
        const text = yield* Upstream.errorBody(response)
        const error = codec.classify(response.status, text, response.headers)
        return {
          ok: false,
          latencyMs: yield* elapsed,
          status: response.status,
          // The probe's audience is the operator: the upstream's own words come with the classification.
          message: `${error.message} The upstream said: ${Upstream.upstreamMessage(text)}`,
          upstreamMessage: Upstream.upstreamMessage(text),
          // A 403 to a one-token request may be about its model (an organisation not verified for it): the
          // key's own check (`checkKey`) decides about the key.
          credentialsRefused: isCredentialRefusal(error)
        }
      }
      const text = yield* Upstream.readText(response, PROBE_ANSWER_LIMIT)
      const latencyMs = yield* elapsed
      let json: unknown
      try {
        json = JSON.parse(text)
      } catch {
        json = text
      }
      // A 200 that is not an answer (an HTML page, an error) is not a working channel.
      const notAnAnswer = codec.notAnAnswer(json, channel.name)
      if (notAnAnswer !== undefined) {
        const message = Redaction.error(channel, notAnAnswer).message
        return {
          ok: false,
          latencyMs,
          status: response.status,
          message,
          upstreamMessage: null,
          credentialsRefused: false
        }
      }
      return {
        ok: true,
        latencyMs,
        status: response.status,
        message: `${upstreamModel} answered`,
        upstreamMessage: null,
        credentialsRefused: false
      }
    })
    return yield* attempt.pipe(
      Effect.catch((error: GatewayError.GatewayError) =>
        Effect.map(
          elapsed,
          (latencyMs) => ({
            ok: false,
            latencyMs,
            status: null,
            message: error.message,
            upstreamMessage: null,
            credentialsRefused: false
          })
        )
      )
    )
  })

/**
 * The model-free credential check of a cloud channel's key (the health
 * prober's; the console's Test sends a real request for a model):
 *
 * - `vertex`: a token exchange with the service account's key (a new token,
 *   whatever is cached): a refusal (`invalid_grant`, an unknown key) refuses
 *   the key.
 * - `bedrock`: `ListFoundationModels` on the control plane, signed (or with
 *   the API key) like a call. A refused signature or key refuses the key;
 *   `AccessDeniedException` does not: the credentials were accepted and only
 *   lack the permission to list, which calls do not need, so the key is
 *   taken as working (the result says its health is otherwise unknown).
 */
const cloudProbe = (channel: Domain.Channel, key: string) =>
  Effect.gen(function*() {
    const started = yield* Clock.currentTimeMillis
    const elapsed = Effect.map(Clock.currentTimeMillis, (now) => now - started)
    const at = Upstream.deadlines(channel, started, started)
    const failed = (error: GatewayError.GatewayError) =>
      Effect.map(elapsed, (latencyMs): ChannelProbe.ProbeResult => ({
        ok: false,
        latencyMs,
        status: "status" in error && typeof error.status === "number" ? error.status : null,
        message: Redaction.error(channel, error).message,
        upstreamMessage: null,
        credentialsRefused: isCredentialRefusal(error)
      }))
    if (channel.type === "vertex") {
      return yield* CloudAuth.freshToken(yield* Transport, channel, key, at).pipe(
        Effect.flatMap(() =>
          Effect.map(elapsed, (latencyMs): ChannelProbe.ProbeResult => ({
            ok: true,
            latencyMs,
            status: 200,
            message: "the service account's key was exchanged for an access token",
            upstreamMessage: null,
            credentialsRefused: false
          }))
        ),
        Effect.catch(failed)
      )
    }
    const upstream = Dialects.ofChannel(channel)
    const url = upstream.listModels!.url(channel, undefined)!
    return yield* Effect.gen(function*() {
      const response = yield* Upstream.send(channel, url, upstream.headers(channel, key), undefined, at, "GET", key)
      const latencyMs = yield* elapsed
      if (response.status < 400) {
        response.body.discard()
        return {
          ok: true,
          latencyMs,
          status: response.status,
          message: "the key listed the region's foundation models",
          upstreamMessage: null,
          credentialsRefused: false
        } satisfies ChannelProbe.ProbeResult
      }
      const text = yield* Upstream.errorBody(response)
      const error = upstream.classify(response.status, text, response.headers)
      const said = Upstream.upstreamMessage(text)
      if (/accessdenied/i.test(response.headers["x-amzn-errortype"] ?? "") || /AccessDenied/.test(text)) {
        return {
          ok: true,
          latencyMs,
          status: response.status,
          message:
            `the key was accepted but may not list foundation models (AccessDeniedException); its calls decide its health. The upstream said: ${said}`,
          upstreamMessage: said,
          credentialsRefused: false
        } satisfies ChannelProbe.ProbeResult
      }
      return {
        ok: false,
        latencyMs,
        status: response.status,
        message: `${Redaction.error(channel, error).message} The upstream said: ${said}`,
        upstreamMessage: said,
        credentialsRefused: isCredentialRefusal(error)
      } satisfies ChannelProbe.ProbeResult
    }).pipe(Effect.catch(failed))
  })

/**
 * Tests a key with the provider's model list (its first page), which depends
 * on no model: a 401 or 403 to it is about the key (and its project), never
 * one model's.
 */
const checkKey = (channel: Domain.Channel, apiKey: string | undefined) =>
  CloudAuth.isCloud(channel) ? cloudProbe(channel, apiKey ?? channel.apiKeys[0] ?? "") : listCheck(channel, apiKey)

const listCheck = (channel: Domain.Channel, apiKey: string | undefined) =>
  Effect.gen(function*() {
    const started = yield* Clock.currentTimeMillis
    const elapsed = Effect.map(Clock.currentTimeMillis, (now) => now - started)
    const upstream = Dialects.ofChannel(channel)
    const list = upstream.listModels
    const url = list?.keyCheckUrl?.(channel) ?? list?.url(channel, undefined)
    if (list === undefined || url === undefined) {
      // No model list to ask: a one-token request to the channel's first model is the only test there is.
      return yield* probe(channel, undefined, apiKey)
    }
    const attempt = Effect.gen(function*() {
      const at = Upstream.deadlines(channel, started, started)
      const response = yield* Upstream.send(
        channel,
        url,
        upstream.headers(channel, apiKey ?? channel.apiKeys[0] ?? ""),
        undefined,
        at,
        "GET"
      )
      if (response.status >= 400) {
        const text = yield* Upstream.errorBody(response)
        const error = Redaction.error(channel, upstream.classify(response.status, text, response.headers))
        return {
          ok: false,
          latencyMs: yield* elapsed,
          status: response.status,
          message: `${error.message} The upstream said: ${Upstream.upstreamMessage(text)}`,
          upstreamMessage: Upstream.upstreamMessage(text),
          credentialsRefused: isCredentialRefusal(error) || response.status === 401 || response.status === 403
        }
      }
      const listed = yield* Effect.flatMap(
        Upstream.readText(response, LIST_PAGE_LIMIT),
        (text) => list.decode(text, channel.name)
      )
      return {
        ok: true,
        latencyMs: yield* elapsed,
        status: response.status,
        message: `the key listed ${listed.models.length} model${listed.models.length === 1 ? "" : "s"}`,
        upstreamMessage: null,
        credentialsRefused: false
      }
    })
    return yield* attempt.pipe(
      Effect.catch((error: GatewayError.GatewayError) =>
        Effect.map(elapsed, (latencyMs) => ({
          ok: false,
          latencyMs,
          status: null,
          message: Redaction.error(channel, error).message,
          upstreamMessage: null,
          credentialsRefused: false
        }))
      )
    )
  })

/** A model list's page is read no further than this. */
const LIST_PAGE_LIMIT = 8 * 1024 * 1024

/** The most pages of a model list that are read (a list that never ends is cut there). @category constants */
export const MAX_LIST_PAGES = 20

const listModels = (channel: Domain.Channel, apiKey: string | undefined) =>
  Effect.gen(function*() {
    const upstream = Dialects.ofChannel(channel)
    const first = upstream.listModels?.url(channel, undefined)
    if (upstream.listModels === undefined || first === undefined) {
      return yield* new GatewayError.UnsupportedFeature({
        message: channel.type === "azure"
          ? `The channel '${channel.name}' is Azure OpenAI: it calls deployments by name, and its key cannot list them. Type the deployment names as the channel's models.`
          : `The channel '${channel.name}' (${channel.type}) cannot list its models. Type them.`
      })
    }
    const list = upstream.listModels
    const headers = upstream.headers(channel, apiKey ?? channel.apiKeys[0] ?? "")
    const started = yield* Clock.currentTimeMillis
    const models = new Map<string, Dialect.ListedModel>()
    let url: string | undefined = first
    for (let page = 0; page < MAX_LIST_PAGES && url !== undefined; page++) {
      const at = Upstream.deadlines(channel, yield* Clock.currentTimeMillis, started)
      const response: Upstream.UpstreamResponse = yield* Upstream.send(
        channel,
        url,
        headers,
        undefined,
        at,
        "GET",
        apiKey ?? channel.apiKeys[0]
      )
      if (response.status >= 400) {
        const body = yield* Upstream.errorBody(response)
        const error = Redaction.error(channel, upstream.classify(response.status, body, response.headers))
        // The operator's view: the gateway's words and the upstream's own.
        const said = Upstream.upstreamMessage(body)
        return yield* Effect.fail(
          GatewayError.mapText(
            error,
            (text, field) => field === "message" ? `${text} The upstream said: ${said}` : text
          )
        )
      }
      const listed: Dialect.ModelListPage = yield* Effect.flatMap(
        Upstream.readText(response, LIST_PAGE_LIMIT),
        (text) => list.decode(text, channel.name)
      )
      for (const model of listed.models) if (!models.has(model.id)) models.set(model.id, model)
      url = listed.next === undefined ? undefined : list.url(channel, listed.next)
    }
    return [...models.values()].sort((a, b) => a.id.localeCompare(b.id))
  })

/** @category layers */
export const layer: Layer.Layer<ChannelProbe.ChannelProbe, never, Transport> = Layer.effect(
  ChannelProbe.ChannelProbe,
  Effect.gen(function*() {
    const context = yield* Effect.context<Transport>()
    return ChannelProbe.ChannelProbe.of({
      // The probe needs no request scope: run it in its own.
      probe: (channel, model, apiKey) => Effect.provideContext(Effect.scoped(probe(channel, model, apiKey)), context),
      checkKey: (channel, apiKey) => Effect.provideContext(Effect.scoped(checkKey(channel, apiKey)), context),
      listModels: (channel, apiKey) => Effect.provideContext(Effect.scoped(listModels(channel, apiKey)), context)
    })
  })
)
