/**
 * Export over OTLP/HTTP, off the call path and bounded in memory: a batch
 * processor in the OpenTelemetry specification's shape (a queue of at most
 * `max_queue_size` items, exported in batches of at most
 * `max_export_batch_size` every `schedule_delay_ms` or as soon as a batch is
 * full, one export at a time), posting each batch, encoded by the caller
 * (protobuf or JSON), with Effect's `HttpClient`.
 *
 * Nothing a collector does reaches a call: `push` only appends to an array
 * (or, when the queue is full, drops the item and counts it); the export runs
 * in its own fiber. An export that fails is retried (429, 502, 503, 504 and
 * network failures, at most `MAX_ATTEMPTS` times, honouring `Retry-After`)
 * within the export timeout, then its batch is dropped and counted. Each
 * request has its own timeout, so a collector that hangs holds one batch at a
 * time, never more memory than the queue.
 *
 * Effect's own `OtlpExporter` was not taken: its buffer has no bound (a slow
 * collector grows it, and each full batch starts one more request), its
 * requests have no timeout, and it drops what it cannot send without
 * counting.
 *
 * @since 0.1.0
 */
import { PlainMetrics } from "@modelgate/core"
import { Duration, Effect, Fiber, Latch, Option, type Scope, Semaphore } from "effect"
import type * as HttpBody from "effect/http/HttpBody"
import * as HttpClient from "effect/http/HttpClient"
import * as HttpClientRequest from "effect/http/HttpClientRequest"

/** What an export's items became. @category metrics */
export class ExportMetrics {
  readonly exported: PlainMetrics.Counter
  readonly dropped: PlainMetrics.Counter
  constructor(signal: "spans" | "logs") {
    const what = signal === "spans" ? "Spans" : "Log records"
    this.exported = new PlainMetrics.Counter(
      `modelgate_trace_${signal}_exported_total`,
      `${what} the OTLP collector accepted.`,
      []
    )
    this.dropped = new PlainMetrics.Counter(
      `modelgate_trace_${signal}_dropped_total`,
      `${what} not exported, by reason: queue_full (the export queue was full: the collector is slow or down), ` +
        "export_failed (the collector refused them, did not answer in time or could not be reached), " +
        "rejected (the collector took the batch but reported these as rejected).",
      ["reason"]
    )
  }

  /** The sum of every drop reason. */
  get droppedTotal(): number {
    let total = 0
    for (const series of this.dropped.series) total += series.value
    return total
  }

  /** What the collector accepted. */
  get exportedTotal(): number {
    return this.exported.series[0]?.value ?? 0
  }
}

/** The most attempts of one batch's export. @category constants */
export const MAX_ATTEMPTS = 3

/** One batch's export: what the collector answered. */
export type Outcome =
  | { readonly _tag: "Accepted"; readonly rejected: number }
  | { readonly _tag: "Failed"; readonly retryable: boolean; readonly retryAfterMs: number | undefined }

/** How a batch processor exports. @category models */
export interface BatchOptions<T> {
  readonly maxQueueSize: number
  readonly maxExportBatchSize: number
  readonly scheduleDelayMs: number
  /** The longest one batch's export may take, retries included. */
  readonly exportTimeoutMs: number
  /** The first retry's delay; each next one doubles it (a `Retry-After` wins). Default 1 s. */
  readonly retryDelayMs?: number | undefined
  /** Sends one batch once. */
  readonly send: (batch: ReadonlyArray<T>) => Effect.Effect<Outcome>
  readonly metrics: ExportMetrics
}

/** A running batch processor. @category models */
export interface Batcher<T> {
  /** Queues an item for export, or drops it (counted) when the queue is full. Never blocks, never fails. */
  readonly push: (item: T) => void
  /** Exports everything queued now, waiting for it (tests, shutdown). */
  readonly flush: Effect.Effect<void>
  /** Items waiting for export. */
  readonly queued: () => number
}

/**
 * Starts a batch processor in the current scope. When the scope closes, what
 * is queued is exported once more (no retries), within the export timeout.
 *
 * @category constructors
 */
