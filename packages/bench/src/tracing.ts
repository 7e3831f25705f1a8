/**
 * `pnpm bench:tracing`: what tracing costs a call, measured on the gateway
 * process alone. For each mode a fresh gateway (the bundle, or the sources
 * when it is not built) serves the same closed loop of small chat calls
 * against the fake upstream, and the gateway's CPU time (`/proc`) and
 * JavaScript heap allocation (V8's GC trace) over the measured calls are
 * divided by their number:
 *
 * - `off`: no OTLP endpoint, so no tracer, no span (the default);
 * - `unsampled`: tracing on, sampler `always_off` (each call gets its
 *   server span object, none is recorded or exported);
 * - `sampled`: tracing on, every call sampled and exported in protobuf to a
 *   receiver in this process that accepts everything.
 *
 * Options: `--calls N` (measured calls per mode, default 5000), `--warmup N`
 * (default 1000), `--concurrency N` (default 4), `--modes off,sampled`.
 * The machine should be quiet: CPU figures move with other load; allocation
 * figures much less. Heap allocation is summed at each collection, so a mode
 * may be off by up to one young generation divided by the calls.
 *
 * @since 0.1.0
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:http"
import { loadavg, tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { BENCH_KEY, gatewayConfigText } from "./GatewayConfig.ts"
import { closedLoop } from "./LoadGenerator.ts"
import { cpuTimeMs } from "./Proc.ts"
import { freePort, killAll, startService } from "./Services.ts"

const args = process.argv.slice(2)
const option = (name: string, fallback: string): string => {
  const at = args.indexOf(`--${name}`)
  return at === -1 ? fallback : args[at + 1] ?? fallback
}
const calls = Number(option("calls", "5000"))
const warmup = Number(option("warmup", "1000"))
const concurrency = Number(option("concurrency", "4"))
const modes = option("modes", "off,unsampled,sampled").split(",")

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../..")
const node = process.execPath

/** A collector that accepts everything (answers an empty ExportTraceServiceResponse). */
const receiver = async () => {
  let requests = 0
  let bytes = 0
  const server = createServer((req, res) => {
    req.on("data", (chunk: Buffer) => bytes += chunk.length)
    req.on("end", () => {
      requests++
      res.writeHead(200, { "content-type": "application/x-protobuf" }).end()
    })
  })
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done))
  const address = server.address()
  if (address === null || typeof address === "string") throw new Error("no address")
  return {
    url: `http://127.0.0.1:${address.port}`,
    stats: () => ({ requests, bytes }),
    close: () => new Promise<void>((done) => server.close(() => done()))
  }
}

const envOf = (mode: string, collector: string): Record<string, string> => {
  switch (mode) {
    case "off":
      return { OTEL_EXPORTER_OTLP_ENDPOINT: "", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "" }
    case "unsampled":
      return { OTEL_EXPORTER_OTLP_ENDPOINT: collector, OTEL_TRACES_SAMPLER: "always_off" }
    case "sampled":
      return { OTEL_EXPORTER_OTLP_ENDPOINT: collector, OTEL_TRACES_SAMPLER: "always_on" }
    default:
      throw new Error(`unknown mode ${mode}: use off, unsampled, sampled`)
  }
}

const main = async () => {
  const collector = await receiver()
  const upstream = await startService({
    name: "fake-upstream",
    command: node,
    args: [join(repoRoot, "packages/fake-upstream/src/cli.ts"), "--listen", "127.0.0.1:0"],
    ready: { kind: "line", pattern: /fake-upstream listening on (\S+)/ }
  })
  const bundle = join(repoRoot, "packages/node-http/dist/modelgate.mjs")
  const { existsSync } = await import("node:fs")
  const bin = existsSync(bundle) ? bundle : join(repoRoot, "packages/node-http/src/bin.ts")
  const rows: Array<string> = []
  try {
    for (const mode of modes) {
      const work = mkdtempSync(join(tmpdir(), "modelgate-bench-tracing-"))
      const port = await freePort()
      const config = join(work, "gateway.json")
      writeFileSync(
        config,
        gatewayConfigText({
          listen: `127.0.0.1:${port}`,
          database: `sqlite:${join(work, "modelgate.db")}`,
          upstreamUrl: upstream.url,
          openaiModels: ["gpt-4o-mini"],
          geminiModels: []
        })
      )
      const gateway = await startService({
        name: `modelgate (${mode})`,
        command: node,
        args: ["--trace-gc-nvp", bin, "serve", "--config", config],
        cwd: work,
        env: envOf(mode, collector.url),
        ready: { kind: "poll", url: `http://127.0.0.1:${port}/healthz`, baseUrl: `http://127.0.0.1:${port}` },
        gcTrace: true
      })
      try {
        const spec = {
          url: `${gateway.url}/v1/chat/completions`,
          headers: { authorization: `Bearer ${BENCH_KEY}`, "content-type": "application/json" },
          body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Say hello" }] }),
          concurrency
        }
        await closedLoop({ ...spec, requests: warmup })
        const cpu0 = cpuTimeMs(gateway.pid)
        const heap0 = gateway.allocatedBytes() ?? 0
        const exported0 = collector.stats()
        const result = await closedLoop({ ...spec, requests: calls })
        const cpu = cpuTimeMs(gateway.pid) - cpu0
        const heap = (gateway.allocatedBytes() ?? 0) - heap0
        const exported = collector.stats()
        if (result.ok !== calls) throw new Error(`${mode}: ${result.ok} of ${calls} calls succeeded`)
        rows.push(
          `| ${mode} | ${calls} | ${(cpu * 1000 / calls).toFixed(1)} | ${(heap / 1024 / calls).toFixed(1)} | ${
            exported.requests - exported0.requests
          } | ${((exported.bytes - exported0.bytes) / 1024).toFixed(0)} |`
        )
      } finally {
        await gateway.stop()
        rmSync(work, { recursive: true, force: true })
      }
    }
  } finally {
    await upstream.stop()
    await collector.close()
  }
  console.log(`load average at the end: ${loadavg().map((l) => l.toFixed(2)).join(" ")}; concurrency ${concurrency}`)
  console.log("| mode | calls | gateway CPU µs / call | gateway heap KB allocated / call | exports | KB exported |")
  console.log("| --- | ---: | ---: | ---: | ---: | ---: |")
  for (const row of rows) console.log(row)
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
