/**
 * `@modelgate/vertex`: what a Google Vertex AI channel needs besides its two
 * dialects (Gemini's in `@modelgate/genai-adapter/Vertex`, Claude's Messages
 * in `@modelgate/anthropic-adapter/Vertex`): the service-account key and the
 * RS256-signed JWT assertion (`ServiceAccount`, WebCrypto), the token
 * exchange and Vertex's refusal of a token (`Token`), the token cache and a
 * token source over the host's transport (`TokenCache`), and the default
 * base URL and model publisher of a channel (`Location`). Depends on
 * `effect` and `@modelgate/core`; no Node built-ins, no I/O of its own.
 *
 * @since 0.1.0
 */
export * as Location from "./Location.ts"
export * as ServiceAccount from "./ServiceAccount.ts"
export * as Token from "./Token.ts"
export * as TokenCache from "./TokenCache.ts"