export const batcher = <T>(options: BatchOptions<T>): Effect.Effect<Batcher<T>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { metrics } = options
    let queue: Array<T> = []
    const full = Latch.makeUnsafe(false)
    const retryDelay = options.retryDelayMs ?? 1_000

    const exportOnce = (batch: ReadonlyArray<T>, retries: boolean) =>
      Effect.gen(function*() {
        for (let attempt = 1;; attempt++) {
          const outcome = yield* options.send(batch)
          if (outcome._tag === "Accepted") return outcome
          if (!retries || !outcome.retryable || attempt >= MAX_ATTEMPTS) return outcome
          yield* Effect.sleep(Duration.millis(outcome.retryAfterMs ?? retryDelay * 2 ** (attempt - 1)))
        }
      }).pipe(
        Effect.timeoutOrElse({
          duration: Duration.millis(options.exportTimeoutMs),
          orElse: () => Effect.succeed<Outcome>({ _tag: "Failed", retryable: false, retryAfterMs: undefined })
        }),
        // A batch whose export the shutdown cut short is lost: counted.
        Effect.onInterrupt(() => Effect.sync(() => metrics.dropped.add(["export_failed"], batch.length))),
        Effect.map((outcome) => {
          if (outcome._tag === "Accepted") {
            const rejected = Math.min(outcome.rejected, batch.length)
            if (rejected > 0) metrics.dropped.add(["rejected"], rejected)
            metrics.exported.add([], batch.length - rejected)
          } else {
            metrics.dropped.add(["export_failed"], batch.length)
          }
        })
      )

    // Everything queued (`all`: the timer's turn, a flush, the shutdown), or only full batches (the queue
    // filled one): what arrives while a batch is being sent waits for its own full batch or the timer, so a
    // fast collector is not sent a trickle of tiny batches.
    const drain = (retries: boolean, all = true) =>
      Effect.gen(function*() {
        while (queue.length >= (all ? 1 : options.maxExportBatchSize)) {
          const batch = queue.length <= options.maxExportBatchSize ? queue : queue.slice(0, options.maxExportBatchSize)
          queue = batch === queue ? [] : queue.slice(options.maxExportBatchSize)
          yield* exportOnce(batch, retries)
        }
      })

    // Only one drain runs at a time: the loop's, or a flush's.
    const lock = Semaphore.makeUnsafe(1)
    const loop = Effect.gen(function*() {
      for (;;) {
        const filled = yield* full.await.pipe(Effect.timeoutOption(Duration.millis(options.scheduleDelayMs)))
        full.closeUnsafe()
        yield* lock.withPermits(1)(drain(true, Option.isNone(filled)))
      }
    })
    const fiber = yield* Effect.forkDetach(loop)
    yield* Effect.addFinalizer(() =>
      Fiber.interrupt(fiber).pipe(
        Effect.andThen(lock.withPermits(1)(drain(false))),
        Effect.timeoutOption(Duration.millis(options.exportTimeoutMs)),
        Effect.andThen(Effect.sync(() => {
          // What the shutdown could not send is lost: counted, for a last scrape.
          if (queue.length > 0) metrics.dropped.add(["export_failed"], queue.length)
          queue = []
        }))
      )
    )

    return {
      push: (item) => {
        if (queue.length >= options.maxQueueSize) {
          metrics.dropped.add(["queue_full"])
          return
        }
        queue.push(item)
        if (queue.length === options.maxExportBatchSize) full.openUnsafe()
      },
      flush: lock.withPermits(1)(drain(true)),
      queued: () => queue.length
    }
  })

/** What an OTLP/HTTP sender needs. @category models */
export interface SenderOptions {
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly compression: "gzip" | "none"
  /** The longest one request may take. */
  readonly timeoutMs: number
}

/**
 * Posts an encoded batch to an OTLP/HTTP endpoint, once, and reads the
 * answer: 2xx is accepted (with the partial-success count of items the
 * collector rejected, in protobuf or JSON); 429, 502, 503, 504, a network
 * failure and a timeout may be retried; anything else may not.
 *
 * @category senders
 */
