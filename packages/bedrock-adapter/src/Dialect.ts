/**
 * AWS Bedrock as an upstream dialect (core's `UpstreamDialect`), for the
 * engine's `bedrock` channels: the Converse API (`/model/{id}/converse`,
 * `/converse-stream`), its binary event stream decoded on the bytes
 * (`binaryStream`), its errors, and the control plane's model list.
 *
 * Bedrock has no client dialect: a client of any front door is translated
 * to Converse, never relayed. `headers` carries no credentials: the engine
 * signs each request over its final URL and bytes (`Signer.sign`, with the
 * key's access key pair) or adds a Bedrock API key (`Signer.bearer`), since
 * both need the request as it is sent.
 *
 * Token counts go to `CountTokens` (`/model/{id}/count-tokens`, the request
 * translated to Converse's `messages`, `system` and `toolConfig`).
 * Embeddings go through `InvokeModel` (`/model/{id}/invoke`) in each
 * embedding family's own shape (Amazon Titan Text Embeddings, Cohere Embed:
 * `Embeddings.ts`), always translated (no client speaks Bedrock); a model of
 * neither family makes none (`embeddings` is for the engine to offer only
 * where `Embeddings.familyOf` knows the model).
 *
 * @since 0.1.0
 */
import { type Dialect as Core, type Domain, GatewayError } from "@modelgate/core"
import { Effect } from "effect"
import * as Embeddings from "./Embeddings.ts"
import * as Endpoint from "./Endpoint.ts"
import * as ErrorEnvelope from "./ErrorEnvelope.ts"
import * as EventStream from "./EventStream.ts"
import * as Request from "./Request.ts"
import * as Response from "./Response.ts"
import * as Stream from "./Stream.ts"

/**
 * The control plane's base URL for a channel: the region's
 * (`https://bedrock.{region}.amazonaws.com`) when the channel uses the
 * runtime's default address, else the channel's own base URL (a private
 * endpoint or proxy that serves both).
 *
 * @category urls
 */
export const controlBaseUrl = (channel: Domain.Channel): string => {
  const region = channel.cloud?.region ?? "us-east-1"
  const runtime = Endpoint.runtimeBaseUrl(region)
  const base = channel.baseUrl.endsWith("/") ? channel.baseUrl.slice(0, -1) : channel.baseUrl
  return base === runtime ? Endpoint.controlBaseUrl(region) : base
}

const notText = (channel: string): GatewayError.UpstreamUnavailable =>
  new GatewayError.UpstreamUnavailable({
    message: `The upstream '${channel}' streams binary frames, which are read on their bytes.`
  })

/**
 * The Bedrock upstream (embeddings included: see `chatOnly` for a model that
 * makes none).
 *
 * @category dialect
 */
export const upstream: Core.UpstreamDialect = {
  dialect: "bedrock",
  chatUrl: (channel, upstreamModel, stream) => Endpoint.converseUrl(channel.baseUrl, upstreamModel, stream),
  headers: (channel) => ({ "content-type": "application/json", ...channel.headers }),
  encodeRequest: (request, upstreamModel) =>
    Effect.map(Request.encodeRequest(request, upstreamModel), (body) => JSON.stringify(body)),
  decodeResponse: (json, start) =>
    Response.decodeResponse(json, { id: `chatcmpl-${start.id}`, model: "", created: start.created }),
  // Never used: `binaryStream` reads the stream on its bytes.
  eventDecoder: () => ({
    push: () => {
      throw notText("bedrock")
    },
    end: () => {
      throw notText("bedrock")
    }
  }),
  notAnAnswer: Response.notAnAnswer,
  opening: (_text, _ended, channel) => notText(channel),
  binaryStream: {
    contentType: EventStream.CONTENT_TYPE,
    opening: (bytes, ended, channel, maxEventBytes) => Stream.opening(bytes, ended, channel, maxEventBytes),
    decoder: (start, bound) =>
      new Stream.ByteDecoder({ id: `chatcmpl-${start.id}`, model: "", created: start.created }, bound)
  },
  classify: (status, body, headers) => ErrorEnvelope.classifyUpstream(status, body, headers),
  countTokens: {
    url: (channel, upstreamModel) => Endpoint.countTokensUrl(channel.baseUrl, upstreamModel),
    isCount: Endpoint.isCountAnswer,
    translated: {
      encode: (request, upstreamModel) =>
        Effect.map(Request.encodeRequest(request, upstreamModel), (body) => Endpoint.countTokensBody(body)),
      read: Endpoint.countOf
    }
  },
  embeddings: {
    translateOnly: true,
    url: (channel, upstreamModel) => Embeddings.invokeUrl(channel.baseUrl, upstreamModel),
    inputsPerRequest: (upstreamModel) => {
      const family = Embeddings.familyOf(upstreamModel)
      return family === undefined ? 1 : Embeddings.inputsPerRequest(family)
    },
    encode: Embeddings.encode,
    decode: Embeddings.decode
  },
  listModels: {
    url: (channel, page) => page === undefined ? Endpoint.foundationModelsUrl(controlBaseUrl(channel)) : undefined,
    decode: Endpoint.decodeFoundationModels
  }
}

/**
 * The Bedrock upstream for a model that makes no embeddings (a chat model):
 * the same, without `embeddings`, so an embeddings call leaves its channels out.
 *
 * @category dialect
 */
export const chatOnly: Core.UpstreamDialect = { ...upstream, embeddings: undefined }
