/**
 * Local answers to `models/{model}:countTokens`.
 *
 * The count is an ESTIMATE, not the model's tokenizer: about four characters
 * per token of text (`Tokens.estimateGeneratedTokens`, the same typical-case
 * rule the gateway uses to meter answers without usage), plus
 * `Tokens.MESSAGE_OVERHEAD_TOKENS` per turn and `Tokens.MEDIA_TOKENS` per
 * image or file. Function calls count their name and JSON arguments, function
 * responses their JSON response, function declarations their name,
 * description and schema. It never bills anything and never calls an
 * upstream. gemini-cli asks only when a prompt carries media and falls back to
 * its own estimate on failure, so an estimate is what it expects.
 *
 * Both request forms are accepted: `{contents}` and
 * `{generateContentRequest:{contents, systemInstruction?, tools?, ...}}`.
 *
 * @since 0.1.0
 */
import { GatewayError, Tokens } from "@modelgate/core"
import { Effect, Result } from "effect"
import * as GenerateContent from "./GenerateContent.ts"

const textTokens = (text: string): number => Tokens.estimateGeneratedTokens(text)

const contentTokens = (content: { readonly parts: GenerateContent.Content["parts"] }): number => {
  let tokens = Tokens.MESSAGE_OVERHEAD_TOKENS
  for (const part of content.parts) {
    if (part.text !== undefined) tokens += textTokens(part.text)
    if (part.inlineData !== undefined || part.fileData !== undefined) tokens += Tokens.MEDIA_TOKENS
    if (part.functionCall !== undefined) {
      tokens += textTokens(part.functionCall.name) + textTokens(JSON.stringify(part.functionCall.args ?? {}))
    }
    if (part.functionResponse !== undefined) {
      tokens += textTokens(part.functionResponse.name) + textTokens(JSON.stringify(part.functionResponse.response))
    }
  }
  return tokens
}

/**
 * The estimated prompt tokens of contents, an optional system instruction and
 * optional tools.
 *
 * @category counting
 */
export const estimateTokens = (
  contents: ReadonlyArray<GenerateContent.Content>,
  systemInstruction?: GenerateContent.SystemInstruction,
  tools?: ReadonlyArray<GenerateContent.Tool>
): number => {
  let tokens = 0
  for (const content of contents) tokens += contentTokens(content)
  if (systemInstruction !== undefined) tokens += contentTokens(systemInstruction)
  for (const tool of tools ?? []) {
    for (const fn of tool.functionDeclarations ?? []) {
      tokens += Tokens.MESSAGE_OVERHEAD_TOKENS + textTokens(fn.name) + textTokens(fn.description ?? "")
      const schema = fn.parametersJsonSchema ?? fn.parameters
      if (schema !== undefined) tokens += textTokens(JSON.stringify(schema))
    }
  }
  return tokens
}

/**
 * `countTokens` as a `Result`. Never throws.
 *
 * @category counting
 */
export const countTokensResult = (
  body: unknown
): Result.Result<GenerateContent.CountTokensResponse, GatewayError.InvalidRequest> => {
  const decoded = GenerateContent.decodeCountTokensBody(body)
  if (Result.isFailure(decoded)) return Result.fail(decoded.failure)
  const request = decoded.success
  const inner = request.generateContentRequest
  if (inner !== undefined) {
    if (request.contents !== undefined) {
      return Result.fail(
        new GatewayError.InvalidRequest({
          message: "Set either 'contents' or 'generateContentRequest', not both.",
          param: "contents"
        })
      )
    }
    return Result.succeed({ totalTokens: estimateTokens(inner.contents, inner.systemInstruction, inner.tools) })
  }
  if (request.contents === undefined) {
    return Result.fail(
      new GatewayError.InvalidRequest({
        message: "'contents' (or 'generateContentRequest') is required.",
        param: "contents"
      })
    )
  }
  return Result.succeed({ totalTokens: estimateTokens(request.contents) })
}

/**
 * Answers a `countTokens` body locally with an estimate (see the module
 * notes). A malformed body is an `InvalidRequest` naming the field.
 *
 * @example
 * ```ts
 * import { CountTokens } from "@modelgate/genai-adapter"
 *
 * yield* CountTokens.countTokens({ contents: [{ role: "user", parts: [{ text: "How many tokens is this?" }] }] })
 * // { totalTokens: 14 }
 * ```
 *
 * @category counting
 */
export const countTokens = (
  body: unknown
): Effect.Effect<GenerateContent.CountTokensResponse, GatewayError.InvalidRequest> =>
  Effect.fromResult(countTokensResult(body))
