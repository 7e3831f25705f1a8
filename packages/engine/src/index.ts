/**
 * `@modelgate/engine`: modelgate's call flow, runtime-neutral. One engine
 * serves every front door (chat, embeddings, token counts, models) over any
 * channel: admission (key, model, limits, balance hold), routing (priority,
 * weight, sticky sessions, circuit breakers, disabled keys), one failover
 * loop, translation through the adapters' dialects, and settlement in
 * finalisers. Its I/O is services the host provides (upstream `Transport`,
 * key store, catalog, accounts, usage log, limiter, clock); it depends on
 * `effect`, `@modelgate/core` and the adapters, and on no Node built-in, so it
 * runs on Node (node-http), and as a web handler on Bun, Deno and workers
 * (`WebHandler.toWebHandler`).
 *
 * @since 0.1.0
 */
export * as Calls from "./call/Calls.ts"
export * as Chat from "./call/Chat.ts"
export * as ChatCall from "./call/ChatCall.ts"
export * as CountTokens from "./call/CountTokens.ts"
export * as Dialects from "./call/Dialects.ts"
export * as Embeddings from "./call/Embeddings.ts"
export * as Failover from "./call/Failover.ts"
export * as Ids from "./call/Ids.ts"
export * as Probe from "./call/Probe.ts"
export * as RateLimits from "./call/RateLimits.ts"
export * as Relayed from "./call/Relayed.ts"
export * as Translated from "./call/Translated.ts"
export * as Config from "./config/Config.ts"
export * as Settings from "./config/Settings.ts"
export * as Gateway from "./host/Gateway.ts"
export * as MemoryStore from "./host/MemoryStore.ts"
export * as WebHandler from "./host/WebHandler.ts"
export * as LegacyBilling from "./money/LegacyBilling.ts"
export * as Settlement from "./money/Settlement.ts"
export * as Breakers from "./routing/Breakers.ts"
export * as Draining from "./routing/Draining.ts"
export * as Health from "./routing/Health.ts"
export * as Selection from "./routing/Selection.ts"
export * as Redaction from "./telemetry/Redaction.ts"
export * as Exchange from "./wire/Exchange.ts"
export * as FetchTransport from "./wire/FetchTransport.ts"
export * as Relay from "./wire/Relay.ts"
export * as Routes from "./wire/Routes.ts"
export * as Transport from "./wire/Transport.ts"
export * as Upstream from "./wire/Upstream.ts"

export { toWebHandler } from "./host/WebHandler.ts"
