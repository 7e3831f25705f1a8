/**
 * Where a Vertex AI channel is reached, and which publisher serves a model.
 *
 * Vertex AI serves a project's models under
 * `{base_url}/v1/projects/{project}/locations/{location}/publishers/{publisher}/models/{model}:{method}`:
 * Google's own (Gemini, embeddings) under the publisher `google` in Google's
 * dialect, Anthropic's Claude under `anthropic` in the Messages dialect. The
 * paths of each are built beside their dialect (`genai-adapter/Vertex`,
 * `anthropic-adapter/Vertex`); this module has what both share.
 *
 * @since 0.1.0
 */

/**
 * The base URL of a location: `https://{location}-aiplatform.googleapis.com`,
 * `https://aiplatform.googleapis.com` for `global`, and the multi-region
 * endpoints for `us` and `eu` (`https://aiplatform.{us,eu}.rep.googleapis.com`).
 *
 * @example
 * ```ts
 * defaultBaseUrl("us-east5") // "https://us-east5-aiplatform.googleapis.com"
 * defaultBaseUrl("global")   // "https://aiplatform.googleapis.com"
 * ```
 *
 * @category urls
 */
export const defaultBaseUrl = (location: string): string => {
  switch (location) {
    case "global":
      return "https://aiplatform.googleapis.com"
    case "us":
    case "eu":
      return `https://aiplatform.${location}.rep.googleapis.com`
    default:
      return `https://${location}-aiplatform.googleapis.com`
  }
}

/** The publishers a Vertex channel speaks to. @category publishers */
export type Publisher = "google" | "anthropic"

/**
 * The publisher of a model from its upstream name: `claude-…` (with or
 * without a `@version`) is Anthropic's, anything else Google's; a channel's
 * per-model `override` wins.
 *
 * @example
 * ```ts
 * publisherOf("claude-sonnet-4-5@20250929") // "anthropic"
 * publisherOf("gemini-2.5-flash")           // "google"
 * ```
 *
 * @category publishers
 */
export const publisherOf = (upstreamModel: string, override?: Publisher | undefined): Publisher =>
  override ?? (/^claude-/i.test(upstreamModel) ? "anthropic" : "google")

/** The dialect each publisher's endpoints speak. @category publishers */
export const dialectOf = (publisher: Publisher): "gemini" | "anthropic" =>
  publisher === "anthropic" ? "anthropic" : "gemini"
