/**
 * An Anthropic channel's own model list: `GET {base}/v1/models?limit=1000`
 * (and `&after_id=` for the pages after), answered as `{"data":[{"type":
 * "model","id","display_name","created_at","max_input_tokens"?,"max_tokens"?}],
 * "has_more","first_id","last_id"}`.
 *
 * @example
 * ```ts
 * import { UpstreamModels } from "@modelgate/anthropic-adapter"
 * import { Effect } from "effect"
 *
 * Effect.runSync(UpstreamModels.list.decode(
 *   '{"data":[{"type":"model","id":"claude-sonnet-4-5","display_name":"Claude Sonnet 4.5"}],"has_more":false}',
 *   "anthropic"
 * ))
 * // { models: [{ id: "claude-sonnet-4-5", displayName: "Claude Sonnet 4.5" }] }
 * ```
 *
 * @since 0.1.0
 */
import { Dialect as Core } from "@modelgate/core"
import { Effect, Schema } from "effect"

const Count = Schema.Int.check(Schema.isGreaterThan(0))

const Listing = Schema.Struct({
  data: Schema.Array(Schema.Struct({
    id: Schema.String.check(Schema.isMinLength(1)),
    display_name: Schema.optionalKey(Schema.String),
    max_input_tokens: Schema.optionalKey(Count),
    max_tokens: Schema.optionalKey(Count)
  })),
  has_more: Schema.optionalKey(Schema.Boolean),
  last_id: Schema.optionalKey(Schema.NullOr(Schema.String))
})

const decodeListing = Schema.decodeUnknownResult(Schema.fromJsonString(Listing))

const trimSlash = (url: string) => url.endsWith("/") ? url.slice(0, -1) : url

/**
 * The Anthropic upstream's model list.
 *
 * @category models
 */
export const list: Core.UpstreamModelList = {
  url: (channel, page) =>
    `${trimSlash(channel.baseUrl)}/v1/models?limit=1000${
      page === undefined ? "" : `&after_id=${encodeURIComponent(page)}`
    }`,
  decode: (text, channel) => {
    const result = decodeListing(text)
    if (result._tag === "Failure") {
      return Effect.fail(Core.answeredOther(channel, "a model list ({\"data\":[{\"id\":...}]})"))
    }
    const { data, has_more, last_id } = result.success
    const models = data.map((entry): Core.ListedModel => ({
      id: entry.id,
      ...(entry.display_name === undefined || entry.display_name === "" ? {} : { displayName: entry.display_name }),
      ...(entry.max_input_tokens === undefined ? {} : { inputTokenLimit: entry.max_input_tokens }),
      ...(entry.max_tokens === undefined ? {} : { outputTokenLimit: entry.max_tokens })
    }))
    const next = has_more === true && typeof last_id === "string" && last_id !== "" ? last_id : undefined
    return Effect.succeed(next === undefined ? { models } : { models, next })
  }
}
