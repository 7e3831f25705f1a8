import { assert, describe, it } from "@effect/vitest"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import {
  categorize,
  type CpuProfile,
  NATIVE,
  parseCpuProfile,
  profileMarkdown,
  summarise,
  summariseDir
} from "../src/ProfileSummary.ts"

const root = "/repo"
const frame = (functionName: string, url: string, lineNumber = 0) => ({
  functionName,
  url,
  lineNumber,
  columnNumber: 0,
  scriptId: "1"
})

/**
 * A small profile: 10 samples, 1 ms apart except where noted, over
 * idle, GC, a modelgate function reached by two call paths, effect, undici
 * (Node's bundled copy) and a node internal.
 */
const profile: CpuProfile = {
  nodes: [
    { id: 1, callFrame: frame("(root)", ""), children: [2, 3, 4, 5] },
    { id: 2, callFrame: frame("(idle)", "") },
    { id: 3, callFrame: frame("(garbage collector)", "") },
    { id: 4, callFrame: frame("handle", "file:///repo/packages/node-http/src/Chat.ts", 41), children: [6, 7] },
    {
      id: 5,
      callFrame: frame(
        "runLoop",
        "file:///repo/node_modules/.pnpm/effect@4.1.0/node_modules/effect/dist/internal/fiber.js",
        9
      ),
      children: [8]
    },
    { id: 6, callFrame: frame("", "node:internal/deps/undici/undici", 99) },
    { id: 7, callFrame: frame("writeGeneric", "node:internal/stream_base_commons", 150) },
    // The same function as node 4, reached from effect's run loop.
    { id: 8, callFrame: frame("handle", "file:///repo/packages/node-http/src/Chat.ts", 41) }
  ],
  startTime: 1_000_000,
  endTime: 1_011_000,
  //         idle idle  GC  handle handle effect undici stream handle(8) idle
  samples: [2, 2, 3, 4, 4, 5, 6, 7, 8, 2],
  // The first delta is from startTime; the last sample lasts until endTime (2 ms).
  timeDeltas: [0, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000]
}

