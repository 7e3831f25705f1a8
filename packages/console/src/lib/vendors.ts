/**
 * The vendors a channel is started from: each fills in the channel type, the
 * base address and the settings the vendor needs (`stream_options`, request
 * parameters the vendor refuses), as docs/routing.md describes them, so an
 * operator never has to look them up. Per channel type, the address hint and
 * how a versioned address is put right (the gateway adds `/v1beta` for Gemini
 * and `/v1` for Anthropic itself).
 *
 * @since 0.1.0
 */
import type { Contract } from "./api.ts"

/** One vendor of the list. @category models */
export interface Vendor {
  readonly id: string
  readonly label: string
  /** The channel type it is served through. */
  readonly type: Contract.ChannelType
  readonly baseUrl: string
  /** Whether to send `stream_options` (Mistral refuses it with a 422). */
  readonly streamOptions: boolean
  /** Request parameters to strip or set (`params.overrides`), for fields the vendor refuses. */
  readonly overrides?: Readonly<Record<string, unknown>>
  /** A line about what else to know (a placeholder to replace, an ignored key). */
  readonly note?: string
}

/**
 * The list, in the order shown. Vertex AI and AWS Bedrock are served by the
 * `vertex` and `bedrock` channel types, whose address follows their location
 * or region (see `cloudBaseUrl`).
 *
 * @category constants
 */
export const VENDORS: ReadonlyArray<Vendor> = [
  { id: "openai", label: "OpenAI", type: "openai", baseUrl: "https://api.openai.com/v1", streamOptions: true },
  {
    id: "azure",
    label: "Azure OpenAI",
    type: "azure",
    baseUrl: "https://NAME.openai.azure.com",
    streamOptions: true,
    note: "Replace NAME with your resource's name; the upstream model name is the deployment."
  },
  {
    id: "gemini",
    label: "Google Gemini",
    type: "gemini",
    baseUrl: "https://generativelanguage.googleapis.com",
    streamOptions: true
  },
  {
    id: "vertex",
    label: "Google Vertex AI",
    type: "vertex",
    baseUrl: "https://us-east5-aiplatform.googleapis.com",
    streamOptions: true,
    note: "Give the project, the location and a service account's key file (JSON); the address follows the location."
  },
  { id: "anthropic", label: "Anthropic", type: "anthropic", baseUrl: "https://api.anthropic.com", streamOptions: true },
  {
    id: "bedrock",
    label: "AWS Bedrock",
    type: "bedrock",
    baseUrl: "https://bedrock-runtime.us-east-1.amazonaws.com",
    streamOptions: true,
    note: "Give the region and an access key pair or a Bedrock API key; the address follows the region."
  },
  {
    id: "deepseek",
    label: "DeepSeek",
    type: "openai",
    baseUrl: "https://api.deepseek.com",
    streamOptions: true,
    // deepseek-reasoner refuses logprobs.
    overrides: { logprobs: null, top_logprobs: null }
  },
  {
    id: "openrouter",
    label: "OpenRouter",
    type: "openai",
    baseUrl: "https://openrouter.ai/api/v1",
    streamOptions: true
  },
  {
    id: "groq",
    label: "Groq",
    type: "openai",
    baseUrl: "https://api.groq.com/openai/v1",
    streamOptions: true,
    // Groq refuses these with a 400.
    overrides: { logprobs: null, logit_bias: null, top_logprobs: null }
  },
  {
    id: "mistral",
    label: "Mistral",
    type: "openai",
    baseUrl: "https://api.mistral.ai/v1",
    // Mistral refuses stream_options (422 extra_forbidden) and fields it does not know.
    streamOptions: false,
    overrides: { user: null }
  },
  { id: "xai", label: "xAI", type: "openai", baseUrl: "https://api.x.ai/v1", streamOptions: true },
  { id: "together", label: "Together AI", type: "openai", baseUrl: "https://api.together.xyz/v1", streamOptions: true },
  {
    id: "fireworks",
    label: "Fireworks AI",
    type: "openai",
    baseUrl: "https://api.fireworks.ai/inference/v1",
    streamOptions: true
  },
  {
    id: "ollama",
    label: "Ollama",
    type: "openai",
    baseUrl: "http://localhost:11434/v1",
    streamOptions: true,
    note: "Ollama ignores the key: enter any value (for example 'ollama')."
  },
  { id: "vllm", label: "vLLM", type: "openai", baseUrl: "http://localhost:8000/v1", streamOptions: true },
  { id: "lmstudio", label: "LM Studio", type: "openai", baseUrl: "http://localhost:1234/v1", streamOptions: true }
]

/** The base-address hint for a channel type. @category constants */
export const BASE_HINT: Readonly<Record<Contract.ChannelType, string>> = {
  openai: "https://api.openai.com/v1",
  gemini: "https://generativelanguage.googleapis.com",
  anthropic: "https://api.anthropic.com",
  azure: "https://NAME.openai.azure.com",
  vertex: "https://LOCATION-aiplatform.googleapis.com (from the location when left empty)",
  bedrock: "https://bedrock-runtime.REGION.amazonaws.com (from the region when left empty)"
}

/**
 * A base address with the API version the gateway adds itself, and the
 * address without it: Gemini's `/v1beta` (or `/v1`), Anthropic's `/v1`,
 * Azure's `/openai…` path. Undefined when the address is fine as it is.
 *
 * @category helpers
 */
export const versionedAddress = (
  type: Contract.ChannelType,
  address: string
): { readonly suffix: string; readonly fixed: string } | undefined => {
  const trimmed = address.trim().replace(/\/+$/, "")
  const pattern = type === "gemini"
    ? /\/(v1beta|v1alpha|v1)(\/models)?$/
    : type === "anthropic"
    ? /\/v1(\/messages)?$/
    : type === "azure"
    ? /\/openai(\/.*)?$/
    : undefined
  const match = pattern?.exec(trimmed)
  if (match === undefined || match === null || !/^https?:\/\/[^/]+\//.test(trimmed)) return undefined
  return { suffix: match[0], fixed: trimmed.slice(0, match.index) }
}

/** Whether a channel type is a cloud's (`vertex`, `bedrock`): credentials and a region instead of a key and an address. @category helpers */
export const isCloud = (type: Contract.ChannelType): type is "vertex" | "bedrock" =>
  type === "vertex" || type === "bedrock"

/**
 * The address a cloud channel is served at when it has none, as the gateway
 * derives it (docs/configuration.md): Vertex AI's from the location
 * (`global`, the `us` and `eu` multi-regions, or `{location}-aiplatform`),
 * Bedrock's from the region. Undefined for other types or an empty name.
 *
 * @category helpers
 */
export const cloudBaseUrl = (type: Contract.ChannelType, place: string): string | undefined => {
  const name = place.trim()
  if (name === "" || !/^[a-z0-9-]+$/.test(name)) return undefined
  if (type === "vertex") {
    if (name === "global") return "https://aiplatform.googleapis.com"
    if (name === "us" || name === "eu") return `https://aiplatform.${name}.rep.googleapis.com`
    return `https://${name}-aiplatform.googleapis.com`
  }
  if (type === "bedrock") return `https://bedrock-runtime.${name}.amazonaws.com`
  return undefined
}
