/**
 * Where each channel type is reached and how its key is sent (the
 * `anthropic-version` a channel sets in any letter case wins), Azure's
 * default api-version, and the upstream's own message for operators.
 */
import { assert, describe, it } from "@effect/vitest"
import { Domain, JsonDepth } from "@modelgate/core"
import { Effect } from "effect"
import * as Dialects from "../src/call/Dialects.ts"
import * as Upstream from "../src/wire/Upstream.ts"

const channel = (over: Partial<Domain.Channel> = {}): Domain.Channel => ({
  id: "c",
  name: "c",
  type: "openai",
  baseUrl: "https://up.test/v1/",
  apiKeys: ["k"],
  models: ["m"],
  modelMap: {},
  groups: ["default"],
  priority: 0,
  weight: 1,
  enabled: true,
  ...Domain.channelDefaults,
  ...over
})

const headersOf = (c: Domain.Channel, key: string) => Dialects.ofChannel(c).headers(c, key)
const chatUrl = (c: Domain.Channel, model: string, stream: boolean) => Dialects.ofChannel(c).chatUrl(c, model, stream)

describe("Dialects", () => {
  it("puts each channel type's key where the upstream expects it", () => {
    assert.deepStrictEqual(headersOf(channel({ headers: { "X-Title": "gw" } }), "sk-1"), {
      "content-type": "application/json",
      "X-Title": "gw",
      authorization: "Bearer sk-1"
    })
    assert.strictEqual(headersOf(channel({ type: "azure" }), "az")["api-key"], "az")
    assert.strictEqual(headersOf(channel({ type: "gemini" }), "g")["x-goog-api-key"], "g")
    const anthropic = headersOf(channel({ type: "anthropic" }), "a")
    assert.strictEqual(anthropic["x-api-key"], "a")
    assert.strictEqual(anthropic["anthropic-version"], "2023-06-01")
  })

  it("keeps the anthropic-version a channel sets, in any letter case, and adds no second one", () => {
    for (const name of ["anthropic-version", "Anthropic-Version", "ANTHROPIC-VERSION"]) {
      const headers = headersOf(channel({ type: "anthropic", headers: { [name]: "2024-01-01" } }), "a")
      const versions = Object.entries(headers).filter(([k]) => k.toLowerCase() === "anthropic-version")
      assert.deepStrictEqual(versions, [[name, "2024-01-01"]], name)
    }
  })

  it("builds chat URLs; Azure without an api_version uses the default", () => {
    assert.strictEqual(chatUrl(channel(), "m", false), "https://up.test/v1/chat/completions")
    assert.strictEqual(
      chatUrl(channel({ type: "azure", baseUrl: "https://r.openai.azure.com" }), "my dep", true),
      `https://r.openai.azure.com/openai/deployments/my%20dep/chat/completions?api-version=${Domain.DEFAULT_AZURE_API_VERSION}`
    )
    assert.include(
      chatUrl(channel({ type: "azure", apiVersion: "2025-01-01-preview" }), "d", false),
      "api-version=2025-01-01-preview"
    )
    assert.strictEqual(
      chatUrl(channel({ type: "gemini", baseUrl: "https://g.test" }), "gemini-2.5-pro", true),
      "https://g.test/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    )
    assert.strictEqual(
      chatUrl(channel({ type: "anthropic", baseUrl: "https://a.test/" }), "claude", true),
      "https://a.test/v1/messages"
    )
  })

  it("builds embeddings URLs: OpenAI's /embeddings, an Azure deployment's, Gemini's method for the client's operation", () => {
    const embeddingsUrl = (c: Domain.Channel, operation?: string) =>
      Dialects.ofChannel(c).embeddings!.url(c, "e 1", operation)
    assert.strictEqual(embeddingsUrl(channel()), "https://up.test/v1/embeddings")
    assert.strictEqual(
      embeddingsUrl(channel({ type: "azure", baseUrl: "https://r.openai.azure.com" })),
      `https://r.openai.azure.com/openai/deployments/e%201/embeddings?api-version=${Domain.DEFAULT_AZURE_API_VERSION}`
    )
    assert.strictEqual(
      embeddingsUrl(channel({ type: "gemini", baseUrl: "https://g.test" }), "embedContent"),
      "https://g.test/v1beta/models/e%201:embedContent"
    )
    assert.strictEqual(
      embeddingsUrl(channel({ type: "gemini", baseUrl: "https://g.test" })),
      "https://g.test/v1beta/models/e%201:batchEmbedContents"
    )
  })

  it("relays a Responses client to an OpenAI channel marked responses, and only there", () => {
    const responses = Dialects.client("responses")
    assert.strictEqual(Dialects.forChat(responses, channel({ responses: true })).dialect, "responses")
    assert.strictEqual(
      Dialects.forChat(responses, channel({ responses: true })).chatUrl(channel({ responses: true }), "m", true),
      "https://up.test/v1/responses"
    )
    assert.strictEqual(Dialects.forChat(responses, channel()).dialect, "openai")
    assert.strictEqual(Dialects.forChat(responses, channel({ type: "gemini", responses: true })).dialect, "gemini")
    // A chat-completions client keeps using /chat/completions on such a channel.
    assert.strictEqual(Dialects.forChat(Dialects.client("openai"), channel({ responses: true })).dialect, "openai")
  })

  it("builds count_tokens URLs of Anthropic channels, and passes on an Anthropic client's anthropic-beta header only", () => {
    const anthropic = channel({ type: "anthropic", baseUrl: "https://a.test/" })
    assert.strictEqual(
      Dialects.ofChannel(anthropic).countTokens!.url(anthropic, "claude"),
      "https://a.test/v1/messages/count_tokens"
    )
    const client = Dialects.client("anthropic")
    assert.deepStrictEqual(
      client.forwardHeaders!({ "anthropic-beta": "a,b", "x-api-key": "k", "anthropic-version": "2023-06-01" }),
      { "anthropic-beta": "a,b" }
    )
    assert.deepStrictEqual(client.forwardHeaders!({ "x-api-key": "k" }), {})
    assert.strictEqual(client.presentedKey({ "x-api-key": "sk-1" }, ""), "sk-1")
    assert.strictEqual(client.presentedKey({ authorization: "Bearer sk-2" }, ""), "sk-2")
    assert.isUndefined(client.presentedKey({ "x-api-key": "  " }, ""))
  })

  it("finds the upstream's own message in every envelope, for operators", () => {
    const cases: ReadonlyArray<readonly [string, string]> = [
      [
        "{\"error\":{\"message\":\"Incorrect API key provided: sk-ab***cd\",\"type\":\"invalid_request_error\"}}",
        "Incorrect API key provided: sk-ab***cd"
      ],
      [
        "{\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key\"}}",
        "invalid x-api-key"
      ],
      [
        "{\"error\":{\"code\":400,\"message\":\"API key not valid. Please pass a valid API key.\",\"status\":\"INVALID_ARGUMENT\"}}",
        "API key not valid. Please pass a valid API key."
      ],
      ["{\"error\":\"quota exceeded\"}", "quota exceeded"],
      ["{\"message\":\"Unauthorized\"}", "Unauthorized"],
      ["<html>Bad gateway</html>\nmore", "<html>Bad gateway</html>"],
      ["", "(no message)"]
    ]
    for (const [body, message] of cases) assert.strictEqual(Upstream.upstreamMessage(body), message)
    assert.strictEqual(Upstream.upstreamMessage(`{"error":{"message":"${"x".repeat(400)}"}}`).length, 301)
  })
})

describe("a 200 that is not an answer, as each upstream dialect judges it", () => {
  const dialects = ["openai", "gemini", "anthropic", "responses"] as const
  const answers = {
    openai: {
      body: { id: "c", object: "chat.completion", model: "m", choices: [] },
      stream: "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n",
      error: "data: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\"}}\n\n",
      broken: "data: {\"id\":\"c\",\"choi\n\n",
      empty: "data: [DONE]\n\n"
    },
    gemini: {
      body: { candidates: [{ content: { parts: [{ text: "Hi" }] } }] },
      stream: "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hi\"}]}}]}\r\n\r\n",
      error: "data: {\"error\":{\"code\":500,\"message\":\"overloaded\",\"status\":\"INTERNAL\"}}\r\n\r\n",
      broken: "data: {\"candidates\":[\r\n\r\n",
      empty: ""
    },
    anthropic: {
      body: { id: "m", type: "message", model: "c", content: [] },
      stream:
        "event: ping\ndata: {\"type\":\"ping\"}\n\nevent: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\"}}\n\n",
      error:
        "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"overloaded\"}}\n\n",
      broken: "event: message_start\ndata: {\"type\":\"mess\n\n",
      empty: "event: ping\ndata: {\"type\":\"ping\"}\n\n"
    },
    responses: {
      body: { id: "resp_1", object: "response", status: "completed", error: null, output: [] },
      stream:
        "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\"}}\n\n",
      error:
        "event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"overloaded\",\"sequence_number\":0}\n\n",
      broken: "event: response.created\ndata: {\"type\":\"resp\n\n",
      empty: ""
    }
  }

  for (const dialect of dialects) {
    const upstream = Dialects.upstream(dialect)
    const cases = answers[dialect]

    it(`${dialect}: a non-stream answer passes; an error, another shape or something else fails, quoting the upstream`, () => {
      assert.isUndefined(upstream.notAnAnswer(cases.body, "up"))
      const error = upstream.notAnAnswer(
        dialect === "anthropic"
          ? { type: "error", error: { type: "api_error", message: "overloaded" } }
          : { error: { code: 500, message: "overloaded", status: "INTERNAL", type: "server_error" } },
        "up"
      )
      assert.strictEqual(
        error?.message,
        "The upstream 'up' answered 200 with an error instead of an answer: overloaded"
      )
      assert.match(
        upstream.notAnAnswer({ hello: "world" }, "up")?.message ?? "",
        /^The upstream 'up' answered 200 with something that is not an? /
      )
      assert.isDefined(upstream.notAnAnswer([1, 2], "up"))
      assert.isDefined(upstream.notAnAnswer("text", "up"))
    })

    it(`${dialect}: a stream's opening is an answer, incomplete until its first event ends, or a failure`, () => {
      assert.strictEqual(upstream.opening(cases.stream, false, "up"), "answer")
      const unfinished = cases.stream.replace(/(\r?\n)+$/, "")
      assert.strictEqual(upstream.opening(unfinished, false, "up"), "incomplete", "the first event is not complete yet")
      assert.strictEqual(upstream.opening(": keep-alive\n\n", false, "up"), "incomplete", "a comment is not an answer")
      const message = (opening: ReturnType<typeof upstream.opening>) =>
        typeof opening === "string" ? opening : opening.message
      assert.strictEqual(
        message(upstream.opening(cases.error, false, "up")),
        "The upstream 'up' answered 200 with an error instead of an answer: overloaded"
      )
      assert.strictEqual(
        message(upstream.opening(cases.broken, false, "up")),
        "The upstream 'up' answered 200 with a stream event that is not JSON."
      )
      assert.strictEqual(
        message(upstream.opening(cases.empty, true, "up")),
        "The upstream 'up' ended its stream without an answer."
      )
      assert.strictEqual(
        message(upstream.opening("<html><body>Bad gateway</body></html>", true, "up")),
        "The upstream 'up' ended its stream without an answer."
      )
      assert.strictEqual(
        upstream.opening(unfinished, true, "up"),
        "answer",
        "a last event without its blank line counts at the end"
      )
    })
  }

  it.effect("every client dialect refuses a chat body nested deeper than JsonDepth.MAX_DEPTH at inspection (the engine checks no further)", () =>
    Effect.gen(function*() {
      const nested = (levels: number) => "{\"a\":".repeat(levels) + "1" + "}".repeat(levels)
      for (const dialect of Domain.Dialect.literals) {
        const client = Dialects.client(dialect)
        const body = new TextEncoder().encode(
          `{"model":"m","messages":[],"contents":[],"tools":[${nested(JsonDepth.MAX_DEPTH)}]}`
        )
        const error = yield* Effect.flip(client.open(body, { model: "m" }))
        assert.strictEqual(error.message, JsonDepth.tooDeep().message, dialect)
      }
    }))
})

describe("cloud channels", () => {
  const vertex = channel({
    type: "vertex",
    baseUrl: "https://us-east5-aiplatform.googleapis.com",
    cloud: { project: "p", location: "us-east5", publishers: { "my-tuned-claude": "anthropic" } }
  })
  it("a Vertex channel speaks Gemini's dialect to Google's models and Anthropic's to Claude", () => {
    assert.strictEqual(Dialects.ofChannel(vertex, "gemini-2.5-flash").dialect, "gemini")
    assert.strictEqual(
      Dialects.ofChannel(vertex, "gemini-2.5-flash").chatUrl(vertex, "gemini-2.5-flash", true),
      "https://us-east5-aiplatform.googleapis.com/v1/projects/p/locations/us-east5/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    )
    const claude = Dialects.ofChannel(vertex, "claude-sonnet-4-5@20250929")
    assert.strictEqual(claude.dialect, "anthropic")
    assert.strictEqual(
      claude.chatUrl(vertex, "claude-sonnet-4-5@20250929", false),
      "https://us-east5-aiplatform.googleapis.com/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict"
    )
    // A model whose name does not say is the channel's publishers' word.
    assert.strictEqual(Dialects.ofChannel(vertex, "my-tuned-claude").dialect, "anthropic")
    // No credentials in the dialect's headers: the engine adds the access token (CloudAuth).
    assert.deepStrictEqual(claude.headers(vertex, "{}"), { "content-type": "application/json" })
  })

  it.effect("a relayed Messages body goes to Vertex without model, with Vertex's anthropic_version", () =>
    Effect.gen(function*() {
      const claude = Dialects.ofChannel(vertex, "claude-sonnet-4-5@20250929")
      const body = yield* claude.relayBody!(JSON.stringify({ model: "claude-sonnet-4-5@20250929", max_tokens: 8 }))
      assert.deepStrictEqual(JSON.parse(body as string), { max_tokens: 8, anthropic_version: "vertex-2023-10-16" })
    }))

  it("a Bedrock channel speaks the Converse API, the model id encoded in the path, its stream binary", () => {
    const bedrock = channel({
      type: "bedrock",
      baseUrl: "https://bedrock-runtime.us-east-1.amazonaws.com",
      cloud: { region: "us-east-1" }
    })
    const upstream = Dialects.ofChannel(bedrock)
    assert.strictEqual(upstream.dialect, "bedrock")
    assert.strictEqual(
      upstream.chatUrl(bedrock, "us.anthropic.claude-sonnet-4-5-20250929-v1:0", true),
      "https://bedrock-runtime.us-east-1.amazonaws.com/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
    )
    assert.strictEqual(upstream.binaryStream?.contentType, "application/vnd.amazon.eventstream")
    // Embeddings for its embedding models only (InvokeModel), none for a chat model.
    assert.isUndefined(Dialects.ofChannel(bedrock, "amazon.nova-pro-v1:0").embeddings)
    assert.strictEqual(
      Dialects.ofChannel(bedrock, "amazon.titan-embed-text-v2:0").embeddings?.url(
        bedrock,
        "amazon.titan-embed-text-v2:0",
        undefined
      ),
      "https://bedrock-runtime.us-east-1.amazonaws.com/model/amazon.titan-embed-text-v2%3A0/invoke"
    )
    assert.strictEqual(
      upstream.countTokens?.url(bedrock, "us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
      "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/count-tokens"
    )
    assert.strictEqual(
      upstream.listModels?.url(bedrock, undefined),
      "https://bedrock.us-east-1.amazonaws.com/foundation-models"
    )
  })
})
