/**
 * The one behaviour suite every limiter passes: it takes a layer factory and
 * drives time with TestClock (the Redis limiter runs with `time: "clock"` here;
 * its Redis-time paths are covered in RedisLimiter.test.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { type Domain, RateLimiter } from "@modelgate/core"
import { Cause, Effect, Exit, type Layer } from "effect"
import { TestClock } from "effect/testing"

/** Builds a fresh limiter layer for one test (window and lease in milliseconds). */
export type MakeLayer = (
  options: { readonly windowMs?: number; readonly leaseMs?: number }
) => Layer.Layer<RateLimiter.RateLimiter>

let counter = 0
/** A subject id unique to this run, so tests never see each other's state (on Redis too). */
export const uniqueId = (kind: string): string => `${kind}:${process.pid}-${Date.now().toString(36)}-${counter++}`

const limits = (partial: Partial<Domain.Limits>): Domain.Limits => ({
  rpm: null,
  tpm: null,
  concurrency: null,
  ...partial
})

const subject = (label: string, partial: Partial<Domain.Limits>): RateLimiter.Subject => ({
  id: uniqueId("subject"),
  label,
  limits: limits(partial)
})

const acquire = (subjects: ReadonlyArray<RateLimiter.Subject>, tokens = 0) =>
  Effect.flatMap(RateLimiter.RateLimiter, (limiter) => limiter.acquire(subjects, tokens))

const refused = (subjects: ReadonlyArray<RateLimiter.Subject>, tokens = 0) => Effect.flip(acquire(subjects, tokens))

const admitted = (subjects: ReadonlyArray<RateLimiter.Subject>, tokens = 0) =>
  Effect.map(Effect.exit(acquire(subjects, tokens)), Exit.isSuccess)

