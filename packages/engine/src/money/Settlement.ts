/**
 * The money side of one call: the hold taken at admission and its settlement.
 *
 * The rule: a call is charged what its upstream billed, at the operator's
 * prices, in full, whatever the hold was; a call the upstream never answered
 * costs nothing. So:
 *
 * - a call the upstream answered (served, or cut after its first byte) is
 *   charged its usage as the upstream reported it, above its hold too: what
 *   the hold and the balance do not cover takes the balance below zero (the
 *   record's error code `BalanceOverdrawn` says so, unless the call failed
 *   otherwise, and a warning is logged), and a capped key's charge that takes
 *   it past a cap is shown as `SpendingCapOverrun`. The only bounds: a charge
 *   is at most `Money.MAX_NANOS` (10^9 USD), and no balance goes below
 *   `-MAX_NANOS`;
 * - a call whose upstream reported no usage (or figures that are not token
 *   counts, refused: `usageReported` false, error code `UsageRejected`) is
 *   counted locally, and the charge for those estimates is capped at the
 *   hold: the estimate is the gateway's, not the upstream's bill;
 * - a call that ended before any output (`nothing`: refused, failed before
 *   its first byte, the client gone before it) and a call whose attempts all
 *   failed before an upstream accepted the request (connection refused, DNS,
 *   TLS, a timeout before the headers: no attempt has a status) cost nothing,
 *   `per_request` included;
 * - an embeddings attempt sent in several requests that fails after some of
 *   them were answered: its upstream billed those, so the call is charged
 *   them (with `per_request`, as a call its upstream answered), whether it
 *   then fails or another attempt serves it (`plus`; `Calls.AttemptLog`).
 *
 * A settlement that failed (the database refused it) charged nothing: the
 * record's cost is 0 and its error code `SettlementFailed` (the hold stays
 * until the sweeper releases it, at the latest at the node's next start). A
 * settlement never charges a negative amount and always writes its record,
 * whatever figures it is given.
 *
 * A call is settled exactly once, whichever way it ends: after a non-stream
 * answer is read, when a stream ends, when the client disconnects (before the
 * answer the request fiber is interrupted; mid-stream the relay is destroyed
 * and reports it), or when the call fails before any output (then nothing is
 * charged). Settlement runs in finalisers (`Effect.onExit`, or the stream
 * relay's end report), never as a step after the stream, so an interruption
 * cannot skip it; only the part of a call after its admission can be
 * interrupted (`interruptible`).
 *
 * @since 0.1.0
 */
import { Accounts, Dialect, type Domain, GatewayError, Money, Pricing, Tokens, UsageLog } from "@modelgate/core"
import { Cause, Context, Effect, Exit, Fiber, Layer } from "effect"
import { ClientAbort } from "effect/http/HttpServerError"
import * as CallSpans from "../telemetry/CallSpans.ts"
import * as Metrics from "../telemetry/Metrics.ts"
import * as Telemetry from "../telemetry/Telemetry.ts"

/**
 * Makes the part of a call after its admission interruptible. The HTTP server
 * runs a request uninterruptibly unless told otherwise (Effect's `HttpRouter`
 * would make a route's handler interruptible; the gateway's app is served
 * without it), which keeps admission whole: a rate-limit permit or a balance
 * hold is never taken without the finaliser that gives it back. The attempts
 * that follow are run through this, so a client that goes away (or the end of
 * the shutdown's grace period) interrupts them: the upstream request is
 * aborted, and the call's `Effect.onExit` settles it (`499 ClientClosed`).
 *
 * @category settlement
 */
export const interruptible: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R> = Effect.interruptible

/** What a call consumed (core's `Dialect.Metered`). @category models */
export type Metered = Dialect.Metered

/** Nothing consumed: the call failed before any output. @category constants */
export const nothing: Metered = Dialect.nothingMetered

/**
 * Whether a metering consumed nothing: no token counted or reported, and no
 * usage refused (what `nothing` is, whichever object carries it). A call that
 * reached its upstream and was served is metered from its answer: reported
 * usage (`reported`, zeros included), or local estimates, whose prompt is
 * never 0.
 *
 * @category settlement
 */
