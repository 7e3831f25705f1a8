/**
 * Calls refused before their hold was taken still go into the usage log, so
 * the request log shows every call made with a valid key and why it went
 * nowhere: a body that is not a request, a model the key may not use (or one
 * that does not exist, or has no price), a rate limit, a balance that cannot
 * hold the call's worst case (whose message says how much it needed), a
 * database that cannot be reached. Such a record has no channel, no tokens,
 * no cost and no attempts, and the status and message its caller got.
 *
 * A call kind runs its admission under `logged`, telling the `Admitting`
 * record what it learns (the model asked for, whether the model is the
 * catalog's, whether it streams) and when its settlement opened: from then on
 * the settlement writes the record (`Settlement.finish`), whatever happens.
 *
 * @since 0.1.0
 */
import { type Dialect, type Domain, GatewayError, ModelName, UsageLog } from "@modelgate/core"
import { Clock, Effect } from "effect"
import { messageOf } from "../money/Settlement.ts"
import * as CallSpans from "../telemetry/CallSpans.ts"
import * as Metrics from "../telemetry/Metrics.ts"
import type * as Telemetry from "../telemetry/Telemetry.ts"

/**
 * What is known of a call while it is admitted; the call's admission fills it
 * in as it goes.
 *
 * @category models
 */
export class Admitting {
  /** The model as asked for, then as the catalog names it. */
  model: string
  stream: boolean
  /** `model` is one of the catalog's (not a name the caller made up). */
  modelKnown = false
  /** The call's settlement is open: it writes the usage record from now on. */
  opened = false
  constructor(model: string | undefined, stream: boolean | undefined) {
    this.model = model ?? ""
    this.stream = stream ?? false
  }

  /** The request asked for `model`, and to stream or not. */
  asked(model: string, stream: boolean): void {
    this.model = model
    this.stream = stream
  }

  /** The catalog resolved the model (an alias, a `models/` prefix) to `id`. */
  resolved(id: string): void {
    this.model = id
    this.modelKnown = true
  }
}

/** Who made a call, and how to render its refusal. @category models */
export interface Caller {
  readonly requestId: string
  /** When the call started (default: when its refusal is recorded). */
  readonly startedAt?: number | undefined
  readonly key: Domain.ApiKey
  readonly client: Dialect.ClientDialect
  /** The call's trace, when tracing is on: a refusal's figures go on the call's span. */
  readonly trace?: Telemetry.CallTrace | undefined
}

/**
 * The usage record of a call refused before its settlement opened.
 *
 * @category records
 */
export const record = (
  caller: Caller,
  admitting: Admitting,
  error: GatewayError.GatewayError,
  now: number
): UsageLog.UsageRecord => {
  const startedAt = caller.startedAt ?? now
  // A name the catalog does not know is the caller's: kept as an error quotes it (a 200 KB name is cut).
  // Its control characters (refused at the door) are written as escapes, never as they are.
  const model = admitting.modelKnown ? admitting.model : GatewayError.echo(ModelName.printable(admitting.model))
  return {
    createdAt: startedAt,
    requestId: caller.requestId,
    userId: caller.key.userId,
    keyId: caller.key.id,
    model,
    upstreamModel: model,
    channel: "",
    dialectIn: caller.client.dialect,
    dialectOut: caller.client.dialect,
    stream: admitting.stream,
    promptTokens: 0,
    completionTokens: 0,
    cachedTokens: 0,
    reasoningTokens: 0,
    usageReported: false,
    costNanos: 0n,
    latencyMs: Math.max(0, now - startedAt),
    ttfbMs: null,
    status: caller.client.renderError(error).status,
    errorCode: error._tag,
    errorMessage: messageOf(error),
    attempts: 0,
    attemptLog: []
  }
}

/**
 * Runs a call whose admission fills in `admitting`, and records it in the
 * usage log (and the metrics) when it is refused before its settlement opened.
 *
 * @category records
 */
export const logged = <A, R>(
  caller: Caller,
  admitting: Admitting,
  call: Effect.Effect<A, GatewayError.GatewayError, R>
): Effect.Effect<A, GatewayError.GatewayError, R | UsageLog.UsageLog> =>
  Effect.tapError(call, (error) =>
    admitting.opened
      ? Effect.void
      : Effect.gen(function*() {
        // Refused by what the catalog says of a model it knows (not the key's, not in its group, no price).
        if (error._tag === "ModelNotAllowed" || error._tag === "ModelNotInGroup" || error._tag === "ModelUnpriced") {
          admitting.resolved(error.model)
        }
        const refused = record(caller, admitting, error, yield* Clock.currentTimeMillis)
        yield* (yield* UsageLog.UsageLog).record(refused)
        CallSpans.settled(caller.trace, refused)
        const metrics = yield* Metrics.Current
        if (metrics === undefined) return
        metrics.callEnded(refused, admitting.modelKnown)
        if (error._tag === "RateLimited") metrics.refusedByLimit(error.subject)
      }))
