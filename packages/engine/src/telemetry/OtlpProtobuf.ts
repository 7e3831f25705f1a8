/**
 * OTLP/HTTP's protobuf body for spans (`ExportTraceServiceRequest`), written
 * in one pass into one growing buffer, from the field numbers of the official
 * definitions (opentelemetry-proto: `collector/trace/v1/trace_service.proto`,
 * `trace/v1/trace.proto`, `common/v1/common.proto`,
 * `resource/v1/resource.proto`).
 *
 * Effect's `OtlpSerialization.layerProtobuf` writes the same messages, but
 * with a `Uint8Array` and a BigInt varint per field and a copy per nesting
 * level: on a batch of 512 spans with 15 GenAI attributes each it took about
 * 50 times as long as this writer, and 4 to 10 times as long as its own JSON,
 * which would have made export cost more CPU than the call it traces
 * (docs/design/decisions.md, "Spans in protobuf, written by hand").
 *
 * Varints are minimal (a message's length is written after it, and the
 * message moved when its length needs more than one byte), as decoders
 * expect; strings are UTF-8; ids are the bytes of their hex.
 *
 * @since 0.1.0
 */

/** An attribute value as it is written: OTLP's `AnyValue`. */
type Value = string | number | boolean | bigint | ReadonlyArray<unknown>

const textEncoder = new TextEncoder()

/** A growing buffer with protobuf's wire types. @category writing */
export class Writer {
  private buffer: Uint8Array
  private view: DataView
  /** Bytes written. */
  length = 0

  constructor(capacity = 4096) {
    this.buffer = new Uint8Array(capacity)
    this.view = new DataView(this.buffer.buffer)
  }

  private ensure(bytes: number): void {
    if (this.length + bytes <= this.buffer.length) return
    let capacity = this.buffer.length * 2
    while (capacity < this.length + bytes) capacity *= 2
    const next = new Uint8Array(capacity)
    next.set(this.buffer.subarray(0, this.length))
    this.buffer = next
    this.view = new DataView(next.buffer)
  }

  /** Starts over, keeping the buffer (grown to what the largest body needed). */
  reset(): void {
    this.length = 0
  }

  /** The bytes written, as a view of the buffer (not copied). */
  finish(): Uint8Array {
    return this.buffer.subarray(0, this.length)
  }

  /** A non-negative integer below 2^53 as a varint. */
  varint(value: number): void {
    this.ensure(10)
    let n = value
    while (n >= 0x80) {
      this.buffer[this.length++] = (n % 0x80) | 0x80
      n = Math.floor(n / 0x80)
    }
    this.buffer[this.length++] = n
  }

  /** Any 64-bit integer as a varint (two's complement for negative ones, ten bytes). */
  varint64(value: bigint): void {
    let n = BigInt.asUintN(64, value)
    this.ensure(10)
    while (n >= 0x80n) {
      this.buffer[this.length++] = Number(n & 0x7fn) | 0x80
      n >>= 7n
    }
    this.buffer[this.length++] = Number(n)
  }

  tag(field: number, wireType: 0 | 1 | 2 | 5): void {
    this.varint(field * 8 + wireType)
  }

  fixed64(field: number, value: bigint): void {
    this.tag(field, 1)
    this.ensure(8)
    this.view.setBigUint64(this.length, BigInt.asUintN(64, value), true)
    this.length += 8
  }

  fixed32(field: number, value: number): void {
    this.tag(field, 5)
    this.ensure(4)
    this.view.setUint32(this.length, value >>> 0, true)
    this.length += 4
  }

  double(field: number, value: number): void {
    this.tag(field, 1)
    this.ensure(8)
    this.view.setFloat64(this.length, value, true)
    this.length += 8
  }

  uint(field: number, value: number): void {
    this.tag(field, 0)
    this.varint(value)
  }

  bool(field: number, value: boolean): void {
    this.tag(field, 0)
    this.ensure(1)
    this.buffer[this.length++] = value ? 1 : 0
  }

