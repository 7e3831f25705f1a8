/**
 * Starts the real gateway in-process for the browser tests: node-http's own
 * application (`Gateway.app`) and service graph (`Server.services`) on a fresh
 * SQLite file and an ephemeral port, the fake upstream behind it, the built
 * console, and Chromium driven by playwright-core.
 *
 * When node-http's `Server.layer` already mounts the management API, it is used
 * as is. Until then the server is assembled here the way node-http will mount
 * it: `Gateway.Extensions` with `Handlers.handle` for `/api/*` and the console's
 * `dist/` for `/console/*`, plus the services `handle` needs that
 * `Server.services` does not provide yet (redemption, a channel probe,
 * sessions and the sign-in limiter).
 */
import { NodeHttpClient, NodeHttpServer } from "@effect/platform-node"
import * as Handlers from "@modelgate/admin-api/Handlers"
import { ChannelProbe } from "@modelgate/core"
import { type FakeUpstream, startFakeUpstream } from "@modelgate/fake-upstream"
import type { ConfigFile } from "@modelgate/node-http/ConfigFile"
import * as Gateway from "@modelgate/node-http/Gateway"
import * as Server from "@modelgate/node-http/Server"
import { resolveSettings } from "@modelgate/node-http/Settings"
import { Redemption } from "@modelgate/store/Redemption"
import { Duration, Effect, Layer, ManagedRuntime } from "effect"
import { HttpServer, HttpServerResponse } from "effect/http"
import { SqlClient } from "effect/sql"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { createServer } from "node:http"
import { tmpdir } from "node:os"
import { dirname, extname, join, normalize, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { type Browser, chromium, type Page } from "playwright-core"

export const ADMIN = { name: "admin", password: "admin-password-1" }
export const ALICE = { name: "alice", password: "alice-password-1" }
export const BOB = { name: "bob", password: "bob-password-11" }
export const BOB_KEY = "sk-e2e-bob-000000000000000000000000000000000"

const here = dirname(fileURLToPath(import.meta.url))
export const consoleDir = resolve(here, "../dist")
export const screenshotDir = resolve(here, "../../../docs/screenshots")

/** The gateway's configuration for the browser tests. */
export const config = (upstream: string): ConfigFile => ({
  listen: "127.0.0.1:0",
  log_level: "error",
  channels: [
    {
      name: "openai-main",
      type: "openai",
      base_url: `${upstream}/v1`,
      api_key: "sk-upstream-openai-7f3a",
      models: ["gpt-4o-mini", "gpt-4o"],
      model_map: { "gpt-4o": "gpt-4o-2024-08-06" },
      groups: ["default", "vip"]
    },
    {
      name: "gemini-main",
      type: "gemini",
      base_url: upstream,
      api_key: "gemini-upstream-key-91c2",
      models: ["gemini-2.5-flash"],
      groups: ["default", "vip"]
    }
  ],
  models: {
    "gpt-4o-mini": { input: 0.15, output: 0.6, cached_input: 0.075, display_name: "GPT-4o mini" },
    "gpt-4o": { input: 2.5, output: 10, cached_input: 1.25, display_name: "GPT-4o" },
    "gemini-2.5-flash": { input: 0.3, output: 2.5, display_name: "Gemini 2.5 Flash", input_token_limit: 1_048_576, output_token_limit: 65_536 }
  },
  groups: { default: { ratio: 1, selectable: true }, vip: { ratio: 0.8, rpm: 600 } },
  users: [
    { name: ADMIN.name, role: "admin", password: ADMIN.password, balance: 100 },
    { name: ALICE.name, role: "user", password: ALICE.password, balance: 5 },
    { name: BOB.name, role: "user", password: BOB.password, balance: 2, keys: [{ name: "bob-laptop", secret: BOB_KEY, group: "default" }] }
  ]
})

const mime: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".json": "application/json"
}

/** Serves `dist/` under /console/, with index.html for client routes. */
const serveConsole = (path: string) =>
  Effect.sync(() => {
    const rest = path === "/" || path === "/console" ? "/" : path.replace(/^\/console/, "")
    const file = normalize(join(consoleDir, rest))
    if (file.startsWith(consoleDir) && extname(file) !== "" && existsSync(file)) {
      return HttpServerResponse.uint8Array(readFileSync(file), {
        contentType: mime[extname(file)] ?? "application/octet-stream"
      })
    }
    return HttpServerResponse.uint8Array(readFileSync(join(consoleDir, "index.html")), { contentType: mime[".html"]! })
  })

