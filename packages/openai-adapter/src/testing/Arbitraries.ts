/**
 * fast-check arbitraries for the OpenAI dialect: valid wire requests,
 * responses and chunk streams, canonical values that OpenAI can carry, SSE
 * event lists and split points. Use them in your own property tests (a
 * translator to another dialect, a server route) and with `testing/Laws`.
 *
 * @example
 * ```ts
 * import * as fc from "fast-check"
 * import * as Arbitraries from "@modelgate/openai-adapter/testing/Arbitraries"
 * import { Request } from "@modelgate/openai-adapter"
 *
 * fc.assert(fc.property(Arbitraries.wireRequest, (body) => Request.decodeRequestResult(body)._tag === "Success"))
 * ```
 *
 * @since 0.1.0
 */
import { type Canonical, Sse } from "@modelgate/core"
import * as fc from "fast-check"
import type * as ChatCompletions from "../chat/ChatCompletions.ts"

const opt = <K extends string, V>(key: K, arb: fc.Arbitrary<V>): fc.Arbitrary<{ [P in K]?: V }> =>
  fc.option(arb, { nil: undefined }).map((value) => (value === undefined ? {} : { [key]: value }) as { [P in K]?: V })

/** Identifiers (tool names, ids): `[a-z][a-z0-9_]{0,11}`. @category primitives */
export const identifier: fc.Arbitrary<string> = fc.stringMatching(/^[a-z][a-z0-9_]{0,11}$/)

/** Text of any Unicode, possibly empty. @category primitives */
export const text: fc.Arbitrary<string> = fc.string({ unit: "binary", maxLength: 24 })

/** Non-empty text. @category primitives */
export const nonEmptyText: fc.Arbitrary<string> = fc.string({ unit: "binary", minLength: 1, maxLength: 24 })

/** Base64-looking payloads. @category primitives */
export const base64: fc.Arbitrary<string> = fc.stringMatching(/^[A-Za-z0-9+/]{4,16}={0,2}$/)

const finite = (min: number, max: number) =>
  fc.double({ min, max, noNaN: true, noDefaultInfinity: true }).map((x) => (x === 0 ? 0 : x))

/** A JSON object such as a tool's parameter schema (no `-0`, no `__proto__`). @category primitives */
export const jsonObject: fc.Arbitrary<Record<string, Canonical.JsonSchemaObject[string]>> = fc.dictionary(
  identifier,
  fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.boolean(), fc.constant(null)),
  { maxKeys: 4 }
)

/** JSON text of an object, as tool-call arguments are. @category primitives */
export const argumentsText: fc.Arbitrary<string> = fc.oneof(
  jsonObject.map((o) => JSON.stringify(o)),
  fc.constant("")
)

// ---------------------------------------------------------------------------
// Canonical values OpenAI can carry
// ---------------------------------------------------------------------------

const userPart: fc.Arbitrary<Canonical.Part> = fc.oneof(
  text.map((t): Canonical.Part => ({ type: "text", text: t })),
  fc.tuple(
    fc.constantFrom("https://example.com/a.png", "https://img.test/b.jpg"),
    opt("detail", fc.constantFrom("auto", "low", "high") as fc.Arbitrary<"auto" | "low" | "high">)
  )
    .map(([url, detail]): Canonical.Part => ({ type: "image", url, ...detail })),
  fc.tuple(
    fc.constantFrom("image/png", "image/jpeg"),
    base64,
    opt("detail", fc.constantFrom("low", "high") as fc.Arbitrary<"low" | "high">)
  )
    .map(([mediaType, data, detail]): Canonical.Part => ({ type: "image", mediaType, data, ...detail })),
  fc.tuple(fc.constantFrom("audio/wav", "audio/mpeg"), base64)
    .map(([mediaType, data]): Canonical.Part => ({ type: "file", mediaType, data })),
  fc.tuple(base64, opt("filename", fc.constantFrom("a.pdf", "report.pdf")))
    .map(([data, filename]): Canonical.Part => ({ type: "file", mediaType: "application/pdf", data, ...filename }))
)

const toolCallPart: fc.Arbitrary<Canonical.ToolCallPart> = fc.record({
  type: fc.constant("tool_call" as const),
  id: identifier.map((s) => `call_${s}`),
  name: identifier,
  arguments: argumentsText
})

