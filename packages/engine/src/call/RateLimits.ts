/**
 * Rate limits on the call path: which subjects a call counts against, how
 * many tokens it is admitted on, the `x-ratelimit-*` headers of its answer,
 * and the release of its permit in the same finaliser that settles its money.
 *
 * Order of admission: authenticate, authorise the model, then the rate limits,
 * then the balance hold. A call refused by a limit never touches money; a call
 * admitted by the limits but refused by the hold still counts as a request (it
 * was made) and gives its tokens and concurrency slot back at once.
 *
 * Token estimate (`tpm`): the prompt estimated at 4 bytes of request body per
 * token, plus `Tokens.MEDIA_TOKENS` for each media part (an image or file,
 * inline or by URL), plus the output the caller asked for (`max_tokens`,
 * `max_completion_tokens`, `generationConfig.maxOutputTokens`), capped at the
 * model's output limit, once per answer asked for (`n`, `candidateCount`);
 * nothing for the output when the caller sets no maximum. So it counts what
 * the balance hold counts (media parts, answers), and never more than the
 * hold's bound. The count is corrected to the upstream's actual usage when the
 * call ends. The worst-case bound itself (one token per byte, the model's
 * whole output limit) is deliberately not used here: it would refuse calls
 * that fit (a 40 KB prompt is about 10 000 tokens, not 40 000).
 *
 * Subjects: the key (its own limits, else its group's; the lower where both
 * are set) and the key's user; with `rate_limits.per_model` each is counted
 * per model. A call with no limit anywhere skips the limiter altogether.
 *
 * @since 0.1.0
 */
import { type Dialect, type Domain, type GatewayError, LimitSubjects, RateLimiter, Tokens } from "@modelgate/core"
import { Effect } from "effect"
import { Settings } from "../config/Settings.ts"
import type * as Settlement from "../money/Settlement.ts"

/** Bytes of request text counted as one token in the estimate. @category constants */
export const BYTES_PER_TOKEN = 4

/** What else of a call's body its estimate counts: media parts and answers, as the hold does. @category estimates */
export interface EstimateExtras {
  /** Media parts (images, files) the body carries or points to. Default 0. */
  readonly mediaParts?: number | undefined
  /** Answers asked for (`n`, `candidateCount`). Default 1. */
  readonly choices?: number | undefined
}

/**
 * The tokens a call is admitted on: `ceil(promptBytes / 4)`, plus
 * `Tokens.MEDIA_TOKENS` per media part, plus the requested output capped at
 * the model's output limit (0 when none was requested) once per answer asked
 * for.
 *
 * @category estimates
 */
export const estimateTokens = (
  promptBytes: number,
  requestedOutput: number | undefined,
  model: Domain.Model,
  extras: EstimateExtras = {}
): number => {
  const output = requestedOutput === undefined || !(requestedOutput > 0)
    ? 0
    : Math.min(Math.ceil(requestedOutput), model.outputTokenLimit)
  const choices = Math.max(1, Math.ceil(extras.choices ?? 1))
  return Math.ceil(promptBytes / BYTES_PER_TOKEN) + Math.max(0, extras.mediaParts ?? 0) * Tokens.MEDIA_TOKENS +
    output * choices
}

/** A permit for a call no limit applies to. @category constants */
export const unlimitedPermit: RateLimiter.Permit = { snapshot: RateLimiter.unlimited, release: () => Effect.void }

/**
 * Admits a call against the limits of its key, its user and its key's group,
 * or fails with `RateLimited` naming the limit hit. Nothing is counted on a
 * refusal.
 *
 * @category admission
 */
export const admit = (
  key: Domain.ApiKey,
  group: Domain.Group,
  model: string,
  estimatedTokens: number
): Effect.Effect<RateLimiter.Permit, GatewayError.RateLimited, Settings | RateLimiter.RateLimiter> =>
  // A plain chain (no generator): every call runs it.
  Effect.flatMap(Settings, (settings) => {
    const subjects = LimitSubjects.forCall({
      keyId: key.id,
      keyName: key.name,
      keyLimits: key.limits,
      userId: key.userId,
      userName: key.userName,
      userLimits: key.userLimits,
      groupLimits: group.limits,
      model: settings.rateLimitsPerModel ? model : undefined
    })
    if (subjects.length === 0) return Effect.succeed(unlimitedPermit)
    return Effect.flatMap(RateLimiter.RateLimiter, (limiter) => limiter.acquire(subjects, estimatedTokens))
  })

/**
 * The headers a successful answer carries about the caller's rate limits, in
 * the client's dialect (OpenAI's `x-ratelimit-*`, Anthropic's
 * `anthropic-ratelimit-*` with reset dates from `nowMs`, when the call was
 * admitted; none for a call no limit applies to).
 *
 * @category headers
 */
export const successHeaders = (
  client: Dialect.ClientDialect,
  permit: RateLimiter.Permit,
  nowMs: number
): Readonly<Record<string, string>> =>
  permit === unlimitedPermit ? noHeaders : client.rateLimitHeaders(permit.snapshot, nowMs)

const noHeaders: Readonly<Record<string, string>> = {}

/**
 * Opens a call's settlement under a permit: if the hold fails (or the request
 * is interrupted meanwhile) the permit is released with no tokens; otherwise
 * the returned settlement's `finish` also releases the permit with the call's
 * metered tokens (prompt plus completion), in the same finaliser that settles
 * the money, so a disconnect or a failure frees the concurrency slot too.
 *
 * @category settlement
 */
export const settleUnder = <E, R>(
  permit: RateLimiter.Permit,
  open: Effect.Effect<Settlement.Settlement, E, R>
): Effect.Effect<Settlement.Settlement, E, R> =>
  permit === unlimitedPermit ? open : open.pipe(
    Effect.onError(() => permit.release(0)),
    Effect.map((settlement): Settlement.Settlement => ({
      holdId: settlement.holdId,
      heldNanos: settlement.heldNanos,
      finish: (metered, outcome, leg) =>
        Effect.ensuring(
          settlement.finish(metered, outcome, leg),
          permit.release(metered.promptTokens + metered.completionTokens)
        )
    }))
  )
