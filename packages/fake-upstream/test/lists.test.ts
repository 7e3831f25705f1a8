/**
 * Model lists as the providers page them (Gemini `pageSize`/`pageToken`,
 * Anthropic `limit`/`after_id`; OpenAI in one page), behind each dialect's
 * key check and failure controls; and the `thinking` token's reasoning usage.
 */
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { type FakeUpstreamServer, startFakeUpstream } from "../src/index.ts"
import { postJson } from "./helpers.ts"

const KEY = "sk-lists-test"
const many = Array.from({ length: 45 }, (_, i) => `model-${String(i).padStart(2, "0")}`)

describe("model lists", () => {
  let server: FakeUpstreamServer
  beforeAll(async () => {
    server = await startFakeUpstream({ apiKey: KEY, models: { openai: many, gemini: many, anthropic: many } })
  })
  afterAll(() => server.close())

  const all = async (
    first: string,
    next: (body: any) => string | undefined,
    headers: Record<string, string>,
    ids: (body: any) => Array<string>
  ) => {
    const seen: Array<string> = []
    let url: string | undefined = first
    let pages = 0
    while (url !== undefined) {
      const res = await fetch(url, { headers })
      assert.strictEqual(res.status, 200)
      const body = await res.json()
      seen.push(...ids(body))
      url = next(body)
      pages++
    }
    return { seen, pages }
  }

  it("answers Azure OpenAI's resource models and deployments in Azure's shape, with api-key and api-version only", async () => {
    const models = await fetch(`${server.url}/openai/models?api-version=2024-10-21`, { headers: { "api-key": KEY } })
    assert.strictEqual(models.status, 200)
    const listed = await models.json() as { object: string; data: Array<Record<string, any>> }
    assert.strictEqual(listed.object, "list")
    assert.deepStrictEqual(listed.data.map((m) => m["id"]), many)
    assert.deepStrictEqual(Object.keys(listed.data[0]!).sort(), [
      "capabilities",
      "created_at",
      "deprecation",
      "id",
      "lifecycle_status",
      "object",
      "status"
    ])
    assert.strictEqual(listed.data[0]!["capabilities"].chat_completion, true)
    const deployments = await fetch(`${server.url}/openai/deployments?api-version=2022-12-01`, {
      headers: { "api-key": KEY }
    })
    const body = await deployments.json() as { data: Array<Record<string, any>> }
    assert.deepStrictEqual([body.data[0]!["object"], body.data[0]!["model"]], ["deployment", many[0]])
    assert.strictEqual((await fetch(`${server.url}/openai/models`, { headers: { "api-key": KEY } })).status, 404)
    assert.strictEqual(
      (await fetch(`${server.url}/openai/models?api-version=2024-10-21`, { headers: { "api-key": "wrong" } })).status,
      401
    )
  })

  it("pages Gemini's list with pageSize and pageToken", async () => {
    const base = `${server.url}/v1beta/models`
    const { seen, pages } = await all(
      `${base}?pageSize=20`,
      (body) => body.nextPageToken === undefined ? undefined : `${base}?pageSize=20&pageToken=${body.nextPageToken}`,
      { "x-goog-api-key": KEY },
      (body) => body.models.map((m: any) => m.name.replace("models/", ""))
    )
    assert.deepStrictEqual(seen, many)
    assert.strictEqual(pages, 3)
    const whole = await (await fetch(base, { headers: { "x-goog-api-key": KEY } })).json()
    assert.strictEqual(whole.models.length, 45, "default page size 50")
  })

  it("pages Anthropic's list with limit and after_id", async () => {
    const base = `${server.url}/v1/models`
    const headers = { "x-api-key": KEY, "anthropic-version": "2023-06-01" }
    const { seen, pages } = await all(
      `${base}?limit=20`,
      (body) => body.has_more ? `${base}?limit=20&after_id=${body.last_id}` : undefined,
      headers,
      (body) => body.data.map((m: any) => m.id)
    )
    assert.deepStrictEqual(seen, many)
    assert.strictEqual(pages, 3)
    const first = await (await fetch(base, { headers })).json()
    assert.deepStrictEqual([first.data.length, first.has_more, first.first_id, first.last_id], [
      20,
      true,
      "model-00",
      "model-19"
    ])
  })

  it("lists OpenAI's in one page, and checks keys and failure controls like every route", async () => {
    const list = await (await fetch(`${server.url}/v1/models`, { headers: { authorization: `Bearer ${KEY}` } })).json()
    assert.strictEqual(list.data.length, 45)
    assert.strictEqual(
      (await fetch(`${server.url}/v1/models`, { headers: { authorization: "Bearer nope" } })).status,
      401
    )
    assert.strictEqual(
      (await fetch(`${server.url}/v1beta/models`, { headers: { "x-goog-api-key": "nope" } })).status,
      400
    )
    const failing = await fetch(`${server.url}/v1/models?limit=5`, {
      headers: { "x-api-key": KEY, "anthropic-version": "2023-06-01", "x-fake-fail": "529" }
    })
    assert.strictEqual(failing.status, 529)
  })

  it("reports reasoning tokens for a thinking model", async () => {
    const openai = await (await postJson(`${server.url}/v1/chat/completions`, {
      model: "o-thinking",
      messages: [{ role: "user", content: "hi there" }]
    }, { authorization: `Bearer ${KEY}` })).json()
    assert.strictEqual(
      openai.usage.completion_tokens_details.reasoning_tokens,
      Math.ceil(openai.usage.completion_tokens / 2)
    )
    const gemini = await (await postJson(`${server.url}/v1beta/models/gemini-thinking:generateContent`, {
      contents: [{ role: "user", parts: [{ text: "hi there" }] }]
    }, { "x-goog-api-key": KEY })).json()
    const usage = gemini.usageMetadata
    assert.strictEqual(usage.thoughtsTokenCount, Math.ceil(usage.candidatesTokenCount / 2))
    assert.strictEqual(
      usage.totalTokenCount,
      usage.promptTokenCount + usage.candidatesTokenCount + usage.thoughtsTokenCount
    )
  })
})
