/**
 * Rate limits end to end: the real server, the fake upstream and the official
 * `openai` and `@google/genai` SDKs. Requests per minute, tokens per minute
 * (admitted on an estimate, corrected by actual usage) and concurrent calls;
 * per key, per user (shared by the user's keys) and per group (the default of
 * its keys, which may only be set lower). OpenAI answers 429
 * `rate_limit_exceeded` with `retry-after` and `x-ratelimit-*` (also on
 * successful calls); Gemini answers 429 `RESOURCE_EXHAUSTED` with a RetryInfo
 * detail. A refused call never touches money.
 *
 * Runs on the in-memory limiter always, and once more on Redis when
 * `MODELGATE_TEST_REDIS=redis://host:port` is set (a key prefix unique to the
 * run; the limiter's keys expire one window after their last use).
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { ApiError, GoogleGenAI } from "@google/genai"
import { randomBytes } from "node:crypto"
import OpenAI from "openai"
import type { ConfigFile } from "../src/ConfigFile.ts"
import { startGateway, type TestGateway } from "./support/Gateway.ts"

const secret = (name: string) => `sk-test-limits-${name}-`.padEnd(40, "0")

const KEYS = {
  rpm3: secret("rpm3"),
  tpm: secret("tpm"),
  conc: secret("conc"),
  gem: secret("gem"),
  carol1: secret("carol1"),
  carol2: secret("carol2"),
  inherit: secret("inherit"),
  lower: secret("lower"),
  retry: secret("retry"),
  genaiRetry: secret("genairetry"),
  perModel: secret("permodel"),
  anthropic: secret("anthropic")
} as const

/** The channels and prices every configuration here shares. */
const catalog = (upstream: string): Pick<ConfigFile, "channels" | "models"> => ({
  channels: [
    {
      name: "fake-openai",
      type: "openai",
      base_url: `${upstream}/v1`,
      api_key: "sk-upstream",
      models: ["gpt-4o-mini", "slow-stream"],
      // 4 chunks 300 ms apart: a call that stays in flight for about a second.
      model_map: { "slow-stream": "gpt-interval-300-chunks-4" },
      groups: ["default", "limited"]
    },
    { name: "fake-gemini", type: "gemini", base_url: upstream, api_key: "g-upstream", models: ["gemini-2.5-flash"] }
  ],
  models: {
    "gpt-4o-mini": { input: 0.15, output: 0.6 },
    "slow-stream": { input: 0.15, output: 0.6 },
    "gemini-2.5-flash": { input: 0.3, output: 2.5 }
  }
})

const limitsConfig = (redis: string | undefined) => (upstream: string): ConfigFile => ({
  listen: "127.0.0.1:0",
  log_level: "error",
  ...(redis === undefined ? {} : { redis, redis_key_prefix: `modelgate-test-${randomBytes(6).toString("hex")}:` }),
  ...catalog(upstream),
  groups: { default: { ratio: 1 }, limited: { rpm: 4 } },
  users: [
    {
      name: "alice",
      balance: 10,
      keys: [
        { name: "rpm3", secret: KEYS.rpm3, rpm: 3 },
        { name: "tpm", secret: KEYS.tpm, tpm: 200 },
        { name: "conc", secret: KEYS.conc, concurrency: 1 },
        { name: "gem", secret: KEYS.gem, rpm: 1 },
        { name: "anthropic", secret: KEYS.anthropic, rpm: 5, tpm: 100_000 }
      ]
    },
    {
      name: "carol",
      balance: 10,
      rpm: 2,
      keys: [{ name: "one", secret: KEYS.carol1 }, { name: "two", secret: KEYS.carol2 }]
    },
    {
      name: "dave",
      balance: 10,
      keys: [
        { name: "inherit", secret: KEYS.inherit, group: "limited" },
        { name: "lower", secret: KEYS.lower, group: "limited", rpm: 2 }
      ]
    }
  ]
})

const hello = [{ role: "user" as const, content: "Hello!" }]

