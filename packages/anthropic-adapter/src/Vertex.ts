/**
 * Claude on Google Vertex AI: the Messages dialect this package speaks
 * (requests, answers and SSE streams are read and written by `Request`,
 * `Response` and `Stream` unchanged), with Vertex's paths, body and errors.
 *
 * - `POST {base_url}/v1/projects/{project}/locations/{location}/publishers/anthropic/models/{model}:rawPredict`,
 *   and `:streamRawPredict` for a stream (the body still says
 *   `"stream": true`; the answer is Anthropic's SSE).
 * - The body is the Messages body without `model` (the path names it) and
 *   with `"anthropic_version": "vertex-2023-10-16"`. Beta features go in the
 *   `anthropic-beta` header, as for Anthropic.
 * - Token counting: `.../publishers/anthropic/models/count-tokens:rawPredict`,
 *   the count_tokens body with its `model` and the same `anthropic_version`.
 * - Vertex reads no document by URL: such a body is refused before it is
 *   sent (the Anthropic SDK's Vertex client refuses it alike).
 * - Errors come in two envelopes: Google's front door (`{"error": {"code",
 *   "message", "status"}}`: a refused token, a missing IAM role, a quota)
 *   and Anthropic's, for what the model refused. `classify` reads both.
 *
 * @since 0.1.0
 */
import { type Dialect as Core, type Domain, type GatewayError, Issues, UpstreamErrors, Utf8 } from "@modelgate/core"
import { Effect, Predicate, Result } from "effect"
import * as Dialect from "./Dialect.ts"
import * as ErrorEnvelope from "./ErrorEnvelope.ts"

/** The `anthropic_version` Vertex wants in the body. @category constants */
export const VERTEX_VERSION = "vertex-2023-10-16"

/** What locates a Vertex channel's models. @category models */
export interface VertexTarget {
  readonly baseUrl: string
  readonly project: string
  readonly location: string
}

const trimSlash = (url: string) => url.endsWith("/") ? url.slice(0, -1) : url

/** A path segment encoded, `@` kept (`claude-sonnet-4-5@20250929`). */
const segment = (value: string): string => encodeURIComponent(value).replace(/%40/g, "@")

const modelUrl = (target: VertexTarget, model: string, method: string): string =>
  `${trimSlash(target.baseUrl)}/v1/projects/${segment(target.project)}/locations/${
    segment(target.location)
  }/publishers/anthropic/models/${segment(model)}:${method}`

/**
 * The Messages endpoint of a Claude model on Vertex.
 *
 * @example
 * ```ts
 * chatUrl({ baseUrl: "https://us-east5-aiplatform.googleapis.com", project: "p", location: "us-east5" }, "claude-sonnet-4-5@20250929", true)
 * // "https://us-east5-aiplatform.googleapis.com/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict"
 * ```
 *
 * @category urls
 */
export const chatUrl = (target: VertexTarget, model: string, stream: boolean): string =>
  modelUrl(target, model, stream ? "streamRawPredict" : "rawPredict")

/** The token counter of Claude on Vertex (one for every model; the body names it). @category urls */
export const countTokensUrl = (target: VertexTarget): string => modelUrl(target, "count-tokens", "rawPredict")

/** The auth and content headers of a Vertex call with an access token, the channel's own included. @category headers */
export const headers = (
  channelHeaders: Readonly<Record<string, string>>,
  accessToken: string
): Record<string, string> => ({
  "content-type": "application/json",
  ...channelHeaders,
  authorization: `Bearer ${accessToken}`
})

const documentUrlAt = (body: Readonly<Record<string, unknown>>): string | undefined => {
  const messages = body.messages
  if (!Array.isArray(messages)) return undefined
  for (let i = 0; i < messages.length; i++) {
    const content = Predicate.isObject(messages[i]) ? (messages[i] as Record<string, unknown>).content : undefined
    if (!Array.isArray(content)) continue
    for (let j = 0; j < content.length; j++) {
      const block = content[j]
      const blocks = Predicate.isObject(block) && block.type === "tool_result" && Array.isArray(block.content)
        ? [block, ...block.content]
        : [block]
      for (const b of blocks) {
        if (Predicate.isObject(b) && b.type === "document" && Predicate.isObject(b.source) && b.source.type === "url") {
          return `messages[${i}].content[${j}]`
        }
      }
    }
  }
  return undefined
}

/**
 * A Messages body (parsed: a client's, or `Request.encodeRequest`'s) as
 * Vertex takes it: `model` removed, `anthropic_version` set (a body's own
 * is kept). A document by URL is refused (`UnsupportedFeature` naming it).
 *
 * @example
 * ```ts
 * toVertexBody({ model: "claude-sonnet-4-5", max_tokens: 64, messages: [{ role: "user", content: "Hi" }] })
 * // Success({ max_tokens: 64, messages: [{ role: "user", content: "Hi" }], anthropic_version: "vertex-2023-10-16" })
 * ```
 *
 * @category bodies
 */
export const toVertexBody = (
  body: Readonly<Record<string, unknown>>
): Result.Result<Record<string, unknown>, GatewayError.UnsupportedFeature> => {
  const at = documentUrlAt(body)
  if (at !== undefined) {
    return Result.fail(Issues.unsupported(
      `${at}.source`,
      `The document at '${at}' is given by URL; Claude on Vertex AI reads documents only as base64 or text. Send the document's bytes instead.`
    ))
  }
  const { model: _, ...rest } = body
  return Result.succeed(rest.anthropic_version === undefined ? { ...rest, anthropic_version: VERTEX_VERSION } : rest)
}

