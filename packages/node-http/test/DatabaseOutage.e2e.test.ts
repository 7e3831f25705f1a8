/**
 * A PostgreSQL outage as a running gateway process lives it, through a proxy
 * that cuts every connection and refuses new ones: calls its balance leases
 * cover go on, calls that need the database get a 503 with `retry-after` and
 * a clear code (not a 500), `/api/me` answers from memory, the log gets a
 * handful of lines rather than one per call or a stack trace per retry, and
 * once the database is back every served call is recorded and charged once.
 * Runs when MODELGATE_TEST_POSTGRES is set.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { type FakeUpstreamServer, startFakeUpstream } from "@modelgate/fake-upstream"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type PgProxy, startPgProxy, targetOf } from "../../store/test/support/PgProxy.ts"
import type { ConfigFile } from "../src/ConfigFile.ts"
import { freshPostgres, postgresUrl, runSql } from "./support/Databases.ts"
import { freePort, SECRET, writeConfig } from "./support/Processes.ts"

const bin = join(import.meta.dirname, "..", "src", "bin.ts")
const LEASED_KEY = "sk-outage-leased-00000000000000000000000000"
const COLD_KEY = "sk-outage-cold-0000000000000000000000000000"

const config = (upstream: string, port: number, database: string, dir: string): ConfigFile => ({
  listen: `127.0.0.1:${port}`,
  database,
  node_id: "outage-node",
  secret_file: join(dir, "modelgate.key"),
  log_format: "json",
  access_log: false,
  shutdown_grace_seconds: 2,
  channels: [{ name: "up", type: "openai", base_url: `${upstream}/v1`, api_key: "sk-up", models: ["gpt-4o-mini"] }],
  models: { "gpt-4o-mini": { input: 1, output: 2 } },
  users: [
    { name: "leased", balance: 100, keys: [{ name: "k", secret: LEASED_KEY }] },
    { name: "cold", balance: 100, keys: [{ name: "k", secret: COLD_KEY }] }
  ]
})

interface Gateway {
  readonly child: ChildProcess
  readonly url: string
  /** Every line the process wrote to stdout and stderr so far. */
  readonly lines: () => ReadonlyArray<string>
  readonly stop: (signal?: NodeJS.Signals) => Promise<number | null>
}

const start = async (file: string, port: number): Promise<Gateway> => {
  const child = spawn(process.execPath, [bin, "serve", "--config", file], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, MODELGATE_SECRET: SECRET }
  })
  let output = ""
  child.stdout!.on("data", (d) => output += d)
  child.stderr!.on("data", (d) => output += d)
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
  const url = `http://127.0.0.1:${port}`
  for (let i = 0;; i++) {
    if (child.exitCode !== null) throw new Error(`the gateway exited: ${output}`)
    try {
      if ((await fetch(`${url}/healthz`)).ok) break
    } catch {
      // not listening yet
    }
    if (i > 300) throw new Error(`the gateway did not start: ${output}`)
    await new Promise((r) => setTimeout(r, 100))
  }
  return {
    child,
    url,
    lines: () => output.split("\n").filter((line) => line.length > 0),
    stop: async (signal = "SIGTERM") => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
      return exited
    }
  }
}

const chat = (url: string, key: string) =>
  fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "gpt-4o-mini", max_tokens: 20, messages: [{ role: "user", content: "hello" }] })
  })

/** The JSON log lines (not the banner) at a level. */
const logged = (gateway: Gateway, level: string, from = 0) =>
  gateway.lines().slice(from).filter((line) => line.startsWith("{")).map((line) =>
    JSON.parse(line) as {
      readonly level: string
      readonly message: string
    }
  ).filter((line) => line.level === level)