/** Runs the behaviour suite against the limiter `make` builds. */
export const behaviour = (name: string, make: MakeLayer): void => {
  describe(name, () => {
    const test = (
      title: string,
      body: () => Effect.Effect<void, unknown, RateLimiter.RateLimiter>,
      windowMs?: number
    ) => it.effect(title, () => Effect.provide(body(), make(windowMs === undefined ? {} : { windowMs })))

    test("a window is exact at its edges and retryAfterSeconds is exact", () =>
      Effect.gen(function*() {
        const key = subject("your API key 'laptop'", { rpm: 3 })
        for (let i = 0; i < 3; i++) yield* acquire([key])
        const first = yield* refused([key])
        assert.strictEqual(first._tag, "RateLimited")
        assert.strictEqual(first.limit, "rpm")
        assert.strictEqual(first.retryAfterSeconds, 60)
        assert.strictEqual(
          first.message,
          "Rate limit reached for your API key 'laptop': 3 requests per minute. Retry in 60 s."
        )
        yield* TestClock.adjust(59_999)
        const edge = yield* refused([key])
        assert.strictEqual(edge.retryAfterSeconds, 0.001)
        assert.strictEqual(
          edge.message,
          "Rate limit reached for your API key 'laptop': 3 requests per minute. Retry in 1 s."
        )
        yield* TestClock.adjust(1)
        yield* acquire([key])
      }))

    test("the window slides: calls leave it one by one, 60 s after their admission", () =>
      Effect.gen(function*() {
        const key = subject("your API key 'k'", { rpm: 3 })
        yield* acquire([key])
        yield* acquire([key])
        yield* TestClock.adjust(30_000)
        yield* acquire([key])
        yield* TestClock.adjust(29_999)
        assert.strictEqual((yield* refused([key])).retryAfterSeconds, 0.001)
        yield* TestClock.adjust(1)
        yield* acquire([key])
        yield* acquire([key])
        const next = yield* refused([key])
        assert.strictEqual(next.retryAfterSeconds, 30)
      }))

    test("a burst of concurrent calls admits exactly the limit", () =>
      Effect.gen(function*() {
        const key = subject("your API key 'burst'", { rpm: 10 })
        const results = yield* Effect.all(Array.from({ length: 25 }, () => admitted([key])), {
          concurrency: "unbounded"
        })
        assert.strictEqual(results.filter(Boolean).length, 10)
      }))

    test("tokens are admitted on the estimate and the message names the limit", () =>
      Effect.gen(function*() {
        const key = subject("your API key 'tok'", { tpm: 1000 })
        const permit = yield* acquire([key], 600)
        assert.strictEqual(permit.snapshot.remainingTokens, 400)
        assert.strictEqual(permit.snapshot.limitTokens, 1000)
        const error = yield* refused([key], 500)
        assert.strictEqual(error.limit, "tpm")
        assert.strictEqual(
          error.message,
          "Rate limit reached for your API key 'tok': 1000 tokens per minute (this call needs about 500). Retry in 60 s."
        )
        assert.strictEqual(error.retryAfterSeconds, 60)
        yield* acquire([key], 400)
      }))

    test("token correction gives back what the call did not use", () =>
      Effect.gen(function*() {
        const key = subject("your API key 'down'", { tpm: 1000 })
        const permit = yield* acquire([key], 800)
        yield* refused([key], 800)
        yield* permit.release(200)
        const next = yield* acquire([key], 800)
        assert.strictEqual(next.snapshot.remainingTokens, 0)
      }))

    test("token correction adds what the call used beyond its estimate, in the window it was admitted in", () =>
      Effect.gen(function*() {
        const key = subject("your API key 'up'", { tpm: 1000 })
        const permit = yield* acquire([key], 100)
        yield* TestClock.adjust(10_000)
        yield* permit.release(900)
        const error = yield* refused([key], 200)
        // The 900 tokens still count from the call's admission at t=0: free at t=60 s.
        assert.strictEqual(error.retryAfterSeconds, 50)
        const last = yield* acquire([key], 100)
        assert.strictEqual(last.snapshot.remainingTokens, 0)
        yield* TestClock.adjust(50_000)
        yield* acquire([key], 900)
      }))

    test("a correction after the call's window has passed changes nothing", () =>
      Effect.gen(function*() {
        const key = subject("your API key 'late'", { tpm: 1000 })
        const permit = yield* acquire([key], 500)
        yield* TestClock.adjust(60_000)
        yield* permit.release(5000)
        const next = yield* acquire([key], 1000)
        assert.strictEqual(next.snapshot.remainingTokens, 0)
      }))

    test("tokens count in buckets: a call's tokens leave the window with its bucket", () =>
      Effect.gen(function*() {
        const key = subject("your API key 'bucket'", { tpm: 1000 })
        yield* TestClock.adjust(500)
        const permit = yield* acquire([key], 600)
        // Counted in the bucket [0 s, 1 s), which leaves the window at 60 s.
        assert.strictEqual(permit.snapshot.resetTokensMs, 59_500)
        yield* TestClock.adjust(30_000)
        const error = yield* refused([key], 500)
        assert.strictEqual(error.retryAfterSeconds, 29.5)
        yield* TestClock.adjust(29_500)
        const next = yield* acquire([key], 1000)
        assert.strictEqual(next.snapshot.remainingTokens, 0)
      }))

    test("an estimate above the token limit can never be admitted, and says so", () =>
      Effect.gen(function*() {
        const key = subject("your API key 'big'", { tpm: 1000 })
        const error = yield* refused([key], 2000)
        assert.strictEqual(error.limit, "tpm")
        assert.include(
          error.message,
          "needs about 2000 tokens, more than the 1000 tokens per minute allowed for your API key 'big'"
        )
        yield* acquire([key], 1000)
      }))

    test("concurrency slots are held until release", () =>
      Effect.gen(function*() {
        const key = subject("your API key 'conc'", { concurrency: 2 })
        const a = yield* acquire([key])
        yield* acquire([key])
        const error = yield* refused([key])
        assert.strictEqual(error.limit, "concurrency")
        assert.strictEqual(error.retryAfterSeconds, 1)
        assert.strictEqual(
          error.message,
          "Rate limit reached for your API key 'conc': 2 concurrent calls. Retry in 1 s."
        )
        yield* a.release(0)
        yield* acquire([key])
      }))

    test("release is idempotent", () =>
      Effect.gen(function*() {
        const key = subject("your API key 'idem'", { concurrency: 1, tpm: 1000 })
        const a = yield* acquire([key], 300)
        yield* a.release(100)
        yield* a.release(900)
        const b = yield* acquire([key], 900)
        assert.strictEqual(b.snapshot.remainingTokens, 0)
        yield* a.release(0)
        // b still holds the only slot.
        assert.strictEqual((yield* refused([key])).limit, "concurrency")
      }))

    test("admission is all or nothing across subjects", () =>
      Effect.gen(function*() {
        const key = subject("your API key 'both'", { rpm: 5, concurrency: 5 })
        const user = subject("user 'alice'", { rpm: 1 })
        yield* acquire([key, user])
        const error = yield* refused([key, user])
        assert.include(error.message, "user 'alice': 1 requests per minute")
        const alone = yield* acquire([key])
        // Only two calls counted against the key: the refused one took nothing.
        assert.strictEqual(alone.snapshot.remainingRequests, 3)
      }))

    test("the refusal names the limit with the longest wait", () =>
      Effect.gen(function*() {
        const key = subject("your API key 'k2'", { rpm: 2 })
        const user = subject("user 'bob'", { rpm: 1 })
        yield* acquire([key])
        yield* TestClock.adjust(10_000)
        yield* acquire([key, user])
        yield* TestClock.adjust(10_000)
        const error = yield* refused([key, user])
        assert.strictEqual(error.retryAfterSeconds, 50)
        assert.strictEqual(error.message, "Rate limit reached for user 'bob': 1 requests per minute. Retry in 50 s.")
      }))

    test("a refusal names the refusing subject and carries the state of both dimensions", () =>
      Effect.gen(function*() {
        const key = subject("your API key 'r'", { rpm: 2, tpm: 1000 })
        const user = subject("user 'r'", { rpm: 5 })
        yield* acquire([key, user], 300)
        yield* acquire([key, user], 300)
        const byRequests = yield* refused([key, user], 100)
        assert.strictEqual(byRequests.subject, key.id)
        assert.deepStrictEqual(byRequests.snapshot, {
          limitRequests: 2,
          remainingRequests: 0,
          resetRequestsMs: 60_000,
          limitTokens: 1000,
          remainingTokens: 400,
          resetTokensMs: 60_000
        })
        const tokens = subject("your API key 't'", { tpm: 1000 })
        yield* acquire([tokens], 800)
        yield* TestClock.adjust(10_000)
        const byTokens = yield* refused([tokens, user], 300)
        assert.strictEqual(byTokens.subject, tokens.id)
        assert.deepStrictEqual(byTokens.snapshot, {
          limitRequests: 5,
          remainingRequests: 3,
          resetRequestsMs: 50_000,
          limitTokens: 1000,
          remainingTokens: 200,
          resetTokensMs: 50_000
        })
      }))

    test("the snapshot is the most constrained subject, per dimension", () =>
      Effect.gen(function*() {
        const key = subject("your API key 's'", { rpm: 10, tpm: 1000 })
        const user = subject("user 's'", { rpm: 5, tpm: 5000 })
        const first = yield* acquire([key, user], 100)
        assert.deepStrictEqual(first.snapshot, {
          limitRequests: 5,
          remainingRequests: 4,
          resetRequestsMs: 60_000,
          limitTokens: 1000,
          remainingTokens: 900,
          resetTokensMs: 60_000
        })
        yield* TestClock.adjust(15_000)
        const second = yield* acquire([key, user], 0)
        assert.strictEqual(second.snapshot.remainingRequests, 3)
        assert.strictEqual(second.snapshot.resetRequestsMs, 45_000)
        assert.strictEqual(second.snapshot.resetTokensMs, 45_000)
      }))

    test("subjects without limits cost nothing and give the unlimited snapshot", () =>
      Effect.gen(function*() {
        const permit = yield* acquire([subject("your API key 'free'", {})], 10_000_000)
        assert.deepStrictEqual(permit.snapshot, RateLimiter.unlimited)
        yield* permit.release(5)
      }))

    test("a slot whose permit is never released frees itself after the lease", () =>
      Effect.gen(function*() {
        const key = subject("your API key 'lost'", { concurrency: 1 })
        yield* acquire([key])
        yield* refused([key])
        yield* TestClock.adjust(600_000)
        yield* acquire([key])
      }))

    test("a shorter window counts per window and says so", () =>
      Effect.gen(function*() {
        const key = subject("your API key 'short'", { rpm: 1 })
        yield* acquire([key])
        const error = yield* refused([key])
        assert.strictEqual(
          error.message,
          "Rate limit reached for your API key 'short': 1 requests per 2 s. Retry in 2 s."
        )
        yield* TestClock.adjust(2_000)
        yield* acquire([key])
      }), 2_000)

    test("bad input dies with a message naming the field", () =>
      Effect.gen(function*() {
        const exit = yield* Effect.exit(acquire([subject("your API key 'bad'", { rpm: 0 })]))
        assert.isTrue(Exit.isFailure(exit))
        if (Exit.isFailure(exit)) {
          assert.include(
            String(Cause.squash(exit.cause)),
            "subjects[0].limits.rpm must be a positive integer or null, got 0"
          )
        }
        const negative = yield* Effect.exit(acquire([subject("your API key 'bad'", { rpm: 1 })], -5))
        assert.isTrue(Exit.isFailure(negative))
        if (Exit.isFailure(negative)) assert.include(String(Cause.squash(negative.cause)), "estimatedTokens must be")
      }))
  })
}
