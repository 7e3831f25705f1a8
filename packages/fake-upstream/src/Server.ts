/**
 * The fake upstream: one real HTTP listener that imitates OpenAI, Azure
 * OpenAI, Gemini and Anthropic for tests, demos and benchmarks.
 *
 * Why plain `node:http` (and not Effect's HttpServer, which the gateway
 * itself uses): the benchmarks measure "client → fake upstream" as the
 * *direct* baseline and compare it with "client → gateway → fake upstream".
 * The baseline has to cost as little as possible per request, so this server
 * avoids every layer it can: no framework, no per-request allocation beyond
 * parsing the body, precomputed static bodies, coalesced stream writes and
 * keep-alive. Nothing here is meant as an example of gateway code.
 */
import * as http from "node:http"
import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http"
import type { AddressInfo, Socket } from "node:net"
import { setTimeout as sleep } from "node:timers/promises"
import { anthropicCountTokens, anthropicMessages, anthropicModel, anthropicModelsPage } from "./Anthropic.ts"
import { type BedrockOptions, handleBedrock, isBedrockPath } from "./Bedrock.ts"
import { isRecord } from "./Content.ts"
import {
  anthropicInvalidKey,
  anthropicMissingKey,
  AZURE_BAD_KEY,
  badRequest,
  type Dialect,
  type ErrorResponse,
  failure,
  GEMINI_INVALID_KEY,
  GEMINI_MISSING_KEY,
  notFound,
  OPENAI_INVALID_KEY,
  OPENAI_MISSING_KEY
} from "./Errors.ts"
import {
  geminiBatchEmbed,
  geminiCountTokens,
  geminiEmbed,
  geminiGenerate,
  geminiModel,
  geminiModelsPage,
  geminiStream
} from "./Gemini.ts"
import { echoHeaders, sendNotAnAnswer } from "./Misbehaviour.ts"
import {
  azureDeploymentsBody,
  azureModelsBody,
  openaiChat,
  openaiEmbeddings,
  openaiModel,
  openaiModelsBody
} from "./OpenAI.ts"
import { responses } from "./Responses.ts"
import { type CutMode, type NotAnAnswer, resolveScenario, type ScenarioDefaults } from "./Scenario.ts"
import {
  handlePublisher,
  handlePublisherList,
  handleToken,
  isVertexListPath,
  isVertexPath,
  TOKEN_PATH,
  type VertexOptions,
  VertexState
} from "./Vertex.ts"
import { type CallContext, cutConnection, sendJson } from "./Writer.ts"

export interface FakeUpstreamModels {
  readonly openai?: ReadonlyArray<string>
  readonly gemini?: ReadonlyArray<string>
  readonly anthropic?: ReadonlyArray<string>
}

export interface FakeUpstreamOptions {
  /** TCP port; 0 (default) picks a free one. */
  readonly port?: number
  /** Interface to bind; default "127.0.0.1". */
  readonly host?: string
  /** When set, only this key is accepted; otherwise any non-empty key is. */
  readonly apiKey?: string
  /** Delay added before every response (default 0). */
  readonly latencyMs?: number
  /** Delay between stream chunks unless a request says otherwise (default 0). */
  readonly chunkIntervalMs?: number
  /** First-byte delay of models whose name contains `slow` (default 1000). */
  readonly slowMs?: number
  /** How many requests `requests` keeps (default 1000; 0 disables recording). */
  readonly maxRecordedRequests?: number
  /** Model ids listed by the models endpoints (any model id is accepted anyway). */
  readonly models?: FakeUpstreamModels
  /** AWS Bedrock: the region, access keys and API keys it accepts (see the README). */
  readonly bedrock?: BedrockOptions
  /** Google Vertex AI: the project, service accounts and token lifetime (see the README). */
  readonly vertex?: VertexOptions
  /** The time the fake checks signatures and token lifetimes against (default `Date.now`). */
  readonly clock?: () => number
}

