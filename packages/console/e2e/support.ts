/**
 * Starts the real gateway in-process for the browser tests: node-http's own
 * server (`Server.layer`, which mounts the management API under /api/ and the
 * built console under /console/) on a fresh SQLite file and an ephemeral port,
 * the fake upstream behind it, and Chromium driven by playwright-core.
 *
 * Also starts the real binary (`modelgate serve`) for the first-start test,
 * and says whether a Chromium is there to drive (`browserMissing`).
 */
import { type FakeUpstreamServer, startFakeUpstream } from "@modelgate/fake-upstream"
import type { ConfigFile } from "@modelgate/node-http/ConfigFile"
import * as Server from "@modelgate/node-http/Server"
import { resolveSettings } from "@modelgate/node-http/Settings"
import { Effect, Layer, ManagedRuntime } from "effect"
import { HttpServer } from "effect/http"
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { type Browser, chromium, type Page } from "playwright-core"

export const ADMIN = { name: "admin", password: "admin-password-1" }
export const ALICE = { name: "alice", password: "alice-password-1" }
export const BOB = { name: "bob", password: "bob-password-11" }
export const BOB_KEY = "sk-e2e-bob-000000000000000000000000000000000"

const here = dirname(fileURLToPath(import.meta.url))
export const consoleDir = resolve(here, "../dist")
/**
 * Where screenshots go: docs/screenshots/ when `MODELGATE_SCREENSHOTS=1` (to
 * refresh the pictures the docs show), otherwise a scratch folder, so running
 * the tests never changes tracked files.
 */
export const screenshotDir = process.env["MODELGATE_SCREENSHOTS"] === "1"
  ? resolve(here, "../../../docs/screenshots")
  : join(tmpdir(), "modelgate-console-screenshots")

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
    // A price per request makes a call's cost show in cents, so the balance visibly moves.
    "gpt-4o": { input: 2.5, output: 10, cached_input: 1.25, per_request: 0.02, display_name: "GPT-4o" },
    "gemini-2.5-flash": {
      input: 0.3,
      output: 2.5,
      display_name: "Gemini 2.5 Flash",
      input_token_limit: 1_048_576,
      output_token_limit: 65_536
    }
  },
  groups: { default: { ratio: 1, selectable: true }, vip: { ratio: 0.8, rpm: 600 } },
  users: [
    { name: ADMIN.name, role: "admin", password: ADMIN.password, balance: 100 },
    { name: ALICE.name, role: "user", password: ALICE.password, balance: 5 },
    {
      name: BOB.name,
      role: "user",
      password: BOB.password,
      balance: 2,
      keys: [{ name: "bob-laptop", secret: BOB_KEY, group: "default" }]
    }
  ]
})

/** A running gateway. */
export interface E2EGateway {
  readonly url: string
  readonly upstream: FakeUpstreamServer
  readonly close: () => Promise<void>
}

const requireBuiltConsole = () => {
  if (!existsSync(join(consoleDir, "index.html"))) {
    throw new Error(
      `The console is not built: run 'pnpm --filter @modelgate/console build' (expected ${consoleDir}/index.html).`
    )
  }
}

/**
 * Starts the fake upstream and the gateway (node-http's `Server.layer`) with
 * the console; `overrides` replace top-level fields of the configuration
 * (a function of the fake upstream's address, for channels).
 */
export const startGateway = async (
  overrides: Partial<ConfigFile> | ((upstream: string) => Partial<ConfigFile>) = {}
): Promise<E2EGateway> => {
  requireBuiltConsole()
  const upstream = await startFakeUpstream({ port: 0 })
  const dir = mkdtempSync(join(tmpdir(), "modelgate-console-e2e-"))
  const file = {
    ...config(upstream.url),
    ...(typeof overrides === "function" ? overrides(upstream.url) : overrides),
    database: `sqlite:${join(dir, "gateway.db")}`,
    secret_file: join(dir, "key")
  }
  const settings = await Effect.runPromise(resolveSettings(file, {}, { consoleDir, source: "console e2e config" }))
  const runtime = ManagedRuntime.make(
    Layer.fresh(Server.layer(settings, file) as Layer.Layer<HttpServer.HttpServer, unknown>)
  )
  const server = await runtime.runPromise(Effect.service(HttpServer.HttpServer))
  const address = server.address
  if (!("port" in address)) throw new Error("expected the gateway to listen on an IP address")
  const url = `http://127.0.0.1:${address.port}`
  const close = async () => {
    await runtime.dispose()
    await upstream.close()
    rmSync(dir, { recursive: true, force: true })
  }
  // The browser tests are about the console and its API: a server without them cannot pass any of them.
  const probe = await fetch(`${url}/api/auth/session`)
  if (probe.status !== 401 || !(probe.headers.get("content-type") ?? "").includes("application/json")) {
    await close()
    throw new Error(
      `node-http's Server.layer does not serve the management API: GET /api/auth/session answered ${probe.status}, expected a JSON 401.`
    )
  }
  const page = await fetch(`${url}/console/`)
  if (!page.ok || !(await page.text()).includes("<div id=\"root\">")) {
    await close()
    throw new Error(`node-http's Server.layer does not serve the console: GET /console/ answered ${page.status}.`)
  }
  return { url, upstream, close }
}

