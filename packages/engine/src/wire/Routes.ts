/**
 * The route table, as a pure function from method and path to a route (or to
 * the reason there is none). Hand-written rather than a generic router: the
 * API surface is small, Gemini's `models/{model}:{action}` paths do not fit
 * path-parameter routers, and a wrong path must be answered with a hint in the
 * dialect the path suggests (a doubled or missing `/v1`, a wrong API version).
 *
 * @since 0.1.0
 */
import { type Domain, GatewayError } from "@modelgate/core"

/** A matched route. @category models */
export type Route =
  | { readonly _tag: "Health" }
  | { readonly _tag: "Ready" }
  | { readonly _tag: "Metrics" }
  | { readonly _tag: "OpenAIModels"; readonly dialect: "openai" }
  | { readonly _tag: "OpenAIModel"; readonly dialect: "openai"; readonly model: string }
  | { readonly _tag: "OpenAIChat"; readonly dialect: "openai" }
  | { readonly _tag: "OpenAIEmbeddings"; readonly dialect: "openai" }
  | { readonly _tag: "Responses"; readonly dialect: "responses" }
  | { readonly _tag: "AnthropicMessages"; readonly dialect: "anthropic" }
  | { readonly _tag: "AnthropicCountTokens"; readonly dialect: "anthropic" }
  | { readonly _tag: "AnthropicModels"; readonly dialect: "anthropic" }
  | { readonly _tag: "AnthropicModel"; readonly dialect: "anthropic"; readonly model: string }
  | { readonly _tag: "BillingSubscription"; readonly dialect: "openai" }
  | { readonly _tag: "BillingUsage"; readonly dialect: "openai" }
  | { readonly _tag: "GeminiModels"; readonly dialect: "gemini" }
  | { readonly _tag: "GeminiModel"; readonly dialect: "gemini"; readonly model: string }
  | {
    readonly _tag: "GeminiAction"
    readonly dialect: "gemini"
    readonly model: string
    readonly action: GeminiAction
  }
  | { readonly _tag: "Api"; readonly dialect: "openai"; readonly path: string }
  | { readonly _tag: "Console"; readonly path: string }

/** The routes a host serves itself: health checks, metrics, the management API and the console's files. @category models */
export type HostRoute = Extract<Route, { readonly _tag: "Health" | "Ready" | "Metrics" | "Api" | "Console" }>

/** The routes of the API surface, served by `Gateway.serve`. @category models */
export type ApiRoute = Exclude<Route, HostRoute>

/** Whether a matched route is the host's own business. @category matching */
export const isHostRoute = (route: Route | Miss): route is HostRoute =>
  route._tag === "Health" || route._tag === "Ready" || route._tag === "Metrics" || route._tag === "Api" ||
  route._tag === "Console"

/** The Gemini model methods served under `/v1beta/models/{model}:{action}`. @category models */
export type GeminiAction =
  | "generateContent"
  | "streamGenerateContent"
  | "countTokens"
  | "embedContent"
  | "batchEmbedContents"

const geminiActions = new Set<string>([
  "generateContent",
  "streamGenerateContent",
  "countTokens",
  "embedContent",
  "batchEmbedContents"
])

/** Why no route matched: no such path (with a hint), or not this method. @category models */
export type Miss =
  | { readonly _tag: "NotFound"; readonly dialect: Domain.Dialect; readonly message: string }
  | {
    readonly _tag: "MethodNotAllowed"
    readonly dialect: Domain.Dialect
    readonly allow: ReadonlyArray<string>
    readonly message: string
  }

const allowed = (route: Route, methods: ReadonlyArray<string>, method: string): Route | Miss => {
  if (methods.includes(method) || (method === "HEAD" && methods.includes("GET"))) return route
  const dialect = "dialect" in route ? route.dialect : "openai"
  return {
    _tag: "MethodNotAllowed",
    dialect,
    allow: methods,
    message: `${method} is not allowed here; use ${methods.join(" or ")}.`
  }
}

const decode = (segment: string): string => {
  try {
    return decodeURIComponent(segment)
  } catch {
    return segment
  }
}

