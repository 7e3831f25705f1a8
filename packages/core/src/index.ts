/**
 * `@modelgate/core`: the pure heart of modelgate. Canonical chat model, admission
 * rules, pricing, the error vocabulary and stream assembly, as Effect programs
 * and Schemas over small services. Depends on `effect` only; no Node built-ins,
 * so it runs in any JavaScript runtime. What the adapters' property laws
 * share (deep equality, cutting texts and streams) is at
 * `@modelgate/core/testing/Equality` and `@modelgate/core/testing/Cuts`.
 *
 * @since 0.1.0
 */
export * as Admission from "./admission/Admission.ts"
export * as KeyStore from "./admission/KeyStore.ts"
export * as LimitSubjects from "./admission/LimitSubjects.ts"
export * as MemoryLimiter from "./admission/MemoryLimiter.ts"
export * as RateLimiter from "./admission/RateLimiter.ts"
export * as RateWindow from "./admission/RateWindow.ts"
export * as Canonical from "./dialect/Canonical.ts"
export * as Dialect from "./dialect/Dialect.ts"
export * as Inspection from "./dialect/Inspection.ts"
export * as Params from "./dialect/Params.ts"
export * as PassthroughCall from "./dialect/PassthroughCall.ts"
export * as StreamAssembly from "./dialect/StreamAssembly.ts"
export * as Tokens from "./dialect/Tokens.ts"
export * as ToolIds from "./dialect/ToolIds.ts"
export * as Catalog from "./domain/Catalog.ts"
export * as Credentials from "./domain/Credentials.ts"
export * as Declaration from "./domain/Declaration.ts"
export * as Domain from "./domain/Domain.ts"
export * as Invalidation from "./domain/Invalidation.ts"
export * as ModelName from "./domain/ModelName.ts"
export * as Abort from "./errors/Abort.ts"
export * as GatewayError from "./errors/GatewayError.ts"
export * as Issues from "./errors/Issues.ts"
export * as UpstreamErrors from "./errors/UpstreamErrors.ts"
export * as ChannelHealth from "./health/ChannelHealth.ts"
export * as ChannelKeyStates from "./health/ChannelKeyStates.ts"
export * as ChannelProbe from "./health/ChannelProbe.ts"
export * as OutageLog from "./health/OutageLog.ts"
export * as PlainMetrics from "./health/PlainMetrics.ts"
export * as Accounts from "./money/Accounts.ts"
export * as Money from "./money/Money.ts"
export * as Pricing from "./money/Pricing.ts"
export * as UsageLog from "./money/UsageLog.ts"
export * as JsonDepth from "./wire/JsonDepth.ts"
export * as JsonScan from "./wire/JsonScan.ts"
export * as Sse from "./wire/Sse.ts"
export * as SseChunks from "./wire/SseChunks.ts"
export * as Text from "./wire/Text.ts"
export * as Utf8 from "./wire/Utf8.ts"