  string(field: number, value: string): void {
    this.tag(field, 2)
    // ASCII (the usual case) is its own UTF-8: one byte a character, written in one pass without an encoder;
    // a string that is not is written again from its start by the encoder.
    const start = this.length
    const length = value.length
    this.varint(length)
    this.ensure(length)
    const buffer = this.buffer
    let at = this.length
    for (let i = 0; i < length; i++) {
      const code = value.charCodeAt(i)
      if (code > 0x7f) {
        this.length = start
        return this.utf8(value)
      }
      buffer[at++] = code
    }
    this.length = at
  }

  /** A string's UTF-8 bytes, prefixed with their length. */
  private utf8(value: string): void {
    const bytes = textEncoder.encode(value)
    this.varint(bytes.length)
    this.ensure(bytes.length)
    this.buffer.set(bytes, this.length)
    this.length += bytes.length
  }

  /** Bytes given as lower-case hex (a trace or span id). */
  hexBytes(field: number, hex: string): void {
    this.tag(field, 2)
    const bytes = hex.length >>> 1
    this.varint(bytes)
    this.ensure(bytes)
    const buffer = this.buffer
    let at = this.length
    for (let i = 0; i < hex.length - 1; i += 2) {
      buffer[at++] = (HEX[hex.charCodeAt(i)]! << 4) | HEX[hex.charCodeAt(i + 1)]!
    }
    this.length = at
  }

  /** An embedded message: its tag, then what `write` writes, prefixed with its length. */
  message(field: number, write: () => void): void {
    const at = this.begin(field)
    write()
    this.end(at)
  }

  /**
   * Starts an embedded message (its tag, and one byte kept for its length):
   * what follows until `end(at)` is its content. `message` without a closure,
   * for the hot parts of an export.
   */
  begin(field: number): number {
    this.tag(field, 2)
    this.ensure(1)
    return this.length++
  }

  /** Ends the message `begin` started at `at`: its length written before it (moved over when it needs more than a byte). */
  end(at: number): void {
    const size = this.length - at - 1
    if (size < 0x80) {
      this.buffer[at] = size
      return
    }
    let prefix = 1
    for (let n = size; n >= 0x80; n = Math.floor(n / 0x80)) prefix++
    this.ensure(prefix - 1)
    this.buffer.copyWithin(at + prefix, at + 1, this.length)
    this.length += prefix - 1
    let n = size
    let i = at
    while (n >= 0x80) {
      this.buffer[i++] = (n % 0x80) | 0x80
      n = Math.floor(n / 0x80)
    }
    this.buffer[i] = n
  }

  /** The bytes from `start` to `end` written so far, as a view of the buffer (not copied). */
  written(start: number, end: number): Uint8Array {
    return this.buffer.subarray(start, end)
  }

  /** Forgets the first `count` bytes written, moving the rest to the front. */
  shift(count: number): void {
    if (count <= 0) return
    this.buffer.copyWithin(0, count, this.length)
    this.length -= count
  }

  /** Raw bytes already encoded (a cached message). */
  raw(bytes: Uint8Array): void {
    this.ensure(bytes.length)
    this.buffer.set(bytes, this.length)
    this.length += bytes.length
  }
}

/** A hex digit's value (`0-9`, `a-f`, `A-F`) by its character code, 0 for anything else: ids are written by lookup. */
const HEX = (() => {
  const table = new Uint8Array(65536)
  for (let i = 0; i < 10; i++) table[48 + i] = i
  for (let i = 0; i < 6; i++) table[65 + i] = table[97 + i] = 10 + i
  return table
})()

const INT64_BOUND = 2 ** 63

/**
 * `AnyValue` (common.proto): string_value 1, bool_value 2, int_value 3,
 * double_value 4, array_value 5 (`ArrayValue`: values 1). Integers within
 * int64 are ints, other numbers doubles; anything else is written as text.
 */
