/**
 * The model-free credential checks of cloud channels' keys (the health
 * prober's), and Vertex's refused token: a token exchange for a Vertex key;
 * `ListFoundationModels` for a Bedrock key, whose `AccessDeniedException`
 * (the identity may call models but not list them) does not refuse the key,
 * while a bad signature does; a token Vertex refuses as expired is dropped
 * and the request sent once more with a new one.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { ChannelProbe, Credentials, Domain } from "@modelgate/core"
import { FakeUpstream, TEST_API_KEY, TEST_CREDENTIALS } from "@modelgate/fake-upstream"
import { Effect, Layer } from "effect"
import * as Probe from "../src/call/Probe.ts"
import { toWebHandler, type WebHandler } from "../src/host/WebHandler.ts"
import * as FetchTransport from "../src/wire/FetchTransport.ts"

const channel = (fields: Partial<Domain.Channel> & Pick<Domain.Channel, "type" | "baseUrl" | "apiKeys">) =>
  ({
    ...Domain.channelDefaults,
    id: `chn_${fields.type}`,
    name: fields.type,
    models: ["m"],
    modelMap: {},
    groups: ["default"],
    priority: 0,
    weight: 1,
    enabled: true,
    ...fields
  }) satisfies Domain.Channel

const DENIED = { accessKeyId: "AKIAFAKELISTDENIED00", secretAccessKey: "fake-upstream-list-denied-secret-0000" }

describe("cloud probes", () => {
  let upstream: FakeUpstream.FakeUpstream
  let now = Date.now()
  const probe = (target: Domain.Channel, key: string) =>
    Effect.runPromise(
      Effect.flatMap(ChannelProbe.ChannelProbe, (prober) => prober.probe(target, undefined, key)).pipe(
        Effect.provide(Probe.layer.pipe(Layer.provide(FetchTransport.layer)))
      )
    )
  beforeAll(async () => {
    upstream = await Effect.runPromise(FakeUpstream.start({
      port: 0,
      clock: () => now,
      vertex: { tokenTtlSeconds: 600 },
      bedrock: { credentials: [TEST_CREDENTIALS, DENIED], listDenied: [DENIED.accessKeyId] }
    }))
  })
  afterAll(async () => {
    await upstream?.close()
  })

  it("checks a Vertex key with a token exchange, and refuses a key Google does not know", async () => {
    const keyFile = JSON.stringify(upstream.vertexKeyFile())
    const vertex = channel({
      type: "vertex",
      baseUrl: upstream.url,
      apiKeys: [keyFile],
      cloud: { project: "fake-project", location: "us-east5" }
    })
    const issued = upstream.vertexTokensIssued()
    const ok = await probe(vertex, keyFile)
    assert.isTrue(ok.ok, ok.message)
    assert.strictEqual(upstream.vertexTokensIssued(), issued + 1)
    // Another probe exchanges again: a cached token proves nothing about the key now.
    assert.isTrue((await probe(vertex, keyFile)).ok)
    assert.strictEqual(upstream.vertexTokensIssued(), issued + 2)
    const stranger = JSON.stringify({
      ...upstream.vertexKeyFile(),
      client_email: "stranger@fake-project.iam.gserviceaccount.com"
    })
    const refused = await probe({ ...vertex, apiKeys: [stranger] }, stranger)
    assert.isFalse(refused.ok)
    assert.isTrue(refused.credentialsRefused, refused.message)
  })

  it("lists a Vertex channel's models from Model Garden: Google's Gemini and embedding models, then Anthropic's Claude", async () => {
    const keyFile = JSON.stringify(upstream.vertexKeyFile())
    const vertex = channel({
      type: "vertex",
      baseUrl: upstream.url,
      apiKeys: [keyFile],
      cloud: { project: "fake-project", location: "us-east5" }
    })
    const listed = await Effect.runPromise(
      Effect.flatMap(ChannelProbe.ChannelProbe, (prober) => prober.listModels(vertex, keyFile)).pipe(
        Effect.provide(Probe.layer.pipe(Layer.provide(FetchTransport.layer)))
      )
    )
    assert.deepStrictEqual(listed.map((m) => [m.id, m.embedding === true]), [
      ["claude-haiku-4-5", false],
      ["claude-opus-4-1", false],
      ["claude-sonnet-4-5", false],
      ["gemini-2.5-flash", false],
      ["gemini-2.5-flash-lite", false],
      ["gemini-2.5-pro", false],
      ["gemini-embedding-001", true],
      ["text-embedding-005", true],
      ["text-multilingual-embedding-002", true]
    ])
    const lists = upstream.requests.filter((r) => r.path.startsWith("/v1beta1/publishers/"))
    assert.deepStrictEqual(lists.map((r) => [r.method, r.path]), [
      ["GET", "/v1beta1/publishers/google/models"],
      ["GET", "/v1beta1/publishers/anthropic/models"]
    ])
    assert.isTrue(lists.every((r) => String(r.headers.authorization).startsWith("Bearer ")))
  })

  it("checks a Bedrock key with ListFoundationModels: AccessDenied there is no refusal, a bad signature is", async () => {
    const key = Credentials.bedrockKeyText(TEST_CREDENTIALS)
    const bedrock = channel({
      type: "bedrock",
      baseUrl: upstream.url,
      apiKeys: [key],
      cloud: { region: "us-east-1" }
    })
    const ok = await probe(bedrock, key)
    assert.isTrue(ok.ok, ok.message)
    const apiKey = await probe({ ...bedrock, apiKeys: [TEST_API_KEY] }, TEST_API_KEY)
    assert.isTrue(apiKey.ok, apiKey.message)

    const denied = Credentials.bedrockKeyText(DENIED)
    const listOnly = await probe({ ...bedrock, apiKeys: [denied] }, denied)
    assert.isTrue(listOnly.ok, listOnly.message)
    assert.isFalse(listOnly.credentialsRefused)
    assert.match(listOnly.message, /AccessDeniedException/)

    const wrong = Credentials.bedrockKeyText({
      ...TEST_CREDENTIALS,
      secretAccessKey: "not-the-secret-of-this-key-0000"
    })
    const refused = await probe({ ...bedrock, apiKeys: [wrong] }, wrong)
    assert.isFalse(refused.ok)
    assert.isTrue(refused.credentialsRefused, refused.message)
    assert.notInclude(refused.message, "not-the-secret-of-this-key-0000")
  })

  describe("a token Vertex refuses as expired", () => {
    let gateway: WebHandler
    const KEY = "sk-embedded-alice-0000000000000000"
    beforeAll(async () => {
      gateway = await toWebHandler({
        routing: { probe_interval_ms: 600_000 },
        channels: [{
          name: "vertex",
          type: "vertex",
          base_url: upstream.url,
          project: "fake-project",
          location: "us-east5",
          credentials: upstream.vertexKeyFile(),
          models: ["gemini-2.5-flash"]
        }],
        models: { "gemini-2.5-flash": { input: 1, output: 2 } },
        users: [{ name: "alice", balance: 10, keys: [{ name: "laptop", secret: KEY }] }]
      })
    })
    afterAll(async () => {
      now = Date.now()
      await gateway?.dispose()
    })

    it("is dropped, and the call sent once more with a new one", async () => {
      const call = () =>
        gateway.handler(
          new Request("http://gateway.test/v1/chat/completions", {
            method: "POST",
            headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
            body: JSON.stringify({ model: "gemini-2.5-flash", messages: [{ role: "user", content: "Hi" }] })
          })
        )
      now = Date.now()
      const first = await call()
      assert.strictEqual(first.status, 200, await first.text())
      const issued = upstream.vertexTokensIssued()
      // The fake's clock runs past the token's ten minutes; the gateway's does not, so it sends the token it holds.
      now = Date.now() + 601_000
      const second = await call()
      const body = await second.text()
      assert.strictEqual(second.status, 200, body)
      assert.strictEqual(upstream.vertexTokensIssued(), issued + 1)
      const record = gateway.inspect!.usage().at(-1)!
      assert.strictEqual(record.status, 200)
    })
  })
})