const assistantContent: fc.Arbitrary<Array<Canonical.Part>> = fc.tuple(
  fc.option(nonEmptyText, { nil: undefined }),
  fc.array(nonEmptyText, { maxLength: 2 }),
  fc.array(toolCallPart, { maxLength: 2 })
).map(([thinking, texts, calls]) => [
  ...(thinking === undefined ? [] : [{ type: "thinking" as const, text: thinking }]),
  ...texts.map((t) => ({ type: "text" as const, text: t })),
  ...calls
])

/**
 * A canonical message OpenAI can carry: user messages of text, images, wav/mp3
 * audio and PDFs; assistant messages of (thinking, texts, tool calls) in that
 * order; tool messages with one result and no `name`/`isError`.
 *
 * @category canonical
 */
export const canonicalMessage: fc.Arbitrary<Canonical.Message> = fc.oneof(
  fc.tuple(fc.array(userPart, { minLength: 1, maxLength: 3 }), opt("name", identifier))
    .map(([content, name]): Canonical.Message => ({ role: "user", content, ...name })),
  fc.tuple(assistantContent, opt("name", identifier))
    .map(([content, name]): Canonical.Message => ({ role: "assistant", content, ...name })),
  fc.tuple(identifier, text).map(([callId, content]): Canonical.Message => ({
    role: "tool",
    content: [{ type: "tool_result", callId: `call_${callId}`, content }]
  }))
)

const responseFormat: fc.Arbitrary<Canonical.ResponseFormat> = fc.oneof(
  fc.constant({ type: "text" as const }),
  fc.constant({ type: "json" as const }),
  fc.tuple(identifier, jsonObject, opt("strict", fc.boolean()))
    .map(([name, schema, strict]): Canonical.ResponseFormat => ({ type: "json_schema", name, schema, ...strict }))
)

const toolDefinition: fc.Arbitrary<Canonical.ToolDefinition> = fc.tuple(
  identifier,
  opt("description", text),
  opt("parameters", jsonObject)
).map(([name, description, parameters]) => ({ name, ...description, ...parameters }))

/**
 * A canonical request OpenAI can carry (no `topK`, no reasoning budget or
 * `includeThoughts`, json-schema formats always named). Its `includeUsage` is a
 * client preference that `encodeRequest` does not forward: see
 * `Laws.normalizeForOpenAi`.
 *
 * @category canonical
 */
export const canonicalRequest: fc.Arbitrary<Canonical.ChatRequest> = fc.tuple(
  fc.record({
    model: identifier,
    messages: fc.array(canonicalMessage, { minLength: 1, maxLength: 4 }),
    stream: fc.boolean()
  }),
  opt("system", fc.array(text, { minLength: 1, maxLength: 2 })),
  opt("tools", fc.array(toolDefinition, { minLength: 1, maxLength: 2 })),
  opt(
    "toolChoice",
    fc.oneof(
      fc.constantFrom("auto", "none", "required") as fc.Arbitrary<Canonical.ToolChoice>,
      identifier.map((name): Canonical.ToolChoice => ({ type: "tool", name }))
    )
  ),
  opt("parallelToolCalls", fc.boolean()),
  opt("responseFormat", responseFormat),
  opt("maxOutputTokens", fc.integer({ min: 1, max: 100_000 })),
  opt("temperature", finite(0, 2)),
  opt("topP", finite(0, 1)),
  opt("stop", fc.array(text, { minLength: 1, maxLength: 4 })),
  opt("seed", fc.integer()),
  opt("presencePenalty", finite(-2, 2)),
  opt("frequencyPenalty", finite(-2, 2)),
  opt("candidateCount", fc.integer({ min: 1, max: 4 })),
  opt(
    "reasoning",
    fc.constantFrom("none", "minimal", "low", "medium", "high", "xhigh", "max").map((effort) => ({
      effort: effort as Canonical.ReasoningEffort
    }))
  ),
  opt("includeUsage", fc.boolean()),
  opt("user", identifier)
).map(([base, ...rest]) => Object.assign({}, base, ...rest) as Canonical.ChatRequest)

const usage: fc.Arbitrary<Canonical.Usage> = fc.tuple(
  fc.nat({ max: 100_000 }),
  fc.nat({ max: 100_000 }),
  opt("cachedTokens", fc.nat({ max: 1000 })),
  opt("reasoningTokens", fc.nat({ max: 1000 }))
).map(([prompt, completion, cached, reasoning]) => ({
  promptTokens: prompt,
  completionTokens: completion,
  totalTokens: prompt + completion,
  ...cached,
  ...reasoning
}))

/**
 * A canonical choice OpenAI can carry: at most one thinking part (no signature),
 * at most one text part, then tool calls; `finishReason` is `tool_calls` when
 * there are calls.
 *
 * @category canonical
 */
