import { assert, describe, it } from "@effect/vitest"
import { RateLimiter } from "@modelgate/core"
import { formatDuration, toHeaders } from "../src/RateLimitHeaders.ts"

describe("Headers", () => {
  it("formats durations as OpenAI does", () => {
    const cases: ReadonlyArray<readonly [number, string]> = [
      [0, "0s"],
      [-5, "0s"],
      [12, "12ms"],
      [999, "999ms"],
      [1_000, "1s"],
      [1_500, "1.5s"],
      [1_152, "1.152s"],
      [8_640, "8.64s"],
      [59_999, "59.999s"],
      [60_000, "1m0s"],
      [360_000, "6m0s"],
      [90_500, "1m30.5s"],
      [3_600_000, "1h0m0s"],
      [3_723_250, "1h2m3.25s"],
      [12.4, "12ms"]
    ]
    for (const [ms, expected] of cases) assert.strictEqual(formatDuration(ms), expected, `${ms} ms`)
  })

  it("renders every limited dimension of a snapshot", () => {
    assert.deepStrictEqual(
      toHeaders({
        limitRequests: 10,
        remainingRequests: 9,
        resetRequestsMs: 6_000,
        limitTokens: 40_000,
        remainingTokens: 38_800,
        resetTokensMs: 360_000
      }),
      {
        "x-ratelimit-limit-requests": "10",
        "x-ratelimit-remaining-requests": "9",
        "x-ratelimit-reset-requests": "6s",
        "x-ratelimit-limit-tokens": "40000",
        "x-ratelimit-remaining-tokens": "38800",
        "x-ratelimit-reset-tokens": "6m0s"
      }
    )
  })

  it("leaves out dimensions without a limit", () => {
    assert.deepStrictEqual(toHeaders(RateLimiter.unlimited), {})
    assert.deepStrictEqual(
      toHeaders({ ...RateLimiter.unlimited, limitTokens: 100, remainingTokens: 0, resetTokensMs: 12 }),
      {
        "x-ratelimit-limit-tokens": "100",
        "x-ratelimit-remaining-tokens": "0",
        "x-ratelimit-reset-tokens": "12ms"
      }
    )
  })
})