/**
 * Behaviour applied to every request, changeable while the server runs (a
 * request's own `x-fake-*` headers, and its model-name tokens, still win).
 * Each field is the header of the same meaning (see the README).
 */
export interface FakeControls {
  /** `x-fake-fail`: answer with this status (400-599) in the dialect's envelope. */
  readonly fail?: number | undefined
  /** `x-fake-fail-on`: fail only the requests whose body contains this text. */
  readonly failOn?: string | undefined
  /** `x-fake-delay-first-ms`. */
  readonly delayFirstMs?: number | undefined
  /** `x-fake-cut-after`. */
  readonly cutAfter?: number | undefined
  /** `x-fake-cut-mode`. */
  readonly cutMode?: CutMode | undefined
  /** `x-fake-stall-after`. */
  readonly stallAfter?: number | undefined
  /** `x-fake-chunk-interval-ms`. */
  readonly chunkIntervalMs?: number | undefined
  /** `x-fake-usage: none` when false. */
  readonly usage?: boolean | undefined
  /** `x-fake-usage-values`: the prompt and completion tokens to report instead of the true ones. */
  readonly usageValues?: readonly [number, number] | undefined
  /** `x-fake-body`: answer 200 with something that is not an answer. */
  readonly body?: NotAnAnswer | undefined
  /** `x-fake-line-bytes`. */
  readonly lineBytes?: number | undefined
  /** `x-fake-echo-headers`: fail with this status, quoting the request's headers. */
  readonly echoHeaders?: number | undefined
}

const controlHeadersOf = (controls: FakeControls): IncomingHttpHeaders | undefined => {
  const headers: IncomingHttpHeaders = {}
  if (controls.fail !== undefined) headers["x-fake-fail"] = String(controls.fail)
  if (controls.failOn !== undefined) headers["x-fake-fail-on"] = controls.failOn
  if (controls.delayFirstMs !== undefined) headers["x-fake-delay-first-ms"] = String(controls.delayFirstMs)
  if (controls.cutAfter !== undefined) headers["x-fake-cut-after"] = String(controls.cutAfter)
  if (controls.cutMode !== undefined) headers["x-fake-cut-mode"] = controls.cutMode
  if (controls.stallAfter !== undefined) headers["x-fake-stall-after"] = String(controls.stallAfter)
  if (controls.chunkIntervalMs !== undefined) headers["x-fake-chunk-interval-ms"] = String(controls.chunkIntervalMs)
  if (controls.usage === false) headers["x-fake-usage"] = "none"
  if (controls.usageValues !== undefined) headers["x-fake-usage-values"] = controls.usageValues.join(",")
  if (controls.body !== undefined) headers["x-fake-body"] = controls.body
  if (controls.lineBytes !== undefined) headers["x-fake-line-bytes"] = String(controls.lineBytes)
  if (controls.echoHeaders !== undefined) headers["x-fake-echo-headers"] = String(controls.echoHeaders)
  return Object.keys(headers).length === 0 ? undefined : headers
}

export interface RecordedRequest {
  /** Per-server request number (also used in response ids, e.g. `chatcmpl-fake<seq>`). */
  readonly seq: number
  readonly time: number
  readonly method: string
  /** Path without the query string. */
  readonly path: string
  readonly query: Readonly<Record<string, string>>
  readonly headers: IncomingHttpHeaders
  /** Parsed JSON body; the raw text if it is not JSON; undefined without a body. */
  readonly body: unknown
  /** The dialect the route belongs to (`bedrock`, `vertex` for the clouds); undefined for unknown routes and /health. */
  readonly dialect: Dialect | "bedrock" | "vertex" | undefined
  /** Model from the body or the path ("" when there is none). */
  readonly model: string
}

