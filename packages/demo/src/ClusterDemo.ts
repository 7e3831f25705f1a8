/**
 * The cluster demo (`pnpm cluster-demo`): two gateway processes on one
 * PostgreSQL database (created for the run, dropped after it) and one Redis,
 * Debian's nginx in front of them, and a smoke test through nginx:
 *
 * 1. a chat completion served by each node (nginx alternates between them);
 * 2. a rate limit shared by the nodes (a 5 requests-per-minute key admits
 *    exactly 5 of 10 calls, whichever node serves them);
 * 3. a revocation seen by both nodes (a key deleted through one node is
 *    refused by both, and how fast).
 *
 * Everything it starts (the fake upstream, both nodes, nginx, the database, a
 * temporary directory for configs and logs) belongs to the program's scope,
 * so it is stopped and removed at the end, on a failure, and on Ctrl-C
 * (`--keep` leaves the cluster running for you to try until Ctrl-C). A missing
 * nginx, an unreachable PostgreSQL or Redis is reported with how to fix it
 * before anything starts. `cluster-demo.ts` is the executable.
 *
 * @since 0.1.0
 */
import { FakeUpstream } from "@modelgate/fake-upstream"
import type { ConfigFile } from "@modelgate/node-http/ConfigFile"
import * as Database from "@modelgate/store/Database"
import { Console, Context, Duration, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import {
  accessSync,
  chmodSync,
  closeSync,
  constants,
  existsSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync
} from "node:fs"
import { createServer, Socket } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Gateway from "./Gateway.ts"

/** Why the demo could not run (a missing tool, a service down, a node that did not start, a failed check). @category errors */
export class DemoError extends Schema.TaggedError<DemoError>()("DemoError", { message: Schema.String }) {}

/** What the demo runs against. @category models */
export interface Options {
  /** A PostgreSQL URL whose user may create databases (the demo creates `modelgate_demo_<random>` and drops it). */
  readonly postgres: string
  /** The Redis URL. */
  readonly redis: string
  /** The nginx executable. */
  readonly nginx: string
  /** Keep the cluster running after the smoke test, until interrupted (Ctrl-C). */
  readonly keep: boolean
}

/** Defaults for this machine. @category constants */
export const defaults = {
  postgres: "postgres://postgres@127.0.0.1:5432/postgres",
  redis: "redis://127.0.0.1:6379",
  nginx: "/usr/sbin/nginx"
} as const

/** One result of the smoke test. @category models */
export interface Check {
  readonly name: string
  readonly ok: boolean
  readonly detail: string
}

/** The API keys of the demo's users (demo only). @category constants */
export const KEYS = {
  main: "sk-cluster-demo-main-00000000000000000000000",
  limited: "sk-cluster-demo-limited-00000000000000000000",
  doomed: "sk-cluster-demo-doomed-000000000000000000000"
} as const

/** The console password of the demo's `admin` (demo only). @category constants */
export const ADMIN_PASSWORD = "cluster-demo"

/** The rate limit of the demo's limited key, in requests per minute. @category constants */
export const LIMITED_RPM = 5

/** The gateway the nodes run: the bundle when it was built, else node-http's sources. */
const bin = Gateway.binary

// ---------------------------------------------------------------------------
// Configuration files
// ---------------------------------------------------------------------------

/**
 * The configuration of one node: everything shared by the cluster, plus its
 * own `listen` and `node_id`.
 *
 * @category configuration
 */
export const nodeConfig = (shared: {
  readonly database: string
  readonly redis: string
  readonly redisKeyPrefix: string
  readonly upstream: string
}, node: { readonly port: number; readonly id: string }): ConfigFile => ({
  listen: `127.0.0.1:${node.port}`,
  node_id: node.id,
  database: shared.database,
  redis: shared.redis,
  redis_key_prefix: shared.redisKeyPrefix,
  redis_failure: "local",
  log_level: "warning",
  channels: [
    {
      name: "fake-openai",
      type: "openai",
      base_url: `${shared.upstream}/v1`,
      api_key: "sk-fake-upstream",
      models: ["gpt-4o-mini"]
    },
    {
      name: "fake-gemini",
      type: "gemini",
      base_url: shared.upstream,
      api_key: "fake-gemini-key",
      models: ["gemini-2.5-flash"]
    }
  ],
  models: { "gpt-4o-mini": { input: 0.15, output: 0.6 }, "gemini-2.5-flash": { input: 0.3, output: 2.5 } },
  users: [
    {
      name: "demo",
      balance: 10,
      keys: [
        { name: "main", secret: KEYS.main },
        { name: "limited", secret: KEYS.limited, rpm: LIMITED_RPM },
        { name: "doomed", secret: KEYS.doomed }
      ]
    },
    { name: "admin", role: "admin", password: ADMIN_PASSWORD }
  ]
})

/**
 * nginx's configuration: in the foreground, every path (pid, logs,
 * temporary files) inside `dir`, round robin over the nodes, streaming
 * unbuffered, and `x-served-by` naming the node that answered.
 *
 * @category configuration
 */
export const nginxConfig = (dir: string, port: number, nodePorts: ReadonlyArray<number>): string =>
  [
    "daemon off;",
    "worker_processes 1;",
    `pid ${join(dir, "nginx.pid")};`,
    `error_log ${join(dir, "nginx-error.log")} warn;`,
    "events { worker_connections 256; }",
    "http {",
    `  access_log ${join(dir, "nginx-access.log")};`,
    `  client_body_temp_path ${join(dir, "nginx-body")};`,
    `  proxy_temp_path ${join(dir, "nginx-proxy")};`,
    `  fastcgi_temp_path ${join(dir, "nginx-fastcgi")};`,
    `  uwsgi_temp_path ${join(dir, "nginx-uwsgi")};`,
    `  scgi_temp_path ${join(dir, "nginx-scgi")};`,
    "  upstream modelgate {",
    ...nodePorts.map((p) => `    server 127.0.0.1:${p} max_fails=2 fail_timeout=5s;`),
    "    keepalive 16;",
    "  }",
    "  server {",
    `    listen 127.0.0.1:${port};`,
    "    client_max_body_size 10m;",
    "    location / {",
    "      proxy_pass http://modelgate;",
    "      proxy_http_version 1.1;",
    "      proxy_set_header Connection \"\";",
    "      proxy_set_header Host $http_host;",
    "      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;",
    "      proxy_set_header X-Forwarded-Proto $scheme;",
    "      proxy_buffering off;",
    "      proxy_read_timeout 300s;",
    "      add_header X-Served-By $upstream_addr always;",
    "    }",
    "  }",
    "}",
    ""
  ].join("\n")

// ---------------------------------------------------------------------------
// Preflight: what must be there before anything starts
// ---------------------------------------------------------------------------

const redact = (url: string): string => url.replace(/\/\/([^:@/]*):[^@/]*@/, "//$1:***@")

/** The nginx executable is there and runnable. @category preflight */
export const checkNginx = (path: string): Effect.Effect<void, DemoError> =>
  Effect.try({
    try: () => accessSync(path, constants.X_OK),
    catch: () =>
      new DemoError({
        message:
          `nginx was not found at ${path}. Install it (apt-get install nginx-light) or point MODELGATE_NGINX at the executable.`
      })
  })

/** PostgreSQL answers `SELECT 1` within 5 s. @category preflight */
export const checkPostgres = (url: string): Effect.Effect<void, DemoError> =>
  Effect.scoped(Effect.gen(function*() {
    const sql = Context.get(yield* Layer.build(Database.layer(url, { maxConnections: 1 })), SqlClient.SqlClient)
    yield* sql`SELECT 1`.pipe(Effect.timeout(Duration.seconds(5)))
  })).pipe(
    Effect.mapError((cause) =>
      new DemoError({
        message:
          `PostgreSQL is not reachable at ${
            redact(url)
          } (${cause.message}). Start it (for example: service postgresql start) ` +
          "or set MODELGATE_DEMO_POSTGRES to a URL whose user may create databases."
      })
    )
  )

/** Redis answers PING within 2 s (after AUTH when the URL has a password). @category preflight */
export const checkRedis = (url: string): Effect.Effect<void, DemoError> =>
  Effect.callback<void, DemoError>((resume) => {
    const fail = (why: string) =>
      resume(Effect.fail(
        new DemoError({
          message: `Redis is not reachable at ${
            redact(url)
          } (${why}). Start it (for example: service redis-server start) or set MODELGATE_DEMO_REDIS.`
        })
      ))
    let parsed: URL
    try {
      parsed = new URL(url)
    } catch {
      return fail("not a redis:// URL")
    }
    const socket = new Socket()
    let answer = ""
    const done = (error?: string) => {
      socket.destroy()
      if (error === undefined) resume(Effect.void)
      else fail(error)
    }
    socket.setTimeout(2_000, () => done("no answer within 2 s"))
    socket.once("error", (error) => done(error.message))
    socket.on("data", (data) => {
      answer += data.toString()
      if (answer.includes("+PONG")) done()
      else if (answer.includes("-")) done(answer.trim())
    })
    socket.connect(Number(parsed.port || 6379), parsed.hostname || "127.0.0.1", () => {
      const password = decodeURIComponent(parsed.password)
      const user = decodeURIComponent(parsed.username)
      const auth = password === "" ? "" : user === "" ? `AUTH ${password}\r\n` : `AUTH ${user} ${password}\r\n`
      socket.write(`${auth}PING\r\n`)
    })
    return Effect.sync(() => socket.destroy())
  })

// ---------------------------------------------------------------------------
// Resources
// ---------------------------------------------------------------------------

const freePort = Effect.promise(() =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port
      server.close(() => resolve(port))
    })
  })
)

