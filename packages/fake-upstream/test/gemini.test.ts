import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { type FakeUpstreamServer, startFakeUpstream } from "../src/index.ts"
import { dataEvents, postJson, readAll } from "./helpers.ts"

const KEY = "AIza-test"
const keyHeader = { "x-goog-api-key": KEY }
const contents = [{ role: "user", parts: [{ text: "Tell me a story" }] }]

describe("Gemini dialect", () => {
  let server: FakeUpstreamServer
  let base: string
  beforeAll(async () => {
    server = await startFakeUpstream({ apiKey: KEY })
    base = `${server.url}/v1beta/models`
  })
  afterAll(() => server.close())

  it("lists models with `models/` names and supported methods", async () => {
    const res = await fetch(base, { headers: keyHeader })
    const body = await res.json()
    assert.isAbove(body.models.length, 0)
    for (const m of body.models) {
      assert.match(m.name, /^models\//)
      assert.isArray(m.supportedGenerationMethods)
    }
    assert.isTrue(body.models.some((m: any) => m.supportedGenerationMethods.includes("generateContent")))
    assert.isTrue(body.models.some((m: any) => m.supportedGenerationMethods.includes("embedContent")))
  })

  it("answers generateContent with text, STOP and usageMetadata", async () => {
    const res = await postJson(`${base}/gemini-2.5-flash:generateContent`, {
      systemInstruction: { parts: [{ text: "You are terse." }] },
      contents
    }, keyHeader)
    assert.strictEqual(res.status, 200)
    const body = await res.json()
    const candidate = body.candidates[0]
    assert.strictEqual(candidate.finishReason, "STOP")
    assert.strictEqual(candidate.content.role, "model")
    const text = candidate.content.parts[0].text
    assert.strictEqual(text, "Hello from fake-upstream (model gemini-2.5-flash). You said: Tell me a story")
    const prompt = Math.ceil(("You are terse.".length + "Tell me a story".length) / 4)
    assert.strictEqual(body.usageMetadata.promptTokenCount, prompt)
    assert.strictEqual(body.usageMetadata.candidatesTokenCount, text.split(" ").length)
    assert.strictEqual(body.usageMetadata.totalTokenCount, prompt + text.split(" ").length)
    assert.strictEqual(body.modelVersion, "gemini-2.5-flash")
    assert.isString(body.responseId)
  })

  it("accepts the key as ?key= and the model with a `models/` prefix", async () => {
    const res = await postJson(`${base}/models/gemini-2.5-pro:generateContent?key=${KEY}`, { contents })
    assert.strictEqual(res.status, 200)
    assert.strictEqual((await res.json()).modelVersion, "gemini-2.5-pro")
    const v1 = await postJson(`${server.url}/v1/models/gemini-2.5-pro:generateContent?key=${KEY}`, { contents })
    assert.strictEqual(v1.status, 200)
  })

  it("streams SSE framed exactly like Google (data: one-line JSON, CRLF CRLF)", async () => {
    const res = await postJson(`${base}/gemini-2.5-flash:streamGenerateContent?alt=sse`, { contents }, keyHeader)
    assert.strictEqual(res.status, 200)
    assert.strictEqual(res.headers.get("content-type"), "text/event-stream")
    const raw = await res.text()
    // The strict framing @google/genai 1.30.0 parses: ^data: (.*)\r\n\r\n, nothing else.
    assert.match(raw, /^(data: [^\r\n]+\r\n\r\n)+$/)
    const chunks = dataEvents(raw, "\r\n\r\n").map((e) => JSON.parse(e))
    assert.isAbove(chunks.length, 2)
    const last = chunks[chunks.length - 1]
    for (const c of chunks.slice(0, -1)) {
      assert.notProperty(c.candidates[0], "finishReason")
      assert.strictEqual(c.modelVersion, "gemini-2.5-flash")
    }
    assert.strictEqual(last.candidates[0].finishReason, "STOP")
    assert.strictEqual(new Set(chunks.map((c) => c.responseId)).size, 1)
    const text = chunks.map((c) => c.candidates[0].content.parts[0].text).join("")
    assert.strictEqual(text, "Hello from fake-upstream (model gemini-2.5-flash). You said: Tell me a story")
    assert.deepStrictEqual(
      [last.usageMetadata.candidatesTokenCount, last.usageMetadata.totalTokenCount],
      [chunks.length, last.usageMetadata.promptTokenCount + chunks.length]
    )
  })

  it("streams a JSON array without alt=sse", async () => {
    const res = await postJson(`${base}/gemini-2.5-flash:streamGenerateContent`, { contents }, keyHeader)
    assert.match(res.headers.get("content-type")!, /application\/json/)
    const raw = await res.text()
    assert.isTrue(raw.startsWith("[{") && raw.endsWith("}\n]"))
    const chunks = JSON.parse(raw)
    assert.strictEqual(chunks[chunks.length - 1].candidates[0].finishReason, "STOP")
    assert.strictEqual(
      chunks.map((c: any) => c.candidates[0].content.parts[0].text).join(""),
      "Hello from fake-upstream (model gemini-2.5-flash). You said: Tell me a story"
    )
  })

  it("answers a functionCall (snake_case tools accepted) and then uses the functionResponse", async () => {
    const tools = [{
      function_declarations: [{
        name: "lookup",
        parameters: { type: "OBJECT", properties: { term: { type: "STRING" } }, required: ["term"] }
      }]
    }]
    const call = await postJson(`${base}/gemini-tools:streamGenerateContent?alt=sse`, { contents, tools }, keyHeader)
    const chunks = dataEvents(await call.text(), "\r\n\r\n").map((e) => JSON.parse(e))
    assert.strictEqual(chunks.length, 1)
    const candidate = chunks[0].candidates[0]
    assert.strictEqual(candidate.finishReason, "STOP")
    assert.deepStrictEqual(candidate.content.parts, [
      { functionCall: { name: "lookup", args: { term: "Tell me a story" } } }
    ])

    const followUp = [
      ...contents,
      { role: "model", parts: [{ functionCall: { name: "lookup", args: { term: "x" } } }] },
      { role: "user", parts: [{ functionResponse: { name: "lookup", response: { output: "once upon a time" } } }] }
    ]
    const res = await postJson(`${base}/gemini-tools:generateContent`, { contents: followUp, tools }, keyHeader)
    const body = await res.json()
    assert.strictEqual(body.candidates[0].content.parts[0].text, "The tool lookup returned: once upon a time")
  })

  it("signs a Gemini 3 model's function calls and requires the signature back, as Google does", async () => {
    const tools = [{ functionDeclarations: [{ name: "lookup", parameters: { type: "object" } }] }]
    const first =
      await (await postJson(`${base}/gemini-3-pro-preview-tools:generateContent`, { contents, tools }, keyHeader))
        .json()
    const part = first.candidates[0].content.parts[0]
    assert.strictEqual(part.functionCall.name, "lookup")
    assert.isString(part.thoughtSignature)
    const history = (signature: string | undefined) => [
      ...contents,
      {
        role: "model",
        parts: [
          signature === undefined
            ? { functionCall: part.functionCall }
            : { functionCall: part.functionCall, thoughtSignature: signature }
        ]
      },
      { role: "user", parts: [{ functionResponse: { name: "lookup", response: { output: "ok" } } }] }
    ]
    const url = `${base}/gemini-3-pro-preview-tools:generateContent`
    for (const signature of [part.thoughtSignature, "skip_thought_signature_validator"]) {
      assert.strictEqual(
        (await postJson(url, { contents: history(signature), tools }, keyHeader)).status,
        200,
        signature
      )
    }
    const missing = await postJson(url, { contents: history(undefined), tools }, keyHeader)
    assert.strictEqual(missing.status, 400)
    const body = await missing.json()
    assert.strictEqual(body.error.status, "INVALID_ARGUMENT")
    assert.match(body.error.message, /missing a thought_signature/)
    const forged = await postJson(url, { contents: history("bm90LW91cnM="), tools }, keyHeader)
    assert.strictEqual(forged.status, 400)
    // Gemini 2.5 neither signs nor checks.
    const old = await postJson(`${base}/gemini-2.5-flash-tools:generateContent`, {
      contents: history(undefined),
      tools
    }, keyHeader)
    assert.strictEqual(old.status, 200)
  })

  it("counts tokens and embeds deterministically", async () => {
    const count = await (await postJson(`${base}/gemini-2.5-flash:countTokens`, { contents }, keyHeader)).json()
    assert.strictEqual(count.totalTokens, Math.ceil("Tell me a story".length / 4))

    const one = await (await postJson(`${base}/text-embedding-004:embedContent`, {
      content: { parts: [{ text: "hello" }] },
      outputDimensionality: 16
    }, keyHeader)).json()
    assert.strictEqual(one.embedding.values.length, 16)

    const batch = await (await postJson(`${base}/text-embedding-004:batchEmbedContents`, {
      requests: [
        { model: "models/text-embedding-004", content: { parts: [{ text: "hello" }] }, outputDimensionality: 16 },
        { model: "models/text-embedding-004", content: { parts: [{ text: "world" }] }, outputDimensionality: 16 }
      ]
    }, keyHeader)).json()
    assert.strictEqual(batch.embeddings.length, 2)
    assert.deepStrictEqual(batch.embeddings[0].values, one.embedding.values)
    assert.notDeepEqual(batch.embeddings[1].values, one.embedding.values)
  })

  it("rejects a bad key with Google's 400 INVALID_ARGUMENT and a missing key with 403", async () => {
    const bad = await postJson(`${base}/gemini-2.5-flash:generateContent?key=wrong`, { contents })
    assert.strictEqual(bad.status, 400)
    assert.match(bad.headers.get("content-type")!, /application\/json/)
    const body = await bad.json()
    assert.strictEqual(body.error.code, 400)
    assert.strictEqual(body.error.status, "INVALID_ARGUMENT")
    assert.strictEqual(body.error.message, "API key not valid. Please pass a valid API key.")
    assert.strictEqual(body.error.details[0].reason, "API_KEY_INVALID")

    const missing = await postJson(`${base}/gemini-2.5-flash:generateContent`, { contents }, { "x-goog-api-key": "" })
    assert.strictEqual(missing.status, 403)
    assert.strictEqual((await missing.json()).error.status, "PERMISSION_DENIED")
  })

  it("fails a 429 with RetryInfo and retry-after", async () => {
    const res = await postJson(`${base}/gemini-2.5-flash:generateContent`, { contents }, {
      ...keyHeader,
      "x-fake-fail": "429"
    })
    assert.strictEqual(res.status, 429)
    assert.strictEqual(res.headers.get("retry-after"), "1")
    const body = await res.json()
    assert.strictEqual(body.error.status, "RESOURCE_EXHAUSTED")
    assert.isTrue(
      body.error.details.some((d: any) =>
        d["@type"] === "type.googleapis.com/google.rpc.RetryInfo" && d.retryDelay === "1s"
      )
    )
  })

  it("cuts an SSE stream after N chunks, before any finishReason", async () => {
    const res = await postJson(`${base}/gemini-2.5-flash:streamGenerateContent?alt=sse`, { contents }, {
      ...keyHeader,
      "x-fake-cut-after": "2"
    })
    const { text, error } = await readAll(res)
    assert.isDefined(error)
    const chunks = dataEvents(text, "\r\n\r\n").map((e) => JSON.parse(e))
    assert.strictEqual(chunks.length, 2)
    assert.isTrue(chunks.every((c) => c.candidates[0].finishReason === undefined))
  })
})
