/**
 * Property laws of the Anthropic codecs, as fast-check properties: each law
 * returns a property and the caller asserts it (`fc.assert(Laws.x(), params)`).
 * Laws that test a replaceable piece (an SSE parser, a request decoder, a
 * stream assembly) take it as an optional argument, this package's by default,
 * so other projects can hold their own code to the same laws.
 *
 * - `requestRoundTrip`: canonical -> Anthropic body (through JSON) ->
 *   canonical keeps the request (everything both sides carry; the model
 *   becomes the upstream model).
 * - `toolIdRoundTrip`: `decodeToolId(encodeToolId(id)) === id`, and the
 *   encoding is Anthropic-safe.
 * - `responseRoundTrip`: Anthropic answer -> canonical -> Anthropic answer ->
 *   canonical is stable.
 * - `streamRechunking`: however an answer's deltas are cut, the decoded and
 *   assembled stream is the same, and equals the non-stream decoding.
 * - `streamEncodeDecode`: canonical events -> `StreamEncoder` -> JSON ->
 *   `StreamDecoder` assembles to the original answer.
 * - `sseSplitInvariance`: an SSE parser gives the same events however an
 *   Anthropic event stream (`event:` and `data:` lines) is split.
 * - `meterSplit`: the relay's meter forwards an Anthropic stream's bytes
 *   unchanged and meters them the same however they are cut.
 * - `malformedBodies`: arbitrary and almost-valid JSON gives a typed 400 error
 *   (or a request), never a throw; the response and stream decoders fail with
 *   `UpstreamUnavailable` (or succeed), never throw.
 *
 * @example
 * ```ts
 * import * as fc from "fast-check"
 * import * as Laws from "@modelgate/anthropic-adapter/testing/Laws"
 *
 * fc.assert(Laws.requestRoundTrip(), { numRuns: 200 })
 * fc.assert(Laws.sseSplitInvariance((pieces) => myParse(pieces)), { numRuns: 200 })
 * ```
 *
 * @since 0.1.0
 */
import type { Canonical } from "@modelgate/core"
import { Issues, Sse, StreamAssembly, Utf8 } from "@modelgate/core"
import * as Cuts from "@modelgate/core/testing/Cuts"
import * as Equality from "@modelgate/core/testing/Equality"
import { Result } from "effect"
import * as fc from "fast-check"
import { decodeToolId, encodeToolId, signToolId, unsignToolId } from "../Ids.ts"
import { PassthroughMeter } from "../Passthrough.ts"
import * as Request from "../Request.ts"
import * as Response from "../Response.ts"
import { sseEvent, StreamDecoder, StreamEncoder } from "../Stream.ts"
import * as Arbitraries from "./Arbitraries.ts"

const unwrap = <A, E>(result: Result.Result<A, E>, what: string): A => {
  if (Result.isFailure(result)) throw new Error(`${what} failed: ${JSON.stringify(result.failure)}`)
  return result.success
}

const viaJson = <A>(value: A): unknown => JSON.parse(JSON.stringify(value))

/**
 * Canonical -> Anthropic body -> canonical keeps the request.
 *
 * @category laws
 */
export const requestRoundTrip = (arbitrary: fc.Arbitrary<Canonical.ChatRequest> = Arbitraries.canonicalRequest) =>
  fc.property(arbitrary, (request) => {
    const wire = unwrap(Request.encodeRequestResult(request, "claude-upstream"), "encodeRequest")
    const back = unwrap(Request.decodeRequestResult(viaJson(wire)), "decodeRequest")
    Equality.assertEqual(back, { ...request, model: "claude-upstream" }, "canonical requests")
  })

/**
 * Tool ids survive sanitising, and sanitised ids are what Anthropic accepts.
 *
 * @category laws
 */
export const toolIdRoundTrip = () =>
  fc.property(
    fc.oneof(Arbitraries.toolId, fc.string({ maxLength: 30 }), fc.string({ unit: "binary", maxLength: 10 })),
    (id) => {
      const encoded = encodeToolId(id)
      if (!/^[a-zA-Z0-9_-]+$/.test(encoded) && id.length > 0) throw new Error(`'${encoded}' is not Anthropic-safe`)
      Equality.assertEqual(decodeToolId(encoded), id, "tool ids")
    }
  )