const V1BETA_HINT =
  "In @google/genai set httpOptions: { apiVersion: 'v1beta' }; gemini-cli uses v1beta unless GOOGLE_GENAI_API_VERSION is set."

/**
 * Matches a request. `path` is the URL path without the query string.
 * `headers` (lower-case names) tell the clients that share the `/v1/models`
 * paths apart: an Anthropic client (it sends `anthropic-version`) gets
 * Anthropic's list, a Gemini client on API version `v1` (it sends
 * `x-goog-api-key`) a 404 in Gemini's envelope that names the fix, and every
 * other client OpenAI's list.
 *
 * @category matching
 */
export const match = (
  method: string,
  path: string,
  headers?: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
): Route | Miss => {
  if (headers?.["x-goog-api-key"] !== undefined && (path === "/v1/models" || path.startsWith("/v1/models/"))) {
    return {
      _tag: "NotFound",
      dialect: "gemini",
      message: `This gateway serves the Gemini API as version v1beta, not v1: use ${
        path.replace(/^\/v1\//, "/v1beta/")
      }. ${V1BETA_HINT}`
    }
  }
  if (headers?.["anthropic-version"] !== undefined && (path === "/v1/models" || path.startsWith("/v1/models/"))) {
    const model = decode(path.slice("/v1/models/".length))
    return path === "/v1/models" || model.length === 0
      ? allowed({ _tag: "AnthropicModels", dialect: "anthropic" }, ["GET"], method)
      : allowed({ _tag: "AnthropicModel", dialect: "anthropic", model }, ["GET"], method)
  }
  switch (path) {
    case "/healthz":
      return allowed({ _tag: "Health" }, ["GET"], method)
    case "/readyz":
      return allowed({ _tag: "Ready" }, ["GET"], method)
    case "/metrics":
      return allowed({ _tag: "Metrics" }, ["GET"], method)
    case "/v1/models":
    case "/v1beta/openai/models":
      return allowed({ _tag: "OpenAIModels", dialect: "openai" }, ["GET"], method)
    case "/v1/chat/completions":
    case "/v1beta/openai/chat/completions":
      return allowed({ _tag: "OpenAIChat", dialect: "openai" }, ["POST"], method)
    case "/v1/embeddings":
    case "/v1beta/openai/embeddings":
      return allowed({ _tag: "OpenAIEmbeddings", dialect: "openai" }, ["POST"], method)
    case "/v1/responses":
    case "/v1beta/openai/responses":
      return allowed({ _tag: "Responses", dialect: "responses" }, ["POST"], method)
    case "/v1/messages":
      return allowed({ _tag: "AnthropicMessages", dialect: "anthropic" }, ["POST"], method)
    case "/v1/messages/count_tokens":
      return allowed({ _tag: "AnthropicCountTokens", dialect: "anthropic" }, ["POST"], method)
    case "/v1/dashboard/billing/subscription":
    case "/dashboard/billing/subscription":
      return allowed({ _tag: "BillingSubscription", dialect: "openai" }, ["GET"], method)
    case "/v1/dashboard/billing/usage":
    case "/dashboard/billing/usage":
      return allowed({ _tag: "BillingUsage", dialect: "openai" }, ["GET"], method)
    case "/v1beta/models":
      return allowed({ _tag: "GeminiModels", dialect: "gemini" }, ["GET"], method)
  }
  if (path.startsWith("/v1beta/models/")) {
    const rest = decode(path.slice("/v1beta/models/".length))
    // The model may itself carry Gemini's `models/` prefix once; the action follows the last colon.
    const colon = rest.lastIndexOf(":")
    if (colon === -1) {
      if (rest.length === 0) return notFound("gemini", path)
      return allowed({ _tag: "GeminiModel", dialect: "gemini", model: rest }, ["GET"], method)
    }
    const model = rest.slice(0, colon)
    const action = rest.slice(colon + 1)
    if (!geminiActions.has(action) || model.length === 0) {
      return {
        _tag: "NotFound",
        dialect: "gemini",
        message: `Unknown method '${GatewayError.echo(action)}' on models/${GatewayError.echo(model)}. Supported: ${
          [...geminiActions].join(", ")
        }.`
      }
    }
    return allowed({ _tag: "GeminiAction", dialect: "gemini", model, action: action as GeminiAction }, ["POST"], method)
  }
  if (path.startsWith("/v1/models/")) {
    const rest = decode(path.slice("/v1/models/".length))
    if (rest.includes(":")) {
      return {
        _tag: "NotFound",
        dialect: "gemini",
        message: `This gateway serves the Gemini API as version v1beta, not v1: use ${
          path.replace(/^\/v1\//, "/v1beta/")
        }. ${V1BETA_HINT}`
      }
    }
    return allowed({ _tag: "OpenAIModel", dialect: "openai", model: rest }, ["GET"], method)
  }
  if (path.startsWith("/v1beta/openai/models/")) {
    const model = decode(path.slice("/v1beta/openai/models/".length))
    if (model.length > 0) return allowed({ _tag: "OpenAIModel", dialect: "openai", model }, ["GET"], method)
  }
  if (path.startsWith("/v1/responses/") || path.startsWith("/v1beta/openai/responses/")) {
    return {
      _tag: "NotFound",
      dialect: "responses",
      message: `No route for ${path}: this gateway keeps no response state, so stored responses cannot be retrieved, ` +
        "listed, cancelled or deleted. Send each request with its whole input (and 'store': false)."
    }
  }
  if (path.startsWith("/api/")) return { _tag: "Api", dialect: "openai", path }
  if (path === "/" || path === "/console" || path.startsWith("/console/") || path.startsWith("/assets/")) {
    return allowed({ _tag: "Console", path }, ["GET"], method)
  }
  return notFound(dialectOfPath(path), path)
}

