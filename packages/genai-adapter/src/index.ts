/**
 * `@modelgate/genai-adapter`: the Gemini (Generative Language API v1beta) wire
 * library of modelgate. Wire schemas, pure translation to and from the
 * canonical chat model of `@modelgate/core` (requests, responses, streams),
 * Google's SSE and JSON-array stream framing, the Google error envelope and
 * upstream error classification, the same-dialect passthrough helpers, the
 * models list and local token counting. Depends on `effect` and
 * `@modelgate/core` only; no Node built-ins.
 *
 * Property-test helpers live in `@modelgate/genai-adapter/testing/Arbitraries`
 * and `@modelgate/genai-adapter/testing/Laws` (they need `fast-check`, an
 * optional peer dependency).
 *
 * @since 0.1.0
 */
export * as CountTokens from "./CountTokens.ts"
export * as Dialect from "./Dialect.ts"
export * as ErrorEnvelope from "./ErrorEnvelope.ts"
export * as Framing from "./Framing.ts"
export * as GenerateContent from "./GenerateContent.ts"
export * as Models from "./Models.ts"
export * as Passthrough from "./Passthrough.ts"
export * as Request from "./Request.ts"
export * as Response from "./Response.ts"
export * as Stream from "./Stream.ts"
export * as UpstreamModels from "./UpstreamModels.ts"
export * as Vertex from "./Vertex.ts"
