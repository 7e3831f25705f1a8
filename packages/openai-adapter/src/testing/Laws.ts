/**
 * Property laws of the OpenAI codecs, as fast-check properties: each law
 * returns a property and the caller asserts it (`fc.assert(Laws.x(), params)`),
 * so it sits in any test runner and takes any fast-check parameters. Laws that
 * test a replaceable piece (an SSE parser, a request decoder) or run over
 * generated values take it as an optional argument, this package's by default,
 * so other projects can hold their own code to the same laws.
 *
 * - `requestRoundTrip`: canonical -> OpenAI body (through JSON) -> canonical
 *   keeps the request (up to `normalizeForOpenAi`), with the upstream model.
 * - `responseRoundTrip`: canonical -> OpenAI answer (through JSON) ->
 *   canonical keeps the response, with the client-facing model.
 * - `streamRechunking`: a response streamed as OpenAI SSE text assembles to
 *   the same response however the text is cut.
 * - `sseSplitInvariance`: an SSE parser gives the same events however an
 *   OpenAI-style event stream is split.
 * - `malformedBodies`: arbitrary and almost-valid JSON gives a request or a
 *   typed 400 error with a message, never a throw.
 * - `meterSplit`: the passthrough meter forwards the upstream's bytes
 *   unchanged however they are cut, and reports the usage they carry.
 * - `requestThrough`, `responseThrough`, `streamThrough`: OpenAI -> another
 *   dialect -> OpenAI keeps what both carry; they take the other dialect's
 *   codecs as a `ForeignDialect` (for Gemini:
 *   `@modelgate/genai-adapter/testing/Laws` `foreignDialect`), so this package
 *   never depends on another adapter.
 *
 * @example
 * ```ts
 * import { it } from "@effect/vitest"
 * import * as fc from "fast-check"
 * import * as Laws from "@modelgate/openai-adapter/testing/Laws"
 *
 * it("OpenAI request round trip", () => fc.assert(Laws.requestRoundTrip(), { numRuns: 200 }))
 * // your own SSE parser, fed the pieces of a text, returning its events:
 * it("my parser ignores splits", () => fc.assert(Laws.sseSplitInvariance((pieces) => myParse(pieces))))
 * ```
 *
 * @since 0.1.0
 */
import type { Canonical } from "@modelgate/core"
import { Issues, JsonScan, Sse, StreamAssembly } from "@modelgate/core"
import * as Cuts from "@modelgate/core/testing/Cuts"
import * as Equality from "@modelgate/core/testing/Equality"
import { Result } from "effect"
import * as fc from "fast-check"
import { PassthroughMeter } from "../chat/Passthrough.ts"
import {
  decodeRequestResult,
  encodeRequest,
  type EncodeRequestOptions,
  JSON_MODE_HINT,
  mentionsJson
} from "../chat/Request.ts"
import { decodeResponseResult, encodeResponse } from "../chat/Response.ts"
import { decodeSseText, encodeSseText } from "../chat/Stream.ts"
import * as Arbitraries from "./Arbitraries.ts"

/** `JSON.parse(JSON.stringify(x))`: what a value looks like after the wire. @category helpers */
export const throughJson = (value: unknown): unknown => JSON.parse(JSON.stringify(value))

/**
 * What an OpenAI round trip keeps of a canonical request: everything the
 * arbitraries generate, except `includeUsage`, which `encodeRequest` replaces
 * (streams always ask the upstream for usage; non-streams never carry it), and
 * plus the system instruction JSON mode adds when no message mentions JSON.
 *
 * @category helpers
 */
export const normalizeForOpenAi = (request: Canonical.ChatRequest): Canonical.ChatRequest => {
  const { includeUsage: _ignored, ...rest } = request
  const withHint = request.responseFormat?.type === "json" && !mentionsJson(request)
    ? { ...rest, system: [...(request.system ?? []), JSON_MODE_HINT] }
    : rest
  return request.stream ? { ...withHint, includeUsage: true } : withHint
}

