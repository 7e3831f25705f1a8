/**
 * Property laws of the Gemini codecs, as fast-check properties: each law
 * returns a property and the caller asserts it (`fc.assert(Laws.x(), params)`).
 * Laws that test a replaceable piece (an SSE parser, a request decoder, a
 * stream assembly) take it as an optional argument, this package's by default,
 * so other projects can hold their own code to the same laws.
 *
 * - `requestRoundTrip`: Gemini body -> canonical -> Gemini body -> canonical
 *   gives the same canonical request (every field the canonical model carries
 *   survives), up to the `skip_thought_signature_validator` sentinel that
 *   `encodeRequest` adds to unsigned first calls of a model turn.
 * - `snakeCaseInput`: the snake_case spelling of a body decodes the same.
 * - `responseRoundTrip`: Gemini answer -> canonical -> Gemini answer ->
 *   canonical is stable.
 * - `streamRechunking`: however a Gemini answer is cut into chunks, the
 *   decoded and assembled stream is the same (and equals the non-stream
 *   decoding, up to the merging of adjacent text parts).
 * - `streamEncodeDecode`: canonical events -> `StreamEncoder` -> JSON ->
 *   `StreamDecoder` assembles to the original answer.
 * - `sseSplitInvariance`: an SSE parser gives the same events however a
 *   Gemini event stream is split.
 * - `malformedBodies`: arbitrary JSON gives a typed 400 error (or a request),
 *   never a throw.
 *
 * `foreignDialect` offers this dialect's codecs to other adapters'
 * cross-dialect laws (OpenAI -> Gemini -> OpenAI keeps what both carry).
 *
 * @example
 * ```ts
 * import * as fc from "fast-check"
 * import * as Laws from "@modelgate/genai-adapter/testing/Laws"
 *
 * fc.assert(Laws.requestRoundTrip(), { numRuns: 200 })
 * // your own SSE parser, fed the pieces of a text, returning its events:
 * fc.assert(Laws.sseSplitInvariance((pieces) => myParse(pieces)), { numRuns: 200 })
 * ```
 *
 * @since 0.1.0
 */
import type { Canonical } from "@modelgate/core"
import { Issues, Sse, StreamAssembly } from "@modelgate/core"
import * as Cuts from "@modelgate/core/testing/Cuts"
import * as Equality from "@modelgate/core/testing/Equality"
import { Result } from "effect"
import * as fc from "fast-check"
import * as Request from "../Request.ts"
import * as Response from "../Response.ts"
import { StreamDecoder, StreamEncoder } from "../Stream.ts"
import * as Arbitraries from "./Arbitraries.ts"

const unwrap = <A, E>(result: Result.Result<A, E>, what: string): A => {
  if (Result.isFailure(result)) throw new Error(`${what} failed: ${JSON.stringify(result.failure)}`)
  return result.success
}

/** Removes the sentinel signatures `encodeRequest` adds, where `original` had none. */
const withoutSentinels = (request: Canonical.ChatRequest, original: Canonical.ChatRequest): Canonical.ChatRequest => ({
  ...request,
  messages: request.messages.map((message, i) => ({
    ...message,
    content: message.content.map((part, j) => {
      const before = original.messages[i]?.content[j]
      if (
        part.type === "tool_call" && part.signature === Request.SKIP_THOUGHT_SIGNATURE &&
        before?.type === "tool_call" && before.signature === undefined
      ) {
        const { signature: _, ...rest } = part
        return rest
      }
      return part
    })
  }))
})

const MODEL = "gemini-3-pro-preview"

/**
 * Gemini -> canonical -> Gemini -> canonical keeps the canonical request.
 *
 * @category laws
 */
export const requestRoundTrip = (
  arbitrary: fc.Arbitrary<Record<string, Arbitraries.Json>> = Arbitraries.geminiRequest
) =>
  fc.property(arbitrary, (body) => {
    const first = unwrap(Request.decodeRequestResult(body, MODEL), "decodeRequest")
    const wire = unwrap(Request.encodeRequestResult(first), "encodeRequest")
    const second = unwrap(Request.decodeRequestResult(JSON.parse(JSON.stringify(wire)), MODEL), "decodeRequest (again)")
    Equality.assertEqual(withoutSentinels(second, first), first, "canonical requests")
  })

