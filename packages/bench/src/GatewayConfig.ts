/**
 * The gateway configuration a benchmark run generates: channels pointing at
 * the fake upstream (OpenAI and Gemini), a price for every model so billing
 * is on, a group with very high limits so the limiter runs but never refuses,
 * and one user with a large balance and a key with a fixed secret. Usage
 * logging is the gateway's default (on). The file is written as JSON, which
 * is valid YAML, so no YAML library is needed.
 *
 * @since 0.1.0
 */

/** The benchmark key's fixed secret (loopback benchmark only). @category constants */
export const BENCH_KEY = "sk-bench-modelgate-0123456789abcdefghijklmnopqrstuv"

/** The benchmark user's name (its balance and usage are checked after the run). @category constants */
export const BENCH_USER = "bench"

/** Inputs of `gatewayConfig`. @category models */
export interface GatewayConfigInput {
  /** "127.0.0.1:PORT". */
  readonly listen: string
  /** e.g. "sqlite:/tmp/bench-xyz/modelgate.db". */
  readonly database: string
  /** The fake upstream's base URL, "http://127.0.0.1:PORT". */
  readonly upstreamUrl: string
  readonly openaiModels: ReadonlyArray<string>
  readonly geminiModels: ReadonlyArray<string>
}

const price = { input: 0.15, output: 0.6 }

/**
 * The configuration document (the shape of node-http's `ConfigFile`).
 *
 * @category config
 */
export const gatewayConfig = (input: GatewayConfigInput): Record<string, unknown> => {
  const models: Record<string, unknown> = {}
  for (const m of [...input.openaiModels, ...input.geminiModels]) models[m] = price
  return {
    listen: input.listen,
    database: input.database,
    log_level: "warning",
    channels: [
      {
        name: "bench-openai",
        type: "openai",
        base_url: `${input.upstreamUrl}/v1`,
        api_key: "sk-fake-upstream",
        models: [...input.openaiModels],
        groups: ["bench"]
      },
      {
        name: "bench-gemini",
        type: "gemini",
        base_url: input.upstreamUrl,
        api_key: "fake-gemini-key",
        models: [...input.geminiModels],
        groups: ["bench"]
      }
    ].filter((c) => c.models.length > 0),
    models,
    groups: { bench: { ratio: 1, rpm: 100_000_000, tpm: 1_000_000_000_000, concurrency: 1_000_000 } },
    users: [
      {
        name: BENCH_USER,
        role: "user",
        balance: "1000000000",
        groups: ["bench"],
        keys: [{ name: "bench", secret: BENCH_KEY, group: "bench" }]
      }
    ]
  }
}

/** The configuration as file text (JSON, which YAML parsers read as YAML). @category config */
export const gatewayConfigText = (input: GatewayConfigInput): string =>
  `${JSON.stringify(gatewayConfig(input), null, 2)}\n`
