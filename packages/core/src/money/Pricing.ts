/**
 * Prices and costs. All arithmetic is on integers:
 *
 * - prices are nano-dollars per one million tokens (and per request);
 * - a group's ratio is in millionths (`ratioMicros`, 1.0 = 1_000_000);
 * - the cost of a call is the exact rational
 *   `(promptFresh * input + cached * cachedInput + cacheWrite * cacheWrite + completion * output) / 10^6 * ratio`
 *   plus `perRequest * ratio`, rounded up to a whole nano-dollar once, where
 *   `cached` are prompt tokens read from the upstream's prompt cache,
 *   `cacheWrite` those written to it (Anthropic's `cache_creation_input_tokens`)
 *   and `promptFresh` the rest of the prompt; `cachedInput` and `cacheWrite`
 *   default to the input price.
 *
 * Rounding up once per call means a charge is never below the list price and
 * never more than one nano-dollar above it. A cost is never negative: token
 * counts that are not non-negative whole numbers (which the adapters refuse
 * before they get here) are priced as the nearest count above them that is.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { Usage } from "../dialect/Canonical.ts"
import type { Model } from "../domain/Domain.ts"
import { InsufficientBalance } from "../errors/GatewayError.ts"
import { divCeil, formatUsd, MAX_NANOS, type Nanos } from "./Money.ts"

const MILLION = 1_000_000n
const RATIO_SCALE = 1_000_000n

/** Whether the model may be called at all: it has some price, or it is free. @category pricing */
export const isPriced = (model: Model): boolean =>
  model.free ||
  model.inputNanosPerMillion !== null ||
  model.outputNanosPerMillion !== null ||
  model.perRequestNanos !== null

/**
 * A token count as a bigint that can be priced: a fraction rounds up, and a
 * negative, NaN or infinite count is 0 (never a credit, never a `RangeError`
 * from `BigInt(1.5)`).
 */
const countOf = (tokens: number | undefined): bigint =>
  tokens === undefined || !(tokens > 0) || !Number.isFinite(tokens)
    ? 0n
    : BigInt(Number.isSafeInteger(tokens) ? tokens : Math.ceil(tokens))

/**
 * The cost in nano-dollars of a call with this usage: never negative, and
 * total over any numbers (see `countOf`: a count that is not a non-negative
 * whole number is priced as the nearest one above it that is, or 0).
 *
 * @category pricing
 */
export const cost = (model: Model, ratioMicros: bigint, usage: {
  readonly promptTokens: number
  readonly completionTokens: number
  readonly cachedTokens?: number | undefined
  readonly cacheWriteTokens?: number | undefined
}): Nanos => {
  if (model.free) return 0n
  const input = model.inputNanosPerMillion ?? 0n
  const output = model.outputNanosPerMillion ?? 0n
  const cachedPrice = model.cachedInputNanosPerMillion ?? input
  const writePrice = model.cacheWriteNanosPerMillion ?? input
  // Cache reads, then cache writes, never more than the prompt holds.
  const prompt = countOf(usage.promptTokens)
  const cachedCount = countOf(usage.cachedTokens)
  const cached = cachedCount < prompt ? cachedCount : prompt
  const writtenCount = countOf(usage.cacheWriteTokens)
  const written = writtenCount < prompt - cached ? writtenCount : prompt - cached
  const fresh = prompt - cached - written
  const tokenPart = fresh * input + cached * cachedPrice + written * writePrice +
    countOf(usage.completionTokens) * output
  const perRequest = model.perRequestNanos ?? 0n
  // One exact fraction, rounded up once: (tokenPart / 10^6 + perRequest) * ratio / 10^6.
  return divCeil((tokenPart + perRequest * MILLION) * ratioMicros, MILLION * RATIO_SCALE)
}

/** The cost of a canonical usage record. @category pricing */
export const costOfUsage = (model: Model, ratioMicros: bigint, usage: Usage): Nanos =>
  cost(model, ratioMicros, {
    promptTokens: usage.promptTokens,
    completionTokens: usage.completionTokens,
    cachedTokens: usage.cachedTokens,
    cacheWriteTokens: usage.cacheWriteTokens
  })

