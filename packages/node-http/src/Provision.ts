/**
 * From the configuration file to the store: maps the YAML's users, keys,
 * groups, models, aliases and channels to the store's provisioning input and
 * applies it (idempotently: starting twice with the same file changes nothing,
 * and what was created in the console is left alone).
 *
 * Models that a channel serves but the file does not price are created without
 * a price, so a call to them is refused with a clear "no price" error rather
 * than "no such model".
 *
 * @since 0.1.0
 */
import { Domain, Money } from "@modelgate/core"
import * as Provisioning from "@modelgate/store/Provisioning"
import { Console, Effect, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import type { InvalidInput } from "@modelgate/store/StoreError"
import * as Users from "@modelgate/store/Users"
import { ConfigError, type ConfigFile, type KeyConfig } from "./ConfigFile.ts"
import type { Settings } from "./Settings.ts"

/** Defaults for models the file does not give limits for: core's, the one source of them. @category constants */
export const modelDefaults = Domain.modelDefaults

/** The group keys get when they name none. @category constants */
export const DEFAULT_GROUP = "default"

const usd = (value: string | number | undefined | null, path: string, problems: Array<string>): bigint | null => {
  if (value === undefined || value === null) return null
  const nanos = Money.usdToNanos(value)
  if (nanos === undefined || nanos < 0n || nanos > Money.MAX_NANOS) {
    problems.push(
      `  at ${path}: Expected a non-negative USD amount of at most 1000000000 with at most 9 decimal places, got ${JSON.stringify(value)}`
    )
    return null
  }
  return nanos
}

const time = (value: string | Date | null | undefined, path: string, problems: Array<string>): number | null => {
  if (value === undefined || value === null) return null
  const ms = value instanceof Date ? value.getTime() : Date.parse(value)
  if (!Number.isFinite(ms)) {
    problems.push(`  at ${path}: Expected an ISO 8601 time such as 2027-01-01T00:00:00Z, got ${JSON.stringify(value)}`)
    return null
  }
  return ms
}

const limitsOf = (source: { readonly rpm?: number | null; readonly tpm?: number | null; readonly concurrency?: number | null }) => ({
  ...(source.rpm !== undefined ? { rpm: source.rpm } : {}),
  ...(source.tpm !== undefined ? { tpm: source.tpm } : {}),
  ...(source.concurrency !== undefined ? { concurrency: source.concurrency } : {})
})

/**
 * Maps a configuration file to the store's provisioning input, or fails naming
 * every bad value.
 *
 * @category mapping
 */
export const toInput = (file: ConfigFile, source: string): Effect.Effect<Provisioning.ProvisionInput, ConfigError> =>
  Effect.suspend(() => {
    const problems: Array<string> = []
    const models: Array<Domain.Model> = Object.entries(file.models ?? {}).map(([id, model]) => ({
      id,
      displayName: model.display_name ?? id,
      inputNanosPerMillion: usd(model.input, `models.${id}.input`, problems),
      outputNanosPerMillion: usd(model.output, `models.${id}.output`, problems),
      cachedInputNanosPerMillion: usd(model.cached_input, `models.${id}.cached_input`, problems),
      perRequestNanos: usd(model.per_request, `models.${id}.per_request`, problems),
      free: model.free ?? false,
      inputTokenLimit: model.input_token_limit ?? modelDefaults.inputTokenLimit,
      outputTokenLimit: model.output_token_limit ?? modelDefaults.outputTokenLimit,
      ...(model.description !== undefined ? { description: model.description } : {}),
      embedding: model.embedding ?? false,
      reasoning: model.reasoning ?? false,
      reasoningContent: model.reasoning_content ?? false
    }))
    const known = new Set(models.map((m) => m.id))
    const groupNames = new Set<string>([DEFAULT_GROUP])
    const channels = (file.channels ?? []).map((channel, i): Omit<Domain.Channel, "id"> => {
      const apiKeys = [...(channel.api_key !== undefined ? [channel.api_key] : []), ...(channel.api_keys ?? [])]
      if (apiKeys.length === 0) problems.push(`  at channels[${i}]: Expected api_key or api_keys (the upstream's credentials)`)
      for (const model of channel.models) {
        if (!known.has(model)) {
          known.add(model)
          models.push({
            id: model,
            displayName: model,
            inputNanosPerMillion: null,
            outputNanosPerMillion: null,
            cachedInputNanosPerMillion: null,
            perRequestNanos: null,
            free: false,
            ...modelDefaults
          })
        }
      }
      const groups = channel.groups ?? [DEFAULT_GROUP]
      for (const group of groups) groupNames.add(group)
      return {
        name: channel.name,
        type: channel.type,
        baseUrl: channel.base_url,
        apiKeys,
        models: channel.models,
        modelMap: channel.model_map ?? {},
        groups,
        priority: channel.priority ?? 0,
        weight: channel.weight ?? 1,
        enabled: channel.enabled ?? true,
        headers: channel.headers ?? {},
        timeouts: {
          connectMs: channel.timeouts?.connect_ms ?? Domain.defaultTimeouts.connectMs,
          firstByteMs: channel.timeouts?.first_byte_ms ?? Domain.defaultTimeouts.firstByteMs,
          idleMs: channel.timeouts?.idle_ms ?? Domain.defaultTimeouts.idleMs,
          totalMs: channel.timeouts?.total_ms ?? Domain.defaultTimeouts.totalMs
        },
        apiVersion: channel.api_version ?? null,
        breaker: {
          consecutiveFailures: channel.breaker?.consecutive_failures ?? Domain.defaultBreaker.consecutiveFailures,
          failureRate: channel.breaker?.failure_rate ?? Domain.defaultBreaker.failureRate,
          minimumCalls: channel.breaker?.minimum_calls ?? Domain.defaultBreaker.minimumCalls,
          windowMs: channel.breaker?.window_ms ?? Domain.defaultBreaker.windowMs,
          cooldownMs: channel.breaker?.cooldown_ms ?? Domain.defaultBreaker.cooldownMs,
          halfOpenCalls: channel.breaker?.half_open_calls ?? Domain.defaultBreaker.halfOpenCalls
        },
        params: { defaults: channel.params?.defaults ?? {}, overrides: channel.params?.overrides ?? {} },
        streamOptions: channel.stream_options ?? true
      }
    })
    const keys: Array<Provisioning.ProvisionKey> = []
    const users = (file.users ?? []).map((user, u): Provisioning.ProvisionUser => {
      for (const [k, key] of (user.keys ?? []).entries()) keys.push(keyOf(user.name, key, `users[${u}].keys[${k}]`, problems, groupNames))
      for (const group of user.groups ?? []) groupNames.add(group)
      return {
        name: user.name,
        role: user.role ?? "user",
        enabled: user.enabled ?? true,
        balanceNanos: usd(user.balance, `users[${u}].balance`, problems) ?? 0n,
        limits: limitsOf(user),
        ...(user.password !== undefined ? { password: Redacted.make(user.password) } : {}),
        ...(user.groups !== undefined ? { groups: user.groups } : {})
      }
    })
    const declared = Object.entries(file.groups ?? {}).map(([name, group]): Provisioning.ProvisionGroup => {
      groupNames.delete(name)
      const ratio = group.ratio === undefined ? 1_000_000n : Money.parseScaled(group.ratio, 6)
      if (ratio === undefined || ratio <= 0n) {
        problems.push(`  at groups.${name}.ratio: Expected a positive number with at most 6 decimal places, got ${JSON.stringify(group.ratio)}`)
      }
      return { name, ratioMicros: ratio ?? 1_000_000n, limits: limitsOf(group), selectable: group.selectable ?? false }
    })
    const implied = [...groupNames].map((name): Provisioning.ProvisionGroup => ({ name, ratioMicros: 1_000_000n }))
    const aliases = Object.entries(file.aliases ?? {}).map(([pattern, target]) => ({ pattern, target }))
    for (const alias of aliases) {
      if (!known.has(alias.target)) problems.push(`  at aliases.${alias.pattern}: the target model '${alias.target}' is not a known model`)
    }
    if (problems.length > 0) {
      return Effect.fail(new ConfigError({ message: `Invalid configuration in ${source}:\n${problems.join("\n")}` }))
    }
    return Effect.succeed({ users, groups: [...declared, ...implied], models, aliases, channels, keys })
  })

const keyOf = (
  user: string,
  key: KeyConfig,
  path: string,
  problems: Array<string>,
  groups: Set<string>
): Provisioning.ProvisionKey => {
  const group = key.group ?? DEFAULT_GROUP
  groups.add(group)
  return {
    user,
    name: key.name,
    group,
    ...(key.secret !== undefined ? { secret: Redacted.make(key.secret) } : {}),
    models: key.models ?? [],
    expiresAt: time(key.expires_at, `${path}.expires_at`, problems),
    enabled: key.enabled ?? true,
    quotaNanos: usd(key.quota, `${path}.quota`, problems),
    dailyBudgetNanos: usd(key.daily_budget, `${path}.daily_budget`, problems),
    monthlyBudgetNanos: usd(key.monthly_budget, `${path}.monthly_budget`, problems),
    limits: limitsOf(key)
  }
}

/** The store's field names that the file spells differently. */
const FILE_FIELDS: Readonly<Record<string, string>> = {
  balanceNanos: "balance",
  ratioMicros: "ratio",
  inputNanosPerMillion: "input",
  outputNanosPerMillion: "output",
  cachedInputNanosPerMillion: "cached_input",
  perRequestNanos: "per_request",
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
export const asConfigError = (error: InvalidInput, input: Provisioning.ProvisionInput, file: ConfigFile, source: string): ConfigError => {
  const path = configPath(error.path, input, file)
  const detail = error.message.startsWith(`${error.path}: `) ? error.message.slice(error.path.length + 2) : error.message
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
  const created = yield* users.create({ name, role: "admin", password: Redacted.make(password), source: "console" }).pipe(
    Effect.as(true),
    // Nodes starting together: another one created the first admin a moment ago (and printed its password).
    Effect.catchTag("Conflict", (conflict) =>
      Effect.flatMap(users.list, (now) => now.some((user) => user.role === "admin") ? Effect.succeed(false) : Effect.fail(conflict)))
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
