/**
 * fast-check arbitraries for the Gemini dialect: client request bodies,
 * upstream responses and stream chunks, SSE text, and canonical values that
 * Gemini can carry. They generate what the round-trip laws in `Laws.ts` need
 * (alternating user/model turns, function responses answering the calls of
 * the turn before, normalised JSON schemas), so other packages can reuse them
 * to test their own code against Gemini-shaped input.
 *
 * @example
 * ```ts
 * import * as fc from "fast-check"
 * import { geminiRequest } from "@modelgate/genai-adapter/testing/Arbitraries"
 *
 * fc.assert(fc.property(geminiRequest, (body) => {
 *   // body is a valid generateContent request body (camelCase)
 * }), { numRuns: 200 })
 * ```
 *
 * @since 0.1.0
 */
import type { Canonical } from "@modelgate/core"
import * as Cuts from "@modelgate/core/testing/Cuts"
import * as fc from "fast-check"

/** A JSON value as it survives `JSON.stringify` / `JSON.parse` unchanged. @category json */
export type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }

/** Object keys: short identifiers (never `__proto__`). @category json */
export const key: fc.Arbitrary<string> = fc.stringMatching(/^[a-z][a-zA-Z0-9]{0,7}$/)

/** Short text, including non-ASCII, quotes and line breaks. @category json */
export const text: fc.Arbitrary<string> = fc.oneof(
  fc.string({ minLength: 1, maxLength: 20 }),
  fc.constantFrom("Hello", "héllo wörld", "line\nbreak", "quote \" and \\", "emoji 😀", "{\"looks\":\"json\"}")
)

const scalar: fc.Arbitrary<Json> = fc.oneof(
  fc.string({ maxLength: 10 }),
  fc.integer({ min: -1000, max: 1000 }),
  fc.boolean(),
  fc.constant(null)
)

/** JSON objects (function arguments and responses). @category json */
export const jsonObject: fc.Arbitrary<{ readonly [key: string]: Json }> =
  fc.letrec<{ value: Json; object: { [key: string]: Json } }>((tie) => ({
    value: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      scalar,
      tie("object"),
      fc.array(tie("value"), { maxLength: 3 })
    ),
    object: fc.dictionary(key, tie("value"), { maxKeys: 4 })
  })).object

/** A function name Gemini accepts. @category json */
export const functionName: fc.Arbitrary<string> = fc.stringMatching(/^[a-z_][a-zA-Z0-9_]{0,11}$/)

/** Opaque base64-looking signatures. @category json */
export const signature: fc.Arbitrary<string> = fc.stringMatching(/^[A-Za-z0-9+/]{4,16}={0,2}$/)

/** A normalised JSON schema (lower-case types, no Gemini-only keys). @category schemas */
export const jsonSchema: fc.Arbitrary<{ readonly [key: string]: Json }> = fc.record({
  type: fc.constant("object"),
  properties: fc.dictionary(
    key,
    fc.oneof(
      fc.record({ type: fc.constantFrom("string", "integer", "number", "boolean") }),
      fc.record({ type: fc.constant(["string", "null"]) }),
      fc.record({ type: fc.constant("array"), items: fc.record({ type: fc.constant("string") }) })
    ),
    { maxKeys: 3 }
  )
}).map((schema) => schema as { readonly [key: string]: Json })

/** An upper-case Gemini (OpenAPI subset) schema, as gemini-cli writes for JSON mode. @category schemas */
export const geminiSchema: fc.Arbitrary<{ readonly [key: string]: Json }> = fc.record({
  type: fc.constant("OBJECT"),
  properties: fc.dictionary(
    key,
    fc.record({ type: fc.constantFrom("STRING", "INTEGER", "BOOLEAN"), nullable: fc.boolean() }),
    { maxKeys: 3 }
  ),
  propertyOrdering: fc.constant([])
}).map((schema) => schema as { readonly [key: string]: Json })

// ---------------------------------------------------------------------------
// Gemini requests
// ---------------------------------------------------------------------------