export const consumedNothing = (metered: Metered): boolean =>
  !metered.reported && metered.usageRejected === undefined && metered.promptTokens === 0 &&
  metered.completionTokens === 0 && metered.cachedTokens === 0 && (metered.cacheWriteTokens ?? 0) === 0

/**
 * What two meterings of one call consumed together (the parts of an
 * embeddings attempt its upstream answered before the attempt failed, and the
 * answer that served the call: each upstream's bill): their figures added,
 * reported only when both were, a refusal kept. A metering that consumed
 * nothing adds nothing, and leaves the other as it is.
 *
 * @category settlement
 */
export const plus = (a: Metered, b: Metered): Metered => {
  if (consumedNothing(a)) return b
  if (consumedNothing(b)) return a
  const cacheWrite = a.cacheWriteTokens === undefined && b.cacheWriteTokens === undefined
    ? undefined
    : (a.cacheWriteTokens ?? 0) + (b.cacheWriteTokens ?? 0)
  const reasoning = a.reasoningTokens === undefined && b.reasoningTokens === undefined
    ? undefined
    : (a.reasoningTokens ?? 0) + (b.reasoningTokens ?? 0)
  const rejected = a.usageRejected ?? b.usageRejected
  return {
    promptTokens: a.promptTokens + b.promptTokens,
    completionTokens: a.completionTokens + b.completionTokens,
    cachedTokens: a.cachedTokens + b.cachedTokens,
    ...(cacheWrite === undefined ? {} : { cacheWriteTokens: cacheWrite }),
    ...(reasoning === undefined ? {} : { reasoningTokens: reasoning }),
    reported: a.reported && b.reported,
    ...(rejected === undefined ? {} : { usageRejected: rejected })
  }
}

/**
 * Whether the upstream answered the call: it was metered from an answer (see
 * `consumedNothing`), and the attempt log, where it has one, shows an
 * attempt that got a status (an HTTP answer). A call that ended before any
 * output, or whose every attempt failed before an upstream accepted the
 * request (connection refused, DNS, TLS, a timeout before the headers), was
 * not answered: it costs nothing, flat prices (`per_request`) included.
 *
 * @category settlement
 */
export const answered = (metered: Metered, leg: Leg | undefined): boolean => {
  if (consumedNothing(metered)) return false
  const attempts = leg?.attemptLog
  return attempts === undefined || attempts.length === 0 || attempts.some((attempt) => attempt.status !== null)
}

/**
 * What a call is charged (before the balance has its say): nothing when its
 * upstream never answered it (`answered`); else its cost at the operator's
 * prices (`Pricing.cost`), capped at the hold when the figures are the
 * gateway's own estimates (the upstream reported none, or figures that were
 * refused), and at `Money.MAX_NANOS` whatever they are.
 *
 * @category settlement
 */
export const chargeFor = (
  call: Pick<CallInfo, "model" | "ratioMicros">,
  heldNanos: bigint,
  metered: Metered,
  leg: Leg | undefined
): bigint => {
  if (!answered(metered, leg)) return 0n
  const cost = Pricing.cost(call.model, call.ratioMicros, metered)
  const charge = cost > heldNanos && !metered.reported ? heldNanos : cost
  return charge < 0n ? 0n : charge > Money.MAX_NANOS ? Money.MAX_NANOS : charge
}

/** A figure as a count: itself when it is one, else a fraction rounded up (at most 2^53 - 1), and 0 for anything else. */
const asCount = (tokens: number): number =>
  Tokens.isCount(tokens)
    ? tokens
    : Number.isFinite(tokens) && tokens > 0
    ? Math.min(Math.ceil(tokens), Number.MAX_SAFE_INTEGER)
    : 0

/**
 * A metering whose figures are token counts. The dialects refuse the
 * upstream's figures that are not, so this only guards against a dialect that
 * let some through: they are replaced by the counts `Pricing.cost` would
 * price them as (never negative), and the metering says they were refused.
 *
 * @category settlement
 */
