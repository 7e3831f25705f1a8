import { Effect } from "effect"
import { spawn } from "node:child_process"
import { once } from "node:events"
import { fileURLToPath } from "node:url"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { FakeUpstream, type FakeUpstreamServer, parseListenAddress, startFakeUpstream } from "../src/index.ts"
import { dataEvents, namedEvents, postJson, readAll, readUntilQuiet } from "./helpers.ts"

const auth = { authorization: "Bearer k" }
const chat = (model = "gpt-4o-mini", extra: Record<string, unknown> = {}) => ({
  model,
  messages: [{ role: "user", content: "one two three" }],
  ...extra
})
const openaiContent = (events: ReadonlyArray<string>): Array<string> =>
  events
    .filter((e) => e !== "[DONE]")
    .map((e) => JSON.parse(e))
    .filter((c) => c.choices[0]?.delta?.content)
    .map((c) => c.choices[0].delta.content)

describe("behaviour controls", () => {
  let server: FakeUpstreamServer
  let url: string
  beforeAll(async () => {
    server = await startFakeUpstream()
    url = `${server.url}/v1/chat/completions`
  })
  afterAll(() => server.close())

  it("x-fake-fail gives the status in OpenAI's envelope, 429 with retry-after", async () => {
    const res = await postJson(url, chat(), { ...auth, "x-fake-fail": "429" })
    assert.strictEqual(res.status, 429)
    assert.strictEqual(res.headers.get("retry-after"), "1")
    const body = await res.json()
    assert.deepStrictEqual(Object.keys(body.error).sort(), ["code", "message", "param", "type"])
    assert.strictEqual(body.error.code, "rate_limit_exceeded")
    const byModel = await postJson(url, chat("fail-503"), auth)
    assert.strictEqual(byModel.status, 503)
    assert.strictEqual((await byModel.json()).error.type, "server_error")
  })

  it("x-fake-fail-on fails only the requests whose body holds its text, 500 unless x-fake-fail says", async () => {
    const on = { ...auth, "x-fake-fail-on": "the third text" }
    const third = chat("gpt-4o-mini", { messages: [{ role: "user", content: "and the third text" }] })
    assert.strictEqual((await postJson(url, chat(), on)).status, 200)
    const failed = await postJson(url, third, on)
    assert.strictEqual(failed.status, 500)
    assert.strictEqual((await failed.json()).error.type, "server_error")
    assert.strictEqual((await postJson(url, third, { ...on, "x-fake-fail": "503" })).status, 503)
    assert.strictEqual((await postJson(url, chat(), { ...on, "x-fake-fail": "503" })).status, 200)
    server.setControls({ failOn: "the third text" })
    try {
      assert.strictEqual((await postJson(url, third, auth)).status, 500)
      assert.strictEqual((await postJson(url, chat(), auth)).status, 200)
    } finally {
      server.setControls({})
    }
  })

  it("x-fake-delay-first-ms delays the headers", async () => {
    const started = performance.now()
    const res = await postJson(url, chat(), { ...auth, "x-fake-delay-first-ms": "150" })
    const elapsed = performance.now() - started
    assert.strictEqual(res.status, 200)
    assert.isAtLeast(elapsed, 140)
    await res.text()
    // The model-name form: slow-N.
    const t2 = performance.now()
    await (await postJson(url, chat("gpt-slow-120"), auth)).text()
    assert.isAtLeast(performance.now() - t2, 110)
  })

  it("x-fake-cut-after streams N content chunks then kills the connection", async () => {
    const res = await postJson(url, chat("m", { stream: true }), { ...auth, "x-fake-cut-after": "3" })
    assert.strictEqual(res.status, 200)
    const { text, error } = await readAll(res)
    assert.isDefined(error, "the body must end with an error, not cleanly")
    assert.notInclude(text, "[DONE]")
    const events = dataEvents(text)
    assert.strictEqual(events.length, 4) // role chunk + 3 content chunks
    assert.deepStrictEqual(openaiContent(events), ["Hello ", "from ", "fake-upstream "])
  })

  it("cut-N in the model name and cut mode reset also end in an error (Anthropic)", async () => {
    const res = await postJson(`${server.url}/v1/messages`, {
      model: "claude-cut-2",
      max_tokens: 10,
      stream: true,
      messages: [{ role: "user", content: "hi" }]
    }, { "x-api-key": "k", "x-fake-cut-mode": "reset" })
    const { error } = await readAll(res)
    assert.isDefined(error)
  })

  it("x-fake-stall-after streams N chunks then goes quiet without ending", async () => {
    const res = await postJson(url, chat("m", { stream: true }), { ...auth, "x-fake-stall-after": "2" })
    const { text, quiet } = await readUntilQuiet(
      res,
      (t) => dataEvents(t.slice(0, t.lastIndexOf("\n\n") + 2)).length >= 3,
      300
    )
    assert.isTrue(quiet, "nothing may arrive after the stall point")
    assert.deepStrictEqual(openaiContent(dataEvents(text)), ["Hello ", "from "])
  })

  it("counts streams whose client closed the connection before the end, not finished or scenario-cut ones", async () => {
    const own = await startFakeUpstream()
    try {
      const ownUrl = `${own.url}/v1/chat/completions`
      await readAll(await postJson(ownUrl, chat("m", { stream: true }), auth))
      await readAll(await postJson(ownUrl, chat("cut-2", { stream: true }), auth))
      assert.strictEqual(own.clientClosedStreams(), 0)
      const abort = new AbortController()
      const res = await fetch(ownUrl, {
        method: "POST",
        headers: { "content-type": "application/json", ...auth, "x-fake-stall-after": "1" },
        body: JSON.stringify(chat("m", { stream: true })),
        signal: abort.signal
      })
      await res.body!.getReader().read()
      abort.abort()
      for (let i = 0; i < 100 && own.clientClosedStreams() === 0; i++) await new Promise((r) => setTimeout(r, 20))
      assert.strictEqual(own.clientClosedStreams(), 1)
    } finally {
      await own.close()
    }
  })

  it("a stalled non-stream request never answers, a cut one gets no response", async () => {
    const stalled = await Promise.race([
      postJson(url, chat(), { ...auth, "x-fake-stall-after": "0" }).then(() => "answered"),
      new Promise((resolve) => setTimeout(() => resolve("stalled"), 250))
    ])
    assert.strictEqual(stalled, "stalled")
    const cut = await postJson(url, chat(), { ...auth, "x-fake-cut-after": "0" }).then(() => "answered", () => "failed")
    assert.strictEqual(cut, "failed")
  })

  it("x-fake-chunk-interval-ms spaces the chunks", async () => {
    const started = performance.now()
    const res = await postJson(url, chat("m", { stream: true }), { ...auth, "x-fake-chunk-interval-ms": "20" })
    const events = dataEvents(await res.text())
    const chunks = openaiContent(events).length
    assert.isAtLeast(performance.now() - started, chunks * 20 - 5)
  })

  it("x-fake-usage: none omits usage everywhere", async () => {
    const nonStream = await (await postJson(url, chat(), { ...auth, "x-fake-usage": "none" })).json()
    assert.notProperty(nonStream, "usage")
    const streamed = dataEvents(
      await (await postJson(url, chat("m", { stream: true, stream_options: { include_usage: true } }), {
        ...auth,
        "x-fake-usage": "none"
      })).text()
    )
    assert.isTrue(streamed.filter((e) => e !== "[DONE]").every((e) => !("usage" in JSON.parse(e))))
    const gemini = await (await postJson(`${server.url}/v1beta/models/gemini-nousage:generateContent?key=k`, {
      contents: [{ parts: [{ text: "hi" }] }]
    })).json()
    assert.notProperty(gemini, "usageMetadata")
  })

  it("streams 2000 chunks of 1 KB (x-fake-chunks / x-fake-chunk-bytes)", async () => {
    const res = await postJson(url, chat("m", { stream: true, stream_options: { include_usage: true } }), {
      ...auth,
      "x-fake-chunks": "2000",
      "x-fake-chunk-bytes": "1024"
    })
    const events = dataEvents(await res.text())
    assert.strictEqual(events[events.length - 1], "[DONE]")
    const content = openaiContent(events)
    assert.strictEqual(content.length, 2000)
    assert.isTrue(content.every((c) => c.length === 1024))
    const usage = JSON.parse(events[events.length - 2]).usage
    assert.strictEqual(usage.completion_tokens, 2000)
  })

  it("streams large Gemini and Anthropic answers via model-name tokens", async () => {
    const gemini = await postJson(
      `${server.url}/v1beta/models/gemini-chunks-300x100:streamGenerateContent?alt=sse&key=k`,
      {
        contents: [{ parts: [{ text: "hi" }] }]
      }
    )
    const g = dataEvents(await gemini.text(), "\r\n\r\n").map((e) => JSON.parse(e))
    assert.strictEqual(g.length, 300)
    assert.strictEqual(g.map((c) => c.candidates[0].content.parts[0].text).join("").length, 30_000)
    assert.strictEqual(g[299].candidates[0].finishReason, "STOP")

    const anthropic = await postJson(`${server.url}/v1/messages`, {
      model: "claude-chunks-300x100",
      max_tokens: 10,
      stream: true,
      messages: [{ role: "user", content: "hi" }]
    }, { "x-api-key": "k" })
    const deltas = namedEvents(await anthropic.text()).filter((e) => e.event === "content_block_delta")
    assert.strictEqual(deltas.length, 300)
  })

  it("x-fake-response-bytes gives a non-stream answer of that size, valid JSON", async () => {
    const body = await (await postJson(url, chat(), { ...auth, "x-fake-response-bytes": "100000" })).json()
    assert.strictEqual(body.choices[0].message.content.length, 100_000)
    assert.strictEqual(body.usage.completion_tokens, Math.ceil(100_000 / 1024))
    const anthropic = await (await postJson(`${server.url}/v1/messages`, {
      model: "claude-bytes-5000",
      max_tokens: 10,
      messages: [{ role: "user", content: "hi" }]
    }, { "x-api-key": "k" })).json()
    assert.strictEqual(anthropic.content[0].text.length, 5000)
  })

  it("records each request (method, path, query, headers, parsed body)", async () => {
    server.clearRequests()
    await (await postJson(`${server.url}/v1beta/models/gemini-2.5-flash:countTokens?key=k`, {
      contents: [{ parts: [{ text: "x" }] }]
    }, { "x-custom": "yes" })).text()
    assert.strictEqual(server.requests.length, 1)
    const r = server.requests[0]
    assert.strictEqual(r.method, "POST")
    assert.strictEqual(r.path, "/v1beta/models/gemini-2.5-flash:countTokens")
    assert.deepStrictEqual(r.query, { key: "k" })
    assert.strictEqual(r.headers["x-custom"], "yes")
    assert.deepStrictEqual(r.body, { contents: [{ parts: [{ text: "x" }] }] })
    assert.strictEqual(r.dialect, "gemini")
    assert.strictEqual(r.model, "gemini-2.5-flash")
  })

  it("keeps only the last maxRecordedRequests requests", async () => {
    const small = await startFakeUpstream({ maxRecordedRequests: 3 })
    try {
      for (let i = 0; i < 5; i++) await (await fetch(`${small.url}/health?i=${i}`)).text()
      assert.deepStrictEqual(small.requests.map((r) => r.query["i"]), ["2", "3", "4"])
    } finally {
      await small.close()
    }
  })
})

