import { assert, describe, it } from "@effect/vitest"
import { isHostRoute, match } from "../src/wire/Routes.ts"

describe("Routes", () => {
  it("leaves /metrics to the host, for GET only", () => {
    const route = match("GET", "/metrics")
    assert.deepStrictEqual(route, { _tag: "Metrics" })
    assert.isTrue(isHostRoute(route))
    assert.strictEqual(match("POST", "/metrics")._tag, "MethodNotAllowed")
  })

  it("matches the OpenAI surface under /v1 and Google's /v1beta/openai", () => {
    assert.deepStrictEqual(match("POST", "/v1/chat/completions"), { _tag: "OpenAIChat", dialect: "openai" })
    assert.deepStrictEqual(match("POST", "/v1beta/openai/chat/completions"), { _tag: "OpenAIChat", dialect: "openai" })
    assert.deepStrictEqual(match("GET", "/v1/models"), { _tag: "OpenAIModels", dialect: "openai" })
    assert.deepStrictEqual(match("GET", "/v1/models/gpt-4o"), {
      _tag: "OpenAIModel",
      dialect: "openai",
      model: "gpt-4o"
    })
    assert.deepStrictEqual(match("GET", "/v1beta/openai/models"), { _tag: "OpenAIModels", dialect: "openai" })
    assert.deepStrictEqual(match("GET", "/v1beta/openai/models/gemini-2.5-flash"), {
      _tag: "OpenAIModel",
      dialect: "openai",
      model: "gemini-2.5-flash"
    })
  })

  it("answers a Gemini client listing models on API version v1 with a 404 that names v1beta", () => {
    for (const path of ["/v1/models", "/v1/models/gemini-2.5-flash"]) {
      const miss = match("GET", path, { "x-goog-api-key": "k" })
      assert.strictEqual(miss._tag, "NotFound", path)
      if (miss._tag !== "NotFound") continue
      assert.strictEqual(miss.dialect, "gemini")
      assert.match(miss.message, /apiVersion: 'v1beta'/)
      assert.include(miss.message, path.replace("/v1/", "/v1beta/"))
    }
    // OpenAI and Anthropic clients on the same path are served as before.
    assert.deepStrictEqual(match("GET", "/v1/models", { authorization: "Bearer k" }), {
      _tag: "OpenAIModels",
      dialect: "openai"
    })
  })

  it("matches Gemini model methods, with or without the models/ prefix in the model", () => {
    assert.deepStrictEqual(match("POST", "/v1beta/models/gemini-2.5-pro:streamGenerateContent"), {
      _tag: "GeminiAction",
      dialect: "gemini",
      model: "gemini-2.5-pro",
      action: "streamGenerateContent"
    })
    assert.deepStrictEqual(match("POST", "/v1beta/models/models%2Fgemini-2.5-pro:generateContent"), {
      _tag: "GeminiAction",
      dialect: "gemini",
      model: "models/gemini-2.5-pro",
      action: "generateContent"
    })
    assert.deepStrictEqual(match("GET", "/v1beta/models/gemini-2.5-pro"), {
      _tag: "GeminiModel",
      dialect: "gemini",
      model: "gemini-2.5-pro"
    })
    // A literal "/" after models/ (what a client sends for the name "models/gemini-2.5-pro").
    assert.deepStrictEqual(match("POST", "/v1beta/models/models/gemini-2.5-pro:countTokens"), {
      _tag: "GeminiAction",
      dialect: "gemini",
      model: "models/gemini-2.5-pro",
      action: "countTokens"
    })
    assert.deepStrictEqual(match("GET", "/v1beta/models/models/gemini-2.5-pro"), {
      _tag: "GeminiModel",
      dialect: "gemini",
      model: "models/gemini-2.5-pro"
    })
  })

  it("answers a wrong method with the allowed ones", () => {
    const miss = match("GET", "/v1/chat/completions")
    assert.strictEqual(miss._tag, "MethodNotAllowed")
    if (miss._tag === "MethodNotAllowed") assert.deepStrictEqual(miss.allow, ["POST"])
  })

  const notFound = (path: string) => {
    const miss = match("POST", path)
    if (miss._tag !== "NotFound") throw new Error(`expected NotFound for ${path}, got ${miss._tag}`)
    return miss
  }

  it("names the fix for a doubled /v1", () => {
    const miss = notFound("/v1/v1/chat/completions")
    assert.strictEqual(miss.dialect, "openai")
    assert.match(miss.message, /\/v1 twice/)
    assert.match(miss.message, /already ends in \/v1/)
  })

  it("names the fix for a missing /v1", () => {
    for (const path of ["/chat/completions", "/models", "/embeddings"]) {
      const miss = notFound(path)
      assert.strictEqual(miss.dialect, "openai")
      assert.match(miss.message, /missing \/v1/)
    }
  })

  it("tells Gemini clients on the wrong API version to use v1beta, in Gemini's dialect", () => {
    for (
      const path of [
        "/v1/models/gemini-2.5-flash:generateContent",
        "/v1alpha/models/x:generateContent",
        "/v1beta/v1beta/models/x:generateContent"
      ]
    ) {
      const miss = notFound(path)
      assert.strictEqual(miss.dialect, "gemini", path)
      assert.match(miss.message, /v1beta/, path)
    }
  })

  it("unknown Gemini methods are 404 naming the supported ones", () => {
    const miss = notFound("/v1beta/models/gemini-2.5-flash:generateAnswer")
    assert.match(miss.message, /generateContent/)
  })

  it("matches the coding agents' surfaces: Responses (also under /v1beta/openai) and Anthropic Messages", () => {
    assert.deepStrictEqual(match("POST", "/v1/responses"), { _tag: "Responses", dialect: "responses" })
    assert.deepStrictEqual(match("POST", "/v1beta/openai/responses"), { _tag: "Responses", dialect: "responses" })
    assert.deepStrictEqual(match("POST", "/v1/messages"), { _tag: "AnthropicMessages", dialect: "anthropic" })
    assert.deepStrictEqual(match("POST", "/v1/messages/count_tokens"), {
      _tag: "AnthropicCountTokens",
      dialect: "anthropic"
    })
    const wrongMethod = match("GET", "/v1/messages")
    assert.strictEqual(wrongMethod._tag, "MethodNotAllowed")
    assert.strictEqual(wrongMethod._tag === "MethodNotAllowed" ? wrongMethod.dialect : undefined, "anthropic")
  })

  it("lists models in Anthropic's shape for a client sending anthropic-version, OpenAI's otherwise", () => {
    const headers = { "anthropic-version": "2023-06-01", "x-api-key": "k" }
    assert.deepStrictEqual(match("GET", "/v1/models", headers), { _tag: "AnthropicModels", dialect: "anthropic" })
    assert.deepStrictEqual(match("GET", "/v1/models/claude-sonnet-4-5", headers), {
      _tag: "AnthropicModel",
      dialect: "anthropic",
      model: "claude-sonnet-4-5"
    })
    assert.deepStrictEqual(match("GET", "/v1/models", { authorization: "Bearer k" }), {
      _tag: "OpenAIModels",
      dialect: "openai"
    })
  })

  it("answers stored-response paths with a 404 saying no response state is kept", () => {
    const miss = match("GET", "/v1/responses/resp_123")
    assert.strictEqual(miss._tag, "NotFound")
    if (miss._tag === "NotFound") assert.match(miss.message, /keeps no response state/)
  })

  it("answers an Anthropic client on a wrong path in Anthropic's envelope, naming the fix", () => {
    const miss = notFound("/v1/v1/messages")
    assert.strictEqual(miss.dialect, "anthropic")
    assert.match(miss.message, /\/v1 twice/)
  })

  it("never routes an API path to the console", () => {
    for (const path of ["/v1/foo", "/v1beta/foo", "/chat/completions", "/v2/models"]) {
      assert.notStrictEqual(match("GET", path)._tag, "Console", path)
    }
  })
})