export const checked = (metered: Metered): Metered => {
  const bad = Tokens.badCount({
    promptTokens: metered.promptTokens,
    completionTokens: metered.completionTokens,
    cachedTokens: metered.cachedTokens
  })
  if (bad === undefined) return metered
  return {
    promptTokens: asCount(metered.promptTokens),
    completionTokens: asCount(metered.completionTokens),
    cachedTokens: asCount(metered.cachedTokens),
    ...(metered.reasoningTokens === undefined ? {} : { reasoningTokens: asCount(metered.reasoningTokens) }),
    reported: false,
    usageRejected: metered.usageRejected ?? bad
  }
}

const capName = { quota: "lifetime spending cap", daily: "daily budget", monthly: "monthly budget" } as const

/** How the call ended, for the usage record. @category models */
export interface Outcome {
  readonly status: number
  readonly errorCode: string | null
  /** What the caller was told went wrong (null, or absent, when nothing did). */
  readonly errorMessage?: string | null | undefined
  readonly ttfbMs: number | null
}

/**
 * What the usage record says of a call that did not end normally (see
 * `interruption`).
 *
 * @category outcomes
 */
export const interruptionMessages = {
  ClientClosed: "The client closed the connection before the answer ended.",
  ShuttingDown: "The gateway shut down before the answer ended (the shutdown's grace period ran out).",
  InternalError: "The gateway failed while handling the call; the cause is in its log under the request id."
} as const

/**
 * An error's message as its caller was shown it (cut, and without channel names,
 * as every rendered error is: `GatewayError.forCaller`), for the usage record.
 *
 * @category outcomes
 */
export const messageOf = (error: GatewayError.GatewayError): string => GatewayError.forCaller(error).message

/**
 * How a call that did not end normally ended, for its usage record: the
 * client went away (`499 ClientClosed`: the HTTP server interrupts the request
 * with the `ClientAbort` annotation when the connection closes), the server
 * cut it (`503 ShuttingDown`: a call still running at the end of the shutdown
 * grace period is interrupted with the server's scope, without that
 * annotation), or a defect ended it (`500 InternalError`).
 *
 * @category outcomes
 */
export const interruption = (cause: Cause.Cause<unknown>): {
  readonly status: 499 | 503 | 500
  readonly errorCode: "ClientClosed" | "ShuttingDown" | "InternalError"
} => {
  let interrupted = false
  for (const reason of cause.reasons) {
    if (reason._tag !== "Interrupt") continue
    if (reason.annotations.has(ClientAbort.key)) return { status: 499, errorCode: "ClientClosed" }
    interrupted = true
  }
  return interrupted ? { status: 503, errorCode: "ShuttingDown" } : { status: 500, errorCode: "InternalError" }
}

/**
 * How a call that failed before any output ends on its usage record: the
 * status its client got (`render`: its dialect's rendering of the error) and
 * the error's tag, or the interruption's (see `interruption`).
 *
 * @category outcomes
 */
export const failed = (
  exit: Exit.Exit<unknown, GatewayError.GatewayError>,
  render: (error: GatewayError.GatewayError) => { readonly status: number }
): Outcome => {
  if (Exit.isSuccess(exit)) return { status: 200, errorCode: null, ttfbMs: null }
  const failure = exit.cause.reasons.find((reason) => reason._tag === "Fail")
  if (failure === undefined) {
    const ended = interruption(exit.cause)
    return { ...ended, errorMessage: interruptionMessages[ended.errorCode], ttfbMs: null }
  }
  return {
    status: render(failure.error).status,
    errorCode: failure.error._tag,
    errorMessage: messageOf(failure.error),
    ttfbMs: null
  }
}

/** Who is calling what, through which channel. @category models */
export interface CallInfo {
  readonly requestId: string
  readonly startedAt: number
  readonly key: Domain.ApiKey
  readonly model: Domain.Model
  readonly ratioMicros: bigint
  readonly dialectIn: Domain.Dialect
  readonly stream: boolean
  /** How many answers the call asks for (`n`, `candidateCount`; default 1), named in a refused hold's advice. */
  readonly choices?: number | undefined
  /** The call's trace, when tracing is on: the settlement is a span of it, and its record's figures go on the call's span. */
  readonly trace?: Telemetry.CallTrace | undefined
}

