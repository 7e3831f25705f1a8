/**
 * Prices and costs. All arithmetic is on integers:
 *
 * - prices are nano-dollars per one million tokens (and per request);
 * - a group's ratio is in millionths (`ratioMicros`, 1.0 = 1_000_000);
 * - the cost of a call is the exact rational
 *   `(promptUncached * input + cached * cachedInput + completion * output) / 10^6 * ratio`
 *   plus `perRequest * ratio`, rounded up to a whole nano-dollar once.
 *
 * Rounding up once per call means a charge is never below the list price and
 * never more than one nano-dollar above it.
 *
 * @since 0.1.0
 */
import type { Usage } from "./Canonical.ts"
import type { Model } from "./Domain.ts"
import { divCeil, type Nanos } from "./Money.ts"

const MILLION = 1_000_000n
const RATIO_SCALE = 1_000_000n

/** Whether the model may be called at all: it has some price, or it is free. @category pricing */
export const isPriced = (model: Model): boolean =>
  model.free ||
  model.inputNanosPerMillion !== null ||
  model.outputNanosPerMillion !== null ||
  model.perRequestNanos !== null

/**
 * The cost in nano-dollars of a call with this usage.
 *
 * @category pricing
 */
export const cost = (model: Model, ratioMicros: bigint, usage: {
  readonly promptTokens: number
  readonly completionTokens: number
  readonly cachedTokens?: number | undefined
}): Nanos => {
  if (model.free) return 0n
  const input = model.inputNanosPerMillion ?? 0n
  const output = model.outputNanosPerMillion ?? 0n
  const cachedPrice = model.cachedInputNanosPerMillion ?? input
  const cached = BigInt(Math.min(usage.cachedTokens ?? 0, usage.promptTokens))
  const uncached = BigInt(usage.promptTokens) - cached
  const tokenPart = uncached * input + cached * cachedPrice + BigInt(usage.completionTokens) * output
  const perRequest = model.perRequestNanos ?? 0n
  // One exact fraction, rounded up once: (tokenPart / 10^6 + perRequest) * ratio / 10^6.
  return divCeil((tokenPart + perRequest * MILLION) * ratioMicros, MILLION * RATIO_SCALE)
}

/** The cost of a canonical usage record. @category pricing */
export const costOfUsage = (model: Model, ratioMicros: bigint, usage: Usage): Nanos =>
  cost(model, ratioMicros, {
    promptTokens: usage.promptTokens,
    completionTokens: usage.completionTokens,
    cachedTokens: usage.cachedTokens
  })

/**
 * The worst-case cost of a call: the prompt bound at the full input price (no
 * cache discount) and the maximum output tokens.
 *
 * @category pricing
 */
export const worstCase = (model: Model, ratioMicros: bigint, promptTokenBound: number, maxOutputTokens: number): Nanos =>
  cost(model, ratioMicros, { promptTokens: promptTokenBound, completionTokens: maxOutputTokens })

/**
 * The output tokens a hold must cover: what the request asked for, capped by the
 * model's limit, or the model's limit when the request did not say.
 *
 * @category pricing
 */
export const maxOutputFor = (model: Model, requested: number | undefined): number =>
  requested !== undefined && requested > 0 ? Math.min(requested, model.outputTokenLimit) : model.outputTokenLimit
