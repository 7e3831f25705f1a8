/**
 * `pnpm bench:percall`: what one call costs the gateway, beside the floor,
 * for one scenario, in about a minute: a small harness for before-and-after
 * comparisons of hot-path work, where the full run takes too long.
 *
 * Starts the fake upstream, the floor proxy and the gateway (the bundle, or
 * the sources when it is not built; SQLite, billing, limits and the usage log
 * on, as in `pnpm bench`), then for each of the floor and the gateway runs a
 * warm-up and a closed loop of `--calls` calls of the scenario and divides
 * its CPU time (`/proc`) and JavaScript heap allocated (V8's GC trace) by the
 * calls. The ratio to the floor is of the same run, so it moves less with
 * other load on the machine than the microseconds do.
 *
 * Options:
 * - `--scenario NAME` (default `chat-small`): any of `pnpm bench`'s latency scenarios;
 * - `--calls N` (3000), `--warmup N` (1000), `--concurrency N` (8), `--rounds N` (1: measure
 *   floor, gateway, floor, gateway ... and report each round);
 * - `--heap-profile FILE`: after the measured loop, run `--calls` more calls under V8's sampling
 *   heap profiler (collected objects included, so it shows what a call allocates, not what
 *   survives), write the profile (`.heapprofile`, opens in Chrome's DevTools) and print the top
 *   allocation sites by bytes per call;
 * - `--cpu-profile FILE`: after the measured loop, run `--calls` more calls under V8's CPU profiler
 *   (100 µs sampling), write the profile (`.cpuprofile`) and print the top functions by self time;
 * - `--pages`: after the measured loop, run `--calls` more calls under `strace` and count the
 *   pages SQLite writes: write-ahead-log frames (the commits) and database pages (the
 *   checkpoint's copies), per call;
 * - `--sources`: run the gateway from its TypeScript sources even when the bundle is built (the
 *   heap profile then names source files and lines);
 * - `--bin FILE`: run this gateway executable instead (another commit's bundle, for a before and after).
 *
 * @since 0.1.0
 */
import { spawn } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import { BENCH_KEY, gatewayConfigText } from "./GatewayConfig.ts"
import { closedLoop } from "./LoadGenerator.ts"
import { cpuTimeMs } from "./Proc.ts"
import { authHeaders, scenarios } from "./Scenarios.ts"
import { freePort, killAll, type Service, startService } from "./Services.ts"

const { values } = parseArgs({
  options: {
    scenario: { type: "string", default: "chat-small" },
    calls: { type: "string", default: "3000" },
    warmup: { type: "string", default: "1000" },
    concurrency: { type: "string", default: "8" },
    rounds: { type: "string", default: "1" },
    "heap-profile": { type: "string" },
    "cpu-profile": { type: "string" },
    pages: { type: "boolean", default: false },
    sources: { type: "boolean", default: false },
    bin: { type: "string" }
  }
})
const calls = Number(values.calls)
const warmup = Number(values.warmup)
const concurrency = Number(values.concurrency)
const rounds = Number(values.rounds)

const UPSTREAM_OPENAI_KEY = "sk-fake-upstream"
const UPSTREAM_GEMINI_KEY = "fake-gemini-key"

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../..")
const node = process.execPath

interface Spec {
  readonly url: string
  readonly body: string
  readonly stream: boolean
  readonly headers: Record<string, string>
  readonly concurrency: number
}

const measure = async (service: Service, spec: Spec) => {
  await closedLoop({ ...spec, requests: warmup })
  const cpu0 = cpuTimeMs(service.pid)
  const heap0 = service.allocatedBytes() ?? 0
  const result = await closedLoop({ ...spec, requests: calls })
  const cpu = cpuTimeMs(service.pid) - cpu0
  const heap = (service.allocatedBytes() ?? 0) - heap0
  if (result.ok !== calls) throw new Error(`${result.ok} of ${calls} calls succeeded: ${JSON.stringify(result.errors)}`)
  return { cpuUs: cpu * 1000 / calls, heapKb: heap / 1024 / calls }
}

/** A minimal Chrome DevTools Protocol session over the inspector's WebSocket. */
const inspector = async (port: number) => {
  const list = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json() as Array<
    { webSocketDebuggerUrl: string }
  >
  const ws = new WebSocket(list[0]!.webSocketDebuggerUrl)
  await new Promise((done, fail) => {
    ws.onopen = done
    ws.onerror = fail
  })
  let id = 0
  const waiting = new Map<number, (result: unknown) => void>()
  ws.onmessage = (event) => {
    const message = JSON.parse(String(event.data)) as { id?: number; result?: unknown }
    if (message.id !== undefined) waiting.get(message.id)?.(message.result)
  }
  return {
    send: (method: string, params: object = {}) =>
      new Promise<any>((done) => {
        const at = ++id
        waiting.set(at, done)
        ws.send(JSON.stringify({ id: at, method, params }))
      }),
    close: () => ws.close()
  }
}

interface ProfileNode {
  readonly callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number }
  readonly selfSize: number
  readonly children: ReadonlyArray<ProfileNode>
}