/** A temporary directory for the run, removed with the scope. */
const temporaryDirectory = Effect.acquireRelease(
  Effect.sync(() => {
    const dir = mkdtempSync(join(tmpdir(), "modelgate-cluster-demo-"))
    // nginx's workers (another user when nginx starts as root) must reach their temporary paths.
    chmodSync(dir, 0o755)
    return dir
  }),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

/** A fresh database on the server `adminUrl` names, dropped (connections and all) with the scope; its URL. */
const freshDatabase = (adminUrl: string) =>
  Effect.gen(function*() {
    const sql = Context.get(yield* Layer.build(Database.layer(adminUrl, { maxConnections: 1 })), SqlClient.SqlClient)
    const name = `modelgate_demo_${randomBytes(4).toString("hex")}`
    yield* Effect.acquireRelease(
      sql.unsafe(`CREATE DATABASE ${name}`),
      () => sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).pipe(Effect.ignore)
    )
    const url = new URL(adminUrl)
    url.pathname = `/${name}`
    return url.toString()
  }).pipe(
    Effect.mapError((cause) => new DemoError({ message: `Could not create the demo database: ${cause.message}` }))
  )

const exited = (child: ChildProcess): Promise<void> =>
  new Promise((resolve) =>
    child.exitCode !== null || child.signalCode !== null ? resolve() : child.once("exit", () => resolve())
  )

