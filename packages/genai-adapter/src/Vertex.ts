/**
 * Gemini on Google Vertex AI: the same generateContent dialect this package
 * speaks to the Gemini API (requests, answers and streams are read and
 * written by `Request`, `Response` and `Stream` unchanged), under Vertex's
 * publisher paths, with Vertex's embeddings and its errors.
 *
 * - Chat: `POST {base_url}/v1/projects/{project}/locations/{location}/publishers/google/models/{model}:generateContent`,
 *   and `:streamGenerateContent?alt=sse` for a stream; `:countTokens`
 *   (answers `{totalTokens, totalBillableCharacters}`).
 * - Embeddings: Vertex's embedding models answer `:predict` with
 *   `{"instances": [{"content"}], "parameters": {"outputDimensionality"}}`
 *   and `{"predictions": [{"embeddings": {"values", "statistics":
 *   {"token_count", "truncated"}}}]}`; the tokens billed are the sum of the
 *   predictions' `token_count`.
 * - Errors: Google's envelope, read by `ErrorEnvelope.classifyUpstream`, and
 *   one refusal more: a 403 whose reason is `IAM_PERMISSION_DENIED` (the
 *   service account lacks a role on the project) is the channel's
 *   configuration, so a credential refusal, where for the Gemini API a 403 is
 *   about something the request named.
 *
 * The access token is the channel's business (`@modelgate/vertex`):
 * `headers` takes it ready.
 *
 * @since 0.1.0
 */
import {
  type Canonical,
  type Dialect as Core,
  type Domain,
  GatewayError,
  Tokens,
  UpstreamErrors
} from "@modelgate/core"
import { Effect, Predicate } from "effect"
import * as Dialect from "./Dialect.ts"
import * as ErrorEnvelope from "./ErrorEnvelope.ts"

/** What locates a Vertex channel's models. @category models */
export interface VertexTarget {
  /** The channel's base URL (`https://{location}-aiplatform.googleapis.com` by default). */
  readonly baseUrl: string
  readonly project: string
  readonly location: string
}

const trimSlash = (url: string) => url.endsWith("/") ? url.slice(0, -1) : url

/** A path segment encoded, `@` kept (Vertex's model versions: `gemini-2.0-flash-001`, `claude-sonnet-4-5@20250929`). */
const segment = (value: string): string => encodeURIComponent(value).replace(/%40/g, "@")

/**
 * A model method's URL under a publisher.
 *
 * @example
 * ```ts
 * methodUrl({ baseUrl: "https://us-central1-aiplatform.googleapis.com", project: "p", location: "us-central1" }, "google", "gemini-2.5-flash", "generateContent")
 * // "https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent"
 * ```
 *
 * @category urls
 */
export const methodUrl = (target: VertexTarget, publisher: string, model: string, method: string): string =>
  `${trimSlash(target.baseUrl)}/v1/projects/${segment(target.project)}/locations/${
    segment(target.location)
  }/publishers/${segment(publisher)}/models/${segment(model)}:${method}`

/** The chat endpoint of a Gemini model: `:generateContent`, or `:streamGenerateContent?alt=sse`. @category urls */
export const chatUrl = (target: VertexTarget, model: string, stream: boolean): string =>
  methodUrl(target, "google", model, stream ? "streamGenerateContent?alt=sse" : "generateContent")

/** The token counter of a Gemini model: `:countTokens`. @category urls */
export const countTokensUrl = (target: VertexTarget, model: string): string =>
  methodUrl(target, "google", model, "countTokens")

/** The embeddings endpoint of a Vertex embedding model: `:predict`. @category urls */
export const embeddingsUrl = (target: VertexTarget, model: string): string =>
  methodUrl(target, "google", model, "predict")

/** The auth and content headers of a Vertex call with an access token, the channel's own headers included. @category headers */
export const headers = (
  channelHeaders: Readonly<Record<string, string>>,
  accessToken: string
): Record<string, string> => ({
  "content-type": "application/json",
  ...channelHeaders,
  authorization: `Bearer ${accessToken}`
})

/**
 * How many texts one `:predict` request of a model embeds: Gemini's embedding
 * models (`gemini-embedding-001`) one, the text-embedding models 250.
 *
 * @category embeddings
 */
export const inputsPerRequest = (model: string): number => model.startsWith("gemini-embedding") ? 1 : 250

/** The `:predict` body for a canonical embeddings request (its task as each instance's `task_type`). @category embeddings */
export const encodeEmbeddings = (request: Canonical.EmbedRequest): string =>
  JSON.stringify({
    instances: request.inputs.map((content) =>
      request.task === undefined ? { content } : { content, task_type: request.task.toUpperCase() }
    ),
    ...(request.dimensions === undefined ? {} : { parameters: { outputDimensionality: request.dimensions } })
  })

