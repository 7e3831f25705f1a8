/**
 * `GET /metrics`: the gateway's metrics in Prometheus' text exposition format,
 * for scrapers that send `Authorization: Bearer <metrics token>`
 * (`metrics: { token }` in the configuration, or `MODELGATE_METRICS_TOKEN`).
 * Without a token configured the route does not exist (404).
 *
 * The numbers are counted where they happen, as plain numbers (the engine's
 * `CallMetrics`, the usage writer's flush times); this module only reads them
 * when scraped, through prom-client's registry (its exposition format, and
 * Node's process metrics: CPU, memory, heap, event-loop lag, garbage
 * collection, handles). Read at the scrape too: each channel's keys by health
 * state (open breakers among them) and the usage writer's queue. With tracing
 * on, the spans exported and dropped (`modelgate_trace_spans_*_total`).
 *
 * No label carries a user, a key or a request id.
 *
 * @since 0.1.0
 */
import { Catalog, ChannelHealth, type PlainMetrics } from "@modelgate/core"
import * as Metrics from "@modelgate/engine/telemetry/Metrics"
import { CallMetrics } from "@modelgate/engine/telemetry/Metrics"
import * as Telemetry from "@modelgate/engine/telemetry/Telemetry"
import { UsageWriter } from "@modelgate/store/UsageWriter"
import { Context, Effect, Layer, Redacted } from "effect"
import { type HttpServerRequest, HttpServerResponse } from "effect/http"
import { timingSafeEqual } from "node:crypto"
import type * as PromClient from "prom-client"

/**
 * A metric read from plain numbers when scraped. prom-client's registry
 * formats any metric whose `get()` answers its values (the contract of its own
 * metric classes); these answer with what the counters and histograms hold at
 * that moment, so nothing is copied between scrapes.
 */
interface Collected {
  readonly name: string
  readonly help: string
  readonly type: "counter" | "histogram"
  readonly aggregator: "sum"
  readonly get: () => Promise<{
    readonly name: string
    readonly help: string
    readonly type: "counter" | "histogram"
    readonly aggregator: "sum"
    readonly values: ReadonlyArray<
      { readonly value: number; readonly labels: Record<string, string | number>; readonly metricName?: string }
    >
  }>
}

const labelsOf = (names: ReadonlyArray<string>, values: ReadonlyArray<string>): Record<string, string> =>
  Object.fromEntries(names.map((name, i) => [name, values[i] ?? ""]))

/** A plain counter as a prom-client metric; `scale` turns its unit into the exported one (nano-dollars to USD). */
const counter = (source: PlainMetrics.Counter, scale = 1): Collected => {
  const describe = { name: source.name, help: source.help, type: "counter" as const, aggregator: "sum" as const }
  return {
    ...describe,
    get: async () => ({
      ...describe,
      values: source.series.map((series) => ({
        value: series.value / scale,
        labels: labelsOf(source.labelNames, series.labels)
      }))
    })
  }
}

/** A plain histogram as a prom-client histogram: cumulative buckets up to `+Inf`, then the sum and the count. */
const histogram = (source: PlainMetrics.Histogram): Collected => {
  const describe = { name: source.name, help: source.help, type: "histogram" as const, aggregator: "sum" as const }
  return {
    ...describe,
    get: async () => ({
      ...describe,
      values: source.series.flatMap((series) => {
        const labels = labelsOf(source.labelNames, series.labels)
        let cumulative = 0
        const buckets = source.bounds.map((bound, i) => {
          cumulative += series.buckets[i]!
          return { value: cumulative, labels: { ...labels, le: bound }, metricName: `${source.name}_bucket` }
        })
        return [
          ...buckets,
          { value: series.count, labels: { ...labels, le: "+Inf" }, metricName: `${source.name}_bucket` },
          { value: series.sum, labels, metricName: `${source.name}_sum` },
          { value: series.count, labels, metricName: `${source.name}_count` }
        ]
      })
    })
  }
}

/**
 * The `/metrics` endpoint: `handle` answers a scrape (401 without the token),
 * and is undefined when no token is configured (the route is then a 404).
 *
 * @category services
 */
export class MetricsExport extends Context.Service<MetricsExport, {
  readonly handle:
    | ((request: HttpServerRequest.HttpServerRequest) => Effect.Effect<HttpServerResponse.HttpServerResponse>)
    | undefined
}>()("modelgate/node-http/MetricsExport") {
  /**
   * Metrics as configured: with a token, the engine counts its calls into one
   * `CallMetrics` (provided as `Metrics.Current`) and `/metrics` exports them
   * with the usage writer's figures, the health of the catalog's channels and
   * Node's process metrics; without one, nothing is counted and `handle` is
   * undefined.
   *
   * @category layers
   */
  static readonly layer = (token: Redacted.Redacted<string> | null): Layer.Layer<
    MetricsExport,
    never,
    UsageWriter | Catalog.Catalog | ChannelHealth.ChannelHealth
  > => {
    if (token === null) return Layer.succeed(MetricsExport)({ handle: undefined })
    const calls = new CallMetrics()
    return Layer.merge(Layer.succeed(Metrics.Current)(calls), Layer.effect(MetricsExport, make(token, calls)))
  }
}

