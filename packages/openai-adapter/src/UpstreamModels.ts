/**
 * An OpenAI-format channel's own model list: `GET {base}/models`, answered
 * as `{"object":"list","data":[{"id", ...}]}` in one page. OpenAI-compatible
 * servers add what they know: OpenRouter a `name` and a `context_length`,
 * vLLM a `max_model_len`, which become the listed model's name and input
 * limit. Azure OpenAI channels call deployments by name, which their keys
 * cannot list: they have no list.
 *
 * @example
 * ```ts
 * import { UpstreamModels } from "@modelgate/openai-adapter"
 * import { Effect } from "effect"
 *
 * Effect.runSync(UpstreamModels.list.decode('{"object":"list","data":[{"id":"gpt-4o-mini","object":"model"}]}', "openai"))
 * // { models: [{ id: "gpt-4o-mini" }] }
 * ```
 *
 * @since 0.1.0
 */
import { Dialect as Core, Domain } from "@modelgate/core"
import { Effect, Predicate, Schema } from "effect"

const Listing = Schema.Struct({
  data: Schema.Array(Schema.Struct({
    id: Schema.String.check(Schema.isMinLength(1)),
    name: Schema.optionalKey(Schema.Unknown),
    context_length: Schema.optionalKey(Schema.Unknown),
    max_model_len: Schema.optionalKey(Schema.Unknown)
  }))
})

const decodeListing = Schema.decodeUnknownResult(Schema.fromJsonString(Listing))

const positiveInt = (value: unknown): number | undefined =>
  typeof value === "number" && Number.isSafeInteger(value) && value > 0 ? value : undefined

/** Embedding models, by OpenAI's and the common servers' naming (`text-embedding-3-small`, `bge-m3-embed`). */
const EMBEDDING = /embed/i

const trimSlash = (url: string) => url.endsWith("/") ? url.slice(0, -1) : url

/**
 * The OpenAI upstream's model list.
 *
 * @category models
 */
export const list: Core.UpstreamModelList = {
  url: (channel) => channel.type === "azure" ? undefined : `${trimSlash(channel.baseUrl)}/models`,
  // Azure OpenAI: the resource's model list (`GET /openai/models`, the same `{"data":[{"id"}]}` shape), which its
  // keys may read, though they cannot list deployments.
  keyCheckUrl: (channel) =>
    channel.type === "azure"
      ? `${trimSlash(channel.baseUrl)}/openai/models?api-version=${
        encodeURIComponent(channel.apiVersion ?? Domain.DEFAULT_AZURE_API_VERSION)
      }`
      : `${trimSlash(channel.baseUrl)}/models`,
  decode: (text, channel) => {
    const result = decodeListing(text)
    if (result._tag === "Failure") {
      return Effect.fail(Core.answeredOther(channel, "a model list ({\"data\":[{\"id\":...}]})"))
    }
    return Effect.succeed({
      models: result.success.data.map((entry): Core.ListedModel => {
        const limit = positiveInt(entry.context_length) ?? positiveInt(entry.max_model_len)
        return {
          id: entry.id,
          ...(Predicate.isString(entry.name) && entry.name !== "" ? { displayName: entry.name } : {}),
          ...(limit === undefined ? {} : { inputTokenLimit: limit }),
          ...(EMBEDDING.test(entry.id) ? { embedding: true } : {})
        }
      })
    })
  }
}