/**
 * Reads a `:predict` answer of an embedding model: one vector per input, in
 * order, and the tokens counted (the predictions' `token_count` summed;
 * figures that are not token counts are refused as `usageRejected`). An
 * answer that is not one, or holds another number of vectors, is the
 * upstream failing.
 *
 * @category embeddings
 */
export const decodeEmbeddings = (
  text: string,
  count: number,
  channel: string
): Effect.Effect<Canonical.EmbedResponse, GatewayError.UpstreamUnavailable> => {
  const fail = (what: string) =>
    Effect.fail(new GatewayError.UpstreamUnavailable({ message: `The upstream '${channel}' answered with ${what}.` }))
  const json = UpstreamErrors.parseBody(text)
  if (!Predicate.isObject(json) || !Array.isArray(json.predictions)) {
    return fail("something that is not a list of embeddings")
  }
  const vectors: Array<ReadonlyArray<number>> = []
  let tokens = 0
  let rejected: string | undefined
  for (const prediction of json.predictions) {
    const embeddings = Predicate.isObject(prediction) ? prediction.embeddings : undefined
    const values = Predicate.isObject(embeddings) ? embeddings.values : undefined
    if (!Array.isArray(values) || !values.every((v) => typeof v === "number" && Number.isFinite(v))) {
      return fail("a prediction that is not an embedding")
    }
    vectors.push(values as ReadonlyArray<number>)
    const statistics = Predicate.isObject(embeddings) ? embeddings.statistics : undefined
    const count = Predicate.isObject(statistics) ? statistics.token_count : undefined
    if (count !== undefined) {
      const bad = Tokens.badCount({ token_count: count })
      if (bad !== undefined) rejected ??= bad
      else tokens += count as number
    }
  }
  if (vectors.length !== count) return fail(`${vectors.length} embeddings for ${count} inputs`)
  return Effect.succeed(
    rejected !== undefined ? { vectors, usageRejected: rejected } : { vectors, promptTokens: tokens }
  )
}

/**
 * A Vertex error answer as a gateway error: Google's envelope as
 * `ErrorEnvelope.classifyUpstream` reads it, except that a 403 with the
 * reason `IAM_PERMISSION_DENIED` refuses the channel's service account.
 *
 * @category errors
 */
export const classify = (
  status: number,
  bodyText: string,
  responseHeaders: UpstreamErrors.Headers = {}
): UpstreamErrors.UpstreamError => {
  const error = ErrorEnvelope.upstreamErrorOf(UpstreamErrors.parseBody(bodyText))
  if (status === 403 && error?.details.some((detail) => detail.reason === "IAM_PERMISSION_DENIED") === true) {
    return UpstreamErrors.credentialsRefused(
      403,
      "service account",
      "the roles of the channel's service account on its project (it needs Vertex AI User) and the project and location"
    )
  }
  return ErrorEnvelope.classifyUpstreamError(status, error, responseHeaders)
}

/** The publishers whose models a Vertex channel lists, in order. @category models */
export const LISTED_PUBLISHERS: ReadonlyArray<string> = ["google", "anthropic"]

/**
 * One page of Model Garden's list of a publisher's models:
 * `{base}/v1beta1/publishers/{publisher}/models?pageSize=100`. `page`: the
 * list's own token for a page, as `decodePublisherModels` gave it
 * (`{publisher}|{pageToken}`; undefined: Google's first page).
 *
 * @category models
 */
export const publisherModelsUrl = (baseUrl: string, page: string | undefined): string => {
  const bar = page === undefined ? -1 : page.indexOf("|")
  const publisher = page === undefined ? LISTED_PUBLISHERS[0]! : page.slice(0, bar)
  const token = page === undefined ? "" : page.slice(bar + 1)
  return `${trimSlash(baseUrl)}/v1beta1/publishers/${segment(publisher)}/models?pageSize=100${
    token === "" ? "" : `&pageToken=${encodeURIComponent(token)}`
  }`
}

/** Google's publisher models a channel serves through this dialect: Gemini's and the text-embedding ones. */
const servedGoogleModel = (id: string): boolean =>
  (id.startsWith("gemini-") && !/-(image|tts)\b|-live\b|native-audio/.test(id)) ||
  /^(text-embedding|text-multilingual-embedding)-/.test(id)

/**
 * Reads a page of Model Garden's list (`{"publisherModels": [{"name":
 * "publishers/{publisher}/models/{model}", ...}], "nextPageToken"}`) as
 * listed models: Google's Gemini and embedding models (image, speech and
 * other models left out) and Anthropic's Claude. The next page is the
 * publisher's next, then the next publisher's first (`LISTED_PUBLISHERS`).
 *
 * @category models
 */
