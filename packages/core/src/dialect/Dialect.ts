/**
 * What a call needs from a wire dialect, as two interfaces every adapter
 * package implements whole: the client side (`ClientDialect`: how a caller's
 * request is read, where its key is, how answers, streams, errors and model
 * lists are written back) and the upstream side (`UpstreamDialect`: where a
 * channel is reached and with which headers, how a canonical request is
 * encoded for it, how its answers, streams and errors are read).
 *
 * The call engine (`@modelgate/engine`) is written against these interfaces
 * only, so adding a dialect is adding an implementation, never another copy
 * of the call flow; and a host in any runtime can take an adapter's dialect
 * and speak it.
 *
 * Everything here is synchronous or an Effect without requirements: a
 * dialect does no I/O.
 *
 * @since 0.1.0
 */
import type { Effect } from "effect"
import type { Snapshot } from "../admission/RateLimiter.ts"
import type { Channel, Dialect, Model, WireDialect } from "../domain/Domain.ts"
import {
  echo,
  type GatewayError,
  type InvalidRequest,
  type UnsupportedFeature,
  UpstreamUnavailable
} from "../errors/GatewayError.ts"
import * as Sse from "../wire/Sse.ts"
import type * as SseChunks from "../wire/SseChunks.ts"
import type { ChatRequest, ChatResponse, EmbedRequest, EmbedResponse, StreamEvent } from "./Canonical.ts"
import type { BodyEdit } from "./Params.ts"
import type { MediaCounts } from "./Tokens.ts"

/**
 * What a call consumed, as metered from the upstream's answer (or estimated
 * locally when the upstream reported nothing).
 *
 * @category metering
 */
export interface Metered {
  readonly promptTokens: number
  readonly completionTokens: number
  readonly cachedTokens: number
  /** Prompt tokens written to the upstream's prompt cache (part of `promptTokens`); absent: none. */
  readonly cacheWriteTokens?: number | undefined
  /**
   * Of `completionTokens`, those the model spent reasoning, when the upstream
   * says (OpenAI `completion_tokens_details.reasoning_tokens`, Gemini
   * `thoughtsTokenCount`); absent: not reported.
   */
  readonly reasoningTokens?: number | undefined
  /** Whether the counts are the upstream's own (false: local estimates). */
  readonly reported: boolean
  /**
   * The upstream reported usage whose figures are not token counts (negative,
   * fractional, not numbers; `Tokens.badCount` names the first): they were
   * refused, and the counts are local estimates (`reported` is false).
   */
  readonly usageRejected?: string | undefined
}

/** Nothing consumed: the call failed before any output. @category metering */
export const nothingMetered: Metered = { promptTokens: 0, completionTokens: 0, cachedTokens: 0, reported: false }

/**
 * A request's headers, names in lower case. A header sent several times may
 * be given as its values joined by ", ".
 *
 * @category models
 */
export type HeaderBag = Readonly<Record<string, string | ReadonlyArray<string> | undefined>>

/**
 * One chat call as its client's dialect serves it: made once per request by
 * `ClientDialect.open`, which inspects the body (without decoding more of it
 * than the call needs: a large body's full structure is left for `check`),
 * and kept for the whole call. It owns everything the call needs of the
 * client's dialect, and the state those parts share (what the inspection
 * learnt, the stream writer an in-band error must end): the engine never
 * comes back to the dialect for it.
 *
 * The members by the way a call is served: `forward`, `relayedUsage`,
 * `renameInBody`, `meter` and `streamRenamer` relay a channel of the client's
 * own dialect (bytes in, bytes out, metered); `canonical`, `encodeResponse`
 * and `frameEncoder` translate through the canonical model; `check`,
 * `errorFrame` and `streamContentType` serve both.
 *
 * @category calls
 */
