/**
 * The misbehaviours a gateway must not believe: nonsense usage (negative,
 * fractional), a 200 that is not an answer (HTML, a JSON error, broken JSON,
 * nothing), a 403 about the request's own content, a stream line that never
 * ends, and an error that quotes the request's credentials.
 */
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { type FakeUpstreamServer, startFakeUpstream } from "../src/index.ts"
import { HTML_PAGE } from "../src/Misbehaviour.ts"
import { dataEvents, namedEvents, postJson, readAll } from "./helpers.ts"

let server: FakeUpstreamServer
beforeAll(async () => {
  server = await startFakeUpstream()
})
afterAll(() => server.close())

const openai = (headers: Record<string, string>, body: Record<string, unknown> = {}, model = "gpt-4o-mini") =>
  postJson(`${server.url}/v1/chat/completions`, { model, messages: [{ role: "user", content: "one two" }], ...body }, {
    authorization: "Bearer k",
    ...headers
  })

const gemini = (model: string, action: string, headers: Record<string, string> = {}, body?: unknown) =>
  postJson(`${server.url}/v1beta/models/${model}:${action}`, body ?? { contents: [{ parts: [{ text: "one two" }] }] }, {
    "x-goog-api-key": "k",
    ...headers
  })

const anthropic = (headers: Record<string, string>, body: Record<string, unknown> = {}, model = "claude-sonnet-4-5") =>
  postJson(`${server.url}/v1/messages`, {
    model,
    max_tokens: 10,
    messages: [{ role: "user", content: "one two" }],
    ...body
  }, {
    "x-api-key": "k",
    ...headers
  })

const responses = (headers: Record<string, string>, body: Record<string, unknown> = {}, model = "gpt-5") =>
  postJson(`${server.url}/v1/responses`, { model, input: "one two", store: false, ...body }, {
    authorization: "Bearer k",
    ...headers
  })

describe("usage figures an upstream should never report", () => {
  it("negusage reports negative counts in every dialect's usage, stream or not", async () => {
    const chat = await (await openai({}, {}, "gpt-negusage")).json()
    assert.deepInclude(chat.usage, {
      prompt_tokens: -1_000_000,
      completion_tokens: -5_000_000,
      total_tokens: -6_000_000
    })
    const streamed = dataEvents(
      await (await openai({}, { stream: true, stream_options: { include_usage: true } }, "gpt-negusage")).text()
    )
    const usage = JSON.parse(streamed.at(-2)!).usage
    assert.deepInclude(usage, { prompt_tokens: -1_000_000, completion_tokens: -5_000_000 })
    const generated = await (await gemini("gemini-negusage", "generateContent")).json()
    assert.deepInclude(generated.usageMetadata, { promptTokenCount: -1_000_000, candidatesTokenCount: -5_000_000 })
    const message = await (await anthropic({}, {}, "claude-negusage")).json()
    assert.deepInclude(message.usage, { input_tokens: -1_000_000, output_tokens: -5_000_000 })
    const response = await (await responses({}, {}, "gpt-negusage")).json()
    assert.deepInclude(response.usage, { input_tokens: -1_000_000, output_tokens: -5_000_000 })
    const events = namedEvents(await (await responses({ "x-fake-usage-values": "1.5,2.5" }, { stream: true })).text())
    assert.deepInclude(events.find((e) => e.event === "response.completed")!.data.response.usage, {
      input_tokens: 1.5,
      output_tokens: 2.5
    })
  })

  it("fracusage and x-fake-usage-values report the figures asked for, embeddings included", async () => {
    const chat = await (await openai({}, {}, "gpt-fracusage")).json()
    assert.deepInclude(chat.usage, { prompt_tokens: 1.5, completion_tokens: 2.5 })
    const events = dataEvents(
      await (await gemini("gemini-2.5-flash", "streamGenerateContent?alt=sse", { "x-fake-usage-values": "7,-3" }))
        .text(),
      "\r\n\r\n"
    )
    assert.deepInclude(JSON.parse(events.at(-1)!).usageMetadata, { promptTokenCount: 7, candidatesTokenCount: -3 })
    const stream = namedEvents(await (await anthropic({ "x-fake-usage-values": "0.5,-1" }, { stream: true })).text())
    assert.strictEqual(stream.find((e) => e.event === "message_start")!.data.message.usage.input_tokens, 0.5)
    assert.strictEqual(stream.find((e) => e.event === "message_delta")!.data.usage.output_tokens, -1)
    const embedded =
      await (await postJson(`${server.url}/v1/embeddings`, { model: "text-embedding-3-small", input: "x" }, {
        authorization: "Bearer k",
        "x-fake-usage-values": "-9,0"
      })).json()
    assert.strictEqual(embedded.usage.prompt_tokens, -9)
  })
})

