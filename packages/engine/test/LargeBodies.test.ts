/**
 * A large request body (past the adapters' `EAGER_CHECK_BYTES`, as coding
 * agents send every turn) on the same-dialect path is scanned, not parsed:
 * what routing and billing need is read, the rest is forwarded as it came.
 * Through the web handler over the fake upstream, for OpenAI, Gemini,
 * Anthropic (Claude Code) and Responses (Codex CLI) clients:
 *
 * - the upstream gets the client's body with only the model replaced, and the
 *   call is charged as any other;
 * - a body malformed deep inside that the upstream refuses is answered with
 *   the error naming the field (as a small body is at once), costs nothing,
 *   and leaves a usage record of the refusal;
 * - on a translated path the same body is refused before any upstream is
 *   called, and so is a body JSON refuses deep inside (which the scan lets
 *   through), with the parser's words.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Money, type UsageLog } from "@modelgate/core"
import { type FakeUpstreamServer, startFakeUpstream } from "@modelgate/fake-upstream"
import { EAGER_CHECK_BYTES } from "@modelgate/openai-adapter/chat/Passthrough"
import { toWebHandler, type WebHandler } from "../src/host/WebHandler.ts"

const KEY = "sk-large-bodies-alice-0000000000"

let fake: FakeUpstreamServer
let gateway: WebHandler

beforeAll(async () => {
  fake = await startFakeUpstream()
  const priced = { input: 1, output: 2 }
  gateway = await toWebHandler({
    routing: { probe_interval_ms: 600_000 },
    channels: [
      {
        name: "openai",
        type: "openai",
        base_url: `${fake.url}/v1`,
        api_key: "sk-up",
        models: ["agent-openai", "refusing-openai", "translated-gemini"],
        model_map: { "agent-openai": "gpt-4o-mini", "refusing-openai": "gpt-fail-400" }
      },
      {
        name: "gemini",
        type: "gemini",
        base_url: fake.url,
        api_key: "g-up",
        models: ["agent-gemini", "refusing-gemini", "translated-openai"],
        model_map: { "agent-gemini": "gemini-2.5-flash", "refusing-gemini": "gemini-fail-400" }
      },
      {
        name: "edited-openai",
        type: "openai",
        base_url: `${fake.url}/v1`,
        api_key: "sk-up",
        models: ["edited-openai"],
        model_map: { "edited-openai": "gpt-4o-mini" },
        params: { overrides: { max_tokens: 8 } }
      },
      {
        name: "anthropic",
        type: "anthropic",
        base_url: fake.url,
        api_key: "a-up",
        models: ["agent-anthropic", "refusing-anthropic"],
        model_map: { "agent-anthropic": "claude-sonnet-4-5", "refusing-anthropic": "claude-fail-400" }
      },
      {
        name: "responses",
        type: "openai",
        base_url: `${fake.url}/v1`,
        api_key: "sk-up",
        responses: true,
        models: ["agent-responses", "refusing-responses"],
        model_map: { "agent-responses": "gpt-5", "refusing-responses": "gpt-fail-400" }
      }
    ],
    models: Object.fromEntries(
      [
        "agent-openai",
        "refusing-openai",
        "translated-gemini",
        "agent-gemini",
        "refusing-gemini",
        "translated-openai",
        "agent-anthropic",
        "refusing-anthropic",
        "agent-responses",
        "refusing-responses",
        "edited-openai"
      ].map((m) => [m, priced])
    ),
    users: [{ name: "alice", balance: 100, keys: [{ name: "main", secret: KEY }] }]
  })
})

afterAll(async () => {
  await gateway?.dispose()
  await fake?.close()
})

const history = (turns: number) =>
  Array.from(
    { length: turns },
    (_, i) => ({ i, text: `turn ${i}: ${"the quick brown fox jumps over the lazy dog ".repeat(20)}` })
  )

/** An OpenAI body of about 30 KB, and one more message at its end. */
const openaiBody = (model: string, last: Record<string, unknown>) =>
  JSON.stringify({
    model,
    messages: [...history(40).map(({ i, text }) => ({ role: i % 2 ? "assistant" : "user", content: text })), last],
    max_tokens: 16
  })

