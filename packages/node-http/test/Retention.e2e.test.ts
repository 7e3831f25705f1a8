/**
 * `usage.retention_days` end to end: a gateway restarted with it deletes the
 * usage records older than that many days at start, keeps the recent ones,
 * and leaves the ledger and the balance alone; without it nothing is deleted.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { runSql } from "./support/Databases.ts"
import { baseConfig, KEY, startGateway } from "./support/Gateway.ts"

const DAY = 86_400_000
const dir = mkdtempSync(join(tmpdir(), "modelgate-retention-"))
const database = `sqlite:${join(dir, "gateway.db")}`
const secretFile = join(dir, "key")

afterAll(() => rmSync(dir, { recursive: true, force: true }))

const count = (sql: string) =>
  runSql(database, (client) => client.unsafe(sql)).then((rows) => Number((rows[0] as { n: unknown }).n))

describe("usage.retention_days", () => {
  it("prunes records past it at start, and never the ledger", async () => {
    // A first run: one real call, so the user has a charge in the ledger.
    const first = await startGateway(baseConfig, database, secretFile)
    const response = await fetch(`${first.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] })
    })
    assert.strictEqual(response.status, 200)
    await response.text()
    await first.close()
    assert.strictEqual(await count("SELECT COUNT(*) AS n FROM usage_records"), 1)
    // Records of 40 and 10 days ago, as an older installation would have.
    const now = Date.now()
    for (const [i, days] of [40, 41, 10].entries()) {
      await runSql(database, (sql) =>
        sql`INSERT INTO usage_records ${
          sql.insert({
            id: `use_old_${i}`,
            created_at: now - days * DAY,
            request_id: `req_old_${i}`,
            user_id: "usr_x",
            key_id: "key_x",
            model: "gpt-4o-mini",
            upstream_model: "gpt-4o-mini",
            channel: "fake-openai",
            dialect_in: "openai",
            dialect_out: "openai",
            stream: false,
            prompt_tokens: 1,
            completion_tokens: 1,
            cached_tokens: 0,
            usage_reported: true,
            cost_nanos: 10n,
            latency_ms: 1,
            ttfb_ms: 1,
            status: 200,
            error_code: null,
            attempts: 1
          })
        }`)
    }
    const ledger = await count("SELECT COUNT(*) AS n FROM ledger")

    // Without retention, a restart keeps everything.
    const kept = await startGateway(baseConfig, database, secretFile)
    await kept.close()
    assert.strictEqual(await count("SELECT COUNT(*) AS n FROM usage_records"), 4)

    const pruned = await startGateway(
      (upstream) => ({ ...baseConfig(upstream), usage: { retention_days: 30 } }),
      database,
      secretFile
    )
    try {
      // The first round runs in the background as the server starts.
      for (let i = 0; i < 400 && (await count("SELECT COUNT(*) AS n FROM usage_records")) > 2; i++) {
        await new Promise((r) => setTimeout(r, 25))
      }
      const remaining = await runSql(database, (sql) => sql`SELECT request_id FROM usage_records ORDER BY created_at`)
      assert.deepStrictEqual(remaining.map((r) => r.request_id), ["req_old_2", remaining[1]!.request_id])
      assert.notMatch(String(remaining[1]!.request_id), /^req_old/)
      assert.strictEqual(await count("SELECT COUNT(*) AS n FROM ledger"), ledger, "the ledger is never pruned")
    } finally {
      await pruned.close()
    }
  })
})
