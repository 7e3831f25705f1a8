/**
 * Relaying a streamed answer to the client, in any runtime: a `Relay` reads
 * the upstream's body (`Transport.ResponseBody.flow`), turns each chunk into
 * the client's frames with a synchronous transform, and writes them to a
 * `FrameSink` the host provides (node-http: a Node `Readable` piped to the
 * socket; the web handler: a `ReadableStream`), with the sink's backpressure
 * pausing the upstream.
 *
 * Per chunk this costs a scan for line ends (`EventBound`: no event may grow
 * past `maxEventBytes`, so nothing downstream ever holds more than one such
 * event; nothing to scan for a chunk of whole events) and the transform: no
 * fiber, no Effect stream stage, no timer (the transport keeps the idle and
 * total deadlines). A transform gives frames as text, or as bytes (a
 * same-dialect stream's own bytes, forwarded without decoding and re-encoding).
 *
 * The stream's opening (the chunks read before the call committed to this
 * upstream) is transformed by `prime`, before the client gets anything: a
 * transform that throws there (an event the upstream's decoder cannot read)
 * or an over-long event still fails the attempt, which can fail over. How the
 * relay ended is reported exactly once:
 *
 * - `Complete`: the upstream finished and the last frames were written to the
 *   sink (a client that leaves while they are still being sent is not told
 *   apart: the answer was generated);
 * - `Failed`: the upstream's body failed (a timeout, a reset), the transform
 *   threw a gateway error (an in-band upstream error, an event it could not
 *   read), or an event grew past `maxEventBytes`: an error frame in the
 *   client's dialect ends the answer;
 * - `Closed`: the client went away (or the server cut the answer) first.
 *
 * @since 0.1.0
 */
import { GatewayError, SseChunks } from "@modelgate/core"
import type { BodyFlow, ResponseBody, TransportError } from "./Transport.ts"

/** How a relay ended. @category models */
export type RelayEnd =
  | { readonly _tag: "Complete" }
  | { readonly _tag: "Failed"; readonly error: GatewayError.GatewayError }
  | { readonly _tag: "Closed" }

/** Frames for the client: text, or bytes to send as they are. @category models */
export type Frames = string | Uint8Array

/** Where the client's frames go; the host's stream. @category models */
export interface FrameSink {
  /** Queues frames for the client; false when the client asks to wait (then `Relay.pull` is called when it has room). */
  readonly write: (frames: Frames) => boolean
  /** The answer is complete. */
  readonly close: () => void
}

/** What a relay needs. @category models */
export interface RelayOptions {
  /** The stream's opening: the bytes read before the call committed to this upstream. */
  readonly first: Uint8Array
  /** The upstream's body had ended with the opening (the rest is not read: there is none). */
  readonly ended?: boolean | undefined
  /** The rest of the upstream's body. */
  readonly body: ResponseBody
  /** The client's frames for a chunk of the upstream's bytes; may throw a gateway error. */
  readonly push: (chunk: Uint8Array) => Frames
  /** The client's last frames once the upstream finished; may throw a gateway error. */
  readonly end: () => Frames
  /** The gateway error for a failure of the upstream's body. */
  readonly bodyError: (error: TransportError) => GatewayError.GatewayError
  /** The in-band error frame, in the client's dialect. */
  readonly errorFrame: (error: GatewayError.GatewayError) => string
  /** The largest event the upstream may send (`Infinity`: no bound). */
  readonly maxEventBytes?: number | undefined
  /** The gateway error for an event larger than `maxEventBytes`. */
  readonly eventTooLarge?: (() => GatewayError.GatewayError) | undefined
  /** Called once, however the relay ends (not when `prime` failed: the attempt did). */
  readonly onEnd: (end: RelayEnd) => void
}

const unreadable = () => new GatewayError.UpstreamUnavailable({ message: "The upstream's answer could not be read." })

const asGatewayError = (error: unknown): GatewayError.GatewayError =>
  GatewayError.isGatewayError(error) ? error : unreadable()

/**
 * The size of the server-sent event being received, followed across chunks
 * on the raw bytes: an event ends at a blank line (a line end right after
 * another: LF, CRLF or CR, a CRLF split between chunks included). `take`
 * says whether every event so far, the one still open included, is at most
 * `max` bytes. A chunk of whole events (it ends with a blank line) that
 * cannot hold a too-large one costs nothing; any other costs one native
 * `indexOf` per line end.
 *
 * @category relay
 */
export class EventBound {
  private readonly max: number
  /** Bytes of the event being received (since the last blank line), line ends included. */
  private size = 0
  private readonly lines = new SseChunks.LineEnds()

  constructor(max: number) {
    this.max = max
  }

