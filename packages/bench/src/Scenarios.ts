/**
 * The benchmark scenarios of issue 8. Each says what to send straight to the
 * fake upstream ("direct", also sent through the floor proxy, which forwards
 * it unchanged) and what to send to the gateway, plus the rates and
 * concurrency to measure at. Upstream behaviour (answer size, chunk count,
 * chunk interval) is chosen by tokens in the model name, which the fake
 * upstream reads (`bytes-N`, `chunks-NxB`, `interval-N`): the gateway
 * forwards the model name, so no `x-fake-*` header has to survive the hop.
 *
 * The gateway is spoken to in one client dialect per run (`--gateway-dialect`):
 * OpenAI (the default: `/v1/chat/completions`, `Authorization: Bearer`) or
 * Gemini (`/v1beta/models/{model}:generateContent`, `x-goog-api-key`). The
 * same-dialect scenarios then use that dialect end to end, direct baseline
 * included, so "added" compares like with like; the translation scenarios
 * use the other dialect on the channel side (OpenAI client to a Gemini
 * channel, or Gemini client to an OpenAI channel).
 *
 * @since 0.1.0
 */

/** Which wire dialect a request speaks. @category models */
export type Dialect = "openai" | "gemini"

/** One request of a scenario, relative to a target's base URL. @category models */
export interface ScenarioRequest {
  readonly dialect: Dialect
  /** Path and query, e.g. "/v1/chat/completions". */
  readonly path: string
  readonly body: string
}

/** A benchmark scenario. @category models */
export interface Scenario {
  readonly name: string
  readonly title: string
  readonly description: string
  /** latency: open-loop rates + closed-loop throughput; memory: many long-lived streams at once. */
  readonly kind: "latency" | "memory"
  readonly stream: boolean
  /** Sent to the fake upstream directly and through the floor proxy. */
  readonly direct: ScenarioRequest
  /** Sent to the gateway, in the run's client dialect. */
  readonly gateway: ScenarioRequest
  /** Model names the gateway must know, by channel dialect. */
  readonly models: { readonly openai: ReadonlyArray<string>; readonly gemini: ReadonlyArray<string> }
  /** Portkey can run it (same-dialect OpenAI pass-through only, so never in a Gemini-dialect run). */
  readonly portkey: boolean
  /** Open-loop rates, calls per second. */
  readonly rates: ReadonlyArray<number>
  /** Closed-loop concurrency for throughput (latency kind) or open streams (memory kind). */
  readonly concurrency: number
  /** Memory kind: how long each stream stays open, ms (for planning and the report). */
  readonly streamMs?: number
}

/** Scenario names, in run order. @category constants */
export const SCENARIO_NAMES = [
  "chat-small",
  "chat-10k",
  "chat-200k",
  "stream-200",
  "translate-gemini",
  "translate-gemini-stream",
  "streams-1000"
] as const

/** The dialects a run can speak to the gateway. @category constants */
export const DIALECTS: ReadonlyArray<Dialect> = ["openai", "gemini"]

/** How long each of the 1,000 streams of `streams-1000` stays open: chunks 100 ms apart. @category constants */
export const MEMORY_CHUNKS = { full: 100, quick: 40 } as const

const chat = (model: string, content: string, stream: boolean): string =>
  JSON.stringify({
    model,
    messages: [{ role: "user", content }],
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {})
  })

const geminiBody = (text: string): string => JSON.stringify({ contents: [{ role: "user", parts: [{ text }] }] })

/** About 10 KB of prompt text (words, so token estimates stay realistic). @category constants */
export const TEN_KB_PROMPT: string = "Summarise the following notes in one line. " +
  Array.from({ length: 1100 }, (_, i) => ["alpha", "bravo", "charlie", "delta", "echo"][i % 5]).join(" ").slice(
    0,
    10_240 - 44
  )

const words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]

/** `bytes` of plain prose-like text (deterministic). */
const filler = (bytes: number, seed: number): string => {
  let out = ""
  for (let i = seed; out.length < bytes; i++) out += `${words[i % words.length]}${i % 17 === 0 ? ".\n" : " "}`
  return out.slice(0, bytes)
}

/**
 * What a coding agent sends every turn, about 200 KB of JSON: a 28 KB system
 * prompt, 40 tools with JSON schemas, and a history of 60 messages (user
 * turns, assistant turns with tool calls, tool results), in a dialect. The
 * answer asked for is short, so the figure is the cost of a large prompt.
 *
 * @category scenarios
 */