/**
 * The options of the request round trip: the upstream takes reasoning effort
 * and earlier reasoning (`reasoning_content`), so every field the arbitraries
 * generate is carried.
 *
 * @category helpers
 */
export const roundTripOptions: EncodeRequestOptions = { reasoningEffort: true, reasoningContent: true }

// ---------------------------------------------------------------------------
// Laws of this dialect
// ---------------------------------------------------------------------------

/**
 * canonical -> `encodeRequest` (with `roundTripOptions`) -> JSON ->
 * `decodeRequest` gives back the request (`normalizeForOpenAi`), with the
 * upstream model name.
 *
 * @category laws
 */
export const requestRoundTrip = (arbitrary: fc.Arbitrary<Canonical.ChatRequest> = Arbitraries.canonicalRequest) =>
  fc.property(arbitrary, (request) => {
    const decoded = decodeRequestResult(throughJson(encodeRequest(request, "upstream-model", roundTripOptions)))
    if (Result.isFailure(decoded)) throw new Error(`decodeRequest failed: ${decoded.failure.message}`)
    Equality.assertEqual(
      decoded.success,
      { ...normalizeForOpenAi(request), model: "upstream-model" },
      "request round trip"
    )
  })

/**
 * canonical -> `encodeResponse` -> JSON -> `decodeResponse` gives back the response,
 * with the client-facing model name.
 *
 * @category laws
 */
export const responseRoundTrip = (arbitrary: fc.Arbitrary<Canonical.ChatResponse> = Arbitraries.canonicalResponse) =>
  fc.property(arbitrary, (response) => {
    const decoded = decodeResponseResult(throughJson(encodeResponse(response, "client-model")))
    if (Result.isFailure(decoded)) throw new Error(`decodeResponse failed: ${decoded.failure.message}`)
    Equality.assertEqual(decoded.success, { ...response, model: "client-model" }, "response round trip")
  })

/**
 * A response unfolded into events, encoded as OpenAI SSE text (with usage), cut
 * at arbitrary points and decoded again assembles to the same response, however
 * it was cut.
 *
 * @category laws
 */
export const streamRechunking = (arbitrary: fc.Arbitrary<Canonical.ChatResponse> = Arbitraries.canonicalResponse) =>
  fc.property(arbitrary, Arbitraries.cuts, (response, cuts) => {
    const text = encodeSseText(StreamAssembly.toEvents(response), { model: response.model, includeUsage: true })
    const whole = decodeSseText([text])
    const split = decodeSseText(Cuts.splitAt(text, cuts))
    if (Result.isFailure(whole) || Result.isFailure(split)) throw new Error("the stream did not decode")
    Equality.assertEqual(
      StreamAssembly.assemble(split.success),
      StreamAssembly.assemble(whole.success),
      "split vs whole"
    )
    Equality.assertEqual(StreamAssembly.assemble(whole.success), response, "stream round trip")
  })

/**
 * An SSE parser gives the same events however its input is split: `parse`,
 * given the pieces of a text in order (`Arbitraries.serializeSse`: any mix of
 * line ends, comments and a BOM), returns what it returns for the whole text.
 * The default is core's `Sse.parse`.
 *
 * @category laws
 */
export const sseSplitInvariance = (parse: (pieces: ReadonlyArray<string>) => ReadonlyArray<unknown> = Sse.parse) =>
  fc.property(
    Arbitraries.sseEvents,
    fc.array(fc.nat(), { minLength: 1, maxLength: 16 }),
    Arbitraries.cuts,
    (events, seed, cuts) => {
      const text = Arbitraries.serializeSse(events, seed)
      Equality.assertEqual(
        parse(Cuts.splitAt(text, cuts)),
        parse([text]),
        `events of the split and whole ${JSON.stringify(text)}`
      )
    }
  )