export interface ChatCall {
  /** The model asked for. */
  readonly model: string
  readonly stream: boolean
  /** Output tokens the client asked for (per answer), if it said. */
  readonly maxOutputTokens: number | undefined
  /** How many answers the client asked for (OpenAI `n`, Gemini `candidateCount`; 1 when it did not say): the hold covers each. */
  readonly choices: number
  /** Media parts (images, audio, files; inline or by URL) in the prompt, of every kind (the rate limit's estimate). */
  readonly mediaParts: number
  /**
   * The same parts by kind, for the hold (`Tokens.promptBound`: each kind at
   * the model's `media_part_tokens` figure); absent: every part is an image.
   */
  readonly media?: MediaCounts | undefined
  /** The `Content-Type` of this call's stream. */
  readonly streamContentType: string
  /**
   * The request's sampling settings where it set them as numbers, for the
   * call's trace (`gen_ai.request.temperature`, `gen_ai.request.top_p`):
   * read from what the inspection's top-level scan found, never by parsing
   * the body, whatever its size. Only a traced call asks.
   */
  sampling?(): SamplingSettings
  /**
   * The structure check the inspection left out for a large body, run when a
   * channel of the client's own dialect refused it, or when parsing the body
   * (for a translation, or a channel's parameter edit) failed: the error
   * naming the field, or `undefined` when the body is well formed (the
   * upstream's refusal stands).
   */
  check(): InvalidRequest | undefined
  /**
   * The request in the canonical model, for a channel of another dialect. It
   * may throw the parser's `SyntaxError` for a large body JSON refuses deep
   * inside (which the inspection's scan let through): `check` names it.
   */
  canonical(): Effect.Effect<ChatRequest, InvalidRequest | UnsupportedFeature>
  /**
   * The body to forward to a same-dialect upstream under `upstreamModel`,
   * with the channel's parameter edit applied (none: the fast path). An edit
   * may throw the parser's `SyntaxError`, as `canonical` may.
   */
  forward(upstreamModel: string, edit?: BodyEdit | undefined): string | Uint8Array
  /** What a relayed non-stream answer (parsed) consumed; `promptEstimate` stands in when it reports nothing. */
  relayedUsage(json: unknown, promptEstimate: number): Metered
  /**
   * A relayed non-stream answer with the public model name in place of the
   * upstream's (channels with a `model_map`), changed at the string level so
   * the rest of the upstream's bytes are relayed as they are.
   */
  renameInBody(body: string, publicModel: string): string
  /** The meter of a relayed stream: the upstream's bytes in, the client's out, metered on the way. */
  meter(): PassthroughMeter
  /** `renameInBody` for a relayed stream, applied to the meter's output (complete events only). */
  streamRenamer(upstreamModel: string, publicModel: string): (text: string) => string
  /** A canonical answer in the client's shape (a Responses answer echoes the request's settings). */
  encodeResponse(response: ChatResponse, model: string): unknown
  /**
   * The writer of a translated stream in the client's frames. `promptTokens`:
   * the call's estimate of its prompt, for a dialect whose streams state the
   * prompt's tokens before the upstream's usage arrives (Anthropic's
   * `message_start`); the final frames carry the upstream's own count.
   */
  frameEncoder(model: string, promptTokens: number): FrameEncoder
  /**
   * The in-band error frame for this call's stream, which already started
   * (relayed or translated), and the last text of that stream (a JSON array
   * stream is closed by it).
   */
  errorFrame(error: GatewayError): string
}

/** A request's sampling settings, where it set them. @category models */
export interface SamplingSettings {
  readonly temperature: number | undefined
  readonly topP: number | undefined
}

/** What the route said of a call (Gemini puts the model and the stream flag in the path). @category models */
export interface RouteHints {
  readonly model?: string | undefined
  readonly stream?: boolean | undefined
  /** Gemini streams: server-sent events (`alt=sse`) rather than a streamed JSON array. */
  readonly sse?: boolean | undefined
}

/**
 * What a passthrough meter gives the client for a piece of an upstream's
 * stream: whole events exactly as they came (`SseChunks.Events`: forward their
 * bytes, which costs no encoding), text (events were changed, left out or
 * reframed: forward it), or nothing yet.
 *
 * @category streams
 */