/** Stops a child with `signal`, then SIGKILL after 10 s. */
const stop = (child: ChildProcess, signal: NodeJS.Signals) =>
  Effect.promise(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    child.kill(signal)
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000)
    await exited(child)
    clearTimeout(timer)
  })

/** A child process for the scope, its output appended to `logFile`; stopped with `signal` when the scope ends. */
const child = (
  command: string,
  args: ReadonlyArray<string>,
  logFile: string,
  signal: NodeJS.Signals,
  env: Record<string, string> = {}
) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const fd = openSync(logFile, "a")
      const process_ = spawn(command, args, { stdio: ["ignore", fd, fd], env: { ...process.env, ...env } })
      closeSync(fd)
      return process_
    }),
    (process_) => stop(process_, signal)
  )

const tail = (file: string): string => {
  if (!existsSync(file)) return "(no output)"
  const lines = readFileSync(file, "utf8").trim().split("\n")
  return lines.slice(-8).join("\n    ")
}

/** Waits until `url` answers 200 (at most 30 s), failing early when `process_` exits. */
const waitReady = (what: string, url: string, process_: ChildProcess, logFile: string) =>
  Effect.gen(function*() {
    for (let i = 0; i < 300; i++) {
      if (process_.exitCode !== null) {
        return yield* new DemoError({
          message: `${what} exited with code ${process_.exitCode} before it was ready. Its last output:\n    ${
            tail(logFile)
          }`
        })
      }
      const ok = yield* Effect.promise(() => fetch(url).then((r) => r.ok, () => false))
      if (ok) return
      yield* Effect.sleep(Duration.millis(100))
    }
    return yield* new DemoError({
      message: `${what} was not ready within 30 s. Its last output:\n    ${tail(logFile)}`
    })
  })

// ---------------------------------------------------------------------------
// The smoke test
// ---------------------------------------------------------------------------

const chat = (url: string, key: string) =>
  Effect.promise(async () => {
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: "gpt-4o-mini",
        max_tokens: 16,
        messages: [{ role: "user", content: "Hello from the cluster demo" }]
      })
    })
    await response.arrayBuffer()
    return { status: response.status, servedBy: response.headers.get("x-served-by") ?? "?" }
  })

