/**
 * The demo setup: what `pnpm start` serves when no configuration is given. It
 * starts the fake upstream in-process, points one OpenAI-style and one
 * Gemini-style channel at it (each with a chat and an embedding model), and
 * provisions an admin and a demo user with a key, so a newcomer gets a working
 * chat completion within a minute of cloning.
 *
 * Its admin password and API key are public (printed, and in the README), so
 * the demo must never reach anything real: it runs only on a database of its
 * own (`data/demo/`, marked as the demo's when it is created) and only on a
 * loopback address. `guard` refuses, naming the variable, when the
 * environment points it elsewhere: `MODELGATE_DATABASE` or `MODELGATE_REDIS`
 * set, `MODELGATE_CONFIG` set but empty (a deployment whose file path went
 * missing must not fall back to the demo), `MODELGATE_LISTEN` on another
 * interface, or a demo database file that the demo did not create.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { existsSync, mkdirSync, writeFileSync } from "node:fs"
import { dirname, join, resolve } from "node:path"
import { ConfigError, type ConfigFile } from "./ConfigFile.ts"
import type { Settings } from "./Settings.ts"

/** The demo user's fixed API key (demo only: printed at start, never use it for real traffic). @category constants */
export const DEMO_KEY = "sk-demo-modelgate-0000000000000000000000000000"

/** The demo admin's console password (printed at start). @category constants */
export const DEMO_ADMIN_PASSWORD = "modelgate-demo"

/** The demo's own SQLite database, relative to the working directory. @category constants */
export const DEMO_DATABASE = "data/demo/modelgate.db"

/** The file beside the demo's database that says the demo created it. @category constants */
export const DEMO_MARKER = "created-by-the-modelgate-demo"

/**
 * The demo configuration for a fake upstream listening at `upstreamUrl`
 * (`http://127.0.0.1:PORT`, no path).
 *
 * @category constructors
 */
export const config = (upstreamUrl: string): ConfigFile => ({
  listen: "127.0.0.1:8080",
  database: `sqlite:${DEMO_DATABASE}`,
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
    "gemini-2.5-flash": {
      input: 0.3,
      output: 2.5,
      display_name: "Gemini 2.5 Flash",
      input_token_limit: 1_048_576,
      output_token_limit: 65_536
    },
    "gemini-2.5-pro": {
      input: 1.25,
      output: 10,
      display_name: "Gemini 2.5 Pro",
      input_token_limit: 1_048_576,
      output_token_limit: 65_536
    },
    "text-embedding-3-small": {
      input: 0.02,
      display_name: "text-embedding-3-small",
      embedding: true,
      input_token_limit: 8_191,
      output_token_limit: 1
    },
    "gemini-embedding-001": {
      input: 0.15,
      display_name: "Gemini Embedding",
      embedding: true,
      input_token_limit: 2_048,
      output_token_limit: 1
    }
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

type Env = Readonly<Record<string, string | undefined>>

const refuse = (message: string) => Effect.fail(new ConfigError({ message }))

const noConfiguration =
  "no configuration was given (--config FILE or MODELGATE_CONFIG), so this would run the demo setup, " +
  "whose admin password and API key are public"

/**
 * Refuses to run the demo setup when the environment points it at something
 * real: a database (`MODELGATE_DATABASE`), a Redis (`MODELGATE_REDIS`), an
 * empty `MODELGATE_CONFIG`, or (with `serving`) a listen address that is not
 * loopback. Each message names the variable and what to do.
 *
 * @category guards
 */
export const guardEnvironment = (
  env: Env,
  options: { readonly serving: boolean }
): Effect.Effect<void, ConfigError> => {
  if (env["MODELGATE_CONFIG"] !== undefined && env["MODELGATE_CONFIG"].trim().length === 0) {
    return refuse(
      "MODELGATE_CONFIG is set but empty. Set it to the configuration file's path, or unset it to run the demo setup."
    )
  }
  for (const [variable, what] of [["MODELGATE_DATABASE", "database"], ["MODELGATE_REDIS", "Redis"]] as const) {
    const value = env[variable]
    if (value !== undefined && value.length > 0) {
      return refuse(
        `${variable} is set, but ${noConfiguration}: the demo runs only on its own ${what}, never on yours. ` +
          `Give the configuration that goes with this ${what} (--config FILE), or unset ${variable} to try the demo.`
      )
    }
  }
  const listen = env["MODELGATE_LISTEN"]
  if (options.serving && listen !== undefined && listen.length > 0) {
    const host = listen.trim().replace(/:\d{1,5}$/, "").replace(/^\[(.*)\]$/, "$1")
    if (!isLoopback(host)) {
      return refuse(
        `MODELGATE_LISTEN asks for '${listen}', but ${noConfiguration}: the demo listens only on a loopback address ` +
          "(such as 127.0.0.1:8080). Give a configuration file to serve other machines."
      )
    }
  }
  return Effect.void
}

/**
 * The fake upstream the demo setup's channels point at, as `pnpm start`
 * (`packages/demo`) gives it in `MODELGATE_DEMO_UPSTREAM`: a loopback URL.
 * Without it the demo has nothing to serve, and says how to start it.
 *
 * @category guards
 */
export const upstream = (env: Env): Effect.Effect<string, ConfigError> => {
  const url = env["MODELGATE_DEMO_UPSTREAM"]?.trim()
  if (url === undefined || url.length === 0) {
    return refuse(
      "No configuration was given (--config FILE or MODELGATE_CONFIG), so this would serve the demo setup, whose fake " +
        "upstream is not running. Run `pnpm start` for the demo (it starts both), or give your configuration file."
    )
  }
  let host: string
  try {
    host = new URL(url).hostname.replace(/^\[(.*)\]$/, "$1")
  } catch {
    return refuse(`MODELGATE_DEMO_UPSTREAM is not a URL: '${url}'.`)
  }
  if (!isLoopback(host)) {
    return refuse(`MODELGATE_DEMO_UPSTREAM must be on this machine (a loopback address), got '${url}'.`)
  }
  return Effect.succeed(url.replace(/\/+$/, ""))
}

/**
 * Whether a listen host is a loopback address (`127.0.0.0/8`, `::1`,
 * `localhost`).
 *
 * @category guards
 */
export const isLoopback = (host: string): boolean =>
  host === "localhost" || host === "::1" || /^(?:::ffff:)?127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/i.test(host)

/**
 * Makes sure the demo's database is its own: a new one is marked as the
 * demo's (a file beside it) before it is created; an existing one without the
 * mark is refused, naming the file, so the demo never provisions itself (a
 * public admin password, a public key with a balance) into a database it did
 * not create.
 *
 * @category guards
 */
export const claimDatabase = (settings: Pick<Settings, "database">): Effect.Effect<void, ConfigError> =>
  Effect.suspend(() => {
    const file = resolve(settings.database.slice("sqlite:".length))
    const marker = join(dirname(file), DEMO_MARKER)
    if (existsSync(file)) {
      return existsSync(marker) ? Effect.void : refuse(
        `The demo setup runs only on a database it created, and ${file} was not created by it. ` +
          "Move that file away to try the demo, or serve it with the configuration that goes with it (--config FILE)."
      )
    }
    return Effect.try({
      try: () => {
        mkdirSync(dirname(file), { recursive: true, mode: 0o700 })
        writeFileSync(
          marker,
          "This directory holds the modelgate demo's database (public admin password and API key): never use it for real traffic.\n"
        )
      },
      catch: (cause) =>
        new ConfigError({ message: `Cannot prepare the demo's database in ${dirname(file)}: ${String(cause)}` })
    })
  })
