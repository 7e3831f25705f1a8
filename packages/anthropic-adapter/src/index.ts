/**
 * `@modelgate/anthropic-adapter`: the Anthropic Messages wire library of
 * modelgate. Wire schemas, pure translation to and from the canonical chat
 * model of `@modelgate/core` (requests, responses, streams), SSE framing with
 * `event:` names, reversible tool-id sanitising, the Anthropic error envelope
 * and upstream error classification. Depends on `effect` and `@modelgate/core`
 * only; no Node built-ins.
 *
 * Property-test helpers live in `@modelgate/anthropic-adapter/testing/Arbitraries`
 * and `@modelgate/anthropic-adapter/testing/Laws` (they need `fast-check`, an
 * optional peer dependency).
 *
 * @since 0.1.0
 */
export * as CountTokens from "./CountTokens.ts"
export * as Dialect from "./Dialect.ts"
export * as ErrorEnvelope from "./ErrorEnvelope.ts"
export * as Ids from "./Ids.ts"
export * as Messages from "./Messages.ts"
export * as Models from "./Models.ts"
export * as Passthrough from "./Passthrough.ts"
export * as Request from "./Request.ts"
export * as Response from "./Response.ts"
export * as Stream from "./Stream.ts"
export * as UpstreamModels from "./UpstreamModels.ts"
export * as Vertex from "./Vertex.ts"