export type Forward = SseChunks.Events | string | undefined

/** Turns an upstream's raw stream bytes into what the client gets, metering them on the way. @category streams */
export interface PassthroughMeter {
  /** What to forward for this chunk of the upstream's bytes (complete events only). */
  readonly push: (chunk: Uint8Array) => Forward
  /** What is still to forward when the upstream ended. */
  readonly end: () => Forward
  /** What was consumed so far. */
  readonly metered: (promptEstimate: number) => Metered
}

/**
 * Incremental upstream stream decoding to canonical events. `push` and `end`
 * throw a `GatewayError` when the upstream reported an error in-band or sent
 * something that cannot be read (the events decoded before it are returned
 * first, and the error is thrown by the next call).
 *
 * @category streams
 */
export interface EventDecoder {
  readonly push: (text: string) => ReadonlyArray<StreamEvent>
  readonly end: () => ReadonlyArray<StreamEvent>
}

/** Incremental canonical events to client stream frames. @category streams */
export interface FrameEncoder {
  readonly push: (events: ReadonlyArray<StreamEvent>) => string
  readonly end: () => string
}

/** An error rendered for a client. @category errors */
export interface ErrorResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: unknown
}

/**
 * An embeddings request as a client sent it: what the engine needs to admit
 * and route it, the canonical request for a channel of another dialect (or why
 * there is none), and the body for a channel of the client's own dialect.
 *
 * @category embeddings
 */
export interface EmbedCall {
  readonly model: string
  /** The input tokens, counted locally: the rate limit's estimate, and the bill when the upstream reports none. */
  readonly tokens: number
  /** The canonical request, or why these inputs cannot go to another dialect's channel. */
  readonly canonical: EmbedRequest | UnsupportedFeature
  /** The body for a channel of the client's own dialect, naming `upstreamModel`. */
  readonly forward: (upstreamModel: string) => string
  /** How many embeddings the client asked for. */
  readonly count: number
  /** What the client side keeps of the request to write its answer (its own business). */
  readonly request: unknown
  /** The route's method, where a dialect has several (Gemini: `embedContent` or `batchEmbedContents`). */
  readonly operation?: string | undefined
}

/** The client side of the embeddings call, for dialects that have one. @category embeddings */
export interface ClientEmbeddings {
  /** Reads an embeddings body (`operation` names the route's method where a dialect has several). */
  readonly decode: (
    body: string,
    hints: RouteHints & { readonly operation?: string | undefined }
  ) => Effect.Effect<EmbedCall, InvalidRequest>
  /** A canonical answer in the client's shape. */
  readonly encode: (response: EmbedResponse, call: EmbedCall, model: string) => unknown
  /**
   * A same-dialect answer's text with the public model name (it is relayed as
   * is when the channel keeps the model's name: `publicModel` undefined), and
   * the tokens it reported (`usageRejected`: it reported a figure that is not
   * a token count, named there). Fails when the text is not an embeddings
   * answer (an error, something else). `channel` names the upstream in errors.
   */
  readonly passthrough: (text: string, publicModel: string | undefined, channel: string) => Effect.Effect<
    { readonly body: string; readonly promptTokens?: number | undefined; readonly usageRejected?: string | undefined },
    UpstreamUnavailable
  >
}

