/**
 * The benchmark command (`pnpm bench`):
 *
 *   node packages/bench/src/main.ts [--quick] [--only NAME[,NAME]] [--without-portkey]
 *     [--gateway-dialect openai|gemini] [--without-profile] [--heap-snapshot] [--plan]
 *     [--gateway-url URL [--gateway-pid PID] [--gateway-key KEY] [--header "Name: value"]...]
 *     [--soak-ms N] [--soak-rate N] [--out-dir DIR]
 *
 * Starts the fake upstream, the floor proxy, the gateway (from a generated
 * config, unless --gateway-url names one already running) and Portkey, each
 * as its own process on 127.0.0.1; runs the scenarios against all of them
 * in the same run; stops the gateway and checks its billing; writes
 * bench-results/<time>.json, docs/benchmarks.md and its PNG charts under
 * --out-dir (default: the repository root). Progress goes to stderr.
 *
 * @since 0.1.0
 */
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs"
import { mkdtemp, rm, writeFile } from "node:fs/promises"
import { loadavg, tmpdir } from "node:os"
import { join, relative, resolve } from "node:path"
import { setTimeout as sleep } from "node:timers/promises"
import { parseArgs } from "node:util"
import {
  type BillingCheck,
  judgeBilling,
  notChecked,
  readApiBalance,
  readApiUsage,
  readSqliteBooks
} from "./Billing.ts"
import { BENCH_KEY, BENCH_USER, gatewayConfigText } from "./GatewayConfig.ts"
import { parseHeaders } from "./loadgen.ts"
import { assertLoopback } from "./Loopback.ts"
import {
  BUDGET_SECONDS,
  formatDuration,
  formatPlan,
  FULL_TIMING,
  planRun,
  type PlanTarget,
  QUICK_TIMING
} from "./Plan.ts"
import { type ProfileSummary, summariseDir } from "./ProfileSummary.ts"
import { machine, type Results, type TargetInfo, verdicts, writeReport } from "./Report.ts"
import {
  CallLog,
  type LatencyResult,
  type MemoryResult,
  type RunContext,
  runLatency,
  runMemory,
  runSoak,
  type SoakResult,
  type Target,
  type TargetName,
  type Timing
} from "./Runner.ts"
import { authHeaders, type Dialect, DIALECTS, type Scenario, SCENARIO_NAMES, scenarios } from "./Scenarios.ts"
import { freePort, killAll, type Service, startService } from "./Services.ts"
import {
  FULL_TRACING,
  measureTracing,
  QUICK_TRACING,
  TRACING_ROUND_MS,
  tracingHeadline,
  type TracingResult,
  type TracingTiming
} from "./TracingCost.ts"

const USAGE = `usage: node packages/bench/src/main.ts [options]     (pnpm bench [-- options])

  --quick                  smoke run: short durations, fewer rates, 20 s soak (about 2 min)
  --only NAME[,NAME]       run only these scenarios: ${[...SCENARIO_NAMES, "tracing", "soak"].join(", ")}
                           (tracing: the CPU per call of gateways with tracing off and with every call
                           sampled and exported to a local collector; --only tracing runs it alone)
  --without-portkey        do not start or measure @portkey-ai/gateway (it is measured by default)
  --gateway-dialect D      the client dialect spoken to the gateway: openai (default) or gemini
  --without-profile        do not run the gateway under --cpu-prof (by default it is, and its profile is
                           summarised into the report's missed targets; the sampler costs a few % of CPU)
  --heap-snapshot          also take a heap snapshot of the gateway after its 1,000 streams (memory
                           figures after it are then inflated)
  --plan                   print the plan and its duration, start nothing
  --gateway-url URL        measure a gateway already running on this machine (loopback only)
  --gateway-pid PID        its process id, for CPU and memory figures
  --gateway-key KEY        its API key (default: the key of the generated config)
  --header "Name: value"   extra header on every gateway call (repeat for more)
  --soak-ms N              soak duration (default 600000; quick 20000)
  --soak-rate N            soak rate, calls/s (default 300; quick 200)
  --out-dir DIR            where bench-results/ and docs/ are written (default: the repository root)
  -h, --help               this text

To measure another gateway (or one on another machine) with the same load generator, use
packages/bench/src/loadgen.ts (see packages/bench/README.md).`

