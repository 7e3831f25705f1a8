/**
 * The price table of well-known models that ships with modelgate
 * (`src/model-prices.json` in this package): list prices taken by hand from the providers'
 * price pages, with those pages and the day they were read. The console
 * prefills a model's prices from it; nothing is fetched from the network.
 *
 * @since 0.1.0
 */
import { Effect, Schema } from "effect"
import type * as C from "./Contract.ts"
// Imported, not read from disk: the server's bundle (dist/modelgate.mjs) carries it.
import table from "./model-prices.json" with { type: "json" }

const Price = Schema.NullOr(Schema.String.check(Schema.isPattern(/^\d{1,6}(\.\d{1,9})?$/)))

/** The file's shape. @category models */
export const PriceFile = Schema.Struct({
  asOf: Schema.String.check(Schema.isPattern(/^\d{4}-\d{2}-\d{2}$/)),
  sources: Schema.Array(Schema.String),
  note: Schema.String,
  models: Schema.Array(Schema.Struct({
    id: Schema.String,
    displayName: Schema.String,
    provider: Schema.String,
    input: Price,
    output: Price,
    cachedInput: Price,
    inputTokenLimit: Schema.Int.check(Schema.isGreaterThan(0)),
    outputTokenLimit: Schema.Int.check(Schema.isGreaterThan(0)),
    reasoning: Schema.optionalKey(Schema.Boolean),
    embedding: Schema.optionalKey(Schema.Boolean)
  }))
})
export type PriceFile = typeof PriceFile.Type

/** The table as the API answers it. @category conversions */
export const toPresets = (file: PriceFile): C.PricePresets => ({
  asOf: file.asOf,
  sources: file.sources,
  data: file.models.map((model) => ({
    id: model.id,
    displayName: model.displayName,
    provider: model.provider,
    prices: { input: model.input, output: model.output, cachedInput: model.cachedInput, perRequest: null, free: false },
    inputTokenLimit: model.inputTokenLimit,
    outputTokenLimit: model.outputTokenLimit,
    embedding: model.embedding ?? false,
    reasoning: model.reasoning ?? false
  }))
})

/**
 * Checks the table that ships with this package (the server does when the API
 * starts).
 *
 * @category loading
 */
export const load: Effect.Effect<C.PricePresets, Schema.SchemaError> = Effect.map(
  Schema.decodeUnknownEffect(PriceFile)(table),
  toPresets
)