const userPart: fc.Arbitrary<Record<string, Json>> = fc.oneof(
  { weight: 4, arbitrary: text.map((t) => ({ text: t })) },
  {
    weight: 1,
    arbitrary: fc.record({
      inlineData: fc.record({ mimeType: fc.constantFrom("image/png", "image/jpeg"), data: signature })
    })
  },
  {
    weight: 1,
    arbitrary: fc.record({
      inlineData: fc.record({ mimeType: fc.constantFrom("application/pdf", "audio/wav"), data: signature })
    })
  },
  {
    weight: 1,
    arbitrary: fc.record({
      fileData: fc.record({
        mimeType: fc.constant("application/pdf"),
        fileUri: fc.constant("https://generativelanguage.googleapis.com/v1beta/files/abc")
      })
    })
  }
)

interface Call {
  readonly id: string | undefined
  readonly name: string
}

const callPart = fc.record({
  id: fc.option(fc.stringMatching(/^[a-z0-9]{4,8}$/), { nil: undefined }),
  name: functionName,
  args: jsonObject,
  thoughtSignature: fc.option(signature, { nil: undefined })
})

const modelTurn = fc.record({
  thought: fc.option(fc.record({ text, signature: fc.option(signature, { nil: undefined }) }), { nil: undefined }),
  text: fc.option(text, { nil: undefined }),
  calls: fc.array(callPart, { maxLength: 3 })
})

const responseValue: fc.Arbitrary<{ readonly [key: string]: Json }> = fc.oneof(
  text.map((t) => ({ output: t })),
  text.map((t) => ({ error: t })),
  jsonObject.filter((o) => Object.keys(o).length !== 1)
)

const withoutUndefined = (record: Record<string, unknown>): Record<string, Json> => {
  const out: Record<string, Json> = {}
  for (const k in record) if (record[k] !== undefined) out[k] = record[k] as Json
  return out
}

/**
 * Gemini `contents`: alternating user and model turns, starting and ending
 * with a user turn; a model turn's function calls are answered by
 * `functionResponse` parts (with or without ids) in the next user turn.
 *
 * @category requests
 */
export const contents: fc.Arbitrary<Array<Record<string, Json>>> = fc
  .tuple(
    fc.array(userPart, { minLength: 1, maxLength: 3 }),
    fc.array(
      fc.tuple(
        modelTurn,
        fc.array(userPart, { maxLength: 2 }),
        fc.array(responseValue, { minLength: 3, maxLength: 3 }),
        fc.boolean()
      ),
      { maxLength: 3 }
    )
  )
  .map(([first, turns]) => {
    const out: Array<Record<string, Json>> = [{ role: "user", parts: first }]
    for (const [model, after, responses, useIds] of turns) {
      const parts: Array<Json> = []
      if (model.thought !== undefined) {
        parts.push(
          withoutUndefined({ text: model.thought.text, thought: true, thoughtSignature: model.thought.signature })
        )
      }
      if (model.text !== undefined) parts.push({ text: model.text })
      const calls: Array<Call> = []
      for (const call of model.calls) {
        calls.push({ id: call.id, name: call.name })
        parts.push(withoutUndefined({
          functionCall: withoutUndefined({ id: call.id, name: call.name, args: call.args }),
          thoughtSignature: call.thoughtSignature
        }))
      }
      if (parts.length === 0) parts.push({ text: "ok" })
      out.push({ role: "model", parts })
      const next: Array<Json> = calls.map((call, i) => ({
        functionResponse: withoutUndefined({
          id: useIds ? call.id : undefined,
          name: call.name,
          response: responses[i % responses.length]!
        })
      }))
      for (const part of after) next.push(part)
      if (next.length === 0) next.push({ text: "go on" })
      out.push({ role: "user", parts: next })
    }
    return out
  })

const generationConfig = fc.record(
  {
    temperature: fc.integer({ min: 0, max: 200 }).map((n) => n / 100),
    topP: fc.integer({ min: 0, max: 100 }).map((n) => n / 100),
    topK: fc.integer({ min: 1, max: 100 }),
    maxOutputTokens: fc.integer({ min: 1, max: 65536 }),
    stopSequences: fc.array(fc.string({ minLength: 1, maxLength: 5 }), { minLength: 1, maxLength: 3 }),
    candidateCount: fc.integer({ min: 1, max: 4 }),
    seed: fc.integer({ min: 0, max: 1_000_000 }),
    presencePenalty: fc.integer({ min: -200, max: 200 }).map((n) => n / 100),
    frequencyPenalty: fc.integer({ min: -200, max: 200 }).map((n) => n / 100),
    responseMimeType: fc.constantFrom("application/json", "text/plain"),
    thinkingConfig: fc.oneof(
      fc.record({ thinkingLevel: fc.constantFrom("MINIMAL", "LOW", "MEDIUM", "HIGH"), includeThoughts: fc.boolean() }),
      fc.record({ thinkingBudget: fc.integer({ min: 0, max: 32768 }), includeThoughts: fc.boolean() })
    )
  },
  { requiredKeys: [] }
).chain((config) =>
  config.responseMimeType === "application/json"
    ? fc.option(jsonSchema, { nil: undefined }).map((schema) =>
      withoutUndefined({ ...config, responseJsonSchema: schema })
    )
    : fc.constant(config as Record<string, Json>)
)

