/**
 * Starts a real gateway in-process for end-to-end tests: a fresh SQLite file,
 * the fake upstream, an ephemeral port. Tests talk to it over HTTP with the
 * official SDKs, exactly as users do.
 */
import { type FakeUpstreamServer, startFakeUpstream } from "@modelgate/fake-upstream"
import { Effect, Layer, ManagedRuntime } from "effect"
import { HttpServer } from "effect/http"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { ConfigFile } from "../../src/ConfigFile.ts"
import * as Server from "../../src/Server.ts"
import { resolveSettings } from "../../src/Settings.ts"

export interface TestGateway {
  readonly url: string
  readonly database: string
  readonly upstream: FakeUpstreamServer
  readonly dir: string
  readonly close: () => Promise<void>
}

export const KEY = "sk-test-alice-000000000000000000000000000000"
export const NARROW_KEY = "sk-test-alice-narrow-0000000000000000000000"
export const VIP_KEY = "sk-test-bob-vip-00000000000000000000000000000"
export const DISABLED_KEY = "sk-test-alice-disabled-000000000000000000000"
export const EXPIRED_KEY = "sk-test-alice-expired-0000000000000000000000"

/** A config with an OpenAI and a Gemini channel on the fake upstream and a few users and keys. */
export const baseConfig = (upstream: string): ConfigFile => ({
  listen: "127.0.0.1:0",
  log_level: "error",
  channels: [
    {
      name: "fake-openai",
      type: "openai",
      base_url: `${upstream}/v1`,
      api_key: "sk-upstream",
      models: ["gpt-4o-mini", "gpt-4o", "free-model", "unpriced-model"],
      model_map: { "gpt-4o": "gpt-4o-2024-08-06" },
      groups: ["default"]
    },
    {
      // Models whose upstream names steer the fake upstream's behaviour.
      name: "fake-behaviours",
      type: "openai",
      base_url: `${upstream}/v1`,
      api_key: "sk-upstream",
      models: ["big-stream", "cut-stream", "stall-stream", "tool-model"],
      model_map: {
        "big-stream": "gpt-chunks-16000x2048",
        "cut-stream": "gpt-cut-5",
        "stall-stream": "gpt-stall-2",
        "tool-model": "gpt-tools"
      }
    },
    {
      name: "fake-broken",
      type: "openai",
      base_url: `${upstream}/v1`,
      api_key: "sk-upstream",
      models: ["broken-model"],
      headers: { "x-fake-fail": "500" }
    },
    {
      name: "fake-rejecting",
      type: "openai",
      base_url: `${upstream}/v1`,
      api_key: "sk-upstream",
      models: ["rejecting-model"],
      headers: { "x-fake-fail": "400" }
    },
    {
      name: "fake-vip",
      type: "openai",
      base_url: `${upstream}/v1`,
      api_key: "sk-upstream",
      models: ["vip-model"],
      groups: ["vip"]
    },
    {
      name: "fake-gemini",
      type: "gemini",
      base_url: upstream,
      api_key: "g-upstream",
      models: ["gemini-2.5-flash", "gemini-tool-model"],
      model_map: { "gemini-tool-model": "gemini-2.5-flash-tools" },
      groups: ["default", "vip"]
    }
  ],
  models: {
    "gpt-4o-mini": { input: 0.15, output: 0.6 },
    "gpt-4o": { input: 2.5, output: 10 },
    "vip-model": { input: 1, output: 1 },
    "free-model": { free: true },
    "big-stream": { input: 0.15, output: 0.6 },
    "cut-stream": { input: 0.15, output: 0.6 },
    "stall-stream": { input: 0.15, output: 0.6 },
    "tool-model": { input: 0.15, output: 0.6 },
    "broken-model": { input: 1, output: 1 },
    "rejecting-model": { input: 1, output: 1 },
    "gemini-2.5-flash": { input: 0.3, output: 2.5 },
    "gemini-tool-model": { input: 0.3, output: 2.5 },
    "orphan-model": { input: 1, output: 1 }
  },
  aliases: { "gemini-*": "gemini-2.5-flash" },
  groups: { default: { ratio: 1 }, vip: { ratio: 0.5 } },
  users: [
    {
      name: "alice",
      balance: 10,
      keys: [
        { name: "main", secret: KEY },
        { name: "narrow", secret: NARROW_KEY, models: ["gpt-4o-mini"] },
        { name: "off", secret: DISABLED_KEY, enabled: false },
        { name: "old", secret: EXPIRED_KEY, expires_at: "2020-01-01T00:00:00Z" }
      ]
    },
    { name: "bob", balance: 1, keys: [{ name: "vip", secret: VIP_KEY, group: "vip" }] }
  ]
})

/**
 * Starts the fake upstream and a gateway configured by `configure` (given
 * the upstream's address, and the upstream itself: its Vertex key file), on
 * `database` (default a fresh SQLite file), with the key file `secretFile`
 * (default a fresh one; a restart on the same database needs the same).
 */
export const startGateway = async (
  configure: (upstreamUrl: string, upstream: FakeUpstreamServer) => ConfigFile = baseConfig,
  database?: string,
  secretFile?: string
): Promise<TestGateway> => {
  const upstream = await startFakeUpstream({ port: 0 })
  const dir = mkdtempSync(join(tmpdir(), "modelgate-test-"))
  const configured = configure(upstream.url, upstream)
  const file = {
    ...configured,
    // Tests read final balances (no lease open) right after their calls: a charged user's lease is not kept
    // for the production cover window unless the test asks for it (lease cover has its own tests).
    billing: { lease_cover_seconds: 0, ...configured.billing },
    database: database ?? `sqlite:${join(dir, "gateway.db")}`,
    shutdown_grace_seconds: 2,
    secret_file: secretFile ?? join(dir, "key")
  }
  const settings = await Effect.runPromise(resolveSettings(file, {}, { consoleDir: null, source: "test config" }))
  const runtime = ManagedRuntime.make(Layer.fresh(Server.layer(settings, file)))
  const server = await runtime.runPromise(Effect.service(HttpServer.HttpServer))
  const address = server.address
  if (!("port" in address)) throw new Error("expected an IP address")
  return {
    url: `http://127.0.0.1:${address.port}`,
    database: file.database,
    upstream,
    dir,
    close: async () => {
      await runtime.dispose()
      await upstream.close()
      rmSync(dir, { recursive: true, force: true })
    }
  }
}
