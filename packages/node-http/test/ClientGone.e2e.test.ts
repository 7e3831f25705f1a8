/**
 * A client that closes its socket before the first byte of the answer
 * (issue 20, item 7), through the real server: a non-stream call goes on
 * reading the upstream's answer and is charged its usage; a stream whose
 * upstream had answered is cut and charged its prompt; both are recorded as
 * client-closed (499), and the books balance.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { connect } from "node:net"
import type { ConfigFile } from "../src/ConfigFile.ts"
import { books, settledBooks } from "./support/Databases.ts"
import { startGateway, type TestGateway } from "./support/Gateway.ts"

const KEY = "sk-gone-alice-0000000000000000000000000000000"

const config = (upstream: string): ConfigFile => ({
  listen: "127.0.0.1:0",
  log_level: "error",
  billing: { lease_idle_ms: 20 },
  usage: { flush_interval_ms: 20 },
  channels: [
    {
      name: "late",
      type: "openai",
      base_url: `${upstream}/v1`,
      api_key: "sk-up",
      models: ["late"],
      // The answer comes 800 ms after the request, reporting 1,000 prompt and 500 completion tokens.
      model_map: { late: "gpt-4o-mini-slow-800" },
      headers: { "x-fake-usage-values": "1000,500" }
    },
    {
      name: "stalled",
      type: "gemini",
      base_url: upstream,
      api_key: "g-up",
      models: ["stalled"],
      // Answers (200, headers), then sends no event.
      model_map: { stalled: "gemini-2.5-flash-stall-0" }
    }
  ],
  models: { late: { input: 1, output: 2 }, stalled: { input: 1, output: 2 } },
  users: [{ name: "alice", balance: 10, keys: [{ name: "main", secret: KEY }] }]
})

let gateway: TestGateway

beforeAll(async () => {
  gateway = await startGateway(config)
})

afterAll(async () => {
  await gateway?.close()
})

/** Writes a chat call on a raw socket and closes the socket after `afterMs`, before any byte came back. */
const sendAndHangUp = (body: string, afterMs: number) =>
  new Promise<void>((resolve, reject) => {
    const { hostname, port } = new URL(gateway.url)
    const socket = connect(Number(port), hostname, () => {
      socket.write(
        "POST /v1/chat/completions HTTP/1.1\r\n" +
          `Host: ${hostname}:${port}\r\n` +
          `Authorization: Bearer ${KEY}\r\n` +
          "Content-Type: application/json\r\n" +
          `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n` + body
      )
      setTimeout(() => {
        socket.destroy()
        resolve()
      }, afterMs)
    })
    let received = ""
    socket.on("data", (chunk) => received += chunk.toString())
    socket.on("close", () => {
      if (received !== "") reject(new Error(`an answer came before the hang-up: ${received.slice(0, 200)}`))
    })
    socket.on("error", reject)
  })

interface UsageItem {
  readonly model: string
  readonly promptTokens: number
  readonly completionTokens: number
  readonly status: number
  readonly errorCode: string | null
}

/** The newest usage record of `model`, once written. */
const lastUsage = async (model: string): Promise<UsageItem> => {
  for (let i = 0; i < 200; i++) {
    const page = await (await fetch(`${gateway.url}/api/usage?model=${model}&limit=1`, {
      headers: { authorization: `Bearer ${KEY}` }
    })).json() as { data: Array<UsageItem> }
    if (page.data[0] !== undefined) return page.data[0]
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  throw new Error(`no usage record of ${model}`)
}

describe("a client that closes its socket before the first byte", () => {
  it("not a stream: the upstream's answer is read to its end and charged, as client-closed", async () => {
    const before = await settledBooks(gateway.database, "alice")
    await sendAndHangUp(JSON.stringify({ model: "late", messages: [{ role: "user", content: "hi" }] }), 150)
    const usage = await lastUsage("late")
    assert.deepStrictEqual(
      [usage.status, usage.errorCode, usage.promptTokens, usage.completionTokens],
      [499, "ClientClosed", 1000, 500]
    )
    const after = await settledBooks(gateway.database, "alice")
    assert.strictEqual(after.balance, after.ledger, "the balance equals the ledger's sum")
    // 1,000 prompt tokens at $1 per million and 500 completion tokens at $2.
    assert.strictEqual(before.balance - after.balance, 1000n * 1000n + 500n * 2000n)
  })

  it("a stream whose upstream had answered: cut, and charged its prompt", async () => {
    const before = await settledBooks(gateway.database, "alice")
    const body = JSON.stringify({ model: "stalled", stream: true, messages: [{ role: "user", content: "hi" }] })
    await sendAndHangUp(body, 300)
    const usage = await lastUsage("stalled")
    const prompt = Math.ceil(Buffer.byteLength(body) / 4)
    assert.deepStrictEqual(
      [usage.status, usage.errorCode, usage.promptTokens, usage.completionTokens],
      [499, "ClientClosed", prompt, 0]
    )
    const after = await settledBooks(gateway.database, "alice")
    assert.strictEqual(after.balance, after.ledger, "the balance equals the ledger's sum")
    assert.strictEqual(before.balance - after.balance, BigInt(prompt) * 1000n)
    assert.strictEqual((await books(gateway.database, "alice")).openHolds, 0)
  })
})
