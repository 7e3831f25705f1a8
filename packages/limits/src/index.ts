/**
 * `@modelgate/limits`: the implementations of core's `RateLimiter` port.
 * Exact sliding windows for requests and tokens per minute plus concurrency
 * slots, in memory for one process (`MemoryLimiter`) or shared through Redis
 * scripts (`RedisLimiter`); helpers to build a call's subjects (`Subjects`) and
 * to render the `x-ratelimit-*` headers (`Headers`); and the Redis pub/sub
 * channel cache invalidation travels on between gateway processes
 * (`RedisBroadcast`).
 *
 * @since 0.1.0
 */
export * as Headers from "./Headers.ts"
export * as MemoryLimiter from "./MemoryLimiter.ts"
export * as RedisBroadcast from "./RedisBroadcast.ts"
export * as RedisLimiter from "./RedisLimiter.ts"
export * as Subjects from "./Subjects.ts"
export * as Window from "./Window.ts"