const chat = (gateway: TestGateway, key: string, body: Record<string, unknown> = {}) =>
  fetch(`${gateway.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "gpt-4o-mini", messages: hello, ...body })
  })

const balance = async (gateway: TestGateway, key: string): Promise<string> =>
  ((await (await fetch(`${gateway.url}/api/me`, { headers: { authorization: `Bearer ${key}` } })).json()) as {
    balance_usd: string
  })
    .balance_usd

const refusal = async (response: Response) => {
  assert.strictEqual(response.status, 429)
  const body = (await response.json()) as { error: { code: string; type: string; message: string } }
  assert.strictEqual(body.error.code, "rate_limit_exceeded")
  const retryAfter = Number(response.headers.get("retry-after"))
  assert.isAbove(retryAfter, 0)
  return body.error.message
}

const backends: ReadonlyArray<readonly [string, string | undefined]> = [
  ["memory", undefined],
  ...(process.env["MODELGATE_TEST_REDIS"] ? [["redis", process.env["MODELGATE_TEST_REDIS"]] as const] : [])
]

for (const [backend, redis] of backends) {
  describe(`rate limits (${backend})`, () => {
    let gateway: TestGateway
    beforeAll(async () => {
      gateway = await startGateway(limitsConfig(redis))
    })
    afterAll(async () => {
      await gateway.close()
    })

    it("an Anthropic client's answer carries anthropic-ratelimit-* with the limits, what is left and when each resets", async () => {
      const before = Date.now()
      const messages = () =>
        fetch(`${gateway.url}/v1/messages`, {
          method: "POST",
          headers: {
            "x-api-key": KEYS.anthropic,
            "anthropic-version": "2023-06-01",
            "content-type": "application/json"
          },
          body: JSON.stringify({ model: "gpt-4o-mini", max_tokens: 16, messages: hello })
        })
      const response = await messages()
      assert.strictEqual(response.status, 200, await response.clone().text())
      const header = (name: string) => response.headers.get(`anthropic-ratelimit-${name}`)
      assert.strictEqual(header("requests-limit"), "5")
      assert.strictEqual(header("requests-remaining"), "4")
      assert.strictEqual(header("tokens-limit"), "100000")
      assert.isNotNull(header("tokens-remaining"))
      // Reset times are RFC 3339 dates, as Anthropic sends them: within the minute's window from now.
      for (const name of ["requests-reset", "tokens-reset"]) {
        const value = header(name) ?? ""
        assert.match(value, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/, `${name}: ${value}`)
        const at = Date.parse(value)
        assert.isAtLeast(at, Math.floor(before / 1000) * 1000, name)
        assert.isAtMost(at, Date.now() + 61_000, name)
      }
      // The refusal of the 6th call says so too: nothing left, and when the requests limit resets.
      for (let i = 0; i < 4; i++) assert.strictEqual((await messages()).status, 200)
      const refused = await messages()
      assert.strictEqual(refused.status, 429)
      assert.strictEqual(refused.headers.get("anthropic-ratelimit-requests-limit"), "5")
      assert.strictEqual(refused.headers.get("anthropic-ratelimit-requests-remaining"), "0")
      const reset = refused.headers.get("anthropic-ratelimit-requests-reset") ?? ""
      assert.match(reset, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/, reset)
      const retryAfter = Number(refused.headers.get("retry-after"))
      // The reset is when retry-after says a request frees up (both rounded up to whole seconds).
      assert.approximately(Date.parse(reset), Date.now() + retryAfter * 1000, 2_000)
    })

    it("rpm: the 4th call of a 3 rpm key is refused with 429 rate_limit_exceeded, retry-after and x-ratelimit-*, without touching money", async () => {
      const remaining: Array<string | null> = []
      for (let i = 0; i < 3; i++) {
        const response = await chat(gateway, KEYS.rpm3)
        assert.strictEqual(response.status, 200)
        assert.strictEqual(response.headers.get("x-ratelimit-limit-requests"), "3")
        assert.match(response.headers.get("x-ratelimit-reset-requests") ?? "", /^\d+(\.\d+)?(ms|s)$|^\d+m[\d.]+s$/)
        remaining.push(response.headers.get("x-ratelimit-remaining-requests"))
        await response.arrayBuffer()
      }
      assert.deepStrictEqual(remaining, ["2", "1", "0"])
      const before = await balance(gateway, KEYS.rpm3)
      const upstreamCalls = gateway.upstream.requests.length

      const sdk = new OpenAI({ apiKey: KEYS.rpm3, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
      try {
        await sdk.chat.completions.create({ model: "gpt-4o-mini", messages: hello })
        assert.fail("expected a 429")
      } catch (error) {
        assert.instanceOf(error, OpenAI.RateLimitError)
        const apiError = error as InstanceType<typeof OpenAI.RateLimitError>
        assert.strictEqual(apiError.status, 429)
        assert.strictEqual(apiError.code, "rate_limit_exceeded")
        assert.match(apiError.message, /your API key 'rpm3': 3 requests per minute\. Retry in \d+ s\./)
        const retryAfter = Number(apiError.headers.get("retry-after"))
        assert.isAtLeast(retryAfter, 1)
        assert.isAtMost(retryAfter, 60)
        assert.strictEqual(apiError.headers.get("x-ratelimit-limit-requests"), "3")
        assert.strictEqual(apiError.headers.get("x-ratelimit-remaining-requests"), "0")
        assert.match(apiError.headers.get("x-ratelimit-reset-requests") ?? "", /s$/)
      }
      // Streaming calls are refused the same way, before any stream starts.
      const streamed = await chat(gateway, KEYS.rpm3, { stream: true })
      assert.match(await refusal(streamed), /3 requests per minute/)
      assert.strictEqual(await balance(gateway, KEYS.rpm3), before)
      assert.strictEqual(gateway.upstream.requests.length, upstreamCalls)
    })

    it("headers on successful streams too", async () => {
      const response = await chat(gateway, KEYS.tpm, { stream: true, max_tokens: 20 })
      assert.strictEqual(response.status, 200)
      assert.strictEqual(response.headers.get("content-type"), "text/event-stream")
      assert.strictEqual(response.headers.get("x-ratelimit-limit-tokens"), "200")
      assert.isNotNull(response.headers.get("x-ratelimit-remaining-tokens"))
      assert.isNull(response.headers.get("x-ratelimit-limit-requests"))
      await response.text()
    })

    it("tpm: admitted on the estimate (prompt + max_tokens), refused while the estimate does not fit, corrected to actual usage when the call ends", async () => {
      // In flight: counted at its estimate (~20 prompt + 150 output) until it ends.
      const first = await chat(gateway, KEYS.tpm, { model: "slow-stream", stream: true, max_tokens: 150 })
      assert.strictEqual(first.status, 200)
      const remaining = Number(first.headers.get("x-ratelimit-remaining-tokens"))
      assert.isBelow(remaining, 50)
      const refused = await chat(gateway, KEYS.tpm, { max_tokens: 150 })
      // The 429 carries the token dimension: its limit, what remains, and when the call would fit.
      assert.strictEqual(refused.headers.get("x-ratelimit-limit-tokens"), "200")
      const left = refused.headers.get("x-ratelimit-remaining-tokens")
      assert.match(left ?? "", /^\d+$/)
      assert.isBelow(Number(left), 150)
      assert.match(refused.headers.get("x-ratelimit-reset-tokens") ?? "", /^\d+(\.\d+)?(ms|s)$|^\d+m[\d.]+s$/)
      const message = await refusal(refused)
      assert.match(message, /your API key 'tpm': 200 tokens per minute \(this call needs about \d+\)/)
      await first.text()
      // The slow call used a handful of tokens: its count is corrected, and the next call fits.
      const next = await chat(gateway, KEYS.tpm, { max_tokens: 150 })
      assert.strictEqual(next.status, 200)
      await next.arrayBuffer()
      // A call whose estimate can never fit says so.
      const never = await refusal(await chat(gateway, KEYS.tpm, { max_tokens: 500 }))
      assert.match(
        never,
        /more than the 200 tokens per minute allowed for your API key 'tpm', so it cannot be admitted/
      )
    })

    it("concurrency: a second call while one is in flight is refused; the slot frees when the call ends or the client disconnects", async () => {
      const first = await chat(gateway, KEYS.conc, { model: "slow-stream", stream: true })
      assert.strictEqual(first.status, 200)
      const message = await refusal(await chat(gateway, KEYS.conc))
      assert.match(message, /your API key 'conc': 1 concurrent calls/)
      await first.text()
      const after = await chat(gateway, KEYS.conc)
      assert.strictEqual(after.status, 200)
      await after.arrayBuffer()

      // A client that goes away mid-stream releases its slot (in the same finaliser that settles).
      const abort = new AbortController()
      const cut = await fetch(`${gateway.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${KEYS.conc}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "slow-stream", messages: hello, stream: true }),
        signal: abort.signal
      })
      assert.strictEqual(cut.status, 200)
      abort.abort()
      let status = 0
      for (let i = 0; i < 50 && status !== 200; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20))
        const retry = await chat(gateway, KEYS.conc)
        status = retry.status
        await retry.arrayBuffer()
      }
      assert.strictEqual(status, 200)
    })

    it("a user's limit is shared by all the user's keys", async () => {
      assert.strictEqual((await chat(gateway, KEYS.carol1)).status, 200)
      assert.strictEqual((await chat(gateway, KEYS.carol2)).status, 200)
      assert.match(await refusal(await chat(gateway, KEYS.carol1)), /user 'carol': 2 requests per minute/)
      assert.match(await refusal(await chat(gateway, KEYS.carol2)), /user 'carol': 2 requests per minute/)
    })

    it("a group's limit is the default of its keys; a key may be set lower", async () => {
      for (let i = 0; i < 4; i++) assert.strictEqual((await chat(gateway, KEYS.inherit)).status, 200)
      const inherited = await chat(gateway, KEYS.inherit)
      assert.strictEqual(inherited.headers.get("x-ratelimit-limit-requests"), "4")
      assert.match(await refusal(inherited), /your API key 'inherit': 4 requests per minute/)
      for (let i = 0; i < 2; i++) assert.strictEqual((await chat(gateway, KEYS.lower)).status, 200)
      assert.match(await refusal(await chat(gateway, KEYS.lower)), /your API key 'lower': 2 requests per minute/)
    })

    it("@google/genai gets 429 RESOURCE_EXHAUSTED with RetryInfo and retry-after; countTokens counts as a request", async () => {
      const genai = new GoogleGenAI({ apiKey: KEYS.gem, httpOptions: { baseUrl: gateway.url, apiVersion: "v1beta" } })
      const ok = await genai.models.generateContent({ model: "gemini-2.5-flash", contents: "Hello" })
      assert.isString(ok.text)
      try {
        await genai.models.generateContent({ model: "gemini-2.5-flash", contents: "Hello again" })
        assert.fail("expected a 429")
      } catch (error) {
        assert.instanceOf(error, ApiError)
        assert.strictEqual((error as ApiError).status, 429)
        assert.include((error as ApiError).message, "RESOURCE_EXHAUSTED")
        assert.include((error as ApiError).message, "your API key 'gem': 1 requests per minute")
      }
      const raw = await fetch(`${gateway.url}/v1beta/models/gemini-2.5-flash:countTokens`, {
        method: "POST",
        headers: { "x-goog-api-key": KEYS.gem, "content-type": "application/json" },
        body: JSON.stringify({ contents: [{ parts: [{ text: "Hello" }] }] })
      })
      assert.strictEqual(raw.status, 429)
      assert.isAbove(Number(raw.headers.get("retry-after")), 0)
      assert.isNull(raw.headers.get("x-ratelimit-limit-requests"))
      const body = (await raw.json()) as {
        error: { code: number; status: string; details: Array<{ "@type": string; retryDelay?: string }> }
      }
      assert.strictEqual(body.error.status, "RESOURCE_EXHAUSTED")
      const retryInfo = body.error.details.find((d) => d["@type"] === "type.googleapis.com/google.rpc.RetryInfo")
      assert.match(retryInfo?.retryDelay ?? "", /^\d+(\.\d+)?s$/)
    })
  })
}