/** The client side of a dialect. @category models */
export interface ClientDialect {
  readonly dialect: Dialect
  /** The API key presented with a request (`search`: the raw query string), or undefined when none was. */
  readonly presentedKey: (headers: HeaderBag, search: string) => string | undefined
  /**
   * Opens a chat call: reads what it needs from the body (its UTF-8 bytes as
   * received) and the route's hints, or fails naming what is wrong.
   */
  readonly open: (body: Uint8Array, hints: RouteHints) => Effect.Effect<ChatCall, InvalidRequest>
  /**
   * An error in the dialect's envelope, with its status and headers (a rate
   * limit's own headers included); `nowMs` (epoch milliseconds), when given, is
   * when it happened, for dialects whose reset headers are dates.
   */
  readonly renderError: (error: GatewayError, nowMs?: number) => ErrorResponse
  /**
   * Headers a successful answer carries about the caller's rate limits (`{}`
   * for dialects without such headers); `nowMs` is when the call was admitted
   * (epoch milliseconds), for dialects whose reset headers are dates.
   */
  readonly rateLimitHeaders: (snapshot: Snapshot, nowMs: number) => Readonly<Record<string, string>>
  /** The models a key may use, in the dialect's list shape (`search`: the raw query string, for paging). */
  readonly modelsList: (models: ReadonlyArray<Model>, search: string) => Effect.Effect<unknown, InvalidRequest>
  /** One model in the dialect's shape. */
  readonly modelObject: (model: Model) => unknown
  /** Where the dialect's clients list their models, for messages (`GET /v1/models`). */
  readonly modelsListPath: string
  /**
   * Headers of the client's request that a channel of the client's own
   * dialect gets with the relayed body (Anthropic's `anthropic-beta`, which
   * turns on the features such a body uses); the channel's own headers win.
   * Absent: none.
   */
  readonly forwardHeaders?: ((headers: HeaderBag) => Readonly<Record<string, string>>) | undefined
  readonly embeddings?: ClientEmbeddings | undefined
  readonly countTokens?: ClientCountTokens | undefined
}

/**
 * A token count request as a client sent it.
 *
 * @category countTokens
 */
export interface CountCall {
  /** The model to count for. */
  readonly model: string
  /** The local estimate, in the dialect's answer shape. */
  readonly local: unknown
  /** The body for a channel of the client's own dialect that counts, naming `upstreamModel`. */
  readonly forward: (upstreamModel: string) => string
  /**
   * The request in the canonical model, for a channel whose counter takes a
   * translated request (`UpstreamCountTokens.translated`: Bedrock's
   * `CountTokens`); absent: such channels are not asked.
   */
  readonly canonical?: (() => Effect.Effect<ChatRequest, InvalidRequest | UnsupportedFeature>) | undefined
  /** An upstream's count of input tokens in the dialect's answer shape (with `canonical`). */
  readonly answer?: ((tokens: number) => unknown) | undefined
}

/**
 * The client side of a token count (Gemini `:countTokens`, Anthropic
 * `/v1/messages/count_tokens`): never billed, and answered by a channel of
 * the client's own dialect when one can count, else counted locally.
 *
 * @category countTokens
 */
export interface ClientCountTokens {
  /** Reads a count request (the route may name the model); fails when the body is not a valid request. */
  readonly decode: (body: string, hints: RouteHints) => Effect.Effect<CountCall, InvalidRequest>
}

/** The upstream side of the embeddings call, for dialects that have one. @category embeddings */
export interface UpstreamEmbeddings {
  /**
   * The endpoint takes only its own request shape (Vertex AI's `:predict`),
   * never a client's body of the same dialect: every request is translated.
   */
  readonly translateOnly?: boolean | undefined
  /**
   * The embeddings endpoint of a channel. `operation`: the client's method, for
   * a client of this same dialect whose body is relayed; undefined for a
   * translated request (the dialect's method for a canonical request).
   */
  readonly url: (channel: Channel, upstreamModel: string, operation: string | undefined) => string
  /**
   * How many inputs one translated request of a model may carry (Titan on
   * Bedrock and Gemini's embedding models on Vertex embed one text a
   * request): more are sent in several requests, in order, their vectors
   * joined and their tokens summed. Absent: any number.
   */
  readonly inputsPerRequest?: ((upstreamModel: string) => number) | undefined
  readonly encode: (request: EmbedRequest, upstreamModel: string) => Effect.Effect<string, UnsupportedFeature>
  /**
   * Reads an answer; `channel` names the upstream in errors; `headers` are
   * the answer's (lower-case names), for an upstream that says its usage there.
   */
  readonly decode: (
    text: string,
    count: number,
    channel: string,
    headers?: Readonly<Record<string, string>>
  ) => Effect.Effect<EmbedResponse, UpstreamUnavailable>
}