describe("lifecycle", () => {
  it("close() destroys open streams and refuses new connections", async () => {
    const server = await startFakeUpstream()
    const res = await postJson(`${server.url}/v1/chat/completions`, chat("m", { stream: true }), {
      ...auth,
      "x-fake-stall-after": "1"
    })
    const reading = readAll(res)
    await server.close()
    const { error } = await reading
    assert.isDefined(error)
    const refused = await fetch(`${server.url}/health`).then(() => "answered", (e: any) => e.cause?.code ?? "failed")
    assert.strictEqual(refused, "ECONNREFUSED")
  })

  it("FakeUpstream.scoped closes the server with the scope", async () => {
    const url = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const upstream = yield* FakeUpstream.scoped({ apiKey: "k" })
      const res = yield* Effect.promise(() =>
        fetch(`${upstream.url}/v1/models`, { headers: { authorization: "Bearer k" } })
      )
      assert.strictEqual(res.status, 200)
      return upstream.url
    })))
    const after = await fetch(`${url}/health`).then(() => "answered", () => "refused")
    assert.strictEqual(after, "refused")
  })

  it("parses listen addresses", () => {
    assert.deepStrictEqual(parseListenAddress("127.0.0.1:9001"), { host: "127.0.0.1", port: 9001 })
    assert.deepStrictEqual(parseListenAddress(":9001"), { host: "127.0.0.1", port: 9001 })
    assert.deepStrictEqual(parseListenAddress("9001"), { host: "127.0.0.1", port: 9001 })
    assert.deepStrictEqual(parseListenAddress("[::1]:80"), { host: "::1", port: 80 })
    assert.throws(() => parseListenAddress("localhost"))
  })

  it("runs from the CLI with --listen and --api-key", async () => {
    const cli = fileURLToPath(new URL("../src/cli.ts", import.meta.url))
    const child = spawn(process.execPath, [cli, "--listen", "127.0.0.1:0", "--api-key", "cli-key"], {
      stdio: ["ignore", "pipe", "inherit"]
    })
    try {
      let out = ""
      child.stdout.setEncoding("utf8")
      const base = await new Promise<string>((resolve, reject) => {
        child.stdout.on("data", (d: string) => {
          out += d
          const m = /listening on (http:\/\/\S+)/.exec(out)
          if (m) resolve(m[1])
        })
        child.once("exit", (code) => reject(new Error(`cli exited with ${code}: ${out}`)))
      })
      const bad = await postJson(`${base}/v1/chat/completions`, chat(), { authorization: "Bearer nope" })
      assert.strictEqual(bad.status, 401)
      const ok = await postJson(`${base}/v1/chat/completions`, chat(), { authorization: "Bearer cli-key" })
      assert.strictEqual(ok.status, 200)
    } finally {
      child.kill("SIGTERM")
      await once(child, "exit")
    }
  })
})

