/**
 * `GET /v1/models` and `GET /v1/models/{id}` bodies in OpenAI's shape.
 *
 * @since 0.1.0
 */
import type { Domain } from "@modelgate/core"
import type * as ChatCompletions from "./chat/ChatCompletions.ts"

/** The `owned_by` reported for every model. @category constants */
export const OWNER = "modelgate"

/**
 * One model object: `{"id","object":"model","created","owned_by":"modelgate"}`.
 * `created` is a Unix time in seconds (OpenAI SDKs require a number; 0 when
 * unknown).
 *
 * @category models
 */
export const modelObject = (model: Domain.Model, created = 0): ChatCompletions.ModelObject => ({
  id: model.id,
  object: "model",
  created,
  owned_by: OWNER
})

/**
 * The models list: `{"object":"list","data":[...]}`, in the given order.
 *
 * @example
 * ```ts
 * import { Models } from "@modelgate/openai-adapter"
 * import type { Domain } from "@modelgate/core"
 *
 * declare const allowed: ReadonlyArray<Domain.Model>
 * Models.modelsList(allowed, 1_700_000_000)
 * // { object: "list", data: [{ id: "gpt-4o", object: "model", created: 1700000000, owned_by: "modelgate" }] }
 * ```
 *
 * @category models
 */
export const modelsList = (models: ReadonlyArray<Domain.Model>, created: number): ChatCompletions.ModelsList => ({
  object: "list",
  data: models.map((model) => modelObject(model, created))
})