/**
 * A valid `generateContent` request body in camelCase, with everything the
 * canonical model can carry: system instruction, media, thoughts with
 * signatures, function calls and responses, tools with
 * `parametersJsonSchema`, tool config and generation config.
 *
 * @category requests
 */
export const geminiRequest: fc.Arbitrary<Record<string, Json>> = fc
  .record({
    contents,
    system: fc.option(fc.array(text, { minLength: 1, maxLength: 2 }), { nil: undefined }),
    tools: fc.option(
      fc.uniqueArray(
        fc.record({
          name: functionName,
          description: fc.option(text, { nil: undefined }),
          parametersJsonSchema: fc.option(jsonSchema, { nil: undefined })
        }),
        {
          minLength: 1,
          maxLength: 3,
          selector: (fn) => fn.name
        }
      ),
      { nil: undefined }
    ),
    mode: fc.constantFrom(undefined, "AUTO", "NONE", "ANY", "ANY_ONE"),
    generationConfig: fc.option(generationConfig, { nil: undefined })
  })
  .map(({ contents, generationConfig, mode, system, tools }) => {
    const body: Record<string, Json> = { contents }
    if (system !== undefined) body.systemInstruction = { role: "user", parts: system.map((t) => ({ text: t })) }
    if (tools !== undefined) body.tools = [{ functionDeclarations: tools.map(withoutUndefined) }]
    if (mode !== undefined) {
      body.toolConfig = {
        functionCallingConfig: mode === "ANY_ONE"
          ? { mode: "ANY", allowedFunctionNames: [tools?.[0]?.name ?? "f"] }
          : { mode }
      }
    }
    if (generationConfig !== undefined && Object.keys(generationConfig).length > 0) {
      body.generationConfig = generationConfig
    }
    return body
  })

/** The snake_case spelling of a camelCase body (what Google's curl samples send). @category requests */
export const toSnakeCase = (value: Json, opaque = false): Json => {
  if (opaque || value === null || typeof value !== "object") return value
  if (Array.isArray(value)) return value.map((item) => toSnakeCase(item))
  const out: Record<string, Json> = {}
  for (const k in value as Record<string, Json>) {
    const inner = (value as Record<string, Json>)[k]!
    const isOpaque = k === "args" || k === "response" || k.endsWith("Schema") || k === "parameters"
    out[k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)] = toSnakeCase(inner, isOpaque)
  }
  return out
}

// ---------------------------------------------------------------------------
// Gemini responses and chunks
// ---------------------------------------------------------------------------

const answerPart: fc.Arbitrary<Record<string, Json>> = fc.oneof(
  { weight: 4, arbitrary: text.map((t) => ({ text: t })) },
  { weight: 1, arbitrary: fc.record({ text, thought: fc.constant(true), thoughtSignature: signature }) },
  { weight: 1, arbitrary: text.map((t) => ({ text: t, thought: true })) },
  {
    weight: 2,
    arbitrary: callPart.map((call) =>
      withoutUndefined({
        functionCall: withoutUndefined({ id: call.id, name: call.name, args: call.args }),
        thoughtSignature: call.thoughtSignature
      })
    )
  }
)