export const canonicalChoice = (index: number): fc.Arbitrary<Canonical.Choice> =>
  fc.tuple(
    fc.option(nonEmptyText, { nil: undefined }),
    fc.option(nonEmptyText, { nil: undefined }),
    fc.array(toolCallPart, { maxLength: 3 }),
    fc.constantFrom("stop", "length", "content_filter") as fc.Arbitrary<Canonical.FinishReason>
  ).map(([thinking, answer, calls, reason]) => ({
    index,
    content: [
      ...(thinking === undefined ? [] : [{ type: "thinking" as const, text: thinking }]),
      ...(answer === undefined ? [] : [{ type: "text" as const, text: answer }]),
      ...calls
    ],
    finishReason: calls.length > 0 ? "tool_calls" : reason
  }))

/** A canonical response OpenAI can carry (1 to 3 choices). @category canonical */
export const canonicalResponse: fc.Arbitrary<Canonical.ChatResponse> = fc.tuple(
  identifier.map((s) => `chatcmpl-${s}`),
  identifier,
  fc.nat({ max: 2_000_000_000 }),
  fc.integer({ min: 1, max: 3 }).chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => canonicalChoice(i)))),
  opt("usage", usage)
).map(([id, model, created, choices, u]) => ({ id, model, created, choices, ...u }))

// ---------------------------------------------------------------------------
// Wire values
// ---------------------------------------------------------------------------

const wireUserPart: fc.Arbitrary<ChatCompletions.UserContentPart> = fc.oneof(
  text.map((t) => ({ type: "text" as const, text: t })),
  fc.constantFrom("https://example.com/a.png", "data:image/png;base64,iVBORw0KGgo=")
    .map((url) => ({ type: "image_url" as const, image_url: { url } })),
  fc.tuple(base64, fc.constantFrom("wav", "mp3") as fc.Arbitrary<"wav" | "mp3">)
    .map(([data, format]) => ({ type: "input_audio" as const, input_audio: { data, format } })),
  base64.map((data) => ({
    type: "file" as const,
    file: { file_data: `data:application/pdf;base64,${data}`, filename: "a.pdf" }
  }))
)

/** A valid wire message of any role. @category wire */
export const wireMessage: fc.Arbitrary<ChatCompletions.Message> = fc.oneof(
  text.map((content) => ({ role: "system" as const, content })),
  text.map((content) => ({ role: "developer" as const, content })),
  fc.oneof(text, fc.array(wireUserPart, { minLength: 1, maxLength: 3 })).map((content) => ({
    role: "user" as const,
    content
  })),
  fc.tuple(fc.option(text, { nil: null }), fc.array(toolCallPart, { maxLength: 2 })).map(([content, calls]) => ({
    role: "assistant" as const,
    content,
    ...(calls.length === 0 ? {} : {
      tool_calls: calls.map((c) => ({
        id: c.id,
        type: "function" as const,
        function: { name: c.name, arguments: c.arguments }
      }))
    })
  })),
  fc.tuple(identifier, text).map(([id, content]) => ({ role: "tool" as const, tool_call_id: id, content }))
)

/** A valid chat completions request body (JSON-ready). @category wire */
export const wireRequest: fc.Arbitrary<ChatCompletions.ChatCompletionRequest> = fc.tuple(
  fc.record({ model: identifier, messages: fc.array(wireMessage, { minLength: 1, maxLength: 5 }) }),
  opt("temperature", finite(0, 2)),
  opt("max_tokens", fc.integer({ min: 1, max: 4096 })),
  opt("stop", fc.oneof(text, fc.array(text, { maxLength: 4 }))),
  opt("stream", fc.boolean()),
  opt("tools", fc.array(toolDefinition.map((t) => ({ type: "function" as const, function: t })), { maxLength: 2 })),
  opt("tool_choice", fc.constantFrom("auto", "none", "required") as fc.Arbitrary<"auto" | "none" | "required">),
  opt("response_format", fc.constantFrom({ type: "text" as const }, { type: "json_object" as const }))
).map(([base, ...rest]) => Object.assign({}, base, ...rest) as ChatCompletions.ChatCompletionRequest)