/** Runs the three checks through nginx at `proxy`, knowing the nodes' own addresses. */
export const smokeTest = (proxy: string, nodes: ReadonlyArray<{ readonly name: string; readonly url: string }>) =>
  Effect.gen(function*() {
    const checks: Array<Check> = []
    const nodeName = (servedBy: string) => nodes.find((n) => n.url.endsWith(servedBy))?.name ?? servedBy

    // 1. A chat completion served by each node.
    const served = new Map<string, number>()
    for (let i = 0; i < 2 * nodes.length; i++) {
      const answer = yield* chat(proxy, KEYS.main)
      if (answer.status === 200) served.set(answer.servedBy, (served.get(answer.servedBy) ?? 0) + 1)
    }
    for (const node of nodes) {
      const address = node.url.replace(/^http:\/\//, "")
      checks.push({
        name: `chat completion served by ${node.name}`,
        ok: served.has(address),
        detail: served.has(address)
          ? `${served.get(address)} of ${2 * nodes.length} calls, through nginx`
          : "no call reached it through nginx"
      })
    }

    // 2. A rate limit shared by the nodes.
    const attempts = 2 * LIMITED_RPM
    const limited: Array<{ readonly status: number; readonly servedBy: string }> = []
    for (let i = 0; i < attempts; i++) limited.push(yield* chat(proxy, KEYS.limited))
    const admitted = limited.filter((a) => a.status === 200)
    const refused = limited.filter((a) => a.status === 429)
    const byNode = nodes.map((n) => `${n.name}: ${admitted.filter((a) => nodeName(a.servedBy) === n.name).length}`)
      .join(", ")
    checks.push({
      name: `shared rate limit (key 'limited', ${LIMITED_RPM} requests per minute)`,
      ok: admitted.length === LIMITED_RPM && refused.length === attempts - LIMITED_RPM &&
        new Set(limited.map((a) => a.servedBy)).size === nodes.length,
      detail:
        `${admitted.length} of ${attempts} calls admitted (${byNode}), ${refused.length} refused with 429 by whichever node got them`
    })

    // 3. A revocation seen by both nodes: the admin disables the key from a console session (an API key only reads).
    const keys = yield* Effect.promise(async () => {
      const login = await fetch(`${proxy}/api/auth/login`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ username: "admin", password: ADMIN_PASSWORD })
      })
      const { csrfToken } = (await login.json()) as { readonly csrfToken: string }
      const session = { cookie: login.headers.get("set-cookie")?.split(";")[0] ?? "", "x-csrf-token": csrfToken }
      const users = (await (await fetch(`${proxy}/api/admin/users`, { headers: session })).json()) as {
        readonly data: ReadonlyArray<{ readonly id: string; readonly name: string }>
      }
      const owner = users.data.find((u) => u.name === "demo")
      const response = await fetch(`${proxy}/api/admin/users/${owner?.id ?? "none"}/keys`, { headers: session })
      return {
        session,
        ...((await response.json()) as { readonly data: ReadonlyArray<{ readonly id: string; readonly name: string }> })
      }
    })
    const doomed = keys.data?.find((k) => k.name === "doomed")
    if (doomed === undefined) {
      checks.push({ name: "revocation seen by every node", ok: false, detail: "the key 'doomed' was not listed" })
      return checks
    }
    const before = yield* Effect.forEach(nodes, (node) => chat(node.url, KEYS.doomed))
    const deleted = yield* Effect.promise(async () => {
      const response = await fetch(`${proxy}/api/admin/keys/${doomed.id}`, {
        method: "PATCH",
        headers: { ...keys.session, "content-type": "application/json" },
        body: JSON.stringify({ enabled: false })
      })
      await response.arrayBuffer()
      return { status: response.status, servedBy: response.headers.get("x-served-by") ?? "?" }
    })
    const startedAt = performance.now()
    const refusedAfter = yield* Effect.forEach(nodes, (node) =>
      Effect.gen(function*() {
        while (performance.now() - startedAt < 5_000) {
          if ((yield* chat(node.url, KEYS.doomed)).status === 401) return Math.round(performance.now() - startedAt)
          yield* Effect.sleep(Duration.millis(10))
        }
        return undefined
      }), { concurrency: "unbounded" })
    const viaProxy = yield* chat(proxy, KEYS.doomed)
    checks.push({
      name: "revocation seen by every node",
      ok: before.every((b) => b.status === 200) && deleted.status === 200 && refusedAfter.every((ms) =>
        ms !== undefined && ms < 1_000
      ) &&
        viaProxy.status === 401,
      detail: `key 'doomed' disabled by the admin through ${nodeName(deleted.servedBy)}; refused by ` +
        nodes.map((n, i) => `${n.name} after ${refusedAfter[i] === undefined ? "more than 5000" : refusedAfter[i]} ms`)
          .join(" and ") +
        ` (and through nginx: ${viaProxy.status})`
    })
    return checks
  })

// ---------------------------------------------------------------------------
// The program
// ---------------------------------------------------------------------------