/** A free TCP port on the loopback address. */
export const freePort = () =>
  new Promise<number>((resolvePort, reject) => {
    const probe = createServer().once("error", reject).listen(0, "127.0.0.1", () => {
      const port = (probe.address() as { port: number }).port
      probe.close(() => resolvePort(port))
    })
  })

/** The real binary, running: its address, everything it printed so far, and a way to stop it. */
export interface Process {
  readonly url: string
  readonly output: () => string
  readonly child: ChildProcess
  readonly close: () => Promise<void>
}

/**
 * Starts `modelgate serve --config FILE` (node-http's bin) as operators do,
 * with `config` written to a YAML-compatible JSON file in a fresh directory,
 * and waits until it answers `/healthz`.
 */
export const startProcess = async (configFor: (dir: string) => Record<string, unknown>): Promise<Process> => {
  requireBuiltConsole()
  const dir = mkdtempSync(join(tmpdir(), "modelgate-console-process-"))
  const port = await freePort()
  const path = join(dir, "modelgate.yaml")
  // JSON is YAML: no quoting rules to get wrong.
  writeFileSync(
    path,
    JSON.stringify({ listen: `127.0.0.1:${port}`, database: `sqlite:${join(dir, "gateway.db")}`, ...configFor(dir) })
  )
  const child = spawn(process.execPath, [nodeHttpBin, "serve", "--config", path], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, MODELGATE_SECRET: "console-e2e-process-secret-0123456789" }
  })
  let output = ""
  child.stdout!.on("data", (chunk) => output += chunk)
  child.stderr!.on("data", (chunk) => output += chunk)
  const exited = new Promise<void>((resolveExit) => child.once("exit", () => resolveExit()))
  const close = async () => {
    if (child.exitCode === null) {
      child.kill("SIGTERM")
      await exited
    }
    rmSync(dir, { recursive: true, force: true })
  }
  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 60_000
  while (Date.now() < deadline) {
    if (child.exitCode !== null) {
      await close()
      throw new Error(`modelgate serve exited with ${child.exitCode}:\n${output}`)
    }
    const healthy = await fetch(`${url}/healthz`).then((r) => r.ok, () => false)
    if (healthy) return { url, output: () => output, child, close }
    await new Promise((r) => setTimeout(r, 100))
  }
  await close()
  throw new Error(`modelgate serve did not answer /healthz within 60 s:\n${output}`)
}

const nodeHttpBin = resolve(here, "../../node-http/src/bin.ts")

/** Where Chromium is expected: `CHROMIUM_PATH`, else Debian's `/usr/bin/chromium`. */
export const chromiumPath = (): string => process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium"

/**
 * Why the browser tests cannot run here (no Chromium at `chromiumPath()`), or
 * undefined when they can. CI installs Chromium (.ci/run), so there they run.
 */
export const browserMissing = (): string | undefined =>
  existsSync(chromiumPath())
    ? undefined
    : `no Chromium at ${chromiumPath()}: install it (apt-get install chromium) or set CHROMIUM_PATH to run the console's browser tests`

/**
 * Launches Debian's Chromium headless. playwright-core gives every launch a
 * fresh temporary `--user-data-dir` of its own (it refuses one in `args`), so
 * no profile survives between runs.
 */
export const launchBrowser = async (): Promise<{ readonly browser: Browser; readonly close: () => Promise<void> }> => {
  const browser = await chromium.launch({
    executablePath: chromiumPath(),
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

/**
 * Saves a screenshot of the page into `screenshotDir`/NAME.png (or into
 * `dir`), once nothing is loading and the fonts are in. Pages are opened with
 * reduced motion (see `newContext`), so charts and dialogs are drawn at once.
 */
export const screenshot = async (page: Page, name: string, dir = screenshotDir) => {
  mkdirSync(dir, { recursive: true })
  await settled(page)
  // Transient toasts would cover the header in the picture.
  await page.addStyleTag({ content: ".mantine-Notifications-root { display: none !important; }" })
  await page.screenshot({ path: join(dir, `${name}.png`), fullPage: true })
}

/** Polls `condition` every 100 ms until it holds; fails naming `what` after `timeoutMs`. */
export const eventually = async (what: string, condition: () => Promise<boolean>, timeoutMs = 10_000) => {
  const deadline = Date.now() + timeoutMs
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

/** Waits until no loading indicator is visible and the page's fonts are loaded. */
export const settled = async (page: Page) => {
  await page.waitForFunction(() =>
    [...document.querySelectorAll("[data-testid=loading], .mantine-Loader-root")].every((e) =>
      e.getClientRects().length === 0
    )
  )
  await page.evaluate(async () => {
    await document.fonts.ready
  })
}

/** How far the page is wider than the window (0 when nothing sticks out sideways). */
export const overflowX = (page: Page): Promise<number> =>
  page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)

/** Signs in through the form. */
export const signIn = async (page: Page, url: string, user: { readonly name: string; readonly password: string }) => {
  await page.goto(`${url}/console/`)
  await page.getByLabel(/User name|用户名/).fill(user.name)
  await page.getByLabel(/^Password|^密码/).fill(user.password)
  await page.getByRole("button", { name: /Sign in|登录/ }).click()
  await page.getByTestId("user-menu").waitFor()
}
