/**
 * Local token estimates, for the balance hold before a call and for metering
 * when an upstream reports no usage.
 *
 * The prompt estimate is an upper bound, not a guess: byte-pair tokenizers never
 * produce more tokens than the text has UTF-8 bytes, so the hold taken from it
 * covers the real prompt. Output is bounded by the requested or the model's
 * maximum output tokens.
 *
 * @since 0.1.0
 */
import type { ChatRequest, Part } from "./Canonical.ts"

/** Tokens charged for structure around each message (role markers and separators). @category constants */
export const MESSAGE_OVERHEAD_TOKENS = 8

/** Upper bound on the tokens an image or file costs in a prompt. @category constants */
export const MEDIA_TOKENS = 2_000

/** The UTF-8 length of a string, without allocating. @category counting */
export const utf8Length = (text: string): number => {
  let bytes = 0
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code < 0x80) bytes += 1
    else if (code < 0x800) bytes += 2
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      bytes += 4
      i++
    } else bytes += 3
  }
  return bytes
}

/**
 * A typical-case estimate of the tokens in generated text (about four
 * characters per token), used only when an upstream reports no usage.
 *
 * @category counting
 */
export const estimateGeneratedTokens = (text: string): number => text.length === 0 ? 0 : Math.ceil(text.length / 4)

const partBound = (part: Part): number => {
  switch (part.type) {
    case "text":
    case "thinking":
      return utf8Length(part.text)
    case "tool_call":
      return utf8Length(part.name) + utf8Length(part.arguments)
    case "tool_result":
      return utf8Length(part.content)
    case "image":
    case "file":
      return MEDIA_TOKENS
  }
}

/**
 * An upper bound on the prompt tokens of a canonical request.
 *
 * @category counting
 */
export const promptTokenBound = (request: ChatRequest): number => {
  let tokens = 0
  for (const text of request.system ?? []) tokens += utf8Length(text) + MESSAGE_OVERHEAD_TOKENS
  for (const message of request.messages) {
    tokens += MESSAGE_OVERHEAD_TOKENS
    for (const part of message.content) tokens += partBound(part)
  }
  for (const tool of request.tools ?? []) {
    tokens += MESSAGE_OVERHEAD_TOKENS + utf8Length(tool.name) + utf8Length(tool.description ?? "")
    if (tool.parameters !== undefined) tokens += utf8Length(JSON.stringify(tool.parameters))
  }
  return tokens
}

/**
 * An upper bound on the prompt tokens of a raw JSON request body, for the
 * same-dialect fast path that does not decode the body: the byte length of the
 * body bounds the tokens of every string in it.
 *
 * @category counting
 */
export const bodyTokenBound = (bodyBytes: number): number => bodyBytes + MESSAGE_OVERHEAD_TOKENS
