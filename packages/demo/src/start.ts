#!/usr/bin/env node
/**
 * `pnpm start`: the gateway with its demo setup, on this machine only. Starts
 * the fake upstream (which stands in for OpenAI, Gemini and Anthropic, so
 * nothing leaves the machine), then `modelgate serve` with no configuration,
 * which serves the demo setup on its own database (`data/demo/`) against that
 * upstream (`MODELGATE_DEMO_UPSTREAM`). Ctrl-C stops both, and exits 0.
 *
 * The root `start` script runs this with SIGINT ignored in its shells (`trap
 * '' INT`): a terminal's Ctrl-C reaches every process of the group, and the
 * shells (pnpm's and the `node` wrapper pnpm links) would otherwise die of
 * it, which pnpm reports as "ELIFECYCLE Command failed". This launcher and the
 * gateway install their own SIGINT handlers, so they still stop on it.
 *
 * @since 0.1.0
 */
import { startFakeUpstream } from "@modelgate/fake-upstream"
import { spawn } from "node:child_process"
import { binary } from "./Gateway.ts"

const upstream = await startFakeUpstream({ host: "127.0.0.1", port: 0 })
const gateway = spawn(process.execPath, [binary, "serve"], {
  stdio: "inherit",
  env: { ...process.env, MODELGATE_DEMO_UPSTREAM: upstream.url }
})
const forward = (signal: NodeJS.Signals) => () => {
  gateway.kill(signal)
}
process.on("SIGINT", forward("SIGINT"))
process.on("SIGTERM", forward("SIGTERM"))
gateway.once("exit", (code, signal) => {
  void upstream.close().then(() => process.exit(code ?? (signal === null ? 0 : 1)))
})