export interface FakeUpstream {
  /** Base URL, e.g. "http://127.0.0.1:34567" (no trailing slash). */
  readonly url: string
  readonly host: string
  readonly port: number
  /** The most recent requests, oldest first (bounded by `maxRecordedRequests`). */
  readonly requests: Array<RecordedRequest>
  readonly clearRequests: () => void
  /**
   * How many streamed answers lost their client before they were complete
   * (the caller closed the connection; cuts asked for by a scenario are not
   * counted). Tests use it to check that a gateway cancels its upstream call.
   */
  readonly clientClosedStreams: () => number
  /** Changes the accepted key at once (undefined: any non-empty key), e.g. to revoke and restore a key in a test. */
  readonly setApiKey: (apiKey: string | undefined) => void
  /** Sets the behaviour of every following request (`{}` restores normal answers). */
  readonly setControls: (controls: FakeControls) => void
  /**
   * A service-account key file the Vertex side accepts (a key made for this
   * process, its `token_uri` this server's `/token`), as Google Cloud issues them.
   */
  readonly vertexKeyFile: () => Record<string, string>
  /** How many access tokens the Vertex token endpoint issued. */
  readonly vertexTokensIssued: () => number
  /** Stop listening and destroy every open connection (streams included). */
  readonly close: () => Promise<void>
}

export const DEFAULT_MODELS: Required<FakeUpstreamModels> = {
  openai: ["gpt-4o-mini", "gpt-4o", "gpt-4.1-mini", "text-embedding-3-small", "fake-tools"],
  gemini: ["gemini-2.5-flash", "gemini-2.5-pro", "gemini-2.0-flash", "gemini-embedding-001", "text-embedding-004"],
  anthropic: ["claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-4-1"]
}

/** `POST /__fake/controls {"apiKey"?: string | null, "controls"?: FakeControls}`: the runtime controls over HTTP (for the CLI). */
export const CONTROL_PATH = "/__fake/controls"

type Route =
  | { readonly kind: "health" }
  | { readonly kind: "control" }
  | { readonly kind: "notFound"; readonly dialect: Dialect }
  | { readonly kind: "static"; readonly dialect: Dialect; readonly body: string }
  /** A paged model list (Gemini's `pageSize`/`pageToken`, Anthropic's `limit`/`after_id`). */
  | { readonly kind: "list"; readonly dialect: "gemini" | "anthropic" }
  | {
    readonly kind: "call"
    readonly dialect: Dialect
    readonly action: string
    /** Model taken from the path (Gemini, Azure deployment); otherwise from the body. */
    readonly model: string | undefined
  }

const EMPTY_QUERY: Readonly<Record<string, string>> = Object.freeze({})

const first = (value: string | Array<string> | undefined): string | undefined => Array.isArray(value) ? value[0] : value

const bearer = (headers: IncomingHttpHeaders): string | undefined => {
  const auth = headers.authorization
  if (auth === undefined) return undefined
  const match = /^Bearer\s+(.*)$/i.exec(auth)
  return match === null ? undefined : match[1].trim()
}

const apiKeyOf = (dialect: Dialect, headers: IncomingHttpHeaders, query: Readonly<Record<string, string>>) => {
  switch (dialect) {
    case "openai":
      return bearer(headers)
    case "azure":
      return first(headers["api-key"]) || bearer(headers)
    case "gemini":
      return first(headers["x-goog-api-key"]) || query["key"] || bearer(headers)
    case "anthropic":
      return first(headers["x-api-key"]) || bearer(headers)
  }
}

const authError = (dialect: Dialect, missing: boolean, requestId: string): ErrorResponse => {
  switch (dialect) {
    case "openai":
      return missing ? OPENAI_MISSING_KEY : OPENAI_INVALID_KEY
    case "azure":
      return AZURE_BAD_KEY
    case "gemini":
      return missing ? GEMINI_MISSING_KEY : GEMINI_INVALID_KEY
    case "anthropic":
      return missing ? anthropicMissingKey(requestId) : anthropicInvalidKey(requestId)
  }
}

const decode = (segment: string): string => {
  try {
    return decodeURIComponent(segment)
  } catch {
    return segment
  }
}

/** Plain 'data'/'end' listeners: cheaper than the async iterator on the hot path. */
const readBody = (req: IncomingMessage): Promise<Buffer | undefined> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.once("end", () =>
      resolve(chunks.length === 0 ? undefined : chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)))
    req.once("error", reject)
  })

