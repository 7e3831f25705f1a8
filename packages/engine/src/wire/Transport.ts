/**
 * The port upstream requests go through. The host provides it: node-http
 * sends through Undici's connection pools, the web handler through the
 * runtime's `fetch` (`FetchTransport`). The engine never touches a socket, a
 * timer or a runtime's stream type: it sends a request with its deadlines and
 * reads the answer through `ResponseBody`.
 *
 * A transport keeps every deadline of a request itself (docs/routing.md):
 *
 * - `connectMs` (the channel's): opening the connection;
 * - `deadlines.firstByte`: the response's headers, and for `next` the body's
 *   chunks read before the answer is committed to (a stream's opening);
 * - `idleMs` (the channel's): the longest gap between two chunks of a body;
 * - `deadlines.total`: the whole call (sending and reading), after which the
 *   request or its body is aborted.
 *
 * and reports a missed one, or a failure of the connection, as a
 * `TransportError` of the matching `kind`; the engine words it for the client
 * (`Upstream.transportError`). Interrupting the fiber that waits on `send`,
 * `text`, `prefix` or `next` aborts the request.
 *
 * @since 0.1.0
 */
import type { Domain } from "@modelgate/core"
import { Context, Data, type Effect } from "effect"

/**
 * When an attempt must have its first byte, and when the whole call must be
 * over (epoch ms).
 *
 * @category models
 */
export interface Deadlines {
  readonly firstByte: number
  readonly total: number
}

/** One upstream request. @category models */
export interface TransportRequest {
  /** The channel it goes to: its `timeouts.connectMs` and `timeouts.idleMs` apply. */
  readonly channel: Domain.Channel
  readonly method: "GET" | "POST"
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  /** JSON text, or its UTF-8 bytes (a client's body forwarded as it came). */
  readonly body?: string | Uint8Array | undefined
  readonly deadlines: Deadlines
}

/**
 * What went wrong below HTTP: a missed deadline, a connection that could not
 * be opened or broke, or an answer larger than the reader allows.
 *
 * @category errors
 */
export type FailureKind =
  | "connect-timeout"
  | "first-byte-timeout"
  | "idle-timeout"
  | "total-timeout"
  | "unreachable"
  | "broken"
  | "empty"
  | "too-large"

/**
 * A transport failure. `detail` is the transport's own code or words (e.g.
 * `ECONNREFUSED`), for messages.
 *
 * @category errors
 */
export class TransportError extends Data.TaggedError("TransportError")<{
  readonly kind: FailureKind
  readonly detail?: string | undefined
}> {}

/** Where the rest of a stream's body goes, chunk by chunk. @category models */
export interface BodySink {
  /** A chunk of the body. */
  readonly chunk: (bytes: Uint8Array) => void
  /** The body ended. */
  readonly end: () => void
  /** The body failed (a deadline, a reset). */
  readonly error: (error: TransportError) => void
}

/** The flow of a stream's body into its sink; it starts paused. @category models */
export interface BodyFlow {
  /** Deliver chunks (again). */
  readonly resume: () => void
  /** Stop delivering until `resume` (backpressure from the client). */
  readonly pause: () => void
  /** Stop for good and let the connection go; nothing more is delivered. */
  readonly cancel: () => void
}

/**
 * An upstream answer's body, read once, in one of these ways.
 *
 * @category models
 */
export interface ResponseBody {
  /** The whole body as text; `too-large` past `maxBytes` (the rest is never read). */
  readonly text: (maxBytes: number) => Effect.Effect<string, TransportError>
  /** At most `maxBytes` of the body as text (an error answer); the rest is dropped, and a failure yields what was read. */
  readonly prefix: (maxBytes: number) => Effect.Effect<string>
  /**
   * The next chunk of a stream whose answer is not committed to yet (its
   * first chunk, then more while its first event is incomplete), within the
   * first-byte (or total) deadline; `undefined` once the body ended.
   */
  readonly next: Effect.Effect<Uint8Array | undefined, TransportError>
  /** After `next`: the rest of the body, into `sink` (paused until `resume`); not called once `next` saw the end. */
  readonly flow: (sink: BodySink) => BodyFlow
  /** Drops the body without reading it. */
  readonly discard: () => void
}

/** An upstream's answer: its status, its headers (names in lower case) and its body, not read yet. @category models */
export interface TransportResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: ResponseBody
}

/**
 * The transport service.
 *
 * @category services
 */
export class Transport extends Context.Service<Transport, {
  /** Sends a request and returns the answer once its headers arrived (the status is not judged here). */
  readonly send: (request: TransportRequest) => Effect.Effect<TransportResponse, TransportError>
}>()("modelgate/engine/Transport") {}