describe("a 200 that is not an answer", () => {
  it("html-200: a proxy's HTML page, for a stream request too", async () => {
    for (const stream of [false, true]) {
      const response = await openai({}, { stream }, "gpt-html-200")
      assert.strictEqual(response.status, 200)
      assert.match(response.headers.get("content-type")!, /^text\/html/)
      assert.strictEqual(await response.text(), HTML_PAGE)
    }
  })

  it("x-fake-body: error is the dialect's error as a 200 body, or as a stream's first event", async () => {
    const body = await openai({ "x-fake-body": "error" })
    assert.strictEqual(body.status, 200)
    assert.strictEqual((await body.json()).error.type, "server_error")
    const stream = await openai({ "x-fake-body": "error" }, { stream: true })
    assert.strictEqual(stream.headers.get("content-type"), "text/event-stream")
    assert.deepStrictEqual(dataEvents(await stream.text()).map((e) => JSON.parse(e).error.type), ["server_error"])
    const google = dataEvents(
      await (await gemini("gemini-error-200", "streamGenerateContent?alt=sse")).text(),
      "\r\n\r\n"
    )
    assert.strictEqual(JSON.parse(google[0]!).error.status, "INTERNAL")
    const claude = namedEvents(await (await anthropic({ "x-fake-body": "error" }, { stream: true })).text())
    assert.deepStrictEqual(claude.map((e) => [e.event, e.data.error.type]), [["error", "api_error"]])
  })

  it("x-fake-body: broken is JSON cut in the middle; empty is {} or a stream with nothing in it", async () => {
    const broken = await (await openai({ "x-fake-body": "broken" })).text()
    assert.throws(() => JSON.parse(broken))
    const brokenEvent = dataEvents(await (await openai({ "x-fake-body": "broken" }, { stream: true })).text())
    assert.strictEqual(brokenEvent.length, 1)
    assert.throws(() => JSON.parse(brokenEvent[0]!))
    assert.strictEqual(await (await gemini("gemini-empty-200", "generateContent")).text(), "{}")
    assert.deepStrictEqual(dataEvents(await (await openai({ "x-fake-body": "empty" }, { stream: true })).text()), [
      "[DONE]"
    ])
    const silent = await gemini("gemini-empty-200", "streamGenerateContent?alt=sse")
    assert.strictEqual(silent.status, 200)
    assert.strictEqual(await silent.text(), "")
  })
})

describe("other misbehaviours", () => {
  it("Gemini refuses a fileData link to a file it does not hold with 403 PERMISSION_DENIED about that file", async () => {
    const response = await gemini("gemini-2.5-flash", "generateContent", {}, {
      contents: [{
        parts: [
          { text: "summarise" },
          {
            fileData: {
              mimeType: "application/pdf",
              fileUri: "https://generativelanguage.googleapis.com/v1beta/files/abc123"
            }
          }
        ]
      }]
    })
    assert.strictEqual(response.status, 403)
    const error = (await response.json()).error
    assert.strictEqual(error.status, "PERMISSION_DENIED")
    assert.strictEqual(error.message, "You do not have permission to access the File abc123 or it may not exist.")
  })

  it("line-B ends a stream with one line of B bytes that never ends", async () => {
    const { text } = await readAll(await openai({}, { stream: true }, "gpt-line-300000"))
    const lastEvent = text.slice(text.lastIndexOf("\n\n") + 2)
    assert.isTrue(lastEvent.startsWith("data: "))
    assert.strictEqual(lastEvent.length, "data: ".length + 300_000)
    assert.notInclude(lastEvent, "\n")
    assert.isAbove(dataEvents(text.slice(0, text.lastIndexOf("\n\n") + 2)).length, 1, "normal events come first")
  })

  it("echo-NNN fails with the status, quoting the request's headers (its credentials included)", async () => {
    const response = await openai({ "x-custom-secret": "custom-value-123" }, {}, "gpt-echo-400")
    assert.strictEqual(response.status, 400)
    const message = (await response.json()).error.message as string
    assert.include(message, "authorization: Bearer k")
    assert.include(message, "x-custom-secret: custom-value-123")
    const google = await gemini("gemini-2.5-flash", "generateContent", { "x-fake-echo-headers": "500" })
    assert.strictEqual(google.status, 500)
    assert.include((await google.json()).error.message, "x-goog-api-key: k")
  })

  it("setControls takes the new behaviours too", async () => {
    server.setControls({ body: "html" })
    try {
      assert.match((await openai({})).headers.get("content-type")!, /^text\/html/)
    } finally {
      server.setControls({})
    }
  })
})