/**
 * Runs the demo: preflight, start everything, smoke test, summary. Fails with
 * `DemoError` when a check fails (after printing the summary) or something
 * could not start; everything started is stopped and removed either way.
 *
 * @category running
 */
export const run = (options: Options) =>
  Effect.scoped(Effect.gen(function*() {
    yield* Console.log("modelgate cluster demo: two gateway nodes, PostgreSQL, Redis and nginx on this machine\n")
    yield* checkNginx(options.nginx)
    yield* checkPostgres(options.postgres)
    yield* checkRedis(options.redis)

    const dir = yield* temporaryDirectory
    const database = yield* freshDatabase(options.postgres)
    const upstream = yield* FakeUpstream.scoped({ port: 0 }).pipe(
      Effect.mapError((cause) => new DemoError({ message: `The fake upstream could not start: ${cause.message}` }))
    )
    const redisKeyPrefix = `modelgate-demo-${randomBytes(4).toString("hex")}:`
    const secret = randomBytes(24).toString("hex")
    const shared = { database, redis: options.redis, redisKeyPrefix, upstream: upstream.url }
    const ports = [yield* freePort, yield* freePort]
    const proxyPort = yield* freePort

    // Both nodes start at once: migrations and provisioning still run exactly once.
    const nodes = yield* Effect.forEach(ports, (port, i) =>
      Effect.gen(function*() {
        const name = `node ${i + 1}`
        const config = join(dir, `node${i + 1}.json`)
        const log = join(dir, `node${i + 1}.log`)
        writeFileSync(config, JSON.stringify(nodeConfig(shared, { port, id: `demo-node-${i + 1}` }), null, 2))
        const process_ = yield* child(process.execPath, [bin, "serve", "--config", config], log, "SIGTERM", {
          MODELGATE_SECRET: secret
        })
        const url = `http://127.0.0.1:${port}`
        yield* waitReady(name, `${url}/readyz`, process_, log)
        return { name, url, config, log }
      }), { concurrency: "unbounded" })

    const nginxConf = join(dir, "nginx.conf")
    writeFileSync(nginxConf, nginxConfig(dir, proxyPort, ports))
    const nginxLog = join(dir, "nginx-error.log")
    const nginx = yield* child(
      options.nginx,
      ["-p", dir, "-c", nginxConf, "-e", nginxLog],
      join(dir, "nginx.out"),
      "SIGQUIT"
    )
    const proxy = `http://127.0.0.1:${proxyPort}`
    yield* waitReady("nginx", `${proxy}/healthz`, nginx, nginxLog)

    yield* Console.log([
      `  PostgreSQL  ${redact(database)} (created for this run)`,
      `  Redis       ${redact(options.redis)} (keys and channel under ${redisKeyPrefix})`,
      ...nodes.map((n) => `  ${n.name.padEnd(10)}  ${n.url}   config ${n.config}, log ${n.log}`),
      `  nginx       ${proxy} -> ${nodes.map((n) => n.url.replace("http://", "")).join(", ")} (round robin)`,
      "",
      "Smoke test through nginx:"
    ].join("\n"))

    const checks = yield* smokeTest(proxy, nodes)
    for (const check of checks) yield* Console.log(`  ${check.ok ? "✓" : "✗"} ${check.name}: ${check.detail}`)
    const failed = checks.filter((c) => !c.ok).length
    yield* Console.log(
      failed === 0 ? `\nAll ${checks.length} checks passed.` : `\n${failed} of ${checks.length} checks failed.`
    )

    if (options.keep) {
      yield* Console.log([
        "",
        "The cluster keeps running; press Ctrl-C to stop it and remove everything. Try:",
        `  the console through nginx: ${proxy}/console/ (user 'admin', password '${ADMIN_PASSWORD}')`,
        `  curl ${proxy}/v1/chat/completions -H "Authorization: Bearer ${KEYS.main}" \\`,
        `    -H "Content-Type: application/json" -d '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi"}]}' -i`
      ].join("\n"))
      yield* Effect.never
    }
    yield* Console.log("Stopping nginx and both nodes, dropping the demo database ...")
    if (failed > 0) return yield* new DemoError({ message: `${failed} smoke check(s) failed; see above.` })
    return checks
  }))

/** Runs `run` and says when everything is cleaned up. @category running */
export const main = (options: Options) =>
  run(options).pipe(
    Effect.tap(() => Console.log("Done: everything the demo started is stopped and removed.")),
    Effect.onInterrupt(() => Console.log("\nInterrupted: everything the demo started is stopped and removed."))
  )
