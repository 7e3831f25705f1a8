/**
 * The `modelgate` command line: `serve`, `keys create|list|revoke`,
 * `users adjust|set-password` and `usage replay`. Every command that touches the database
 * reads the same configuration as `serve` (`--config FILE`, else
 * `MODELGATE_CONFIG`, else the demo setup on its own database) so it works on
 * the same data.
 *
 * @since 0.1.0
 */
import { Money } from "@modelgate/core"
import * as Accounts from "@modelgate/store/Accounts"
import * as CacheChanges from "@modelgate/store/CacheChanges"
import * as CatalogRepo from "@modelgate/store/CatalogRepo"
import * as Database from "@modelgate/store/Database"
import * as Keys from "@modelgate/store/Keys"
import * as Migrations from "@modelgate/store/Migrations"
import * as Secrets from "@modelgate/store/Secrets"
import * as Sessions from "@modelgate/store/Sessions"
import * as UsageJournal from "@modelgate/store/UsageJournal"
import * as UsageWriter from "@modelgate/store/UsageWriter"
import * as Users from "@modelgate/store/Users"
import { Array as Arr, Console, Effect, Layer, Option, Redacted } from "effect"
import { Argument, Command, Flag, Prompt } from "effect/cli"
import { SqlClient, type SqlError } from "effect/sql"
import { existsSync, renameSync } from "node:fs"
import { userInfo } from "node:os"
import { dirname } from "node:path"
import { text } from "node:stream/consumers"
import { fileURLToPath } from "node:url"
import * as CacheSync from "./CacheSync.ts"
import * as ConfigFile from "./ConfigFile.ts"
import * as Demo from "./Demo.ts"
import * as NodeIdentity from "./NodeIdentity.ts"
import * as Server from "./Server.ts"
import { nonEmpty, resolveSettings, type Settings } from "./Settings.ts"

type Env = Readonly<Record<string, string | undefined>>

/**
 * Where the console's built files are: `MODELGATE_CONSOLE_DIR` (a deployment
 * that copies the bundle elsewhere points it at the files; set but without an
 * `index.html`, the start stops, naming it), else `packages/console/dist` of
 * this checkout when it was built (from the sources or the bundle alike), else
 * none (the console is not served).
 */
const consoleDir = (env: Env): Effect.Effect<string | null, ConfigFile.ConfigError> => {
  const configured = nonEmpty(env["MODELGATE_CONSOLE_DIR"])
  if (configured !== undefined) {
    return existsSync(`${configured}/index.html`)
      ? Effect.succeed(configured)
      : Effect.fail(
        new ConfigFile.ConfigError({
          message:
            `MODELGATE_CONSOLE_DIR is ${configured}, which has no index.html: point it at the console's built files (packages/console/dist after pnpm build).`
        })
      )
  }
  const dir = fileURLToPath(new URL("../../console/dist", import.meta.url))
  return Effect.succeed(existsSync(`${dir}/index.html`) ? dir : null)
}

const configFlag = Flag.String("config").pipe(
  Flag.withAlias("c"),
  Flag.withDescription("The configuration file (YAML). Default: $MODELGATE_CONFIG, else the built-in demo setup."),
  Flag.optional
)

/**
 * The configuration to use: the flag, the environment, or the demo (with a
 * fake upstream at `demoUpstream`), which runs only on its own database and,
 * when `serving`, on a loopback address (see `Demo.guardEnvironment`).
 */
const loadConfig = (flag: Option.Option<string>, env: Env, demoUpstream: string | undefined, serving = false) =>
  Effect.gen(function*() {
    const path = Option.getOrUndefined(flag) ?? nonEmpty(env["MODELGATE_CONFIG"])
    if (path !== undefined) {
      const file = yield* ConfigFile.load(path)
      const settings = yield* resolveSettings(file, env, { consoleDir: yield* consoleDir(env), source: path })
      return { file, settings, demo: false }
    }
    yield* Demo.guardEnvironment(env, { serving })
    const file = Demo.config(demoUpstream ?? "http://127.0.0.1:9")
    const settings = yield* resolveSettings(file, env, {
      consoleDir: yield* consoleDir(env),
      source: "the built-in demo configuration"
    })
    yield* Demo.claimDatabase(settings)
    return { file, settings, demo: true }
  })