const anyValue = (w: Writer, value: Value): void => {
  switch (typeof value) {
    case "string":
      return w.string(1, value)
    case "boolean":
      return w.bool(2, value)
    case "number":
      if (Number.isInteger(value) && value >= -INT64_BOUND && value < INT64_BOUND) {
        w.tag(3, 0)
        if (value >= 0 && value <= Number.MAX_SAFE_INTEGER) w.varint(value)
        else w.varint64(BigInt(value))
        return
      }
      return w.double(4, value)
    case "bigint":
      if (BigInt.asIntN(64, value) === value) {
        w.tag(3, 0)
        return w.varint64(value)
      }
      return w.string(1, String(value))
    default:
      if (Array.isArray(value)) {
        const array = w.begin(5)
        for (const item of value) {
          if (item === undefined || item === null) continue
          const element = w.begin(1)
          anyValue(w, asValue(item))
          w.end(element)
        }
        return w.end(array)
      }
      return w.string(1, String(value))
  }
}

const asValue = (value: unknown): Value => {
  switch (typeof value) {
    case "string":
    case "number":
    case "boolean":
    case "bigint":
      return value
    default:
      if (Array.isArray(value)) return value
      try {
        return JSON.stringify(value) ?? String(value)
      } catch {
        return String(value)
      }
  }
}

/** `KeyValue` (common.proto): key 1, value 2. A null or undefined value is not written. */
export const keyValue = (w: Writer, field: number, key: string, value: unknown): void => {
  if (value === undefined || value === null) return
  const pair = w.begin(field)
  w.string(1, key)
  const inner = w.begin(2)
  anyValue(w, asValue(value))
  w.end(inner)
  w.end(pair)
}

/**
 * A span's attributes, kept as one flat list (key, value, key, value, ...):
 * cheaper to fill than a `Map` for the twenty or so a span has, and written
 * without an entry array per attribute. Setting a key again replaces its
 * value. Read as a `ReadonlyMap` (its iterators allocate as a `Map`'s do).
 *
 * @category models
 */
export class Attributes implements ReadonlyMap<string, unknown> {
  /** Keys at even indexes, each followed by its value. */
  readonly flat: Array<unknown> = []

  set(key: string, value: unknown): void {
    const flat = this.flat
    for (let i = 0; i < flat.length; i += 2) {
      if (flat[i] === key) {
        flat[i + 1] = value
        return
      }
    }
    flat.push(key, value)
  }

  get size(): number {
    return this.flat.length >> 1
  }

  get(key: string): unknown {
    const flat = this.flat
    for (let i = 0; i < flat.length; i += 2) if (flat[i] === key) return flat[i + 1]
    return undefined
  }

  has(key: string): boolean {
    const flat = this.flat
    for (let i = 0; i < flat.length; i += 2) if (flat[i] === key) return true
    return false
  }

  forEach(f: (value: unknown, key: string, map: ReadonlyMap<string, unknown>) => void): void {
    const flat = this.flat
    for (let i = 0; i < flat.length; i += 2) f(flat[i + 1], flat[i] as string, this)
  }

  *entries(): MapIterator<[string, unknown]> {
    const flat = this.flat
    for (let i = 0; i < flat.length; i += 2) yield [flat[i] as string, flat[i + 1]]
  }

  *keys(): MapIterator<string> {
    const flat = this.flat
    for (let i = 0; i < flat.length; i += 2) yield flat[i] as string
  }

  *values(): MapIterator<unknown> {
    const flat = this.flat
    for (let i = 0; i < flat.length; i += 2) yield flat[i + 1]
  }

  [Symbol.iterator](): MapIterator<[string, unknown]> {
    return this.entries()
  }
}

/** Attributes as `KeyValue`s under `field`: `Attributes` and a `Map` walked without an entry array per attribute. */
const keyValues = (w: Writer, field: number, attributes: Iterable<readonly [string, unknown]>): void => {
  if (attributes instanceof Attributes) {
    const flat = attributes.flat
    for (let i = 0; i < flat.length; i += 2) keyValue(w, field, flat[i] as string, flat[i + 1])
    return
  }
  if (attributes instanceof Map) {
    attributes.forEach((value: unknown, key: string) => keyValue(w, field, key, value))
    return
  }
  for (const [key, value] of attributes) keyValue(w, field, key, value)
}

