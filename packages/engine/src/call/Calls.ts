/**
 * What every call kind (chat, embeddings, token counts) does around its
 * attempts, written once: authorise the model, admit the call under the rate
 * limits (`RateLimits`), hold its worst-case cost (a billed call), keep one
 * attempt log, and finish: a call that fails before its answer is settled
 * for nothing, with the status its client got; one refused before its hold
 * is logged (`Refusals`).
 *
 * Order of admission: authorise, the hold's amount (a call no balance could
 * cover is refused before it counts against a limit), the rate limits, then
 * the hold: a call refused by a limit never touches money.
 *
 * @since 0.1.0
 */
import {
  Admission,
  type Catalog,
  type Dialect,
  type Domain,
  GatewayError,
  Pricing,
  type RateLimiter
} from "@modelgate/core"
import { Clock, Effect, Exit } from "effect"
import * as Settlement from "../money/Settlement.ts"
import * as CallSpans from "../telemetry/CallSpans.ts"
import * as Telemetry from "../telemetry/Telemetry.ts"
import type * as Failover from "./Failover.ts"
import * as RateLimits from "./RateLimits.ts"
import type * as Refusals from "./Refusals.ts"

/**
 * The parts of a failed attempt its upstream answered, and billed, before the
 * attempt failed: an embeddings attempt sent in several requests (a model
 * that takes one text a request), whose later request failed. The call is
 * charged them however it ends (`AttemptLog.consumed`).
 *
 * @category models
 */
export interface AnsweredParts {
  /** The attempt's number in the call (1: its first). */
  readonly attempt: number
  /** How many of the attempt's texts were answered before it failed. */
  readonly answered: number
  /** How many texts the attempt was sent. */
  readonly of: number
  /** What the answered parts consumed: the tokens they reported, else the local count of their texts. */
  readonly metered: Settlement.Metered
}

/**
 * The attempts of one call as its usage record lists them, where its last
 * attempt went, and when its answer's first byte went out: filled in as the
 * call goes, read when it is settled.
 *
 * @category models
 */
export class AttemptLog {
  /** Every attempt, in order (`Failover.run` adds them). */
  readonly tried: Array<Failover.AttemptRecord> = []
  /** Milliseconds from the call's start to its answer's first byte; null before. */
  ttfbMs: number | null = null
  /** The client left while an attempt was under way, which goes on and settles the call itself (`ClientGone`). */
  carriedOn = false
  /** The parts of failed attempts their upstreams answered (and billed) before they failed, in order. */
  readonly answeredParts: Array<AnsweredParts> = []
  private channel: string | undefined
  private upstreamModel = ""
  private dialectOut: Domain.WireDialect = "openai"
  private notes: ReadonlyArray<string> | undefined

  /** An attempt goes to `channel`, as `upstreamModel`, in `dialectOut`. */
  to(channel: string, upstreamModel: string, dialectOut: Domain.WireDialect): void {
    this.channel = channel
    this.upstreamModel = upstreamModel
    this.dialectOut = dialectOut
    this.notes = undefined
  }

  /** What the translation for this attempt left out by decision (it goes on the usage record). */
  noted(notes: ReadonlyArray<string> | undefined): void {
    this.notes = notes
  }

  /**
   * What the parts of failed attempts their upstreams answered consumed
   * (`Settlement.nothing` when there are none): the call is charged it
   * however it ends, with what served it when something did.
   */
  consumed(): Settlement.Metered {
    let metered = Settlement.nothing
    for (const parts of this.answeredParts) metered = Settlement.plus(metered, parts.metered)
    return metered
  }

  /**
   * What the usage record and the caller are told of the answered parts
   * charged (`consumed`), or undefined when there are none: "2 of 3 texts
   * were answered (and billed by the upstream) before attempt 1 failed:
   * charged 8 tokens for them."
   */
  answeredNote(): string | undefined {
    const [first, ...rest] = this.answeredParts
    if (first === undefined) return undefined
    const consumed = this.consumed()
    const tokens = consumed.promptTokens + consumed.completionTokens
    const others = rest.map((parts) => `, ${parts.answered} of ${parts.of} before attempt ${parts.attempt} failed`)
    return `${first.answered} of ${first.of} texts were answered (and billed by the upstream) before attempt ${first.attempt} failed${
      others.join("")
    }: charged ${tokens} tokens for them${consumed.reported ? "" : " (counted here: the upstream reported none)"}.`
  }

  /** `error` as its caller is told it: with `answeredNote` when parts of failed attempts were charged. */
  explained(error: GatewayError.GatewayError): GatewayError.GatewayError {
    const note = this.answeredNote()
    return note === undefined
      ? error
      : GatewayError.mapText(error, (text, field) => field === "message" ? `${text} ${note}` : text)
  }

  /** Where the call went, for its settlement (undefined: no attempt was made). */
  leg(): Settlement.Leg | undefined {
    if (this.channel === undefined) return undefined
    const leg: Settlement.Leg = {
      channel: this.channel,
      upstreamModel: this.upstreamModel,
      dialectOut: this.dialectOut,
      attempts: this.tried.length,
      attemptLog: this.tried
    }
    const answered = this.answeredNote()
    const notes = answered === undefined ? this.notes : [...this.notes ?? [], answered]
    return notes === undefined ? leg : { ...leg, notes }
  }
}

