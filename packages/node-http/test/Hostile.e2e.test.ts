/**
 * A hostile upstream against the real server (the fake upstream's
 * misbehaviours):
 *
 * - one request that makes the provider answer 403 about its own content (a
 *   Gemini `fileData` link to another project's file), repeated, is the
 *   caller's 4xx: no failover, every key stays enabled, other users' calls
 *   work; a real refusal of a key (401) is confirmed by a probe before the key
 *   is disabled, and neither the client, the key's health reason nor the
 *   console's Test result carries the channel's secrets the upstream echoed;
 * - a model one channel's organisation may not use (403 to every request for
 *   it) is served by its other channel, and the admin API's channel health
 *   lists it as kept off;
 * - memory stays flat: a 200 MB non-stream answer ends at `max_answer_bytes`
 *   with a 502, a 300 MB stream line ends the stream at `max_event_bytes`
 *   with an in-band error (retained heap measured after full collections, as
 *   `Streaming.e2e.test.ts` does; the root vitest config runs node-http with
 *   `--expose-gc`).
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import type { ConfigFile } from "../src/ConfigFile.ts"
import { startGateway, type TestGateway } from "./support/Gateway.ts"

const MALLORY = "sk-hostile-mallory-00000000000000000000"
const BOB = "sk-hostile-bob-0000000000000000000000000"
const ADMIN = "sk-hostile-admin-000000000000000000000000"
const ECHO_KEY = "sk-echo-upstream-secret-0123456789"
const TENANT_SECRET = "tenant-secret-value-424242"

const config = (upstream: string): ConfigFile => ({
  listen: "127.0.0.1:0",
  log_level: "error",
  routing: { probe_interval_ms: 60_000 },
  channels: [
    {
      name: "shared",
      type: "gemini",
      base_url: upstream,
      api_keys: ["g-shared-key-one-1111", "g-shared-key-two-2222"],
      models: ["shared-model"],
      model_map: { "shared-model": "gemini-2.5-flash" }
    },
    // Every request it gets (a probe's too) is refused with 401, the upstream quoting the headers it got.
    {
      name: "echo-auth",
      type: "openai",
      base_url: `${upstream}/v1`,
      api_key: ECHO_KEY,
      models: ["echo-model"],
      priority: 10,
      headers: { "x-fake-echo-headers": "401", "x-tenant-secret": TENANT_SECRET }
    },
    {
      name: "fallback",
      type: "openai",
      base_url: `${upstream}/v1`,
      api_key: "sk-fallback-0000",
      models: ["echo-model", "locked-model"]
    },
    // Its organisation may not use locked-model: every request for it gets 403 (its model list works).
    {
      name: "org-locked",
      type: "openai",
      base_url: `${upstream}/v1`,
      api_key: "sk-org-locked-0000",
      priority: 10,
      models: ["locked-model"],
      model_map: { "locked-model": "gpt-4o-mini-fail-403" }
    },
    {
      name: "huge",
      type: "openai",
      base_url: `${upstream}/v1`,
      api_key: "sk-huge-0000",
      models: ["huge-answer", "huge-line"],
      model_map: { "huge-answer": "gpt-bytes-209715200", "huge-line": "gpt-line-314572800" }
    }
  ],
  models: {
    "shared-model": { input: 1, output: 2 },
    "echo-model": { input: 1, output: 2 },
    "locked-model": { input: 1, output: 2 },
    "huge-answer": { input: 0.01, output: 0.01 },
    "huge-line": { input: 0.01, output: 0.01 }
  },
  users: [
    { name: "mallory", balance: 10, keys: [{ name: "m", secret: MALLORY }] },
    { name: "bob", balance: 10, keys: [{ name: "b", secret: BOB }] },
    { name: "admin", role: "admin", balance: 1, keys: [{ name: "a", secret: ADMIN }] }
  ]
})

let gateway: TestGateway
beforeAll(async () => {
  gateway = await startGateway(config)
})
afterAll(async () => {
  await gateway?.close()
})

const admin = async (path: string, init: RequestInit = {}) => {
  const response = await fetch(`${gateway.url}/api/admin${path}`, {
    ...init,
    headers: { authorization: `Bearer ${ADMIN}`, ...init.headers }
  })
  return { status: response.status, body: await response.json() as any }
}

const channel = async (name: string) => (await admin("/channels")).body.data.find((c: any) => c.name === name)

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const eventually = async <A>(what: string, check: () => Promise<A | undefined>): Promise<A> => {
  for (let i = 0; i < 200; i++) {
    const value = await check()
    if (value !== undefined) return value
    await sleep(50)
  }
  throw new Error(`timed out waiting for ${what}`)
}

const usageOf = (requestId: string) =>
  eventually(
    `the usage record of ${requestId}`,
    async () => ((await admin("/usage?limit=200")).body.data as Array<any>).find((r) => r.requestId === requestId)
  )

/** A Gemini request linking a file of another project, which Google refuses with 403 PERMISSION_DENIED. */
const foreignFile = (key: string) =>
  fetch(`${gateway.url}/v1beta/models/shared-model:generateContent`, {
    method: "POST",
    headers: { "x-goog-api-key": key, "content-type": "application/json" },
    body: JSON.stringify({
      contents: [{
        role: "user",
        parts: [{ text: "Summarise this" }, {
          fileData: {
            mimeType: "application/pdf",
            fileUri: "https://generativelanguage.googleapis.com/v1beta/files/their-file-9"
          }
        }]
      }]
    })
  })