/**
 * Tool ids an Anthropic client is given with a thought signature
 * (`signToolId`) give back the id and the signature, and are Anthropic-safe;
 * without a signature they give back the id alone.
 *
 * @category laws
 */
export const signedToolIdRoundTrip = () =>
  fc.property(
    fc.oneof(Arbitraries.toolId, fc.string({ minLength: 1, maxLength: 30 })),
    fc.option(fc.string({ minLength: 1, maxLength: 40 }), { nil: undefined }),
    (id, signature) => {
      const wire = signToolId(id, signature)
      if (!/^[a-zA-Z0-9_-]+$/.test(wire)) throw new Error(`'${wire}' is not Anthropic-safe`)
      Equality.assertEqual(unsignToolId(wire), signature === undefined ? { id } : { id, signature }, "signed tool ids")
    }
  )

/**
 * Anthropic answer -> canonical -> Anthropic answer -> canonical is stable.
 *
 * @category laws
 */
export const responseRoundTrip = (
  arbitrary: fc.Arbitrary<Record<string, Arbitraries.Json>> = Arbitraries.anthropicResponse
) =>
  fc.property(arbitrary, (body) => {
    const first = unwrap(Response.decodeResponseResult(body), "decodeResponse")
    const wire = Response.encodeResponse(first, first.model)
    const second = unwrap(Response.decodeResponseResult(viaJson(wire)), "decodeResponse (again)")
    Equality.assertEqual(second, first, "canonical responses")
  })

/** Decodes and assembles a list of parsed events with this package's `StreamDecoder`. @category helpers */
export const assembleEvents = (events: ReadonlyArray<unknown>): Canonical.ChatResponse => {
  const decoder = new StreamDecoder()
  return StreamAssembly.assemble(unwrap(decoder.pushAll(events), "StreamDecoder"))
}

/**
 * Cutting an answer's deltas differently never changes the assembled answer,
 * which also equals the non-stream decoding.
 *
 * @category laws
 */
export const streamRechunking = (
  assembleStream: (events: ReadonlyArray<unknown>) => Canonical.ChatResponse = assembleEvents
) =>
  fc.property(Arbitraries.anthropicResponse, Arbitraries.cuts, Arbitraries.cuts, (body, a, b) => {
    const one = assembleStream(Arbitraries.toEvents(body, a))
    const two = assembleStream(Arbitraries.toEvents(body, b))
    const whole = unwrap(Response.decodeResponseResult(body), "decodeResponse")
    Equality.assertRechunked(one, two, whole)
  })

/**
 * Canonical events -> Anthropic events (through JSON) -> canonical events
 * assembles to the original answer, however text events are split; block
 * indices are sequential from 0 and every started block is stopped.
 *
 * @category laws
 */
export const streamEncodeDecode = () =>
  fc.property(Arbitraries.canonicalResponse, Arbitraries.cuts, (response, cuts) => {
    const events = cuts.length === 0
      ? StreamAssembly.toEvents(response)
      : Cuts.splitTextEvents(StreamAssembly.toEvents(response), cuts[0]!)
    const encoder = new StreamEncoder(response.model)
    const frames = [...encoder.pushAll(events), ...encoder.end()]
    let expected = 0
    let open: number | undefined
    for (const frame of frames) {
      const data = frame.data as { type: string; index?: number }
      if (frame.event !== data.type) {
        throw new Error(`event name '${frame.event}' differs from data type '${data.type}'`)
      }
      if (data.type === "content_block_start") {
        if (data.index !== expected || open !== undefined) throw new Error(`block ${data.index} started out of order`)
        open = expected++
      } else if (data.type === "content_block_stop") {
        if (data.index !== open) throw new Error(`block ${data.index} stopped but ${open} is open`)
        open = undefined
      }
    }
    if (frames[0]?.event !== "message_start" || frames[frames.length - 1]?.event !== "message_stop") {
      throw new Error("the stream must begin with message_start and end with message_stop")
    }
    const decoded = assembleEvents(frames.map((frame) => viaJson(frame.data)))
    Equality.assertEqual(decoded, Equality.merged(response), "decoded stream and original answer")
  })

