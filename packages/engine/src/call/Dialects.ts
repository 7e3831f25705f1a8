/**
 * The dialects the engine speaks, by name: the client side of each route's
 * dialect and the upstream side of each channel's, from the adapter packages.
 *
 * @since 0.1.0
 */
import { Dialect as Anthropic, Vertex as AnthropicVertex } from "@modelgate/anthropic-adapter"
import { Dialect as Bedrock, Embeddings as BedrockEmbeddings } from "@modelgate/bedrock-adapter"
import { type Dialect, Domain } from "@modelgate/core"
import { Dialect as Gemini, Vertex as GeminiVertex } from "@modelgate/genai-adapter"
import { Dialect as OpenAI } from "@modelgate/openai-adapter"
import { Location } from "@modelgate/vertex"

const clients: Record<Domain.Dialect, Dialect.ClientDialect> = {
  openai: OpenAI.client,
  gemini: Gemini.client,
  anthropic: Anthropic.client,
  responses: OpenAI.responsesClient
}

/** The client side of a dialect. @category dialects */
export const client = (dialect: Domain.Dialect): Dialect.ClientDialect => clients[dialect]

const upstreams: Record<Domain.WireDialect, Dialect.UpstreamDialect> = {
  openai: OpenAI.upstream,
  gemini: Gemini.upstream,
  anthropic: Anthropic.upstream,
  responses: OpenAI.responsesUpstream,
  bedrock: Bedrock.upstream
}

/** The upstream side of a dialect (every dialect has one: a channel is never spoken to in another's format). @category dialects */
export const upstream = (dialect: Domain.WireDialect): Dialect.UpstreamDialect => upstreams[dialect]

/**
 * The upstream side a Vertex AI channel speaks for an upstream model: Claude
 * (`claude-…`, or a model the channel's `publishers` gives to Anthropic) in
 * Anthropic's Messages at Vertex's `:rawPredict`, every other model in
 * Gemini's dialect at Vertex's publisher paths.
 *
 * @category dialects
 */
export const vertex = (channel: Domain.Channel, upstreamModel: string | undefined): Dialect.UpstreamDialect =>
  upstreamModel !== undefined &&
    Location.publisherOf(upstreamModel, channel.cloud?.publishers?.[upstreamModel]) === "anthropic"
    ? AnthropicVertex.upstream
    : GeminiVertex.upstream

/**
 * The upstream side a channel speaks (Azure OpenAI speaks OpenAI's; a Vertex
 * AI channel Gemini's or, for its Claude models, Anthropic's: give the
 * upstream model when known; Bedrock the Converse API, and `InvokeModel`
 * for the embeddings of its embedding models).
 *
 * @category dialects
 */
export const ofChannel = (channel: Domain.Channel, upstreamModel?: string): Dialect.UpstreamDialect =>
  channel.type === "vertex"
    ? vertex(channel, upstreamModel)
    : channel.type === "bedrock" && upstreamModel !== undefined &&
        BedrockEmbeddings.familyOf(upstreamModel) === undefined
    ? Bedrock.chatOnly
    : upstreams[Domain.dialectOf(channel.type)]

/**
 * The upstream side a chat call of `client` speaks to `channel`: the
 * Responses API for a Responses client on an OpenAI channel marked
 * `responses` (the client's body is relayed), else the channel's own.
 *
 * @category dialects
 */
export const forChat = (
  client: Dialect.ClientDialect,
  channel: Domain.Channel,
  upstreamModel?: string
): Dialect.UpstreamDialect =>
  client.dialect === "responses" && channel.responses === true && channel.type === "openai"
    ? upstreams.responses
    : ofChannel(channel, upstreamModel)