/**
 * The upstream's own token counter (Gemini `:countTokens`), where there is
 * one. A client of the same dialect gets its answer as the upstream wrote it.
 *
 * @category countTokens
 */
export interface UpstreamCountTokens {
  readonly url: (channel: Channel, upstreamModel: string) => string
  /** A client's count body (same dialect) as this upstream takes it; absent: as it is. */
  readonly relayBody?: ((body: string) => string) | undefined
  /** Whether an answer is a token count (anything else is the upstream failing). */
  readonly isCount: (text: string) => boolean
  /**
   * The counter takes a translated request from a client of another dialect
   * (Bedrock's `CountTokens`, which no client speaks; Claude's and Gemini's
   * counters on Vertex AI for each other's clients): its body for a canonical
   * request, and the input tokens read from an answer (undefined: not a count).
   * A client of the upstream's own dialect has its body relayed.
   */
  readonly translated?: {
    readonly encode: (
      request: ChatRequest,
      upstreamModel: string
    ) => Effect.Effect<string, InvalidRequest | UnsupportedFeature>
    readonly read: (text: string) => number | undefined
  } | undefined
}

/**
 * What the engine gives an upstream answer's decoder for what the dialect's
 * answers may not carry: a fresh random id (hex) and the time the answer
 * started (epoch seconds). Dialects stay free of clocks and randomness.
 *
 * @category models
 */
export interface AnswerStart {
  readonly id: string
  readonly created: number
}

/**
 * What the opening of a 200 stream is, judged before the call commits to it
 * (`UpstreamDialect.opening`): the start of an answer; not known yet (its
 * first event is incomplete: read on); or the upstream failing (an error
 * event, broken JSON, something that is not the dialect's stream, nothing).
 *
 * @category streams
 */
export type Opening = "answer" | "incomplete" | UpstreamUnavailable

/**
 * A 200 whose body is the upstream's error (`message`: its own words, quoted
 * at most `GatewayError.ECHO_LIMIT` characters): an upstream failure, worded
 * alike by every dialect's `notAnAnswer` and `opening`.
 *
 * @category failures
 */
export const answeredError = (channel: string, message: string | undefined): UpstreamUnavailable =>
  new UpstreamUnavailable({
    message: `The upstream '${channel}' answered 200 with an error instead of an answer${
      message === undefined || message === "" ? "" : `: ${echo(message)}`
    }`
  })

/** A 200 whose body (or first stream event) is not `what` (e.g. "a chat completion"). @category failures */
export const answeredOther = (channel: string, what: string): UpstreamUnavailable =>
  new UpstreamUnavailable({ message: `The upstream '${channel}' answered 200 with something that is not ${what}.` })

/** A 200 stream whose first event is not JSON. @category failures */
export const brokenEvent = (channel: string): UpstreamUnavailable =>
  new UpstreamUnavailable({ message: `The upstream '${channel}' answered 200 with a stream event that is not JSON.` })

/** A 200 stream that ended without an answer (no event, or only the end marker). @category failures */
export const emptyStream = (channel: string): UpstreamUnavailable =>
  new UpstreamUnavailable({ message: `The upstream '${channel}' ended its stream without an answer.` })

/** The first event of a stream's opening and its data, a JSON object (`firstEvent`). @category streams */
export interface OpeningEvent {
  readonly event: Sse.Event
  readonly json: Record<string, unknown>
}

/** Whether `firstEvent` found the event, rather than what the opening already is. @category streams */
export const isOpeningEvent = (first: OpeningEvent | Opening): first is OpeningEvent =>
  typeof first === "object" && "json" in first

/** Text parsed at a time while looking for the first event. */
const OPENING_SLICE = 2048

/**
 * The first event of `text` (`ended`: the stream ended with it), or
 * undefined: parsed a slice at a time, so an opening that holds a whole
 * burst of events (a fast upstream's stream read at once) costs its first
 * event, not the burst.
 */