/** Where the call went. @category models */
export interface Leg {
  readonly channel: string
  readonly upstreamModel: string
  readonly dialectOut: Domain.WireDialect
  readonly attempts: number
  /** Each upstream attempt, in order (calls that make exactly one attempt may leave it out). */
  readonly attemptLog?: ReadonlyArray<UsageLog.Attempt> | undefined
  /** What the translation left out of the client's request by decision (`Canonical.ChatRequest.notes`). */
  readonly notes?: ReadonlyArray<string> | undefined
}

/**
 * An open hold and the means to settle it once.
 *
 * @category models
 */
export interface Settlement {
  readonly holdId: string
  readonly heldNanos: bigint
  /** Settles the call (charge for `metered`, release the rest, write the usage record). Later calls do nothing. */
  readonly finish: (metered: Metered, outcome: Outcome, leg: Leg | undefined) => Effect.Effect<void>
}

/**
 * Holds the worst-case cost of a call and returns its settlement.
 *
 * @category settlement
 */
export const open = (
  call: CallInfo,
  heldNanos: bigint
): Effect.Effect<
  Settlement,
  Effect.Error<ReturnType<Accounts.Accounts["Service"]["hold"]>>,
  Accounts.Accounts | UsageLog.UsageLog
> =>
  // A plain chain (no generator): the services read from the context in one step, then the hold.
  Effect.contextWith((context: Context.Context<Accounts.Accounts | UsageLog.UsageLog>) => {
    const accounts = Context.get(context, Accounts.Accounts)
    const hold = accounts.hold({
      userId: call.key.userId,
      keyId: call.key.id,
      amountNanos: heldNanos,
      requestId: call.requestId,
      capped: call.key.quotaNanos !== null || call.key.dailyBudgetNanos !== null ||
        call.key.monthlyBudgetNanos !== null,
      choices: call.choices
    })
    return Effect.map(
      hold,
      (holdId) =>
        settlementOf(
          call,
          heldNanos,
          holdId,
          accounts,
          Context.get(context, UsageLog.UsageLog),
          Context.get(context, Metrics.Current)
        )
    )
  })

