/**
 * The demo setup: what `pnpm start` serves when no configuration is given. It
 * starts the fake upstream in-process, points one OpenAI-style and one
 * Gemini-style channel at it (each with a chat and an embedding model), and
 * provisions an admin and a demo user with a key, so a newcomer gets a working
 * chat completion within a minute of cloning.
 *
 * @since 0.1.0
 */
import type { ConfigFile } from "./ConfigFile.ts"

/** The demo user's fixed API key (demo only: printed at start, never use it for real traffic). @category constants */
export const DEMO_KEY = "sk-demo-modelgate-0000000000000000000000000000"

/** The demo admin's console password (printed at start). @category constants */
export const DEMO_ADMIN_PASSWORD = "modelgate-demo"

/**
 * The demo configuration for a fake upstream listening at `upstreamUrl`
 * (`http://127.0.0.1:PORT`, no path).
 *
 * @category constructors
 */
export const config = (upstreamUrl: string): ConfigFile => ({
  listen: "127.0.0.1:8080",
  database: "sqlite:data/modelgate.db",
  channels: [
    {
      name: "demo-openai",
      type: "openai",
      base_url: `${upstreamUrl}/v1`,
      api_key: "sk-fake-upstream",
      models: ["gpt-4o-mini", "gpt-4o", "text-embedding-3-small"],
      model_map: { "gpt-4o": "gpt-4o-2024-08-06" },
      groups: ["default", "vip"]
    },
    {
      name: "demo-gemini",
      type: "gemini",
      base_url: upstreamUrl,
      api_key: "fake-gemini-key",
      models: ["gemini-2.5-flash", "gemini-2.5-pro", "gemini-embedding-001"],
      groups: ["default", "vip"]
    }
  ],
  models: {
    "gpt-4o-mini": { input: 0.15, output: 0.6, cached_input: 0.075, display_name: "GPT-4o mini" },
    "gpt-4o": { input: 2.5, output: 10, cached_input: 1.25, display_name: "GPT-4o" },
    "gemini-2.5-flash": { input: 0.3, output: 2.5, display_name: "Gemini 2.5 Flash", input_token_limit: 1_048_576, output_token_limit: 65_536 },
    "gemini-2.5-pro": { input: 1.25, output: 10, display_name: "Gemini 2.5 Pro", input_token_limit: 1_048_576, output_token_limit: 65_536 },
    "text-embedding-3-small": { input: 0.02, display_name: "text-embedding-3-small", embedding: true, input_token_limit: 8_191, output_token_limit: 1 },
    "gemini-embedding-001": { input: 0.15, display_name: "Gemini Embedding", embedding: true, input_token_limit: 2_048, output_token_limit: 1 }
  },
  // gemini-cli sends its own built-in model ids; these serve them. An alias resolves only to a model of the call's
  // use, so an embeddings call to an unknown gemini-* name is refused rather than served by a chat model.
  aliases: { "gemini-*flash*": "gemini-2.5-flash", "gemini-*": "gemini-2.5-pro", "auto": "gemini-2.5-pro" },
  groups: {
    default: { ratio: 1 },
    vip: { ratio: 0.8 }
  },
  users: [
    { name: "admin", role: "admin", password: DEMO_ADMIN_PASSWORD, balance: 0 },
    {
      name: "demo",
      role: "user",
      password: DEMO_ADMIN_PASSWORD,
      balance: 10,
      keys: [{ name: "demo", secret: DEMO_KEY, group: "default" }]
    }
  ]
})
