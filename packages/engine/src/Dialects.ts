/**
 * The dialects the engine speaks, by name: the client side of each route's
 * dialect and the upstream side of each channel's, from the adapter packages.
 *
 * @since 0.1.0
 */
import { Dialect as Anthropic } from "@modelgate/anthropic-adapter"
import { type Dialect, Domain } from "@modelgate/core"
import { Dialect as Gemini } from "@modelgate/genai-adapter"
import { Dialect as OpenAI } from "@modelgate/openai-adapter"

const clients: Record<Domain.Dialect, Dialect.ClientDialect> = {
  openai: OpenAI.client,
  gemini: Gemini.client,
  anthropic: Anthropic.client,
  responses: OpenAI.responsesClient
}

/** The client side of a dialect. @category dialects */
export const client = (dialect: Domain.Dialect): Dialect.ClientDialect => clients[dialect]

const upstreams: Record<Domain.Dialect, Dialect.UpstreamDialect> = {
  openai: OpenAI.upstream,
  gemini: Gemini.upstream,
  anthropic: Anthropic.upstream,
  responses: OpenAI.responsesUpstream
}

/** The upstream side of a dialect (every dialect has one: a channel is never spoken to in another's format). @category dialects */
export const upstream = (dialect: Domain.Dialect): Dialect.UpstreamDialect => upstreams[dialect]

/** The upstream side a channel speaks (Azure OpenAI speaks OpenAI's). @category dialects */
export const ofChannel = (channel: Domain.Channel): Dialect.UpstreamDialect => upstreams[Domain.dialectOf(channel.type)]

/**
 * The upstream side a chat call of `client` speaks to `channel`: the
 * Responses API for a Responses client on an OpenAI channel marked
 * `responses` (the client's body is relayed), else the channel's own.
 *
 * @category dialects
 */
export const forChat = (client: Dialect.ClientDialect, channel: Domain.Channel): Dialect.UpstreamDialect =>
  client.dialect === "responses" && channel.responses === true && channel.type === "openai"
    ? upstreams.responses
    : ofChannel(channel)