describe("ProfileSummary", () => {
  it("attributes each sample's interval as self time, by function and by category", () => {
    const s = summarise([profile], { root })
    assert.strictEqual(s.samples, 10)
    assert.strictEqual(s.totalMs, 11)
    // idle: samples 0, 1 (1 ms each) and the last one (2 ms until endTime).
    assert.strictEqual(s.idleMs, 4)
    assert.strictEqual(s.busyMs, 7)
    const handle = s.functions[0]
    assert.deepStrictEqual(handle, {
      functionName: "handle",
      category: "@modelgate/node-http",
      file: "packages/node-http/src/Chat.ts",
      line: 42,
      selfMs: 3,
      busyShare: 42.86
    })
    assert.deepStrictEqual(
      s.functions.map((f) => [f.functionName, f.category, f.file, f.line, f.selfMs]),
      [
        ["handle", "@modelgate/node-http", "packages/node-http/src/Chat.ts", 42, 3],
        ["(garbage collector)", "GC", "", 0, 1],
        ["runLoop", "effect", "effect/dist/internal/fiber.js", 10, 1],
        ["(anonymous)", "undici", "node:internal/deps/undici/undici", 100, 1],
        ["writeGeneric", "node internals", "node:internal/stream_base_commons", 151, 1]
      ]
    )
    const shares = Object.fromEntries(s.categories.map((c) => [c.category, [c.selfMs, c.share, c.busyShare]]))
    assert.deepStrictEqual(shares, {
      idle: [4, 36.36, null],
      "@modelgate/node-http": [3, 27.27, 42.86],
      GC: [1, 9.09, 14.29],
      effect: [1, 9.09, 14.29],
      undici: [1, 9.09, 14.29],
      "node internals": [1, 9.09, 14.29]
    })
  })

  it("adds several profiles up and keeps only the top rows", () => {
    const s = summarise([profile, profile], { root, top: 2 })
    assert.strictEqual(s.profiles, 2)
    assert.strictEqual(s.totalMs, 22)
    assert.deepStrictEqual(s.functions.map((f) => [f.functionName, f.selfMs]), [["handle", 6], [
      "(garbage collector)",
      2
    ]])
  })

  it("counts only the samples inside a window of the profile's clock, or the whole profile when none is", () => {
    // Samples 3, 4 and 5 (handle, handle, effect) are stamped 1,003,000 to 1,005,000 µs.
    const s = summarise([profile], { root, window: { startUs: 1_003_000, endUs: 1_005_000 } })
    assert.deepStrictEqual(s.window, { startUs: 1_003_000, endUs: 1_005_000 })
    assert.strictEqual(s.samples, 3)
    assert.strictEqual(s.totalMs, 3)
    assert.strictEqual(s.excludedMs, 8)
    assert.deepStrictEqual(s.functions.map((f) => [f.functionName, f.selfMs]), [["handle", 2], ["runLoop", 1]])
    assert.include(
      profileMarkdown(s).join("\n"),
      "8.0 ms before and after the measured scenarios (start-up, shutdown) left out"
    )
    const outside = summarise([profile], { root, window: { startUs: 0, endUs: 10 } })
    assert.isNull(outside.window)
    assert.strictEqual(outside.totalMs, 11)
  })

  it("categorizes frames by package", () => {
    assert.strictEqual(categorize({ functionName: "(program)", url: "" }), "V8 (program)")
    assert.strictEqual(categorize({ functionName: "writev", url: "" }), NATIVE)
    assert.strictEqual(categorize({ functionName: "f", url: "file:///x/node_modules/undici/lib/core.js" }), "undici")
    assert.strictEqual(
      categorize({
        functionName: "f",
        url: "file:///x/node_modules/.pnpm/@effect+platform-node@4.1.0/node_modules/@effect/platform-node/dist/a.js"
      }),
      "effect"
    )
    assert.strictEqual(
      categorize({ functionName: "f", url: "file:///x/node_modules/.pnpm/@scope+pkg@1/node_modules/@scope/pkg/a.js" }),
      "@scope/pkg"
    )
    assert.strictEqual(
      categorize({ functionName: "f", url: "file:///work/main/packages/store/src/UsageWriter.ts" }),
      "@modelgate/store"
    )
    assert.strictEqual(categorize({ functionName: "f", url: "node:http" }), "node internals")
    assert.strictEqual(categorize({ functionName: "f", url: "file:///elsewhere/script.js" }), "other")
  })

  it("renders Markdown tables", () => {
    const md = profileMarkdown(summarise([profile], { root })).join("\n")
    assert.include(md, "1 profile, 10 samples over 11.0 ms, of which 7.0 ms busy (not idle).")
    assert.include(md, "| @modelgate/node-http | 3.0 ms | 42.9 % | 27.3 % |")
    assert.include(
      md,
      "| 1 | `handle` | @modelgate/node-http | `packages/node-http/src/Chat.ts:42` | 3.0 ms | 42.9 % |"
    )
  })

  it("rejects what is not a CPU profile, naming the file and field", () => {
    assert.throws(() => parseCpuProfile("{", "a.cpuprofile"), /a\.cpuprofile: not a V8 CPU profile: invalid JSON/)
    assert.throws(() => parseCpuProfile("{\"nodes\":[]}", "b"), /"nodes" is not a non-empty array/)
    const bad = { ...profile, samples: [1, 99], timeDeltas: [0, 1] }
    assert.throws(() => parseCpuProfile(JSON.stringify(bad), "c"), /samples\[1\] \(99\) is not a node id/)
    const uneven = { ...profile, timeDeltas: [0] }
    assert.throws(() => parseCpuProfile(JSON.stringify(uneven), "d"), /10 samples but 1 timeDeltas/)
  })

  it("reads a directory of .cpuprofile files", () => {
    const dir = mkdtempSync(join(tmpdir(), "bench-profile-"))
    try {
      assert.isNull(summariseDir(dir))
      writeFileSync(join(dir, "CPU.1.cpuprofile"), JSON.stringify(profile))
      writeFileSync(join(dir, "Heap.heapsnapshot"), "{}")
      const s = summariseDir(dir, { root })
      assert.strictEqual(s?.profiles, 1)
      assert.strictEqual(s?.totalMs, 11)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
