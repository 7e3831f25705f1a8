/**
 * Tracing: each call as an OpenTelemetry trace, exported over OTLP/HTTP.
 *
 * A host that has tracing on (`TelemetryConfig`: an OTLP endpoint is set)
 * builds one `Telemetry` (`layer`, or `make` in a scope) and, for each call
 * on the API surface, starts its server span with `startCall`: the span
 * continues the caller's W3C trace (`traceparent`, `tracestate`) and its
 * sampling decision, or starts a trace sampled by the configured sampler. The
 * host runs the call's program under it (`CallTrace.run`: Effect's tracer and
 * parent span provided, so every `Effect` span inside is its child), hands
 * the `CallTrace` to the engine with the request (`GatewayRequest.trace`), and
 * ends it when the answer has gone out (`CallTrace.end`).
 *
 * With tracing off there is no `Telemetry`, no `CallTrace` (the request's
 * `trace` is undefined), and nothing here runs on the call path: the helpers
 * the engine uses inside a call (`span`, `useSpan`, `child`) return their
 * argument unchanged for an undefined trace, allocating nothing. Code on the
 * call path must use them rather than `Effect.withSpan` (which makes a span
 * object even with no tracer installed).
 *
 * Spans are Effect `Tracer.Span`s of this module's own kind (`TraceSpan`),
 * which keep the W3C `tracestate`, can be renamed once the model is known
 * (the GenAI conventions name a call `{gen_ai.operation.name}
 * {gen_ai.request.model}`), and are exported when they end, if sampled, by
 * the bounded batch processor of `OtlpExport`: in protobuf (the default) a
 * span is written into the export's buffer as it ends (`OtlpProtobuf.EncodedSpans`),
 * so no span object outlives its call.
 *
 * @since 0.1.0
 */
import { Cause, Clock, Context, Effect, Exit, Layer, Option, Redacted, type Scope, Tracer } from "effect"
import * as Hex from "effect/encoding/Hex"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as HttpBody from "effect/http/HttpBody"
import type * as HttpClient from "effect/http/HttpClient"
import * as OtlpResource from "effect/observability/OtlpResource"
import * as OtlpSerialization from "effect/observability/OtlpSerialization"
import type { TraceData } from "effect/observability/OtlpTracer"
import type { Sampler, TelemetrySettings } from "../config/TelemetryConfig.ts"
import type * as Routes from "../wire/Routes.ts"
import * as OtlpExport from "./OtlpExport.ts"
import * as OtlpProtobuf from "./OtlpProtobuf.ts"
import * as TraceContext from "./TraceContext.ts"

// ---------------------------------------------------------------------------------------------------------------------
// Spans

/** An explicit span status (the server span's, from its HTTP status). @category models */
export interface SpanStatus {
  /** OTLP's codes: 0 unset, 1 ok, 2 error. */
  readonly code: 0 | 1 | 2
  readonly message?: string | undefined
}

/** An event of a span: name, time (epoch ns) and attributes. @category models */
export type SpanEvent = readonly [name: string, time: bigint, attributes: Record<string, unknown> | undefined]

/** The links of a span made without any: shared, and replaced by a list of its own by `addLinks`. */
const NO_LINKS: Array<Tracer.SpanLink> = []

/** The attributes and events of a span that recorded none (an admission step's): shared, never written. */
const NO_ATTRIBUTES: ReadonlyMap<string, unknown> = new OtlpProtobuf.Attributes()
const NO_EVENTS: ReadonlyArray<SpanEvent> = []

/**
 * A span of this module's tracer: Effect's `Tracer.Span`, plus the W3C
 * `tracestate` it carries, whether its parent is remote (a caller's), an
 * explicit status, and a name that can change until it ends. An unsampled
 * span keeps its ids (they are propagated, with the flag `00`) and nothing
 * else: attributes and events are not recorded and it is never exported.
 *
 * @category spans
 */
export class TraceSpan implements Tracer.Span {
  readonly _tag = "Span"
  name: string
  readonly traceId: string
  readonly spanId: string
  readonly parent: Option.Option<Tracer.AnySpan>
  readonly annotations: Context.Context<never>
  links: Array<Tracer.SpanLink>
  readonly kind: Tracer.SpanKind
  readonly sampled: boolean
  /** The caller's `tracestate`, passed on as it came. */
  readonly traceState: string | undefined
  /** The parent is another process's span (a caller's `traceparent`). */
  readonly remoteParent: boolean
  status: Tracer.SpanStatus
  /** Set by `setStatus`; otherwise the status follows the span's exit. */
  explicitStatus: SpanStatus | undefined = undefined
  private attributeList: OtlpProtobuf.Attributes | undefined = undefined
  private eventList: Array<SpanEvent> | undefined = undefined
  private readonly onEnd: (span: TraceSpan) => void

