/**
 * End to end with the official `openai` SDK against the real server and the
 * fake upstream: the models list per key, chat with and without streaming,
 * usage on request, and every error row of the contract surfacing as the SDK's
 * matching error class with the right status and code.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { DatabaseSync } from "node:sqlite"
import OpenAI from "openai"
import {
  DISABLED_KEY,
  EXPIRED_KEY,
  KEY,
  NARROW_KEY,
  startGateway,
  type TestGateway,
  VIP_KEY
} from "./support/Gateway.ts"

let gateway: TestGateway
const sdk = (apiKey: string, baseURL = `${gateway.url}/v1`) => new OpenAI({ apiKey, baseURL, maxRetries: 0 })

beforeAll(async () => {
  gateway = await startGateway()
})
afterAll(async () => {
  await gateway.close()
})

const expectError = async (
  call: () => Promise<unknown>,
  expected: {
    readonly status: number
    readonly code: string
    readonly Class: Parameters<typeof assert.instanceOf>[1]
    readonly message?: RegExp
  }
) => {
  try {
    await call()
  } catch (error) {
    assert.instanceOf(error, expected.Class)
    const apiError = error as InstanceType<typeof OpenAI.APIError>
    assert.strictEqual(apiError.status, expected.status)
    assert.strictEqual(apiError.code, expected.code)
    if (expected.message !== undefined) assert.match(apiError.message, expected.message)
    return apiError
  }
  assert.fail(`expected ${expected.code}`)
}

const hello = [{ role: "user" as const, content: "Hello!" }]

describe("openai SDK", () => {
  it("lists exactly the models a key may call", async () => {
    const ids = (await sdk(KEY).models.list()).data.map((m) => m.id).sort()
    // "unpriced-model" is served but has no price, so a call is refused (model_unpriced) and it is not offered.
    assert.deepStrictEqual(ids, [
      "big-stream",
      "broken-model",
      "cut-stream",
      "free-model",
      "gemini-2.5-flash",
      "gemini-tool-model",
      "gpt-4o",
      "gpt-4o-mini",
      "rejecting-model",
      "stall-stream",
      "tool-model"
    ])
    assert.deepStrictEqual((await sdk(NARROW_KEY).models.list()).data.map((m) => m.id), ["gpt-4o-mini"])
    assert.deepStrictEqual((await sdk(VIP_KEY).models.list()).data.map((m) => m.id).sort(), [
      "gemini-2.5-flash",
      "gemini-tool-model",
      "vip-model"
    ])
    assert.strictEqual((await sdk(KEY).models.retrieve("gpt-4o")).id, "gpt-4o")
  })

  it("chats without streaming, with the public model name and usage", async () => {
    const completion = await sdk(KEY).chat.completions.create({ model: "gpt-4o", messages: hello })
    assert.strictEqual(completion.model, "gpt-4o")
    assert.match(completion.choices[0]!.message.content ?? "", /Hello from fake-upstream/)
    assert.isAbove(completion.usage!.total_tokens, 0)
    // the upstream saw the mapped name
    const sent = gateway.upstream.requests.at(-1)!
    assert.strictEqual((sent.body as { model: string }).model, "gpt-4o-2024-08-06")
  })

  it("works with a base address that lacks /v1 when the client appends the full path", async () => {
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-4o-mini", messages: hello })
    })
    assert.strictEqual(response.status, 200)
  })

  it("streams, without a usage chunk unless asked", async () => {
    const stream = await sdk(KEY).chat.completions.create({ model: "gpt-4o-mini", messages: hello, stream: true })
    let text = ""
    let usageChunks = 0
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? ""
      if (chunk.usage) usageChunks++
    }
    assert.match(text, /Hello from fake-upstream/)
    assert.strictEqual(usageChunks, 0)
    // the gateway asked the upstream for usage anyway, to bill it
    const sent = gateway.upstream.requests.at(-1)!.body as { stream_options?: { include_usage?: boolean } }
    assert.strictEqual(sent.stream_options?.include_usage, true)
  })

  it("streams with the usage chunk when asked", async () => {
    const stream = await sdk(KEY).chat.completions.create({
      model: "gpt-4o-mini",
      messages: hello,
      stream: true,
      stream_options: { include_usage: true }
    })
    let usage: OpenAI.CompletionUsage | undefined
    for await (const chunk of stream) if (chunk.usage) usage = chunk.usage
    assert.isDefined(usage)
    assert.isAbove(usage!.completion_tokens, 0)
  })

  it("cancels the upstream call when the client aborts a stream mid-way, and settles what was sent", async () => {
    // The upstream sends two chunks and then nothing, ever: only the gateway's cancellation can close its stream
    // (the channel's idle timeout is two minutes).
    const before = gateway.upstream.clientClosedStreams()
    const stream = await sdk(KEY).chat.completions.create({ model: "stall-stream", messages: hello, stream: true })
    let text = ""
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? ""
      if (text.length > 0) break // leaving the loop aborts the SDK's request
    }
    assert.isAbove(text.length, 0)
    for (let i = 0; i < 100 && gateway.upstream.clientClosedStreams() === before; i++) {
      await new Promise((r) => setTimeout(r, 50))
    }
    assert.strictEqual(
      gateway.upstream.clientClosedStreams(),
      before + 1,
      "the upstream saw its stream closed before the end"
    )

    const db = new DatabaseSync(gateway.database.slice("sqlite:".length), { readOnly: true })
    try {
      const settled = () =>
        db.prepare("SELECT status, error_code, completion_tokens FROM usage_records WHERE model = 'stall-stream'").all()
      for (let i = 0; i < 50 && settled().length === 0; i++) await new Promise((r) => setTimeout(r, 50))
      const rows = settled()
      assert.strictEqual(rows.length, 1)
      assert.deepInclude(rows[0], { status: 499, error_code: "ClientClosed" })
      assert.isAbove(Number(rows[0]!.completion_tokens), 0)
    } finally {
      db.close()
    }
  })

  it("reports each admission failure as the SDK's error class", async () => {
    const keyless = new OpenAI({
      apiKey: "unused",
      baseURL: `${gateway.url}/v1`,
      maxRetries: 0,
      defaultHeaders: { Authorization: null }
    })
    await expectError(() => keyless.models.list(), {
      status: 401,
      code: "missing_api_key",
      Class: OpenAI.AuthenticationError
    })
    await expectError(() => sdk("sk-not-a-real-key-at-all").models.list(), {
      status: 401,
      code: "invalid_api_key",
      Class: OpenAI.AuthenticationError
    })
    await expectError(() => sdk(DISABLED_KEY).models.list(), {
      status: 401,
      code: "key_disabled",
      Class: OpenAI.AuthenticationError
    })
    await expectError(() => sdk(EXPIRED_KEY).models.list(), {
      status: 401,
      code: "key_expired",
      Class: OpenAI.AuthenticationError
    })
    await expectError(() => sdk(KEY).chat.completions.create({ model: "no-such-model", messages: hello }), {
      status: 404,
      code: "model_not_found",
      Class: OpenAI.NotFoundError
    })
    await expectError(() => sdk(NARROW_KEY).chat.completions.create({ model: "gpt-4o", messages: hello }), {
      status: 403,
      code: "model_not_allowed",
      Class: OpenAI.PermissionDeniedError
    })
    await expectError(() => sdk(KEY).chat.completions.create({ model: "vip-model", messages: hello }), {
      status: 403,
      code: "model_not_in_group",
      Class: OpenAI.PermissionDeniedError
    })
    await expectError(() => sdk(KEY).chat.completions.create({ model: "unpriced-model", messages: hello }), {
      status: 403,
      code: "model_unpriced",
      Class: OpenAI.PermissionDeniedError
    })
  })

  it("rejects malformed bodies naming the field", async () => {
    const error = await expectError(
      () => sdk(KEY).chat.completions.create({ model: "gpt-4o-mini" } as never),
      { status: 400, code: "invalid_request", Class: OpenAI.BadRequestError }
    )
    assert.match(error.message, /messages/)
    const raw = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: "{\"model\": \"gpt-4o-mini\", \"messages\": ["
    })
    assert.strictEqual(raw.status, 400)
    assert.match((await raw.json() as { error: { message: string } }).error.message, /not valid JSON/)
  })

  it("rejects wrong field types naming the field, without forwarding the body", async () => {
    const before = gateway.upstream.requests.length
    const role = await expectError(
      () =>
        sdk(KEY).chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: 5, content: { x: 1 } }] } as never),
      {
        status: 400,
        code: "invalid_request",
        Class: OpenAI.BadRequestError,
        message: /'messages\[0\]\.role': expected one of 'system'/
      }
    )
    assert.strictEqual(role.param, "messages[0].role")
    const temperature = await expectError(
      () =>
        sdk(KEY).chat.completions.create(
          { model: "gpt-4o-mini", messages: hello, stream: true, temperature: "hot" } as never
        ),
      { status: 400, code: "invalid_request", Class: OpenAI.BadRequestError, message: /expected a number/ }
    )
    assert.strictEqual(temperature.param, "temperature")
    const part = await expectError(
      () =>
        sdk(KEY).chat.completions.create(
          { model: "gpt-4o", messages: [{ role: "user", content: [{ type: "image_url", image_url: {} }] }] } as never
        ),
      { status: 400, code: "invalid_request", Class: OpenAI.BadRequestError }
    )
    assert.strictEqual(part.param, "messages[0].content[0].image_url.url")
    assert.strictEqual(gateway.upstream.requests.length, before, "nothing reached the upstream")
  })

  it("refuses bodies over the limit with 413", async () => {
    const big = "x".repeat(11 * 1024 * 1024)
    await expectError(
      () => sdk(KEY).chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: big }] }),
      {
        status: 413,
        code: "request_too_large",
        Class: OpenAI.APIError
      }
    )
  })

  it("passes upstream failures on in our envelope", async () => {
    const client = sdk(KEY)
    await expectError(
      () => client.chat.completions.create({ model: "broken-model", messages: hello }),
      { status: 502, code: "upstream_error", Class: OpenAI.InternalServerError }
    )
    // An upstream 4xx keeps the upstream's status and carries its message, in our envelope.
    await expectError(
      () => client.chat.completions.create({ model: "rejecting-model", messages: hello }),
      {
        status: 400,
        code: "upstream_rejected",
        Class: OpenAI.BadRequestError,
        message: /fake-upstream: simulated HTTP 400/
      }
    )
  })

  it("a 502 after failover is not retried by the SDK (its default retries on): the gateway already tried every channel", async () => {
    let requests = 0
    const client = new OpenAI({
      apiKey: KEY,
      baseURL: `${gateway.url}/v1`,
      fetch: (input, init) => {
        requests++
        return fetch(input, init)
      }
    })
    const error = await expectError(
      () => client.chat.completions.create({ model: "broken-model", messages: hello }),
      { status: 502, code: "upstream_error", Class: OpenAI.InternalServerError }
    )
    assert.strictEqual(error.headers?.get("x-should-retry"), "false")
    assert.strictEqual(requests, 1, "one request: without x-should-retry: false the SDK sends three")
  })

  it("answers wrong paths with a JSON 404 that names the fix, and wrong methods with 405", async () => {
    await expectError(() => sdk(KEY, `${gateway.url}/v1/v1`).models.list(), {
      status: 404,
      code: "not_found",
      Class: OpenAI.NotFoundError,
      message: /already ends in \/v1/
    })
    await expectError(() => sdk(KEY, gateway.url).chat.completions.create({ model: "gpt-4o-mini", messages: hello }), {
      status: 404,
      code: "not_found",
      Class: OpenAI.NotFoundError,
      message: /missing \/v1/
    })
    await expectError(() => sdk(KEY, gateway.url).models.list(), {
      status: 404,
      code: "not_found",
      Class: OpenAI.NotFoundError,
      message: /missing \/v1/
    })
    const response = await fetch(`${gateway.url}/v1/chat/completions`, { headers: { authorization: `Bearer ${KEY}` } })
    assert.strictEqual(response.status, 405)
    assert.strictEqual(response.headers.get("allow"), "POST")
    assert.strictEqual((await response.json() as { error: { code: string } }).error.code, "method_not_allowed")
  })

  it("tells a key's owner their balance as an exact decimal", async () => {
    const me = await (await fetch(`${gateway.url}/api/me`, { headers: { authorization: `Bearer ${KEY}` } }))
      .json() as Record<string, unknown>
    assert.strictEqual(me.user, "alice")
    assert.strictEqual(me.group, "default")
    assert.match(me.balance_usd as string, /^\d+\.\d{2,9}$/)
    assert.isBelow(Number(me.balance_usd), 10)
  })
})