/** A channel probe that sends one real one-token chat request to the channel (OpenAI and Gemini dialects). */
const probeLayer = Layer.succeed(ChannelProbe.ChannelProbe)({
  probe: (channel, model) =>
    Effect.promise(async () => {
      const target = model ?? channel.models[0]!
      const upstream = channel.modelMap[target] ?? target
      const started = performance.now()
      try {
        const response = channel.type === "gemini"
          ? await fetch(`${channel.baseUrl}/v1beta/models/${upstream}:generateContent`, {
            method: "POST",
            headers: { "content-type": "application/json", "x-goog-api-key": channel.apiKeys[0] ?? "" },
            body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "ping" }] }], generationConfig: { maxOutputTokens: 1 } })
          })
          : await fetch(`${channel.baseUrl}/chat/completions`, {
            method: "POST",
            headers: { "content-type": "application/json", authorization: `Bearer ${channel.apiKeys[0] ?? ""}` },
            body: JSON.stringify({ model: upstream, max_tokens: 1, messages: [{ role: "user", content: "ping" }] })
          })
        const text = await response.text()
        const latencyMs = Math.round(performance.now() - started)
        return { ok: response.ok, latencyMs, status: response.status, message: response.ok ? `${upstream} answered` : text.slice(0, 200) }
      } catch (error) {
        return { ok: false, latencyMs: Math.round(performance.now() - started), status: null, message: String(error) }
      }
    })
})

const extensionsLayer = Layer.effect(
  Gateway.Extensions,
  Effect.gen(function*() {
    const context = yield* Effect.context<Handlers.Requirements>()
    const sql = yield* SqlClient.SqlClient
    return Gateway.Extensions.of({
      api: (request) => Effect.provideContext(Handlers.handle(request), context),
      console: serveConsole,
      ready: sql`SELECT 1`.pipe(Effect.timeout(Duration.seconds(2)), Effect.as(true), Effect.orElseSucceed(() => false))
    })
  })
)

/** A running gateway. */
export interface E2EGateway {
  readonly url: string
  readonly upstream: FakeUpstream
  readonly close: () => Promise<void>
}

const mounted = async (url: string) => (await fetch(`${url}/api/auth/session`)).status === 401

/** Starts the fake upstream and the gateway with the console. */
export const startGateway = async (): Promise<E2EGateway> => {
  if (!existsSync(join(consoleDir, "index.html"))) {
    throw new Error(`The console is not built: run 'pnpm --filter @modelgate/console build' (expected ${consoleDir}/index.html).`)
  }
  const upstream = await startFakeUpstream({ port: 0 })
  const dir = mkdtempSync(join(tmpdir(), "modelgate-console-e2e-"))
  const file = { ...config(upstream.url), database: `sqlite:${join(dir, "gateway.db")}`, secret_file: join(dir, "key") }
  const settings = await Effect.runPromise(resolveSettings(file, {}, { consoleDir, source: "console e2e config" }))
  const start = async (layer: Layer.Layer<HttpServer.HttpServer, unknown>) => {
    const runtime = ManagedRuntime.make(Layer.fresh(layer))
    const server = await runtime.runPromise(Effect.service(HttpServer.HttpServer))
    const address = server.address
    if (!("port" in address)) throw new Error("expected an IP address")
    return { runtime, url: `http://127.0.0.1:${address.port}` }
  }
  let running = await start(Server.layer(settings, file) as Layer.Layer<HttpServer.HttpServer, unknown>)
  if (!(await mounted(running.url))) {
    await running.runtime.dispose()
    const admin = Layer.mergeAll(Handlers.layer(), Redemption.layer, probeLayer)
    const layer = HttpServer.serve(Gateway.app).pipe(
      Layer.provide(extensionsLayer),
      Layer.provide(admin),
      Layer.provide(Server.services(settings, file)),
      Layer.provide(NodeHttpClient.layerUndici),
      Layer.provideMerge(NodeHttpServer.layer(createServer, { host: "127.0.0.1", port: 0 })),
      Layer.provide(Server.logging(settings))
    )
    running = await start(layer as Layer.Layer<HttpServer.HttpServer, unknown>)
  }
  const { runtime, url } = running
  return {
    url,
    upstream,
    close: async () => {
      await runtime.dispose()
      await upstream.close()
      rmSync(dir, { recursive: true, force: true })
    }
  }
}

/**
 * Launches Debian's Chromium headless. playwright-core gives every launch a
 * fresh temporary `--user-data-dir` of its own (it refuses one in `args`), so
 * no profile survives between runs.
 */
export const launchBrowser = async (): Promise<{ readonly browser: Browser; readonly close: () => Promise<void> }> => {
  const browser = await chromium.launch({
    executablePath: process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium",
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync"
    ]
  })
  return {
    browser,
    close: async () => {
      await browser.close()
    }
  }
}

/** Saves a screenshot of the page into docs/screenshots/NAME.png. */
export const screenshot = async (page: Page, name: string) => {
  mkdirSync(screenshotDir, { recursive: true })
  await page.waitForTimeout(300)
  // Transient toasts would cover the header in the picture.
  await page.addStyleTag({ content: ".mantine-Notifications-root { display: none !important; }" })
  await page.screenshot({ path: join(screenshotDir, `${name}.png`), fullPage: true })
}

/** Signs in through the form. */
export const signIn = async (page: Page, url: string, user: { readonly name: string; readonly password: string }) => {
  await page.goto(`${url}/console/`)
  await page.getByLabel(/User name|用户名/).fill(user.name)
  await page.getByLabel(/^Password|^密码/).fill(user.password)
  await page.getByRole("button", { name: /Sign in|登录/ }).click()
  await page.getByTestId("user-menu").waitFor()
}
