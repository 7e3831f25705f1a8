/**
 * The Gemini models surface: `GET /v1beta/models` and
 * `GET /v1beta/models/{model}`.
 *
 * - `modelResource` turns a catalog model into Google's `Model` resource
 *   (`name: "models/<id>"`, token limits, supported methods).
 * - `modelsPage` pages a list the way Google does: `pageSize` default 50,
 *   at most 1000 (larger values are lowered to 1000, as Google does), and an
 *   opaque `pageToken` (the base64url text of the offset); `nextPageToken` is
 *   absent on the last page. A token this gateway did not write is an
 *   `InvalidRequest` naming `pageToken`.
 *
 * @since 0.1.0
 */
import type { Domain } from "@modelgate/core"
import { GatewayError } from "@modelgate/core"
import { Effect, Result } from "effect"
import type { Mutable } from "effect/Types"
import type * as GenerateContent from "./GenerateContent.ts"

/** Methods of a chat model. @category constants */
export const GENERATION_METHODS: ReadonlyArray<string> = ["generateContent", "streamGenerateContent", "countTokens"]

/** Methods of an embedding model. @category constants */
export const EMBEDDING_METHODS: ReadonlyArray<string> = ["embedContent", "batchEmbedContents", "countTokens"]

/** The page size when none (or 0) is asked for, as at Google. @category constants */
export const DEFAULT_PAGE_SIZE = 50

/** The largest page size; larger requests are served 1000 models. @category constants */
export const MAX_PAGE_SIZE = 1000

/**
 * Options of `modelResource`. Each one, when left out, is taken from the
 * catalog model itself (`Domain.Model.embedding`, `reasoning`, `description`).
 *
 * @category models
 */
export interface ResourceOptions {
  /** An embedding model: it lists `embedContent` and `batchEmbedContents` instead of the generation methods. */
  readonly embedding?: boolean
  /** Whether the model thinks (Gemini 2.5 and later); omitted when unknown. */
  readonly thinking?: boolean
  /** The `version` field; default `"001"`. */
  readonly version?: string
  /** A description; omitted when neither this nor the model has one. */
  readonly description?: string
}

/**
 * Google's `Model` resource for a catalog model. Chat models also carry
 * Google's default sampling settings (temperature 1, maxTemperature 2, topP
 * 0.95, topK 64), which clients show as defaults; the gateway does not apply
 * them. An embedding model (`embedding`, or the model's own `embedding` flag)
 * lists `EMBEDDING_METHODS`, any other model `GENERATION_METHODS`; a reasoning
 * model (`reasoning`) reports `thinking: true`.
 *
 * @example
 * ```ts
 * modelResource(model) // { name: "models/gemini-2.5-flash", baseModelId: "gemini-2.5-flash", version: "001", displayName: "Gemini 2.5 Flash",
 * //   inputTokenLimit: 1048576, outputTokenLimit: 65536, supportedGenerationMethods: ["generateContent", "streamGenerateContent", "countTokens"], ... }
 * ```
 *
 * @category resources
 */
export const modelResource = (model: Domain.Model, options?: ResourceOptions): GenerateContent.Model => {
  const id = model.id.startsWith("models/") ? model.id.slice(7) : model.id
  const embedding = options?.embedding ?? model.embedding === true
  const out: Mutable<GenerateContent.Model> = {
    name: `models/${id}`,
    baseModelId: id,
    version: options?.version ?? "001",
    displayName: model.displayName.length > 0 ? model.displayName : id,
    inputTokenLimit: model.inputTokenLimit,
    outputTokenLimit: model.outputTokenLimit,
    supportedGenerationMethods: embedding ? EMBEDDING_METHODS : GENERATION_METHODS
  }
  const description = options?.description ?? model.description
  if (description !== undefined && description.length > 0) out.description = description
  if (!embedding) {
    out.temperature = 1
    out.maxTemperature = 2
    out.topP = 0.95
    out.topK = 64
  }
  const thinking = options?.thinking ?? (model.reasoning === true ? true : undefined)
  if (thinking !== undefined) out.thinking = thinking
  return out
}

// ---------------------------------------------------------------------------
// Page tokens
// ---------------------------------------------------------------------------

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

/** base64url (no padding) of an ASCII string. */
const toBase64Url = (text: string): string => {
  let out = ""
  for (let i = 0; i < text.length; i += 3) {
    const a = text.charCodeAt(i)
    const b = i + 1 < text.length ? text.charCodeAt(i + 1) : -1
    const c = i + 2 < text.length ? text.charCodeAt(i + 2) : -1
    out += ALPHABET[a >> 2]!
    out += ALPHABET[((a & 3) << 4) | (b < 0 ? 0 : b >> 4)]!
    if (b >= 0) out += ALPHABET[((b & 15) << 2) | (c < 0 ? 0 : c >> 6)]!
    if (c >= 0) out += ALPHABET[c & 63]!
  }
  return out
}