  constructor(
    options: {
      readonly name: string
      readonly traceId: string
      readonly parent: Option.Option<Tracer.AnySpan>
      readonly annotations: Context.Context<never>
      readonly links: Array<Tracer.SpanLink>
      readonly startTime: bigint
      readonly kind: Tracer.SpanKind
      readonly sampled: boolean
      readonly traceState: string | undefined
      readonly remoteParent: boolean
    },
    onEnd: (span: TraceSpan) => void
  ) {
    this.name = options.name
    this.traceId = options.traceId
    this.spanId = Hex.random(16)
    this.parent = options.parent
    this.annotations = options.annotations
    this.links = options.links
    this.kind = options.kind
    this.sampled = options.sampled
    this.traceState = options.traceState
    this.remoteParent = options.remoteParent
    this.status = { _tag: "Started", startTime: options.startTime }
    this.onEnd = onEnd
  }

  get attributes(): ReadonlyMap<string, unknown> {
    return this.attributeList ?? NO_ATTRIBUTES
  }

  get events(): ReadonlyArray<SpanEvent> {
    return this.eventList ?? NO_EVENTS
  }

  /** Whether the span still records (sampled and not ended). */
  get recording(): boolean {
    return this.sampled && this.status._tag === "Started"
  }

  attribute(key: string, value: unknown): void {
    if (!this.recording) return
    ;(this.attributeList ??= new OtlpProtobuf.Attributes()).set(key, value)
  }

  event(name: string, startTime: bigint, attributes?: Record<string, unknown>): void {
    if (!this.recording) return
    ;(this.eventList ??= []).push([name, startTime, attributes])
  }

  addLinks(links: ReadonlyArray<Tracer.SpanLink>): void {
    if (!this.recording) return
    if (this.links === NO_LINKS) this.links = []
    for (const link of links) this.links.push(link)
  }

  /** Renames the span (until it ends). */
  rename(name: string): void {
    if (this.status._tag === "Started") this.name = name
  }

  /** Sets the span's status, overriding what its exit would say. */
  setStatus(status: SpanStatus): void {
    if (this.status._tag === "Started") this.explicitStatus = status
  }

  end(endTime: bigint, exit: Exit.Exit<unknown, unknown>): void {
    if (this.status._tag === "Ended") return
    // A success is kept without its value: an ended span waits in the export's queue (up to a batch, or the
    // schedule's delay), and the value of what it wrapped (a key, a permit, a hold) would wait with it, kept
    // alive past the call into the old generation. Only a failure's cause is exported.
    this.status = {
      _tag: "Ended",
      startTime: this.status.startTime,
      endTime,
      exit: exit._tag === "Success" ? Exit.void : exit
    }
    if (this.sampled) this.onEnd(this)
  }
}

/**
 * Whether the sampler samples a span of `traceId` under `parent` (absent: a
 * root). The parent-based samplers follow the parent's decision, local or
 * remote; `traceidratio` decides from the trace id alone, so every process
 * that sees the trace decides alike.
 *
 * @category sampling
 */
export const shouldSample = (sampler: Sampler, parent: Tracer.AnySpan | undefined, traceId: string): boolean => {
  switch (sampler.name) {
    case "always_on":
      return true
    case "always_off":
      return false
    case "traceidratio":
      return ratioSampled(traceId, sampler.ratio)
    case "parentbased_always_on":
      return parent === undefined ? true : parent.sampled
    case "parentbased_always_off":
      return parent === undefined ? false : parent.sampled
    case "parentbased_traceidratio":
      return parent === undefined ? ratioSampled(traceId, sampler.ratio) : parent.sampled
  }
}

/**
 * The ratio decision: the trace id's last 56 bits (the part W3C Trace
 * Context Level 2 makes random) read as a fraction of 2^56, sampled when
 * below the ratio.
 *
 * @category sampling
 */
export const ratioSampled = (traceId: string, ratio: number): boolean => {
  if (ratio >= 1) return true
  if (ratio <= 0) return false
  return parseInt(traceId.slice(-14), 16) / 2 ** 56 < ratio
}