/** Usage metadata with consistent counts. @category responses */
export const usageMetadata: fc.Arbitrary<Record<string, Json>> = fc
  .record({
    prompt: fc.integer({ min: 0, max: 100_000 }),
    candidates: fc.integer({ min: 0, max: 10_000 }),
    thoughts: fc.option(fc.integer({ min: 0, max: 10_000 }), { nil: undefined }),
    cached: fc.option(fc.integer({ min: 0, max: 1000 }), { nil: undefined }),
    toolUse: fc.option(fc.integer({ min: 0, max: 1000 }), { nil: undefined })
  })
  .map(({ cached, candidates, prompt, thoughts, toolUse }) =>
    withoutUndefined({
      promptTokenCount: prompt,
      candidatesTokenCount: candidates,
      thoughtsTokenCount: thoughts,
      cachedContentTokenCount: cached === undefined ? undefined : Math.min(cached, prompt),
      toolUsePromptTokenCount: toolUse,
      totalTokenCount: prompt + candidates + (thoughts ?? 0) + (toolUse ?? 0)
    })
  )

/**
 * A complete `generateContent` answer from a Gemini upstream: one or two
 * candidates with text, thoughts and function calls, a finish reason each
 * (`STOP`, `MAX_TOKENS` or `SAFETY`), usage, `modelVersion` and `responseId`.
 *
 * @category responses
 */
export const geminiResponse: fc.Arbitrary<Record<string, Json>> = fc
  .record({
    candidates: fc.array(
      fc.record({
        parts: fc.array(answerPart, { maxLength: 4 }),
        finishReason: fc.constantFrom("STOP", "MAX_TOKENS", "SAFETY")
      }),
      { minLength: 1, maxLength: 2 }
    ),
    usage: fc.option(usageMetadata, { nil: undefined }),
    responseId: fc.stringMatching(/^[A-Za-z0-9]{6,12}$/)
  })
  .map(({ candidates, responseId, usage }) =>
    withoutUndefined({
      candidates: candidates.map((candidate, index) =>
        candidate.parts.length === 0
          ? { finishReason: candidate.finishReason, index }
          : { content: { role: "model", parts: candidate.parts }, finishReason: candidate.finishReason, index }
      ),
      usageMetadata: usage,
      modelVersion: "gemini-2.5-flash",
      responseId
    })
  )

/**
 * Cuts a complete Gemini answer into stream chunks the way Google streams it:
 * text is split at the given cut points (a thought's signature stays on its
 * last piece), each piece or function call goes into its own chunk, the
 * finish reason rides on each candidate's last chunk, and usage is repeated
 * cumulatively, complete on the last chunk.
 *
 * @category streams
 */
export const toChunks = (response: Record<string, Json>, cuts: ReadonlyArray<number>): Array<Record<string, Json>> => {
  const chunks: Array<Record<string, Json>> = []
  const base = { modelVersion: response.modelVersion as Json, responseId: response.responseId as Json }
  const candidates = (response.candidates ?? []) as ReadonlyArray<Record<string, Json>>
  for (const candidate of candidates) {
    const index = candidate.index as number
    const parts = ((candidate.content as Record<string, Json> | undefined)?.parts ?? []) as ReadonlyArray<
      Record<string, Json>
    >
    const pieces: Array<Record<string, Json>> = []
    for (const part of parts) {
      if (typeof part.text === "string" && part.text.length > 1) {
        const texts = Cuts.splitNonEmpty(part.text, cuts)
        texts.forEach((piece, i) => {
          const out: Record<string, Json> = { ...part, text: piece }
          if (i < texts.length - 1) delete out.thoughtSignature
          pieces.push(out)
        })
      } else pieces.push(part)
    }
    if (pieces.length === 0) {
      chunks.push({ candidates: [{ finishReason: candidate.finishReason as Json, index }], ...base })
      continue
    }
    pieces.forEach((piece, i) => {
      const out: Record<string, Json> = { content: { role: "model", parts: [piece] }, index }
      if (i === pieces.length - 1) out.finishReason = candidate.finishReason as Json
      chunks.push({ candidates: [out], ...base })
    })
  }
  if (response.usageMetadata !== undefined && chunks.length > 0) {
    const usage = response.usageMetadata as Record<string, Json>
    chunks.forEach((chunk, i) => {
      chunk.usageMetadata = i === chunks.length - 1
        ? usage
        : { promptTokenCount: usage.promptTokenCount as Json, totalTokenCount: usage.promptTokenCount as Json }
    })
  }
  return chunks
}

/** Cut points for `toChunks` and for splitting text. @category streams */
export const cuts: fc.Arbitrary<Array<number>> = fc.array(fc.nat({ max: 40 }), { maxLength: 6 })

// ---------------------------------------------------------------------------
// SSE text
// ---------------------------------------------------------------------------

