/**
 * The fields a translated `generateContent` body may have. Google rejects a
 * body with a field it does not know; a body translated for another dialect's
 * upstream must not lose one silently either. So before translation every
 * object of the (camelCase-normalised) body is checked against the fields of
 * its kind:
 *
 * - a field the table does not know fails with an `InvalidRequest` in
 *   Google's words ("Unknown name ... Cannot find field");
 * - a field Google knows but the canonical model cannot carry (`refused`)
 *   fails with an `UnsupportedFeature` naming it;
 * - a field that is only a hint for Google's own serving (`ignored`: safety
 *   settings, media resolution, civic-answer and retrieval settings, display
 *   names, function `behavior`, ...) is accepted and left out; the list is in
 *   the documentation of `Request.ts`.
 *
 * Values of the wrong type are left for the schema decode to report.
 *
 * @since 0.1.0
 */
import { type GatewayError, Issues } from "@modelgate/core"
import { Predicate } from "effect"

type Kind =
  | "request"
  | "content"
  | "part"
  | "blob"
  | "fileData"
  | "functionCall"
  | "functionResponse"
  | "tool"
  | "functionDeclaration"
  | "toolConfig"
  | "functionCallingConfig"
  | "generationConfig"
  | "thinkingConfig"

/** What a field holds: a leaf (checked by the schema), an object of a kind, or an array of objects of a kind. */
type Field = "leaf" | Kind | readonly [Kind]

interface Shape {
  readonly fields: Readonly<Record<string, Field>>
  readonly ignored?: ReadonlyArray<string>
  readonly refused?: Readonly<Record<string, string>>
}

const SHAPES: Readonly<Record<Kind, Shape>> = {
  request: {
    fields: {
      contents: ["content"],
      systemInstruction: "content",
      tools: ["tool"],
      toolConfig: "toolConfig",
      safetySettings: "leaf",
      cachedContent: "leaf",
      generationConfig: "generationConfig"
    },
    // `model` repeats the URL's model (some clients send it).
    ignored: ["model"]
  },
  content: { fields: { role: "leaf", parts: ["part"] } },
  part: {
    fields: {
      text: "leaf",
      thought: "leaf",
      thoughtSignature: "leaf",
      inlineData: "blob",
      fileData: "fileData",
      functionCall: "functionCall",
      functionResponse: "functionResponse",
      executableCode: "leaf",
      codeExecutionResult: "leaf",
      videoMetadata: "leaf"
    },
    ignored: ["mediaResolution", "partMetadata"]
  },
  blob: { fields: { mimeType: "leaf", data: "leaf" }, ignored: ["displayName"] },
  fileData: { fields: { mimeType: "leaf", fileUri: "leaf" }, ignored: ["displayName"] },
  functionCall: {
    fields: { id: "leaf", name: "leaf", args: "leaf" },
    refused: {
      partialArgs:
        "Streamed function-call arguments ('partialArgs') cannot be translated for this model; send complete 'args'.",
      willContinue:
        "Streamed function-call arguments ('willContinue') cannot be translated for this model; send complete 'args'."
    }
  },
  functionResponse: {
    fields: { id: "leaf", name: "leaf", response: "leaf" },
    ignored: ["willContinue", "scheduling"],
    refused: {
      parts: "Function responses with media 'parts' cannot be translated for this model; put the result in 'response'."
    }
  },
  tool: {
    fields: {
      functionDeclarations: ["functionDeclaration"],
      googleSearch: "leaf",
      googleSearchRetrieval: "leaf",
      codeExecution: "leaf",
      urlContext: "leaf",
      googleMaps: "leaf",
      fileSearch: "leaf",
      computerUse: "leaf"
    }
  },
  functionDeclaration: {
    fields: {
      name: "leaf",
      description: "leaf",
      parameters: "leaf",
      parametersJsonSchema: "leaf",
      response: "leaf",
      responseJsonSchema: "leaf"
    },
    ignored: ["behavior"]
  },
  toolConfig: { fields: { functionCallingConfig: "functionCallingConfig" }, ignored: ["retrievalConfig"] },
  functionCallingConfig: {
    fields: { mode: "leaf", allowedFunctionNames: "leaf" },
    ignored: ["streamFunctionCallArguments"]
  },
  generationConfig: {
    fields: {
      temperature: "leaf",
      topP: "leaf",
      topK: "leaf",
      candidateCount: "leaf",
      maxOutputTokens: "leaf",
      stopSequences: "leaf",
      presencePenalty: "leaf",
      frequencyPenalty: "leaf",
      seed: "leaf",
      responseMimeType: "leaf",
      responseSchema: "leaf",
      responseJsonSchema: "leaf",
      responseLogprobs: "leaf",
      logprobs: "leaf",
      responseModalities: "leaf",
      speechConfig: "leaf",
      imageConfig: "leaf",
      thinkingConfig: "thinkingConfig"
    },
    ignored: ["mediaResolution", "enableEnhancedCivicAnswers"]
  },
  thinkingConfig: { fields: { thinkingBudget: "leaf", thinkingLevel: "leaf", includeThoughts: "leaf" } }
}

const join = (path: string, key: string): string => path.length === 0 ? key : `${path}.${key}`

const check = (
  value: unknown,
  kind: Kind,
  path: string
): GatewayError.InvalidRequest | GatewayError.UnsupportedFeature | undefined => {
  if (!Predicate.isObject(value)) return undefined
  const shape = SHAPES[kind]
  for (const key in value) {
    const field = shape.fields[key]
    const at = join(path, key)
    if (field === undefined) {
      if (shape.ignored?.includes(key) === true) continue
      const refusal = shape.refused?.[key]
      if (refusal !== undefined) return Issues.unsupported(at, refusal)
      return Issues.invalid(
        at,
        `Invalid JSON payload received. Unknown name "${key}" at '${
          path.length === 0 ? "request" : path
        }': Cannot find field.`
      )
    }
    if (field === "leaf") continue
    const item = value[key]
    if (typeof field === "string") {
      const failure = check(item, field, at)
      if (failure !== undefined) return failure
    } else if (Array.isArray(item)) {
      for (let i = 0; i < item.length; i++) {
        const failure = check(item[i], field[0], `${at}[${i}]`)
        if (failure !== undefined) return failure
      }
    }
  }
  return undefined
}

/**
 * The first field of a normalised `generateContent` body that is unknown or
 * cannot be translated, as the error to answer with; `undefined` when every
 * field is one the translation carries or deliberately ignores.
 */
export const checkRequestFields = (
  body: unknown
): GatewayError.InvalidRequest | GatewayError.UnsupportedFeature | undefined => check(body, "request", "")
