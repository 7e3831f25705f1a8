/**
 * The dialects this server speaks, by name: the client side of each route's
 * dialect and the upstream side of each channel's.
 *
 * @since 0.1.0
 */
import type { Domain, GatewayError } from "@modelgate/core"
import { Effect } from "effect"
import * as Anthropic from "./AnthropicDialect.ts"
import type { ClientCodec, UpstreamCodec } from "./Codecs.ts"
import * as Gemini from "./GeminiDialect.ts"
import * as OpenAI from "./OpenAIDialect.ts"

export { geminiMethod } from "./GeminiDialect.ts"
export { openAIEmbeddings } from "./Embeddings.ts"

const clients: Record<Domain.Dialect, ClientCodec> = {
  openai: OpenAI.client,
  gemini: Gemini.client,
  // Anthropic clients are not served yet; their paths answer in OpenAI's envelope.
  anthropic: OpenAI.client
}

/** The client side of a dialect. @category codecs */
export const client = (dialect: Domain.Dialect): ClientCodec => clients[dialect]

const upstreams: Record<Domain.Dialect, UpstreamCodec> = {
  openai: OpenAI.upstream,
  gemini: Gemini.upstream,
  anthropic: Anthropic.upstream
}

/** The upstream side of a dialect (every dialect has one: a channel is never spoken to in another's format). @category codecs */
export const upstream = (dialect: Domain.Dialect): UpstreamCodec => upstreams[dialect]

/** A models list in the dialect's shape (`search` carries Gemini's `pageSize`/`pageToken`). @category models */
export const modelsList = (
  dialect: Domain.Dialect,
  models: ReadonlyArray<Domain.Model>,
  search: string
): Effect.Effect<unknown, GatewayError.InvalidRequest> =>
  dialect === "gemini" ? Gemini.modelsList(models, search) : Effect.succeed(OpenAI.modelsList(models, 0))

/** One model in the dialect's shape. @category models */
export const modelObject = (dialect: Domain.Dialect, model: Domain.Model): unknown =>
  dialect === "gemini" ? Gemini.modelObject(model) : OpenAI.modelObject(model)