/**
 * The snake_case spelling of a body decodes to the same canonical request.
 *
 * @category laws
 */
export const snakeCaseInput = (arbitrary: fc.Arbitrary<Record<string, Arbitraries.Json>> = Arbitraries.geminiRequest) =>
  fc.property(arbitrary, (body) => {
    const camel = unwrap(Request.decodeRequestResult(body, MODEL), "decodeRequest (camelCase)")
    const snake = unwrap(
      Request.decodeRequestResult(Arbitraries.toSnakeCase(body), MODEL),
      "decodeRequest (snake_case)"
    )
    Equality.assertEqual(snake, camel, "camelCase and snake_case decodings")
  })

/**
 * Gemini answer -> canonical -> Gemini answer -> canonical is stable.
 *
 * @category laws
 */
export const responseRoundTrip = (
  arbitrary: fc.Arbitrary<Record<string, Arbitraries.Json>> = Arbitraries.geminiResponse
) =>
  fc.property(arbitrary, (body) => {
    const first = unwrap(Response.decodeResponseResult(body), "decodeResponse")
    const wire = Response.encodeResponse(first, first.model)
    const second = unwrap(Response.decodeResponseResult(JSON.parse(JSON.stringify(wire))), "decodeResponse (again)")
    Equality.assertEqual(second, first, "canonical responses")
  })

/** Decodes and assembles a list of chunks with this package's `StreamDecoder`. @category helpers */
export const assembleChunks = (chunks: ReadonlyArray<unknown>): Canonical.ChatResponse => {
  const decoder = new StreamDecoder()
  const events = unwrap(decoder.pushAll(chunks), "StreamDecoder")
  return StreamAssembly.assemble([...events, ...decoder.end()])
}

/**
 * Cutting a Gemini answer into chunks differently never changes the
 * assembled answer, which also equals the non-stream decoding.
 *
 * @category laws
 */
export const streamRechunking = (
  assembleStream: (chunks: ReadonlyArray<unknown>) => Canonical.ChatResponse = assembleChunks
) =>
  fc.property(Arbitraries.geminiResponse, Arbitraries.cuts, Arbitraries.cuts, (body, a, b) => {
    const one = assembleStream(Arbitraries.toChunks(body, a))
    const two = assembleStream(Arbitraries.toChunks(body, b))
    const whole = unwrap(Response.decodeResponseResult(body), "decodeResponse")
    Equality.assertRechunked(one, two, whole)
  })

/**
 * Canonical events -> Gemini chunks (through JSON) -> canonical events
 * assembles to the original answer, however text events are split.
 *
 * @category laws
 */
export const streamEncodeDecode = () =>
  fc.property(Arbitraries.canonicalResponse, Arbitraries.cuts, (response, cuts) => {
    const events = cuts.length === 0
      ? StreamAssembly.toEvents(response)
      : Cuts.splitTextEvents(StreamAssembly.toEvents(response), cuts[0]!)
    const encoder = new StreamEncoder(response.model)
    const chunks = [...encoder.pushAll(events), ...encoder.end()]
    for (const chunk of chunks.slice(0, -1)) {
      for (const candidate of chunk.candidates) {
        if (candidate.content !== undefined && candidate.content.parts.length === 0) {
          throw new Error(`a chunk before the last has an empty parts array: ${JSON.stringify(chunk)}`)
        }
      }
    }
    const decoded = assembleChunks(JSON.parse(JSON.stringify(chunks)))
    Equality.assertEqual(decoded, Equality.merged(response), "decoded stream and original answer")
  })

