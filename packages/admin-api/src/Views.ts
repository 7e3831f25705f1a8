/**
 * Records as the management API shows them: money as exact USD strings,
 * ratios as decimals, and secrets never (upstream keys and credential-like
 * channel headers appear as their last 4 characters).
 *
 * @since 0.1.0
 */
import { ChannelHealth, Credentials, Domain, Money, Pricing, Tokens } from "@modelgate/core"
import type { ChannelRecord, GroupRecord, ModelRecord } from "@modelgate/store/CatalogRepo"
import type { KeyRecord } from "@modelgate/store/Keys"
import type { CodeRow, LedgerRow, UsageRow, UserStats } from "@modelgate/store/Reports"
import type { User } from "@modelgate/store/Users"
import { Schema } from "effect"
import type * as C from "./Contract.ts"

const usdOrNull = (nanos: bigint | null): string | null => nanos === null ? null : Money.formatUsd(nanos)

/** Millionths to a ratio string (`800000` → `"0.8"`). @category conversions */
export const ratio = (micros: bigint): string => Money.formatScaled(micros, 6)

/** The signed-in user. @category users */
export const me = (user: User): C.Me => ({
  id: user.id,
  name: user.name,
  role: user.role,
  balance: Money.formatUsd(user.balanceNanos)
})

/** A user as an admin sees them. @category users */
export const adminUser = (user: User, stats: UserStats | undefined): C.AdminUser => ({
  id: user.id,
  name: user.name,
  role: user.role,
  enabled: user.enabled,
  balance: Money.formatUsd(user.balanceNanos),
  groups: stats?.groups ?? [],
  keyCount: stats?.keyCount ?? 0,
  spentThisMonth: Money.formatUsd(stats?.spentNanos ?? 0n),
  rpm: user.limits.rpm,
  tpm: user.limits.tpm,
  concurrency: user.limits.concurrency,
  source: user.source,
  createdAt: user.createdAt
})

/** An API key, never its secret. @category keys */
export const key = (record: KeyRecord): C.ApiKey => ({
  id: record.id,
  name: record.name,
  prefix: record.prefix,
  group: record.group,
  models: record.models,
  expiresAt: record.expiresAt,
  enabled: record.enabled,
  quota: usdOrNull(record.quotaNanos),
  dailyBudget: usdOrNull(record.dailyBudgetNanos),
  monthlyBudget: usdOrNull(record.monthlyBudgetNanos),
  spent: Money.formatUsd(record.spentNanos),
  rpm: record.limits.rpm,
  tpm: record.limits.tpm,
  concurrency: record.limits.concurrency,
  lastUsedAt: record.lastUsedAt,
  createdAt: record.createdAt
})

/**
 * A model's prices as the API shows them, multiplied by a group's ratio
 * (rounded up to a whole nano-dollar, as charges are).
 *
 * @category catalog
 */
export const prices = (model: Domain.Model, ratioMicros = 1_000_000n): C.Prices => {
  const apply = (nanos: bigint | null) =>
    nanos === null ? null : Money.formatUsd(Money.divCeil(nanos * ratioMicros, 1_000_000n))
  return {
    input: apply(model.inputNanosPerMillion),
    output: apply(model.outputNanosPerMillion),
    cachedInput: apply(model.cachedInputNanosPerMillion),
    cacheWrite: apply(model.cacheWriteNanosPerMillion ?? null),
    perRequest: apply(model.perRequestNanos),
    free: model.free
  }
}

/** A model as a user sees it in a group, with what a call that asks for its whole output holds. @category catalog */
export const modelInfo = (model: Domain.Model, ratioMicros: bigint): C.ModelInfo => ({
  id: model.id,
  displayName: model.displayName,
  prices: prices(model, ratioMicros),
  inputTokenLimit: model.inputTokenLimit,
  outputTokenLimit: model.outputTokenLimit,
  holdAtMaxOutput: Money.formatUsd(
    Pricing.worstCase(model, ratioMicros, { promptTokens: 0, outputTokens: model.outputTokenLimit })
  )
})