/**
 * Values that are almost OpenAI requests (valid bodies with one field, or one
 * message, replaced by arbitrary JSON), next to arbitrary JSON and arbitrary
 * JavaScript values.
 *
 * @category helpers
 */
export const malformedBody: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue(),
  fc.anything(),
  Arbitraries.wireRequest,
  fc.tuple(Arbitraries.wireRequest, fc.jsonValue(), fc.nat()).map(([body, value, n]) => {
    const keys = Object.keys(body)
    return { ...body, [keys[n % keys.length]!]: value }
  }),
  fc.tuple(Arbitraries.wireRequest, fc.jsonValue(), fc.nat()).map(([body, value, n]) => {
    const messages: Array<unknown> = [...body.messages]
    messages[n % messages.length] = value
    return { ...body, messages }
  })
)

/**
 * A request decoder never throws on arbitrary or almost-valid values: it
 * returns a request, or an `InvalidRequest` / `UnsupportedFeature` with a
 * message. The default is `decodeRequestResult`.
 *
 * @category laws
 */
export const malformedBodies = (
  decode: (body: unknown) => Result.Result<unknown, { readonly _tag: string; readonly message: string }> =
    decodeRequestResult
) =>
  fc.property(malformedBody, (body) => {
    const result = decode(body)
    if (Result.isFailure(result) && !(Issues.isRequestError(result.failure) && result.failure.message.length > 0)) {
      throw new Error(`not an InvalidRequest or UnsupportedFeature with a message: ${String(result.failure._tag)}`)
    }
  })

/**
 * With `include_usage` asked, a `PassthroughMeter` forwards the upstream's
 * bytes unchanged however they are cut (inside a UTF-8 sequence included),
 * and reports the usage they carry.
 *
 * @category laws
 */