/** What a span gives the writer. @category models */
export interface SpanFields {
  readonly traceId: string
  readonly spanId: string
  readonly traceState: string | undefined
  readonly parentSpanId: string | undefined
  readonly name: string
  /** OTLP's `SpanKind`: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  readonly kind: number
  readonly startTimeUnixNano: bigint
  readonly endTimeUnixNano: bigint
  /** The span's attributes: a `Map` is walked without an entry array per attribute. */
  readonly attributes: Iterable<readonly [string, unknown]>
  readonly events: ReadonlyArray<{
    readonly name: string
    readonly timeUnixNano: bigint
    readonly attributes: Iterable<readonly [string, unknown]>
  }>
  readonly links: ReadonlyArray<{
    readonly traceId: string
    readonly spanId: string
    readonly attributes: Iterable<readonly [string, unknown]>
  }>
  /** `Status`: code 0 unset, 1 ok, 2 error. */
  readonly status: { readonly code: number; readonly message?: string | undefined }
  readonly flags: number
}

/**
 * `Span` (trace.proto): trace_id 1, span_id 2, trace_state 3,
 * parent_span_id 4, name 5, kind 6, start 7, end 8, attributes 9, events 11
 * (`Event`: time 1, name 2, attributes 3), links 13 (`Link`: trace_id 1,
 * span_id 2, attributes 4), status 15 (`Status`: message 2, code 3),
 * flags 16.
 */
const span = (w: Writer, s: SpanFields): void => {
  w.hexBytes(1, s.traceId)
  w.hexBytes(2, s.spanId)
  if (s.traceState !== undefined && s.traceState !== "") w.string(3, s.traceState)
  if (s.parentSpanId !== undefined) w.hexBytes(4, s.parentSpanId)
  w.string(5, s.name)
  w.uint(6, s.kind)
  w.fixed64(7, s.startTimeUnixNano)
  w.fixed64(8, s.endTimeUnixNano)
  keyValues(w, 9, s.attributes)
  for (const event of s.events) {
    const at = w.begin(11)
    w.fixed64(1, event.timeUnixNano)
    w.string(2, event.name)
    keyValues(w, 3, event.attributes)
    w.end(at)
  }
  for (const link of s.links) {
    const at = w.begin(13)
    w.hexBytes(1, link.traceId)
    w.hexBytes(2, link.spanId)
    keyValues(w, 4, link.attributes)
    w.end(at)
  }
  const status = w.begin(15)
  if (s.status.message !== undefined && s.status.message !== "") w.string(2, s.status.message)
  if (s.status.code !== 0) w.uint(3, s.status.code)
  w.end(status)
  w.fixed32(16, s.flags)
}

/** The resource and scope every batch of a process carries. @category models */
export interface Origin {
  /** `Resource` (resource.proto): its attributes. */
  readonly resource: Readonly<Record<string, unknown>>
  /** `InstrumentationScope` (common.proto): name 1, version 2. */
  readonly scope: { readonly name: string; readonly version?: string | undefined }
}

/**
 * An encoder of `ExportTraceServiceRequest` bodies for one origin:
 * resource_spans 1 (`ResourceSpans`: resource 1, scope_spans 2;
 * `ScopeSpans`: scope 1, spans 2). The resource and the scope are encoded
 * once.
 *
 * @category encoding
 */
export const tracesEncoder = <S>(origin: Origin, fields: (span: S) => SpanFields) => {
  const body = tracesBody(origin)
  // One buffer for every batch, grown to the largest; each body is a copy of its exact size.
  const w = new Writer(64 * 1024)
  return (spans: ReadonlyArray<S>): Uint8Array => {
    w.reset()
    for (const s of spans) writeSpan(w, fields(s))
    return body(w.finish())
  }
}

/**
 * One span appended to `w` as an element of `ScopeSpans.spans` (field 2):
 * spans written one by one as they end, and sent later in one body by
 * `tracesBody`.
 *
 * @category encoding
 */
export const writeSpan = (w: Writer, s: SpanFields): void => {
  const at = w.begin(2)
  span(w, s)
  w.end(at)
}

