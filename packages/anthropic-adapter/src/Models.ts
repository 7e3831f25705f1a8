/**
 * The models a key may use, in the shape of Anthropic's `GET /v1/models`
 * (`{data, has_more, first_id, last_id}`), one page holding them all.
 *
 * @since 0.1.0
 */
import type { Domain } from "@modelgate/core"

/** One model as Anthropic lists it. @category models */
export interface ModelInfo {
  readonly type: "model"
  readonly id: string
  readonly display_name: string
  /** RFC 3339; the catalog keeps no creation date, so the epoch stands in. */
  readonly created_at: string
}

/** A model in Anthropic's shape. @category models */
export const modelInfo = (model: Domain.Model): ModelInfo => ({
  type: "model",
  id: model.id,
  display_name: model.displayName,
  created_at: "1970-01-01T00:00:00Z"
})

/** The list, as one page. @category models */
export const modelsList = (models: ReadonlyArray<Domain.Model>) => ({
  data: models.map(modelInfo),
  has_more: false,
  first_id: models[0]?.id ?? null,
  last_id: models.at(-1)?.id ?? null
})
