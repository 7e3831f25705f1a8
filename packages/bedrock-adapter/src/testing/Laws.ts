/**
 * Property laws of the Converse codecs, as fast-check properties: each law
 * returns a property and the caller asserts it (`fc.assert(Laws.x(), params)`).
 *
 * - `requestRoundTrip`: canonical -> Converse body (through JSON) ->
 *   canonical keeps the request (everything both sides carry).
 * - `toolIdRoundTrip`: `decodeToolId(encodeToolId(id)) === id`, and the
 *   encoding is what Converse accepts.
 * - `responseRoundTrip`: Converse answer -> canonical -> Converse answer ->
 *   canonical is stable.
 * - `streamRechunking`: however an answer's deltas are cut and however its
 *   event-stream bytes are split, the decoded and assembled stream is the
 *   same, and equals the non-stream decoding.
 * - `splitAtEveryByte`: an answer's event-stream bytes cut in two at each
 *   byte decode to the same events.
 * - `streamEncodeDecode`: canonical events -> `StreamEncoder` -> frames ->
 *   `ByteDecoder` assembles to the original answer.
 * - `corruptFrames`: a frame with any one byte changed is refused
 *   (`UpstreamUnavailable`), never read as another message.
 * - `malformedBodies`: arbitrary and almost-valid JSON gives a typed 400 (or
 *   a request), never a throw; the answer and stream decoders fail with
 *   `UpstreamUnavailable` (or succeed), never throw anything else.
 *
 * @since 0.1.0
 */
import type { Canonical } from "@modelgate/core"
import { Issues, StreamAssembly } from "@modelgate/core"
import * as Cuts from "@modelgate/core/testing/Cuts"
import * as Equality from "@modelgate/core/testing/Equality"
import { Result } from "effect"
import * as fc from "fast-check"
import * as EventStream from "../EventStream.ts"
import { decodeToolId, encodeToolId } from "../Ids.ts"
import * as Request from "../Request.ts"
import * as Response from "../Response.ts"
import { ByteDecoder, StreamDecoder, StreamEncoder } from "../Stream.ts"
import * as Arbitraries from "./Arbitraries.ts"

const unwrap = <A, E>(result: Result.Result<A, E>, what: string): A => {
  if (Result.isFailure(result)) throw new Error(`${what} failed: ${JSON.stringify(result.failure)}`)
  return result.success
}

const viaJson = <A>(value: A): unknown => JSON.parse(JSON.stringify(value))

const FACTS = { id: "chatcmpl-law", model: Arbitraries.MODEL, created: 0 }

/**
 * Canonical -> Converse body -> canonical keeps the request.
 *
 * @category laws
 */
export const requestRoundTrip = (arbitrary: fc.Arbitrary<Canonical.ChatRequest> = Arbitraries.canonicalRequest) =>
  fc.property(arbitrary, (request) => {
    const wire = unwrap(Request.encodeRequestResult(request, Arbitraries.MODEL), "encodeRequest")
    const back = unwrap(Request.decodeRequestResult(viaJson(wire), Arbitraries.MODEL, request.stream), "decodeRequest")
    Equality.assertEqual(back, request, "canonical requests")
  })

/**
 * Tool ids survive encoding, and encoded ids are what Converse accepts.
 *
 * @category laws
 */
export const toolIdRoundTrip = () =>
  fc.property(
    fc.oneof(Arbitraries.toolId, fc.string({ maxLength: 30 }), fc.string({ unit: "binary", maxLength: 10 })),
    (id) => {
      const encoded = encodeToolId(id)
      if (!/^[a-zA-Z0-9_-]+$/.test(encoded) && id.length > 0) throw new Error(`'${encoded}' is not Converse-safe`)
      Equality.assertEqual(decodeToolId(encoded), id, "tool ids")
    }
  )

/**
 * Converse answer -> canonical -> Converse answer -> canonical is stable.
 *
 * @category laws
 */
export const responseRoundTrip = () =>
  fc.property(Arbitraries.converseResponse, (body) => {
    const first = unwrap(Response.decodeResponseResult(body, FACTS), "decodeResponse")
    const second = unwrap(
      Response.decodeResponseResult(viaJson(Response.encodeResponse(first)), FACTS),
      "decodeResponse (again)"
    )
    Equality.assertEqual(second, first, "canonical responses")
  })

/** Decodes and assembles an answer's event-stream bytes, given in pieces, with this package's `ByteDecoder`. @category helpers */
export const assembleBytes = (pieces: ReadonlyArray<Uint8Array>): Canonical.ChatResponse => {
  const decoder = new ByteDecoder(FACTS)
  const events: Array<Canonical.StreamEvent> = []
  for (const piece of pieces) events.push(...decoder.push(piece))
  events.push(...decoder.end())
  return StreamAssembly.assemble(events)
}

/**
 * Cutting an answer's deltas differently, and splitting its bytes anywhere,
 * never changes the assembled answer, which equals the non-stream decoding.
 *
 * @category laws
 */
