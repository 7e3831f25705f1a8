/**
 * The benchmark command:
 *
 *   node packages/bench/src/main.ts [--quick] [--only NAME[,NAME]] [--with-portkey]
 *     [--gateway-url URL [--gateway-pid PID] [--gateway-key KEY] [--header "Name: value"]...]
 *     [--soak-ms N] [--soak-rate N] [--out-dir DIR]
 *
 * Starts the fake upstream, the floor proxy, the gateway (from a generated
 * config, unless --gateway-url names one already running) and optionally
 * Portkey, each as its own process on 127.0.0.1; runs the scenarios against
 * all of them in the same run; writes bench-results/<time>.json,
 * docs/benchmarks.md and its PNG charts under --out-dir (default: the
 * repository root). Progress goes to stderr.
 *
 * @since 0.1.0
 */
import { existsSync } from "node:fs"
import { mkdtemp, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { parseArgs } from "node:util"
import { BENCH_KEY, gatewayConfigText } from "./GatewayConfig.ts"
import type { RequestSpec } from "./LoadGenerator.ts"
import { assertLoopback } from "./Loopback.ts"
import { machine, type Results, type TargetInfo, verdicts, writeReport } from "./Report.ts"
import {
  type LatencyResult,
  type MemoryResult,
  runLatency,
  runMemory,
  runSoak,
  type SoakResult,
  type Target,
  type Timing
} from "./Runner.ts"
import { SCENARIO_NAMES, type Scenario, scenarios } from "./Scenarios.ts"
import { freePort, killAll, type Service, startService } from "./Services.ts"

const USAGE = `usage: node packages/bench/src/main.ts [--quick] [--only NAME[,NAME]] [--with-portkey]
  [--gateway-url URL [--gateway-pid PID] [--gateway-key KEY] [--header "Name: value"]...]
  [--soak-ms N] [--soak-rate N] [--out-dir DIR]
scenarios: ${[...SCENARIO_NAMES, "soak"].join(", ")}`

const UPSTREAM_OPENAI_KEY = "sk-fake-upstream"
const UPSTREAM_GEMINI_KEY = "fake-gemini-key"

/** Parsed command line. @category cli */
export interface Options {
  readonly quick: boolean
  readonly only: ReadonlySet<string> | null
  readonly withPortkey: boolean
  readonly gatewayUrl: string | null
  readonly gatewayPid: number | null
  readonly gatewayKey: string
  readonly headers: Readonly<Record<string, string>>
  readonly timing: Timing
  readonly outDir: string
}

const integer = (name: string, value: string | undefined, min: number): number | undefined => {
  if (value === undefined) return undefined
  const n = Number(value)
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min}, got "${value}"`)
  return n
}

/**
 * Parses the command line; throws with a message naming the bad option.
 *
 * @category cli
 */
export const parseOptions = (argv: ReadonlyArray<string>, repoRoot: string): Options | "help" => {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      quick: { type: "boolean", default: false },
      only: { type: "string", multiple: true },
      "with-portkey": { type: "boolean", default: false },
      "gateway-url": { type: "string" },
      "gateway-pid": { type: "string" },
      "gateway-key": { type: "string" },
      header: { type: "string", multiple: true },
      "soak-ms": { type: "string" },
      "soak-rate": { type: "string" },
      "out-dir": { type: "string" },
      help: { type: "boolean", short: "h", default: false }
    },
    strict: true,
    allowPositionals: false
  })
  if (values.help) return "help"
  const known = new Set<string>([...SCENARIO_NAMES, "soak"])
  let only: Set<string> | null = null
  if (values.only !== undefined) {
    only = new Set(values.only.flatMap((v) => v.split(",")).map((v) => v.trim()).filter((v) => v !== ""))
    for (const name of only) if (!known.has(name)) throw new Error(`--only: unknown scenario "${name}" (known: ${[...known].join(", ")})`)
  }
  const headers: Record<string, string> = {}
  for (const h of values.header ?? []) {
    const colon = h.indexOf(":")
    if (colon <= 0) throw new Error(`--header must look like "Name: value", got "${h}"`)
    headers[h.slice(0, colon).trim().toLowerCase()] = h.slice(colon + 1).trim()
  }
  const gatewayUrl = values["gateway-url"] ?? null
  if (gatewayUrl !== null) assertLoopback(gatewayUrl, "--gateway-url")
  if (gatewayUrl === null && values["gateway-pid"] !== undefined) throw new Error("--gateway-pid needs --gateway-url")
  const quick = values.quick
  const soakMs = integer("soak-ms", values["soak-ms"], 1000) ?? (quick ? 20_000 : 600_000)
  const soakRate = integer("soak-rate", values["soak-rate"], 1) ?? (quick ? 200 : 300)
  return {
    quick,
    only,
    withPortkey: values["with-portkey"],
    gatewayUrl: gatewayUrl === null ? null : gatewayUrl.replace(/\/$/, ""),
    gatewayPid: integer("gateway-pid", values["gateway-pid"], 1) ?? null,
    gatewayKey: values["gateway-key"] ?? BENCH_KEY,
    headers,
    timing: quick
      ? { warmupMs: 500, pointMs: 2000, throughputMs: 1500, soakMs, soakRate, sampleMs: 250 }
      : { warmupMs: 1500, pointMs: 4000, throughputMs: 4000, soakMs, soakRate, sampleMs: 1000 },
    outDir: resolve(values["out-dir"] ?? repoRoot)
  }
}

/** Rough wall time of a plan, seconds (for the start banner). @category cli */
export const estimateSeconds = (list: ReadonlyArray<Scenario>, targets: number, timing: Timing, soak: boolean): number => {
  let ms = 0
  for (const s of list) {
    if (s.kind === "memory") ms += (targets - 1) * ((s.streamMs ?? 0) + 2000)
    else ms += targets * (timing.warmupMs + timing.throughputMs + s.rates.length * timing.pointMs)
  }
  return Math.round((ms + (soak ? timing.soakMs : 0)) / 1000)
}

const log = (line: string): void => {
  process.stderr.write(`${line}\n`)
}

const main = async (argv: ReadonlyArray<string>): Promise<void> => {
  const repoRoot = resolve(import.meta.dirname, "../../..")
  const parsed = parseOptions(argv, repoRoot)
  if (parsed === "help") {
    console.log(USAGE)
    return
  }
  const options = parsed
  const node = process.execPath
  const work = await mkdtemp(join(tmpdir(), "modelgate-bench-"))
  const services: Array<Service> = []
  const notes: Array<string> = []
  const infos: Array<TargetInfo> = []
  const startedAt = new Date().toISOString()
  try {
    const upstream = await startService({
      name: "fake-upstream",
      command: node,
      args: [join(repoRoot, "packages/fake-upstream/src/cli.ts"), "--listen", "127.0.0.1:0"],
      ready: { kind: "line", pattern: /fake-upstream listening on (\S+)/ }
    })
    services.push(upstream)
    log(`fake upstream ${upstream.url} (pid ${upstream.pid})`)
    const floor = await startService({
      name: "floor-proxy",
      command: node,
      args: [join(repoRoot, "packages/bench/src/floor-proxy.ts"), "--upstream", upstream.url],
      ready: { kind: "line", pattern: /floor-proxy listening on (\S+)/ }
    })
    services.push(floor)
    log(`floor proxy ${floor.url} (pid ${floor.pid})`)

    const list = scenarios(options.quick).filter((s) => options.only === null || options.only.has(s.name))
    const all = scenarios(options.quick)
    const directRequest = (base: string) => (s: Scenario): RequestSpec => ({
      url: base + s.direct.path,
      body: s.direct.body,
      stream: s.stream,
      headers: s.direct.dialect === "gemini" ? { "x-goog-api-key": UPSTREAM_GEMINI_KEY } : { authorization: `Bearer ${UPSTREAM_OPENAI_KEY}` }
    })
    const targets: Array<Target> = [
      { name: "direct", url: upstream.url, pid: null, request: directRequest(upstream.url) },
      { name: "floor", url: floor.url, pid: floor.pid, request: directRequest(floor.url) }
    ]
    infos.push(
      { name: "direct", available: true, note: `fake upstream at ${upstream.url} (packages/fake-upstream), the baseline` },
      { name: "floor", available: true, note: "bare node:http + undici pass-through (src/floor-proxy.ts), no auth or billing" }
    )

    let gateway: { url: string; pid: number | null } | null = null
    if (options.gatewayUrl !== null) {
      gateway = { url: options.gatewayUrl, pid: options.gatewayPid }
      infos.push({
        name: "modelgate",
        available: true,
        note: `external at ${options.gatewayUrl}${options.gatewayPid === null ? " (no --gateway-pid: no CPU or memory figures)" : ` pid ${options.gatewayPid}`}`
      })
      notes.push("The gateway was started outside the benchmark: its configuration (auth, billing, limits, usage log) is whatever it was started with.")
    } else {
      const bin = join(repoRoot, "packages/node-http/src/bin.ts")
      if (!existsSync(bin)) {
        infos.push({ name: "modelgate", available: false, note: "packages/node-http/src/bin.ts does not exist yet" })
      } else {
        const port = await freePort()
        const config = join(work, "modelgate.yaml")
        await writeFile(
          config,
          gatewayConfigText({
            listen: `127.0.0.1:${port}`,
            database: `sqlite:${join(work, "modelgate.db")}`,
            upstreamUrl: upstream.url,
            openaiModels: [...new Set(all.flatMap((s) => s.models.openai))],
            geminiModels: [...new Set(all.flatMap((s) => s.models.gemini))]
          })
        )
        try {
          const gw = await startService({
            name: "modelgate",
            command: node,
            args: [bin, "serve", "--config", config],
            cwd: work,
            ready: { kind: "poll", url: `http://127.0.0.1:${port}/healthz`, baseUrl: `http://127.0.0.1:${port}` }
          })
          services.push(gw)
          gateway = { url: gw.url, pid: gw.pid }
          infos.push({ name: "modelgate", available: true, note: `started from a generated config (key auth, billing, limits, usage log on), pid ${gw.pid}` })
          log(`modelgate ${gw.url} (pid ${gw.pid})`)
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error)
          infos.push({ name: "modelgate", available: false, note: "failed to start (see notes)" })
          notes.push(`modelgate failed to start: ${message.split("\n").slice(0, 6).join(" / ")}`)
          log(message)
        }
      }
    }
    if (gateway !== null) {
      const gw = gateway
      targets.push({
        name: "modelgate",
        url: gw.url,
        pid: gw.pid,
        request: (s) => ({
          url: gw.url + s.gateway.path,
          body: s.gateway.body,
          stream: s.stream,
          headers: { authorization: `Bearer ${options.gatewayKey}`, ...options.headers }
        })
      })
    }

    if (options.withPortkey) {
      const script = join(repoRoot, "packages/bench/node_modules/@portkey-ai/gateway/build/start-server.js")
      if (!existsSync(script)) {
        infos.push({ name: "portkey", available: false, note: "@portkey-ai/gateway is not installed (pnpm install)" })
      } else {
        const port = await freePort()
        try {
          const pk = await startService({
            name: "portkey",
            command: node,
            args: [script, `--port=${port}`, "--headless"],
            env: { NODE_ENV: "production" },
            cwd: work,
            ready: { kind: "poll", url: `http://127.0.0.1:${port}/`, baseUrl: `http://127.0.0.1:${port}` }
          })
          services.push(pk)
          targets.push({
            name: "portkey",
            url: pk.url,
            pid: pk.pid,
            request: (s) =>
              s.portkey
                ? {
                  url: pk.url + s.direct.path,
                  body: s.direct.body,
                  stream: s.stream,
                  headers: {
                    authorization: `Bearer ${UPSTREAM_OPENAI_KEY}`,
                    "x-portkey-provider": "openai",
                    "x-portkey-custom-host": `${upstream.url}/v1`
                  }
                }
                : null
          })
          infos.push({ name: "portkey", available: true, note: `@portkey-ai/gateway 1.15.2 (Node build, headless), pid ${pk.pid}; same-dialect scenarios only` })
          log(`portkey ${pk.url} (pid ${pk.pid})`)
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error)
          infos.push({ name: "portkey", available: false, note: "failed to start (see notes)" })
          notes.push(`Portkey failed to start: ${message.split("\n").slice(0, 6).join(" / ")}`)
        }
      }
    } else {
      infos.push({ name: "portkey", available: false, note: "not requested (--with-portkey)" })
    }

    const wantSoak = options.only === null || options.only.has("soak")
    log(`plan: ${list.map((s) => s.name).join(", ")}${wantSoak ? ", soak" : ""}; about ${estimateSeconds(list, targets.length, options.timing, wantSoak)} s`)
    const latency: Array<LatencyResult> = []
    const memory: Array<MemoryResult> = []
    // The memory scenario runs first, on fresh processes: a heap that earlier
    // scenarios grew would otherwise dominate the "1,000 streams" RSS figure.
    const ordered = [...list.filter((s) => s.kind === "memory"), ...list.filter((s) => s.kind !== "memory")]
    for (const s of ordered) {
      log(`scenario ${s.name}`)
      if (s.kind === "latency") latency.push(await runLatency(s, targets, options.timing, log))
      else memory.push(await runMemory(s, targets, options.timing, log))
    }
    const portkeyStreamsFailed = [...latency.flatMap((l) => (l.stream ? l.points : [])), ...memory.flatMap((m) => m.points)]
      .some((p) => p.target === "portkey" && p.ok === 0)
    if (portkeyStreamsFailed) {
      notes.push(
        "Portkey answered streamed calls with HTTP 500 in this run (seen with @portkey-ai/gateway 1.15.2 on Node 24: its log says `tryTargetsRecursively error: immutable`, a TypeError from changing the headers of a fetch Response), so it has no stream figures."
      )
    }
    let soak: SoakResult | null = null
    if (wantSoak) {
      const target = targets.find((t) => t.name === "modelgate" && t.pid !== null) ?? targets.find((t) => t.name === "floor")
      const small = all.find((s) => s.name === "chat-small")
      if (target !== undefined && small !== undefined) {
        if (target.name !== "modelgate") notes.push("The soak ran against the floor proxy because no gateway process was measured.")
        log(`soak on ${target.name}`)
        soak = await runSoak(small, target, options.timing, log)
      }
    }
    const results: Results = {
      version: 1,
      quick: options.quick,
      startedAt,
      finishedAt: new Date().toISOString(),
      machine: machine(),
      timing: options.timing,
      targets: infos,
      latency,
      memory,
      soak,
      verdicts: verdicts(latency, memory, soak),
      notes
    }
    const written = await writeReport(results, options.outDir)
    log("")
    for (const v of results.verdicts) log(`${v.status.padEnd(12)} ${v.target}: ${v.measured}`)
    log(`\nwrote ${written.json}\nwrote ${written.markdown} and ${written.plots.length} charts`)
  } finally {
    for (const s of services.reverse()) await s.stop().catch(() => undefined)
    await rm(work, { recursive: true, force: true }).catch(() => undefined)
  }
}

if (import.meta.main) {
  const abort = (): void => {
    killAll()
    process.exit(130)
  }
  process.once("SIGINT", abort)
  process.once("SIGTERM", abort)
  main(process.argv.slice(2)).then(
    () => process.exit(0),
    (error: unknown) => {
      killAll()
      console.error(error instanceof Error ? error.message : String(error))
      console.error(USAGE)
      process.exit(1)
    }
  )
}