/**
 * SSE text as upstreams write it: events of one or more `data:` lines (with or
 * without the space), comments, `event:` lines, and `\r\n` or `\n` line ends.
 *
 * @category sse
 */
export const sseText: fc.Arbitrary<string> = fc
  .tuple(
    fc.array(
      fc.record({
        lines: fc.array(fc.string({ maxLength: 12 }).map((s) => s.replace(/[\r\n]/g, "")), {
          minLength: 1,
          maxLength: 3
        }),
        space: fc.boolean(),
        comment: fc.boolean(),
        event: fc.boolean()
      }),
      { maxLength: 5 }
    ),
    fc.constantFrom("\r\n", "\n")
  )
  .map(([events, eol]) =>
    events
      .map((e) =>
        (e.comment ? `: keep-alive${eol}` : "") + (e.event ? `event: message${eol}` : "") +
        e.lines.map((line) => `data:${e.space ? " " : ""}${line}${eol}`).join("") + eol
      )
      .join("")
  )

/** Cuts a text into pieces at arbitrary points (for split-invariance laws). @category sse */
export const splits = (value: string): fc.Arbitrary<Array<string>> =>
  cuts.map((points) => Cuts.splitNonEmpty(value, points.map((p) => p * 7)))

// ---------------------------------------------------------------------------
// Canonical values Gemini can carry
// ---------------------------------------------------------------------------

const canonicalAnswerPart: fc.Arbitrary<Canonical.Part> = fc.oneof(
  { weight: 3, arbitrary: text.map((t): Canonical.Part => ({ type: "text", text: t })) },
  {
    weight: 1,
    arbitrary: fc.record({ text, signature }).map(({ signature, text }): Canonical.Part => ({
      type: "thinking",
      text,
      signature
    }))
  },
  {
    weight: 2,
    arbitrary: fc.record({
      id: fc.stringMatching(/^call_[a-z0-9]{4}$/),
      name: functionName,
      args: jsonObject,
      signature: fc.option(signature, { nil: undefined })
    })
      .map(({ args, id, name, signature }): Canonical.Part =>
        signature === undefined
          ? { type: "tool_call", id, name, arguments: JSON.stringify(args) }
          : { type: "tool_call", id, name, arguments: JSON.stringify(args), signature }
      )
  }
)

/**
 * A canonical answer a Gemini client can be sent without loss: text,
 * signed thinking and tool calls (object arguments, unique ids), finish
 * `tool_calls` exactly when a choice calls tools, model `gemini-test`,
 * created 0.
 *
 * @category canonical
 */
export const canonicalResponse: fc.Arbitrary<Canonical.ChatResponse> = fc
  .record({
    id: fc.stringMatching(/^[a-z0-9]{6}$/),
    choices: fc.array(
      fc.tuple(
        fc.array(canonicalAnswerPart, { maxLength: 4 }),
        fc.constantFrom("stop", "length", "content_filter") as fc.Arbitrary<Canonical.FinishReason>
      ),
      { minLength: 1, maxLength: 2 }
    ),
    usage: fc.option(
      fc.record({
        promptTokens: fc.nat({ max: 1000 }),
        completionTokens: fc.nat({ max: 1000 }),
        reasoningTokens: fc.option(fc.nat({ max: 10 }), { nil: undefined })
      })
        .map(({ completionTokens, promptTokens, reasoningTokens }): Canonical.Usage => {
          const completion = completionTokens + (reasoningTokens ?? 0)
          return reasoningTokens === undefined
            ? { promptTokens, completionTokens: completion, totalTokens: promptTokens + completion }
            : { promptTokens, completionTokens: completion, totalTokens: promptTokens + completion, reasoningTokens }
        }),
      { nil: undefined }
    )
  })
  .map(({ choices, id, usage }): Canonical.ChatResponse => {
    let n = 0
    const out: Canonical.ChatResponse = {
      id,
      model: "gemini-test",
      created: 0,
      choices: choices.map(([parts, finish], index) => {
        const content = parts.map((part) => part.type === "tool_call" ? { ...part, id: `${part.id}_${n++}` } : part)
        const hasCalls = content.some((part) => part.type === "tool_call")
        return { index, content, finishReason: hasCalls && finish === "stop" ? "tool_calls" : finish }
      })
    }
    return usage === undefined ? out : { ...out, usage }
  })