const urlHost = (host: string): string =>
  host === "0.0.0.0" ? "127.0.0.1" : host === "::" ? "[::1]" : host.includes(":") ? `[${host}]` : host

export const startFakeUpstream = (options: FakeUpstreamOptions = {}): Promise<FakeUpstream> => {
  const host = options.host ?? "127.0.0.1"
  let apiKey = options.apiKey
  let controlHeaders: IncomingHttpHeaders | undefined
  const setApiKey = (key: string | undefined) => {
    apiKey = key
  }
  const setControls = (controls: FakeControls) => {
    controlHeaders = controlHeadersOf(controls)
  }
  const maxRecorded = Math.max(0, options.maxRecordedRequests ?? 1000)
  const defaults: ScenarioDefaults = {
    latencyMs: Math.max(0, options.latencyMs ?? 0),
    chunkIntervalMs: Math.max(0, options.chunkIntervalMs ?? 0),
    slowMs: Math.max(0, options.slowMs ?? 1000)
  }
  const models = { ...DEFAULT_MODELS, ...options.models }
  const clock = options.clock ?? Date.now
  const vertex = new VertexState(options.vertex ?? {})
  let baseUrl = ""
  // Static bodies are computed once.
  const openaiModels = openaiModelsBody(models.openai)
  const requests: Array<RecordedRequest> = []
  let seq = 0
  let clientClosed = 0

  const notFoundO: Route = { kind: "notFound", dialect: "openai" }
  const notFoundA: Route = { kind: "notFound", dialect: "anthropic" }
  const notFoundG: Route = { kind: "notFound", dialect: "gemini" }

  const route = (method: string, path: string, headers: IncomingHttpHeaders): Route => {
    const get = method === "GET"
    const post = method === "POST"
    // Gemini: /v1beta/models/{model}:{action}, also /v1/... (API version v1)
    // and a doubled `models/` prefix (model given as "models/x").
    if (path.startsWith("/v1beta/") || (path.startsWith("/v1/models/") && path.includes(":"))) {
      const rest = decode(path.slice(path.indexOf("/", 1) + 1))
      if (rest === "models") return get ? { kind: "list", dialect: "gemini" } : notFoundG
      const colon = rest.lastIndexOf(":")
      const name = colon < 0 ? rest : rest.slice(0, colon)
      if (!name.startsWith("models/") && !name.startsWith("tunedModels/")) return notFoundG
      const model = name.replace(/^(?:models\/)+/, "")
      if (colon < 0) {
        return get && model !== ""
          ? { kind: "static", dialect: "gemini", body: JSON.stringify(geminiModel(model)) }
          : notFoundG
      }
      return post ? { kind: "call", dialect: "gemini", action: rest.slice(colon + 1), model } : notFoundG
    }
    if (path === "/v1/chat/completions") {
      return post
        ? { kind: "call", dialect: "openai", action: "chat", model: undefined }
        : notFoundO
    }
    if (path === "/v1/responses") {
      return post
        ? { kind: "call", dialect: "openai", action: "responses", model: undefined }
        : notFoundO
    }
    if (path === "/v1/messages") {
      return post ? { kind: "call", dialect: "anthropic", action: "messages", model: undefined } : notFoundA
    }
    if (path === "/v1/messages/count_tokens") {
      return post ? { kind: "call", dialect: "anthropic", action: "count_tokens", model: undefined } : notFoundA
    }
    if (path === "/v1/embeddings") {
      return post
        ? { kind: "call", dialect: "openai", action: "embeddings", model: undefined }
        : notFoundO
    }
    if (path === "/v1/models" || path.startsWith("/v1/models/")) {
      if (!get) return notFoundO
      // Shared path: the anthropic-version header selects Anthropic's shape
      // (wire-formats §1.1), x-goog-api-key Gemini's (API version v1).
      const id = path.length > 11 ? decode(path.slice(11)) : undefined
      if (headers["anthropic-version"] !== undefined) {
        return id === undefined
          ? { kind: "list", dialect: "anthropic" }
          : { kind: "static", dialect: "anthropic", body: JSON.stringify(anthropicModel(id)) }
      }
      if (headers["x-goog-api-key"] !== undefined && id === undefined) return { kind: "list", dialect: "gemini" }
      return {
        kind: "static",
        dialect: "openai",
        body: id === undefined ? openaiModels : JSON.stringify(openaiModel(id))
      }
    }
    // Azure OpenAI's lists: the resource's models, and its deployments (older API versions).
    if (path === "/openai/models" || path === "/openai/deployments") {
      return get
        ? {
          kind: "static",
          dialect: "azure",
          body: path === "/openai/models" ? azureModelsBody(models.openai) : azureDeploymentsBody(models.openai)
        }
        : { kind: "notFound", dialect: "azure" }
    }
    if (path.startsWith("/openai/deployments/")) {
      const slash = path.indexOf("/", 20)
      if (slash > 20 && post) {
        const deployment = decode(path.slice(20, slash))
        const tail = path.slice(slash)
        if (tail === "/chat/completions") return { kind: "call", dialect: "azure", action: "chat", model: deployment }
        if (tail === "/embeddings") return { kind: "call", dialect: "azure", action: "embeddings", model: deployment }
      }
      return { kind: "notFound", dialect: "azure" }
    }
    if (path === "/health" || path === "/healthz") return { kind: "health" }
    if (path === CONTROL_PATH) return { kind: "control" }
    return path.startsWith("/v1/messages") ? notFoundA : notFoundO
  }

  const record = (entry: RecordedRequest): void => {
    if (maxRecorded === 0) return
    requests.push(entry)
    if (requests.length > maxRecorded) requests.splice(0, requests.length - maxRecorded)
  }

  const sendError = (res: ServerResponse, error: ErrorResponse, headers: OutgoingHttpHeaders): void => {
    sendJson(res, error.status, error.body, error.headers === undefined ? headers : { ...headers, ...error.headers })
  }

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const n = ++seq
    const method = req.method ?? "GET"
    const url = req.url ?? "/"
    const q = url.indexOf("?")
    const path = q < 0 ? url : url.slice(0, q)
    const query = q < 0 ? EMPTY_QUERY : Object.fromEntries(new URLSearchParams(url.slice(q + 1)))
    if (isBedrockPath(path) || isVertexPath(path)) return cloud(req, res, n, method, url, path, query)
    const r = route(method, path, req.headers)

    let body: unknown = undefined
    let bodyText = ""
    let bodyError = false
    if (method !== "GET" && method !== "HEAD") {
      const raw = await readBody(req)
      if (raw !== undefined) {
        const text = raw.toString("utf8")
        bodyText = text
        try {
          body = JSON.parse(text)
        } catch {
          body = text
        }
        bodyError = !isRecord(body)
      }
    }
    const model = r.kind === "call" && r.model !== undefined
      ? (isRecord(body) && typeof body["model"] === "string" && r.dialect === "azure" ? body["model"] : r.model)
      : isRecord(body) && typeof body["model"] === "string"
      ? body["model"]
      : ""
    const dialect = r.kind === "health" || r.kind === "control" ? undefined : r.dialect
    record({ seq: n, time: Date.now(), method, path, query, headers: req.headers, body, dialect, model })

    if (r.kind === "health") return sendJson(res, 200, `{"status":"ok"}`)
    if (r.kind === "control") return control(res, method, body)
    const requestId = `req_fake${n}`
    const idHeaders: OutgoingHttpHeaders = r.dialect === "anthropic"
      ? { "request-id": requestId }
      : r.dialect === "gemini"
      ? {}
      : { "x-request-id": requestId }
    if (r.kind === "notFound") return sendError(res, notFound(r.dialect, method, path, requestId), idHeaders)
    // Azure OpenAI answers nothing without an api-version (its 404 says so).
    if (r.dialect === "azure" && (query["api-version"] ?? "") === "") {
      return sendError(res, notFound("azure", method, path, requestId), idHeaders)
    }

    const scenario = resolveScenario(
      model,
      controlHeaders === undefined ? req.headers : { ...controlHeaders, ...req.headers },
      defaults,
      bodyText
    )
    const wait = defaults.latencyMs + scenario.delayFirstMs
    if (wait > 0) {
      await sleep(wait)
      if (res.destroyed) return
    }

    const key = apiKeyOf(r.dialect, req.headers, query)
    if (!key || (apiKey !== undefined && key !== apiKey)) {
      return sendError(res, authError(r.dialect, !key, requestId), idHeaders)
    }
    if (scenario.failStatus !== undefined) {
      return sendError(res, failure(r.dialect, scenario.failStatus, model, requestId), idHeaders)
    }
    if (scenario.echoStatus !== undefined) {
      return sendError(res, echoHeaders(r.dialect, scenario.echoStatus, req.headers, requestId), idHeaders)
    }
    if (bodyError) {
      return sendError(res, badRequest(r.dialect, "Request body must be a JSON object.", requestId), idHeaders)
    }

    const json = isRecord(body) ? body : {}
    const streaming = r.kind === "call" &&
      (r.action === "streamGenerateContent" ||
        ((r.action === "chat" || r.action === "messages" || r.action === "responses") && json["stream"] === true))
    if (scenario.notAnAnswer !== undefined && r.kind === "call") {
      return sendNotAnAnswer(res, r.dialect, scenario.notAnAnswer, streaming, model, requestId, idHeaders)
    }
    if (streaming && scenario.cutAfter === undefined) {
      res.once("close", () => {
        if (!res.writableFinished) clientClosed++
      })
    }
    if (!streaming) {
      // Non-stream answers: a cut kills the connection before any byte, a
      // stall never answers (for upstream timeout tests).
      if (
        scenario.cutAfter !== undefined &&
        (scenario.stallAfter === undefined || scenario.cutAfter <= scenario.stallAfter)
      ) {
        return cutConnection(res, scenario.cutMode)
      }
      if (scenario.stallAfter !== undefined) return
    }
    if (r.kind === "static") return sendJson(res, 200, r.body, idHeaders)
    if (r.kind === "list") {
      return sendJson(
        res,
        200,
        r.dialect === "gemini" ? geminiModelsPage(models.gemini, query) : anthropicModelsPage(models.anthropic, query),
        idHeaders
      )
    }

    const ctx: CallContext = { seq: n, model, scenario, headers: idHeaders }
    switch (r.dialect) {
      case "openai":
      case "azure":
        if (r.action === "chat") return openaiChat(res, json, ctx)
        if (r.action === "responses") return responses(res, json, ctx)
        return openaiEmbeddings(res, json, ctx)
      case "anthropic":
        if (r.action === "messages") return anthropicMessages(res, json, ctx)
        return anthropicCountTokens(res, json, ctx)
      case "gemini":
        switch (r.action) {
          case "generateContent":
            return geminiGenerate(res, json, ctx)
          case "streamGenerateContent":
            return geminiStream(res, json, ctx, query["alt"] === "sse")
          case "countTokens":
            return geminiCountTokens(res, json, ctx)
          case "embedContent":
            return geminiEmbed(res, json, ctx)
          case "batchEmbedContents":
            return geminiBatchEmbed(res, json, ctx)
          default:
            return sendError(res, notFound("gemini", method, path, requestId), idHeaders)
        }
    }
  }

  /** AWS Bedrock and Google Vertex AI: their own authentication, over the request's exact bytes. */
  const cloud = async (
    req: IncomingMessage,
    res: ServerResponse,
    n: number,
    method: string,
    url: string,
    path: string,
    query: Readonly<Record<string, string>>
  ): Promise<void> => {
    const raw = (await readBody(req)) ?? Buffer.alloc(0)
    const bedrock = isBedrockPath(path)
    let body: unknown = undefined
    let text = ""
    if (raw.length > 0) {
      text = raw.toString("utf8")
      try {
        body = path === TOKEN_PATH ? text : JSON.parse(text)
      } catch {
        body = text
      }
    }
    const modelMatch = bedrock ? /^\/model\/([^/]+)\//.exec(path) : /\/models\/([^/:]+):/.exec(path)
    const model = modelMatch === null ? "" : decode(modelMatch[1]!)
    record({
      seq: n,
      time: Date.now(),
      method,
      path,
      query,
      headers: req.headers,
      body,
      dialect: bedrock ? "bedrock" : "vertex",
      model
    })
    const scenario = resolveScenario(
      model,
      controlHeaders === undefined ? req.headers : { ...controlHeaders, ...req.headers },
      defaults,
      text
    )
    const wait = defaults.latencyMs + scenario.delayFirstMs
    if (wait > 0) {
      await sleep(wait)
      if (res.destroyed) return
    }
    const now = clock()
    if (bedrock) {
      return handleBedrock(
        res,
        { seq: n, method, rawUrl: url, path, headers: req.headers, body: raw, scenario, now },
        options.bedrock ?? {}
      )
    }
    if (path === TOKEN_PATH) return handleToken(res, vertex, method, raw, baseUrl, now)
    if (method === "GET" && isVertexListPath(path)) {
      return handlePublisherList(res, vertex, { path, query, authorization: first(req.headers.authorization), now })
    }
    if (method !== "POST") {
      return sendJson(res, 404, JSON.stringify({ error: { code: 404, message: "Not Found", status: "NOT_FOUND" } }))
    }
    return handlePublisher(res, vertex, {
      seq: n,
      method,
      path,
      query,
      authorization: first(req.headers.authorization),
      body,
      scenario,
      now
    })
  }

  const control = (res: ServerResponse, method: string, body: unknown): void => {
    if (method !== "POST" || !isRecord(body)) {
      return sendJson(
        res,
        400,
        JSON.stringify({ error: { message: `POST a JSON object to ${CONTROL_PATH}: {"apiKey"?, "controls"?}` } })
      )
    }
    if ("apiKey" in body) setApiKey(typeof body.apiKey === "string" ? body.apiKey : undefined)
    if (isRecord(body.controls)) setControls(body.controls as FakeControls)
    sendJson(
      res,
      200,
      JSON.stringify({ ok: true, apiKey: apiKey === undefined ? null : "set", controls: controlHeaders ?? {} })
    )
  }

  const server = http.createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent && !res.destroyed) {
        sendJson(
          res,
          500,
          JSON.stringify({ error: { message: `fake-upstream: ${String(error)}`, type: "server_error" } })
        )
      } else {
        res.destroy()
      }
    })
  })
  // Generous keep-alive so benchmark clients reuse connections; no request
  // timeout so stalled streams stay stalled.
  server.keepAliveTimeout = 65_000
  server.headersTimeout = 66_000
  server.requestTimeout = 0
  const sockets = new Set<Socket>()
  server.on("connection", (socket: Socket) => {
    sockets.add(socket)
    socket.once("close", () => sockets.delete(socket))
  })

  return new Promise((resolve, reject) => {
    server.once("error", reject)
    server.listen(options.port ?? 0, host, () => {
      server.off("error", reject)
      const port = (server.address() as AddressInfo).port
      let closing: Promise<void> | undefined
      baseUrl = `http://${urlHost(host)}:${port}`
      resolve({
        url: baseUrl,
        host,
        port,
        requests,
        clearRequests: () => {
          requests.length = 0
        },
        clientClosedStreams: () => clientClosed,
        setApiKey,
        setControls,
        vertexKeyFile: () => vertex.keyFile(baseUrl),
        vertexTokensIssued: () => vertex.tokensIssued(),
        close: () => (closing ??= new Promise<void>((done) => {
          server.close(() => done())
          for (const socket of sockets) socket.destroy()
          sockets.clear()
        }))
      })
    })
  })
}
