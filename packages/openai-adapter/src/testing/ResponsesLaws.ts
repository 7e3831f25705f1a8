/**
 * Property laws of the Responses API codecs, each a fast-check property ready
 * for `fc.assert` (the caller asserts), with the arbitraries they draw from.
 *
 * - `requestRoundTrip`: canonical -> `ResponsesRequest.encodeRequest` ->
 *   JSON -> `ResponsesRequest.decodeRequest` keeps the request (what the
 *   Responses API carries; see `normalizeRequest`).
 * - `streamRechunking`: a canonical answer written as a Responses stream
 *   (`ResponsesAnswer.StreamEncoder`) and cut anywhere assembles, through the
 *   stream decoder, to the same answer as the non-stream `response` object
 *   decodes to, and keeps the answer's text, reasoning and tool calls.
 * - `meterSplit`: the relay's meter forwards a Responses stream's bytes
 *   unchanged and reads the same usage however they are cut (inside a UTF-8
 *   sequence included).
 * - `malformedBodies`: arbitrary JSON gives a typed 400 (or a request),
 *   never a throw.
 *
 * @example
 * ```ts
 * import * as fc from "fast-check"
 * import * as ResponsesLaws from "@modelgate/openai-adapter/testing/ResponsesLaws"
 *
 * fc.assert(ResponsesLaws.requestRoundTrip(), { numRuns: 200 })
 * fc.assert(ResponsesLaws.streamRechunking(), { numRuns: 200 })
 * ```
 *
 * @since 0.1.0
 */
import { type Canonical, Sse, StreamAssembly, Utf8 } from "@modelgate/core"
import * as Cuts from "@modelgate/core/testing/Cuts"
import * as Equality from "@modelgate/core/testing/Equality"
import { Result } from "effect"
import * as fc from "fast-check"
import * as Responses from "../responses/Responses.ts"
import * as ResponsesAnswer from "../responses/ResponsesAnswer.ts"
import * as ResponsesPassthrough from "../responses/ResponsesPassthrough.ts"
import * as ResponsesRequest from "../responses/ResponsesRequest.ts"
import { cuts, identifier, jsonObject } from "./Arbitraries.ts"

const nonEmpty = fc.string({ unit: "binary", minLength: 1, maxLength: 24 })
const base64 = fc.stringMatching(/^[A-Za-z0-9+/]{4,16}={0,2}$/)
const opt = <K extends string, A>(key: K, arbitrary: fc.Arbitrary<A>) =>
  fc.option(arbitrary.map((value) => ({ [key]: value }) as { [P in K]: A }), { nil: {} as { [P in K]?: A } })

// ---------------------------------------------------------------------------
// Arbitraries
// ---------------------------------------------------------------------------

const userPart: fc.Arbitrary<Canonical.Part> = fc.oneof(
  nonEmpty.map((text): Canonical.Part => ({ type: "text", text })),
  fc.tuple(
    fc.constantFrom("https://example.com/a.png", "https://img.test/b.jpg"),
    opt("detail", fc.constantFrom("auto", "low", "high") as fc.Arbitrary<"auto" | "low" | "high">)
  )
    .map(([url, detail]): Canonical.Part => ({ type: "image", url, ...detail })),
  fc.tuple(fc.constantFrom("image/png", "image/jpeg"), base64).map(([mediaType, data]): Canonical.Part => ({
    type: "image",
    mediaType,
    data
  })),
  fc.tuple(base64, opt("filename", fc.constantFrom("a.pdf", "report.pdf")))
    .map(([data, filename]): Canonical.Part => ({ type: "file", mediaType: "application/pdf", data, ...filename })),
  fc.constantFrom("https://example.com/r.pdf").map((uri): Canonical.Part => ({
    type: "file",
    mediaType: "application/pdf",
    uri
  }))
)

const signature = fc.stringMatching(/^[A-Za-z0-9+/]{8,24}$/)

const toolCall: fc.Arbitrary<Canonical.ToolCallPart> = fc.tuple(
  identifier,
  identifier,
  fc.oneof(jsonObject.map((o) => JSON.stringify(o)), fc.constant("")),
  opt("signature", signature)
)
  .map(([id, name, args, sig]) => ({ type: "tool_call", id: `call_${id}`, name, arguments: args, ...sig }))