const varintSize = (value: number): number => {
  let size = 1
  for (let n = value; n >= 0x80; n = Math.floor(n / 0x80)) size++
  return size
}

const putVarint = (out: Uint8Array, at: number, value: number): number => {
  let n = value
  while (n >= 0x80) {
    out[at++] = (n % 0x80) | 0x80
    n = Math.floor(n / 0x80)
  }
  out[at++] = n
  return at
}

/**
 * A maker of `ExportTraceServiceRequest` bodies for one origin from spans
 * already written by `writeSpan` (their bytes, one after the other): the
 * resource and the scope are encoded once, and each body is one allocation
 * of its exact size, the spans' bytes copied into it once.
 *
 * @category encoding
 */
export const tracesBody = (origin: Origin): (spans: Uint8Array) => Uint8Array => {
  const head = new Writer(256)
  head.message(1, () => {
    for (const key in origin.resource) keyValue(head, 1, key, origin.resource[key])
  })
  const resource = head.finish().slice()
  const scopeWriter = new Writer(64)
  scopeWriter.message(1, () => {
    scopeWriter.string(1, origin.scope.name)
    if (origin.scope.version !== undefined) scopeWriter.string(2, origin.scope.version)
  })
  const scope = scopeWriter.finish().slice()
  return (spans) => {
    const scopeSpans = scope.length + spans.length
    const resourceSpans = resource.length + 1 + varintSize(scopeSpans) + scopeSpans
    const out = new Uint8Array(1 + varintSize(resourceSpans) + resourceSpans)
    // ExportTraceServiceRequest.resource_spans (1), ResourceSpans.scope_spans (2): length-delimited.
    out[0] = 0x0a
    let at = putVarint(out, 1, resourceSpans)
    out.set(resource, at)
    at += resource.length
    out[at++] = 0x12
    at = putVarint(out, at, scopeSpans)
    out.set(scope, at)
    at += scope.length
    out.set(spans, at)
    return out
  }
}

/**
 * Spans encoded as they end, waiting for export: their bytes one after the
 * other in one buffer, each span known by where its bytes end (counted from
 * the first span ever appended). An export's queue then holds numbers rather
 * than span objects: a call's spans, their attributes and what those name
 * are garbage as soon as the call is over, instead of waiting for their batch
 * (up to `max_export_batch_size` spans, or the schedule's delay) and being
 * carried into the old generation.
 *
 * Batches are taken in the order their spans were appended (the export's
 * queue is first in, first out): a batch's body is every span from where
 * the previous batch ended to its last one's end.
 *
 * @category encoding
 */
export class EncodedSpans {
  private readonly w = new Writer(16 * 1024)
  /** Where the buffer's first byte is, counted from the first span ever appended. */
  private base = 0
  /** Where the last batch taken ended. */
  private taken = 0
  private lastBatch: ReadonlyArray<number> | undefined = undefined
  private lastBody: Uint8Array = new Uint8Array(0)
  private readonly body: (spans: Uint8Array) => Uint8Array

  constructor(body: (spans: Uint8Array) => Uint8Array) {
    this.body = body
  }

  /** Appends a span and returns where it ends; a span that cannot be written leaves nothing behind (and throws). */
  append(fields: SpanFields): number {
    const before = this.w.length
    try {
      writeSpan(this.w, fields)
    } catch (error) {
      this.w.length = before
      throw error
    }
    return this.base + this.w.length
  }

  /**
   * The body of a batch (the ends `append` returned, in order): the spans
   * after the previous batch up to the batch's last. The same batch again (a
   * retry) is the same body.
   */
  take(batch: ReadonlyArray<number>): Uint8Array {
    if (batch === this.lastBatch) return this.lastBody
    const end = Math.max(batch[batch.length - 1] ?? this.taken, this.taken)
    const body = this.body(this.w.written(this.taken - this.base, end - this.base))
    // What was taken is dropped: the spans appended since move to the front.
    this.w.shift(end - this.base)
    this.base = end
    this.taken = end
    this.lastBatch = batch
    this.lastBody = body
    return body
  }

  /** Bytes of spans waiting. */
  get waiting(): number {
    return this.w.length
  }
}
