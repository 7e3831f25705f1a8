/**
 * Embeddings on Bedrock: `InvokeModel` (`POST {base}/model/{modelId}/invoke`)
 * with each embedding family's own body, since Converse makes none.
 *
 * - Amazon Titan Text Embeddings v2 (`amazon.titan-embed-text-v2:0`): one
 *   text a request, `{"inputText", "dimensions", "normalize"}` (256, 512 or
 *   1024 dimensions) -> `{"embedding", "inputTextTokenCount"}`. Titan v1
 *   (`amazon.titan-embed-text-v1`, `amazon.titan-embed-g1-text-02`) takes
 *   `{"inputText"}` alone (1536 dimensions).
 * - Cohere Embed (`cohere.embed-english-v3`, `cohere.embed-multilingual-v3`,
 *   `cohere.embed-v4:0`): up to 96 texts a request, `{"texts", "input_type"}`
 *   (from the request's task, `cohereInputType`; `search_document`, texts
 *   stored to be searched, when it says none) -> `{"embeddings": [[...]]}`, or
 *   `{"embeddings": {"float": [[...]]}}` when `embedding_types` is asked
 *   (v4 always is, with `output_dimension` for 256, 512, 1024 or 1536). Its
 *   body carries no usage: Bedrock says the tokens in the
 *   `X-Amzn-Bedrock-Input-Token-Count` header, which every `InvokeModel`
 *   answer has (Titan's too; its body's count is read first).
 *
 * A model of neither family makes no embeddings here (`familyOf`).
 *
 * @since 0.1.0
 */
import { type Canonical, GatewayError, Tokens, UpstreamErrors } from "@modelgate/core"
import { Effect, Predicate } from "effect"
import { encodeSegment } from "./Endpoint.ts"

/** An embedding family Bedrock serves through `InvokeModel`. @category models */
export type Family = "titan-v2" | "titan-v1" | "cohere-v3" | "cohere-v4"

/**
 * The embedding family of a Bedrock model id (a foundation model, an
 * inference profile such as `us.cohere.embed-v4:0`, or an ARN naming one),
 * or undefined for a model that makes no embeddings through this adapter.
 *
 * @category models
 */
export const familyOf = (modelId: string): Family | undefined => {
  const id = modelId.toLowerCase()
  if (id.includes("amazon.titan-embed-text-v2")) return "titan-v2"
  if (id.includes("amazon.titan-embed-text-v1") || id.includes("amazon.titan-embed-g1-text")) return "titan-v1"
  if (id.includes("cohere.embed-v4")) return "cohere-v4"
  if (id.includes("cohere.embed-")) return "cohere-v3"
  return undefined
}

/** How many texts one request of a family embeds (Titan one, Cohere 96). @category models */
export const inputsPerRequest = (family: Family): number => family === "cohere-v3" || family === "cohere-v4" ? 96 : 1

const trimSlash = (url: string) => url.endsWith("/") ? url.slice(0, -1) : url

/** `InvokeModel`'s endpoint of a model: `{base}/model/{modelId}/invoke`. @category urls */
export const invokeUrl = (baseUrl: string, modelId: string): string =>
  `${trimSlash(baseUrl)}/model/${encodeSegment(modelId)}/invoke`

/** The vector sizes each family can be asked for (none: its one size only). */
const SIZES: Readonly<Record<Family, ReadonlyArray<number>>> = {
  "titan-v2": [256, 512, 1024],
  "titan-v1": [],
  "cohere-v3": [],
  "cohere-v4": [256, 512, 1024, 1536]
}

const unsupported = (message: string) => Effect.fail(new GatewayError.UnsupportedFeature({ message }))

/**
 * The `InvokeModel` body for a canonical request (at most `inputsPerRequest`
 * inputs: the engine sends more in several requests). Fails for a model of
 * no embedding family, and for a vector size the model cannot make.
 *
 * @category embeddings
 */
