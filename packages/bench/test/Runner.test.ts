import { assert, describe, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { CallLog, type RunContext, runLatency, type Target } from "../src/Runner.ts"
import type { Scenario } from "../src/Scenarios.ts"

const scenario: Scenario = {
  name: "chat-small",
  title: "t",
  description: "d",
  kind: "latency",
  stream: false,
  direct: { dialect: "openai", path: "/v1/chat/completions", body: "{}" },
  gateway: { dialect: "openai", path: "/v1/chat/completions", body: "{}" },
  models: { openai: ["m"], gemini: [] },
  portkey: false,
  rates: [500],
  concurrency: 4
}

describe("runLatency", () => {
  it("measures every target, counts every call, bands the added p99, and distrusts a pid that served calls without CPU", async () => {
    const server = http.createServer((req, res) => {
      req.resume()
      req.on("end", () => {
        res.writeHead(req.url === "/fail" ? 500 : 200, { "content-type": "application/json" })
        res.end("{\"ok\":true}")
      })
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    // A process of ours that does nothing: given as the "floor" proxy's pid, it serves none of the calls.
    const idle = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60_000)"], { stdio: "ignore" })
    try {
      const pid = idle.pid as number
      const request = (s: Scenario) => ({ url: url + s.direct.path, body: s.direct.body })
      const targets: Array<Target> = [
        { name: "direct", url, pid: null, request },
        { name: "floor", url, pid, request },
        // A target that fails every call (as Portkey does with streams).
        { name: "portkey", url, pid: null, request: () => ({ url: `${url}/fail`, body: "{}" }) }
      ]
      const lines: Array<string> = []
      const ctx: RunContext = {
        timing: {
          warmupMs: 200,
          pointMs: 2400,
          throughputMs: 300,
          drainMs: 2000,
          soakMs: 1000,
          soakRate: 1,
          sampleMs: 100,
          rssSampleMs: 100
        },
        log: (line) => lines.push(line),
        calls: new CallLog(),
        notes: []
      }
      const r = await runLatency(scenario, targets, ctx)
      assert.deepStrictEqual(r.points.map((p) => [p.target, p.mode]), [
        ["direct", "open"],
        ["floor", "open"],
        ["portkey", "open"],
        ["direct", "closed"],
        ["floor", "closed"],
        ["portkey", "closed"]
      ])
      const open = r.points.filter((p) => p.mode === "open")
      assert.deepStrictEqual(open.map((p) => p.ok), [1200, 1200, 0])
      assert.deepStrictEqual(open[2].errors, { http_500: 1200 })
      // Nothing is subtracted for a target without a successful call.
      assert.deepStrictEqual(r.added.map((a) => a.target), ["floor"])
      assert.strictEqual(ctx.calls.get("portkey").refused, ctx.calls.get("portkey").sent)
      // Every call is counted: warm-up, the open-loop point and the closed loop.
      const floor = ctx.calls.get("floor")
      assert.isAbove(floor.ok, 1200)
      assert.strictEqual(floor.sent, floor.ok + floor.refused + floor.unsure)
      assert.deepStrictEqual(ctx.calls.get("modelgate"), { sent: 0, ok: 0, refused: 0, unsure: 0 })
      // The added point carries its sampling band around the added p99.
      const a = r.added.find((x) => x.target === "floor" && x.rate === 500)
      assert.isDefined(a)
      assert.isAtMost(a?.latencyP99Band.lowUs ?? 0, a?.latency.p99Us ?? 0)
      assert.isAtLeast(a?.latencyP99Band.highUs ?? 0, a?.latency.p99Us ?? 0)
      // The idle process's RSS was tracked; its CPU per call is not believed.
      assert.deepStrictEqual(r.rss.map((x) => x.target), ["floor"])
      assert.isAbove(r.rss[0].peakBytes, 0)
      assert.isAtLeast(r.rss[0].peakBytes, r.rss[0].steadyBytes)
      assert.isNull(open[1].cpuMsPerCall)
      assert.strictEqual(ctx.notes.length, 1)
      assert.match(
        ctx.notes[0],
        new RegExp(`floor's process \\(pid ${pid}\\) used no CPU time while it served 1200 calls`)
      )
    } finally {
      idle.kill("SIGKILL")
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  })
})
