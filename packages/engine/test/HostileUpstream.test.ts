/**
 * A hostile or broken upstream, through the gateway (the web handler over the
 * fake upstream's misbehaviours, and a small server of our own for what the
 * fake cannot do), for every client dialect and every upstream dialect:
 *
 * - usage figures that are not token counts (negative, fractional) are refused
 *   and the call counted locally: never a credit, never a 500, always a usage
 *   record marked `UsageRejected`, never a stranded hold;
 * - a 200 that is not an answer (HTML, a JSON error, broken JSON, nothing)
 *   fails over before the first byte, counts for the breaker, costs nothing;
 * - an answer larger than `max_answer_bytes` is a 502, a stream event larger
 *   than `max_event_bytes` ends the stream in-band, charged for what came;
 * - an upstream's error never carries the channel's secrets to the client;
 * - a request nested 5,000 levels deep is a 400, not a 500; an error never
 *   echoes a 200 KB value back.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Money, type UsageLog } from "@modelgate/core"
import { type FakeUpstreamServer, startFakeUpstream } from "@modelgate/fake-upstream"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { toWebHandler, type WebHandler } from "../src/host/WebHandler.ts"

const KEY = "sk-hostile-alice-000000000000000"
const UPSTREAM_KEY = "sk-upstream-secret-key-0123456789"
const HEADER_SECRET = "custom-header-secret-98765"
const dialects = ["openai", "gemini", "anthropic"] as const
const kinds = ["html", "error", "broken", "empty"] as const

/** The upstream dialects a Responses client also reaches: an OpenAI channel marked `responses` relays its body. */
const agentUpstreams = [...dialects, "responses"] as const
type Upstream = (typeof agentUpstreams)[number]

/** Each dialect's fake-upstream channel fields (Gemini and Anthropic at the root, OpenAI under /v1; Responses an OpenAI channel marked so). */
const channelOf = (upstream: string, dialect: Upstream) => ({
  type: dialect === "responses" ? "openai" as const : dialect,
  base_url: dialect === "openai" || dialect === "responses" ? `${upstream}/v1` : upstream,
  api_key: UPSTREAM_KEY,
  ...(dialect === "responses" ? { responses: true } : {})
})

let fake: FakeUpstreamServer
let custom: Server
let gateway: WebHandler

/** What `custom` sends for `/v1/chat/completions`: a good chunk, then an in-band error quoting the key it was sent. */
const startCustom = () =>
  new Promise<Server>((resolve) => {
    const server = createServer((request, response) => {
      request.resume()
      response.writeHead(200, { "content-type": "text/event-stream" })
      response.write(
        "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"}}]}\n\n"
      )
      response.end(
        `data: {"error":{"message":"internal failure serving ${request.headers.authorization}","type":"server_error"}}\n\n`
      )
    })
    server.listen(0, "127.0.0.1", () => resolve(server))
  })

const models: Record<string, { input: number; output: number }> = {}
const priced = (...ids: ReadonlyArray<string>) => {
  for (const id of ids) models[id] = { input: 1, output: 2 }
  return ids
}