/** The settlement of a hold taken (`open`). */
const settlementOf = (
  call: CallInfo,
  heldNanos: bigint,
  holdId: string,
  accounts: Accounts.Accounts["Service"],
  usage: UsageLog.UsageLog["Service"],
  metrics: Metrics.CallMetrics | undefined
): Settlement => {
  let done = false
  // The call's span waits for its settlement, which may run after the answer went out (a stream's).
  call.trace?.hold()
  const finish = (given: Metered, outcome: Outcome, leg: Leg | undefined): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (done) return Effect.void
      done = true
      const metered = checked(given)
      const charge = chargeFor(call, heldNanos, metered, leg)
      // Traced: a span made by hand, as a stream's settlement runs outside the call's fiber.
      const span = Telemetry.child(call.trace, "settle")
      // What the log is told of an unusual settlement (run only when there is something to say).
      const warnings = (
        settled: Accounts.Settled | undefined,
        charged: bigint,
        overdrawn: boolean,
        overCap: Accounts.Settled["overCap"]
      ) =>
        Effect.gen(function*() {
          if (overdrawn || overCap !== undefined) {
            yield* Effect.logWarning(
              overdrawn
                ? "the call cost more than its hold and the balance had: charged in full, the balance is below zero"
                : "the call cost more than its hold: charged in full, the key is past a spending cap"
            ).pipe(
              Effect.annotateLogs({
                requestId: call.requestId,
                userId: call.key.userId,
                keyId: call.key.id,
                costNanos: String(charged),
                heldNanos: String(heldNanos),
                ...(overdrawn ? { overdrawnNanos: String(settled!.overdrawnNanos) } : {}),
                ...(overCap === undefined ? {} : { cap: overCap.cap, capSpentNanos: String(overCap.spentNanos) })
              })
            )
          }
          if (metered.usageRejected !== undefined) {
            yield* Effect.logWarning(
              "the upstream reported usage that is not token counts; it was refused and the call counted locally"
            ).pipe(
              Effect.annotateLogs({
                requestId: call.requestId,
                channel: leg?.channel ?? "",
                refused: metered.usageRejected,
                promptTokens: metered.promptTokens,
                completionTokens: metered.completionTokens
              })
            )
          } else if (!metered.reported && metered.promptTokens + metered.completionTokens > 0) {
            // The design promise: tokens counted here rather than reported by the upstream are said so in the log.
            yield* Effect.logInfo("the upstream reported no usage; tokens were counted locally").pipe(
              Effect.annotateLogs({
                requestId: call.requestId,
                channel: leg?.channel ?? "",
                promptTokens: metered.promptTokens,
                completionTokens: metered.completionTokens
              })
            )
          }
        })
      // A plain chain (no generator): the settle, the clock, the record, and the log lines only when they are due.
      // The whole charge is taken, above the hold too; whatever goes wrong there, the record is still written.
      const settling = Effect.flatMap(
        accounts.settle(holdId, charge).pipe(
          Effect.catchCause((cause) =>
            Effect.as(
              Effect.logError("settlement failed; the sweeper will release the hold", Cause.pretty(cause)),
              undefined
            )
          )
        ),
        (settled) =>
          Effect.clockWith((clock) => {
            const charged = settled?.chargedNanos ?? 0n
            const overdrawn = settled !== undefined && settled.overdrawnNanos > 0n
            const overCap = settled?.overCap
            const errorCode = outcome.errorCode ??
              (settled === undefined
                ? "SettlementFailed"
                : overdrawn
                ? "BalanceOverdrawn"
                : overCap !== undefined
                ? "SpendingCapOverrun"
                : metered.usageRejected !== undefined
                ? "UsageRejected"
                : null)
            const errorMessage = outcome.errorCode !== null
              ? outcome.errorMessage ?? null
              : settled === undefined
              ? "The charge could not be written (the database refused it): nothing was charged, and the hold is released by the sweeper."
              : overdrawn
              ? `The call cost ${Money.formatUsd(charged)} USD, more than it held (${
                Money.formatUsd(heldNanos)
              } USD) and than the balance had: it was charged in full, and the balance went ${
                Money.formatUsd(settled.overdrawnNanos)
              } USD below zero. Calls are refused until it is topped up.`
              : overCap !== undefined
              ? `The call cost ${Money.formatUsd(charged)} USD, more than it held (${
                Money.formatUsd(heldNanos)
              } USD): it was charged in full, and the key's ${capName[overCap.cap]} of ${
                Money.formatUsd(overCap.limitNanos)
              } USD is exceeded (${
                Money.formatUsd(overCap.spentNanos)
              } USD spent). The key's calls are refused until the cap is raised${
                overCap.cap === "quota" ? "" : " or its period ends"
              }.`
              : metered.usageRejected !== undefined
              ? `The upstream reported usage that is not token counts (${metered.usageRejected}); it was refused and the call counted locally.`
              : null
            const now = clock.currentTimeMillisUnsafe()
            const record: UsageLog.UsageRecord = {
              createdAt: call.startedAt,
              requestId: call.requestId,
              userId: call.key.userId,
              keyId: call.key.id,
              model: call.model.id,
              upstreamModel: leg?.upstreamModel ?? call.model.id,
              channel: leg?.channel ?? "",
              dialectIn: call.dialectIn,
              dialectOut: leg?.dialectOut ?? call.dialectIn,
              stream: call.stream,
              promptTokens: metered.promptTokens,
              completionTokens: metered.completionTokens,
              cachedTokens: metered.cachedTokens,
              cacheWriteTokens: metered.cacheWriteTokens ?? 0,
              reasoningTokens: metered.reasoningTokens ?? 0,
              usageReported: metered.reported,
              costNanos: charged,
              latencyMs: now - call.startedAt,
              ttfbMs: outcome.ttfbMs,
              status: outcome.status,
              errorCode,
              errorMessage,
              attempts: leg?.attempts ?? 0,
              attemptLog: leg?.attemptLog ?? [],
              note: leg?.notes === undefined || leg.notes.length === 0 ? null : leg.notes.join("; ")
            }
            return Effect.flatMap(usage.record(record), () => {
              metrics?.callEnded(record)
              CallSpans.settled(call.trace, record)
              const logged = overdrawn || overCap !== undefined || metered.usageRejected !== undefined ||
                (!metered.reported && metered.promptTokens + metered.completionTokens > 0)
              return logged ? warnings(settled, charged, overdrawn, overCap) : Effect.void
            })
          })
      )
      return (span === undefined
        ? settling
        : Effect.onExit(settling, (exit) =>
          Effect.sync(() => {
            span.end(call.trace!.now(), exit)
            call.trace!.release()
          }))).pipe(
          Effect.uninterruptible
        )
    })
  const settlement: Settlement = { holdId, heldNanos, finish }
  return settlement
}