/** The store alone (no server), for the admin commands. */
const storeLayer = (settings: Settings) => {
  const database = Database.layer(settings.database, {
    statementTimeoutMs: settings.databaseStatementTimeoutMs,
    busyTimeoutMs: settings.databaseBusyTimeoutMs
  })
  const migrated = Layer.effectDiscard(Migrations.migrate).pipe(Layer.provideMerge(database))
  const secrets = Secrets.layer(
    settings.secret !== null ? { secret: settings.secret } : { keyFile: settings.secretFile }
  )
  return Layer.mergeAll(Users.Users.layer, Keys.Keys.layer, Accounts.Accounts.layer, CatalogRepo.CatalogRepo.layer)
    .pipe(
      Layer.provideMerge(CacheChanges.CacheChanges.layer),
      Layer.provideMerge(secrets),
      Layer.provideMerge(migrated)
    )
}

/**
 * The store and the announcer that tells running gateways about a command's
 * writes (the change log, and Redis when configured), so a revoked key stops
 * working on every node within a second. Only commands that write use it:
 * read-only ones (`keys list`) open no Redis connection.
 */
const writingLayer = (settings: Settings) =>
  CacheSync.Announcer.layer({ redis: settings.redis, channel: CacheSync.channelFor(settings.redisKeyPrefix) }).pipe(
    Layer.provideMerge(storeLayer(settings))
  )

/** Tells running gateways what a command changed. */
const announce = (topic: "keys" | "users", id: string) =>
  Effect.flatMap(CacheSync.Announcer, (announcer) => announcer.announce([{ topic, ids: [id] }]))

const banner = (settings: Settings, demo: boolean) => {
  const base = settings.publicUrl ?? `http://${settings.host}:${settings.port}`
  const lines = [
    `modelgate listening on ${base}`,
    `  OpenAI-compatible:  ${base}/v1      Gemini-compatible: ${base} (API version v1beta)`,
    `  Anthropic (Claude Code): ANTHROPIC_BASE_URL=${base}      Responses (Codex CLI): ${base}/v1`,
    `  database:           ${settings.database}`
  ]
  if (settings.consoleDir !== null) lines.push(`  console:            ${base}/console/`)
  if (demo) {
    lines.push(
      "",
      "Demo setup (a fake upstream stands in for the providers; nothing leaves this machine):",
      `  API key:   ${Demo.DEMO_KEY}`,
      `  console:   user 'demo' or 'admin', password '${Demo.DEMO_ADMIN_PASSWORD}'`,
      "  try it:",
      `    curl ${base}/v1/chat/completions -H "Authorization: Bearer ${Demo.DEMO_KEY}" \\`,
      `      -H "Content-Type: application/json" -d '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hello!"}]}'`
    )
  }
  return Console.log(lines.join("\n"))
}

const serve = (env: Env) =>
  Command.make("serve", { config: configFlag }, ({ config }) =>
    Effect.gen(function*() {
      const path = Option.getOrUndefined(config) ?? nonEmpty(env["MODELGATE_CONFIG"])
      if (path === undefined) yield* Demo.guardEnvironment(env, { serving: true })
      const upstream = path === undefined ? yield* Demo.upstream(env) : undefined
      const loaded = yield* loadConfig(config, env, upstream, true)
      const { file, demo } = loaded
      // Without node_id in the file, a stable id kept beside the key file (held while this process runs).
      const settings = file.node_id === undefined
        ? { ...loaded.settings, nodeId: yield* NodeIdentity.claim(dirname(loaded.settings.secretFile)) }
        : loaded.settings
      yield* Layer.launch(
        Layer.effectDiscard(banner(settings, demo)).pipe(Layer.provide(Server.layer(settings, file)))
      ).pipe(Effect.catchTag("SqlError", unusableDatabase(settings, env)))
    }).pipe(Effect.scoped)).pipe(
      Command.withDescription(
        "Run the gateway (with no configuration: the demo setup, which `pnpm start` runs with its fake upstream)."
      )
    )

/**
 * A database that cannot be opened or reached, reported with where its address
 * came from and the underlying cause: a missing directory, a refused
 * connection, wrong credentials, or the server's own reason for refusing the
 * connection ("sorry, too many clients already", whatever its error class).
 * Other SQL errors pass unchanged.
 */
