import { assert, describe, it } from "@effect/vitest"
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { judgeBilling } from "../src/Billing.ts"
import { FULL_TIMING } from "../src/Plan.ts"
import { summarise } from "../src/ProfileSummary.ts"
import { machine, type Results, verdicts, writeReport } from "../src/Report.ts"
import type { AddedPoint, LatencyResult, MemoryResult, Point, SoakResult, TargetName } from "../src/Runner.ts"
import { Histogram, type Summary } from "../src/Stats.ts"

const summary = (p50: number, p99: number): Summary => ({
  count: 1000,
  minUs: p50 / 2,
  meanUs: p50,
  p50Us: p50,
  p90Us: (p50 + p99) / 2,
  p99Us: p99,
  p999Us: p99,
  maxUs: p99 * 2
})

const point = (
  target: TargetName,
  mode: "open" | "closed",
  rate: number | null,
  o: {
    p50: number
    p99: number
    cpu: number | null
    throughput?: number
    errors?: Record<string, number>
    alloc?: number
  }
): Point => ({
  target,
  mode,
  rate,
  concurrency: mode === "closed" ? 32 : null,
  elapsedMs: 3000,
  sent: 3000,
  ok: 3000,
  dropped: 0,
  errors: o.errors ?? {},
  throughput: o.throughput ?? 1000,
  latency: summary(o.p50, o.p99),
  ttfb: summary(o.p50 - 10, o.p99 - 10),
  cpuMsPerCall: o.cpu,
  allocKbPerCall: o.alloc ?? null,
  rssBytes: 100 * 1048576,
  latencyHistogram: new Histogram().toJSON()
})

const addedPoint = (target: TargetName, rate: number, p50: number, p99: number, ttfb50: number): AddedPoint => ({
  target,
  rate,
  latency: { p50Us: p50, p90Us: (p50 + p99) / 2, p99Us: p99, maxUs: p99 * 2, meanUs: p50 },
  ttfb: { p50Us: ttfb50, p90Us: ttfb50, p99Us: ttfb50 * 2, maxUs: ttfb50 * 3, meanUs: ttfb50 },
  latencyP99Band: { lowUs: p99 - 100, highUs: p99 + 100 },
  ttfbP50Band: { lowUs: ttfb50 - 10, highUs: ttfb50 + 10 }
})

const rss = (target: TargetName, peakMb: number) => ({
  target,
  peakBytes: peakMb * 1048576,
  peakFrom: "hwm" as const,
  steadyBytes: (peakMb - 10) * 1048576,
  startBytes: 60 * 1048576,
  samples: 40
})

const chatSmall: LatencyResult = {
  scenario: "chat-small",
  title: "Non-stream chat, small",
  description: "d",
  stream: false,
  points: [
    point("direct", "open", 1000, { p50: 1000, p99: 3000, cpu: null }),
    point("floor", "open", 1000, { p50: 1200, p99: 3300, cpu: 0.2 }),
    point("modelgate", "open", 1000, { p50: 1500, p99: 4800, cpu: 0.32 }),
    point("portkey", "open", 1000, { p50: 2500, p99: 9000, cpu: 1.5 }),
    point("modelgate", "closed", null, { p50: 5000, p99: 9000, cpu: 0.3, throughput: 4000, alloc: 42.5 }),
    point("portkey", "closed", null, { p50: 9000, p99: 20000, cpu: 1.4, throughput: 1000 }),
    point("floor", "closed", null, { p50: 3000, p99: 6000, cpu: 0.19, throughput: 8000, alloc: 18 })
  ],
  added: [
    addedPoint("floor", 1000, 200, 300, 200),
    addedPoint("modelgate", 1000, 500, 1800, 490),
    addedPoint("portkey", 1000, 1500, 6000, 1490)
  ],
  rss: [rss("floor", 70), rss("modelgate", 120), rss("portkey", 200)]
}