/** A model and its list prices. @category catalog */
export const adminModel = ({ model, source }: ModelRecord): C.AdminModel => ({
  id: model.id,
  displayName: model.displayName,
  prices: prices(model),
  inputTokenLimit: model.inputTokenLimit,
  outputTokenLimit: model.outputTokenLimit,
  description: model.description ?? null,
  embedding: model.embedding ?? false,
  reasoning: model.reasoning ?? false,
  reasoningContent: model.reasoningContent ?? false,
  mediaPartTokens: {
    image: model.mediaPartTokens?.image ?? null,
    audio: model.mediaPartTokens?.audio ?? null,
    video: model.mediaPartTokens?.video ?? null,
    document: model.mediaPartTokens?.document ?? null,
    file: model.mediaPartTokens?.file ?? null
  },
  mediaHoldTokens: {
    image: Tokens.mediaPartTokens(model, "image"),
    audio: Tokens.mediaPartTokens(model, "audio"),
    video: Tokens.mediaPartTokens(model, "video"),
    document: Tokens.mediaPartTokens(model, "document"),
    file: Tokens.mediaPartTokens(model, "file")
  },
  source
})

/** A group as an admin edits it. @category catalog */
export const adminGroup = ({ group, users, source }: GroupRecord): C.AdminGroup => ({
  name: group.name,
  ratio: ratio(group.ratioMicros),
  limits: group.limits,
  selectable: group.selectable,
  users,
  source
})

// ---------------------------------------------------------------------------
// Channels and their secrets
// ---------------------------------------------------------------------------

/** Header names whose values are credentials. */
const SECRET_NAME = /authorization|cookie|key|token|secret|password|signature|auth|credential|session/i

/** Values that look like credentials whatever the header is called. */
const SECRET_VALUE =
  /^(bearer|basic|token|digest)\s+\S|^(sk|pk|rk|key|api|ghp|gho|xox[abp]|ya29|AIza)[-_.]?[A-Za-z0-9]/i

/** A long run of letters and digits (with `-_.=+/`) that mixes both: a token, most likely. */
const looksLikeToken = (value: string): boolean =>
  value.length >= 20 && !/\s/.test(value) && /^[A-Za-z0-9_\-.=+/:]+$/.test(value) && /[A-Za-z]/.test(value) &&
  /[0-9]/.test(value) &&
  !/^https?:/i.test(value)

/**
 * Whether a channel header is a secret: by its name (`authorization`,
 * `x-api-key`, cookies, anything with key, token, secret, password), or by a
 * value that looks like one (`Bearer ...`, `sk-...`, a long token).
 *
 * @category channels
 */
export const isSecretHeader = (name: string, value: string): boolean =>
  SECRET_NAME.test(name) || SECRET_VALUE.test(value.trim()) || looksLikeToken(value.trim())

/** A secret as shown: its last 4 characters. @category channels */
export const hint = (secret: string): string => Credentials.keyHint(secret)

/** Headers as the API shows them: secrets as a hint. @category channels */
export const shownHeaders = (headers: Readonly<Record<string, string>>): Record<string, string> =>
  Object.fromEntries(
    Object.entries(headers).map(([name, value]) => [name, isSecretHeader(name, value) ? hint(value) : value])
  )

/**
 * Headers as given in an edit, except that a masked value sent back
 * unchanged (as read) keeps the stored secret.
 *
 * @category channels
 */
export const mergeHeaders = (
  given: Readonly<Record<string, string>>,
  stored: Readonly<Record<string, string>>
): Record<string, string> =>
  Object.fromEntries(
    Object.entries(given).map(([name, value]) => {
      const kept = stored[name]
      return [name, kept !== undefined && isSecretHeader(name, kept) && value === hint(kept) ? kept : value]
    })
  )

/** Keys that no longer decrypt (the server secret changed) are counted, and reported as unusable. */
const undecryptable = (count: number): C.ChannelHealth => ({
  state: "disabled",
  keys: Array.from({ length: count }, (_, index) => ({
    ...ChannelHealth.unseenKey(index, "????"),
    state: "disabled" as const,
    reason: "The key cannot be decrypted with this server's secret; enter it again."
  })),
  refusedModels: []
})

