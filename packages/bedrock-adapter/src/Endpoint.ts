/**
 * Where a Bedrock channel is reached: the runtime's Converse endpoints, the
 * control plane's model list (the probe's model-free credential check), and
 * the defaults for a region.
 *
 * Model ids contain `:` (`anthropic.claude-3-haiku-20240307-v1:0`) and ARNs
 * `/`: a model id is one path segment, every character outside
 * `A-Za-z0-9-_.~` percent-encoded (`%3A`, `%2F`), as AWS's SDKs write it. The
 * signature is computed over that encoded path (see `Signer.ts`).
 *
 * @since 0.1.0
 */
import { type Dialect, GatewayError } from "@modelgate/core"
import { Effect, Predicate } from "effect"
import type * as Converse from "./Converse.ts"

/** The service name requests to Bedrock (runtime and control plane) are signed for. @category constants */
export const SIGNING_SERVICE = "bedrock"

const trimSlash = (url: string) => url.endsWith("/") ? url.slice(0, -1) : url

/** The runtime's base URL in a region: `https://bedrock-runtime.{region}.amazonaws.com`. @category urls */
export const runtimeBaseUrl = (region: string): string => `https://bedrock-runtime.${region}.amazonaws.com`

/** The control plane's base URL in a region (model lists): `https://bedrock.{region}.amazonaws.com`. @category urls */
export const controlBaseUrl = (region: string): string => `https://bedrock.${region}.amazonaws.com`

/**
 * A path segment as AWS's SDKs encode it: `encodeURIComponent`, and also
 * `!'()*` (RFC 3986 unreserved characters only are left as they are).
 *
 * @category urls
 */
export const encodeSegment = (segment: string): string =>
  encodeURIComponent(segment).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)

/**
 * The Converse endpoint of a model: `{base}/model/{modelId}/converse`, or
 * `/converse-stream` for a streamed answer.
 *
 * @example
 * ```ts
 * converseUrl("https://bedrock-runtime.us-east-1.amazonaws.com", "us.anthropic.claude-sonnet-4-5-20250929-v1:0", true)
 * // "https://bedrock-runtime.us-east-1.amazonaws.com/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
 * ```
 *
 * @category urls
 */
export const converseUrl = (baseUrl: string, modelId: string, stream: boolean): string =>
  `${trimSlash(baseUrl)}/model/${encodeSegment(modelId)}/${stream ? "converse-stream" : "converse"}`

/**
 * The token counter of a model (`CountTokens`): `{base}/model/{modelId}/count-tokens`.
 * Bedrock counts for some models only, by their bare foundation-model id;
 * others answer `ValidationException`.
 *
 * @category token counts
 */
export const countTokensUrl = (baseUrl: string, modelId: string): string =>
  `${trimSlash(baseUrl)}/model/${encodeSegment(countingModel(modelId))}/count-tokens`

/**
 * The model `CountTokens` is asked about for a model id: a cross-region
 * inference profile's foundation model (`us.anthropic.claude-…` counts as
 * `anthropic.claude-…`: the same model, and `CountTokens` takes no profile).
 *
 * @category token counts
 */
export const countingModel = (modelId: string): string => modelId.replace(/^(us|eu|apac|global|jp|au|ca|us-gov)\./, "")

/** The input tokens of a `CountTokens` answer, or undefined when it is not one. @category token counts */
export const countOf = (text: string): number | undefined => {
  if (!isCountAnswer(text)) return undefined
  return (JSON.parse(text) as { inputTokens: number }).inputTokens
}

/**
 * The `CountTokens` body for a Converse request: `{"input": {"converse":
 * {messages, system, toolConfig}}}` (what the prompt is made of; the
 * inference settings do not count).
 *
 * @category token counts
 */
export const countTokensBody = (request: Converse.ConverseRequest): string =>
  JSON.stringify({
    input: {
      converse: {
        messages: request.messages,
        ...(request.system === undefined ? {} : { system: request.system }),
        ...(request.toolConfig === undefined ? {} : { toolConfig: request.toolConfig })
      }
    }
  })

/** Whether an answer is a token count (`{"inputTokens": n}`). @category token counts */
export const isCountAnswer = (text: string): boolean => {
  try {
    const json: unknown = JSON.parse(text)
    return Predicate.isObject(json) && Number.isInteger(json.inputTokens) && (json.inputTokens as number) >= 0
  } catch {
    return false
  }
}

/** The control plane's list of foundation models: `{base}/foundation-models`. @category urls */
export const foundationModelsUrl = (controlBase: string): string => `${trimSlash(controlBase)}/foundation-models`

/**
 * Reads `ListFoundationModels`'s answer (`{"modelSummaries": [{modelId,
 * modelName, outputModalities, ...}]}`) as listed models: those that answer
 * with text (chat) or embeddings; image and video generators are left out.
 *
 * @category models
 */
export const decodeFoundationModels = (
  text: string,
  channel: string
): Effect.Effect<Dialect.ModelListPage, GatewayError.UpstreamUnavailable> => {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    json = undefined
  }
  if (!Predicate.isObject(json) || !Array.isArray(json.modelSummaries)) {
    return Effect.fail(
      new GatewayError.UpstreamUnavailable({
        message: `The upstream '${channel}' answered with something that is not a list of Bedrock foundation models.`
      })
    )
  }
  const models: Array<Dialect.ListedModel> = []
  for (const summary of json.modelSummaries) {
    if (!Predicate.isObject(summary) || typeof summary.modelId !== "string") continue
    const outputs = Array.isArray(summary.outputModalities) ? summary.outputModalities : []
    const embedding = outputs.includes("EMBEDDING")
    if (!embedding && !outputs.includes("TEXT")) continue
    models.push({
      id: summary.modelId,
      ...(typeof summary.modelName === "string" ? { displayName: summary.modelName } : {}),
      ...(embedding ? { embedding: true } : {})
    })
  }
  return Effect.succeed({ models })
}
