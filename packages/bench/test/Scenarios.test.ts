import { assert, describe, it } from "@effect/vitest"
import { authHeaders, callIn, DIALECTS, SCENARIO_NAMES, type ScenarioRequest, scenarios } from "../src/Scenarios.ts"

/** The model a request names: in the OpenAI body, or in the Gemini path. */
const modelOf = (r: ScenarioRequest): string => {
  if (r.dialect === "openai") return (JSON.parse(r.body) as { model: string }).model
  const match = /^\/v1beta\/models\/([^:]+):(generateContent|streamGenerateContent\?alt=sse)$/.exec(r.path)
  if (match === null) throw new Error(`not a Gemini path: ${r.path}`)
  return decodeURIComponent(match[1])
}

describe("Scenarios", () => {
  for (const dialect of DIALECTS) {
    for (const quick of [false, true]) {
      it(`${dialect}${quick ? ", quick" : ""}: every scenario speaks ${dialect} to the gateway, and its channel's dialect direct`, () => {
        const list = scenarios(quick, dialect)
        assert.deepStrictEqual(list.map((s) => s.name), [...SCENARIO_NAMES])
        for (const s of list) {
          assert.strictEqual(s.gateway.dialect, dialect, s.name)
          const translated = s.name.startsWith("translate-")
          assert.strictEqual(s.direct.dialect !== s.gateway.dialect, translated, s.name)
          if (!translated) assert.deepStrictEqual(s.direct, s.gateway, s.name)
          // Both ends name the same model, and the gateway config gets it on the channel of the direct dialect.
          const model = modelOf(s.gateway)
          assert.strictEqual(modelOf(s.direct), model, s.name)
          assert.deepStrictEqual(s.models[s.direct.dialect], [model], s.name)
          assert.strictEqual(model.startsWith("gemini-"), s.direct.dialect === "gemini", s.name)
          // Streams ask for a stream in either dialect.
          const streamed = s.gateway.dialect === "openai"
            ? JSON.parse(s.gateway.body).stream === true
            : s.gateway.path.includes("streamGenerateContent")
          assert.strictEqual(streamed, s.stream, s.name)
          assert.strictEqual(s.portkey, dialect === "openai" && !translated, s.name)
          if (s.kind === "latency") assert.isAbove(s.rates.length, 0, s.name)
        }
      })
    }
  }

  it("quick runs keep the 1,000/s point of chat-small and shorter memory streams", () => {
    const full = scenarios(false)
    const quick = scenarios(true)
    assert.include(quick.find((s) => s.name === "chat-small")?.rates ?? [], 1000)
    assert.include(full.find((s) => s.name === "chat-small")?.rates ?? [], 1000)
    assert.isBelow(
      quick.find((s) => s.kind === "memory")?.streamMs ?? 0,
      full.find((s) => s.kind === "memory")?.streamMs ?? 0
    )
  })

  it("calls and keys in each dialect", () => {
    assert.deepStrictEqual(callIn("gemini", "gemini-x", "hi", true), {
      dialect: "gemini",
      path: "/v1beta/models/gemini-x:streamGenerateContent?alt=sse",
      body: "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"hi\"}]}]}"
    })
    assert.deepStrictEqual(JSON.parse(callIn("openai", "m", "hi", true).body), {
      model: "m",
      messages: [{ role: "user", content: "hi" }],
      stream: true,
      stream_options: { include_usage: true }
    })
    assert.deepStrictEqual(authHeaders("openai", "k"), { authorization: "Bearer k" })
    assert.deepStrictEqual(authHeaders("gemini", "k"), { "x-goog-api-key": "k" })
  })
})