/** What a call asks to be admitted for, once its body is read. @category models */
export interface Ask {
  readonly requestId: string
  /** When the call started (default: when its hold is taken). */
  readonly startedAt?: number | undefined
  readonly key: Domain.ApiKey
  readonly client: Dialect.ClientDialect
  /** The model asked for. */
  readonly model: string
  readonly use: Catalog.ModelUse
  readonly stream: boolean
  /** Answers asked for (`n`, `candidateCount`; default 1). */
  readonly choices?: number | undefined
  /** The tokens the rate limits admit the call on, for the catalog's model. */
  readonly tokens: (model: Domain.Model) => number
  /** The call's trace, when tracing is on: authorise, limits and hold are spans of it. */
  readonly trace?: Telemetry.CallTrace | undefined
  /** `gen_ai.operation.name` of the call (`CallSpans.operationName`), naming its trace. */
  readonly operation: string
}

/** A billed call's worst case, for the catalog's model (`Pricing.holdFor`). @category models */
export type Bounds = (model: Domain.Model) => Pricing.HoldBounds

/**
 * An admitted call: its route, its rate-limit permit, its hold's settlement
 * (the permit is released when it is settled), and its attempt log.
 *
 * @category models
 */
export interface Admitted {
  readonly route: Admission.Route
  readonly model: Domain.Model
  readonly permit: RateLimiter.Permit
  readonly settlement: Settlement.Settlement
  readonly log: AttemptLog
}

/**
 * Runs a billed call (chat, embeddings): `ask` admitted and its worst case
 * (`bounds`) held, then `serve`d. A failure of `serve` (or its interruption)
 * settles the call for nothing, with the status its client got and the
 * attempts made, except the parts of failed attempts their upstreams answered
 * (and billed), which it is charged and its caller told of
 * (`AttemptLog.consumed`, `explained`); `serve` settles a success itself (a
 * stream, when it ends), and charges those parts with it.
 * `admitting` is the call's record while it is admitted: run under
 * `Refusals.logged`, a call refused before its hold is logged.
 *
 * @category calls
 */
export const billed = Effect.fnUntraced(function*<A, R>(
  ask: Ask,
  admitting: Refusals.Admitting,
  bounds: Bounds,
  serve: (call: Admitted) => Effect.Effect<A, GatewayError.GatewayError, R>
) {
  const trace = ask.trace
  admitting.asked(ask.model, ask.stream)
  const route = yield* Telemetry.span(trace, "authorize")(Admission.authorize(ask.key, ask.model, ask.use))
  const model = route.model
  admitting.resolved(model.id)
  CallSpans.admitted(trace, ask.operation, model.id, route.group.name)
  const ratioMicros = route.group.ratioMicros
  const held = yield* Pricing.holdFor(model, ratioMicros, bounds(model))
  // Limits before money: a call refused here holds nothing.
  const permit = yield* Telemetry.span(trace, "limits")(
    RateLimits.admit(ask.key, route.group, model.id, ask.tokens(model))
  )
  const settlement = yield* Telemetry.span(trace, "hold", true)(RateLimits.settleUnder(
    permit,
    Settlement.open({
      requestId: ask.requestId,
      trace,
      startedAt: ask.startedAt ?? (yield* Clock.currentTimeMillis),
      key: ask.key,
      model,
      ratioMicros,
      dialectIn: ask.client.dialect,
      stream: ask.stream,
      ...(ask.choices === undefined ? {} : { choices: ask.choices })
    }, held)
  ))
  admitting.opened = true
  const log = new AttemptLog()
  return yield* serve({ route, model, permit, settlement, log }).pipe(
    Effect.mapError((error) => log.explained(error)),
    // Admission above ran uninterruptibly (see `Settlement.interruptible`); the attempts can be cut.
    Settlement.interruptible,
    Effect.onExit((exit) =>
      Exit.isSuccess(exit) || log.carriedOn
        ? Effect.void
        : settlement.finish(log.consumed(), failed(exit, ask.client, log), log.leg())
    )
  )
})

/**
 * How a call that failed before its answer ends on its usage record: the
 * status its client got (its dialect's rendering of the error; when
 * interrupted, 499 if it went away, 503 if the shutdown's grace period
 * ended), and its last attempt, cut with it, says so.
 */
const failed = (
  exit: Exit.Exit<unknown, GatewayError.GatewayError>,
  client: Dialect.ClientDialect,
  log: AttemptLog
): Settlement.Outcome => {
  const outcome = Settlement.failed(exit, client.renderError)
  const last = log.tried.at(-1)
  if (Exit.isFailure(exit) && !exit.cause.reasons.some((reason) => reason._tag === "Fail")) {
    if (last !== undefined && last.errorCode === null) {
      last.errorCode = outcome.errorCode
      last.errorMessage = outcome.errorMessage ?? null
    }
  }
  return outcome
}

/**
 * Runs a call that is never billed (a token count): `ask` authorised and
 * admitted under the rate limits (a request, and a concurrency slot while it
 * runs, but no tokens), then `serve`d; its permit is released however it
 * ends.
 *
 * @category calls
 */
export const unbilled = Effect.fnUntraced(function*<A, R>(
  ask: Ask,
  serve: (route: Admission.Route, log: AttemptLog) => Effect.Effect<A, GatewayError.GatewayError, R>
) {
  const route = yield* Telemetry.span(ask.trace, "authorize")(Admission.authorize(ask.key, ask.model, ask.use))
  CallSpans.admitted(ask.trace, ask.operation, route.model.id, route.group.name)
  const permit = yield* Telemetry.span(ask.trace, "limits")(
    RateLimits.admit(ask.key, route.group, route.model.id, ask.tokens(route.model))
  )
  return yield* serve(route, new AttemptLog()).pipe(Settlement.interruptible, Effect.ensuring(permit.release(0)))
})