const unusableDatabase =
  (settings: Settings, env: Env) =>
  (error: SqlError.SqlError): Effect.Effect<never, SqlError.SqlError | ConfigFile.ConfigError> => {
    const reason = error.reason
    const opening = reason._tag === "ConnectionError" || reason._tag === "AuthenticationError" ||
      reason._tag === "AuthorizationError" || reason.operation === "open" || reason.operation === "connect"
    if (!opening) return Effect.fail(error)
    const origin = nonEmpty(env["MODELGATE_DATABASE"]) !== undefined
      ? "MODELGATE_DATABASE"
      : `database in ${settings.configSource}`
    const cause = reason.cause instanceof Error && reason.cause.message.length > 0 ? ` (${reason.cause.message})` : ""
    const shown = settings.database.replace(/\/\/([^:/@]+):[^@]*@/, "//$1:***@")
    return Effect.fail(
      new ConfigFile.ConfigError({
        message: `Cannot use the database '${shown}' (from ${origin}): ${error.message}${cause}`
      })
    )
  }

const quoted = (names: ReadonlyArray<string>): string => names.map((name) => `'${name}'`).join(", ")

/** Refuses a group or model names the database does not know, naming what exists. */
const checkGroupAndModels = Effect.fnUntraced(function*(group: string, models: ReadonlyArray<string>) {
  const catalog = yield* (yield* CatalogRepo.CatalogRepo).load
  const groups = catalog.groups.map((g) => g.name).sort()
  if (!groups.includes(group)) {
    return yield* Effect.fail(
      new Error(
        groups.length === 0
          ? `--group: no group named '${group}': the database has no groups yet. Start the server once with this configuration to create them.`
          : `--group: no group named '${group}'. Groups: ${quoted(groups)}.`
      )
    )
  }
  const known = new Set(catalog.models.map((m) => m.id))
  const unknown = models.filter((m) => !known.has(m))
  if (unknown.length > 0) {
    return yield* Effect.fail(
      new Error(
        `--models: ${unknown.length === 1 ? "unknown model" : "unknown models"} ${quoted(unknown)}. Models: ${
          known.size === 0 ? "none yet" : quoted([...known].sort())
        }.`
      )
    )
  }
})

const keys = (env: Env) => {
  const create = Command.make("create", {
    config: configFlag,
    user: Flag.String("user").pipe(Flag.withDescription("The user the key belongs to.")),
    group: Flag.String("group").pipe(Flag.withDefault("default"), Flag.withDescription("The key's group.")),
    name: Flag.String("name").pipe(Flag.withDefault("cli"), Flag.withDescription("A name to recognise the key by.")),
    models: Flag.String("models").pipe(
      Flag.optional,
      Flag.withDescription("Comma-separated models the key may use (default: all of its group's).")
    ),
    expires: Flag.String("expires").pipe(
      Flag.optional,
      Flag.withDescription("Expiry, ISO 8601 (e.g. 2027-01-01T00:00:00Z).")
    )
  }, (flags) =>
    Effect.gen(function*() {
      const { settings } = yield* loadConfig(flags.config, env, undefined)
      const program = Effect.gen(function*() {
        const users = yield* Users.Users
        const user = yield* users.findByName(flags.user)
        if (user === undefined) return yield* Effect.fail(new Error(`No user named '${flags.user}'.`))
        const expires = Option.getOrUndefined(flags.expires)
        const expiresAt = expires === undefined ? null : Date.parse(expires)
        if (expiresAt !== null && !Number.isFinite(expiresAt)) {
          return yield* Effect.fail(
            new Error(`--expires: expected an ISO 8601 time such as 2027-01-01T00:00:00Z, got '${expires}'.`)
          )
        }
        const models = Option.match(flags.models, {
          onNone: () => [],
          onSome: (m) => m.split(",").map((s) => s.trim()).filter((s) => s.length > 0)
        })
        yield* checkGroupAndModels(flags.group, models)
        const created = yield* (yield* Keys.Keys).create({
          userId: user.id,
          name: flags.name,
          group: flags.group,
          models,
          expiresAt
        })
        yield* announce("keys", created.key.id)
        yield* Console.log(created.secret)
        yield* Console.error(
          `Created key '${flags.name}' (${created.key.prefix}...) for ${flags.user}. The secret above is shown only this once.`
        )
      })
      yield* program.pipe(
        Effect.provide(writingLayer(settings)),
        Effect.catchTag("SqlError", unusableDatabase(settings, env))
      )
    })).pipe(Command.withDescription("Create an API key and print its secret (once)."))

  const list = Command.make("list", {
    config: configFlag,
    user: Flag.String("user").pipe(Flag.optional, Flag.withDescription("Only this user's keys."))
  }, (flags) =>
    Effect.gen(function*() {
      const { settings } = yield* loadConfig(flags.config, env, undefined)
      yield* Effect.gen(function*() {
        const users = yield* Users.Users
        const repo = yield* Keys.Keys
        const all = yield* users.list
        const selected = Option.match(flags.user, {
          onNone: () => all,
          onSome: (name) => all.filter((u) => u.name === name)
        })
        const rows: Array<string> = ["ID\tPREFIX\tUSER\tNAME\tGROUP\tSTATE\tEXPIRES"]
        for (const user of selected) {
          for (const key of yield* repo.list(user.id)) {
            const state = key.revoked ? "revoked" : key.enabled ? "enabled" : "disabled"
            rows.push(
              [
                key.id,
                `${key.prefix}...`,
                user.name,
                key.name,
                key.group,
                state,
                key.expiresAt === null ? "never" : new Date(key.expiresAt).toISOString()
              ].join("\t")
            )
          }
        }
        yield* Console.log(rows.join("\n"))
      }).pipe(Effect.provide(storeLayer(settings)), Effect.catchTag("SqlError", unusableDatabase(settings, env)))
    })).pipe(Command.withDescription("List API keys (never their secrets)."))

  const revoke = Command.make("revoke", {
    config: configFlag,
    id: Argument.String("id").pipe(Argument.withDescription("The key's id (see `keys list`)."))
  }, (flags) =>
    Effect.gen(function*() {
      const { settings } = yield* loadConfig(flags.config, env, undefined)
      yield* Effect.gen(function*() {
        yield* (yield* Keys.Keys).revoke(flags.id)
        yield* announce("keys", flags.id)
        yield* Console.log(`Revoked ${flags.id}. Running gateways stop accepting it within a second.`)
      }).pipe(Effect.provide(writingLayer(settings)), Effect.catchTag("SqlError", unusableDatabase(settings, env)))
    })).pipe(Command.withDescription("Revoke an API key for good."))

  return Command.make("keys").pipe(
    Command.withSubcommands([create, list, revoke]),
    Command.withDescription("Manage API keys.")
  )
}