const assistantPart: fc.Arbitrary<Canonical.Part> = fc.oneof(
  nonEmpty.map((text): Canonical.Part => ({ type: "text", text })),
  // Only OpenAI's own encrypted reasoning goes back to a Responses upstream.
  fc.tuple(fc.string({ maxLength: 16 }), signature).map(([text, sig]): Canonical.Part => ({
    type: "thinking",
    text,
    signature: `openai:${sig}`
  })),
  toolCall
)

const message: fc.Arbitrary<Canonical.Message> = fc.oneof(
  fc.array(userPart, { minLength: 1, maxLength: 3 }).map((content): Canonical.Message => ({ role: "user", content })),
  fc.array(assistantPart, { minLength: 1, maxLength: 3 }).map((content): Canonical.Message => ({
    role: "assistant",
    content
  })),
  fc.tuple(identifier, fc.string({ maxLength: 24 })).map(([id, content]): Canonical.Message => ({
    role: "tool",
    content: [{ type: "tool_result", callId: `call_${id}`, content }]
  }))
)

const effort = fc.constantFrom("none", "minimal", "low", "medium", "high", "xhigh") as fc.Arbitrary<
  Canonical.ReasoningEffort
>

/**
 * A canonical request the Responses API carries: no stop sequences, `topK`,
 * seed, penalties or several answers (the API has none of them), reasoning
 * as an effort and/or `includeThoughts`, json-schema formats named, tools
 * with parameters.
 *
 * @category arbitraries
 */
export const canonicalRequest: fc.Arbitrary<Canonical.ChatRequest> = fc.tuple(
  fc.record({ model: identifier, messages: fc.array(message, { minLength: 1, maxLength: 4 }), stream: fc.boolean() }),
  opt("system", fc.array(nonEmpty, { minLength: 1, maxLength: 2 })),
  opt(
    "tools",
    fc.uniqueArray(
      fc.tuple(identifier, opt("description", nonEmpty), jsonObject).map(([name, description, parameters]) => ({
        name,
        ...description,
        parameters
      })),
      {
        minLength: 1,
        maxLength: 2,
        selector: (tool) => tool.name
      }
    )
  ),
  opt(
    "toolChoice",
    fc.oneof(
      fc.constantFrom("auto", "none", "required") as fc.Arbitrary<Canonical.ToolChoice>,
      identifier.map((name): Canonical.ToolChoice => ({ type: "tool", name }))
    )
  ),
  opt("parallelToolCalls", fc.boolean()),
  opt(
    "responseFormat",
    fc.oneof(
      fc.constant<Canonical.ResponseFormat>({ type: "text" }),
      fc.constant<Canonical.ResponseFormat>({ type: "json" }),
      fc.tuple(identifier, jsonObject, opt("strict", fc.boolean())).map((
        [name, schema, strict]
      ): Canonical.ResponseFormat => ({ type: "json_schema", name, schema, ...strict }))
    )
  ),
  opt("maxOutputTokens", fc.integer({ min: 1, max: 100_000 })),
  opt("temperature", fc.integer({ min: 0, max: 200 }).map((n) => n / 100)),
  opt("topP", fc.integer({ min: 0, max: 100 }).map((n) => n / 100)),
  opt(
    "reasoning",
    fc.tuple(opt("effort", effort), opt("includeThoughts", fc.boolean())).map(([e, t]): Canonical.Reasoning => ({
      ...e,
      ...t
    }))
      .filter((r) => Object.keys(r).length > 0)
  ),
  opt("user", identifier)
).map(([base, ...rest]) => Object.assign({}, base, ...rest) as Canonical.ChatRequest)

const usage: fc.Arbitrary<Canonical.Usage> = fc.tuple(
  fc.nat({ max: 100_000 }),
  fc.nat({ max: 100_000 }),
  fc.nat({ max: 1000 }),
  fc.nat({ max: 1000 })
)
  .map(([prompt, completion, cached, reasoning]) => ({
    promptTokens: prompt + cached,
    completionTokens: completion + reasoning,
    totalTokens: prompt + cached + completion + reasoning,
    ...(cached > 0 ? { cachedTokens: cached } : {}),
    ...(reasoning > 0 ? { reasoningTokens: reasoning } : {})
  }))

/**
 * A canonical answer a Responses stream carries: one choice of reasoning
 * (signed or not), text and tool calls, in any order, finished.
 *
 * @category arbitraries
 */