const UPSTREAM_OPENAI_KEY = "sk-fake-upstream"
const UPSTREAM_GEMINI_KEY = "fake-gemini-key"
const PORTKEY_SCRIPT = "packages/bench/node_modules/@portkey-ai/gateway/build/start-server.js"

/** Parsed command line. @category cli */
export interface Options {
  readonly quick: boolean
  readonly only: ReadonlySet<string> | null
  readonly portkey: boolean
  readonly dialect: Dialect
  readonly profile: boolean
  readonly heapSnapshot: boolean
  readonly planOnly: boolean
  readonly gatewayUrl: string | null
  readonly gatewayPid: number | null
  readonly gatewayKey: string
  readonly headers: Readonly<Record<string, string>>
  readonly timing: Timing
  /** The tracing step's sizes. */
  readonly tracing: TracingTiming
  readonly outDir: string
}

const integer = (name: string, value: string | undefined, min: number): number | undefined => {
  if (value === undefined) return undefined
  const n = Number(value)
  if (value.trim() === "" || !Number.isInteger(n) || n < min) {
    throw new Error(`--${name} must be an integer >= ${min}, got "${value}"`)
  }
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
      "without-portkey": { type: "boolean", default: false },
      "gateway-dialect": { type: "string" },
      "without-profile": { type: "boolean", default: false },
      "heap-snapshot": { type: "boolean", default: false },
      plan: { type: "boolean", default: false },
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
  const known = new Set<string>([...SCENARIO_NAMES, "tracing", "soak"])
  let only: Set<string> | null = null
  if (values.only !== undefined) {
    only = new Set(values.only.flatMap((v) => v.split(",")).map((v) => v.trim()).filter((v) => v !== ""))
    for (const name of only) {
      if (!known.has(name)) throw new Error(`--only: unknown scenario "${name}" (known: ${[...known].join(", ")})`)
    }
  }
  const dialect = values["gateway-dialect"] ?? "openai"
  if (!DIALECTS.includes(dialect as Dialect)) {
    throw new Error(`--gateway-dialect must be one of ${DIALECTS.join(", ")}, got "${dialect}"`)
  }
  const headers = parseHeaders(values.header ?? [])
  const gatewayUrl = values["gateway-url"] ?? null
  if (gatewayUrl !== null) assertLoopback(gatewayUrl, "--gateway-url")
  if (gatewayUrl === null && values["gateway-pid"] !== undefined) throw new Error("--gateway-pid needs --gateway-url")
  if (gatewayUrl !== null && values["heap-snapshot"]) {
    throw new Error("--heap-snapshot needs the gateway the benchmark starts itself (leave out --gateway-url)")
  }
  const quick = values.quick
  const base = quick ? QUICK_TIMING : FULL_TIMING
  return {
    quick,
    only,
    portkey: !values["without-portkey"],
    dialect: dialect as Dialect,
    // A gateway already running cannot be profiled by the run.
    profile: gatewayUrl === null && !values["without-profile"],
    heapSnapshot: values["heap-snapshot"],
    planOnly: values.plan,
    gatewayUrl: gatewayUrl === null ? null : gatewayUrl.replace(/\/$/, ""),
    gatewayPid: integer("gateway-pid", values["gateway-pid"], 1) ?? null,
    gatewayKey: values["gateway-key"] ?? BENCH_KEY,
    headers,
    timing: {
      ...base,
      soakMs: integer("soak-ms", values["soak-ms"], 1000) ?? base.soakMs,
      soakRate: integer("soak-rate", values["soak-rate"], 1) ?? base.soakRate
    },
    tracing: quick ? QUICK_TRACING : FULL_TRACING,
    outDir: resolve(values["out-dir"] ?? repoRoot)
  }
}

/**
 * The targets a run will measure, as the plan sees them: direct and floor
 * always, modelgate when it can be started or was given, Portkey when wanted
 * and installed (OpenAI-dialect runs only).
 *
 * @category cli
 */
