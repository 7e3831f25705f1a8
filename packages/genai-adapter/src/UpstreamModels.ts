/**
 * A Gemini channel's own model list: `GET {base}/v1beta/models?pageSize=1000`
 * (and `&pageToken=` for the pages after), answered as `{"models":[{"name":
 * "models/gemini-2.5-flash", "displayName", "inputTokenLimit",
 * "outputTokenLimit", "supportedGenerationMethods"}], "nextPageToken"}`.
 * Models that neither generate content nor make embeddings (Google lists
 * others, such as question answering and image models) are left out; an
 * embedding model is one that embeds and does not generate.
 *
 * @example
 * ```ts
 * import { UpstreamModels } from "@modelgate/genai-adapter"
 * import { Effect } from "effect"
 *
 * Effect.runSync(UpstreamModels.list.decode(
 *   '{"models":[{"name":"models/gemini-2.5-flash","displayName":"Gemini 2.5 Flash","supportedGenerationMethods":["generateContent"]}]}',
 *   "gemini"
 * ))
 * // { models: [{ id: "gemini-2.5-flash", displayName: "Gemini 2.5 Flash" }] }
 * ```
 *
 * @since 0.1.0
 */
import { Dialect as Core } from "@modelgate/core"
import { Effect, Schema } from "effect"

const Count = Schema.Int.check(Schema.isGreaterThan(0))

const Listing = Schema.Struct({
  models: Schema.optionalKey(Schema.Array(Schema.Struct({
    name: Schema.String.check(Schema.isMinLength(1)),
    displayName: Schema.optionalKey(Schema.String),
    inputTokenLimit: Schema.optionalKey(Count),
    outputTokenLimit: Schema.optionalKey(Count),
    supportedGenerationMethods: Schema.optionalKey(Schema.Array(Schema.String))
  }))),
  nextPageToken: Schema.optionalKey(Schema.String)
})

const decodeListing = Schema.decodeUnknownResult(Schema.fromJsonString(Listing))

const trimSlash = (url: string) => url.endsWith("/") ? url.slice(0, -1) : url

/**
 * The Gemini upstream's model list.
 *
 * @category models
 */
export const list: Core.UpstreamModelList = {
  url: (channel, page) =>
    `${trimSlash(channel.baseUrl)}/v1beta/models?pageSize=1000${
      page === undefined ? "" : `&pageToken=${encodeURIComponent(page)}`
    }`,
  decode: (text, channel) => {
    const result = decodeListing(text)
    if (result._tag === "Failure") {
      return Effect.fail(Core.answeredOther(channel, "a model list ({\"models\":[{\"name\":...}]})"))
    }
    const models: Array<Core.ListedModel> = []
    for (const entry of result.success.models ?? []) {
      const methods = entry.supportedGenerationMethods
      const generates = methods === undefined || methods.includes("generateContent")
      const embeds = methods !== undefined &&
        (methods.includes("embedContent") || methods.includes("batchEmbedContents"))
      if (!generates && !embeds) continue
      models.push({
        id: entry.name.replace(/^models\//, ""),
        ...(entry.displayName === undefined || entry.displayName === "" ? {} : { displayName: entry.displayName }),
        ...(entry.inputTokenLimit === undefined ? {} : { inputTokenLimit: entry.inputTokenLimit }),
        ...(entry.outputTokenLimit === undefined || embeds && !generates
          ? {}
          : { outputTokenLimit: entry.outputTokenLimit }),
        ...(embeds && !generates ? { embedding: true } : {})
      })
    }
    const next = result.success.nextPageToken
    return Effect.succeed(next === undefined || next === "" ? { models } : { models, next })
  }
}