/**
 * Who made a balance adjustment from the command line, for the ledger's
 * `actor`: `cli:<operating-system user>` (from the OS, else `USER` or
 * `LOGNAME`, else the numeric uid).
 *
 * @category commands
 */
export const cliActor = (env: Env): string => {
  let name: string | undefined
  try {
    name = userInfo().username
  } catch {
    // No passwd entry for this uid (some containers): fall back to the environment.
  }
  if (name === undefined || name.length === 0) name = env["USER"] ?? env["LOGNAME"]
  if (name === undefined || name.length === 0) {
    name = typeof process.getuid === "function"
      ? `uid-${process.getuid()}`
      : "unknown"
  }
  return `cli:${name}`
}

/** The shortest password `users set-password` accepts (as the console). @category commands */
export const MIN_PASSWORD_LENGTH = 8

const passwordProblem = (password: string): string | undefined =>
  password.length < MIN_PASSWORD_LENGTH
    ? `The new password must have at least ${MIN_PASSWORD_LENGTH} characters; nothing changed.`
    : password.length > 256
    ? "The new password must have at most 256 characters; nothing changed."
    : undefined

/**
 * A new password from standard input: on a terminal, typed without echo and
 * repeated; otherwise (piped) the first line. Too short or too long is refused.
 */
const newPassword = Effect.gen(function*() {
  let password: string
  if (process.stdin.isTTY) {
    const ask = (prompt: Prompt.Prompt<Redacted.Redacted>) =>
      Prompt.run(prompt).pipe(Effect.mapError(() => new Error("Cancelled; nothing changed.")))
    const first = yield* ask(Prompt.Hidden({
      message: `New password (at least ${MIN_PASSWORD_LENGTH} characters)`,
      validate: (value) => {
        const problem = passwordProblem(value)
        return problem === undefined ? Effect.succeed(value) : Effect.fail(problem.replace("; nothing changed", ""))
      }
    }))
    const again = yield* ask(Prompt.Hidden({ message: "The same password again" }))
    if (Redacted.value(first) !== Redacted.value(again)) {
      return yield* Effect.fail(new Error("The two passwords differ; nothing changed."))
    }
    password = Redacted.value(first)
  } else {
    password = (yield* Effect.promise(() => text(process.stdin))).split(/\r?\n/)[0] ?? ""
  }
  const problem = passwordProblem(password)
  if (problem !== undefined) return yield* Effect.fail(new Error(problem))
  return Redacted.make(password)
})