export const agentBody = (dialect: Dialect, stream: boolean): string => {
  const system = filler(28 * 1024, 1)
  const tools = Array.from({ length: 40 }, (_, i) => ({
    name: `tool_${i}`,
    description: filler(600, i * 7),
    parameters: {
      type: "object",
      properties: Object.fromEntries(
        Array.from(
          { length: 6 },
          (_, j) => [`arg_${j}`, { type: j % 2 === 0 ? "string" : "integer", description: filler(80, i + j) }]
        )
      ),
      required: ["arg_0"]
    }
  }))
  const turns = Array.from(
    { length: 60 },
    (_, i) => ({ i, role: i % 3 === 0 ? "user" : i % 3 === 1 ? "assistant" : "tool", text: filler(2000, i * 13) })
  )
  if (dialect === "openai") {
    const messages: Array<unknown> = [{ role: "system", content: system }]
    for (const turn of turns) {
      if (turn.role === "assistant") {
        messages.push({
          role: "assistant",
          content: turn.text,
          tool_calls: [{
            id: `call_${turn.i}`,
            type: "function",
            function: { name: `tool_${turn.i % 40}`, arguments: JSON.stringify({ arg_0: filler(120, turn.i) }) }
          }]
        })
      } else if (turn.role === "tool") {
        messages.push({ role: "tool", tool_call_id: `call_${turn.i - 1}`, content: turn.text })
      } else messages.push({ role: "user", content: turn.text })
    }
    return JSON.stringify({
      model: "bench-agent",
      messages,
      tools: tools.map((f) => ({ type: "function", function: f })),
      max_tokens: 64,
      ...(stream ? { stream: true, stream_options: { include_usage: true } } : {})
    })
  }
  const contents: Array<unknown> = []
  for (const turn of turns) {
    if (turn.role === "assistant") {
      contents.push({
        role: "model",
        parts: [{ text: turn.text }, {
          functionCall: { name: `tool_${turn.i % 40}`, args: { arg_0: filler(120, turn.i) } }
        }]
      })
    } else if (turn.role === "tool") {
      contents.push({
        role: "user",
        parts: [{ functionResponse: { name: `tool_${(turn.i - 1) % 40}`, response: { result: turn.text } } }]
      })
    } else contents.push({ role: "user", parts: [{ text: turn.text }] })
  }
  return JSON.stringify({
    systemInstruction: { parts: [{ text: system }] },
    contents,
    tools: [{ functionDeclarations: tools }],
    generationConfig: { maxOutputTokens: 64 }
  })
}

/**
 * One call in a dialect: the OpenAI chat completion or the Gemini
 * generateContent / streamGenerateContent (SSE) equivalent.
 *
 * @category scenarios
 */
export const callIn = (dialect: Dialect, model: string, text: string, stream: boolean): ScenarioRequest =>
  dialect === "openai"
    ? { dialect, path: "/v1/chat/completions", body: chat(model, text, stream) }
    : {
      dialect,
      path: `/v1beta/models/${encodeURIComponent(model)}:${
        stream ? "streamGenerateContent?alt=sse" : "generateContent"
      }`,
      body: geminiBody(text)
    }

/**
 * The header that carries an API key in a dialect: `Authorization: Bearer`
 * for OpenAI, `x-goog-api-key` for Gemini.
 *
 * @category scenarios
 */
export const authHeaders = (dialect: Dialect, key: string): Record<string, string> =>
  dialect === "openai" ? { authorization: `Bearer ${key}` } : { "x-goog-api-key": key }

const other = (dialect: Dialect): Dialect => (dialect === "openai" ? "gemini" : "openai")

/**
 * The scenario set. `quick` shortens the memory scenario's streams (the
 * rest is shortened by the runner's durations) and keeps one rate per
 * scenario plus 1,000/s for chat-small, so the target rate is always
 * measured. `dialect` is the client dialect spoken to the gateway (see the
 * module comment); model names follow the channel that serves them (Gemini
 * channel models start with "gemini-").
 *
 * @category scenarios
 */