const waitFor = async (what: string, condition: () => Promise<boolean>, timeoutMs = 15_000) => {
  const deadline = Date.now() + timeoutMs
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

describe.skipIf(postgresUrl === undefined)("a PostgreSQL outage (set MODELGATE_TEST_POSTGRES to run)", () => {
  let upstream: FakeUpstreamServer
  let dir: string
  let db: { readonly url: string; readonly drop: () => Promise<void> }
  let proxy: PgProxy
  beforeAll(async () => {
    upstream = await startFakeUpstream({ port: 0 })
    dir = mkdtempSync(join(tmpdir(), "modelgate-outage-"))
    db = await freshPostgres(postgresUrl!)
    proxy = await startPgProxy(targetOf(db.url))
  })
  afterAll(async () => {
    await proxy.close()
    await upstream.close()
    await db.drop()
    rmSync(dir, { recursive: true, force: true })
  })

  it(
    "serves what its leases cover, answers 503 with retry-after for the rest and the balance from memory, logs a few lines, and loses nothing",
    async () => {
      const port = await freePort()
      const gateway = await start(
        writeConfig(dir, "outage", config(upstream.url, port, proxy.urlFor(db.url), dir)),
        port
      )
      try {
        for (let i = 0; i < 3; i++) assert.strictEqual((await chat(gateway.url, LEASED_KEY)).status, 200)
        const me = () => fetch(`${gateway.url}/api/me`, { headers: { authorization: `Bearer ${LEASED_KEY}` } })
        const before = await (await me()).json() as { balance_usd: string }

        const linesBefore = gateway.lines().length
        proxy.setDown(true)
        // The leased user's calls go on from the node's lease.
        for (let i = 0; i < 10; i++) {
          assert.strictEqual((await chat(gateway.url, LEASED_KEY)).status, 200, `leased call ${i}`)
        }
        // The other user has no lease here: a 503 saying what to do, in each dialect.
        for (let i = 0; i < 20; i++) {
          const refused = await chat(gateway.url, COLD_KEY)
          assert.strictEqual(refused.status, 503)
          assert.strictEqual(refused.headers.get("retry-after"), "5")
          const body = await refused.json() as { error: { code: string; type: string; message: string } }
          assert.deepStrictEqual([body.error.code, body.error.type], ["database_unavailable", "api_error"])
          assert.include(body.error.message, "cannot reach its database")
        }
        const gemini = await fetch(`${gateway.url}/v1beta/models/gpt-4o-mini:generateContent`, {
          method: "POST",
          headers: { "x-goog-api-key": COLD_KEY, "content-type": "application/json" },
          body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hello" }] }] })
        })
        assert.strictEqual(gemini.status, 503)
        assert.strictEqual(((await gemini.json()) as { error: { status: string } }).error.status, "UNAVAILABLE")
        // A read that needs no database answers from memory.
        const during = await me()
        assert.strictEqual(during.status, 200)
        const balance = (await during.json() as { balance_usd: string }).balance_usd
        assert.isTrue(Number(balance) < Number(before.balance_usd) && Number(balance) > 99, balance)
        assert.strictEqual((await fetch(`${gateway.url}/readyz`)).status, 503)

        // A few seconds of outage (two heartbeats): a handful of lines, not one per call, and no stack traces.
        await new Promise((r) => setTimeout(r, 6_000))
        const outageLines = gateway.lines().slice(linesBefore)
        const errors = logged(gateway, "ERROR", linesBefore)
        const warnings = logged(gateway, "WARN", linesBefore)
        assert.isAtMost(errors.length + warnings.length, 8, outageLines.join("\n"))
        assert.isFalse(outageLines.some((line) => line.includes("    at ")), outageLines.join("\n"))

        proxy.setDown(false)
        const records = () =>
          runSql(db.url, (sql) =>
            sql`SELECT u.name AS name, COUNT(r.id) AS n FROM users u
          LEFT JOIN usage_records r ON r.user_id = u.id WHERE u.name IN ('leased', 'cold') GROUP BY u.name ORDER BY u.name`)
        await waitFor("the queued usage records to be written", async () => {
          const rows = await records()
          return Number(rows.find((row) => row.name === "leased")?.n) === 13 &&
            Number(rows.find((row) => row.name === "cold")?.n) === 21
        })
        // The refused calls are in the request log too, as refusals that cost nothing.
        const cold = await runSql(
          db.url,
          (sql) =>
            sql`SELECT r.status, r.error_code, SUM(r.cost_nanos) AS cost, COUNT(*) AS n FROM usage_records r JOIN users u ON u.id = r.user_id
          WHERE u.name = 'cold' GROUP BY r.status, r.error_code`
        )
        assert.deepStrictEqual(
          cold.map((row) => [Number(row.status), row.error_code, Number(row.cost), Number(row.n)]),
          [
            [503, "DatabaseUnavailable", 0, 21]
          ]
        )
        await waitFor("readiness", async () => (await fetch(`${gateway.url}/readyz`)).status === 200)
        assert.strictEqual((await chat(gateway.url, COLD_KEY)).status, 200, "calls that need the database work again")
        // Each kind of operation that failed says once that it works again (log lines are written every 100 ms).
        await waitFor(
          "the end of the outage in the log",
          async () => logged(gateway, "INFO").filter((line) => line.message.includes("works again")).length >= 2
        )
      } finally {
        await gateway.stop()
      }
      // Every served call charged once, and every balance equal to its ledger.
      const books = await runSql(
        db.url,
        (sql) =>
          sql`SELECT u.name AS name, u.balance_nanos AS balance, (SELECT SUM(amount_nanos) FROM ledger l WHERE l.user_id = u.id) AS ledger,
          (SELECT COUNT(*) FROM ledger l WHERE l.user_id = u.id AND l.kind = 'charge') AS charges,
          (SELECT COUNT(*) FROM leases) AS leases
        FROM users u WHERE u.name IN ('leased', 'cold') ORDER BY u.name`
      )
      assert.deepStrictEqual(
        books.map((
          row
        ) => [row.name, String(row.balance) === String(row.ledger), Number(row.charges), Number(row.leases)]),
        [["cold", true, 1, 0], ["leased", true, 13, 0]]
      )
    },
    90_000
  )

  it(
    "a database that swallows every byte: calls that need it get 503 with retry-after within about a second, /api/me answers from memory marked stale",
    async () => {
      const fresh = await freshPostgres(postgresUrl!)
      const frozen = await startPgProxy(targetOf(fresh.url))
      const stateDir = mkdtempSync(join(dir, "frozen-"))
      const port = await freePort()
      const file = writeConfig(stateDir, "gateway", config(upstream.url, port, frozen.urlFor(fresh.url), stateDir))
      const gateway = await start(file, port)
      const me = () => fetch(`${gateway.url}/api/me`, { headers: { authorization: `Bearer ${LEASED_KEY}` } })
      const timed = async <A>(work: () => Promise<A>) => {
        const started = Date.now()
        const result = await work()
        return { ms: Date.now() - started, result }
      }
      try {
        for (let i = 0; i < 3; i++) assert.strictEqual((await chat(gateway.url, LEASED_KEY)).status, 200)
        const fresh = await (await me()).json() as { balance_usd: string; balance_stale?: boolean }
        assert.isUndefined(fresh.balance_stale, "read now: not marked")
        frozen.swallow(true)
        const waits: Array<number> = []
        for (let i = 0; i < 5; i++) {
          const { ms, result } = await timed(() => chat(gateway.url, COLD_KEY))
          assert.strictEqual(result.status, 503, `cold call ${i}`)
          assert.strictEqual(result.headers.get("retry-after"), "5")
          assert.strictEqual(
            ((await result.json()) as { error: { code: string } }).error.code,
            "database_unavailable"
          )
          waits.push(ms)
        }
        assert.isBelow(Math.max(...waits), 1_500, `503 after ${waits.join(", ")} ms`)
        // The leased user's calls go on from the lease.
        for (let i = 0; i < 3; i++) assert.strictEqual((await chat(gateway.url, LEASED_KEY)).status, 200)
        const during = await timed(() => me())
        assert.strictEqual(during.result.status, 200)
        assert.isBelow(during.ms, 1_500, `/api/me after ${during.ms} ms`)
        const body = await during.result.json() as {
          balance_usd: string
          balance_stale?: boolean
          balance_read_at?: string
        }
        assert.isTrue(body.balance_stale, "marked as possibly stale")
        assert.isTrue(Number.isFinite(Date.parse(body.balance_read_at ?? "")), "with when it was read")
        assert.isTrue(Number(body.balance_usd) < Number(fresh.balance_usd), "less what the calls spent since")
        console.log(`frozen database: 503 after ${waits.join(", ")} ms; /api/me after ${during.ms} ms`)
      } finally {
        frozen.swallow(false)
        await gateway.stop()
        await frozen.close()
        await fresh.drop()
      }
    },
    90_000
  )

  it(
    "database_call_wait_ms sets how long a call waits for a silent database: 300 ms, for a hold and for a key not in memory",
    async () => {
      const fresh = await freshPostgres(postgresUrl!)
      const frozen = await startPgProxy(targetOf(fresh.url))
      const stateDir = mkdtempSync(join(dir, "wait-"))
      const port = await freePort()
      const file = writeConfig(stateDir, "gateway", {
        ...config(upstream.url, port, frozen.urlFor(fresh.url), stateDir),
        database_call_wait_ms: 300
      })
      const gateway = await start(file, port)
      const timed = async (key: string) => {
        const started = Date.now()
        const result = await chat(gateway.url, key)
        const code = ((await result.json()) as { error?: { code: string } }).error?.code
        return { ms: Date.now() - started, status: result.status, code }
      }
      try {
        assert.strictEqual((await chat(gateway.url, LEASED_KEY)).status, 200)
        frozen.swallow(true)
        const hold = await timed(COLD_KEY)
        const lookup = await timed("sk-outage-not-in-memory-000000000000000000")
        assert.deepStrictEqual([hold.status, hold.code], [503, "database_unavailable"])
        assert.deepStrictEqual([lookup.status, lookup.code], [503, "database_unavailable"])
        // The default bound (1,000 ms) is the floor of both without the setting.
        assert.isBelow(hold.ms, 900, `the hold's 503 after ${hold.ms} ms`)
        assert.isBelow(lookup.ms, 900, `the lookup's 503 after ${lookup.ms} ms`)
        console.log(`database_call_wait_ms 300: a hold's 503 after ${hold.ms} ms, a key lookup's after ${lookup.ms} ms`)
      } finally {
        frozen.swallow(false)
        await gateway.stop()
        await frozen.close()
        await fresh.drop()
      }
    },
    60_000
  )

  it(
    "a journal that cannot be written during an outage: entries stay in memory, priced calls get 503 before the bound, /readyz and /metrics say so, nothing is lost",
    async () => {
      const fresh = await freshPostgres(postgresUrl!)
      const cut = await startPgProxy(targetOf(fresh.url))
      const stateDir = mkdtempSync(join(dir, "nojournal-"))
      // A regular file where the journal's directory would be: every append fails (as on a full or read-only disk).
      writeFileSync(join(stateDir, "blocked"), "")
      const port = await freePort()
      const token = "metrics-token-0123456789"
      const file = writeConfig(stateDir, "gateway", {
        ...config(upstream.url, port, cut.urlFor(fresh.url), stateDir),
        metrics: { token },
        usage: { journal_dir: join(stateDir, "blocked", "journal"), max_memory_entries: 20 }
      })
      const gateway = await start(file, port)
      const metrics = async () =>
        (await fetch(`${gateway.url}/metrics`, { headers: { authorization: `Bearer ${token}` } })).text()
      const records = async () =>
        Number((await runSql(fresh.url, (sql) => sql`SELECT COUNT(*) AS n FROM usage_records`))[0]!.n)
      try {
        for (let i = 0; i < 2; i++) assert.strictEqual((await chat(gateway.url, LEASED_KEY)).status, 200)
        cut.setDown(true)
        let served = 0
        let refusal: { readonly status: number; readonly message: string } | undefined
        for (let i = 0; i < 30 && refusal === undefined; i++) {
          const answer = await chat(gateway.url, LEASED_KEY)
          if (answer.status === 200) {
            served++
            await answer.arrayBuffer()
          } else {
            refusal = {
              status: answer.status,
              message: ((await answer.json()) as { error: { message: string } }).error.message
            }
          }
        }
        assert.isDefined(refusal, "priced calls are refused before memory's bound")
        assert.strictEqual(refusal!.status, 503)
        assert.include(refusal!.message, "cannot record calls")
        assert.isAbove(served, 0)
        const ready = await fetch(`${gateway.url}/readyz`)
        assert.strictEqual(ready.status, 503)
        assert.include(
          ((await ready.json()) as { reason: string }).reason,
          "neither to the database nor to the journal"
        )
        // The refusal can come before the writer's try of the journal has ended (it starts as memory
        // reaches the bound): the gauge says so once it has.
        await waitFor(
          "the journal's failure in /metrics",
          async () => /^modelgate_usage_journal_failing 1$/m.test(await metrics()),
          10_000
        )
        const text = await metrics()
        assert.match(text, /^modelgate_usage_admitting 0$/m)
        assert.match(text, /^modelgate_usage_journal_failures_total [1-9]/m)
        cut.setDown(false)
        await waitFor("readiness", async () => (await fetch(`${gateway.url}/readyz`)).status === 200, 30_000)
        assert.strictEqual((await chat(gateway.url, LEASED_KEY)).status, 200, "admitted again")
        // Every call made is recorded: 2 before, those served and the refusal during, 1 after.
        await waitFor("every record", async () => (await records()) === 2 + served + 1 + 1, 30_000)
        console.log(`journal blocked: ${served} calls served during the outage before priced calls were refused`)
      } finally {
        cut.setDown(false)
        await gateway.stop()
        await cut.close()
        await fresh.drop()
      }
    },
    90_000
  )

  /**
   * Serves calls, cuts the database off (`down`: connections cut and refused; `swallow`: every byte
   * dropped, no error), serves more from the lease, and stops the process with `signal`; then starts it again.
   */
  const stopDuringOutage = async (signal: NodeJS.Signals, fault: "down" | "swallow" = "down") => {
    const fresh = await freshPostgres(postgresUrl!)
    const cut = await startPgProxy(targetOf(fresh.url))
    const stateDir = mkdtempSync(join(dir, "state-"))
    const port = await freePort()
    const file = writeConfig(stateDir, "gateway", {
      ...config(upstream.url, port, cut.urlFor(fresh.url), stateDir),
      usage: { flush_timeout_ms: 1_000, shutdown_flush_seconds: 2 }
    })
    const records = async () =>
      Number((await runSql(fresh.url, (sql) => sql`SELECT COUNT(*) AS n FROM usage_records`))[0]!.n)
    try {
      const first = await start(file, port)
      for (let i = 0; i < 2; i++) assert.strictEqual((await chat(first.url, LEASED_KEY)).status, 200)
      await waitFor("the first records", async () => (await records()) === 2)
      if (fault === "down") cut.setDown(true)
      else cut.swallow(true)
      for (let i = 0; i < 8; i++) {
        assert.strictEqual((await chat(first.url, LEASED_KEY)).status, 200, `call ${i} during the outage`)
      }
      // A flush tick fails (or, on a silent database, outlasts its bound), and what is queued goes to the journal on disk.
      await new Promise((r) => setTimeout(r, 1_500))
      const started = Date.now()
      const code = await first.stop(signal)
      const stoppedMs = Date.now() - started
      const output = first.lines().join("\n")
      cut.setDown(false)
      cut.swallow(false)
      assert.strictEqual(await records(), 2, "nothing of the outage reached the database yet")

      const second = await start(file, port)
      try {
        await waitFor("every record of the outage", async () => (await records()) === 10)
        const books = await runSql(
          fresh.url,
          (sql) =>
            sql`SELECT u.balance_nanos AS balance, (SELECT SUM(amount_nanos) FROM ledger l WHERE l.user_id = u.id) AS ledger,
              (SELECT COUNT(*) FROM ledger l WHERE l.user_id = u.id AND l.kind = 'charge') AS charges
            FROM users u WHERE u.name = 'leased'`
        )
        assert.strictEqual(String(books[0]!.balance), String(books[0]!.ledger))
        assert.strictEqual(Number(books[0]!.charges), 10, "each served call charged once")
        assert.isTrue(second.lines().some((line) => line.includes("an earlier run left")), second.lines().join("\n"))
      } finally {
        await second.stop()
      }
      await waitFor(
        "the leases to be released",
        async () => Number((await runSql(fresh.url, (sql) => sql`SELECT COUNT(*) AS n FROM leases`))[0]!.n) === 0
      )
      return { code, stoppedMs, output }
    } finally {
      await cut.close()
      await fresh.drop()
    }
  }

  it(
    "SIGTERM during an outage: the last flush retries for the grace period, the rest is kept on disk, and the next start writes it once",
    async () => {
      const { code, stoppedMs, output } = await stopDuringOutage("SIGTERM")
      assert.strictEqual(code, 0)
      assert.isAtLeast(stoppedMs, 1_500, "the last flush kept trying for shutdown_grace_seconds")
      assert.include(output, "could not be written at shutdown (the database did not answer): they are kept in")
    },
    60_000
  )

  it(
    "SIGTERM while the database swallows every byte: ends within the grace period plus the stated bound, the rest journaled",
    async () => {
      const { code, stoppedMs, output } = await stopDuringOutage("SIGTERM", "swallow")
      assert.strictEqual(code, 0)
      // shutdown_grace_seconds 2 + usage.shutdown_flush_seconds 2 + usage.flush_timeout_ms 1 s + 6 s (docs/operations.md).
      assert.isBelow(stoppedMs, 11_000, `stopped after ${stoppedMs} ms: ${output}`)
      assert.include(output, "could not be written at shutdown (the database did not answer): they are kept in")
      console.log(`SIGTERM with a silent database: stopped after ${stoppedMs} ms`)
    },
    90_000
  )

  it("kill -9 during an outage: what was queued was already on disk, and the next start writes it once", async () => {
    const { code } = await stopDuringOutage("SIGKILL")
    assert.isNull(code)
  }, 60_000)
})
