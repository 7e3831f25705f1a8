/**
 * How OpenAI frames a streamed answer for its clients: each chunk is one
 * server-sent event, `data: <one-line JSON>\n\n`, and the stream ends with
 * `data: [DONE]\n\n`. Reading an upstream's stream is core's `Sse.Parser`.
 *
 * @since 0.1.0
 */

/** The OpenAI end-of-stream event. @category framing */
export const DONE = "data: [DONE]\n\n"

/**
 * Frames one JSON text as an SSE event: `data: ${json}\n\n`. The JSON must be on
 * one line (`JSON.stringify` output is).
 *
 * @example
 * ```ts
 * import { Framing } from "@modelgate/openai-adapter"
 *
 * Framing.frame(JSON.stringify({ choices: [] })) // 'data: {"choices":[]}\n\n'
 * ```
 *
 * @category framing
 */
export const frame = (json: string): string => `data: ${json}\n\n`
