/**
 * AWS's binary event-stream framing (`application/vnd.amazon.eventstream`),
 * which ConverseStream answers in: each message is a prelude (total length,
 * headers length, the prelude's CRC32), typed headers (`:message-type`
 * `event` or `exception`, `:event-type` / `:exception-type`,
 * `:content-type`), a payload (here JSON) and the message's CRC32.
 *
 * The framing itself (headers, CRCs) is AWS's own `@smithy/eventstream-codec`:
 * `FrameDecoder` only buffers the bytes as the network delivers them, in
 * pieces cut anywhere, and hands each complete message (its length is the
 * prelude's first four bytes) to the codec, which checks both CRCs and parses
 * the headers. A message larger than the operator's bound (`max_event_bytes`)
 * is refused from its prelude, never buffered. `encodeMessage` writes a message with the codec (for the laws,
 * the fakes and tests).
 *
 * @since 0.1.0
 */
import { type Dialect as Core, GatewayError, Utf8 } from "@modelgate/core"
import { EventStreamCodec } from "@smithy/eventstream-codec"

/** The content type of an event stream. @category constants */
export const CONTENT_TYPE = "application/vnd.amazon.eventstream"

/** The smallest message: a 12-byte prelude and a 4-byte trailing CRC. @category constants */
export const MIN_MESSAGE_BYTES = 16

/** The largest message this decoder accepts (AWS caps payloads at 16 MiB; headers at 128 KiB). @category constants */
export const MAX_MESSAGE_BYTES = 16 * 1024 * 1024 + 128 * 1024 + 16

/**
 * One decoded message: its string headers (other header types are kept as
 * their string form) and its payload.
 *
 * @category models
 */
export interface Message {
  readonly headers: Readonly<Record<string, string>>
  readonly payload: Uint8Array
}

const codec = new EventStreamCodec(Utf8.decode, Utf8.encode)

const broken = (detail: string): GatewayError.UpstreamUnavailable =>
  new GatewayError.UpstreamUnavailable({
    status: 502,
    message: `The upstream sent an event stream the gateway cannot read (${detail}).`
  })

const tooLarge = (bound: Core.StreamBound, total: number): GatewayError.UpstreamUnavailable =>
  new GatewayError.UpstreamUnavailable({
    message:
      `The upstream '${bound.channel}' sent a stream event larger than ${bound.maxEventBytes} bytes (max_event_bytes): its frame announced ${total} bytes.`
  })

const toMessage = (bytes: Uint8Array): Message => {
  let decoded
  try {
    decoded = codec.decode(bytes)
  } catch (error) {
    throw broken(error instanceof Error ? error.message : String(error))
  }
  const headers: Record<string, string> = {}
  for (const name of Object.keys(decoded.headers)) {
    const header = decoded.headers[name]!
    headers[name] = header.value instanceof Uint8Array ? Utf8.decode(header.value) : String(header.value)
  }
  return { headers, payload: decoded.body }
}

/**
 * Incremental event-stream decoding: `push` any piece of the stream's bytes,
 * get the messages it completed; `end` says the stream ended (a message cut
 * short is the upstream failing). Both throw `UpstreamUnavailable` for a
 * message whose length or CRCs are wrong: nothing after a broken message can
 * be trusted.
 *
 * @example
 * ```ts
 * import { EventStream } from "@modelgate/bedrock-adapter"
 *
 * const bytes = EventStream.encodeMessage({ headers: { ":message-type": "event", ":event-type": "messageStop" }, payload: new TextEncoder().encode('{"stopReason":"end_turn"}') })
 * const decoder = new EventStream.FrameDecoder()
 * decoder.push(bytes.subarray(0, 7)) // []
 * decoder.push(bytes.subarray(7))    // [{ headers: { ":message-type": "event", ":event-type": "messageStop" }, payload: ... }]
 * decoder.end()                      // []
 * ```
 *
 * @category decoding
 */
export class FrameDecoder {
  private buffer: Uint8Array = new Uint8Array(0)
  private failed: GatewayError.UpstreamUnavailable | undefined
  private readonly max: number
  private readonly bound: Core.StreamBound | undefined

  /**
   * `bound`: the largest message taken (the operator's `max_event_bytes`; at
   * most `MAX_MESSAGE_BYTES`). A message whose prelude announces more fails
   * the stream as soon as its first four bytes arrive: its body is never kept.
   */
  constructor(bound?: Core.StreamBound) {
    this.bound = bound
    this.max = bound === undefined ? MAX_MESSAGE_BYTES : Math.min(bound.maxEventBytes, MAX_MESSAGE_BYTES)
  }

  /** The messages completed by `chunk`. */
  push(chunk: Uint8Array): Array<Message> {
    if (this.failed !== undefined) throw this.failed
    if (chunk.length === 0) return []
    let bytes: Uint8Array
    if (this.buffer.length === 0) bytes = chunk
    else {
      bytes = new Uint8Array(this.buffer.length + chunk.length)
      bytes.set(this.buffer)
      bytes.set(chunk, this.buffer.length)
    }
    const out: Array<Message> = []
    let at = 0
    try {
      while (bytes.length - at >= 4) {
        const total = new DataView(bytes.buffer, bytes.byteOffset + at, 4).getUint32(0, false)
        if (total < MIN_MESSAGE_BYTES || total > MAX_MESSAGE_BYTES) {
          throw broken(`a message of ${total} bytes`)
        }
        if (total > this.max) throw tooLarge(this.bound!, total)
        if (bytes.length - at < total) break
        out.push(toMessage(bytes.subarray(at, at + total)))
        at += total
      }
    } catch (error) {
      this.failed = error as GatewayError.UpstreamUnavailable
      this.buffer = new Uint8Array(0)
      if (out.length > 0) return out
      throw this.failed
    }
    // Keep only the incomplete rest (a copy, so the caller's chunk may be reused).
    this.buffer = at === bytes.length ? new Uint8Array(0) : bytes.slice(at)
    return out
  }

  /** The stream ended: any bytes left are a message cut short. */
  end(): Array<Message> {
    if (this.failed !== undefined) throw this.failed
    if (this.buffer.length > 0) {
      const left = this.buffer.length
      this.buffer = new Uint8Array(0)
      throw broken(`the stream ended inside a message, ${left} bytes into it`)
    }
    return []
  }
}

/**
 * One message in the event-stream framing, string headers and the payload,
 * with both CRCs (AWS's codec).
 *
 * @category encoding
 */
export const encodeMessage = (message: Message): Uint8Array => {
  const headers: Record<string, { type: "string"; value: string }> = {}
  for (const name of Object.keys(message.headers)) headers[name] = { type: "string", value: message.headers[name]! }
  return codec.encode({ headers, body: message.payload })
}

/** An `event` message of type `eventType` with a JSON payload, as Bedrock writes them. @category encoding */
export const eventMessage = (eventType: string, payload: unknown): Message => ({
  headers: { ":event-type": eventType, ":content-type": "application/json", ":message-type": "event" },
  payload: Utf8.encode(JSON.stringify(payload))
})

/** An `exception` message (`throttlingException`, ...) with `{"message"}`, as Bedrock writes them. @category encoding */
export const exceptionMessage = (exceptionType: string, message: string): Message => ({
  headers: { ":exception-type": exceptionType, ":content-type": "application/json", ":message-type": "exception" },
  payload: Utf8.encode(JSON.stringify({ message }))
})