/** The dialect a path suggests, for answering a wrong path in the caller's own envelope. @category matching */
export const dialectOfPath = (path: string): Domain.Dialect =>
  /^\/v1(beta|alpha)\d*\b|:(generateContent|streamGenerateContent|countTokens|embedContent|batchEmbedContents)\b/.test(
      path
    )
    ? "gemini"
    : /\/messages(\/|$)/.test(path)
    ? "anthropic"
    : "openai"

const openAIPaths = ["/chat/completions", "/models", "/embeddings", "/completions", "/responses", "/messages"]

/**
 * A 404 whose message names the likely fix.
 *
 * @category matching
 */
export const notFound = (dialect: Domain.Dialect, path: string): Miss => {
  const message = hint(path) ?? `No route for ${path}. See docs/api.md for the endpoints this gateway serves.`
  return { _tag: "NotFound", dialect, message }
}

const hint = (path: string): string | undefined => {
  const doubled = /^\/(v1|v1beta)\/\1(\/|$)/.exec(path)
  if (doubled !== null) {
    const version = doubled[1]!
    return `No route for ${path}: the path has /${version} twice. Your client's base address already ends in /${version}; ` +
      `remove it from the base address (or from the path), so the request goes to ${path.slice(version.length + 1)}.`
  }
  if (/^\/v1alpha\d*\//.test(path) || /^\/v1beta\d+\//.test(path) || /^\/v2(beta)?\d*\//.test(path)) {
    const fixed = path.replace(/^\/v[^/]+\//, "/v1beta/")
    return `No route for ${path}: this gateway serves the Gemini API as version v1beta. Set your client's API version to v1beta (${fixed}).`
  }
  if (path.startsWith("/v1beta/") && openAIPaths.some((p) => path === `/v1beta${p}`)) {
    return `No route for ${path}: OpenAI-style paths live under /v1 (${path.replace("/v1beta", "/v1")}) ` +
      `or Google's OpenAI-compatible /v1beta/openai${path.slice(7)}.`
  }
  if (openAIPaths.some((p) => path === p || path.startsWith(`${p}/`))) {
    return `No route for ${path}: the base address is missing /v1. Set your client's base address to end in /v1 ` +
      `(for example http://HOST:PORT/v1), so the request goes to /v1${path}.`
  }
  if (/^\/models\/[^/]+:/.test(path)) {
    return `No route for ${path}: Gemini paths need the API version. Set the base address to the gateway's root and the API version to v1beta (/v1beta${path}).`
  }
  return undefined
}