const firstOf = (text: string, ended: boolean): Sse.Event | undefined => {
  const parser = new Sse.Parser()
  for (let at = 0; at < text.length; at += OPENING_SLICE) {
    const events = parser.push(at === 0 && text.length <= OPENING_SLICE ? text : text.slice(at, at + OPENING_SLICE))
    if (events.length > 0) return events[0]
  }
  return ended ? parser.end()[0] : undefined
}

/**
 * The first event of a 200 stream's opening, with its data parsed as a JSON
 * object, for a dialect's `opening` to judge; or what the opening already
 * is: `"incomplete"` before a whole event, the upstream failing when the
 * stream ended without one, when the data is not JSON, or when it is not an
 * object (`what` names what it should be: "a chat completion chunk").
 * `endMarker` is the data that ends a stream (OpenAI's `[DONE]`): as the
 * first event, an empty stream.
 *
 * @category streams
 */
export const firstEvent = (
  text: string,
  ended: boolean,
  channel: string,
  what: string,
  endMarker?: string
): OpeningEvent | Opening => {
  const event = firstOf(text, ended)
  if (event === undefined) return ended ? emptyStream(channel) : "incomplete"
  if (event.data === endMarker) return emptyStream(channel)
  let json: unknown
  try {
    json = JSON.parse(event.data)
  } catch {
    return brokenEvent(channel)
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) return answeredOther(channel, what)
  return { event, json: json as Record<string, unknown> }
}

/**
 * A model an upstream lists (`UpstreamDialect.listModels`), with what the
 * list says of it.
 *
 * @category models
 */
export interface ListedModel {
  /** The name calls use (Gemini's without `models/`). */
  readonly id: string
  readonly displayName?: string | undefined
  readonly inputTokenLimit?: number | undefined
  readonly outputTokenLimit?: number | undefined
  /** It makes embeddings, not chat answers. */
  readonly embedding?: boolean | undefined
}

/** One page of an upstream's model list, and the token of the next (undefined on the last). @category models */
export interface ModelListPage {
  readonly models: ReadonlyArray<ListedModel>
  readonly next?: string | undefined
}

/**
 * An upstream's own list of its models (OpenAI `GET /v1/models`, Gemini
 * `GET /v1beta/models`, Anthropic `GET /v1/models`), read with a channel's
 * key and headers (`UpstreamDialect.headers`).
 *
 * @category models
 */
export interface UpstreamModelList {
  /**
   * The list's address for a channel: its first page (`page` undefined) or
   * the one after `page` (a token from `decode`); undefined when the channel
   * cannot list its models (Azure OpenAI deployments, which its keys cannot list).
   */
  readonly url: (channel: Channel, page: string | undefined) => string | undefined
  /** Reads one page (`channel` names the upstream in errors); a body that is not the list fails. */
  readonly decode: (text: string, channel: string) => Effect.Effect<ModelListPage, UpstreamUnavailable>
  /**
   * The address of a request that tests a channel's key and depends on no
   * model (the health probe's): the list's first page (default), or for a
   * channel that cannot list (Azure OpenAI) the resource's own model list.
   * Its answer is read with `decode`.
   */
  readonly keyCheckUrl?: ((channel: Channel) => string | undefined) | undefined
}

/**
 * Incremental decoding of a binary stream (AWS's event-stream framing) to
 * canonical events; throws like `EventDecoder`.
 *
 * @category streams
 */
export interface ByteDecoder {
  readonly push: (bytes: Uint8Array) => ReadonlyArray<StreamEvent>
  readonly end: () => ReadonlyArray<StreamEvent>
}

/**
 * The streams of an upstream whose answers are not server-sent events but
 * binary frames (Bedrock's ConverseStream): how their opening is judged and
 * how they decode, on the bytes.
 *
 * @category streams
 */
