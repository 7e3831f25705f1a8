/**
 * What the call flow needs from a dialect, as two small interfaces: the client
 * side (how a caller's request is read and its answers and errors written) and
 * the upstream side (how a channel is spoken to). `Dialects.ts` builds them from
 * the adapter packages; the flow in `Chat.ts` never looks at a wire format.
 *
 * @since 0.1.0
 */
import type { Canonical, Domain, GatewayError } from "@modelgate/core"
import type { Effect } from "effect"
import type { BodyEdit } from "./Params.ts"
import type { Metered } from "./Settlement.ts"

/** A request body inspected without a full decode (the same-dialect fast path). @category models */
export interface Inspected {
  readonly model: string
  readonly stream: boolean
  /** The client asked for usage in the stream (OpenAI `stream_options.include_usage`). */
  readonly includeUsage: boolean
  /** Output tokens the client asked for (per answer), if it said. */
  readonly maxOutputTokens: number | undefined
  /** How many answers the client asked for (OpenAI `n`, Gemini `candidateCount`; 1 when it did not say): the hold covers each. */
  readonly choices: number
  /** Media parts (images, audio, files; inline or by URL) in the prompt: the hold adds `Tokens.MEDIA_TOKENS` for each. */
  readonly mediaParts: number
  /** The parsed body, for the translation path. */
  readonly json: unknown
  /** Gemini streams: server-sent events (true) or a streamed JSON array (false). */
  readonly sse?: boolean | undefined
  /**
   * The body to forward to a same-dialect upstream under `upstreamModel`,
   * with the channel's parameter edit applied (none: the fast path).
   */
  readonly forward: (upstreamModel: string, edit?: BodyEdit | undefined) => string
}

/** Where the route put the model and stream flag (Gemini: in the path). @category models */
export interface RouteHints {
  readonly model?: string | undefined
  readonly stream?: boolean | undefined
  /** Gemini streams: server-sent events (`alt=sse`) rather than a streamed JSON array. */
  readonly sse?: boolean | undefined
}

/** Turns an upstream's raw stream text into what the client gets, metering it on the way. @category models */
export interface PassthroughMeter {
  /** The text to forward for this upstream text (complete events only). */
  readonly push: (text: string) => string
  /** The text still to forward when the upstream ended. */
  readonly end: () => string
  /** What was consumed so far. */
  readonly metered: (promptEstimate: number) => Metered
}

/** Incremental upstream stream decoding to canonical events. @category models */
export interface EventDecoder {
  readonly push: (text: string) => ReadonlyArray<Canonical.StreamEvent>
  readonly end: () => ReadonlyArray<Canonical.StreamEvent>
}

/** Incremental canonical events to client stream frames. @category models */
export interface FrameEncoder {
  readonly push: (events: ReadonlyArray<Canonical.StreamEvent>) => string
  readonly end: () => string
}

/** A rendered error. @category models */
export interface ErrorResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: unknown
}

/** The client side of a dialect. @category models */
export interface ClientCodec {
  readonly dialect: Domain.Dialect
  readonly inspect: (body: string, hints: RouteHints) => Effect.Effect<Inspected, GatewayError.InvalidRequest>
  readonly decodeRequest: (
    inspected: Inspected
  ) => Effect.Effect<Canonical.ChatRequest, GatewayError.InvalidRequest | GatewayError.UnsupportedFeature>
  readonly passthroughMeter: (inspected: Inspected) => PassthroughMeter
  readonly usageOfResponse: (json: unknown, promptEstimate: number) => Metered
  readonly encodeResponse: (response: Canonical.ChatResponse, model: string) => unknown
  readonly frameEncoder: (inspected: Inspected, model: string) => FrameEncoder
  readonly renderError: (error: GatewayError.GatewayError) => ErrorResponse
  /**
   * The in-band error frame for a stream that already started, and the last
   * text of that stream (a JSON array stream is closed by it).
   */
  readonly streamErrorFrame: (error: GatewayError.GatewayError, inspected?: Inspected) => string
  /**
   * A same-dialect non-stream answer with the public model name in place of the
   * upstream's (channels with a `model_map`), changed at the string level so
   * the rest of the upstream's bytes are relayed as they are.
   */
  readonly renameInBody: (body: string, publicModel: string) => string
  /**
   * The same for a relayed stream, applied to the passthrough meter's output
   * (complete events only).
   */
  readonly streamRenamer: (upstreamModel: string, publicModel: string) => (text: string) => string
  /** The `Content-Type` of a stream for this request; `text/event-stream` when absent. */
  readonly streamContentType?: (inspected: Inspected) => string
}

/** The upstream side of a dialect. @category models */
export interface UpstreamCodec {
  readonly dialect: Domain.Dialect
  /** The body for the upstream; `model` (the catalog's model) says what the model takes. */
  readonly encodeRequest: (
    request: Canonical.ChatRequest,
    upstreamModel: string,
    model?: Domain.Model
  ) => Effect.Effect<string, GatewayError.InvalidRequest | GatewayError.UnsupportedFeature>
  readonly decodeResponse: (json: unknown) => Effect.Effect<Canonical.ChatResponse, GatewayError.UpstreamUnavailable>
  readonly eventDecoder: () => EventDecoder
  readonly classify: (status: number, body: string, headers: Readonly<Record<string, string>>) => GatewayError.GatewayError
}