/** A Gemini body of about 30 KB, and one more turn at its end. */
const geminiBody = (last: Record<string, unknown>) =>
  JSON.stringify({
    contents: [...history(40).map(({ i, text }) => ({ role: i % 2 ? "model" : "user", parts: [{ text }] })), last]
  })

/** An Anthropic body of about 30 KB (Claude Code's shape), and one more turn at its end. */
const anthropicBody = (model: string, last: Record<string, unknown>) =>
  JSON.stringify({
    model,
    max_tokens: 16,
    system: [{ type: "text", text: "You are Claude Code." }],
    messages: [
      ...history(40).map(({ i, text }) => ({ role: i % 2 ? "assistant" : "user", content: [{ type: "text", text }] })),
      last
    ],
    context_management: { edits: [] }
  })

/** A Responses body of about 30 KB (Codex CLI's shape), and one more item at its end. */
const responsesBody = (model: string, last: Record<string, unknown>) =>
  JSON.stringify({
    model,
    instructions: "You are Codex.",
    input: [
      ...history(40).map(({ i, text }) => ({
        type: "message",
        role: i % 2 ? "assistant" : "user",
        content: [{ type: i % 2 ? "output_text" : "input_text", text }]
      })),
      last
    ],
    store: false,
    max_output_tokens: 16
  })

const anthropic = (body: string) =>
  gateway.handler(
    new Request("http://gateway.test/v1/messages", {
      method: "POST",
      headers: { "x-api-key": KEY, "content-type": "application/json" },
      body
    })
  )

const responses = (body: string) =>
  gateway.handler(
    new Request("http://gateway.test/v1/responses", {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body
    })
  )

/** A body with a misspelt literal deep inside (`"flag": tru`): the scan lets it through, JSON refuses it. */
const misspelt = (body: string) => body.replace("\"flag\":\"t\"", "\"flag\":tru")

const openai = (body: string) =>
  gateway.handler(
    new Request("http://gateway.test/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body
    })
  )

const gemini = (model: string, body: string) =>
  gateway.handler(
    new Request(`http://gateway.test/v1beta/models/${model}:generateContent`, {
      method: "POST",
      headers: { "x-goog-api-key": KEY, "content-type": "application/json" },
      body
    })
  )