/** A valid non-stream chat completion (JSON-ready). @category wire */
export const wireResponse: fc.Arbitrary<ChatCompletions.ChatCompletion> = fc.tuple(
  identifier,
  fc.array(
    fc.tuple(fc.option(text, { nil: null }), fc.constantFrom("stop", "length", "tool_calls", "content_filter")),
    { minLength: 1, maxLength: 3 }
  ),
  fc.option(usage, { nil: undefined })
).map(([model, choices, u]) => ({
  id: `chatcmpl-${model}`,
  object: "chat.completion",
  created: 1,
  model,
  choices: choices.map(([content, finish], index) => ({
    index,
    message: { role: "assistant", content, refusal: null },
    finish_reason: finish,
    logprobs: null
  })),
  ...(u === undefined ? {} : {
    usage: { prompt_tokens: u.promptTokens, completion_tokens: u.completionTokens, total_tokens: u.totalTokens }
  })
}))

/** A valid sequence of stream chunks for one response (from `canonicalResponse`), usage chunk included. @category wire */
export const wireChunks: fc.Arbitrary<Array<ChatCompletions.ChatCompletionChunk>> = canonicalResponse.map(
  (response) => {
    const chunks: Array<ChatCompletions.ChatCompletionChunk> = []
    const base = { id: response.id, object: "chat.completion.chunk", created: response.created, model: response.model }
    for (const choice of response.choices) {
      chunks.push({
        ...base,
        choices: [{ index: choice.index, delta: { role: "assistant", content: "" }, finish_reason: null }]
      })
      let call = 0
      for (const part of choice.content) {
        if (part.type === "text") {
          chunks.push({
            ...base,
            choices: [{ index: choice.index, delta: { content: part.text }, finish_reason: null }]
          })
        } else if (part.type === "thinking") {
          chunks.push({
            ...base,
            choices: [{ index: choice.index, delta: { reasoning_content: part.text }, finish_reason: null }]
          })
        } else if (part.type === "tool_call") {
          chunks.push({
            ...base,
            choices: [{
              index: choice.index,
              delta: {
                tool_calls: [{
                  index: call++,
                  id: part.id,
                  type: "function",
                  function: { name: part.name, arguments: part.arguments }
                }]
              },
              finish_reason: null
            }]
          })
        }
      }
      chunks.push({
        ...base,
        choices: [{
          index: choice.index,
          delta: {},
          finish_reason: choice.finishReason === "error" ? "stop" : choice.finishReason
        }]
      })
    }
    if (response.usage !== undefined) {
      chunks.push({
        ...base,
        choices: [],
        usage: {
          prompt_tokens: response.usage.promptTokens,
          completion_tokens: response.usage.completionTokens,
          total_tokens: response.usage.totalTokens
        }
      })
    }
    return chunks
  }
)

// ---------------------------------------------------------------------------
// SSE
// ---------------------------------------------------------------------------

/** SSE events as core's `Sse.Parser` returns them (event names, and data without CR). @category sse */
export const sseEvents: fc.Arbitrary<Array<Sse.Event>> = fc.array(
  fc.tuple(
    fc.option(fc.stringMatching(/^[a-z][a-z_.]{0,10}$/), { nil: undefined }),
    fc.string({ maxLength: 30 }).map((s) => s.replace(/\r/g, ""))
  ).map(([event, data]): Sse.Event => ({ event: event ?? Sse.DEFAULT_EVENT, data, id: "" })),
  { maxLength: 8 }
)

/**
 * An SSE text that encodes `events`, with line endings, comments and a BOM
 * chosen by `seed` (a list of numbers, e.g. from `fc.array(fc.nat())`). A `\r`
 * line ending is never followed by a `\n` one (that would read as one `\r\n`).
 *
 * @category sse
 */
export const serializeSse = (events: ReadonlyArray<Sse.Event>, seed: ReadonlyArray<number>): string => {
  let n = 0
  const next = () => seed.length === 0 ? 0 : seed[n++ % seed.length]!
  let out = next() % 4 === 0 ? "\uFEFF" : ""
  let previous = ""
  const eol = () => {
    const options = previous === "\r" ? ["\r", "\r\n"] : ["\n", "\r\n", "\r"]
    previous = options[next() % options.length]!
    return previous
  }
  for (const event of events) {
    if (next() % 3 === 0) out += ": keep-alive" + eol()
    if (event.event !== Sse.DEFAULT_EVENT) out += `event: ${event.event}` + eol()
    for (const line of event.data.split("\n")) {
      out += (next() % 2 === 0 || line.startsWith(" ") ? "data: " : "data:") + line + eol()
    }
    out += eol()
  }
  return out
}

/** Cut points for `@modelgate/core/testing/Cuts` `splitAt`. @category sse */
export const cuts: fc.Arbitrary<Array<number>> = fc.array(fc.nat(), { maxLength: 12 })