describe("runtime controls", () => {
  let server: FakeUpstreamServer
  beforeAll(async () => {
    server = await startFakeUpstream({ apiKey: "first" })
  })
  afterAll(() => server.close())
  const call = (key: string, extra: Record<string, string> = {}) =>
    postJson(`${server.url}/v1/chat/completions`, chat(), { authorization: `Bearer ${key}`, ...extra })

  it("setApiKey revokes and restores a key while the server runs", async () => {
    assert.strictEqual((await call("first")).status, 200)
    server.setApiKey("second")
    const refused = await call("first")
    assert.strictEqual(refused.status, 401)
    assert.strictEqual((await refused.json()).error.code, "invalid_api_key")
    assert.strictEqual((await call("second")).status, 200)
    server.setApiKey("first")
    assert.strictEqual((await call("first")).status, 200)
  })

  it("setControls applies a behaviour to every request until cleared; a request's own header wins", async () => {
    server.setControls({ fail: 500 })
    assert.strictEqual((await call("first")).status, 500)
    assert.strictEqual((await call("first", { "x-fake-fail": "429" })).status, 429)
    server.setControls({ cutAfter: 2 })
    const { error } = await readAll(
      await postJson(`${server.url}/v1/chat/completions`, chat("m", { stream: true }), {
        authorization: "Bearer first"
      })
    )
    assert.isDefined(error)
    server.setControls({})
    assert.strictEqual((await call("first")).status, 200)
  })

  it("the same controls over HTTP, for the command line", async () => {
    const set = await postJson(`${server.url}/__fake/controls`, { apiKey: "third", controls: { fail: 503 } })
    assert.strictEqual(set.status, 200)
    assert.strictEqual((await call("first")).status, 401)
    assert.strictEqual((await call("third")).status, 503)
    await postJson(`${server.url}/__fake/controls`, { apiKey: "first", controls: {} })
    assert.strictEqual((await call("first")).status, 200)
    const bad = await postJson(`${server.url}/__fake/controls`, "nope")
    assert.strictEqual(bad.status, 400)
  })
})