export const planTargets = (options: Options, gateway: boolean, portkeyInstalled: boolean): Array<PlanTarget> => [
  { name: "direct", proxy: false, runs: () => true },
  { name: "floor", proxy: true, runs: () => true },
  ...(gateway ? [{ name: "modelgate" as const, proxy: true, runs: () => true }] : []),
  ...(options.portkey && portkeyInstalled && options.dialect === "openai"
    ? [{ name: "portkey" as const, proxy: true, runs: (s: Scenario) => s.portkey }]
    : [])
]

/** The plan line: this run's steps and duration, and in a quick run what the full run would take. @category cli */
export const planLine = (
  options: Options,
  targets: ReadonlyArray<PlanTarget>,
  soakTarget: TargetName | null
): string => {
  const pick = (quick: boolean) =>
    scenarios(quick, options.dialect).filter((s) => options.only === null || options.only.has(s.name))
  const wantSoak = options.only === null || options.only.has("soak")
  const tracing = (quick: boolean) =>
    wantsTracing(options, targets) ? tracingPlanMs(quick ? QUICK_TRACING : FULL_TRACING) : null
  const plan = planRun(
    pick(options.quick),
    targets,
    options.timing,
    wantSoak ? soakTarget : null,
    tracing(options.quick)
  )
  const names = targets.map((t) => t.name).join(", ")
  let line = `plan (${options.dialect} dialect; ${names}): ${formatPlan(plan)}`
  if (options.quick) {
    const full = planRun(
      pick(false),
      targets,
      {
        ...FULL_TIMING,
        soakMs: FULL_TIMING.soakMs,
        soakRate: FULL_TIMING.soakRate
      },
      wantSoak ? soakTarget : null,
      tracing(false)
    )
    line += `; the full run of this selection: about ${formatDuration(full.totalMs)}`
  }
  return line
}

/** Whether the run measures tracing: selected, and a gateway the run starts itself (it starts one per mode and round). */
const wantsTracing = (options: Options, targets: ReadonlyArray<PlanTarget>): boolean =>
  (options.only === null || options.only.has("tracing")) && options.gatewayUrl === null &&
  targets.some((t) => t.name === "modelgate")

/** The tracing step's allowance: off and sampled, each round. */
const tracingPlanMs = (timing: TracingTiming): number => 2 * timing.rounds * TRACING_ROUND_MS

const log = (line: string): void => {
  process.stderr.write(`${line}\n`)
}

const errorText = (error: unknown): string => (error instanceof Error ? error.message : String(error))

/**
 * Sends SIGUSR2 to a gateway started with --heapsnapshot-signal and waits
 * until the snapshot is written: the file appears when writing starts, and
 * the process (which writes it on its main thread) answers /healthz again
 * only once it is done.
 */