export const canonicalResponse: fc.Arbitrary<Canonical.ChatResponse> = fc.tuple(
  identifier,
  identifier,
  fc.nat({ max: 2_000_000_000 }),
  fc.array(
    fc.oneof(
      nonEmpty.map((text): Canonical.Part => ({ type: "text", text })),
      fc.tuple(nonEmpty, fc.option(signature, { nil: undefined })).map(([text, sig]): Canonical.Part =>
        sig === undefined ? { type: "thinking", text } : { type: "thinking", text, signature: sig }
      ),
      toolCall.map((call): Canonical.Part => ({
        ...call,
        arguments: call.arguments.length === 0 ? "{}" : call.arguments
      }))
    ),
    { maxLength: 4 }
  ),
  fc.constantFrom("stop", "length", "content_filter") as fc.Arbitrary<Canonical.FinishReason>,
  opt("usage", usage)
).map(([id, model, created, content, reason, u]) => ({
  id: `resp_${id}`,
  model,
  created,
  choices: [{
    index: 0,
    content,
    finishReason: content.some((p) => p.type === "tool_call") && reason === "stop" ? "tool_calls" : reason
  }],
  ...u
}))

// ---------------------------------------------------------------------------
// Laws
// ---------------------------------------------------------------------------

const throughJson = (value: unknown): unknown => JSON.parse(JSON.stringify(value))

/**
 * What a Responses round trip keeps of a canonical request: consecutive
 * assistant (and tool) turns become one turn, as items of one turn are read;
 * tool results are named after the earlier call with their id; a stream asks
 * for usage.
 *
 * @category helpers
 */
export const normalizeRequest = (request: Canonical.ChatRequest): Canonical.ChatRequest => {
  const messages: Array<Canonical.Message> = []
  const names = new Map<string, string>()
  for (const m of request.messages) {
    const content = m.content.map((part): Canonical.Part => {
      if (part.type === "tool_call") names.set(part.id, part.name)
      if (part.type === "tool_result" && names.has(part.callId)) return { ...part, name: names.get(part.callId)! }
      return part
    })
    const last = messages.at(-1)
    if (last !== undefined && last.role === m.role && m.role !== "user") {
      messages[messages.length - 1] = { ...last, content: [...last.content, ...content] }
    } else messages.push({ role: m.role, content })
  }
  return { ...request, messages, ...(request.stream ? { includeUsage: true } : {}) }
}

/** @category laws */
export const requestRoundTrip = (arbitrary: fc.Arbitrary<Canonical.ChatRequest> = canonicalRequest) =>
  fc.property(arbitrary, (request) => {
    const encoded = ResponsesRequest.encodeRequestResult(request, "upstream-model")
    if (Result.isFailure(encoded)) throw new Error(`encodeRequest failed: ${encoded.failure.message}`)
    const decoded = ResponsesRequest.decodeRequestResult(throughJson(encoded.success))
    if (Result.isFailure(decoded)) throw new Error(`decodeRequest failed: ${decoded.failure.message}`)
    Equality.assertEqual(
      decoded.success,
      { ...normalizeRequest(request), model: "upstream-model" },
      "Responses request round trip"
    )
  })

/** The SSE text of a canonical answer as a Responses client gets it. */
const streamText = (response: Canonical.ChatResponse): string => {
  const encoder = new ResponsesAnswer.StreamEncoder(response.model)
  const events = StreamAssembly.toEvents(response)
  let text = ""
  for (const event of [...encoder.pushAll(events), ...encoder.end()]) text += Responses.frame(event)
  return text
}

/** Decodes Responses SSE pieces with the upstream stream decoder and assembles the answer. */
const assemble = (pieces: ReadonlyArray<string>): Canonical.ChatResponse => {
  const parser = new Sse.Parser()
  const decoder = new ResponsesAnswer.StreamDecoder()
  const assembler = new StreamAssembly.Assembler()
  const feed = (events: ReadonlyArray<{ readonly data: string }>) => {
    for (const event of events) {
      const decoded = decoder.push(JSON.parse(event.data))
      if (Result.isFailure(decoded)) throw new Error(`stream decoding failed: ${decoded.failure.message}`)
      for (const e of decoded.success) assembler.add(e)
    }
  }
  for (const piece of pieces) feed(parser.push(piece))
  feed(parser.end())
  return assembler.response()
}