describe("rate limits with a short window, per model", () => {
  let gateway: TestGateway
  beforeAll(async () => {
    gateway = await startGateway((upstream) => ({
      listen: "127.0.0.1:0",
      log_level: "error",
      rate_limits: { window_ms: 1_500, per_model: true },
      ...catalog(upstream),
      groups: { default: { ratio: 1 } },
      users: [{
        name: "erin",
        balance: 10,
        keys: [
          { name: "retry", secret: KEYS.retry, rpm: 1 },
          { name: "genai-retry", secret: KEYS.genaiRetry, rpm: 1 },
          { name: "permodel", secret: KEYS.perModel, rpm: 1 }
        ]
      }]
    }))
  })
  afterAll(async () => {
    await gateway.close()
  })

  it("the openai SDK waits for retry-after and then succeeds", async () => {
    const sdk = new OpenAI({ apiKey: KEYS.retry, baseURL: `${gateway.url}/v1`, maxRetries: 1 })
    await sdk.chat.completions.create({ model: "gpt-4o-mini", messages: hello })
    const startedAt = Date.now()
    const { data, response } = await sdk.chat.completions.create({ model: "gpt-4o-mini", messages: hello })
      .withResponse()
    const waited = Date.now() - startedAt
    assert.match(data.choices[0]!.message.content ?? "", /Hello from fake-upstream/)
    // The first attempt was refused with retry-after: 2 (1.5 s rounded up); the SDK slept that long, not its short default backoff.
    assert.isAtLeast(waited, 1_400)
    assert.strictEqual(response.headers.get("x-ratelimit-limit-requests"), "1")
    assert.strictEqual(response.headers.get("x-ratelimit-remaining-requests"), "0")
  })

  it("@google/genai retries the 429 when retryOptions are set, no sooner than retry-after asks", async () => {
    // The SDK's retry (p-retry) waits its own backoff (initialDelay * expBase^n) and does not read
    // retry-after or RetryInfo: a client sets initialDelay to at least the retry-after the gateway
    // answers (here 2 s: the 1.5 s window rounded up), and then the retry is admitted.
    const attempts: Array<
      {
        readonly at: number
        readonly status: number
        readonly retryAfter: string | null
        readonly retryDelay?: string | undefined
      }
    > = []
    const recordingFetch: typeof fetch = async (input, init) => {
      const response = await fetch(input, init)
      const body = response.status === 429
        ? (await response.clone().json()) as { error: { details: Array<{ retryDelay?: string }> } }
        : undefined
      attempts.push({
        at: Date.now(),
        status: response.status,
        retryAfter: response.headers.get("retry-after"),
        ...(body === undefined
          ? {}
          : { retryDelay: body.error.details.find((d) => d.retryDelay !== undefined)?.retryDelay })
      })
      return response
    }
    const genai = new GoogleGenAI({
      apiKey: KEYS.genaiRetry,
      httpOptions: {
        baseUrl: gateway.url,
        apiVersion: "v1beta",
        fetch: recordingFetch,
        retryOptions: { attempts: 3, initialDelay: 2, jitter: 0, httpStatusCodes: [429] }
      }
    })
    await genai.models.generateContent({ model: "gpt-4o-mini", contents: "Hello" })
    const upstreamBefore = gateway.upstream.requests.length
    const answer = await genai.models.generateContent({ model: "gpt-4o-mini", contents: "Hello again" })
    assert.isString(answer.text)
    assert.deepStrictEqual(attempts.map((a) => a.status), [200, 429, 200])
    const refused = attempts[1]!
    assert.strictEqual(refused.retryAfter, "2")
    assert.match(refused.retryDelay ?? "", /^1(\.\d+)?s$/)
    // The retry came no sooner than retry-after said, and only the admitted attempt reached the upstream.
    assert.isAtLeast(attempts[2]!.at - refused.at, Number(refused.retryAfter) * 1000 - 50)
    assert.strictEqual(gateway.upstream.requests.length, upstreamBefore + 1)
  })

  it("per_model counts each model separately, and messages use the configured window", async () => {
    const first = await chat(gateway, KEYS.perModel)
    assert.strictEqual(first.status, 200)
    await first.arrayBuffer()
    const other = await chat(gateway, KEYS.perModel, { model: "gemini-2.5-flash" })
    assert.strictEqual(other.status, 200)
    await other.arrayBuffer()
    assert.match(
      await refusal(await chat(gateway, KEYS.perModel)),
      /your API key 'permodel' on model 'gpt-4o-mini': 1 requests per 1\.5 s/
    )
  })
})