/** A scrape that did not send the token. */
const unauthorized = HttpServerResponse.jsonUnsafe(
  {
    error: {
      message: "Send the metrics token as 'Authorization: Bearer <token>' (metrics.token in the configuration).",
      type: "authentication_error",
      param: null,
      code: "invalid_metrics_token"
    }
  },
  { status: 401, headers: { "www-authenticate": "Bearer realm=\"modelgate metrics\"", "cache-control": "no-store" } }
)

const make = (token: Redacted.Redacted<string>, calls: CallMetrics) =>
  Effect.gen(function*() {
    const writer = yield* UsageWriter
    const catalog = yield* Catalog.Catalog
    const health = yield* ChannelHealth.ChannelHealth
    // Loaded when /metrics is configured: a gateway without it does not keep prom-client in memory.
    const Prometheus: typeof PromClient = yield* Effect.promise(() => import("prom-client"))
    const registry = new Prometheus.Registry()
    Prometheus.collectDefaultMetrics({ register: registry })
    yield* Effect.addFinalizer(() => Effect.sync(() => registry.clear()))
    const collected = [
      counter(calls.requests),
      counter(calls.attempts),
      counter(calls.tokens),
      counter(calls.chargedNanos, 1e9),
      counter(calls.rateLimited),
      histogram(calls.duration),
      histogram(calls.ttfb),
      histogram(writer.metrics.flushSeconds),
      counter(writer.metrics.flushFailures),
      counter(writer.metrics.journalFailures)
    ]
    // Tracing's export, when it is on: spans the collector took, and those dropped (queue full, export failed).
    const tracing = yield* Telemetry.Current
    if (tracing !== undefined) collected.push(counter(tracing.metrics.exported), counter(tracing.metrics.dropped))
    // The registry only calls `get()` (see `Collected`); its own metric classes are the type it names.
    for (const metric of collected) registry.registerMetric(metric as unknown as PromClient.Metric)

    // Read at the scrape: set by `refresh` just before the registry reads them.
    const queue = new Prometheus.Gauge({
      name: "modelgate_usage_queue_depth",
      help:
        "Usage records, charges and lease releases queued by the usage writer and not yet in the database (journaled ones included).",
      registers: [registry]
    })
    const memoryEntries = new Prometheus.Gauge({
      name: "modelgate_usage_memory_entries",
      help:
        "Usage records, charges and lease releases held in memory only: neither in the database nor in the journal.",
      registers: [registry]
    })
    const journalFailing = new Prometheus.Gauge({
      name: "modelgate_usage_journal_failing",
      help: "1 while the usage journal cannot be written (a full, read-only or failing disk), else 0.",
      registers: [registry]
    })
    const admitting = new Prometheus.Gauge({
      name: "modelgate_usage_admitting",
      help:
        "0 while priced calls are refused because usage records can be written neither to the database nor to the journal and memory is nearly full, else 1.",
      registers: [registry]
    })
    const breakerOpen = new Prometheus.Gauge({
      name: "modelgate_breaker_open",
      help: "Upstream keys of a channel whose circuit breaker is open or half-open (this process's breakers).",
      labelNames: ["channel"],
      registers: [registry]
    })
    const keys = new Prometheus.Gauge({
      name: "modelgate_upstream_keys",
      help: "Upstream keys of a channel by health state (healthy, open, half_open, disabled).",
      labelNames: ["channel", "state"],
      registers: [registry]
    })
    const refusedModels = new Prometheus.Gauge({
      name: "modelgate_upstream_models_refused",
      help:
        "Models kept off a channel after its upstream refused them with a 403 about the model (their calls go to their other channels).",
      labelNames: ["channel"],
      registers: [registry]
    })
    const refresh = Effect.gen(function*() {
      queue.set(yield* writer.pending)
      const state = yield* writer.state
      memoryEntries.set(state.memoryEntries)
      journalFailing.set(state.journalFailing ? 1 : 0)
      admitting.set(state.admitting ? 1 : 0)
      breakerOpen.reset()
      keys.reset()
      refusedModels.reset()
      for (const channel of (yield* catalog.current).channels) {
        const report = yield* health.report(channel)
        const counts = { healthy: 0, open: 0, half_open: 0, disabled: 0 }
        for (const key of report.keys) counts[key.state]++
        breakerOpen.set({ channel: channel.name }, counts.open + counts.half_open)
        for (const [state, count] of Object.entries(counts)) keys.set({ channel: channel.name, state }, count)
        refusedModels.set({ channel: channel.name }, report.refusedModels.length)
      }
    })

    const expected = Buffer.from(`Bearer ${Redacted.value(token)}`)
    const authorized = (authorization: string | undefined): boolean => {
      if (authorization === undefined) return false
      const given = Buffer.from(authorization.trim())
      return given.length === expected.length && timingSafeEqual(given, expected)
    }

    return MetricsExport.of({
      handle: (request) =>
        authorized(request.headers["authorization"])
          ? Effect.map(
            Effect.andThen(refresh, Effect.promise(() => registry.metrics())),
            (text) =>
              HttpServerResponse.text(text, {
                contentType: registry.contentType,
                headers: { "cache-control": "no-store" }
              })
          )
          : Effect.succeed(unauthorized)
    })
  })