export const encode = (
  request: Canonical.EmbedRequest,
  modelId: string
): Effect.Effect<string, GatewayError.UnsupportedFeature> => {
  const family = familyOf(modelId)
  if (family === undefined) {
    return unsupported(
      `The Bedrock model '${modelId}' makes no embeddings: Bedrock's embedding models are Amazon Titan Text Embeddings and Cohere Embed.`
    )
  }
  const { dimensions, inputs } = request
  if (dimensions !== undefined && !SIZES[family].includes(dimensions)) {
    const sizes = SIZES[family]
    return unsupported(
      sizes.length === 0
        ? `The Bedrock model '${modelId}' makes vectors of one size only: leave 'dimensions' out.`
        : `The Bedrock model '${modelId}' makes vectors of ${sizes.join(", ")} dimensions, not ${dimensions}.`
    )
  }
  if (inputs.length > inputsPerRequest(family)) {
    return unsupported(`The Bedrock model '${modelId}' embeds at most ${inputsPerRequest(family)} texts a request.`)
  }
  switch (family) {
    case "titan-v2":
      return Effect.succeed(JSON.stringify({
        inputText: inputs[0] ?? "",
        ...(dimensions === undefined ? {} : { dimensions }),
        normalize: true
      }))
    case "titan-v1":
      return Effect.succeed(JSON.stringify({ inputText: inputs[0] ?? "" }))
    case "cohere-v3":
      return Effect.succeed(JSON.stringify({ texts: inputs, input_type: cohereInputType(request.task) }))
    case "cohere-v4":
      return Effect.succeed(JSON.stringify({
        texts: inputs,
        input_type: cohereInputType(request.task),
        embedding_types: ["float"],
        ...(dimensions === undefined ? {} : { output_dimension: dimensions })
      }))
  }
}

/**
 * Cohere's `input_type` for a task: a query (`search_query`) for the query
 * tasks, `classification` and `clustering` as they are, else a document
 * (`search_document`: also when the caller said nothing).
 *
 * @category embeddings
 */
export const cohereInputType = (task: Canonical.EmbedTask | undefined): string => {
  switch (task) {
    case "retrieval_query":
    case "question_answering":
    case "fact_verification":
    case "code_retrieval_query":
      return "search_query"
    case "classification":
    case "clustering":
      return task
    default:
      return "search_document"
  }
}

/** The header in which Bedrock says how many input tokens an `InvokeModel` call counted. @category constants */
export const INPUT_TOKEN_COUNT_HEADER = "x-amzn-bedrock-input-token-count"

const isVector = (value: unknown): value is ReadonlyArray<number> =>
  Array.isArray(value) && value.length > 0 && value.every((v) => typeof v === "number" && Number.isFinite(v))

const headerValue = (headers: Readonly<Record<string, string>>, name: string): string | undefined => {
  for (const key of Object.keys(headers)) if (key.toLowerCase() === name) return headers[key]
  return undefined
}

/**
 * Reads an `InvokeModel` answer of either family: its vectors, in order, and
 * the tokens counted (Titan's `inputTextTokenCount`, else the
 * `X-Amzn-Bedrock-Input-Token-Count` header; a figure that is not a token
 * count is refused as `usageRejected`). An answer that is neither family's,
 * or holds another number of vectors than `count`, is the upstream failing.
 *
 * @category embeddings
 */
export const decode = (
  text: string,
  count: number,
  channel: string,
  headers: Readonly<Record<string, string>> = {}
): Effect.Effect<Canonical.EmbedResponse, GatewayError.UpstreamUnavailable> => {
  const fail = (what: string) =>
    Effect.fail(new GatewayError.UpstreamUnavailable({ message: `The upstream '${channel}' answered with ${what}.` }))
  const json = UpstreamErrors.parseBody(text)
  if (!Predicate.isObject(json)) return fail("something that is not an embeddings answer")
  let vectors: ReadonlyArray<ReadonlyArray<number>>
  let reported: unknown
  let named = "inputTextTokenCount"
  if (json.embedding !== undefined) {
    if (!isVector(json.embedding)) return fail("an embedding that is not a list of numbers")
    vectors = [json.embedding]
    reported = json.inputTextTokenCount
  } else {
    const embeddings = Predicate.isObject(json.embeddings) && !Array.isArray(json.embeddings)
      ? json.embeddings.float
      : json.embeddings
    if (!Array.isArray(embeddings) || !embeddings.every(isVector)) {
      return fail("something that is not a list of embeddings")
    }
    vectors = embeddings
  }
  if (vectors.length !== count) return fail(`${vectors.length} embeddings for ${count} inputs`)
  if (reported === undefined) {
    const header = headerValue(headers, INPUT_TOKEN_COUNT_HEADER)
    if (header !== undefined) reported = /^\s*-?\d+(\.\d+)?\s*$/.test(header) ? Number(header) : header
    named = INPUT_TOKEN_COUNT_HEADER
  }
  if (reported === undefined || reported === null) return Effect.succeed({ vectors })
  const bad = Tokens.badCount({ [named]: reported })
  return Effect.succeed(
    bad !== undefined ? { vectors, usageRejected: bad } : { vectors, promptTokens: reported as number }
  )
}