const recordOf = async (response: Response): Promise<UsageLog.UsageRecord> => {
  const id = response.headers.get("x-request-id")!
  for (let i = 0; i < 200; i++) {
    const record = gateway.inspect!.usage().find((r) => r.requestId === id)
    if (record !== undefined) return record
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  throw new Error(`no usage record for ${id}`)
}

const balance = () => gateway.inspect!.balance("alice")!

describe("large bodies on the same-dialect path", () => {
  it("are forwarded with only the model replaced, and charged", async () => {
    const body = openaiBody("agent-openai", { role: "user", content: "and now?" })
    assert.isAbove(body.length, EAGER_CHECK_BYTES)
    fake.clearRequests()
    const before = balance()
    const response = await openai(body)
    assert.strictEqual(response.status, 200)
    await response.json()
    const sent = fake.requests.at(-1)!
    assert.deepStrictEqual(sent.body, { ...JSON.parse(body), model: "gpt-4o-mini" })
    const record = await recordOf(response)
    assert.isAbove(Number(record.costNanos), 0)
    assert.strictEqual(before - balance(), record.costNanos)

    const geminiText = geminiBody({ role: "user", parts: [{ text: "and now?" }] })
    const answered = await gemini("agent-gemini", geminiText)
    assert.strictEqual(answered.status, 200)
    await answered.json()
    assert.deepStrictEqual(fake.requests.at(-1)!.body, JSON.parse(geminiText))

    for (
      const [send, text, upstream] of [
        [anthropic, anthropicBody("agent-anthropic", { role: "user", content: "and now?" }), "claude-sonnet-4-5"],
        [responses, responsesBody("agent-responses", { role: "user", content: "and now?" }), "gpt-5"]
      ] as const
    ) {
      assert.isAbove(text.length, EAGER_CHECK_BYTES)
      const from = balance()
      const reply = await send(text)
      assert.strictEqual(reply.status, 200, upstream)
      await reply.json()
      assert.deepStrictEqual(
        fake.requests.at(-1)!.body,
        { ...JSON.parse(text), model: upstream },
        `${upstream}: the client's body, the model replaced`
      )
      const charged = await recordOf(reply)
      assert.isAbove(Number(charged.costNanos), 0)
      assert.strictEqual(from - balance(), charged.costNanos)
    }
  })

  it("malformed deep inside and refused upstream: the error names the field, and nothing is charged", async () => {
    const cases: ReadonlyArray<readonly [() => Promise<Response>, string, string]> = [
      [
        () => openai(openaiBody("refusing-openai", { role: "usr", content: "x" })),
        "messages[40].role",
        "got the string 'usr'"
      ],
      [
        () => gemini("refusing-gemini", geminiBody({ role: "user", parts: { text: "x" } })),
        "contents[40].parts",
        "array of parts"
      ],
      [
        () => anthropic(anthropicBody("refusing-anthropic", { role: "usr", content: "x" })),
        "messages[40].role",
        "must be 'user', 'assistant' or 'system'"
      ],
      [
        () => responses(misspelt(responsesBody("refusing-responses", { role: "user", content: "x", flag: "t" }))),
        "",
        "The request body is not valid JSON"
      ]
    ]
    for (const [send, param, fragment] of cases) {
      const before = balance()
      const response = await send()
      assert.strictEqual(response.status, 400, param)
      const text = await response.text()
      if (param !== "") assert.include(text, param)
      assert.include(text, fragment)
      const record = await recordOf(response)
      assert.strictEqual(record.status, 400)
      assert.strictEqual(record.errorCode, "InvalidRequest")
      assert.strictEqual(record.costNanos, 0n)
      assert.strictEqual(balance(), before)
      assert.strictEqual(
        Money.formatUsd(gateway.inspect!.spendable("alice")!),
        Money.formatUsd(before),
        "no hold is left behind"
      )
    }
  })

  it("well formed and refused upstream: the upstream's refusal stands", async () => {
    const response = await openai(openaiBody("refusing-openai", { role: "user", content: "fine" }))
    assert.strictEqual(response.status, 400)
    const error = (await response.json() as { error: { param?: string | null; message: string } }).error
    assert.notStrictEqual(error.param, "messages[40].role")
    assert.strictEqual((await recordOf(response)).costNanos, 0n)
    for (
      const send of [
        () => anthropic(anthropicBody("refusing-anthropic", { role: "user", content: "fine" })),
        () => responses(responsesBody("refusing-responses", { role: "user", content: "fine" }))
      ]
    ) {
      const refused = await send()
      assert.strictEqual(refused.status, 400)
      // The fake upstream's own words for a 400.
      assert.notInclude(await refused.text(), "must be")
      assert.strictEqual((await recordOf(refused)).costNanos, 0n)
    }
  })

  it("a channel's parameter edit applies to a large body", async () => {
    fake.clearRequests()
    const response = await openai(openaiBody("edited-openai", { role: "user", content: "and now?" }))
    assert.strictEqual(response.status, 200)
    await response.json()
    assert.strictEqual((fake.requests.at(-1)!.body as { max_tokens: number }).max_tokens, 8)
  })
})

describe("large bodies on a translated path", () => {
  it("are refused, naming the field, before any upstream is called", async () => {
    fake.clearRequests()
    const fromOpenAI = await openai(openaiBody("translated-openai", { role: "usr", content: "x" }))
    assert.strictEqual(fromOpenAI.status, 400)
    assert.include(await fromOpenAI.text(), "messages[40]")
    const fromGemini = await gemini("translated-gemini", geminiBody({ role: "user", parts: { text: "x" } }))
    assert.strictEqual(fromGemini.status, 400)
    assert.include(await fromGemini.text(), "contents[40].parts")
    const fromAnthropic = await anthropic(anthropicBody("translated-gemini", { role: "usr", content: "x" }))
    assert.strictEqual(fromAnthropic.status, 400)
    assert.include(await fromAnthropic.text(), "messages[40]")
    const fromResponses = await responses(
      responsesBody("translated-gemini", { type: "message", role: "usr", content: "x" })
    )
    assert.strictEqual(fromResponses.status, 400)
    assert.include(await fromResponses.text(), "input[40]")
    assert.strictEqual(fake.requests.length, 0)
  })

  it("JSON refused deep inside (which the scan lets through) is a 400 with the parser's words, not a 500", async () => {
    fake.clearRequests()
    const cases: ReadonlyArray<readonly [string, () => Promise<Response>]> = [
      ["openai", () => openai(misspelt(openaiBody("translated-openai", { role: "user", content: "x", flag: "t" })))],
      [
        "gemini",
        () => gemini("translated-gemini", misspelt(geminiBody({ role: "user", parts: [{ text: "x" }], flag: "t" })))
      ],
      [
        "anthropic",
        () => anthropic(misspelt(anthropicBody("translated-gemini", { role: "user", content: "x", flag: "t" })))
      ],
      [
        "responses",
        () => responses(misspelt(responsesBody("translated-gemini", { role: "user", content: "x", flag: "t" })))
      ],
      // The same dialect, to a channel whose parameters edit the body: the edit parses it.
      ["openai, edited", () => openai(misspelt(openaiBody("edited-openai", { role: "user", content: "x", flag: "t" })))]
    ]
    for (const [client, send] of cases) {
      const response = await send()
      assert.strictEqual(response.status, 400, client)
      assert.include(await response.text(), "The request body is not valid JSON", client)
    }
    assert.strictEqual(fake.requests.length, 0)
  })
})

describe("what sizes a hold, and repeated keys, whatever the body's size", () => {
  const post = (path: string, body: string, headers: Record<string, string>) =>
    gateway.handler(
      new Request(`http://gateway.test${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body
      })
    )
  const bearer = { authorization: `Bearer ${KEY}` }
  const google = { "x-goog-api-key": KEY }
  const claude = { "x-api-key": KEY }
  /** A body with `extra` (raw JSON text) added at the end of its top level. */
  const plus = (body: string, extra: string) => body.slice(0, -1) + "," + extra + "}"
  type Envelope = "openai" | "gemini" | "anthropic"
  /** The field the 400 names, read from its dialect's envelope (Gemini names it in its message). */
  const refusal = async (response: Response, envelope: Envelope): Promise<string> => {
    assert.strictEqual(response.status, 400)
    const body = await response.json() as {
      type?: string
      error: { message: string; param?: string | null; status?: string; type?: string }
    }
    if (envelope === "openai") return `${body.error.param} ${body.error.message}`
    if (envelope === "gemini") assert.strictEqual(body.error.status, "INVALID_ARGUMENT")
    else assert.deepStrictEqual([body.type, body.error.type], ["error", "invalid_request_error"])
    return body.error.message
  }

  it("a large body's hold-sizing field of the wrong type gets a 400 naming it, and reaches no upstream", async () => {
    fake.clearRequests()
    const before = balance()
    const cases: ReadonlyArray<readonly [Promise<Response>, Envelope, string]> = [
      [
        post(
          "/v1/chat/completions",
          plus(openaiBody("agent-openai", { role: "user", content: "x" }), "\"max_completion_tokens\":\"100000\""),
          bearer
        ),
        "openai",
        "max_completion_tokens"
      ],
      [
        post(
          "/v1beta/models/agent-gemini:generateContent",
          plus(
            geminiBody({ role: "user", parts: [{ text: "x" }] }),
            "\"generationConfig\":{\"maxOutputTokens\":\"9\"}"
          ),
          google
        ),
        "gemini",
        "generationConfig.maxOutputTokens"
      ],
      [
        post(
          "/v1/messages",
          anthropicBody("agent-anthropic", { role: "user", content: "x" }).replace(
            "\"max_tokens\":16",
            "\"max_tokens\":\"100000\""
          ),
          claude
        ),
        "anthropic",
        "max_tokens"
      ],
      [
        post(
          "/v1/responses",
          responsesBody("agent-responses", { role: "user", content: "x" }).replace(
            "\"max_output_tokens\":16",
            "\"max_output_tokens\":\"100000\""
          ),
          bearer
        ),
        "openai",
        "max_output_tokens"
      ]
    ]
    for (const [sent, envelope, field] of cases) {
      const response = await sent
      assert.include(await refusal(response, envelope), field)
      assert.strictEqual((await recordOf(response)).costNanos, 0n)
    }
    assert.strictEqual(fake.requests.length, 0)
    assert.strictEqual(balance(), before)
  })

  it("a body that sets a top-level key twice gets a 400 naming it at every front door, large or small", async () => {
    fake.clearRequests()
    const small = (fields: string) => `{${fields}}`
    const cases: ReadonlyArray<readonly [Promise<Response>, Envelope, string]> = [
      [
        post(
          "/v1/chat/completions",
          plus(openaiBody("agent-openai", { role: "user", content: "x" }), "\"model\":\"vip-model\""),
          bearer
        ),
        "openai",
        "model"
      ],
      [
        post(
          "/v1/chat/completions",
          small("\"model\":\"agent-openai\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"model\":\"vip\""),
          bearer
        ),
        "openai",
        "model"
      ],
      [
        post("/v1/embeddings", small("\"model\":\"agent-openai\",\"input\":\"x\",\"model\":\"vip\""), bearer),
        "openai",
        "model"
      ],
      [
        post(
          "/v1/responses",
          plus(responsesBody("agent-responses", { role: "user", content: "x" }), "\"store\":true"),
          bearer
        ),
        "openai",
        "store"
      ],
      [
        post(
          "/v1beta/models/agent-gemini:generateContent",
          plus(
            geminiBody({ role: "user", parts: [{ text: "x" }] }),
            "\"generationConfig\":{\"maxOutputTokens\":1},\"generation_config\":{\"maxOutputTokens\":100000}"
          ),
          google
        ),
        "gemini",
        "generation_config"
      ],
      [
        post(
          "/v1beta/models/agent-gemini:countTokens",
          small("\"contents\":[{\"parts\":[{\"text\":\"x\"}]}],\"contents\":[]"),
          google
        ),
        "gemini",
        "contents"
      ],
      [
        post(
          "/v1beta/models/agent-gemini:embedContent",
          small("\"content\":{\"parts\":[{\"text\":\"x\"}]},\"content\":{\"parts\":[]}"),
          google
        ),
        "gemini",
        "content"
      ],
      [
        post(
          "/v1/messages",
          plus(anthropicBody("agent-anthropic", { role: "user", content: "x" }), "\"model\":\"vip\""),
          claude
        ),
        "anthropic",
        "model"
      ],
      [
        post(
          "/v1/messages/count_tokens",
          small("\"model\":\"agent-anthropic\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"model\":\"vip\""),
          claude
        ),
        "anthropic",
        "model"
      ]
    ]
    for (const [sent, envelope, key] of cases) {
      const said = await refusal(await sent, envelope)
      assert.include(said, `'${key}' more than once`)
    }
    assert.strictEqual(fake.requests.length, 0)
  })
})
