import { assert, describe, it } from "@effect/vitest"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { closedLoop, openLoop } from "../src/LoadGenerator.ts"
import { assertLoopback } from "../src/Loopback.ts"

const withServer = async (run: (url: string, hits: { count: number }) => Promise<void>): Promise<void> => {
  const hits = { count: 0 }
  const server = http.createServer((req, res) => {
    hits.count++
    req.resume()
    req.on("end", () => {
      if (req.url === "/fail") {
        res.writeHead(503, { "content-type": "application/json" })
        res.end("{}")
        return
      }
      res.writeHead(200, { "content-type": "text/event-stream" })
      res.write("data: 1\n\n")
      setTimeout(() => res.end("data: [DONE]\n\n"), 20)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  try {
    await run(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits)
  } finally {
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

describe("LoadGenerator", () => {
  it("open loop sends rate x duration requests and records latency >= TTFB", async () => {
    await withServer(async (url, hits) => {
      const r = await openLoop({ url: `${url}/ok`, body: "{}", rate: 200, durationMs: 1000, stream: true })
      assert.strictEqual(r.sent, 200)
      assert.strictEqual(r.ok, 200)
      assert.strictEqual(hits.count, 200)
      assert.deepStrictEqual(r.errors, {})
      assert.strictEqual(r.latency.count, 200)
      assert.strictEqual(r.ttfb.count, 200)
      assert.isAtLeast(r.latency.percentile(50), r.ttfb.percentile(50))
      // The server ends each body 20 ms after the first byte. A timer measures from the event loop's
      // cached time, which on a busy machine lags the real one by a millisecond or more, so the bound
      // is half of it: enough to show the latency runs to the body's end, not to its first byte.
      assert.isAtLeast(r.latency.minUs, 10_000)
      assert.isAbove(r.bytes, 200 * 10)
    })
  })

  it("closed loop keeps to its request count and counts HTTP errors by status", async () => {
    await withServer(async (url) => {
      const ok = await closedLoop({ url: `${url}/ok`, concurrency: 8, requests: 300 })
      assert.strictEqual(ok.sent, 300)
      assert.strictEqual(ok.ok, 300)
      assert.isAbove(ok.throughput, 0)
      const bad = await closedLoop({ url: `${url}/fail`, concurrency: 4, requests: 20 })
      assert.strictEqual(bad.ok, 0)
      assert.deepStrictEqual(bad.errors, { http_503: 20 })
      assert.strictEqual(bad.latency.count, 0)
    })
  })

  it("counts connection failures instead of throwing", async () => {
    const r = await closedLoop({ url: "http://127.0.0.1:9/", concurrency: 2, requests: 4, timeoutMs: 2000 })
    assert.strictEqual(r.ok, 0)
    assert.strictEqual(Object.values(r.errors).reduce((a, b) => a + b, 0), 4)
  })

  it("refuses non-loopback targets and bad options, naming them", async () => {
    const rejection = (p: Promise<unknown>): Promise<string> => p.then(() => "resolved", (e: unknown) => String(e))
    assert.match(
      await rejection(openLoop({ url: "http://10.0.0.1/", rate: 1, durationMs: 1 })),
      /not a loopback address/
    )
    assert.match(
      await rejection(openLoop({ url: "http://127.0.0.1:1/", rate: 0, durationMs: 1 })),
      /rate must be a positive number/
    )
    assert.match(
      await rejection(closedLoop({ url: "http://127.0.0.1:1/", concurrency: 1 })),
      /give requests, durationMs, or both/
    )
    assert.throws(() => assertLoopback("https://localhost/", "x"), /only http/)
    assert.strictEqual(assertLoopback("http://127.0.0.2:80/a", "x").pathname, "/a")
  })
})
