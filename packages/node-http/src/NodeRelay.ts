/**
 * The engine's stream relay as a Node `Readable`, piped to the socket by the
 * HTTP server with the socket's own backpressure: the relay writes frames into
 * this readable's buffer, `_read` (the socket has room) asks it for more, and
 * `_destroy` (the client went away, or the server cut the answer) cancels it.
 *
 * @since 0.1.0
 */
import type { Relay } from "@modelgate/engine/wire/Relay"
import { Readable } from "node:stream"

/**
 * A readable of a relay's frames.
 *
 * @category relay
 */
export class NodeRelay extends Readable {
  private readonly relay: Relay

  constructor(relay: Relay) {
    super({ highWaterMark: 64 * 1024 })
    this.relay = relay
    relay.start({
      write: (frames) => this.push(frames),
      close: () => {
        this.push(null)
      }
    })
  }

  override _read(): void {
    this.relay.pull()
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.relay.cancel()
    callback(error)
  }
}
