/**
 * A billed call whose client leaves before the first byte of its answer
 * (issue 20): the upstream got the whole request, and bills it.
 *
 * - Not a stream (a chat call, embeddings: `outliving`): the attempt under
 *   way goes on without its client (in a fiber of its own, tracked by
 *   `Settlement.Settlements`, which interrupts it when it closes after a
 *   shutdown's grace period) and reads the upstream's answer within
 *   `max_answer_bytes` and the channel's timeouts; the call is settled for
 *   the answer's usage, as client-closed (499 `ClientClosed`). No other
 *   attempt is made for a client that is gone: an attempt that fails then
 *   costs nothing (but the parts of it its upstream answered, for an
 *   embeddings attempt sent in several requests).
 * - A stream: the upstream is cancelled at once (the request is interrupted,
 *   as before), and the call is charged its prompt (the call's estimate) when
 *   the upstream had accepted the request (its answer's headers came), as a
 *   stream cut after its first byte is charged what it carried; before the
 *   headers nothing is known to have reached an upstream, and nothing is
 *   charged (as a timeout before the headers).
 *
 * A shutdown that ends its grace period (503 `ShuttingDown`) cuts a call as
 * before: only the client's own leaving is carried on.
 *
 * @since 0.1.0
 */
import type { GatewayError } from "@modelgate/core"
import { type Cause, Effect, Exit, Fiber } from "effect"
import * as Settlement from "../money/Settlement.ts"
import type * as Exchange from "../wire/Exchange.ts"
import type { AttemptLog } from "./Calls.ts"
import type { ChatCall } from "./ChatCall.ts"
import type * as Failover from "./Failover.ts"

/** Calls (by their attempt log) whose client left while an attempt was under way: that attempt settles them. */
const left = new WeakSet<AttemptLog>()

/** Whether the call's client left before its answer (the attempt under way then settles it as client-closed). */
export const gone = (log: AttemptLog): boolean => left.has(log)

/** How a call whose client left ends on its usage record. @category outcomes */
export const closed: Settlement.Outcome = {
  status: 499,
  errorCode: "ClientClosed",
  errorMessage: Settlement.interruptionMessages.ClientClosed,
  ttfbMs: null
}

/**
 * The outcome of a non-stream answer read to its end: delivered (200), or,
 * when its client left first (`gone`), client-closed with the attempt saying
 * so.
 *
 * @category outcomes
 */
export const answeredOutcome = (
  call: ChatCall,
  record: Failover.AttemptRecord,
  ttfbMs: number | null
): Settlement.Outcome => {
  if (!gone(call.log)) return { status: 200, errorCode: null, ttfbMs }
  record.errorCode = closed.errorCode
  record.errorMessage = closed.errorMessage ?? null
  return closed
}

/** Whether a cause is the client leaving (the server's `ClientAbort` interruption). */
const clientLeft = (cause: Cause.Cause<unknown>): boolean =>
  !cause.reasons.some((reason) => reason._tag === "Fail") &&
  Settlement.interruption(cause).errorCode === "ClientClosed"

/**
 * Runs one attempt of `call` (`work`) so that its client leaving is settled
 * as the module says: a non-stream attempt outlives its client, a stream one
 * is cut and charged its prompt once its upstream accepted it.
 *
 * @category attempts
 */
export const attempt = <R>(
  call: ChatCall,
  record: Failover.AttemptRecord,
  work: Effect.Effect<Exchange.Answer, GatewayError.GatewayError, R>
): Effect.Effect<Exchange.Answer, GatewayError.GatewayError, R | Settlement.Settlements> =>
  call.dialect.stream ? streamAttempt(call, record, work) : outliving(call, record, work)

/** A stream's attempt: cut with its client, charged its prompt when the upstream had answered. */
const streamAttempt = <R>(
  call: ChatCall,
  record: Failover.AttemptRecord,
  work: Effect.Effect<Exchange.Answer, GatewayError.GatewayError, R>
) =>
  Effect.onExit(work, (exit) => {
    if (Exit.isSuccess(exit) || !clientLeft(exit.cause)) return Effect.void
    if (record.status === null || record.status >= 400) return Effect.void
    record.errorCode = closed.errorCode
    record.errorMessage = closed.errorMessage ?? null
    // Settled once: the call's own ending (`Calls.billed`) finds it done.
    return call.settlement.finish(
      { promptTokens: call.promptEstimate, completionTokens: 0, cachedTokens: 0, reported: false },
      closed,
      call.log.leg()
    )
  })

/**
 * A non-stream attempt: run apart from the request (in a fiber tracked by
 * `Settlement.Settlements`), so it goes on when the client leaves. When it
 * succeeds after its client left, `settle` settles the call from its answer
 * (a chat answer settles itself: `answeredOutcome`); when it fails then, the
 * call is settled for nothing but the parts of failed attempts their
 * upstreams answered (`AttemptLog.consumed`). Either way as client-closed, and the call's
 * own ending (`Calls.billed`) leaves it (`AttemptLog.carriedOn`). Used by
 * every non-stream call kind that is billed (chat, embeddings).
 *
 * @category attempts
 */
export const outliving = <A, R>(
  call: { readonly log: AttemptLog; readonly settlement: Settlement.Settlement },
  record: Failover.AttemptRecord,
  work: Effect.Effect<A, GatewayError.GatewayError, R>,
  settle?: (answer: A) => Effect.Effect<void>
): Effect.Effect<A, GatewayError.GatewayError, R | Settlement.Settlements> =>
  // A plain chain (no generator): every non-stream attempt runs it.
  Effect.flatMap(Settlement.Settlements, (settlements) => {
    const settled = Effect.onExit(work, (exit) => {
      if (!gone(call.log)) return Effect.void
      if (Exit.isSuccess(exit)) return settle === undefined ? Effect.void : settle(exit.value)
      const failure = exit.cause.reasons.find((reason) => reason._tag === "Fail")
      if (failure !== undefined && record.errorCode === null) {
        record.errorCode = failure.error._tag
        record.errorMessage = Settlement.messageOf(failure.error)
      }
      // Nothing for the attempt; parts of failed attempts their upstreams answered are charged all the same.
      return call.settlement.finish(call.log.consumed(), closed, call.log.leg())
    })
    return Effect.flatMap(settlements.fork(settled), (fiber) =>
      Fiber.join(fiber).pipe(
        Effect.onExit((exit) => {
          if (Exit.isSuccess(exit) || fiber.pollUnsafe() !== undefined) return Effect.void
          if (!clientLeft(exit.cause)) return Fiber.interrupt(fiber)
          // The client left: the attempt goes on, and settles the call (`Calls.billed` leaves it).
          left.add(call.log)
          call.log.carriedOn = true
          return Effect.void
        })
      ))
  })