/** A child span made by this module's tracer directly, without Effect's span options (`child`). */
type Spawner = (name: string, parent: Tracer.AnySpan, kind: Tracer.SpanKind, startTime: bigint) => TraceSpan

const spawners = new WeakMap<Tracer.Tracer, Spawner>()

/**
 * An Effect `Tracer` whose spans are `TraceSpan`s sampled by `sampler`, and
 * handed to `onEnd` when a sampled one ends.
 *
 * @category tracers
 */
export const makeTracer = (sampler: Sampler, onEnd: (span: TraceSpan) => void): Tracer.Tracer => {
  const tracer = Tracer.make({
    span(options) {
      const parent = Option.getOrUndefined(options.parent)
      const traceId = parent?.traceId ?? Hex.random(32)
      let sampled = shouldSample(sampler, parent, traceId)
      // Effect's own filter (a span below the minimum trace level) still applies.
      if (options.sampled === false && (parent === undefined || parent.sampled)) sampled = false
      return new TraceSpan({
        name: options.name,
        traceId,
        parent: options.parent,
        annotations: options.annotations,
        links: options.links,
        startTime: options.startTime,
        kind: options.kind,
        sampled,
        traceState: parent instanceof TraceSpan ? parent.traceState : undefined,
        remoteParent: parent !== undefined && parent._tag === "ExternalSpan"
      }, onEnd)
    }
  })
  spawners.set(tracer, (name, parent, kind, startTime) =>
    new TraceSpan({
      name,
      traceId: parent.traceId,
      parent: Option.some(parent),
      annotations: Context.empty(),
      links: NO_LINKS,
      startTime,
      kind,
      sampled: shouldSample(sampler, parent, parent.traceId),
      traceState: parent instanceof TraceSpan ? parent.traceState : undefined,
      remoteParent: parent._tag === "ExternalSpan"
    }, onEnd))
  return tracer
}

// ---------------------------------------------------------------------------------------------------------------------
// Calls

/** What a host knows of a call when it arrives. @category models */
export interface CallStart {
  readonly method: string
  /** The URL path, without the query string (which may carry a key: never recorded). */
  readonly path: string
  readonly route: Routes.ApiRoute | Routes.Miss
  /** Header names in lower case. */
  readonly headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
  readonly requestId: string
  readonly scheme: "http" | "https"
}

const knownMethods = new Set(["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE", "QUERY"])

/**
 * The route a call matched, as the HTTP conventions' `http.route`: the path
 * itself for fixed paths, a template where the path carries a model (low
 * cardinality either way); undefined for a path no route matched.
 *
 * @category calls
 */
export const routeTemplate = (route: Routes.ApiRoute | Routes.Miss, path: string): string | undefined => {
  switch (route._tag) {
    case "NotFound":
    case "MethodNotAllowed":
      return undefined
    case "GeminiAction":
      return `/v1beta/models/{model}:${route.action}`
    case "GeminiModel":
      return "/v1beta/models/{model}"
    case "OpenAIModel":
      return path.startsWith("/v1beta/openai/") ? "/v1beta/openai/models/{model}" : "/v1/models/{model}"
    case "AnthropicModel":
      return "/v1/models/{model}"
    default:
      return path
  }
}

/**
 * The trace of one call: its server span, and what the engine needs to add
 * to it. Made by `Telemetry.startCall`; the host ends it.
 *
 * @category calls
 */
export class CallTrace {
  /** The call's server span. */
  readonly span: TraceSpan
  readonly tracer: Tracer.Tracer
  /** Whether prompts and answers may be exported (`telemetry.capture_content`). */
  readonly captureContent: boolean
  private readonly clock: Clock.Clock

  constructor(span: TraceSpan, tracer: Tracer.Tracer, clock: Clock.Clock, captureContent: boolean) {
    this.span = span
    this.tracer = tracer
    this.clock = clock
    this.captureContent = captureContent
  }

  /** The time now, in epoch nanoseconds (for spans made by hand). */
  now(): bigint {
    return this.clock.currentTimeNanosUnsafe()
  }

  /**
   * Runs the call's program under this trace: Effect's spans inside are
   * children of the server span and made by this tracer. One change of the
   * fiber's context when the host runs its calls with the tracer already in
   * it (`withTracer`), two otherwise.
   */
  run<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> {
    const { span, tracer } = this
    return Effect.updateContext(effect, (context: Context.Context<R>) =>
      Context.add(
        Context.get(context, Tracer.Tracer) === tracer ? context : Context.add(context, Tracer.Tracer, tracer),
        Tracer.ParentSpan,
        span
      ))
  }