  /** Takes the next chunk; false when an event grew past the bound. */
  take(chunk: Uint8Array): boolean {
    const length = chunk.length
    // The usual chunk: whole events, ending with a blank line, less than the bound with what came before
    // it. No event in it can be too large, and the next one starts afresh: nothing to scan.
    if (this.size + length <= this.max && SseChunks.endsWithBlankLine(chunk)) {
      this.size = 0
      this.lines.skip(chunk)
      return true
    }
    let at = this.lines.start(chunk)
    this.size += at
    for (let after = this.lines.next(); after !== -1; after = this.lines.next()) {
      this.size += after - at
      if (this.size > this.max) return false
      if (this.lines.blank) this.size = 0
      at = after
    }
    this.size += length - at
    return this.size <= this.max
  }
}

/**
 * A streamed answer on its way to a client: the call primes it before
 * committing, the host starts it with its sink, calls `pull` when the sink has
 * room again, and `cancel` when the client went away.
 *
 * @category relay
 */
export class Relay {
  private readonly options: RelayOptions
  private readonly bound: EventBound | undefined
  private sink: FrameSink | undefined
  private flow: BodyFlow | undefined
  private primed: Frames | undefined
  private ended = false
  private reported = false

  constructor(options: RelayOptions) {
    this.options = options
    const max = options.maxEventBytes
    this.bound = max === undefined || max === Infinity ? undefined : new EventBound(max)
  }

  /**
   * Transforms the opening now, before the client gets anything: the gateway
   * error it fails with (an event the transform cannot read, an event too
   * large), or undefined. A relay whose priming failed is never started (its
   * body is the caller's to discard).
   */
  prime(): GatewayError.GatewayError | undefined {
    if (this.primed !== undefined) return undefined
    try {
      this.primed = this.transform(this.options.first)
      return undefined
    } catch (error) {
      return asGatewayError(error)
    }
  }

  /** Writes the first frames to `sink` and starts reading the upstream as the sink takes them. */
  start(sink: FrameSink): void {
    this.sink = sink
    const first = this.primed ?? this.safely(this.options.first)
    if (first === undefined) return
    const room = first.length === 0 ? true : sink.write(first)
    if (this.options.ended === true) return this.onUpstreamEnd()
    this.flow = this.options.body.flow({ chunk: this.onChunk, end: this.onUpstreamEnd, error: this.onUpstreamError })
    if (room) this.flow.resume()
  }

  /** The sink has room again. */
  pull(): void {
    if (!this.ended) this.flow?.resume()
  }

  /** The client went away (or the server cut the answer): the upstream is let go. */
  cancel(): void {
    if (!this.ended) {
      this.ended = true
      if (this.flow === undefined) this.options.body.discard()
      else this.flow.cancel()
    }
    this.finish({ _tag: "Closed" })
  }

  private readonly onChunk = (chunk: Uint8Array): void => {
    if (!this.send(chunk)) this.flow?.pause()
  }

  private readonly onUpstreamEnd = (): void => {
    if (this.ended) return
    let last: Frames
    try {
      last = this.options.end()
    } catch (error) {
      return this.fail(asGatewayError(error))
    }
    this.ended = true
    const sink = this.sink!
    if (last.length > 0) sink.write(last)
    sink.close()
    this.finish({ _tag: "Complete" })
  }

  private readonly onUpstreamError = (error: TransportError): void => {
    if (this.ended) return
    this.fail(this.options.bodyError(error))
  }

  /** The client's frames for a chunk (throws a gateway error: the transform's, or an event too large). */
  private transform(chunk: Uint8Array): Frames {
    if (this.bound !== undefined && !this.bound.take(chunk)) throw this.tooLarge()
    return this.options.push(chunk)
  }

  private tooLarge(): GatewayError.GatewayError {
    return this.options.eventTooLarge?.() ??
      new GatewayError.UpstreamUnavailable({
        message: `The upstream sent a stream event larger than ${this.options.maxEventBytes} bytes.`
      })
  }

  /** `transform`, ending the relay in-band when it throws (undefined then). */
  private safely(chunk: Uint8Array): Frames | undefined {
    try {
      return this.transform(chunk)
    } catch (error) {
      this.fail(asGatewayError(error))
      return undefined
    }
  }

  /** Transforms and writes one chunk; false when the sink asks to wait or the relay ended. */
  private send(chunk: Uint8Array): boolean {
    if (this.ended) return false
    const frames = this.safely(chunk)
    if (frames === undefined) return false
    return frames.length === 0 ? true : this.sink!.write(frames)
  }

  /** Ends the answer in-band with the error, and stops reading the upstream. */
  private fail(error: GatewayError.GatewayError): void {
    this.ended = true
    if (this.flow !== undefined) this.flow.cancel()
    else this.options.body.discard()
    const sink = this.sink!
    sink.write(this.options.errorFrame(error))
    sink.close()
    this.finish({ _tag: "Failed", error })
  }

  private finish(end: RelayEnd): void {
    if (this.reported) return
    this.reported = true
    this.options.onEnd(end)
  }
}