const stream200: LatencyResult = {
  ...chatSmall,
  scenario: "stream-200",
  title: "Stream of 200 chunks",
  stream: true,
  points: [
    point("direct", "open", 100, { p50: 3000, p99: 6000, cpu: null }),
    point("modelgate", "open", 100, { p50: 3400, p99: 7000, cpu: 0.9 }),
    // Portkey 1.15.2 fails every stream: no successful call, so no percentile to show.
    {
      ...point("portkey", "open", 100, { p50: 0, p99: 0, cpu: null, errors: { http_500: 75 } }),
      ok: 0,
      latency: { ...summary(0, 0), count: 0 },
      ttfb: { ...summary(0, 0), count: 0 }
    }
  ],
  added: [addedPoint("modelgate", 100, 400, 1000, 800)],
  rss: [rss("modelgate", 130)]
}

const withClosed = (l: LatencyResult, scenario: string, floorCpu: number, gatewayCpu: number): LatencyResult => ({
  ...l,
  scenario,
  points: [
    ...l.points,
    point("floor", "closed", null, { p50: 3000, p99: 6000, cpu: floorCpu }),
    point("modelgate", "closed", null, { p50: 3000, p99: 6000, cpu: gatewayCpu })
  ]
})
const streamFull = withClosed(stream200, "stream-200", 0.15, 0.45)
const translated = withClosed(stream200, "translate-gemini-stream", 0.1, 0.25)
const agent = withClosed(chatSmall, "chat-200k", 0.4, 0.7)

const memory: MemoryResult = {
  scenario: "streams-1000",
  title: "1,000 concurrent long-lived streams",
  description: "d",
  points: [{
    target: "modelgate",
    streams: 1000,
    ok: 1000,
    errors: {},
    idleRssBytes: 80 * 1048576,
    peakRssBytes: 180 * 1048576,
    peakFrom: "hwm",
    steadyRssBytes: 170 * 1048576,
    ttfb: summary(2000, 9000),
    samples: [{ tMs: 0, value: 80 * 1048576 }, { tMs: 1000, value: 180 * 1048576 }]
  }, {
    target: "floor",
    streams: 1000,
    ok: 1000,
    errors: {},
    idleRssBytes: 60 * 1048576,
    peakRssBytes: 120 * 1048576,
    peakFrom: "hwm",
    steadyRssBytes: 110 * 1048576,
    ttfb: summary(1500, 8000),
    samples: [{ tMs: 0, value: 60 * 1048576 }, { tMs: 1000, value: 120 * 1048576 }]
  }]
}

const soak: SoakResult = {
  target: "modelgate",
  scenario: "chat-small",
  rate: 300,
  durationMs: 600_000,
  ok: 180_000,
  errors: {},
  latency: summary(1500, 5000),
  rss: { start: 100 * 1048576, end: 102 * 1048576, percent: 2, perMinute: 0.2 * 1048576, peak: 110 * 1048576 },
  samples: [{ tMs: 0, value: 100 * 1048576 }, { tMs: 600_000, value: 102 * 1048576 }]
}

