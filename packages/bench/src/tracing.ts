/**
 * `pnpm bench:tracing`: what tracing costs a call, measured on the gateway
 * process alone (`TracingCost`): for each mode a fresh gateway (the bundle,
 * or the sources when it is not built) serves the same closed loop of small
 * chat calls against the fake upstream, and the gateway's CPU time (`/proc`)
 * and JavaScript heap allocation (V8's GC trace) over the measured calls are
 * divided by their number. `pnpm bench` runs the same as its `tracing` step
 * (off and sampled only) and puts it in docs/benchmarks.md.
 *
 * Options: `--calls N` (measured calls per mode and round, default 5000),
 * `--warmup N` (default 1000), `--concurrency N` (default 4), `--rounds N`
 * (default 1), `--modes off,unsampled,sampled`, `--cpu-prof-dir DIR` and `--heap-prof-dir DIR`
 * (each gateway runs under `--cpu-prof` or `--heap-prof`, its profile written there). The machine should be quiet:
 * CPU figures move with other load; allocation figures much less.
 *
 * @since 0.1.0
 */
import { existsSync } from "node:fs"
import { loadavg } from "node:os"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { killAll, startService } from "./Services.ts"
import { measureTracing, TRACING_MODES, tracingMarkdown, type TracingMode } from "./TracingCost.ts"

const args = process.argv.slice(2)
const option = (name: string, fallback: string): string => {
  const at = args.indexOf(`--${name}`)
  return at === -1 ? fallback : args[at + 1] ?? fallback
}
const modes = option("modes", "off,unsampled,sampled").split(",") as Array<TracingMode>
for (const mode of modes) {
  if (!TRACING_MODES.includes(mode)) throw new Error(`unknown mode ${mode}: use ${TRACING_MODES.join(", ")}`)
}

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../..")
const node = process.execPath

const main = async () => {
  const upstream = await startService({
    name: "fake-upstream",
    command: node,
    args: [join(repoRoot, "packages/fake-upstream/src/cli.ts"), "--listen", "127.0.0.1:0"],
    ready: { kind: "line", pattern: /fake-upstream listening on (\S+)/ }
  })
  const bundle = join(repoRoot, "packages/node-http/dist/modelgate.mjs")
  try {
    const result = await measureTracing({
      node,
      bin: existsSync(bundle) ? bundle : join(repoRoot, "packages/node-http/src/bin.ts"),
      upstreamUrl: upstream.url,
      modes,
      timing: {
        calls: Number(option("calls", "5000")),
        warmup: Number(option("warmup", "1000")),
        concurrency: Number(option("concurrency", "4")),
        rounds: Number(option("rounds", "1"))
      },
      log: (line) => process.stderr.write(`${line}\n`),
      nodeFlags: [
        ...(args.includes("--cpu-prof-dir") ? ["--cpu-prof", `--cpu-prof-dir=${option("cpu-prof-dir", "")}`] : []),
        ...(args.includes("--heap-prof-dir") ? ["--heap-prof", `--heap-prof-dir=${option("heap-prof-dir", "")}`] : [])
      ]
    })
    console.log(`load average at the end: ${loadavg().map((l) => l.toFixed(2)).join(" ")}`)
    for (const line of tracingMarkdown(result)) console.log(line)
  } finally {
    await upstream.stop()
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
