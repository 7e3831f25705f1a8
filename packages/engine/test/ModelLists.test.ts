/**
 * `ChannelProbe.listModels` over the fake upstream, through the transport
 * calls use: each dialect's own list (OpenAI in one page, Gemini and
 * Anthropic paged, every page read), with the channel's key and headers; the
 * upstream's refusal in the gateway's and the upstream's words with the
 * channel's secrets redacted; a 200 that is not a list; Azure, which cannot
 * list.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { ChannelProbe, Domain } from "@modelgate/core"
import { type FakeUpstreamServer, startFakeUpstream } from "@modelgate/fake-upstream"
import { Effect, Layer } from "effect"
import * as Probe from "../src/call/Probe.ts"
import * as FetchTransport from "../src/wire/FetchTransport.ts"

const KEY = "sk-lists-upstream-key-0123456789"
const openai = ["gpt-4o-mini", "gpt-4o", "text-embedding-3-small"]
const gemini = Array.from({ length: 1203 }, (_, i) => `gemini-x-${String(i).padStart(4, "0")}`).concat([
  "text-embedding-004"
])
const anthropic = Array.from({ length: 1500 }, (_, i) => `claude-x-${String(i).padStart(4, "0")}`)

let fake: FakeUpstreamServer
beforeAll(async () => {
  fake = await startFakeUpstream({ apiKey: KEY, models: { openai, gemini, anthropic } })
})
afterAll(() => fake?.close())

const channel = (over: Partial<Domain.Channel>): Domain.Channel => ({
  ...Domain.channelDefaults,
  id: "chn_list",
  name: "list",
  type: "openai",
  baseUrl: `${fake.url}/v1`,
  apiKeys: [KEY],
  models: [],
  modelMap: {},
  groups: ["default"],
  priority: 0,
  weight: 1,
  enabled: true,
  ...over
})

const list = (of: Domain.Channel, apiKey?: string) =>
  Effect.flatMap(ChannelProbe.ChannelProbe, (probe) => probe.listModels(of, apiKey)).pipe(
    Effect.provide(Probe.layer.pipe(Layer.provide(FetchTransport.layer)))
  )

describe("listing a channel's models", () => {
  it.live("OpenAI: the one page, sorted, embedding models marked", () =>
    Effect.gen(function*() {
      const models = yield* list(channel({}))
      assert.deepStrictEqual(models.map((m) => [m.id, m.embedding ?? false]), [["gpt-4o", false], [
        "gpt-4o-mini",
        false
      ], ["text-embedding-3-small", true]])
      const sent = fake.requests.at(-1)!
      assert.deepStrictEqual([sent.method, sent.path, sent.headers.authorization], [
        "GET",
        "/v1/models",
        `Bearer ${KEY}`
      ])
    }))

  it.live("Gemini: every page of 1000, names without models/, limits kept, embedding models marked", () =>
    Effect.gen(function*() {
      fake.clearRequests()
      const models = yield* list(channel({ type: "gemini", baseUrl: fake.url }))
      assert.strictEqual(models.length, 1204)
      assert.strictEqual(fake.requests.filter((r) => r.path === "/v1beta/models").length, 2, "two pages")
      const flash = models.find((m) => m.id === "gemini-x-0000")!
      assert.deepStrictEqual([flash.inputTokenLimit, flash.outputTokenLimit, flash.embedding], [
        1048576,
        65536,
        undefined
      ])
      assert.isTrue(models.find((m) => m.id === "text-embedding-004")!.embedding)
      assert.strictEqual(fake.requests.at(-1)!.headers["x-goog-api-key"], KEY)
    }))

  it.live("Anthropic: every page after the last id, with the channel's version header", () =>
    Effect.gen(function*() {
      fake.clearRequests()
      const models = yield* list(channel({ type: "anthropic", baseUrl: fake.url }))
      assert.deepStrictEqual(models.map((m) => m.id), anthropic)
      assert.deepStrictEqual(fake.requests.map((r) => r.query["after_id"]), [undefined, "claude-x-0999"])
      assert.isDefined(fake.requests[0]!.headers["anthropic-version"])
    }))

  it.live("a refused key fails with the gateway's and the upstream's words, the key redacted", () =>
    Effect.gen(function*() {
      // An upstream that quotes the request's headers, the key among them.
      const error = yield* Effect.flip(list(channel({ headers: { "x-fake-echo-headers": "401" } })))
      assert.strictEqual(error._tag, "UpstreamUnavailable")
      assert.include(error.message, "The upstream said:")
      assert.notInclude(error.message, KEY)
      const refused = yield* Effect.flip(list(channel({}), "sk-wrong-key-abcdefghijklmnop"))
      assert.include(refused.message, "Incorrect API key")
      const failing = yield* Effect.flip(list(channel({ headers: { "x-fake-fail": "503" } })))
      assert.strictEqual(failing._tag, "UpstreamUnavailable")
    }))

  it.live("a 200 that is not a list fails, and Azure cannot list", () =>
    Effect.gen(function*() {
      // An OpenAI-format channel whose address answers Gemini's list: a 200 that is not its list.
      const other = yield* Effect.flip(list(channel({ baseUrl: `${fake.url}/v1beta` })))
      assert.strictEqual(other._tag, "UpstreamUnavailable")
      assert.include(other.message, "not a model list")
      const azure = yield* Effect.flip(list(channel({ type: "azure", baseUrl: "https://x.openai.azure.com" })))
      assert.strictEqual(azure._tag, "UnsupportedFeature")
      assert.include(azure.message, "deployment")
    }))
})

const probing = <A>(f: (probe: ChannelProbe.ChannelProbe["Service"]) => Effect.Effect<A>) =>
  Effect.flatMap(ChannelProbe.ChannelProbe, f).pipe(
    Effect.provide(Probe.layer.pipe(Layer.provide(FetchTransport.layer)))
  )

describe("checking a key (the health probe's request, which depends on no model)", () => {
  it.live("asks each provider's model list: OpenAI, Gemini, Anthropic, and Azure OpenAI's resource models", () =>
    Effect.gen(function*() {
      for (
        const [over, path, header] of [
          [{}, "/v1/models", "authorization"],
          [{ type: "gemini", baseUrl: fake.url }, "/v1beta/models", "x-goog-api-key"],
          [{ type: "anthropic", baseUrl: fake.url }, "/v1/models", "x-api-key"],
          [{ type: "azure", baseUrl: fake.url, apiVersion: "2024-10-21" }, "/openai/models", "api-key"]
        ] as const
      ) {
        fake.clearRequests()
        const result = yield* probing((probe) => probe.checkKey(channel(over as Partial<Domain.Channel>)))
        assert.isTrue(result.ok, `${JSON.stringify(over)}: ${result.message}`)
        assert.strictEqual(fake.requests.length, 1, "one request")
        const sent = fake.requests[0]!
        assert.deepStrictEqual([sent.method, sent.path], ["GET", path])
        assert.include(sent.headers[header] as string, KEY)
        const refused = yield* probing((probe) =>
          probe.checkKey(channel(over as Partial<Domain.Channel>), "sk-wrong-key-abcdefghijklmnop")
        )
        assert.deepStrictEqual([refused.ok, refused.credentialsRefused], [false, true], JSON.stringify(over))
      }
      assert.strictEqual(fake.requests.at(-1)!.query["api-version"], "2024-10-21")
    }))

  it.live("a 403 to one model's request is not the key's; a 403 to the model list is", () =>
    Effect.gen(function*() {
      // The upstream refuses the model (an organisation not verified for it): the key is fine.
      const model = yield* probing((probe) =>
        probe.probe(channel({ models: ["gpt-5-fail-403"] }), "gpt-5-fail-403", KEY)
      )
      assert.deepStrictEqual([model.ok, model.status, model.credentialsRefused], [false, 403, false])
      const key = yield* probing((probe) => probe.checkKey(channel({ models: ["gpt-5-fail-403"] })))
      assert.isTrue(key.ok)
      // The list itself refused with 403 (a project without access to the API): the key's problem.
      const listRefused = yield* probing((probe) => probe.checkKey(channel({ headers: { "x-fake-fail": "403" } })))
      assert.deepStrictEqual([listRefused.ok, listRefused.status, listRefused.credentialsRefused], [
        false,
        403,
        true
      ])
    }))
})