export const decodePublisherModels = (
  text: string,
  channel: string
): Effect.Effect<Core.ModelListPage, GatewayError.UpstreamUnavailable> => {
  const json = UpstreamErrors.parseBody(text)
  if (!Predicate.isObject(json) || (json.publisherModels !== undefined && !Array.isArray(json.publisherModels))) {
    return Effect.fail(
      new GatewayError.UpstreamUnavailable({
        message: `The upstream '${channel}' answered with something that is not a list of Vertex AI publisher models.`
      })
    )
  }
  const entries: ReadonlyArray<unknown> = Array.isArray(json.publisherModels) ? json.publisherModels : []
  const models: Array<Core.ListedModel> = []
  let publisher: string | undefined
  for (const entry of entries) {
    const name = Predicate.isObject(entry) && typeof entry.name === "string" ? entry.name : undefined
    const match = name === undefined ? null : /^publishers\/([^/]+)\/models\/([^/]+)$/.exec(name)
    if (match === null) continue
    const [, owner, id] = match as unknown as [string, string, string]
    publisher ??= owner
    const served = owner === "anthropic" ? id.startsWith("claude-") : owner === "google" && servedGoogleModel(id)
    if (!served) continue
    models.push({ id, ...(id.includes("embedding") ? { embedding: true } : {}) })
  }
  const token = typeof json.nextPageToken === "string" && json.nextPageToken !== "" ? json.nextPageToken : undefined
  const following = publisher === undefined ? undefined : LISTED_PUBLISHERS[LISTED_PUBLISHERS.indexOf(publisher) + 1]
  const next = publisher === undefined
    ? undefined
    : token !== undefined
    ? `${publisher}|${token}`
    : following === undefined
    ? undefined
    : `${following}|`
  return Effect.succeed(next === undefined ? { models } : { models, next })
}

/** The fields of a generateContent body Vertex's `:countTokens` takes. */
const COUNT_FIELDS = ["contents", "systemInstruction", "tools"] as const

/**
 * Where a Vertex channel is served (`Channel.cloud`), as `VertexTarget`.
 *
 * @category urls
 */
export const targetOf = (channel: Domain.Channel): VertexTarget => ({
  baseUrl: channel.baseUrl,
  project: channel.cloud?.project ?? "",
  location: channel.cloud?.location ?? ""
})

/**
 * Gemini on a Vertex AI channel, as the engine speaks to it: this package's
 * Gemini upstream with Vertex's paths, its errors, `:countTokens`, and its
 * embeddings through `:predict` (translated, never a client's
 * `embedContent` body relayed). `headers` carries no credentials: the engine
 * adds the channel's access token to each request (`Authorization: Bearer`).
 * Its model list is Model Garden's (`publisherModelsUrl`): Google's Gemini and
 * embedding models, then Anthropic's Claude, which a channel's service account
 * may call.
 *
 * @category dialect
 */
export const upstream: Core.UpstreamDialect = {
  ...Dialect.upstream,
  chatUrl: (channel, upstreamModel, stream) => chatUrl(targetOf(channel), upstreamModel, stream),
  headers: (channel) => ({ "content-type": "application/json", ...channel.headers }),
  classify: (status, body, responseHeaders) => classify(status, body, responseHeaders),
  countTokens: {
    url: (channel, upstreamModel) => countTokensUrl(targetOf(channel), upstreamModel),
    isCount: Dialect.upstream.countTokens!.isCount,
    // Another dialect's client (Anthropic's count_tokens): its request as a countTokens body.
    translated: {
      encode: (request, upstreamModel) =>
        Effect.map(Dialect.upstream.encodeRequest(request, upstreamModel), (text) => {
          const json = JSON.parse(text) as Record<string, unknown>
          const body: Record<string, unknown> = {}
          for (const field of COUNT_FIELDS) if (json[field] !== undefined) body[field] = json[field]
          return JSON.stringify(body)
        }),
      read: (text) => {
        const json = UpstreamErrors.parseBody(text)
        return Predicate.isObject(json) && Number.isInteger(json.totalTokens) && (json.totalTokens as number) >= 0
          ? json.totalTokens as number
          : undefined
      }
    }
  },
  embeddings: {
    translateOnly: true,
    url: (channel, upstreamModel) => embeddingsUrl(targetOf(channel), upstreamModel),
    inputsPerRequest,
    encode: (request) => Effect.succeed(encodeEmbeddings(request)),
    decode: decodeEmbeddings
  },
  listModels: {
    url: (channel, page) => publisherModelsUrl(channel.baseUrl, page),
    decode: decodePublisherModels
  }
}
