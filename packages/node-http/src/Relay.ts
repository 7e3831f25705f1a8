/**
 * Relaying a streamed answer to the client: a Node `Readable` that reads the
 * upstream's body, turns each chunk into the client's frames with a
 * synchronous transform, and is piped to the socket by the HTTP server
 * (`HttpServerResponse.raw`), with the socket's own backpressure.
 *
 * Per chunk this costs one decode and the transform: no fiber, no Effect
 * stream stage, no timer (the connection keeps the idle and total deadlines,
 * see `Upstream.send`). How the relay ended is reported exactly once:
 *
 * - `Complete`: the upstream finished and the last frames were queued for the
 *   socket (a client that leaves while they are still being written is not
 *   told apart: the answer was generated);
 * - `Failed`: the upstream's body failed (a timeout, a reset) or the transform
 *   threw a gateway error (an in-band upstream error, an event it could not
 *   read): an error frame in the client's dialect ends the answer;
 * - `Closed`: the client went away (or the server cut the answer) first.
 *
 * @since 0.1.0
 */
import { GatewayError } from "@modelgate/core"
import { Readable } from "node:stream"

/** How a relay ended. @category models */
export type RelayEnd =
  | { readonly _tag: "Complete" }
  | { readonly _tag: "Failed"; readonly error: GatewayError.GatewayError }
  | { readonly _tag: "Closed" }

/** What a relay needs. @category models */
export interface RelayOptions {
  /** The first chunk, already read (the call committed to this upstream on it). */
  readonly first: Uint8Array
  /** The rest of the upstream's body, paused. */
  readonly body: Readable
  /** The client's frames for a piece of the upstream's text; may throw a gateway error. */
  readonly push: (text: string) => string
  /** The client's last frames once the upstream finished; may throw a gateway error. */
  readonly end: () => string
  /** The gateway error for a failure of the upstream's body. */
  readonly bodyError: (error: unknown) => GatewayError.GatewayError
  /** The in-band error frame, in the client's dialect. */
  readonly errorFrame: (error: GatewayError.GatewayError) => string
  /** Called once, however the relay ends. */
  readonly onEnd: (end: RelayEnd) => void
}

const unreadable = () => new GatewayError.UpstreamUnavailable({ message: "The upstream's answer could not be read." })

const asGatewayError = (error: unknown): GatewayError.GatewayError =>
  GatewayError.isGatewayError(error) ? error : unreadable()

/**
 * The relay: a readable of the client's frames.
 *
 * @category relay
 */
export class Relay extends Readable {
  private readonly options: RelayOptions
  private readonly decoder = new TextDecoder()
  private ended = false

  constructor(options: RelayOptions) {
    super({ highWaterMark: 64 * 1024 })
    this.options = options
    const { body } = options
    body.on("data", this.onData)
    body.once("end", this.onUpstreamEnd)
    body.once("error", this.onUpstreamError)
    body.pause()
    this.send(options.first)
  }

  override _read(): void {
    if (!this.ended) this.options.body.resume()
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.detach()
    this.options.body.destroy()
    this.finish({ _tag: "Closed" })
    callback(error)
  }

  private readonly onData = (chunk: Uint8Array): void => {
    if (!this.send(chunk)) this.options.body.pause()
  }

  private readonly onUpstreamEnd = (): void => {
    if (this.ended) return
    let text: string
    try {
      text = this.options.push(this.decoder.decode()) + this.options.end()
    } catch (error) {
      return this.fail(asGatewayError(error))
    }
    if (text.length > 0) this.push(text)
    this.ended = true
    this.detach()
    this.push(null)
    this.finish({ _tag: "Complete" })
  }

  private readonly onUpstreamError = (error: unknown): void => {
    if (this.ended) return
    this.fail(this.options.bodyError(error))
  }

  /** Transforms and queues one chunk; false when the socket asks to wait. */
  private send(chunk: Uint8Array): boolean {
    if (this.ended) return false
    let text: string
    try {
      text = this.options.push(this.decoder.decode(chunk, { stream: true }))
    } catch (error) {
      this.fail(asGatewayError(error))
      return false
    }
    return text.length === 0 ? true : this.push(text)
  }

  /** Ends the answer in-band with the error, and stops reading the upstream. */
  private fail(error: GatewayError.GatewayError): void {
    this.ended = true
    this.detach()
    this.options.body.destroy()
    this.push(this.options.errorFrame(error))
    this.push(null)
    this.finish({ _tag: "Failed", error })
  }

  private detach(): void {
    const { body } = this.options
    body.off("data", this.onData)
    body.off("end", this.onUpstreamEnd)
    body.off("error", this.onUpstreamError)
    // A late error from the body (it is destroyed) must not go unhandled.
    body.on("error", () => {})
  }

  private reported = false
  private finish(end: RelayEnd): void {
    if (this.reported) return
    this.reported = true
    this.options.onEnd(end)
  }
}