describe("verdicts", () => {
  it("judge issue 14's targets and say by how much each missed target was missed", () => {
    const v = verdicts([chatSmall, streamFull, translated, agent], [memory], soak)
    const by = Object.fromEntries(v.map((x) => [x.target, x]))
    const cpu = by["non-stream CPU per call <= 2.0x the floor (closed loop and 1,000 calls/s)"]
    assert.strictEqual(cpu.status, "met")
    assert.strictEqual(cpu.measured, "closed loop 300 µs vs floor 190 µs (1.58x); at 1,000/s 320 µs vs 200 µs (1.60x)")
    const stream = by["200-chunk stream CPU per call <= 2.0x the floor (same dialect)"]
    assert.strictEqual(stream.status, "missed")
    assert.strictEqual(stream.shortfall, "3.00x against 2x: 150 µs per call more than allowed (50 % over)")
    assert.strictEqual(by["translated 200-chunk stream CPU per call <= 3x the floor"].status, "met")
    assert.strictEqual(by["200 KB prompt CPU per call <= 2.0x the floor"].status, "met")
    const portkey = by["throughput at 32 in flight >= 3x Portkey"]
    assert.strictEqual(portkey.status, "met")
    assert.strictEqual(portkey.measured, "4000 vs 1000 calls/s at 32 in flight (4.00x)")
    const p99 = by["added latency p99 < 2 ms at 1,000 calls/s (non-stream)"]
    assert.strictEqual(p99.status, "met")
    assert.match(p99.measured, /added p99 1.80 ms \(95 % sampling interval 1.70 ms to 1.90 ms; p50 500 µs/)
    const ttfb = by["added TTFB p50 < 0.5 ms for streams"]
    assert.strictEqual(ttfb.shortfall, "300 µs over the 0.5 ms limit (1.60x it)")
    const alloc = by["<= 30 KB allocated per non-stream call"]
    assert.strictEqual(alloc.measured, "42.5 KB per call at 32 in flight (the floor: 18.0 KB)")
    assert.strictEqual(alloc.shortfall, "12.5 KB per call over the 30 KB limit (1.42x it)")
    assert.strictEqual(by["idle RSS <= 100 MB"].status, "met")
    const streams = by["1,000 open streams at <= 1.3x the floor's RSS"]
    assert.strictEqual(streams.status, "missed")
    assert.strictEqual(streams.shortfall, "1.50x against 1.3x: 24.0 MB over")
    assert.strictEqual(by["< 5% RSS growth over the soak"].status, "met")
    assert.isNull(by["< 5% RSS growth over the soak"].shortfall)
  })

  it("count errors at the 1,000/s point as a miss, and say what was not measured", () => {
    const failing: LatencyResult = {
      ...chatSmall,
      points: chatSmall.points.map((
        p
      ) => (p.target === "modelgate" && p.mode === "open" ? { ...p, errors: { http_429: 3 } } : p)),
      added: [addedPoint("modelgate", 1000, 100, 500, 100)]
    }
    const by = (results: ReturnType<typeof verdicts>) => Object.fromEntries(results.map((x) => [x.target, x]))
    const v = by(verdicts([failing], [], null))
    const p99 = v["added latency p99 < 2 ms at 1,000 calls/s (non-stream)"]
    assert.strictEqual(p99.status, "missed")
    assert.strictEqual(p99.shortfall, "the latency is within the limit, but http_429: 3 of 3000 calls failed")
    assert.strictEqual(v["idle RSS <= 100 MB"].status, "not measured")
    assert.strictEqual(
      v["200 KB prompt CPU per call <= 2.0x the floor"].measured,
      "needs modelgate and floor CPU figures for chat-200k"
    )
    const portkeyName = "throughput at 32 in flight >= 3x Portkey"
    const withoutPortkey = { ...chatSmall, points: chatSmall.points.filter((p) => p.target !== "portkey") }
    assert.match(
      by(verdicts([withoutPortkey], [], null))[portkeyName].measured,
      /^Portkey was not measured in this run/
    )
    const portkeyFailed = {
      ...chatSmall,
      points: chatSmall.points.map((
        p
      ) => (p.target === "portkey" ? { ...p, throughput: 0, errors: { http_500: 9 } } : p))
    }
    assert.strictEqual(
      by(verdicts([portkeyFailed], [], null))[portkeyName].measured,
      "Portkey had no successful call in chat-small (errors: http_500: 9)"
    )
    assert.strictEqual(by(verdicts([], [], null))[portkeyName].measured, "chat-small not in this run")
  })
})

describe("writeReport", () => {
  it("writes the JSON, the charts and a report with every section", async () => {
    const out = mkdtempSync(join(tmpdir(), "bench-report-"))
    try {
      const frame = (functionName: string, url: string) => ({ functionName, url, lineNumber: 9, columnNumber: 0 })
      const profile = summarise([{
        nodes: [{ id: 1, callFrame: frame("(idle)", "") }, {
          id: 2,
          callFrame: frame("decode", "file:///r/packages/core/src/Canonical.ts")
        }],
        startTime: 0,
        endTime: 4000,
        samples: [1, 2, 2],
        timeDeltas: [0, 1000, 1000]
      }], { root: "/r" })
      const results: Results = {
        version: 2,
        quick: false,
        dialect: "openai",
        profiled: true,
        startedAt: "2026-11-22T10:00:00.000Z",
        finishedAt: "2026-11-22T10:14:00.000Z",
        elapsedMs: 840_000,
        plannedMs: 853_000,
        machine: machine([3, 2, 1]),
        timing: FULL_TIMING,
        targets: [{ name: "direct", available: true, note: "fake upstream" }, {
          name: "portkey",
          available: false,
          note: "left out (--without-portkey)"
        }],
        latency: [chatSmall, stream200],
        memory: [memory],
        soak,
        billing: judgeBilling({
          source: "sqlite",
          calls: { sent: 200_000, ok: 199_990, refused: 0, unsure: 10 },
          balanceBeforeNanos: 10_000_000_000n,
          balanceAfterNanos: 8_500_000_000n,
          records: 199_995,
          okRecords: 199_995,
          chargedNanos: 1_500_000_000n,
          ledgerNanos: 8_500_000_000n,
          open: 0
        }),
        profile,
        profileDir: "bench-results/profiles/x",
        heapSnapshots: ["bench-results/profiles/x/Heap.heapsnapshot"],
        verdicts: verdicts([chatSmall, stream200], [memory], soak),
        notes: ["a note", "a range in a note stays as written: [1, 2]"]
      }
      const written = await writeReport(results, out)
      const json = readFileSync(written.json, "utf8")
      assert.deepStrictEqual(
        JSON.parse(json),
        JSON.parse(JSON.stringify(results)),
        "the same results, only laid out differently"
      )
      assert.notMatch(json, /^\s*-?\d[\d.eE+-]*,?$/m, "no number on a line of its own: number arrays are joined")
      assert.include(json, "[1, 2]")
      for (const file of written.plots) assert.isTrue(existsSync(file), file)
      assert.include(written.plots.map((p) => p.split("/").pop()), "rss-per-scenario.png")
      const md = readFileSync(written.markdown, "utf8")
      for (
        const expected of [
          "took 14 min 0 s (planned about 14 min 13 s)",
          "- Load average (1, 5, 15 min): 3, 2, 1 at the start",
          "> **Profiled run**",
          "**Billing verified**: 199995 usage records, 1.5 USD charged (199990 successful calls, 10 cut off in flight).",
          "the balance went from 10 to 8.5 USD",
          "- **added TTFB p50 < 0.5 ms for streams**: 300 µs over the 0.5 ms limit (1.60x it). Measured:",
          "- **<= 30 KB allocated per non-stream call**: 12.5 KB per call over the 30 KB limit (1.42x it). Measured: 42.5 KB per call at 32 in flight (the floor: 18.0 KB)",
          "### What the gateway's CPU profile shows",
          "heap snapshot after streams-1000: `bench-results/profiles/x/Heap.heapsnapshot`",
          "| 1 | `decode` | @modelgate/core | `packages/core/src/Canonical.ts:10` | 3.0 ms | 100.0 % |",
          "| chat-small | 1000/s | 320 µs | 200 µs | 1.60x | 1500 µs | 7.50x |",
          "| chat-small | 120.0 MB | 110.0 MB | 70.0 MB | 60.0 MB | 200.0 MB | 190.0 MB |",
          "| streams-1000 | 180.0 MB | 170.0 MB | 120.0 MB | 110.0 MB |  |  |",
          "| added p50 | added p90 | added p99 (95 % interval) | added max |",
          "| modelgate | 1000/s open | 3000 | 1.50 ms | 3.15 ms | 4.80 ms | 9.60 ms | 500 µs | 1.15 ms | 1.80 ms (1.70 ms to 1.90 ms) | 3.60 ms | 0 |",
          "| modelgate | 100/s open | 3.39 ms | 5.19 ms | 6.99 ms | 800 µs (790 µs to 810 µs) | 800 µs | 1.60 ms |",
          "| 1000/s open | 320 µs | 200 µs | 1.60x | 1500 µs | 7.50x |",
          "RSS during this scenario: floor peak 70.0 MB, steady 60.0 MB; modelgate peak 120.0 MB",
          "| portkey | 100/s open | 0 | – | – | – | – |  |  |  |  | http_500: 75 |",
          "| portkey | 100/s open | – | – | – |  |  |  |",
          "## How it was measured",
          "**Added latency** is the target's percentile minus the direct call's percentile",
          "- a note"
        ]
      ) assert.include(md, expected)
    } finally {
      rmSync(out, { recursive: true, force: true })
    }
  })
})
