/**
 * The gateway's own metrics, kept as plain numbers: what a host exports (the
 * Node server at `/metrics`, in Prometheus' text format) reads them when it is
 * scraped, so the call path pays a few map lookups and additions per call and
 * nothing else (no label hashing, no registry, no Effect metric per call).
 *
 * One place per event: every call that ends (settled or refused) is counted
 * from its usage record (`callEnded`), and a rate-limit refusal once more by
 * the kind of subject whose limit refused it (`refusedByLimit`). The engine
 * finds the metrics in its context as `Current`; with none there (the web
 * handler without `metrics`, tests) nothing is counted.
 *
 * No label carries a user, a key or a request: labels are the client
 * dialect, the model (only models of the catalog: a refused call's unknown
 * model name counts as `unknown`), the channel (operator-named), the HTTP
 * status and bounded outcome names. Each metric also stops adding label sets
 * past `PlainMetrics.MAX_SERIES`, folding the rest into `other`, so no input
 * can make the exposition grow without bound.
 *
 * @since 0.1.0
 */
import { PlainMetrics, type UsageLog } from "@modelgate/core"
import { Context } from "effect"

/** Upper bounds (seconds) of the request-duration histogram's buckets. @category constants */
export const DURATION_BUCKETS: ReadonlyArray<number> = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300]

/** Upper bounds (seconds) of the time-to-first-byte histogram's buckets. @category constants */
export const TTFB_BUCKETS: ReadonlyArray<number> = [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30]

/** What counts as the outcome of an upstream attempt, from its error code. */
const attemptOutcome = (errorCode: string | null): string => {
  switch (errorCode) {
    case null:
      return "ok"
    case "UpstreamUnavailable":
      return "unavailable"
    case "UpstreamTimeout":
      return "timeout"
    case "UpstreamRateLimited":
      return "rate_limited"
    case "UpstreamRejected":
      return "rejected"
    case "ClientClosed":
      return "client_closed"
    case "ShuttingDown":
      return "shutting_down"
    default:
      return "error"
  }
}

/**
 * The kind of subject whose rate limit refused a call, from the refusal's
 * subject id (`key:key_1`, `user:usr_1:model:m`): `key`, `user`, or
 * `unavailable` when the limit store could not be asked.
 *
 * @category labels
 */
export const subjectKind = (subject: string | undefined): string => {
  if (subject === undefined) return "unavailable"
  const colon = subject.indexOf(":")
  const kind = colon === -1 ? subject : subject.slice(0, colon)
  return kind === "key" || kind === "user" || kind === "group" ? kind : "other"
}

/**
 * The metrics of the calls a gateway process served.
 *
 * @category models
 */
export class CallMetrics {
  readonly requests = new PlainMetrics.Counter(
    "modelgate_requests_total",
    "Calls that ended, by client dialect, model, channel (none: refused before any upstream attempt) and HTTP status.",
    ["dialect", "model", "channel", "status"]
  )
  readonly attempts = new PlainMetrics.Counter(
    "modelgate_upstream_attempts_total",
    "Upstream attempts, by channel and outcome (ok, unavailable, timeout, rate_limited, rejected, client_closed, shutting_down, error).",
    ["channel", "outcome"]
  )
  readonly tokens = new PlainMetrics.Counter(
    "modelgate_tokens_total",
    "Tokens of ended calls, by model and kind (prompt, completion, cached: of prompt, reasoning: of completion).",
    ["model", "kind"]
  )
  /** Nano-dollars; exported as USD. */
  readonly chargedNanos = new PlainMetrics.Counter(
    "modelgate_charged_usd_total",
    "USD charged to balances, by model.",
    ["model"]
  )
  readonly rateLimited = new PlainMetrics.Counter(
    "modelgate_rate_limited_total",
    "Calls refused by a rate limit, by the kind of subject whose limit refused them (key, user; unavailable: the limit store could not be asked).",
    ["subject"]
  )
  readonly duration = new PlainMetrics.Histogram(
    "modelgate_request_duration_seconds",
    "From a call's start to its end (a stream's last byte), of calls that reached an upstream, by model and whether it streamed.",
    ["model", "stream"],
    DURATION_BUCKETS
  )
  readonly ttfb = new PlainMetrics.Histogram(
    "modelgate_time_to_first_byte_seconds",
    "From a call's start to the first byte of its answer, of calls that got one, by model and whether it streamed.",
    ["model", "stream"],
    TTFB_BUCKETS
  )

  /**
   * Counts a call that ended, from its usage record. `modelKnown`: the
   * record's model is one of the catalog's (false for a call refused before
   * its model was resolved, whose model name is the caller's and is counted
   * as `unknown`).
   */
  callEnded(record: UsageLog.UsageRecord, modelKnown = true): void {
    const model = modelKnown ? record.model : "unknown"
    this.requests.add([record.dialectIn, model, record.channel === "" ? "none" : record.channel, String(record.status)])
    for (const attempt of record.attemptLog) this.attempts.add([attempt.channel, attemptOutcome(attempt.errorCode)])
    if (record.promptTokens > 0) this.tokens.add([model, "prompt"], record.promptTokens)
    if (record.completionTokens > 0) this.tokens.add([model, "completion"], record.completionTokens)
    if (record.cachedTokens > 0) this.tokens.add([model, "cached"], record.cachedTokens)
    const reasoning = record.reasoningTokens ?? 0
    if (reasoning > 0) this.tokens.add([model, "reasoning"], reasoning)
    if (record.costNanos > 0n) this.chargedNanos.add([model], Number(record.costNanos))
    if (record.attempts === 0) return
    const stream = record.stream ? "true" : "false"
    this.duration.observe([model, stream], record.latencyMs / 1000)
    if (record.ttfbMs !== null) this.ttfb.observe([model, stream], record.ttfbMs / 1000)
  }

  /** Counts a call refused by a rate limit (`subject`: the refusal's subject id). */
  refusedByLimit(subject: string | undefined): void {
    this.rateLimited.add([subjectKind(subject)])
  }
}

/**
 * Where the engine finds the process's metrics: none by default (nothing is
 * counted); a host that exports metrics provides one `CallMetrics`.
 *
 * @category services
 */
export const Current = Context.Reference<CallMetrics | undefined>("modelgate/engine/Metrics/Current", {
  defaultValue: () => undefined
})
