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
export * as Breakers from "./Breakers.ts"
export * as Calls from "./Calls.ts"
export * as Chat from "./Chat.ts"
export * as ChatCall from "./ChatCall.ts"
export * as Config from "./Config.ts"
export * as CountTokens from "./CountTokens.ts"
export * as Dialects from "./Dialects.ts"
export * as Draining from "./Draining.ts"
export * as Embeddings from "./Embeddings.ts"
export * as Exchange from "./Exchange.ts"
export * as Failover from "./Failover.ts"
export * as FetchTransport from "./FetchTransport.ts"
export * as Gateway from "./Gateway.ts"
export * as Health from "./Health.ts"
export * as Ids from "./Ids.ts"
export * as LegacyBilling from "./LegacyBilling.ts"
export * as MemoryStore from "./MemoryStore.ts"
export * as Probe from "./Probe.ts"
export * as RateLimits from "./RateLimits.ts"
export * as Redaction from "./Redaction.ts"
export * as Relay from "./Relay.ts"
export * as Relayed from "./Relayed.ts"
export * as Routes from "./Routes.ts"
export * as Selection from "./Selection.ts"
export * as Settings from "./Settings.ts"
export * as Settlement from "./Settlement.ts"
export * as Translated from "./Translated.ts"
export * as Transport from "./Transport.ts"
export * as Upstream from "./Upstream.ts"
export * as WebHandler from "./WebHandler.ts"

export { toWebHandler } from "./WebHandler.ts"