export interface BinaryStream {
  /** The stream's content type (anything else answering a stream request is not a stream). */
  readonly contentType: string
  /**
   * Judges the bytes a 200 stream opened with, as `UpstreamDialect.opening`
   * judges text; a first frame announcing more than `maxEventBytes` fails it.
   */
  readonly opening: (
    bytes: Uint8Array,
    ended: boolean,
    channel: string,
    maxEventBytes?: number
  ) => Opening | GatewayError
  /**
   * A decoder for one stream. `bound`: the operator's bound on one event
   * (`max_event_bytes`): a frame whose prelude announces more fails the stream
   * there, before its bytes are kept (`channel` names the upstream in the error).
   */
  readonly decoder: (start: AnswerStart, bound?: StreamBound) => ByteDecoder
}

/** The bound on one event of a binary stream (`BinaryStream.decoder`). @category streams */
export interface StreamBound {
  readonly maxEventBytes: number
  readonly channel: string
}

/** The upstream side of a dialect. @category models */
export interface UpstreamDialect {
  /** The wire format (`bedrock`: spoken to upstreams only, so never relayed to a client as it is). */
  readonly dialect: WireDialect
  /**
   * The body of a client of this same dialect, relayed (`Inspected.forward`),
   * as this upstream takes it (Claude on Vertex AI: without `model`, with
   * Vertex's `anthropic_version`); absent: as it is.
   */
  readonly relayBody?:
    | ((body: string | Uint8Array) => Effect.Effect<string | Uint8Array, UnsupportedFeature>)
    | undefined
  /** Streams in binary frames rather than server-sent events (`eventDecoder` and `opening` are not used). */
  readonly binaryStream?: BinaryStream | undefined
  /** The chat endpoint of a channel for an upstream model. */
  readonly chatUrl: (channel: Channel, upstreamModel: string, stream: boolean) => string
  /** The auth and content headers for a channel's key, the channel's own headers included. */
  readonly headers: (channel: Channel, apiKey: string) => Record<string, string>
  /** The body for the upstream; `model` (the catalog's model) says what the model takes. */
  readonly encodeRequest: (
    request: ChatRequest,
    upstreamModel: string,
    model?: Model
  ) => Effect.Effect<string, InvalidRequest | UnsupportedFeature>
  /** Reads an answer; `start` gives what the answer may lack (an id, its creation time). */
  readonly decodeResponse: (json: unknown, start: AnswerStart) => Effect.Effect<ChatResponse, UpstreamUnavailable>
  /** A decoder for one stream; `start` gives what the stream may lack (an id, its creation time). */
  readonly eventDecoder: (start: AnswerStart) => EventDecoder
  /**
   * Why a 200 non-stream answer (parsed JSON) is not an answer of this
   * dialect (an error object, or not the dialect's answer shape), or undefined
   * when it is one. Only the top level is looked at: the same-dialect path
   * relays the answer without decoding it. `channel` names the upstream.
   */
  readonly notAnAnswer: (json: unknown, channel: string) => UpstreamUnavailable | undefined
  /**
   * Judges the text a 200 stream opened with (`ended`: the body ended after
   * it) before the call commits to the answer: its first event must be the
   * start of an answer, not an error event, broken JSON or nothing at all.
   * Comments and keep-alive events before it are skipped. `channel` names
   * the upstream.
   */
  readonly opening: (text: string, ended: boolean, channel: string) => Opening
  /**
   * An upstream error answer as a gateway error (retryable or not, the key's
   * fault or not). Only a clear refusal of the key itself (HTTP 401, and the
   * like in the dialect's words) is an `UpstreamUnavailable` with
   * `credentialsRefused`; a 403 about what the request asked for is the
   * caller's (`UpstreamRejected`).
   */
  readonly classify: (status: number, body: string, headers: Readonly<Record<string, string>>) => GatewayError
  readonly countTokens?: UpstreamCountTokens | undefined
  readonly embeddings?: UpstreamEmbeddings | undefined
  /** The upstream's own model list, where it has one. */
  readonly listModels?: UpstreamModelList | undefined
}
