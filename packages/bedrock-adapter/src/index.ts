/**
 * `@modelgate/bedrock-adapter`: AWS Bedrock Runtime's Converse API for
 * modelgate. Wire schemas, pure translation to and from the canonical chat
 * model of `@modelgate/core` (requests, answers, streams), AWS's binary
 * event-stream framing decoded incrementally (`@smithy/eventstream-codec`),
 * error classification from `x-amzn-ErrorType`, the endpoints, and request
 * signing with AWS Signature Version 4 (`@smithy/signature-v4` over
 * WebCrypto) or a Bedrock API key. Depends on `effect`, `@modelgate/core`
 * and those two AWS packages; no Node built-ins.
 *
 * Property-test helpers live in `@modelgate/bedrock-adapter/testing/Arbitraries`
 * and `@modelgate/bedrock-adapter/testing/Laws` (they need `fast-check`, an
 * optional peer dependency).
 *
 * @since 0.1.0
 */
export * as Converse from "./Converse.ts"
export * as Dialect from "./Dialect.ts"
export * as Embeddings from "./Embeddings.ts"
export * as Endpoint from "./Endpoint.ts"
export * as ErrorEnvelope from "./ErrorEnvelope.ts"
export * as EventStream from "./EventStream.ts"
export * as Ids from "./Ids.ts"
export * as Request from "./Request.ts"
export * as Response from "./Response.ts"
export * as Signer from "./Signer.ts"
export * as Stream from "./Stream.ts"
