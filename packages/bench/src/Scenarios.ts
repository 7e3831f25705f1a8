/**
 * The benchmark scenarios of issue 8. Each says what to send straight to the
 * fake upstream ("direct", also sent through the floor proxy, which forwards
 * it unchanged) and what to send to the gateway, plus the rates and
 * concurrency to measure at. Upstream behaviour (answer size, chunk count,
 * chunk interval) is chosen by tokens in the model name, which the fake
 * upstream reads (`bytes-N`, `chunks-NxB`, `interval-N`): the gateway
 * forwards the model name, so no `x-fake-*` header has to survive the hop.
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
  /** Sent to the gateway (always the OpenAI surface here). */
  readonly gateway: ScenarioRequest
  /** Model names the gateway must know, by channel dialect. */
  readonly models: { readonly openai: ReadonlyArray<string>; readonly gemini: ReadonlyArray<string> }
  /** Portkey can run it (same-dialect OpenAI pass-through only). */
  readonly portkey: boolean
  /** Open-loop rates, calls per second. */
  readonly rates: ReadonlyArray<number>
  /** Closed-loop concurrency for throughput (latency kind) or open streams (memory kind). */
  readonly concurrency: number
  /** Memory kind: how long each stream stays open, ms (for planning and the report). */
  readonly streamMs?: number
}

/** Scenario names, in run order. @category constants */
export const SCENARIO_NAMES = ["chat-small", "chat-10k", "stream-200", "translate-gemini", "translate-gemini-stream", "streams-1000"] as const

const chat = (model: string, content: string, stream: boolean): string =>
  JSON.stringify({
    model,
    messages: [{ role: "user", content }],
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {})
  })

const geminiBody = (text: string): string => JSON.stringify({ contents: [{ role: "user", parts: [{ text }] }] })

/** About 10 KB of prompt text (words, so token estimates stay realistic). @category constants */
export const TEN_KB_PROMPT: string = "Summarise the following notes in one line. " +
  Array.from({ length: 1100 }, (_, i) => ["alpha", "bravo", "charlie", "delta", "echo"][i % 5]).join(" ").slice(0, 10_240 - 44)

/**
 * The scenario set. `quick` shortens the memory scenario's streams (the
 * rest is shortened by the runner's durations) and keeps one rate per
 * scenario plus 1,000/s for chat-small, so the target rate is always measured.
 *
 * @category scenarios
 */
export const scenarios = (quick: boolean): ReadonlyArray<Scenario> => {
  const memoryChunks = quick ? 40 : 150
  const memoryModel = `bench-chunks-${memoryChunks}x16-interval-100`
  return [
    {
      name: "chat-small",
      title: "Non-stream chat, small",
      description: "OpenAI chat completion, one short message, short answer (same dialect, pass-through).",
      kind: "latency",
      stream: false,
      direct: { dialect: "openai", path: "/v1/chat/completions", body: chat("gpt-4o-mini", "Say hello.", false) },
      gateway: { dialect: "openai", path: "/v1/chat/completions", body: chat("gpt-4o-mini", "Say hello.", false) },
      models: { openai: ["gpt-4o-mini"], gemini: [] },
      portkey: true,
      rates: quick ? [200, 1000] : [250, 500, 1000],
      concurrency: 32
    },
    {
      name: "chat-10k",
      title: "Non-stream chat, 10 KB in / 10 KB out",
      description: "OpenAI chat completion with a 10 KB prompt and a 10 KB answer.",
      kind: "latency",
      stream: false,
      direct: { dialect: "openai", path: "/v1/chat/completions", body: chat("bench-bytes-10240", TEN_KB_PROMPT, false) },
      gateway: { dialect: "openai", path: "/v1/chat/completions", body: chat("bench-bytes-10240", TEN_KB_PROMPT, false) },
      models: { openai: ["bench-bytes-10240"], gemini: [] },
      portkey: true,
      rates: quick ? [200] : [250, 500],
      concurrency: 32
    },
    {
      name: "stream-200",
      title: "Stream of 200 chunks",
      description: "OpenAI streamed chat completion: 200 content chunks of 20 bytes, no delay between chunks.",
      kind: "latency",
      stream: true,
      direct: { dialect: "openai", path: "/v1/chat/completions", body: chat("bench-chunks-200x20", "Count to two hundred.", true) },
      gateway: { dialect: "openai", path: "/v1/chat/completions", body: chat("bench-chunks-200x20", "Count to two hundred.", true) },
      models: { openai: ["bench-chunks-200x20"], gemini: [] },
      portkey: true,
      rates: quick ? [50] : [50, 100],
      concurrency: 16
    },
    {
      name: "translate-gemini",
      title: "OpenAI client, Gemini channel",
      description:
        "OpenAI chat completion to a model served by a Gemini channel: the gateway translates request and answer. Direct baseline: the equivalent Gemini generateContent call.",
      kind: "latency",
      stream: false,
      direct: { dialect: "gemini", path: "/v1beta/models/gemini-2.5-flash:generateContent", body: geminiBody("Say hello.") },
      gateway: { dialect: "openai", path: "/v1/chat/completions", body: chat("gemini-2.5-flash", "Say hello.", false) },
      models: { openai: [], gemini: ["gemini-2.5-flash"] },
      portkey: false,
      rates: quick ? [200] : [250, 1000],
      concurrency: 32
    },
    {
      name: "translate-gemini-stream",
      title: "OpenAI stream from a Gemini channel",
      description:
        "Streamed OpenAI chat completion from a Gemini channel (50 chunks): translated per event. Direct baseline: Gemini streamGenerateContent (SSE).",
      kind: "latency",
      stream: true,
      direct: {
        dialect: "gemini",
        path: "/v1beta/models/gemini-bench-chunks-50x20:streamGenerateContent?alt=sse",
        body: geminiBody("Count to fifty.")
      },
      gateway: { dialect: "openai", path: "/v1/chat/completions", body: chat("gemini-bench-chunks-50x20", "Count to fifty.", true) },
      models: { openai: [], gemini: ["gemini-bench-chunks-50x20"] },
      portkey: false,
      rates: quick ? [50] : [100],
      concurrency: 16
    },
    {
      name: "streams-1000",
      title: "1,000 concurrent long-lived streams",
      description:
        `1,000 streams open at once, each ${memoryChunks} chunks 100 ms apart (${memoryChunks / 10} s): peak and steady RSS of the proxy process.`,
      kind: "memory",
      stream: true,
      direct: { dialect: "openai", path: "/v1/chat/completions", body: chat(memoryModel, "Talk slowly.", true) },
      gateway: { dialect: "openai", path: "/v1/chat/completions", body: chat(memoryModel, "Talk slowly.", true) },
      models: { openai: [memoryModel], gemini: [] },
      portkey: true,
      rates: [],
      concurrency: 1000,
      streamMs: memoryChunks * 100
    }
  ]
}
