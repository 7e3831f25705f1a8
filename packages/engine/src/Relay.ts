/**
 * Relaying a streamed answer to the client, in any runtime: a `Relay` reads
 * the upstream's body (`Transport.ResponseBody.flow`), turns each chunk into
 * the client's frames with a synchronous transform, and writes them to a
 * `FrameSink` the host provides (node-http: a Node `Readable` piped to the
 * socket; the web handler: a `ReadableStream`), with the sink's backpressure
 * pausing the upstream.
 *
 * Per chunk this costs one decode and the transform: no fiber, no Effect
 * stream stage, no timer (the transport keeps the idle and total deadlines).
 * How the relay ended is reported exactly once:
 *
 * - `Complete`: the upstream finished and the last frames were written to the
 *   sink (a client that leaves while they are still being sent is not told
 *   apart: the answer was generated);
 * - `Failed`: the upstream's body failed (a timeout, a reset) or the transform
 *   threw a gateway error (an in-band upstream error, an event it could not
 *   read): an error frame in the client's dialect ends the answer;
 * - `Closed`: the client went away (or the server cut the answer) first.
 *
 * @since 0.1.0
 */
import { GatewayError } from "@modelgate/core"
import type { BodyFlow, ResponseBody, TransportError } from "./Transport.ts"

/** How a relay ended. @category models */
export type RelayEnd =
  | { readonly _tag: "Complete" }
  | { readonly _tag: "Failed"; readonly error: GatewayError.GatewayError }
  | { readonly _tag: "Closed" }

/** Where the client's frames go; the host's stream. @category models */
export interface FrameSink {
  /** Queues text for the client; false when the client asks to wait (then `Relay.pull` is called when it has room). */
  readonly write: (text: string) => boolean
  /** The answer is complete. */
  readonly close: () => void
}

/** What a relay needs. @category models */
export interface RelayOptions {
  /** The first chunk, already read (the call committed to this upstream on it). */
  readonly first: Uint8Array
  /** The rest of the upstream's body. */
  readonly body: ResponseBody
  /** The client's frames for a piece of the upstream's text; may throw a gateway error. */
  readonly push: (text: string) => string
  /** The client's last frames once the upstream finished; may throw a gateway error. */
  readonly end: () => string
  /** The gateway error for a failure of the upstream's body. */
  readonly bodyError: (error: TransportError) => GatewayError.GatewayError
  /** The in-band error frame, in the client's dialect. */
  readonly errorFrame: (error: GatewayError.GatewayError) => string
  /** Called once, however the relay ends. */
  readonly onEnd: (end: RelayEnd) => void
}

const unreadable = () => new GatewayError.UpstreamUnavailable({ message: "The upstream's answer could not be read." })

const asGatewayError = (error: unknown): GatewayError.GatewayError =>
  GatewayError.isGatewayError(error) ? error : unreadable()

/**
 * A streamed answer on its way to a client: the host starts it with its sink,
 * calls `pull` when the sink has room again, and `cancel` when the client went
 * away.
 *
 * @category relay
 */
export class Relay {
  private readonly options: RelayOptions
  private readonly decoder = new TextDecoder()
  private sink: FrameSink | undefined
  private flow: BodyFlow | undefined
  private ended = false
  private reported = false

  constructor(options: RelayOptions) {
    this.options = options
  }

  /** Writes the first frames to `sink` and starts reading the upstream as the sink takes them. */
  start(sink: FrameSink): void {
    this.sink = sink
    this.flow = this.options.body.flow({ chunk: this.onChunk, end: this.onUpstreamEnd, error: this.onUpstreamError })
    if (this.send(this.options.first)) this.flow.resume()
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
    let text: string
    try {
      text = this.options.push(this.decoder.decode()) + this.options.end()
    } catch (error) {
      return this.fail(asGatewayError(error))
    }
    this.ended = true
    const sink = this.sink!
    if (text.length > 0) sink.write(text)
    sink.close()
    this.finish({ _tag: "Complete" })
  }

  private readonly onUpstreamError = (error: TransportError): void => {
    if (this.ended) return
    this.fail(this.options.bodyError(error))
  }

  /** Transforms and writes one chunk; false when the sink asks to wait or the relay ended. */
  private send(chunk: Uint8Array): boolean {
    if (this.ended) return false
    let text: string
    try {
      text = this.options.push(this.decoder.decode(chunk, { stream: true }))
    } catch (error) {
      this.fail(asGatewayError(error))
      return false
    }
    return text.length === 0 ? true : this.sink!.write(text)
  }

  /** Ends the answer in-band with the error, and stops reading the upstream. */
  private fail(error: GatewayError.GatewayError): void {
    this.ended = true
    this.flow?.cancel()
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
