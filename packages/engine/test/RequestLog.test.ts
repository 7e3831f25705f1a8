/**
 * What the usage log (the request log) gets for every call made with a valid
 * key, through the web handler over the fake upstream, and what the metrics
 * count from it:
 *
 * - a call refused before its hold (a body that is not a request, an unknown
 *   model, a model the key may not use, a rate limit, a balance that cannot
 *   hold the worst case) has a record with its status, error code and the
 *   message its caller got (the hold's says how much it needed), no channel,
 *   no attempts, no cost; a model name the catalog does not know is counted
 *   as `unknown`, and a rate limit by the kind of subject it refused;
 * - a call that failed over and failed keeps each attempt's message;
 * - the tokens an upstream spent reasoning are kept, relayed or translated;
 * - a call refused without a valid key has no record (there is no one to
 *   show it to).
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import type { UsageLog } from "@modelgate/core"
import { type FakeUpstreamServer, startFakeUpstream } from "@modelgate/fake-upstream"
import { toWebHandler, type WebHandler } from "../src/host/WebHandler.ts"
import { CallMetrics } from "../src/telemetry/Metrics.ts"

const KEY = "sk-requestlog-alice-00000000000000"
const NARROW = "sk-requestlog-narrow-0000000000000"
const LIMITED = "sk-requestlog-limited-000000000000"
const POOR = "sk-requestlog-poor-000000000000000"

let fake: FakeUpstreamServer
let gateway: WebHandler
const metrics = new CallMetrics()

beforeAll(async () => {
  fake = await startFakeUpstream()
  gateway = await toWebHandler({
    routing: { probe_interval_ms: 600_000, max_attempts: 3 },
    channels: [
      {
        name: "openai",
        type: "openai",
        base_url: `${fake.url}/v1`,
        api_key: "sk-up-openai-1111",
        models: ["gpt-4o-mini", "o-think"],
        model_map: { "o-think": "o-thinking" }
      },
      {
        name: "gemini",
        type: "gemini",
        base_url: fake.url,
        api_key: "g-up-2222",
        models: ["gemini-think"],
        model_map: { "gemini-think": "gemini-thinking" }
      },
      {
        name: "evil-gem",
        type: "gemini",
        base_url: fake.url,
        api_key: "g-up-evil-5555",
        models: ["html-model"],
        model_map: { "html-model": "gemini-html-200" }
      },
      {
        name: "down-a",
        type: "openai",
        base_url: `${fake.url}/v1`,
        api_key: "sk-up-down-3333",
        models: ["flaky"],
        headers: { "x-fake-fail": "503" },
        priority: 10
      },
      {
        name: "down-b",
        type: "openai",
        base_url: `${fake.url}/v1`,
        api_key: "sk-up-down-4444",
        models: ["flaky"],
        headers: { "x-fake-fail": "500" }
      },
      {
        name: "echoing",
        type: "gemini",
        base_url: fake.url,
        api_key: "g-up-echoing-6666",
        models: ["echoes"],
        // Fails with a 503 whose message quotes every request header, the channel's key among them.
        headers: { "x-fake-echo-headers": "503", "x-tenant-token": "tenant-secret-7777" }
      }
    ],
    models: {
      "gpt-4o-mini": { input: 0.15, output: 0.6 },
      "o-think": { input: 1, output: 4 },
      "gemini-think": { input: 0.3, output: 2.5 },
      flaky: { input: 1, output: 1 },
      "html-model": { input: 1, output: 1 },
      echoes: { input: 1, output: 1 }
    },
    users: [
      {
        name: "alice",
        balance: 100,
        keys: [{ name: "main", secret: KEY }, { name: "narrow", secret: NARROW, models: ["gpt-4o-mini"] }, {
          name: "limited",
          secret: LIMITED,
          rpm: 1
        }]
      },
      { name: "poor", balance: 0.000001, keys: [{ name: "empty", secret: POOR }] }
    ]
  }, { metrics })
})

afterAll(async () => {
  await gateway?.dispose()
  await fake?.close()
})

const chat = (key: string, body: unknown) =>
  gateway.handler(
    new Request("http://gateway.test/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: typeof body === "string" ? body : JSON.stringify(body)
    })
  )

const ask = (model: string, stream = false) => ({
  model,
  stream,
  messages: [{ role: "user", content: "Think about it" }]
})

/** The usage record of an answer (written when the call is settled; a stream's just after its last frame). */
const recordOf = async (response: Response): Promise<UsageLog.UsageRecord> => {
  const id = response.headers.get("x-request-id")!
  await response.text()
  for (let i = 0; i < 200; i++) {
    const record = gateway.inspect!.usage().find((r) => r.requestId === id)
    if (record !== undefined) return record
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  throw new Error(`no usage record for ${id}`)
}

const requests = (model: string, channel: string, status: number) =>
  metrics.requests.series.find((s) => s.labels.join("|") === `openai|${model}|${channel}|${status}`)?.value ?? 0

describe("calls refused before their hold", () => {
  it("are logged with their status, code and message, and no channel, attempts or cost", async () => {
    const cases: ReadonlyArray<readonly [string, unknown, number, string, string]> = [
      [KEY, "{not json", 400, "InvalidRequest", ""],
      [KEY, ask("no-such-model"), 404, "ModelNotFound", "no-such-model"],
      [NARROW, ask("o-think"), 403, "ModelNotAllowed", "o-think"],
      // A made-up name is kept as an error quotes it: cut at 200 characters.
      [KEY, ask("x".repeat(100_000)), 404, "ModelNotFound", `${"x".repeat(200)}…`]
    ]
    for (const [key, body, status, code, model] of cases) {
      const response = await chat(key, body)
      assert.strictEqual(response.status, status, code)
      const { error } = await response.clone().json() as { error: { message: string } }
      const record = await recordOf(response)
      assert.deepStrictEqual(
        [
          record.status,
          record.errorCode,
          record.errorMessage,
          record.model,
          record.channel,
          record.attempts,
          record.costNanos,
          record.userId === "",
          record.dialectIn
        ],
        [status, code, error.message, model, "", 0, 0n, false, "openai"]
      )
    }
  })

  it("a model name with a control character is refused with a clear 400, and recorded with escapes only", async () => {
    for (
      const [name, code, position] of [
        ["gpt-4o-mini\u0000", "U+0000", 12],
        ["=1+1\r\nevil", "U+000D", 5],
        ["no-such\nmodel", "U+000A", 8],
        ["tab\tbed", "U+0009", 4]
      ] as const
    ) {
      const response = await chat(KEY, ask(name))
      assert.strictEqual(response.status, 400, JSON.stringify(name))
      const { error } = await response.clone().json() as { error: { message: string; param: string } }
      assert.strictEqual(error.param, "model")
      assert.include(error.message, `contains a control character (${code} at position ${position})`)
      // oxlint-disable-next-line no-control-regex -- control characters are what it looks for
      assert.notMatch(error.message, /[\u0000-\u001f]/, "the message quotes the name with escapes")
      const record = await recordOf(response)
      assert.strictEqual(record.errorCode, "InvalidRequest")
      // oxlint-disable-next-line no-control-regex -- control characters are what it looks for
      assert.notMatch(record.model, /[\u0000-\u001f]/, "the record keeps no control character")
      assert.include(record.model, "\\u{")
    }
  })

  it("a refused hold says how much it needed, and a rate limit is counted by its subject", async () => {
    const poor = await chat(POOR, ask("gpt-4o-mini", true))
    assert.strictEqual(poor.status, 429)
    const record = await recordOf(poor)
    assert.strictEqual(record.errorCode, "InsufficientBalance")
    assert.isTrue(record.stream)
    assert.match(
      record.errorMessage ?? "",
      /balance is 0\.000001 USD .* up to \d+\.\d+ USD/,
      "the message names the amounts"
    )
    assert.strictEqual(record.model, "gpt-4o-mini")

    const before = metrics.rateLimited.series.find((s) => s.labels[0] === "key")?.value ?? 0
    assert.strictEqual((await chat(LIMITED, ask("gpt-4o-mini"))).status, 200)
    const limited = await chat(LIMITED, ask("gpt-4o-mini"))
    assert.strictEqual(limited.status, 429)
    assert.strictEqual((await recordOf(limited)).errorCode, "RateLimited")
    assert.strictEqual(metrics.rateLimited.series.find((s) => s.labels[0] === "key")?.value, before + 1)
  })

  it("are counted in the metrics without a model name the catalog does not know", async () => {
    assert.isAtLeast(requests("unknown", "none", 404), 1)
    assert.isAtLeast(requests("unknown", "none", 400), 1)
    assert.strictEqual(requests("o-think", "none", 403), 1)
    assert.isUndefined(metrics.requests.series.find((s) => s.labels[1] === "no-such-model"))
  })

  it("are not logged without a valid key", async () => {
    const before = gateway.inspect!.usage().length
    const response = await chat("sk-nobody-0000000000000000", ask("gpt-4o-mini"))
    assert.strictEqual(response.status, 401)
    await response.text()
    await new Promise((resolve) => setTimeout(resolve, 50))
    assert.strictEqual(gateway.inspect!.usage().length, before)
  })
})

describe("calls that reach an upstream", () => {
  it("keep the message of the call and of each attempt when every attempt fails", async () => {
    const response = await chat(KEY, ask("flaky"))
    assert.strictEqual(response.status, 502)
    const { error } = await response.clone().json() as { error: { message: string } }
    const record = await recordOf(response)
    assert.strictEqual(record.errorCode, "UpstreamUnavailable")
    assert.strictEqual(record.errorMessage, error.message)
    assert.deepStrictEqual(record.attemptLog.map((a) => [a.channel, a.status, a.errorCode]), [
      ["down-a", 503, "UpstreamUnavailable"],
      ["down-b", 500, "UpstreamUnavailable"]
    ])
    for (const attempt of record.attemptLog) assert.include(attempt.errorMessage ?? "", `HTTP ${attempt.status}`)
    assert.deepStrictEqual(
      metrics.attempts.series.filter((s) => s.labels[0]!.startsWith("down-")).map((s) => [s.labels.join("|"), s.value]),
      [["down-a|unavailable", 1], ["down-b|unavailable", 1]]
    )
  })

  it("keep what the upstream said on a 5xx in the attempts (admins'), its channel's secrets redacted; the caller gets the gateway's words", async () => {
    for (const stream of [false, true]) {
      const response = await chat(KEY, ask("echoes", stream))
      assert.strictEqual(response.status, 502)
      const { error } = await response.clone().json() as { error: { message: string } }
      const record = await recordOf(response)
      assert.strictEqual(error.message, "The upstream failed (HTTP 503). Retry later.")
      assert.strictEqual(record.errorMessage, error.message, "the caller's request log")
      const attempt = record.attemptLog[0]!
      assert.deepStrictEqual([attempt.channel, attempt.status, attempt.errorCode], [
        "echoing",
        503,
        "UpstreamUnavailable"
      ])
      assert.include(
        attempt.errorMessage ?? "",
        "The upstream failed (HTTP 503). Retry later. The upstream said: The request could not be processed. Request headers were:"
      )
      assert.include(attempt.errorMessage ?? "", "x-goog-api-key: [redacted]")
      assert.include(attempt.errorMessage ?? "", "x-tenant-token: [redacted]")
      assert.notInclude(attempt.errorMessage ?? "", "g-up-echoing-6666")
      assert.notInclude(attempt.errorMessage ?? "", "tenant-secret-7777")
    }
  })

  it("never show the caller a channel's name, in its error or its request log; admins see it in the attempts", async () => {
    for (const stream of [false, true]) {
      const response = await chat(KEY, ask("html-model", stream))
      assert.strictEqual(response.status, 502)
      const { error } = await response.clone().json() as { error: { message: string } }
      assert.notInclude(error.message, "evil-gem")
      assert.include(error.message, "The upstream answered")
      const record = await recordOf(response)
      assert.notInclude(record.errorMessage ?? "", "evil-gem", "the caller's request log")
      assert.strictEqual(record.errorMessage, error.message)
      assert.strictEqual(record.attemptLog[0]!.channel, "evil-gem", "the admin's view says where the call went")
      assert.include(record.attemptLog[0]!.errorMessage ?? "", "The upstream 'evil-gem'")
    }
  })

  it("keep the tokens spent reasoning, relayed (OpenAI) or translated (Gemini), streamed or not", async () => {
    for (
      const [model, stream] of [["o-think", false], ["o-think", true], ["gemini-think", false], [
        "gemini-think",
        true
      ]] as const
    ) {
      const response = await chat(KEY, {
        ...ask(model, stream),
        ...(stream ? { stream_options: { include_usage: true } } : {})
      })
      assert.strictEqual(response.status, 200)
      const record = await recordOf(response)
      assert.isAbove(record.reasoningTokens ?? 0, 0, `${model}${stream ? " streamed" : ""}`)
      assert.isAtMost(record.reasoningTokens ?? 0, record.completionTokens, "reasoning is part of the completion")
      assert.isNull(record.errorMessage)
    }
    const reasoning = metrics.tokens.series.find((s) => s.labels.join("|") === "o-think|reasoning")
    assert.isAbove(reasoning?.value ?? 0, 0)
  })
})