export const streamRechunking = (
  assemble: (pieces: ReadonlyArray<Uint8Array>) => Canonical.ChatResponse = assembleBytes
) =>
  fc.property(
    Arbitraries.converseResponse,
    Arbitraries.cuts,
    Arbitraries.cuts,
    fc.array(fc.nat()),
    (body, a, b, splits) => {
      const one = assemble([Arbitraries.toFrames(Arbitraries.toEvents(body, a))])
      const two = assemble(Cuts.splitBytesAt(Arbitraries.toFrames(Arbitraries.toEvents(body, b)), splits))
      const whole = unwrap(Response.decodeResponseResult(body, FACTS), "decodeResponse")
      Equality.assertRechunked(one, two, whole)
    }
  )

/**
 * An answer's event-stream bytes cut in two at every byte (as two network
 * reads) decode to the same events as the whole.
 *
 * @category laws
 */
export const splitAtEveryByte = () =>
  fc.property(Arbitraries.converseResponse, Arbitraries.cuts, (body, cuts) => {
    const bytes = Arbitraries.toFrames(Arbitraries.toEvents(body, cuts))
    const whole = new ByteDecoder(FACTS)
    const expected = [...whole.push(bytes), ...whole.end()]
    for (let at = 0; at <= bytes.length; at++) {
      const decoder = new ByteDecoder(FACTS)
      const events = [...decoder.push(bytes.subarray(0, at)), ...decoder.push(bytes.subarray(at)), ...decoder.end()]
      Equality.assertEqual(events, expected, `events of the bytes split at ${at}`)
    }
  })

/**
 * Canonical events -> ConverseStream events -> frames -> canonical events
 * assembles to the original answer, however text events are split.
 *
 * @category laws
 */
export const streamEncodeDecode = () =>
  fc.property(Arbitraries.canonicalResponse, Arbitraries.cuts, (response, cuts) => {
    const events = cuts.length === 0
      ? StreamAssembly.toEvents(response)
      : Cuts.splitTextEvents(StreamAssembly.toEvents(response), cuts[0]!)
    const encoder = new StreamEncoder()
    const wire = [...encoder.pushAll(events), ...encoder.end()]
    if (wire[0]?.type !== "messageStart" || wire[wire.length - 1]?.type !== "metadata") {
      throw new Error("the stream must begin with messageStart and end with metadata")
    }
    const decoded = assembleBytes([Arbitraries.toFrames(wire)])
    Equality.assertEqual(
      decoded,
      Equality.merged({ ...response, id: FACTS.id, model: FACTS.model }),
      "decoded stream and original answer"
    )
  })

/**
 * A frame with one byte changed (any byte, any new value) is refused with
 * `UpstreamUnavailable` by push or end: its CRCs or its length give it away.
 *
 * @category laws
 */
export const corruptFrames = () =>
  fc.property(Arbitraries.text, fc.nat(), fc.integer({ min: 1, max: 255 }), (text, at, flip) => {
    const bytes = EventStream.encodeMessage(
      EventStream.eventMessage("contentBlockDelta", { contentBlockIndex: 0, delta: { text } })
    )
    const corrupt = bytes.slice()
    const i = at % corrupt.length
    corrupt[i] = corrupt[i]! ^ flip
    const decoder = new EventStream.FrameDecoder()
    try {
      decoder.push(corrupt)
      decoder.end()
    } catch (error) {
      if ((error as { _tag?: string })._tag === "UpstreamUnavailable") return
      throw error
    }
    throw new Error(`a frame corrupted at byte ${i} was accepted`)
  })

const validBody = Arbitraries.canonicalRequest.map((request) =>
  viaJson(unwrap(Request.encodeRequestResult(request, Arbitraries.MODEL), "encodeRequest")) as Record<string, unknown>
)

/** Values that are almost Converse requests: valid bodies with one field or one block replaced by arbitrary JSON. @category helpers */
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
 * A request decoder never throws on arbitrary or malformed JSON; this
 * package's answer and stream decoders and its frame decoder (on arbitrary
 * bytes) fail with `UpstreamUnavailable` or succeed.
 *
 * @category laws
 */
export const malformedBodies = () =>
  fc.property(malformedBody, fc.uint8Array({ maxLength: 64 }), (body, bytes) => {
    const result = Request.decodeRequestResult(body, Arbitraries.MODEL)
    if (Result.isFailure(result) && !(Issues.isRequestError(result.failure) && result.failure.message.length > 0)) {
      throw new Error(`not an InvalidRequest or UnsupportedFeature with a message: ${String(result.failure._tag)}`)
    }
    const response = Response.decodeResponseResult(body, FACTS)
    if (Result.isFailure(response) && response.failure._tag !== "UpstreamUnavailable") {
      throw new Error("unexpected response error")
    }
    const payload = typeof body === "object" && body !== null && !Array.isArray(body)
      ? body as Record<string, unknown>
      : { value: body }
    for (
      const type of [
        "messageStart",
        "contentBlockStart",
        "contentBlockDelta",
        "contentBlockStop",
        "messageStop",
        "metadata"
      ]
    ) {
      new StreamDecoder(FACTS).push({ type, payload })
      new StreamDecoder(FACTS).push({ type, payload: { contentBlockIndex: 0, delta: body, start: body } })
    }
    const frames = new ByteDecoder(FACTS)
    try {
      frames.push(bytes)
      frames.end()
    } catch (error) {
      if ((error as { _tag?: string })._tag !== "UpstreamUnavailable") throw error
    }
  })