export const sender = (
  options: SenderOptions
): Effect.Effect<(body: HttpBody.HttpBody) => Effect.Effect<Outcome>, never, HttpClient.HttpClient> =>
  Effect.map(HttpClient.HttpClient, (client) => {
    const base = HttpClientRequest.post(options.url, {
      headers: { "user-agent": "modelgate-otlp-exporter", ...options.headers }
    })
    return (body) => {
      const request = HttpClientRequest.setBody(base, body)
      const send = options.compression === "gzip"
        ? Effect.flatMap(HttpClientRequest.compressBody(request, "gzip"), client.execute)
        : client.execute(request)
      return send.pipe(
        Effect.flatMap((response) =>
          Effect.map(Effect.orElseSucceed(response.arrayBuffer, () => new ArrayBuffer(0)), (bytes): Outcome => {
            if (response.status >= 200 && response.status < 300) {
              return { _tag: "Accepted", rejected: rejectedOf(response.headers["content-type"], new Uint8Array(bytes)) }
            }
            const retryable = response.status === 429 || response.status === 502 || response.status === 503 ||
              response.status === 504
            return { _tag: "Failed", retryable, retryAfterMs: retryAfter(response.headers["retry-after"]) }
          })
        ),
        Effect.timeoutOrElse({
          duration: Duration.millis(options.timeoutMs),
          orElse: () => Effect.succeed<Outcome>({ _tag: "Failed", retryable: true, retryAfterMs: undefined })
        }),
        Effect.orElseSucceed((): Outcome => ({ _tag: "Failed", retryable: true, retryAfterMs: undefined })),
        // The exporter's own requests are not traced, and carry no traceparent.
        Effect.provideService(HttpClient.TracerPropagationEnabled, false),
        Effect.withTracerEnabled(false)
      )
    }
  })

/** A `Retry-After` of seconds (at most a minute), in milliseconds. */
const retryAfter = (value: string | undefined): number | undefined => {
  if (value === undefined || !/^\d+$/.test(value.trim())) return undefined
  return Math.min(Number(value.trim()), 60) * 1000
}

/**
 * The `rejected_spans` (or `rejected_log_records`) of an OTLP answer's
 * partial success: field 1 of the message in field 1 of the protobuf
 * answer, or `partialSuccess.rejectedSpans` in JSON. 0 when there is none.
 *
 * @category senders
 */
export const rejectedOf = (contentType: string | undefined, body: Uint8Array): number => {
  if (body.length === 0) return 0
  if (contentType?.includes("json")) {
    try {
      const parsed = JSON.parse(new TextDecoder().decode(body)) as {
        partialSuccess?: { rejectedSpans?: number | string; rejectedLogRecords?: number | string }
      }
      const count = Number(parsed.partialSuccess?.rejectedSpans ?? parsed.partialSuccess?.rejectedLogRecords ?? 0)
      return Number.isFinite(count) && count > 0 ? count : 0
    } catch {
      return 0
    }
  }
  const partial = protobufField(body, 1)
  if (partial === undefined || typeof partial === "number") return 0
  const rejected = protobufField(partial, 1)
  return typeof rejected === "number" ? rejected : 0
}

/** The first value of field `field` in a protobuf message: a varint as a number, a length-delimited field as bytes. */
const protobufField = (bytes: Uint8Array, field: number): number | Uint8Array | undefined => {
  let at = 0
  const varint = (): number => {
    let value = 0
    let scale = 1
    for (;;) {
      if (at >= bytes.length) throw new RangeError("truncated")
      const byte = bytes[at++]!
      value += (byte & 0x7f) * scale
      if (byte < 0x80) return value
      scale *= 128
    }
  }
  try {
    while (at < bytes.length) {
      const tag = varint()
      const number = Math.floor(tag / 8)
      switch (tag & 7) {
        case 0: {
          const value = varint()
          if (number === field) return value
          break
        }
        case 1:
          at += 8
          break
        case 2: {
          const length = varint()
          if (number === field) return bytes.subarray(at, at + length)
          at += length
          break
        }
        case 5:
          at += 4
          break
        default:
          return undefined
      }
    }
  } catch {
    return undefined
  }
  return undefined
}