  /**
   * Names the call as the GenAI conventions do, `{operation} {model}` (such
   * as `chat gpt-4o-mini`), and records `gen_ai.operation.name` and
   * `gen_ai.request.model`.
   */
  name(operation: string, model: string): void {
    this.span.rename(`${operation} ${model}`)
    this.span.attribute("gen_ai.operation.name", operation)
    this.span.attribute("gen_ai.request.model", model)
  }

  /**
   * Ends the server span when the answer has gone out: `status` is the HTTP
   * status sent; `clientClosed` when the client went away before the answer
   * ended (before it started, or mid-stream). A 5xx, or a client gone, is an
   * error (`error.type`: the status, or `ClientClosed`), as the HTTP
   * conventions say for server spans; a 4xx is not.
   */
  end(status: number, clientClosed = false): void {
    if (this.span.status._tag === "Ended" || this.ending !== undefined) return
    const time = this.clock.currentTimeNanosUnsafe()
    if (this.pending > 0) this.ending = { status, clientClosed, time }
    else this.close(status, clientClosed, time)
  }

  private pending = 0
  private ending: { readonly status: number; readonly clientClosed: boolean; readonly time: bigint } | undefined =
    undefined

  /**
   * Keeps the server span from being exported, when the host ends it, until
   * `release`: a stream's settlement runs after its answer went out, and its
   * figures (usage, cost) belong on the call's span. The span keeps the end
   * time the host gave it.
   */
  hold(): void {
    this.pending++
  }

  /** Undoes a `hold`; the last one exports the span if the host has ended it meanwhile. */
  release(): void {
    if (this.pending === 0) return
    this.pending--
    const ending = this.ending
    if (this.pending === 0 && ending !== undefined) this.close(ending.status, ending.clientClosed, ending.time)
  }