/** ASCII text of base64url (no padding), or `undefined` if it is not base64url. */
const fromBase64Url = (text: string): string | undefined => {
  if (text.length % 4 === 1) return undefined
  let out = ""
  let bits = 0
  let value = 0
  for (let i = 0; i < text.length; i++) {
    const digit = ALPHABET.indexOf(text[i]!)
    if (digit < 0) return undefined
    value = (value << 6) | digit
    bits += 6
    if (bits >= 8) {
      bits -= 8
      out += String.fromCharCode((value >> bits) & 255)
    }
  }
  return out
}

/** The opaque page token for an offset. @category pagination */
export const encodePageToken = (offset: number): string => toBase64Url(`o:${offset}`)

/** The offset of a page token, or `undefined` if the token is not one of ours. @category pagination */
export const decodePageToken = (token: string): number | undefined => {
  const text = fromBase64Url(token)
  if (text === undefined || !/^o:(0|[1-9]\d{0,8})$/.test(text)) return undefined
  return Number(text.slice(2))
}

/**
 * Options of `modelsPage`; without them each model's own flags decide (see
 * `modelResource`).
 *
 * @category models
 */
export interface PageOptions {
  /** Whether a model is an embedding model (see `ResourceOptions.embedding`). */
  readonly isEmbedding?: (model: Domain.Model) => boolean
  /** Whether a model thinks (see `ResourceOptions.thinking`); `undefined` when unknown. */
  readonly isThinking?: (model: Domain.Model) => boolean | undefined
}

const parsePageSize = (pageSize: number | string | undefined): number | undefined => {
  if (pageSize === undefined || pageSize === "") return DEFAULT_PAGE_SIZE
  const value = typeof pageSize === "number" ? pageSize : /^\d+$/.test(pageSize) ? Number(pageSize) : Number.NaN
  if (!Number.isInteger(value) || value < 0) return undefined
  if (value === 0) return DEFAULT_PAGE_SIZE
  return Math.min(value, MAX_PAGE_SIZE)
}

/**
 * `modelsPage` as a `Result`. Never throws.
 *
 * @category pagination
 */
export const modelsPageResult = (
  models: ReadonlyArray<Domain.Model>,
  pageSize?: number | string,
  pageToken?: string,
  options?: PageOptions
): Result.Result<GenerateContent.ListModelsResponse, GatewayError.InvalidRequest> => {
  const size = parsePageSize(pageSize)
  if (size === undefined) {
    return Result.fail(
      new GatewayError.InvalidRequest({
        message: `'pageSize' must be a non-negative integer (at most ${MAX_PAGE_SIZE} models are returned per page).`,
        param: "pageSize"
      })
    )
  }
  let offset = 0
  if (pageToken !== undefined && pageToken.length > 0) {
    const decoded = decodePageToken(pageToken)
    if (decoded === undefined || decoded > models.length) {
      return Result.fail(
        new GatewayError.InvalidRequest({
          message:
            "'pageToken' is not valid: pass the 'nextPageToken' of the previous page unchanged, or omit it for the first page.",
          param: "pageToken"
        })
      )
    }
    offset = decoded
  }
  const slice = models.slice(offset, offset + size)
  const page = slice.map((model) => {
    const resource: { embedding?: boolean; thinking?: boolean } = {}
    const embedding = options?.isEmbedding?.(model)
    if (embedding !== undefined) resource.embedding = embedding
    const thinking = options?.isThinking?.(model)
    if (thinking !== undefined) resource.thinking = thinking
    return modelResource(model, resource)
  })
  const next = offset + slice.length
  return Result.succeed(
    next < models.length ? { models: page, nextPageToken: encodePageToken(next) } : { models: page }
  )
}

/**
 * One page of Google's models list. `pageSize` may be given as the raw query
 * string value; 0 or absent means 50, values above 1000 mean 1000, anything
 * else that is not a non-negative integer is an `InvalidRequest`.
 *
 * @example
 * ```ts
 * import { Models } from "@modelgate/genai-adapter"
 *
 * const first = yield* Models.modelsPage(models, 2)
 * // { models: [<2 models>], nextPageToken: "bzoy" }
 * const second = yield* Models.modelsPage(models, 2, first.nextPageToken)
 * ```
 *
 * @category pagination
 */
export const modelsPage = (
  models: ReadonlyArray<Domain.Model>,
  pageSize?: number | string,
  pageToken?: string,
  options?: PageOptions
): Effect.Effect<GenerateContent.ListModelsResponse, GatewayError.InvalidRequest> =>
  Effect.fromResult(modelsPageResult(models, pageSize, pageToken, options))