const topSites = (head: ProfileNode, n: number) => {
  const sites = new Map<string, number>()
  // A built-in (`Map.prototype.set`, a generator's `next`) is named with its nearest caller in script.
  const walk = (node: ProfileNode, caller: string) => {
    const { functionName, url, lineNumber } = node.callFrame
    const file = url.replace(/^.*\/(packages|node_modules)\//, "$1/")
    const here = `${functionName || "(anonymous)"} ${file}:${lineNumber + 1}`
    const key = url === "" ? `${functionName || "(native)"} <- ${caller}` : here
    sites.set(key, (sites.get(key) ?? 0) + node.selfSize)
    for (const child of node.children) walk(child, url === "" ? caller : here)
  }
  walk(head, "(root)")
  const total = [...sites.values()].reduce((a, b) => a + b, 0)
  return { total, top: [...sites].sort((a, b) => b[1] - a[1]).slice(0, n) }
}

interface CpuProfile {
  readonly nodes: ReadonlyArray<{ readonly id: number; readonly callFrame: ProfileNode["callFrame"] }>
  readonly samples: ReadonlyArray<number>
}

/** Self time by function (file and line) of a CPU profile, in samples. */
const selfTime = (profile: CpuProfile, n: number) => {
  const byId = new Map(profile.nodes.map((node) => [node.id, node.callFrame]))
  const sites = new Map<string, number>()
  for (const id of profile.samples) {
    const { functionName, url, lineNumber } = byId.get(id)!
    const file = url.replace(/^.*\/(packages|node_modules)\//, "$1/")
    const key = `${functionName || "(anonymous)"} ${file}:${lineNumber + 1}`
    sites.set(key, (sites.get(key) ?? 0) + 1)
  }
  return { total: profile.samples.length, top: [...sites].sort((a, b) => b[1] - a[1]).slice(0, n) }
}

/** Counts SQLite's page writes (`pwrite64` of a whole page) by file while `run` runs. */
const countPages = async (pid: number, run: () => Promise<unknown>) => {
  const out = join(tmpdir(), `modelgate-percall-strace-${process.pid}.txt`)
  const tracer = spawn("strace", ["-f", "-y", "-qq", "-e", "trace=pwrite64", "-o", out, "-p", String(pid)], {
    stdio: "ignore"
  })
  await new Promise((done) => setTimeout(done, 1000))
  await run()
  // Let the checkpointing thread copy what the calls wrote.
  await new Promise((done) => setTimeout(done, 1500))
  tracer.kill("SIGINT")
  await new Promise((done) => tracer.once("exit", done))
  const counts = { walFrames: 0, dbPages: 0, pages: new Map<number, number>() }
  for (const line of readFileSync(out, "utf8").split("\n")) {
    const match = /pwrite64\(\d+<([^>]+)>, .*, (\d+), (\d+)\) = (\d+)/.exec(line)
    if (match === null || Number(match[2]) < 512) continue
    if (match[1]!.endsWith("-wal")) counts.walFrames++
    else if (match[1]!.endsWith(".db")) {
      counts.dbPages++
      const page = Number(match[3]) / Number(match[2]) + 1
      counts.pages.set(page, (counts.pages.get(page) ?? 0) + 1)
    }
  }
  rmSync(out, { force: true })
  return counts
}

const main = async () => {
  const scenario = scenarios(false).find((s) => s.name === values.scenario)
  if (scenario === undefined) throw new Error(`unknown scenario ${values.scenario}`)
  const upstream = await startService({
    name: "fake-upstream",
    command: node,
    args: [join(repoRoot, "packages/fake-upstream/src/cli.ts"), "--listen", "127.0.0.1:0"],
    ready: { kind: "line", pattern: /fake-upstream listening on (\S+)/ }
  })
  const work = mkdtempSync(join(tmpdir(), "modelgate-bench-percall-"))
  try {
    const floor = await startService({
      name: "floor-proxy",
      command: node,
      args: ["--trace-gc-nvp", join(repoRoot, "packages/bench/src/floor-proxy.ts"), "--upstream", upstream.url],
      ready: { kind: "line", pattern: /floor-proxy listening on (\S+)/ },
      gcTrace: true
    })
    const port = await freePort()
    const inspectPort = await freePort()
    const config = join(work, "gateway.json")
    const all = scenarios(false)
    writeFileSync(
      config,
      gatewayConfigText({
        listen: `127.0.0.1:${port}`,
        database: `sqlite:${join(work, "modelgate.db")}`,
        upstreamUrl: upstream.url,
        openaiModels: [...new Set(all.flatMap((s) => s.models.openai))],
        geminiModels: [...new Set(all.flatMap((s) => s.models.gemini))]
      })
    )
    const bundle = join(repoRoot, "packages/node-http/dist/modelgate.mjs")
    const bin = values.bin !== undefined
      ? resolve(values.bin)
      : existsSync(bundle) && !values.sources
      ? bundle
      : join(repoRoot, "packages/node-http/src/bin.ts")
    const gateway = await startService({
      name: "modelgate",
      command: node,
      args: [
        "--trace-gc-nvp",
        ...(values["heap-profile"] !== undefined || values["cpu-profile"] !== undefined
          ? [`--inspect=127.0.0.1:${inspectPort}`]
          : []),
        bin,
        "serve",
        "--config",
        config
      ],
      cwd: work,
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: "", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "" },
      ready: { kind: "poll", url: `http://127.0.0.1:${port}/healthz`, baseUrl: `http://127.0.0.1:${port}` },
      gcTrace: true
    })
    const floorSpec: Spec = {
      url: floor.url + scenario.direct.path,
      body: scenario.direct.body,
      stream: scenario.stream,
      headers: authHeaders(
        scenario.direct.dialect,
        scenario.direct.dialect === "gemini" ? UPSTREAM_GEMINI_KEY : UPSTREAM_OPENAI_KEY
      ),
      concurrency
    }
    const gatewaySpec: Spec = {
      url: gateway.url + scenario.gateway.path,
      body: scenario.gateway.body,
      stream: scenario.stream,
      headers: authHeaders(scenario.gateway.dialect, BENCH_KEY),
      concurrency
    }
    console.log(`${scenario.name}: ${calls} calls, ${concurrency} in flight, ${rounds} round(s)`)
    console.log("| round | floor CPU µs | gateway CPU µs | ratio | floor KB alloc | gateway KB alloc |")
    console.log("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for (let round = 1; round <= rounds; round++) {
      const f = await measure(floor, floorSpec)
      const g = await measure(gateway, gatewaySpec)
      console.log(
        `| ${round} | ${f.cpuUs.toFixed(0)} | ${g.cpuUs.toFixed(0)} | ${(g.cpuUs / f.cpuUs).toFixed(2)}x | ${
          f.heapKb.toFixed(1)
        } | ${g.heapKb.toFixed(1)} |`
      )
    }
    if (values["heap-profile"] !== undefined) {
      const session = await inspector(inspectPort)
      await session.send("HeapProfiler.enable")
      await session.send("HeapProfiler.startSampling", {
        samplingInterval: 1024,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true
      })
      await closedLoop({ ...gatewaySpec, requests: calls })
      const { profile } = await session.send("HeapProfiler.stopSampling")
      session.close()
      writeFileSync(values["heap-profile"], JSON.stringify(profile))
      const { top, total } = topSites(profile.head, 40)
      console.log(`\nsampled allocation: ${(total / 1024 / calls).toFixed(1)} KB per call; top sites (bytes per call):`)
      for (const [site, bytes] of top) console.log(`${(bytes / calls).toFixed(0).padStart(7)}  ${site}`)
    }
    if (values["cpu-profile"] !== undefined) {
      const session = await inspector(inspectPort)
      await session.send("Profiler.enable")
      await session.send("Profiler.setSamplingInterval", { interval: 100 })
      await session.send("Profiler.start")
      await closedLoop({ ...gatewaySpec, requests: calls })
      const { profile } = await session.send("Profiler.stop")
      session.close()
      writeFileSync(values["cpu-profile"], JSON.stringify(profile))
      const { top, total } = selfTime(profile, 40)
      console.log(`\nsampled CPU: ${total} samples; top functions by self time (% of samples):`)
      for (const [site, n] of top) console.log(`${(n * 100 / total).toFixed(1).padStart(6)}%  ${site}`)
    }
    if (values.pages) {
      const pages = await countPages(gateway.pid, () => closedLoop({ ...gatewaySpec, requests: calls }))
      console.log(
        `\nSQLite pages written per call: ${(pages.walFrames / calls).toFixed(3)} WAL frames, ${
          (pages.dbPages / calls).toFixed(3)
        } checkpointed database pages (${pages.walFrames} and ${pages.dbPages} over ${calls} calls)`
      )
      // Which table or index each checkpointed page belongs to (SQLite's dbstat).
      const { DatabaseSync } = await import("node:sqlite")
      const db = new DatabaseSync(join(work, "modelgate.db"), { readOnly: true })
      const owner = new Map<number, string>()
      for (const row of db.prepare("SELECT name, pageno FROM dbstat").all()) {
        owner.set(Number(row["pageno"]), String(row["name"]))
      }
      db.close()
      const byName = new Map<string, number>()
      for (const [page, n] of pages.pages) {
        const name = owner.get(page) ?? "(free or header)"
        byName.set(name, (byName.get(name) ?? 0) + n)
      }
      for (const [name, n] of [...byName].sort((a, b) => b[1] - a[1])) {
        console.log(`${(n / calls).toFixed(3).padStart(8)}  ${name}`)
      }
    }
    console.log(`load average at the end: ${loadavg().map((l) => l.toFixed(2)).join(" ")}`)
  } finally {
    killAll()
    rmSync(work, { recursive: true, force: true })
  }
}

process.on("SIGINT", () => {
  killAll()
  process.exit(130)
})
main().catch((error) => {
  killAll()
  console.error(error)
  process.exitCode = 1
})
