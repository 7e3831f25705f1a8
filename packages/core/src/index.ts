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
export * as Abort from "./Abort.ts"
export * as Accounts from "./Accounts.ts"
export * as Admission from "./Admission.ts"
export * as Canonical from "./Canonical.ts"
export * as Catalog from "./Catalog.ts"
export * as ChannelHealth from "./ChannelHealth.ts"
export * as ChannelKeyStates from "./ChannelKeyStates.ts"
export * as ChannelProbe from "./ChannelProbe.ts"
export * as Credentials from "./Credentials.ts"
export * as Declaration from "./Declaration.ts"
export * as Dialect from "./Dialect.ts"
export * as Domain from "./Domain.ts"
export * as GatewayError from "./GatewayError.ts"
export * as Invalidation from "./Invalidation.ts"
export * as Issues from "./Issues.ts"
export * as JsonDepth from "./JsonDepth.ts"
export * as JsonScan from "./JsonScan.ts"
export * as KeyStore from "./KeyStore.ts"
export * as LimitSubjects from "./LimitSubjects.ts"
export * as MemoryLimiter from "./MemoryLimiter.ts"
export * as ModelName from "./ModelName.ts"
export * as Money from "./Money.ts"
export * as OutageLog from "./OutageLog.ts"
export * as Params from "./Params.ts"
export * as PlainMetrics from "./PlainMetrics.ts"
export * as Pricing from "./Pricing.ts"
export * as RateLimiter from "./RateLimiter.ts"
export * as RateWindow from "./RateWindow.ts"
export * as Sse from "./Sse.ts"
export * as SseChunks from "./SseChunks.ts"
export * as StreamAssembly from "./StreamAssembly.ts"
export * as Text from "./Text.ts"
export * as Tokens from "./Tokens.ts"
export * as UpstreamErrors from "./UpstreamErrors.ts"
export * as UsageLog from "./UsageLog.ts"
export * as Utf8 from "./Utf8.ts"
