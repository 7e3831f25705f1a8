/**
 * Local answers to `POST /v1/messages/count_tokens` (`{"input_tokens": N}`),
 * for models no Anthropic channel serves.
 *
 * The count is an ESTIMATE, not the model's tokenizer: about four characters
 * per token of text (as the gateway meters answers without usage), plus
 * `Tokens.MESSAGE_OVERHEAD_TOKENS` per turn, system block and tool, and
 * `Tokens.MEDIA_TOKENS` per image or document. Tool calls count their name and
 * JSON input, tool results their content, tools their name, description and
 * input schema. It never bills anything. Claude Code asks for counts to
 * decide when to compact a conversation, for which an estimate serves.
 *
 * @since 0.1.0
 */
import { GatewayError, Tokens } from "@modelgate/core"
import { Effect, Predicate } from "effect"

const textTokens = (text: string): number => Tokens.estimateGeneratedTokens(text)

const invalid = (message: string, param: string) => new GatewayError.InvalidRequest({ message, param })

const blockTokens = (block: unknown): number => {
  if (Predicate.isString(block)) return textTokens(block)
  if (!Predicate.isObject(block)) return 0
  switch (block.type) {
    case "text":
      return Predicate.isString(block.text) ? textTokens(block.text) : 0
    case "thinking":
      return Predicate.isString(block.thinking) ? textTokens(block.thinking) : 0
    case "image":
    case "document":
      return Tokens.MEDIA_TOKENS
    case "tool_use":
      return textTokens(Predicate.isString(block.name) ? block.name : "") +
        textTokens(JSON.stringify(block.input ?? {}))
    case "tool_result":
      return Array.isArray(block.content)
        ? block.content.reduce((sum: number, item) => sum + blockTokens(item), 0)
        : blockTokens(block.content)
    default:
      return 0
  }
}

const contentTokens = (content: unknown): number =>
  Array.isArray(content) ? content.reduce((sum: number, block) => sum + blockTokens(block), 0) : blockTokens(content)

/**
 * The estimated input tokens of a count request (parsed JSON): `model` (a
 * non-empty string) and `messages` (an array) are required, `system` and
 * `tools` are counted when present. A malformed body is an `InvalidRequest`
 * naming the field.
 *
 * @example
 * ```ts
 * import { CountTokens } from "@modelgate/anthropic-adapter"
 *
 * yield* CountTokens.countTokens({ model: "claude-sonnet-4-5", messages: [{ role: "user", content: "How many tokens is this?" }] })
 * // { input_tokens: 14 }
 * ```
 *
 * @category counting
 */
export const countTokens = (
  body: unknown
): Effect.Effect<{ readonly input_tokens: number }, GatewayError.InvalidRequest> => {
  if (!Predicate.isObject(body) || Array.isArray(body)) {
    return Effect.fail(
      new GatewayError.InvalidRequest({
        message: "The request body must be a JSON object with 'model' and 'messages'."
      })
    )
  }
  if (!Predicate.isString(body.model) || body.model.length === 0) {
    return Effect.fail(invalid("'model' is required (a model name).", "model"))
  }
  if (!Array.isArray(body.messages)) {
    return Effect.fail(invalid("'messages' is required: an array of turns.", "messages"))
  }
  let tokens = 0
  for (let i = 0; i < body.messages.length; i++) {
    const message: unknown = body.messages[i]
    if (!Predicate.isObject(message)) {
      return Effect.fail(invalid(`'messages[${i}]' must be an object.`, `messages[${i}]`))
    }
    tokens += Tokens.MESSAGE_OVERHEAD_TOKENS + contentTokens(message.content)
  }
  if (body.system !== undefined) tokens += Tokens.MESSAGE_OVERHEAD_TOKENS + contentTokens(body.system)
  if (Array.isArray(body.tools)) {
    for (const tool of body.tools) {
      if (!Predicate.isObject(tool)) continue
      tokens += Tokens.MESSAGE_OVERHEAD_TOKENS + textTokens(Predicate.isString(tool.name) ? tool.name : "") +
        textTokens(Predicate.isString(tool.description) ? tool.description : "")
      if (tool.input_schema !== undefined) tokens += textTokens(JSON.stringify(tool.input_schema))
    }
  }
  return Effect.succeed({ input_tokens: tokens })
}
