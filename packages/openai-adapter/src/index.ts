/**
 * `@modelgate/openai-adapter`: the OpenAI dialects (chat completions and the
 * Responses API), each as a client-facing surface and as an upstream. Wire
 * schemas, translation to and from the canonical model (requests, responses,
 * streams), the SSE framing, the
 * error envelope, the same-dialect passthrough with metering, and the models
 * list. Pure: depends on `effect` and `@modelgate/core` only and runs in any
 * JavaScript runtime. Test arbitraries and laws are at
 * `@modelgate/openai-adapter/testing/Arbitraries` and `/testing/Laws` (they
 * need `fast-check`, an optional peer dependency).
 *
 * @since 0.1.0
 */
export * as ChatCompletions from "./chat/ChatCompletions.ts"
export * as Passthrough from "./chat/Passthrough.ts"
export * as Request from "./chat/Request.ts"
export * as Response from "./chat/Response.ts"
export * as Stream from "./chat/Stream.ts"
export * as Dialect from "./Dialect.ts"
export * as ErrorEnvelope from "./ErrorEnvelope.ts"
export * as Framing from "./Framing.ts"
export * as Identifiers from "./Identifiers.ts"
export * as Models from "./Models.ts"
export * as RateLimitHeaders from "./RateLimitHeaders.ts"
export * as Responses from "./responses/Responses.ts"
export * as ResponsesAnswer from "./responses/ResponsesAnswer.ts"
export * as ResponsesPassthrough from "./responses/ResponsesPassthrough.ts"
export * as ResponsesRequest from "./responses/ResponsesRequest.ts"
export * as UpstreamModels from "./UpstreamModels.ts"