/**
 * Where settlements that run after their request's fiber go: a stream's is
 * started from the relay's end report, outside any fiber. They are tracked,
 * and the layer waits for every one still running when it closes, so a
 * shutdown settles the streams it cut before the balance leases are returned
 * and the batch writer's last flush (this layer is built after them, so it
 * closes first). Work that settles a call whose client left (`fork`: a
 * non-stream attempt reading its answer, `ClientGone`) is interrupted when
 * the layer closes, after the server's grace period, and settles as it ends.
 *
 * @category services
 */
export class Settlements extends Context.Service<Settlements, {
  /** Runs a settlement to its end, even if the request that started it is gone. */
  readonly run: (settle: Effect.Effect<void>) => void
  /**
   * Runs a settlement to its end with a request's services (`context`, as the request's fiber had them),
   * even if that request is gone. Its own fiber gets the context as it is: providing it to a fiber of the
   * layer's would copy the whole service map on every call.
   */
  readonly runWith: <R>(context: Context.Context<R>, settle: Effect.Effect<void, never, R>) => void
  /**
   * Runs work that settles a call to its end, even if the request that started it is gone (`ClientGone`): its fiber.
   * The fiber is forked from the request's (detached, started at once), so it runs with the request's services as
   * they are: providing them to a fiber of the layer's would copy the whole context on every call.
   */
  readonly fork: <A, E, R>(work: Effect.Effect<A, E, R>) => Effect.Effect<Fiber.Fiber<A, E>, never, R>
}>()("modelgate/engine/Settlements") {
  /** @category layers */
  static readonly layer: Layer.Layer<Settlements> = Layer.effect(
    Settlements,
    Effect.gen(function*() {
      const running = new Set<Fiber.Fiber<unknown, unknown>>()
      const working = new Set<Fiber.Fiber<unknown, unknown>>()
      const fork = Effect.runForkWith(yield* Effect.context<never>())
      yield* Effect.addFinalizer(() =>
        Effect.andThen(
          Fiber.interruptAll([...working]),
          Effect.forEach([...running], Fiber.await, { discard: true })
        )
      )
      const track = <A, E>(set: Set<Fiber.Fiber<unknown, unknown>>, fiber: Fiber.Fiber<A, E>): Fiber.Fiber<A, E> => {
        set.add(fiber as Fiber.Fiber<unknown, unknown>)
        fiber.addObserver(() => set.delete(fiber as Fiber.Fiber<unknown, unknown>))
        return fiber
      }
      const trackWorking = <A, E>(fiber: Fiber.Fiber<A, E>) => track(working, fiber)
      return Settlements.of({
        run: (settle) => void track(running, fork(settle)),
        runWith: (context, settle) => void track(running, Effect.runForkWith(context)(settle)),
        fork: (work) => Effect.map(Effect.forkDetach(work, { startImmediately: true }), trackWorking)
      })
    })
  )
}
