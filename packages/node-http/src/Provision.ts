/**
 * From the configuration file to the store: maps the YAML's users, keys,
 * groups, models, aliases and channels to the store's provisioning input and
 * applies it (idempotently: starting twice with the same file changes nothing,
 * and what was created in the console is left alone). For users and keys the
 * file applies what its entries changed since the last start and never undoes
 * a later action (a revoked key, a key or user disabled, a password or a limit
 * changed in the console); each such disagreement is logged as a warning. A
 * user or key the file declares that was deleted (or a secret that was
 * revoked) is never created again, and the start log says so.
 *
 * Models that a channel serves but the file does not price are created without
 * a price, so a call to them is refused with a clear "no price" error rather
 * than "no such model".
 *
 * @since 0.1.0
 */
import * as Config from "@modelgate/engine/config/Config"
import * as Provisioning from "@modelgate/store/Provisioning"
import type { InvalidInput } from "@modelgate/store/StoreError"
import * as Users from "@modelgate/store/Users"
import { Console, Effect, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { ConfigError, type ConfigFile } from "./ConfigFile.ts"
import type { Settings } from "./Settings.ts"

/**
 * Maps a configuration file to the store's provisioning input (what the file
 * declares), or fails naming every bad value.
 *
 * @category mapping
 */
export const toInput: (file: ConfigFile, source: string) => Effect.Effect<Provisioning.ProvisionInput, ConfigError> =
  Config.declaration

/** The store's field names that the file spells differently. */
const FILE_FIELDS: Readonly<Record<string, string>> = {
  balanceNanos: "balance",
  ratioMicros: "ratio",
  inputNanosPerMillion: "input",
  outputNanosPerMillion: "output",
  cachedInputNanosPerMillion: "cached_input",
  perRequestNanos: "per_request",
  mediaPartTokens: "media_part_tokens",
  quotaNanos: "quota",
  dailyBudgetNanos: "daily_budget",
  monthlyBudgetNanos: "monthly_budget",
  baseUrl: "base_url",
  connectMs: "connect_ms",
  firstByteMs: "first_byte_ms",
  idleMs: "idle_ms",
  totalMs: "total_ms"
}

/**
 * The path in the configuration file of a field the store names by its own
 * input's path: `keys[3].secret` (the store's flat list of keys) becomes
 * `users[1].keys[0].secret`, `groups[0].ratioMicros` becomes `groups.vip.ratio`,
 * `users[2].limits.rpm` becomes `users[2].rpm`. A bare entry (`users[2]`, used
 * for duplicates) names the entry's name field.
 *
 * @category mapping
 */
export const configPath = (storePath: string, input: Provisioning.ProvisionInput, file: ConfigFile): string => {
  const match = /^(users|groups|models|aliases|channels|keys)\[(\d+)\](.*)$/.exec(storePath)
  if (match === null) return storePath
  const [, list, at, rest] = match as unknown as [string, string, string, string]
  const i = Number(at)
  const field = rest.replace(/^\.limits\./, ".").replace(/[A-Za-z]+/g, (name) => FILE_FIELDS[name] ?? name)
  switch (list) {
    case "groups":
      return `groups.${input.groups?.[i]?.name ?? at}${field}`
    case "models":
      return `models.${input.models?.[i]?.id ?? at}${field}`
    case "aliases":
      return `aliases.${input.aliases?.[i]?.pattern ?? at}${field}`
    case "keys": {
      const origins = (file.users ?? []).flatMap((user, u) => (user.keys ?? []).map((_, k) => `users[${u}].keys[${k}]`))
      const origin = origins[i] ?? storePath
      return field === "" ? `${origin}.name` : field === ".user" ? origin : `${origin}${field}`
    }
    default:
      return field === "" ? `${list}[${at}].name` : `${list}[${at}]${field}`
  }
}

/**
 * The store's refusal of the file's content, as a configuration error naming
 * the file and the field's path in it.
 *
 * @category mapping
 */
export const asConfigError = (
  error: InvalidInput,
  input: Provisioning.ProvisionInput,
  file: ConfigFile,
  source: string
): ConfigError => {
  const path = configPath(error.path, input, file)
  const detail = error.message.startsWith(`${error.path}: `)
    ? error.message.slice(error.path.length + 2)
    : error.message
  return new ConfigError({ message: `Invalid configuration in ${source}:\n  at ${path}: ${detail}` })
}

/**
 * Applies the file to the store and logs what changed. Content the store
 * refuses fails as a `ConfigError` naming the file and the field.
 *
 * @category applying
 */
export const apply = (file: ConfigFile, settings: Settings) =>
  Effect.gen(function*() {
    const input = yield* toInput(file, settings.configSource)
    const provisioning = yield* Provisioning.Provisioning
    const result = yield* provisioning.provision(input).pipe(
      Effect.catchTag("InvalidInput", (error) => Effect.fail(asConfigError(error, input, file, settings.configSource)))
    )
    if (result.created.length + result.updated.length > 0) {
      yield* Effect.logInfo("configuration applied").pipe(
        Effect.annotateLogs({ created: result.created.join(", "), updated: result.updated.join(", ") })
      )
    }
    // What a later action changed (a key revoked or disabled, a password or a limit changed in the
    // console or with the CLI) is kept: say so at every start while the file says otherwise.
    for (const disagreement of result.disagreements) {
      yield* Effect.logWarning(
        disagreement.field === "deleted"
          ? `the configuration file declares ${disagreement.entry}, which was deleted; deletion is final, so it is not created again`
          : disagreement.field === "secret"
          ? `the configuration file declares ${disagreement.entry} with a secret that was revoked; it is not created`
          : `the configuration file and the database disagree on ${disagreement.entry}; the database is kept`
      ).pipe(
        Effect.annotateLogs({ entry: disagreement.entry, field: disagreement.field, detail: disagreement.message })
      )
    }
    yield* ensureAdmin
    return result
  })

/**
 * The first admin: when no admin exists (none in the file, none created
 * since), an `admin` user is created with a one-time password, printed once.
 * Change it at the first sign-in (console: account menu, change password).
 *
 * @category applying
 */
export const ensureAdmin = Effect.gen(function*() {
  const users = yield* Users.Users
  const all = yield* users.list
  if (all.some((user) => user.role === "admin")) return
  const name = all.some((user) => user.name === "admin") ? `admin-${randomBytes(3).toString("hex")}` : "admin"
  const password = randomBytes(12).toString("base64url")
  const created = yield* users.create({ name, role: "admin", password: Redacted.make(password), source: "console" })
    .pipe(
      Effect.as(true),
      // Nodes starting together: another one created the first admin a moment ago (and printed its password).
      Effect.catchTag(
        "Conflict",
        (conflict) =>
          Effect.flatMap(
            users.list,
            (now) => now.some((user) => user.role === "admin") ? Effect.succeed(false) : Effect.fail(conflict)
          )
      )
    )
  if (!created) return
  yield* Console.log([
    "",
    "No administrator was configured, so one was created. Sign in to the console with:",
    `  user:     ${name}`,
    `  password: ${password}`,
    "This password is shown only this once: change it after signing in.",
    ""
  ].join("\n"))
})
