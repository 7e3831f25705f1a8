/**
 * The part of a client dialect's call (`Dialect.ChatCall`) that every
 * adapter whose inspection keeps the body's bytes writes the same way: the
 * facts the inspection learnt (model, stream, media), the structure check a
 * large body skipped, the body forwarded to a channel of the same dialect
 * (the client's bytes with the model renamed, or the body with the channel's
 * parameters applied) and the usage of a relayed answer, each from the
 * adapter's passthrough module. An adapter extends it and writes only what
 * differs: the decode to canonical, the meter, the renamers, the encoders
 * and the error frame.
 *
 * @since 0.1.0
 */
import type { Effect } from "effect"
import type { GatewayError, InvalidRequest, UnsupportedFeature } from "../errors/GatewayError.ts"
import { type Fields, type KeptBody, numberOf } from "../wire/JsonScan.ts"
import type { ChatRequest, ChatResponse } from "./Canonical.ts"
import type { ChatCall, FrameEncoder, Metered, PassthroughMeter, SamplingSettings } from "./Dialect.ts"
import * as Params from "./Params.ts"
import type { MediaCounts } from "./Tokens.ts"

/**
 * What an adapter's inspection learnt of a body, as far as the call needs it.
 *
 * @category models
 */
export interface InspectedBody extends KeptBody {
  readonly model: string
  readonly stream: boolean
  readonly mediaParts: number
  readonly media: MediaCounts
  /** Where each top-level field lies in the bytes (the inspection's scan). */
  readonly fields: Fields
}

/**
 * What the call takes from the adapter's passthrough module.
 *
 * @category models
 */
export interface Passthrough<Body extends InspectedBody> {
  /** The structure check a large body skipped at inspection (`undefined` when well formed). */
  readonly checkStructure: (body: Body) => InvalidRequest | undefined
  /** The client's bytes for a channel of the same dialect, with the upstream's model name. */
  readonly upstreamBody: (body: Body, upstreamModel: string) => string | Uint8Array
  /** The usage of a relayed, non-streamed answer (`promptEstimate` when it reports none). */
  readonly usageOfResponse: (json: unknown, promptEstimate: number) => Metered
}

/**
 * A call over an inspected body (see the module doc).
 *
 * @category calls
 */
export abstract class PassthroughCall<Body extends InspectedBody> implements ChatCall {
  readonly model: string
  readonly stream: boolean
  readonly maxOutputTokens: number | undefined
  readonly choices: number
  readonly mediaParts: number
  readonly media: MediaCounts
  abstract readonly streamContentType: string
  readonly body: Body
  private readonly passthrough: Passthrough<Body>
  constructor(body: Body, passthrough: Passthrough<Body>, maxOutputTokens: number | undefined, choices = 1) {
    this.body = body
    this.passthrough = passthrough
    this.maxOutputTokens = maxOutputTokens
    this.choices = choices
    this.model = body.model
    this.stream = body.stream
    this.mediaParts = body.mediaParts
    this.media = body.media
  }
  check(): InvalidRequest | undefined {
    return this.passthrough.checkStructure(this.body)
  }
  forward(upstreamModel: string, edit?: Params.BodyEdit | undefined): string | Uint8Array {
    return edit?.params === undefined
      ? this.passthrough.upstreamBody(this.body, upstreamModel)
      : JSON.stringify({ ...Params.apply(this.body.json, edit.params), model: upstreamModel })
  }
  relayedUsage(json: unknown, promptEstimate: number): Metered {
    return this.passthrough.usageOfResponse(json, promptEstimate)
  }
  /** `temperature` and `top_p` (the same keys in every dialect of this kind), from the scan: the body is not parsed. */
  sampling(): SamplingSettings {
    const { bytes, fields } = this.body
    return { temperature: numberOf(bytes, fields, "temperature"), topP: numberOf(bytes, fields, "top_p") }
  }
  abstract canonical(): Effect.Effect<ChatRequest, InvalidRequest | UnsupportedFeature>
  abstract renameInBody(body: string, publicModel: string): string
  abstract meter(): PassthroughMeter
  abstract streamRenamer(upstreamModel: string, publicModel: string): (text: string) => string
  abstract encodeResponse(response: ChatResponse, model: string): unknown
  abstract frameEncoder(model: string, promptTokens: number): FrameEncoder
  abstract errorFrame(error: GatewayError): string
}
