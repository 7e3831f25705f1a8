/**
 * Logging for something that fails over and over while a dependency is down
 * (the database, mostly): one error line when the outage starts, with the
 * cause in one line (the server's or the socket's reason, no stack trace),
 * then a summary at most every `summaryEveryMs` (how long, how many failures),
 * and one line when it works again. A busy node in a database outage so writes
 * a handful of lines, not one per call or per retry.
 *
 * @since 0.1.0
 */
import { Cause, Clock, Effect } from "effect"

/**
 * The log of one kind of operation (`"balance leases"`, `"writing usage
 * records"`).
 *
 * @category models
 */
export interface OutageLog {
  /** Reports a failure: logged when it starts an outage, counted (and summarised now and then) otherwise. */
  readonly failed: (cause: Cause.Cause<unknown>) => Effect.Effect<void>
  /** Reports a success: ends an outage with one line. */
  readonly succeeded: Effect.Effect<void>
  /** Whether the last report was a failure. */
  readonly failing: Effect.Effect<boolean>
}

/** How often a continuing outage is summarised by default. @category constants */
export const SUMMARY_EVERY_MS = 30_000

/**
 * The messages of an error and of the causes and reasons it wraps, joined:
 * `Failed to execute statement: Connection closed`, `PgConnection: Failed to
 * connect: sorry, too many clients already`.
 *
 * @category formatting
 */
export const reasonOf = (cause: Cause.Cause<unknown>): string => {
  const messages: Array<string> = []
  let current: unknown = Cause.squash(cause)
  for (let depth = 0; depth < 6 && current !== undefined && current !== null; depth++) {
    if (typeof current === "object") {
      const message = (current as { readonly message?: unknown }).message
      if (typeof message === "string" && message.length > 0 && !messages.includes(message)) messages.push(message)
      const next = current as { readonly reason?: unknown; readonly cause?: unknown }
      current = next.reason !== undefined && typeof next.reason === "object" ? next.reason : next.cause
    } else {
      messages.push(String(current))
      break
    }
  }
  return messages.length === 0 ? Cause.pretty(cause).split("\n")[0] ?? "unknown cause" : messages.join(": ")
}

/**
 * An outage log for `what` (lower case, as it reads inside a sentence).
 *
 * @category constructors
 */
export const make = (what: string, options: { readonly summaryEveryMs?: number } = {}): OutageLog => {
  const every = options.summaryEveryMs ?? SUMMARY_EVERY_MS
  let since: number | null = null
  let failures = 0
  let lastSummaryAt = 0
  let lastReason = ""
  const seconds = (ms: number) => `${Math.max(0, Math.round(ms / 1000))} s`
  return {
    failed: (cause) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        failures++
        lastReason = reasonOf(cause)
        if (since === null) {
          since = now
          lastSummaryAt = now
          return Effect.logError(
            `${what} failed: ${lastReason}. Until it works again, failures are counted and summarised every ${
              seconds(every)
            }.`
          )
        }
        if (now - lastSummaryAt < every) return Effect.void
        lastSummaryAt = now
        return Effect.logWarning(
          `${what} still failing after ${seconds(now - since)}: ${failures} failures so far (the last: ${lastReason})`
        )
      }),
    succeeded: Effect.suspend(() => {
      if (since === null) return Effect.void
      const started = since
      const count = failures
      since = null
      failures = 0
      return Effect.flatMap(
        Clock.currentTimeMillis,
        (now) =>
          Effect.logInfo(
            `${what} works again after ${seconds(now - started)} (${count} failure${count === 1 ? "" : "s"})`
          )
      )
    }),
    failing: Effect.sync(() => since !== null)
  }
}