const config = (upstream: string, customUrl: string) => ({
  routing: { probe_interval_ms: 600_000, max_attempts: 3 },
  max_answer_bytes: 100_000,
  max_event_bytes: 64 * 1024,
  channels: [
    // Usage an upstream should never report, one model of each kind per dialect.
    ...agentUpstreams.map((dialect) => ({
      name: `usage-${dialect}`,
      ...channelOf(upstream, dialect),
      models: priced(`${dialect}-neg`, `${dialect}-frac`),
      model_map: { [`${dialect}-neg`]: `${dialect}-negusage`, [`${dialect}-frac`]: `${dialect}-fracusage` }
    })),
    // A 200 that is not an answer, of each kind and dialect, before a healthy fallback.
    ...agentUpstreams.flatMap((dialect) =>
      kinds.map((kind) => ({
        name: `bad-${dialect}-${kind}`,
        ...channelOf(upstream, dialect),
        models: priced(`${dialect}-${kind}`),
        priority: 10,
        headers: { "x-fake-body": kind },
        breaker: { consecutive_failures: 1000 }
      }))
    ),
    {
      name: "fallback",
      type: "openai",
      base_url: `${upstream}/v1`,
      api_key: "sk-fallback-0000",
      models: agentUpstreams.flatMap((d) => kinds.map((k) => `${d}-${k}`))
    },
    // Alone: nothing to fail over to.
    {
      name: "bad-alone",
      type: "gemini",
      base_url: upstream,
      api_key: UPSTREAM_KEY,
      models: priced("alone-error"),
      headers: { "x-fake-body": "error" }
    },
    // One failure opens its breaker, and calls go straight to the healthy channel.
    {
      name: "bad-breaker",
      ...channelOf(upstream, "anthropic"),
      models: priced("breaker-error"),
      priority: 10,
      headers: { "x-fake-body": "html" },
      breaker: { consecutive_failures: 1 }
    },
    { name: "breaker-fallback", ...channelOf(upstream, "openai"), models: ["breaker-error"] },
    // Limits on what is read.
    {
      name: "limits",
      ...channelOf(upstream, "openai"),
      models: priced("big-answer", "long-line"),
      model_map: { "big-answer": "gpt-bytes-200000", "long-line": "gpt-line-300000" }
    },
    // Errors that quote what they were sent.
    {
      name: "echo",
      ...channelOf(upstream, "openai"),
      models: priced("echo-model"),
      model_map: { "echo-model": "gpt-echo-400" },
      headers: { "x-custom-secret": HEADER_SECRET }
    },
    {
      name: "echo-stream",
      type: "openai",
      base_url: `${customUrl}/v1`,
      api_key: UPSTREAM_KEY,
      models: priced("echo-stream-model")
    },
    // Translated and same-dialect targets for deep and huge requests.
    { name: "plain-openai", ...channelOf(upstream, "openai"), models: priced("gpt-4o-mini") },
    { name: "plain-gemini", ...channelOf(upstream, "gemini"), models: priced("gemini-2.5-flash") }
  ],
  models,
  users: [{ name: "alice", balance: 100, keys: [{ name: "main", secret: KEY }] }]
})

beforeAll(async () => {
  fake = await startFakeUpstream()
  custom = await startCustom()
  gateway = await toWebHandler(config(fake.url, `http://127.0.0.1:${(custom.address() as AddressInfo).port}`))
})

afterAll(async () => {
  await gateway?.dispose()
  await fake?.close()
  await new Promise((resolve) => custom?.close(resolve))
})

type Client = "openai" | "gemini" | "anthropic" | "responses"

const post = (path: string, headers: Record<string, string>, body: string) =>
  new Request(`http://gateway.test${path}`, {
    method: "POST",
    headers: { ...headers, "content-type": "application/json" },
    body
  })

/** A chat call in a client's dialect. */
const call = (client: Client, model: string, stream: boolean, body?: string) => {
  switch (client) {
    case "openai":
      return gateway.handler(
        post(
          "/v1/chat/completions",
          { authorization: `Bearer ${KEY}` },
          body ?? JSON.stringify({ model, stream, messages: [{ role: "user", content: "Say something" }] })
        )
      )
    case "gemini":
      return gateway.handler(post(
        `/v1beta/models/${model}:${stream ? "streamGenerateContent?alt=sse" : "generateContent"}`,
        { "x-goog-api-key": KEY },
        body ?? JSON.stringify({ contents: [{ role: "user", parts: [{ text: "Say something" }] }] })
      ))
    case "anthropic":
      return gateway.handler(
        post(
          "/v1/messages",
          { "x-api-key": KEY },
          body ??
            JSON.stringify({ model, stream, max_tokens: 64, messages: [{ role: "user", content: "Say something" }] })
        )
      )
    case "responses":
      return gateway.handler(
        post(
          "/v1/responses",
          { authorization: `Bearer ${KEY}` },
          body ?? JSON.stringify({ model, stream, store: false, input: "Say something" })
        )
      )
  }
}

/** The upstream dialects a client's calls are tried against here. */
const upstreamsOf = (client: Client): ReadonlyArray<Upstream> => client === "responses" ? agentUpstreams : dialects