export const scenarios = (quick: boolean, dialect: Dialect = "openai"): ReadonlyArray<Scenario> => {
  const memoryChunks = quick ? MEMORY_CHUNKS.quick : MEMORY_CHUNKS.full
  const channel = (d: Dialect, model: string): string => (d === "gemini" ? `gemini-${model}` : model)
  const models = (
    d: Dialect,
    model: string
  ) => (d === "openai" ? { openai: [model], gemini: [] } : { openai: [], gemini: [model] })
  // Same dialect end to end: the direct baseline is the very request the gateway gets.
  const same = (model: string, text: string, stream: boolean) => {
    const m = channel(dialect, model)
    const request = callIn(dialect, m, text, stream)
    return { direct: request, gateway: request, models: models(dialect, m), portkey: dialect === "openai" }
  }
  // Translation: the client speaks `dialect`, the channel the other one; the baseline is the channel's own call.
  const across = (model: string, text: string, stream: boolean) => {
    const upstream = other(dialect)
    const m = channel(upstream, model)
    return {
      direct: callIn(upstream, m, text, stream),
      gateway: callIn(dialect, m, text, stream),
      models: models(upstream, m),
      portkey: false
    }
  }
  // The agent's prompt, same dialect end to end; its model answers in a few words.
  const agent = () => {
    const m = channel(dialect, "bench-agent")
    const request: ScenarioRequest = dialect === "openai"
      ? {
        dialect,
        path: "/v1/chat/completions",
        body: agentBody("openai", false).replace("\"bench-agent\"", JSON.stringify(m))
      }
      : { dialect, path: `/v1beta/models/${encodeURIComponent(m)}:generateContent`, body: agentBody("gemini", false) }
    return { direct: request, gateway: request, models: models(dialect, m), portkey: dialect === "openai" }
  }
  const clientName = dialect === "openai" ? "OpenAI" : "Gemini"
  const channelName = dialect === "openai" ? "Gemini" : "OpenAI"
  const memoryModel = `bench-chunks-${memoryChunks}x16-interval-100`
  return [
    {
      name: "chat-small",
      title: "Non-stream chat, small",
      description: `${clientName} non-stream call, one short message, short answer (same dialect, pass-through).`,
      kind: "latency",
      stream: false,
      ...same(dialect === "openai" ? "gpt-4o-mini" : "2.5-flash", "Say hello.", false),
      rates: quick ? [200, 1000] : [250, 500, 1000],
      concurrency: 32
    },
    {
      name: "chat-10k",
      title: "Non-stream chat, 10 KB in / 10 KB out",
      description: `${clientName} non-stream call with a 10 KB prompt and a 10 KB answer (same dialect).`,
      kind: "latency",
      stream: false,
      ...same("bench-bytes-10240", TEN_KB_PROMPT, false),
      rates: quick ? [200] : [250, 500],
      concurrency: 32
    },
    {
      name: "chat-200k",
      title: "Non-stream chat, a coding agent's 200 KB prompt",
      description:
        `${clientName} non-stream call with what a coding agent sends every turn: a 28 KB system prompt, 40 tools and 60 messages of history, about 200 KB of JSON, and a short answer (same dialect).`,
      kind: "latency",
      stream: false,
      ...agent(),
      rates: quick ? [100] : [100, 250],
      concurrency: 16
    },
    {
      name: "stream-200",
      title: "Stream of 200 chunks",
      description:
        `${clientName} streamed call: 200 content chunks of 20 bytes, no delay between chunks (same dialect).`,
      kind: "latency",
      stream: true,
      ...same("bench-chunks-200x20", "Count to two hundred.", true),
      rates: quick ? [50] : [50, 100],
      concurrency: 16
    },
    {
      name: "translate-gemini",
      title: `${clientName} client, ${channelName} channel`,
      description:
        `${clientName} non-stream call to a model served by a ${channelName} channel: the gateway translates request and answer. Direct baseline: the equivalent ${channelName} call.`,
      kind: "latency",
      stream: false,
      ...across(dialect === "openai" ? "2.5-flash" : "gpt-4o-mini", "Say hello.", false),
      rates: quick ? [200] : [250, 1000],
      concurrency: 32
    },
    {
      name: "translate-gemini-stream",
      title: `${clientName} stream from a ${channelName} channel`,
      description:
        `Streamed ${clientName} call from a ${channelName} channel (200 chunks of 20 bytes): translated per event. Direct baseline: the ${channelName} stream (SSE).`,
      kind: "latency",
      stream: true,
      ...across("bench-chunks-200x20", "Count to two hundred.", true),
      rates: quick ? [50] : [100],
      concurrency: 16
    },
    {
      name: "streams-1000",
      title: "1,000 concurrent long-lived streams",
      description: `1,000 ${clientName} streams open at once, each ${memoryChunks} chunks 100 ms apart (${
        memoryChunks / 10
      } s): peak and steady RSS of the proxy process.`,
      kind: "memory",
      stream: true,
      ...same(memoryModel, "Talk slowly.", true),
      rates: [],
      concurrency: 1000,
      streamMs: memoryChunks * 100
    }
  ]
}
