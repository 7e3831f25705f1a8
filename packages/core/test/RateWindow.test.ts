/**
 * The in-memory state of one subject stays bounded by the limits and the
 * bucket count, never by the traffic: a request log only for a request limit
 * (never longer than it), at most 61 token buckets.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Window from "../src/admission/RateWindow.ts"

const windowMs = 60_000

describe("Window.SubjectState", () => {
  it("a subject with only a token limit keeps no request log and at most 61 buckets, however many calls it makes", () => {
    const state = new Window.SubjectState()
    const limits = { rpm: null, tpm: 1_000_000_000, concurrency: null }
    let most = 0
    for (let i = 0; i < 200_000; i++) {
      const now = i * 7 // 200 000 calls over 1 400 s, 143 per second
      state.prune(now, windowMs)
      state.admit(limits, i, now, 3, windowMs, 600_000)
      most = Math.max(most, state.buckets.length)
    }
    assert.strictEqual(state.log.length, 0)
    assert.isAtMost(most, Window.bucketsPerWindow + 1)
    // The sum is the tokens of the buckets still in the window.
    assert.strictEqual(state.tokenSum, state.buckets.reduce((sum, bucket) => sum + bucket.tokens, 0))
  })

  it("a request log never holds more than the request limit, because refused calls are not logged", () => {
    const state = new Window.SubjectState()
    const limits = { rpm: 50, tpm: null, concurrency: null }
    let admitted = 0
    for (let i = 0; i < 10_000; i++) {
      const now = i * 10
      state.prune(now, windowMs)
      if (Window.refuses(state.observe(limits, now, 0, windowMs))) continue
      state.admit(limits, i, now, 0, windowMs, 600_000)
      admitted++
      assert.isAtMost(state.requests(), 50)
    }
    // 100 s of calls every 10 ms: 50 in the first minute, 50 more once those left.
    assert.strictEqual(admitted, 100)
    assert.strictEqual(state.buckets.length, 0)
  })

  it("buckets are a sixtieth of the window, whole milliseconds, aligned on multiples of their length", () => {
    assert.strictEqual(Window.bucketMs(60_000), 1_000)
    assert.strictEqual(Window.bucketMs(2_000), 34)
    assert.strictEqual(Window.bucketOf(59_999, 60_000), 59_000)
    assert.strictEqual(Window.bucketOf(60_000, 60_000), 60_000)
    assert.strictEqual(Window.bucketOf(100, 2_000), 68)
  })

  it("a correction never takes a bucket below zero", () => {
    const state = new Window.SubjectState()
    const limits = { rpm: null, tpm: 1000, concurrency: null }
    const first = state.admit(limits, 1, 0, 100, windowMs, 600_000)
    const second = state.admit(limits, 2, 10, 100, windowMs, 600_000)
    assert.strictEqual(first, second)
    state.release(first, 1, 20, 100, 0, windowMs)
    state.release(second, 2, 20, 500, 0, windowMs)
    assert.strictEqual(first?.tokens, 0)
    assert.strictEqual(state.tokenSum, 0)
  })
})
