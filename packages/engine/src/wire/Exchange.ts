/**
 * A call as the engine sees it, whatever runtime serves it: the request (its
 * method, path, query, headers, and a body read on demand within a size
 * limit) and the answer (a complete body, or a stream the host relays). Hosts
 * translate their own request and response types to and from these: node-http
 * its `IncomingMessage` and `ServerResponse`, the web handler `Request` and
 * `Response`.
 *
 * @since 0.1.0
 */
import { type Dialect, GatewayError } from "@modelgate/core"
import type { Effect } from "effect"
import type { CallTrace } from "../telemetry/Telemetry.ts"
import type { Relay } from "./Relay.ts"

/** An incoming request. @category models */
export interface GatewayRequest {
  readonly method: string
  /** The URL path, without the query string. */
  readonly path: string
  /** The raw query string, without `?` (empty when there is none). */
  readonly search: string
  /** Header names in lower case. */
  readonly headers: Dialect.HeaderBag
  /**
   * Reads the body's bytes as they came: `RequestTooLarge` beyond `maxBytes`
   * (the rest is not read), `InvalidRequest` when it cannot be read. Nothing
   * decodes them unless the call needs to (a same-dialect chat forwards them).
   */
  readonly body: (
    maxBytes: number
  ) => Effect.Effect<Uint8Array, GatewayError.RequestTooLarge | GatewayError.InvalidRequest>
  /**
   * The call's trace when tracing is on (`Telemetry.startCall`; the host runs
   * the program under it and ends it), undefined when it is off.
   */
  readonly trace?: CallTrace | undefined
}

/**
 * A request body as a host receives it, within `maxBytes`: refused by its
 * declared `content-length` before any of it is read (`declared`), or as soon
 * as its chunks pass the limit (`add`: the host stops reading), else its
 * chunks joined as they came (`body`). Every host reads bodies with it, so
 * they refuse the same bodies in the same words.
 *
 * @category bodies
 */
export class BodyBuffer {
  readonly maxBytes: number
  private readonly chunks: Array<Uint8Array> = []
  private bytes = 0

  constructor(maxBytes: number) {
    this.maxBytes = maxBytes
  }

  /** The refusal of a body whose declared length (`content-length`) passes the limit, or undefined. */
  declared(contentLength: string | null | undefined): GatewayError.RequestTooLarge | undefined {
    const declared = Number(contentLength ?? "")
    return Number.isFinite(declared) && declared > this.maxBytes ? tooLarge(this.maxBytes) : undefined
  }

  /** Takes the next chunk; the refusal once the body passed the limit (the chunk is not kept). */
  add(chunk: Uint8Array): GatewayError.RequestTooLarge | undefined {
    this.bytes += chunk.byteLength
    if (this.bytes > this.maxBytes) return tooLarge(this.maxBytes)
    this.chunks.push(chunk)
    return undefined
  }

  /** The body: its chunks joined (the one chunk as it is). */
  body(): Uint8Array {
    const chunks = this.chunks
    if (chunks.length === 0) return new Uint8Array(0)
    if (chunks.length === 1) return chunks[0]!
    const body = new Uint8Array(this.bytes)
    let at = 0
    for (const chunk of chunks) {
      body.set(chunk, at)
      at += chunk.byteLength
    }
    return body
  }
}

/** A request body larger than the gateway accepts. @category bodies */
export const tooLarge = (maxBytes: number): GatewayError.RequestTooLarge =>
  new GatewayError.RequestTooLarge({
    limitBytes: maxBytes,
    message: `The request body is larger than this gateway accepts (${maxBytes} bytes). Send a smaller request.`
  })

/** A request body the host could not read (the connection failed while it came). @category bodies */
export const unreadable = (): GatewayError.InvalidRequest =>
  new GatewayError.InvalidRequest({ message: "The request body could not be read." })

/** A complete answer: JSON (or other) text. @category models */
export interface TextAnswer {
  readonly _tag: "Text"
  readonly status: number
  /** Header names in lower case; `content-type` included. */
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

/** A streamed answer: the host starts the relay with its own sink. @category models */
export interface StreamAnswer {
  readonly _tag: "Stream"
  readonly status: number
  /** Header names in lower case; `content-type` included. */
  readonly headers: Readonly<Record<string, string>>
  readonly relay: Relay
}

/** What the engine answers. @category models */
export type Answer = TextAnswer | StreamAnswer

/**
 * A JSON answer.
 *
 * @category constructors
 */
export const json = (value: unknown, status = 200, headers: Readonly<Record<string, string>> = {}): TextAnswer => ({
  _tag: "Text",
  status,
  headers: { ...headers, "content-type": "application/json" },
  body: JSON.stringify(value)
})

/**
 * JSON text as it is (an upstream's bytes relayed).
 *
 * @category constructors
 */
export const jsonText = (body: string, status = 200, headers: Readonly<Record<string, string>> = {}): TextAnswer => ({
  _tag: "Text",
  status,
  headers: { ...headers, "content-type": "application/json" },
  body
})

/**
 * The same answer with one more header.
 *
 * @category combinators
 */
export const withHeader = (answer: Answer, name: string, value: string): Answer => ({
  ...answer,
  headers: { ...answer.headers, [name]: value }
})