/**
 * An SSE parser gives the same events however its input is split: `parse`,
 * given the pieces of a Gemini-style event stream in order (`\r\n` and `\n`
 * line ends, comments, multi-line data), returns what it returns for the whole
 * text. The default is core's `Sse.parse`.
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

// ---------------------------------------------------------------------------
// This dialect as the "other side" of another adapter's cross-dialect laws
// ---------------------------------------------------------------------------

/**
 * The Gemini dialect's codecs in the shape other adapters' cross-dialect laws
 * take (for OpenAI: `@modelgate/openai-adapter/testing/Laws`
 * `requestThrough` and its siblings, which check that OpenAI -> Gemini
 * -> OpenAI keeps what both carry). Each function sends a canonical value
 * through Gemini's wire format and back:
 *
 * - `request`: `encodeRequest` (the upstream body) -> JSON -> `decodeRequest`
 *   (as a Gemini client's body), with the same model and stream flag;
 * - `response`: `encodeResponse` (for a Gemini client) -> JSON ->
 *   `decodeResponse` (as a Gemini upstream's answer), keeping `created`, which
 *   Gemini does not carry;
 * - `stream`: `StreamEncoder` -> JSON chunks -> `StreamDecoder`.
 *
 * @example
 * ```ts
 * import * as fc from "fast-check"
 * import * as OpenAiLaws from "@modelgate/openai-adapter/testing/Laws"
 * import * as GeminiLaws from "@modelgate/genai-adapter/testing/Laws"
 *
 * fc.assert(OpenAiLaws.responseThrough(GeminiLaws.foreignDialect, keepWhatGeminiCarries), { numRuns: 200 })
 * ```
 *
 * @category cross-dialect
 */
export const foreignDialect = {
  name: "Gemini",
  request: (request: Canonical.ChatRequest): Result.Result<Canonical.ChatRequest, unknown> => {
    const wire = Request.encodeRequestResult(request)
    if (Result.isFailure(wire)) return Result.fail(wire.failure)
    return Request.decodeRequestResult(JSON.parse(JSON.stringify(wire.success)), request.model, {
      stream: request.stream
    })
  },
  response: (response: Canonical.ChatResponse): Result.Result<Canonical.ChatResponse, unknown> =>
    Response.decodeResponseResult(JSON.parse(JSON.stringify(Response.encodeResponse(response, response.model))), {
      created: response.created,
      model: response.model
    }),
  stream: (
    events: ReadonlyArray<Canonical.StreamEvent>
  ): Result.Result<ReadonlyArray<Canonical.StreamEvent>, unknown> => {
    const start = events.find((event) => event.type === "start")
    const encoder = new StreamEncoder(start?.model ?? "")
    const chunks = JSON.parse(JSON.stringify([...encoder.pushAll(events), ...encoder.end()])) as ReadonlyArray<unknown>
    const decoder = new StreamDecoder(start === undefined ? {} : { created: start.created, model: start.model })
    const decoded = decoder.pushAll(chunks)
    return Result.isFailure(decoded)
      ? Result.fail(decoded.failure)
      : Result.succeed([...decoded.success, ...decoder.end()])
  }
} as const

/** Values that are almost Gemini requests: valid bodies with one field replaced by arbitrary JSON. @category helpers */
export const malformedBody: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue(),
  fc.tuple(Arbitraries.geminiRequest, fc.jsonValue(), fc.nat()).map(([body, value, n]) => {
    const keys = Object.keys(body)
    return { ...body, [keys[n % keys.length]!]: value }
  }),
  fc.tuple(Arbitraries.geminiRequest, fc.jsonValue(), fc.nat(), fc.nat()).map(([body, value, i, j]) => {
    const contents = body.contents as Array<{ role: string; parts: Array<unknown> }>
    const turn = contents[i % contents.length]!
    const parts = [...turn.parts]
    parts[j % parts.length] = value
    const out = [...contents]
    out[i % contents.length] = { ...turn, parts }
    return { ...body, contents: out }
  })
)

/**
 * A request decoder never throws on arbitrary or malformed JSON: it returns a
 * request or an `InvalidRequest` / `UnsupportedFeature` with a message.
 *
 * @category laws
 */
export const malformedBodies = (
  decode: (body: unknown) => Result.Result<unknown, { readonly _tag: string; readonly message: string }> = (body) =>
    Request.decodeRequestResult(body, MODEL)
) =>
  fc.property(malformedBody, (body) => {
    const result = decode(body)
    if (Result.isFailure(result) && !(Issues.isRequestError(result.failure) && result.failure.message.length > 0)) {
      throw new Error(`not an InvalidRequest or UnsupportedFeature with a message: ${String(result.failure._tag)}`)
    }
  })