/**
 * The parts a client sees of an answer: text runs joined, reasoning runs
 * joined until a signature ends one, tool calls (signatures aside).
 */
const visible = (content: ReadonlyArray<Canonical.Part>) => {
  const out: Array<unknown> = []
  let open = false
  for (const part of content) {
    const last = out.at(-1) as { type: string; text: string } | undefined
    if (part.type === "text") {
      if (last?.type === "text") last.text += part.text
      else out.push({ type: "text", text: part.text })
    } else if (part.type === "thinking") {
      if (open && last?.type === "thinking") last.text += part.text
      else out.push({ type: "thinking", text: part.text })
      open = part.signature === undefined
      continue
    } else if (part.type === "tool_call") {
      out.push({ type: "tool_call", id: part.id, name: part.name, arguments: part.arguments })
    }
    open = false
  }
  return out.filter((p) =>
    (p as { type: string; text?: string }).type !== "thinking" || (p as { text: string }).text.length > 0
  )
}

/** @category laws */
export const streamRechunking = (arbitrary: fc.Arbitrary<Canonical.ChatResponse> = canonicalResponse) =>
  fc.property(arbitrary, cuts, (response, at) => {
    const text = streamText(response)
    const whole = assemble([text])
    Equality.assertEqual(assemble(Cuts.splitAt(text, at)), whole, "assembled stream, however it is cut")
    const nonStream = ResponsesAnswer.decodeResponseResult(
      throughJson(ResponsesAnswer.encodeResponse(response, response.model))
    )
    if (Result.isFailure(nonStream)) throw new Error(`decodeResponse failed: ${nonStream.failure.message}`)
    const choice = (r: Canonical.ChatResponse) => r.choices[0]!
    Equality.assertEqual(
      visible(choice(whole).content),
      visible(choice(nonStream.success).content),
      "stream and non-stream answers"
    )
    Equality.assertEqual(choice(whole).finishReason, choice(nonStream.success).finishReason, "finish reasons")
    Equality.assertEqual(whole.usage, nonStream.success.usage, "usage")
    // Tool-call ids carry no signature here, so the client sees the calls exactly.
    const unsigned = choice(response).content.map((p) =>
      p.type === "tool_call" ? { ...p, id: p.signature === undefined ? p.id : "" } : p
    )
    const seen = visible(choice(whole).content).map((p) =>
      (p as { type: string }).type === "tool_call" && (p as { id: string }).id.startsWith("mgts_")
        ? { ...(p as object), id: "" }
        : p
    )
    Equality.assertEqual(seen, visible(unsigned), "the answer's text, reasoning and tool calls")
  })

/** @category laws */
export const meterSplit = (arbitrary: fc.Arbitrary<Canonical.ChatResponse> = canonicalResponse) =>
  fc.property(arbitrary, cuts, (response, at) => {
    const text = streamText(response)
    const meter = (pieces: ReadonlyArray<Uint8Array>) => {
      const m = new ResponsesPassthrough.PassthroughMeter()
      const forwarded: Array<Uint8Array> = []
      for (const piece of pieces) {
        const out = m.pushBytes(piece)
        if (out !== undefined) forwarded.push(out.bytes)
      }
      const rest = m.endBytes()
      if (rest !== undefined) forwarded.push(rest.bytes)
      return {
        out: Utf8.decode(Cuts.joinBytes(forwarded)),
        metered: m.metered(7),
        last: m.lastSequence,
        id: m.responseId
      }
    }
    const bytes = Utf8.encode(text)
    const whole = meter([bytes])
    Equality.assertEqual(whole.out, text, "forwarded bytes")
    Equality.assertEqual(meter(Cuts.splitBytesAt(bytes, at)), whole, "metering, however the bytes are cut")
  })

/** @category laws */
export const malformedBodies = () =>
  fc.property(
    fc.oneof(
      fc.jsonValue(),
      fc.record({ model: fc.string(), input: fc.jsonValue(), tools: fc.jsonValue(), text: fc.jsonValue() }, {
        requiredKeys: []
      })
    ),
    (body) => {
      const decoded = ResponsesRequest.decodeRequestResult(body)
      if (
        Result.isFailure(decoded) && decoded.failure._tag !== "InvalidRequest" &&
        decoded.failure._tag !== "UnsupportedFeature"
      ) {
        throw new Error(`unexpected failure ${JSON.stringify(decoded.failure)}`)
      }
    }
  )