const users = (env: Env) => {
  const adjust = Command.make("adjust", {
    config: configFlag,
    name: Argument.String("name").pipe(Argument.withDescription("The user's name.")),
    amount: Flag.String("amount").pipe(Flag.withDescription("USD to add (negative to take away), e.g. 5 or -2.50.")),
    reason: Flag.String("reason").pipe(Flag.withDescription("Why (kept in the ledger)."))
  }, (flags) =>
    Effect.gen(function*() {
      const { settings } = yield* loadConfig(flags.config, env, undefined)
      const nanos = Money.usdToNanos(flags.amount)
      if (nanos === undefined) {
        return yield* Effect.fail(
          new Error(`--amount: expected a USD amount such as 5 or -2.50, got '${flags.amount}'.`)
        )
      }
      yield* Effect.gen(function*() {
        const user = yield* (yield* Users.Users).findByName(flags.name)
        if (user === undefined) return yield* Effect.fail(new Error(`No user named '${flags.name}'.`))
        const balance = yield* (yield* Accounts.Accounts).adjust(user.id, nanos, flags.reason, cliActor(env))
        yield* announce("users", user.id)
        yield* Console.log(`${flags.name}: balance is now ${Money.formatUsd(balance)} USD.`)
      }).pipe(Effect.provide(writingLayer(settings)), Effect.catchTag("SqlError", unusableDatabase(settings, env)))
    })).pipe(Command.withDescription("Add to or take from a user's balance, with a reason."))
  const setPassword = Command.make("set-password", {
    config: configFlag,
    name: Argument.String("name").pipe(Argument.withDescription("The user's name."))
  }, (flags) =>
    Effect.gen(function*() {
      const { settings } = yield* loadConfig(flags.config, env, undefined)
      const password = yield* newPassword
      yield* Effect.gen(function*() {
        const users = yield* Users.Users
        const user = yield* users.findByName(flags.name)
        if (user === undefined) return yield* Effect.fail(new Error(`No user named '${flags.name}'; nothing changed.`))
        yield* users.setPassword(user.id, password)
        // Whoever was signed in with the old password is signed out.
        yield* (yield* Sessions.Sessions).removeAllOf(user.id)
        yield* Console.log(`${flags.name}: the password is changed and the user's console sessions ended.`)
      }).pipe(
        Effect.provide(Sessions.Sessions.layer().pipe(Layer.provideMerge(storeLayer(settings)))),
        Effect.catchTag("SqlError", unusableDatabase(settings, env))
      )
    })).pipe(Command.withDescription(
      "Set a user's console password, read from standard input: typed without echo (and repeated) on a terminal, else its first line."
    ))
  return Command.make("users").pipe(
    Command.withSubcommands([adjust, setPassword]),
    Command.withDescription("Manage users.")
  )
}

const usage = (env: Env) => {
  const replay = Command.make("replay", {
    config: configFlag,
    files: Argument.String("file").pipe(
      Argument.atLeast(1),
      Argument.withDescription("Usage journal files (usage-*.jsonl) a node left in its journal directory.")
    )
  }, (flags) =>
    Effect.gen(function*() {
      const { settings } = yield* loadConfig(flags.config, env, undefined)
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        for (const file of flags.files) {
          const { entries, unreadable } = yield* UsageJournal.read(file)
          yield* Effect.forEach(Arr.chunksOf(entries, 500), (batch) => UsageWriter.writeEntries(sql, batch), {
            discard: true
          })
          renameSync(file, `${file}.replayed`)
          yield* Console.log(
            `${file}: ${entries.length} usage record(s), charge(s) and lease release(s) written (those already in the database are not ` +
              `written again)${
                unreadable > 0 ? `; ${unreadable} unreadable line(s) skipped` : ""
              }. The file is now ${file}.replayed.`
          )
        }
      }).pipe(Effect.provide(storeLayer(settings)), Effect.catchTag("SqlError", unusableDatabase(settings, env)))
    })).pipe(Command.withDescription(
      "Write what a node kept in its usage journal (the database was unreachable when it stopped) to the database, once; " +
        "for a journal copied from a node that will not start again on its own directory."
    ))
  return Command.make("usage").pipe(
    Command.withSubcommands([replay]),
    Command.withDescription("Usage records and charges.")
  )
}

/**
 * The root command.
 *
 * @category commands
 */
export const make = (env: Env) =>
  Command.make("modelgate").pipe(
    Command.withDescription("modelgate: a self-hosted LLM API gateway."),
    Command.withSubcommands([serve(env), keys(env), users(env), usage(env)])
  )
