/**
 * `@modelgate/limits`: the rate limiter shared by several gateway processes,
 * core's `RateLimiter` port implemented with Redis scripts over the same
 * algorithm as core's in-memory `MemoryLimiter` (`RateWindow`), and the Redis
 * pub/sub channel cache invalidation travels on between gateway processes
 * (`RedisBroadcast`).
 *
 * @since 0.1.0
 */
export * as RedisBroadcast from "./RedisBroadcast.ts"
export * as RedisLimiter from "./RedisLimiter.ts"