/** The usage record of a request: written when the call is settled (a stream's just after its last frame). */
const recordOf = async (response: Response): Promise<UsageLog.UsageRecord> => {
  const id = response.headers.get("x-request-id")!
  for (let i = 0; i < 200; i++) {
    const record = gateway.inspect!.usage().find((r) => r.requestId === id)
    if (record !== undefined) return record
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  throw new Error(`no usage record for ${id}`)
}

/** What the key's owner may spend: the balance, less what calls in progress hold (the embedded store's view). */
const spendable = async (): Promise<string> => Money.formatUsd(gateway.inspect!.spendable("alice")!)

describe("usage an upstream should never report", () => {
  for (const client of ["openai", "gemini", "anthropic", "responses"] as const) {
    for (const dialect of upstreamsOf(client)) {
      for (const stream of [false, true]) {
        it(`${client} client, ${dialect} upstream${stream ? ", streamed" : ""}: negative and fractional usage is refused, counted locally, and never credits`, async () => {
          for (const figures of ["neg", "frac"]) {
            const before = gateway.inspect!.balance("alice")!
            const response = await call(client, `${dialect}-${figures}`, stream)
            assert.strictEqual(response.status, 200, `${figures}: the answer is delivered`)
            await response.text()
            const record = await recordOf(response)
            assert.strictEqual(record.status, 200)
            assert.strictEqual(record.errorCode, "UsageRejected", figures)
            assert.isFalse(record.usageReported)
            assert.isAbove(record.promptTokens, 0)
            assert.isAtLeast(record.completionTokens, 0)
            assert.isAbove(Number(record.costNanos), 0, "charged for the local count")
            const after = gateway.inspect!.balance("alice")!
            assert.strictEqual(before - after, record.costNanos, "charged exactly what the record says, never credited")
            assert.strictEqual(await spendable(), Money.formatUsd(after), "no hold is left behind")
          }
        })
      }
    }
  }
})

describe("a 200 that is not an answer", () => {
  for (const client of ["openai", "gemini", "anthropic", "responses"] as const) {
    for (const dialect of upstreamsOf(client)) {
      for (const stream of [false, true]) {
        it(`${client} client, ${dialect} upstream${stream ? ", streamed" : ""}: HTML, a JSON error, broken JSON or nothing fails over before the first byte`, async () => {
          for (const kind of kinds) {
            const before = gateway.inspect!.balance("alice")!
            const response = await call(client, `${dialect}-${kind}`, stream)
            assert.strictEqual(response.status, 200, kind)
            const text = await response.text()
            assert.include(text, "fake-upstream", `${kind}: the fallback's answer`)
            const record = await recordOf(response)
            assert.deepStrictEqual(
              record.attemptLog.map((a) => [a.channel, a.status, a.errorCode]),
              [[`bad-${dialect}-${kind}`, 200, "UpstreamUnavailable"], ["fallback", 200, null]],
              kind
            )
            assert.strictEqual(
              before - gateway.inspect!.balance("alice")!,
              record.costNanos,
              "one charge: the fallback's answer"
            )
          }
        })
      }
    }
  }

  it("with nothing to fail over to it is a 502 upstream_error naming the upstream's words, charged nothing", async () => {
    const before = gateway.inspect!.balance("alice")!
    for (const stream of [false, true]) {
      const response = await call("openai", "alone-error", stream)
      assert.strictEqual(response.status, 502)
      const error = (await response.json() as { error: { code: string; message: string } }).error
      assert.strictEqual(error.code, "upstream_error")
      assert.match(
        error.message,
        /^The upstream answered 200 with an error instead of an answer: An internal error has occurred/,
        "the caller never sees the channel's name"
      )
      const record = await recordOf(response)
      assert.include(record.attemptLog[0]!.errorMessage ?? "", "The upstream 'bad-alone' answered 200")
      assert.deepStrictEqual([record.status, record.costNanos, record.errorCode], [502, 0n, "UpstreamUnavailable"])
    }
    assert.strictEqual(gateway.inspect!.balance("alice"), before)
  })

  it("counts for the key's breaker: after one (consecutive_failures: 1) calls skip the key", async () => {
    const first = await call("gemini", "breaker-error", true)
    await first.text()
    assert.deepStrictEqual((await recordOf(first)).attemptLog.map((a) => [a.channel, a.errorCode]), [[
      "bad-breaker",
      "UpstreamUnavailable"
    ], ["breaker-fallback", null]])
    const next = await call("gemini", "breaker-error", true)
    await next.text()
    assert.deepStrictEqual((await recordOf(next)).attemptLog.map((a) => [a.channel, a.errorCode]), [[
      "breaker-fallback",
      null
    ]])
  })
})

describe("answers larger than the gateway reads", () => {
  it("a non-stream answer past max_answer_bytes is a 502 upstream_error, charged nothing", async () => {
    const before = gateway.inspect!.balance("alice")!
    const response = await call("openai", "big-answer", false)
    assert.strictEqual(response.status, 502)
    const error = (await response.json() as { error: { code: string; message: string } }).error
    assert.strictEqual(error.code, "upstream_error")
    assert.match(error.message, /answered with more than this gateway reads \(over 100000 bytes\)/)
    assert.strictEqual(gateway.inspect!.balance("alice"), before)
  })

  it("a stream event past max_event_bytes ends the stream in-band, charged for what was delivered", async () => {
    const before = gateway.inspect!.balance("alice")!
    const response = await call("openai", "long-line", true)
    assert.strictEqual(response.status, 200)
    const events = (await response.text()).split("\n\n").filter((e) => e.startsWith("data: ")).map((e) =>
      JSON.parse(e.slice(6))
    )
    assert.isAbove(
      events.filter((e) => e.choices?.[0]?.delta?.content).length,
      0,
      "what came before the long line is delivered"
    )
    const last = events.at(-1)
    assert.strictEqual(last.error.code, "upstream_error")
    assert.match(last.error.message, /sent a stream event larger than 65536 bytes \(max_event_bytes\)/)
    const record = await recordOf(response)
    assert.strictEqual(record.status, 502)
    assert.isAbove(record.completionTokens, 0)
    assert.isAbove(Number(record.costNanos), 0)
    assert.strictEqual(before - gateway.inspect!.balance("alice")!, record.costNanos)
  })
})

describe("the channel's secrets", () => {
  it("an upstream error quoting the request's headers reaches the client redacted, in both client dialects", async () => {
    for (const client of ["openai", "gemini"] as const) {
      for (const stream of [false, true]) {
        const response = await call(client, "echo-model", stream)
        assert.strictEqual(response.status, 400)
        const text = await response.text()
        assert.notInclude(text, UPSTREAM_KEY)
        assert.notInclude(text, HEADER_SECRET)
        assert.include(text, "authorization: Bearer [redacted]")
        assert.include(text, "x-custom-secret: [redacted]")
      }
    }
  })

  it("an in-band stream error quoting the key reaches the client redacted", async () => {
    const response = await call("openai", "echo-stream-model", true)
    const text = await response.text()
    assert.include(text, "Hello")
    assert.notInclude(text, UPSTREAM_KEY)
    assert.include(text, "internal failure serving Bearer [redacted]")
  })
})

describe("requests that would make the gateway echo or recurse without bound", () => {
  const deep = (levels: number) =>
    "{\"type\":\"object\",\"properties\":{\"a\":".repeat(levels) + "{\"type\":\"string\"}" + "}}".repeat(levels)

  it("a 5,000-level nested schema is a 400 naming the problem, on translated and same-dialect paths, stream or not", async () => {
    const openaiBody = (model: string, stream: boolean) =>
      `{"model":"${model}","stream":${stream},"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":${
        deep(5000)
      }}}]}`
    const geminiBody =
      `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"tools":[{"functionDeclarations":[{"name":"f","parameters":${
        deep(5000)
      }}]}]}`
    const cases: ReadonlyArray<readonly [Client, string, boolean, string]> = [
      ["openai", "gemini-2.5-flash", false, openaiBody("gemini-2.5-flash", false)],
      ["openai", "gpt-4o-mini", true, openaiBody("gpt-4o-mini", true)],
      ["gemini", "gpt-4o-mini", false, geminiBody],
      ["gemini", "gemini-2.5-flash", true, geminiBody]
    ]
    for (const [client, model, stream, body] of cases) {
      const response = await call(client, model, stream, body)
      assert.strictEqual(response.status, 400, `${client} -> ${model}`)
      const error = (await response.json() as { error: { message: string } }).error
      assert.match(error.message, /nests objects and arrays more than 128 levels deep/)
    }
  })

  it("a 200 KB model name or field name is echoed cut at 200 characters", async () => {
    const huge = "m".repeat(200_000)
    const unknown = await call("openai", huge, false)
    assert.strictEqual(unknown.status, 404)
    const message = (await unknown.json() as { error: { message: string } }).error.message
    assert.isBelow(message.length, 500)
    assert.include(message, `'${"m".repeat(200)}…'`)
    const field = await call(
      "gemini",
      "gpt-4o-mini",
      false,
      JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hi" }] }], [huge]: 1 })
    )
    assert.strictEqual(field.status, 400)
    const fieldError = (await field.json() as { error: { message: string } }).error
    assert.isBelow(JSON.stringify(fieldError).length, 3_000)
  })
})
