/**
 * Local token estimates, for the balance hold before a call and for metering
 * when an upstream reports no usage.
 *
 * The prompt bound is an upper bound for the text a request carries:
 * byte-pair tokenizers never produce more tokens than the text has UTF-8
 * bytes. Media a request carries or points to (an image or file part, inline
 * or by URL) is not text: each such part adds `MEDIA_TOKENS`, a documented
 * per-part bound (see its note for what it covers and what it does not).
 * Output is bounded by the requested or the model's maximum output tokens,
 * once per answer asked for (`Pricing.worstCase`).
 *
 * @since 0.1.0
 */
import type { MediaKind, Model } from "../domain/Domain.ts"
import type { ChatRequest, Part } from "./Canonical.ts"

/** Tokens charged for structure around each message (role markers and separators). @category constants */
export const MESSAGE_OVERHEAD_TOKENS = 8

/**
 * The tokens one media part (an image, audio or file part, inline or by URL)
 * adds to a prompt bound. It covers one image on the common models: OpenAI
 * GPT-4o bills at most 85 + 170 x 8 = 1,445 tokens for a high-detail image,
 * Anthropic about 1,600 for the largest image it takes whole, Gemini 258 per
 * 768 x 768 tile. It does not cover a multi-page document, long audio or
 * video, a Gemini image of many tiles, nor models that bill an image as more
 * tokens (GPT-4o mini, for one): their calls are still charged what the
 * upstream reports, which may exceed the hold (up to the remaining balance,
 * never below zero; see docs/billing.md).
 *
 * @category constants
 */
export const MEDIA_TOKENS = 2_000

/**
 * Whether a value is a token count: a non-negative safe integer. An upstream's
 * usage figures are checked with it wherever they are read; any other value
 * (negative, fractional, beyond 2^53, not a number) is refused, and the call
 * is counted locally instead (see docs/billing.md, "Usage the upstream
 * reports").
 *
 * @category validation
 */
export const isCount = (value: unknown): value is number =>
  typeof value === "number" && Number.isSafeInteger(value) && value >= 0

/**
 * The first of an upstream's usage figures that is present (neither
 * `undefined` nor `null`) but not a token count, as `name: value` (the value
 * as JSON, cut at 40 characters), or undefined when every present figure is a
 * count. The text is the reason a usage record gives for refusing the figures.
 *
 * @example
 * ```ts
 * import { Tokens } from "@modelgate/core"
 *
 * Tokens.badCount({ prompt_tokens: 12, completion_tokens: -5 }) // "completion_tokens: -5"
 * Tokens.badCount({ prompt_tokens: 12, cached_tokens: null })   // undefined
 * ```
 *
 * @category validation
 */
export const badCount = (figures: Readonly<Record<string, unknown>>): string | undefined => {
  for (const name in figures) {
    const value = figures[name]
    if (value === undefined || value === null || isCount(value)) continue
    const shown = JSON.stringify(value) ?? String(value)
    return `${name}: ${shown.length > 40 ? `${shown.slice(0, 40)}…` : shown}`
  }
  return undefined
}

/** The UTF-8 length of a string, without allocating. @category counting */
export const utf8Length = (text: string): number => {
  let bytes = 0
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code < 0x80) bytes += 1
    else if (code < 0x800) bytes += 2
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      bytes += 4
      i++
    } else bytes += 3
  }
  return bytes
}

/**
 * The local count of a text's tokens for an embeddings call (a quarter of its
 * UTF-8 bytes, rounded up): what the call's rate limit admits it on, and what
 * it is billed when its upstream reports none.
 *
 * @category counting
 */
export const embedTextTokens = (text: string): number => Math.ceil(utf8Length(text) / 4)

/**
 * A typical-case estimate of the tokens in generated text (about four
 * characters per token), used only when an upstream reports no usage.
 *
 * @category counting
 */
export const estimateGeneratedTokens = (text: string): number => estimateGeneratedLength(text.length)

/**
 * `estimateGeneratedTokens` for text of which only the length was counted
 * (a relayed stream's generated characters).
 *
 * @category counting
 */
export const estimateGeneratedLength = (characters: number): number => characters === 0 ? 0 : Math.ceil(characters / 4)

const partBound = (part: Part): number => {
  switch (part.type) {
    case "text":
    case "thinking":
      return utf8Length(part.text)
    case "tool_call":
      return utf8Length(part.name) + utf8Length(part.arguments)
    case "tool_result":
      return utf8Length(part.content)
    case "image":
    case "file":
      return MEDIA_TOKENS
  }
}

/**
 * An upper bound on the prompt tokens of a canonical request.
 *
 * @category counting
 */
export const promptTokenBound = (request: ChatRequest): number => {
  let tokens = 0
  for (const text of request.system ?? []) tokens += utf8Length(text) + MESSAGE_OVERHEAD_TOKENS
  for (const message of request.messages) {
    tokens += MESSAGE_OVERHEAD_TOKENS
    for (const part of message.content) tokens += partBound(part)
  }
  for (const tool of request.tools ?? []) {
    tokens += MESSAGE_OVERHEAD_TOKENS + utf8Length(tool.name) + utf8Length(tool.description ?? "")
    if (tool.parameters !== undefined) tokens += utf8Length(JSON.stringify(tool.parameters))
  }
  return tokens
}