/**
 * The relay's meter (`Passthrough.PassthroughMeter`), for a client of an
 * Anthropic channel: a stream written by `StreamEncoder`, its bytes cut
 * anywhere (inside a UTF-8 sequence included), is forwarded unchanged, and
 * metered the same as when it came whole; its usage is the answer's.
 *
 * @category laws
 */
export const meterSplit = () =>
  fc.property(Arbitraries.canonicalResponse, fc.array(fc.nat()), (response, cuts) => {
    const encoder = new StreamEncoder(response.model)
    let text = ""
    for (const frame of [...encoder.pushAll(StreamAssembly.toEvents(response)), ...encoder.end()]) {
      text += sseEvent(frame)
    }
    const meter = (pieces: ReadonlyArray<Uint8Array>) => {
      const m = new PassthroughMeter()
      const forwarded: Array<Uint8Array> = []
      for (const piece of pieces) {
        const out = m.pushBytes(piece)
        if (out !== undefined) forwarded.push(out.bytes)
      }
      const rest = m.endBytes()
      if (rest !== undefined) forwarded.push(rest.bytes)
      return { out: Utf8.decode(Cuts.joinBytes(forwarded)), metered: m.metered(3) }
    }
    const bytes = Utf8.encode(text)
    const whole = meter([bytes])
    Equality.assertEqual(whole.out, text, "forwarded bytes")
    Equality.assertEqual(meter(Cuts.splitBytesAt(bytes, cuts)), whole, "metering, however the bytes are cut")
    if (response.usage !== undefined) {
      Equality.assertEqual(whole.metered.completionTokens, response.usage.completionTokens, "output tokens")
      Equality.assertEqual(whole.metered.promptTokens, response.usage.promptTokens, "input tokens")
    }
  })

/**
 * An SSE parser gives the same events however its input is split: `parse`,
 * given the pieces of an Anthropic-style event stream in order, returns what
 * it returns for the whole text. The default is core's `Sse.parse`.
 *
 * @category laws
 */
export const sseSplitInvariance = (parse: (pieces: ReadonlyArray<string>) => ReadonlyArray<unknown> = Sse.parse) =>
  fc.property(
    Arbitraries.sseText.chain((text) => Arbitraries.splits(text).map((pieces) => [text, pieces] as const)),
    ([text, pieces]) => {
      Equality.assertEqual(parse(pieces), parse([text]), "events of split and whole text")
    }
  )

const validBody = Arbitraries.canonicalRequest.map((request) =>
  viaJson(unwrap(Request.encodeRequestResult(request, "claude-test"), "encodeRequest")) as Record<string, unknown>
)

/** Values that are almost Messages requests: valid bodies with one field or one block replaced by arbitrary JSON. @category helpers */
export const malformedBody: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue(),
  fc.tuple(validBody, fc.jsonValue(), fc.nat()).map(([body, value, n]) => {
    const keys = Object.keys(body)
    return { ...body, [keys[n % keys.length]!]: value }
  }),
  fc.tuple(validBody, fc.jsonValue(), fc.nat(), fc.nat()).map(([body, value, i, j]) => {
    const messages = body.messages as Array<{ role: string; content: Array<unknown> }>
    const message = messages[i % messages.length]!
    const content = [...message.content]
    content[j % content.length] = value
    const out = [...messages]
    out[i % messages.length] = { ...message, content }
    return { ...body, messages: out }
  })
)

/**
 * A request decoder never throws on arbitrary or malformed JSON: it returns a
 * request or an `InvalidRequest` / `UnsupportedFeature` with a message. This
 * package's response and stream decoders are checked on the same values.
 *
 * @category laws
 */
export const malformedBodies = (
  decode: (body: unknown) => Result.Result<unknown, { readonly _tag: string; readonly message: string }> =
    Request.decodeRequestResult
) =>
  fc.property(malformedBody, (body) => {
    const result = decode(body)
    if (Result.isFailure(result) && !(Issues.isRequestError(result.failure) && result.failure.message.length > 0)) {
      throw new Error(`not an InvalidRequest or UnsupportedFeature with a message: ${String(result.failure._tag)}`)
    }
    const response = Response.decodeResponseResult(body)
    if (Result.isFailure(response) && response.failure._tag !== "UpstreamUnavailable") {
      throw new Error("unexpected response error")
    }
    new StreamDecoder().push(body)
    new StreamDecoder().push({ type: "content_block_delta", index: 0, delta: body })
  })