export const meterSplit = () =>
  fc.property(Arbitraries.wireChunks, Arbitraries.cuts, (chunks, cuts) => {
    const text = chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`).join("") + "data: [DONE]\n\n"
    const bytes = JsonScan.encode(text)
    const meter = new PassthroughMeter({ includeUsage: true })
    const forwarded: Array<Uint8Array> = []
    const take = (out: ReturnType<PassthroughMeter["pushBytes"]>) => {
      if (out === undefined) return
      if (typeof out === "string") throw new Error("an event was changed or left out")
      forwarded.push(out.bytes)
    }
    for (const piece of Cuts.splitBytesAt(bytes, cuts)) take(meter.pushBytes(piece))
    take(meter.endBytes())
    Equality.assertEqual(JsonScan.decode(Cuts.joinBytes(forwarded)), text, "forwarded bytes")
    const usage = chunks.at(-1)?.usage
    Equality.assertEqual(meter.usage().reported, usage !== undefined && usage !== null, "usage reported")
  })

// ---------------------------------------------------------------------------
// Cross-dialect laws: OpenAI -> another dialect -> OpenAI
// ---------------------------------------------------------------------------

/**
 * Another dialect's codecs, as the cross-dialect laws use them: each function
 * sends a canonical value through that dialect's wire format (encode, JSON,
 * decode) and returns what comes back, or a failure. The other adapter
 * provides them (for Gemini: `@modelgate/genai-adapter/testing/Laws`
 * `foreignDialect`), so neither adapter depends on the other.
 *
 * @category cross-dialect
 */
export interface ForeignDialect {
  readonly name: string
  /** A request sent to that dialect's upstream and read back as its client decoder reads it. */
  readonly request: (request: Canonical.ChatRequest) => Result.Result<Canonical.ChatRequest, unknown>
  /** A response written for that dialect's client and read back as its upstream decoder reads it. */
  readonly response: (response: Canonical.ChatResponse) => Result.Result<Canonical.ChatResponse, unknown>
  /** A stream written for that dialect's client and read back by its upstream stream decoder. */
  readonly stream: (
    events: ReadonlyArray<Canonical.StreamEvent>
  ) => Result.Result<ReadonlyArray<Canonical.StreamEvent>, unknown>
}

const unwrapLaw = <A>(result: Result.Result<A, unknown>, what: string): A => {
  if (Result.isFailure(result)) {
    const failure = result.failure
    throw new Error(`${what} failed: ${failure instanceof Error ? failure.message : JSON.stringify(failure)}`)
  }
  return result.success
}

/**
 * OpenAI request -> the other dialect -> OpenAI keeps what both carry: a
 * request an OpenAI client sent (`arbitrary`, encoded and decoded by this
 * package), sent through `foreign` and written for an OpenAI upstream again,
 * decodes to `keep` of the original, where `keep` removes (or normalises) what
 * the other dialect cannot carry.
 *
 * @category cross-dialect
 */
export const requestThrough = (
  foreign: ForeignDialect,
  keep: (request: Canonical.ChatRequest) => Canonical.ChatRequest,
  arbitrary: fc.Arbitrary<Canonical.ChatRequest> = Arbitraries.canonicalRequest
) =>
  fc.property(arbitrary, (request) => {
    const start = unwrapLaw(
      decodeRequestResult(throughJson(encodeRequest(request, request.model, roundTripOptions))),
      "decodeRequest"
    )
    const back = unwrapLaw(foreign.request(start), `${foreign.name} round trip`)
    const end = unwrapLaw(
      decodeRequestResult(throughJson(encodeRequest(back, start.model, roundTripOptions))),
      "decodeRequest (again)"
    )
    Equality.assertEqual(end, keep(start), `OpenAI -> ${foreign.name} -> OpenAI request`)
  })

/**
 * OpenAI response -> the other dialect -> OpenAI keeps what both carry (see
 * `requestThrough`).
 *
 * @category cross-dialect
 */
export const responseThrough = (
  foreign: ForeignDialect,
  keep: (response: Canonical.ChatResponse) => Canonical.ChatResponse,
  arbitrary: fc.Arbitrary<Canonical.ChatResponse> = Arbitraries.canonicalResponse
) =>
  fc.property(arbitrary, (response) => {
    const start = unwrapLaw(
      decodeResponseResult(throughJson(encodeResponse(response, response.model))),
      "decodeResponse"
    )
    const back = unwrapLaw(foreign.response(start), `${foreign.name} round trip`)
    const end = unwrapLaw(
      decodeResponseResult(throughJson(encodeResponse(back, start.model))),
      "decodeResponse (again)"
    )
    Equality.assertEqual(end, keep(start), `OpenAI -> ${foreign.name} -> OpenAI response`)
  })

/**
 * An OpenAI stream -> the other dialect's stream -> an OpenAI stream
 * assembles to what both carry: a response streamed as OpenAI SSE, decoded,
 * re-streamed through `foreign`, streamed as OpenAI SSE again (cut at
 * arbitrary points) and decoded assembles to `keep` of the first assembly.
 *
 * @category cross-dialect
 */
export const streamThrough = (
  foreign: ForeignDialect,
  keep: (response: Canonical.ChatResponse) => Canonical.ChatResponse,
  arbitrary: fc.Arbitrary<Canonical.ChatResponse> = Arbitraries.canonicalResponse
) =>
  fc.property(arbitrary, Arbitraries.cuts, (response, cuts) => {
    const options = { model: response.model, includeUsage: true }
    const first = unwrapLaw(decodeSseText([encodeSseText(StreamAssembly.toEvents(response), options)]), "decodeSseText")
    const back = unwrapLaw(foreign.stream(first), `${foreign.name} stream round trip`)
    const again = encodeSseText(back, options)
    const end = unwrapLaw(decodeSseText(Cuts.splitAt(again, cuts)), "decodeSseText (again)")
    Equality.assertEqual(
      StreamAssembly.assemble(end),
      keep(StreamAssembly.assemble(first)),
      `OpenAI -> ${foreign.name} -> OpenAI stream`
    )
  })
