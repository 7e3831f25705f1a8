/**
 * The Bedrock fake, held to AWS's rules by the gateway's own pieces: requests
 * signed with `@modelgate/bedrock-adapter`'s signer (AWS's `@smithy/signature-v4`),
 * answers read with its decoders and streams with its event-stream codec.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Embeddings, Endpoint, ErrorEnvelope, Request, Response, Signer, Stream } from "@modelgate/bedrock-adapter"
import { type FakeUpstreamServer, startFakeUpstream, TEST_API_KEY, TEST_CREDENTIALS } from "@modelgate/fake-upstream"
import { Effect } from "effect"

const MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
let upstream: FakeUpstreamServer
let now = Date.now()
const temporary = {
  accessKeyId: "ASIAFAKETEMPORARY001",
  secretAccessKey: "temporary-secret",
  sessionToken: "FQoGZXIvYXdzEtemporary"
}

beforeAll(async () => {
  upstream = await startFakeUpstream({
    clock: () => now,
    bedrock: {
      region: "us-east-1",
      credentials: [TEST_CREDENTIALS, { ...temporary, expiresAt: Date.now() + 3_600_000 }],
      apiKeys: [TEST_API_KEY]
    }
  })
})
afterAll(() => upstream.close())

const options = (credentials: Signer.AwsCredentials = TEST_CREDENTIALS, signedAt = now) => ({
  credentials,
  region: "us-east-1",
  now: new Date(signedAt)
})

const send = async (
  url: string,
  body: string,
  signed: Record<string, string>,
  extra: Record<string, string> = {}
): Promise<globalThis.Response> => {
  const { host: _, ...headers } = signed
  return fetch(url, { method: "POST", headers: { ...headers, ...extra }, body })
}

const converse = async (
  request: object,
  opts: {
    stream?: boolean
    credentials?: Signer.AwsCredentials
    signedAt?: number
    extra?: Record<string, string>
    model?: string
  } = {}
) => {
  const url = Endpoint.converseUrl(upstream.url, opts.model ?? MODEL, opts.stream === true)
  const body = JSON.stringify(request)
  const signed = await Signer.sign(
    { method: "POST", url, headers: { "content-type": "application/json" }, body },
    options(opts.credentials, opts.signedAt)
  )
  return send(url, body, signed, opts.extra)
}

const hello = {
  messages: [{ role: "user", content: [{ text: "Hello Bedrock" }] }],
  inferenceConfig: { maxTokens: 256 }
}

const refusal = async (response: globalThis.Response) => ({
  status: response.status,
  type: response.headers.get("x-amzn-errortype")?.split(":")[0],
  body: await response.json() as Record<string, string>
})

describe("the Bedrock fake", () => {
  it("answers a signed Converse request, its model id with a ':' encoded in the path", async () => {
    const response = await converse(hello)
    assert.strictEqual(response.status, 200)
    assert.isString(response.headers.get("x-amzn-requestid"))
    const answer = await Effect.runPromise(
      Response.decodeResponse(await response.json(), { id: "c1", model: MODEL, created: 0 })
    )
    const text = answer.choices[0]!.content[0]
    assert.strictEqual(text?.type, "text")
    assert.include((text as { text: string }).text, `model ${MODEL}). You said: Hello Bedrock`)
    assert.isAbove(answer.usage!.promptTokens, 0)
    assert.strictEqual(upstream.requests.at(-1)!.path, "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse")
  })

  it("streams ConverseStream events as event-stream frames the gateway's codec reads", async () => {
    const response = await converse(hello, { stream: true })
    assert.strictEqual(response.status, 200)
    assert.strictEqual(response.headers.get("content-type"), "application/vnd.amazon.eventstream")
    const bytes = new Uint8Array(await response.arrayBuffer())
    const decoder = new Stream.ByteDecoder({ id: "c2", model: MODEL, created: 0 })
    // Read as the network may deliver it: in 7-byte pieces.
    const events = []
    for (let at = 0; at < bytes.length; at += 7) events.push(...decoder.push(bytes.subarray(at, at + 7)))
    events.push(...decoder.end())
    const text = events.flatMap((e) => e.type === "text" ? [e.text] : []).join("")
    assert.include(text, "You said: Hello Bedrock")
    assert.deepStrictEqual(events.filter((e) => e.type === "finish"), [{ type: "finish", index: 0, reason: "stop" }])
    const usage = events.find((e) => e.type === "usage")
    assert.isDefined(usage)
  })

  it("calls a tool and reads its result, with the gateway's own Converse encoding", async () => {
    const tools = [{ name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } }]
    const first = await Effect.runPromise(Request.encodeRequest({
      model: "m",
      messages: [{ role: "user", content: [{ type: "text", text: "Weather in Paris?" }] }],
      tools,
      stream: false
    }, MODEL))
    const response = await converse(first, { model: `${MODEL}-tools` })
    const answer = await Effect.runPromise(
      Response.decodeResponse(await response.json(), { id: "c3", model: MODEL, created: 0 })
    )
    assert.strictEqual(answer.choices[0]!.finishReason, "tool_calls")
    const call = answer.choices[0]!.content.find((p) => p.type === "tool_call")!
    assert.strictEqual(call.type === "tool_call" && call.name, "get_weather")
    const second = await Effect.runPromise(Request.encodeRequest({
      model: "m",
      messages: [
        { role: "user", content: [{ type: "text", text: "Weather in Paris?" }] },
        { role: "assistant", content: [call] },
        { role: "tool", content: [{ type: "tool_result", callId: (call as { id: string }).id, content: "18 degrees" }] }
      ],
      tools,
      stream: false
    }, MODEL))
    const follow = await converse(second, { model: `${MODEL}-tools` })
    const final = await follow.json() as { output: { message: { content: Array<{ text?: string }> } } }
    assert.include(final.output.message.content[0]!.text!, "The tool get_weather returned: 18 degrees")
  })

  it("returns Claude's reasoning as signed reasoningContent when thinking is asked for", async () => {
    const body = await Effect.runPromise(Request.encodeRequest({
      model: "m",
      messages: [{ role: "user", content: [{ type: "text", text: "Think" }] }],
      maxOutputTokens: 4096,
      reasoning: { budgetTokens: 2048 },
      stream: false
    }, MODEL))
    const answer = await Effect.runPromise(
      Response.decodeResponse(await (await converse(body)).json(), { id: "c4", model: MODEL, created: 0 })
    )
    const thinking = answer.choices[0]!.content[0]!
    assert.strictEqual(thinking.type, "thinking")
    assert.match((thinking as { signature?: string }).signature!, /^bedrock:fake-signature-/)
  })

  it("refuses a signature made with the wrong secret, as AWS does", async () => {
    const response = await converse(hello, { credentials: { ...TEST_CREDENTIALS, secretAccessKey: "wrong" } })
    const { body, status, type } = await refusal(response)
    assert.strictEqual(status, 403)
    assert.strictEqual(type, "InvalidSignatureException")
    assert.match(body.message!, /^The request signature we calculated does not match/)
    const error = ErrorEnvelope.classifyUpstream(403, JSON.stringify(body), { "x-amzn-errortype": type! })
    assert.isTrue((error as { credentialsRefused?: boolean }).credentialsRefused)
  })

  it("refuses a body changed after it was signed", async () => {
    const url = Endpoint.converseUrl(upstream.url, MODEL, false)
    const body = JSON.stringify(hello)
    const signed = await Signer.sign(
      { method: "POST", url, headers: { "content-type": "application/json" }, body },
      options()
    )
    const response = await send(url, body.replace("Hello", "Hullo"), signed)
    assert.strictEqual((await refusal(response)).type, "InvalidSignatureException")
  })

  it("refuses a signed header sent otherwise", async () => {
    const url = Endpoint.converseUrl(upstream.url, MODEL, false)
    const body = JSON.stringify(hello)
    const signed = await Signer.sign(
      {
        method: "POST",
        url,
        headers: { "content-type": "application/json", "x-amzn-bedrock-trace": "DISABLED" },
        body
      },
      options()
    )
    const response = await send(url, body, signed, { "x-amzn-bedrock-trace": "ENABLED" })
    assert.strictEqual((await refusal(response)).type, "InvalidSignatureException")
  })

  it("refuses an unknown access key, and a signature more than five minutes old", async () => {
    const unknown = await refusal(
      await converse(hello, { credentials: { accessKeyId: "AKIAUNKNOWN", secretAccessKey: "x" } })
    )
    assert.deepStrictEqual(unknown, {
      status: 403,
      type: "UnrecognizedClientException",
      body: { message: "The security token included in the request is invalid." }
    })
    const old = await refusal(await converse(hello, { signedAt: now - 6 * 60_000 }))
    assert.strictEqual(old.type, "InvalidSignatureException")
    assert.match(old.body.message!, /^Signature expired: /)
  })

  it("takes temporary credentials with their session token, and refuses them once expired", async () => {
    assert.strictEqual((await converse(hello, { credentials: temporary })).status, 200)
    const without = await refusal(await converse(hello, { credentials: { ...temporary, sessionToken: undefined } }))
    assert.strictEqual(without.type, "UnrecognizedClientException")
    const saved = now
    now += 2 * 3_600_000
    try {
      const expired = await refusal(await converse(hello, { credentials: temporary }))
      assert.deepStrictEqual(expired.type, "ExpiredTokenException")
    } finally {
      now = saved
    }
  })

  it("takes a Bedrock API key as a bearer token, and refuses a wrong one", async () => {
    const url = Endpoint.converseUrl(upstream.url, MODEL, false)
    const body = JSON.stringify(hello)
    const ok = await fetch(url, {
      method: "POST",
      headers: Signer.bearer({ "content-type": "application/json" }, TEST_API_KEY),
      body
    })
    assert.strictEqual(ok.status, 200)
    const wrong = await fetch(url, {
      method: "POST",
      headers: Signer.bearer({ "content-type": "application/json" }, "ABSKwrong"),
      body
    })
    assert.deepStrictEqual(await refusal(wrong), {
      status: 403,
      type: undefined,
      body: { Message: "Authentication failed: Please make sure your API Key is valid." }
    })
  })

  it("validates the conversation as Bedrock does", async () => {
    const noTools = await refusal(
      await converse({
        messages: [
          { role: "user", content: [{ text: "hi" }] },
          { role: "assistant", content: [{ toolUse: { toolUseId: "t1", name: "f", input: {} } }] },
          { role: "user", content: [{ toolResult: { toolUseId: "t1", content: [{ text: "ok" }] } }] }
        ]
      })
    )
    assert.deepStrictEqual(noTools, {
      status: 400,
      type: "ValidationException",
      body: { message: "The toolConfig field must be defined when using toolUse and toolResult content blocks." }
    })
    const blank = await refusal(await converse({ messages: [{ role: "user", content: [{ text: " " }] }] }))
    assert.match(blank.body.message!, /is blank/)
    const error = ErrorEnvelope.classifyUpstream(400, JSON.stringify(blank.body), { "x-amzn-errortype": blank.type! })
    assert.strictEqual(error._tag, "UpstreamRejected")
  })

  it("throttles with ThrottlingException, and fails a stream with an in-stream exception after its first text", async () => {
    const throttled = await converse(hello, { extra: { "x-fake-fail": "429" } })
    assert.strictEqual(throttled.status, 429)
    const error = ErrorEnvelope.classifyUpstream(429, await throttled.text(), Object.fromEntries(throttled.headers))
    assert.strictEqual(error._tag, "UpstreamRateLimited")
    const stream = await converse(hello, { stream: true, extra: { "x-fake-stream-exception": "throttlingException" } })
    const decoder = new Stream.ByteDecoder({ id: "c5", model: MODEL, created: 0 })
    const events = decoder.push(new Uint8Array(await stream.arrayBuffer()))
    assert.isTrue(events.some((e) => e.type === "text"))
    assert.throws(() => decoder.end(), /rate-limiting/)
  })

  it("lists its foundation models to a signed GET (the probe's model-free check)", async () => {
    const url = Endpoint.foundationModelsUrl(upstream.url)
    const signed = await Signer.sign({ method: "GET", url, headers: {}, body: "" }, options())
    const { host: _, ...headers } = signed
    const response = await fetch(url, { headers })
    assert.strictEqual(response.status, 200)
    const page = await Effect.runPromise(Endpoint.decodeFoundationModels(await response.text(), "bedrock"))
    assert.isTrue(page.models.some((m) => m.id === "amazon.nova-pro-v1:0"))
    assert.isTrue(page.models.some((m) => m.embedding === true))
    const unsigned = await fetch(url)
    assert.strictEqual((await refusal(unsigned)).type, "MissingAuthenticationTokenException")
  })

  it("counts a Converse request's tokens for a bare model id, and refuses an inference profile's", async () => {
    const request = await Effect.runPromise(Request.encodeRequest({
      model: "m",
      system: ["Be brief"],
      messages: [{ role: "user", content: [{ type: "text", text: "How many tokens is this?" }] }],
      stream: false
    }, "anthropic.claude-haiku-4-5-20251001-v1:0"))
    const post = async (model: string) => {
      // By hand: the gateway's `countTokensUrl` asks about a profile's foundation model instead.
      const url = `${upstream.url}/model/${Endpoint.encodeSegment(model)}/count-tokens`
      const body = Endpoint.countTokensBody(request)
      const signed = await Signer.sign(
        { method: "POST", url, headers: { "content-type": "application/json" }, body },
        options()
      )
      return send(url, body, signed)
    }
    const counted = await (await post("anthropic.claude-haiku-4-5-20251001-v1:0")).text()
    assert.isTrue(Endpoint.isCountAnswer(counted))
    const profile = await refusal(await post(MODEL))
    assert.deepStrictEqual(profile.type, "ValidationException")
    assert.strictEqual(
      Endpoint.countTokensUrl(upstream.url, MODEL),
      `${upstream.url}/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/count-tokens`
    )
  })

  it("embeds through InvokeModel with Titan's and Cohere's own bodies, signed, validated as Bedrock does", async () => {
    const invoke = async (model: string, body: string, credentials: Signer.AwsCredentials = TEST_CREDENTIALS) => {
      const url = Embeddings.invokeUrl(upstream.url, model)
      const signed = await Signer.sign(
        { method: "POST", url, headers: { "content-type": "application/json" }, body },
        options(credentials)
      )
      return send(url, body, signed)
    }
    const titan = await Effect.runPromise(
      Embeddings.encode({ model: "m", inputs: ["Hello Titan"], dimensions: 512 }, "amazon.titan-embed-text-v2:0")
    )
    const answer = await invoke("amazon.titan-embed-text-v2:0", titan)
    assert.strictEqual(answer.status, 200)
    const headers = Object.fromEntries(answer.headers)
    const decoded = await Effect.runPromise(Embeddings.decode(await answer.text(), 1, "bedrock", headers))
    assert.strictEqual(decoded.vectors[0]!.length, 512)
    assert.strictEqual(decoded.promptTokens, 3)
    const cohere = await Effect.runPromise(
      Embeddings.encode({ model: "m", inputs: ["one", "two"] }, "cohere.embed-english-v3")
    )
    const cohereAnswer = await invoke("cohere.embed-english-v3", cohere)
    assert.strictEqual(cohereAnswer.headers.get(Embeddings.INPUT_TOKEN_COUNT_HEADER), "2")
    const cohereDecoded = await Effect.runPromise(
      Embeddings.decode(await cohereAnswer.text(), 2, "bedrock", Object.fromEntries(cohereAnswer.headers))
    )
    assert.deepStrictEqual([cohereDecoded.vectors.length, cohereDecoded.promptTokens], [2, 2])

    const wrongSecret = await refusal(
      await invoke("amazon.titan-embed-text-v2:0", titan, { ...TEST_CREDENTIALS, secretAccessKey: "wrong" })
    )
    assert.strictEqual(wrongSecret.type, "InvalidSignatureException")
    for (
      const [model, body, words] of [
        ["amazon.titan-embed-text-v2:0", "{\"texts\":[\"a\"]}", "#: extraneous key [texts] is not permitted"],
        ["amazon.titan-embed-text-v2:0", "{\"inputText\":\"a\",\"dimensions\":300}", "#/dimensions: 300"],
        ["amazon.titan-embed-text-v2:0", "{\"inputText\":\"\"}", "expected minLength: 1"],
        ["cohere.embed-english-v3", "{\"texts\":[\"a\"]}", "required key [input_type] not found"],
        ["amazon.nova-pro-v1:0", "{\"inputText\":\"a\"}", "required key [messages] not found"]
      ] as const
    ) {
      const refused = await refusal(await invoke(model, body))
      assert.deepStrictEqual([refused.status, refused.type], [400, "ValidationException"])
      assert.include(refused.body.message, words)
    }
  })

  it("the gateway's signer and the fake agree on query strings too", async () => {
    const url = `${Endpoint.foundationModelsUrl(upstream.url)}?byProvider=Amazon&byOutputModality=TEXT`
    const signed = await Signer.sign({ method: "GET", url, headers: {}, body: "" }, options())
    const { host: _, ...headers } = signed
    assert.strictEqual((await fetch(url, { headers })).status, 200)
  })
})