  private close(status: number, clientClosed: boolean, time: bigint): void {
    const span = this.span
    span.attribute("http.response.status_code", status)
    if (clientClosed) {
      span.attribute("error.type", "ClientClosed")
      span.setStatus({ code: 2, message: "The client closed the connection before the answer ended." })
    } else if (status >= 500) {
      span.attribute("error.type", String(status))
      span.setStatus({ code: 2 })
    }
    span.end(time, Exit.void)
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// Helpers for code on the call path (free when tracing is off)

const identity = <A>(a: A): A => a

/**
 * Wraps an effect of the call's own fiber (admission) in a child span of the
 * call's server span, when the call is traced and sampled; the identity (no
 * allocation) when `trace` is undefined or not sampled. The span is made by hand (`child`) and ended
 * with the effect's exit: no fiber references read, no options object.
 * `nested`: the effect may make spans of its own (the store's, under a
 * balance lease), which go under this one (the span is provided as their
 * parent, which costs a change of the fiber's context).
 *
 * ```ts
 * yield* Telemetry.span(request.trace, "authorize")(Admission.authorize(...))
 * ```
 *
 * @category helpers
 */
export const span = (
  trace: CallTrace | undefined,
  name: string,
  nested = false
): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R> =>
  // An unsampled call records nothing of its admission: no span at all (its upstream's context names the call's).
  trace === undefined || !trace.span.sampled ? identity : (self) =>
    Effect.suspend(() => {
      const made = child(trace, name)!
      return Effect.onExit(
        nested ? Effect.provideService(self, Tracer.ParentSpan, made) : self,
        // Ended as the exit is seen (the finalizer runs once, at the exit): no effect made to end it.
        (exit) => {
          made.end(trace.now(), exit)
          return Effect.void
        }
      )
    })

/**
 * Runs `f` with a child span of the current one (ended when `f`'s effect
 * ends), or with `undefined` when the call is not traced. For an upstream
 * attempt: a client span whose `propagation` headers go with the request.
 *
 * ```ts
 * Telemetry.useSpan(trace, "chat gpt-4o-mini", { kind: "client" }, (span) =>
 *   transport.send({ ...request, headers: span === undefined ? headers : { ...headers, ...Telemetry.propagation(span) } }))
 * ```
 *
 * @category helpers
 */
export const useSpan = <A, E, R>(
  trace: CallTrace | undefined,
  name: string,
  options: Tracer.SpanOptionsNoTrace,
  f: (span: Tracer.Span | undefined) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  trace === undefined
    ? f(undefined)
    : Effect.useSpan(name, options, (span) => Effect.provideService(f(span), Tracer.ParentSpan, span))

/**
 * A span made by hand, outside the call's fiber (a stream's settlement, run
 * from the relay's end report): a child of `parent` (default the server
 * span), ended by its maker with `span.end(trace.now(), exit)`. Undefined
 * when the call is not traced.
 *
 * @category helpers
 */
export const child = (
  trace: CallTrace | undefined,
  name: string,
  options?: {
    readonly parent?: Tracer.AnySpan | undefined
    readonly kind?: Tracer.SpanKind | undefined
    readonly attributes?: Record<string, unknown> | undefined
  }
): Tracer.Span | undefined => {
  if (trace === undefined) return undefined
  const spawn = spawners.get(trace.tracer)
  const made = spawn !== undefined
    ? spawn(name, options?.parent ?? trace.span, options?.kind ?? "internal", trace.now())
    : trace.tracer.span({
      name,
      parent: Option.some(options?.parent ?? trace.span),
      annotations: Context.empty(),
      links: NO_LINKS,
      startTime: trace.now(),
      kind: options?.kind ?? "internal",
      root: false,
      sampled: true
    })
  if (options?.attributes !== undefined) {
    for (const key in options.attributes) made.attribute(key, options.attributes[key])
  }
  return made
}

/**
 * The W3C headers that make an outgoing request a child of `span`:
 * `traceparent` naming it (with its sampled flag), and the caller's
 * `tracestate` when there was one.
 *
 * @category helpers
 */
export const propagation = (span: Tracer.AnySpan): Record<string, string> => {
  const traceparent = TraceContext.formatTraceparent(span.traceId, span.spanId, span.sampled)
  const state = span instanceof TraceSpan ? span.traceState : undefined
  return state === undefined ? { traceparent } : { traceparent, tracestate: state }
}

// ---------------------------------------------------------------------------------------------------------------------
// The tracing service

/** Tracing, when it is on: the tracer, the export's figures and the calls' server spans. @category models */
export interface Telemetry {
  readonly settings: TelemetrySettings
  readonly tracer: Tracer.Tracer
  /** Spans exported and dropped (by reason), for `/metrics`. */
  readonly metrics: OtlpExport.ExportMetrics
  /** Starts the server span of a call: continuing the caller's trace, or a new one. */
  readonly startCall: (call: CallStart) => CallTrace
  /** Exports every span ended so far, waiting for the collector (tests; shutdown does it by itself). */
  readonly flush: Effect.Effect<void>
}

/**
 * A host's context for running its calls, with tracing's tracer in it when
 * tracing is on (so `CallTrace.run` changes the context once per call, not
 * twice); the context itself when it is off.
 *
 * @category services
 */
export const withTracer = <R>(context: Context.Context<R>, telemetry: Telemetry | undefined): Context.Context<R> =>
  telemetry === undefined ? context : Context.add(context, Tracer.Tracer, telemetry.tracer)

/**
 * Where hosts find tracing: undefined (the default) when it is off. Read
 * once, when a host builds its request handler, never per call.
 *
 * @category services
 */
export const Current = Context.Reference<Telemetry | undefined>("modelgate/engine/Telemetry/Current", {
  defaultValue: () => undefined
})

/** What the resource says of this process beside the operator's attributes. @category models */
export interface ResourceOptions {
  /** `service.version`. */
  readonly serviceVersion?: string | undefined
  /** `service.instance.id` (the node id), unless the operator set one. */
  readonly instanceId?: string | undefined
  /** The first retry's delay (default 1 s); tests shorten it. */
  readonly retryDelayMs?: number | undefined
}

/**
 * Tracing from resolved settings, in the current scope (its export stops,
 * after a last flush, when the scope closes), exporting with the
 * `HttpClient` in context; undefined when the settings export nothing.
 *
 * @category constructors
 */
export const make = (
  settings: TelemetrySettings,
  options: ResourceOptions = {}
): Effect.Effect<Telemetry | undefined, never, Scope.Scope | HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const traces = settings.traces
    if (traces === null) return undefined
    const clock = yield* Clock.Clock
    const resource = OtlpResource.make({
      serviceName: settings.serviceName,
      serviceVersion: options.serviceVersion,
      attributes: {
        ...(options.instanceId !== undefined ? { "service.instance.id": options.instanceId } : {}),
        ...settings.resourceAttributes
      }
    })
    const scope = {
      name: "modelgate",
      ...(options.serviceVersion !== undefined ? { version: options.serviceVersion } : {})
    }
    const send = yield* OtlpExport.sender({
      url: traces.url,
      headers: Redacted.value(traces.headers),
      compression: traces.compression,
      timeoutMs: traces.timeoutMs
    })
    const metrics = new OtlpExport.ExportMetrics("spans")
    const failed: OtlpExport.Outcome = { _tag: "Failed", retryable: false, retryAfterMs: undefined }
    const guarded = (body: () => HttpBody.HttpBody) =>
      Effect.suspend(() => send(body())).pipe(
        Effect.catchDefect((defect) =>
          Effect.as(Effect.logWarning("could not encode spans for export; dropped", defect), failed)
        )
      )
    const batchOptions = {
      maxQueueSize: traces.maxQueueSize,
      maxExportBatchSize: traces.maxExportBatchSize,
      scheduleDelayMs: traces.scheduleDelayMs,
      exportTimeoutMs: traces.exportTimeoutMs,
      retryDelayMs: options.retryDelayMs,
      metrics
    }
    let onEnd: (span: TraceSpan) => void
    let flush: Effect.Effect<void>
    if (traces.protocol === "http/protobuf") {
      // Protobuf by this module's own writer (OtlpProtobuf: Effect's costs several times as much), each span
      // written as it ends: the queue holds where each span's bytes end, and the span itself is garbage with
      // its call rather than waiting for its batch (which carried every sampled call's spans into the old
      // generation).
      const encoded = new OtlpProtobuf.EncodedSpans(protobufBody(resource, scope))
      const batcher = yield* OtlpExport.batcher<number>({
        ...batchOptions,
        send: (ends) => guarded(() => HttpBody.uint8Array(encoded.take(ends), "application/x-protobuf"))
      })
      onEnd = (span) => {
        // A full queue drops the span (counted by `push`): not written.
        if (batcher.queued() >= traces.maxQueueSize) return batcher.push(0)
        let end: number
        try {
          end = encoded.append(spanFields(span))
        } catch {
          // Never the call's failure: the span is lost, and counted.
          metrics.dropped.add(["export_failed"])
          return
        }
        batcher.push(end)
      }
      flush = batcher.flush
    } else {
      // JSON by Effect's serialization, converting and encoding in the export's fiber.
      const serialization = Context.get(
        yield* Layer.build(OtlpSerialization.layerJson),
        OtlpSerialization.OtlpSerialization
      )
      const encode = jsonBody(serialization, resource, scope)
      const batcher = yield* OtlpExport.batcher<TraceSpan>({
        ...batchOptions,
        send: (spans) => guarded(() => encode(spans))
      })
      onEnd = batcher.push
      flush = batcher.flush
    }
    const shown = new URL(traces.url)
    shown.username = ""
    shown.password = ""
    yield* Effect.logInfo("tracing: spans are exported over OTLP").pipe(
      Effect.annotateLogs({
        url: shown.toString(),
        protocol: traces.protocol,
        sampler: settings.sampler.name.endsWith("traceidratio")
          ? `${settings.sampler.name} ${settings.sampler.ratio}`
          : settings.sampler.name,
        service: settings.serviceName
      })
    )
    const tracer = makeTracer(settings.sampler, onEnd)
    const startCall = (call: CallStart): CallTrace => {
      const remote = TraceContext.fromHeaders(call.headers)
      const traceId = remote?.traceId ?? Hex.random(32)
      const parent = remote === undefined
        ? Option.none<Tracer.AnySpan>()
        : Option.some<Tracer.AnySpan>(Tracer.externalSpan({
          traceId: remote.traceId,
          spanId: remote.spanId,
          sampled: remote.sampled
        }))
      const method = knownMethods.has(call.method) ? call.method : "_OTHER"
      const route = routeTemplate(call.route, call.path)
      const span = new TraceSpan({
        name: method === "_OTHER" ? "HTTP" : route === undefined ? method : `${method} ${route}`,
        traceId,
        parent,
        annotations: Context.empty(),
        links: NO_LINKS,
        startTime: clock.currentTimeNanosUnsafe(),
        kind: "server",
        sampled: shouldSample(settings.sampler, Option.getOrUndefined(parent), traceId),
        traceState: remote?.traceState,
        remoteParent: remote !== undefined
      }, onEnd)
      if (span.sampled) {
        span.attribute("http.request.method", method)
        if (method === "_OTHER") span.attribute("http.request.method_original", call.method)
        if (route !== undefined) span.attribute("http.route", route)
        span.attribute("url.path", call.path)
        span.attribute("url.scheme", call.scheme)
        const agent = call.headers["user-agent"]
        if (typeof agent === "string") span.attribute("user_agent.original", agent)
        span.attribute("modelgate.request_id", call.requestId)
        if ("dialect" in call.route) span.attribute("modelgate.client_dialect", call.route.dialect)
      }
      return new CallTrace(span, tracer, clock, settings.captureContent)
    }
    return { settings, tracer, metrics, startCall, flush }
  })

/**
 * Tracing as a layer: `Current` set when the settings export spans, nothing
 * otherwise. Exports with `fetch` unless given another `HttpClient`.
 *
 * @category layers
 */
export const layer = (
  settings: TelemetrySettings,
  options: ResourceOptions & { readonly httpClient?: Layer.Layer<HttpClient.HttpClient> | undefined } = {}
): Layer.Layer<never> =>
  settings.traces === null
    ? Layer.empty
    : Layer.effect(Current, make(settings, options)).pipe(Layer.provide(options.httpClient ?? FetchHttpClient.layer))

// ---------------------------------------------------------------------------------------------------------------------
// OTLP

/** OTLP/HTTP protobuf bodies of spans already written (`OtlpProtobuf.EncodedSpans`), for this process's origin. */
const protobufBody = (resource: OtlpResource.Resource, scope: OtlpProtobuf.Origin["scope"]) => {
  const attributes: Record<string, unknown> = {}
  for (const { key, value } of resource.attributes) {
    attributes[key] = value.stringValue ?? value.boolValue ?? value.intValue ?? value.doubleValue ?? undefined
  }
  return OtlpProtobuf.tracesBody({ resource: attributes, scope })
}

/** A batch of spans as an OTLP/JSON body, by Effect's `OtlpSerialization`. */
const jsonBody = (
  serialization: OtlpSerialization.OtlpSerialization["Service"],
  resource: OtlpResource.Resource,
  scope: OtlpProtobuf.Origin["scope"]
) =>
(spans: ReadonlyArray<TraceSpan>): HttpBody.HttpBody => {
  const data: TraceData = {
    resourceSpans: [{
      resource,
      scopeSpans: [{
        scope: scope.version === undefined ? { name: scope.name } : { name: scope.name, version: scope.version },
        spans: spans.map(toOtlpSpan) as never
      }]
    }]
  }
  return serialization.traces(data)
}

const SPAN_KIND = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const

/** OTLP `Span.flags`: the W3C trace flags, and whether the parent is remote (bits 8 and 9). */
const flagsOf = (span: TraceSpan): number => (span.sampled ? 0x01 : 0) | 0x100 | (span.remoteParent ? 0x200 : 0)

const MAX_MESSAGE = 1_024

const NONE: Array<never> = []

const UNSET: { code: 0 | 1 | 2; message?: string | undefined } = { code: 0 }

const bounded = (text: string): string => text.length <= MAX_MESSAGE ? text : `${text.slice(0, MAX_MESSAGE)}…`

const USUAL = { status: UNSET, exceptions: NONE, interrupted: false } as const

/** What an ended span's exit says: its OTLP status, the `exception` events of its errors, whether it was interrupted. */
const outcomeOf = (span: TraceSpan) => {
  const status = span.status as Extract<Tracer.SpanStatus, { _tag: "Ended" }>
  // The usual span: ended by success, no status set: nothing to make but the answer.
  if (span.explicitStatus === undefined && status.exit._tag === "Success") {
    return { start: status.startTime, end: status.endTime, status: UNSET, exceptions: NONE, interrupted: false }
  }
  const exceptions: Array<{ name: string; timeUnixNano: bigint; attributes: Array<[string, unknown]> }> = []
  let interrupted = false
  let otlpStatus: { code: 0 | 1 | 2; message?: string | undefined } = { code: 0 }
  if (span.explicitStatus !== undefined) {
    otlpStatus = span.explicitStatus.message === undefined
      ? { code: span.explicitStatus.code }
      : { code: span.explicitStatus.code, message: bounded(span.explicitStatus.message) }
  } else if (status.exit._tag === "Failure") {
    if (Cause.hasInterruptsOnly(status.exit.cause)) {
      interrupted = true
    } else {
      const errors = Cause.prettyErrors(status.exit.cause)
      const defect = Cause.hasDies(status.exit.cause)
      otlpStatus = errors[0] !== undefined ? { code: 2, message: bounded(errors[0].message) } : { code: 2 }
      for (const error of errors) {
        const attributes: Array<[string, unknown]> = [
          ["exception.type", error.name],
          ["exception.message", bounded(error.message)]
        ]
        if (defect && error.stack !== undefined) attributes.push(["exception.stacktrace", error.stack])
        exceptions.push({ name: "exception", timeUnixNano: status.endTime, attributes })
      }
    }
  }
  return { start: status.startTime, end: status.endTime, status: otlpStatus, exceptions, interrupted }
}

/** An ended span as `OtlpProtobuf`'s writer takes it. @category otlp */
export const spanFields = (span: TraceSpan): OtlpProtobuf.SpanFields => {
  const ended = span.status as Extract<Tracer.SpanStatus, { _tag: "Ended" }>
  // The usual span (ended by success, no status set) has nothing more to say: no outcome made for it.
  const outcome = span.explicitStatus === undefined && ended.exit._tag === "Success" ? USUAL : outcomeOf(span)
  const attributes: Iterable<readonly [string, unknown]> = outcome.interrupted
    ? [...span.attributes.entries(), ["effect.fiber.interrupted", true] as const]
    : span.attributes
  // Most spans have no event and no link: no arrays made for them.
  const events: Array<{ name: string; timeUnixNano: bigint; attributes: Iterable<readonly [string, unknown]> }> =
    span.events.length === 0 && outcome.exceptions.length === 0
      ? NONE
      : span.events.map(([name, time, eventAttributes]) => ({
        name,
        timeUnixNano: time,
        attributes: eventAttributes === undefined ? [] : Object.entries(eventAttributes)
      }))
  if (events !== NONE) { for (const exception of outcome.exceptions) events.push(exception) }
  return {
    traceId: span.traceId,
    spanId: span.spanId,
    traceState: span.traceState,
    parentSpanId: Option.getOrUndefined(span.parent)?.spanId,
    name: span.name,
    kind: SPAN_KIND[span.kind],
    startTimeUnixNano: ended.startTime,
    endTimeUnixNano: ended.endTime,
    attributes,
    events,
    links: span.links.length === 0 ? NONE : span.links.map((link) => ({
      traceId: link.span.traceId,
      spanId: link.span.spanId,
      attributes: Object.entries(link.attributes)
    })),
    status: outcome.status,
    flags: flagsOf(span)
  }
}

/**
 * An ended span as OTLP's `Span` in the shape Effect's `OtlpSerialization`
 * writes as OTLP/JSON: ids, parent, name, kind, times, attributes, events,
 * links, status and flags. A failure's errors become `exception` events with
 * their type and message (a defect's stack too); a span's status is an error
 * then, unset on success (the conventions leave `Ok` to the application),
 * unset when interrupted (with `effect.fiber.interrupted`), or what
 * `setStatus` said.
 *
 * @category otlp
 */
export const toOtlpSpan = (span: TraceSpan) => {
  const fields = spanFields(span)
  const entries = (list: Iterable<readonly [string, unknown]>) =>
    OtlpResource.entriesToAttributes(
      [...list].filter((entry): entry is [string, unknown] => entry[1] !== undefined && entry[1] !== null)
    )
  return {
    traceId: fields.traceId,
    spanId: fields.spanId,
    ...(fields.traceState !== undefined ? { traceState: fields.traceState } : {}),
    parentSpanId: fields.parentSpanId,
    name: fields.name,
    kind: fields.kind,
    startTimeUnixNano: String(fields.startTimeUnixNano),
    endTimeUnixNano: String(fields.endTimeUnixNano),
    attributes: entries(fields.attributes),
    droppedAttributesCount: 0,
    events: fields.events.map((event) => ({
      name: event.name,
      timeUnixNano: String(event.timeUnixNano),
      attributes: entries(event.attributes),
      droppedAttributesCount: 0
    })),
    droppedEventsCount: 0,
    status: fields.status.message === undefined
      ? { code: fields.status.code }
      : { code: fields.status.code, message: fields.status.message },
    links: fields.links.map((link) => ({
      traceId: link.traceId,
      spanId: link.spanId,
      attributes: entries(link.attributes),
      droppedAttributesCount: 0
    })),
    droppedLinksCount: 0,
    flags: fields.flags
  }
}