const takeHeapSnapshot = async (pid: number, dir: string, healthUrl: string): Promise<string | null> => {
  const before = new Set(readdirSync(dir))
  process.kill(pid, "SIGUSR2")
  const deadline = Date.now() + 180_000
  while (Date.now() < deadline) {
    await sleep(250)
    const fresh = readdirSync(dir).find((f) => f.endsWith(".heapsnapshot") && !before.has(f))
    if (fresh === undefined) continue
    try {
      const res = await fetch(healthUrl, { signal: AbortSignal.timeout(2000) })
      await res.arrayBuffer()
      if (res.ok) return join(dir, fresh)
    } catch {
      // still writing
    }
  }
  return null
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
  // What production runs: the bundle `pnpm build` (and `pnpm bench`) makes; the sources when it was not built.
  const bundle = join(repoRoot, "packages/node-http/dist/modelgate.mjs")
  const bin = existsSync(bundle) ? bundle : join(repoRoot, "packages/node-http/src/bin.ts")
  const portkeyScript = join(repoRoot, PORTKEY_SCRIPT)
  const canGateway = options.gatewayUrl !== null || existsSync(bin)
  const soakPlanTarget: TargetName = canGateway && (options.gatewayUrl === null || options.gatewayPid !== null)
    ? "modelgate"
    : "floor"
  if (options.planOnly) {
    console.log(planLine(options, planTargets(options, canGateway, existsSync(portkeyScript)), soakPlanTarget))
    return
  }
  const work = await mkdtemp(join(tmpdir(), "modelgate-bench-"))
  const services: Array<Service> = []
  const notes: Array<string> = []
  const infos: Array<TargetInfo> = []
  const startedAt = new Date().toISOString()
  const startedAtMs = Date.now()
  const loadAtStart = loadavg()
  const stamp = startedAt.replace(/[:.]/g, "-")
  const profileDir = join(options.outDir, "bench-results", "profiles", `${stamp}${options.quick ? "-quick" : ""}`)
  const heapSnapshots: Array<string> = []
  try {
    const upstream = await startService({
      name: "fake-upstream",
      command: node,
      args: [join(repoRoot, "packages/fake-upstream/src/cli.ts"), "--listen", "127.0.0.1:0"],
      ready: { kind: "line", pattern: /fake-upstream listening on (\S+)/ }
    })
    services.push(upstream)
    log(`fake upstream ${upstream.url} (pid ${upstream.pid})`)
    // The floor and the gateway report their heap allocation (V8's GC trace), for KB allocated per call.
    const floor = await startService({
      name: "floor-proxy",
      command: node,
      args: ["--trace-gc-nvp", join(repoRoot, "packages/bench/src/floor-proxy.ts"), "--upstream", upstream.url],
      ready: { kind: "line", pattern: /floor-proxy listening on (\S+)/ },
      gcTrace: true
    })
    services.push(floor)
    log(`floor proxy ${floor.url} (pid ${floor.pid})`)

    const all = scenarios(options.quick, options.dialect)
    const list = all.filter((s) => options.only === null || options.only.has(s.name))
    const directRequest = (base: string) => (s: Scenario) => ({
      url: base + s.direct.path,
      body: s.direct.body,
      stream: s.stream,
      headers: authHeaders(s.direct.dialect, s.direct.dialect === "gemini" ? UPSTREAM_GEMINI_KEY : UPSTREAM_OPENAI_KEY)
    })
    const targets: Array<Target> = [
      { name: "direct", url: upstream.url, pid: null, request: directRequest(upstream.url) },
      {
        name: "floor",
        url: floor.url,
        pid: floor.pid,
        request: directRequest(floor.url),
        allocatedBytes: floor.allocatedBytes
      }
    ]
    infos.push(
      {
        name: "direct",
        available: true,
        note: `fake upstream at ${upstream.url} (packages/fake-upstream), the baseline`
      },
      {
        name: "floor",
        available: true,
        note: "bare node:http + undici pass-through (src/floor-proxy.ts), no auth or billing"
      }
    )

    // The gateway: started here from a generated config, or given.
    let gateway: { url: string; pid: number | null; service: Service | null; db: string | null } | null = null
    let balanceBefore: bigint | null = null
    let billingProblem: string | null = null
    const billingHeaders = { authorization: `Bearer ${options.gatewayKey}`, ...options.headers }
    if (options.gatewayUrl !== null) {
      gateway = { url: options.gatewayUrl, pid: options.gatewayPid, service: null, db: null }
      infos.push({
        name: "modelgate",
        available: true,
        note: `external at ${options.gatewayUrl}${
          options.gatewayPid === null ? " (no --gateway-pid: no CPU or memory figures)" : ` pid ${options.gatewayPid}`
        }`
      })
      notes.push(
        "The gateway was started outside the benchmark: its configuration (auth, billing, limits, usage log) is whatever it was started with."
      )
      try {
        balanceBefore = await readApiBalance(options.gatewayUrl, billingHeaders)
      } catch (error) {
        billingProblem = `could not read the balance before the run: ${errorText(error)}`
      }
    } else if (!existsSync(bin)) {
      infos.push({ name: "modelgate", available: false, note: "packages/node-http/src/bin.ts does not exist yet" })
    } else {
      const port = await freePort()
      const config = join(work, "modelgate.yaml")
      const db = join(work, "modelgate.db")
      await writeFile(
        config,
        gatewayConfigText({
          listen: `127.0.0.1:${port}`,
          database: `sqlite:${db}`,
          upstreamUrl: upstream.url,
          openaiModels: [...new Set(all.flatMap((s) => s.models.openai))],
          geminiModels: [...new Set(all.flatMap((s) => s.models.gemini))]
        })
      )
      if (options.profile) {
        mkdirSync(profileDir, { recursive: true })
        // Profiles and snapshots are large: keep them out of git.
        writeFileSync(join(profileDir, ".gitignore"), "*\n")
      }
      const nodeFlags = options.profile
        ? [
          `--cpu-prof`,
          `--cpu-prof-dir=${profileDir}`,
          ...(options.heapSnapshot ? [`--heapsnapshot-signal=SIGUSR2`, `--diagnostic-dir=${profileDir}`] : [])
        ]
        : []
      try {
        const gw = await startService({
          name: "modelgate",
          command: node,
          args: ["--trace-gc-nvp", ...nodeFlags, bin, "serve", "--config", config],
          cwd: work,
          ready: { kind: "poll", url: `http://127.0.0.1:${port}/healthz`, baseUrl: `http://127.0.0.1:${port}` },
          gcTrace: true
        })
        services.push(gw)
        gateway = { url: gw.url, pid: gw.pid, service: gw, db }
        infos.push({
          name: "modelgate",
          available: true,
          note: `started from a generated config (key auth, billing, limits, usage log on), ${
            bin === bundle
              ? "the compiled bundle (packages/node-http/dist/modelgate.mjs)"
              : "the TypeScript sources (no bundle was built)"
          }, pid ${gw.pid}${options.profile ? ", with --cpu-prof" : ""}`
        })
        log(`modelgate ${gw.url} (pid ${gw.pid})`)
        try {
          balanceBefore = readSqliteBooks(db, BENCH_USER).balanceNanos
        } catch (error) {
          billingProblem = `could not read the balance before the run from ${db}: ${errorText(error)}`
        }
      } catch (error) {
        const message = errorText(error)
        infos.push({ name: "modelgate", available: false, note: "failed to start (see notes)" })
        notes.push(`modelgate failed to start: ${message.split("\n").slice(0, 6).join(" / ")}`)
        log(message)
      }
    }
    if (gateway !== null) {
      const gw = gateway
      targets.push({
        name: "modelgate",
        url: gw.url,
        pid: gw.pid,
        allocatedBytes: gw.service?.allocatedBytes,
        request: (s) => ({
          url: gw.url + s.gateway.path,
          body: s.gateway.body,
          stream: s.stream,
          headers: { ...authHeaders(s.gateway.dialect, options.gatewayKey), ...options.headers }
        })
      })
    }

    // Portkey: measured by default, in the same run, on the same-dialect OpenAI scenarios.
    if (!options.portkey) {
      infos.push({ name: "portkey", available: false, note: "left out (--without-portkey)" })
    } else if (options.dialect !== "openai") {
      infos.push({
        name: "portkey",
        available: false,
        note: "not measured in a Gemini-dialect run (the benchmark drives Portkey through its OpenAI surface)"
      })
    } else if (!existsSync(portkeyScript)) {
      infos.push({ name: "portkey", available: false, note: "@portkey-ai/gateway is not installed (pnpm install)" })
      notes.push(
        `Portkey was not measured: ${PORTKEY_SCRIPT} does not exist (run pnpm install), so the 5x-throughput target could not be judged.`
      )
    } else {
      const port = await freePort()
      try {
        const pk = await startService({
          name: "portkey",
          command: node,
          args: [portkeyScript, `--port=${port}`, "--headless"],
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
        infos.push({
          name: "portkey",
          available: true,
          note: `@portkey-ai/gateway 1.15.2 (Node build, headless), pid ${pk.pid}; same-dialect scenarios only`
        })
        log(`portkey ${pk.url} (pid ${pk.pid})`)
      } catch (error) {
        const message = errorText(error)
        infos.push({ name: "portkey", available: false, note: "failed to start (see notes)" })
        notes.push(`Portkey failed to start, so it was not measured: ${message.split("\n").slice(0, 6).join(" / ")}`)
        log(`! portkey did not start: ${message.split("\n")[0]}`)
      }
    }

    const wantSoak = options.only === null || options.only.has("soak")
    const soakTarget = targets.find((t) => t.name === "modelgate" && t.pid !== null) ??
      targets.find((t) => t.name === "floor")
    const plannedTargets = targets.map((t): PlanTarget => ({
      name: t.name,
      proxy: t.pid !== null,
      runs: (s) => t.request(s) !== null
    }))
    const tracingWanted = (options.only === null || options.only.has("tracing")) && options.gatewayUrl === null
    const tracingRuns = tracingWanted && gateway !== null
    if ((options.only === null || options.only.has("tracing")) && !tracingRuns) {
      notes.push(
        options.gatewayUrl !== null
          ? "Tracing's cost was not measured: it needs gateways the benchmark starts itself (one per mode and round), not --gateway-url."
          : "Tracing's cost was not measured: no gateway could be started."
      )
    }
    const plan = planRun(
      list,
      plannedTargets,
      options.timing,
      wantSoak && soakTarget !== undefined ? soakTarget.name : null,
      tracingRuns ? tracingPlanMs(options.tracing) : null
    )
    log(planLine(options, plannedTargets, wantSoak && soakTarget !== undefined ? soakTarget.name : null))

    const calls = new CallLog()
    const ctx: RunContext = {
      timing: options.timing,
      log,
      calls,
      notes,
      ...(options.profile && options.heapSnapshot && gateway?.service != null
        ? {
          afterMemoryPoint: async (target: Target) => {
            if (target.name !== "modelgate" || target.pid === null) return
            log("  heap snapshot of modelgate (SIGUSR2)")
            const file = await takeHeapSnapshot(target.pid, profileDir, `${target.url}/healthz`)
            if (file === null) notes.push("The heap snapshot after streams-1000 was not written within 3 minutes.")
            else heapSnapshots.push(file)
          }
        }
        : {})
    }
    const latency: Array<LatencyResult> = []
    const memory: Array<MemoryResult> = []
    // The profile's samples carry the monotonic clock process.hrtime reads: the measured span, to leave start-up and shutdown out.
    const measureStartUs = Number(process.hrtime.bigint() / 1000n)
    // The memory scenario runs first, on fresh processes: a heap that earlier
    // scenarios grew would otherwise dominate the "1,000 streams" RSS figure.
    const ordered = [...list.filter((s) => s.kind === "memory"), ...list.filter((s) => s.kind !== "memory")]
    for (const s of ordered) {
      log(`scenario ${s.name}`)
      if (s.kind === "latency") latency.push(await runLatency(s, targets, ctx))
      else memory.push(await runMemory(s, targets, ctx))
    }
    const portkeyStreamsFailed = [
      ...latency.flatMap((l) => (l.stream ? l.points : [])),
      ...memory.flatMap((m) => m.points)
    ]
      .some((p) => p.target === "portkey" && p.ok === 0)
    if (portkeyStreamsFailed) {
      notes.push(
        "Portkey answered streamed calls with HTTP 500 in this run (seen with @portkey-ai/gateway 1.15.2 on Node 24: its log says `tryTargetsRecursively error: immutable`, a TypeError from changing the headers of a fetch Response), so it has no stream figures."
      )
    }
    // Tracing: gateways of their own (off, then every call sampled), one at a time, the main gateway idle meanwhile.
    let tracing: TracingResult | null = null
    if (tracingRuns) {
      log("tracing: off against every call sampled")
      try {
        tracing = await measureTracing({
          node,
          bin,
          upstreamUrl: upstream.url,
          modes: ["off", "sampled"],
          timing: options.tracing,
          log
        })
        const headline = tracingHeadline(tracing)
        if (headline !== null) log(`  ${headline}`)
      } catch (error) {
        notes.push(`Tracing's cost could not be measured: ${errorText(error).split("\n").slice(0, 4).join(" / ")}`)
        log(`! tracing: ${errorText(error)}`)
      }
    }
    let soak: SoakResult | null = null
    if (wantSoak) {
      const small = all.find((s) => s.name === "chat-small")
      if (soakTarget !== undefined && small !== undefined) {
        if (soakTarget.name !== "modelgate") {
          notes.push("The soak ran against the floor proxy because no gateway process was measured.")
        }
        log(`soak on ${soakTarget.name}`)
        soak = await runSoak(small, soakTarget, ctx)
      }
    }

    const measureEndUs = Number(process.hrtime.bigint() / 1000n)

    // Billing: the gateway's books against the calls it served.
    let billing: BillingCheck
    const served = calls.get("modelgate")
    if (gateway === null) billing = notChecked("no gateway was measured")
    else if (billingProblem !== null || balanceBefore === null) {
      billing = notChecked(billingProblem ?? "no balance before the run")
    } else if (gateway.service !== null && gateway.db !== null) {
      // Stopping it flushes every usage record and returns every balance lease (and writes the CPU profile).
      log("stopping modelgate (flushes usage records and leases)")
      const how = await gateway.service.stop(120_000)
      services.splice(services.indexOf(gateway.service), 1)
      if (how === "killed") {
        notes.push(
          "modelgate did not stop within 2 minutes of SIGTERM and was killed: its last usage records may be missing."
        )
      }
      try {
        const books = readSqliteBooks(gateway.db, BENCH_USER, startedAtMs - 1000)
        billing = judgeBilling({
          source: "sqlite",
          calls: served,
          balanceBeforeNanos: balanceBefore,
          balanceAfterNanos: books.balanceNanos,
          records: books.records,
          okRecords: books.okRecords,
          chargedNanos: books.chargedNanos,
          ledgerNanos: books.ledgerNanos,
          open: books.open
        })
      } catch (error) {
        billing = notChecked(`could not read ${gateway.db}: ${errorText(error)}`)
      }
    } else {
      // An external gateway writes its records in batches: wait until the count stops changing.
      try {
        let usage = await readApiUsage(gateway.url, billingHeaders, startedAtMs - 1000)
        for (let i = 0; i < 20; i++) {
          await sleep(500)
          const again = await readApiUsage(gateway.url, billingHeaders, startedAtMs - 1000)
          if (again.records === usage.records && again.records >= served.ok) break
          usage = again
        }
        billing = judgeBilling({
          source: "api",
          calls: served,
          balanceBeforeNanos: balanceBefore,
          balanceAfterNanos: await readApiBalance(gateway.url, billingHeaders),
          records: usage.records,
          okRecords: null,
          chargedNanos: usage.chargedNanos
        })
      } catch (error) {
        billing = notChecked(`could not read the gateway's usage: ${errorText(error)}`)
      }
    }
    log(billing.summary)

    // The profile, written by the gateway as it stopped.
    let profile: ProfileSummary | null = null
    if (options.profile && existsSync(profileDir)) {
      try {
        profile = summariseDir(profileDir, { root: repoRoot, window: { startUs: measureStartUs, endUs: measureEndUs } })
        if (profile === null) {
          notes.push(
            `The gateway's profile: no .cpuprofile was written to ${
              relative(options.outDir, profileDir)
            } (did the gateway stop cleanly?).`
          )
        }
      } catch (error) {
        notes.push(`The gateway's CPU profile could not be read: ${errorText(error)}`)
      }
    }

    const finishedAt = new Date().toISOString()
    const elapsedMs = Date.now() - startedAtMs
    if (!options.quick && options.only === null && elapsedMs > BUDGET_SECONDS * 1000) {
      notes.push(
        `This run took ${formatDuration(elapsedMs)}, over the ${BUDGET_SECONDS / 60}-minute budget (planned: about ${
          formatDuration(plan.totalMs)
        }).`
      )
    }
    const results: Results = {
      version: 2,
      quick: options.quick,
      dialect: options.dialect,
      profiled: options.profile,
      startedAt,
      finishedAt,
      elapsedMs,
      plannedMs: plan.totalMs,
      machine: machine(loadAtStart),
      timing: options.timing,
      targets: infos,
      latency,
      memory,
      soak,
      tracing,
      billing,
      profile,
      profileDir: options.profile ? relative(options.outDir, profileDir) : null,
      heapSnapshots: heapSnapshots.map((f) => relative(options.outDir, f)),
      verdicts: verdicts(latency, memory, soak, tracing),
      notes
    }
    const written = await writeReport(results, options.outDir)
    log("")
    for (const v of results.verdicts) log(`${v.status.padEnd(12)} ${v.target}: ${v.measured}`)
    log(billing.summary)
    log(`took ${formatDuration(elapsedMs)} (planned about ${formatDuration(plan.totalMs)})`)
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
      console.error(errorText(error))
      console.error(USAGE)
      process.exit(1)
    }
  )
}