/**
 * The prompt bound of a raw JSON request body, for the same-dialect fast path
 * that does not decode the body: the byte length of the body bounds the tokens
 * of every string in it, plus `MEDIA_TOKENS` for each media part the body
 * carries or points to (an image by URL costs far more than its URL's bytes).
 *
 * @example
 * ```ts
 * import { Tokens } from "@modelgate/core"
 *
 * Tokens.bodyTokenBound(120) // 128
 * Tokens.bodyTokenBound(120, 2) // 4128: two images
 * ```
 *
 * @category counting
 */
export const bodyTokenBound = (bodyBytes: number, mediaParts = 0): number =>
  bodyBytes + MESSAGE_OVERHEAD_TOKENS + mediaParts * MEDIA_TOKENS

/**
 * How many media parts of each kind a prompt carries or points to (a kind
 * left out: none). A dialect's body inspection counts them; the hold turns
 * them into tokens with `mediaHoldTokens`.
 *
 * @category counting
 */
export type MediaCounts = { readonly [K in MediaKind]?: number | undefined }

/**
 * The prompt tokens a hold counts for one media part of a kind on a model:
 * the model's `mediaPartTokens` for that kind where the operator set it, else
 * the default of the kind:
 *
 * - an image: `MEDIA_TOKENS` (2,000), one image on the common models (see
 *   `MEDIA_TOKENS` for what it does not cover);
 * - audio, video, a document (a PDF) or any other file: the model's input
 *   token limit. Their length is not in the body (a part by URL is a short
 *   string, an inline one's bytes say little of its tokens: a minute of video
 *   is about 16,000 tokens on Gemini, a PDF page 258 to 3,000), and one such
 *   part can fill the whole context, which is the most its upstream can bill
 *   for it. An operator who knows their users send short clips or small
 *   documents sets a smaller figure per model.
 *
 * @category counting
 */
export const mediaPartTokens = (
  model: Pick<Model, "mediaPartTokens" | "inputTokenLimit">,
  kind: MediaKind
): number => {
  const set = model.mediaPartTokens?.[kind]
  if (set !== undefined && Number.isSafeInteger(set) && set >= 0) return set
  return kind === "image" ? MEDIA_TOKENS : model.inputTokenLimit
}

/**
 * The kind of a media part by its MIME type (Gemini's `inlineData` and
 * `fileData` say it; a data URL does too): `image/*`, `video/*`, `audio/*`,
 * a PDF (`document`), anything else or nothing said (`file`).
 *
 * @example
 * ```ts
 * import { Tokens } from "@modelgate/core"
 *
 * Tokens.mediaKindOf("video/mp4") // "video"
 * Tokens.mediaKindOf("application/pdf") // "document"
 * Tokens.mediaKindOf(undefined) // "file"
 * ```
 *
 * @category counting
 */
export const mediaKindOf = (mimeType: string | undefined): MediaKind => {
  if (mimeType === undefined) return "file"
  const type = mimeType.trim().toLowerCase()
  return type.startsWith("image/")
    ? "image"
    : type.startsWith("video/")
    ? "video"
    : type.startsWith("audio/")
    ? "audio"
    : type.startsWith("application/pdf")
    ? "document"
    : "file"
}

/**
 * Counts one more media part of `kind` in `counts` (a dialect's inspection
 * fills one as it reads a body).
 *
 * @category counting
 */
export const countMedia = (counts: { [K in MediaKind]?: number | undefined }, kind: MediaKind): void => {
  counts[kind] = (counts[kind] ?? 0) + 1
}

const mediaKinds: ReadonlyArray<MediaKind> = ["image", "audio", "video", "document", "file"]

/**
 * The prompt tokens a hold counts for a call's media parts: each part as its
 * kind's figure on the model (`mediaPartTokens`). A count that is not a
 * positive whole number counts as none (a fraction rounds up).
 *
 * @example
 * ```ts
 * import { Tokens } from "@modelgate/core"
 * declare const model: Parameters<typeof Tokens.mediaHoldTokens>[0] // input limit 128,000, no mediaPartTokens set
 *
 * Tokens.mediaHoldTokens(model, { image: 2, video: 1 }) // 2 * 2,000 + 128,000 = 132,000
 * ```
 *
 * @category counting
 */
export const mediaHoldTokens = (
  model: Pick<Model, "mediaPartTokens" | "inputTokenLimit">,
  counts: MediaCounts
): number => {
  let tokens = 0
  for (const kind of mediaKinds) {
    const count = counts[kind]
    if (count === undefined || !(count > 0) || !Number.isFinite(count)) continue
    tokens += Math.ceil(count) * mediaPartTokens(model, kind)
  }
  return tokens
}

/**
 * The prompt bound of a raw JSON request body for a hold on a model: the
 * body's byte length (which bounds the tokens of every string in it), the
 * message overhead, and each media part as its kind's figure on the model
 * (`mediaHoldTokens`).
 *
 * @example
 * ```ts
 * import { Tokens } from "@modelgate/core"
 * declare const model: Parameters<typeof Tokens.promptBound>[0] // no mediaPartTokens set
 *
 * Tokens.promptBound(model, 120, { image: 2 }) // 4128, as `bodyTokenBound(120, 2)`
 * ```
 *
 * @category counting
 */
export const promptBound = (
  model: Pick<Model, "mediaPartTokens" | "inputTokenLimit">,
  bodyBytes: number,
  counts: MediaCounts = {}
): number => bodyBytes + MESSAGE_OVERHEAD_TOKENS + mediaHoldTokens(model, counts)