/** A channel as an admin sees it, with its health (never its upstream keys). @category channels */
export const adminChannel = (record: ChannelRecord, health: C.ChannelHealth | undefined): C.AdminChannel => {
  const { channel } = record
  const hints = record.readable ? channel.apiKeys.map(hint) : Array.from({ length: record.keyCount }, () => "????")
  return {
    id: channel.id,
    name: channel.name,
    type: channel.type,
    baseUrl: channel.baseUrl,
    keyCount: record.keyCount,
    keyHints: hints,
    models: channel.models,
    modelMap: channel.modelMap,
    groups: channel.groups,
    priority: channel.priority,
    weight: channel.weight,
    enabled: channel.enabled,
    apiVersion: channel.apiVersion,
    headers: shownHeaders(channel.headers),
    timeouts: channel.timeouts,
    breaker: channel.breaker,
    params: channel.params,
    streamOptions: channel.streamOptions,
    responses: channel.responses === true,
    ...(channel.cloud?.project === undefined ? {} : { project: channel.cloud.project }),
    ...(channel.cloud?.location === undefined ? {} : { location: channel.cloud.location }),
    ...(channel.cloud?.region === undefined ? {} : { region: channel.cloud.region }),
    ...(channel.cloud?.publishers === undefined ? {} : { publishers: channel.cloud.publishers }),
    health: record.readable && health !== undefined ? health : undecryptable(record.keyCount),
    source: record.source,
    createdAt: record.createdAt
  }
}

// ---------------------------------------------------------------------------
// Usage, ledger, codes
// ---------------------------------------------------------------------------

const isDialect = Schema.is(Domain.Dialect)
const isWireDialect = Schema.is(Domain.WireDialect)

/** A dialect read back from the database (one this version does not know, written by a newer one, shows as OpenAI's). */
const dialectOf = (value: string): C.Dialect => isDialect(value) ? value : "openai"

/** An upstream's wire format read back from the database (Bedrock's Converse too). */
const wireDialectOf = (value: string): Domain.WireDialect => isWireDialect(value) ? value : "openai"

/**
 * One call, as billed and logged. With `detail` (admin views) it also
 * carries where it went: its channel, the upstream's model and dialect, and
 * every upstream attempt.
 *
 * @category usage
 */
export const usageItem = (row: UsageRow, detail: boolean): C.UsageItem => ({
  id: row.id,
  createdAt: row.createdAt,
  requestId: row.requestId,
  userId: row.userId,
  userName: row.userName,
  keyId: row.keyId,
  keyName: row.keyName,
  model: row.model,
  dialect: dialectOf(row.dialectIn),
  stream: row.stream,
  promptTokens: row.promptTokens,
  completionTokens: row.completionTokens,
  cachedTokens: row.cachedTokens,
  cacheWriteTokens: row.cacheWriteTokens,
  reasoningTokens: row.reasoningTokens,
  usageReported: row.usageReported,
  cost: Money.formatUsd(row.costNanos),
  latencyMs: row.latencyMs,
  ttfbMs: row.ttfbMs,
  status: row.status,
  errorCode: row.errorCode,
  note: row.note,
  errorMessage: row.errorMessage,
  ...(detail
    ? {
      channel: row.channel,
      upstreamModel: row.upstreamModel,
      upstreamDialect: wireDialectOf(row.dialectOut),
      attempts: row.attempts,
      attemptLog: row.attemptLog.map((attempt) => ({ ...attempt, errorMessage: attempt.errorMessage ?? null }))
    }
    : {})
})

/** One change of a balance. @category usage */
export const ledgerItem = (row: LedgerRow): C.LedgerItem => ({
  id: row.id,
  createdAt: row.createdAt,
  kind: row.kind,
  amount: Money.formatUsd(row.amountNanos),
  reason: row.reason,
  requestId: row.requestId
})

/** A code as listed: its prefix, value and who redeemed it. @category codes */
export const code = (row: CodeRow): C.AdminCode => ({
  prefix: row.prefix,
  amount: Money.formatUsd(row.amountNanos),
  batch: row.batch,
  createdAt: row.createdAt,
  createdBy: row.createdBy,
  redeemedAt: row.redeemedAt,
  redeemedBy: row.redeemedBy
})

/** Spend and tokens of one model on one day. @category usage */
export const dailyPoint = (
  row: {
    readonly day: string
    readonly model: string
    readonly requests: number
    readonly promptTokens: number
    readonly completionTokens: number
    readonly costNanos: bigint
  }
): C.DailyPoint => ({
  day: row.day,
  model: row.model,
  requests: row.requests,
  promptTokens: row.promptTokens,
  completionTokens: row.completionTokens,
  cost: Money.formatUsd(row.costNanos)
})