/**
 * What a hold must cover.
 *
 * @category pricing
 */
export interface HoldBounds {
  /** An upper bound on the prompt tokens (`Tokens.bodyTokenBound`). */
  readonly promptTokens: number
  /** The output tokens one answer may have (`maxOutputFor`). */
  readonly outputTokens: number
  /** How many answers the call asks for (OpenAI `n`, Gemini `candidateCount`); each may be `outputTokens` long. Default 1. */
  readonly choices?: number | undefined
}

/**
 * The worst-case cost of a call, exact (it may exceed `MAX_NANOS`; `holdFor`
 * refuses such calls): the prompt bound at the dearest of the input, cached
 * input and cache-write prices (which of the prompt's tokens the upstream finds
 * in, or writes to, its cache is unknown before the call), the output bound once per answer asked for, times
 * the ratio, plus `per_request` times the ratio; rounded up once, like `cost`.
 * No actual usage within these bounds costs more.
 *
 * @example
 * ```ts
 * import { Pricing } from "@modelgate/core"
 * declare const model: Parameters<typeof Pricing.worstCase>[0] // input 1 USD, output 2 USD per 1M tokens
 *
 * Pricing.worstCase(model, 1_000_000n, { promptTokens: 100, outputTokens: 50, choices: 3 })
 * // 100 * 1000 + 3 * 50 * 2000 = 400000 nano-dollars
 * ```
 *
 * @category pricing
 */
export const worstCase = (model: Model, ratioMicros: bigint, bounds: HoldBounds): Nanos => {
  if (model.free) return 0n
  const input = model.inputNanosPerMillion ?? 0n
  const cachedInput = model.cachedInputNanosPerMillion ?? input
  const cacheWrite = model.cacheWriteNanosPerMillion ?? input
  const dearer = cachedInput > input ? cachedInput : input
  const promptPrice = cacheWrite > dearer ? cacheWrite : dearer
  const output = model.outputNanosPerMillion ?? 0n
  const choices = BigInt(Math.max(1, Math.ceil(bounds.choices ?? 1)))
  const tokenPart = BigInt(Math.max(0, Math.ceil(bounds.promptTokens))) * promptPrice +
    BigInt(Math.max(0, Math.ceil(bounds.outputTokens))) * choices * output
  const perRequest = model.perRequestNanos ?? 0n
  return divCeil((tokenPart + perRequest * MILLION) * ratioMicros, MILLION * RATIO_SCALE)
}

/**
 * The amount to hold for a call: `worstCase`, or an `InsufficientBalance`
 * refusal (OpenAI `insufficient_quota`, Gemini `RESOURCE_EXHAUSTED`) when it
 * exceeds `MAX_NANOS`, the largest amount a balance, a hold or a charge may
 * be: no balance could cover it, and the refusal names what to ask for less of.
 *
 * @category pricing
 */
export const holdFor = (
  model: Model,
  ratioMicros: bigint,
  bounds: HoldBounds
): Effect.Effect<Nanos, InsufficientBalance> => {
  const amount = worstCase(model, ratioMicros, bounds)
  if (amount <= MAX_NANOS) return Effect.succeed(amount)
  const choices = bounds.choices ?? 1
  return Effect.fail(
    new InsufficientBalance({
      message: `This call may cost up to ${formatUsd(amount)} USD, more than the largest balance the gateway holds ` +
        `(${formatUsd(MAX_NANOS)} USD). Ask for fewer output tokens (max_tokens)` +
        `${choices > 1 ? ` or fewer answers (n, candidateCount: ${choices} asked)` : ""}, or send a shorter prompt.`
    })
  )
}

/**
 * The output tokens a hold must cover: what the request asked for, capped by the
 * model's limit, or the model's limit when the request did not say.
 *
 * @category pricing
 */
export const maxOutputFor = (model: Model, requested: number | undefined): number =>
  requested !== undefined && requested > 0 ? Math.min(requested, model.outputTokenLimit) : model.outputTokenLimit