/** A count_tokens body as Vertex takes it: `model` kept, `anthropic_version` set. @category bodies */
export const toVertexCountBody = (body: Readonly<Record<string, unknown>>): Record<string, unknown> =>
  body.anthropic_version === undefined ? { ...body, anthropic_version: VERTEX_VERSION } : { ...body }

/**
 * A Vertex error answer for a Claude call as a gateway error: Anthropic's
 * envelope as `ErrorEnvelope.classifyUpstream` reads it; Google's with
 * Google's rules (401 or `UNAUTHENTICATED`: the token refused; 403
 * `PERMISSION_DENIED`: the service account lacks a role; 429
 * `RESOURCE_EXHAUSTED`: a quota; other 4xx the caller's, with Google's words).
 *
 * @category errors
 */
export const classify = (
  status: number,
  bodyText: string,
  responseHeaders: UpstreamErrors.Headers = {}
): UpstreamErrors.UpstreamError => {
  const json = UpstreamErrors.parseBody(bodyText)
  const google = Predicate.isObject(json) && json.type !== "error" && Predicate.isObject(json.error) &&
      (typeof json.error.status === "string" || typeof json.error.code === "number")
    ? json.error
    : undefined
  if (google === undefined) return ErrorEnvelope.classifyUpstream(status, bodyText, responseHeaders)
  if (status === 401 || google.status === "UNAUTHENTICATED") {
    return UpstreamErrors.credentialsRefused(status, "access token", "the channel's service-account key")
  }
  if (status === 403) {
    return UpstreamErrors.credentialsRefused(
      403,
      "service account",
      "the roles of the channel's service account on its project (it needs Vertex AI User), the project and location, and that the Claude model is enabled there"
    )
  }
  if (status === 429) return UpstreamErrors.rateLimited(UpstreamErrors.retryAfterSeconds(responseHeaders))
  if (status === 408 || status === 504) return UpstreamErrors.timedOut(status)
  if (status >= 400 && status < 500) {
    const message = typeof google.message === "string" && google.message.length > 0 ? google.message : undefined
    const code = typeof google.status === "string" ? google.status : undefined
    return UpstreamErrors.rejected(status, { message, code })
  }
  return UpstreamErrors.failed(status)
}

/** Whether a parsed value is an object body (for callers holding `unknown`). @category bodies */
export const isBody = (body: unknown): body is Readonly<Record<string, unknown>> =>
  Predicate.isObject(body) && !Array.isArray(body)

/** Where a Vertex channel is served (`Channel.cloud`), as `VertexTarget`. @category urls */
export const targetOf = (channel: Domain.Channel): VertexTarget => ({
  baseUrl: channel.baseUrl,
  project: channel.cloud?.project ?? "",
  location: channel.cloud?.location ?? ""
})

const parseBody = (body: string | Uint8Array): unknown => {
  try {
    return JSON.parse(typeof body === "string" ? body : Utf8.decode(body))
  } catch {
    return undefined
  }
}

/** A Messages body (text) as Vertex takes it (`toVertexBody`); a body that is not an object is sent as it is. */
const vertexBodyText = (
  body: string | Uint8Array
): Effect.Effect<string | Uint8Array, GatewayError.UnsupportedFeature> => {
  const json = parseBody(body)
  if (!isBody(json)) return Effect.succeed(body)
  return Effect.map(Effect.fromResult(toVertexBody(json)), (vertex) => JSON.stringify(vertex))
}

/**
 * Claude on a Vertex AI channel, as the engine speaks to it: this package's
 * Messages upstream with Vertex's paths (`:rawPredict`, `:streamRawPredict`),
 * its body (`toVertexBody`, for a translated request and a relayed one
 * alike), its token counter and its errors. `headers` carries no
 * credentials (the engine adds the access token) and no `anthropic-version`
 * (the body says it). Vertex lists no models a key could fetch.
 *
 * @category dialect
 */
export const upstream: Core.UpstreamDialect = {
  ...Dialect.upstream,
  chatUrl: (channel, upstreamModel, stream) => chatUrl(targetOf(channel), upstreamModel, stream),
  headers: (channel) => ({ "content-type": "application/json", ...channel.headers }),
  encodeRequest: (request, upstreamModel, model) =>
    Effect.flatMap(Dialect.upstream.encodeRequest(request, upstreamModel, model), vertexBodyText) as Effect.Effect<
      string,
      GatewayError.InvalidRequest | GatewayError.UnsupportedFeature
    >,
  relayBody: vertexBodyText,
  classify: (status, body, responseHeaders) => classify(status, body, responseHeaders),
  countTokens: {
    url: (channel) => countTokensUrl(targetOf(channel)),
    isCount: Dialect.upstream.countTokens!.isCount,
    relayBody: (body) => {
      const json = parseBody(body)
      return isBody(json) ? JSON.stringify(toVertexCountBody(json)) : body
    },
    // Another dialect's client (Gemini's countTokens): its request as a Messages count body.
    translated: {
      encode: (request, upstreamModel) =>
        Effect.map(Dialect.upstream.encodeRequest(request, upstreamModel), (text) => {
          const json = JSON.parse(text) as Record<string, unknown>
          const body: Record<string, unknown> = {}
          for (const field of COUNT_FIELDS) if (json[field] !== undefined) body[field] = json[field]
          return JSON.stringify(toVertexCountBody(body))
        }),
      read: (text) => {
        const json = parseBody(text)
        return isBody(json) && Number.isInteger(json.input_tokens) && (json.input_tokens as number) >= 0
          ? json.input_tokens as number
          : undefined
      }
    }
  },
  listModels: undefined
}

/** The fields of a Messages body a token count takes (the rest, `max_tokens` and sampling, it refuses). */
const COUNT_FIELDS = ["model", "messages", "system", "tools", "tool_choice", "thinking"] as const