const chat = (key: string, model: string, stream = false) =>
  fetch(`${gateway.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model, stream, messages: [{ role: "user", content: "hello" }] })
  })

/** The key checks the fake upstream got: model-list requests, which depend on no model and carry nothing of a caller's. */
const probes = () => gateway.upstream.requests.filter((r) => r.method === "GET" && r.path === "/v1beta/models")

describe("a 403 about the request", () => {
  it("repeated thirty times is the caller's 403 each time, fails over nowhere, and leaves every key enabled and other users' calls working", async () => {
    gateway.upstream.clearRequests()
    for (let i = 0; i < 30; i++) {
      const refused = await foreignFile(MALLORY)
      assert.strictEqual(refused.status, 403)
      const error = (await refused.json() as { error: { status: string; message: string } }).error
      assert.strictEqual(error.status, "PERMISSION_DENIED")
      assert.strictEqual(
        error.message,
        "You do not have permission to access the File their-file-9 or it may not exist."
      )
      if (i === 0) {
        const record = await usageOf(refused.headers.get("x-request-id")!)
        assert.deepStrictEqual([record.status, record.attempts, record.cost], [403, 1, "0.00"])
      }
    }
    // A probe with each key checked it (the probe carries nothing of the caller's), at most once per probe interval.
    await eventually("the probes of both keys", async () => probes().length >= 2 ? true : undefined)
    assert.strictEqual(probes().length, 2)
    const health = (await channel("shared")).health
    assert.strictEqual(health.state, "healthy")
    assert.deepStrictEqual(health.keys.map((key: any) => key.state), ["healthy", "healthy"])
    assert.deepStrictEqual(health.keys.map((key: any) => key.lastProbeOk), [true, true])
    for (let i = 0; i < 5; i++) {
      const served = await fetch(`${gateway.url}/v1beta/models/shared-model:generateContent`, {
        method: "POST",
        headers: { "x-goog-api-key": BOB, "content-type": "application/json" },
        body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "Hello" }] }] })
      })
      assert.strictEqual(served.status, 200)
    }
  })
})

describe("a model one channel's upstream refuses with a 403", () => {
  it("the call is served by the model's other channel, and the channel's health lists the model kept off", async () => {
    const answer = await chat(BOB, "locked-model")
    assert.strictEqual(answer.status, 200, await answer.clone().text())
    const record = await usageOf(answer.headers.get("x-request-id")!)
    assert.deepStrictEqual([record.status, record.attempts], [200, 2])
    // The one-token probe of the model confirms it: the admin API's health of the channel says which model, why.
    const locked = await eventually(
      "the model kept off org-locked",
      async () => {
        const health = (await channel("org-locked")).health
        return health.refusedModels.length > 0 ? health : undefined
      }
    )
    assert.strictEqual(locked.state, "degraded")
    assert.deepStrictEqual(locked.keys.map((key: any) => key.state), ["healthy"], "the key stays in use")
    assert.deepStrictEqual(locked.refusedModels.map((m: any) => [m.model, m.status]), [["locked-model", 403]])
    assert.match(locked.refusedModels[0].reason, /403/)
    assert.isAbove(locked.refusedModels[0].until, locked.refusedModels[0].since)
    // The next call goes straight to the other channel.
    const next = await chat(BOB, "locked-model")
    assert.strictEqual(next.status, 200)
    assert.strictEqual((await usageOf(next.headers.get("x-request-id")!)).attempts, 1)
  })
})

describe("a key the upstream refuses, quoting what it was sent", () => {
  it("the call fails over; a probe confirms and disables the key; no answer, reason or Test result carries the channel's secrets", async () => {
    const answer = await chat(BOB, "echo-model")
    assert.strictEqual(answer.status, 200, "the call fails over to another channel")
    const record = await usageOf(answer.headers.get("x-request-id")!)
    assert.deepStrictEqual((record.attemptLog as Array<any>).map((a) => [a.channel, a.status]), [["echo-auth", 401], [
      "fallback",
      200
    ]])
    const health = await eventually("the probe to disable the key", async () => {
      const now = (await channel("echo-auth")).health
      return now.state === "disabled" ? now : undefined
    })
    const reason = health.keys[0].reason as string
    assert.match(reason, /^HTTP 401: The request could not be processed\. Request headers were: /)
    assert.include(reason, "[redacted]")
    const id = (await channel("echo-auth")).id as string
    const tested = await admin(`/channels/${id}/test`, {
      method: "POST",
      body: "{}",
      headers: { "content-type": "application/json" }
    })
    assert.isFalse(tested.body.ok)
    for (const shown of [JSON.stringify(health), JSON.stringify(tested.body), JSON.stringify(record)]) {
      assert.notInclude(shown, ECHO_KEY)
      assert.notInclude(shown, TENANT_SECRET)
    }
    assert.include(JSON.stringify(tested.body), "x-tenant-secret: [redacted]")
  })
})

describe("memory stays flat", () => {
  const gc = globalThis.gc
  const retained = () => {
    gc!()
    return process.memoryUsage().heapUsed
  }
  const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`

  /** Runs `work` while sampling the retained heap every 25 ms; the peak growth over the heap before. */
  const peakDuring = async (work: () => Promise<void>): Promise<{ readonly peak: number; readonly after: number }> => {
    assert.isFunction(gc, "run with --expose-gc (the root vitest config does)")
    const before = retained()
    let peak = before
    const sampler = setInterval(() => {
      peak = Math.max(peak, retained())
    }, 25)
    try {
      await work()
    } finally {
      clearInterval(sampler)
    }
    await sleep(100)
    return { peak: peak - before, after: retained() - before }
  }

  it("a 200 MB non-stream answer ends at max_answer_bytes (32 MiB) with a 502; six at once leave nothing behind", async () => {
    const one = await peakDuring(async () => {
      const response = await chat(BOB, "huge-answer")
      assert.strictEqual(response.status, 502)
      const error = (await response.json() as { error: { code: string; message: string } }).error
      assert.strictEqual(error.code, "upstream_error")
      assert.match(error.message, /answered with more than this gateway reads \(over 33554432 bytes\)/)
    })
    // At most the 32 MiB read (one byte per character) and its pieces, never the 200 MB answer.
    assert.isBelow(one.peak, 96 * 1024 * 1024, `retained heap grew by ${mb(one.peak)}`)
    const six = await peakDuring(async () => {
      const answers = await Promise.all(Array.from({ length: 6 }, () => chat(BOB, "huge-answer")))
      for (const answer of answers) {
        assert.strictEqual(answer.status, 502)
        await answer.text()
      }
    })
    assert.isBelow(six.after, 16 * 1024 * 1024, `retained heap after six 200 MB answers: ${mb(six.after)}`)
  })

  it("a 300 MB stream line ends the stream at max_event_bytes (4 MiB) with an in-band error; memory stays flat", async () => {
    let events = 0
    let last = ""
    const run = await peakDuring(async () => {
      const response = await chat(BOB, "huge-line", true)
      assert.strictEqual(response.status, 200)
      const reader = response.body!.getReader()
      const decoder = new TextDecoder()
      let text = ""
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        text += decoder.decode(value, { stream: true })
      }
      const frames = text.split("\n\n").filter((frame) => frame.startsWith("data: "))
      events = frames.length
      last = frames.at(-1) ?? ""
    })
    assert.isAbove(events, 2, "the answer's first events were delivered")
    const error = JSON.parse(last.slice(6)).error
    assert.strictEqual(error.code, "upstream_error")
    assert.match(error.message, /sent a stream event larger than 4194304 bytes \(max_event_bytes\)/)
    assert.isBelow(run.peak, 32 * 1024 * 1024, `retained heap grew by ${mb(run.peak)}`)
  })
})
